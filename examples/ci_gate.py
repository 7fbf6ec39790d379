"""A CI gate: a short load on a checkout journey whose assertions decide the build.

``horde run`` exits 99 when any assertion fails (or had no request to judge), 0 when all pass,
so a CI step needs nothing else; ``--junit`` writes the verdicts as JUnit XML for the CI's test
report, and on GitHub Actions the job summary shows them::

    horde target     # prints its URL
    horde run examples/ci_gate.py -D base_url=http://127.0.0.1:PORT --junit thresholds.xml
    echo $?          # 0: every threshold passed; 99: one failed

The target's ``/delay/{ms}`` answers after that many milliseconds, so the verdicts are known:
with the default ``pay_ms=30`` every assertion passes; ``-D pay_ms=300`` breaks the one on
``checkout / pay``. The same assertions can be given on the command line instead
(``--threshold '"checkout / pay": p95<=200ms'``) or written into a plan file's ``thresholds``.
"""

from horde import constant_users_per_sec, details, for_all, global_, group, http, param, scenario, setup, status

base_url = param("base_url", "http://127.0.0.1:8080")
pay_ms = param("pay_ms", 30)

journey = scenario("checkout").exec(
    http("home").get("/delay/5").check(status().is_(200)),
    group(
        "checkout",
        http("cart").get("/delay/10").check(status().is_(200)),
        http("pay").get(f"/delay/{pay_ms}").check(status().is_(200)),
    ),
)

setup(
    journey.inject(constant_users_per_sec(20).during(2)),
    protocol=http.base_url(base_url),
).assertions(
    # Gatling's shapes; times in milliseconds.
    global_().response_time().percentile(99).lt(1000),
    global_().failed_requests().percent().lte(1),
    for_all().response_time().max().lt(2000),
    details("checkout", "pay").response_time().percentile(95).lte(200),
    # Or the thresholds' own grammar, as --threshold takes it: stop the run early if the
    # last second gets slow, keeping what was measured.
    "p99<2s over 1s abort",
    "count>=100",
)

"""Seed 002's job as a load test: write records to a store that makes them visible later
(Cassandra's asynchronous writes there; the built-in target's /eventual/ store here), and retry
reading each back until it is visible: `eventually`, one outcome per record, whose duration is
the time to consistency, reported with its percentiles and the attempts it took.

Also shown: a feeder of records (inline here; csv(...) or jsonl(...) for files), expressions in
templates (a UUID per write, a SHA-256 of the body), a session function in Python that builds the
expected text, and before/after hooks around the whole run.

    horde target --eventual-delay-ms 300 &       # or any store with the same API
    horde run examples/read_your_writes.py -D base_url=http://127.0.0.1:8080 -D users=20

In summary.json: groups[] "visible" (`duration`: time to consistency; `attempts`), the "read"
row's `retried` (reads made before the record was visible: not KOs), and
generator.session_functions (the Python calls and their cost).
"""

from horde import (
    after,
    body_string,
    at_once_users,
    before,
    http,
    inline,
    param,
    regex,
    scenario,
    setup,
    status,
    string_body,
)

base_url = param("base_url", "http://127.0.0.1:8080")
users = param("users", 10)

colours = inline([{"colour": c} for c in ("red", "green", "blue", "amber", "violet")], name="colours").circular()


def expected_text(session):
    # Python only where templates cannot say it.
    return session.set("expected", f"{session['colour']} #{session.user_id}")


@before
def announce():
    print(f"writing {users} records to {base_url}/eventual/ and reading them back")


@after
def report(summary):
    visible = next(g for g in summary["groups"] if g["name"] == "visible")
    p99 = next(p["value_us"] for p in visible["duration"]["percentiles"] if p["percentile"] == 99.0)
    print(f"time to consistency p99: {p99 / 1000:.0f} ms over {visible['count']} records, "
          f"{visible['attempts']['mean']:.1f} attempts on average")


scn = (scenario("read your writes")
       .feed(colours)
       .exec(expected_text)
       .set(key="${__uuid()}")
       .exec(http("write").put("/eventual/${key}").body(string_body("${expected}"))
             .check(status().is_(202), regex('"visible_after_ms":(\\d+)').save_as("promised_ms")))
       .eventually(
           http("read").get("/eventual/${key}").check(body_string().is_("${expected}")),
           pause=0.05, timeout=5, name="visible")
       .exec(http("digest").post("/api/echo").header("Content-Type", "application/json")
             .body(string_body('{"sha256": "${expected.sha256()}"}'))))

setup(scn.inject(at_once_users(users)), protocol=http.base_url(base_url))

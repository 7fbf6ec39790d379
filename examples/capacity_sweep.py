"""Seed 004's capacity hunt, automated. The seed steps users from 10 to 2,000 by hand, one
Gatling run per level, and tabulates p50, p99 and the error rate to read off where the server
breaks. `horde sweep` runs the levels, writes the table and the chart, and names the highest
level meeting the SLOs, the knee where throughput stops growing, and where errors begin.

The built-in target's /work/{ms} endpoint serves 4 requests at a time (`--work-slots`), each
for a fixed time, so its capacity is known: 4 / 20 ms = 200 requests per second.

    horde target --work-slots 4                     # prints its URL
    horde sweep examples/capacity_sweep.py -D base_url=http://127.0.0.1:PORT \\
        --users 1,2,4,8,16 --level-duration 5s --slo 'p99<50ms' --slo 'errors<1%'
    horde sweep examples/capacity_sweep.py -D base_url=http://127.0.0.1:PORT --auto \\
        --metrics 127.0.0.1:9464                    # Prometheus sees each level, labelled level="N"
    horde sweep examples/capacity_sweep.py -D base_url=http://127.0.0.1:PORT -D loop=false \
        --rate 50,100,200,400 --slo 'errors<1%'
    horde sweep examples/capacity_sweep.py -D base_url=http://127.0.0.1:PORT \
        --users 2,4,8 --cluster local:2              # every level split over 2 Dask workers

A closed sweep (--users) keeps that many users looping; an open sweep (--rate) starts that many
users a second, so each should make one pass (-D loop=false). The sweep replaces the injection
below with each level; `horde run` uses it as it is.
"""

from horde import constant_concurrent_users, http, param, scenario, setup, status

service_ms = param("service_ms", 20)

request = http("work").get(f"/work/{service_ms}").check(status().is_(200))
if param("loop", True):
    work = scenario("work").during(3600, request)
else:
    work = scenario("work").exec(request)

setup(
    work.inject(constant_concurrent_users(4).during(2)),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")).request_timeout(param("timeout", 2.0)),
    name="capacity",
    max_duration=10,
)

"""Seed 004's GenericSimulation, translated from Gatling's Scala: parameters from the
environment (or -D), `repeat` of one checked GET per user, users ramped over a time.

    GATLING_URL=http://127.0.0.1:8080/ GATLING_USERS=10 GATLING_REQUESTS=500 GATLING_RAMP_TIME=0 \\
        horde run examples/seed004_load_simulation.py
    horde run examples/seed004_load_simulation.py -D GATLING_URL=http://127.0.0.1:8080/ -D GATLING_USERS=25

To step users up and read off capacity, as the seed does by hand, see `horde sweep` (coming).
"""

from horde import http, param, ramp_users, scenario, setup, status

url = param("GATLING_URL", "http://127.0.0.1:8080/")
requests = param("GATLING_REQUESTS", 500)
users = param("GATLING_USERS", 10)
reqs_per_user = requests // users
ramp_time = param("GATLING_RAMP_TIME", 0)

scn = scenario("Test scenario").repeat(
    reqs_per_user,
    http("Web Server").get(url).check(status().in_(200, 304)),
)

setup(scn.inject(ramp_users(users).during(ramp_time)), name="generic_simulation")

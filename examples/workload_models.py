"""Open and closed workload models side by side, with a throttle over both.

Open model: users arrive whatever the state of the system (a rate ramp, then stairs).
Closed model: a number of users loop, paced to one pass per 200 ms, until the run's maximum
duration interrupts them (and counts them as such).
`and_then`: a last check starts once every arrival has finished.

    horde target          # prints its URL
    horde run examples/workload_models.py -D base_url=http://127.0.0.1:PORT
"""

from horde import (
    http,
    at_once_users,
    increment_users_per_sec,
    jsonpath,
    pace,
    param,
    ramp_concurrent_users,
    ramp_users_per_sec,
    reach_rps,
    hold_for,
    scenario,
    setup,
    throttle,
)

item = http("item").get("/api/items/2").check(jsonpath("$.name").is_("ash frame"))

arrivals = scenario("arrivals").exec(item).inject(
    ramp_users_per_sec(5).to(20).during(1),
    increment_users_per_sec(10).times(2).each_level_lasting(0.5).separated_by_ramps_lasting(0.25).starting_from(20),
)

loopers = scenario("loopers").during(60, pace(0.2), http("list").get("/api/items")).inject(
    ramp_concurrent_users(1).to(4).during(1),
)

afterwards = scenario("afterwards").exec(http("after the arrivals").get("/api/items")).inject(at_once_users(1))

setup(
    arrivals.and_then(afterwards),
    loopers,
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    name="workload_models",
    max_duration=3,
    throttle=throttle(reach_rps(200).in_(0.5), hold_for(10)),
)

"""Think times as users have them: Gatling's pauses of every kind, and how late horde may start
a user before the run says it fell behind its schedule.

- ``pause(0.2)``: a fixed pause;
- ``pause(0.1, 0.3)``: uniform between two bounds;
- ``pause(0.2, exponential=True)``: exponential of mean 0.2 s, the think times of independent
  users (Poisson arrivals at the server);
- ``pause(0.2, std_dev=0.05)``: normal, mean 0.2 s and standard deviation 0.05 s (a draw below 0
  is no pause);
- ``pause("${think}")``: a value from the session, here one the feeder gave each user
  (``"150ms"``, ``"0.25"`` seconds), checked when it is used.

``late_start_threshold=0.005``: a user that starts more than 5 ms after its scheduled instant
counts as a late start (``scheduling`` in summary.json; ``horde sweep`` calls a level with more
than 1 % late "load not delivered"). Users arrive at 20 per second for 2 s here.

    horde target            # prints its URL
    horde run examples/think_times.py -D base_url=http://127.0.0.1:PORT
"""

from horde import constant_users_per_sec, http, inline, param, scenario, setup, status

thinkers = inline([{"think": "150ms"}, {"think": "0.25"}, {"think": "100ms"}]).circular()

browse = (
    scenario("browse")
    .feed(thinkers)
    .exec(http("home").get("/").check(status().is_(200)))
    .pause(0.2)
    .exec(http("items").get("/api/items").check(status().is_(200)))
    .pause(0.1, 0.3)
    .exec(http("item").get("/api/items/1").check(status().is_(200)))
    .pause(0.2, exponential=True)
    .exec(http("item 2").get("/api/items/2").check(status().is_(200)))
    .pause(0.2, std_dev=0.05)
    .exec(http("home again").get("/").check(status().is_(200)))
    .pause("${think}")
    .exec(http("bye").get("/api/items").check(status().is_(200)))
)

setup(
    browse.inject(constant_users_per_sec(param("rate", 20)).during(param("seconds", 2))),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    late_start_threshold=0.005,
    seed=7,
    max_duration=60,
)

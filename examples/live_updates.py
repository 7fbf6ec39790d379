"""A page that talks back: a WebSocket conversation and a stream of server-sent events, as
Gatling's `ws(...)` and `sse(...)`. Runs against the built-in target (`horde target`), whose
/ws/echo answers each message with itself and whose /sse/events sends numbered ticks.

    horde target --port 8080 &
    horde run examples/live_updates.py -D base_url=http://127.0.0.1:8080 -D users=5

Rows: `open chat` times the WebSocket's opening (connect, then the upgrade), each expected
message (`echo`, `first tick`, `last tick`) its arrival after the send or the opening before
it. A message that does not come in time is a KO `message_timeout`; one the checks refuse,
`check_failed`. The connections section counts sockets and messages both ways.
"""

from horde import at_once_users, http, jsonpath, param, regex, scenario, setup, sse, substring, ws

ticks = param("ticks", 5)

say = (
    ws("say").send_text('{"user": "${user}", "line": ${line}}')
    .await_(5)
    .on(ws.check_text_message("echo").check(substring('"user": "Saw mill"'), regex('"line": (\\d+)').save_as("echoed")))
)

journey = (
    scenario("live updates")
    .exec(http("page").get("/").check(regex("<title>([^<]+)</title>").save_as("user")))
    .exec(ws("open chat").connect("/ws/echo"))
    .repeat(param("lines", 3), say, counter="line")
    .exec(ws("close chat").close())
    .exec(
        sse("ticker").get(f"/sse/events?count={ticks}&interval_ms=50")
        .await_(10)
        .on(
            sse.check_message("first tick").check(jsonpath("$.event").is_("tick")),
            sse.check_message("last tick").matching(jsonpath("$.id").is_(str(ticks))),
        )
    )
    .exec(sse("stop ticker").close())
)

setup(journey.inject(at_once_users(param("users", 3))), protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")))

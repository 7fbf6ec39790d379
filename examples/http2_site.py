"""A site over HTTP/2: each virtual user opens one connection, offers h2 by ALPN and speaks
what the server picks (a server without HTTP/2 gets HTTP/1.1, and the summary counts those
connections). With `-D prior_knowledge=1` every connection speaks HTTP/2 from its first byte,
which is how to reach a cleartext h2c server (an http:// base URL).

    horde run examples/http2_site.py -D base_url=https://staging.example.org -D users=10
    horde run examples/http2_site.py -D base_url=http://127.0.0.1:8080 -D prior_knowledge=1

The page's check reads its body, so the body is kept; the check on the second request reads
only the status, and its body is counted and dropped as it arrives.
"""

from horde import at_once_users, http, param, scenario, setup, status, substring

home = http("home").get("/").check(status().is_("200"), substring("hello"))
again = http("home again").get("/").check(status().is_("200"))

protocol = http.base_url(param("base_url", "https://127.0.0.1:8443"))
protocol = protocol.http2_prior_knowledge() if param("prior_knowledge", False) else protocol.enable_http2()
if param("ca_file", ""):
    protocol = protocol.ca_file(param("ca_file"))

journey = scenario("http2 site").exec(home).repeat(param("repeat", 5), again)
setup(journey.inject(at_once_users(param("users", 4))), protocol=protocol)

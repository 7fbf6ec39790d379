"""An HTTPS site: a base URL on https, certificates verified against the system's roots plus
a CA file of your own (a staging CA, say), or verification turned off for a self-signed
test server (the summary then says so).

    horde run examples/https_site.py -D base_url=https://staging.example.org \\
        -D ca_file=staging-ca.pem -D users=10

Each virtual user makes its own TLS handshake (a new browser would); the summary shows the
handshake as its own phase beside connect, wait and receive.
"""

from horde import at_once_users, http, param, scenario, setup, status

home = http("home").get("/").check(status().is_("200"))
again = http("home again").get("/").check(status().is_("200"))

protocol = http.base_url(param("base_url", "https://127.0.0.1:8443"))
if param("ca_file", ""):
    protocol = protocol.ca_file(param("ca_file"))
if param("insecure", False):
    protocol = protocol.disable_tls_verification()

setup(scenario("https site").exec(home, again).inject(at_once_users(param("users", 4))), protocol=protocol)

"""Single sign-on as OAuth's authorization code grant: the authorization answers with a redirect
whose Location carries a one-time code, the page it leads to exchanges the code for a bearer
token, and the token opens the orders API.

A request that followed the redirect would never show the code to a check: the authorization
request does not follow it (``disable_follow_redirect()``, Gatling's), checks that it is a 302,
and reads the code out of its Location (``header_regex``, Gatling's ``headerRegex``). Every user
gets its own code, which the server accepts once: a code replayed from a recording is refused
(``invalid_grant``).

With PKCE (RFC 7636), as single-page apps sign in: each user makes a code verifier of its own,
sends its S256 challenge (``pkce_challenge()``) with the authorization and the verifier with the
token request; the server checks that they match.

    horde target            # prints its URL
    horde run examples/oauth_login.py -D base_url=http://127.0.0.1:PORT -D users=5
"""

from horde import at_once_users, header_regex, http, jsonpath, param, scenario, setup, status

sign_in = (
    scenario("sign in")
    .set({"verifier": "${__random_string(64)}"})
    .exec(
        http("authorize")
        .get("/oauth/authorize?client_id=web&redirect_uri=/oauth/callback&state=${__random_string(12)}"
             "&code_challenge=${verifier.pkce_challenge()}&code_challenge_method=S256")
        .disable_follow_redirect()
        .check(status().is_(302), header_regex("Location", "[?&]code=([^&#]*)").save_as("code"))
    )
    .exec(http("callback").get("/oauth/callback?code=${code}").check(status().is_(200)))
    .exec(
        http("token")
        .post("/oauth/token")
        .form_param("grant_type", "authorization_code")
        .form_param("code", "${code}")
        .form_param("code_verifier", "${verifier}")
        .check(status().is_(200), jsonpath("$.access_token").save_as("token"))
    )
    .exec(http("orders").get("/api/orders").header("Authorization", "Bearer ${token}").check(status().is_(200)))
)

setup(
    sign_in.inject(at_once_users(param("users", 5))),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    max_duration=30,
)

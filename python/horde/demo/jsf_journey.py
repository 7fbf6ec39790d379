"""Seed 000's recorded JSF journey, translated from Gatling's Scala.

A JSF site protects every POST with a ``javax.faces.ViewState`` token that changes on every
page load. One check captures it from each page; ``jsf_get`` and ``jsf_post`` are plain Python
functions, written exactly as the seed's ``jsfGet`` and ``jsfPost`` helpers, that capture it and
post it back. The upload is a multipart request with string parts and a raw file part.

Run it against the built-in target (``horde demo`` does this, over HTTPS and HTTP/2)::

    horde target                       # prints its URL
    horde run examples/jsf_journey.py -D base_url=http://127.0.0.1:PORT -D users=20
    horde target --tls                 # prints its URL and the certificate's file
    horde run examples/jsf_journey.py -D base_url=https://127.0.0.1:PORT -D ca_file=FILE -D http2=1
"""

from horde import (
    css,
    http,
    jsonpath,
    param,
    ramp_users,
    raw_file_body_part,
    regex,
    scenario,
    setup,
    status,
    string_body_part,
)

base_url = param("base_url", "http://127.0.0.1:8080")
users = param("users", 20)

# val jsfViewStateCheck = regex("""id="j_id1:javax.faces.ViewState:1" value="([^"]*)"""").saveAs("viewState")
jsf_view_state_check = regex(r'id="j_id1:javax.faces.ViewState:1" value="([^"]*)"').save_as("viewState")


def jsf_get(name, url):
    """def jsfGet(name: String, url: String) = http(name).get(url).check(jsfViewStateCheck)"""
    return http(name).get(url).check(jsf_view_state_check)


def jsf_post(name, url):
    """def jsfPost(name: String, url: String) = http(name).post(url)
    .formParam("javax.faces.ViewState", "${viewState}").check(jsfViewStateCheck)"""
    return http(name).post(url).form_param("javax.faces.ViewState", "${viewState}").check(jsf_view_state_check)


headers_0 = {"Accept": "text/html,application/xhtml+xml"}

journey = (
    scenario("JSF journey")
    .exec(jsf_get("home", "/"))
    .pause(0.05, 0.2)
    .exec(jsf_get("login page", "/login"))
    # The login answers with a redirect to /account; the hop is its own row, "login Redirect 1".
    .exec(
        jsf_post("login", "/login")
        .headers(headers_0)
        .form_param("username", "sawyer")
        .form_param("password", "ash-frame")
        .check(css("p#user").is_("sawyer"))
    )
    .repeat(3, jsf_post("comment", "/account").headers(headers_0).form_param("comment", "payload ${i}"), counter="i")
    .exec(
        http("upload_request")
        .post("/upload")
        .headers(headers_0)
        .body_part(string_body_part("form_field_1", "payload"))
        .body_part(string_body_part("form_field_2", "payload"))
        .body_part(string_body_part("javax.faces.ViewState", "${viewState}"))
        .body_part(raw_file_body_part("file_upload_file", "some_file.txt"))
        .check(jsf_view_state_check, css("#message").is_("Received some_file.txt (59 bytes)"))
    )
    .exec(http("items").get("/api/items").check(status().is_(200), jsonpath("$.count").is_(3)))
)

protocol = http.base_url(base_url)
if param("ca_file", ""):
    protocol = protocol.ca_file(param("ca_file"))  # the target's own certificate (horde target --tls)
if param("http2", False):
    protocol = protocol.enable_http2()
setup(journey.inject(ramp_users(users).during(2)), protocol=protocol, name="jsf_journey")

"""A page and its resources, fetched as a browser does: after the page, all at once (streams
of one connection on HTTP/2, up to 6 connections per host on HTTP/1.1). The page's row times
the page alone; the group around it times the page with its resources, which is what a user
waits for. Then a batch: two API-style requests sent together, whose saved value flows on.

    horde run examples/page_resources.py -D base_url=https://staging.example.org -D page=/index.html \\
        -D resources=/css/site.css,/js/app.js
    horde run examples/page_resources.py -D base_url=https://staging.example.org -D page=/ -D infer=1

With `-D infer=1` the resources are not listed: each page's HTML is parsed for its scripts,
style sheets, images and icons (`infer_html_resources`), and each gets a row named by its URL.
"""

from horde import at_once_users, batch, group, http, param, regex, scenario, setup, status

page_path = param("page", "/site/index.html")
resource_paths = [p for p in param("resources", "").split(",") if p]

page = http("page").get(page_path).check(status().is_(200))
if resource_paths:
    page = page.resources(*(http(path.rsplit("/", 1)[-1]).get(path).check(status().is_(200)) for path in resource_paths))

title = http("title").get(page_path).check(regex("<title>([^<]*)</title>").save_as("title"))
other = http("other").get(param("other", "/site/other.html")).check(status().is_(200))

protocol = http.base_url(param("base_url", "https://127.0.0.1:8443")).enable_http2()
if param("ca_file", ""):
    protocol = protocol.ca_file(param("ca_file"))
if param("infer", False):
    protocol = protocol.infer_html_resources()

journey = (
    scenario("page with resources")
    .group("home page", page)
    .batch(title, other)
    .exec(http("search").get("/site/other.html?q=${title}"))
)
setup(journey.inject(at_once_users(param("users", 2))), protocol=protocol)

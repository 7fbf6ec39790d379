"""A compressed page: the request asks for what a browser accepts (gzip, deflate, br, zstd,
the default), the check reads the page, so horde decodes it, and the summary's row gives the
bytes on the wire beside `bytes_decoded`. The second request checks only the status: its body
is counted on the wire and never decompressed.

    horde run examples/compressed_page.py -D base_url=https://staging.example.org -D path=/ -D text='<title>'
"""

from horde import at_once_users, http, param, scenario, setup, status, substring

read = http("page, read").get(param("path", "/")).check(status().is_("200"), substring(param("text", "<html")))
unread = http("page, status only").get(param("path", "/")).check(status().is_("200"))

protocol = http.base_url(param("base_url", "http://127.0.0.1:8080"))
if param("ca_file", ""):
    protocol = protocol.ca_file(param("ca_file"))

setup(scenario("compressed page").exec(read, unread).inject(at_once_users(param("users", 2))), protocol=protocol)

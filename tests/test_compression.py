"""Compressed responses from nginx (gzip): what a browser sends in Accept-Encoding by default, a
check that sees the decoded text, bodies decoded only when a check reads them, and bytes on the
wire beside bytes decoded. Brotli, zstd, deflate and compression bombs are unit-tested in
crates/horde-engine/src/protocol/http/encoding.rs."""

import textwrap

OK = 0
PAGE = "horde compressed page. " * 100


def simulation(tmp_path, tls_nginx, protocol_extra="", name="gzip.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(f"""
        from horde import at_once_users, http, regex, repeat, scenario, setup, status, substring
        read = http("read").get("/page").check(status().is_("200"), regex("(compressed page)\\\\. horde").save_as("w"))
        unread = http("unread").get("/page").check(status().is_("200"))
        protocol = http.base_url("{tls_nginx.url()}").ca_file("{tls_nginx.files['ca'][0]}"){protocol_extra}
        setup(scenario("s").exec(read).repeat(3, unread).inject(at_once_users(2)), protocol=protocol)
    """))
    return path


def rows(summary):
    return {r["name"]: r for r in summary["requests"]}


def test_a_gzip_page_is_decoded_for_its_check_and_only_then(horde, tls_nginx, tmp_path):
    for extra in ("", ".enable_http2()"):
        result = horde("run", simulation(tmp_path, tls_nginx, extra))
        assert result.code == OK, result.stderr
        summary = result.summary
        assert (summary["global"]["ok"], summary["global"]["ko"]) == (8, 0), summary["errors"]
        read, unread = rows(summary)["read"], rows(summary)["unread"]
        # The check read the body: both were decoded, to the page's full size.
        assert (read["bodies_decoded"], read["bytes_decoded"]) == (2, 2 * len(PAGE)), extra
        # On the wire the page was far smaller than decoded: it came compressed.
        assert read["bytes_received"] < read["bytes_decoded"] / 4, extra
        # Nobody read these bodies: never decoded, yet just as small on the wire.
        assert (unread["bodies_decoded"], unread["bytes_decoded"]) == (0, 0), extra
        assert unread["bytes_received"] < 6 * len(PAGE) / 4, extra


def test_without_accept_encoding_the_page_comes_whole(horde, tls_nginx, tmp_path):
    result = horde("run", simulation(tmp_path, tls_nginx, '.accept_encoding_header("")'))
    assert result.code == OK, result.stderr
    summary = result.summary
    assert summary["global"]["ko"] == 0, summary["errors"]
    assert rows(summary)["read"]["bodies_decoded"] == 0
    assert rows(summary)["unread"]["bytes_received"] > 6 * len(PAGE)
    assert summary["plan"]["protocol"]["accept_encoding"] == ""


def test_quick_mode_asks_for_compression_only_with_compressed(horde, tls_nginx):
    url = tls_nginx.url() + "/page"
    ca = str(tls_nginx.files["ca"][0])
    plain = horde("http", url, "-c", "1", "-n", "5", "--cacert", ca, "-q").summary
    compressed = horde("http", url, "-c", "1", "-n", "5", "--cacert", ca, "--compressed", "-q").summary
    assert plain["global"]["bytes_received"] > 5 * len(PAGE)
    assert compressed["global"]["bytes_received"] < 5 * len(PAGE) / 4
    assert compressed["plan"]["protocol"]["accept_encoding"] == "gzip, deflate, br, zstd"

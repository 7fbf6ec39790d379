"""The built-in target over HTTPS (``horde target --tls``), checked with Python's standard
library alone: the certificate it prints is the one it serves and verifies for its names,
HTTP/2 and HTTP/1.1 are offered by ALPN, horde trusts the printed file with ``--cacert``, and
the compressed page and server-sent events work over TLS. The server's own counts agree."""

import gzip
import hashlib
import http.client
import re
import socket
import ssl
import subprocess

from conftest import stop_process, wait_until

OK = 0
INVALID_INPUT = 2


def https(target, host="127.0.0.1", context=None):
    return http.client.HTTPSConnection(host, target.port, context=context or target.ssl_context, timeout=10)


def test_the_printed_certificate_is_the_served_one_and_its_fingerprint_is_right(tls_target):
    assert tls_target.url == f"https://127.0.0.1:{tls_target.port}"
    pem = tls_target.cert_path.read_text()
    der = ssl.PEM_cert_to_DER_cert(pem)
    # As openssl prints it: upper-case hex, colon-separated.
    digest = hashlib.sha256(der).hexdigest().upper()
    assert tls_target.fingerprint == ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))
    assert tls_target.cert_path.name == f"horde-target-{tls_target.port}.pem"

    connection = https(tls_target)
    connection.request("GET", "/")
    response = connection.getresponse()
    body = response.read().decode()
    assert response.status == 200
    assert "javax.faces.ViewState" in body
    assert connection.sock.getpeercert(binary_form=True) == der
    connection.request("GET", "/api/items")   # the same connection, kept alive
    assert response.version == 11 and connection.getresponse().status == 200
    connection.close()

    # The certificate names localhost too; the file is the only CA trusted.
    connection = https(tls_target, host="localhost")
    connection.request("GET", "/api/items/1")
    assert connection.getresponse().status == 200
    connection.close()

    stats = tls_target.stats()
    assert stats["by_route"]["GET /"] == stats["by_route"]["GET /api/items"] == 1
    assert stats["by_route"]["GET /api/items/{id}"] == 1
    # Two connections above, and the one asking for these counts.
    assert stats["tls_connections"] == 3
    assert stats["http2_connections"] == 0


def test_alpn_offers_http2_first_and_http1_to_those_asking_only_for_it(tls_target):
    def negotiated(protocols):
        context = ssl.create_default_context(cafile=str(tls_target.cert_path))
        context.set_alpn_protocols(protocols)
        with socket.create_connection(("127.0.0.1", tls_target.port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                return tls.selected_alpn_protocol()

    assert negotiated(["h2", "http/1.1"]) == "h2"
    assert negotiated(["http/1.1"]) == "http/1.1"
    # Both handshakes are counted once the server has finished them (it may lag the client).
    wait_until(lambda: tls_target.stats()["tls_connections"] >= 2 + 2, what="both handshakes counted")


def test_horde_trusts_the_printed_certificate_and_speaks_http2_to_the_target(horde, tls_target):
    before = tls_target.stats()
    url = tls_target.url + "/api/items"
    result = horde("http", url, "-c", "2", "-n", "40", "--http2", "--cacert", tls_target.cert_path, "-q")
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["count"], summary["global"]["ok"]) == (40, 40), summary["errors"]
    assert summary["connections"]["opened"] == 2
    after = tls_target.stats()
    assert after["by_route"]["GET /api/items"] == 40
    assert after["http2_connections"] - before["http2_connections"] == 2
    # horde's two connections and the one asking for these counts.
    assert after["tls_connections"] - before["tls_connections"] == 3

    # Without the certificate, horde refuses the server as it should.
    refused = horde("http", url, "-c", "1", "-n", "2", "-q")
    assert refused.code == OK
    assert {e["kind"]: e["count"] for e in refused.summary["errors"]} == {"tls_certificate": 2}


def test_the_compressed_page_and_server_sent_events_over_https(tls_target):
    connection = https(tls_target)
    connection.request("GET", "/compressed", headers={"Accept-Encoding": "gzip"})
    response = connection.getresponse()
    body = response.read()
    assert response.getheader("Content-Encoding") == "gzip"
    assert response.getheader("Vary").lower() == "accept-encoding"
    page = gzip.decompress(body).decode()
    assert "horde compressed page" in page and len(page) > 4096

    connection.request("GET", "/compressed")
    response = connection.getresponse()
    assert response.getheader("Content-Encoding") is None
    assert response.read().decode() == page

    connection.request("GET", "/sse/events?count=3&interval_ms=10")
    response = connection.getresponse()
    assert response.getheader("Content-Type") == "text/event-stream"
    assert response.getheader("Cache-Control") == "no-cache"
    events = response.read().decode()   # the stream ends after its last event
    assert re.findall(r"id: (\d+)\nevent: tick\ndata: \{\"n\": (\d+)\}\n\n", events) == [
        ("1", "1"), ("2", "2"), ("3", "3")]
    connection.close()

    stats = tls_target.stats()
    assert (stats["sse_streams"], stats["sse_events"]) == (1, 3)
    assert stats["by_route"]["GET /compressed"] == 2


def test_cert_out_writes_where_asked_and_needs_tls(horde, tmp_path):
    path = tmp_path / "target.pem"
    process = subprocess.Popen(["horde", "target", "--tls", "--cert-out", str(path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [process.stdout.readline() for _ in range(3)]
        assert lines[0].startswith("horde target listening on https://127.0.0.1:"), lines
        assert lines[2].strip().endswith(f"(for --cacert): {path}"), lines
        assert path.read_text().startswith("-----BEGIN CERTIFICATE-----")
    finally:
        stop_process(process)
    # A file the user chose is theirs: it stays.
    assert path.exists()

    result = horde("target", "--cert-out", path, results=False)
    assert result.code == INVALID_INPUT
    assert "--tls" in result.stderr

"""A client certificate the server refuses in the TLS handshake: under TLS 1.3 (where the
refusal is an alert that arrives after the client's side of the handshake is done, at the
first read) as under TLS 1.2, on HTTP/1.1 and on HTTP/2 (negotiated by ALPN), it is a
``tls_handshake`` KO whose words say the server refused the client certificate.

The server is Python's ``ssl`` (OpenSSL) with ``CERT_REQUIRED``, which refuses a certificate
it cannot verify with an alert, as Envoy, HAProxy's ``verify required`` or Go servers do.
nginx's ``ssl_verify_client on`` does not: it finishes the handshake and answers 400, which
tests/test_https.py covers."""

import socket
import ssl
import textwrap
import threading

import pytest

from conftest import wait_until


class RefusingTlsServer:
    """Accepts TLS connections whose client certificate the tests' CA issued; refuses the
    others in the handshake, counting them (the server's count)."""

    def __init__(self, directory, version):
        import tls_material

        self.files = tls_material.make(directory)
        stranger_key, stranger_ca = tls_material._ca("a CA the server does not know")
        leaf = tls_material._leaf(stranger_key, stranger_ca, ["horde-client"], tls_material.NOW - tls_material.DAY,
                                  tls_material.NOW + tls_material.DAY,
                                  usage=tls_material.ExtendedKeyUsageOID.CLIENT_AUTH)
        self.stranger = tls_material._write(directory, "stranger", *leaf)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(*self.files["server"])
        self.context.load_verify_locations(self.files["ca"][0])
        self.context.verify_mode = ssl.CERT_REQUIRED
        pinned = ssl.TLSVersion.TLSv1_3 if version == "1.3" else ssl.TLSVersion.TLSv1_2
        self.context.minimum_version = self.context.maximum_version = pinned
        self.context.set_alpn_protocols(["h2", "http/1.1"])
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{self.listener.getsockname()[1]}"
        self.refused = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.handshake, args=(connection,), daemon=True).start()

    def handshake(self, connection):
        connection.settimeout(5)
        # Without do_handshake_on_connect, a failed handshake leaves the socket open.
        tls = self.context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
        try:
            tls.do_handshake()
        except ssl.SSLError as err:
            self.refused.append(err.reason)
            # Read what the client sent (its request, under TLS 1.3) before closing, or the
            # close would reset the connection and the client might never read the alert.
            # Once shut down, the socket reads and writes without TLS.
            try:
                tls.shutdown(socket.SHUT_WR)
                while tls.recv(65536):
                    pass
            except OSError:
                pass
        except OSError:
            pass
        finally:
            tls.close()

    def stop(self):
        self.listener.close()


@pytest.mark.parametrize("http2", [False, True], ids=["HTTP/1.1", "HTTP/2"])
@pytest.mark.parametrize("version", ["1.3", "1.2"])
def test_a_client_certificate_refused_in_the_handshake_is_a_tls_handshake_ko_that_says_so(
    horde, tmp_path, version, http2
):
    server = RefusingTlsServer(tmp_path, version)
    try:
        cert, key = server.stranger
        protocol = f'http.base_url("{server.url}").ca_file("{server.files["ca"][0]}").client_certificate("{cert}", "{key}")'
        if http2:
            protocol += ".enable_http2()"
        sim = tmp_path / "mtls.py"
        sim.write_text(textwrap.dedent(f"""
            from horde import at_once_users, http, scenario, setup
            setup(scenario("mtls").exec(http("who").get("/")).inject(at_once_users(2)), protocol={protocol})
        """))
        result = horde("run", sim, "-q")
        assert result.code == 0, result.stderr
        errors = result.summary["errors"]
        assert {e["kind"]: e["count"] for e in errors} == {"tls_handshake": 2}, errors
        message = errors[0]["message"]
        assert "refused the client certificate" in message and "protocol.tls.client_certificate" in message, message
        # The server refused both certificates in the handshake.
        wait_until(lambda: len(server.refused) == 2, what="the server's two refusals")
        assert all("CERTIFICATE" in reason for reason in server.refused), server.refused
    finally:
        server.stop()

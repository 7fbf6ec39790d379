"""Certificates for the TLS tests, made by the tests (the `cryptography` package): a CA of our
own, a server certificate it signs for 127.0.0.1, ::1 and localhost, and the broken ones each
TLS failure needs: expired, for another host name, and signed by a CA nobody trusts; plus a
client certificate for mutual TLS."""

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

NOW = datetime.datetime.now(datetime.timezone.utc)
DAY = datetime.timedelta(days=1)


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _ca(common_name):
    key = _key()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - DAY)
        .not_valid_after(NOW + 30 * DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, certificate


def _leaf(ca_key, ca_certificate, names, not_before, not_after, usage=ExtendedKeyUsageOID.SERVER_AUTH):
    key = _key()
    alternatives = []
    for name in names:
        try:
            alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alternatives.append(x509.DNSName(name))
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0]))
        .issuer_name(ca_certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, certificate


def _write(directory, stem, key, certificate):
    (directory / f"{stem}.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    (directory / f"{stem}.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return directory / f"{stem}.pem", directory / f"{stem}.key"


def make(directory):
    """Writes every certificate into `directory`; returns {name: (certificate, key)} and the
    CA file under "ca"."""
    ca_key, ca_certificate = _ca("horde test CA")
    stranger_key, stranger_certificate = _ca("a CA nobody trusts")
    here = ["127.0.0.1", "::1", "localhost"]
    made = {
        "ca": _write(directory, "ca", ca_key, ca_certificate),
        "server": _write(directory, "server", *_leaf(ca_key, ca_certificate, here, NOW - DAY, NOW + 30 * DAY)),
        "expired": _write(directory, "expired", *_leaf(ca_key, ca_certificate, here, NOW - 30 * DAY, NOW - DAY)),
        "other_host": _write(directory, "other_host", *_leaf(ca_key, ca_certificate, ["elsewhere.example"], NOW - DAY, NOW + 30 * DAY)),
        "unknown_ca": _write(directory, "unknown_ca", *_leaf(stranger_key, stranger_certificate, here, NOW - DAY, NOW + 30 * DAY)),
        "client": _write(directory, "client", *_leaf(ca_key, ca_certificate, ["horde-client"], NOW - DAY, NOW + 30 * DAY,
                                                       usage=ExtendedKeyUsageOID.CLIENT_AUTH)),
    }
    return made


SITE_RESOURCES = ("slow/site.css", "slow/app.js", "slow/logo.png", "slow/photo.jpg")
# At nginx's limit_rate of 20 KB/s, the first 20 KiB go at once and the rest a second later:
# each resource takes about one second.
RESOURCE_BYTES = 25_000


def make_site(directory):
    """A page naming four resources (a style sheet, a script, two images), the resources, and a
    page without any; readable by nginx's worker."""
    (directory / "slow").mkdir(parents=True, exist_ok=True)
    page = (
        "<!doctype html><html><head><title>horde site</title>"
        '<link rel="stylesheet" href="slow/site.css"><script src="slow/app.js"></script></head>'
        '<body><h1>horde site</h1><img src="slow/logo.png"><img src="/site/slow/photo.jpg">'
        '<a href="other.html">not a resource</a></body></html>'
    )
    (directory / "index.html").write_text(page)
    (directory / "other.html").write_text("<html><body>no resources</body></html>")
    for name in SITE_RESOURCES:
        (directory / name).write_bytes(b"r" * RESOURCE_BYTES)
    for path in [directory, *directory.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)

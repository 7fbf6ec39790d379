"""The recorder's certificate authority, made at first start and kept (as mitmproxy's and
Gatling's recorders do), and the certificates it signs for each host a browser asks for over
HTTPS. All of them share one key, so that one fingerprint (``spki``) lets a browser started by
``horde record --browser`` accept them without trusting the authority system-wide.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from typing import Dict

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
except ImportError:  # the recorder's extra: pip install 'horde[record]'
    x509 = None


class MissingCryptography(Exception):
    pass


def default_directory() -> str:
    return os.path.join(os.path.expanduser("~"), ".horde", "recorder")


@dataclass
class Authority:
    directory: str
    cert_path: str
    made_now: bool
    spki_sha256: str  # base64 of the SHA-256 of the shared key's SubjectPublicKeyInfo
    _ca_cert: object
    _ca_key: object
    _leaf_key: object
    _contexts: Dict[str, ssl.SSLContext]

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS context presenting a certificate for ``host``, signed by the authority."""
        context = self._contexts.get(host)
        if context is None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.set_alpn_protocols(["http/1.1"])
            pem = self._leaf_pem(host)
            with tempfile.NamedTemporaryFile("wb", suffix=".pem", delete=False) as handle:
                handle.write(pem)
            try:
                context.load_cert_chain(handle.name)
            finally:
                os.unlink(handle.name)
            self._contexts[host] = context
        return context

    def _leaf_pem(self, host: str) -> bytes:
        now = datetime.datetime.now(datetime.timezone.utc)
        try:
            alternative = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            alternative = x509.DNSName(host)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host[:64])]))
            .issuer_name(self._ca_cert.subject)
            .public_key(self._leaf_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName([alternative]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self._ca_key, hashes.SHA256())
        )
        key = self._leaf_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption())
        return (certificate.public_bytes(serialization.Encoding.PEM)
                + self._ca_cert.public_bytes(serialization.Encoding.PEM) + key)


def load_or_make(directory: str) -> Authority:
    if x509 is None:
        raise MissingCryptography("horde record needs the cryptography package to make its certificates: "
                                  "pip install 'horde[record]'")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    cert_path = os.path.join(directory, "horde-recorder-ca.pem")
    key_path = os.path.join(directory, "horde-recorder-ca.key")
    leaf_key_path = os.path.join(directory, "horde-recorder-hosts.key")
    made_now = not (os.path.exists(cert_path) and os.path.exists(key_path) and os.path.exists(leaf_key_path))
    if made_now:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        leaf_key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "horde recorder CA"),
                          x509.NameAttribute(NameOID.ORGANIZATION_NAME, "horde")])
        ca_cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        for path, key in ((key_path, ca_key), (leaf_key_path, leaf_key)):
            _write_private(path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
        with open(cert_path, "wb") as handle:
            handle.write(ca_cert.public_bytes(serialization.Encoding.PEM))
    with open(cert_path, "rb") as handle:
        ca_cert = x509.load_pem_x509_certificate(handle.read())
    with open(key_path, "rb") as handle:
        ca_key = serialization.load_pem_private_key(handle.read(), password=None)
    with open(leaf_key_path, "rb") as handle:
        leaf_key = serialization.load_pem_private_key(handle.read(), password=None)
    spki = leaf_key.public_key().public_bytes(serialization.Encoding.DER,
                                              serialization.PublicFormat.SubjectPublicKeyInfo)
    fingerprint = base64.b64encode(hashlib.sha256(spki).digest()).decode("ascii")
    return Authority(directory, cert_path, made_now, fingerprint, ca_cert, ca_key, leaf_key, {})


def _write_private(path: str, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)

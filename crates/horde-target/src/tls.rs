//! HTTPS for the target: a self-signed certificate made at start (there is no CA to ask, and a
//! fresh one per run leaves no key lying around), served by rustls with HTTP/2 and HTTP/1.1
//! offered by ALPN.

use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};
use std::io;
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

/// The target is for local use: the certificate names the loopback addresses and localhost.
const SUBJECT_ALT_NAMES: [&str; 3] = ["127.0.0.1", "::1", "localhost"];

/// The certificate the target presents, in the forms a user needs to trust it.
#[derive(Debug, Clone)]
pub(crate) struct Certificate {
    pub pem: String,
    pub der: Vec<u8>,
    /// SHA-256 of the DER, colon-separated upper-case hex, as `openssl x509 -fingerprint
    /// -sha256` prints it, so the two can be compared by eye.
    pub fingerprint: String,
}

/// Makes a certificate and key for this run and the acceptor that serves them.
pub(crate) fn self_signed() -> io::Result<(Certificate, TlsAcceptor)> {
    let names: Vec<String> = SUBJECT_ALT_NAMES.iter().map(|name| name.to_string()).collect();
    let mut params = rcgen::CertificateParams::new(names).map_err(io::Error::other)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(rcgen::DnType::CommonName, "horde target");
    let key = rcgen::KeyPair::generate().map_err(io::Error::other)?;
    let certificate = params.self_signed(&key).map_err(io::Error::other)?;
    let der: CertificateDer<'static> = certificate.der().clone();

    // The ring provider explicitly, as the engine does: the process-wide default is not ours
    // to set, and aws-lc is not built.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(vec![der.clone()], PrivatePkcs8KeyDer::from(key.serialize_der()).into())
        .map_err(io::Error::other)?;
    // HTTP/2 first, so that clients offering both get it; the connection then sees the h2
    // preface and is served as HTTP/2 (server.rs).
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];

    let certificate = Certificate { pem: certificate.pem(), fingerprint: fingerprint(&der), der: der.to_vec() };
    Ok((certificate, TlsAcceptor::from(Arc::new(config))))
}

fn fingerprint(der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    digest.as_ref().iter().map(|byte| format!("{byte:02X}")).collect::<Vec<_>>().join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_is_openssls_format() {
        // SHA-256 of the empty input, well known.
        let empty = fingerprint(b"");
        assert!(empty.starts_with("E3:B0:C4:42:98:FC:1C:14:"), "{empty}");
        assert_eq!(empty.len(), 32 * 3 - 1);
    }

    #[test]
    fn the_certificate_comes_in_pem_and_der_with_its_fingerprint() {
        // That it is valid for each name is checked by a client, in tests/protocols.rs.
        let (certificate, _) = self_signed().unwrap();
        assert!(certificate.pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert_eq!(certificate.fingerprint, fingerprint(&certificate.der));
    }
}

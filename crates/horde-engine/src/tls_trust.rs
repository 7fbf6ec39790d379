//! Which server certificates a TLS client trusts, for every protocol that speaks TLS (HTTPS,
//! PostgreSQL): the system's roots, certificates read from a PEM file, a verifier that checks
//! the chain but not the name (PostgreSQL's `verify-ca`), one that accepts any certificate
//! (`verify: false`, `sslmode=require`), and a failed handshake's kind and reason in words.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// The system's trusted roots, read once per process.
pub(crate) fn system_roots() -> &'static RootCertStore {
    static ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut roots = RootCertStore::empty();
        // Certificates the system lists but rustls cannot use are skipped, as browsers do.
        let _ = roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        roots
    })
}

/// Every certificate of the PEM file at `path`; an error in words naming the file when it
/// cannot be read or holds none.
pub(crate) fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    match CertificateDer::pem_file_iter(path).and_then(|certs| certs.collect::<Result<Vec<_>, _>>()) {
        Ok(certs) if certs.is_empty() => Err(format!("{} holds no PEM certificate", path.display())),
        Ok(certs) => Ok(certs),
        Err(err) => Err(format!("cannot read certificates from {}: {err}", path.display())),
    }
}

/// A failed handshake with `host`, as a stable kind and words: `tls_certificate` when the
/// server's certificate was refused (and why), `alpn_refused` when the server took none of the
/// application protocols offered, `tls_handshake` for everything else, with words of their own
/// when the server refused the client's certificate.
pub(crate) fn handshake_failure(host: &str, err: &std::io::Error) -> (&'static str, String) {
    match err.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidCertificate(reason)) => {
            ("tls_certificate", format!("the certificate of {host} was refused: {}", refusal_reason(reason, host)))
        }
        Some(rustls::Error::AlertReceived(rustls::AlertDescription::CertificateRequired)) => (
            "tls_handshake",
            format!(
                "{host} asks for a client certificate and none was given (certificate_required alert): set \
                 protocol.tls.client_certificate"
            ),
        ),
        Some(error @ rustls::Error::AlertReceived(alert)) if refused_client_certificate(error) => (
            "tls_handshake",
            format!(
                "{host} refused the client certificate ({alert:?} alert): protocol.tls.client_certificate must be one \
                 the server trusts (issued by a CA it lists, valid now, for client authentication)"
            ),
        ),
        Some(rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)) => (
            "alpn_refused",
            format!("{host} refused every application protocol offered by ALPN (no_application_protocol alert)"),
        ),
        Some(other) => ("tls_handshake", format!("TLS handshake with {host} failed: {other}")),
        None => ("tls_handshake", format!("TLS handshake with {host} failed: {err}")),
    }
}

/// Whether the server's alert refuses the client's certificate (or its lack of one). Under TLS
/// 1.3 it comes after the client's side of the handshake is done, at the first read.
pub(crate) fn refused_client_certificate(err: &rustls::Error) -> bool {
    use rustls::AlertDescription::*;
    matches!(
        err,
        rustls::Error::AlertReceived(
            CertificateRequired
                | BadCertificate
                | UnsupportedCertificate
                | CertificateRevoked
                | CertificateExpired
                | CertificateUnknown
                | UnknownCA
        )
    )
}

/// Why a server's certificate was refused, in words.
fn refusal_reason(reason: &CertificateError, host: &str) -> String {
    match reason {
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => "it has expired".to_string(),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "it is not valid yet".to_string()
        }
        CertificateError::UnknownIssuer => {
            "it is signed by an unknown certificate authority (trust it with a CA file)".to_string()
        }
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            format!("it is not valid for the name {host}")
        }
        CertificateError::Revoked => "it has been revoked".to_string(),
        CertificateError::BadSignature => "its signature is bad".to_string(),
        other => format!("{other:?}"),
    }
}

/// Every certificate is accepted, though the handshake's signatures are still checked, so the
/// connection works as a real one.
#[derive(Debug)]
pub(crate) struct AcceptAnyCertificate(pub Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The chain must lead to a trusted root and be valid now; the name it was issued for is not
/// checked (libpq's `sslmode=verify-ca`: a server reached by an address its certificate does
/// not list, such as a replica behind a load balancer).
#[derive(Debug)]
pub(crate) struct VerifyChainOnly(pub Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for VerifyChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            verdict => verdict,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

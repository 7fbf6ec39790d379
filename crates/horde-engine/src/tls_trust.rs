//! Which server certificates a TLS client trusts, for every protocol that speaks TLS (HTTPS,
//! PostgreSQL): the system's roots, certificates read from a PEM file and trusted as curl
//! trusts them, the server's own too, with or without its name checked (PostgreSQL's
//! `verify-ca`) ([`TrustGiven`]), a verifier that accepts any certificate (`verify: false`,
//! `sslmode=require`), and a failed handshake's kind and reason in words that say what to do.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// Makes ring the process's TLS provider, for the libraries that take rustls's process default
/// (the MariaDB driver). rustls picks one by itself only when a single provider is compiled in,
/// and the Cassandra driver's rustls brings aws-lc-rs beside the ring every other TLS of horde
/// uses: without this, such a library's first handshake would panic.
pub(crate) fn use_ring_by_default() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Err when one is installed already (by whoever embeds horde): that one stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

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

/// How to trust a certificate, or to stop verifying, in each front end's terms.
const TRUST_IT: &str = "trust it with --cacert FILE (a plan's tls.ca_file, PostgreSQL's sslrootcert=FILE): the \
                        certificate authority's certificate or the server's own, in PEM; or skip verification with \
                        -k (verify: false, sslmode=require)";

/// Why a server's certificate was refused, in words that say what to do about it.
fn refusal_reason(reason: &CertificateError, host: &str) -> String {
    match reason {
        CertificateError::Expired => "it has expired: renew it, or skip verification with -k".to_string(),
        CertificateError::ExpiredContext { time, not_after } => format!(
            "it has expired ({} ago): renew it, or skip verification with -k",
            elapsed(not_after.as_secs(), time.as_secs())
        ),
        CertificateError::NotValidYet => {
            "it is not valid yet: check the clocks of this machine and of the server".to_string()
        }
        CertificateError::NotValidYetContext { time, not_before } => format!(
            "it is not valid yet (not for another {}): check the clocks of this machine and of the server",
            elapsed(time.as_secs(), not_before.as_secs())
        ),
        CertificateError::UnknownIssuer => format!("it is signed by an unknown certificate authority: {TRUST_IT}"),
        CertificateError::NotValidForName => {
            format!("it is not valid for the name {host}: connect by a name it lists, or skip verification with -k")
        }
        CertificateError::NotValidForNameContext { presented, .. } => format!(
            "it is not valid for the name {host} (it names {}): connect by a name it lists (--resolve \
             NAME:PORT:ADDRESS keeps the address), or skip verification with -k",
            if presented.is_empty() {
                "none".to_string()
            } else {
                presented.iter().map(|name| bare_name(name)).collect::<Vec<_>>().join(", ")
            }
        ),
        CertificateError::Revoked => "it has been revoked".to_string(),
        CertificateError::BadSignature => {
            "its signature does not verify: it was not signed by the certificate authority it names".to_string()
        }
        CertificateError::BadEncoding => "it is not a well-formed X.509 certificate".to_string(),
        CertificateError::UnhandledCriticalExtension => {
            "it has a critical extension horde does not understand, so it cannot be verified".to_string()
        }
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "its extended key usage does not allow a TLS server (serverAuth)".to_string()
        }
        CertificateError::Other(other) => match other.0.downcast_ref::<webpki::Error>() {
            Some(webpki::Error::CaUsedAsEndEntity) => "it is a certificate authority's certificate (basicConstraints \
                 CA:TRUE, as `openssl req -x509` makes by default), which a server may present only to a client that \
                 trusts this very certificate: give this certificate to --cacert FILE (a plan's tls.ca_file, \
                 PostgreSQL's sslrootcert=FILE), as curl takes it, or skip verification with -k"
                .to_string(),
            Some(webpki::Error::UnsupportedCertVersion) => "it is an X.509 version 1 certificate (made without \
                 extensions), which horde refuses as browsers do: make it again with extensions, or skip \
                 verification with -k"
                .to_string(),
            Some(webpki::Error::EndEntityUsedAsCa) => {
                "its chain has a server's certificate signing another, as only a certificate authority may".to_string()
            }
            _ => format!("{other}"),
        },
        other => format!("{other}"),
    }
}

/// A name as webpki presents it (`DnsName("shop.test")`, `IpAddress(127.0.0.1)`), bare.
fn bare_name(presented: &str) -> &str {
    let inner = ["DnsName(", "IpAddress("]
        .iter()
        .find_map(|wrapper| presented.strip_prefix(wrapper)?.strip_suffix(')'))
        .unwrap_or(presented);
    inner.trim_matches('"')
}

/// From `earlier` to `later` (seconds since the epoch), roughly, in the largest unit.
fn elapsed(earlier: u64, later: u64) -> String {
    let seconds = later.saturating_sub(earlier);
    let (count, unit) = match seconds {
        0..120 => (seconds, "second"),
        120..7200 => (seconds / 60, "minute"),
        7200..172_800 => (seconds / 3600, "hour"),
        _ => (seconds / 86_400, "day"),
    };
    format!("{count} {unit}{}", if count == 1 { "" } else { "s" })
}

/// Trusts the roots given, and the certificates of a file the user named (`--cacert`, a plan's
/// `tls.ca_file`, PostgreSQL's `sslrootcert`) the way curl trusts its `--cacert` (OpenSSL with
/// `X509_V_FLAG_PARTIAL_CHAIN`): every certificate of the file is a trust anchor, and a server
/// presenting one of them as its own certificate is trusted as it is, even when that
/// certificate says it is a certificate authority's (basicConstraints CA:TRUE, what
/// `openssl req -x509` makes by default), which webpki alone refuses as `CaUsedAsEndEntity`.
/// Such a certificate must still be in date, and valid for the name unless the name is not
/// checked ([`TrustGiven::chain_only`]).
#[derive(Debug)]
pub(crate) struct TrustGiven {
    webpki: Arc<WebPkiServerVerifier>,
    /// The file's certificates, as the server may present them.
    given: Vec<CertificateDer<'static>>,
    check_name: bool,
}

impl TrustGiven {
    /// `roots` and `given` (added to them); a certificate that cannot be an anchor is named.
    pub(crate) fn new(
        mut roots: RootCertStore,
        given: Vec<CertificateDer<'static>>,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<TrustGiven, String> {
        for (i, certificate) in given.iter().enumerate() {
            roots.add(certificate.clone()).map_err(|err| format!("certificate {} of the file: {err}", i + 1))?;
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|err| err.to_string())?;
        Ok(TrustGiven { webpki, given, check_name: true })
    }

    /// The chain must lead to a trusted root and be valid now; the name it was issued for is
    /// not checked (libpq's `sslmode=verify-ca`: a server reached by an address its
    /// certificate does not list, such as a replica behind a load balancer).
    pub(crate) fn chain_only(self) -> TrustGiven {
        TrustGiven { check_name: false, ..self }
    }
}

impl ServerCertVerifier for TrustGiven {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verdict = match self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(CertificateError::Other(other)))
                if other.0.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity)
                    && self.given.iter().any(|given| given.as_ref() == end_entity.as_ref()) =>
            {
                // webpki checks the validity dates before the basic constraints, so this
                // certificate is in date; its name is what is left to check.
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name).map(|()| ServerCertVerified::assertion())
            }
            verdict => verdict,
        };
        match verdict {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            verdict => verdict,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for `name` that says it is a CA's (as `openssl req -x509`
    /// makes by default), valid from `not_before` to `not_after` (years).
    fn self_signed_ca(name: &str, not_before: i32, not_after: i32) -> CertificateDer<'static> {
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.not_before = rcgen::date_time_ymd(not_before, 1, 1);
        params.not_after = rcgen::date_time_ymd(not_after, 1, 1);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    fn verify(trust: &TrustGiven, certificate: &CertificateDer<'_>, name: &str) -> Result<(), String> {
        let name = ServerName::try_from(name.to_string()).unwrap();
        trust.verify_server_cert(certificate, &[], &name, &[], UnixTime::now()).map(|_| ()).map_err(|err| match err {
            rustls::Error::InvalidCertificate(reason) => refusal_reason(&reason, "the server"),
            other => other.to_string(),
        })
    }

    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    #[test]
    fn a_given_certificate_is_trusted_as_the_servers_own_even_when_it_says_ca() {
        let server = self_signed_ca("127.0.0.1", 2020, 2100);
        let trust = TrustGiven::new(RootCertStore::empty(), vec![server.clone()], provider()).unwrap();
        assert_eq!(verify(&trust, &server, "127.0.0.1"), Ok(()));
        // The name is still checked.
        let wrong_name = verify(&trust, &server, "shop.test").unwrap_err();
        assert!(wrong_name.contains("not valid for the name the server (it names 127.0.0.1)"), "{wrong_name}");
        // Chain-only verification waives the name alone.
        assert_eq!(verify(&trust.chain_only(), &server, "shop.test"), Ok(()));
        let other = self_signed_ca("127.0.0.1", 2020, 2100);
        let chain_only = TrustGiven::new(RootCertStore::empty(), vec![server], provider()).unwrap().chain_only();
        assert!(verify(&chain_only, &other, "127.0.0.1").unwrap_err().contains("CA:TRUE"));
    }

    #[test]
    fn a_ca_certificate_that_was_not_given_is_refused_in_words() {
        let given = self_signed_ca("127.0.0.1", 2020, 2100);
        let other = self_signed_ca("127.0.0.1", 2020, 2100);
        let trust = TrustGiven::new(RootCertStore::empty(), vec![given], provider()).unwrap();
        // webpki judges the certificate itself before looking for its issuer: the words say
        // what it is, and to give this very certificate.
        let refused = verify(&trust, &other, "127.0.0.1").unwrap_err();
        assert!(
            refused.contains("CA:TRUE") && refused.contains("openssl req -x509") && refused.contains("--cacert FILE"),
            "{refused}"
        );
        // A server certificate signed by a CA nobody gave.
        let unknown = CertificateError::UnknownIssuer;
        let words = refusal_reason(&unknown, "127.0.0.1");
        assert!(
            words.contains("unknown certificate authority") && words.contains("--cacert FILE") && words.contains("-k"),
            "{words}"
        );
    }

    #[test]
    fn a_given_certificate_out_of_date_is_refused_as_such() {
        let expired = self_signed_ca("127.0.0.1", 2000, 2001);
        let trust = TrustGiven::new(RootCertStore::empty(), vec![expired.clone()], provider()).unwrap();
        let refused = verify(&trust, &expired, "127.0.0.1").unwrap_err();
        assert!(refused.starts_with("it has expired (") && refused.contains("days ago"), "{refused}");
        let future = self_signed_ca("127.0.0.1", 2200, 2201);
        let trust = TrustGiven::new(RootCertStore::empty(), vec![future.clone()], provider()).unwrap();
        let refused = verify(&trust, &future, "127.0.0.1").unwrap_err();
        assert!(refused.starts_with("it is not valid yet (not for another"), "{refused}");
    }

    #[test]
    fn spans_of_time_are_said_in_their_largest_unit() {
        assert_eq!(elapsed(100, 101), "1 second");
        assert_eq!(elapsed(0, 600), "10 minutes");
        assert_eq!(elapsed(0, 3 * 3600), "3 hours");
        assert_eq!(elapsed(0, 40 * 86_400), "40 days");
        assert_eq!(elapsed(10, 0), "0 seconds");
    }
}

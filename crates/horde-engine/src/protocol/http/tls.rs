//! TLS for https:// connections, with rustls: the client configuration a plan asks for (trusted
//! roots, a CA file, a client certificate, versions, ALPN), made once when the plan is lowered;
//! each virtual user's own session store (a new user pays a full handshake, as a new browser
//! does) unless the plan shares resumption; and handshake failures as KOs of stable kinds.

use crate::failure::Failure;
use crate::tls_trust::{read_certificates, system_roots, AcceptAnyCertificate, TrustGiven};
use horde_plan::{PlanError, TlsOptions, TlsVersion};
use rustls::client::Resumption;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::ClientConfig;
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::TlsConnector;

/// TLS sessions each user keeps for resumption, when users do not share them.
const SESSIONS_PER_USER: usize = 8;

/// Cipher suites in the order browsers offer them: AES-128-GCM before AES-256-GCM (rustls's
/// own order is the reverse), so servers that follow the client's order agree on what they
/// would with a browser, and the key schedule runs on SHA-256, which CPUs accelerate.
fn browser_rank(suite: rustls::CipherSuite) -> usize {
    use rustls::CipherSuite::*;
    const ORDER: [rustls::CipherSuite; 9] = [
        TLS13_AES_128_GCM_SHA256,
        TLS13_AES_256_GCM_SHA384,
        TLS13_CHACHA20_POLY1305_SHA256,
        TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ];
    ORDER.iter().position(|s| *s == suite).unwrap_or(ORDER.len())
}

/// The run's TLS configuration.
pub(crate) struct TlsSetup {
    config: Arc<ClientConfig>,
    share_sessions: bool,
    /// Shared by every user when sessions are shared.
    shared: TlsConnector,
}

impl TlsSetup {
    /// The configuration `options` describes; problems are pushed to `errors` with their path.
    /// `alpn` lists the application protocols offered, most wanted first.
    pub fn new(options: &TlsOptions, base_dir: Option<&Path>, alpn: &[&[u8]], errors: &mut Vec<PlanError>) -> TlsSetup {
        let mut provider = rustls::crypto::ring::default_provider();
        provider.cipher_suites.sort_by_key(|suite| browser_rank(suite.suite()));
        let provider = Arc::new(provider);
        let versions: Vec<&'static rustls::SupportedProtocolVersion> =
            [(TlsVersion::Tls12, &rustls::version::TLS12), (TlsVersion::Tls13, &rustls::version::TLS13)]
                .into_iter()
                .filter(|(version, _)| options.min_version.is_none_or(|min| *version >= min))
                .filter(|(version, _)| options.max_version.is_none_or(|max| *version <= max))
                .map(|(_, supported)| supported)
                .collect();
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(if versions.is_empty() { rustls::DEFAULT_VERSIONS } else { &versions })
            .expect("ring supports TLS 1.2 and 1.3");
        let builder = if options.verify {
            // The CA file's certificates are trusted as curl trusts them: the server's own too.
            let given = options.ca_file.as_deref().map(|file| resolve(base_dir, file)).and_then(|path| {
                let trust = read_certificates(&path)
                    .and_then(|given| TrustGiven::new(system_roots().clone(), given, provider.clone()))
                    .map_err(|why| format!("{}: {why}", path.display()));
                trust.map_err(|why| errors.push(PlanError::new("protocol.tls.ca_file", why))).ok()
            });
            match given {
                Some(trust) => builder.dangerous().with_custom_certificate_verifier(Arc::new(trust)),
                None => builder.with_root_certificates(system_roots().clone()),
            }
        } else {
            builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
        };
        let mut config = match &options.client_certificate {
            None => builder.with_no_client_auth(),
            Some(client) => {
                let certificate = resolve(base_dir, &client.certificate);
                let key = resolve(base_dir, &client.key);
                let chain = CertificateDer::pem_file_iter(&certificate).and_then(|c| c.collect::<Result<Vec<_>, _>>());
                let private = PrivateKeyDer::from_pem_file(&key);
                match (chain, private) {
                    (Ok(chain), Ok(private)) if !chain.is_empty() => {
                        match builder.clone().with_client_auth_cert(chain, private) {
                            Ok(config) => config,
                            Err(err) => {
                                errors.push(PlanError::new(
                                    "protocol.tls.client_certificate",
                                    format!(
                                        "{} and {} do not make a client certificate: {err}",
                                        certificate.display(),
                                        key.display()
                                    ),
                                ));
                                builder.with_no_client_auth()
                            }
                        }
                    }
                    (chain, private) => {
                        match chain {
                            Ok(chain) if chain.is_empty() => errors.push(PlanError::new(
                                "protocol.tls.client_certificate.certificate",
                                format!("{} holds no PEM certificate", certificate.display()),
                            )),
                            Err(err) => errors.push(PlanError::new(
                                "protocol.tls.client_certificate.certificate",
                                format!("cannot read a certificate from {}: {err}", certificate.display()),
                            )),
                            Ok(_) => {}
                        }
                        if let Err(err) = private {
                            errors.push(PlanError::new(
                                "protocol.tls.client_certificate.key",
                                format!("cannot read a private key from {}: {err}", key.display()),
                            ));
                        }
                        builder.with_no_client_auth()
                    }
                }
            }
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        config.enable_sni = options.sni;
        if !options.share_sessions {
            // Each user gets its own store (below); the base keeps none.
            config.resumption = Resumption::disabled();
        }
        let config = Arc::new(config);
        TlsSetup { shared: TlsConnector::from(config.clone()), config, share_sessions: options.share_sessions }
    }

    /// The connector a user makes its connections with: with a session store of its own,
    /// unless sessions are shared. Made when the user first connects over TLS.
    pub fn connector_for_user(&self) -> TlsConnector {
        if self.share_sessions {
            return self.shared.clone();
        }
        let mut own = (*self.config).clone();
        own.resumption = Resumption::in_memory_sessions(SESSIONS_PER_USER);
        TlsConnector::from(Arc::new(own))
    }
}

impl TlsSetup {
    /// A connector offering only HTTP/1.1 by ALPN, for WebSockets and event streams (which
    /// upgrade or stream over HTTP/1.1), with sessions kept as for the user's connections.
    pub fn http1_connector(&self) -> TlsConnector {
        let mut own = (*self.config).clone();
        own.alpn_protocols = vec![b"http/1.1".to_vec()];
        if !self.share_sessions {
            own.resumption = Resumption::in_memory_sessions(SESSIONS_PER_USER);
        }
        TlsConnector::from(Arc::new(own))
    }
}

fn resolve(base_dir: Option<&Path>, file: &str) -> std::path::PathBuf {
    match base_dir {
        Some(dir) if Path::new(file).is_relative() => dir.join(file),
        _ => Path::new(file).to_path_buf(),
    }
}

/// The server name a connection to `host` presents and verifies.
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, Failure> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .map_err(|_| Failure::unsent("tls_handshake", format!("{host:?} is not a name TLS can verify")))
}

/// A failed handshake as a KO, of the kind `tls_trust` gives it.
pub(crate) fn handshake_failure(host: &str, err: &std::io::Error) -> Failure {
    let (kind, message) = crate::tls_trust::handshake_failure(host, err);
    Failure::new(kind, message)
}

/// What a read or write that failed on a TLS connection after its handshake means, when TLS
/// says more than the error's kind: under TLS 1.3 a server refuses the client's certificate
/// with an alert that arrives at the first read, and that is the handshake's failure (as it is
/// under TLS 1.2). None otherwise.
pub(crate) fn failure_after_handshake(host: &str, err: &std::io::Error) -> Option<Failure> {
    let tls_error = err.get_ref()?.downcast_ref::<rustls::Error>()?;
    crate::tls_trust::refused_client_certificate(tls_error).then(|| handshake_failure(host, err))
}

//! TLS to PostgreSQL, negotiated as libpq does: an SSLRequest on the new TCP connection, the
//! server's one-byte answer (`S`: the handshake follows, `N`: it speaks only cleartext), then
//! the protocol inside TLS. The URL's libpq parameters say how much to insist and what to trust:
//!
//! - `sslmode`: `disable`; `prefer` (libpq's default: TLS when the server offers it, and a
//!   connection that fails in TLS tried again in cleartext); `require` (TLS or no connection);
//!   `verify-ca` (the chain to a trusted root checked); `verify-full` (the chain and the host
//!   name).
//! - `sslrootcert`: a PEM file of trusted roots, by default `~/.postgresql/root.crt` when it
//!   exists; as libpq, roots make the chain checked under `prefer` and `require` too. `system`
//!   trusts the system's roots, and then only `verify-full` is allowed (its default): public
//!   roots vouch for anyone's name.
//! - `sslcert` and `sslkey`: a client certificate and its key, for servers that ask for one.
//!
//! A Unix-socket host never speaks TLS (libpq neither: the socket is on the same machine).

use super::super::database::take_parameters;
use crate::tls_trust::{read_certificates, system_roots, AcceptAnyCertificate, TrustGiven};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::TlsConnector;

/// How much the connection insists on TLS, and what it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// A database's TLS settings, made once when its URL is parsed.
#[derive(Clone)]
pub struct PgTls {
    pub mode: SslMode,
    /// None with `disable`.
    connector: Option<TlsConnector>,
}

impl std::fmt::Debug for PgTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTls").field("mode", &self.mode).finish()
    }
}

impl PgTls {
    /// Takes the TLS parameters out of `url`'s query: the settings they give, and the URL
    /// without them (for tokio-postgres's parser). The URL is not parsed as a whole here: a
    /// libpq URL may name no host before its path (`postgres://user@/db?host=/run/postgresql`),
    /// which a strict URL parser refuses. Errors name the parameter and what is wrong with it.
    pub fn from_url(url: &str, base_dir: Option<&Path>) -> Result<(PgTls, String), String> {
        // tokio-postgres reads the user and password up to the URL's first `@`, a `?` in the
        // password included; the query begins after them.
        let credentials_end = url.find('@').map_or(0, |at| at + 1);
        let (taken, rest) =
            take_parameters(url, credentials_end, &["sslmode", "sslrootcert", "sslcert", "sslkey", "sslnegotiation"]);
        let (mut asked_mode, mut root, mut cert, mut key) = (None, None, None, None);
        for (name, value) in taken {
            match name.as_str() {
                "sslmode" => {
                    asked_mode = Some(match value.as_str() {
                        "disable" => SslMode::Disable,
                        "prefer" => SslMode::Prefer,
                        "require" => SslMode::Require,
                        "verify-ca" => SslMode::VerifyCa,
                        "verify-full" => SslMode::VerifyFull,
                        "allow" => return Err("sslmode=allow is not supported (use prefer or disable)".into()),
                        other => {
                            return Err(format!(
                                "sslmode={other}: not a mode (disable, prefer, require, verify-ca, verify-full)"
                            ))
                        }
                    })
                }
                "sslrootcert" => root = Some(value),
                "sslcert" => cert = Some(resolve(base_dir, &value)),
                "sslkey" => key = Some(resolve(base_dir, &value)),
                _ if value != "postgres" => {
                    return Err(format!("sslnegotiation={value}: horde negotiates TLS with an SSLRequest (postgres)"))
                }
                _ => {}
            }
        }
        // The system's roots vouch for any public name: with them, the name must be checked
        // (libpq 16's rule).
        let system = root.as_deref() == Some("system");
        let mode = match (asked_mode, system) {
            (None, true) => SslMode::VerifyFull,
            (Some(mode), true) if mode != SslMode::VerifyFull => {
                return Err("sslrootcert=system needs sslmode=verify-full: a weaker mode would accept any \
                            publicly trusted certificate, for any name"
                    .into())
            }
            (mode, _) => mode.unwrap_or(SslMode::Prefer),
        };
        if mode == SslMode::Disable {
            return Ok((PgTls { mode, connector: None }, rest));
        }
        // The roots: the URL's, or libpq's default file when it exists. As libpq, any roots
        // make the chain checked, whatever the mode; verify-ca and verify-full need some.
        let default_root = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".postgresql/root.crt"));
        // A file's certificates are trusted as curl and libpq trust them: the server's own too.
        let roots = match &root {
            Some(_) if system => Some((system_roots().clone(), Vec::new())),
            Some(root) => Some((RootCertStore::empty(), read_roots(&resolve(base_dir, root))?)),
            None => match default_root.filter(|path| path.exists()) {
                Some(path) => Some((RootCertStore::empty(), read_roots(&path)?)),
                None if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) => {
                    return Err("sslmode=verify-ca and verify-full need trusted roots: sslrootcert=FILE (PEM), or \
                         sslrootcert=system for the system's, or ~/.postgresql/root.crt"
                        .into())
                }
                None => None,
            },
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("ring supports TLS 1.2 and 1.3");
        let builder = match (roots, mode) {
            (Some((roots, given)), SslMode::VerifyFull) if given.is_empty() => builder.with_root_certificates(roots),
            (Some((roots, given)), mode) => {
                let trust = TrustGiven::new(roots, given, provider).map_err(|err| format!("sslrootcert: {err}"))?;
                let trust = if mode == SslMode::VerifyFull { trust } else { trust.chain_only() };
                builder.dangerous().with_custom_certificate_verifier(Arc::new(trust))
            }
            (None, _) => builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider))),
        };
        let config = match (cert, key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let chain = read_certificates(&cert).map_err(|why| format!("sslcert: {why}"))?;
                let private = PrivateKeyDer::from_pem_file(&key)
                    .map_err(|err| format!("sslkey: cannot read a private key from {}: {err}", key.display()))?;
                builder.with_client_auth_cert(chain, private).map_err(|err| {
                    format!(
                        "sslcert and sslkey: {} and {} do not make a client certificate: {err}",
                        cert.display(),
                        key.display()
                    )
                })?
            }
            _ => return Err("sslcert and sslkey go together: give both".into()),
        };
        Ok((PgTls { mode, connector: Some(TlsConnector::from(Arc::new(config))) }, rest))
    }

    /// The connector, unless TLS is disabled.
    pub fn connector(&self) -> Option<&TlsConnector> {
        self.connector.as_ref()
    }
}

fn read_roots(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    read_certificates(path).map_err(|why| format!("sslrootcert: {why}"))
}

fn resolve(base_dir: Option<&Path>, file: &str) -> PathBuf {
    match base_dir {
        Some(dir) if Path::new(file).is_relative() => dir.join(file),
        _ => PathBuf::from(file),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<(PgTls, String), String> {
        PgTls::from_url(url, None)
    }

    #[test]
    fn the_tls_parameters_are_taken_out_of_the_url_and_the_others_kept() {
        let (tls, rest) = parse("postgres://u:p@h/db?sslmode=require&application_name=x&connect_timeout=3").unwrap();
        assert_eq!(tls.mode, SslMode::Require);
        assert!(tls.connector().is_some());
        assert_eq!(rest, "postgres://u:p@h/db?application_name=x&connect_timeout=3");
        let (tls, rest) = parse("postgres://u@h/db?sslmode=disable").unwrap();
        assert_eq!(tls.mode, SslMode::Disable);
        assert!(tls.connector().is_none());
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!(parse("postgres://u@h/db").unwrap().0.mode, SslMode::Prefer);
        let (_, rest) = parse("postgres://u@/db?host=%2Frun%2Fpostgresql&sslmode=disable").unwrap();
        assert_eq!(rest, "postgres://u@/db?host=%2Frun%2Fpostgresql");
    }

    #[test]
    fn bad_tls_parameters_are_named() {
        let err = parse("postgres://u@h/db?sslmode=verify-everything").unwrap_err();
        assert!(err.contains("sslmode=verify-everything"), "{err}");
        let err = parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=/nonexistent/root.pem").unwrap_err();
        assert!(err.starts_with("sslrootcert: cannot read certificates from /nonexistent/root.pem"), "{err}");
        let err = parse("postgres://u@h/db?sslmode=require&sslcert=/a.pem").unwrap_err();
        assert!(err.contains("sslcert and sslkey go together"), "{err}");
        let err = parse("postgres://u@h/db?sslnegotiation=direct").unwrap_err();
        assert!(err.contains("sslnegotiation=direct"), "{err}");
    }

    #[test]
    fn system_roots_make_verify_full_possible_without_a_file() {
        let (tls, _) = parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=system").unwrap();
        assert_eq!(tls.mode, SslMode::VerifyFull);
        // verify-full is the default with the system's roots, and nothing weaker is allowed.
        assert_eq!(parse("postgres://u@h/db?sslrootcert=system").unwrap().0.mode, SslMode::VerifyFull);
        let err = parse("postgres://u@h/db?sslrootcert=system&sslmode=require").unwrap_err();
        assert!(err.contains("sslrootcert=system needs sslmode=verify-full"), "{err}");
    }
}

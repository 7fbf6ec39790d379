//! TLS to a Cassandra cluster's nodes (the plan's `cql.tls`), with rustls as every other
//! protocol of horde speaks it: the system's roots and a CA file trusted as curl trusts its
//! `--cacert` (crate::tls_trust), or, with `verify: false`, any certificate. The driver names a
//! node by its IP address in the handshake, so that is what a certificate must be valid for.

use crate::tls_trust::{read_certificates, system_roots, AcceptAnyCertificate, TrustGiven};
use horde_plan::CqlTls;
use rustls::ClientConfig;
use std::path::Path;
use std::sync::Arc;

/// The client configuration `tls` asks for; a CA file that cannot be read or used is named.
pub(crate) fn client_config(tls: &CqlTls) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?;
    let builder = match (tls.verify, &tls.ca_file) {
        (false, _) => builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider))),
        (true, None) => builder.with_root_certificates(system_roots().clone()),
        (true, Some(file)) => {
            let path = Path::new(file);
            let trust = read_certificates(path)
                .and_then(|given| TrustGiven::new(system_roots().clone(), given, provider.clone()))
                .map_err(|why| format!("{}: {why}", path.display()))?;
            builder.dangerous().with_custom_certificate_verifier(Arc::new(trust))
        }
    };
    Ok(Arc::new(builder.with_no_client_auth()))
}

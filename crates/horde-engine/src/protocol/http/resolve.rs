//! Host names to addresses, once per run: through the system resolver (getaddrinfo, as every
//! other program on the machine), cached for the run so that only the first connection to a
//! host pays for the lookup (its time is the `dns` phase), with fixed answers for names the
//! plan maps itself (curl's `--resolve host:port:address`). Address literals (`127.0.0.1`,
//! `[::1]`) are never looked up.

use crate::failure::Failure;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Shared by every worker of a run.
#[derive(Default)]
pub(crate) struct Resolver {
    /// `host:port` to its addresses: the plan's own mappings, then what lookups found.
    known: Mutex<HashMap<String, Arc<[SocketAddr]>>>,
}

impl Resolver {
    /// A resolver that answers `host:port` with the plan's mappings before asking the system.
    pub fn with_mappings(mappings: impl IntoIterator<Item = (String, SocketAddr)>) -> Resolver {
        let mut known: HashMap<String, Vec<SocketAddr>> = HashMap::new();
        for (authority, address) in mappings {
            known.entry(authority).or_default().push(address);
        }
        Resolver { known: Mutex::new(known.into_iter().map(|(k, v)| (k, v.into())).collect()) }
    }

    /// The addresses of `authority` (`host:port`), and how long a lookup took if one was made.
    pub async fn resolve(&self, authority: &str) -> Result<(Arc<[SocketAddr]>, Option<Duration>), Failure> {
        if let Ok(address) = authority.parse::<SocketAddr>() {
            return Ok((Arc::from([address]), None));
        }
        if let Some(addresses) = self.known.lock().expect("resolver lock").get(authority) {
            return Ok((addresses.clone(), None));
        }
        let started = Instant::now();
        let addresses: Arc<[SocketAddr]> = tokio::net::lookup_host(authority)
            .await
            .map_err(|err| Failure::new("dns_failed", format!("cannot resolve {authority}: {err}")))?
            .collect();
        if addresses.is_empty() {
            return Err(Failure::new("dns_failed", format!("{authority} has no address")));
        }
        let took = started.elapsed();
        self.known.lock().expect("resolver lock").insert(authority.to_string(), addresses.clone());
        Ok((addresses, Some(took)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn literals_mappings_and_lookups() {
        let mapped: SocketAddr = "127.0.0.1:8443".parse().unwrap();
        let resolver = Resolver::with_mappings([("example.org:443".to_string(), mapped)]);
        let (addresses, dns) = resolver.resolve("[::1]:80").await.unwrap();
        assert_eq!((&addresses[..], dns), (&["[::1]:80".parse().unwrap()][..], None));
        let (addresses, dns) = resolver.resolve("example.org:443").await.unwrap();
        assert_eq!((&addresses[..], dns), (&[mapped][..], None));
        // localhost is in /etc/hosts: looked up once, then from the cache.
        let (addresses, dns) = resolver.resolve("localhost:80").await.unwrap();
        assert!(!addresses.is_empty() && dns.is_some());
        let (_, dns) = resolver.resolve("localhost:80").await.unwrap();
        assert_eq!(dns, None);
        let failure = resolver.resolve("no-such-host.invalid:80").await.unwrap_err();
        assert_eq!(failure.kind, "dns_failed");
    }
}

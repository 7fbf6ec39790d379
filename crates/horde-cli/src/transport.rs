//! The transport flags (`-k`, `--cacert`, `--resolve`, `--http2`: [`TransportArgs`]) applied to
//! a plan's protocol, the same way for `horde http`, `run` and `sweep`: what the command line
//! says wins over what the plan or simulation says.

use crate::args::TransportArgs;
use horde_plan::{HostMapping, Http2Mode, HttpProtocol};

impl TransportArgs {
    /// Puts the flags into `protocol`; every problem, named by its flag. `url` is where the
    /// requests go when the plan's base URL does not say (quick mode's URL): on http://,
    /// `--http2` is h2c with prior knowledge.
    pub(crate) fn apply(&self, protocol: &mut HttpProtocol, url: Option<&str>) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        if self.insecure {
            protocol.tls.verify = false;
        }
        if let Some(file) = &self.cacert {
            // Relative to where the command was typed, not to the plan's directory.
            match std::path::absolute(file) {
                Ok(path) => protocol.tls.ca_file = Some(path.to_string_lossy().into_owned()),
                Err(err) => problems.push(format!("--cacert {file:?}: {err}")),
            }
        }
        for text in &self.resolve {
            match parse_host_mapping(text) {
                Ok(mapping) => {
                    protocol
                        .resolve
                        .retain(|m| !(m.host.eq_ignore_ascii_case(&mapping.host) && m.port == mapping.port));
                    protocol.resolve.push(mapping);
                }
                Err(problem) => problems.push(format!("--resolve {text:?}: {problem}")),
            }
        }
        if self.http2 {
            let target = protocol.base_url.as_deref().or(url);
            let cleartext = target.is_some_and(|url| url.to_ascii_lowercase().starts_with("http:"));
            protocol.http2 = if cleartext { Http2Mode::PriorKnowledge } else { Http2Mode::Negotiate };
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

/// `host:port:address`, as curl's `--resolve` (an IPv6 address may be in brackets).
pub(crate) fn parse_host_mapping(text: &str) -> Result<HostMapping, String> {
    let (host, rest) = text.split_once(':').ok_or("expected host:port:address")?;
    let (port, address) = rest.split_once(':').ok_or("expected host:port:address")?;
    let port: u16 = port.parse().map_err(|_| format!("{port:?} is not a port"))?;
    let address = address.trim_start_matches('[').trim_end_matches(']');
    address.parse::<std::net::IpAddr>().map_err(|_| format!("{address:?} is not an IP address"))?;
    if host.is_empty() {
        return Err("no host name".into());
    }
    Ok(HostMapping { host: host.to_string(), port, address: address.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_mappings_read_as_curl_writes_them() {
        let mapping = parse_host_mapping("example.org:443:127.0.0.1").unwrap();
        assert_eq!((mapping.host.as_str(), mapping.port, mapping.address.as_str()), ("example.org", 443, "127.0.0.1"));
        assert_eq!(parse_host_mapping("example.org:443:[::1]").unwrap().address, "::1");
        assert!(parse_host_mapping("example.org:x:127.0.0.1").unwrap_err().contains("not a port"));
        assert!(parse_host_mapping("example.org:443:nowhere").unwrap_err().contains("not an IP address"));
    }

    #[test]
    fn the_flags_win_over_the_plan() {
        let mut protocol = HttpProtocol { base_url: Some("http://127.0.0.1:8080".into()), ..HttpProtocol::default() };
        protocol.resolve.push(parse_host_mapping("shop.test:443:10.0.0.1").unwrap());
        let flags = TransportArgs {
            insecure: true,
            cacert: Some("ca.pem".into()),
            resolve: vec!["SHOP.test:443:127.0.0.1".into()],
            http2: true,
        };
        flags.apply(&mut protocol, None).unwrap();
        assert!(!protocol.tls.verify);
        assert!(std::path::Path::new(protocol.tls.ca_file.as_deref().unwrap()).is_absolute());
        assert_eq!(protocol.resolve.len(), 1);
        assert_eq!(protocol.resolve[0].address, "127.0.0.1");
        // h2c with prior knowledge on a cleartext base URL; ALPN on https.
        assert_eq!(protocol.http2, Http2Mode::PriorKnowledge);
        let mut https = HttpProtocol { base_url: Some("https://shop.test".into()), ..HttpProtocol::default() };
        TransportArgs { http2: true, ..TransportArgs::default() }.apply(&mut https, None).unwrap();
        assert_eq!(https.http2, Http2Mode::Negotiate);
        let problems = TransportArgs { resolve: vec!["nope".into()], ..TransportArgs::default() }
            .apply(&mut HttpProtocol::default(), Some("http://127.0.0.1/"))
            .unwrap_err();
        assert_eq!(problems, vec!["--resolve \"nope\": expected host:port:address".to_string()]);
    }
}

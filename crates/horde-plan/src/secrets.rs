//! What results never show: passwords in URLs (their user-info, a `password=` parameter) and
//! the values of secret headers. A plan goes into summary.json and report.html, the file people
//! send; [`Plan::redacted`] is the plan as they show it. The plan a user prints (`horde plan`)
//! is their own and keeps everything.
//!
//! ```
//! assert_eq!(
//!     horde_plan::redacted_url("postgres://bench:secret@127.0.0.1:5432/bench?sslmode=require&password=secret"),
//!     "postgres://bench:***@127.0.0.1:5432/bench?sslmode=require&password=***"
//! );
//! ```

use crate::Plan;
use std::borrow::Cow;

/// What a secret is replaced by.
pub const REDACTED: &str = "***";

/// Headers whose values are always secret: credentials and sessions. A plan adds its own in
/// `protocol.secret_headers`.
pub const SECRET_HEADERS: [&str; 3] = ["Authorization", "Proxy-Authorization", "Cookie"];

/// Query parameters that carry a password (libpq's and MySQL's URL parameters).
const SECRET_PARAMETERS: [&str; 2] = ["password", "sslpassword"];

/// `url` with the password of its user-info and the values of its password parameters
/// replaced by `***`. Works on text that does not parse as a URL too, and borrows when there
/// is nothing to hide (the request log calls it for every request it logs).
pub fn redacted_url(url: &str) -> Cow<'_, str> {
    let user_info = redacted_user_info(url);
    match redacted_parameters(&user_info) {
        Cow::Borrowed(_) => user_info,
        Cow::Owned(text) => Cow::Owned(text),
    }
}

/// `scheme://user:password@host...`: the authority ends at the first `/`, `?` or `#` (RFC 3986:
/// user-info holds none of them unencoded), and the user-info at its last `@`.
fn redacted_user_info(url: &str) -> Cow<'_, str> {
    let Some(scheme_end) = url.find("://") else { return Cow::Borrowed(url) };
    let authority_start = scheme_end + 3;
    let authority_len = url[authority_start..].find(['/', '?', '#']).unwrap_or(url.len() - authority_start);
    let authority = &url[authority_start..authority_start + authority_len];
    let Some(at) = authority.rfind('@') else { return Cow::Borrowed(url) };
    let Some(colon) = authority[..at].find(':') else { return Cow::Borrowed(url) };
    let password = authority_start + colon + 1..authority_start + at;
    if url[password.clone()] == *REDACTED {
        return Cow::Borrowed(url);
    }
    Cow::Owned(format!("{}{REDACTED}{}", &url[..password.start], &url[password.end..]))
}

/// `?password=...` and `&password=...`: the value, up to the next `&` or `#`.
fn redacted_parameters(url: &str) -> Cow<'_, str> {
    let Some(query_start) = url.find('?') else { return Cow::Borrowed(url) };
    let mut out = String::new();
    let mut copied = 0;
    let mut parameter_start = query_start + 1;
    while parameter_start <= url.len() {
        let parameter_len = url[parameter_start..].find(['&', '#']).unwrap_or(url.len() - parameter_start);
        let parameter = &url[parameter_start..parameter_start + parameter_len];
        if let Some((name, value)) = parameter.split_once('=') {
            if SECRET_PARAMETERS.contains(&name) && value != REDACTED {
                let value_start = parameter_start + name.len() + 1;
                out.push_str(&url[copied..value_start]);
                out.push_str(REDACTED);
                copied = parameter_start + parameter_len;
            }
        }
        let next = parameter_start + parameter_len;
        if next >= url.len() || url.as_bytes()[next] == b'#' {
            break;
        }
        parameter_start = next + 1;
    }
    if copied == 0 {
        return Cow::Borrowed(url);
    }
    out.push_str(&url[copied..]);
    Cow::Owned(out)
}

impl Plan {
    /// The plan as results show it: every text that holds a URL with credentials redacted
    /// (databases, `sql_workload` steps, requests, sockets, base URL), and the value of every
    /// header named in [`SECRET_HEADERS`] or the plan's `protocol.secret_headers` (requests,
    /// resources, the protocol's defaults, sockets' handshakes). Walks the plan's JSON, so that
    /// a step type added later is covered without being listed here.
    pub fn redacted(&self) -> Plan {
        let mut value = serde_json::to_value(self).expect("a plan always serializes");
        let secret_headers: Vec<&str> =
            SECRET_HEADERS.iter().copied().chain(self.protocol.secret_headers.iter().map(String::as_str)).collect();
        redact_value(&mut value, &secret_headers);
        serde_json::from_value(value).expect("a redacted plan has the plan's shape")
    }
}

fn redact_value(value: &mut serde_json::Value, secret_headers: &[&str]) {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            if let Cow::Owned(redacted) = redacted_url(text) {
                *text = redacted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact_value(item, secret_headers)),
        Value::Object(object) => {
            if let Some(Value::Array(headers)) = object.get_mut("headers") {
                for header in headers.iter_mut().filter_map(Value::as_object_mut) {
                    let secret = header
                        .get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|name| secret_headers.iter().any(|s| s.eq_ignore_ascii_case(name.trim())));
                    if secret {
                        header.insert("value".into(), Value::String(REDACTED.into()));
                    }
                }
            }
            // A password of its own (the CQL cluster's), not in a URL.
            if let Some(password @ Value::String(_)) = object.get_mut("password") {
                *password = Value::String(REDACTED.into());
            }
            object.values_mut().for_each(|item| redact_value(item, secret_headers));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_field_is_replaced() {
        let mut plan = Plan::new("p", Vec::new());
        plan.cql = Some(crate::CqlCluster {
            contact_points: vec!["127.0.0.1:9042".into()],
            keyspace: None,
            local_datacenter: None,
            user: Some("cassandra".into()),
            password: Some("s3cret".into()),
            consistency: crate::Consistency::LocalOne,
            request_timeout_ms: 10_000,
            tls: None,
            pool_size_per_host: None,
        });
        let shown = plan.redacted();
        assert_eq!(shown.cql.as_ref().and_then(|c| c.password.as_deref()), Some(REDACTED));
        assert_eq!(shown.cql.as_ref().and_then(|c| c.user.as_deref()), Some("cassandra"));
    }

    #[test]
    fn passwords_in_urls_are_replaced_and_the_rest_kept() {
        for (url, shown) in [
            ("postgres://bench:secret@127.0.0.1:5433/bench", "postgres://bench:***@127.0.0.1:5433/bench"),
            ("mysql://u:p%40ss@h/db?ssl-mode=REQUIRED", "mysql://u:***@h/db?ssl-mode=REQUIRED"),
            ("http://scott:tiger@example.org:8080/a@b?x=1", "http://scott:***@example.org:8080/a@b?x=1"),
            (
                "postgres://u@h/db?password=s3cret&sslmode=require&xpassword=k&sslpassword=p#frag",
                "postgres://u@h/db?password=***&sslmode=require&xpassword=k&sslpassword=***#frag",
            ),
            ("postgres://u:a@b@[::1/db", "postgres://u:***@[::1/db"),
        ] {
            assert_eq!(redacted_url(url), shown, "{url}");
            assert_eq!(redacted_url(shown), shown, "redacting twice changes nothing");
        }
        for kept in [
            "postgres://u@/db?host=/x",
            "http://example.org:8080/users/a@b.org",
            "sqlite:///tmp/data.db",
            "SELECT password FROM users WHERE id = $1",
            "http://h/?q=password",
        ] {
            assert!(matches!(redacted_url(kept), Cow::Borrowed(_)), "{kept}");
        }
    }

    #[test]
    fn a_plan_shows_no_credential_and_keeps_its_shape() {
        let plan = Plan::from_json(
            r#"{"version": 1,
                "protocol": {"base_url": "http://u:basepw@h", "secret_headers": ["X-Api-Key"],
                             "headers": [{"name": "authorization", "value": "Bearer tok"},
                                         {"name": "X-API-KEY", "value": "key"}, {"name": "Accept", "value": "*/*"}]},
                "databases": [{"name": "default", "url": "postgres://u:dbpw@h/db"}],
                "scenarios": [{"name": "s", "injection": [{"type": "at_once_users", "users": 1}], "steps": [
                    {"type": "request", "name": "r", "method": "GET", "url": "/",
                     "headers": [{"name": "Cookie", "value": "sid=1"}]}]}]}"#,
        )
        .unwrap();
        let shown = plan.redacted().to_json_pretty();
        for secret in ["basepw", "Bearer tok", "\"key\"", "sid=1", "dbpw"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("*/*") && shown.contains("X-Api-Key") && shown.contains("postgres://u:***@h/db"));
    }
}

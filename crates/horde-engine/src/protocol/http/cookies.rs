//! Steps on the user's cookie jar (Gatling's `addCookie`, `getCookieValue`, `flushCookieJar`,
//! `flushSessionCookies`). The jar is HTTP's: requests fill it from Set-Cookie and send it in
//! Cookie headers (`request.rs`); these steps read and change it between requests.

use crate::failure::Failure;
use crate::lower::Template;
use crate::session::Value;
use crate::user::{Flow, VirtualUser};
use cookie_store::RawCookie;
use url::Url;

/// A cookie step, lowered.
pub enum CookieStep {
    Add(AddCookie),
    Get(GetCookie),
    /// Every cookie goes.
    FlushJar,
    /// Cookies without an expiry go, as when a browser closes.
    FlushSession,
}

pub struct AddCookie {
    pub name: String,
    pub value: Template,
    /// The Domain attribute, when the plan named a domain: the cookie then goes to its
    /// subdomains too. Without it, to the base URL's host alone.
    pub domain: Option<String>,
    pub path: String,
    pub secure: bool,
    /// A URL of the cookie's host and path: the jar takes the cookie as if it came from there.
    pub origin: Url,
    /// Where a value that cannot be rendered is counted.
    pub row_id: usize,
}

pub struct GetCookie {
    pub name: String,
    /// A URL of the domain whose cookie is wanted; any domain's when none.
    pub domain: Option<Url>,
    pub slot: usize,
    /// Where a missing cookie is counted.
    pub row_id: usize,
}

/// The URL a cookie of `host` and `path` is taken as coming from.
pub fn origin(host: &str, path: &str, secure: bool) -> Result<Url, String> {
    let host = host.strip_prefix('.').unwrap_or(host);
    let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_string() };
    let scheme = if secure { "https" } else { "http" };
    Url::parse(&format!("{scheme}://{host}{path}")).map_err(|err| format!("{host:?} is not a domain: {err}"))
}

impl VirtualUser {
    pub(super) fn cookie_step(&mut self, step: &CookieStep) -> Flow {
        match step {
            CookieStep::Add(add) => self.add_cookie(add),
            CookieStep::Get(get) => self.get_cookie(get),
            CookieStep::FlushJar => {
                self.protocols.http.drop_jar();
                Flow::Next
            }
            CookieStep::FlushSession => {
                if self.protocols.http.jar().is_none() {
                    return Flow::Next;
                }
                let cookies = self.protocols.http.jar_mut();
                let session: Vec<(String, String, String)> = cookies
                    .iter_any()
                    .filter(|c| !c.is_persistent())
                    .map(|c| (String::from(&c.domain), String::from(&c.path), c.name().to_string()))
                    .collect();
                for (domain, path, name) in session {
                    cookies.remove(&domain, &path, &name);
                }
                let any_left = cookies.iter_any().next().is_some();
                self.protocols.http.has_cookies = any_left;
                Flow::Next
            }
        }
    }

    fn add_cookie(&mut self, add: &AddCookie) -> Flow {
        let value = match add.value.render(&mut self.session) {
            Ok(value) => value,
            Err(error) => return self.step_failed(add.row_id, error),
        };
        // It goes out in a Cookie header as it is: what would break the header, or the
        // cookie's own syntax, is refused here rather than silently dropping every cookie.
        if value.contains(|c: char| c == ';' || c.is_control()) {
            let failure = Failure::unsent(
                "invalid_cookie",
                format!("cookie {}: the value {value:?} holds a semicolon or a control character", add.name),
            );
            return self.step_error(add.row_id, &failure, 0);
        }
        let mut cookie = RawCookie::build((add.name.clone(), value)).path(add.path.clone()).secure(add.secure);
        if let Some(domain) = &add.domain {
            cookie = cookie.domain(domain.clone());
        }
        match self.protocols.http.jar_mut().insert_raw(&cookie.build(), &add.origin) {
            Ok(_) => {
                self.protocols.http.has_cookies = true;
                Flow::Next
            }
            Err(err) => {
                let failure = Failure::unsent("invalid_cookie", format!("cookie {}: {err}", add.name));
                self.step_error(add.row_id, &failure, 0)
            }
        }
    }

    fn get_cookie(&mut self, get: &GetCookie) -> Flow {
        let found = self
            .protocols
            .http
            .jar()
            .into_iter()
            .flat_map(|jar| jar.iter_unexpired())
            .find(|c| c.name() == get.name && get.domain.as_ref().is_none_or(|url| c.domain.matches(url)))
            .map(|c| c.value().to_string());
        match found {
            Some(value) => {
                self.session.variables[get.slot] = Some(Value::from(value));
                Flow::Next
            }
            None => {
                let place = match &get.domain {
                    Some(url) => format!(" for {}", url.host_str().unwrap_or_default()),
                    None => String::new(),
                };
                let failure =
                    Failure::unsent("check_failed", format!("get_cookie({:?}): no such cookie{place}", get.name));
                self.step_error(get.row_id, &failure, 0)
            }
        }
    }
}

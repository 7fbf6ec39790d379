//! HTTP: the lean HTTP/1.1 client (`client`, over TCP or TLS: `tls`; host names: `resolve`),
//! HTTP/2 with the h2 crate (`http2`), the user's connection that is one or the other
//! (`connection`), compressed bodies (`encoding`), requests as a virtual user sends them (`request`: rendering, redirects,
//! cookies, retries), and the checks on responses (`check`).

pub(crate) mod check;
pub(crate) mod client;
pub(crate) mod connection;
pub(crate) mod encoding;
pub(crate) mod http2;
pub(crate) mod request;
pub(crate) mod resolve;
pub(crate) mod tls;

use connection::UserConnection;
use cookie_store::CookieStore;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

/// What HTTP keeps in a virtual user's session: its cookie jar and its keep-alive connection.
/// The core holds it for the user and never reads it.
pub(crate) struct HttpSession {
    pub cookies: CookieStore,
    pub has_cookies: bool,
    pub connection: Option<UserConnection>,
    /// When the connection last finished an exchange.
    pub connection_idle_since: Instant,
    /// Some check of the scenario reads a response header, so all headers are kept.
    pub keep_all_headers: bool,
    /// The user's TLS connector (with its own session store), made at its first https
    /// connection.
    pub tls: Option<TlsConnector>,
}

impl HttpSession {
    pub fn new(keep_all_headers: bool) -> HttpSession {
        HttpSession {
            cookies: CookieStore::default(),
            has_cookies: false,
            connection: None,
            connection_idle_since: Instant::now(),
            keep_all_headers,
            tls: None,
        }
    }
}

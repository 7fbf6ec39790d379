//! HTTP: the lean HTTP/1.1 client (`client`, over TCP or TLS: `tls`; host names: `resolve`),
//! HTTP/2 with the h2 crate (`http2`), the user's connection that is one or the other
//! (`connection`), compressed bodies (`encoding`), requests as a virtual user sends them (`request`: rendering, redirects,
//! cookies, retries), the checks on responses (`check`), and the cookie
//! jar's own steps (`cookies`).

pub(crate) mod check;
pub(crate) mod client;
pub(crate) mod concurrent;
pub(crate) mod connection;
pub(crate) mod cookies;
pub(crate) mod encoding;
pub(crate) mod http2;
pub(crate) mod lower;
pub(crate) mod page_resources;
pub(crate) mod part_files;
pub(crate) mod program;
pub(crate) mod request;
pub(crate) mod resolve;
pub(crate) mod tls;

use crate::user::{Flow, VirtualUser};
use client::KeepHeaders;
use connection::UserConnection;
use cookie_store::CookieStore;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

/// A place for one keep-alive connection of a user.
pub(crate) struct ConnectionSlot {
    pub connection: Option<UserConnection>,
    /// When the connection last finished an exchange.
    pub idle_since: Instant,
}

impl ConnectionSlot {
    pub fn empty() -> ConnectionSlot {
        ConnectionSlot { connection: None, idle_since: Instant::now() }
    }

    fn is_for(&self, authority: &str, tls: bool) -> bool {
        self.connection.as_ref().is_some_and(|c| c.is_usable_for(authority, tls))
    }
}

/// What HTTP keeps in a virtual user's session: its cookie jar and its keep-alive connections.
/// The core holds it for the user and never reads it.
pub(crate) struct HttpSession {
    /// The cookie jar, made at the user's first cookie: an empty one is 112 bytes, in every
    /// user of a benchmark whose server sets none.
    cookies: Option<Box<CookieStore>>,
    /// The jar holds a cookie (the check before every request).
    pub has_cookies: bool,
    /// The connection pages and single requests go on.
    pub main: ConnectionSlot,
    /// More HTTP/1.1 connections, opened to fetch resources and batches concurrently, kept for
    /// the next page as a browser keeps them. Empty for users that never fetch concurrently.
    pub spares: Vec<ConnectionSlot>,
    /// Some check of the scenario reads a response header, so all headers are kept.
    pub keep_all_headers: bool,
    /// The user's TLS connector (with its own session store), made at its first https
    /// connection.
    pub tls: Option<TlsConnector>,
}

impl HttpSession {
    pub fn new(keep_all_headers: bool) -> HttpSession {
        HttpSession {
            cookies: None,
            has_cookies: false,
            main: ConnectionSlot::empty(),
            spares: Vec::new(),
            keep_all_headers,
            tls: None,
        }
    }

    /// The cookie jar, if the user has had one.
    pub fn jar(&self) -> Option<&CookieStore> {
        self.cookies.as_deref()
    }

    /// The cookie jar, made if the user had none.
    pub fn jar_mut(&mut self) -> &mut CookieStore {
        self.cookies.get_or_insert_with(Default::default)
    }

    /// Empties the jar.
    pub fn drop_jar(&mut self) {
        self.cookies = None;
        self.has_cookies = false;
    }

    /// Without header checks, only the headers cookies and redirects need are kept.
    pub fn keep_headers(&self) -> KeepHeaders {
        if self.keep_all_headers {
            KeepHeaders::All
        } else {
            KeepHeaders::CookiesAndLocation
        }
    }
}

/// Runs an HTTP step.
pub(crate) async fn run_step(step: &program::HttpStepProgram, user: &mut VirtualUser) -> Flow {
    match step {
        program::HttpStepProgram::Request(request) => {
            let failures = user.failures();
            let flow = user.request(request).await;
            if user.failures() != failures {
                // A failure can come without any wait (an unsent request, a descriptor limit):
                // the worker's other tasks, its snapshot ticker and its stop signal get their
                // turn now and then, or a loop of failures would hold the worker's thread for
                // ever. Here, after `request`, whose large locals would otherwise stay in every
                // user's future across the wait.
                tokio::task::consume_budget().await;
            }
            flow
        }
        // Boxed: a batch's state is large and rare.
        program::HttpStepProgram::Batch(requests) => Box::pin(user.batch(requests)).await,
        program::HttpStepProgram::Cookie(step) => user.cookie_step(step),
    }
}

/// The variables an HTTP step saves: its requests' (and their resources') checks, a cookie read.
pub(crate) fn saved_variables(step: &horde_plan::HttpStep, save: &mut dyn FnMut(&str)) {
    fn by_request(request: &horde_plan::Request, save: &mut dyn FnMut(&str)) {
        request.checks.iter().filter_map(|c| c.save_as.as_deref()).for_each(&mut *save);
        request.resources.iter().for_each(|r| by_request(r, save));
    }
    match step {
        horde_plan::HttpStep::Request(request) => by_request(request, save),
        horde_plan::HttpStep::Batch { requests } => requests.iter().for_each(|r| by_request(r, save)),
        horde_plan::HttpStep::GetCookie(get) => save(&get.save_as),
        horde_plan::HttpStep::AddCookie(_)
        | horde_plan::HttpStep::FlushCookieJar
        | horde_plan::HttpStep::FlushSessionCookies => {}
    }
}

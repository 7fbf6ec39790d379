//! PostgreSQL's frontend/backend protocol, spoken in the task that runs the statement.
//!
//! tokio-postgres, which horde used first, splits a connection in two: the client sends each
//! request through a channel to a connection task, which writes it, reads the answer and sends
//! it back through another channel. Row by row, those two hops and wakeups kept horde at
//! 0.96-0.99x pgbench's inserts a second on a 2-core machine against a local server; without
//! them it is at 1.04-1.06x (bench/RESULTS.md, "PostgreSQL row by row"). Here the statement's
//! own task writes the messages and reads the answers on the socket. The messages themselves
//! are encoded and parsed by `postgres-protocol`, the same project's codec, with its SCRAM and
//! MD5 authentication; the values by `postgres-types` (through tokio-postgres's re-export).
//!
//! One exchange is the messages up to and including a Sync (or a simple Query) and their answers
//! up to ReadyForQuery. A future dropped in the middle of one (a timeout, a stopped run) leaves
//! the protocol out of step: the connection then refuses further statements rather than read
//! another statement's answers.

use super::super::error::SqlError;
use super::stream::PgStream;
use super::tls::{PgTls, SslMode};
use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::{ErrorFields, Message};
use postgres_protocol::message::frontend;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::config::Host;

/// Bytes of requests gathered before they are written (COPY data, pipelined statements).
pub const WRITE_CHUNK: usize = 64 * 1024;

pub struct PgWire {
    pub stream: PgStream,
    pub read: BytesMut,
    pub write: BytesMut,
    /// Set from the first message of an exchange to its ReadyForQuery.
    in_exchange: bool,
    /// Where the server listens, for a cancel request on a connection of its own.
    server: ServerAddress,
    /// The server's key to cancel this connection's statement (BackendKeyData).
    cancel: Option<CancelKey>,
}

#[derive(Debug, Clone)]
enum ServerAddress {
    Tcp(std::net::SocketAddr),
    Unix(PathBuf),
}

#[derive(Debug, Clone, Copy)]
struct CancelKey {
    process_id: i32,
    secret_key: i32,
}

/// Cancel requests under way, each on a short-lived thread of its own; beyond this many at
/// once (a storm of timeouts), statements are left to end on the server.
const MAX_CANCELS_IN_FLIGHT: usize = 16;
static CANCELS_IN_FLIGHT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl PgWire {
    /// Connects to the first host of `config` that lets horde in (over TLS as `tls` says), as
    /// libpq does: a host that does not answer, or refuses the login, gives way to the next.
    /// `connect_timeout` bounds each host's whole attempt, TLS and login included.
    pub async fn connect(config: &tokio_postgres::Config, tls: &PgTls) -> Result<PgWire, SqlError> {
        let ports = config.get_ports();
        let mut last_error = SqlError::new("sql_connection", "the URL names no host");
        for (index, host) in config.get_hosts().iter().enumerate() {
            // One port for every host, or one port each.
            let port = ports.get(index).or(ports.first()).copied().unwrap_or(5432);
            let attempt = async {
                match host {
                    Host::Tcp(host) => log_in_over_tcp(host, port, tls, config).await,
                    Host::Unix(directory) => {
                        let (stream, server) = open_unix(directory, port).await?;
                        PgWire::logged_in(stream, server, config).await
                    }
                }
            };
            let attempted = match config.get_connect_timeout() {
                Some(limit) => tokio::time::timeout(*limit, attempt).await.unwrap_or_else(|_| {
                    Err(SqlError::new("sql_connection", format!("connecting to {} timed out", describe(host, port))))
                }),
                None => attempt.await,
            };
            match attempted {
                Ok(wire) => return Ok(wire),
                Err(err) => last_error = err,
            }
        }
        Err(last_error)
    }

    /// A connection on `stream`, logged in.
    async fn logged_in(
        stream: PgStream,
        server: ServerAddress,
        config: &tokio_postgres::Config,
    ) -> Result<PgWire, SqlError> {
        let mut wire = PgWire {
            stream,
            read: BytesMut::with_capacity(8 * 1024),
            write: BytesMut::with_capacity(1024),
            in_exchange: false,
            server,
            cancel: None,
        };
        wire.log_in(config).await?;
        Ok(wire)
    }

    /// The startup message, the password the server asks for (cleartext, MD5 or SCRAM-SHA-256),
    /// and the server's parameters up to its first ReadyForQuery.
    async fn log_in(&mut self, config: &tokio_postgres::Config) -> Result<(), SqlError> {
        let user = config.get_user().unwrap_or("postgres");
        let mut parameters = vec![("client_encoding", "UTF8"), ("user", user)];
        if let Some(dbname) = config.get_dbname() {
            parameters.push(("database", dbname));
        }
        parameters.push(("application_name", config.get_application_name().unwrap_or("horde")));
        if let Some(options) = config.get_options() {
            parameters.push(("options", options));
        }
        frontend::startup_message(parameters.iter().copied(), &mut self.write).map_err(encoding)?;
        self.start_exchange()?;
        self.send().await?;
        let password = || {
            config.get_password().ok_or_else(|| {
                SqlError::new("sql_authentication_failed", "the server asks for a password and the URL gives none")
            })
        };
        loop {
            match self.message().await? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(password()?, &mut self.write).map_err(encoding)?;
                    self.send().await?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let hashed = md5_hash(user.as_bytes(), password()?, body.salt());
                    frontend::password_message(hashed.as_bytes(), &mut self.write).map_err(encoding)?;
                    self.send().await?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut mechanisms = body.mechanisms();
                    let mut offered = false;
                    while let Some(mechanism) = mechanisms.next().map_err(protocol)? {
                        offered |= mechanism == sasl::SCRAM_SHA_256;
                    }
                    if !offered {
                        return Err(SqlError::new(
                            "sql_authentication_failed",
                            "the server offers no SASL mechanism horde knows (SCRAM-SHA-256)",
                        ));
                    }
                    self.scram(password()?).await?;
                }
                Message::ErrorResponse(body) => return Err(server_error(body.fields())),
                Message::ReadyForQuery(_) => {
                    self.in_exchange = false;
                    return Ok(());
                }
                Message::AuthenticationKerberosV5
                | Message::AuthenticationScmCredential
                | Message::AuthenticationGss
                | Message::AuthenticationSspi => {
                    return Err(SqlError::new(
                        "sql_authentication_failed",
                        "the server asks for an authentication horde does not speak (Kerberos, GSS or SSPI)",
                    ))
                }
                Message::BackendKeyData(body) => {
                    self.cancel = Some(CancelKey { process_id: body.process_id(), secret_key: body.secret_key() });
                }
                // ParameterStatus, notices.
                _ => {}
            }
        }
    }

    async fn scram(&mut self, password: &[u8]) -> Result<(), SqlError> {
        let mut scram = sasl::ScramSha256::new(password, sasl::ChannelBinding::unsupported());
        frontend::sasl_initial_response(sasl::SCRAM_SHA_256, scram.message(), &mut self.write).map_err(encoding)?;
        self.send().await?;
        match self.message().await? {
            Message::AuthenticationSaslContinue(body) => scram.update(body.data()).map_err(authentication)?,
            Message::ErrorResponse(body) => return Err(server_error(body.fields())),
            _ => return Err(unexpected("SASL continue")),
        }
        frontend::sasl_response(scram.message(), &mut self.write).map_err(encoding)?;
        self.send().await?;
        match self.message().await? {
            Message::AuthenticationSaslFinal(body) => scram.finish(body.data()).map_err(authentication),
            Message::ErrorResponse(body) => Err(server_error(body.fields())),
            _ => Err(unexpected("SASL final")),
        }
    }

    /// Marks the start of an exchange; refused when the last one never ended.
    pub fn start_exchange(&mut self) -> Result<(), SqlError> {
        if self.in_exchange {
            return Err(SqlError::new(
                "sql_connection_lost",
                "the connection was left in the middle of a statement (a timeout) and is closed",
            ));
        }
        self.in_exchange = true;
        Ok(())
    }

    /// Marks the end of an exchange: its ReadyForQuery was read.
    pub fn end_exchange(&mut self) {
        self.in_exchange = false;
    }

    /// Writes the requests gathered in the write buffer.
    pub async fn send(&mut self) -> Result<(), SqlError> {
        let mut result = self.stream.write_all(&self.write).await;
        if result.is_ok() && self.stream.buffers_writes() {
            result = self.stream.flush().await;
        }
        self.write.clear();
        result.map_err(lost)
    }

    /// Reads the exchange's answers up to its ReadyForQuery, each given to `on_message` until
    /// one fails; the first error, the server's or `on_message`'s, once the exchange is over.
    /// A COPY FROM STDIN the exchange did not expect (one of a plain statement's) is refused.
    pub async fn finish_exchange(
        &mut self,
        mut on_message: impl FnMut(Message) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        let mut error = None;
        loop {
            let message = self.message().await.map_err(|lost| lost_after(lost, error.take()))?;
            match message {
                Message::ErrorResponse(body) => {
                    error.get_or_insert(server_error(body.fields()));
                }
                Message::CopyInResponse(_) => {
                    frontend::copy_fail("horde sends no COPY data to a plain statement", &mut self.write)
                        .map_err(encoding)?;
                    self.send().await?;
                }
                Message::ReadyForQuery(_) => {
                    self.end_exchange();
                    return error.map_or(Ok(()), Err);
                }
                message if error.is_none() => {
                    if let Err(err) = on_message(message) {
                        error = Some(err);
                    }
                }
                _ => {}
            }
        }
    }

    /// The next message from the server, read from the socket as needed.
    pub async fn message(&mut self) -> Result<Message, SqlError> {
        next_message(&mut self.stream, &mut self.read).await
    }
}

/// The next message in `read`, reading more from `stream` until one is whole.
pub async fn next_message<R: AsyncReadExt + Unpin>(stream: &mut R, read: &mut BytesMut) -> Result<Message, SqlError> {
    loop {
        if let Some(message) = Message::parse(read).map_err(protocol)? {
            return Ok(message);
        }
        if stream.read_buf(read).await.map_err(lost)? == 0 {
            return Err(SqlError::new("sql_connection_lost", "the server closed the connection"));
        }
    }
}

impl Drop for PgWire {
    /// Says goodbye (Terminate, and over TLS the close_notify alert) when the socket can take
    /// it now, so the server logs a clean end rather than an unexpected EOF. Dropped in the middle of a statement (its timeout, a
    /// stopped run), asks the server to cancel it, as libpq's PQcancel does: a server only
    /// notices a closed connection when it next writes to it, so a long statement would
    /// otherwise run to its end and keep loading the system under test.
    fn drop(&mut self) {
        if !self.in_exchange {
            self.stream.try_write_now(&[b'X', 0, 0, 0, 4]);
        } else if let Some(key) = self.cancel {
            send_cancel(self.server.clone(), key);
        }
    }
}

/// A CancelRequest on a connection of its own, from a thread of its own: the worker's thread
/// never waits for it, and it still goes out when the run ends right after. It goes in
/// cleartext even when the statement's connection is in TLS, as libpq's PQcancel sends it: the
/// request carries only the key.
fn send_cancel(server: ServerAddress, key: CancelKey) {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    if CANCELS_IN_FLIGHT.fetch_add(1, Ordering::Relaxed) >= MAX_CANCELS_IN_FLIGHT {
        CANCELS_IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let mut request = BytesMut::with_capacity(16);
    frontend::cancel_request(key.process_id, key.secret_key, &mut request);
    let sent = std::thread::Builder::new().name("horde-pg-cancel".into()).spawn(move || {
        let limit = std::time::Duration::from_secs(2);
        match server {
            ServerAddress::Tcp(address) => {
                if let Ok(mut stream) = std::net::TcpStream::connect_timeout(&address, limit) {
                    let _ = stream.set_write_timeout(Some(limit));
                    let _ = stream.write_all(&request);
                }
            }
            ServerAddress::Unix(path) => {
                if let Ok(mut stream) = std::os::unix::net::UnixStream::connect(path) {
                    let _ = stream.set_write_timeout(Some(limit));
                    let _ = stream.write_all(&request);
                }
            }
        }
        CANCELS_IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    });
    if sent.is_err() {
        CANCELS_IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A TCP connection to `host:port`, logged in, in TLS as `tls` says. Under `prefer`, one that
/// fails in TLS (the handshake, or the server refusing the login over TLS, as a pg_hba.conf of
/// `hostnossl` lines does) is tried again in cleartext, as libpq does; when that fails too, both
/// reasons are given.
async fn log_in_over_tcp(
    host: &str,
    port: u16,
    tls: &PgTls,
    config: &tokio_postgres::Config,
) -> Result<PgWire, SqlError> {
    let first = async {
        let (stream, server) = open_tcp(host, port, tls.connector().map(|_| tls))
            .await
            .map_err(|err| (err.kind.starts_with("tls_"), err))?;
        let encrypted = matches!(stream, PgStream::Tls(_));
        PgWire::logged_in(stream, server, config).await.map_err(|err| (encrypted, err))
    };
    match first.await {
        Ok(wire) => Ok(wire),
        Err((true, error)) if tls.mode == SslMode::Prefer => {
            let cleartext = async {
                let (stream, server) = open_tcp(host, port, None).await?;
                PgWire::logged_in(stream, server, config).await
            };
            cleartext.await.map_err(|second| SqlError {
                message: format!("{} (and without TLS: {})", error.message, second.message),
                ..error
            })
        }
        Err((_, error)) => Err(error),
    }
}

/// A TCP connection to `host:port`, in TLS when `tls` is given (and not `disable`) and the
/// server agrees.
async fn open_tcp(host: &str, port: u16, tls: Option<&PgTls>) -> Result<(PgStream, ServerAddress), SqlError> {
    let mut tcp = TcpStream::connect((host, port)).await.map_err(|err| {
        let kind =
            if err.kind() == std::io::ErrorKind::ConnectionRefused { "connect_refused" } else { "sql_connection" };
        SqlError::new(kind, format!("error connecting to server {host}:{port}: {err}"))
    })?;
    let _ = tcp.set_nodelay(true);
    let server = tcp.peer_addr().map_err(lost)?;
    let Some((tls, connector)) = tls.and_then(|tls| tls.connector().map(|connector| (tls, connector))) else {
        return Ok((PgStream::Tcp(tcp), ServerAddress::Tcp(server)));
    };
    // The SSLRequest, and the server's one-byte answer. Exactly one byte is read: anything
    // after it must come through TLS (CVE-2021-23222).
    let mut request = BytesMut::with_capacity(8);
    frontend::ssl_request(&mut request);
    tcp.write_all(&request).await.map_err(lost)?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer).await.map_err(lost)?;
    match (answer[0], tls.mode) {
        (b'S', _) => {}
        (b'N', SslMode::Prefer) => return Ok((PgStream::Tcp(tcp), ServerAddress::Tcp(server))),
        (b'N', _) => {
            return Err(SqlError::new(
                "sql_connection",
                format!("the server at {host}:{port} does not accept TLS, and the URL's sslmode requires it"),
            ))
        }
        _ => return Err(unexpected("the answer to an SSLRequest")),
    }
    // A name rustls cannot take (an IPv6 address with a zone) is sent as the address itself
    // when the name is not checked.
    let name = match rustls::pki_types::ServerName::try_from(host.to_string()) {
        Ok(name) => name,
        Err(_) if tls.mode != SslMode::VerifyFull => rustls::pki_types::ServerName::IpAddress(server.ip().into()),
        Err(_) => return Err(SqlError::new("tls_handshake", format!("{host:?} is not a name TLS can verify"))),
    };
    match connector.connect(name, tcp).await {
        Ok(stream) => Ok((PgStream::Tls(Box::new(stream)), ServerAddress::Tcp(server))),
        Err(err) => {
            let (kind, message) = crate::tls_trust::handshake_failure(host, &err);
            Err(SqlError::new(kind, message))
        }
    }
}

/// A connection to the server's socket in `directory`, named after its port as libpq does.
async fn open_unix(directory: &Path, port: u16) -> Result<(PgStream, ServerAddress), SqlError> {
    let path = directory.join(format!(".s.PGSQL.{port}"));
    match UnixStream::connect(&path).await {
        Ok(unix) => Ok((PgStream::Unix(unix), ServerAddress::Unix(path))),
        Err(err) => {
            let kind = match err.kind() {
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound => "connect_refused",
                _ => "sql_connection",
            };
            Err(SqlError::new(kind, format!("error connecting to server on socket {}: {err}", path.display())))
        }
    }
}

fn describe(host: &Host, port: u16) -> String {
    match host {
        Host::Tcp(host) => format!("{host}:{port}"),
        Host::Unix(directory) => format!("socket {}", directory.join(format!(".s.PGSQL.{port}")).display()),
    }
}

/// The error a server sent, by its SQLSTATE, with its message.
pub fn server_error(mut fields: ErrorFields<'_>) -> SqlError {
    let (mut code, mut message) = (String::new(), String::new());
    while let Ok(Some(field)) = fields.next() {
        match field.type_() {
            b'C' => code = String::from_utf8_lossy(field.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(field.value_bytes()).into_owned(),
            _ => {}
        }
    }
    if code.is_empty() {
        return SqlError::new("sql_error", message);
    }
    SqlError::with_state(&code, message)
}

/// The rows a CommandComplete tag counts: its last word (`INSERT 0 1`, `UPDATE 5`, `SELECT 3`);
/// 0 for commands that count nothing (`CREATE TABLE`).
pub fn rows_of_tag(tag: &str) -> u64 {
    tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// The connection lost after the server sent `error`: a FATAL error it sent before closing
/// (`terminating connection due to administrator command`) says why.
fn lost_after(lost: SqlError, error: Option<SqlError>) -> SqlError {
    match error {
        Some(error) if lost.kind == "sql_connection_lost" => SqlError {
            kind: lost.kind,
            message: format!("{}: {}", lost.message, error.message),
            sqlstate: error.sqlstate,
        },
        _ => lost,
    }
}

pub fn lost(err: std::io::Error) -> SqlError {
    SqlError::new("sql_connection_lost", format!("the connection to the server failed: {err}"))
}

fn protocol(err: std::io::Error) -> SqlError {
    SqlError::new("sql_connection_lost", format!("the server sent a message horde cannot read: {err}"))
}

pub fn encoding(err: std::io::Error) -> SqlError {
    SqlError::new("sql_error", format!("a message could not be encoded: {err}"))
}

fn authentication(err: std::io::Error) -> SqlError {
    SqlError::new("sql_authentication_failed", format!("SCRAM authentication failed: {err}"))
}

pub fn unexpected(wanted: &str) -> SqlError {
    SqlError::new("sql_connection_lost", format!("the server answered out of turn (expected {wanted})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_tags_give_their_row_counts() {
        assert_eq!(rows_of_tag("INSERT 0 1"), 1);
        assert_eq!(rows_of_tag("UPDATE 25"), 25);
        assert_eq!(rows_of_tag("SELECT 3"), 3);
        assert_eq!(rows_of_tag("COPY 2000000"), 2_000_000);
        assert_eq!(rows_of_tag("CREATE TABLE"), 0);
        assert_eq!(rows_of_tag("BEGIN"), 0);
    }
}

//! MariaDB and MySQL through mysql_async: statements are prepared once per connection (the
//! driver's cache, by their text), rows stream from the binary protocol, and bulk loads are
//! `LOAD DATA LOCAL INFILE` fed from memory. The URL's transport (TCP, the Unix socket, TLS)
//! is read in `options`.

use super::connection::{Param, StatementResult};
use super::database::take_parameters;
use super::error::SqlError;
use bytes::Bytes;
use futures_util::StreamExt;
use horde_plan::SqlStatementKind;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Params, Value};
use std::path::{Path, PathBuf};

/// The driver's options for a `mysql://` URL. mysql_async reads the URL's other parameters
/// (`socket`, `pool_min`...); `prefer_socket` (false unless the URL says true) and TLS are read
/// here, TLS's files as the MariaDB client names them: `ssl_ca` (the roots trusted, PEM: only
/// these, and TLS on), `ssl_cert` and `ssl_key` (a client certificate), relative to
/// `base_dir`; with mysql_async's own switches
/// `require_ssl` (TLS on, the public web roots trusted), `verify_ca` (false: the certificate
/// unchecked) and `built_in_roots`; `verify_identity=false` alone is refused (below).
pub fn options(url: &str, base_dir: Option<&Path>) -> Result<mysql_async::Opts, String> {
    const READ_HERE: [&str; 8] = [
        "ssl_ca",
        "ssl_cert",
        "ssl_key",
        "require_ssl",
        "verify_ca",
        "verify_identity",
        "built_in_roots",
        "prefer_socket",
    ];
    let (taken, rest) = take_parameters(url, 0, &READ_HERE);
    let (mut ca, mut cert, mut key) = (None, None, None);
    let (mut require, mut verify_ca, mut verify_identity, mut built_in_roots) = (false, true, true, true);
    // mysql_async, by default, reconnects a connection made to a loopback address over the
    // server's Unix socket (`@@socket`): the user who named 127.0.0.1 would measure another
    // transport than the one they asked for, and than mariadb-slap -h 127.0.0.1 does (row-by-row
    // inserts go about a third faster on the socket here: bench/RESULTS.md). The socket is the
    // user's choice: `?socket=/path` or `?prefer_socket=true`.
    let mut prefer_socket = false;
    for (name, value) in taken {
        let file = || match base_dir {
            Some(dir) if Path::new(&value).is_relative() => dir.join(&value),
            _ => PathBuf::from(&value),
        };
        let switch = || match value.as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(format!("{name}={other}: true or false")),
        };
        match name.as_str() {
            "ssl_ca" => ca = Some(file()),
            "ssl_cert" => cert = Some(file()),
            "ssl_key" => key = Some(file()),
            "require_ssl" => require = switch()?,
            "verify_ca" => verify_ca = switch()?,
            "verify_identity" => verify_identity = switch()?,
            "prefer_socket" => prefer_socket = switch()?,
            _ => built_in_roots = switch()?,
        }
    }
    // mysql_async reads only mysql://.
    let normalized = format!("mysql://{}", rest.split_once("://").map_or(rest.as_str(), |(_, after)| after));
    let opts = mysql_async::Opts::from_url(&normalized).map_err(|err| err.to_string())?;
    let mut builder = mysql_async::OptsBuilder::from_opts(opts).prefer_socket(prefer_socket);
    // mysql_async recognizes the name mismatch to forgive by the words of an older rustls's
    // error ("NotValidForName"); with rustls 0.23 the certificate would be refused anyway.
    if !verify_identity && verify_ca {
        return Err("verify_identity=false: the MariaDB driver cannot skip only the name check; use a certificate \
                    for the host named, or verify_ca=false (nothing checked)"
            .into());
    }
    if require || ca.is_some() || cert.is_some() || key.is_some() {
        for (parameter, path) in [("ssl_ca", &ca), ("ssl_cert", &cert), ("ssl_key", &key)] {
            if let Some(path) = path.as_ref().filter(|path| !path.is_file()) {
                return Err(format!("{parameter}: {} is not a file", path.display()));
            }
        }
        let mut ssl = mysql_async::SslOpts::default()
            .with_danger_accept_invalid_certs(!verify_ca)
            .with_danger_skip_domain_validation(!verify_identity)
            // A CA file is what the user trusts: the public roots are not added to it.
            .with_disable_built_in_roots(ca.is_some() || !built_in_roots);
        if let Some(ca) = ca {
            ssl = ssl.with_root_certs(vec![ca.into()]);
        }
        match (cert, key) {
            (Some(cert), Some(key)) => {
                ssl = ssl.with_client_identity(Some(mysql_async::ClientIdentity::new(cert.into(), key.into())))
            }
            (None, None) => {}
            _ => return Err("ssl_cert and ssl_key go together: give both".into()),
        }
        builder = builder.ssl_opts(ssl);
    }
    Ok(builder.into())
}

pub struct MyConnection {
    conn: Conn,
}

fn values(params: &[Param<'_>]) -> Params {
    if params.is_empty() {
        return Params::Empty;
    }
    Params::Positional(
        params
            .iter()
            .map(|p| match *p {
                // MySQL converts a string to the type its use needs.
                Param::Text(text) | Param::Untyped(text) => Value::Bytes(text.as_bytes().to_vec()),
                Param::Int(n) => Value::Int(n),
            })
            .collect(),
    )
}

impl MyConnection {
    pub async fn connect(opts: &mysql_async::Opts) -> Result<MyConnection, SqlError> {
        crate::tls_trust::use_ring_by_default();
        Ok(MyConnection { conn: Conn::new(opts.clone()).await? })
    }

    pub async fn execute(&mut self, sql: &str) -> Result<u64, SqlError> {
        self.conn.query_drop(sql).await?;
        Ok(self.conn.affected_rows())
    }

    pub async fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        let value: Option<Option<i64>> = self.conn.query_first(sql).await?;
        Ok(value.flatten())
    }

    pub async fn exec_prepared(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, SqlError> {
        self.conn.exec_drop(sql, values(params)).await?;
        Ok(self.conn.affected_rows())
    }

    pub async fn run_statement(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        kind: SqlStatementKind,
        wanted: &[String],
    ) -> Result<StatementResult, SqlError> {
        if kind == SqlStatementKind::Execute {
            return Ok(StatementResult {
                row_count: self.exec_prepared(sql, params).await?,
                ..StatementResult::default()
            });
        }
        let mut rows = self.conn.exec_iter(sql, values(params)).await?;
        let columns = rows.columns();
        let columns: &[mysql_async::Column] = columns.as_deref().unwrap_or_default();
        let indices: Vec<Option<usize>> =
            wanted.iter().map(|name| columns.iter().position(|c| c.name_str() == name.as_str())).collect();
        let dates: Vec<bool> =
            columns.iter().map(|c| c.column_type() == mysql_async::consts::ColumnType::MYSQL_TYPE_DATE).collect();
        let mut result =
            StatementResult::for_columns(&indices, || columns.iter().map(|c| c.name_str().into_owned()).collect());
        rows.for_each(|row| {
            let read = result.add_row(&indices, |index| {
                Ok::<_, std::convert::Infallible>(row.as_ref(index).and_then(|value| text_of(value, dates[index])))
            });
            let Ok(()) = read;
        })
        .await?;
        Ok(result)
    }

    /// Counts the rows (and their text bytes) as they stream in.
    pub async fn stream_count(&mut self, sql: &str, params: &[Param<'_>]) -> Result<(u64, u64), SqlError> {
        let mut result = self.conn.exec_iter(sql, values(params)).await?;
        let (mut rows, mut bytes) = (0u64, 0u64);
        result
            .for_each(|row| {
                rows += 1;
                if let Some(Value::Bytes(text)) = row.as_ref(1) {
                    bytes += text.len() as u64;
                }
            })
            .await?;
        Ok((rows, bytes))
    }

    pub async fn query_pairs(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        out: &mut Vec<(i64, String)>,
    ) -> Result<(), SqlError> {
        let rows: Vec<(i64, Option<String>)> = self.conn.exec(sql, values(params)).await?;
        out.extend(rows.into_iter().map(|(id, text)| (id, text.unwrap_or_default())));
        Ok(())
    }

    /// `LOAD DATA LOCAL INFILE` of tab-separated lines, fed from `data` as the server asks.
    pub async fn load_data(
        &mut self,
        table: &str,
        columns: &str,
        data: Box<dyn Iterator<Item = Bytes> + Send>,
    ) -> Result<u64, SqlError> {
        // The handler must be Sync; the stream is only Send: a mutex makes the pair Sync.
        let stream = std::sync::Mutex::new(futures_util::stream::iter(data.map(Ok)).boxed());
        self.conn.set_infile_handler(async move { Ok(stream.into_inner().unwrap_or_else(|e| e.into_inner())) });
        self.conn.query_drop(format!("LOAD DATA LOCAL INFILE 'horde' INTO TABLE {table} ({columns})")).await?;
        Ok(self.conn.affected_rows())
    }
}

/// A value as the `mariadb` client shows it; `None` for NULL.
fn text_of(value: &Value, is_date: bool) -> Option<String> {
    Some(match value {
        Value::NULL => return None,
        Value::Bytes(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::Int(n) => n.to_string(),
        Value::UInt(n) => n.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Double(x) => x.to_string(),
        Value::Date(year, month, day, ..) if is_date => format!("{year:04}-{month:02}-{day:02}"),
        Value::Date(year, month, day, hour, minute, second, micros) => {
            let mut text = format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}");
            if *micros != 0 {
                text.push_str(&format!(".{micros:06}"));
            }
            text
        }
        Value::Time(negative, days, hours, minutes, seconds, micros) => {
            let hours = u64::from(*days) * 24 + u64::from(*hours);
            let mut text = format!("{}{hours:02}:{minutes:02}:{seconds:02}", if *negative { "-" } else { "" });
            if *micros != 0 {
                text.push_str(&format!(".{micros:06}"));
            }
            text
        }
    })
}

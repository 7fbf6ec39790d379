//! PostgreSQL: the protocol spoken in the statement's own task (`wire.rs`, why there), its
//! statements prepared once per connection and cached by their text, COPY to load rows in bulk,
//! and pipelining (many statements in flight on one connection); result values as text in
//! `text.rs`.

mod stream;
mod text;
pub(super) mod tls;
mod wire;

use super::connection::{Param, StatementResult, StatementTiming};
use super::error::SqlError;
use bytes::{Bytes, BytesMut};
use fallible_iterator::FallibleIterator;
use horde_plan::SqlStatementKind;
use postgres_protocol::message::backend::{DataRowBody, Message};
use postgres_protocol::message::frontend;
use std::collections::HashMap;
use stream::PgStream;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;
use tokio_postgres::types::{FromSql, Kind, ToSql, Type};
use wire::{encoding, next_message, rows_of_tag, server_error, unexpected, PgWire, WRITE_CHUNK};

pub struct PgConnection {
    wire: PgWire,
    /// Statements prepared on this connection, named `s0`, `s1`... by their index.
    prepared: Vec<Prepared>,
    /// Each prepared statement's index, by its text.
    by_text: HashMap<String, usize>,
}

/// A statement the server has parsed, under its name on this connection.
struct Prepared {
    name: String,
    param_types: Vec<Type>,
    columns: Vec<Column>,
}

struct Column {
    name: String,
    type_: Type,
    /// How its values become text: converted from the binary format here, or (`None`) asked
    /// for in the text format, which the server renders itself.
    convert: Option<text::Converter>,
}

impl PgConnection {
    pub async fn connect(config: &tokio_postgres::Config, tls: &tls::PgTls) -> Result<PgConnection, SqlError> {
        Ok(PgConnection { wire: PgWire::connect(config, tls).await?, prepared: Vec::new(), by_text: HashMap::new() })
    }

    /// The statement prepared for `sql` on this connection, prepared now the first time.
    async fn statement<'a>(
        wire: &mut PgWire,
        prepared: &'a mut Vec<Prepared>,
        by_text: &mut HashMap<String, usize>,
        sql: &str,
    ) -> Result<&'a Prepared, SqlError> {
        let index = match by_text.get(sql) {
            Some(&index) => index,
            None => {
                prepared.push(prepare(wire, format!("s{}", prepared.len()), sql).await?);
                by_text.insert(sql.to_string(), prepared.len() - 1);
                prepared.len() - 1
            }
        };
        Ok(&prepared[index])
    }

    /// Runs `sql` by the simple protocol (several statements may be given at once); the rows
    /// they changed.
    pub async fn execute(&mut self, sql: &str) -> Result<u64, SqlError> {
        let mut changed = 0;
        self.simple_query(sql, |message| {
            if let Message::CommandComplete(body) = message {
                changed += rows_of_tag(body.tag().unwrap_or(""));
            }
            Ok(())
        })
        .await?;
        Ok(changed)
    }

    /// The first column of the first row (a count, a key), read from the simple protocol's text.
    pub async fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        let mut first: Option<Option<i64>> = None;
        self.simple_query(sql, |message| {
            if let (Message::DataRow(row), None) = (message, &first) {
                let value = cell(row, 0)?
                    .map(|raw| {
                        std::str::from_utf8(raw).ok().and_then(|t| t.parse::<i64>().ok()).ok_or_else(|| {
                            SqlError::new("sql_error", format!("not an integer: {}", String::from_utf8_lossy(raw)))
                        })
                    })
                    .transpose()?;
                first = Some(value);
            }
            Ok(())
        })
        .await?;
        Ok(first.flatten())
    }

    /// One Query message and its answers up to ReadyForQuery, each given to `on_message`; the
    /// first error (the server's or `on_message`'s) once the exchange is over.
    async fn simple_query(
        &mut self,
        sql: &str,
        mut on_message: impl FnMut(&Message) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        let wire = &mut self.wire;
        wire.start_exchange()?;
        frontend::query(sql, &mut wire.write).map_err(encoding)?;
        wire.send().await?;
        wire.finish_exchange(|message| on_message(&message)).await
    }

    pub async fn exec_prepared(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, SqlError> {
        let statement = Self::statement(&mut self.wire, &mut self.prepared, &mut self.by_text, sql).await?;
        execute(&mut self.wire, statement, params, |_| Ok(())).await
    }

    pub async fn run_statement(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        kind: SqlStatementKind,
        wanted: &[String],
    ) -> Result<StatementResult, SqlError> {
        let statement = Self::statement(&mut self.wire, &mut self.prepared, &mut self.by_text, sql).await?;
        if kind == SqlStatementKind::Execute {
            let row_count = execute(&mut self.wire, statement, params, |_| Ok(())).await?;
            return Ok(StatementResult { row_count, ..StatementResult::default() });
        }
        let indices: Vec<Option<usize>> =
            wanted.iter().map(|name| statement.columns.iter().position(|c| &c.name == name)).collect();
        let mut result =
            StatementResult::for_columns(&indices, || statement.columns.iter().map(|c| c.name.clone()).collect());
        execute(&mut self.wire, statement, params, |row| {
            result.add_row(&indices, |index| {
                let Some(raw) = cell(row, index)? else {
                    return Ok(None);
                };
                match statement.columns[index].convert {
                    Some(convert) => {
                        convert(raw).map(Some).map_err(|e| SqlError::new("sql_unreadable_value", e.to_string()))
                    }
                    None => Ok(Some(String::from_utf8_lossy(raw).into_owned())),
                }
            })
        })
        .await?;
        Ok(result)
    }

    /// Every row's statement sent at once on the connection, the answers read as they come:
    /// one round trip for all of them rather than one each. Each statement has its own Sync,
    /// so each commits on its own as it would sent alone.
    pub async fn exec_pipelined(
        &mut self,
        sql: &str,
        rows: &[Param<'_>],
        timings: &mut Vec<StatementTiming>,
    ) -> Result<u64, SqlError> {
        let statement = Self::statement(&mut self.wire, &mut self.prepared, &mut self.by_text, sql).await?;
        let wire = &mut self.wire;
        wire.start_exchange()?;
        let started = Instant::now();
        let PgWire { stream, read, write, .. } = wire;
        // TCP splits into borrowed halves; TLS and Unix sockets through tokio's split.
        let (affected, first_error) = match stream {
            PgStream::Tcp(tcp) => {
                let (mut reader, mut writer) = tcp.split();
                pipeline(&mut reader, &mut writer, statement, rows, read, write, timings, started).await?
            }
            other => {
                let (mut reader, mut writer) = tokio::io::split(other);
                pipeline(&mut reader, &mut writer, statement, rows, read, write, timings, started).await?
            }
        };
        wire.end_exchange();
        first_error.map_or(Ok(affected), Err)
    }

    /// Counts the rows (and their second column's bytes) of a query as they stream in: the
    /// client never holds more than its read buffer, whatever the table's size.
    pub async fn stream_count(&mut self, sql: &str, params: &[Param<'_>]) -> Result<(u64, u64), SqlError> {
        let statement = Self::statement(&mut self.wire, &mut self.prepared, &mut self.by_text, sql).await?;
        let (mut rows, mut bytes) = (0u64, 0u64);
        execute(&mut self.wire, statement, params, |row| {
            rows += 1;
            bytes += cell(row, 1)?.map_or(0, |text| text.len() as u64);
            Ok(())
        })
        .await?;
        Ok((rows, bytes))
    }

    /// The (id, text) pairs a query returns, into `out`.
    pub async fn query_pairs(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        out: &mut Vec<(i64, String)>,
    ) -> Result<(), SqlError> {
        let statement = Self::statement(&mut self.wire, &mut self.prepared, &mut self.by_text, sql).await?;
        let id_type = statement.columns.first().map(|c| c.type_.clone()).unwrap_or(Type::INT4);
        execute(&mut self.wire, statement, params, |row| {
            let raw_id = cell(row, 0)?.unwrap_or_default();
            let id = match id_type {
                Type::INT2 => i16::from_sql(&id_type, raw_id).map(i64::from),
                Type::INT4 => i32::from_sql(&id_type, raw_id).map(i64::from),
                _ => i64::from_sql(&id_type, raw_id),
            }
            .map_err(|e| SqlError::new("sql_unreadable_value", format!("the id column: {e}")))?;
            let text = cell(row, 1)?.map(|t| String::from_utf8_lossy(t).into_owned()).unwrap_or_default();
            out.push((id, text));
            Ok(())
        })
        .await?;
        Ok(())
    }

    /// `COPY table (columns) FROM STDIN` of tab-separated lines, written as they are made.
    pub async fn copy_in(
        &mut self,
        table: &str,
        columns: &str,
        data: Box<dyn Iterator<Item = Bytes> + Send>,
    ) -> Result<u64, SqlError> {
        let wire = &mut self.wire;
        wire.start_exchange()?;
        frontend::query(&format!("COPY {table} ({columns}) FROM STDIN"), &mut wire.write).map_err(encoding)?;
        wire.send().await?;
        match wire.message().await? {
            Message::CopyInResponse(_) => {}
            Message::ErrorResponse(body) => {
                let error = server_error(body.fields());
                wire.finish_exchange(|_| Ok(())).await?;
                return Err(error);
            }
            _ => return Err(unexpected("CopyInResponse")),
        }
        // A server that fails mid-COPY says so at once, then ignores the data that follows
        // until CopyDone: its error is read at the end.
        for chunk in data {
            frontend::CopyData::new(chunk).map_err(encoding)?.write(&mut wire.write);
            if wire.write.len() >= WRITE_CHUNK {
                wire.send().await?;
            }
        }
        frontend::copy_done(&mut wire.write);
        wire.send().await?;
        let mut copied = 0;
        wire.finish_exchange(|message| {
            if let Message::CommandComplete(body) = message {
                copied = rows_of_tag(body.tag().unwrap_or(""));
            }
            Ok(())
        })
        .await?;
        Ok(copied)
    }
}

/// Parse and Describe: the statement's parameter types and result columns.
async fn prepare(wire: &mut PgWire, name: String, sql: &str) -> Result<Prepared, SqlError> {
    wire.start_exchange()?;
    frontend::parse(&name, sql, std::iter::empty(), &mut wire.write).map_err(encoding)?;
    frontend::describe(b'S', &name, &mut wire.write).map_err(encoding)?;
    frontend::sync(&mut wire.write);
    wire.send().await?;
    let mut statement = Prepared { name, param_types: Vec::new(), columns: Vec::new() };
    wire.finish_exchange(|message| {
        match message {
            Message::ParameterDescription(body) => {
                statement.param_types = body.parameters().map(|oid| Ok(type_of(oid))).collect().map_err(wire::lost)?;
            }
            Message::RowDescription(body) => {
                statement.columns = body
                    .fields()
                    .map(|field| {
                        let type_ = type_of(field.type_oid());
                        Ok(Column { name: field.name().to_string(), convert: text::binary_converter(&type_), type_ })
                    })
                    .collect()
                    .map_err(wire::lost)?;
            }
            _ => {}
        }
        Ok(())
    })
    .await?;
    Ok(statement)
}

/// The type of an OID; one PostgreSQL does not ship (an enum, a domain) gets a name that says
/// so, and is read in the text format.
fn type_of(oid: u32) -> Type {
    Type::from_oid(oid).unwrap_or_else(|| Type::new(format!("type {oid}"), oid, Kind::Simple, String::new()))
}

/// Bind, Execute and Sync of one statement, its rows given to `on_row`; the rows its command
/// tag counts. An error of `on_row` is returned once the exchange is over.
async fn execute(
    wire: &mut PgWire,
    statement: &Prepared,
    params: &[Param<'_>],
    mut on_row: impl FnMut(&DataRowBody) -> Result<(), SqlError>,
) -> Result<u64, SqlError> {
    wire.start_exchange()?;
    if let Err(error) = encode_statement(statement, params, &mut wire.write) {
        wire.write.clear();
        wire.end_exchange();
        return Err(error);
    }
    wire.send().await?;
    let mut rows = 0;
    wire.finish_exchange(|message| match message {
        Message::DataRow(row) => on_row(&row),
        Message::CommandComplete(body) => {
            rows = rows_of_tag(body.tag().unwrap_or(""));
            Ok(())
        }
        _ => Ok(()),
    })
    .await?;
    Ok(rows)
}

/// Appends Bind (the parameters encoded for their types), Execute and Sync to `buf`.
fn encode_statement(statement: &Prepared, params: &[Param<'_>], buf: &mut BytesMut) -> Result<(), SqlError> {
    if params.len() != statement.param_types.len() {
        return Err(SqlError::new(
            "sql_bad_parameter",
            format!("the statement has {} parameters, {} given", statement.param_types.len(), params.len()),
        ));
    }
    let typed = || params.iter().zip(&statement.param_types);
    let formats = typed().map(|(param, ty)| match param.encode_format(ty) {
        tokio_postgres::types::Format::Text => 0,
        tokio_postgres::types::Format::Binary => 1,
    });
    let serialize = |(param, ty): (&Param<'_>, &Type), out: &mut BytesMut| {
        Ok(match param.to_sql_checked(ty, out)? {
            tokio_postgres::types::IsNull::No => postgres_protocol::IsNull::No,
            tokio_postgres::types::IsNull::Yes => postgres_protocol::IsNull::Yes,
        })
    };
    let bound = frontend::bind(
        "",
        &statement.name,
        formats,
        typed(),
        serialize,
        statement.columns.iter().map(|c| i16::from(c.convert.is_some())),
        buf,
    );
    if let Err(err) = bound {
        return Err(match err {
            frontend::BindError::Conversion(err) => SqlError::new("sql_bad_parameter", err.to_string()),
            frontend::BindError::Serialization(err) => encoding(err),
        });
    }
    frontend::execute("", 0, buf).map_err(encoding)?;
    frontend::sync(buf);
    Ok(())
}

/// The raw value of a row's column (`None`: NULL).
fn cell(row: &DataRowBody, index: usize) -> Result<Option<&[u8]>, SqlError> {
    let mut ranges = row.ranges();
    let mut at = 0;
    while let Some(range) = ranges.next().map_err(wire::lost)? {
        if at == index {
            return Ok(range.map(|r| &row.buffer()[r]));
        }
        at += 1;
    }
    Err(SqlError::new("sql_unreadable_value", format!("the row has no column {index}")))
}

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Param::Text(text) if <&str as ToSql>::accepts(ty) => text.to_sql(ty, out),
            Param::Text(_) => Err(format!("a text parameter cannot be a {}", ty.name()).into()),
            // Sent in the text format (below): the server parses it as the placeholder's type.
            Param::Untyped(text) => {
                out.extend_from_slice(text.as_bytes());
                Ok(tokio_postgres::types::IsNull::No)
            }
            Param::Int(n) => match *ty {
                Type::INT2 => i16::try_from(n)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(n)?.to_sql(ty, out),
                Type::INT8 => n.to_sql(ty, out),
                _ => Err(format!("an integer parameter cannot be a {}", ty.name()).into()),
            },
        }
    }

    fn encode_format(&self, _ty: &Type) -> tokio_postgres::types::Format {
        match self {
            Param::Untyped(_) => tokio_postgres::types::Format::Text,
            Param::Text(_) | Param::Int(_) => tokio_postgres::types::Format::Binary,
        }
    }

    /// Any type: an untyped parameter is text the server parses; the others check their type
    /// when encoded.
    fn accepts(_ty: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// The pipelined exchange on a connection's two halves: the statements written while the
/// answers are read, so neither side's socket buffer fills up and stalls the other. The rows
/// changed, and the first statement's error.
#[allow(clippy::too_many_arguments)]
async fn pipeline<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    reader: &mut R,
    writer: &mut W,
    statement: &Prepared,
    rows: &[Param<'_>],
    read: &mut BytesMut,
    write: &mut BytesMut,
    timings: &mut Vec<StatementTiming>,
    started: Instant,
) -> Result<(u64, Option<SqlError>), SqlError> {
    let writing = async {
        for param in rows {
            encode_statement(statement, std::slice::from_ref(param), write)?;
            if write.len() >= WRITE_CHUNK {
                writer.write_all(write).await.map_err(wire::lost)?;
                write.clear();
            }
        }
        writer.write_all(write).await.map_err(wire::lost)?;
        writer.flush().await.map_err(wire::lost)?;
        write.clear();
        Ok::<_, SqlError>(())
    };
    let reading = async {
        let (mut affected, mut answered, mut failed) = (0, 0, false);
        let mut first_error = None;
        while answered < rows.len() {
            match next_message(reader, read).await? {
                Message::CommandComplete(body) => affected += rows_of_tag(body.tag().unwrap_or("")),
                Message::ErrorResponse(body) => {
                    failed = true;
                    first_error.get_or_insert(server_error(body.fields()));
                }
                Message::ReadyForQuery(_) => {
                    timings.push(StatementTiming::since(started, !failed));
                    failed = false;
                    answered += 1;
                }
                _ => {}
            }
        }
        Ok::<_, SqlError>((affected, first_error))
    };
    let ((), answers) = tokio::try_join!(writing, reading)?;
    Ok(answers)
}

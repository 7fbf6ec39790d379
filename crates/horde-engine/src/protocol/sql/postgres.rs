//! PostgreSQL through tokio-postgres: its connection task runs in the user's worker (a local
//! task), prepared statements are cached per connection, COPY streams rows in, and pipelining
//! is several statements in flight on one connection.

use super::connection::{Param, StatementResult, StatementTiming};
use super::error::SqlError;
use super::postgres_text::PgText;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt, TryStreamExt};
use horde_plan::SqlStatementKind;
use std::collections::HashMap;
use tokio::time::Instant;
use tokio_postgres::types::{Format, IsNull, ToSql, Type};
use tokio_postgres::{Client, Statement};

pub struct PgConnection {
    client: Client,
    prepared: HashMap<String, Statement>,
}

impl PgConnection {
    pub async fn connect(config: &tokio_postgres::Config) -> Result<PgConnection, SqlError> {
        let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
        // The connection's half that reads and writes the socket: a task of the user's own
        // worker, ending when the client is dropped.
        tokio::task::spawn_local(async move {
            let _ = connection.await;
        });
        Ok(PgConnection { client, prepared: HashMap::new() })
    }

    async fn statement(&mut self, sql: &str) -> Result<Statement, SqlError> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.prepared.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    pub async fn execute(&mut self, sql: &str) -> Result<u64, SqlError> {
        // The simple protocol: several statements may be given at once.
        let messages = self.client.simple_query(sql).await?;
        Ok(messages
            .iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::CommandComplete(n) => Some(*n),
                _ => None,
            })
            .sum())
    }

    pub async fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        let rows = self.client.query(sql, &[]).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        // count(*) is bigint, min(id) an integer.
        let value = match *row.columns()[0].type_() {
            Type::INT4 => row.try_get::<_, Option<i32>>(0)?.map(i64::from),
            Type::INT2 => row.try_get::<_, Option<i16>>(0)?.map(i64::from),
            _ => row.try_get::<_, Option<i64>>(0)?,
        };
        Ok(value)
    }

    pub async fn exec_prepared(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, SqlError> {
        let statement = self.statement(sql).await?;
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        Ok(self.client.execute(&statement, &params).await?)
    }

    pub async fn run_statement(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        kind: SqlStatementKind,
        wanted: &[String],
    ) -> Result<StatementResult, SqlError> {
        let statement = self.statement(sql).await?;
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        if kind == SqlStatementKind::Execute {
            let row_count = self.client.execute(&statement, &params).await?;
            return Ok(StatementResult { row_count, ..StatementResult::default() });
        }
        let indices: Vec<Option<usize>> =
            wanted.iter().map(|name| statement.columns().iter().position(|c| c.name() == name)).collect();
        let mut result = StatementResult::for_columns(&indices, || {
            statement.columns().iter().map(|c| c.name().to_string()).collect()
        });
        let stream = self.client.query_raw(&statement, params).await?;
        futures_util::pin_mut!(stream);
        while let Some(row) = stream.try_next().await? {
            result
                .add_row(&indices, |index| Ok::<_, SqlError>(row.try_get::<_, Option<PgText>>(index)?.map(|t| t.0)))?;
        }
        Ok(result)
    }

    /// Every row's statement sent at once on the connection, the answers read as they come:
    /// one round trip for all of them rather than one each.
    pub async fn exec_pipelined(
        &mut self,
        sql: &str,
        rows: &[Param<'_>],
        timings: &mut Vec<StatementTiming>,
    ) -> Result<u64, SqlError> {
        let statement = self.statement(sql).await?;
        let client = &self.client;
        let started = Instant::now();
        let mut in_flight: futures_util::stream::FuturesOrdered<_> = rows
            .iter()
            .map(|param| {
                let statement = &statement;
                async move { client.execute(statement, &[param as &(dyn ToSql + Sync)]).await }
            })
            .collect();
        let mut affected = 0;
        let mut first_error = None;
        while let Some(result) = in_flight.next().await {
            match result {
                Ok(n) => {
                    affected += n;
                    timings.push(StatementTiming::since(started, true));
                }
                Err(err) => {
                    timings.push(StatementTiming::since(started, false));
                    first_error.get_or_insert(err);
                }
            }
        }
        match first_error {
            Some(err) => Err(err.into()),
            None => Ok(affected),
        }
    }

    /// Counts the rows (and their text bytes) of a query as they stream in: the client never
    /// holds more than the driver's buffer, whatever the table's size.
    pub async fn stream_count(&mut self, sql: &str, params: &[Param<'_>]) -> Result<(u64, u64), SqlError> {
        let statement = self.statement(sql).await?;
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let stream = self.client.query_raw(&statement, params).await?;
        futures_util::pin_mut!(stream);
        let (mut rows, mut bytes) = (0u64, 0u64);
        while let Some(row) = stream.try_next().await? {
            rows += 1;
            bytes += row.try_get::<_, Option<&str>>(1)?.map_or(0, |t| t.len() as u64);
        }
        Ok((rows, bytes))
    }

    /// The (id, text) pairs a query returns, into `out`.
    pub async fn query_pairs(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        out: &mut Vec<(i64, String)>,
    ) -> Result<(), SqlError> {
        let statement = self.statement(sql).await?;
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        for row in self.client.query(&statement, &params).await? {
            let id: i32 = row.try_get(0)?;
            let text: Option<String> = row.try_get(1)?;
            out.push((i64::from(id), text.unwrap_or_default()));
        }
        Ok(())
    }

    /// `COPY table (columns) FROM STDIN` of tab-separated lines.
    pub async fn copy_in(
        &mut self,
        table: &str,
        columns: &str,
        data: Box<dyn Iterator<Item = Bytes> + Send>,
    ) -> Result<u64, SqlError> {
        let sink = self.client.copy_in::<_, Bytes>(&format!("COPY {table} ({columns}) FROM STDIN")).await?;
        futures_util::pin_mut!(sink);
        for chunk in data {
            sink.send(chunk).await?;
        }
        Ok(sink.finish().await?)
    }
}

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Param::Text(text) if <&str as ToSql>::accepts(ty) => text.to_sql(ty, out),
            Param::Text(_) => Err(format!("a text parameter cannot be a {}", ty.name()).into()),
            // Sent in the text format (below): the server parses it as the placeholder's type.
            Param::Untyped(text) => {
                out.extend_from_slice(text.as_bytes());
                Ok(IsNull::No)
            }
            Param::Int(n) => match *ty {
                Type::INT2 => i16::try_from(n)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(n)?.to_sql(ty, out),
                Type::INT8 => n.to_sql(ty, out),
                _ => Err(format!("an integer parameter cannot be a {}", ty.name()).into()),
            },
        }
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        match self {
            Param::Untyped(_) => Format::Text,
            Param::Text(_) | Param::Int(_) => Format::Binary,
        }
    }

    /// Any type: an untyped parameter is text the server parses; the others check their type
    /// when encoded.
    fn accepts(_ty: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

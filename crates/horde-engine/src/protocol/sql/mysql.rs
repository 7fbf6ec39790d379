//! MariaDB and MySQL through mysql_async: statements are prepared once per connection (the
//! driver's cache, by their text), rows stream from the binary protocol, and bulk loads are
//! `LOAD DATA LOCAL INFILE` fed from memory.

use super::connection::Param;
use super::error::SqlError;
use bytes::Bytes;
use futures_util::StreamExt;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Params, Value};

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
                Param::Text(text) => Value::Bytes(text.as_bytes().to_vec()),
                Param::Int(n) => Value::Int(n),
            })
            .collect(),
    )
}

impl MyConnection {
    pub async fn connect(opts: &mysql_async::Opts) -> Result<MyConnection, SqlError> {
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

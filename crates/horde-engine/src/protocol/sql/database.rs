//! Which database a URL names, and the SQL each one speaks for the experiment's statements:
//! the few places where PostgreSQL, MariaDB and SQLite differ are all here.

use super::mysql;
use super::postgres::tls::PgTls;
use std::path::PathBuf;
use std::sync::Arc;

/// A database URL, parsed once at lowering.
#[derive(Debug, Clone)]
pub enum Database {
    /// `sqlite:///path/file.db`, `sqlite://relative.db` or `sqlite::memory:` (one in-memory
    /// database per connection: only useful with one thread). SQLite has one writer at a time:
    /// the run's connections to one file take turns on `writer` (an async lock, held from BEGIN
    /// to COMMIT) rather than in SQLite's busy handler, which would block the worker's thread,
    /// and with it the very connection holding the lock when both are on one worker.
    Sqlite {
        path: PathBuf,
        writer: Arc<tokio::sync::Mutex<()>>,
    },
    /// `tls` holds the URL's libpq TLS parameters (sslmode, sslrootcert...), `config` the rest.
    Postgres {
        config: Box<tokio_postgres::Config>,
        tls: PgTls,
    },
    MySql {
        opts: mysql_async::Opts,
    },
}

impl Database {
    /// Parses `url`; the error says what is wrong with it and never repeats its password.
    pub fn parse(url: &str, base_dir: Option<&std::path::Path>) -> Result<Database, String> {
        if let Some(rest) = url.strip_prefix("sqlite:") {
            if rest == ":memory:" {
                return Ok(Database::sqlite(PathBuf::from(":memory:")));
            }
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err("sqlite: names no file: sqlite:///absolute/path.db or sqlite://relative.db".into());
            }
            let path = PathBuf::from(path);
            let path = match base_dir {
                Some(dir) if path.is_relative() => dir.join(path),
                _ => path,
            };
            return Ok(Database::sqlite(path));
        }
        // libpq's URLs, parsed by tokio-postgres (less their TLS parameters): one may name no
        // host before its path (`postgres://user@/db?host=/run/postgresql`), which url::Url refuses.
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let (tls, rest) = PgTls::from_url(url, base_dir).map_err(|e| format!("{}: {e}", redacted(url)))?;
            let config: tokio_postgres::Config = rest.parse().map_err(|e| format!("{}: {e}", redacted(url)))?;
            if config.get_hosts().is_empty() {
                return Err(format!("{}: names no host", redacted(url)));
            }
            // PgTls took every sslmode out; one tokio-postgres still saw was not read.
            if config.get_ssl_mode() != tokio_postgres::config::SslMode::Prefer {
                return Err(format!("{}: the URL's sslmode could not be read", redacted(url)));
            }
            if config.get_channel_binding() == tokio_postgres::config::ChannelBinding::Require {
                return Err(format!(
                    "{}: channel_binding=require: horde does not bind SCRAM to the TLS channel (use prefer or disable)",
                    redacted(url)
                ));
            }
            return Ok(Database::Postgres { config: Box::new(config), tls });
        }
        let parsed = url::Url::parse(url).map_err(|e| format!("{}: {e}", redacted(url)))?;
        match parsed.scheme() {
            "mysql" | "mariadb" => {
                let opts = mysql::options(url, base_dir).map_err(|e| format!("{}: {e}", redacted(url)))?;
                Ok(Database::MySql { opts })
            }
            "postgres" | "postgresql" => Err(format!(
                "{}: a PostgreSQL URL begins postgres:// (postgres://user:password@host:port/db)",
                redacted(url)
            )),
            other => Err(format!("{other}: is not a database horde speaks (sqlite, postgres, mysql)")),
        }
    }

    pub fn sqlite(path: PathBuf) -> Database {
        Database::Sqlite { path, writer: Arc::new(tokio::sync::Mutex::new(())) }
    }

    pub fn kind(&self) -> DatabaseKind {
        match self {
            Database::Sqlite { .. } => DatabaseKind::Sqlite,
            Database::Postgres { .. } => DatabaseKind::Postgres,
            Database::MySql { .. } => DatabaseKind::MySql,
        }
    }

    /// Where the server listens when it runs on this machine (its CPU time can then be read):
    /// a loopback TCP port, or a Unix socket.
    pub fn local_server(&self) -> Option<LocalServer> {
        let (host, port) = match self {
            Database::Sqlite { .. } => return None,
            Database::Postgres { config, .. } => {
                let port = config.get_ports().first().copied().unwrap_or(5432);
                let host = match config.get_hosts().first()? {
                    tokio_postgres::config::Host::Tcp(host) => host.clone(),
                    tokio_postgres::config::Host::Unix(directory) => {
                        return Some(LocalServer::Socket(directory.join(format!(".s.PGSQL.{port}"))))
                    }
                };
                (host, port)
            }
            Database::MySql { opts, .. } => {
                if let Some(socket) = opts.socket() {
                    return Some(LocalServer::Socket(PathBuf::from(socket)));
                }
                (opts.ip_or_hostname().to_string(), opts.tcp_port())
            }
        };
        matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1").then_some(LocalServer::Port(port))
    }
}

/// Takes the query parameters named in `names` out of `url`, whose query begins at its first
/// `?` from byte `search_from` on: their values (percent-decoded), in the URL's order, and the
/// URL without them. The other parameters are kept byte for byte: the drivers that parse them
/// next decode them their own way (libpq's URLs, unlike HTML forms, keep a `+` a plus).
pub fn take_parameters(url: &str, search_from: usize, names: &[&str]) -> (Vec<(String, String)>, String) {
    let Some(question) = url.get(search_from..).and_then(|tail| tail.find('?')) else {
        return (Vec::new(), url.to_string());
    };
    let (base, query) = (&url[..search_from + question], &url[search_from + question + 1..]);
    let decode = |text: &str| percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned();
    let (mut taken, mut kept) = (Vec::new(), Vec::new());
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = decode(name);
        if names.contains(&name.as_str()) {
            taken.push((name, decode(value)));
        } else {
            kept.push(pair);
        }
    }
    let rest = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    (taken, rest)
}

/// A URL with its password replaced by `***` (its user-info, a `password=` parameter), also
/// when it does not parse: the plan's rule, which the results follow too.
pub use horde_plan::redacted_url as redacted;

/// Where a server on this machine listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalServer {
    Port(u16),
    Socket(PathBuf),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseKind {
    Sqlite,
    Postgres,
    MySql,
}

impl DatabaseKind {
    pub fn name(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "SQLite",
            DatabaseKind::Postgres => "PostgreSQL",
            DatabaseKind::MySql => "MariaDB/MySQL",
        }
    }

    /// The seed's table: an auto-incremented key and the text.
    pub fn create_table(self, table: &str, text_length: u32) -> String {
        match self {
            DatabaseKind::Sqlite => format!("CREATE TABLE {table} (id INTEGER PRIMARY KEY, text VARCHAR({text_length}))"),
            DatabaseKind::Postgres => format!(
                "CREATE TABLE {table} (id INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, text VARCHAR({text_length}))"
            ),
            DatabaseKind::MySql => format!(
                "CREATE TABLE {table} (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, text VARCHAR({text_length})) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
            ),
        }
    }

    /// The swap strategy's new table: the rows with their hash, ids given.
    pub fn create_swap_table(self, table: &str, text_length: u32) -> String {
        match self {
            DatabaseKind::MySql => format!(
                "CREATE TABLE {table} (id INT NOT NULL PRIMARY KEY, text VARCHAR({text_length}), hashval VARCHAR(255)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
            ),
            _ => format!("CREATE TABLE {table} (id INTEGER PRIMARY KEY, text VARCHAR({text_length}), hashval VARCHAR(255))"),
        }
    }

    /// A temporary table of ids and hashes, the connection's own.
    pub fn create_temp_table(self, table: &str) -> String {
        match self {
            DatabaseKind::MySql => {
                format!("CREATE TEMPORARY TABLE {table} (id INT NOT NULL PRIMARY KEY, hashval VARCHAR(255)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
            }
            _ => format!("CREATE TEMPORARY TABLE {table} (id INTEGER PRIMARY KEY, hashval VARCHAR(255))"),
        }
    }

    /// Empties the table and restarts its ids at 1, so every populate strategy starts alike.
    pub fn empty_table(self, table: &str) -> String {
        match self {
            DatabaseKind::Sqlite => format!("DELETE FROM {table}"),
            DatabaseKind::Postgres => format!("TRUNCATE {table} RESTART IDENTITY"),
            DatabaseKind::MySql => format!("TRUNCATE TABLE {table}"),
        }
    }

    /// `ALTER TABLE` adding the hash column; `rebuild` forces every row to be rewritten.
    pub fn add_hash_column(self, table: &str, rebuild: bool) -> Vec<String> {
        match (self, rebuild) {
            (DatabaseKind::MySql, false) => vec![format!("ALTER TABLE {table} ADD COLUMN hashval VARCHAR(255) NULL")],
            // MySQL 5.6's way: a copy of the table.
            (DatabaseKind::MySql, true) => {
                vec![format!("ALTER TABLE {table} ADD COLUMN hashval VARCHAR(255) NULL, ALGORITHM=COPY")]
            }
            (DatabaseKind::Postgres, false) => vec![format!("ALTER TABLE {table} ADD COLUMN hashval VARCHAR(255)")],
            // A volatile default (always NULL) makes PostgreSQL evaluate it for every row: a
            // rewrite of the table, ending as the plain column does.
            (DatabaseKind::Postgres, true) => vec![format!(
                "ALTER TABLE {table} ADD COLUMN hashval VARCHAR(255) DEFAULT (CASE WHEN random() < 0 THEN '' END)"
            )],
            (DatabaseKind::Sqlite, false) => vec![format!("ALTER TABLE {table} ADD COLUMN hashval VARCHAR(255)")],
            // SQLite only ever adds a column in place: VACUUM rewrites the whole file.
            (DatabaseKind::Sqlite, true) => {
                vec![format!("ALTER TABLE {table} ADD COLUMN hashval VARCHAR(255)"), "VACUUM".to_string()]
            }
        }
    }

    /// The server's SHA-1 of `column` in lowercase hex; PostgreSQL needs pgcrypto.
    pub fn sha1_of(self, column: &str) -> String {
        match self {
            DatabaseKind::Postgres => format!("encode(digest({column}, 'sha1'), 'hex')"),
            DatabaseKind::MySql => format!("SHA1({column})"),
            DatabaseKind::Sqlite => format!("sha1({column})"),
        }
    }

    /// One statement setting every hash in the server.
    pub fn update_in_server(self, table: &str) -> String {
        format!("UPDATE {table} SET hashval = {}", self.sha1_of("text"))
    }

    /// One statement copying the hashes of a temporary table into the table, for ids in
    /// `(from, to]`.
    pub fn update_join(self, table: &str, temp: &str) -> String {
        match self {
            DatabaseKind::MySql => {
                format!("UPDATE {table} t JOIN {temp} h ON t.id = h.id SET t.hashval = h.hashval")
            }
            _ => format!("UPDATE {table} SET hashval = h.hashval FROM {temp} h WHERE {table}.id = h.id"),
        }
    }

    /// Statements replacing `table` by `new_table`.
    /// What keeps writers off the table while the swap copies it: PostgreSQL's EXCLUSIVE lock
    /// (reads go on) in a transaction the rename then ends; MariaDB's `LOCK TABLES ... READ`.
    pub fn lock_for_swap(self, table: &str) -> Option<String> {
        match self {
            DatabaseKind::Postgres => Some(format!("BEGIN; LOCK TABLE {table} IN EXCLUSIVE MODE")),
            DatabaseKind::MySql => Some(format!("LOCK TABLES {table} READ")),
            DatabaseKind::Sqlite => None,
        }
    }

    pub fn swap_tables(self, table: &str, new_table: &str) -> Vec<String> {
        match self {
            DatabaseKind::MySql => vec![
                format!("RENAME TABLE {table} TO {table}_old, {new_table} TO {table}"),
                format!("DROP TABLE {table}_old"),
            ],
            _ => vec![format!("DROP TABLE {table}"), format!("ALTER TABLE {new_table} RENAME TO {table}")],
        }
    }

    /// A numbered placeholder: `$1` (PostgreSQL), `?` (the others, in order).
    pub fn placeholder(self, n: usize) -> String {
        match self {
            DatabaseKind::Postgres => format!("${n}"),
            _ => "?".to_string(),
        }
    }

    /// `INSERT INTO table (text) VALUES (?), (?), ...` of `rows` rows.
    pub fn insert_texts(self, table: &str, rows: usize) -> String {
        let mut sql = format!("INSERT INTO {table} (text) VALUES ");
        for i in 0..rows {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push('(');
            sql.push_str(&self.placeholder(i + 1));
            sql.push(')');
        }
        sql
    }

    /// The most rows one multi-row statement can carry `columns` parameters each for: the
    /// protocols' limit on parameters (65,535; SQLite's default 32,766).
    pub fn max_rows_per_statement(self, columns: usize) -> usize {
        let parameters = match self {
            DatabaseKind::Sqlite => 32_766,
            _ => 65_535,
        };
        parameters / columns
    }

    /// A statement reading one page of the rows of ids in `(after, upto]`, in order:
    /// parameters after, upto.
    pub fn read_page(self, table: &str, limit: usize) -> String {
        format!(
            "SELECT id, text FROM {table} WHERE id > {} AND id <= {} ORDER BY id LIMIT {limit}",
            self.placeholder(1),
            self.placeholder(2)
        )
    }

    /// Setting one row's hash: parameters hash, id.
    pub fn update_one(self, table: &str) -> String {
        format!("UPDATE {table} SET hashval = {} WHERE id = {}", self.placeholder(1), self.placeholder(2))
    }

    pub fn drop_table_if_exists(self, table: &str) -> String {
        format!("DROP TABLE IF EXISTS {table}")
    }

    pub fn begin(self) -> &'static str {
        match self {
            DatabaseKind::MySql => "START TRANSACTION",
            _ => "BEGIN",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_and_passwords_never_shown() {
        let db = Database::parse("postgres://bench:secret@127.0.0.1:5433/bench", None).unwrap();
        assert_eq!(db.kind(), DatabaseKind::Postgres);
        assert_eq!(db.local_server(), Some(LocalServer::Port(5433)));
        assert_eq!(
            redacted("postgres://bench:secret@127.0.0.1:5433/bench"),
            "postgres://bench:***@127.0.0.1:5433/bench"
        );
        let db = Database::parse("mariadb://bench:pw@127.0.0.1:3307/bench", None).unwrap();
        assert_eq!(db.kind(), DatabaseKind::MySql);
        assert_eq!(db.local_server(), Some(LocalServer::Port(3307)));
        let db = Database::parse("sqlite://data.db", Some(std::path::Path::new("/tmp/x"))).unwrap();
        assert!(matches!(db, Database::Sqlite { path, .. } if path == std::path::Path::new("/tmp/x/data.db")));
        let db = Database::parse("sqlite:///abs/data.db", None).unwrap();
        assert!(matches!(db, Database::Sqlite { path, .. } if path == std::path::Path::new("/abs/data.db")));
        let err = Database::parse("oracle://x@y/z", None).unwrap_err();
        assert!(err.contains("oracle"), "{err}");
        let err = Database::parse("postgres://u:hunter2@[::1/db", None).unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        // A Unix-socket directory as the host, percent-encoded or as a parameter: the server is
        // found by its socket.
        for (url, socket) in [
            ("postgres://u@%2Frun%2Fpostgresql/db", "/run/postgresql/.s.PGSQL.5432"),
            ("postgres://u@/db?host=/run/postgresql&port=5433", "/run/postgresql/.s.PGSQL.5433"),
            ("mysql://u@localhost/db?socket=/run/mysqld/mysqld.sock", "/run/mysqld/mysqld.sock"),
        ] {
            let db = Database::parse(url, None).unwrap();
            assert_eq!(db.local_server(), Some(LocalServer::Socket(PathBuf::from(socket))), "{url}");
        }
        assert_eq!(redacted("postgres://u@/db?host=/x"), "postgres://u@/db?host=/x");
        assert_eq!(
            redacted("postgres://u@h/db?password=s3cret&sslmode=require&xpassword=k"),
            "postgres://u@h/db?password=***&sslmode=require&xpassword=k"
        );
        let err = Database::parse("postgres://u@h/db?password=s3cret&sslmode=verify-full&sslrootcert=/no", None);
        assert!(!err.unwrap_err().contains("s3cret"));
        let err = Database::parse("postgres://u@h/db?channel_binding=require", None).unwrap_err();
        assert!(err.contains("channel_binding=require"), "{err}");
        // mysql_async reconnects over the Unix socket unless asked not to: horde keeps the
        // transport the URL names.
        for (url, socket) in
            [("mysql://u:p@127.0.0.1/db", false), ("mysql://u:p@127.0.0.1/db?prefer_socket=true", true)]
        {
            let Database::MySql { opts } = Database::parse(url, None).unwrap() else { unreachable!() };
            assert_eq!(opts.prefer_socket(), socket, "{url}");
        }
    }

    #[test]
    fn parameters_are_taken_out_and_the_others_kept_byte_for_byte() {
        let (taken, rest) =
            take_parameters("postgres://u@h/db?options=-c%20a%3Db+c&sslmode=require&x=1", 0, &["sslmode"]);
        assert_eq!(taken, vec![("sslmode".to_string(), "require".to_string())]);
        assert_eq!(rest, "postgres://u@h/db?options=-c%20a%3Db+c&x=1");
        let (taken, rest) = take_parameters("mysql://u@h/db?ssl_ca=%2Ftmp%2Fa+b.pem", 0, &["ssl_ca"]);
        assert_eq!((taken[0].1.as_str(), rest.as_str()), ("/tmp/a+b.pem", "mysql://u@h/db"));
        assert_eq!(take_parameters("postgres://u@h/db", 0, &["sslmode"]), (vec![], "postgres://u@h/db".to_string()));
        // The query begins after the credentials: a `?` in a password is not one.
        let url = "postgres://u:p?w@h/db?sslmode=disable";
        let (taken, rest) = take_parameters(url, url.find('@').unwrap() + 1, &["sslmode"]);
        assert_eq!((taken.len(), rest.as_str()), (1, "postgres://u:p?w@h/db"));
    }

    #[test]
    fn multi_row_inserts_number_their_placeholders() {
        assert_eq!(DatabaseKind::Postgres.insert_texts("t", 3), "INSERT INTO t (text) VALUES ($1), ($2), ($3)");
        assert_eq!(DatabaseKind::MySql.insert_texts("t", 2), "INSERT INTO t (text) VALUES (?), (?)");
    }
}

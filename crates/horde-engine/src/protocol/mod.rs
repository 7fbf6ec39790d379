//! Protocols, each in its own module around the protocol-agnostic core (schedules, workers,
//! virtual users, control flow, recorders): its steps as lowered (`program.rs`), their
//! lowering (`lower.rs`), its client, its steps as a user runs them, its checks, its error
//! kinds and its timing phases. The core knows a step only as something a user runs against
//! its session, reporting outcomes to rows; it never parses a wire format.
//!
//! This file is the registry, the one place the core reaches the protocols through: one arm per
//! protocol in each enum and `match` below, dispatched statically.

pub(crate) mod couchdb;
pub(crate) mod cql;
pub(crate) mod http;
pub(crate) mod messages;
pub(crate) mod rows;
pub(crate) mod sql;

use crate::lower::{LoweringContext, Program, StepAt};
use crate::user::{Flow, VirtualUser};
use horde_plan::{Plan, Step};

/// A protocol's step as a user runs it.
pub enum ProtocolStepProgram {
    Http(http::program::HttpStepProgram),
    Socket(Box<messages::program::SocketStepProgram>),
    Couchdb(couchdb::program::CouchdbStepProgram),
    Sql(sql::SqlStepProgram),
    Cql(cql::CqlStepProgram),
}

/// What each protocol needs for the whole run: its settings, and what its steps share.
pub struct ProtocolPrograms {
    pub http: http::program::HttpProgram,
    pub sockets: messages::program::SocketsProgram,
    pub sql: sql::SqlProgram,
    pub cql: cql::CqlProgram,
}

/// What each protocol's lowering carries from one step to the next.
pub(crate) struct Lowerings {
    http: http::lower::HttpLowering,
    sockets: messages::lower::SocketLowering,
    sql: sql::lower::SqlLowering,
    cql: cql::lower::CqlLowering,
}

impl Lowerings {
    /// Each protocol's plan-wide settings, lowered (errors at their paths).
    pub(crate) fn new(plan: &Plan, cx: &mut LoweringContext) -> Lowerings {
        Lowerings {
            sql: sql::lower::SqlLowering::new(plan, cx),
            http: http::lower::HttpLowering::new(plan, cx),
            sockets: messages::lower::SocketLowering::default(),
            cql: cql::lower::CqlLowering::default(),
        }
    }

    /// A protocol's step; the core lowers its own.
    pub(crate) fn lower_step(&mut self, cx: &mut LoweringContext, at: StepAt, step: &Step) -> ProtocolStepProgram {
        match step {
            Step::Core(_) => unreachable!("the core lowers its own steps"),
            Step::Http(step) => ProtocolStepProgram::Http(self.http.lower_step(cx, at, step)),
            Step::Socket(step) => {
                ProtocolStepProgram::Socket(Box::new(self.sockets.lower_step(cx, at, step, &self.http)))
            }
            Step::Couchdb(step) => ProtocolStepProgram::Couchdb(couchdb::lower::lower_step(cx, at, step, &self.http)),
            Step::Sql(step) => ProtocolStepProgram::Sql(self.sql.lower_step(cx, at, step)),
            Step::Cql(step) => ProtocolStepProgram::Cql(self.cql.lower_step(cx, at, step)),
        }
    }

    pub(crate) fn finish(self, plan: &Plan, cx: &mut LoweringContext) -> ProtocolPrograms {
        ProtocolPrograms {
            http: self.http.finish(plan, cx),
            sockets: self.sockets.finish(),
            sql: self.sql.finish(plan),
            cql: self.cql.finish(plan, cx),
        }
    }
}

/// The variables a protocol's step saves (its checks' `save_as`, a cookie read into the
/// session): what lowering needs to tell a mistyped name from a saved one.
pub(crate) fn saved_variables(step: &Step, save: &mut dyn FnMut(&str)) {
    match step {
        Step::Core(_) | Step::Couchdb(_) => {}
        Step::Http(step) => http::saved_variables(step, save),
        Step::Socket(step) => messages::saved_variables(step, save),
        Step::Sql(step) => sql::saved_variables(step, save),
        Step::Cql(step) => cql::saved_variables(step, save),
    }
}

impl ProtocolStepProgram {
    pub(crate) async fn run(&self, user: &mut VirtualUser) -> Flow {
        match self {
            // Awaited in place: a request is the hot path, and its future is what every user's
            // holds anyway.
            ProtocolStepProgram::Http(step) => http::run_step(step, user).await,
            // Boxed each: their states are large (a socket's handshake, CouchDB's operation
            // mix, a SQL phase), and unboxed they would be in every user's future.
            ProtocolStepProgram::Socket(step) => Box::pin(messages::run_step(step, user)).await,
            ProtocolStepProgram::Couchdb(step) => Box::pin(couchdb::run_step(step, user)).await,
            ProtocolStepProgram::Sql(step) => Box::pin(sql::run_step(step, user)).await,
            ProtocolStepProgram::Cql(step) => Box::pin(cql::run_step(step, user)).await,
        }
    }
}

impl ProtocolPrograms {
    /// What the protocols show on the progress line as the run goes: the SQL phase running.
    pub(crate) fn report_progress(&self, totals: &mut horde_metrics::Totals) {
        totals.sql_progress = sql::running_phase(&self.sql.phases);
    }
}

/// Each protocol's state in one virtual user. Made with the user and empty until used: a user
/// that never opens a socket or a database holds nothing for them.
pub(crate) struct UserProtocols {
    /// Cookies and the keep-alive connections.
    pub(crate) http: http::HttpSession,
    /// WebSockets and event streams the user holds, by the plan's socket index; empty until
    /// the user's first socket step.
    pub(crate) sockets: Vec<Option<messages::OpenSocket>>,
    /// Connections to the plan's databases, by their index; empty until the user's first SQL
    /// step.
    pub(crate) sql: Vec<sql::SqlLink>,
    /// CQL statements the user sent asynchronously and has not seen answered, and YCSB's
    /// key chooser; made at the user's first CQL step.
    pub(crate) cql: Option<Box<cql::UserCql>>,
}

impl UserProtocols {
    pub(crate) fn new(programs: &ProtocolPrograms) -> UserProtocols {
        UserProtocols {
            http: http::HttpSession::new(programs.http.reads_response_headers),
            sockets: Vec::new(),
            sql: Vec::new(),
            cql: None,
        }
    }

    /// What a user leaves when its scenario ends: the sockets it still holds are closed, the
    /// CQL statements it sent asynchronously are waited for.
    pub(crate) async fn finish(user: &mut VirtualUser) {
        if !user.protocols.sockets.is_empty() {
            // Boxed: only users that held sockets pay for the closing's state.
            Box::pin(user.close_sockets()).await;
        }
        if let Some(cql) = user.protocols.cql.as_mut().filter(|cql| cql.has_pending()) {
            Box::pin(cql.finish()).await;
        }
    }
}

/// Each protocol's state in one worker thread, shared by its users.
pub(crate) struct WorkerProtocols {
    /// This worker's share of the pooled databases' connections.
    pub(crate) sql: sql::WorkerPools,
    /// This worker's session to the CQL cluster and its prepared statements.
    pub(crate) cql: cql::WorkerCql,
    /// Files multipart parts name by a template, as this worker has read them.
    pub(crate) http_part_files: http::part_files::PartFiles,
}

impl WorkerProtocols {
    pub(crate) fn new(programs: &ProtocolPrograms) -> WorkerProtocols {
        WorkerProtocols {
            sql: sql::WorkerPools::default(),
            cql: cql::WorkerCql::new(&programs.cql),
            http_part_files: http::part_files::PartFiles::default(),
        }
    }
}

/// What each protocol checks before a run, so that a wrong address or password is its own
/// message (exit 3) and not a run of failures: each SQL database answers `SELECT 1`. HTTP
/// needs none (a refused connection is counted as what it is, per request).
pub fn preflight(program: &Program) -> Result<(), String> {
    crate::tls_trust::use_ring_by_default();
    sql::preflight(program)?;
    cql::preflight(program)
}

#[cfg(test)]
mod tests {
    /// The core reaches the protocols through this registry only: lowering, users, workers,
    /// the collector, control flow and checks name no protocol module or plan step of one.
    /// (A test of its own may look inside a protocol's program.)
    #[test]
    fn the_core_names_no_protocol() {
        let modules = ["http", "sql", "messages", "couchdb", "cql"];
        let types = ["HttpStep", "HttpSource", "SocketStep", "CouchdbStep", "SqlStep", "CqlStep", "RequestProgram"];
        for file in
            ["lower.rs", "user/mod.rs", "worker.rs", "run.rs", "user/control.rs", "checks/mod.rs", "checks/body.rs"]
        {
            let path = format!("{}/src/{file}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            let code: String =
                code.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
            for path in code.split(|c: char| !c.is_alphanumeric() && c != '_' && c != ':') {
                let mut parts = path.split("::");
                while let Some(part) = parts.next() {
                    if part == "protocol" {
                        if let Some(next) = parts.next() {
                            assert!(!modules.contains(&next), "{file} names the protocol module {path}");
                        }
                    }
                    assert!(!types.contains(&part), "{file} names the protocol type {part}");
                }
            }
        }
    }
}

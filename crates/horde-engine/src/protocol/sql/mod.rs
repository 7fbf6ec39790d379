//! SQL databases: PostgreSQL, MariaDB/MySQL and SQLite behind one connection type
//! (`connection.rs`, a driver per file or directory: PostgreSQL's protocol, spoken in the
//! statement's own task, in `postgres/`), their failures as stable kinds (`error.rs`), the dialects' differences
//! (`database.rs`), statements and transactions inside scenarios with their checks and pools
//! (`statement.rs`), and seed 000's experiment as a step (`workload.rs`, the phases and their
//! strategies; `resources.rs`, what a phase cost the client and the server).

mod connection;
pub(crate) mod database;
mod error;
pub(crate) mod lower;
mod mysql;
mod postgres;
mod resources;
mod sqlite;
mod statement;
mod workload;

pub use database::{redacted, Database};

/// A SQL step as a user runs it.
pub enum SqlStepProgram {
    Workload(Box<SqlWorkloadProgram>),
    Statement(Box<SqlStatementProgram>),
    Transaction(Box<SqlTransactionProgram>),
}

/// What SQL needs for the whole run.
pub struct SqlProgram {
    /// The plan's databases, which `sql` steps run on, in the plan's order.
    pub databases: Vec<ScenarioDatabase>,
    /// The plan's SQL phases (`sql_workload` steps): the collector reads their progress.
    pub phases: Vec<PhaseProgress>,
    /// How long a statement may take.
    pub statement_timeout: std::time::Duration,
}

/// Connects to the database once and runs `SELECT 1`: a wrong URL, password or database name
/// is found before a run starts, with the database's own message. Gives the database's name.
pub fn check_connection(url: &str, base_dir: Option<&std::path::Path>) -> Result<String, String> {
    let database = Database::parse(url, base_dir)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let mut connection = connection::Connection::connect(&database).await.map_err(|e| e.describe())?;
        connection.execute("SELECT 1").await.map_err(|e| e.describe())?;
        Ok(connection.kind().name().to_string())
    })
}
/// Whether each of the plan's databases answers, before anything is measured.
pub(crate) fn preflight(program: &crate::lower::Program) -> Result<(), String> {
    let base_dir = program.plan.base_dir.as_deref().map(std::path::Path::new);
    for database in &program.plan.databases {
        check_connection(&database.url, base_dir).map_err(|message| {
            format!(
                "cannot connect to the database {:?} at {} (before the run): {}",
                database.name,
                redacted(&database.url),
                message
            )
        })?;
    }
    Ok(())
}

pub use statement::{
    translate_placeholders, ScenarioDatabase, SqlLink, SqlStatementProgram, SqlTransactionProgram, WorkerPools,
};
pub use workload::{running_phase, PhaseProgress, SqlWorkloadProgram};

/// Runs a SQL step.
pub(crate) async fn run_step(step: &SqlStepProgram, user: &mut crate::user::VirtualUser) -> crate::user::Flow {
    match step {
        SqlStepProgram::Workload(step) => user.sql_workload(step).await,
        SqlStepProgram::Statement(step) => user.scenario_statement(step).await,
        SqlStepProgram::Transaction(step) => user.sql_transaction(step).await,
    }
}

/// The variables a SQL step saves: a statement's checks.
pub(crate) fn saved_variables(step: &horde_plan::SqlStep, save: &mut dyn FnMut(&str)) {
    if let horde_plan::SqlStep::Sql(statement) = step {
        statement.checks.iter().filter_map(|c| c.save_as.as_deref()).for_each(save);
    }
}

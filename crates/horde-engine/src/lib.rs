//! The horde engine: lowers a [`horde_plan::Plan`] into a [`Program`], runs it on share-nothing
//! workers, and hands interval snapshots to a [`horde_metrics::Sink`].
//!
//! ```no_run
//! use std::sync::Arc;
//! let plan = horde_plan::Plan::from_json(&std::fs::read_to_string("plan.json").unwrap()).unwrap();
//! let program = Arc::new(horde_engine::lower(&plan).expect("a valid plan"));
//! let control = horde_engine::RunControl::new();
//! struct Quiet;
//! impl horde_metrics::Sink for Quiet {
//!     fn interval(&mut self, _: &mut horde_metrics::Totals) {}
//!     fn finish(&mut self, _: &mut horde_metrics::Totals, _: horde_metrics::RunStatus) {}
//! }
//! let result = horde_engine::run(program, &control, &mut Quiet);
//! println!("{:?}", result.totals.request_counts());
//! ```
//!
//! The life of a request: a worker's injector starts a [`user`] at its intended time; the user
//! renders the request from its session, sends it on its own keep-alive connection
//! (`protocol::http`), runs the checks, and records the outcome in its worker's recorders. Every interval the worker moves its recorders into a snapshot for the collector
//! ([`run`]).

mod checks;
pub mod cluster;
mod descriptors;
mod failure;
mod injection;
pub mod lower;
mod pause;
mod precise_timer;
mod process_usage;
mod protocol;
mod request_log;
mod run;
mod run_limits;
pub mod segment;
pub mod session;
mod start_line;
mod thresholds;
mod tls_trust;
mod user;
mod worker;

pub use descriptors::{connection_capacity, connections_needed_at_once};
pub use lower::{lower, Program};
pub use protocol::couchdb::couchdb_request;
pub use protocol::cql::ycsb::YcsbTable;
pub use protocol::preflight;
pub use protocol::sql::{check_connection as sql_check_connection, redacted as redacted_url};
pub use run::{run, run_with_request_log, worker_count, RunControl, RunResult};
pub use session::functions::SessionFunctions;

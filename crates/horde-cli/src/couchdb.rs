//! `horde couchdb`: Iron Cushion's CouchDB benchmark with its flags and its report. The flags
//! become a Plan of two scenarios (bulk insert, then CRUD after it), so the same workload runs
//! inside any simulation too; this module only checks the flags, prepares the database and
//! checks its document count afterwards.

use crate::args::CouchdbArgs;
use crate::output::{print_text, status};
use crate::{exit, invalid_flags, prepare, results_directory, run_into, Failure};
use horde_metrics::RunStatus;
use horde_plan::{
    crud_rule_violations, CouchdbBulkInsert, CouchdbCrud, CouchdbStep, CrudRule, CrudWeights, Injection, Plan,
    RunOptions, Scenario,
};
use horde_report::render_console;
use horde_report::terminal::printable;

const BULK_SCENARIO: &str = "bulk insert";
const CRUD_SCENARIO: &str = "crud";
const WEIGHT_FLAGS: &str = "--create_weight, --read_weight, --update_weight, --delete_weight";

/// The flags once every rule holds.
struct Benchmark {
    address: String,
    database: String,
    connections: u64,
    schema: std::path::PathBuf,
    seed: Option<u64>,
    documents_per_insert: u32,
    inserts: u32,
    crud_operations: u64,
    weights: CrudWeights,
}

impl Benchmark {
    /// Every broken rule, each naming its flag (seed 003's rules, and a few of horde's).
    fn from_args(args: &CouchdbArgs) -> Result<Benchmark, Vec<String>> {
        let mut problems = Vec::new();
        let address = match args.database_address.as_deref().map(str::trim) {
            None | Some("") => {
                problems.push("--database_address must be provided (http://[hostname]:[port])".to_string());
                String::new()
            }
            Some(address) => {
                let valid = url::Url::parse(address).is_ok_and(|u| u.scheme() == "http" && u.host_str().is_some());
                if !valid {
                    problems
                        .push(format!("--database_address {address:?} must be of the form http://[hostname]:[port]"));
                }
                address.trim_end_matches('/').to_string()
            }
        };
        let database = match args.database_name.as_deref() {
            None | Some("") => {
                problems.push("--database_name must be provided".to_string());
                String::new()
            }
            Some(name) => {
                if !is_couchdb_database_name(name) {
                    problems.push(format!(
                        "--database_name {name:?} is not a CouchDB database name: a lowercase letter, then a-z, 0-9 and _$()+-/"
                    ));
                }
                name.to_string()
            }
        };
        let mut non_negative = |flag: &str, value: i64| -> u64 {
            if value < 0 {
                problems.push(format!("--{flag} must be >= 0, not {value}"));
            }
            value.max(0) as u64
        };
        let documents_per_insert = non_negative("num_documents_per_bulk_insert", args.num_documents_per_bulk_insert);
        let inserts = non_negative("num_bulk_insert_operations", args.num_bulk_insert_operations);
        let crud_operations = non_negative("num_crud_operations", args.num_crud_operations);
        let weights = CrudWeights {
            create: non_negative("create_weight", args.create_weight),
            read: non_negative("read_weight", args.read_weight),
            update: non_negative("update_weight", args.update_weight),
            delete: non_negative("delete_weight", args.delete_weight),
        };
        if args.num_connections <= 0 {
            problems.push(format!("--num_connections must be > 0, not {}", args.num_connections));
        }
        let too_big = |flag: &str, value: u64, problems: &mut Vec<String>| {
            if value > u64::from(u32::MAX) {
                problems.push(format!("--{flag} {value} is too large (at most {})", u32::MAX));
            }
        };
        too_big("num_documents_per_bulk_insert", documents_per_insert, &mut problems);
        too_big("num_bulk_insert_operations", inserts, &mut problems);
        if (documents_per_insert == 0) != (inserts == 0) {
            problems.push(format!(
                "--num_bulk_insert_operations {inserts} with --num_documents_per_bulk_insert {documents_per_insert} \
                 inserts nothing: give both, or neither to skip the bulk insert step"
            ));
        }
        if documents_per_insert * inserts == 0 && crud_operations == 0 {
            problems.push(
                "nothing to do: give --num_documents_per_bulk_insert and --num_bulk_insert_operations, or \
                 --num_crud_operations"
                    .to_string(),
            );
        }
        let bulk_per_connection = documents_per_insert * inserts;
        let counts = weights.counts(crud_operations);
        for rule in crud_rule_violations(&weights, crud_operations, bulk_per_connection) {
            problems.push(format!("{}: {}", rule_flags(rule), rule.explain(&counts, bulk_per_connection)));
        }
        let schema = match (&args.json_document_schema_filename, &args.xml_document_schema_filename) {
            (Some(_), Some(_)) | (None, None) => {
                problems.push(
                    "exactly one of --json_document_schema_filename or --xml_document_schema_filename must be provided"
                        .to_string(),
                );
                None
            }
            (Some(json), None) => Some(("json_document_schema_filename", json)),
            (None, Some(xml)) => Some(("xml_document_schema_filename", xml)),
        };
        let schema = schema.and_then(|(flag, path)| match horde_docgen::Schema::from_file(path) {
            Ok(_) => Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.clone())),
            Err(err) => {
                problems.push(format!("--{flag} {}: {err}", path.display()));
                None
            }
        });
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Benchmark {
            address,
            database,
            connections: args.num_connections as u64,
            schema: schema.expect("no problems, so a schema"),
            seed: args.seed.map(|s| s as u64),
            documents_per_insert: documents_per_insert as u32,
            inserts: inserts as u32,
            crud_operations,
            weights,
        })
    }

    fn database_url(&self) -> String {
        format!("{}/{}", self.address, self.database)
    }

    fn bulk_documents_per_connection(&self) -> u64 {
        u64::from(self.documents_per_insert) * u64::from(self.inserts)
    }

    /// The two steps as a plan: bulk insert, then CRUD once every connection has finished.
    fn plan(&self, workers: Option<u32>) -> Plan {
        let schema = self.schema.to_string_lossy().into_owned();
        let everyone = vec![Injection::AtOnceUsers { users: self.connections }];
        let mut scenarios = Vec::new();
        if self.bulk_documents_per_connection() > 0 {
            scenarios.push(Scenario {
                name: BULK_SCENARIO.into(),
                steps: vec![CouchdbStep::CouchdbBulkInsert(CouchdbBulkInsert {
                    name: BULK_SCENARIO.into(),
                    database: self.database_url(),
                    schema: schema.clone(),
                    documents_per_insert: self.documents_per_insert,
                    inserts: self.inserts,
                })
                .into()],
                injection: everyone.clone(),
                after: None,
            });
        }
        if self.crud_operations > 0 {
            scenarios.push(Scenario {
                name: CRUD_SCENARIO.into(),
                steps: vec![CouchdbStep::CouchdbCrud(CouchdbCrud {
                    name: CRUD_SCENARIO.into(),
                    database: self.database_url(),
                    schema,
                    operations: self.crud_operations,
                    weights: self.weights,
                    bulk_documents_per_user: self.bulk_documents_per_connection(),
                })
                .into()],
                injection: everyone,
                after: (!scenarios.is_empty()).then(|| BULK_SCENARIO.to_string()),
            });
        }
        Plan {
            options: RunOptions { seed: self.seed, workers, ..RunOptions::default() },
            ..Plan::new("couchdb", scenarios)
        }
    }
}

/// The flags a broken CRUD rule is about.
fn rule_flags(rule: CrudRule) -> &'static str {
    match rule {
        CrudRule::WeightsSumToZero => WEIGHT_FLAGS,
        CrudRule::CreateReadBelowDelete => "--create_weight + --read_weight vs --delete_weight",
        CrudRule::UpdateWithoutCreateOrRead => "--create_weight + --read_weight vs --update_weight",
        CrudRule::ReadWithoutDocuments => "--read_weight",
        CrudRule::NotEnoughDocumentsToDelete => "--delete_weight",
    }
}

/// CouchDB's rule for database names.
fn is_couchdb_database_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_$()+-/".contains(c))
}

/// The database's document count.
fn document_count(url: &str) -> Result<u64, Failure> {
    let (status, reply) = horde_engine::couchdb_request("GET", url).map_err(|e| runtime(format!("GET {url}: {e}")))?;
    reply
        .get("doc_count")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| runtime(format!("GET {url}: HTTP {status}, no doc_count in {}", printable(&reply.to_string()))))
}

fn runtime(message: String) -> Failure {
    Failure::Runtime(anyhow::anyhow!(message))
}

pub(crate) fn couchdb(args: &CouchdbArgs) -> Result<i32, Failure> {
    let benchmark = Benchmark::from_args(args).map_err(invalid_flags)?;
    let plan = benchmark.plan(args.workers);
    if args.print_plan {
        print_text(&(plan.to_json_pretty() + "\n"));
        return Ok(exit::OK);
    }
    let program = prepare(&plan, std::path::Path::new("of horde couchdb"))?;
    // The server must answer before anything is measured: a dead one is a clear error, not a
    // run full of refused connections.
    let root = format!("{}/", benchmark.address);
    horde_engine::couchdb_request("GET", &root)
        .map_err(|e| runtime(format!("cannot reach CouchDB at {}: {e}", benchmark.address)))?;
    let database = benchmark.database_url();
    match horde_engine::couchdb_request("PUT", &database) {
        Ok((201 | 202, _)) => status!("horde couchdb: created database {}", benchmark.database),
        Ok((412, _)) => {}
        Ok((status, reply)) => {
            // The reply is the server's text: shown, never obeyed by the terminal.
            let reply = reply.to_string();
            return Err(runtime(format!("cannot create database {database}: HTTP {status} {}", printable(&reply))));
        }
        Err(e) => return Err(runtime(format!("cannot create database {database}: {e}"))),
    }
    let before = document_count(&database)?;

    let dir = results_directory(&args.output, &plan.name)?;
    status!("horde couchdb: {} connections against {database}; results in {}", benchmark.connections, dir.display());
    let finished = run_into(program, &dir, !args.output.quiet, "cli", Default::default())?;
    let summary = &finished.summary;
    if !args.output.quiet {
        print_text(&render_console(summary));
    }
    let documents = |step: &str, op: &str| -> i128 {
        summary
            .couchdb
            .iter()
            .filter(|s| s.name == step)
            .filter_map(|s| s.documents.get(op))
            .map(|n| i128::from(*n))
            .sum()
    };
    let expected = i128::from(before) + documents(BULK_SCENARIO, "inserted") + documents(CRUD_SCENARIO, "create")
        - documents(CRUD_SCENARIO, "delete");
    match document_count(&database) {
        Ok(after) => {
            let verdict = if i128::from(after) == expected { "as expected" } else { "NOT as expected" };
            print_text(&format!(
                "database {}: {after} documents ({verdict}: {before} before + {} bulk inserted + {} created - {} deleted)\n",
                benchmark.database,
                documents(BULK_SCENARIO, "inserted"),
                documents(CRUD_SCENARIO, "create"),
                documents(CRUD_SCENARIO, "delete")
            ));
        }
        Err(Failure::Runtime(err)) => {
            status!("horde couchdb: could not count the documents afterwards: {}", printable(&format!("{err:#}")))
        }
        Err(Failure::Invalid(message)) => status!("horde couchdb: {message}"),
        Err(Failure::Interrupted(what)) => status!("horde couchdb: interrupted {what}"),
    }
    finished.results_written()?;
    status!("horde: results written to {}", dir.join("summary.json").display());
    Ok(match finished.status {
        RunStatus::Interrupted => exit::INTERRUPTED,
        _ => exit::OK,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use horde_plan::Step;
    use std::path::Path;

    #[test]
    fn database_names_follow_couchdb() {
        assert!(is_couchdb_database_name("bench"));
        assert!(is_couchdb_database_name("a1_$()+-/"));
        assert!(!is_couchdb_database_name("Bench"));
        assert!(!is_couchdb_database_name("1bench"));
        assert!(!is_couchdb_database_name("_users"));
    }

    #[test]
    fn the_plan_runs_crud_after_bulk_insert() {
        let benchmark = Benchmark {
            address: "http://127.0.0.1:5984".into(),
            database: "bench".into(),
            connections: 3,
            schema: Path::new("/tmp/schema.json").to_path_buf(),
            seed: Some(1),
            documents_per_insert: 10,
            inserts: 2,
            crud_operations: 8,
            weights: CrudWeights { create: 2, read: 3, update: 2, delete: 1 },
        };
        let plan = benchmark.plan(None);
        assert_eq!(plan.scenarios.len(), 2);
        assert_eq!(plan.scenarios[1].after.as_deref(), Some(BULK_SCENARIO));
        let Step::Couchdb(CouchdbStep::CouchdbCrud(crud)) = &plan.scenarios[1].steps[0] else { panic!("crud step") };
        assert_eq!(crud.bulk_documents_per_user, 20);
        assert_eq!(crud.database, "http://127.0.0.1:5984/bench");
    }
}

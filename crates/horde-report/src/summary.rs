//! summary.json: everything a run measured, with the plan and the environment it ran in.
//! Its JSON Schema is committed as docs/summary.schema.json.

use horde_metrics::{
    ConnectionStats, CouchdbStepReport, ErrorSummary, GeneratorStats, GroupStats, LatencyStats, RequestStats,
    RunStatus, SchedulingStats, SessionFunctionStats, SummaryOptions, ThresholdResult, Totals, UserStats,
};
use horde_plan::Plan;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::UNIX_EPOCH;

/// Bumped when a field changes meaning or disappears; new fields do not bump it.
pub const SUMMARY_VERSION: u32 = 1;

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Summary {
    pub summary_version: u32,
    pub run: RunInfo,
    /// All requests together: Gatling's "Global Information".
    pub global: RequestStats,
    /// One row per request name, in order of first appearance; redirect hops have their own.
    pub requests: Vec<RequestStats>,
    pub groups: Vec<GroupStats>,
    /// Errors grouped by kind and request, most frequent first.
    pub errors: Vec<ErrorSummary>,
    pub users: UserStats,
    pub scheduling: SchedulingStats,
    #[serde(default)]
    pub connections: ConnectionStats,
    #[serde(default)]
    pub generator: GeneratorStats,
    /// A distributed run's shares (the processes that each ran an execution segment of the
    /// plan), as its coordinator saw them; absent in a run of one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machines: Vec<horde_metrics::MachineStats>,
    /// CouchDB steps (bulk insert, CRUD) in Iron Cushion's names and units, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub couchdb: Vec<CouchdbStepReport>,
    /// `horde sql` phases (seed 000's experiment), in the order they ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sql: Vec<horde_metrics::SqlPhaseReport>,
    /// The plan's thresholds and their verdicts, in the plan's order; judged when the run
    /// ends (empty while it runs). Any that did not pass makes the run exit 99.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdResult>,
    /// What the run's user should know about how it was set up: more request rows than a run
    /// is meant to have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub environment: Environment,
    pub plan: Plan,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct RunInfo {
    pub name: String,
    /// running (the run is still going or was killed), completed, limit_reached, interrupted,
    /// stopped (by a scenario: `stop_reason` says why), aborted_by_threshold (a threshold with
    /// `abort` failed: `stop_reason` names it).
    pub status: String,
    /// Why a scenario stopped the run (`stop_load_generator`, a feeder run out), or which
    /// threshold aborted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// UTC, RFC 3339.
    pub started_at: String,
    pub started_at_unix_ms: u64,
    pub duration_ms: u64,
    /// The unmeasured start of the run; rates are over `duration_ms - warmup_ms`.
    pub warmup_ms: u64,
    pub horde_version: String,
}

/// Where the numbers come from.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Environment {
    pub host: String,
    pub os: String,
    pub arch: String,
    pub cpu_model: String,
    /// Cores this process may run on.
    pub cores: usize,
    /// Worker threads of the run.
    pub workers: usize,
    pub horde_version: String,
    /// The front end that made the plan (`python 3.11.7`, `cli`), when known.
    pub front_end: String,
}

impl Environment {
    pub fn detect(workers: usize, front_end: &str) -> Environment {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let host = read("/proc/sys/kernel/hostname")
            .or_else(|| read("/etc/hostname"))
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let cpu_model = read("/proc/cpuinfo")
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = read("/proc/sys/kernel/osrelease").map(|k| format!(" {}", k.trim())).unwrap_or_default();
        Environment {
            host,
            os: format!("{}{kernel}", std::env::consts::OS),
            arch: std::env::consts::ARCH.to_string(),
            cpu_model,
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            workers,
            horde_version: env!("CARGO_PKG_VERSION").to_string(),
            front_end: front_end.to_string(),
        }
    }
}

impl Summary {
    /// The summary of everything in `totals` so far.
    pub fn from_totals(totals: &Totals, status: RunStatus, plan: &Plan, environment: &Environment) -> Summary {
        let options = SummaryOptions {
            percentiles: plan.options.percentiles.clone(),
            response_time_bounds_ms: plan.options.response_time_bounds_ms,
        };
        let seconds = totals.measured().as_secs_f64();
        let global = totals.global().stats("Global", seconds, &options);
        let requests = redirects_after_their_request(
            totals.requests.iter().map(|(name, r)| r.stats(name, seconds, &options)).collect(),
        );
        let groups = totals.groups.iter().map(|(name, g)| g.stats(name, &options)).collect();
        let all_errors = totals.errors.values().map(|record| record.count).sum::<u64>().max(1) as f64;
        let mut errors: Vec<ErrorSummary> = totals
            .errors
            .iter()
            .map(|(key, record)| ErrorSummary {
                kind: key.kind.to_string(),
                request: key.request.to_string(),
                message: record.message.clone(),
                count: record.count,
                percent: 100.0 * record.count as f64 / all_errors,
            })
            .collect();
        errors.sort_by(|a, b| {
            b.count.cmp(&a.count).then_with(|| a.request.cmp(&b.request)).then_with(|| a.message.cmp(&b.message))
        });
        let started_at_unix_ms =
            totals.started_at.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        Summary {
            summary_version: SUMMARY_VERSION,
            run: RunInfo {
                name: plan.name.clone(),
                status: status.as_str().to_string(),
                stop_reason: totals.stop_reason.clone(),
                started_at: rfc3339(started_at_unix_ms),
                started_at_unix_ms,
                duration_ms: totals.elapsed.as_millis() as u64,
                warmup_ms: totals.warmup.as_millis() as u64,
                horde_version: env!("CARGO_PKG_VERSION").to_string(),
            },
            global,
            requests,
            groups,
            errors,
            users: UserStats {
                started: totals.users_started,
                finished: totals.users_finished,
                interrupted: totals.users_interrupted,
                active: totals.users_active,
                replacements_held_back: totals.replacements_held_back,
            },
            scheduling: SchedulingStats {
                scheduled_starts: totals.start_lag_us.len(),
                late_starts: totals.late_starts,
                late_start_threshold_us: plan.options.late_start_threshold_us,
                start_lag: LatencyStats::from_histogram(&totals.start_lag_us, &options.percentiles),
            },
            connections: ConnectionStats {
                opened: totals.connections.opened,
                closed_by_server_while_idle: totals.connections.closed_while_idle,
                retried_on_fresh_connection: totals.connections.retried,
                http2: totals.connections.http2,
                http2_declined_by_server: totals.connections.http2_declined,
                websockets: totals.connections.websockets,
                event_streams: totals.connections.event_streams,
                messages_sent: totals.connections.messages_sent,
                messages_received: totals.connections.messages_received,
            },
            generator: {
                let cpu = totals.generator_cpu.unwrap_or_default();
                // Workers beyond the cores cannot all be busy at once.
                let threads = totals.workers().min(environment.cores).max(1);
                let capacity = totals.elapsed.as_secs_f64() * threads as f64;
                GeneratorStats {
                    cpu_ms: cpu.as_millis() as u64,
                    busy: if capacity > 0.0 { cpu.as_secs_f64() / capacity } else { 0.0 },
                    session_functions: totals.session_functions.map(|(calls, seconds)| SessionFunctionStats {
                        calls,
                        total_ms: seconds * 1e3,
                        mean_us: if calls > 0 { seconds * 1e6 / calls as f64 } else { 0.0 },
                    }),
                }
            },
            machines: totals.machines.clone(),
            couchdb: totals.couchdb_reports(),
            sql: totals.sql_phases.clone(),
            thresholds: totals.thresholds.clone(),
            warnings: horde_metrics::many_rows_warning(totals.requests.len()).into_iter().collect(),
            environment: environment.clone(),
            plan: plan.clone(),
        }
    }

    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Summary)).expect("schema serializes")
    }
}

/// Rows in order of first appearance, except that `login Redirect 1` follows `login`.
fn redirects_after_their_request(rows: Vec<RequestStats>) -> Vec<RequestStats> {
    let parent_of = |name: &str| name.rsplit_once(" Redirect ").map(|(parent, _)| parent.to_string());
    let (hops, mut ordered): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| parent_of(&r.name).is_some());
    for hop in hops {
        let parent = parent_of(&hop.name).unwrap_or_default();
        let position = ordered
            .iter()
            .rposition(|r| r.name == parent || parent_of(&r.name).as_deref() == Some(parent.as_str()))
            .map_or(ordered.len(), |i| i + 1);
        ordered.insert(position, hop);
    }
    ordered
}

/// Milliseconds since the epoch as `2026-11-21T06:21:00.123Z`.
pub fn rfc3339(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        unix_ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_utc_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_795_238_461_123), "2026-11-21T05:21:01.123Z");
    }

    /// The committed schema must describe the types. HORDE_UPDATE_SCHEMAS=1 rewrites it.
    #[test]
    fn committed_json_schema_matches_the_types() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/summary.schema.json");
        let generated = serde_json::to_string_pretty(&Summary::json_schema()).unwrap() + "\n";
        if std::env::var_os("HORDE_UPDATE_SCHEMAS").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/summary.schema.json is stale: run HORDE_UPDATE_SCHEMAS=1 cargo test -p horde-report"
        );
    }
}

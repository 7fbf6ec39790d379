//! YCSB's core workloads on CQL (`horde cql`): the table every paper and vendor compares on
//! (`usertable`: a text key `y_id` and `field0`..`field9` of 100 random characters), a load
//! phase that inserts the records, and a run phase whose operations are drawn in the
//! workload's proportions, on keys chosen as YCSB chooses them (zipfian, uniform, latest).
//!
//! A `cql_ycsb` step does one operation: the scenario's loop, the run's budget
//! (`max_requests`), its duration and its throttle do the rest, as for any step.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::cql::Consistency;
use crate::validate::Validator;

/// One operation of a YCSB workload on the plan's cluster.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct YcsbStep {
    pub phase: YcsbPhase,
    /// The table, in the cluster's keyspace: `y_id text PRIMARY KEY, field0 text, ...`.
    #[serde(default = "default_table")]
    pub table: String,
    /// Records the load phase inserts, and the run phase's keys (`recordcount`).
    pub record_count: u64,
    /// The first record's number (`insertstart`): machines loading one table in parts each
    /// take their own range.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub insert_start: u64,
    /// Operations the run phase expects (`operationcount`): the zipfian chooser keeps room
    /// for the keys its inserts add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_count: Option<u64>,
    /// One of YCSB's core workloads (`a` to `f`): its mix of operations and its key chooser,
    /// for `proportions` and `request_distribution` left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<YcsbWorkload>,
    /// The run phase's mix of operations (see [`YcsbStep::mix`]).
    #[serde(default, skip_serializing_if = "YcsbProportions::is_empty")]
    pub proportions: YcsbProportions,
    /// How the run phase chooses the key of a read, update, scan or read-modify-write: by
    /// default the workload's, else zipfian (see [`YcsbStep::key_distribution`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_distribution: Option<YcsbDistribution>,
    #[serde(default = "default_field_count")]
    pub field_count: u32,
    /// Characters of each field's random value.
    #[serde(default = "default_field_length")]
    pub field_length: u32,
    /// A read reads every field (`readallfields`); otherwise one, chosen at random.
    #[serde(default = "default_true")]
    pub read_all_fields: bool,
    /// An update writes every field (`writeallfields`); otherwise one, chosen at random.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub write_all_fields: bool,
    /// A scan reads from 1 to this many records, uniformly (`maxscanlength`).
    #[serde(default = "default_max_scan_length")]
    pub max_scan_length: u32,
    /// Reads' and writes' consistency; without it, the cluster's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}

/// YCSB's two commands: `load` inserts the records, `run` runs the workload on them.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum YcsbPhase {
    Load,
    Run,
}

/// The share of each operation in the run phase (any scale: they are divided by their sum).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct YcsbProportions {
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub read: f64,
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub update: f64,
    /// A new record, numbered after the last one.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub insert: f64,
    /// Records from a key on, in token order.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub scan: f64,
    /// A read, then an update of the same record, timed as one.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub read_modify_write: f64,
}

/// YCSB's key choosers.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum YcsbDistribution {
    /// A few records are hot (zipfian, constant 0.99), scattered over the key space by a hash.
    #[default]
    Zipfian,
    Uniform,
    /// The newest records are the hottest (workload D).
    Latest,
}

impl YcsbDistribution {
    pub fn as_str(self) -> &'static str {
        match self {
            YcsbDistribution::Zipfian => "zipfian",
            YcsbDistribution::Uniform => "uniform",
            YcsbDistribution::Latest => "latest",
        }
    }
}

/// YCSB's core workloads, A to F, as their property files define them.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
pub enum YcsbWorkload {
    /// Update heavy: 50 % reads, 50 % updates (a session store).
    #[serde(rename = "a")]
    A,
    /// Read mostly: 95 % reads, 5 % updates (photo tagging).
    #[serde(rename = "b")]
    B,
    /// Read only (a user profile cache).
    #[serde(rename = "c")]
    C,
    /// Read latest: 95 % reads, 5 % inserts, the newest records the hottest (status updates).
    #[serde(rename = "d")]
    D,
    /// Short ranges: 95 % scans of up to 100 records, 5 % inserts (threaded conversations).
    #[serde(rename = "e")]
    E,
    /// Read-modify-write: 50 % reads, 50 % read-modify-writes (a user database).
    #[serde(rename = "f")]
    F,
}

impl YcsbStep {
    /// The run phase's mix: `proportions` when given, else the workload's.
    pub fn mix(&self) -> YcsbProportions {
        match self.workload {
            Some(workload) if self.proportions.is_empty() => workload.proportions(),
            _ => self.proportions,
        }
    }

    /// The run phase's key chooser: `request_distribution` when given, else the workload's,
    /// else zipfian (YCSB's default).
    pub fn key_distribution(&self) -> YcsbDistribution {
        self.request_distribution.or(self.workload.map(YcsbWorkload::distribution)).unwrap_or_default()
    }
}

impl YcsbWorkload {
    pub const ALL: [YcsbWorkload; 6] =
        [YcsbWorkload::A, YcsbWorkload::B, YcsbWorkload::C, YcsbWorkload::D, YcsbWorkload::E, YcsbWorkload::F];

    pub fn parse(name: &str) -> Option<YcsbWorkload> {
        let name = name.trim().to_ascii_lowercase();
        let name = name.strip_prefix("workload").unwrap_or(&name);
        YcsbWorkload::ALL.into_iter().find(|w| w.letter().eq_ignore_ascii_case(name))
    }

    pub fn letter(self) -> &'static str {
        match self {
            YcsbWorkload::A => "a",
            YcsbWorkload::B => "b",
            YcsbWorkload::C => "c",
            YcsbWorkload::D => "d",
            YcsbWorkload::E => "e",
            YcsbWorkload::F => "f",
        }
    }

    pub fn proportions(self) -> YcsbProportions {
        let mix = |read, update, insert, scan, read_modify_write| YcsbProportions {
            read,
            update,
            insert,
            scan,
            read_modify_write,
        };
        match self {
            YcsbWorkload::A => mix(0.5, 0.5, 0.0, 0.0, 0.0),
            YcsbWorkload::B => mix(0.95, 0.05, 0.0, 0.0, 0.0),
            YcsbWorkload::C => mix(1.0, 0.0, 0.0, 0.0, 0.0),
            YcsbWorkload::D => mix(0.95, 0.0, 0.05, 0.0, 0.0),
            YcsbWorkload::E => mix(0.0, 0.0, 0.05, 0.95, 0.0),
            YcsbWorkload::F => mix(0.5, 0.0, 0.0, 0.0, 0.5),
        }
    }

    pub fn distribution(self) -> YcsbDistribution {
        match self {
            YcsbWorkload::D => YcsbDistribution::Latest,
            _ => YcsbDistribution::Zipfian,
        }
    }
}

impl YcsbProportions {
    /// No operation given a share.
    pub fn is_empty(&self) -> bool {
        self.named().iter().all(|(_, share)| *share == 0.0)
    }

    /// Each operation's share, named as YCSB's report names its operations.
    pub fn named(&self) -> [(&'static str, f64); 5] {
        [
            ("READ", self.read),
            ("UPDATE", self.update),
            ("INSERT", self.insert),
            ("SCAN", self.scan),
            ("READ-MODIFY-WRITE", self.read_modify_write),
        ]
    }
}

fn default_table() -> String {
    "usertable".to_string()
}

fn default_field_count() -> u32 {
    10
}

fn default_field_length() -> u32 {
    100
}

fn default_max_scan_length() -> u32 {
    100
}

fn default_true() -> bool {
    true
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

fn is_zero_f64(value: &f64) -> bool {
    *value == 0.0
}

/// The most fields a record may have: YCSB's tables have ten; a hundred is already unusual.
pub const MAX_FIELDS: u32 = 1000;

/// What is wrong with a table name the statements write unquoted, if anything.
pub fn cql_table_name_problem(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    match chars.next() {
        None => Some("empty"),
        Some(first) if !first.is_ascii_alphabetic() => Some("a table name starts with a letter"),
        _ if name.len() > 48 => Some("a table name has at most 48 characters"),
        _ if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            Some("a table name has only letters, digits and _")
        }
        _ => None,
    }
}

pub(crate) fn validate_step(v: &mut Validator, path: &str, step: &YcsbStep) {
    if let Some(problem) = cql_table_name_problem(&step.table) {
        v.error(format!("{path}.table"), format!("{:?}: {problem}", step.table));
    }
    if step.record_count == 0 {
        v.error(format!("{path}.record_count"), "must be at least 1");
    }
    if step.insert_start.checked_add(step.record_count).is_none() {
        v.error(format!("{path}.insert_start"), "insert_start + record_count is beyond 2^64");
    }
    if step.field_count == 0 || step.field_count > MAX_FIELDS {
        v.error(format!("{path}.field_count"), format!("must be from 1 to {MAX_FIELDS}"));
    }
    if step.field_length == 0 {
        v.error(format!("{path}.field_length"), "must be at least 1");
    }
    if step.max_scan_length == 0 {
        v.error(format!("{path}.max_scan_length"), "must be at least 1");
    }
    if step.workload.is_some() && !step.proportions.is_empty() {
        v.error(
            format!("{path}.proportions"),
            "give a workload or proportions, not both (a workload is its proportions and key chooser)",
        );
    }
    if step.phase == YcsbPhase::Run {
        let named = step.mix().named();
        for (name, share) in named {
            if !share.is_finite() || share < 0.0 {
                v.error(
                    format!("{path}.proportions.{}", name.to_ascii_lowercase().replace('-', "_")),
                    "must be a number from 0 up",
                );
            }
        }
        if named.iter().map(|(_, share)| share).sum::<f64>() <= 0.0 {
            v.error(format!("{path}.proportions"), "the run phase needs at least one operation with a share above 0");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_workloads_have_ycsbs_mixes() {
        for workload in YcsbWorkload::ALL {
            let sum: f64 = workload.proportions().named().iter().map(|(_, share)| share).sum();
            assert!((sum - 1.0).abs() < 1e-9, "workload {}", workload.letter());
        }
        assert_eq!(YcsbWorkload::parse("workloada"), Some(YcsbWorkload::A));
        assert_eq!(YcsbWorkload::parse("F"), Some(YcsbWorkload::F));
        assert_eq!(YcsbWorkload::parse("g"), None);
        assert_eq!(YcsbWorkload::D.distribution(), YcsbDistribution::Latest);
    }

    #[test]
    fn table_names_are_plain_identifiers() {
        assert_eq!(cql_table_name_problem("usertable"), None);
        assert!(cql_table_name_problem("user table").is_some());
        assert!(cql_table_name_problem("1t").is_some());
        assert!(cql_table_name_problem("").is_some());
    }
}

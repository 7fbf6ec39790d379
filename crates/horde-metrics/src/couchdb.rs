//! Iron Cushion's accounting for the CouchDB steps: each virtual user (Iron Cushion's
//! "connection") adds up where its time went, and the report shows those per-connection totals
//! as {min, max, median, sd} across connections, with Iron Cushion's rates.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Which of Iron Cushion's two steps a record belongs to.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CouchdbStepKind {
    BulkInsert,
    Crud,
}

/// The four CRUD operations, in the order of every per-operation array.
pub const CRUD_OPERATIONS: [&str; 4] = ["create", "read", "update", "delete"];

/// One virtual user's pass through one CouchDB step. Times are microseconds.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ConnectionPhases {
    #[serde(serialize_with = "step_as_text", deserialize_with = "step_from_text")]
    pub step: Arc<str>,
    pub kind: CouchdbStepKind,
    /// From the start of the user's first operation to the end of its last.
    pub time_taken_us: u64,
    /// Generating and encoding the JSON sent, decoding the JSON received.
    pub local_processing_us: u64,
    pub send_us: u64,
    /// Waiting for the first byte of each response, per operation (bulk insert: index 0).
    pub remote_us: [u64; 4],
    pub receive_us: u64,
    /// Request and response bodies only: no HTTP headers.
    pub json_bytes_sent: u64,
    pub json_bytes_received: u64,
    /// Documents of the operations that succeeded, per operation (bulk insert: index 0 holds
    /// the documents inserted).
    pub documents: [u64; 4],
}

fn step_as_text<S: serde::Serializer>(step: &Arc<str>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(step)
}

fn step_from_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Arc<str>, D::Error> {
    String::deserialize(deserializer).map(Arc::from)
}

/// Min, max, median and standard deviation of one per-connection total, in seconds, as Iron
/// Cushion prints them (`sd` over the population of connections).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Default)]
pub struct SpreadSecs {
    pub min: f64,
    pub max: f64,
    pub median: f64,
    pub sd: f64,
}

impl SpreadSecs {
    pub fn of(values_us: impl Iterator<Item = u64>) -> SpreadSecs {
        let mut values: Vec<f64> = values_us.map(|us| us as f64 / 1e6).collect();
        if values.is_empty() {
            return SpreadSecs::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 };
        let mean = values.iter().sum::<f64>() / n as f64;
        let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        SpreadSecs { min: values[0], max: values[n - 1], median, sd: variance.sqrt() }
    }
}

/// Iron Cushion's results of one step, with its names, in seconds and docs/sec; then what
/// horde adds (connections, documents per operation).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CouchdbStepReport {
    pub name: String,
    /// `bulk_insert` or `crud`.
    pub kind: String,
    /// Virtual users that completed the step (Iron Cushion's connections).
    pub connections: u64,
    /// The slowest connection's time through the step.
    pub time_taken: f64,
    pub total_json_bytes_sent: u64,
    pub total_json_bytes_received: u64,
    pub local_processing: SpreadSecs,
    pub send_data: SpreadSecs,
    /// Bulk insert: waiting for the start of responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_processing: Option<SpreadSecs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_create_processing: Option<SpreadSecs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_read_processing: Option<SpreadSecs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_update_processing: Option<SpreadSecs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_delete_processing: Option<SpreadSecs>,
    pub receive_data: SpreadSecs,
    /// Bulk insert: documents per second of remote processing, summed over connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_processing_rate: Option<f64>,
    /// Bulk insert: documents per second of send + remote + receive, summed over connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_insert_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_create_processing_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_read_processing_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_update_processing_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_delete_processing_rate: Option<f64>,
    /// Documents of successful operations: `inserted` for bulk insert; `create`, `read`,
    /// `update`, `delete` for CRUD.
    pub documents: std::collections::BTreeMap<String, u64>,
}

/// Iron Cushion's rate: each connection's documents over its own time, summed over
/// connections (what its code computes; its README words it as total over summed times).
fn summed_rate<'a>(records: &'a [ConnectionPhases], docs_and_time: impl Fn(&'a ConnectionPhases) -> (u64, u64)) -> f64 {
    records
        .iter()
        .map(|r| {
            let (docs, us) = docs_and_time(r);
            if us == 0 {
                0.0
            } else {
                docs as f64 * 1e6 / us as f64
            }
        })
        .sum()
}

impl CouchdbStepReport {
    /// The report of one step from the records of every connection that went through it.
    pub fn from_connections(name: &str, kind: CouchdbStepKind, records: &[ConnectionPhases]) -> CouchdbStepReport {
        let spread = |f: &dyn Fn(&ConnectionPhases) -> u64| SpreadSecs::of(records.iter().map(f));
        let bulk = kind == CouchdbStepKind::BulkInsert;
        let crud = |i: usize| (!bulk).then(|| spread(&|r| r.remote_us[i]));
        let crud_rate = |i: usize| (!bulk).then(|| summed_rate(records, |r| (r.documents[i], r.remote_us[i])));
        let documents = if bulk {
            [("inserted".to_string(), records.iter().map(|r| r.documents[0]).sum())].into()
        } else {
            CRUD_OPERATIONS
                .iter()
                .enumerate()
                .map(|(i, op)| (op.to_string(), records.iter().map(|r| r.documents[i]).sum()))
                .collect()
        };
        CouchdbStepReport {
            name: name.to_string(),
            kind: if bulk { "bulk_insert" } else { "crud" }.to_string(),
            connections: records.len() as u64,
            time_taken: records.iter().map(|r| r.time_taken_us).max().unwrap_or(0) as f64 / 1e6,
            total_json_bytes_sent: records.iter().map(|r| r.json_bytes_sent).sum(),
            total_json_bytes_received: records.iter().map(|r| r.json_bytes_received).sum(),
            local_processing: spread(&|r| r.local_processing_us),
            send_data: spread(&|r| r.send_us),
            remote_processing: bulk.then(|| spread(&|r| r.remote_us[0])),
            remote_create_processing: crud(0),
            remote_read_processing: crud(1),
            remote_update_processing: crud(2),
            remote_delete_processing: crud(3),
            receive_data: spread(&|r| r.receive_us),
            remote_processing_rate: bulk.then(|| summed_rate(records, |r| (r.documents[0], r.remote_us[0]))),
            local_insert_rate: bulk
                .then(|| summed_rate(records, |r| (r.documents[0], r.send_us + r.remote_us[0] + r.receive_us))),
            remote_create_processing_rate: crud_rate(0),
            remote_read_processing_rate: crud_rate(1),
            remote_update_processing_rate: crud_rate(2),
            remote_delete_processing_rate: crud_rate(3),
            documents,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(remote_s: u64, docs: u64) -> ConnectionPhases {
        ConnectionPhases {
            step: "bulk".into(),
            kind: CouchdbStepKind::BulkInsert,
            time_taken_us: remote_s * 1_000_000 + 500_000,
            local_processing_us: 100_000,
            send_us: 200_000,
            remote_us: [remote_s * 1_000_000, 0, 0, 0],
            receive_us: 300_000,
            json_bytes_sent: 1000,
            json_bytes_received: 10,
            documents: [docs, 0, 0, 0],
        }
    }

    #[test]
    fn spread_is_iron_cushions_population_statistics() {
        let s = SpreadSecs::of([4_000_000u64, 1_000_000, 3_000_000, 2_000_000].into_iter());
        assert_eq!((s.min, s.max, s.median), (1.0, 4.0, 2.5));
        assert!((s.sd - 1.25f64.sqrt()).abs() < 1e-12);
        assert_eq!(SpreadSecs::of([7_000_000u64, 1_000_000, 2_000_000].into_iter()).median, 2.0);
    }

    #[test]
    fn rates_sum_each_connections_own_rate() {
        // Two connections of 1,000 documents: 10 s and 20 s of remote processing.
        let report = CouchdbStepReport::from_connections(
            "bulk",
            CouchdbStepKind::BulkInsert,
            &[connection(10, 1000), connection(20, 1000)],
        );
        assert!((report.remote_processing_rate.unwrap() - 150.0).abs() < 1e-9);
        // send + remote + receive: 10.5 s and 20.5 s.
        let expected = 1000.0 / 10.5 + 1000.0 / 20.5;
        assert!((report.local_insert_rate.unwrap() - expected).abs() < 1e-9);
        assert_eq!(report.time_taken, 20.5);
        assert_eq!(report.total_json_bytes_sent, 2000);
        assert_eq!(report.documents["inserted"], 2000);
        assert!(report.remote_create_processing.is_none());
    }
}

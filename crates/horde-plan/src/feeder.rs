//! Feeders: where the records of `feed` steps come from, and in what order they are taken.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A named source of records.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Feeder {
    /// What `feed` steps call it.
    pub name: String,
    pub source: FeederSource,
    #[serde(default, skip_serializing_if = "FeederStrategy::is_queue")]
    pub strategy: FeederStrategy,
    /// What a `feed` does once a queue is used up.
    #[serde(default, skip_serializing_if = "OnFeederExhausted::is_ko")]
    pub on_exhausted: OnFeederExhausted,
    /// Read the file a batch of this many records at a time as they are taken, instead of
    /// all at once: for files larger than memory (Gatling's `batch`). `random` and `shuffle`
    /// then draw within each batch. Files only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FeederSource {
    /// Comma-separated values, a header line naming the columns (RFC 4180 quoting).
    Csv { path: String },
    /// Tab-separated values, a header line naming the columns.
    Tsv { path: String },
    /// Semicolon-separated values, a header line naming the columns.
    Ssv { path: String },
    /// A JSON array of objects.
    JsonFile { path: String },
    /// One JSON object per line.
    Jsonl { path: String },
    /// Records written in the plan.
    Inline { records: Vec<serde_json::Map<String, serde_json::Value>> },
}

impl FeederSource {
    /// The file it reads, if any.
    pub fn path(&self) -> Option<&str> {
        match self {
            FeederSource::Csv { path }
            | FeederSource::Tsv { path }
            | FeederSource::Ssv { path }
            | FeederSource::JsonFile { path }
            | FeederSource::Jsonl { path } => Some(path),
            FeederSource::Inline { .. } => None,
        }
    }
}

/// In what order records are taken. Whatever the order, the file is read once per run and
/// its records shared by every virtual user of every worker.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum FeederStrategy {
    /// In order, each record once across the whole run; then `on_exhausted`.
    #[default]
    Queue,
    /// In order, starting over at the end.
    Circular,
    /// A record drawn at random each time (records repeat).
    Random,
    /// In a random order (the run's seed decides it), each record once; then `on_exhausted`.
    Shuffle,
}

impl FeederStrategy {
    pub fn is_queue(&self) -> bool {
        *self == FeederStrategy::Queue
    }

    /// Whether records run out.
    pub fn runs_out(self) -> bool {
        matches!(self, FeederStrategy::Queue | FeederStrategy::Shuffle)
    }
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnFeederExhausted {
    /// The `feed` fails, a KO `feeder_exhausted` in the feeder's row, and the user stops.
    #[default]
    Ko,
    /// The run stops, gracefully, and the summary says which feeder ran out.
    StopRun,
}

impl OnFeederExhausted {
    pub fn is_ko(&self) -> bool {
        *self == OnFeederExhausted::Ko
    }
}

//! What a share of a distributed run (one process running its execution segment) sends its
//! coordinator: that it is ready, then one message per snapshot interval with everything its
//! threads measured in it, already merged ([`Snapshot::merge`]). The coordinator decodes each
//! into the [`Snapshot`] it came from and merges it as it merges its own workers' (HDR `add` of
//! identically configured histograms: exact, bucket for bucket).
//!
//! The encoding is JSON, with each histogram in HdrHistogram's standard compressed form (V2 +
//! deflate, base64: what histograms.hlog holds). A distribution that still keeps its few values
//! as they are sends them as numbers, so the coordinator holds no histogram for a row hit a few
//! times an interval either. The message is internal: both ends must be the same horde version,
//! which decoding checks.

use crate::couchdb::ConnectionPhases;
use crate::recorder::{ConnectionEvents, Distribution, ErrorKey, ErrorRecord, GroupRecorder, Recorder, Snapshot};
use base64::Engine as _;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;

/// The version of the message's layout; with the horde version, what both ends must agree on.
const WIRE_FORMAT: u32 = 1;
const HORDE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What a share sends its coordinator.
#[derive(Debug, Clone, PartialEq)]
pub enum ShareMessage {
    /// The share has built its threads and users and sent nothing yet: it waits for its start.
    Ready(ShareReady),
    /// One snapshot interval of the share.
    Interval(Box<ShareInterval>),
    /// A feed of the share found its row grants used up: its takes so far, sent at once
    /// rather than with the next interval, for the coordinator to grant more now.
    RowsWanted(ShareRowsWanted),
    /// Records of the run's request log (`--request-log`), whole lines in the log's format,
    /// sent before the interval that counts them.
    Requests(ShareRequests),
}

/// Request log records of a share, as its workers wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareRequests {
    pub share: usize,
    pub attempt: u32,
    /// Whole lines of the log's format (no header).
    pub records: Vec<u8>,
}

/// A share's takes of each feeder under row grants, between two intervals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareRowsWanted {
    pub share: usize,
    pub attempt: u32,
    /// Its takes of each of the plan's feeders so far, then of each granted run-wide counter.
    pub rows_taken: Vec<u64>,
    /// How many takes so far found the grant used up.
    pub row_waits: u64,
}

/// A share that is ready to start, and where it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShareReady {
    /// The share's index in the run's segment sequence.
    pub share: usize,
    /// 0, then 1, 2... for a share run again elsewhere: a coordinator ignores older attempts.
    pub attempt: u32,
    /// Its execution segment (`FROM:TO`).
    pub segment: String,
    pub pid: u32,
    pub host: String,
    /// Worker threads of the share.
    pub threads: usize,
}

/// One snapshot interval of a share, merged across its threads.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareInterval {
    pub share: usize,
    pub attempt: u32,
    /// `worker` is the share's index once decoded (it is not sent): the coordinator merges
    /// shares as a run merges its workers.
    pub snapshot: Snapshot,
    /// CPU time the share's process used since its run started, when known.
    pub cpu_ns: Option<u64>,
    /// Why a scenario of the share stopped the run (`stop_load_generator`, a feeder that ran
    /// out with `stop_run`): the coordinator stops every share.
    pub stop_reason: Option<String>,
    /// How long after the start instant its coordinator gave the share let its users go, on
    /// its own clock (the share's part of the start skew), when known.
    pub started_late_ns: Option<u64>,
    /// The share's process's peak resident memory since the share began, when known.
    pub peak_memory_bytes: Option<u64>,
    /// Why the share stopped itself as no longer the coordinator's (its lease lapsed: it had
    /// not heard the coordinator's beat): the coordinator counts it lost.
    pub fenced: Option<String>,
    /// With the share's last interval: what its whole interval log (this attempt's) counted,
    /// for the coordinator to check its merge against.
    pub log: Option<ShareLog>,
    /// A replacement's takeover, in ms after the run's start on its own clock: when it began
    /// the lost share's schedule (later than it was told if it was ready only then).
    pub resumed_after_ms: Option<u64>,
    /// Under row grants: the share's takes of each of the plan's feeders so far, then of each
    /// granted run-wide counter (empty otherwise), for the coordinator's next grants.
    pub rows_taken: Vec<u64>,
    /// Under row grants: how many takes so far found the grant used up and waited.
    pub row_waits: u64,
}

/// What a share sent over a run: its intervals and the requests they counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ShareLog {
    pub intervals: u64,
    pub requests: u64,
}

/// Why a message could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// Not JSON of the expected shape.
    Malformed(String),
    /// Sent by another horde version or message layout.
    Version { theirs: String, ours: String },
    /// A histogram that does not decode, or not at the resolution its measure has.
    Histogram { measure: String, problem: String },
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Malformed(problem) => write!(f, "a share's message is malformed: {problem}"),
            WireError::Version { theirs, ours } => write!(
                f,
                "a share runs horde {theirs}, the coordinator horde {ours}: install the same version everywhere"
            ),
            WireError::Histogram { measure, problem } => {
                write!(f, "a share's message has a bad histogram ({measure}): {problem}")
            }
        }
    }
}

impl std::error::Error for WireError {}

impl ShareMessage {
    pub fn encode(&self) -> Vec<u8> {
        let mut histograms = HistogramCodec::new();
        let body = match self {
            ShareMessage::Ready(ready) => WireBody::Ready(ready.clone()),
            ShareMessage::RowsWanted(wanted) => WireBody::RowsWanted(wanted.clone()),
            ShareMessage::Requests(requests) => WireBody::Requests(WireRequests::from(requests)),
            ShareMessage::Interval(interval) => {
                WireBody::Interval(Box::new(WireInterval::from(interval, &mut histograms)))
            }
        };
        let message = WireMessage { format: WIRE_FORMAT, horde: HORDE_VERSION.to_string(), body };
        serde_json::to_vec(&message).expect("a share's message always serializes")
    }

    pub fn decode(bytes: &[u8]) -> Result<ShareMessage, WireError> {
        // The version first, so that another version's layout is named as such.
        let version: WireVersion = serde_json::from_slice(bytes).map_err(|e| WireError::Malformed(e.to_string()))?;
        if version.format != WIRE_FORMAT || version.horde != HORDE_VERSION {
            return Err(WireError::Version {
                theirs: format!("{} (message format {})", version.horde, version.format),
                ours: format!("{HORDE_VERSION} (message format {WIRE_FORMAT})"),
            });
        }
        let message: WireMessage = serde_json::from_slice(bytes).map_err(|e| WireError::Malformed(e.to_string()))?;
        let mut histograms = HistogramCodec::new();
        Ok(match message.body {
            WireBody::Ready(ready) => ShareMessage::Ready(ready),
            WireBody::RowsWanted(wanted) => ShareMessage::RowsWanted(wanted),
            WireBody::Requests(requests) => ShareMessage::Requests(requests.decode()?),
            WireBody::Interval(interval) => ShareMessage::Interval(Box::new(interval.decode(&mut histograms)?)),
        })
    }
}

#[derive(Deserialize)]
struct WireVersion {
    format: u32,
    horde: String,
}

#[derive(Serialize, Deserialize)]
struct WireMessage {
    format: u32,
    horde: String,
    #[serde(flatten)]
    body: WireBody,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBody {
    Ready(ShareReady),
    Interval(Box<WireInterval>),
    RowsWanted(ShareRowsWanted),
    Requests(WireRequests),
}

/// Request log records on the wire: deflated (a log's lines repeat their names and URLs, and
/// shrink several times), then base64 in the JSON message.
#[derive(Serialize, Deserialize)]
struct WireRequests {
    share: usize,
    attempt: u32,
    deflated: String,
}

impl WireRequests {
    fn from(requests: &ShareRequests) -> WireRequests {
        let mut deflater =
            flate2::write::ZlibEncoder::new(Vec::with_capacity(requests.records.len() / 4 + 64), Compression::fast());
        std::io::Write::write_all(&mut deflater, &requests.records).expect("deflating into memory does not fail");
        let deflated = deflater.finish().expect("deflating into memory does not fail");
        WireRequests {
            share: requests.share,
            attempt: requests.attempt,
            deflated: base64::engine::general_purpose::STANDARD.encode(deflated),
        }
    }

    fn decode(self) -> Result<ShareRequests, WireError> {
        let malformed = |problem: String| WireError::Malformed(format!("request log records: {problem}"));
        let deflated =
            base64::engine::general_purpose::STANDARD.decode(self.deflated).map_err(|e| malformed(e.to_string()))?;
        let mut records = Vec::with_capacity(deflated.len() * 4);
        std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&deflated[..]), &mut records)
            .map_err(|e| malformed(e.to_string()))?;
        Ok(ShareRequests { share: self.share, attempt: self.attempt, records })
    }
}

/// HdrHistogram's cookie of a V2 histogram compressed with deflate (its standard compressed
/// form), followed by the compressed length and the zlib stream of the V2 encoding.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

/// Serializes and deserializes histograms in HdrHistogram's standard compressed form, reusing
/// its buffers and its deflate and inflate states across a message's histograms: making them
/// afresh for each (as `V2DeflateSerializer` and `Deserializer` do) was most of the cost of a
/// message of a few rows (0.5 ms a row, bench wire_merge).
struct HistogramCodec {
    serializer: V2Serializer,
    deserializer: Deserializer,
    compress: Compress,
    decompress: Decompress,
    plain: Vec<u8>,
    framed: Vec<u8>,
}

impl HistogramCodec {
    fn new() -> HistogramCodec {
        HistogramCodec {
            serializer: V2Serializer::new(),
            deserializer: Deserializer::new(),
            // Fast compression: a message is sent once and read once, within the second. Against
            // the default level (bench wire_merge, 100 busy rows): half the share's CPU to encode
            // (4.9 against 9.7 ms), a third more bytes (210 against 155 KB).
            compress: Compress::new(Compression::fast(), true),
            decompress: Decompress::new(true),
            plain: Vec::new(),
            framed: Vec::new(),
        }
    }

    fn encode(&mut self, histogram: &Histogram<u64>) -> String {
        self.plain.clear();
        self.serializer.serialize(histogram, &mut self.plain).expect("an in-memory histogram always serializes");
        self.framed.clear();
        self.framed.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.framed.extend_from_slice(&[0; 4]);
        self.framed.reserve(self.plain.len() / 2 + 64);
        self.compress.reset();
        loop {
            let consumed = self.compress.total_in() as usize;
            let status = self
                .compress
                .compress_vec(&self.plain[consumed..], &mut self.framed, FlushCompress::Finish)
                .expect("deflating into memory does not fail");
            if status == flate2::Status::StreamEnd {
                break;
            }
            self.framed.reserve(self.framed.capacity().max(64));
        }
        let length = (self.framed.len() - 8) as u32;
        self.framed[4..8].copy_from_slice(&length.to_be_bytes());
        base64::engine::general_purpose::STANDARD.encode(&self.framed)
    }

    /// A histogram at `significant_figures`, auto-resizing like every histogram horde records
    /// into (a deserialized one is not), so that merging more into it never fails.
    fn decode(&mut self, text: &str, significant_figures: u8, measure: &str) -> Result<Histogram<u64>, WireError> {
        let problem = |problem: String| WireError::Histogram { measure: measure.to_string(), problem };
        self.framed.clear();
        base64::engine::general_purpose::STANDARD
            .decode_vec(text, &mut self.framed)
            .map_err(|e| problem(e.to_string()))?;
        let (Some(cookie), Some(length)) = (self.framed.get(..4), self.framed.get(4..8)) else {
            return Err(problem("shorter than its header".into()));
        };
        if cookie != V2_COMPRESSED_COOKIE.to_be_bytes() {
            return Err(problem("not a compressed V2 histogram".into()));
        }
        let length = u32::from_be_bytes(length.try_into().expect("4 bytes")) as usize;
        let compressed = self.framed.get(8..8 + length).ok_or_else(|| problem("truncated".into()))?;
        self.plain.clear();
        self.decompress.reset(true);
        loop {
            let consumed = self.decompress.total_in() as usize;
            self.plain.reserve(self.plain.capacity().max(4 * compressed.len()).max(256));
            let produced = self.decompress.total_out();
            let status = self
                .decompress
                .decompress_vec(&compressed[consumed..], &mut self.plain, FlushDecompress::None)
                .map_err(|e| problem(e.to_string()))?;
            if status == flate2::Status::StreamEnd {
                break;
            }
            // Neither input taken nor output made: the stream is cut short.
            if self.decompress.total_out() == produced && self.decompress.total_in() as usize == consumed {
                return Err(problem("its deflate stream ends early".into()));
            }
        }
        let mut histogram: Histogram<u64> =
            self.deserializer.deserialize(&mut self.plain.as_slice()).map_err(|e| problem(format!("{e:?}")))?;
        if histogram.sigfig() != significant_figures {
            return Err(problem(format!(
                "{} significant figures where {significant_figures} are recorded",
                histogram.sigfig()
            )));
        }
        histogram.auto(true);
        Ok(histogram)
    }
}

/// A [`Distribution`]: its few values as they are, or its histogram. Absent when empty.
#[derive(Serialize, Deserialize, Default)]
struct WireDistribution {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    values: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hdr: Option<String>,
}

impl WireDistribution {
    fn from(distribution: &Distribution, histograms: &mut HistogramCodec) -> Option<WireDistribution> {
        match &distribution.many {
            Some(histogram) => Some(WireDistribution { values: Vec::new(), hdr: Some(histograms.encode(histogram)) }),
            None if distribution.few.is_empty() => None,
            None => Some(WireDistribution { values: distribution.few.clone(), hdr: None }),
        }
    }

    fn decode(
        wire: Option<WireDistribution>,
        mut empty: Distribution,
        histograms: &mut HistogramCodec,
        measure: &str,
    ) -> Result<Distribution, WireError> {
        let Some(wire) = wire else { return Ok(empty) };
        match wire.hdr {
            Some(text) => {
                let histogram = histograms.decode(&text, empty.significant_figures, measure)?;
                empty.many = Some(Box::new(histogram));
            }
            None => empty.few = wire.values,
        }
        Ok(empty)
    }
}

/// A request row: its name and its [`Recorder`].
#[derive(Serialize, Deserialize)]
struct WireRow {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ok: Option<WireDistribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ko: Option<WireDistribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uncorrected: Option<WireDistribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dns: Option<WireDistribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    connect: Option<WireDistribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tls: Option<WireDistribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    send: Option<WireDistribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wait: Option<WireDistribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    receive: Option<WireDistribution>,
    unsent: u64,
    retried: u64,
    started: u64,
    bytes_sent: u64,
    bytes_received: u64,
    bodies_decoded: u64,
    bytes_decoded: u64,
}

impl WireRow {
    fn from(name: &str, r: &Recorder, h: &mut HistogramCodec) -> WireRow {
        WireRow {
            name: name.to_string(),
            ok: WireDistribution::from(&r.ok, h),
            ko: WireDistribution::from(&r.ko, h),
            uncorrected: WireDistribution::from(&r.uncorrected, h),
            dns: WireDistribution::from(&r.dns, h),
            connect: WireDistribution::from(&r.connect, h),
            tls: WireDistribution::from(&r.tls, h),
            send: WireDistribution::from(&r.send, h),
            wait: WireDistribution::from(&r.wait, h),
            receive: WireDistribution::from(&r.receive, h),
            unsent: r.unsent,
            retried: r.retried,
            started: r.started,
            bytes_sent: r.bytes_sent,
            bytes_received: r.bytes_received,
            bodies_decoded: r.bodies_decoded,
            bytes_decoded: r.bytes_decoded,
        }
    }

    fn decode(self, h: &mut HistogramCodec) -> Result<(Arc<str>, Recorder), WireError> {
        let measure = |what: &str| format!("request {:?}, {what}", self.name);
        let latency = Distribution::latency;
        let phase = Distribution::phase;
        let recorder = Recorder {
            ok: WireDistribution::decode(self.ok, latency(), h, &measure("ok"))?,
            ko: WireDistribution::decode(self.ko, latency(), h, &measure("ko"))?,
            uncorrected: WireDistribution::decode(self.uncorrected, latency(), h, &measure("uncorrected"))?,
            dns: WireDistribution::decode(self.dns, phase(), h, &measure("dns"))?,
            connect: WireDistribution::decode(self.connect, phase(), h, &measure("connect"))?,
            tls: WireDistribution::decode(self.tls, phase(), h, &measure("tls"))?,
            send: WireDistribution::decode(self.send, phase(), h, &measure("send"))?,
            wait: WireDistribution::decode(self.wait, phase(), h, &measure("wait"))?,
            receive: WireDistribution::decode(self.receive, phase(), h, &measure("receive"))?,
            unsent: self.unsent,
            retried: self.retried,
            started: self.started,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            bodies_decoded: self.bodies_decoded,
            bytes_decoded: self.bytes_decoded,
        };
        Ok((self.name.into(), recorder))
    }
}

#[derive(Serialize, Deserialize)]
struct WireGroup {
    name: String,
    ok: String,
    ko: String,
    attempts: String,
}

#[derive(Serialize, Deserialize)]
struct WireErrorCount {
    kind: String,
    request: String,
    detail: u32,
    count: u64,
    message: String,
    first_interval: u64,
    last_interval: u64,
}

#[derive(Serialize, Deserialize)]
struct WireInterval {
    share: usize,
    attempt: u32,
    interval: u64,
    finished: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cpu_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    started_late_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    peak_memory_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fenced: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log: Option<ShareLog>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resumed_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    rows_taken: Vec<u64>,
    #[serde(default, skip_serializing_if = "crate::summary::is_zero")]
    row_waits: u64,
    rows: Vec<WireRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    groups: Vec<WireGroup>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    errors: Vec<WireErrorCount>,
    users_started: u64,
    users_finished: u64,
    users_interrupted: u64,
    users_active: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start_lag_us: Option<String>,
    late_starts: u64,
    replacements_held_back: u64,
    connections: ConnectionEvents,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    couchdb_connections: Vec<ConnectionPhases>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    sql_phases: Vec<crate::SqlPhaseReport>,
}

impl WireInterval {
    fn from(interval: &ShareInterval, h: &mut HistogramCodec) -> WireInterval {
        let s = &interval.snapshot;
        WireInterval {
            share: interval.share,
            attempt: interval.attempt,
            interval: s.interval,
            finished: s.finished,
            cpu_ns: interval.cpu_ns,
            stop_reason: interval.stop_reason.clone(),
            started_late_ns: interval.started_late_ns,
            peak_memory_bytes: interval.peak_memory_bytes,
            fenced: interval.fenced.clone(),
            log: interval.log,
            resumed_after_ms: interval.resumed_after_ms,
            rows_taken: interval.rows_taken.clone(),
            row_waits: interval.row_waits,
            rows: s.requests.iter().map(|(name, recorder)| WireRow::from(name, recorder, h)).collect(),
            groups: s
                .groups
                .iter()
                .map(|(name, g)| WireGroup {
                    name: name.to_string(),
                    ok: h.encode(&g.ok),
                    ko: h.encode(&g.ko),
                    attempts: h.encode(&g.attempts),
                })
                .collect(),
            errors: s
                .errors
                .iter()
                .map(|(key, record)| WireErrorCount {
                    kind: key.kind.to_string(),
                    request: key.request.to_string(),
                    detail: key.detail,
                    count: record.count,
                    message: record.message.clone(),
                    first_interval: record.first_interval,
                    last_interval: record.last_interval,
                })
                .collect(),
            users_started: s.users_started,
            users_finished: s.users_finished,
            users_interrupted: s.users_interrupted,
            users_active: s.users_active,
            start_lag_us: s.start_lag_us.as_ref().map(|lag| h.encode(lag)),
            late_starts: s.late_starts,
            replacements_held_back: s.replacements_held_back,
            connections: s.connections,
            couchdb_connections: s.couchdb_connections.clone(),
            sql_phases: s.sql_phases.clone(),
        }
    }

    fn decode(self, h: &mut HistogramCodec) -> Result<ShareInterval, WireError> {
        let latency_figures = crate::recorder::new_histogram().sigfig();
        let mut requests = Vec::with_capacity(self.rows.len());
        for row in self.rows {
            requests.push(row.decode(h)?);
        }
        let mut groups = Vec::with_capacity(self.groups.len());
        for group in self.groups {
            let measure = |what: &str| format!("group {:?}, {what}", group.name);
            let recorder = GroupRecorder {
                ok: h.decode(&group.ok, latency_figures, &measure("ok"))?,
                ko: h.decode(&group.ko, latency_figures, &measure("ko"))?,
                attempts: h.decode(&group.attempts, latency_figures, &measure("attempts"))?,
            };
            groups.push((Arc::from(group.name), recorder));
        }
        let errors = self
            .errors
            .into_iter()
            .map(|e| {
                let key = ErrorKey { kind: Cow::Owned(e.kind), request: e.request.into(), detail: e.detail };
                let record = ErrorRecord {
                    message: e.message,
                    count: e.count,
                    first_interval: e.first_interval,
                    last_interval: e.last_interval,
                };
                (key, record)
            })
            .collect();
        let start_lag_us = match self.start_lag_us {
            Some(text) => Some(h.decode(&text, latency_figures, "start lag")?),
            None => None,
        };
        let snapshot = Snapshot {
            worker: self.share,
            requests,
            groups,
            errors,
            users_started: self.users_started,
            users_finished: self.users_finished,
            users_interrupted: self.users_interrupted,
            users_active: self.users_active,
            start_lag_us,
            late_starts: self.late_starts,
            replacements_held_back: self.replacements_held_back,
            connections: self.connections,
            couchdb_connections: self.couchdb_connections,
            sql_phases: self.sql_phases,
            finished: self.finished,
            interval: self.interval,
        };
        Ok(ShareInterval {
            share: self.share,
            attempt: self.attempt,
            snapshot,
            cpu_ns: self.cpu_ns,
            stop_reason: self.stop_reason,
            started_late_ns: self.started_late_ns,
            peak_memory_bytes: self.peak_memory_bytes,
            fenced: self.fenced,
            log: self.log,
            resumed_after_ms: self.resumed_after_ms,
            rows_taken: self.rows_taken,
            row_waits: self.row_waits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::couchdb::CouchdbStepKind;
    use crate::recorder::RequestTiming;
    use proptest::prelude::*;

    #[test]
    fn request_log_records_arrive_byte_for_byte_and_smaller() {
        let records: Vec<u8> = (0..2000)
            .flat_map(|i| {
                format!("{{\"epoch_ms\":{},\"name\":\"home \\u00e9\",\"user\":{i}}}\n", 1_700_000_000_000u64 + i)
                    .into_bytes()
            })
            .collect();
        let message = ShareMessage::Requests(ShareRequests { share: 2, attempt: 1, records: records.clone() });
        let encoded = message.encode();
        assert!(encoded.len() < records.len() / 3, "{} bytes for {}", encoded.len(), records.len());
        assert_eq!(ShareMessage::decode(&encoded).unwrap(), message);
    }

    /// What one request of a generated snapshot was: its row, latency, outcome, whether it
    /// opened a connection, and whether it was sent at all.
    type Request = (usize, u64, bool, bool, bool);

    fn requests() -> impl Strategy<Value = Vec<Request>> {
        // Up to 700 requests over 3 rows: rows with few values and rows with histograms.
        proptest::collection::vec((0usize..3, 1u64..50_000_000, any::<bool>(), any::<bool>(), any::<bool>()), 0..700)
    }

    /// A snapshot of one interval as a worker would hand it in, with every kind of measure.
    fn snapshot(requests: &[Request], interval: u64, finished: bool) -> Snapshot {
        let mut rows: Vec<(Arc<str>, Recorder)> = Vec::new();
        let mut snapshot = Snapshot { worker: 1, interval, finished, ..Default::default() };
        let mut lag = crate::recorder::new_histogram();
        let mut group = GroupRecorder::default();
        for (i, &(row, latency, ok, connect, sent)) in requests.iter().enumerate() {
            let name: Arc<str> = format!("row {row}").into();
            let recorder = match rows.iter().position(|(n, _)| *n == name) {
                Some(at) => &mut rows[at].1,
                None => {
                    rows.push((name.clone(), Recorder::default()));
                    &mut rows.last_mut().unwrap().1
                }
            };
            recorder.started += 1;
            if !sent {
                recorder.record_unsent();
                let key = ErrorKey { kind: Cow::Borrowed("connect_refused"), request: name, detail: row as u32 };
                snapshot
                    .errors
                    .entry(key)
                    .or_insert_with(|| ErrorRecord { message: format!("refused {i}"), ..Default::default() })
                    .count += 1;
                continue;
            }
            let timing = RequestTiming {
                latency_us: latency,
                uncorrected_us: latency / 3 + 1,
                connect_us: connect.then_some(latency % 977),
                send_us: latency % 13,
                wait_us: latency / 2,
                receive_us: latency % 101,
                bytes_sent: 100,
                bytes_received: latency % 5000,
                bytes_decoded: ok.then_some(7),
                ..Default::default()
            };
            recorder.record(&timing, ok);
            crate::recorder::record_value(&mut lag, latency % 10_000);
            group.record_attempts(latency * 2, ok, 1 + latency % 3);
            if !ok {
                let key = ErrorKey { kind: Cow::Borrowed("check_failed"), request: name, detail: 500 };
                snapshot
                    .errors
                    .entry(key)
                    .or_insert_with(|| ErrorRecord { message: "status 500".into(), ..Default::default() })
                    .count += 1;
            }
        }
        snapshot.users_started = requests.len() as u64;
        snapshot.users_finished = requests.len() as u64 / 2;
        snapshot.users_interrupted = u64::from(finished);
        snapshot.users_active = requests.len() as u64 % 17;
        snapshot.late_starts = requests.len() as u64 % 3;
        snapshot.replacements_held_back = 1;
        snapshot.connections.opened = requests.iter().filter(|r| r.3).count() as u64;
        snapshot.connections.http2 = 2;
        if !requests.is_empty() {
            snapshot.start_lag_us = Some(lag);
            snapshot.groups.push(("checkout".into(), group));
            snapshot.couchdb_connections.push(ConnectionPhases {
                step: "bulk".into(),
                kind: CouchdbStepKind::BulkInsert,
                time_taken_us: 5,
                local_processing_us: 1,
                send_us: 2,
                remote_us: [3, 0, 0, 0],
                receive_us: 4,
                json_bytes_sent: 10,
                json_bytes_received: 20,
                documents: [100, 0, 0, 0],
            });
        }
        snapshot.requests = rows;
        snapshot
    }

    fn interval_of(share: usize, snapshot: Snapshot) -> ShareInterval {
        ShareInterval {
            share,
            attempt: 0,
            snapshot: Snapshot { worker: share, ..snapshot },
            cpu_ns: Some(123),
            stop_reason: None,
            started_late_ns: Some(42_000),
            peak_memory_bytes: Some(64 << 20),
            fenced: None,
            log: Some(ShareLog { intervals: 3, requests: 1234 }),
            resumed_after_ms: Some(2_500),
            rows_taken: vec![12, 0],
            row_waits: 3,
        }
    }

    fn round_trip(interval: &ShareInterval) -> ShareInterval {
        match ShareMessage::decode(&ShareMessage::Interval(Box::new(interval.clone())).encode()) {
            Ok(ShareMessage::Interval(decoded)) => *decoded,
            other => panic!("not an interval back: {other:?}"),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// A decoded message is the snapshot that was encoded, field for field: few values as
        /// they were, histograms bucket for bucket.
        #[test]
        fn decoding_gives_back_what_was_encoded(requests in requests(), interval in 1u64..1000, finished in any::<bool>()) {
            let sent = interval_of(1, snapshot(&requests, interval, finished));
            prop_assert_eq!(round_trip(&sent), sent);
        }

        /// What the coordinator merges from two shares' messages is what merging their
        /// snapshots in one process gives, bucket for bucket.
        #[test]
        fn merging_decoded_shares_equals_merging_them_in_process(a in requests(), b in requests()) {
            let (a, b) = (interval_of(0, snapshot(&a, 4, false)), interval_of(1, snapshot(&b, 4, true)));
            let mut in_process = a.snapshot.clone();
            in_process.merge(b.snapshot.clone());
            let mut decoded = round_trip(&a).snapshot;
            decoded.merge(round_trip(&b).snapshot);
            prop_assert_eq!(decoded, in_process);
        }

        /// Merging keeps every count: requests, outcomes, errors, users, connections.
        #[test]
        fn merging_snapshots_keeps_every_count(a in requests(), b in requests()) {
            let (left, right) = (snapshot(&a, 2, false), snapshot(&b, 2, false));
            let count = |s: &Snapshot| s.requests.iter().map(|(_, r)| r.count()).sum::<u64>();
            let ok = |s: &Snapshot| s.requests.iter().map(|(_, r)| r.ok.len()).sum::<u64>();
            let errors = |s: &Snapshot| s.errors.values().map(|e| e.count).sum::<u64>();
            let lag = |s: &Snapshot| s.start_lag_us.as_ref().map_or(0, |h| h.len());
            let expected = (count(&left) + count(&right), ok(&left) + ok(&right), errors(&left) + errors(&right), lag(&left) + lag(&right));
            let users = left.users_started + right.users_started;
            let opened = left.connections.opened + right.connections.opened;
            let mut merged = left;
            merged.merge(right);
            prop_assert_eq!((count(&merged), ok(&merged), errors(&merged), lag(&merged)), expected);
            prop_assert_eq!((count(&merged), merged.users_started, merged.connections.opened), ((a.len() + b.len()) as u64, users, opened));
        }
    }

    #[test]
    fn a_ready_share_round_trips_and_another_version_is_named() {
        let ready = ShareMessage::Ready(ShareReady {
            share: 2,
            attempt: 1,
            segment: "2/3:1".into(),
            pid: 42,
            host: "h".into(),
            threads: 3,
        });
        assert_eq!(ShareMessage::decode(&ready.encode()).unwrap(), ready);
        let text = String::from_utf8(ready.encode()).unwrap().replace(HORDE_VERSION, "0.0.0-other");
        let err = ShareMessage::decode(text.as_bytes()).unwrap_err();
        assert!(matches!(err, WireError::Version { .. }), "{err}");
        assert!(err.to_string().contains("0.0.0-other"), "{err}");
        assert!(matches!(ShareMessage::decode(b"{\"format\":1"), Err(WireError::Malformed(_))));
        let wanted =
            ShareMessage::RowsWanted(ShareRowsWanted { share: 1, attempt: 2, rows_taken: vec![4096, 0], row_waits: 7 });
        assert_eq!(ShareMessage::decode(&wanted.encode()).unwrap(), wanted);
    }

    #[test]
    fn a_histogram_at_another_resolution_is_refused() {
        let mut histograms = HistogramCodec::new();
        let mut two_figures = Histogram::<u64>::new(2).unwrap();
        two_figures.record(1000).unwrap();
        let text = histograms.encode(&two_figures);
        let err = histograms.decode(&text, 3, "request \"home\", ok").unwrap_err();
        assert!(
            err.to_string().contains("request \"home\", ok") && err.to_string().contains("2 significant figures"),
            "{err}"
        );
    }

    /// The histograms are HdrHistogram's standard compressed form: its own deserializer reads
    /// them; one cut short is an error, not a hang.
    #[test]
    fn histograms_are_hdrhistograms_standard_form() {
        let mut histograms = HistogramCodec::new();
        let mut histogram = crate::recorder::new_histogram();
        for value in (1..100_000).step_by(7) {
            histogram.record(value).unwrap();
        }
        let text = histograms.encode(&histogram);
        let bytes = base64::engine::general_purpose::STANDARD.decode(&text).unwrap();
        let theirs: Histogram<u64> = Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap();
        assert_eq!(theirs, histogram);
        assert_eq!(histograms.decode(&text, 3, "r").unwrap(), histogram);
        let cut = base64::engine::general_purpose::STANDARD.encode(&bytes[..bytes.len() / 2]);
        assert!(histograms.decode(&cut, 3, "r").is_err());
        // The codec is whole again after an error.
        assert_eq!(histograms.decode(&text, 3, "r").unwrap(), histogram);
    }

    /// A decoded histogram grows as the ones horde records into do: merging bigger values
    /// into it never fails.
    #[test]
    fn a_decoded_histogram_takes_values_beyond_its_range() {
        let mut small = Recorder::default();
        for value in 1..=300 {
            small.record(&RequestTiming { latency_us: value, uncorrected_us: value, ..Default::default() }, true);
        }
        let sent = interval_of(0, Snapshot { requests: vec![("a".into(), small)], ..Default::default() });
        let mut decoded = round_trip(&sent).snapshot;
        let mut big = Recorder::default();
        big.record(&RequestTiming { latency_us: 3_600_000_000, uncorrected_us: 1, ..Default::default() }, true);
        decoded.requests[0].1.merge(&big);
        assert_eq!(
            decoded.requests[0].1.ok.histogram().max(),
            decoded.requests[0].1.ok.histogram().highest_equivalent(3_600_000_000)
        );
    }
}

//! histograms.hlog read back: HdrHistogram's interval log (V2 compressed histograms, one
//! entry per snapshot interval and tag), and adjacent intervals merged into wider ones so that a
//! long run's charts keep at most a bounded number of points. Merging adds the histograms'
//! counts, so a merged interval's percentiles are exactly those of all its requests, which
//! averaging or dropping percentile points would not give.
//!
//! The log's intervals stay compressed in memory (a few hundred bytes each) and are decoded
//! one tag at a time, when a chart merges them: decoded, each would take 16 KiB or more, and a
//! run of 3,000 request rows holds 6,000 of them a second (1.3 GB for 13 s).
//!
//! The live dashboard renders a growing log again every interval. So that each rendering
//! decodes only what is new, the log is read on from where the last reading stopped
//! ([`HistogramLog::append`]), and it remembers what charts asked of it that cannot change any
//! more: the latency of buckets the log has moved past, and each tag's running total. Decoding
//! every interval again was most of a rendering's time (an hour of 20 requests: 0.8 s of 1 s).

use base64::Engine;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// The untagged entries: every request, latency from the intended start (corrected).
pub const ALL_CORRECTED: &str = "";
/// Every request, latency from the actual start.
pub const ALL_UNCORRECTED: &str = "uncorrected";
/// A request row's latency from the actual start (`uncorrected.r3`).
const ROW_UNCORRECTED_PREFIX: &str = "uncorrected.";

/// One interval of one tag as the log holds it: its histogram still compressed.
#[derive(Debug, Clone)]
pub struct LoggedInterval {
    /// From the start of the run.
    pub start_ms: u64,
    pub duration_ms: u64,
    /// HdrHistogram's V2 (deflate) encoding, base64 taken off.
    encoded: Vec<u8>,
}

impl LoggedInterval {
    /// The interval's histogram, resizing itself so that a later interval's larger values fit
    /// when added to it; None when the entry does not decode (it is then left out).
    pub fn histogram(&self) -> Option<Histogram<u64>> {
        let mut histogram: Histogram<u64> = Deserializer::new().deserialize(&mut self.encoded.as_slice()).ok()?;
        histogram.auto(true);
        Some(histogram)
    }
}

/// One interval's histogram of one tag, decoded (a bucket of merged intervals).
#[derive(Debug, Clone)]
pub struct IntervalHistogram {
    /// From the start of the run.
    pub start_ms: u64,
    pub duration_ms: u64,
    pub histogram: Histogram<u64>,
}

/// One chart point's latency, from the histograms of the intervals merged into it: what the
/// charts read of it, small enough to keep for every point of a long run.
#[derive(Debug, Clone, PartialEq)]
pub struct BucketLatency {
    /// From the start of the run.
    pub start_ms: u64,
    pub duration_ms: u64,
    pub count: u64,
    /// The value at each percentile asked for, in the order asked (µs).
    pub at_percentiles_us: Vec<u64>,
    pub max_us: u64,
}

/// What a tag's charts asked of the log that later entries cannot change.
#[derive(Debug, Default)]
struct TagMemo {
    buckets: Option<ClosedBuckets>,
    total: Option<RunningTotal>,
}

/// Buckets that end at or before the log's latest interval start: entries come in time order,
/// so none can join them any more (an entry that would is noticed, and the memo dropped).
#[derive(Debug)]
struct ClosedBuckets {
    bucket_ms: u64,
    percentiles: Vec<f64>,
    closed: Vec<BucketLatency>,
    /// The tag's intervals (oldest first) merged into `closed`.
    intervals: usize,
    /// Where the closed buckets end.
    end_ms: u64,
}

/// The tag's first `intervals` intervals in one histogram.
#[derive(Debug, Default)]
struct RunningTotal {
    intervals: usize,
    /// The start of the last of them.
    latest_start_ms: u64,
    histogram: Option<Histogram<u64>>,
}

#[derive(Debug, Default)]
pub struct HistogramLog {
    /// By tag (`""` for the untagged entries), oldest first.
    series: BTreeMap<String, Vec<LoggedInterval>>,
    /// Names of request and group tags (`r0`, `g1`) from the log's `#[Tag r0: "name"]` comments.
    names: BTreeMap<String, String>,
    run_start_unix_ms: u64,
    interval_ms: u64,
    /// The request rows whose entries are kept (by name), None for all: a report draws the
    /// busiest rows only, and a run of thousands of rows logs each of them every interval.
    kept_rows: Option<BTreeSet<String>>,
    /// The header's times, for the entries read after it.
    base_time_ms: Option<f64>,
    start_time_ms: Option<f64>,
    /// A line that did not parse: the log ends there (a killed run's last line).
    broken: bool,
    /// The latest interval start of any tag.
    latest_start_ms: u64,
    memo: RefCell<BTreeMap<String, TagMemo>>,
}

impl HistogramLog {
    /// Reads a log whose interval timestamps are epoch seconds (or offsets from a BaseTime),
    /// placing each interval on the run's grid of `interval_ms` from `run_start_unix_ms`. A
    /// line cut short (a killed run) ends the log; an entry that does not decode is skipped
    /// (when its tag's intervals are decoded).
    #[cfg(test)]
    pub fn parse(text: &[u8], run_start_unix_ms: u64, interval_ms: u64) -> HistogramLog {
        let mut log = HistogramLog::new(run_start_unix_ms, interval_ms, None);
        log.append(text);
        log
    }

    /// An empty log of a run started at `run_start_unix_ms`, for [`HistogramLog::append`],
    /// keeping the entries of the request rows `kept_rows` names (None: every row's).
    pub fn new(run_start_unix_ms: u64, interval_ms: u64, kept_rows: Option<BTreeSet<String>>) -> HistogramLog {
        HistogramLog { run_start_unix_ms, interval_ms: interval_ms.max(1), kept_rows, ..HistogramLog::default() }
    }

    /// Whether this log was read for a run started then, in these intervals, keeping these
    /// rows: what a later reading may go on from.
    pub fn read_as(&self, run_start_unix_ms: u64, interval_ms: u64, kept_rows: &BTreeSet<String>) -> bool {
        self.run_start_unix_ms == run_start_unix_ms
            && self.interval_ms == interval_ms.max(1)
            && self.kept_rows.as_ref() == Some(kept_rows)
    }

    /// Reads `text`, the log's next lines (the file from where the last call's text ended).
    pub fn append(&mut self, text: &[u8]) {
        if self.broken {
            return;
        }
        self.names.extend(tag_names(text));
        // Per tag, the earliest start among the new entries.
        let mut earliest_new: BTreeMap<String, u64> = BTreeMap::new();
        let mut unsorted = Vec::new();
        for entry in IntervalLogIterator::new(text) {
            let Ok(entry) = entry else {
                self.broken = true;
                break;
            };
            match entry {
                LogEntry::BaseTime(at) => self.base_time_ms = Some(at.as_secs_f64() * 1000.0),
                LogEntry::StartTime(at) => self.start_time_ms = Some(at.as_secs_f64() * 1000.0),
                LogEntry::Interval(interval) => {
                    let tag = interval.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
                    // A row's latency from the actual start: the log has it for other readers,
                    // no page of the report shows it; half the entries of a run, not kept.
                    if tag.starts_with(ROW_UNCORRECTED_PREFIX) || !self.keeps_row(&tag) {
                        continue;
                    }
                    let Ok(encoded) = base64::engine::general_purpose::STANDARD.decode(interval.encoded_histogram())
                    else {
                        continue;
                    };
                    let stamp_ms = interval.start_timestamp().as_secs_f64() * 1000.0;
                    // As HdrHistogram's Java reader: with a BaseTime, stamps are offsets from it;
                    // without one, stamps far below the StartTime are offsets from it.
                    let absolute_ms = match (self.base_time_ms, self.start_time_ms) {
                        (Some(base), _) => base + stamp_ms,
                        (None, Some(start)) if stamp_ms < start - YEAR_MS => start + stamp_ms,
                        _ => stamp_ms,
                    };
                    let offset_ms = (absolute_ms - self.run_start_unix_ms as f64).max(0.0);
                    // Intervals sit on the run's grid; a stamp a few milliseconds off still
                    // names its interval.
                    let start_ms = (offset_ms / self.interval_ms as f64).round() as u64 * self.interval_ms;
                    let intervals = self.series.entry(tag.clone()).or_default();
                    if intervals.last().is_some_and(|last| last.start_ms > start_ms) {
                        unsorted.push(tag.clone());
                    }
                    let earliest = earliest_new.entry(tag).or_insert(start_ms);
                    *earliest = (*earliest).min(start_ms);
                    intervals.push(LoggedInterval {
                        start_ms,
                        duration_ms: interval.duration().as_millis() as u64,
                        encoded,
                    });
                    self.latest_start_ms = self.latest_start_ms.max(start_ms);
                }
            }
        }
        for tag in unsorted {
            self.series.get_mut(&tag).expect("the tag was just seen").sort_by_key(|i| i.start_ms);
        }
        // An entry that lands among what was remembered of its tag (the log's entries out of
        // time order): the tag's memo is made again.
        let memo = self.memo.get_mut();
        memo.retain(|tag, remembered| {
            let Some(earliest) = earliest_new.get(tag) else { return true };
            let buckets_hold = remembered.buckets.as_ref().is_none_or(|b| b.end_ms <= *earliest);
            let total_holds = remembered.total.as_ref().is_none_or(|t| t.latest_start_ms <= *earliest);
            buckets_hold && total_holds
        });
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// A request row's tag (`r3`) is kept when its name is one of the kept rows (a tag whose
    /// name the log does not give is kept: it may be any row). Other tags are always kept.
    fn keeps_row(&self, tag: &str) -> bool {
        let (Some(kept), Some(position)) = (&self.kept_rows, tag.strip_prefix('r')) else { return true };
        if position.is_empty() || !position.bytes().all(|b| b.is_ascii_digit()) {
            return true;
        }
        self.names.get(tag).is_none_or(|name| kept.contains(name))
    }

    /// Intervals read, every tag's.
    #[cfg(test)]
    pub fn intervals(&self) -> usize {
        self.series.values().map(Vec::len).sum()
    }

    /// The intervals of a tag, oldest first (empty when the tag never appeared).
    pub fn series(&self, tag: &str) -> &[LoggedInterval] {
        self.series.get(tag).map_or(&[], Vec::as_slice)
    }

    /// The tag of a request row (`kind` 'r') or group ('g'): found by the name its comment
    /// gives, else by the row's position, as the log names rows in the summary's order.
    pub fn tag_of(&self, kind: char, name: &str, position: usize) -> Option<String> {
        let named =
            self.names.iter().find(|(tag, n)| tag.starts_with(kind) && n.as_str() == name).map(|(t, _)| t.clone());
        named.or_else(|| {
            let tag = format!("{kind}{position}");
            (self.series.contains_key(&tag) && !self.names.contains_key(&tag)).then_some(tag)
        })
    }

    /// Every interval of a tag in one histogram (kept, and added to as the log grows).
    pub fn total(&self, tag: &str) -> Option<Histogram<u64>> {
        let intervals = self.series(tag);
        let mut memo = self.memo.borrow_mut();
        let total = memo.entry(tag.to_string()).or_default().total.get_or_insert_with(RunningTotal::default);
        for histogram in intervals[total.intervals..].iter().filter_map(LoggedInterval::histogram) {
            match &mut total.histogram {
                Some(sum) => {
                    // The total resizes itself, so adding never fails.
                    let _ = sum.add(&histogram);
                }
                None => total.histogram = Some(histogram),
            }
        }
        total.intervals = intervals.len();
        total.latest_start_ms = intervals.last().map_or(0, |i| i.start_ms);
        total.histogram.clone()
    }

    /// A tag's intervals merged into buckets of `bucket_ms` (on the run's grid, from 0), each
    /// bucket's latency at `percentiles` (0-100) and its max: exactly those of every request in
    /// it. Buckets the log has moved past are remembered; the others are merged again.
    pub fn bucket_latencies(&self, tag: &str, bucket_ms: u64, percentiles: &[f64]) -> Vec<BucketLatency> {
        let bucket_ms = bucket_ms.max(1);
        let intervals = self.series(tag);
        let mut memo = self.memo.borrow_mut();
        let slot = &mut memo.entry(tag.to_string()).or_default().buckets;
        if !slot.as_ref().is_some_and(|m| m.bucket_ms == bucket_ms && m.percentiles == percentiles) {
            *slot = Some(ClosedBuckets {
                bucket_ms,
                percentiles: percentiles.to_vec(),
                closed: Vec::new(),
                intervals: 0,
                end_ms: 0,
            });
        }
        let memo = slot.as_mut().expect("set above");
        let summarise = |bucket: &IntervalHistogram| BucketLatency {
            start_ms: bucket.start_ms,
            duration_ms: bucket.duration_ms,
            count: bucket.histogram.len(),
            at_percentiles_us: percentiles.iter().map(|p| bucket.histogram.value_at_quantile(p / 100.0)).collect(),
            max_us: bucket.histogram.max(),
        };
        let mut open = Vec::new();
        let first = memo.intervals;
        for (bucket, through) in merge_counting(&intervals[first..], bucket_ms) {
            if bucket.start_ms + bucket_ms <= self.latest_start_ms && open.is_empty() {
                memo.closed.push(summarise(&bucket));
                memo.intervals = first + through;
                memo.end_ms = bucket.start_ms + bucket_ms;
            } else {
                open.push(summarise(&bucket));
            }
        }
        let mut buckets = memo.closed.clone();
        buckets.extend(open);
        buckets
    }
}

const YEAR_MS: f64 = 365.0 * 86_400_000.0;

/// `#[Tag r0: "GET /"]` comments: the tag, and its name as a JSON string.
fn tag_names(text: &[u8]) -> BTreeMap<String, String> {
    let text = String::from_utf8_lossy(text);
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("#[Tag ")?.strip_suffix(']')?;
            let (tag, name) = rest.split_once(": ")?;
            let name: String = serde_json::from_str(name).ok()?;
            Some((tag.to_string(), name))
        })
        .collect()
}

/// The width of a chart's point so that a run of `duration_ms` in intervals of `interval_ms`
/// has at most `max_points`: a whole number of intervals.
pub fn bucket_ms(duration_ms: u64, interval_ms: u64, max_points: usize) -> u64 {
    let interval_ms = interval_ms.max(1);
    let intervals = duration_ms.div_ceil(interval_ms).max(1);
    interval_ms * intervals.div_ceil(max_points.max(1) as u64)
}

/// Adjacent intervals merged into buckets of `bucket_ms` (on the run's grid, from 0): each
/// bucket's histogram holds every count of the intervals in it. Intervals are decoded one at
/// a time; one that does not decode is left out.
#[cfg(test)]
pub fn merge_into_buckets(intervals: &[LoggedInterval], bucket_ms: u64) -> Vec<IntervalHistogram> {
    merge_counting(intervals, bucket_ms.max(1)).into_iter().map(|(bucket, _)| bucket).collect()
}

/// [`merge_into_buckets`], each bucket with the position in `intervals` just past its last
/// interval (an interval that does not decode is passed over with the bucket after it).
fn merge_counting(intervals: &[LoggedInterval], bucket_ms: u64) -> Vec<(IntervalHistogram, usize)> {
    let mut merged: Vec<(IntervalHistogram, usize)> = Vec::new();
    for (position, interval) in intervals.iter().enumerate() {
        let Some(histogram) = interval.histogram() else { continue };
        let start_ms = interval.start_ms / bucket_ms * bucket_ms;
        let duration_ms = (interval.start_ms + interval.duration_ms).saturating_sub(start_ms);
        match merged.last_mut() {
            Some((last, through)) if last.start_ms == start_ms => {
                // The bucket's histogram resizes itself, so adding never fails.
                let _ = last.histogram.add(&histogram);
                last.duration_ms = duration_ms;
                *through = position + 1;
            }
            _ => merged.push((IntervalHistogram { start_ms, duration_ms, histogram }, position + 1)),
        }
    }
    merged
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    use hdrhistogram::serialization::V2DeflateSerializer;
    use std::time::{Duration, UNIX_EPOCH};

    /// An interval log as the contract describes it (histograms.hlog): absolute stamps, tags
    /// named in comments before their first entry. `entries` are (tag, interval index from 1,
    /// latencies in microseconds).
    pub fn write_log(
        run_start_unix_ms: u64,
        interval_ms: u64,
        entries: &[(&str, u64, Vec<u64>)],
        names: &[(&str, &str)],
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        let start = UNIX_EPOCH + Duration::from_millis(run_start_unix_ms);
        let mut writer = IntervalLogWriterBuilder::new()
            .with_start_time(start)
            .with_base_time(UNIX_EPOCH)
            .begin_log_with(&mut out, &mut serializer)
            .unwrap();
        let mut named = Vec::new();
        for (tag, interval, values) in entries {
            if let Some((_, name)) = names.iter().find(|(t, _)| t == tag) {
                if !named.contains(tag) {
                    writer.write_comment(&format!("[Tag {tag}: {}]", serde_json::to_string(name).unwrap())).unwrap();
                    named.push(tag);
                }
            }
            let mut histogram = Histogram::<u64>::new(3).unwrap();
            for v in values {
                histogram.record(*v).unwrap();
            }
            let stamp = Duration::from_millis(run_start_unix_ms + (interval - 1) * interval_ms + 3);
            let tag = if tag.is_empty() { None } else { Tag::new(tag) };
            writer.write_histogram(&histogram, stamp, Duration::from_millis(interval_ms), tag).unwrap();
        }
        drop(writer);
        out
    }

    #[test]
    fn a_log_reads_back_by_tag_on_the_runs_grid_with_names_from_comments() {
        let start = 1_795_420_403_429;
        let text = write_log(
            start,
            1000,
            &[
                ("", 1, vec![100, 200]),
                ("r0", 1, vec![100]),
                ("uncorrected.r0", 1, vec![90]),
                ("r1", 1, vec![200]),
                ("", 2, vec![300]),
                ("r1", 2, vec![300]),
            ],
            &[("r0", "GET /"), ("r1", "</script><b>")],
        );
        let log = HistogramLog::parse(&text, start, 1000);
        let all = log.series(ALL_CORRECTED);
        assert_eq!(
            all.iter().map(|i| (i.start_ms, i.histogram().unwrap().len())).collect::<Vec<_>>(),
            vec![(0, 2), (1000, 1)]
        );
        assert_eq!(log.tag_of('r', "</script><b>", 5).as_deref(), Some("r1"));
        assert_eq!(log.tag_of('r', "GET /", 0).as_deref(), Some("r0"));
        assert_eq!(log.tag_of('g', "GET /", 0), None);
        assert_eq!(log.total("r1").unwrap().len(), 2);
        assert!(log.series("uncorrected.r0").is_empty(), "no page shows a row's uncorrected latency");
        assert_eq!(log.intervals(), 5);
    }

    #[test]
    fn an_entry_older_than_what_was_remembered_makes_it_again() {
        // A log read in two parts; the second brings an entry of r0's third interval, inside
        // buckets already closed and remembered: what is remembered of r0 is made again.
        let start = 1_795_420_403_000;
        let first: Vec<(&str, u64, Vec<u64>)> = (1..=10)
            .flat_map(|i| [("", i, vec![i * 100]), ("r0", i, vec![i * 100])])
            .filter(|e| e != &("r0", 3, vec![300]))
            .collect();
        let second = vec![("r0", 3, vec![7_000]), ("", 11, vec![1_100]), ("r0", 11, vec![1_100])];
        let names = [("r0", "GET /")];
        let (first, second) = (write_log(start, 1000, &first, &names), write_log(start, 1000, &second, &names));
        let mut log = HistogramLog::new(start, 1000, None);
        log.append(&first);
        let before = log.bucket_latencies("r0", 2000, &[50.0, 100.0]);
        assert_eq!(before[1].count, 1, "interval 3 not there yet");
        assert_eq!(log.total("r0").unwrap().len(), 9);
        log.append(&second);
        let whole = HistogramLog::parse(&[first, second].concat(), start, 1000);
        let after = log.bucket_latencies("r0", 2000, &[50.0, 100.0]);
        assert_eq!(after, whole.bucket_latencies("r0", 2000, &[50.0, 100.0]));
        assert_eq!(after[1].count, 2);
        assert!(after[1].max_us >= 7_000);
        assert_eq!(log.total("r0").unwrap().len(), 11);
        assert_eq!(log.total("r0").unwrap().max(), whole.total("r0").unwrap().max());
    }

    #[test]
    fn only_the_kept_rows_entries_are_kept() {
        let start = 1_795_420_403_000;
        let entries = vec![
            ("", 1, vec![100]),
            ("r0", 1, vec![100]),
            ("r1", 1, vec![200]),
            ("r2", 1, vec![300]),
            ("g0", 1, vec![400]),
        ];
        let text = write_log(start, 1000, &entries, &[("r0", "GET /a"), ("r1", "GET /b")]);
        let kept: BTreeSet<String> = ["GET /b".to_string()].into();
        let mut log = HistogramLog::new(start, 1000, Some(kept.clone()));
        log.append(&text);
        assert!(log.series("r0").is_empty(), "a row the report does not draw");
        assert_eq!(log.series("r1").len(), 1);
        assert_eq!(log.series("r2").len(), 1, "a row the log does not name may be any row");
        assert_eq!((log.series("").len(), log.series("g0").len()), (1, 1));
        assert!(log.read_as(start, 1000, &kept));
        assert!(!log.read_as(start + 1000, 1000, &kept) && !log.read_as(start, 500, &kept));
        assert!(!log.read_as(start, 1000, &BTreeSet::new()));
    }

    #[test]
    fn a_log_cut_short_keeps_the_entries_before_the_cut() {
        let start = 1_795_420_403_000;
        let entries: Vec<(&str, u64, Vec<u64>)> = (1..=5).map(|i| ("", i, vec![i * 100; 10])).collect();
        let text = write_log(start, 1000, &entries, &[]);
        let cut = &text[..text.len() - 20];
        let log = HistogramLog::parse(cut, start, 1000);
        assert_eq!(log.series("").len(), 4, "the last line lost its end");
    }

    #[test]
    fn merging_adjacent_intervals_keeps_every_count_and_the_exact_percentiles() {
        use hdrhistogram::serialization::Serializer;
        let intervals: Vec<LoggedInterval> = (0..3600u64)
            .map(|i| {
                let mut histogram = Histogram::<u64>::new(3).unwrap();
                for v in 0..(i % 7 + 1) {
                    histogram.record(100 + i * 10 + v * 1000).unwrap();
                }
                // Fixed ranges that later intervals outgrow, as the log's histograms have.
                let mut fixed = Histogram::<u64>::new_with_max(histogram.max().max(2), 3).unwrap();
                fixed.add(&histogram).unwrap();
                let mut encoded = Vec::new();
                V2DeflateSerializer::new().serialize(&fixed, &mut encoded).unwrap();
                LoggedInterval { start_ms: i * 1000, duration_ms: 1000, encoded }
            })
            .collect();
        let width = bucket_ms(3_600_000, 1000, 1000);
        assert_eq!(width, 4000, "3600 intervals in at most 1000 points: 4 a point");
        let merged = merge_into_buckets(&intervals, width);
        assert_eq!(merged.len(), 900);
        let total: u64 = intervals.iter().map(|i| i.histogram().unwrap().len()).sum();
        assert_eq!(merged.iter().map(|m| m.histogram.len()).sum::<u64>(), total);
        for (k, bucket) in merged.iter().enumerate() {
            let mut exact = Histogram::<u64>::new(3).unwrap();
            for interval in &intervals[k * 4..k * 4 + 4] {
                exact.add(interval.histogram().unwrap()).unwrap();
            }
            assert_eq!(bucket.start_ms, k as u64 * 4000);
            assert_eq!(bucket.duration_ms, 4000);
            assert_eq!(bucket.histogram.len(), exact.len());
            assert_eq!(bucket.histogram.value_at_quantile(0.99), exact.value_at_quantile(0.99));
        }
        assert_eq!(bucket_ms(10_000, 1000, 1000), 1000, "short runs are not merged");
    }
}

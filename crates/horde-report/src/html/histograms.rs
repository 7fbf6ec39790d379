//! histograms.hlog read back: HdrHistogram's interval log (V2 compressed histograms, one
//! entry per snapshot interval and tag), and adjacent intervals merged into wider ones so that a
//! long run's charts keep at most a bounded number of points. Merging adds the histograms'
//! counts, so a merged interval's percentiles are exactly those of all its requests, which
//! averaging or dropping percentile points would not give.
//!
//! The log's intervals stay compressed in memory (a few hundred bytes each) and are decoded
//! one tag at a time, when a chart merges them: decoded, each would take 16 KiB or more, and a
//! run of 3,000 request rows holds 6,000 of them a second (1.3 GB for 13 s).

use base64::Engine;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// The untagged entries: every request, latency from the intended start (corrected).
pub const ALL_CORRECTED: &str = "";
/// Every request, latency from the actual start.
pub const ALL_UNCORRECTED: &str = "uncorrected";

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

#[derive(Debug, Default)]
pub struct HistogramLog {
    /// By tag (`""` for the untagged entries), oldest first.
    series: BTreeMap<String, Vec<LoggedInterval>>,
    /// Names of request and group tags (`r0`, `g1`) from the log's `#[Tag r0: "name"]` comments.
    names: BTreeMap<String, String>,
}

impl HistogramLog {
    /// Reads a log whose interval timestamps are epoch seconds (or offsets from a BaseTime),
    /// placing each interval on the run's grid of `interval_ms` from `run_start_unix_ms`. A
    /// line cut short (a killed run) ends the log; an entry that does not decode is skipped
    /// (when its tag's intervals are decoded).
    pub fn parse(text: &[u8], run_start_unix_ms: u64, interval_ms: u64) -> HistogramLog {
        let interval_ms = interval_ms.max(1);
        let mut log = HistogramLog { names: tag_names(text), ..HistogramLog::default() };
        let mut base_time_ms: Option<f64> = None;
        let mut start_time_ms: Option<f64> = None;
        for entry in IntervalLogIterator::new(text) {
            let Ok(entry) = entry else { break };
            match entry {
                LogEntry::BaseTime(at) => base_time_ms = Some(at.as_secs_f64() * 1000.0),
                LogEntry::StartTime(at) => start_time_ms = Some(at.as_secs_f64() * 1000.0),
                LogEntry::Interval(interval) => {
                    let Ok(encoded) = base64::engine::general_purpose::STANDARD.decode(interval.encoded_histogram())
                    else {
                        continue;
                    };
                    let stamp_ms = interval.start_timestamp().as_secs_f64() * 1000.0;
                    // As HdrHistogram's Java reader: with a BaseTime, stamps are offsets from it;
                    // without one, stamps far below the StartTime are offsets from it.
                    let absolute_ms = match (base_time_ms, start_time_ms) {
                        (Some(base), _) => base + stamp_ms,
                        (None, Some(start)) if stamp_ms < start - YEAR_MS => start + stamp_ms,
                        _ => stamp_ms,
                    };
                    let offset_ms = (absolute_ms - run_start_unix_ms as f64).max(0.0);
                    // Intervals sit on the run's grid; a stamp a few milliseconds off still
                    // names its interval.
                    let start_ms = (offset_ms / interval_ms as f64).round() as u64 * interval_ms;
                    let tag = interval.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
                    log.series.entry(tag).or_default().push(LoggedInterval {
                        start_ms,
                        duration_ms: interval.duration().as_millis() as u64,
                        encoded,
                    });
                }
            }
        }
        for intervals in log.series.values_mut() {
            intervals.sort_by_key(|i| i.start_ms);
        }
        log
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
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

    /// Every interval of a tag in one histogram.
    pub fn total(&self, tag: &str) -> Option<Histogram<u64>> {
        let mut decoded = self.series(tag).iter().filter_map(LoggedInterval::histogram);
        let mut total = decoded.next()?;
        for histogram in decoded {
            total.add(&histogram).ok()?;
        }
        Some(total)
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
pub fn merge_into_buckets(intervals: &[LoggedInterval], bucket_ms: u64) -> Vec<IntervalHistogram> {
    let bucket_ms = bucket_ms.max(1);
    let mut merged: Vec<IntervalHistogram> = Vec::new();
    for interval in intervals {
        let Some(histogram) = interval.histogram() else { continue };
        let start_ms = interval.start_ms / bucket_ms * bucket_ms;
        match merged.last_mut() {
            Some(last) if last.start_ms == start_ms => {
                // The bucket's histogram resizes itself, so adding never fails.
                let _ = last.histogram.add(&histogram);
                last.duration_ms = (interval.start_ms + interval.duration_ms).saturating_sub(start_ms);
            }
            _ => {
                merged.push(IntervalHistogram {
                    start_ms,
                    duration_ms: (interval.start_ms + interval.duration_ms).saturating_sub(start_ms),
                    histogram,
                });
            }
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

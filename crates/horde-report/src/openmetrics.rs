//! Live metrics in the OpenMetrics text format (what Prometheus scrapes), rendered from the
//! running totals once per interval. Counters and a latency histogram only: percentiles are
//! computed by whoever reads them (`histogram_quantile`), since a percentile gauge cannot be
//! aggregated across scrapes or instances.
//!
//! Label values come from the plan and from servers (request names, error kinds), so their
//! number is capped: past [`MAX_REQUEST_LABELS`] request rows, the rest are counted together
//! under `request="(other)"`, and a scraper's memory stays bounded whatever the run names.
//!
//! A command that runs several runs behind one endpoint (`horde sweep`'s levels, `horde run
//! --trials`) labels every sample with the run it is of (`level="25"`, `trial="3"`): each run's
//! counters start from 0, and as a series of their own they are new series, not resets.

use horde_metrics::{Recorder, Totals};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

/// Request rows that get a label value of their own.
pub const MAX_REQUEST_LABELS: usize = 100;
/// Error (kind, request) pairs that get label values of their own.
pub const MAX_ERROR_LABELS: usize = 200;
const OTHER: &str = "(other)";

/// Upper bounds of the latency histogram's buckets, in seconds: Prometheus' defaults widened
/// to the sub-millisecond latencies of local servers and the minutes of stalled ones.
const LATENCY_BUCKETS_S: [f64; 18] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The latest rendering, shared between the results sink (which writes it every interval) and
/// the endpoint that serves it.
#[derive(Clone)]
pub struct LiveMetrics {
    text: Arc<Mutex<Arc<str>>>,
    /// Labels on every sample this handle publishes: which run of several it is.
    labels: Arc<[(String, String)]>,
}

impl Default for LiveMetrics {
    fn default() -> LiveMetrics {
        LiveMetrics::new()
    }
}

impl LiveMetrics {
    /// Nothing measured yet: an empty exposition.
    pub fn new() -> LiveMetrics {
        LiveMetrics { text: Arc::new(Mutex::new(Arc::from("# EOF\n"))), labels: Vec::new().into() }
    }

    /// A handle publishing to the same endpoint with `labels` on every sample: one per run
    /// of a sweep or of trials.
    pub fn with_labels(&self, labels: Vec<(String, String)>) -> LiveMetrics {
        LiveMetrics { text: self.text.clone(), labels: labels.into() }
    }

    /// Renders the totals and makes them what the next scrape reads.
    pub fn publish(&self, totals: &Totals) {
        let text: Arc<str> = render_openmetrics(totals, &self.labels).into();
        *self.text.lock().unwrap_or_else(|e| e.into_inner()) = text;
    }

    pub fn current(&self) -> Arc<str> {
        self.text.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The OpenMetrics text of everything measured so far, each sample also labelled with
/// `labels` (none for a single run).
pub fn render_openmetrics(totals: &Totals, labels: &[(String, String)]) -> String {
    let mut out = String::with_capacity(4096);
    let rows = capped_rows(totals);
    // Written first inside each sample's braces; `run` alone for samples with no labels of
    // their own.
    let mut run = String::new();
    for (name, value) in labels {
        let _ = write!(run, "{name}=\"{}\",", label(value));
    }
    let lead = run.as_str();
    let alone = if run.is_empty() { String::new() } else { format!("{{{}}}", &run[..run.len() - 1]) };

    family(
        &mut out,
        "horde_requests",
        "counter",
        "Requests with an outcome, by request row and outcome (ko includes requests never sent).",
    );
    for (name, recorder) in &rows {
        let ko = recorder.ko.len() + recorder.unsent;
        let _ = writeln!(
            out,
            "horde_requests_total{{{lead}request=\"{}\",outcome=\"ok\"}} {}",
            label(name),
            recorder.ok.len()
        );
        let _ = writeln!(out, "horde_requests_total{{{lead}request=\"{}\",outcome=\"ko\"}} {ko}", label(name));
    }

    family(&mut out, "horde_errors", "counter", "KO requests by error kind and request row.");
    let mut errors: BTreeMap<(String, String), u64> = BTreeMap::new();
    for (key, record) in &totals.errors {
        let entry = (key.kind.to_string(), key.request.to_string());
        let entry = if errors.len() < MAX_ERROR_LABELS || errors.contains_key(&entry) {
            entry
        } else {
            (OTHER.into(), OTHER.into())
        };
        *errors.entry(entry).or_default() += record.count;
    }
    for ((kind, request), count) in &errors {
        let _ = writeln!(
            out,
            "horde_errors_total{{{lead}kind=\"{}\",request=\"{}\"}} {count}",
            label(kind),
            label(request)
        );
    }

    family(&mut out, "horde_users_active", "gauge", "Virtual users running now.");
    let _ = writeln!(out, "horde_users_active{alone} {}", totals.users_active);
    family(&mut out, "horde_users_started", "counter", "Virtual users started.");
    let _ = writeln!(out, "horde_users_started_total{alone} {}", totals.users_started);
    family(&mut out, "horde_scheduled_starts", "counter", "Starts with an intended time (arrivals, throttle slots).");
    let _ = writeln!(out, "horde_scheduled_starts_total{alone} {}", totals.start_lag_us.len());
    family(
        &mut out,
        "horde_late_starts",
        "counter",
        "Starts later than their intended time by more than the late-start threshold.",
    );
    let _ = writeln!(out, "horde_late_starts_total{alone} {}", totals.late_starts);

    let _ = writeln!(out, "# TYPE horde_latency_seconds histogram");
    let _ = writeln!(out, "# UNIT horde_latency_seconds seconds");
    let _ = writeln!(
        out,
        "# HELP horde_latency_seconds Latency from each request's intended start (coordinated omission corrected), OK and KO."
    );
    for (name, recorder) in &rows {
        let all = recorder.corrected();
        let request = label(name);
        for bound_s in LATENCY_BUCKETS_S {
            let bound_us = (bound_s * 1e6) as u64;
            let count = if all.is_empty() { 0 } else { all.count_between(0, bound_us) };
            let _ =
                writeln!(out, "horde_latency_seconds_bucket{{{lead}request=\"{request}\",le=\"{bound_s:?}\"}} {count}");
        }
        let _ = writeln!(out, "horde_latency_seconds_bucket{{{lead}request=\"{request}\",le=\"+Inf\"}} {}", all.len());
        let sum_s = if all.is_empty() { 0.0 } else { all.mean() * all.len() as f64 / 1e6 };
        let _ = writeln!(out, "horde_latency_seconds_count{{{lead}request=\"{request}\"}} {}", all.len());
        let _ = writeln!(out, "horde_latency_seconds_sum{{{lead}request=\"{request}\"}} {sum_s}");
    }
    out.push_str("# EOF\n");
    out
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# TYPE {name} {kind}");
    let _ = writeln!(out, "# HELP {name} {help}");
}

/// The request rows, the ones past the cap merged into one.
fn capped_rows(totals: &Totals) -> Vec<(&str, std::borrow::Cow<'_, Recorder>)> {
    let mut rows: Vec<(&str, std::borrow::Cow<'_, Recorder>)> = totals
        .requests
        .iter()
        .take(MAX_REQUEST_LABELS)
        .map(|(name, recorder)| (&**name, std::borrow::Cow::Borrowed(recorder)))
        .collect();
    if totals.requests.len() > MAX_REQUEST_LABELS {
        let mut other = Recorder::default();
        for (_, recorder) in &totals.requests[MAX_REQUEST_LABELS..] {
            other.merge(recorder);
        }
        rows.push((OTHER, std::borrow::Cow::Owned(other)));
    }
    rows
}

/// A label value as OpenMetrics escapes it: backslash, double quote and line feed.
fn label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use horde_metrics::{RequestTiming, Snapshot};
    use std::time::SystemTime;

    #[test]
    fn counters_histograms_and_a_capped_label_set() {
        let mut snapshot = Snapshot { users_active: 3, ..Default::default() };
        for i in 0..(MAX_REQUEST_LABELS + 5) {
            let mut recorder = Recorder::default();
            recorder.record(&RequestTiming { latency_us: 2_000, uncorrected_us: 2_000, ..Default::default() }, true);
            snapshot.requests.push((format!("r{i} \"quoted\"\n").into(), recorder));
        }
        let mut totals = Totals::new(SystemTime::now(), 1);
        totals.absorb(snapshot);
        let text = render_openmetrics(&totals, &[]);
        assert!(text.ends_with("# EOF\n"));
        assert!(text.contains("horde_requests_total{request=\"r0 \\\"quoted\\\"\\n\",outcome=\"ok\"} 1"));
        assert!(text.contains("horde_requests_total{request=\"(other)\",outcome=\"ok\"} 5"));
        assert_eq!(text.matches("outcome=\"ok\"").count(), MAX_REQUEST_LABELS + 1);
        // 2 ms: above the 1 ms bucket, inside the 2.5 ms one.
        assert!(text.contains("horde_latency_seconds_bucket{request=\"r1 \\\"quoted\\\"\\n\",le=\"0.001\"} 0"));
        assert!(text.contains("horde_latency_seconds_bucket{request=\"r1 \\\"quoted\\\"\\n\",le=\"0.0025\"} 1"));
        assert!(text.contains("horde_latency_seconds_bucket{request=\"(other)\",le=\"+Inf\"} 5"));
        assert!(text.contains("horde_users_active 3"));
    }

    /// Every sample of a run of several carries its run's labels, escaped like any value.
    #[test]
    fn a_runs_labels_lead_every_sample() {
        let mut recorder = Recorder::default();
        recorder.record(&RequestTiming { latency_us: 2_000, uncorrected_us: 2_000, ..Default::default() }, true);
        let snapshot = Snapshot { users_active: 2, requests: vec![("home".into(), recorder)], ..Default::default() };
        let mut totals = Totals::new(SystemTime::now(), 1);
        totals.absorb(snapshot);
        let live = LiveMetrics::new();
        let level = live.with_labels(vec![("level".into(), "25".into()), ("note".into(), "a \"b\"".into())]);
        level.publish(&totals);
        let text = live.current();
        let lead = "level=\"25\",note=\"a \\\"b\\\"\"";
        assert!(text.contains(&format!("horde_requests_total{{{lead},request=\"home\",outcome=\"ok\"}} 1")), "{text}");
        assert!(text.contains(&format!("horde_users_active{{{lead}}} 2")), "{text}");
        assert!(text.contains(&format!("horde_latency_seconds_count{{{lead},request=\"home\"}} 1")), "{text}");
        let samples = text.lines().filter(|l| !l.starts_with('#'));
        assert!(samples.clone().count() > 20);
        assert!(samples.into_iter().all(|l| l.contains(lead)), "{text}");
    }
}

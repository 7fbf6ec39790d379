//! The charts' data, embedded in report.html as JSON for assets/report.js to draw with uPlot:
//! over time (from the time series, percentiles from histograms.hlog merged exactly), the
//! latency distribution, and each request's and group's own.

use super::histograms::{BucketLatency, ALL_CORRECTED, ALL_UNCORRECTED};
use super::pages::GroupKind;
use super::source::{RunResults, TimePoint};
use hdrhistogram::Histogram;
use horde_metrics::LatencyStats;
use serde::Serialize;
use std::collections::BTreeMap;

/// What report.js draws. `kind` says how the x values read: `time` (seconds from the start of
/// the run), `spectrum` (x = -log10(1 - q): 1 is the 90th percentile, 2 the 99th, 3 the
/// 99.9th), `histogram` (latency in ms, log scale, drawn as steps).
#[derive(Serialize, Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub kind: &'static str,
    /// Charts with the same key move together: cursor and zoom.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<&'static str>,
    pub x: Vec<f64>,
    pub series: Vec<Series>,
    /// A chart over time whose last point is shorter than the others (the run ended in it):
    /// report.js marks it, so that a reader knows its rates are over a shorter time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<PartialPoint>,
}

/// The last point of a chart over time when the run ended part-way through it.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct PartialPoint {
    /// Its x: the point's start, in seconds from the start of the run.
    pub x: f64,
    /// The time it measured, and the width of a whole point, in seconds.
    pub seconds: f64,
    pub of_seconds: f64,
}

impl PartialPoint {
    /// The run's partial last point, when it is the last point of the chart whose x are `x`.
    fn at_end_of(results: &RunResults, x: &[f64]) -> Option<PartialPoint> {
        let (start_ms, duration_ms) = results.partial_last_point()?;
        let point = PartialPoint {
            x: start_ms as f64 / 1000.0,
            seconds: duration_ms as f64 / 1000.0,
            of_seconds: results.bucket_ms as f64 / 1000.0,
        };
        (x.last() == Some(&point.x)).then_some(point)
    }
}

#[derive(Serialize, Debug, Clone)]
pub struct Series {
    pub label: String,
    /// The axis: `ms`, `req/s`, `users`, `%`. A chart has at most two, left then right.
    pub unit: &'static str,
    pub color: &'static str,
    pub values: Vec<Option<f64>>,
}

/// A chart whose x is rows (`labels[i]` at x = i), for report.js's `change` and `runs` kinds:
/// the compare page's metrics and the bench comparison's cells. `S` is a series as the legend
/// reads it (its label, unit, colour and values).
#[derive(Serialize, Debug)]
pub struct RowsChart<S = Series> {
    pub title: String,
    /// `change`: each row's estimate (`series[0]`) with its interval (`low`, `high`) and the
    /// tolerance `band`; `runs`: each run's value, A's and B's side by side in a row's slot.
    pub kind: &'static str,
    pub labels: Vec<String>,
    /// What the x axis writes under each row when not its whole label (`labels` stay for the
    /// legend): the part that differs from row to row.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ticks: Vec<String>,
    /// The x axis' label: what the ticks are values of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x_label: Option<String>,
    /// The y axis' label.
    pub unit: String,
    /// A log y axis: latency and throughput of rows that differ by orders of magnitude.
    pub log: bool,
    pub x: Vec<f64>,
    pub series: Vec<S>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub low: Vec<Option<f64>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub high: Vec<Option<f64>>,
    /// The colour of each point (`change`): its verdict's, or its machine's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub colors: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub band: Option<[f64; 2]>,
    /// The y axis' range when it is not every value's (`change`): what lies beyond is drawn
    /// clipped at its edge, as an arrow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<[f64; 2]>,
}

/// Colours that stay apart for the colour-blind (Okabe and Ito's palette), then greys.
const PALETTE: [&str; 8] = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#555555"];
const OK_COLOUR: &str = "#009E73";
const KO_COLOUR: &str = "#D55E00";

/// Three decimals: microseconds in a millisecond figure, and a compact file.
fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

fn ms(us: u64) -> Option<f64> {
    Some(us as f64 / 1000.0)
}

fn percentile_label(p: f64) -> String {
    format!("p{p}")
}

/// The x values of a run's charts over time: the start of each point, in seconds.
fn time_axis(starts: &[u64]) -> Vec<f64> {
    starts.iter().map(|s| *s as f64 / 1000.0).collect()
}

/// Every point's start: the time series' and the histograms', which a killed run may have
/// written up to different intervals.
fn starts(points: &[TimePoint], merged: &[BucketLatency]) -> Vec<u64> {
    let mut starts: Vec<u64> = points.iter().map(|p| p.start_ms).chain(merged.iter().map(|m| m.start_ms)).collect();
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// Latency percentiles (and the max) over time: from the merged histograms when there are
/// any, else from the time series' own figures for each interval.
fn percentile_series(
    starts: &[u64],
    points: &[TimePoint],
    merged: &LatencyOverTime,
    percentiles: &[f64],
) -> Vec<Series> {
    let by_start: BTreeMap<u64, &BucketLatency> = merged.buckets.iter().map(|m| (m.start_ms, m)).collect();
    let point_at: BTreeMap<u64, &TimePoint> = points.iter().map(|p| (p.start_ms, p)).collect();
    let value = |start: &u64, p: Option<f64>| -> Option<f64> {
        if !merged.buckets.is_empty() {
            let bucket = by_start.get(start).filter(|b| b.count > 0)?;
            return match p {
                Some(p) => {
                    let taken = merged.percentiles.iter().position(|q| *q == p)?;
                    ms(bucket.at_percentiles_us[taken])
                }
                None => ms(bucket.max_us),
            };
        }
        let latency: &LatencyStats = point_at.get(start)?.latency.as_ref().filter(|l| l.count > 0)?;
        match p {
            Some(p) => ms(latency.percentile(p)?),
            None => ms(latency.max_us),
        }
    };
    let mut series: Vec<Series> = percentiles
        .iter()
        .enumerate()
        .map(|(i, p)| Series {
            label: percentile_label(*p),
            unit: "ms",
            color: PALETTE[i % PALETTE.len()],
            values: starts.iter().map(|s| value(s, Some(*p))).collect(),
        })
        .collect();
    series.push(Series {
        label: "max".into(),
        unit: "ms",
        color: PALETTE[7],
        values: starts.iter().map(|s| value(s, None)).collect(),
    });
    series
}

fn rate_series(starts: &[u64], points: &[TimePoint]) -> Vec<Series> {
    let point_at: BTreeMap<u64, &TimePoint> = points.iter().map(|p| (p.start_ms, p)).collect();
    let rate = |count: fn(&TimePoint) -> u64| -> Vec<Option<f64>> {
        starts
            .iter()
            .map(|s| point_at.get(s).map(|p| round3(count(p) as f64 * 1000.0 / p.duration_ms.max(1) as f64)))
            .collect()
    };
    vec![
        Series { label: "OK/s".into(), unit: "req/s", color: OK_COLOUR, values: rate(|p| p.ok) },
        Series { label: "KO/s".into(), unit: "req/s", color: KO_COLOUR, values: rate(|p| p.ko) },
    ]
}

/// A tag's latency over time from histograms.hlog: each bucket's value at every percentile a
/// chart may show (the plan's, and the median the overview shows); no buckets without a log.
struct LatencyOverTime {
    percentiles: Vec<f64>,
    buckets: Vec<BucketLatency>,
}

fn latency_over_time(results: &RunResults, tag: Option<&str>) -> LatencyOverTime {
    let mut percentiles = vec![50.0];
    percentiles.extend(results.summary.plan.options.percentiles.iter().filter(|p| **p != 50.0));
    let buckets = match (results.histograms.as_ref(), tag) {
        (Some(log), Some(tag)) => log.bucket_latencies(tag, results.bucket_ms, &percentiles),
        _ => Vec::new(),
    };
    LatencyOverTime { percentiles, buckets }
}

/// The over-time page's charts, zoomed together.
pub fn over_time(results: &RunResults) -> Vec<(String, Chart)> {
    let percentiles = &results.summary.plan.options.percentiles;
    let merged = latency_over_time(results, Some(ALL_CORRECTED));
    let starts = starts(&results.all, &merged.buckets);
    let x = time_axis(&starts);
    let point_at: BTreeMap<u64, &TimePoint> = results.all.iter().map(|p| (p.start_ms, p)).collect();
    let users = starts.iter().map(|s| point_at.get(s).map(|p| p.users_active as f64)).collect();
    let errors_percent = starts
        .iter()
        .map(|s| {
            point_at.get(s).filter(|p| p.ok + p.ko > 0).map(|p| round3(100.0 * p.ko as f64 / (p.ok + p.ko) as f64))
        })
        .collect();
    let rates = rate_series(&starts, &results.all);
    let partial = PartialPoint::at_end_of(results, &x);
    let chart = |title: &str, series: Vec<Series>| Chart {
        title: title.into(),
        kind: "time",
        sync: Some("time"),
        x: x.clone(),
        series,
        partial,
    };
    vec![
        (
            "time-users".into(),
            chart(
                "Active users",
                vec![Series { label: "active users".into(), unit: "users", color: PALETTE[0], values: users }],
            ),
        ),
        ("time-rps".into(), chart("Requests per second", rates.clone())),
        (
            "time-latency".into(),
            chart(
                "Latency percentiles (from the intended start)",
                percentile_series(&starts, &results.all, &merged, percentiles),
            ),
        ),
        (
            "time-errors".into(),
            chart(
                "Errors",
                vec![
                    rates[1].clone(),
                    Series { label: "KO %".into(), unit: "%", color: PALETTE[4], values: errors_percent },
                ],
            ),
        ),
    ]
}

/// The overview's charts, Gatling's front page's: responses per second over the active users
/// (two axes), then the median and the highest configured percentile over time.
pub fn overview(results: &RunResults) -> Vec<(String, Chart)> {
    let percentiles = &results.summary.plan.options.percentiles;
    let merged = latency_over_time(results, Some(ALL_CORRECTED));
    let starts = starts(&results.all, &merged.buckets);
    let x = time_axis(&starts);
    let partial = PartialPoint::at_end_of(results, &x);
    let point_at: BTreeMap<u64, &TimePoint> = results.all.iter().map(|p| (p.start_ms, p)).collect();
    let mut throughput = rate_series(&starts, &results.all);
    throughput.push(Series {
        label: "active users".into(),
        unit: "users",
        color: PALETTE[0],
        values: starts.iter().map(|s| point_at.get(s).map(|p| p.users_active as f64)).collect(),
    });
    let mut charts = vec![(
        "overview".to_string(),
        Chart {
            title: "Responses per second and active users".into(),
            kind: "time",
            sync: Some("overview"),
            x: x.clone(),
            series: throughput,
            partial,
        },
    )];
    let top = percentiles.iter().copied().fold(f64::NAN, f64::max);
    let shown: Vec<f64> = if top.is_finite() && top != 50.0 { vec![50.0, top] } else { vec![50.0] };
    let mut latency = percentile_series(&starts, &results.all, &merged, &shown);
    latency.truncate(shown.len());
    charts.push((
        "overview-latency".to_string(),
        Chart {
            title: "Latency over time (from the intended start)".into(),
            kind: "time",
            sync: Some("overview"),
            x,
            series: latency,
            partial,
        },
    ));
    charts
}

/// Percentiles at which the spectrum is drawn: 0, 10, 20, ... then ever closer to 100
/// (x = -log10(1 - q) in steps of 0.1 up to 99.999 %).
fn spectrum_quantiles() -> Vec<f64> {
    (0..=50).map(|k| 1.0 - 10f64.powf(-(k as f64) / 10.0)).collect()
}

fn spectrum_x(q: f64) -> f64 {
    round3(-(1.0 - q).max(1e-9).log10())
}

/// The latency histogram and percentile spectrum, corrected and uncorrected: from every
/// interval of histograms.hlog, else the spectrum from the summary's percentiles.
pub fn distribution(results: &RunResults) -> Vec<(String, Chart)> {
    let log = results.histograms.as_ref();
    let corrected = log.and_then(|l| l.total(ALL_CORRECTED)).filter(|h| !h.is_empty());
    let uncorrected = log.and_then(|l| l.total(ALL_UNCORRECTED)).filter(|h| !h.is_empty());
    let mut charts = Vec::new();
    if let Some(corrected) = &corrected {
        let quantiles = spectrum_quantiles();
        let at = |h: &Histogram<u64>| quantiles.iter().map(|q| ms(h.value_at_quantile(*q))).collect::<Vec<_>>();
        let mut series =
            vec![Series { label: "corrected".into(), unit: "ms", color: PALETTE[0], values: at(corrected) }];
        if let Some(u) = &uncorrected {
            series.push(Series { label: "uncorrected".into(), unit: "ms", color: PALETTE[1], values: at(u) });
        }
        charts.push((
            "dist-spectrum".to_string(),
            Chart {
                title: "Percentile spectrum".into(),
                kind: "spectrum",
                sync: None,
                x: quantiles.iter().map(|q| spectrum_x(*q)).collect(),
                series,
                partial: None,
            },
        ));
        charts.push(("dist-histogram".to_string(), histogram_chart(corrected, uncorrected.as_ref())));
    } else {
        let latency = &results.summary.global.latency;
        if latency.all.count > 0 {
            let mut quantiles: Vec<f64> = latency.all.percentiles.iter().map(|p| p.percentile / 100.0).collect();
            quantiles.insert(0, 0.0);
            let values = |stats: &LatencyStats| -> Vec<Option<f64>> {
                std::iter::once(ms(stats.min_us)).chain(stats.percentiles.iter().map(|p| ms(p.value_us))).collect()
            };
            let mut series =
                vec![Series { label: "corrected".into(), unit: "ms", color: PALETTE[0], values: values(&latency.all) }];
            if latency.uncorrected.percentiles.len() == latency.all.percentiles.len() {
                series.push(Series {
                    label: "uncorrected".into(),
                    unit: "ms",
                    color: PALETTE[1],
                    values: values(&latency.uncorrected),
                });
            }
            charts.push((
                "dist-spectrum".to_string(),
                Chart {
                    title: "Percentile spectrum (the summary's percentiles)".into(),
                    kind: "spectrum",
                    sync: None,
                    x: quantiles.iter().map(|q| spectrum_x(*q)).collect(),
                    series,
                    partial: None,
                },
            ));
        }
    }
    charts
}

/// Share of requests in each of 60 bins of equal width on a log scale, between the smallest
/// and the largest latency of either histogram.
fn histogram_chart(corrected: &Histogram<u64>, uncorrected: Option<&Histogram<u64>>) -> Chart {
    const BINS: usize = 60;
    let low = uncorrected.map_or(corrected.min(), |u| u.min().min(corrected.min())).max(1) as f64;
    let high = uncorrected.map_or(corrected.max(), |u| u.max().max(corrected.max())).max(2) as f64;
    let step = ((high / low).ln() / BINS as f64).max(1e-9);
    let edges: Vec<f64> = (0..=BINS).map(|i| low * (step * i as f64).exp()).collect();
    let shares = |h: &Histogram<u64>| -> Vec<Option<f64>> {
        let mut counts = vec![0u64; BINS];
        for value in h.iter_recorded() {
            let v = (value.value_iterated_to() as f64).max(low);
            let bin = (((v / low).ln() / step) as usize).min(BINS - 1);
            counts[bin] += value.count_at_value();
        }
        let total = h.len().max(1) as f64;
        counts.iter().map(|c| Some(round3(100.0 * *c as f64 / total))).collect()
    };
    let mut series =
        vec![Series { label: "corrected".into(), unit: "%", color: PALETTE[0], values: shares(corrected) }];
    if let Some(u) = uncorrected {
        series.push(Series { label: "uncorrected".into(), unit: "%", color: PALETTE[1], values: shares(u) });
    }
    Chart {
        title: "Latency histogram (share of requests)".into(),
        kind: "histogram",
        sync: None,
        x: edges[..BINS].iter().map(|e| round3(e / 1000.0)).collect(),
        series,
        partial: None,
    }
}

/// A request row's charts: percentiles, throughput and phases over time.
pub fn request(results: &RunResults, name: &str, position: usize, id: &str) -> Vec<(String, Chart)> {
    let percentiles = &results.summary.plan.options.percentiles;
    let points = results.rows.get(name).map_or(&[][..], Vec::as_slice);
    let log = results.histograms.as_ref();
    let tag = log.and_then(|l| l.tag_of('r', name, position));
    let merged = latency_over_time(results, tag.as_deref());
    let starts = starts(points, &merged.buckets);
    if starts.is_empty() {
        return Vec::new();
    }
    let x = time_axis(&starts);
    let partial = PartialPoint::at_end_of(results, &x);
    let sync = Some("request");
    let point_at: BTreeMap<u64, &TimePoint> = points.iter().map(|p| (p.start_ms, p)).collect();
    let phase_names = ["dns", "connect", "tls", "send", "wait", "receive"];
    let phases: Vec<Series> = phase_names
        .iter()
        .enumerate()
        .map(|(i, phase)| Series {
            label: phase.to_string(),
            unit: "ms",
            color: PALETTE[i % PALETTE.len()],
            values: starts.iter().map(|s| point_at.get(s).map(|p| round3(p.phase_means()[i] / 1000.0))).collect(),
        })
        .filter(|s| s.values.iter().any(|v| v.is_some_and(|v| v > 0.0)))
        .collect();
    let mut charts = vec![
        (
            format!("{id}-latency"),
            Chart {
                title: "Latency percentiles".into(),
                kind: "time",
                sync,
                x: x.clone(),
                series: percentile_series(&starts, points, &merged, percentiles),
                partial,
            },
        ),
        (
            format!("{id}-rps"),
            Chart {
                title: "Requests per second".into(),
                kind: "time",
                sync,
                x: x.clone(),
                series: rate_series(&starts, points),
                partial,
            },
        ),
    ];
    if !phases.is_empty() {
        charts.push((
            format!("{id}-phases"),
            Chart { title: "Phases (mean per interval)".into(), kind: "time", sync, x, series: phases, partial },
        ));
    }
    charts
}

/// A group's duration percentiles over time, when histograms.hlog has the group (for
/// `eventually`, its time to consistency).
pub fn group(results: &RunResults, name: &str, position: usize, id: &str, kind: GroupKind) -> Vec<(String, Chart)> {
    let log = results.histograms.as_ref();
    let tag = log.and_then(|l| l.tag_of('g', name, position));
    let merged = latency_over_time(results, tag.as_deref());
    if merged.buckets.is_empty() {
        return Vec::new();
    }
    let starts = starts(&[], &merged.buckets);
    let series = percentile_series(&starts, &[], &merged, &results.summary.plan.options.percentiles);
    let x = time_axis(&starts);
    vec![(
        format!("{id}-duration"),
        Chart {
            title: format!("{} percentiles", kind.measure()),
            kind: "time",
            sync: Some("request"),
            partial: PartialPoint::at_end_of(results, &x),
            x,
            series,
        },
    )]
}

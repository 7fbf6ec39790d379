//! The page of `horde bench compare --html FILE`: seed 002's "error bars on several machine
//! types" as pictures. The bench command owns the statistics and fills a [`BenchPage`]; this
//! module only draws it with report.html's machinery (styles, script, CSP, escaping): each
//! benchmark's Scores with their Errors, a machine's colour each, then each machine's change
//! against the reference with its interval against the noise band, coloured by verdict, then
//! the console's table.

use super::charts::RowsChart;
use super::escape::html;
use super::pages::chart;
use super::{write_atomically, Document};
use crate::results_dir::ResultsError;
use serde::Serialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Slots drawn in one chart (the table lists every cell): beyond this, labels cannot be read.
const CHARTED_SLOTS: usize = 60;

/// What the page shows, computed by `horde bench compare`.
#[derive(Debug, Default)]
pub struct BenchPage {
    pub title: String,
    /// Cells slower than the reference (the verdict badge: "regression" when any).
    pub slower: Vec<String>,
    /// Sentences under the verdict: the machines and their files, the method.
    pub notes: Vec<String>,
    /// Each benchmark's Scores, then each machine's change against the reference.
    pub charts: Vec<IntervalChart>,
    /// The console's table, its header first.
    pub table: Vec<Vec<String>>,
    /// `--budget`'s lines, when asked for.
    pub budget: Option<String>,
}

/// Points with whiskers in slots along x: a Score and its Error, or a change and its interval.
#[derive(Debug, Default, Clone)]
pub struct IntervalChart {
    pub title: String,
    /// The y axis' label.
    pub axis: String,
    /// The unit of a point's value in the legend.
    pub unit: String,
    pub labels: Vec<String>,
    pub values: Vec<Option<f64>>,
    pub low: Vec<Option<f64>>,
    pub high: Vec<Option<f64>>,
    pub colors: Vec<&'static str>,
    /// The noise band around 0, shaded.
    pub band: Option<[f64; 2]>,
    /// Values that cannot be below 0 (a Score: a time, a rate): a whisker stops at 0, and the
    /// axis is logarithmic when the values span more than ten times.
    pub positive: bool,
}

/// Values spanning more than this ratio get a log axis: on a linear one the small ones are a
/// flat line at the bottom.
const LOG_AXIS_SPAN: f64 = 10.0;

/// Whether `values` (positive ones) span more than [`LOG_AXIS_SPAN`] times.
fn spans_orders(values: &[Option<f64>]) -> bool {
    let positive = values.iter().flatten().copied().filter(|v| *v > 0.0 && v.is_finite());
    let (low, high) = positive.fold((f64::MAX, 0.0f64), |(low, high), v| (low.min(v), high.max(v)));
    high > 0.0 && high / low > LOG_AXIS_SPAN
}

/// The x axis' tick of each slot: its label without the words every label shares, and with
/// `name=` cut from a `name=value` word whose name every label has at that place; those names
/// become the axis' label. `log_rounds=4 laptop`, `log_rounds=8 laptop` read `4 laptop`,
/// `8 laptop` over `log_rounds`. Words are separated by spaces, commas and brackets.
fn varying_parts(labels: &[String]) -> (Vec<String>, Option<String>) {
    let words = |label: &str| -> Vec<String> {
        label
            .split(|c: char| c.is_whitespace() || ",()".contains(c))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let split: Vec<Vec<String>> = labels.iter().map(|l| words(l)).collect();
    let Some(first) = split.first() else { return (Vec::new(), None) };
    let shared: Vec<&String> = first.iter().filter(|w| split.iter().all(|ws| ws.contains(w))).collect();
    let name_of = |word: &str| word.split_once('=').map(|(name, _)| name.to_string());
    let names: Vec<String> = first
        .iter()
        .filter(|w| !shared.contains(w))
        .filter_map(|w| name_of(w))
        .filter(|name| split.iter().all(|ws| ws.iter().any(|w| name_of(w).as_ref() == Some(name))))
        .collect();
    let ticks = split
        .iter()
        .map(|ws| {
            ws.iter()
                .filter(|w| !shared.contains(w))
                .map(|w| match w.split_once('=') {
                    Some((name, value)) if names.iter().any(|n| n == name) => value.to_string(),
                    _ => w.clone(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .zip(labels)
        .map(|(tick, label): (String, &String)| if tick.is_empty() { label.clone() } else { tick })
        .collect();
    (ticks, (!names.is_empty()).then(|| names.join(", ")))
}

/// A series whose unit is the benchmark's own (`ms/op`, `ops/s`).
#[derive(Serialize)]
struct ValueSeries {
    label: &'static str,
    unit: String,
    color: &'static str,
    values: Vec<Option<f64>>,
}

pub fn render_bench(page: &BenchPage) -> String {
    let mut doc = Document {
        title: page.title.clone(),
        status: if page.slower.is_empty() { "no regression".into() } else { "regression".into() },
        nav: vec![("comparison", "Comparison")],
        pages: String::new(),
        charts: serde_json::Map::new(),
        note: None,
    };
    let mut out = String::from("<h2>Comparison</h2>");
    let verdict = if page.slower.is_empty() {
        r#"<span class="badge good">no cell slower than the reference</span>"#.to_string()
    } else {
        let cells: Vec<String> = page.slower.iter().map(|c| html(c)).collect();
        format!(r#"<span class="badge bad">slower</span> {}"#, cells.join(", "))
    };
    let _ = write!(out, r#"<p id="bench-verdict">{verdict}</p>"#);
    for note in &page.notes {
        let _ = write!(out, r#"<p class="note">{}</p>"#, html(note));
    }
    for (index, spec) in page.charts.iter().enumerate() {
        let shown = spec.labels.len().min(CHARTED_SLOTS);
        let more = if spec.labels.len() > shown {
            format!(" (the first {shown} of {}; the table lists them all)", spec.labels.len())
        } else {
            String::new()
        };
        let labels = spec.labels[..shown].to_vec();
        let (ticks, x_label) = varying_parts(&labels);
        let mut low = spec.low[..shown].to_vec();
        if spec.positive {
            low.iter_mut().flatten().for_each(|v| *v = v.max(0.0));
        }
        let chart_json = RowsChart {
            title: format!("{}{more}", spec.title),
            kind: "change",
            labels,
            ticks,
            x_label,
            unit: spec.axis.clone(),
            log: spec.positive && spans_orders(&spec.values[..shown]),
            x: (0..shown).map(|i| i as f64).collect(),
            series: vec![ValueSeries {
                label: "value",
                unit: spec.unit.clone(),
                color: "#555555",
                values: spec.values[..shown].to_vec(),
            }],
            low,
            high: spec.high[..shown].to_vec(),
            colors: spec.colors[..shown].to_vec(),
            band: spec.band,
            range: None,
        };
        let ids = doc.charts(vec![(format!("bench-{index}"), chart_json)]);
        for id in &ids {
            out.push_str(&chart(id));
        }
    }
    out.push_str(&table(&page.table));
    if let Some(budget) = &page.budget {
        let _ = write!(out, r#"<pre id="bench-budget">{}</pre>"#, html(budget));
    }
    doc.page("comparison", &out);
    doc.render()
}

/// Writes the page to `path` (replacing it whole) and returns the path.
pub fn write_bench_html(page: &BenchPage, path: &Path) -> Result<PathBuf, ResultsError> {
    write_atomically(path, &render_bench(page))
}

fn table(rows: &[Vec<String>]) -> String {
    let Some((header, body)) = rows.split_first() else {
        return String::new();
    };
    let mut out = String::from(r#"<table class="stats" id="bench-table"><thead><tr>"#);
    for cell in header {
        let _ = write!(out, "<th>{}</th>", html(cell));
    }
    out.push_str("</tr></thead><tbody>");
    for row in body {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if i == 0 { r#" class="name""# } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", html(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axis_shows_what_varies_between_slots_and_names_the_parameter() {
        let labels: Vec<String> =
            ["log_rounds=4 laptop", "log_rounds=4 ci box", "log_rounds=12 laptop", "log_rounds=12 ci box"]
                .iter()
                .map(|l| l.to_string())
                .collect();
        let (ticks, name) = varying_parts(&labels);
        assert_eq!(ticks, ["4 laptop", "4 ci box", "12 laptop", "12 ci box"]);
        assert_eq!(name.as_deref(), Some("log_rounds"));
        // A change chart's rows: the benchmark's name is shared, its parameters are not.
        let labels: Vec<String> =
            ["hash (log_rounds=4, salt=8)", "hash (log_rounds=10, salt=8)"].iter().map(|l| l.to_string()).collect();
        assert_eq!(varying_parts(&labels), (vec!["4".to_string(), "10".to_string()], Some("log_rounds".to_string())));
        // Labels without parameters stay whole.
        let labels: Vec<String> = ["laptop", "ci"].iter().map(|l| l.to_string()).collect();
        assert_eq!(varying_parts(&labels), (labels.clone(), None));
    }

    #[test]
    fn scores_spanning_orders_of_magnitude_get_a_log_axis_and_no_whisker_below_zero() {
        let chart = IntervalChart {
            title: "hash".into(),
            axis: "ms/op".into(),
            unit: "ms/op".into(),
            labels: vec!["log_rounds=4".into(), "log_rounds=12".into()],
            values: vec![Some(4.0), Some(354.0)],
            low: vec![Some(-2.0), Some(340.0)],
            high: vec![Some(10.0), Some(368.0)],
            colors: vec!["#0072B2"; 2],
            band: None,
            positive: true,
        };
        let page = BenchPage { title: "t".into(), charts: vec![chart.clone()], ..BenchPage::default() };
        let html = render_bench(&page);
        let start = html.find(r#"id="report-charts">"#).unwrap() + r#"id="report-charts">"#.len();
        let data: serde_json::Value =
            serde_json::from_str(&html[start..start + html[start..].find("</script>").unwrap()]).unwrap();
        let spec = &data["bench-0"];
        assert_eq!(spec["log"], true, "4 to 354 ms");
        assert_eq!(spec["low"][0], 0.0, "a Score's whisker stops at 0");
        assert_eq!(spec["ticks"], serde_json::json!(["4", "12"]));
        assert_eq!(spec["x_label"], "log_rounds");
        // Values within ten times of each other keep a linear axis.
        let close = IntervalChart { values: vec![Some(40.0), Some(354.0)], ..chart };
        let html = render_bench(&BenchPage { charts: vec![close], ..BenchPage::default() });
        assert!(html.contains(r#""log":false"#));
    }
}

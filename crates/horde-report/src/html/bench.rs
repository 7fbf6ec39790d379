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
use crate::results::ResultsError;
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
        let chart_json = RowsChart {
            title: format!("{}{more}", spec.title),
            kind: "change",
            labels: spec.labels[..shown].to_vec(),
            unit: spec.axis.clone(),
            log: false,
            x: (0..shown).map(|i| i as f64).collect(),
            series: vec![ValueSeries {
                label: "value",
                unit: spec.unit.clone(),
                color: "#555555",
                values: spec.values[..shown].to_vec(),
            }],
            low: spec.low[..shown].to_vec(),
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

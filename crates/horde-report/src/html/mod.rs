//! report.html: one self-contained file rendered from a results directory alone. Tables are
//! HTML (the numbers read without JavaScript); charts are drawn by uPlot, embedded with the
//! report's own script, from JSON blocks. A Content-Security-Policy lets only those scripts run
//! (by their hashes) and forbids loading anything, so the file opens offline and a name or a
//! server's message cannot run code in it.
//!
//! ```no_run
//! let path = horde_report::write_html(std::path::Path::new("results/journey-20261121-062100")).unwrap();
//! println!("{}", path.display());
//! ```

mod assets;
mod bench;
mod capacity;
mod charts;
mod compare;
mod escape;
mod histograms;
mod pages;
mod source;
mod sql;

use crate::results_dir::ResultsError;
use crate::sweep::SweepReport;
use escape::html;
pub use source::ReadCache;
use source::RunResults;
use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub use bench::{render_bench, write_bench_html, BenchPage, IntervalChart};
pub use compare::{render_compare, write_compare_html};

/// Requests and groups with a page of their own: the busiest ones, so that a run with
/// thousands of names keeps a file of reasonable size (the table lists them all).
const DETAIL_PAGES: usize = 200;

/// Renders the report of a results directory: a run's (summary.json) or a sweep's (sweep.json).
pub fn render_html(dir: &Path) -> Result<String, ResultsError> {
    Ok(render_parts(dir, &mut ReadCache::default())?.document(None))
}

/// The parts of a run's or a sweep's report; `cache` holds what an earlier rendering of the
/// same directory read.
fn render_parts(dir: &Path, cache: &mut ReadCache) -> Result<ReportParts, ResultsError> {
    let sweep_file = dir.join("sweep.json");
    if !dir.join("summary.json").exists() && sweep_file.exists() {
        let text = std::fs::read_to_string(&sweep_file)
            .map_err(|cause| ResultsError::Read { path: sweep_file.clone(), cause: cause.to_string() })?;
        let report: SweepReport =
            serde_json::from_str(&text).map_err(|cause| ResultsError::Parse { path: sweep_file, cause })?;
        return Ok(sweep_document(&report).into_parts());
    }
    render_run(dir, cache)
}

/// Writes DIR/report.html (replacing it whole, as summary.json is) and returns its path.
pub fn write_html(dir: &Path) -> Result<PathBuf, ResultsError> {
    let text = render_html(dir)?;
    write_file(dir, &text)
}

pub(crate) fn write_file(dir: &Path, text: &str) -> Result<PathBuf, ResultsError> {
    write_atomically(&dir.join("report.html"), text)
}

/// Writes `path` whole or not at all: a reader never sees half a page.
fn write_atomically(path: &Path, text: &str) -> Result<PathBuf, ResultsError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.tmp"));
    let written = std::fs::write(&temporary, text).and_then(|_| std::fs::rename(&temporary, path));
    if let Err(cause) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(ResultsError::Write { path: path.to_path_buf(), cause });
    }
    Ok(path.to_path_buf())
}

/// The pages of one report, then assembled into the document.
struct Document {
    title: String,
    status: String,
    nav: Vec<(&'static str, &'static str)>,
    pages: String,
    charts: serde_json::Map<String, serde_json::Value>,
    /// A line under every page (HTML): a run's report says there which clock its times use.
    note: Option<&'static str>,
}

/// Where a run report's times count from, under every page (the console says it too).
const CLOCK_NOTE: &str =
    "Times count from each request's start, or, in a throttled run, from the slot the server held it \
back from (coordinated omission); groups and <code>eventually</code> on the same clock. The generator's own lag is \
kept out of them: it is the start lag (Environment and plan).";

impl Document {
    fn page(&mut self, id: &str, body: &str) {
        let _ = write!(self.pages, r#"<section class="page" id="{}">{body}</section>"#, html(id));
    }

    fn charts<C: serde::Serialize>(&mut self, charts: Vec<(String, C)>) -> Vec<String> {
        charts
            .into_iter()
            .map(|(id, chart)| {
                self.charts.insert(id.clone(), serde_json::to_value(chart).expect("charts serialize"));
                id
            })
            .collect()
    }

    /// The report as its parts, each escaped where it was made.
    fn into_parts(self) -> ReportParts {
        let mut nav = String::new();
        for (id, label) in &self.nav {
            let _ = write!(nav, r##"<a href="#{id}" data-page="{id}">{label}</a>"##);
        }
        let mut main = self.pages;
        if let Some(note) = self.note {
            let _ = write!(main, r#"<p class="clock-note" id="clock-note">{note}</p>"#);
        }
        ReportParts {
            header: format!("<h1>{}</h1> {}", html(&self.title), pages_status(&self.status)),
            title: self.title,
            nav,
            main,
            charts: self.charts,
        }
    }

    fn render(self) -> String {
        self.into_parts().document(None)
    }
}

/// A report's parts: the page assembles them, and the live dashboard sends them each interval
/// to a page already open, which puts them in place of its own (live.js).
#[derive(Debug)]
struct ReportParts {
    title: String,
    /// The inside of `<header>`: the run's name and status (HTML).
    header: String,
    /// The inside of `<nav>` (HTML).
    nav: String,
    /// The inside of `<main>`: every page (HTML).
    main: String,
    charts: serde_json::Map<String, serde_json::Value>,
}

impl ReportParts {
    /// The whole document: report.html, or with `live`, the dashboard's page, which also runs
    /// live.js and may connect back to the server that sent it (and nowhere else).
    fn document(&self, live: Option<&LivePage>) -> String {
        let style = format!("{}\n{}", assets::UPLOT_CSS, assets::REPORT_CSS);
        let csp = match live {
            None => assets::content_security_policy(&[assets::UPLOT_JS, assets::REPORT_JS], &[&style]),
            Some(_) => {
                assets::live_content_security_policy(&[assets::UPLOT_JS, assets::REPORT_JS, assets::LIVE_JS], &[&style])
            }
        };
        let mut out = String::with_capacity(self.main.len() + 200_000);
        let _ = write!(
            out,
            r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<meta name="generator" content="horde {version}">
"#,
            version = env!("CARGO_PKG_VERSION"),
        );
        if let Some(live) = live {
            let settings = serde_json::json!({ "token": live.token, "control": live.control, "version": live.version });
            let _ = writeln!(out, r#"<meta name="horde-dashboard" content="{}">"#, html(&settings.to_string()));
        }
        let _ = write!(
            out,
            r#"<title>{title} · horde report</title>
<style>{style}</style>
</head><body>
<header>{header}</header>
<nav id="nav">{nav}</nav>
<main>{main}</main>
<footer>Made by horde from saved results alone. Charts: uPlot 1.6.32 (MIT licence, below in this file's source).</footer>
"#,
            title = html(&self.title),
            header = self.header,
            nav = self.nav,
            main = self.main,
        );
        let _ = writeln!(
            out,
            r#"<script type="application/json" id="report-charts">{}</script>"#,
            escape::script_json(&self.charts)
        );
        let _ = writeln!(out, "<script>{}</script>", assets::UPLOT_JS);
        let _ = writeln!(out, "<script>{}</script>", assets::REPORT_JS);
        if live.is_some() {
            let _ = writeln!(out, "<script>{}</script>", assets::LIVE_JS);
        }
        let _ = writeln!(out, "<!-- uPlot (https://github.com/leeoniya/uPlot) licence:\n{}-->", assets::UPLOT_LICENSE);
        out.push_str("</body></html>\n");
        out
    }

    /// What the dashboard sends an open page: the parts as one JSON object (`final` once the run
    /// has ended and these are report.html's own).
    fn update(&self, finished: bool) -> String {
        /// Borrowed: an hour-long run's parts are a megabyte of HTML and chart points, which a
        /// `json!` value would copy before writing them out.
        #[derive(serde::Serialize)]
        struct Update<'a> {
            title: &'a str,
            header: &'a str,
            nav: &'a str,
            main: &'a str,
            charts: &'a serde_json::Map<String, serde_json::Value>,
            #[serde(rename = "final")]
            finished: bool,
        }
        let update = Update {
            title: &self.title,
            header: &self.header,
            nav: &self.nav,
            main: &self.main,
            charts: &self.charts,
            finished,
        };
        serde_json::to_string(&update).expect("the parts are strings and JSON values")
    }
}

/// How the dashboard's page talks back to the server that sent it.
#[derive(Debug, Clone)]
pub struct LivePage {
    /// Sent back with every request of the page (`?token=`, and the Stop button's header):
    /// the dashboard refuses a request without it when it listens beyond loopback, and a Stop
    /// without it always.
    pub token: String,
    /// Whether the page shows a Stop button (`--dashboard-control`).
    pub control: bool,
    /// Which update the page shows (the id of the event carrying the same parts), so that the
    /// page does not draw itself twice.
    pub version: u64,
}

/// A results directory's report as the dashboard serves it.
#[derive(Debug)]
pub struct LiveReport {
    /// The parts as JSON, for the pages already open (a server-sent event's data: one line).
    pub update: String,
    /// The whole page, built only when a browser opens the dashboard: most renderings of a
    /// watched run only update the pages already open, and the page (1.2 MB of HTML for an
    /// hour of 20 requests) is a quarter of a rendering's cost.
    pub page: LiveDocument,
}

/// The dashboard's whole page, ready to be written out.
#[derive(Debug)]
pub struct LiveDocument(ReportParts);

impl LiveDocument {
    /// The page as a browser opening the dashboard gets it: report.html running live.js too.
    pub fn html(&self, page: &LivePage) -> String {
        self.0.document(Some(page))
    }
}

/// Renders `dir`'s report for the dashboard: as report.html would be now (the files the sink
/// has written so far). `finished`: the run has ended and written its last files, so this is
/// report.html's content. `cache`: the dashboard's, kept from one rendering to the next, so
/// that each reads only what the sink appended.
pub fn render_live(dir: &Path, finished: bool, cache: &mut ReadCache) -> Result<LiveReport, ResultsError> {
    let parts = render_parts(dir, cache)?;
    Ok(LiveReport { update: parts.update(finished), page: LiveDocument(parts) })
}

fn pages_status(status: &str) -> String {
    let class = match status {
        "completed" | "limit_reached" | "no regression" => "good",
        "aborted_by_threshold" | "regression" => "bad",
        _ => "warn",
    };
    format!(r#"<span class="badge {class}" id="run-status">{}</span>"#, html(status))
}

fn render_run(dir: &Path, cache: &mut ReadCache) -> Result<ReportParts, ResultsError> {
    let summary = crate::results_dir::read_summary(dir)?;
    // The busiest rows get pages of their own (and their time series read).
    let mut by_count: Vec<usize> = (0..summary.requests.len()).collect();
    by_count.sort_by(|a, b| summary.requests[*b].count.cmp(&summary.requests[*a].count).then(a.cmp(b)));
    let detailed: BTreeSet<usize> = by_count.into_iter().take(DETAIL_PAGES).collect();
    let detailed_names: BTreeSet<String> = detailed.iter().map(|i| summary.requests[*i].name.clone()).collect();
    drop(summary);
    let results = RunResults::read(dir, &detailed_names, cache)?;
    let summary = &results.summary;
    let mut doc = Document {
        title: summary.run.name.clone(),
        status: summary.run.status.clone(),
        nav: vec![
            ("overview", "Overview"),
            ("requests", "Requests"),
            ("over-time", "Over time"),
            ("distribution", "Distribution"),
            ("errors", "Errors"),
            ("environment", "Environment and plan"),
        ],
        pages: String::new(),
        charts: serde_json::Map::new(),
        note: Some(CLOCK_NOTE),
    };
    doc.charts(charts::overview(&results));
    doc.page("overview", &pages::overview(&results));
    let request_page = |i: usize| detailed.contains(&i).then(|| format!("request-{i}"));
    let group_page = |i: usize| (i < DETAIL_PAGES).then(|| format!("group-{i}"));
    doc.page("requests", &pages::requests(summary, &request_page, &group_page));
    doc.charts(charts::over_time(&results));
    let interval_ms = summary.plan.options.snapshot_interval_ms.max(1);
    let has_histograms = results.histograms.is_some();
    doc.page("over-time", &pages::over_time(results.bucket_ms, interval_ms, has_histograms));
    let ids = doc.charts(charts::distribution(&results));
    doc.page("distribution", &pages::distribution(summary, &ids, has_histograms));
    doc.page("errors", &pages::errors(summary));
    if let Some(page) = sql::page(summary) {
        doc.nav.insert(1, ("sql", "SQL experiment"));
        doc.page("sql", &page);
    }
    doc.page("environment", &pages::environment(summary));
    for &i in &detailed {
        let id = format!("request-{i}");
        let request = &summary.requests[i];
        let ids = doc.charts(charts::request(&results, &request.name, i, &id));
        doc.page(&id, &pages::request_page(summary, request, &ids));
    }
    let eventually = pages::eventually_groups(&summary.plan);
    for (i, group) in summary.groups.iter().enumerate().take(DETAIL_PAGES) {
        let id = format!("group-{i}");
        let kind = if eventually.contains(&group.name) { pages::GroupKind::Eventually } else { pages::GroupKind::Pass };
        let ids = doc.charts(charts::group(&results, &group.name, i, &id, kind));
        doc.page(&id, &pages::group_page(summary, group, &ids, kind));
    }
    let parts = doc.into_parts();
    cache.keep(results);
    Ok(parts)
}

/// A sweep's report: its conclusions, and the capacity chart and table, each level linking to
/// its own run's report.
pub fn render_sweep(report: &SweepReport) -> String {
    sweep_document(report).render()
}

fn sweep_document(report: &SweepReport) -> Document {
    let mut doc = Document {
        title: format!("sweep of {}", report.name),
        status: if report.interrupted { "interrupted".into() } else { "completed".into() },
        nav: vec![("capacity", "Capacity")],
        pages: String::new(),
        charts: serde_json::Map::new(),
        note: None,
    };
    doc.page("capacity", &capacity::page(report));
    doc
}

#[cfg(test)]
mod tests;

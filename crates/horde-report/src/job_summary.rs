//! A run's verdict in Markdown for a CI job's page: GitHub Actions shows what a step appends
//! to the file named by `GITHUB_STEP_SUMMARY`.

use crate::summary::Summary;
use horde_metrics::ThresholdStatus;
use std::fmt::Write;

/// The Markdown: the run, its key figures, and the thresholds' table.
pub fn render_job_summary(summary: &Summary) -> String {
    let g = &summary.global;
    let failed = summary.thresholds.iter().filter(|t| !t.passed()).count();
    let verdict = match (summary.thresholds.is_empty(), failed) {
        (true, _) => String::new(),
        (false, 0) => " ✅ all thresholds passed".to_string(),
        (false, n) => format!(" ❌ {n} of {} thresholds failed", summary.thresholds.len()),
    };
    let mut out = format!("### horde: {}{verdict}\n\n", cell(&summary.run.name));
    let p = |q: f64| {
        g.latency.all.percentile(q).map(|us| format!("{:.2}", us as f64 / 1000.0)).unwrap_or_else(|| "-".into())
    };
    let _ = writeln!(out, "| status | duration | requests | KO | req/s | p50 (ms) | p99 (ms) |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|");
    let _ = writeln!(
        out,
        "| {} | {:.1} s | {} | {} | {:.1} | {} | {} |\n",
        summary.run.status,
        summary.run.duration_ms as f64 / 1000.0,
        g.count,
        g.ko,
        g.mean_rps,
        p(50.0),
        p(99.0)
    );
    if let Some(reason) = &summary.run.stop_reason {
        let _ = writeln!(out, "Stopped: {}\n", cell(reason));
    }
    if !summary.thresholds.is_empty() {
        let _ = writeln!(out, "| | threshold | scope | judged on | observed | limit |");
        let _ = writeln!(out, "|---|---|---|---|---:|---|");
        for t in &summary.thresholds {
            let mark = match t.status {
                ThresholdStatus::Pass => "✅",
                ThresholdStatus::Fail => "❌",
                ThresholdStatus::NoData => "❌ no data",
            };
            let _ = writeln!(
                out,
                "| {mark} | `{}` | {} | {} | {} | {} {} |",
                t.text.replace('`', "'").replace('|', "\\|"),
                cell(&t.scope),
                t.population.as_deref().unwrap_or("every request"),
                t.observed_text.as_deref().or(t.note.as_deref()).unwrap_or("-"),
                cell(&t.comparison),
                t.bound_text
            );
        }
        out.push('\n');
    }
    out
}

/// Text in a table cell: no line breaks or pipes, and no HTML from a server's names.
fn cell(text: &str) -> String {
    text.replace(['\n', '\r'], " ").replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;")
}

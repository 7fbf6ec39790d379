//! The capacity page of a sweep's report: the conclusions, the chart (the same SVG as
//! sweep.svg, inline), and the levels' table, each level linking to its own run's report.

use super::escape::html;
use crate::sweep::{format_level, SweepReport};
use std::fmt::Write;

pub fn page(report: &SweepReport) -> String {
    let unit = if report.model == "rate" { "users/s" } else { "users" };
    let or_none = |v: Option<f64>, none: &str| v.map(format_level).unwrap_or_else(|| none.to_string());
    let mut out = format!(
        "<h2>Capacity</h2><p>Sweep of <b>{}</b> by {unit}: {:.1} s per level after {:.1} s of warm-up{}.</p>",
        html(&report.name),
        report.level_duration_ms as f64 / 1000.0,
        report.warmup_ms as f64 / 1000.0,
        if report.interrupted { ", <b>interrupted</b>" } else { "" }
    );
    out.push_str(r#"<table class="facts" id="conclusions">"#);
    if !report.slos.is_empty() {
        let slos: Vec<String> = report.slos.iter().map(|s| format!("<code>{}</code>", html(s))).collect();
        let _ = write!(
            out,
            "<tr><th>highest level meeting {}</th><td>{}</td></tr>",
            slos.join(" and "),
            html(&or_none(report.highest_meeting_slos, "none"))
        );
    }
    let _ = write!(
        out,
        "<tr><th>knee (throughput stops growing)</th><td>{}</td></tr><tr><th>errors begin at</th><td>{}</td></tr>",
        html(&report.knee_conclusion()),
        html(&or_none(report.errors_begin, "no errors at any level"))
    );
    if let Some(b) = &report.boundary {
        let _ = write!(
            out,
            "<tr><th>boundary</th><td>between {} (good) and {} (bad), {}</td></tr>",
            format_level(b.last_good),
            format_level(b.first_bad),
            if b.confirmed { "confirmed by a second run of each" } else { "NOT confirmed: a second run disagreed" }
        );
    }
    if let Some(why) = &report.stopped {
        let _ = write!(out, "<tr><th>stopped early</th><td>{}</td></tr>", html(why));
    }
    out.push_str("</table>");
    let _ = write!(out, r#"<div class="svg-chart">{}</div>"#, crate::sweep_chart::render(report));
    let _ = write!(
        out,
        r#"<table class="stats" id="levels-table"><thead><tr><th>{unit}</th><th>run</th><th>requests</th><th>p50 (ms)</th><th>p99 (ms)</th><th>errors %</th><th>throughput (req/s)</th><th>SLOs</th><th>report</th></tr></thead><tbody>"#
    );
    for l in &report.levels {
        let verdict = report.slo_verdict(l);
        let link = if l.results.is_empty() {
            String::new()
        } else {
            format!(r#"<a href="{}/report.html">{}</a>"#, html(&l.results), html(&l.results))
        };
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.1}</td><td>{:.1}</td><td class="name">{}</td><td>{link}</td></tr>"#,
            format_level(l.level),
            l.run,
            l.requests,
            l.p50_us as f64 / 1000.0,
            l.p99_us as f64 / 1000.0,
            l.error_rate * 100.0,
            l.throughput_rps,
            html(&verdict)
        );
    }
    out.push_str("</tbody></table>");
    out
}

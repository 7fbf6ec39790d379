//! The console table, in benchstat's shape: a block per metric, a line per row with each
//! side's median ± spread and the change "vs base" with its interval, verdict, p and n.

use super::{ChangeKind, CompareReport, Comparison, Method, Metric, Scope, Test};
use crate::terminal::printable;
use std::fmt::Write;

/// The report as the console shows it.
pub fn render(report: &CompareReport) -> String {
    let mut out = String::new();
    let runs = |n: usize| if n == 1 { "1 run".to_string() } else { format!("{n} runs") };
    let (label_a, label_b) = (printable(&report.a.label), printable(&report.b.label));
    let side_a = format!("{label_a} (base):");
    let side_b = format!("{label_b}:");
    let side_width = side_a.chars().count().max(side_b.chars().count());
    let _ = writeln!(out, "{side_a:<side_width$} {} in {}", runs(report.a.runs.len()), sources(&report.a.runs));
    let _ = writeln!(out, "{side_b:<side_width$} {} in {}", runs(report.b.runs.len()), sources(&report.b.runs));
    let tests = report.comparisons.iter().filter(|c| c.change.is_some()).count();
    let tolerance = &report.tolerance;
    let method = match report.method {
        Method::Runs => "one value per run; Mann-Whitney U on logs, Hodges-Lehmann change with Moses' interval",
        Method::WithinRun => "WITHIN-RUN FALLBACK (one run a side): batch means, Welch's t-test",
    };
    let _ = writeln!(
        out,
        "method:   {method}; {:.0}% intervals; Benjamini-Hochberg over {tests} comparisons at alpha {}",
        100.0 * (1.0 - report.alpha),
        report.alpha
    );
    let _ = writeln!(
        out,
        "tolerance: latency {}%, throughput {}%, errors {} points (a change counts when significant and its whole interval lies beyond)",
        tolerance.latency_percent, tolerance.throughput_percent, tolerance.errors_points
    );
    if !report.plan_differences.is_empty() {
        let _ = writeln!(out, "the plans differ:");
        for difference in &report.plan_differences {
            let _ = writeln!(out, "  {}", printable(difference));
        }
    }
    let longest_name = report.comparisons.iter().map(|c| display_name(c).chars().count()).max().unwrap_or(0);
    let name_width = longest_name.min(40).max(Metric::ALL.map(|m| title(m).len()).into_iter().max().unwrap_or(0));
    for metric in Metric::ALL {
        let rows: Vec<&Comparison> = report.comparisons.iter().filter(|c| c.metric == metric).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out);
        let title = title(metric);
        let _ = writeln!(
            out,
            "{:<name_width$}  {:>16}  {:>16}  vs base",
            title,
            clipped(&label_a, 16),
            clipped(&label_b, 16)
        );
        for comparison in rows {
            let _ = writeln!(
                out,
                "{:<name_width$}  {:>16}  {:>16}  {}",
                clipped(&display_name(comparison), name_width),
                side_figure(comparison, true),
                side_figure(comparison, false),
                vs_base(comparison)
            );
        }
    }
    if !report.warnings.is_empty() {
        let _ = writeln!(out);
        for warning in &report.warnings {
            let _ = writeln!(out, "warning: {}", printable(warning));
        }
    }
    let _ = writeln!(out);
    let regressions: Vec<String> = report
        .comparisons
        .iter()
        .filter(|c| c.verdict.is_regression())
        .map(|c| format!("{} {} {}", c.metric.label(), display_name(c), c.verdict.as_str()))
        .collect();
    if regressions.is_empty() {
        let _ = writeln!(out, "no regression beyond the tolerance");
    } else {
        let _ = writeln!(out, "REGRESSION: {}", regressions.join(", "));
    }
    out
}

/// A metric block's heading (the console's and the HTML page's).
pub(crate) fn title(metric: Metric) -> &'static str {
    match metric {
        Metric::P50 => "p50 latency",
        Metric::P99 => "p99 latency",
        Metric::Mean => "mean latency",
        Metric::Rps => "throughput (rps)",
        Metric::Errors => "errors (% of requests)",
    }
}

fn sources(runs: &[String]) -> String {
    // The directories' common parent says where they are without listing ten paths.
    let parents: Vec<&str> = runs.iter().map(|r| r.rsplit_once('/').map_or(".", |(parent, _)| parent)).collect();
    match parents.first() {
        Some(first) if runs.len() > 1 && parents.iter().all(|p| p == first) => format!("{}/", printable(first)),
        _ => printable(&runs.join(", ")).into_owned(),
    }
}

fn display_name(comparison: &Comparison) -> String {
    match comparison.scope {
        Scope::Global => "all requests".to_string(),
        Scope::Request => printable(&comparison.name).into_owned(),
        // Said, since a group may share its name with a request.
        Scope::Group => format!("{} (group)", printable(&comparison.name)),
    }
}

fn clipped(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let kept: String = text.chars().take(width.saturating_sub(1)).collect();
        format!("{kept}…")
    }
}

/// `20.31ms ± 2%`: the median and the farthest value from it, relative.
pub(crate) fn side_figure(comparison: &Comparison, base: bool) -> String {
    let stats = if base { &comparison.a } else { &comparison.b };
    let (Some(median), Some(min), Some(max)) = (stats.median, stats.min, stats.max) else {
        return "-".to_string();
    };
    let value = |v: f64| match comparison.metric {
        Metric::Rps => format!("{v:.1}"),
        Metric::Errors => format!("{v:.2}%"),
        _ => format!("{:.2}ms", v / 1000.0),
    };
    if comparison.metric == Metric::Errors {
        let spread = (max - median).max(median - min);
        return format!("{} ± {:.2}", value(median), spread);
    }
    let spread = if median > 0.0 { 100.0 * (max - median).max(median - min) / median } else { 0.0 };
    format!("{} ± {:.0}%", value(median), spread)
}

/// A change on its own scale: `+20.1%` for a ratio of 1.201, `+0.50pp` for a difference of
/// error rates.
pub(crate) fn change_figure(kind: ChangeKind, value: f64) -> String {
    match kind {
        ChangeKind::Ratio => format!("{:+.1}%", 100.0 * (value - 1.0)),
        ChangeKind::Difference => format!("{value:+.2}pp"),
    }
}

/// `[+19.5%, +20.8%]`, or `[unbounded]` when the samples are too small to bound it.
pub(crate) fn interval_figure(change: &super::Change) -> String {
    match (change.low, change.high) {
        (Some(low), Some(high)) => {
            format!("[{}, {}]", change_figure(change.kind, low), change_figure(change.kind, high))
        }
        _ => "[unbounded]".to_string(),
    }
}

/// `slower +20.1% [+19.5%, +20.8%] (p=0.008 q=0.010 n=5+5)`: q is p after Benjamini-Hochberg,
/// which the verdict uses; errors in percentage points.
fn vs_base(comparison: &Comparison) -> String {
    let Some(change) = &comparison.change else {
        return format!("- ({})", comparison.notes.join("; "));
    };
    let show = |v: f64| change_figure(change.kind, v);
    let interval = interval_figure(change);
    let test = match change.test {
        Test::Welch => " welch",
        _ => "",
    };
    let mut text = format!(
        "{:<6} {} {} (p={:.3} q={:.3}{} n={}+{})",
        comparison.verdict.as_str(),
        show(change.estimate),
        interval,
        change.p,
        change.q,
        test,
        change.n_a,
        change.n_b
    );
    for note in &comparison.notes {
        let _ = write!(text, "; {note}");
    }
    text
}

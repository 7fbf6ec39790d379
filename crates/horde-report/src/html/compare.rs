//! The compare page: `horde compare --html FILE` (and compare.html of `horde run --trials`
//! with two plans) renders a [`CompareReport`] with report.html's machinery: the same styles,
//! script, CSP and escaping. What the reader must know comes first (too few runs, the
//! within-run fallback, plans that differ); then a block per metric: the change of each row
//! with its interval against the tolerance band, every run's value on each side, and the
//! table of the console's figures with p, q and n.

use super::charts::RowsChart;
use super::escape::html;
use super::pages::chart;
use super::{write_atomically, Document};
use crate::compare::render::{change_figure, interval_figure, side_figure, title};
use crate::compare::{ChangeKind, CompareReport, Comparison, Method, Metric, Scope, Verdict};
use crate::results_dir::ResultsError;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Rows drawn in a metric's charts (the table lists them all): beyond this, the points are
/// too close to read and the file grows with every run's value.
const CHARTED_ROWS: usize = 40;

const A_COLOUR: &str = "#0072B2";
const B_COLOUR: &str = "#E69F00";
const WORSE_COLOUR: &str = "#D55E00";
const BETTER_COLOUR: &str = "#009E73";
const SAME_COLOUR: &str = "#555555";

/// An estimate farther than this many robust spreads from the median estimate is an outlier:
/// it does not set the change chart's scale.
const OUTLIER_SPREADS: f64 = 6.0;

/// Renders the page. `page_dir` is where it will be written: a run with a report.html of its
/// own is linked from there.
pub fn render_compare(report: &CompareReport, page_dir: Option<&Path>) -> String {
    let mut doc = Document {
        title: format!("compare: {} (base) vs {}", report.a.label, report.b.label),
        status: if report.regression { "regression".into() } else { "no regression".into() },
        nav: vec![("comparison", "Comparison"), ("runs", "Runs and method")],
        pages: String::new(),
        charts: serde_json::Map::new(),
        note: None,
    };
    let mut out = String::from("<h2>Comparison</h2>");
    out.push_str(&warnings(report));
    out.push_str(&headline(report));
    for metric in Metric::ALL {
        let rows: Vec<&Comparison> = report.comparisons.iter().filter(|c| c.metric == metric).collect();
        if rows.is_empty() {
            continue;
        }
        let label = metric.label();
        let ids = doc.charts(vec![
            (format!("change-{label}"), change_chart(report, metric, &rows)),
            (format!("runs-{label}"), runs_chart(report, metric, &rows)),
        ]);
        let _ = write!(out, r#"<section class="metric" id="metric-{label}"><h3>{}</h3>"#, html(title(metric)));
        for id in &ids {
            out.push_str(&chart(id));
        }
        out.push_str(&table(report, metric, &rows));
        out.push_str("</section>");
    }
    doc.page("comparison", &out);
    doc.page("runs", &runs_page(report, page_dir));
    doc.render()
}

/// Writes the page to `path` (replacing it whole) and returns the path.
pub fn write_compare_html(report: &CompareReport, path: &Path) -> Result<PathBuf, ResultsError> {
    let page_dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    write_atomically(path, &render_compare(report, Some(page_dir)))
}

/// The row as the page names it: a group says so, since it may share a request's name.
fn row_name(comparison: &Comparison) -> String {
    match comparison.scope {
        Scope::Global => "all requests".to_string(),
        Scope::Request => comparison.name.clone(),
        Scope::Group => format!("{} (group)", comparison.name),
    }
}

fn verdict_class(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Slower | Verdict::Worse => "worse",
        Verdict::Faster | Verdict::Better => "better",
        Verdict::Same => "same",
    }
}

fn verdict_colour(verdict: Verdict) -> &'static str {
    match verdict_class(verdict) {
        "worse" => WORSE_COLOUR,
        "better" => BETTER_COLOUR,
        _ => SAME_COLOUR,
    }
}

fn warnings(report: &CompareReport) -> String {
    let mut items: Vec<String> = Vec::new();
    if report.method == Method::WithinRun {
        items.push(
            "<b>WITHIN-RUN FALLBACK</b>: one run a side, so the values compared are batch means within each run. \
             Batches of one run share its conditions: treat a verdict as a hint, and confirm with several runs a side \
             (<code>horde run --trials N</code>)."
                .to_string(),
        );
    }
    if !report.plan_differences.is_empty() {
        let differences: Vec<String> =
            report.plan_differences.iter().map(|d| format!("<code>{}</code>", html(d))).collect();
        items.push(format!("<b>The plans differ</b> (compared anyway): {}", differences.join("; ")));
    }
    items.extend(report.warnings.iter().map(|w| html(w)));
    if items.is_empty() {
        return String::new();
    }
    let mut out = String::from(r#"<ul class="warnings" id="compare-warnings">"#);
    for item in items {
        let _ = write!(out, "<li>{item}</li>");
    }
    out.push_str("</ul>");
    out
}

fn headline(report: &CompareReport) -> String {
    let regressions: Vec<String> = report
        .comparisons
        .iter()
        .filter(|c| c.verdict.is_regression())
        .map(|c| format!("{} of {} {}", c.metric.label(), html(&row_name(c)), c.verdict.as_str()))
        .collect();
    let verdict = if regressions.is_empty() {
        r#"<span class="badge good">no regression beyond the tolerance</span>"#.to_string()
    } else {
        format!(r#"<span class="badge bad">regression</span> {}"#, regressions.join(", "))
    };
    let tolerance = &report.tolerance;
    format!(
        r#"<p id="compare-verdict">{verdict}</p><p class="note">{} against the base {}. A change counts when it is significant (q, p after Benjamini-Hochberg, at most {}) and its whole {:.0} % interval lies beyond the tolerance: latency {} %, throughput {} %, errors {} points (the shaded band of each change chart).</p>"#,
        html(&report.b.label),
        html(&report.a.label),
        report.alpha,
        100.0 * (1.0 - report.alpha),
        tolerance.latency_percent,
        tolerance.throughput_percent,
        tolerance.errors_points
    )
}

fn table(report: &CompareReport, metric: Metric, rows: &[&Comparison]) -> String {
    let mut out = format!(
        r#"<table class="stats compare" id="compare-{}"><thead><tr><th>row</th><th>{}</th><th>{}</th><th>verdict</th><th>change</th><th>interval</th><th>p</th><th>q</th><th>n</th><th>notes</th></tr></thead><tbody>"#,
        metric.label(),
        html(&report.a.label),
        html(&report.b.label)
    );
    for c in rows {
        let (change, interval, p, q, n) = match &c.change {
            Some(change) => (
                change_figure(change.kind, change.estimate),
                interval_figure(change),
                format!("{:.3}", change.p),
                format!("{:.3}", change.q),
                format!("{}+{}", change.n_a, change.n_b),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into(), "-".into()),
        };
        let scope = match c.scope {
            Scope::Global => "global",
            Scope::Request => "request",
            Scope::Group => "group",
        };
        let _ = write!(
            out,
            r#"<tr data-scope="{scope}"><td class="name">{}</td><td>{}</td><td>{}</td><td class="verdict {}">{}</td><td>{}</td><td>{}</td><td>{p}</td><td>{q}</td><td>{n}</td><td class="message">{}</td></tr>"#,
            html(&row_name(c)),
            html(&side_figure(c, true)),
            html(&side_figure(c, false)),
            verdict_class(c.verdict),
            html(c.verdict.as_str()),
            html(&change),
            html(&interval),
            html(&c.notes.join("; "))
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// Names of the charted rows, and a title's note when some are left out.
fn charted<'a>(rows: &[&'a Comparison]) -> (Vec<&'a Comparison>, String) {
    let shown: Vec<&Comparison> = rows.iter().take(CHARTED_ROWS).copied().collect();
    let note = if rows.len() > CHARTED_ROWS {
        format!(" (the first {CHARTED_ROWS} of {} rows; the table lists them all)", rows.len())
    } else {
        String::new()
    };
    (shown, note)
}

/// Each row's change as a dot with its interval as a whisker, against the tolerance band:
/// percent for ratios, percentage points for errors.
fn change_chart(report: &CompareReport, metric: Metric, rows: &[&Comparison]) -> RowsChart {
    let (rows, note) = charted(rows);
    let tolerance = match metric {
        Metric::P50 | Metric::P99 | Metric::Mean => report.tolerance.latency_percent,
        Metric::Rps => report.tolerance.throughput_percent,
        Metric::Errors => report.tolerance.errors_points,
    };
    // To a thousandth of a percent or point: finer than any figure shown, and a smaller file.
    let on_scale = |kind: ChangeKind, v: f64| {
        let value = match kind {
            ChangeKind::Ratio => 100.0 * (v - 1.0),
            ChangeKind::Difference => v,
        };
        (value * 1000.0).round() / 1000.0
    };
    let estimates: Vec<Option<f64>> =
        rows.iter().map(|c| c.change.as_ref().map(|ch| on_scale(ch.kind, ch.estimate))).collect();
    let bound = |high: bool| -> Vec<Option<f64>> {
        rows.iter()
            .map(|c| {
                let change = c.change.as_ref()?;
                on_scale(change.kind, if high { change.high? } else { change.low? }).into()
            })
            .collect()
    };
    let unit = if metric == Metric::Errors { "points" } else { "%" };
    let (low, high) = (bound(false), bound(true));
    let range = robust_range(&estimates, &low, &high, tolerance);
    RowsChart {
        title: format!(
            "{}: change of {} against {}, {:.0} % interval{note}",
            title(metric),
            report.b.label,
            report.a.label,
            100.0 * (1.0 - report.alpha)
        ),
        kind: "change",
        labels: rows.iter().map(|c| row_name(c)).collect(),
        ticks: Vec::new(),
        x_label: None,
        unit: if metric == Metric::Errors { "change (points)" } else { "change (%)" }.into(),
        log: false,
        x: (0..rows.len()).map(|i| i as f64).collect(),
        series: vec![super::charts::Series { label: "change".into(), unit, color: SAME_COLOUR, values: estimates }],
        low,
        high,
        colors: rows.iter().map(|c| verdict_colour(c.verdict)).collect(),
        band: Some([-tolerance, tolerance]),
        range: Some(range),
    }
}

/// The change chart's y range, so that no single noisy row sets the scale and flattens every
/// real change to a line at 0: it holds 0, the tolerance band and every estimate within
/// [`OUTLIER_SPREADS`] robust spreads of the median estimate (the spread is the median absolute
/// deviation, at least half the tolerance); intervals may stretch it by half that span on each
/// side. An interval or an outlying estimate beyond is drawn clipped at the edge, as an arrow
/// (the table and the tooltip keep its value).
fn robust_range(estimates: &[Option<f64>], low: &[Option<f64>], high: &[Option<f64>], tolerance: f64) -> [f64; 2] {
    let known: Vec<f64> = estimates.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    let median = |values: &[f64]| -> f64 {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        match sorted.len() {
            0 => 0.0,
            n if n % 2 == 1 => sorted[n / 2],
            n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        }
    };
    let centre = median(&known);
    let deviations: Vec<f64> = known.iter().map(|v| (v - centre).abs()).collect();
    let spread = median(&deviations).max(tolerance / 2.0).max(f64::MIN_POSITIVE);
    let kept = known.iter().copied().filter(|v| (v - centre).abs() <= OUTLIER_SPREADS * spread);
    let (mut lo, mut hi) =
        kept.fold((0.0f64.min(-tolerance), 0.0f64.max(tolerance)), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let span = hi - lo;
    let whiskers_lo = low.iter().flatten().copied().filter(|v| v.is_finite()).fold(lo, f64::min);
    let whiskers_hi = high.iter().flatten().copied().filter(|v| v.is_finite()).fold(hi, f64::max);
    lo = whiskers_lo.max(lo - span / 2.0);
    hi = whiskers_hi.min(hi + span / 2.0);
    if hi <= lo {
        return [lo - 1.0, hi + 1.0];
    }
    let pad = (hi - lo) * 0.08;
    [lo - pad, hi + pad]
}

/// Every run's (or batch's) value, in order, A's on the left of a row's slot and B's on the
/// right: the spread and any drift over the runs show.
fn runs_chart(report: &CompareReport, metric: Metric, rows: &[&Comparison]) -> RowsChart {
    let (rows, note) = charted(rows);
    let (unit, scale): (&'static str, f64) = match metric {
        Metric::P50 | Metric::P99 | Metric::Mean => ("ms", 0.001),
        Metric::Rps => ("req/s", 1.0),
        Metric::Errors => ("%", 1.0),
    };
    let mut x = Vec::new();
    let mut a = Vec::new();
    let mut b = Vec::new();
    for (i, c) in rows.iter().enumerate() {
        for (side, values, offset) in [(0, &c.a.values, -0.4), (1, &c.b.values, 0.05)] {
            let n = values.len().max(1) as f64;
            for (j, value) in values.iter().enumerate() {
                x.push(i as f64 + offset + 0.35 * (j as f64 + 0.5) / n);
                let value = Some((value * scale * 1000.0).round() / 1000.0);
                a.push(if side == 0 { value } else { None });
                b.push(if side == 1 { value } else { None });
            }
        }
    }
    let per = match report.method {
        Method::Runs => "run",
        Method::WithinRun => "batch",
    };
    // Errors are often 0, which a log scale cannot show.
    let log = metric != Metric::Errors
        && rows.iter().all(|c| c.a.values.iter().chain(&c.b.values).all(|v| *v > 0.0))
        && x.len() > 1;
    RowsChart {
        title: format!(
            "{}: each {per}'s value, in order ({} left, {} right){note}",
            title(metric),
            report.a.label,
            report.b.label
        ),
        kind: "runs",
        labels: rows.iter().map(|c| row_name(c)).collect(),
        ticks: Vec::new(),
        x_label: None,
        unit: unit.into(),
        log,
        x,
        series: vec![
            super::charts::Series { label: format!("{} (base)", report.a.label), unit, color: A_COLOUR, values: a },
            super::charts::Series { label: report.b.label.clone(), unit, color: B_COLOUR, values: b },
        ],
        low: Vec::new(),
        high: Vec::new(),
        colors: Vec::new(),
        band: None,
        range: None,
    }
}

fn runs_page(report: &CompareReport, page_dir: Option<&Path>) -> String {
    let method = match report.method {
        Method::Runs => {
            "one value per run: Mann-Whitney U test on log values, Hodges-Lehmann change with Moses' interval"
        }
        Method::WithinRun => {
            "within-run fallback (one run a side): batch means over each run's steady window, Welch's t-test"
        }
    };
    let mut out = format!(
        r#"<h2>Runs and method</h2><table class="facts" id="compare-method"><tr><th>method</th><td>{}</td></tr><tr><th>alpha</th><td>{} (Benjamini-Hochberg over {} comparisons)</td></tr><tr><th>tolerance</th><td>latency {} %, throughput {} %, errors {} points</td></tr></table>"#,
        html(method),
        report.alpha,
        report.comparisons.iter().filter(|c| c.change.is_some()).count(),
        report.tolerance.latency_percent,
        report.tolerance.throughput_percent,
        report.tolerance.errors_points
    );
    for (side, id) in [(&report.a, "runs-a"), (&report.b, "runs-b")] {
        let _ = write!(
            out,
            r#"<h3>{} ({} runs)</h3><table class="stats" id="{id}"><thead><tr><th>results directory</th><th>report</th></tr></thead><tbody>"#,
            html(&side.label),
            side.runs.len()
        );
        for run in &side.runs {
            let link = page_dir.and_then(|dir| report_link(dir, Path::new(run)));
            let report = match link {
                Some(href) => format!(r#"<a href="{}">report.html</a>"#, html(&href)),
                None => "-".to_string(),
            };
            let _ = write!(out, r#"<tr><td class="name">{}</td><td>{report}</td></tr>"#, html(run));
        }
        out.push_str("</tbody></table>");
    }
    out
}

/// A link from the page's directory to a run's report.html, when it has one: relative when
/// the run is below the page (a trials directory moves as a whole), else its absolute path.
fn report_link(page_dir: &Path, run: &Path) -> Option<String> {
    let report = run.join("report.html").canonicalize().ok()?;
    let page_dir = page_dir.canonicalize().ok()?;
    let target = report.strip_prefix(&page_dir).unwrap_or(&report);
    // URLs separate with '/' whatever the platform.
    let parts: Vec<String> = target.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let joined = parts.join("/");
    let path = if target.is_absolute() { format!("/{}", joined.trim_start_matches('/')) } else { joined };
    // What would end or change a path in a URL.
    let mut href = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '%' => href.push_str("%25"),
            '#' => href.push_str("%23"),
            '?' => href.push_str("%3F"),
            ' ' => href.push_str("%20"),
            c => href.push(c),
        }
    }
    Some(href)
}

#[cfg(test)]
mod tests {
    use super::robust_range;

    #[test]
    fn one_noisy_row_does_not_set_the_change_charts_scale() {
        // A real +13.7 % beside rows near 0, one of them with an interval of -80 % to +300 %.
        let estimates = [Some(13.7), Some(0.8), Some(-1.2), Some(2.0), Some(0.3)];
        let low = [Some(9.0), Some(-2.0), Some(-4.0), Some(-80.0), Some(-1.0)];
        let high = [Some(18.0), Some(3.0), Some(1.5), Some(300.0), Some(1.6)];
        let [lo, hi] = robust_range(&estimates, &low, &high, 5.0);
        assert!(hi > 18.0 && hi < 40.0, "{lo} {hi}: +13.7 % and its interval in view, +300 % clipped");
        assert!(lo < -5.0 && lo > -30.0, "{lo} {hi}");
        // An estimate far out is clipped too (drawn as an arrow), not the axis.
        let wild = [Some(13.7), Some(0.8), Some(-1.2), Some(250.0), Some(0.3)];
        let [_, hi] = robust_range(&wild, &[None; 5], &[None; 5], 5.0);
        assert!(hi < 40.0, "{hi}");
        // Rows that all changed much keep their scale.
        let all = [Some(40.0), Some(45.0), Some(50.0)];
        let [_, hi] = robust_range(&all, &[None; 3], &[None; 3], 5.0);
        assert!(hi >= 50.0, "{hi}");
        assert_eq!(robust_range(&[], &[], &[], 0.0), [-1.0, 1.0]);
    }
}

//! The pages of report.html as HTML: every number is in the markup, so the report reads
//! without JavaScript; the script only adds sorting, searching, paging and the charts.
//! Every text from the run (names, messages, plan values) goes through `escape::html`.

use super::escape::html;
use super::source::RunResults;
use crate::summary::Summary;
use horde_metrics::{DistributionBucket, GroupStats, LatencyStats, RequestStats, ThresholdResult, ThresholdStatus};
use horde_plan::{CoreStep, Plan, Step};
use std::collections::BTreeSet;
use std::fmt::Write;

/// Microseconds as milliseconds with two decimals, as the console summary shows them.
pub fn ms(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

fn ms_f(us: f64) -> String {
    format!("{:.2}", us / 1000.0)
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0.0".into()
    } else {
        format!("{:.1}", 100.0 * part as f64 / whole as f64)
    }
}

fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// A chart placeholder that report.js fills.
pub fn chart(id: &str) -> String {
    format!(r#"<div class="chart" data-chart="{}"></div>"#, html(id))
}

/// A two-column table of labels and values (values already HTML).
fn facts(rows: &[(&str, String)]) -> String {
    let mut out = String::from(r#"<table class="facts">"#);
    for (label, value) in rows {
        let _ = write!(out, "<tr><th>{}</th><td>{value}</td></tr>", html(label));
    }
    out.push_str("</table>");
    out
}

fn status_badge(status: &str) -> String {
    let class = match status {
        "completed" | "pass" | "met" => "good",
        "limit_reached" => "good",
        "fail" | "no_data" | "aborted_by_threshold" => "bad",
        _ => "warn",
    };
    format!(r#"<span class="badge {class}">{}</span>"#, html(status))
}

pub fn overview(results: &RunResults) -> String {
    let s = &results.summary;
    let run = &s.run;
    let g = &s.global;
    let mut out = String::from("<h2>Overview</h2>");
    let card = facts(&[
        ("Run", html(&run.name)),
        ("Status", status_badge(&run.status)),
        ("Started", html(&run.started_at)),
        (
            "Duration",
            seconds(run.duration_ms)
                + &if run.warmup_ms > 0 {
                    format!(" (after {} of warm-up)", seconds(run.warmup_ms))
                } else {
                    String::new()
                },
        ),
        (
            "Users",
            format!("{} started, {} finished, {} interrupted", s.users.started, s.users.finished, s.users.interrupted),
        ),
        ("horde", html(&run.horde_version)),
    ]);
    let top = s.plan.options.percentiles.iter().copied().fold(f64::NAN, f64::max);
    // (label, value as HTML, id): one row of cards, the headline numbers.
    let mut figures: Vec<(String, String, &str)> = vec![
        ("requests".into(), g.count.to_string(), "figure-count"),
        ("OK".into(), g.ok.to_string(), "figure-ok"),
        ("KO".into(), format!("{} <small>{} %</small>", g.ko, percent(g.ko, g.count)), "figure-ko"),
        ("requests/s".into(), format!("{:.1}", g.mean_rps), "figure-rps"),
    ];
    let all = &g.latency.all;
    if all.count > 0 {
        if let Some(p50) = all.percentile(50.0) {
            figures.push(("p50 (ms)".into(), ms(p50), "figure-p50"));
        }
        if top.is_finite() && top != 50.0 {
            if let Some(value) = all.percentile(top) {
                figures.push((format!("p{top} (ms)"), ms(value), "figure-top"));
            }
        }
        figures.push(("max (ms)".into(), ms(all.max_us), "figure-max"));
    }
    out.push_str(r#"<div class="figures kpis">"#);
    for (label, value, id) in figures {
        let _ = write!(
            out,
            r#"<div class="figure" id="{id}"><div class="value">{value}</div><div class="label">{}</div></div>"#,
            html(&label)
        );
    }
    out.push_str("</div>");
    let warnings = warnings(results);
    if !warnings.is_empty() {
        out.push_str(r#"<ul class="warnings">"#);
        for warning in warnings {
            let _ = write!(out, "<li>{warning}</li>");
        }
        out.push_str("</ul>");
    }
    out.push_str(r#"<div class="overview"><div class="card">"#);
    out.push_str(&card);
    out.push_str(r#"</div><div class="card ranges" id="ranges">"#);
    out.push_str(&global_ranges(&g.distribution));
    out.push_str("</div></div>");
    if !s.thresholds.is_empty() {
        out.push_str(&thresholds_table(&s.thresholds));
    }
    out.push_str(&chart("overview"));
    out.push_str(&chart("overview-latency"));
    out.push_str(&request_ranges(s));
    out
}

/// The response-time ranges' colours, fastest first, then failures (report.css: `.range-N`).
const RANGE_CLASSES: [&str; 4] = ["range-0", "range-1", "range-2", "range-failed"];

/// Gatling's response-time ranges as one stacked bar: each range's share of the requests, a
/// rectangle whose width is its percentage (SVG attributes, not styles, which the page's
/// policy forbids). Its tooltips and the legend beside it carry the numbers.
fn ranges_bar(buckets: &[DistributionBucket]) -> String {
    let mut out =
        String::from(r#"<svg class="ranges-bar" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true">"#);
    let mut x = 0.0;
    for (bucket, class) in buckets.iter().zip(RANGE_CLASSES) {
        if bucket.percent > 0.0 {
            let _ = write!(
                out,
                r#"<rect class="{class}" x="{x:.3}" y="0" width="{:.3}" height="10"><title>{}: {} ({:.1} %)</title></rect>"#,
                bucket.percent,
                html(&bucket.label),
                bucket.count,
                bucket.percent
            );
        }
        x += bucket.percent;
    }
    out.push_str("</svg>");
    out
}

/// All requests' ranges: the bar, then each range's count and share, readable without the
/// bar (and without JavaScript).
fn global_ranges(buckets: &[DistributionBucket]) -> String {
    let mut out = String::from("<h3>Response time ranges</h3>");
    if buckets.iter().all(|b| b.count == 0) {
        out.push_str("<p>No request completed.</p>");
        return out;
    }
    out.push_str(&ranges_bar(buckets));
    out.push_str(r#"<table class="ranges-legend"><tbody>"#);
    for (i, (bucket, class)) in buckets.iter().zip(RANGE_CLASSES).enumerate() {
        let _ = write!(
            out,
            r#"<tr data-range="{i}"><td><span class="swatch {class}"></span>{}</td><td class="count">{}</td><td class="percent">{:.1} %</td></tr>"#,
            html(&bucket.label),
            bucket.count,
            bucket.percent
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// Requests whose ranges the overview shows, the busiest first; every request's page has its own.
const RANGES_ROWS: usize = 15;

/// Each of the busiest requests' share of the ranges, as a bar and in numbers.
fn request_ranges(s: &Summary) -> String {
    let mut busiest: Vec<usize> = (0..s.requests.len()).filter(|i| !s.requests[*i].distribution.is_empty()).collect();
    if busiest.is_empty() {
        return String::new();
    }
    busiest.sort_by(|a, b| s.requests[*b].count.cmp(&s.requests[*a].count).then(a.cmp(b)));
    let shown = busiest.len().min(RANGES_ROWS);
    let mut out = String::from("<h3>Response time ranges by request</h3>");
    if busiest.len() > shown {
        let _ = write!(out, r#"<p class="note">The {shown} busiest of {} requests.</p>"#, busiest.len());
    }
    out.push_str(r#"<table class="stats" id="request-ranges"><thead><tr><th>request</th><th class="bar-column">share of its requests</th>"#);
    for bucket in &s.requests[busiest[0]].distribution {
        let _ = write!(out, "<th>{}</th>", html(&bucket.label));
    }
    out.push_str("</tr></thead><tbody>");
    for &i in &busiest[..shown] {
        let r = &s.requests[i];
        let _ = write!(
            out,
            r##"<tr><td class="name"><a href="#request-{i}">{}</a></td><td class="bar-column">{}</td>"##,
            html(&r.name),
            ranges_bar(&r.distribution)
        );
        for bucket in &r.distribution {
            let _ = write!(out, "<td>{} <small>({:.1} %)</small></td>", bucket.count, bucket.percent);
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// What a reader must know before trusting the figures (HTML, escaped).
fn warnings(results: &RunResults) -> Vec<String> {
    let s = &results.summary;
    let mut warnings = Vec::new();
    match s.run.status.as_str() {
        "running" => warnings.push(
            "summary.json says <b>running</b>: the run is still going or was killed. The figures cover the intervals written before that.".to_string(),
        ),
        "interrupted" => warnings.push(format!(
            "The run was <b>interrupted</b> (Ctrl-C or SIGTERM): {} users and {} requests in flight were cut off.",
            s.users.interrupted, s.global.interrupted
        )),
        "aborted_by_threshold" => {
            let aborting: Vec<String> = s
                .thresholds
                .iter()
                .filter(|t| t.abort && t.status != ThresholdStatus::Pass)
                .map(|t| html(&t.text))
                .collect();
            warnings.push(format!(
                "The run was <b>aborted by a threshold</b>{}: every result until then is kept.",
                if aborting.is_empty() { String::new() } else { format!(" ({})", aborting.join(", ")) }
            ));
        }
        "stopped" => warnings.push(format!(
            "A scenario <b>stopped</b> the run{}.",
            s.run.stop_reason.as_deref().map(|r| format!(": {}", html(r))).unwrap_or_default()
        )),
        _ => {}
    }
    let scheduling = &s.scheduling;
    if scheduling.late_starts > 0 {
        warnings.push(format!(
            "{} of {} scheduled starts ({} %) were more than {:.1} ms late: the load generator did not keep the schedule, so the load was not delivered as planned. That lateness is the generator's own and is not in the latency figures.",
            scheduling.late_starts,
            scheduling.scheduled_starts,
            percent(scheduling.late_starts, scheduling.scheduled_starts),
            scheduling.late_start_threshold_us as f64 / 1000.0
        ));
    }
    if s.generator.busy > 0.9 {
        warnings.push(format!(
            "The generator's workers were {:.0} % busy: horde itself may have been the limit.",
            s.generator.busy * 100.0
        ));
    }
    if s.global.unsent > 0 {
        warnings.push(format!(
            "{} requests were never sent (counted as KO, kept out of the latency figures): see Errors.",
            s.global.unsent
        ));
    }
    if s.global.count == 0 {
        warnings.push("No request completed.".to_string());
    }
    warnings
}

fn thresholds_table(thresholds: &[ThresholdResult]) -> String {
    let mut out = String::from(
        r#"<h3>Thresholds</h3><table class="thresholds" id="thresholds"><thead><tr><th>threshold</th><th>scope</th><th>judged on</th><th>observed</th><th>limit</th><th>verdict</th></tr></thead><tbody>"#,
    );
    const ROWS_SHOWN: usize = 50;
    for t in thresholds {
        let _ = write!(
            out,
            "<tr><td><code>{}</code>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            html(&t.text),
            if t.abort { " <small>(abort)</small>" } else { "" },
            html(&t.scope),
            html(t.population.as_deref().unwrap_or("every request")),
            html(t.observed_text.as_deref().or(t.note.as_deref()).unwrap_or("-")),
            html(&format!("{} {}", t.comparison, t.bound_text)),
            status_badge(t.status.as_str())
        );
        // An `each` threshold: its failing rows first, at most some of them.
        let mut rows: Vec<_> = t.rows.iter().collect();
        rows.sort_by_key(|r| r.status == ThresholdStatus::Pass);
        for row in rows.iter().take(ROWS_SHOWN) {
            let _ = write!(
                out,
                r#"<tr class="sub"><td></td><td>{}</td><td></td><td>{}</td><td></td><td>{}</td></tr>"#,
                html(&row.name),
                html(row.observed_text.as_deref().unwrap_or("-")),
                status_badge(row.status.as_str())
            );
        }
        if rows.len() > ROWS_SHOWN {
            let _ = write!(
                out,
                r#"<tr class="sub"><td></td><td colspan="5">and {} more rows</td></tr>"#,
                rows.len() - ROWS_SHOWN
            );
        }
    }
    out.push_str("</tbody></table>");
    out
}

/// Gatling's statistics columns: count, OK, KO, KO %, rps, min, the configured percentiles,
/// max, mean, standard deviation.
fn stats_header(first: &str, percentiles: &[f64]) -> String {
    let mut out = format!(r#"<tr><th data-sort="text">{}</th>"#, html(first));
    for label in ["count", "OK", "KO", "KO %", "req/s", "min (ms)"] {
        let _ = write!(out, r#"<th data-sort="num">{label}</th>"#);
    }
    for p in percentiles {
        let _ = write!(out, r#"<th data-sort="num">p{p} (ms)</th>"#);
    }
    for label in ["max (ms)", "mean (ms)", "stddev (ms)"] {
        let _ = write!(out, r#"<th data-sort="num">{label}</th>"#);
    }
    out.push_str("</tr>");
    out
}

fn latency_cells(out: &mut String, latency: &LatencyStats, percentiles: &[f64]) {
    let has = latency.count > 0;
    let cell = |value: String| if has { value } else { "-".into() };
    let _ = write!(out, "<td>{}</td>", cell(ms(latency.min_us)));
    for p in percentiles {
        let _ =
            write!(out, "<td>{}</td>", latency.percentile(*p).filter(|_| has).map(ms).unwrap_or_else(|| "-".into()));
    }
    let _ = write!(
        out,
        "<td>{}</td><td>{}</td><td>{}</td>",
        cell(ms(latency.max_us)),
        cell(ms_f(latency.mean_us)),
        cell(ms_f(latency.stddev_us))
    );
}

fn request_row(out: &mut String, r: &RequestStats, link: Option<&str>, percentiles: &[f64]) {
    let name = match link {
        Some(page) => format!(r##"<a href="#{page}">{}</a>"##, html(&r.name)),
        None => html(&r.name),
    };
    let _ = write!(
        out,
        r#"<tr><td class="name">{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td>"#,
        r.count,
        r.ok,
        r.ko,
        percent(r.ko, r.count),
        r.mean_rps
    );
    latency_cells(out, &r.latency.all, percentiles);
    out.push_str("</tr>");
}

/// The statistics table: the global row, then every request row (each links to its page
/// when it has one), then the groups.
pub fn requests(
    summary: &Summary,
    request_page: &dyn Fn(usize) -> Option<String>,
    group_page: &dyn Fn(usize) -> Option<String>,
) -> String {
    let percentiles = &summary.plan.options.percentiles;
    let mut out = String::from("<h2>Requests</h2>");
    let _ = write!(
        out,
        r#"<div class="table-tools"><input type="search" id="request-search" placeholder="Search {} request names" aria-label="Search requests"> <span id="requests-shown"></span></div>"#,
        summary.requests.len()
    );
    out.push_str(r#"<table class="stats" id="requests-table"><thead>"#);
    out.push_str(&stats_header("request", percentiles));
    out.push_str(r#"</thead><tbody class="global">"#);
    request_row(&mut out, &summary.global, None, percentiles);
    out.push_str(r#"</tbody><tbody class="rows">"#);
    for (i, r) in summary.requests.iter().enumerate() {
        request_row(&mut out, r, request_page(i).as_deref(), percentiles);
    }
    out.push_str(r#"</tbody></table><div class="pager" id="requests-pager"></div>"#);
    if !summary.groups.is_empty() {
        out.push_str(r#"<h3>Groups</h3><table class="stats" id="groups-table"><thead>"#);
        out.push_str(&stats_header("group", percentiles));
        out.push_str(r#"</thead><tbody class="rows">"#);
        let seconds = summary.run.duration_ms.saturating_sub(summary.run.warmup_ms) as f64 / 1000.0;
        for (i, g) in summary.groups.iter().enumerate() {
            group_row(&mut out, g, group_page(i).as_deref(), seconds, percentiles);
        }
        out.push_str("</tbody></table>");
    }
    out
}

fn group_row(out: &mut String, g: &GroupStats, link: Option<&str>, seconds: f64, percentiles: &[f64]) {
    let name = match link {
        Some(page) => format!(r##"<a href="#{page}">{}</a>"##, html(&g.name)),
        None => html(&g.name),
    };
    let rps = if seconds > 0.0 { g.count as f64 / seconds } else { 0.0 };
    let _ = write!(
        out,
        r#"<tr><td class="name">{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{rps:.1}</td>"#,
        g.count,
        g.ok,
        g.ko,
        percent(g.ko, g.count)
    );
    latency_cells(out, &g.duration, percentiles);
    out.push_str("</tr>");
}

/// A table of latency statistics, one row per (label, stats).
fn latency_table(first: &str, rows: &[(&str, &LatencyStats)], percentiles: &[f64]) -> String {
    let mut out = format!(r#"<table class="stats"><thead><tr><th>{}</th><th>count</th><th>min (ms)</th>"#, html(first));
    for p in percentiles {
        let _ = write!(out, "<th>p{p} (ms)</th>");
    }
    out.push_str("<th>max (ms)</th><th>mean (ms)</th><th>stddev (ms)</th></tr></thead><tbody>");
    for (label, stats) in rows {
        let _ = write!(out, r#"<tr><td class="name">{}</td><td>{}</td>"#, html(label), stats.count);
        latency_cells(&mut out, stats, percentiles);
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

pub fn request_page(summary: &Summary, r: &RequestStats, charts: &[String]) -> String {
    let percentiles = &summary.plan.options.percentiles;
    let mut out =
        format!(r##"<p><a href="#requests">&larr; Requests</a></p><h2>Request <q>{}</q></h2>"##, html(&r.name));
    out.push_str(&facts(&[
        ("count", format!("{} ({} OK, {} KO, {} % KO)", r.count, r.ok, r.ko, percent(r.ko, r.count))),
        ("never sent", r.unsent.to_string()),
        ("in flight at the end", r.interrupted.to_string()),
        ("requests/s", format!("{:.1}", r.mean_rps)),
        ("bytes sent / received", format!("{} / {}", r.bytes_sent, r.bytes_received)),
    ]));
    for id in charts {
        out.push_str(&chart(id));
    }
    let l = &r.latency;
    out.push_str("<h3>Latency</h3>");
    out.push_str(&latency_table(
        "latency",
        &[
            ("all (from the intended start)", &l.all),
            ("OK", &l.ok),
            ("KO", &l.ko),
            ("uncorrected (from the actual start)", &l.uncorrected),
        ],
        percentiles,
    ));
    let p = &r.phases;
    out.push_str("<h3>Phases</h3>");
    out.push_str(&latency_table(
        "phase",
        &[
            ("dns", &p.dns),
            ("connect", &p.connect),
            ("tls", &p.tls),
            ("send", &p.send),
            ("wait (to the first byte)", &p.wait),
            ("receive", &p.receive),
        ],
        percentiles,
    ));
    if !r.distribution.is_empty() {
        out.push_str(r#"<h3>Response time ranges</h3><table class="stats"><thead><tr><th>range</th><th>count</th><th>%</th></tr></thead><tbody>"#);
        for bucket in &r.distribution {
            let _ = write!(
                out,
                r#"<tr><td class="name">{}</td><td>{}</td><td>{:.1}</td></tr>"#,
                html(&bucket.label),
                bucket.count,
                bucket.percent
            );
        }
        out.push_str("</tbody></table>");
    }
    out
}

/// What a group's durations measure.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum GroupKind {
    /// A group or `try_max`: a pass through it, every attempt included.
    Pass,
    /// `eventually`: the time to consistency, from the first attempt's start to the end of the
    /// first attempt that passed (a pass that gave up: until it did).
    Eventually,
}

impl GroupKind {
    pub fn measure(self) -> &'static str {
        match self {
            GroupKind::Pass => "Duration of a pass",
            GroupKind::Eventually => "Time to consistency",
        }
    }
}

/// The group rows that are `eventually` blocks: the summary does not mark them, the plan does.
/// A row's name is its step's, prefixed by the groups around it (`group / name`), as the
/// engine names it; retry blocks prefix nothing.
pub fn eventually_groups(plan: &Plan) -> BTreeSet<String> {
    fn walk(steps: &[Step], prefix: &str, found: &mut BTreeSet<String>) {
        for step in steps {
            let inner = match step {
                Step::Core(CoreStep::Group { name, .. }) => format!("{prefix}{name} / "),
                Step::Core(CoreStep::Eventually { name, .. }) => {
                    found.insert(format!("{prefix}{name}"));
                    prefix.to_string()
                }
                _ => prefix.to_string(),
            };
            for child in step.children() {
                walk(child.steps, &inner, found);
            }
        }
    }
    let mut found = BTreeSet::new();
    for scenario in &plan.scenarios {
        walk(&scenario.steps, "", &mut found);
    }
    found
}

pub fn group_page(summary: &Summary, g: &GroupStats, charts: &[String], kind: GroupKind) -> String {
    let percentiles = &summary.plan.options.percentiles;
    let mut out = format!(r##"<p><a href="#requests">&larr; Requests</a></p><h2>Group <q>{}</q></h2>"##, html(&g.name));
    let mut rows = vec![("passes", format!("{} ({} OK, {} KO, {} % KO)", g.count, g.ok, g.ko, percent(g.ko, g.count)))];
    if let Some(a) = &g.attempts {
        rows.push((
            "attempts",
            format!("{} in all, {:.2} a pass, at most {}; {} passes retried", a.total, a.mean, a.max, a.retried_passes),
        ));
    }
    out.push_str(&facts(&rows));
    for id in charts {
        out.push_str(&chart(id));
    }
    let _ = write!(out, "<h3>{}</h3>", kind.measure());
    let (column, row) = match kind {
        GroupKind::Pass => ("duration", "all passes"),
        GroupKind::Eventually => ("time to consistency", "all passes (one that gave up: until it did)"),
    };
    out.push_str(&latency_table(column, &[(row, &g.duration)], percentiles));
    out
}

pub fn over_time(bucket_ms: u64, interval_ms: u64, has_histograms: bool) -> String {
    let mut out = String::from("<h2>Over time</h2>");
    let note = if bucket_ms > interval_ms {
        format!(
            "Each point merges {} intervals of {} ms: counts are added and percentiles come from the intervals' histograms merged (histograms.hlog), never from averaged percentiles.",
            bucket_ms / interval_ms,
            interval_ms
        )
    } else if has_histograms {
        format!("One point per interval of {interval_ms} ms.")
    } else {
        format!("One point per interval of {interval_ms} ms, as timeseries.jsonl has them (no histograms.hlog in this directory).")
    };
    let _ = write!(
        out,
        r#"<p class="note">{} Drag across a chart to zoom them all; double-click to zoom out.</p>"#,
        html(&note)
    );
    for id in ["time-users", "time-rps", "time-latency", "time-errors"] {
        out.push_str(&chart(id));
    }
    out
}

pub fn distribution(summary: &Summary, chart_ids: &[String], has_histograms: bool) -> String {
    let mut out = String::from("<h2>Distribution</h2>");
    if !has_histograms {
        out.push_str(r#"<p class="note">This results directory has no histograms.hlog: the spectrum shows the summary's percentiles only, and there is no histogram.</p>"#);
    }
    for id in chart_ids {
        out.push_str(&chart(id));
    }
    let l = &summary.global.latency;
    out.push_str(&latency_table(
        "all requests",
        &[
            ("corrected (from the intended start)", &l.all),
            ("uncorrected (from the actual start)", &l.uncorrected),
            ("OK", &l.ok),
            ("KO", &l.ko),
        ],
        &summary.plan.options.percentiles,
    ));
    out
}

pub fn errors(summary: &Summary) -> String {
    let mut out = String::from("<h2>Errors</h2>");
    if summary.errors.is_empty() {
        out.push_str("<p>No errors.</p>");
        return out;
    }
    let total: u64 = summary.errors.iter().map(|e| e.count).sum();
    let mut kinds: Vec<(String, u64)> = Vec::new();
    for e in &summary.errors {
        match kinds.iter_mut().find(|(k, _)| *k == e.kind) {
            Some((_, count)) => *count += e.count,
            None => kinds.push((e.kind.clone(), e.count)),
        }
    }
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out.push_str(r#"<h3>By kind</h3><table class="stats" id="error-kinds"><thead><tr><th>kind</th><th>count</th><th>% of errors</th></tr></thead><tbody>"#);
    for (kind, count) in &kinds {
        let _ = write!(
            out,
            r#"<tr><td class="name">{}</td><td>{count}</td><td>{}</td></tr>"#,
            html(kind),
            percent(*count, total)
        );
    }
    out.push_str(r#"</tbody></table><h3>By request and message</h3><table class="stats" id="errors-table"><thead><tr><th>kind</th><th>request</th><th>message (its first occurrence)</th><th>count</th><th>% of errors</th></tr></thead><tbody>"#);
    for e in &summary.errors {
        let _ = write!(
            out,
            r#"<tr><td class="name">{}</td><td class="name">{}</td><td class="message">{}</td><td>{}</td><td>{:.1}</td></tr>"#,
            html(&e.kind),
            html(&e.request),
            html(&e.message),
            e.count,
            e.percent
        );
    }
    out.push_str("</tbody></table>");
    out
}

pub fn environment(summary: &Summary) -> String {
    let e = &summary.environment;
    let c = &summary.connections;
    let g = &summary.generator;
    let mut out = String::from("<h2>Environment and plan</h2>");
    out.push_str(&facts(&[
        ("host", html(&e.host)),
        ("os", html(&e.os)),
        ("arch", html(&e.arch)),
        ("cpu", html(&e.cpu_model)),
        ("cores / workers", format!("{} / {}", e.cores, e.workers)),
        ("horde", html(&e.horde_version)),
        ("front end", html(&e.front_end)),
        ("generator CPU", format!("{} ms ({:.0} % busy)", g.cpu_ms, g.busy * 100.0)),
        ("connections opened", format!("{} ({} HTTP/2)", c.opened, c.http2)),
        (
            "scheduled starts",
            format!(
                "{} ({} late; start lag p99 {} ms, max {} ms: the generator's, not in the times)",
                summary.scheduling.scheduled_starts,
                summary.scheduling.late_starts,
                summary.scheduling.start_lag.percentile(99.0).map(ms).unwrap_or_else(|| "-".into()),
                ms(summary.scheduling.start_lag.max_us)
            ),
        ),
    ]));
    // Redacted again: a summary.json written by a horde that kept credentials loses them here.
    let plan = serde_json::to_string_pretty(&summary.plan.redacted()).unwrap_or_default();
    let _ = write!(out, r#"<h3>Plan</h3><pre class="plan">{}</pre>"#, html(&plan));
    out
}

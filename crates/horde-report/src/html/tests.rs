//! report.html rendered from results directories made here: a long run with histograms.hlog,
//! names that look like markup, a run without histograms, a time series cut short.

use super::assets::csp_hash;
use super::histograms::tests::write_log;
use super::*;
use crate::results_dir::write_summary;
use crate::summary::{Environment, Summary};
use horde_metrics::{
    ErrorSummary, IntervalSample, LatencyStats, Percentile, RequestLatency, RequestStats, RunStatus, Totals,
};
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

const ATTACK: &str = "</script><img src=x onerror=alert(1)>";
const START_MS: u64 = 1_795_420_403_000;

/// A fresh directory under the system's temporary one, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "horde-report-html-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn latency(count: u64, base_us: u64) -> LatencyStats {
    LatencyStats {
        count,
        min_us: base_us / 2,
        max_us: base_us * 10,
        mean_us: base_us as f64,
        stddev_us: base_us as f64 / 3.0,
        percentiles: [50.0, 75.0, 95.0, 99.0]
            .iter()
            .map(|p| Percentile { percentile: *p, value_us: base_us + *p as u64 })
            .collect(),
    }
}

/// A results directory of a run of `seconds` one-second intervals over the request `names`,
/// each interval with 3 requests of each name; with histograms.hlog when `hlog`.
fn results(names: &[&str], seconds: u64, hlog: bool) -> TempDir {
    let dir = TempDir::new();
    let plan = horde_plan::Plan::from_json(&format!(
        r#"{{"version": 1, "name": {}, "scenarios": [{{"name": "s", "injection": [], "steps": []}}]}}"#,
        serde_json::to_string(&format!("plan {ATTACK}")).unwrap()
    ))
    .unwrap();
    let totals = Totals::new(std::time::UNIX_EPOCH + std::time::Duration::from_millis(START_MS), 1);
    let mut summary = Summary::from_totals(&totals, RunStatus::Completed, &plan, &Environment::detect(1, "test"));
    summary.run.duration_ms = seconds * 1000;
    let count = seconds * 3;
    let stats = |name: &str| RequestStats {
        name: name.to_string(),
        count,
        ok: count,
        mean_rps: 3.0,
        latency: RequestLatency {
            all: latency(count, 1000),
            ok: latency(count, 1000),
            uncorrected: latency(count, 900),
            ..Default::default()
        },
        ..Default::default()
    };
    summary.requests = names.iter().map(|n| stats(n)).collect();
    summary.global = stats("Global");
    summary.errors = vec![ErrorSummary {
        kind: "check_failed".into(),
        request: ATTACK.into(),
        message: format!("body said {ATTACK}"),
        count: 1,
        percent: 100.0,
    }];
    write_summary(&dir.0, &summary).unwrap();
    let mut series = std::io::BufWriter::new(std::fs::File::create(dir.0.join("timeseries.jsonl")).unwrap());
    for interval in 1..=seconds {
        for name in std::iter::once("all").chain(names.iter().copied()) {
            let sample = IntervalSample {
                interval,
                start_ms: (interval - 1) * 1000,
                duration_ms: 1000,
                epoch_ms: summary.run.started_at_unix_ms + (interval - 1) * 1000,
                name: name.to_string(),
                ok: 3,
                ko: 0,
                rps: 3.0,
                latency: latency(3, 1000 + interval),
                users_active: 2,
                phases_mean_us: Default::default(),
            };
            serde_json::to_writer(&mut series, &sample).unwrap();
            series.write_all(b"\n").unwrap();
        }
    }
    drop(series);
    if hlog {
        let tags: Vec<String> = (0..names.len()).map(|i| format!("r{i}")).collect();
        let mut entries = Vec::new();
        for interval in 1..=seconds {
            let values = vec![1000 + interval, 1100 + interval, 5000 + interval];
            entries.push(("", interval, values.clone()));
            entries.push(("uncorrected", interval, values.clone()));
            for tag in &tags {
                entries.push((tag.as_str(), interval, values.clone()));
            }
        }
        let named: Vec<(&str, &str)> = tags.iter().map(String::as_str).zip(names.iter().copied()).collect();
        std::fs::write(dir.0.join("histograms.hlog"), write_log(START_MS, 1000, &entries, &named)).unwrap();
    }
    dir
}

fn chart_data(html: &str) -> serde_json::Value {
    let start = html.find(r#"id="report-charts">"#).unwrap() + r#"id="report-charts">"#.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

#[test]
fn an_hour_at_one_second_with_20_requests_is_merged_to_at_most_1000_points_and_stays_small() {
    let names: Vec<String> = (0..20).map(|i| format!("GET /api/{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let dir = results(&names, 3600, true);
    let html = render_html(&dir.0).unwrap();
    assert!(html.len() < 3_000_000, "{} bytes", html.len());
    let charts = chart_data(&html);
    let latency = &charts["time-latency"];
    let xs = latency["x"].as_array().unwrap();
    assert_eq!(xs.len(), 900, "3600 intervals, 4 a point");
    // A merged point's p99 is that of its four intervals' requests together: the largest
    // value (5000 + the interval) of the last interval of the point.
    let p99 = &latency["series"][3];
    assert_eq!(p99["label"], "p99");
    let exact_p99 = |intervals: std::ops::RangeInclusive<u64>| {
        let mut exact = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for i in intervals {
            for v in [1000 + i, 1100 + i, 5000 + i] {
                exact.record(v).unwrap();
            }
        }
        exact.value_at_quantile(0.99) as f64 / 1000.0
    };
    assert_eq!(p99["values"][0].as_f64().unwrap(), exact_p99(1..=4));
    assert_eq!(p99["values"][899].as_f64().unwrap(), exact_p99(3597..=3600));
    // Throughput adds the counts: 3 requests a second in every interval.
    assert_eq!(charts["time-rps"]["series"][0]["values"][10].as_f64().unwrap(), 3.0);
    assert_eq!(charts["request-0-latency"]["x"].as_array().unwrap().len(), 900);
    assert!(charts["dist-histogram"]["series"].as_array().unwrap().len() == 2, "corrected and uncorrected");
    assert!(html.contains("Each point merges 4 intervals of 1000 ms"));
}

#[test]
fn names_messages_and_plan_values_are_escaped_everywhere() {
    let dir = results(&[ATTACK, "<!-- comment", "a & b"], 5, true);
    let html = render_html(&dir.0).unwrap();
    assert!(!html.contains(ATTACK));
    assert!(!html.contains("<!-- comment"));
    assert!(!html.contains("<img"));
    assert!(html.contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
    // Three scripts (the charts' data, uPlot, the report's): each closes once.
    assert_eq!(html.matches("</script>").count(), 3);
    // The request's charts found it by the name in the log's comments.
    assert_eq!(chart_data(&html)["request-0-latency"]["x"].as_array().unwrap().len(), 5);
}

#[test]
fn the_policy_allows_exactly_the_inline_scripts_and_style_by_hash() {
    let dir = results(&["home"], 3, false);
    let html = render_html(&dir.0).unwrap();
    let policy_start = html.find(r#"http-equiv="Content-Security-Policy" content=""#).unwrap();
    let policy = &html[policy_start..html[policy_start..].find('>').unwrap() + policy_start];
    assert!(policy.contains("default-src 'none'"), "{policy}");
    assert!(!policy.contains("unsafe"), "{policy}");
    let mut rest = html.as_str();
    let mut scripts = 0;
    while let Some(at) = rest.find("<script>") {
        let body = &rest[at + "<script>".len()..];
        let end = body.find("</script>").unwrap();
        assert!(policy.contains(&csp_hash(&body[..end])), "a script without its hash");
        scripts += 1;
        rest = &body[end..];
    }
    assert_eq!(scripts, 2);
    let style_start = html.find("<style>").unwrap() + "<style>".len();
    let style_end = html.find("</style>").unwrap();
    assert!(policy.contains(&csp_hash(&html[style_start..style_end])));
}

#[test]
fn without_histograms_the_time_series_is_charted_as_it_is() {
    let dir = results(&["home"], 1500, false);
    let html = render_html(&dir.0).unwrap();
    let charts = chart_data(&html);
    assert_eq!(charts["time-latency"]["x"].as_array().unwrap().len(), 1500);
    assert_eq!(charts["time-latency"]["series"][0]["values"][1499].as_f64().unwrap(), 2.55, "p50 of interval 1500");
    assert!(charts.get("dist-histogram").is_none());
    assert!(html.contains("no histograms.hlog in this directory"));
}

#[test]
fn a_time_series_cut_short_renders_what_was_written() {
    let dir = results(&["home"], 10, false);
    let path = dir.0.join("timeseries.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 40]).unwrap();
    let html = render_html(&dir.0).unwrap();
    assert_eq!(chart_data(&html)["time-users"]["x"].as_array().unwrap().len(), 10);
    assert_eq!(chart_data(&html)["request-0-rps"]["x"].as_array().unwrap().len(), 9, "the last line lost its end");
    assert!(render_html(&dir.0.join("missing")).is_err());
}

#[test]
fn the_busiest_requests_get_pages_and_every_name_is_in_the_table() {
    let names: Vec<String> = (0..300).map(|i| format!("r{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let dir = results(&names, 2, false);
    let html = render_html(&dir.0).unwrap();
    assert_eq!(html.matches(r#"<section class="page" id="request-"#).count(), DETAIL_PAGES);
    let rows = html.split(r#"<tbody class="rows">"#).nth(1).unwrap().split("</tbody>").next().unwrap();
    assert_eq!(rows.matches("<tr>").count(), 300);
    assert_eq!(rows.matches(r##"<a href="#request-"##).count(), DETAIL_PAGES);
}

/// A comparison of 5 runs a side where a request named like markup got 20 % slower, its
/// group too, and a run directory with a report of its own.
fn comparison(run_dir: &Path) -> crate::compare::CompareReport {
    use crate::compare::{compare, CompareOptions, Method, Scope, Series, SideSamples};
    let series = |scope: Scope, name: &str, metric, base: f64| Series {
        scope,
        name: name.into(),
        metric,
        values: (0..5).map(|i| base + i as f64).collect(),
    };
    let side = |label: &str, factor: f64| SideSamples {
        label: label.into(),
        runs: (0..5)
            .map(|i| if i == 0 { run_dir.display().to_string() } else { format!("missing/{label}{i}") })
            .collect(),
        series: vec![
            series(Scope::Global, "Global", crate::compare::Metric::P50, 10_000.0 * factor),
            series(Scope::Request, ATTACK, crate::compare::Metric::P50, 10_000.0 * factor),
            series(Scope::Group, "<b>journey</b>", crate::compare::Metric::P50, 20_000.0 * factor),
            series(Scope::Request, ATTACK, crate::compare::Metric::Errors, 0.0),
        ],
    };
    let mut report = compare(&side("A", 1.0), &side("B", 1.2), Method::Runs, &CompareOptions::default());
    report.plan_differences = vec![format!("scenarios[0].name: \"a\" -> \"{ATTACK}\"")];
    report
}

#[test]
fn the_compare_page_escapes_names_colours_verdicts_and_links_runs_with_a_report() {
    let dir = results(&["home"], 2, false);
    write_html(&dir.0).unwrap();
    let report = comparison(&dir.0);
    let page_dir = dir.0.parent().unwrap();
    let html = render_compare(&report, Some(page_dir));
    assert!(!html.contains(ATTACK) && !html.contains("<b>journey"), "names only escaped");
    assert!(html.contains(r#"<span class="badge bad" id="run-status">regression</span>"#));
    // The request and the group got slower: their verdicts in the bad colour; errors unchanged.
    let p50 = html.split(r#"id="compare-p50""#).nth(1).unwrap().split("</table>").next().unwrap();
    assert_eq!(p50.matches(r#"<td class="verdict worse">slower</td>"#).count(), 3, "{p50}");
    assert!(p50.contains("&lt;b&gt;journey&lt;/b&gt; (group)"));
    assert!(p50.contains("<td>+20.0%</td>") && p50.contains("<td>5+5</td>"), "{p50}");
    let errors = html.split(r#"id="compare-errors""#).nth(1).unwrap().split("</table>").next().unwrap();
    assert!(errors.contains(r#"<td class="verdict same">~</td>"#), "{errors}");
    // The warnings come first: the plans' difference, escaped.
    let warnings = html.find(r#"id="compare-warnings""#).unwrap();
    assert!(warnings < html.find(r#"id="compare-p50""#).unwrap());
    assert!(html.contains("The plans differ"));
    // A chart of changes and one of the runs per metric, with the tolerance band.
    let charts = chart_data(&html);
    let change = &charts["change-p50"];
    assert_eq!(change["kind"], "change");
    assert_eq!(change["labels"][1], ATTACK, "raw in the JSON, which only sets text");
    assert_eq!(change["band"], serde_json::json!([-5.0, 5.0]));
    assert!((change["series"][0]["values"][1].as_f64().unwrap() - 20.0).abs() < 0.01, "{change}");
    assert_eq!(charts["runs-p50"]["series"][1]["values"].as_array().unwrap().len(), 3 * 10, "3 rows, 5 + 5 runs");
    assert!(charts.get("change-errors").is_some() && charts.get("change-rps").is_none());
    // The run with a report is linked relative to the page; the others are not linked.
    let run_name = dir.0.file_name().unwrap().to_string_lossy();
    assert!(html.contains(&format!(r#"<a href="{run_name}/report.html">report.html</a>"#)), "a relative link");
    assert_eq!(html.matches("report.html</a>").count(), 2, "the same run on each side, linked once each");
    // The same policy as report.html: the scripts by their hashes.
    let policy_start = html.find(r#"http-equiv="Content-Security-Policy" content=""#).unwrap();
    let policy = &html[policy_start..html[policy_start..].find('>').unwrap() + policy_start];
    assert!(policy.contains(&csp_hash(super::assets::REPORT_JS)) && !policy.contains("unsafe"));
    assert_eq!(html.matches("</script>").count(), 3);
}

fn live_page() -> LivePage {
    LivePage { token: "0123abcd".into(), control: true, version: 7 }
}

#[test]
fn the_dashboards_page_runs_live_js_by_hash_and_may_connect_only_to_its_own_server() {
    let dir = results(&[ATTACK], 3, false);
    let live = render_live(&dir.0, false, &mut ReadCache::default()).unwrap().page.html(&live_page());
    let policy_start = live.find(r#"http-equiv="Content-Security-Policy" content=""#).unwrap();
    let policy = &live[policy_start..live[policy_start..].find('>').unwrap() + policy_start];
    assert!(policy.contains(&csp_hash(assets::LIVE_JS)), "{policy}");
    assert!(policy.ends_with("connect-src 'self'\""), "{policy}");
    assert!(!policy.contains("unsafe"), "{policy}");
    assert_eq!(live.matches("<script>").count(), 3, "uPlot, the report's script and live.js");
    assert!(live.contains(
        r#"<meta name="horde-dashboard" content="{&quot;control&quot;:true,&quot;token&quot;:&quot;0123abcd&quot;,&quot;version&quot;:7}">"#
    ));
    assert!(!live.contains(ATTACK));
    // report.html itself connects nowhere.
    let file = render_html(&dir.0).unwrap();
    assert!(!file.contains("connect-src") && !file.contains("horde-dashboard"));
}

#[test]
fn an_update_is_one_line_of_json_holding_the_same_parts_as_report_html() {
    let dir = results(&[ATTACK, "home"], 5, true);
    let live = render_live(&dir.0, true, &mut ReadCache::default()).unwrap();
    assert!(!live.update.contains('\n'), "a server-sent event's data is one line");
    let update: serde_json::Value = serde_json::from_str(&live.update).unwrap();
    assert_eq!(update["final"], true);
    let file = render_html(&dir.0).unwrap();
    // In the body: the styles may name the elements in their comments.
    let body = file.find("</head>").unwrap();
    let inside = |tag: &str| {
        let open = body + file[body..].find(&format!("<{tag}")).unwrap();
        let start = open + file[open..].find('>').unwrap() + 1;
        let end = start + file[start..].find(&format!("</{tag}>")).unwrap();
        file[start..end].to_string()
    };
    assert_eq!(update["main"].as_str().unwrap(), inside("main"));
    assert_eq!(update["nav"].as_str().unwrap(), inside("nav"));
    assert_eq!(update["header"].as_str().unwrap(), inside("header"));
    assert_eq!(update["charts"], chart_data(&file));
    // The live page is report.html with the live parts added: the same header, tabs and pages.
    assert!(live.page.html(&live_page()).contains(&inside("main")));
}

/// How long the dashboard's renderer takes on an hour's results, its first rendering (nothing
/// read yet) and the next ones (one interval more read each time; printed, not asserted:
/// `cargo test --release -p horde-report --lib rendering_an_hour -- --nocapture`).
#[test]
fn rendering_an_hour_of_20_requests_for_the_dashboard() {
    let names: Vec<String> = (0..20).map(|i| format!("GET /api/{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let whole = results(&names, 3600, true);
    // The same directory one interval short: its files' lines up to the last interval.
    let growing = TempDir::new();
    let short = |file: &str, last_interval_from: &dyn Fn(&[u8]) -> usize| {
        let bytes = std::fs::read(whole.0.join(file)).unwrap();
        std::fs::write(growing.0.join(file), &bytes[..last_interval_from(&bytes)]).unwrap();
    };
    let lines_per_interval = names.len() + 1;
    short("timeseries.jsonl", &|bytes| {
        let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1).collect();
        ends[ends.len() - 1 - lines_per_interval]
    });
    short("histograms.hlog", &|bytes| {
        let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1).collect();
        ends[ends.len() - 1 - (lines_per_interval + 1)]
    });
    std::fs::copy(whole.0.join("summary.json"), growing.0.join("summary.json")).unwrap();
    let mut cache = ReadCache::default();
    let started = std::time::Instant::now();
    render_live(&growing.0, false, &mut cache).unwrap();
    let first = started.elapsed();
    for file in ["timeseries.jsonl", "histograms.hlog"] {
        std::fs::copy(whole.0.join(file), growing.0.join(file)).unwrap();
    }
    let started = std::time::Instant::now();
    let live = render_live(&growing.0, false, &mut cache).unwrap();
    let next = started.elapsed();
    let started = std::time::Instant::now();
    let page = live.page.html(&live_page());
    let page_built = started.elapsed();
    eprintln!(
        "an hour of 20 requests: the first rendering {first:?}, the next (one interval more) {next:?}: \
         update {} bytes; the page, built only when a browser opens one, {page_built:?}, {} bytes",
        live.update.len(),
        page.len()
    );
    let fresh = render_live(&growing.0, false, &mut ReadCache::default()).unwrap();
    assert!(live.update == fresh.update);
}

#[test]
fn a_growing_directory_rendered_with_one_cache_renders_as_read_afresh_each_time() {
    // The dashboard reads the files as the sink appends to them: cut here at byte counts that
    // fall mid-line and mid-interval, and past 1,000 s, where a chart's point widens to 2 s.
    let names = ["GET /a", "GET /b", "POST /c"];
    let whole = results(&names, 2400, true);
    let growing = TempDir::new();
    let timeseries = std::fs::read(whole.0.join("timeseries.jsonl")).unwrap();
    let hlog = std::fs::read(whole.0.join("histograms.hlog")).unwrap();
    let mut cache = ReadCache::default();
    let mut kept_histograms = 0;
    for fraction in [0.05, 0.3, 0.4137, 0.41371, 0.45, 0.8, 1.0] {
        let cut = |bytes: &[u8]| bytes[..(bytes.len() as f64 * fraction) as usize].to_vec();
        std::fs::write(growing.0.join("timeseries.jsonl"), cut(&timeseries)).unwrap();
        std::fs::write(growing.0.join("histograms.hlog"), cut(&hlog)).unwrap();
        let mut summary = crate::results_dir::read_summary(&whole.0).unwrap();
        summary.run.duration_ms = (2_400_000.0 * fraction) as u64;
        if fraction < 1.0 {
            summary.run.status = "running".into();
        }
        write_summary(&growing.0, &summary).unwrap();
        let finished = fraction == 1.0;
        let cached = render_live(&growing.0, finished, &mut cache).unwrap();
        let fresh = render_live(&growing.0, finished, &mut ReadCache::default()).unwrap();
        assert!(cached.update == fresh.update, "at {fraction} of the files the cached rendering differs");
        assert!(cached.page.html(&live_page()) == fresh.page.html(&live_page()));
        kept_histograms = cache.kept_intervals();
    }
    assert_eq!(kept_histograms, 2400 * 5, "the log was kept between renderings, each interval read once");
    let fresh = render_live(&whole.0, true, &mut ReadCache::default()).unwrap();
    let cached = render_live(&growing.0, true, &mut cache).unwrap();
    assert!(cached.update == fresh.update, "the last rendering is the whole directory's");
    // A summary that gives the run another start (the grid every entry is placed on): read again.
    edit_summary(&growing.0, |s| s.run.started_at_unix_ms += 2000);
    let cached = render_live(&growing.0, true, &mut cache).unwrap();
    let fresh = render_live(&growing.0, true, &mut ReadCache::default()).unwrap();
    assert!(cached.update == fresh.update, "read again on the new grid");
    // Another directory starts afresh.
    let other = results(&["GET /other"], 3, true);
    let cached = render_live(&other.0, true, &mut cache).unwrap();
    assert!(cached.update == render_live(&other.0, true, &mut ReadCache::default()).unwrap().update);
}

/// Rewrites the summary of a results directory.
fn edit_summary(dir: &Path, edit: impl FnOnce(&mut Summary)) {
    let mut summary = crate::results_dir::read_summary(dir).unwrap();
    edit(&mut summary);
    write_summary(dir, &summary).unwrap();
}

#[test]
fn the_last_interval_cut_short_by_the_runs_end_is_rated_over_the_time_it_measured_and_marked() {
    // Three intervals of 3 requests; the run ended 500 ms into the third.
    let dir = results(&["home"], 3, true);
    edit_summary(&dir.0, |s| s.run.duration_ms = 2500);
    let charts = chart_data(&render_html(&dir.0).unwrap());
    for id in ["time-rps", "overview", "request-0-rps"] {
        let ok = &charts[id]["series"][0];
        assert_eq!(ok["label"], "OK/s");
        assert_eq!(ok["values"][1].as_f64().unwrap(), 3.0, "{id}: a whole interval");
        assert_eq!(ok["values"][2].as_f64().unwrap(), 6.0, "{id}: 3 requests in 0.5 s, not in 1 s");
        assert_eq!(charts[id]["partial"], serde_json::json!({"x": 2.0, "seconds": 0.5, "of_seconds": 1.0}), "{id}");
    }
    // A run whose end fell on an interval's end has no partial point.
    edit_summary(&dir.0, |s| s.run.duration_ms = 3000);
    let charts = chart_data(&render_html(&dir.0).unwrap());
    assert!(charts["time-rps"].get("partial").is_none());
    assert_eq!(charts["time-rps"]["series"][0]["values"][2].as_f64().unwrap(), 3.0);
    // A killed run (still `running`) has no end to trust: its points stay whole.
    edit_summary(&dir.0, |s| {
        s.run.duration_ms = 2500;
        s.run.status = "running".into();
    });
    let charts = chart_data(&render_html(&dir.0).unwrap());
    assert_eq!(charts["time-rps"]["series"][0]["values"][2].as_f64().unwrap(), 3.0);
}

#[test]
fn the_overview_shows_the_response_time_ranges_of_the_plans_bounds_in_numbers() {
    let dir = results(&["home", "search"], 2, false);
    edit_summary(&dir.0, |s| {
        let buckets = |counts: [u64; 4]| {
            let total: u64 = counts.iter().sum();
            ["t < 300 ms", "300 ms <= t < 900 ms", "t >= 900 ms", "failed"]
                .iter()
                .zip(counts)
                .map(|(label, count)| horde_metrics::DistributionBucket {
                    label: label.to_string(),
                    count,
                    percent: 100.0 * count as f64 / total as f64,
                })
                .collect::<Vec<_>>()
        };
        s.global.distribution = buckets([6, 2, 1, 1]);
        s.requests[0].distribution = buckets([3, 1, 1, 1]);
        s.requests[1].count = 4;
        s.requests[1].distribution = buckets([3, 1, 0, 0]);
    });
    let html = render_html(&dir.0).unwrap();
    let overview =
        html.split(r#"<section class="page" id="overview">"#).nth(1).unwrap().split("</section>").next().unwrap();
    let ranges = overview.split(r#"id="ranges""#).nth(1).unwrap().split("</table>").next().unwrap();
    assert!(ranges.contains(r#"<td><span class="swatch range-0"></span>t &lt; 300 ms</td><td class="count">6</td><td class="percent">60.0 %</td>"#), "{ranges}");
    assert!(ranges.contains(
        r#"<span class="swatch range-failed"></span>failed</td><td class="count">1</td><td class="percent">10.0 %</td>"#
    ));
    // The bar: each range a rectangle as wide as its share, side by side; an empty one drawn not.
    assert!(ranges.contains(r#"<rect class="range-0" x="0.000" y="0" width="60.000" height="10">"#), "{ranges}");
    assert!(ranges.contains(r#"<rect class="range-2" x="80.000" y="0" width="10.000" height="10">"#));
    // Each request's ranges, the busiest first, linked to its page.
    let by_request = overview.split(r#"id="request-ranges""#).nth(1).unwrap();
    let home = by_request.find(r##"<a href="#request-0">home</a>"##).unwrap();
    let search = by_request.find(r##"<a href="#request-1">search</a>"##).unwrap();
    assert!(home < search);
    assert!(by_request.contains("<th>300 ms &lt;= t &lt; 900 ms</th>"));
    assert_eq!(by_request.matches(r#"<svg class="ranges-bar""#).count(), 2);
    // The responses per second and the active users on one chart, on two axes.
    let charts = chart_data(&html);
    let units: Vec<&str> =
        charts["overview"]["series"].as_array().unwrap().iter().map(|s| s["unit"].as_str().unwrap()).collect();
    assert_eq!(units, ["req/s", "req/s", "users"]);
    assert!(overview.contains(r#"data-chart="overview-latency""#));
}

#[test]
fn an_eventually_groups_page_names_its_durations_the_time_to_consistency() {
    let plan = horde_plan::Plan::from_json(
        r#"{"version": 1, "name": "p", "scenarios": [{"name": "s", "injection": [], "steps": [
            {"type": "group", "name": "journey", "steps": [
                {"type": "eventually", "name": "visible", "steps": [{"type": "pause", "duration_ms": 1}]},
                {"type": "try_max", "name": "retry", "times": 2, "steps": [{"type": "pause", "duration_ms": 1}]}
            ]},
            {"type": "eventually", "name": "top", "steps": [{"type": "pause", "duration_ms": 1}]}
        ]}]}"#,
    )
    .unwrap();
    let eventually = pages::eventually_groups(&plan);
    assert_eq!(eventually.into_iter().collect::<Vec<_>>(), ["journey / visible", "top"]);
    let dir = results(&["home"], 2, false);
    let summary = crate::results_dir::read_summary(&dir.0).unwrap();
    let group = horde_metrics::GroupStats { name: "journey / visible".into(), count: 3, ok: 3, ..Default::default() };
    let page = pages::group_page(&summary, &group, &[], pages::GroupKind::Eventually);
    assert!(page.contains("<h3>Time to consistency</h3>") && !page.contains("Duration of a pass"), "{page}");
    assert!(page.contains("<th>time to consistency</th>"));
    let page = pages::group_page(&summary, &group, &[], pages::GroupKind::Pass);
    assert!(page.contains("<h3>Duration of a pass</h3>"));
}

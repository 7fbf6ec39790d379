//! The capacity sweep's report: the table seed 004 builds by hand (level, requests, p50, p99,
//! error rate, throughput), what it means (the highest level meeting the SLOs, the knee where
//! throughput stops growing, the level where errors begin), and a chart of it.

use crate::summary::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::Path;

/// A level counts as the knee when its throughput is within this share of the best.
const PLATEAU: f64 = 0.95;

/// Judging whether the generator delivered a level's load. More than this share of starts
/// later than the plan's late-start threshold (1 ms by default) is not delivered...
const LATE_SHARE_LIMIT: f64 = 0.01;
/// ...nor is a start lag p99 longer than the time between two arrivals (and than the 1 ms the
/// timer is forgiven): arrivals then come in bursts, which a rate limiter rightly refuses...
const LAG_FORGIVEN_US: u64 = 1000;
/// ...nor a level during which the generator's workers had this share of their CPU busy.
const BUSY_LIMIT: f64 = 0.9;

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct SweepLevel {
    /// Concurrent users (closed sweep) or arrivals per second (open sweep).
    pub level: f64,
    pub requests: u64,
    pub ok: u64,
    pub ko: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub mean_us: f64,
    /// KO / requests.
    pub error_rate: f64,
    /// OK requests per second over the measured part of the level (after the warm-up).
    pub throughput_rps: f64,
    /// The SLOs this level broke.
    pub broken_slos: Vec<String>,
    /// This level's own results directory, relative to the sweep's.
    pub results: String,
    /// The level was cut short by an interruption.
    pub interrupted: bool,
    /// Which run of this level this was: a level whose load was not delivered runs again,
    /// and the boundary an automatic search finds is confirmed by a second run.
    #[serde(default = "first_run")]
    pub run: u32,
    /// Why the generator did not deliver this level's load (its starts were late, or its
    /// CPU was saturated); None when it did. Such a level says nothing about the server.
    #[serde(default)]
    pub not_delivered: Option<String>,
    /// The facts behind that verdict.
    #[serde(default)]
    pub scheduled_starts: u64,
    #[serde(default)]
    pub late_starts: u64,
    #[serde(default)]
    pub start_lag_p99_us: u64,
    #[serde(default)]
    pub generator_busy: f64,
}

fn first_run() -> u32 {
    1
}

/// Whether the load of a level was delivered, and if not why: late starts, a start lag that
/// bunches arrivals, or a generator out of CPU. `arrival_rate` is the level's arrivals per
/// second in an open sweep.
fn delivery_problem(summary: &Summary, arrival_rate: Option<f64>) -> Option<String> {
    let scheduling = &summary.scheduling;
    if scheduling.scheduled_starts > 0 {
        let late_share = scheduling.late_starts as f64 / scheduling.scheduled_starts as f64;
        if late_share > LATE_SHARE_LIMIT {
            return Some(format!(
                "{:.1} % of starts were more than {:.1} ms late",
                late_share * 100.0,
                scheduling.late_start_threshold_us as f64 / 1000.0
            ));
        }
        let lag_p99 = scheduling.start_lag.percentile(99.0).unwrap_or(0);
        if let Some(rate) = arrival_rate.filter(|r| *r > 0.0) {
            let gap_us = (1e6 / rate) as u64;
            if lag_p99 > gap_us.max(LAG_FORGIVEN_US) {
                return Some(format!(
                    "start lag p99 {:.2} ms is longer than the {:.2} ms between arrivals: they came in bursts",
                    lag_p99 as f64 / 1000.0,
                    gap_us as f64 / 1000.0
                ));
            }
        }
    }
    let busy = summary.generator.busy;
    (busy > BUSY_LIMIT).then(|| format!("the generator's workers were {:.0} % busy", busy * 100.0))
}

impl SweepLevel {
    /// The level's figures from its summary. `arrival_rate` is the level in an open sweep
    /// (arrivals per second), None in a closed one.
    pub fn from_summary(
        level: f64,
        summary: &Summary,
        results: String,
        arrival_rate: Option<f64>,
        run: u32,
    ) -> SweepLevel {
        let global = &summary.global;
        let latency = &global.latency.all;
        // The level's window is its length, even when its last users finished before its
        // end: an open level of 1 s whose last arrival completes at 0.95 s still ran 1 s.
        let run_ms = summary.plan.options.max_duration_ms.unwrap_or(0).max(summary.run.duration_ms);
        let measured_s = run_ms.saturating_sub(summary.run.warmup_ms) as f64 / 1000.0;
        let error_rate = if global.count > 0 { global.ko as f64 / global.count as f64 } else { 0.0 };
        let throughput_rps = if measured_s > 0.0 { global.ok as f64 / measured_s } else { 0.0 };
        SweepLevel {
            level,
            requests: global.count,
            ok: global.ok,
            ko: global.ko,
            p50_us: latency.percentile(50.0).unwrap_or(0),
            p99_us: latency.percentile(99.0).unwrap_or(0),
            mean_us: latency.mean_us,
            error_rate,
            throughput_rps,
            // The level's SLOs are its plan's thresholds, judged by the run itself.
            broken_slos: summary.thresholds.iter().filter(|t| !t.passed()).map(|t| t.text.clone()).collect(),
            results,
            interrupted: summary.run.status == "interrupted",
            run,
            not_delivered: delivery_problem(summary, arrival_rate),
            scheduled_starts: summary.scheduling.scheduled_starts,
            late_starts: summary.scheduling.late_starts,
            start_lag_p99_us: summary.scheduling.start_lag.percentile(99.0).unwrap_or(0),
            generator_busy: summary.generator.busy,
        }
    }

    pub fn meets_slos(&self) -> bool {
        self.broken_slos.is_empty() && self.requests > 0
    }

    pub fn delivered(&self) -> bool {
        self.not_delivered.is_none()
    }
}

/// The boundary an automatic search found, and whether a second run of both levels agreed.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Boundary {
    pub last_good: f64,
    pub first_bad: f64,
    /// Both levels ran again and kept their verdicts.
    pub confirmed: bool,
}

/// One verdict per level, from its runs whose load was delivered: the SLOs broken in any of
/// them, the mean throughput, the most errors. Levels never delivered say nothing of the server.
fn verdicts(levels: &[SweepLevel]) -> Vec<SweepLevel> {
    let mut verdicts: Vec<SweepLevel> = Vec::new();
    let mut runs_of: Vec<u32> = Vec::new();
    for run in levels.iter().filter(|l| l.delivered()) {
        match verdicts.iter().position(|v| v.level == run.level) {
            None => {
                verdicts.push(run.clone());
                runs_of.push(1);
            }
            Some(i) => {
                let verdict = &mut verdicts[i];
                runs_of[i] += 1;
                let n = f64::from(runs_of[i]);
                verdict.throughput_rps += (run.throughput_rps - verdict.throughput_rps) / n;
                verdict.ko = verdict.ko.max(run.ko);
                for slo in &run.broken_slos {
                    if !verdict.broken_slos.contains(slo) {
                        verdict.broken_slos.push(slo.clone());
                    }
                }
            }
        }
    }
    verdicts.sort_by(|a, b| a.level.total_cmp(&b.level));
    verdicts
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct SweepReport {
    pub name: String,
    /// `users` (closed: concurrent users) or `rate` (open: arrivals per second).
    pub model: String,
    pub slos: Vec<String>,
    pub level_duration_ms: u64,
    pub warmup_ms: u64,
    /// In increasing order of level.
    pub levels: Vec<SweepLevel>,
    /// The highest level meeting every SLO, below which every level also met them.
    pub highest_meeting_slos: Option<f64>,
    /// The first level whose throughput is within 5 % of the best: where throughput stops
    /// growing.
    pub knee: Option<f64>,
    pub best_throughput_rps: f64,
    /// The first level with any failed request.
    pub errors_begin: Option<f64>,
    pub interrupted: bool,
    /// The boundary of an automatic search (set by the search).
    #[serde(default)]
    pub boundary: Option<Boundary>,
    /// Why the sweep stopped before its end, when it did (load not delivered, a level that
    /// cannot run on this machine).
    #[serde(default)]
    pub stopped: Option<String>,
}

impl SweepReport {
    /// The conclusions from every run of the sweep. Runs whose load was not delivered are in
    /// the table, but not in the conclusions.
    pub fn analyse(name: &str, model: &str, slos: &[String], level_duration_ms: u64, warmup_ms: u64, mut levels: Vec<SweepLevel>) -> SweepReport {
        levels.sort_by(|a, b| a.level.total_cmp(&b.level).then(a.run.cmp(&b.run)));
        let judged = verdicts(&levels);
        let highest_meeting_slos = judged.iter().take_while(|l| l.meets_slos()).last().map(|l| l.level);
        let best = judged.iter().map(|l| l.throughput_rps).fold(0.0, f64::max);
        let knee = (best > 0.0).then(|| judged.iter().find(|l| l.throughput_rps >= PLATEAU * best).map(|l| l.level)).flatten();
        let errors_begin = judged.iter().find(|l| l.ko > 0).map(|l| l.level);
        let interrupted = levels.iter().any(|l| l.interrupted);
        SweepReport {
            name: name.to_string(),
            model: model.to_string(),
            slos: slos.to_vec(),
            level_duration_ms,
            warmup_ms,
            levels,
            highest_meeting_slos,
            knee,
            best_throughput_rps: best,
            errors_begin,
            interrupted,
            boundary: None,
            stopped: None,
        }
    }

    fn level_label(&self) -> &'static str {
        if self.model == "rate" { "users/s" } else { "users" }
    }

    /// The table and the conclusions, for the console.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", "=".repeat(80));
        let _ = writeln!(
            out,
            "{} | sweep of {} | {:.1} s per level after {:.1} s of warm-up{}",
            crate::terminal::printable(&self.name),
            self.level_label(),
            self.level_duration_ms as f64 / 1000.0,
            self.warmup_ms as f64 / 1000.0,
            if self.interrupted { " | interrupted" } else { "" }
        );
        let _ = writeln!(
            out,
            "{:>10}{:>11}{:>11}{:>11}{:>10}{:>13}  SLOs",
            self.level_label(),
            "requests",
            "p50 (ms)",
            "p99 (ms)",
            "errors",
            "throughput"
        );
        for l in &self.levels {
            let slo = if let Some(why) = &l.not_delivered {
                format!("load not delivered: {why}")
            } else if self.slos.is_empty() {
                String::new()
            } else if l.broken_slos.is_empty() {
                "met".to_string()
            } else {
                format!("broken: {}", l.broken_slos.join(", "))
            };
            let slo = if l.run > 1 { format!("(run {}) {slo}", l.run) } else { slo };
            let _ = writeln!(
                out,
                "{:>10}{:>11}{:>11.2}{:>11.2}{:>9.1}%{:>9.1} r/s  {}",
                format_level(l.level),
                l.requests,
                l.p50_us as f64 / 1000.0,
                l.p99_us as f64 / 1000.0,
                l.error_rate * 100.0,
                l.throughput_rps,
                slo
            );
        }
        let or_none = |v: Option<f64>, none: &str| v.map(format_level).unwrap_or_else(|| none.to_string());
        if !self.slos.is_empty() {
            let _ = writeln!(
                out,
                "> highest level meeting {}: {}",
                self.slos.join(" and "),
                or_none(self.highest_meeting_slos, "none")
            );
        }
        let _ = writeln!(
            out,
            "> knee (throughput stops growing): {} ({:.1} req/s at best)",
            or_none(self.knee, "none"),
            self.best_throughput_rps
        );
        let _ = writeln!(out, "> errors begin at: {}", or_none(self.errors_begin, "no errors at any level"));
        if let Some(boundary) = &self.boundary {
            let _ = writeln!(
                out,
                "> boundary: between {} (good) and {} (bad), {}",
                format_level(boundary.last_good),
                format_level(boundary.first_bad),
                if boundary.confirmed { "confirmed by a second run of each" } else { "NOT confirmed: a second run disagreed" }
            );
        }
        if let Some(why) = &self.stopped {
            let _ = writeln!(out, "> the sweep stopped early: {why}");
        }
        let _ = writeln!(out, "{}", "=".repeat(80));
        out
    }

    pub fn csv(&self) -> String {
        let mut out = String::from(
            "level,run,requests,ok,ko,p50_us,p99_us,mean_us,error_rate,throughput_rps,slos_met,load_delivered,results\n",
        );
        for l in &self.levels {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{:.1},{:.6},{:.3},{},{},{}",
                format_level(l.level),
                l.run,
                l.requests,
                l.ok,
                l.ko,
                l.p50_us,
                l.p99_us,
                l.mean_us,
                l.error_rate,
                l.throughput_rps,
                l.meets_slos(),
                l.delivered(),
                l.results
            );
        }
        out
    }

    /// Throughput, p50 and p99 against level: throughput on the left axis, latency on the
    /// right, the knee and the SLO limit marked.
    pub fn svg(&self) -> String {
        chart(self)
    }

    /// Writes sweep.json, sweep.csv and sweep.svg into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_string_pretty(self).expect("reports serialize");
        std::fs::write(dir.join("sweep.json"), json + "\n")?;
        std::fs::write(dir.join("sweep.csv"), self.csv())?;
        std::fs::write(dir.join("sweep.svg"), self.svg())
    }
}

pub fn format_level(level: f64) -> String {
    if level.fract() == 0.0 {
        format!("{level:.0}")
    } else {
        format!("{level:.2}")
    }
}

fn chart(report: &SweepReport) -> String {
    let (width, height) = (760.0, 420.0);
    let (left, right, top, bottom) = (70.0, 80.0, 40.0, 60.0);
    let plot_w = width - left - right;
    let plot_h = height - top - bottom;
    // The lines join the verdicts of levels whose load was delivered; the others are marked
    // apart, as they say nothing of the server.
    let levels = &verdicts(&report.levels);
    let all_runs = &report.levels;
    let max_level = all_runs.iter().map(|l| l.level).fold(0.0, f64::max).max(1.0);
    let max_rps = all_runs.iter().map(|l| l.throughput_rps).fold(0.0, f64::max).max(1.0) * 1.1;
    let max_ms = all_runs.iter().map(|l| l.p99_us as f64 / 1000.0).fold(0.0, f64::max).max(1.0) * 1.1;
    let x = |level: f64| left + plot_w * level / max_level;
    let y_rps = |rps: f64| top + plot_h * (1.0 - rps / max_rps);
    let y_ms = |ms: f64| top + plot_h * (1.0 - ms / max_ms);
    let polyline = |points: Vec<(f64, f64)>, colour: &str, dash: &str| {
        let path: Vec<String> = points.iter().map(|(px, py)| format!("{px:.1},{py:.1}")).collect();
        let dots: String = points
            .iter()
            .map(|(px, py)| format!(r#"<circle cx="{px:.1}" cy="{py:.1}" r="3" fill="{colour}"/>"#))
            .collect();
        format!(r#"<polyline fill="none" stroke="{colour}" stroke-width="2" {dash} points="{}"/>{dots}"#, path.join(" "))
    };
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = write!(
        svg,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}: throughput and latency by {}</text>"#,
        width / 2.0,
        escape(&report.name),
        report.level_label()
    );
    // Axes and grid.
    let _ = write!(
        svg,
        r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{b}" stroke="#333"/><line x1="{left}" y1="{b}" x2="{r}" y2="{b}" stroke="#333"/><line x1="{r}" y1="{top}" x2="{r}" y2="{b}" stroke="#333"/>"##,
        b = top + plot_h,
        r = left + plot_w
    );
    for i in 0..=5 {
        let fraction = i as f64 / 5.0;
        let gy = top + plot_h * (1.0 - fraction);
        let _ = write!(
            svg,
            r##"<line x1="{left}" y1="{gy:.1}" x2="{:.1}" y2="{gy:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#1f77b4">{:.0}</text><text x="{:.1}" y="{:.1}" fill="#d62728">{:.1}</text>"##,
            left + plot_w,
            left - 6.0,
            gy + 4.0,
            max_rps * fraction,
            left + plot_w + 6.0,
            gy + 4.0,
            max_ms * fraction
        );
    }
    let mut labelled: Vec<f64> = Vec::new();
    for l in all_runs {
        if labelled.contains(&l.level) {
            continue;
        }
        labelled.push(l.level);
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x(l.level),
            top + plot_h + 18.0,
            format_level(l.level)
        );
    }
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="18" y="{:.1}" transform="rotate(-90 18 {:.1})" text-anchor="middle" fill="#1f77b4">throughput (OK req/s)</text><text x="{:.1}" y="{:.1}" transform="rotate(90 {:.1} {:.1})" text-anchor="middle" fill="#d62728">latency (ms)</text>"##,
        left + plot_w / 2.0,
        height - 20.0,
        report.level_label(),
        top + plot_h / 2.0,
        top + plot_h / 2.0,
        width - 22.0,
        top + plot_h / 2.0,
        width - 22.0,
        top + plot_h / 2.0
    );
    // A dashed vertical line at a level, labelled.
    let mut marker = |level: f64, label: String, colour: &str, dash: &str, label_y: f64| {
        let mx = x(level);
        let _ = write!(
            svg,
            r#"<line x1="{mx:.1}" y1="{top}" x2="{mx:.1}" y2="{:.1}" stroke="{colour}" stroke-dasharray="{dash}"/><text x="{:.1}" y="{label_y:.1}" fill="{colour}">{label}</text>"#,
            top + plot_h,
            mx + 4.0
        );
    };
    if let Some(knee) = report.knee {
        marker(knee, format!("knee {}", format_level(knee)), "#2ca02c", "4 3", top + 14.0);
    }
    if let Some(slo) = report.highest_meeting_slos {
        marker(slo, format!("SLOs met up to {}", format_level(slo)), "#9467bd", "2 2", top + 30.0);
    }
    svg.push_str(&polyline(levels.iter().map(|l| (x(l.level), y_rps(l.throughput_rps))).collect(), "#1f77b4", ""));
    svg.push_str(&polyline(levels.iter().map(|l| (x(l.level), y_ms(l.p50_us as f64 / 1000.0))).collect(), "#ff7f0e", ""));
    svg.push_str(&polyline(
        levels.iter().map(|l| (x(l.level), y_ms(l.p99_us as f64 / 1000.0))).collect(),
        "#d62728",
        r#"stroke-dasharray="6 3""#,
    ));
    // Runs whose load was not delivered: a grey hollow marker at their throughput, and a word.
    for l in all_runs.iter().filter(|l| !l.delivered()) {
        let (mx, my) = (x(l.level), y_rps(l.throughput_rps));
        let _ = write!(
            svg,
            r##"<circle cx="{mx:.1}" cy="{my:.1}" r="5" fill="none" stroke="#888" stroke-width="2"/><text x="{:.1}" y="{:.1}" fill="#888" text-anchor="middle">load not delivered</text>"##,
            mx,
            my - 9.0
        );
    }
    let legend_y = height - 8.0;
    let _ = write!(
        svg,
        r##"<text x="{left}" y="{legend_y}" fill="#1f77b4">— throughput</text><text x="{:.1}" y="{legend_y}" fill="#ff7f0e">— p50</text><text x="{:.1}" y="{legend_y}" fill="#d62728">- - p99</text>"##,
        left + 110.0,
        left + 170.0
    );
    svg.push_str("</svg>\n");
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(level: f64, throughput: f64, p99_ms: u64, ko: u64) -> SweepLevel {
        SweepLevel {
            level,
            requests: 100 + ko,
            ok: 100,
            ko,
            p50_us: 1000,
            p99_us: p99_ms * 1000,
            mean_us: 1000.0,
            error_rate: ko as f64 / (100 + ko) as f64,
            throughput_rps: throughput,
            broken_slos: if p99_ms >= 500 { vec!["p99<500ms".into()] } else { vec![] },
            run: 1,
            ..SweepLevel::default()
        }
    }

    #[test]
    fn the_analysis_names_the_slo_level_the_knee_and_the_first_errors() {
        let slos = vec!["p99<500ms".to_string()];
        // Seed 004's shape: throughput grows to 300 users, p99 breaks the SLO at 150.
        let levels = vec![
            level(300.0, 1000.0, 1700, 1),
            level(10.0, 125.0, 171, 0),
            level(50.0, 500.0, 421, 0),
            level(100.0, 800.0, 701, 0),
            level(200.0, 960.0, 4120, 0),
            level(400.0, 990.0, 2600, 40),
        ];
        let report = SweepReport::analyse("seed004", "users", &slos, 10_000, 2_000, levels);
        assert_eq!(report.levels.iter().map(|l| l.level).collect::<Vec<_>>(), vec![10.0, 50.0, 100.0, 200.0, 300.0, 400.0]);
        assert_eq!(report.highest_meeting_slos, Some(50.0));
        assert_eq!(report.knee, Some(200.0));
        assert_eq!(report.errors_begin, Some(300.0));
        let text = report.render();
        assert!(text.contains("> highest level meeting p99<500ms: 50"), "{text}");
        assert!(text.contains("> knee (throughput stops growing): 200"), "{text}");
        assert!(report.csv().lines().count() == 7);
        let svg = report.svg();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 3);
    }

    #[test]
    fn levels_whose_load_was_not_delivered_are_shown_but_not_judged() {
        let slos = vec!["p99<500ms".to_string()];
        let mut late = level(300.0, 120.0, 900, 50);
        late.not_delivered = Some("start lag p99 250 ms".into());
        let mut again = level(200.0, 940.0, 450, 0);
        again.run = 2;
        let levels = vec![level(100.0, 800.0, 300, 0), level(200.0, 960.0, 400, 0), again, late];
        let report = SweepReport::analyse("limited", "rate", &slos, 10_000, 2_000, levels);
        // 300 users/s broke the SLO and made errors, but its load was never delivered.
        assert_eq!(report.highest_meeting_slos, Some(200.0));
        assert_eq!(report.errors_begin, None);
        assert_eq!(report.knee, Some(200.0));
        assert!((report.best_throughput_rps - 950.0).abs() < 1e-9, "the mean of the two runs of 200");
        let text = report.render();
        assert!(text.contains("load not delivered: start lag p99 250 ms"), "{text}");
        assert!(text.contains("(run 2)"), "{text}");
        assert!(report.svg().contains("load not delivered"));
        assert!(report.csv().contains("300,1,150,100,50,1000,900000,1000.0,0.333333,120.000,false,false,"));
    }
}

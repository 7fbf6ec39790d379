//! The capacity sweep's report: the table seed 004 builds by hand (level, requests, p50, p99,
//! error rate, throughput), what it means (the highest level meeting the SLOs, the knee where
//! throughput stops growing, the level where errors begin), and a chart of it.

use crate::summary::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

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
    /// OK requests per second over the measured part of the level (after the warm-up, until
    /// its end or its interruption).
    pub throughput_rps: f64,
    /// How long the level measured: its duration, or less when it was interrupted.
    #[serde(default)]
    pub measured_ms: u64,
    /// The SLOs this level broke.
    pub broken_slos: Vec<String>,
    /// This level's own results directory, relative to the sweep's.
    pub results: String,
    /// The level was cut short by an interruption: shown, but never judged (its SLOs, the knee).
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
        let interrupted = summary.run.status == "interrupted";
        // The level's window is its length, even when its last users finished before its
        // end: an open level of 1 s whose last arrival completes at 0.95 s still ran 1 s. An
        // interrupted level measured only until the interruption.
        let run_ms = if interrupted {
            summary.run.duration_ms
        } else {
            summary.plan.options.max_duration_ms.unwrap_or(0).max(summary.run.duration_ms)
        };
        let measured_ms = run_ms.saturating_sub(summary.run.warmup_ms);
        let error_rate = if global.count > 0 { global.ko as f64 / global.count as f64 } else { 0.0 };
        let throughput_rps = if measured_ms > 0 { global.ok as f64 * 1000.0 / measured_ms as f64 } else { 0.0 };
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
            measured_ms,
            // The level's SLOs are its plan's thresholds, judged by the run itself.
            broken_slos: summary.thresholds.iter().filter(|t| !t.passed()).map(|t| t.text.clone()).collect(),
            results,
            interrupted,
            run,
            not_delivered: delivery_problem(summary, arrival_rate),
            scheduled_starts: summary.scheduling.scheduled_starts,
            late_starts: summary.scheduling.late_starts,
            start_lag_p99_us: summary.scheduling.start_lag.percentile(99.0).unwrap_or(0),
            generator_busy: summary.generator.busy,
        }
    }

    /// An interrupted level judged only part of its window: it never meets them.
    pub fn meets_slos(&self) -> bool {
        self.broken_slos.is_empty() && self.requests > 0 && !self.interrupted
    }

    pub fn delivered(&self) -> bool {
        self.not_delivered.is_none()
    }

    /// Whether this run says something about the server: its load was delivered and it ran
    /// its whole window.
    pub fn judged(&self) -> bool {
        self.delivered() && !self.interrupted
    }

    /// Whether throughput still grew at least half as fast as the load did since `previous`
    /// (a lower level): the server was still keeping up.
    pub fn still_scaling_from(&self, previous: &SweepLevel) -> bool {
        let load_growth = self.level / previous.level - 1.0;
        let throughput_growth = self.throughput_rps / previous.throughput_rps.max(1e-9) - 1.0;
        throughput_growth >= 0.5 * load_growth
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

/// One verdict per level, from its judged runs (load delivered, window complete): the SLOs
/// broken in any of them, the mean throughput, the most errors. Levels never delivered, and
/// interrupted ones, say nothing of the server.
pub(crate) fn verdicts(levels: &[SweepLevel]) -> Vec<SweepLevel> {
    let mut verdicts: Vec<SweepLevel> = Vec::new();
    let mut runs_of: Vec<u32> = Vec::new();
    for run in levels.iter().filter(|l| l.judged()) {
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
                verdict.error_rate = verdict.error_rate.max(run.error_rate);
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
    /// The first level whose throughput is within 5 % of the best, once throughput has
    /// stopped growing: None while it still grows at the highest level measured.
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
    pub fn analyse(
        name: &str,
        model: &str,
        slos: &[String],
        level_duration_ms: u64,
        warmup_ms: u64,
        mut levels: Vec<SweepLevel>,
    ) -> SweepReport {
        levels.sort_by(|a, b| a.level.total_cmp(&b.level).then(a.run.cmp(&b.run)));
        let judged = verdicts(&levels);
        let highest_meeting_slos = judged.iter().take_while(|l| l.meets_slos()).last().map(|l| l.level);
        let best = judged.iter().map(|l| l.throughput_rps).fold(0.0, f64::max);
        let knee = knee(&judged, best);
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
        if self.model == "rate" {
            "users/s"
        } else {
            "users"
        }
    }

    /// The knee as the conclusions say it: where throughput stops growing, or why there is none.
    pub fn knee_conclusion(&self) -> String {
        let judged = verdicts(&self.levels);
        match (self.knee, judged.last()) {
            (Some(knee), _) => {
                format!("{} ({:.1} req/s at best)", format_level(knee), self.best_throughput_rps)
            }
            (None, None) => "unknown: no level was measured (load not delivered, or interrupted)".to_string(),
            (None, Some(_)) if self.best_throughput_rps <= 0.0 => "none: no request succeeded at any level".to_string(),
            (None, Some(highest)) => format!(
                "no knee found up to {} {} (throughput still growing: {:.1} req/s at best)",
                format_level(highest.level),
                self.level_label(),
                self.best_throughput_rps
            ),
        }
    }

    /// Levels that say something about the server: their load delivered, their window whole.
    pub fn levels_judged(&self) -> usize {
        verdicts(&self.levels).len()
    }

    /// What the SLOs column says of a run (the console's and report.html's).
    pub(crate) fn slo_verdict(&self, l: &SweepLevel) -> String {
        if let Some(why) = &l.not_delivered {
            format!("load not delivered: {why}")
        } else if l.interrupted {
            format!(
                "interrupted after {:.1} s of {:.1} s: not judged",
                l.measured_ms as f64 / 1000.0,
                self.level_duration_ms as f64 / 1000.0
            )
        } else if self.slos.is_empty() {
            String::new()
        } else if l.broken_slos.is_empty() {
            "met".to_string()
        } else {
            format!("broken: {}", l.broken_slos.join(", "))
        }
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
            let slo = self.slo_verdict(l);
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
        let _ = writeln!(out, "> knee (throughput stops growing): {}", self.knee_conclusion());
        let _ = writeln!(out, "> errors begin at: {}", or_none(self.errors_begin, "no errors at any level"));
        if let Some(boundary) = &self.boundary {
            let _ = writeln!(
                out,
                "> boundary: between {} (good) and {} (bad), {}",
                format_level(boundary.last_good),
                format_level(boundary.first_bad),
                if boundary.confirmed {
                    "confirmed by a second run of each"
                } else {
                    "NOT confirmed: a second run disagreed"
                }
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
"level,run,requests,ok,ko,p50_us,p99_us,mean_us,error_rate,throughput_rps,slos_met,load_delivered,interrupted,results\n",
        );
        for l in &self.levels {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{:.1},{:.6},{:.3},{},{},{},{}",
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
                l.interrupted,
                l.results
            );
        }
        out
    }
}

/// The first level within 5 % of the best throughput, once throughput has stopped growing:
/// some level above it was measured, or its own throughput grew less than half as fast as the
/// load from the level below. `judged` is in increasing order of level.
fn knee(judged: &[SweepLevel], best: f64) -> Option<f64> {
    if best <= 0.0 {
        return None;
    }
    let at = judged.iter().position(|l| l.throughput_rps >= PLATEAU * best)?;
    let stopped_growing = at + 1 < judged.len() || (at > 0 && !judged[at].still_scaling_from(&judged[at - 1]));
    stopped_growing.then(|| judged[at].level)
}

pub fn format_level(level: f64) -> String {
    if level.fract() == 0.0 {
        format!("{level:.0}")
    } else {
        format!("{level:.2}")
    }
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
        assert_eq!(
            report.levels.iter().map(|l| l.level).collect::<Vec<_>>(),
            vec![10.0, 50.0, 100.0, 200.0, 300.0, 400.0]
        );
        assert_eq!(report.highest_meeting_slos, Some(50.0));
        assert_eq!(report.knee, Some(200.0));
        assert_eq!(report.errors_begin, Some(300.0));
        let text = report.render();
        assert!(text.contains("> highest level meeting p99<500ms: 50"), "{text}");
        assert!(text.contains("> knee (throughput stops growing): 200"), "{text}");
        assert!(report.csv().lines().count() == 7);
        let svg = crate::sweep_chart::render(&report);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // Throughput, p50, p99 and the error rate the SLOs judge.
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert!(svg.contains("errors %"), "{svg}");
    }

    #[test]
    fn throughput_still_growing_at_the_highest_level_is_no_knee() {
        let rising = vec![level(1.0, 50.0, 10, 0), level(2.0, 100.0, 10, 0), level(4.0, 199.0, 10, 0)];
        let report = SweepReport::analyse("rising", "users", &[], 1_000, 0, rising.clone());
        assert_eq!(report.knee, None);
        let text = report.render();
        assert!(text.contains("> knee (throughput stops growing): no knee found up to 4 users"), "{text}");
        // Flattening into the highest level: that level is the knee.
        let mut flattening = rising;
        flattening.push(level(8.0, 230.0, 10, 0));
        assert_eq!(SweepReport::analyse("flat", "users", &[], 1_000, 0, flattening).knee, Some(8.0));
        let nothing = SweepReport::analyse("none", "users", &[], 1_000, 0, vec![]);
        assert!(nothing.render().contains("no level was measured"), "{}", nothing.render());
    }

    #[test]
    fn an_interrupted_level_is_shown_but_never_judged() {
        let slos = vec!["p99<500ms".to_string()];
        let mut cut = level(4.0, 400.0, 10, 0);
        cut.interrupted = true;
        cut.measured_ms = 2_500;
        let report = SweepReport::analyse(
            "cut",
            "users",
            &slos,
            10_000,
            0,
            vec![level(1.0, 100.0, 10, 0), level(2.0, 120.0, 10, 0), cut],
        );
        assert_eq!(report.highest_meeting_slos, Some(2.0));
        assert_eq!(report.knee, Some(2.0), "flattening from 1 to 2; the interrupted 400 req/s is not the best");
        assert!((report.best_throughput_rps - 120.0).abs() < 1e-9);
        assert!(report.render().contains("interrupted after 2.5 s of 10.0 s: not judged"), "{}", report.render());
        assert!(report.csv().lines().last().unwrap().ends_with(",false,true,true,"), "{}", report.csv());
        assert!(crate::sweep_chart::render(&report).contains(">interrupted<"));
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
        assert!(crate::sweep_chart::render(&report).contains("load not delivered"));
        assert!(report.csv().contains("300,1,150,100,50,1000,900000,1000.0,0.333333,120.000,false,false,"));
    }
}

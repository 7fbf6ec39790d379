//! The console summary, modelled on Gatling's "Global Information" block, then one row per
//! request, groups, and errors by reason. Times are shown in milliseconds.

use crate::summary::Summary;
use crate::terminal::{fitted, printable, width};
use horde_metrics::{LatencyStats, RequestStats, ThresholdStatus};
use std::fmt::Write;

const WIDTH: usize = 80;
/// The name column of the requests and groups tables: as wide as their longest name, between
/// these (two columns of space included); a longer name loses its middle to an ellipsis.
const NAME_COLUMN_MIN: usize = 28;
const NAME_COLUMN_MAX: usize = 50;
/// Where every time on the page counts from, said once (requests, groups and `eventually`
/// share it).
const CLOCK: &str = "times from each request's start (throttled: its slot, if held back)";

fn rule(out: &mut String, title: &str) {
    let head = format!("---- {title} ");
    let _ = writeln!(out, "{head}{}", "-".repeat(WIDTH.saturating_sub(head.len())));
}

/// Microseconds as milliseconds with two decimals, the resolution users of fast local servers
/// need (Gatling's whole milliseconds would show 0).
pub fn ms(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

fn ms_f(us: f64) -> String {
    format!("{:.2}", us / 1000.0)
}

/// `label  total (OK=ok KO=ko)`, with `-` where a part has no data.
fn line(out: &mut String, label: &str, total: String, ok: Option<String>, ko: Option<String>) {
    let dash = || "-".to_string();
    let _ =
        writeln!(out, "> {label:<44}{total:>10} (OK={:<9} KO={:<8})", ok.unwrap_or_else(dash), ko.unwrap_or_else(dash));
}

fn latency_lines(out: &mut String, stats: &RequestStats) {
    let (all, ok, ko) = (&stats.latency.all, &stats.latency.ok, &stats.latency.ko);
    let part = |s: &LatencyStats, f: &dyn Fn(&LatencyStats) -> String| (s.count > 0).then(|| f(s));
    type Statistic = fn(&LatencyStats) -> String;
    let rows: [(&str, Statistic); 4] = [
        ("min response time (ms)", |s| ms(s.min_us)),
        ("max response time (ms)", |s| ms(s.max_us)),
        ("mean response time (ms)", |s| ms_f(s.mean_us)),
        ("std deviation (ms)", |s| ms_f(s.stddev_us)),
    ];
    for (label, f) in rows {
        line(out, label, if all.count > 0 { f(all) } else { "-".into() }, part(ok, &f), part(ko, &f));
    }
    for p in &all.percentiles {
        let label = format!("response time {} percentile (ms)", ordinal(p.percentile));
        let value = |s: &LatencyStats| s.percentile(p.percentile).map(ms);
        line(
            out,
            &label,
            ms(p.value_us),
            part(ok, &|s| value(s).unwrap_or_default()),
            part(ko, &|s| value(s).unwrap_or_default()),
        );
    }
}

fn ordinal(p: f64) -> String {
    if p.fract() != 0.0 {
        return format!("{p}th");
    }
    let n = p as u64;
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn rate(count: u64, duration_ms: u64) -> String {
    if duration_ms == 0 {
        return "-".into();
    }
    format!("{:.1}", count as f64 * 1000.0 / duration_ms as f64)
}

/// Renders the summary as the console shows it at the end of a run.
pub fn render(summary: &Summary) -> String {
    // CouchDB steps first, in Iron Cushion's own format; horde's own figures follow.
    let mut out = crate::render_iron_cushion(&summary.couchdb);
    // `horde sql`'s phases likewise, in seed 000's words and table.
    out.push_str(&crate::render_sql(summary));
    let g = &summary.global;
    let duration_ms = summary.run.duration_ms;
    let _ = writeln!(out, "{}", "=".repeat(WIDTH));
    let _ = writeln!(
        out,
        "{} | {} | {:.1} s | {} users ({} interrupted)",
        printable(&summary.run.name),
        summary.run.status,
        duration_ms as f64 / 1000.0,
        summary.users.started,
        summary.users.interrupted
    );
    if let Some(reason) = &summary.run.stop_reason {
        let _ = writeln!(out, "stopped: {}", printable(reason));
    }
    rule(&mut out, "Global Information");
    line(&mut out, "request count", g.count.to_string(), Some(g.ok.to_string()), Some(g.ko.to_string()));
    if g.retried > 0 {
        // Attempts of `try_max` and `eventually` that were tried again are no outcome of their
        // own, but the server answered every one of them.
        let _ = writeln!(
            out,
            "> {:<44}{:>10} (retried attempts {}, not in the count above)",
            "requests sent",
            g.count + g.retried,
            g.retried
        );
    }
    latency_lines(&mut out, g);
    let measured_ms = duration_ms.saturating_sub(summary.run.warmup_ms);
    line(
        &mut out,
        "mean requests/sec",
        rate(g.count, measured_ms),
        Some(rate(g.ok, measured_ms)),
        (g.ko > 0).then(|| rate(g.ko, measured_ms)),
    );
    if g.retried > 0 {
        let _ = writeln!(out, "> {:<44}{:>10}", "mean requests/sec sent", rate(g.count + g.retried, measured_ms));
    }
    if let Some(p) = g.latency.uncorrected.percentiles.last() {
        let _ = writeln!(
            out,
            "> {:<44}{:>10}",
            format!("uncorrected {} percentile (ms)", ordinal(p.percentile)),
            ms(p.value_us)
        );
    }
    let _ = writeln!(out, "> {CLOCK}");
    let s = &summary.scheduling;
    if s.scheduled_starts > 0 {
        let p99 = s.start_lag.percentile(99.0).map(ms).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "> {:<44}{:>10} (of {}, lag p99 {} ms, max {} ms)",
            format!("late starts (> {} ms)", ms(s.late_start_threshold_us)),
            s.late_starts,
            s.scheduled_starts,
            p99,
            ms(s.start_lag.max_us)
        );
        if s.late_starts > 0 {
            let _ =
                writeln!(out, ">   the generator's own lag: the load was not delivered on schedule; not in the times");
        }
    }
    if summary.users.replacements_held_back > 0 {
        let _ = writeln!(
            out,
            "> {:<44}{:>10} (users failing fast: their slot waited)",
            "replacement users held back", summary.users.replacements_held_back
        );
    }
    if g.unsent > 0 {
        let _ = writeln!(out, "> {:<44}{:>10}", "KO never sent (not in the times above)", g.unsent);
    }
    if g.interrupted > 0 {
        let _ = writeln!(out, "> {:<44}{:>10}", "in flight when the run ended (no outcome)", g.interrupted);
    }
    let c = &summary.connections;
    if c.closed_by_server_while_idle > 0 || c.retried_on_fresh_connection > 0 {
        let _ = writeln!(
            out,
            "> {:<44}{:>10} (closed by the server while idle {}, retried {})",
            "connections opened", c.opened, c.closed_by_server_while_idle, c.retried_on_fresh_connection
        );
    }
    if c.http2 > 0 {
        let _ = writeln!(out, "> {:<44}{:>10}", "connections speaking HTTP/2", c.http2);
    }
    if c.http2_declined_by_server > 0 {
        let _ = writeln!(
            out,
            "> HTTP/2 was offered but the server chose HTTP/1.1 on {} connections (they spoke HTTP/1.1)",
            c.http2_declined_by_server
        );
    }
    if c.websockets > 0 || c.event_streams > 0 {
        let _ = writeln!(
            out,
            "> {:<44}{:>10} (event streams {}; messages sent {}, received {})",
            "WebSockets opened", c.websockets, c.event_streams, c.messages_sent, c.messages_received
        );
    }
    if !summary.plan.protocol.tls.verify {
        let _ = writeln!(out, "> TLS certificates were NOT verified (verification was turned off)");
    }
    phase_lines(&mut out, g);
    rule(&mut out, "Response Time Distribution");
    for bucket in &g.distribution {
        let _ = writeln!(out, "> {:<44}{:>10} ({:>3.0}%)", bucket.label, bucket.count, bucket.percent);
    }
    let table =
        TableLayout::fitting(summary.requests.iter().map(|r| &r.name).chain(summary.groups.iter().map(|g| &g.name)));
    if !summary.requests.is_empty() {
        rule(&mut out, "Requests (ms)");
        table.header(&mut out);
        for r in &summary.requests {
            table.row(&mut out, &r.name, (r.count, r.ok, r.ko), &r.latency.all);
        }
    }
    if !summary.groups.is_empty() {
        rule(&mut out, "Groups (duration, ms)");
        for group in &summary.groups {
            table.row(&mut out, &group.name, (group.count, group.ok, group.ko), &group.duration);
        }
    }
    machine_lines(&mut out, summary);
    if !summary.errors.is_empty() {
        rule(&mut out, "Errors");
        for e in &summary.errors {
            let _ = writeln!(
                out,
                "> {} [{}] {}: {}",
                e.count,
                printable(&e.kind),
                printable(&e.request),
                printable(&e.message)
            );
            let _ = writeln!(out, "  {:.2}% of errors", e.percent);
        }
    }
    threshold_lines(&mut out, summary);
    let _ = writeln!(out, "{}", "=".repeat(WIDTH));
    out
}

/// A run split across processes: what each share measured, when it started against the
/// others, and how soon its intervals reached the coordinator.
fn machine_lines(out: &mut String, summary: &Summary) {
    if summary.machines.is_empty() {
        return;
    }
    rule(out, "Machines");
    for m in &summary.machines {
        let verdict = match &m.lost {
            Some(_) => "LOST",
            None if !m.replaced.is_empty() => "replaced, part not delivered",
            None if m.delivered => "delivered",
            None => "not delivered",
        };
        let _ = write!(
            out,
            "> share {} {} pid {}: {} requests, {:.2} s CPU",
            m.share,
            printable(&m.host),
            m.pid,
            m.requests,
            m.cpu_ms as f64 / 1_000.0
        );
        if let Some(bytes) = m.peak_memory_bytes {
            let _ = write!(out, ", {:.0} MiB peak", bytes as f64 / (1u64 << 20) as f64);
        }
        let _ = writeln!(out, ", {verdict}");
        let mut timing = Vec::new();
        if let Some(late) = m.start_late_us {
            let clock = m.clock_error_us.map(|error| format!(" (clock ±{} ms)", ms_f(error))).unwrap_or_default();
            timing.push(format!("started +{} ms{clock}", ms_f(late)));
        }
        if let Some(delay) = &m.snapshot_delay_ms {
            timing.push(format!("snapshots reached the coordinator in {:.1} ms (max {:.1})", delay.mean, delay.max));
        }
        if !timing.is_empty() {
            let _ = writeln!(out, "  {}", timing.join(", "));
        }
        match (m.verified, m.log_requests) {
            (Some(true), Some(log)) => {
                let _ = writeln!(out, "  merge checked against its own log: {log} requests");
            }
            (Some(false), Some(log)) => {
                let _ = writeln!(out, "  its own log counted {log} requests: intervals lost on the way");
            }
            _ => {}
        }
        for r in &m.replaced {
            let _ = writeln!(
                out,
                "  lost at {:.1} s on {} pid {} ({}); counted to interval {}, resumed on {} from {:.1} s",
                r.lost_at_s,
                printable(&r.host),
                r.pid,
                printable(&r.reason),
                r.last_interval,
                printable(&r.machine),
                r.resume_after_s
            );
            if r.rows_skipped > 0 {
                let _ = writeln!(
                    out,
                    "  {} feeder rows granted to the lost attempt skipped (none used twice)",
                    r.rows_skipped
                );
            }
        }
        if let Some(waits) = m.row_waits.filter(|&waits| waits > 0) {
            let _ = writeln!(out, "  {waits} feeds waited for the coordinator's next row grant");
        }
    }
}

/// The thresholds' verdicts, last, where a CI log is read from: each with what was observed
/// (for `each`, the worst row; with a window, the worst window).
fn threshold_lines(out: &mut String, summary: &Summary) {
    let thresholds = &summary.thresholds;
    if thresholds.is_empty() {
        return;
    }
    let passed = thresholds.iter().filter(|t| t.passed()).count();
    rule(out, &format!("Thresholds: {passed} of {} passed", thresholds.len()));
    for t in thresholds {
        let verdict = match t.status {
            ThresholdStatus::Pass => "PASS",
            ThresholdStatus::Fail => "FAIL",
            ThresholdStatus::NoData => "NO DATA",
        };
        let observed = match (&t.observed_text, &t.note, t.status) {
            (_, _, ThresholdStatus::NoData) => "no request in its scope".to_string(),
            (Some(value), _, _) => value.clone(),
            (None, Some(note), _) => printable(note).into_owned(),
            (None, None, _) => "-".to_string(),
        };
        let mut detail = String::new();
        if let Some(population) = &t.population {
            detail = format!(" ({population})");
        }
        if let Some(worst) = t.rows.iter().find(|r| r.status == ThresholdStatus::Fail) {
            let failing = t.rows.iter().filter(|r| r.status == ThresholdStatus::Fail).count();
            detail = format!(" ({failing} of {} rows failed, such as {})", t.rows.len(), printable(&worst.name));
        }
        if let Some(windows) = &t.windows {
            if windows.failed > 0 {
                let at = windows
                    .first_failure_ms
                    .map(|ms| format!(", first at {:.0} s", ms as f64 / 1000.0))
                    .unwrap_or_default();
                detail.push_str(&format!(" ({} of {} windows failed{at})", windows.failed, windows.judged));
            }
        }
        let _ = writeln!(out, "> {verdict:<7} {:<40} {observed}{detail}", printable(&t.text));
    }
}

/// Where the time of the requests went: each phase's count, mean and 99th percentile. DNS,
/// connect and TLS only count requests that looked up a name, opened a connection or
/// shook hands.
fn phase_lines(out: &mut String, g: &RequestStats) {
    let p = &g.phases;
    let phases = [
        ("dns lookup", &p.dns),
        ("connect", &p.connect),
        ("tls handshake", &p.tls),
        ("send", &p.send),
        ("wait (to first byte)", &p.wait),
        ("receive", &p.receive),
    ];
    if phases.iter().all(|(_, stats)| stats.count == 0) {
        return;
    }
    rule(out, "Phases (ms)");
    let _ = writeln!(out, "{:<28}{:>9}{:>9}{:>9}{:>9}", "phase", "count", "mean", "p99", "max");
    for (name, stats) in phases.into_iter().filter(|(_, stats)| stats.count > 0) {
        let p99 = stats.percentile(99.0).map(ms).unwrap_or_else(|| "-".into());
        let _ =
            writeln!(out, "{name:<28}{:>9}{:>9}{:>9}{:>9}", stats.count, ms_f(stats.mean_us), p99, ms(stats.max_us));
    }
}

/// The columns of the requests and groups tables, which line up with each other.
struct TableLayout {
    /// The name column's width in terminal columns, the space before the figures included.
    name: usize,
}

impl TableLayout {
    /// A name column for these names: the longest one and two spaces, within
    /// [`NAME_COLUMN_MIN`, `NAME_COLUMN_MAX`].
    fn fitting<'a>(names: impl Iterator<Item = &'a String>) -> TableLayout {
        let longest = names.map(|name| width(&printable(name))).max().unwrap_or(0);
        TableLayout { name: (longest + 2).clamp(NAME_COLUMN_MIN, NAME_COLUMN_MAX) }
    }

    /// `name` in its column: padded, or shortened with an ellipsis when too long.
    fn name_cell(&self, name: &str) -> String {
        let shown = fitted(name, self.name - 2);
        format!("{shown}{}", " ".repeat(self.name - width(&shown)))
    }

    fn header(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "{}{:>9}{:>8}{:>8}{:>9}{:>9}{:>9}{:>9}",
            self.name_cell("name"),
            "count",
            "OK",
            "KO",
            "mean",
            "p50",
            "p99",
            "max"
        );
    }

    /// One line of the requests or groups table: counts, then mean, p50, p99 and max.
    fn row(&self, out: &mut String, name: &str, (count, ok, ko): (u64, u64, u64), stats: &LatencyStats) {
        let pct = |p| stats.percentile(p).map(ms).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "{}{:>9}{:>8}{:>8}{:>9}{:>9}{:>9}{:>9}",
            self.name_cell(&printable(name)),
            count,
            ok,
            ko,
            ms_f(stats.mean_us),
            pct(50.0),
            pct(99.0),
            ms(stats.max_us)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_read_like_english() {
        let got: Vec<String> = [1.0, 2.0, 3.0, 11.0, 50.0, 99.0, 99.9].iter().map(|p| ordinal(*p)).collect();
        assert_eq!(got, vec!["1st", "2nd", "3rd", "11th", "50th", "99th", "99.9th"]);
    }

    #[test]
    fn milliseconds_keep_two_decimals() {
        assert_eq!(ms(0), "0.00");
        assert_eq!(ms(1234), "1.23");
        assert_eq!(ms(1_200_000), "1200.00");
    }
}

#[cfg(test)]
mod snapshot_tests {
    use crate::summary::{Environment, Summary};
    use horde_metrics::{ErrorKey, ErrorRecord, Recorder, RequestTiming, RunStatus, Snapshot, Totals};
    use std::time::{Duration, UNIX_EPOCH};

    fn summary() -> Summary {
        let plan = horde_plan::Plan::from_json(
            r#"{"version": 1, "name": "shop", "scenarios": [{"name": "s",
                "steps": [{"type": "request", "name": "home", "method": "GET", "url": "http://127.0.0.1:1/"}],
                "injection": [{"type": "at_once_users", "users": 2}]}]}"#,
        )
        .unwrap();
        let mut home = Recorder::default();
        for us in [1_000, 2_000, 3_000, 900_000] {
            let mut timing = RequestTiming {
                latency_us: us,
                uncorrected_us: us,
                wait_us: us - 100,
                send_us: 20,
                receive_us: 80,
                ..Default::default()
            };
            if us == 1_000 {
                // The first request opened the connection.
                (timing.dns_us, timing.connect_us, timing.tls_us) = (Some(90), Some(150), Some(240));
            }
            home.record(&timing, true);
        }
        home.record(&RequestTiming { latency_us: 5_000, uncorrected_us: 5_000, ..Default::default() }, false);
        let mut snapshot = Snapshot { users_started: 2, users_finished: 2, ..Default::default() };
        snapshot.requests.push(("home".into(), home));
        snapshot.errors.insert(
            ErrorKey { kind: "check_failed".into(), request: "home".into(), detail: 500 },
            ErrorRecord { message: "status: expected 2xx or 304, found 500".into(), count: 1, ..Default::default() },
        );
        let mut totals = Totals::new(UNIX_EPOCH, 1);
        totals.absorb(snapshot);
        totals.elapsed = Duration::from_secs(2);
        let environment = Environment::detect(1, "test");
        Summary::from_totals(&totals, RunStatus::Completed, &plan, &environment)
    }

    /// The text users read, exactly. Update it deliberately when the layout changes.
    #[test]
    fn console_summary_layout() {
        let expected = "\
================================================================================
shop | completed | 2.0 s | 2 users (0 interrupted)
---- Global Information --------------------------------------------------------
> request count                                        5 (OK=4         KO=1       )
> min response time (ms)                            1.00 (OK=1.00      KO=5.00    )
> max response time (ms)                          900.10 (OK=900.10    KO=5.00    )
> mean response time (ms)                         182.17 (OK=226.46    KO=5.00    )
> std deviation (ms)                              358.84 (OK=388.78    KO=0.00    )
> response time 50th percentile (ms)                3.00 (OK=2.00      KO=5.00    )
> response time 75th percentile (ms)                5.00 (OK=3.00      KO=5.00    )
> response time 95th percentile (ms)              900.10 (OK=900.10    KO=5.00    )
> response time 99th percentile (ms)              900.10 (OK=900.10    KO=5.00    )
> mean requests/sec                                  2.5 (OK=2.0       KO=0.5     )
> uncorrected 99th percentile (ms)                900.10
> times from each request's start (throttled: its slot, if held back)
---- Phases (ms) ---------------------------------------------------------------
phase                           count     mean      p99      max
dns lookup                          1     0.09     0.09     0.09
connect                             1     0.15     0.15     0.15
tls handshake                       1     0.24     0.24     0.24
send                                5     0.02     0.02     0.02
wait (to first byte)                5   180.96   901.12   901.12
receive                             5     0.06     0.08     0.08
---- Response Time Distribution ------------------------------------------------
> t < 800 ms                                           3 ( 60%)
> 800 ms <= t < 1200 ms                                1 ( 20%)
> t >= 1200 ms                                         0 (  0%)
> failed                                               1 ( 20%)
---- Requests (ms) -------------------------------------------------------------
name                            count      OK      KO     mean      p50      p99      max
home                                5       4       1   182.17     3.00   900.10   900.10
---- Errors --------------------------------------------------------------------
> 1 [check_failed] home: status: expected 2xx or 304, found 500
  100.00% of errors
================================================================================
";
        let rendered = super::render(&summary());
        assert!(rendered == expected, "the console summary changed:\n{rendered}");
    }

    /// A split run's machines, one line each, lost ones said so.
    #[test]
    fn a_split_run_lists_its_machines() {
        let mut summary = summary();
        let delivered = horde_metrics::MachineStats {
            share: 0,
            host: "load-1".into(),
            pid: 41,
            requests: 3,
            cpu_ms: 1_250,
            peak_memory_bytes: Some(150 << 20),
            clock_offset_us: Some(-120),
            clock_error_us: Some(35.5),
            start_late_us: Some(82.0),
            snapshot_delay_ms: Some(horde_metrics::SnapshotDelay { mean: 4.25, max: 7.5, intervals: 2 }),
            delivered: true,
            ..Default::default()
        };
        let lost = horde_metrics::MachineStats {
            share: 1,
            host: "load-2".into(),
            pid: 42,
            requests: 2,
            lost: Some("it sent nothing for 10.0 s".into()),
            ..Default::default()
        };
        summary.machines = vec![delivered, lost];
        let rendered = super::render(&summary);
        let lines: Vec<&str> = rendered.lines().skip_while(|l| !l.starts_with("---- Machines")).take(4).collect();
        assert_eq!(
            lines,
            [
                "---- Machines ------------------------------------------------------------------",
                "> share 0 load-1 pid 41: 3 requests, 1.25 s CPU, 150 MiB peak, delivered",
                "  started +0.08 ms (clock ±0.04 ms), snapshots reached the coordinator in 4.2 ms (max 7.5)",
                "> share 1 load-2 pid 42: 2 requests, 0.00 s CPU, LOST",
            ]
        );
    }

    /// Names of any length and width keep the table's columns where the header puts them.
    #[test]
    fn the_requests_table_stays_aligned_whatever_the_names() {
        let mut summary = summary();
        let row = summary.requests[0].clone();
        let long = format!("GET https://127.0.0.1:18443/{}", "orders/".repeat(10));
        for name in ["GET https://127.0.0.1:18443/", long.as_str(), "注文の一覧を取得する", "a\u{1b}[2Jb"] {
            summary.requests.push(horde_metrics::RequestStats { name: name.to_string(), ..row.clone() });
        }
        let rendered = super::render(&summary);
        let table: Vec<&str> = rendered
            .split("---- Requests (ms)")
            .nth(1)
            .unwrap()
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("----"))
            .collect();
        assert_eq!(table.len(), 6, "{rendered}");
        let columns = |line: &str| crate::terminal::width(line);
        assert!(table.iter().all(|line| columns(line) == columns(table[0])), "{}", table.join("\n"));
        assert!(table[2].starts_with("GET https://127.0.0.1:18443/  "), "{}", table[2]);
        assert!(table[3].starts_with("GET https://127.0.0.1:18…s/orders/orders/orders/  "), "{}", table[3]);
        assert!(table[1..].iter().all(|line| line.ends_with("900.10")));
    }
}

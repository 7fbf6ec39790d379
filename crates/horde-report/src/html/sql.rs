//! The SQL experiment's page of report.html (`horde sql`): the phases in the seed's words, then
//! each phase and strategy with its rows per second drawn as a bar against the fastest strategy
//! of the same phase, so the row-by-row crawl and the bulk path are seen at a glance.

use super::escape::html;
use crate::sql::{seed_sentence, PhaseCells};
use crate::summary::Summary;
use std::fmt::Write;

/// The page, or `None` when the run had no SQL phases.
pub fn page(summary: &Summary) -> Option<String> {
    let phases = &summary.sql;
    if phases.is_empty() {
        return None;
    }
    let mut out = String::from("<h2>SQL experiment</h2><ul class=\"sentences\">");
    for phase in phases {
        let _ = write!(out, "<li>{}</li>", html(&seed_sentence(phase)));
    }
    out.push_str(
        r#"</ul><table class="stats" id="sql-phases"><thead><tr><th>phase</th><th>strategy</th><th>threads</th><th>rows</th><th>seconds</th><th>rows/s</th><th></th><th>statements</th><th>p50</th><th>p99</th><th>client CPU s</th><th>peak MB</th><th>server CPU s</th><th>ratio</th><th>check</th></tr></thead><tbody>"#,
    );
    for phase in phases {
        // The bar's length: against the fastest strategy of the same phase.
        let fastest = phases.iter().filter(|p| p.phase == phase.phase).map(|p| p.rows_per_second).fold(0.0, f64::max);
        let share = if fastest > 0.0 { (phase.rows_per_second / fastest).clamp(0.0, 1.0) } else { 0.0 };
        let cells = PhaseCells::new(summary, phase);
        let check = match (&phase.error, &phase.verification) {
            (Some(error), _) => format!(r#"<span class="badge bad">failed</span> {}"#, html(error)),
            (None, Some(v)) if v.passed => {
                format!(r#"<span class="badge good">ok</span> {} of {}"#, v.found, v.expected)
            }
            (None, Some(v)) => format!(r#"<span class="badge bad">wrong</span> {} of {}"#, v.found, v.expected),
            (None, None) => "-".into(),
        };
        let _ = write!(
            out,
            r#"<tr><td class="name">{}</td><td class="name">{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.1}</td><td><svg class="bar" width="120" height="12" role="img" aria-label="{:.0}% of the fastest {}"><rect width="{:.1}" height="12"></rect></svg></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{check}</td></tr>"#,
            html(&phase.phase),
            html(&phase.strategy),
            phase.threads,
            phase.rows,
            phase.seconds,
            phase.rows_per_second,
            share * 100.0,
            html(&phase.phase),
            share * 120.0,
            cells.statements,
            cells.p50,
            cells.p99,
            cells.client_cpu,
            cells.peak_mb,
            cells.server_cpu,
            cells.ratio,
        );
    }
    out.push_str(
        "</tbody></table><p>The bar: rows/s against the fastest strategy of the same phase. Ratio: rows/s against the \
         database's own bulk load (populate) or the single server-side statement (update). Preparation (emptying the \
         table, resetting the hashes) and the database's check are not timed.</p>",
    );
    Some(out)
}

//! The thresholds' verdicts as JUnit XML, the format every CI reads (Jenkins, GitLab, GitHub
//! actions that publish test results): a testsuite per run, a testcase per threshold with its
//! scope as classname. GitLab keys test cases by classname and name, so duplicates get a
//! suffix; it shows only a failure's text, so the message is in the text too.

use crate::summary::Summary;
use horde_metrics::{ThresholdResult, ThresholdStatus};
use std::collections::HashSet;
use std::fmt::Write;

/// The JUnit XML of a summary's thresholds (an empty suite when it has none).
pub fn render_junit(summary: &Summary) -> String {
    let thresholds = &summary.thresholds;
    let failures = thresholds.iter().filter(|t| !t.passed()).count();
    let seconds = summary.run.duration_ms as f64 / 1000.0;
    let suite = format!("horde thresholds: {}", summary.run.name);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"horde\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{seconds:.3}\">",
        thresholds.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{seconds:.3}\" \
         timestamp=\"{}\">",
        escape(&suite),
        thresholds.len(),
        escape(summary.run.started_at.trim_end_matches('Z'))
    );
    let mut seen = HashSet::new();
    for threshold in thresholds {
        let mut name = threshold.text.clone();
        let mut n = 2;
        while !seen.insert((threshold.scope.clone(), name.clone())) {
            name = format!("{} ({n})", threshold.text);
            n += 1;
        }
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0\"",
            escape(&threshold.scope),
            escape(&name)
        );
        let message = verdict_message(threshold);
        match threshold.status {
            ThresholdStatus::Pass => {
                let _ = writeln!(out, ">\n      <system-out>{}</system-out>\n    </testcase>", escape(&message));
            }
            status => {
                let kind = if status == ThresholdStatus::NoData { "no_data" } else { "threshold_failed" };
                let _ = writeln!(
                    out,
                    ">\n      <failure message=\"{0}\" type=\"{kind}\">{0}</failure>\n    </testcase>",
                    escape(&message)
                );
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// One line a person reads: `p99 was 612 ms, limit < 500 ms`.
pub fn verdict_message(t: &ThresholdResult) -> String {
    let mut message = match (t.status, &t.observed_text, &t.note) {
        (ThresholdStatus::NoData, _, _) => {
            format!("{}: no request in scope {} (limit {} {})", t.text, t.scope, t.comparison, t.bound_text)
        }
        (_, Some(observed), _) => {
            format!("{}: {} was {observed} (limit {} {})", t.text, t.metric, t.comparison, t.bound_text)
        }
        (_, None, Some(note)) => format!("{}: {note} (limit {} {})", t.text, t.comparison, t.bound_text),
        (_, None, None) => format!("{}: not measured", t.text),
    };
    if let Some(population) = &t.population {
        let _ = write!(message, "; judged on {population}");
    }
    let failing: Vec<&str> =
        t.rows.iter().filter(|r| r.status == ThresholdStatus::Fail).map(|r| r.name.as_str()).collect();
    if !failing.is_empty() {
        let shown = failing.iter().take(5).map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ");
        let more = if failing.len() > 5 { format!(" and {} more", failing.len() - 5) } else { String::new() };
        let _ = write!(message, "; failing rows: {shown}{more}");
    }
    if let Some(windows) = t.windows.filter(|w| w.failed > 0) {
        let _ = write!(message, "; {} of {} windows failed", windows.failed, windows.judged);
    }
    message
}

/// Text for an XML attribute or element: the five entities, and characters XML 1.0 forbids
/// (control characters a server may have sent) as U+FFFD.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_xml_valid() {
        assert_eq!(escape("a<b & \"c\" 'd'>\u{1}"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\u{fffd}");
    }
}

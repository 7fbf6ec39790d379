//! The plan's thresholds, checked against what the plan can record before anything is sent:
//! a threshold naming a request or group the plan does not have would otherwise fail every
//! run with `no_data`, and a typo would look like a broken system.

use horde_plan::{LatencySource, PlanError, ThresholdMetric, ThresholdScope, ThresholdSpec};
use std::sync::Arc;

/// Parses the plan's thresholds (their grammar was checked by validation) and checks each
/// named scope against the rows and groups of the lowered plan.
pub(crate) fn resolve(
    plan: &horde_plan::Plan,
    rows: &[Arc<str>],
    groups: &[Arc<str>],
    errors: &mut Vec<PlanError>,
) -> Vec<ThresholdSpec> {
    let mut specs = Vec::new();
    for (i, text) in plan.thresholds.iter().enumerate() {
        let path = format!("thresholds[{i}]");
        let Ok(spec) = text.parse::<ThresholdSpec>() else { continue };
        if let ThresholdScope::Named(name) = &spec.scope {
            let is_row = rows.iter().any(|r| **r == **name) || is_redirect_row(name, rows)
                // Resources found in pages get rows named by their URL, known only at run time.
                || (plan.protocol.infer_html_resources && name.contains("://"));
            let is_group = groups.iter().any(|g| **g == **name);
            if !is_row && !is_group {
                errors.push(PlanError::new(path, unknown_scope(text, name, rows, groups)));
                continue;
            }
            if is_group
                && !is_row
                && matches!(
                    spec.metric,
                    ThresholdMetric::Latency(LatencySource::Phase(_) | LatencySource::Uncorrected, _)
                )
            {
                errors.push(PlanError::new(
                    path,
                    format!(
                        "threshold {text:?}: {name:?} is a group, whose passes have a duration but no phases and no \
                         uncorrected latency: use pNN, mean, min, max, stddev, errors, count or rps"
                    ),
                ));
                continue;
            }
            if is_group && !is_row && spec.window_ms.is_some() {
                errors.push(PlanError::new(
                    path,
                    format!(
                        "threshold {text:?}: {name:?} is a group; windows (`over`) judge requests, since only they                          are kept per interval: judge the group on the whole run, or its requests over the window"
                    ),
                ));
                continue;
            }
        }
        specs.push(spec);
    }
    specs
}

/// `login Redirect 2`: the row of a redirect hop of `login`, recorded only when it happens.
fn is_redirect_row(name: &str, rows: &[Arc<str>]) -> bool {
    name.rsplit_once(" Redirect ")
        .is_some_and(|(request, hop)| hop.parse::<u32>().is_ok_and(|n| n >= 1) && rows.iter().any(|r| **r == *request))
}

fn unknown_scope(text: &str, name: &str, rows: &[Arc<str>], groups: &[Arc<str>]) -> String {
    let mut message = format!("threshold {text:?}: the plan has no request or group named {name:?}");
    let lowered = name.to_lowercase();
    let close: Vec<&str> = rows
        .iter()
        .chain(groups)
        .map(|n| &**n)
        .filter(|n| {
            let n = n.to_lowercase();
            n == lowered || n.contains(&lowered) || lowered.contains(&n) || edit_distance(&n, &lowered) <= 2
        })
        .take(3)
        .collect();
    if !close.is_empty() {
        message.push_str(&format!("; did you mean {}?", quoted_list(&close)));
    } else {
        let known: Vec<&str> = rows.iter().map(|r| &**r).take(10).collect();
        message.push_str(&format!("; its requests: {}", quoted_list(&known)));
        if rows.len() > known.len() {
            message.push_str(&format!(" and {} more", rows.len() - known.len()));
        }
        if !groups.is_empty() {
            let groups: Vec<&str> = groups.iter().map(|g| &**g).take(10).collect();
            message.push_str(&format!("; its groups: {}", quoted_list(&groups)));
        }
    }
    message
}

fn quoted_list(names: &[&str]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
}

/// Levenshtein distance, for suggestions on short names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_rows_and_suggestions() {
        let rows: Vec<Arc<str>> = vec!["home".into(), "login".into()];
        assert!(is_redirect_row("login Redirect 1", &rows));
        assert!(!is_redirect_row("login Redirect 0", &rows));
        assert!(!is_redirect_row("logout Redirect 1", &rows));
        assert!(unknown_scope("x", "logn", &rows, &[]).contains("did you mean \"login\"?"));
        assert!(unknown_scope("x", "checkout", &rows, &[]).contains("its requests: \"home\", \"login\""));
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}

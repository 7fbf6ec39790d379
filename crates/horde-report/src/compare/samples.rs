//! One value per run: what a summary.json says of each row and metric.

use super::{Metric, Scope};
use crate::Summary;
use horde_metrics::{GroupStats, RequestStats};

/// The values of one row and metric on one side (one per run, or per batch within a run).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub scope: Scope,
    pub name: String,
    pub metric: Metric,
    pub values: Vec<f64>,
}

/// Every row's, group's (and all requests') metrics in one run, one value each. A metric the
/// run cannot give (no request with an outcome, a percentile the plan did not compute) is left
/// out.
pub fn run_series(summary: &Summary) -> Vec<Series> {
    let mut series = Vec::new();
    let rows =
        std::iter::once((Scope::Global, &summary.global)).chain(summary.requests.iter().map(|r| (Scope::Request, r)));
    for (scope, row) in rows {
        for metric in Metric::ALL {
            if let Some(value) = value_of(row, metric) {
                series.push(Series { scope, name: row.name.clone(), metric, values: vec![value] });
            }
        }
    }
    let measured_s = summary.run.duration_ms.saturating_sub(summary.run.warmup_ms) as f64 / 1000.0;
    for group in &summary.groups {
        for metric in Metric::ALL {
            if let Some(value) = group_value_of(group, metric, measured_s) {
                series.push(Series { scope: Scope::Group, name: group.name.clone(), metric, values: vec![value] });
            }
        }
    }
    series
}

/// A group's figures read as a request row's: the duration of its passes (OK and KO) for
/// latency, passes per second of measured time for rps, failed passes for errors.
fn group_value_of(group: &GroupStats, metric: Metric, measured_s: f64) -> Option<f64> {
    let duration = &group.duration;
    if group.count == 0 {
        return None;
    }
    match metric {
        Metric::P50 => duration.percentile(50.0).map(|v| v as f64),
        Metric::P99 => duration.percentile(99.0).map(|v| v as f64),
        Metric::Mean => (duration.count > 0).then_some(duration.mean_us),
        Metric::Rps => (measured_s > 0.0).then(|| group.count as f64 / measured_s),
        Metric::Errors => Some(100.0 * group.ko as f64 / group.count as f64),
    }
}

/// Latency is the corrected figure over OK and KO requests (`latency.all`), as everywhere in
/// horde; errors are KO over requests with an outcome, percent.
fn value_of(row: &RequestStats, metric: Metric) -> Option<f64> {
    let latency = &row.latency.all;
    if row.count == 0 {
        return None;
    }
    match metric {
        Metric::P50 => latency.percentile(50.0).map(|v| v as f64),
        Metric::P99 => latency.percentile(99.0).map(|v| v as f64),
        Metric::Mean => (latency.count > 0).then_some(latency.mean_us),
        Metric::Rps => Some(row.mean_rps),
        Metric::Errors => Some(100.0 * row.ko as f64 / row.count as f64),
    }
}

/// Appends a run's series to a side's, keeping the order of first appearance.
pub(super) fn append(side: &mut Vec<Series>, run: Vec<Series>) {
    for item in run {
        match side.iter_mut().find(|s| s.scope == item.scope && s.name == item.name && s.metric == item.metric) {
            Some(existing) => existing.values.extend(item.values),
            None => side.push(item),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::Environment;
    use horde_metrics::{GroupRecorder, RunStatus, Snapshot, Totals};
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn groups_give_their_pass_durations_rate_and_failures() {
        let plan = horde_plan::Plan::from_json(
            r#"{"version": 1, "name": "g", "scenarios": [{"name": "s", "injection": [], "steps": []}]}"#,
        )
        .unwrap();
        let mut journey = GroupRecorder::default();
        for i in 0..10 {
            journey.record(30_000 + i * 1000, i != 0);
        }
        let mut snapshot = Snapshot::default();
        snapshot.groups.push(("journey".into(), journey));
        let mut totals = Totals::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000), 1);
        totals.absorb(snapshot);
        totals.elapsed = Duration::from_secs(4);
        totals.warmup = Duration::from_secs(2);
        let summary = Summary::from_totals(&totals, RunStatus::Completed, &plan, &Environment::detect(1, "test"));
        let series = run_series(&summary);
        let value = |metric: Metric| {
            series
                .iter()
                .find(|s| s.scope == Scope::Group && s.name == "journey" && s.metric == metric)
                .map(|s| s.values[0])
        };
        // Ten passes in the 2 s measured after the warm-up; one failed.
        assert_eq!(value(Metric::Rps), Some(5.0));
        assert_eq!(value(Metric::Errors), Some(10.0));
        assert!((value(Metric::Mean).unwrap() - 34_500.0).abs() < 50.0, "{:?}", value(Metric::Mean));
        assert!((34_000.0..=35_100.0).contains(&value(Metric::P50).unwrap()), "{:?}", value(Metric::P50));
    }
}

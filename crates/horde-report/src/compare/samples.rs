//! One value per run: what a summary.json says of each row and metric.

use super::{Metric, Scope};
use crate::Summary;
use horde_metrics::RequestStats;

/// The values of one row and metric on one side (one per run, or per batch within a run).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub scope: Scope,
    pub name: String,
    pub metric: Metric,
    pub values: Vec<f64>,
}

/// Every row's (and all requests') metrics in one run, one value each. A metric the run
/// cannot give (no request with an outcome, a percentile the plan did not compute) is left out.
pub fn run_series(summary: &Summary) -> Vec<Series> {
    let mut series = Vec::new();
    let rows = std::iter::once((Scope::Global, &summary.global)).chain(summary.requests.iter().map(|r| (Scope::Request, r)));
    for (scope, row) in rows {
        for metric in Metric::ALL {
            if let Some(value) = value_of(row, metric) {
                series.push(Series { scope, name: row.name.clone(), metric, values: vec![value] });
            }
        }
    }
    series
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

//! The statistics of `horde bench`, as pure functions. The trial (a fresh process or run) is the
//! unit: a cell's Score is the mean of its trial means and its Error the Student t half-width
//! over those k means, so the variance between processes is in the Error, unlike JMH's, which
//! pools every iteration as if independent (kept too, labelled, for comparison).

use horde_report::compare::stats::{welch, Shift};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The two-sided Student t quantile `t(1 - alpha/2, df)` of a confidence level.
pub fn t_quantile(confidence: f64, degrees_of_freedom: f64) -> f64 {
    let alpha = 1.0 - confidence;
    if degrees_of_freedom.is_infinite() {
        return statrs::distribution::Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
    }
    StudentsT::new(0.0, 1.0, degrees_of_freedom).expect("positive degrees of freedom").inverse_cdf(1.0 - alpha / 2.0)
}

pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The sample variance (n - 1); 0 for fewer than two values.
pub fn variance(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64
}

/// The p-quantile by linear interpolation between order statistics (R's type 7).
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    let position = p * (sorted.len() - 1) as f64;
    let (low, high) = (position.floor() as usize, position.ceil() as usize);
    sorted[low] + (sorted[high] - sorted[low]) * (position - low as f64)
}

/// Tukey's fences: values below Q1 - 1.5 IQR or above Q3 + 1.5 IQR.
pub fn tukey_fences(values: &[f64]) -> (f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (q1, q3) = (quantile(&sorted, 0.25), quantile(&sorted, 0.75));
    (q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1))
}

/// What one cell's trials say: the figures of the table and the diagnostics behind them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CellStats {
    /// Trials (k): the Cnt of the table.
    pub trials: usize,
    /// Mean of the trial means.
    pub score: f64,
    /// t(1 - alpha/2, k - 1) * s / sqrt(k) over the trial means; absent with one trial.
    pub error: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Standard deviation of the trial means.
    pub stdev: f64,
    /// Coefficient of variation of the trial means (stdev / score).
    pub cv: f64,
    /// JMH's figure: the t half-width over every measured iteration pooled, as if independent.
    pub jmh_pooled_error: Option<f64>,
    /// The variance of the trial means that the iterations' own noise explains (within-trial
    /// variance over the iterations per trial).
    pub within_trial_variance: f64,
    /// The variance of the trial means beyond that: what only more trials average away.
    pub between_trial_variance: f64,
    /// Trials needed for an Error of +-1 % of the Score at this confidence (at least 2).
    pub trials_for_1pct: Option<usize>,
    /// Measured iterations outside Tukey's fences of the cell's iterations (kept, counted).
    pub outliers: usize,
    /// Measured iterations in all.
    pub iterations: usize,
    /// The first measured iteration of most trials was an outlier: warm-up was too short.
    pub first_iteration_outlier: bool,
}

/// The statistics of one cell from each trial's measured iterations.
pub fn cell_stats(trials: &[Vec<f64>], confidence: f64) -> Option<CellStats> {
    let means: Vec<f64> = trials.iter().map(|t| if t.is_empty() { 0.0 } else { mean(t) }).collect();
    cell_stats_of(trials, &means, confidence)
}

/// The same, with each trial's own figure given: an HTTP trial's percentile is the percentile
/// of all its measured requests, not the mean of its intervals' percentiles (the intervals'
/// figures still give the spread within the trial).
pub fn cell_stats_of(trials: &[Vec<f64>], trial_means: &[f64], confidence: f64) -> Option<CellStats> {
    let (trials, means): (Vec<&Vec<f64>>, Vec<f64>) =
        trials.iter().zip(trial_means).filter(|(t, _)| !t.is_empty()).map(|(t, m)| (t, *m)).unzip();
    if trials.is_empty() {
        return None;
    }
    let k = trials.len();
    let score = mean(&means);
    let stdev = variance(&means).sqrt();
    let error = (k >= 2).then(|| t_quantile(confidence, (k - 1) as f64) * stdev / (k as f64).sqrt());
    let pooled: Vec<f64> = trials.iter().flat_map(|t| t.iter().copied()).collect();
    let n = pooled.len();
    let jmh_pooled_error =
        (n >= 2).then(|| t_quantile(confidence, (n - 1) as f64) * variance(&pooled).sqrt() / (n as f64).sqrt());
    // One-way analysis of variance: the variance of a trial mean is sigma_b^2 + sigma_w^2 / m.
    let per_trial = n as f64 / k as f64;
    let within_trial_variance = mean(&trials.iter().map(|t| variance(t)).collect::<Vec<_>>()) / per_trial;
    let between_trial_variance = (variance(&means) - within_trial_variance).max(0.0);
    let trials_for_1pct = (k >= 2 && score != 0.0).then(|| trials_needed(stdev / score.abs(), 0.01, confidence));
    let (low, high) = tukey_fences(&pooled);
    let outliers = pooled.iter().filter(|v| **v < low || **v > high).count();
    let first_outliers = trials.iter().filter(|t| t.len() >= 2 && (t[0] < low || t[0] > high)).count();
    Some(CellStats {
        trials: k,
        score,
        error,
        ci_low: error.map(|e| score - e),
        ci_high: error.map(|e| score + e),
        stdev,
        cv: if score == 0.0 { 0.0 } else { stdev / score.abs() },
        jmh_pooled_error,
        within_trial_variance,
        between_trial_variance,
        trials_for_1pct,
        outliers,
        iterations: n,
        first_iteration_outlier: k >= 2 && first_outliers * 2 > k,
    })
}

/// The smallest k (at least 2) whose t(k - 1) * cv / sqrt(k) is within `relative`.
pub fn trials_needed(cv: f64, relative: f64, confidence: f64) -> usize {
    if cv == 0.0 {
        return 2;
    }
    let mut k = 2usize;
    while k < 1_000_000 {
        if t_quantile(confidence, (k - 1) as f64) * cv / (k as f64).sqrt() <= relative {
            return k;
        }
        // Grow by a tenth at a time past the small counts, where t changes little.
        k = if k < 100 { k + 1 } else { k + k / 10 };
    }
    k
}

/// The ratio of one machine's cell to the reference's: geometric means of the trial means,
/// with the confidence interval from Welch's test on their logarithms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Ratio {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub p: f64,
    /// The difference of the mean logarithms, and its standard error and degrees of freedom,
    /// which the geometric-mean row combines.
    pub log_difference: f64,
    pub log_standard_error: f64,
    pub degrees_of_freedom: f64,
}

/// `other / reference`; `None` unless both have two trials and every mean is positive.
pub fn ratio(reference: &[f64], other: &[f64], confidence: f64) -> Option<Ratio> {
    if reference.iter().chain(other).any(|v| *v <= 0.0) {
        return None;
    }
    let log_ref: Vec<f64> = reference.iter().map(|v| v.ln()).collect();
    let log_other: Vec<f64> = other.iter().map(|v| v.ln()).collect();
    let test = welch(&log_ref, &log_other, 1.0 - confidence)?;
    let standard_error =
        (variance(&log_ref) / log_ref.len() as f64 + variance(&log_other) / log_other.len() as f64).sqrt();
    Some(Ratio {
        ratio: test.difference.exp(),
        low: test.low.exp(),
        high: test.high.exp(),
        p: test.p,
        log_difference: test.difference,
        log_standard_error: standard_error,
        degrees_of_freedom: test.degrees_of_freedom,
    })
}

/// The geometric mean of several ratios, its interval from the summed variances of the logs
/// and the smallest degrees of freedom (conservative).
pub fn geometric_mean(ratios: &[&Ratio], confidence: f64) -> Option<Ratio> {
    if ratios.is_empty() {
        return None;
    }
    let n = ratios.len() as f64;
    let difference = ratios.iter().map(|r| r.log_difference).sum::<f64>() / n;
    let standard_error = ratios.iter().map(|r| r.log_standard_error.powi(2)).sum::<f64>().sqrt() / n;
    let df = ratios.iter().map(|r| r.degrees_of_freedom).fold(f64::INFINITY, f64::min);
    let half = if standard_error == 0.0 { 0.0 } else { t_quantile(confidence, df) * standard_error };
    let p = if standard_error == 0.0 {
        if difference == 0.0 {
            1.0
        } else {
            0.0
        }
    } else {
        let t = if df.is_infinite() { 1e9 } else { df };
        (2.0 * StudentsT::new(0.0, 1.0, t).expect("positive df").sf((difference / standard_error).abs())).min(1.0)
    };
    Some(Ratio {
        ratio: difference.exp(),
        low: (difference - half).exp(),
        high: (difference + half).exp(),
        p,
        log_difference: difference,
        log_standard_error: standard_error,
        degrees_of_freedom: df,
    })
}

/// Whether a ratio of times (or of rates, when `higher_is_better`) is a change beyond the noise
/// threshold: criterion.rs's rule, the whole interval past `1 +- threshold`.
pub fn verdict(ratio: &Ratio, threshold: f64, higher_is_better: bool) -> Verdict {
    let significant = ratio.low > 1.0 || ratio.high < 1.0;
    let shift =
        horde_report::compare::stats::classify(significant, Some(ratio.low - 1.0), Some(ratio.high - 1.0), threshold);
    match (shift, higher_is_better) {
        (Shift::Up, false) | (Shift::Down, true) => Verdict::Slower,
        (Shift::Down, false) | (Shift::Up, true) => Verdict::Faster,
        (Shift::Within, _) if significant => Verdict::WithinThreshold,
        (Shift::Within, _) => Verdict::NotSignificant,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    /// Significant but inside the noise threshold.
    WithinThreshold,
    NotSignificant,
}

impl Verdict {
    pub fn symbol(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinThreshold => "~ (<threshold)",
            Verdict::NotSignificant => "~",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        assert!((t_quantile(0.95, 4.0) - 2.776).abs() < 1e-3);
        assert!((t_quantile(0.999, 9.0) - 4.781).abs() < 1e-3);
        assert!((t_quantile(0.95, f64::INFINITY) - 1.960).abs() < 1e-3);
    }

    #[test]
    fn score_is_the_mean_of_trial_means_and_error_uses_trials() {
        let trials = vec![vec![10.0, 10.0], vec![12.0, 12.0], vec![14.0, 14.0]];
        let stats = cell_stats(&trials, 0.95).unwrap();
        assert_eq!(stats.trials, 3);
        assert!((stats.score - 12.0).abs() < 1e-12);
        // s = 2, t(0.975, 2) = 4.303: 4.303 * 2 / sqrt(3).
        assert!((stats.error.unwrap() - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-2);
        // No noise inside a trial: all the variance is between trials.
        assert_eq!(stats.within_trial_variance, 0.0);
        assert!((stats.between_trial_variance - 4.0).abs() < 1e-12);
        // JMH's pooled error is narrower: it counts 6 iterations as independent.
        assert!(stats.jmh_pooled_error.unwrap() < stats.error.unwrap());
    }

    #[test]
    fn a_trial_s_own_figure_is_its_mean_when_given() {
        // An HTTP trial's p99 is its histogram's, not the mean of its intervals' p99s.
        let intervals = vec![vec![10.0, 30.0], vec![12.0, 28.0]];
        let stats = cell_stats_of(&intervals, &[29.0, 27.0], 0.95).unwrap();
        assert!((stats.score - 28.0).abs() < 1e-12);
        assert!((stats.stdev - 2f64.sqrt()).abs() < 1e-12);
        // Empty trials are left out with their figures.
        let stats = cell_stats_of(&[vec![], vec![1.0]], &[99.0, 5.0], 0.95).unwrap();
        assert_eq!((stats.trials, stats.score), (1, 5.0));
    }

    #[test]
    fn one_trial_has_no_error() {
        let stats = cell_stats(&[vec![1.0, 2.0, 3.0]], 0.95).unwrap();
        assert_eq!(stats.error, None);
        assert!(cell_stats(&[], 0.95).is_none());
    }

    #[test]
    fn outliers_are_counted_and_a_slow_first_iteration_is_noticed() {
        let trials = vec![vec![50.0, 10.0, 10.1, 9.9], vec![48.0, 10.0, 10.2, 9.8], vec![10.0, 10.0, 10.1, 9.9]];
        let stats = cell_stats(&trials, 0.95).unwrap();
        assert_eq!(stats.outliers, 2);
        assert!(stats.first_iteration_outlier);
    }

    #[test]
    fn trials_needed_shrinks_with_noise() {
        assert_eq!(trials_needed(0.0, 0.01, 0.95), 2);
        let noisy = trials_needed(0.05, 0.01, 0.95);
        let quiet = trials_needed(0.01, 0.01, 0.95);
        assert!(noisy > quiet && quiet >= 2);
        // (1.96 * 5)^2 ~ 96, a little more for t.
        assert!((96..110).contains(&noisy), "{noisy}");
    }

    #[test]
    fn a_doubled_time_is_slower_with_an_interval_around_two() {
        let reference = [10.0, 10.2, 9.9, 10.1, 10.0];
        let other = [20.1, 19.8, 20.3, 20.0, 19.9];
        let r = ratio(&reference, &other, 0.95).unwrap();
        assert!(r.low < 2.0 && 2.0 < r.high, "{r:?}");
        assert_eq!(verdict(&r, 0.01, false), Verdict::Slower);
        assert_eq!(verdict(&r, 0.01, true), Verdict::Faster);
        let same = ratio(&reference, &[10.1, 9.9, 10.0, 10.2, 10.0], 0.95).unwrap();
        assert_eq!(verdict(&same, 0.01, false), Verdict::NotSignificant);
        let g = geometric_mean(&[&r, &r], 0.95).unwrap();
        assert!((g.ratio - r.ratio).abs() < 1e-12 && g.high - g.low < r.high - r.low);
    }
}

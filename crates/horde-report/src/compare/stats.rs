//! The statistics of `horde compare`, as pure functions of samples (no IO, no formatting).
//!
//! - [`mann_whitney`]: the two-sided Mann-Whitney U (Wilcoxon rank-sum) test. For small
//!   samples the p-value comes from the exact permutation distribution of the rank sum,
//!   computed with the samples' own mid-ranks, so ties are handled exactly; beyond that, the
//!   normal approximation with tie and continuity corrections.
//! - [`hodges_lehmann`]: the Hodges-Lehmann estimate of the shift between two samples (the
//!   median of all pairwise differences) with Moses' distribution-free confidence interval.
//! - [`welch`]: Welch's t-test and interval for a difference of means (the one-run fallback).
//! - [`benjamini_hochberg`]: adjusted p-values controlling the false discovery rate.
//! - [`classify`]: criterion.rs's rule: a change counts only when it is significant and its
//!   whole interval lies beyond the tolerance.
//!
//! ```
//! use horde_report::compare::stats::{hodges_lehmann, mann_whitney};
//! let a = [20.1_f64, 20.3, 20.2, 20.6, 20.4].map(f64::ln);
//! let b = [24.2_f64, 24.5, 24.1, 24.9, 24.3].map(f64::ln);
//! let test = mann_whitney(&a, &b).unwrap();
//! assert!((test.p - 2.0 / 252.0).abs() < 1e-12); // every B above every A: the smallest p for 5 + 5
//! let shift = hodges_lehmann(&a, &b, 0.05).unwrap();
//! assert!((shift.estimate.exp() - 1.2).abs() < 0.01);
//! ```

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Up to this many values in both samples together, p-values and intervals come from the exact
/// distribution (a table of at most about 50 × 25 × 2,550 counts); beyond, from the normal one.
pub const EXACT_MAX_TOTAL: usize = 50;

/// Which distribution a rank test's p-value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankMethod {
    /// The exact permutation distribution (conditional on ties, if any).
    Exact,
    /// The normal approximation with tie and continuity corrections.
    Normal,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RankTest {
    /// U of the first sample: the number of pairs (a, b) with a > b, ties counting one half.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub method: RankMethod,
}

/// The two-sided Mann-Whitney U test of `a` against `b`; `None` when either is empty.
/// NaN values are not allowed (the caller keeps them out).
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<RankTest> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let ranks = doubled_midranks(a, b);
    let rank_sum_a: u64 = ranks[..m].iter().sum();
    // Doubled ranks keep mid-ranks integral: W = rank_sum_a / 2.
    let u = rank_sum_a as f64 / 2.0 - (m * (m + 1)) as f64 / 2.0;
    if m + n <= EXACT_MAX_TOTAL {
        let distribution = RankSumDistribution::new(&ranks, m);
        // The doubled mean of W is m (N + 1): an integer, so the comparison below is exact.
        let mean = (m * (m + n + 1)) as i64;
        let observed = (rank_sum_a as i64 - mean).abs();
        let p = distribution.probability(|sum| (sum as i64 - mean).abs() >= observed);
        return Some(RankTest { u, p: p.min(1.0), method: RankMethod::Exact });
    }
    let (mf, nf, total) = (m as f64, n as f64, (m + n) as f64);
    let ties: f64 = tie_sizes(a, b).iter().map(|&t| (t * t * t - t) as f64).sum();
    let variance = mf * nf / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0)));
    let p = if variance <= 0.0 {
        1.0 // every value equal: nothing to rank
    } else {
        let z = ((u - mf * nf / 2.0).abs() - 0.5).max(0.0) / variance.sqrt();
        2.0 * standard_normal().sf(z)
    };
    Some(RankTest { u, p: p.min(1.0), method: RankMethod::Normal })
}

/// The smallest two-sided p-value the U test can give samples of these sizes (without ties):
/// 2 / C(m + n, m), when every value of one sample lies beyond every value of the other.
pub fn smallest_p(m: usize, n: usize) -> f64 {
    if m == 0 || n == 0 {
        return 1.0;
    }
    (2.0 / binomial(m + n, m)).min(1.0)
}

/// An estimate of `b - a` with its confidence interval; `low`/`high` are `None` when the
/// samples are too small for an interval at the asked level (it would be unbounded).
#[derive(Debug, Clone, PartialEq)]
pub struct ShiftEstimate {
    pub estimate: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The interval's actual coverage (the exact distribution is discrete: at least 1 - alpha).
    pub confidence: f64,
}

/// The Hodges-Lehmann estimate of the shift from `a` to `b` (the median of the m·n differences
/// `b_j - a_i`) and Moses' interval: the k-th smallest and k-th largest differences, k - 1
/// being the largest U whose lower tail probability is at most alpha / 2.
pub fn hodges_lehmann(a: &[f64], b: &[f64], alpha: f64) -> Option<ShiftEstimate> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let mut differences: Vec<f64> = b.iter().flat_map(|y| a.iter().map(move |x| y - x)).collect();
    differences.sort_by(f64::total_cmp);
    let count = differences.len();
    let estimate = if count % 2 == 1 {
        differences[count / 2]
    } else {
        (differences[count / 2 - 1] + differences[count / 2]) / 2.0
    };
    let (k, confidence) = moses_rank(m, n, alpha);
    let (low, high) = match k {
        Some(k) => (Some(differences[k - 1]), Some(differences[count - k])),
        None => (None, None),
    };
    Some(ShiftEstimate { estimate, low, high, confidence })
}

/// The 1-based rank k of Moses' interval for sizes m and n and its coverage, or `None` when
/// even the extreme differences do not reach the level (P(U = 0) > alpha / 2).
fn moses_rank(m: usize, n: usize, alpha: f64) -> (Option<usize>, f64) {
    let pairs = m * n;
    if m + n <= EXACT_MAX_TOTAL {
        // The null distribution of U without ties: the rank sum of ranks 1..N, doubled.
        let ranks: Vec<u64> = (1..=(m + n) as u64).map(|r| 2 * r).collect();
        let distribution = RankSumDistribution::new(&ranks, m);
        let offset = (m * (m + 1)) as u64; // doubled m(m+1)/2: U = (sum - offset) / 2
        let mut lower_tail = 0.0;
        let mut k = None;
        for u in 0..=pairs as u64 {
            let next = lower_tail + distribution.probability(|sum| sum == 2 * u + offset);
            if next > alpha / 2.0 + 1e-12 {
                break;
            }
            lower_tail = next;
            k = Some(u as usize + 1);
        }
        return match k {
            Some(k) if 2 * k <= pairs => (Some(k), 1.0 - 2.0 * lower_tail),
            _ => (None, 1.0),
        };
    }
    let (mf, nf) = (m as f64, n as f64);
    let z = standard_normal().inverse_cdf(1.0 - alpha / 2.0);
    let k = (mf * nf / 2.0 - z * (mf * nf * (mf + nf + 1.0) / 12.0).sqrt()).round();
    if k < 1.0 {
        (None, 1.0)
    } else {
        (Some(k as usize), 1.0 - alpha)
    }
}

/// Welch's two-sample t-test of the difference of means `mean(b) - mean(a)`.
#[derive(Debug, Clone, PartialEq)]
pub struct WelchTest {
    pub difference: f64,
    pub low: f64,
    pub high: f64,
    pub p: f64,
    /// Welch-Satterthwaite degrees of freedom.
    pub degrees_of_freedom: f64,
}

/// Welch's t-test and the (1 - alpha) interval of the difference; `None` unless each sample
/// has at least two values.
pub fn welch(a: &[f64], b: &[f64], alpha: f64) -> Option<WelchTest> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (mean_a, var_a) = mean_and_variance(a);
    let (mean_b, var_b) = mean_and_variance(b);
    let difference = mean_b - mean_a;
    let (share_a, share_b) = (var_a / a.len() as f64, var_b / b.len() as f64);
    let standard_error = (share_a + share_b).sqrt();
    if standard_error == 0.0 {
        // Both samples constant: a difference is certain, or there is none.
        let p = if difference == 0.0 { 1.0 } else { 0.0 };
        return Some(WelchTest { difference, low: difference, high: difference, p, degrees_of_freedom: f64::INFINITY });
    }
    let degrees_of_freedom =
        (share_a + share_b).powi(2) / (share_a.powi(2) / (a.len() - 1) as f64 + share_b.powi(2) / (b.len() - 1) as f64);
    let t = StudentsT::new(0.0, 1.0, degrees_of_freedom).expect("positive degrees of freedom");
    let p = (2.0 * t.sf((difference / standard_error).abs())).min(1.0);
    let half_width = t.inverse_cdf(1.0 - alpha / 2.0) * standard_error;
    Some(WelchTest { difference, low: difference - half_width, high: difference + half_width, p, degrees_of_freedom })
}

/// Benjamini-Hochberg adjusted p-values (q-values), in the order given: reject the tests whose
/// q is at most alpha and the expected share of false discoveries among them is at most alpha.
pub fn benjamini_hochberg(p_values: &[f64]) -> Vec<f64> {
    let count = p_values.len();
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let mut adjusted = vec![1.0; count];
    let mut running_min: f64 = 1.0;
    for (position, &index) in order.iter().enumerate().rev() {
        let q = p_values[index] * count as f64 / (position + 1) as f64;
        running_min = running_min.min(q);
        adjusted[index] = running_min;
    }
    adjusted
}

/// Where a change lies against the tolerance: criterion.rs's rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shift {
    /// Significant, and the whole interval is above `+tolerance`.
    Up,
    /// Significant, and the whole interval is below `-tolerance`.
    Down,
    /// Not significant, or the interval reaches into the tolerance (or is unbounded).
    Within,
}

/// Classifies a change whose interval is `[low, high]` on the scale of the tolerance (a
/// relative change `ratio - 1`, or a difference of percentages).
pub fn classify(significant: bool, low: Option<f64>, high: Option<f64>, tolerance: f64) -> Shift {
    match (significant, low, high) {
        (true, Some(low), Some(_)) if low > tolerance => Shift::Up,
        (true, Some(_), Some(high)) if high < -tolerance => Shift::Down,
        _ => Shift::Within,
    }
}

/// The distribution of the (doubled) rank sum of `m` values drawn without replacement from
/// the pooled ranks, under the null hypothesis that every draw is equally likely.
struct RankSumDistribution {
    counts: Vec<f64>,
    total: f64,
}

impl RankSumDistribution {
    fn new(doubled_ranks: &[u64], m: usize) -> RankSumDistribution {
        let max_sum: u64 = {
            let mut sorted = doubled_ranks.to_vec();
            sorted.sort_unstable_by(|x, y| y.cmp(x));
            sorted.iter().take(m).sum()
        };
        let width = max_sum as usize + 1;
        // ways[k][s]: subsets of size k of the ranks seen so far whose sum is s.
        let mut ways = vec![vec![0.0_f64; width]; m + 1];
        ways[0][0] = 1.0;
        for (seen, &rank) in doubled_ranks.iter().enumerate() {
            let rank = rank as usize;
            for k in (1..=m.min(seen + 1)).rev() {
                let (before, after) = ways.split_at_mut(k);
                let (smaller, this) = (&before[k - 1], &mut after[0]);
                for sum in (rank..width).rev() {
                    this[sum] += smaller[sum - rank];
                }
            }
        }
        let counts = ways.swap_remove(m);
        RankSumDistribution { total: counts.iter().sum(), counts }
    }

    fn probability(&self, accept: impl Fn(u64) -> bool) -> f64 {
        let hits: f64 = self.counts.iter().enumerate().filter(|(sum, _)| accept(*sum as u64)).map(|(_, c)| c).sum();
        hits / self.total
    }
}

/// Twice the mid-ranks of the pooled samples (`a` first, then `b`): tied values share the mean
/// of their ranks, which doubled is always a whole number.
fn doubled_midranks(a: &[f64], b: &[f64]) -> Vec<u64> {
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let mut order: Vec<usize> = (0..pooled.len()).collect();
    order.sort_by(|&i, &j| pooled[i].total_cmp(&pooled[j]));
    let mut ranks = vec![0; pooled.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start;
        while end + 1 < order.len() && pooled[order[end + 1]] == pooled[order[start]] {
            end += 1;
        }
        // Ranks start + 1 ..= end + 1 share their mean; doubled: start + end + 2.
        for &index in &order[start..=end] {
            ranks[index] = (start + end + 2) as u64;
        }
        start = end + 1;
    }
    ranks
}

/// The sizes of the groups of equal values in the pooled samples (1 for an untied value).
fn tie_sizes(a: &[f64], b: &[f64]) -> Vec<usize> {
    let mut pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    pooled.sort_by(f64::total_cmp);
    pooled.chunk_by(|x, y| x == y).map(<[f64]>::len).collect()
}

fn mean_and_variance(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, variance)
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k.min(n - k)).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

fn standard_normal() -> Normal {
    Normal::new(0.0, 1.0).expect("a standard normal distribution")
}

/// Median of a sample (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: f64, expected: f64, tolerance: f64) -> bool {
        (actual - expected).abs() <= tolerance * expected.abs().max(1e-300)
    }

    /// Reference values: scipy.stats.mannwhitneyu(a, b, method="exact") (no ties) and
    /// method="asymptotic" (continuity and tie corrections, scipy's defaults); see the comments.
    #[test]
    fn mann_whitney_matches_scipy_without_ties() {
        // scipy: U = 3, p = 1/9.
        let test = mann_whitney(&[1.0, 2.0, 3.0, 7.0], &[4.0, 5.0, 6.0, 8.0, 9.0]).unwrap();
        assert_eq!(test.method, RankMethod::Exact);
        assert_eq!(test.u, 3.0);
        assert!(close(test.p, SCIPY_EXACT_4_5, 1e-12), "{}", test.p);
        // Every value of one sample below the other: 2 / C(10, 5).
        let test = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(close(test.p, 2.0 / 252.0, 1e-12));
        assert_eq!(test.u, 0.0);
        // Interleaved samples: no difference at all.
        let test = mann_whitney(&[1.0, 4.0, 5.0, 8.0], &[2.0, 3.0, 6.0, 7.0]).unwrap();
        assert!(close(test.p, 1.0, 1e-12));
        let test = mann_whitney(&SAMPLE_X, &SAMPLE_Y).unwrap();
        assert!(close(test.u, SCIPY_XY_U, 1e-12));
        assert!(close(test.p, SCIPY_XY_EXACT, 1e-9), "{}", test.p);
    }

    #[test]
    fn mann_whitney_with_ties_is_the_exact_permutation_test() {
        // Ties: the p-value is the share of all C(7, 3) = 35 splits of the pooled values whose
        // rank sum lies as far from its mean as the observed one, counted by brute force here.
        let (a, b) = ([1.0, 2.0, 2.0], [2.0, 3.0, 3.0, 4.0]);
        let test = mann_whitney(&a, &b).unwrap();
        let pooled: Vec<f64> = a.iter().chain(&b).copied().collect();
        let ranks = doubled_midranks(&a, &b);
        let observed: i64 = ranks[..3].iter().sum::<u64>() as i64;
        let mean = 3 * 8;
        let mut extreme = 0;
        let mut splits = 0;
        for i in 0..7 {
            for j in i + 1..7 {
                for k in j + 1..7 {
                    splits += 1;
                    let sum = (ranks[i] + ranks[j] + ranks[k]) as i64;
                    if (sum - mean).abs() >= (observed - mean).abs() {
                        extreme += 1;
                    }
                }
            }
        }
        assert_eq!(splits, 35);
        assert_eq!(pooled.len(), 7);
        assert!(close(test.p, extreme as f64 / 35.0, 1e-12), "{} vs {extreme}/35", test.p);
        // Mid-ranks: 1, 3, 3 | 3, 5.5, 5.5, 7 (doubled 2, 6, 6 | 6, 11, 11, 14).
        assert_eq!(ranks, vec![2, 6, 6, 6, 11, 11, 14]);
        assert_eq!(test.u, 1.0); // no a above a b; the two pairs (2, 2) count one half each
                                 // Rank sums as far from their mean as 14 (doubled): the three ways to draw 2, 6, 6 and
                                 // the one to draw 14, 11, 11. scipy's PermutationMethod doubles the smaller tail instead
                                 // (6/35 here); the two definitions agree without ties, where the distribution is symmetric.
        assert!(close(test.p, 4.0 / 35.0, 1e-12));
    }

    #[test]
    fn mann_whitney_normal_approximation_matches_scipy() {
        // 30 + 30 values with ties beyond the exact limit.
        let a: Vec<f64> = (0..30).map(|i| (i % 10) as f64).collect();
        let b: Vec<f64> = (0..30).map(|i| (i % 10 + 1) as f64).collect();
        let test = mann_whitney(&a, &b).unwrap();
        assert_eq!(test.method, RankMethod::Normal);
        assert!(close(test.u, SCIPY_TIES_U, 1e-12));
        assert!(close(test.p, SCIPY_TIES_ASYMPTOTIC, 1e-9), "{}", test.p);
        // All values equal: nothing to test.
        let flat = vec![1.0; 30];
        assert_eq!(mann_whitney(&flat, &flat).unwrap().p, 1.0);
    }

    #[test]
    fn smallest_reachable_p_values() {
        // benchstat's table: 2 / C(2n, n).
        assert!(close(smallest_p(3, 3), 0.1, 1e-12));
        assert!(close(smallest_p(4, 4), 0.028_571_428_571_428_57, 1e-12));
        assert!(close(smallest_p(5, 5), 0.007_936_507_936_507_936, 1e-12));
        assert_eq!(smallest_p(1, 1), 1.0);
        assert_eq!(smallest_p(0, 5), 1.0);
    }

    #[test]
    fn hodges_lehmann_and_moses_by_hand() {
        // a = 1, 2, 3; b = 3, 5, 9: differences b - a sorted: 0 1 2 2 3 4 6 7 8, median 3.
        let estimate = hodges_lehmann(&[1.0, 2.0, 3.0], &[3.0, 5.0, 9.0], 0.05).unwrap();
        assert_eq!(estimate.estimate, 3.0);
        // 3 + 3: P(U = 0) = 1/20 > 0.025: no interval at 95 %.
        assert_eq!((estimate.low, estimate.high), (None, None));
        // At 90 %: P(U = 0) = 0.05 <= 0.05, P(U <= 1) = 0.1 > 0.05: k = 1, [min, max].
        let estimate = hodges_lehmann(&[1.0, 2.0, 3.0], &[3.0, 5.0, 9.0], 0.10).unwrap();
        assert_eq!((estimate.low, estimate.high), (Some(0.0), Some(8.0)));
        assert!(close(estimate.confidence, 0.9, 1e-12));
        // 5 + 5: P(U <= 2) = 4/252 <= 0.025 < P(U <= 3) = 7/252, so k = 3: the 3rd smallest and
        // 3rd largest of the 25 differences, with coverage 1 - 8/252.
        let a = [0.0, 10.0, 20.0, 30.0, 40.0];
        let b = [1.0, 2.0, 3.0, 4.0, 5.0];
        let estimate = hodges_lehmann(&a, &b, 0.05).unwrap();
        let mut differences: Vec<f64> = b.iter().flat_map(|y| a.iter().map(move |x| y - x)).collect();
        differences.sort_by(f64::total_cmp);
        assert_eq!(estimate.low, Some(differences[2]));
        assert_eq!(estimate.high, Some(differences[22]));
        assert_eq!(estimate.estimate, differences[12]);
        assert!(close(estimate.confidence, 1.0 - 8.0 / 252.0, 1e-12));
        // An even count of differences: the mean of the middle two.
        let estimate = hodges_lehmann(&[0.0, 1.0], &[2.0, 4.0], 0.05).unwrap();
        assert_eq!(estimate.estimate, 2.5); // differences 1 2 3 4
    }

    #[test]
    fn moses_interval_for_large_samples_uses_the_normal_quantile() {
        let a: Vec<f64> = (0..40).map(f64::from).collect();
        let b: Vec<f64> = (0..40).map(|i| f64::from(i) + 5.0).collect();
        let estimate = hodges_lehmann(&a, &b, 0.05).unwrap();
        assert_eq!(estimate.estimate, 5.0);
        // k = round(800 - 1.959964 * sqrt(1600 * 81 / 12)) = round(800 - 203.64) = 596.
        let mut differences: Vec<f64> = b.iter().flat_map(|y| a.iter().map(move |x| y - x)).collect();
        differences.sort_by(f64::total_cmp);
        assert_eq!(estimate.low, Some(differences[595]));
        assert_eq!(estimate.high, Some(differences[1600 - 596]));
    }

    #[test]
    fn welch_matches_scipy() {
        // scipy.stats.ttest_ind(a, b, equal_var=False): statistic, pvalue, df below.
        let a = [19.8, 20.4, 20.1, 20.9, 20.0, 19.7];
        let b = [24.1, 23.2, 25.0, 24.4];
        let test = welch(&a, &b, 0.05).unwrap();
        assert!(close(test.p, SCIPY_WELCH_P, 1e-6), "{}", test.p);
        assert!(close(test.degrees_of_freedom, SCIPY_WELCH_DF, 1e-9), "{}", test.degrees_of_freedom);
        assert!(close(test.low, SCIPY_WELCH_LOW, 1e-6) && close(test.high, SCIPY_WELCH_HIGH, 1e-6), "{test:?}");
        assert!(welch(&[1.0], &[1.0, 2.0], 0.05).is_none());
        let constant = welch(&[2.0, 2.0], &[2.0, 2.0], 0.05).unwrap();
        assert_eq!(constant.p, 1.0);
    }

    #[test]
    fn benjamini_hochberg_matches_the_definition() {
        // Sorted p: 0.01 0.02 0.03 0.5 with m = 4: 0.04 0.04 0.04 0.5, in the given order.
        let q = benjamini_hochberg(&[0.5, 0.01, 0.03, 0.02]);
        let expected = [0.5, 0.04, 0.04, 0.04];
        for (actual, expected) in q.iter().zip(expected) {
            assert!(close(*actual, expected, 1e-12), "{q:?}");
        }
        // Capped at 1, and monotone in p.
        let q = benjamini_hochberg(&[0.9, 0.8]);
        assert!(q.iter().all(|&v| v <= 1.0));
        assert!(benjamini_hochberg(&[]).is_empty());
    }

    #[test]
    fn a_change_counts_only_beyond_the_tolerance() {
        assert_eq!(classify(true, Some(0.06), Some(0.2), 0.05), Shift::Up);
        assert_eq!(classify(true, Some(0.04), Some(0.2), 0.05), Shift::Within);
        assert_eq!(classify(false, Some(0.5), Some(0.6), 0.05), Shift::Within);
        assert_eq!(classify(true, Some(-0.2), Some(-0.03), 0.02), Shift::Down);
        assert_eq!(classify(true, None, None, 0.0), Shift::Within);
        assert_eq!(classify(true, Some(0.001), Some(0.01), 0.0), Shift::Up);
    }

    const SAMPLE_X: [f64; 7] = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91];
    const SAMPLE_Y: [f64; 6] = [1.15, 0.88, 0.90, 0.74, 1.21, 1.64];
    // scipy 1.18: mannwhitneyu(method="exact" / "asymptotic"), ttest_ind(b, a, equal_var=False)
    // and its confidence_interval(0.95).
    const SCIPY_EXACT_4_5: f64 = 0.111_111_111_111_111_1;
    const SCIPY_XY_U: f64 = 27.0;
    const SCIPY_XY_EXACT: f64 = 0.445_221_445_221_445_2;
    const SCIPY_TIES_U: f64 = 364.5;
    const SCIPY_TIES_ASYMPTOTIC: f64 = 0.206_821_592_167_716;
    const SCIPY_WELCH_P: f64 = 0.000_393_351_355_480_688;
    const SCIPY_WELCH_DF: f64 = 4.405_712_054_571_131;
    const SCIPY_WELCH_LOW: f64 = 2.910_538_255_327_844;
    const SCIPY_WELCH_HIGH: f64 = 5.139_461_744_672_146;
}

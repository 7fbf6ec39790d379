//! Thresholds: assertions on results, such as the SLOs of `horde sweep`
//! (`p99<500ms`, `errors<1%`, `rps>=1000`).

use crate::summary::LatencyStats;
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A latency percentile (from the intended start), in microseconds.
    Percentile(f64),
    Mean,
    Max,
    /// KO / all, as a fraction.
    ErrorRate,
    /// OK requests per second.
    Throughput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

/// One assertion, e.g. `p99<500ms`: metric, comparison, and the bound in the metric's unit
/// (microseconds, a fraction, requests per second).
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub metric: Metric,
    pub comparison: Comparison,
    pub bound: f64,
    /// As the user wrote it.
    pub text: String,
}

/// What a threshold is checked against.
pub struct Observed<'a> {
    pub latency: &'a LatencyStats,
    pub error_rate: f64,
    pub throughput: f64,
}

impl Threshold {
    /// The value observed for this threshold's metric, in its unit; None when not computed.
    pub fn observe(&self, observed: &Observed<'_>) -> Option<f64> {
        Some(match self.metric {
            Metric::Percentile(p) => observed.latency.percentile(p)? as f64,
            Metric::Mean => observed.latency.mean_us,
            Metric::Max => observed.latency.max_us as f64,
            Metric::ErrorRate => observed.error_rate,
            Metric::Throughput => observed.throughput,
        })
    }

    pub fn holds(&self, observed: &Observed<'_>) -> bool {
        let Some(value) = self.observe(observed) else { return false };
        match self.comparison {
            Comparison::Less => value < self.bound,
            Comparison::LessOrEqual => value <= self.bound,
            Comparison::Greater => value > self.bound,
            Comparison::GreaterOrEqual => value >= self.bound,
        }
    }

    /// The percentile this threshold needs computed, if any.
    pub fn percentile(&self) -> Option<f64> {
        match self.metric {
            Metric::Percentile(p) => Some(p),
            _ => None,
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Threshold {
    type Err = String;

    /// `p99<500ms`, `p99.9<=1s`, `mean<200ms`, `max<2s`, `errors<1%`, `errors<0.01`,
    /// `rps>1000`; latency units `us`, `ms` (default), `s`.
    fn from_str(text: &str) -> Result<Threshold, String> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let position = compact
            .find(['<', '>'])
            .ok_or_else(|| format!("{text:?}: expected METRIC<VALUE or METRIC>VALUE, such as p99<500ms or errors<1%"))?;
        let (name, rest) = compact.split_at(position);
        let (comparison, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Comparison::LessOrEqual, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Comparison::GreaterOrEqual, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Comparison::Less, v)
        } else {
            (Comparison::Greater, &rest[1..])
        };
        let metric = match name.to_ascii_lowercase().as_str() {
            "mean" | "avg" => Metric::Mean,
            "max" => Metric::Max,
            "errors" | "error_rate" | "ko" => Metric::ErrorRate,
            "rps" | "throughput" => Metric::Throughput,
            other => match other.strip_prefix('p').and_then(|p| p.parse::<f64>().ok()) {
                Some(p) if p > 0.0 && p <= 100.0 => Metric::Percentile(p),
                _ => return Err(format!("{text:?}: unknown metric {name:?} (p50, p99, p99.9, mean, max, errors, rps)")),
            },
        };
        let number_end = value.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(value.len());
        let (number, unit) = value.split_at(number_end);
        let number: f64 = number.parse().map_err(|_| format!("{text:?}: {value:?} is not a number"))?;
        let bound = match metric {
            Metric::Percentile(_) | Metric::Mean | Metric::Max => match unit {
                "us" | "µs" => number,
                "" | "ms" => number * 1000.0,
                "s" => number * 1_000_000.0,
                _ => return Err(format!("{text:?}: unknown time unit {unit:?} (us, ms, s)")),
            },
            Metric::ErrorRate => match unit {
                "%" => number / 100.0,
                "" => number,
                _ => return Err(format!("{text:?}: an error rate is a fraction or a percentage")),
            },
            Metric::Throughput => match unit {
                "" | "/s" | "rps" => number,
                _ => return Err(format!("{text:?}: throughput is in requests per second")),
            },
        };
        Ok(Threshold { metric, comparison, bound, text: text.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::Percentile;

    #[test]
    fn thresholds_parse_with_their_units() {
        let t: Threshold = "p99<500ms".parse().unwrap();
        assert_eq!((t.metric, t.comparison, t.bound), (Metric::Percentile(99.0), Comparison::Less, 500_000.0));
        let t: Threshold = "p99.9 <= 1s".parse().unwrap();
        assert_eq!((t.metric, t.comparison, t.bound), (Metric::Percentile(99.9), Comparison::LessOrEqual, 1_000_000.0));
        let t: Threshold = "errors<1%".parse().unwrap();
        assert_eq!((t.metric, t.bound), (Metric::ErrorRate, 0.01));
        let t: Threshold = "rps>=1000".parse().unwrap();
        assert_eq!((t.metric, t.comparison, t.bound), (Metric::Throughput, Comparison::GreaterOrEqual, 1000.0));
        assert!("p99".parse::<Threshold>().unwrap_err().contains("expected METRIC<VALUE"));
        assert!("q99<5".parse::<Threshold>().unwrap_err().contains("unknown metric"));
        assert!("p99<5h".parse::<Threshold>().unwrap_err().contains("unknown time unit"));
    }

    #[test]
    fn thresholds_check_observations() {
        let latency = LatencyStats {
            count: 10,
            max_us: 900_000,
            mean_us: 100_000.0,
            percentiles: vec![Percentile { percentile: 99.0, value_us: 400_000 }],
            ..Default::default()
        };
        let observed = Observed { latency: &latency, error_rate: 0.02, throughput: 500.0 };
        let holds = |t: &str| t.parse::<Threshold>().unwrap().holds(&observed);
        assert!(holds("p99<500ms"));
        assert!(!holds("p99<400ms"));
        assert!(holds("p99<=400ms"));
        assert!(!holds("errors<1%"));
        assert!(holds("rps>100"));
        assert!(!holds("p50<1s"), "an uncomputed percentile does not hold");
    }
}

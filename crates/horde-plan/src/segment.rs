//! Execution segments, as k6 has them: a process's share of a run, so that several processes
//! (machines) run one plan between them, each its own part, and together exactly the run one
//! process would have made.
//!
//! ```
//! use horde_plan::{ExecutionSegment, ExecutionSegmentOptions, ExecutionSegmentSequence};
//! let segment: ExecutionSegment = "1/3:2/3".parse().unwrap();
//! assert_eq!(segment.to_string(), "1/3:2/3");
//! let sequence: ExecutionSegmentSequence = "0,1/3,2/3,1".parse().unwrap();
//! assert_eq!(sequence.to_string(), "0,1/3,2/3,1");
//! let options = ExecutionSegmentOptions {
//!     segment: "1/3:2/3".into(),
//!     sequence: Some("0,1/3,2/3,1".into()),
//!     resume: None,
//!     row_grants: None,
//!     request_log: None,
//! };
//! let segmentation = options.resolve().unwrap();
//! assert_eq!((segmentation.index, segmentation.weights()), (1, vec![1, 1, 1]));
//! ```
//!
//! A segment is `from:to`, a part of (0, 1]; a sequence is the points that cut (0, 1] into the
//! segments of every process (`0,1/3,2/3,1`). Values are fractions (`1/3`), decimals (`0.25`)
//! or percentages (`25%`); a lone value `v` is the segment `0:v`. The engine stripes every
//! index of the run (arrivals, user slots, feeder rows...) across the sequence's segments in
//! blocks of the lowest common denominator of their lengths, so the sequence is what every
//! process must agree on; a segment given without one belongs to `0,from,to,1`, as in k6.
//! This module parses and checks; the striping lives in the engine.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::PlanError;

/// The largest common denominator of a sequence's segment lengths: the engine keeps a table
/// of this many entries, and builds it in time proportional to it times the segments. Weights
/// are small integers and machine counts are thousands at most; a larger one is a decimal
/// typed with too many digits.
pub const MAX_SEGMENT_DENOMINATOR: u64 = 100_000;

/// `options.execution_segment`: this process's share of the run (`--execution-segment`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExecutionSegmentOptions {
    /// This process's segment, `from:to` (k6's syntax: `1/3:2/3`, `0.5:1`, `25%:50%`; a lone
    /// value `v` is `0:v`).
    pub segment: String,
    /// Every process's segments, as the points that cut (0, 1] (`0,1/3,2/3,1`); every process
    /// of the run must be given the same. Default: `0,from,to,1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<String>,
    /// A share that takes over from a lost one (`--on-worker-loss replace`): it runs the same
    /// segment, from a later point of the run's schedule. Set by a coordinator, not by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<ShareResume>,
    /// Bounds on the rows the share takes of each queue and shuffle feeder, which its
    /// coordinator raises as the run goes (`--on-worker-loss replace`): the coordinator then
    /// knows every row a lost share could have used, and its replacement starts after them.
    /// Set by a coordinator, not by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_grants: Option<RowGrants>,
    /// The run keeps a request log (`--request-log`): the share sends its records, in this
    /// format, to its coordinator with its intervals, and the coordinator writes them all to
    /// the one file. Set by a coordinator, not by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_log: Option<ShareRequestLog>,
}

/// The format of the request log a share's records go to (the file's, on the coordinator).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ShareRequestLog {
    /// A JSON object per request.
    Jsonl,
    /// JMeter's CSV results.
    Jtl,
}

/// Where a share's takes of each feeder start, and how many it may make before its
/// coordinator grants more. Counts are the share's own takes (its c-th take is the c-th row
/// of its stripe), one per feeder of the plan, in the plan's order; feeders other than queue
/// and shuffle ignore theirs.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RowGrants {
    /// The takes earlier attempts of the share may have made: this one starts after them
    /// (all 0 for the first attempt).
    pub from: Vec<u64>,
    /// Takes granted past `from` before the coordinator's first grant arrives.
    #[schemars(range(min = 1))]
    pub initial: u64,
    /// The same for the run-wide counters (`${__counter(name)}` and round-robin switches, in
    /// the order the plan first uses them): where each one's takes start. Empty: the counters
    /// are not granted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters_from: Vec<u64>,
}

/// Where a replacement share takes over its segment. The schedule stays absolute: what was due
/// before `after_ms` is not sent late (no burst), it is load the run did not deliver.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ShareResume {
    /// Which run of the segment this is: 1 for the first replacement (the share it replaces
    /// ran attempt 0). The coordinator counts only the intervals of the current attempt.
    #[schemars(range(min = 1))]
    pub attempt: u32,
    /// From when, in milliseconds after the run's start, the share runs its part (later if
    /// it is ready only after it): arrivals spread in time and throttle slots due earlier are
    /// skipped; closed-model users and users made at once start then.
    pub after_ms: u64,
    /// Requests of the segment's budget (`max_requests`) that earlier attempts reported sent.
    #[serde(default)]
    pub requests_sent: u64,
}

/// A segment in its sequence: what the engine stripes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segmentation {
    pub sequence: ExecutionSegmentSequence,
    /// Which of the sequence's segments is this process's.
    pub index: usize,
    /// The lowest common denominator of the segments' lengths.
    pub denominator: u64,
}

impl Segmentation {
    /// Each segment's length in units of 1/`denominator`: they add up to `denominator`.
    pub fn weights(&self) -> Vec<u64> {
        self.sequence
            .points
            .windows(2)
            .map(|pair| {
                let length = pair[1].minus(pair[0]);
                length.numerator * (self.denominator / length.denominator)
            })
            .collect()
    }
}

impl ExecutionSegmentOptions {
    /// The segment and its sequence, checked: the segment is one of the sequence's, and the
    /// sequence stripes in blocks of at most [`MAX_SEGMENT_DENOMINATOR`]. Errors carry their
    /// paths under `options.execution_segment`.
    pub fn resolve(&self) -> Result<Segmentation, Vec<PlanError>> {
        const PATH: &str = "options.execution_segment";
        let segment = self.segment.parse::<ExecutionSegment>();
        let sequence = self.sequence.as_deref().map(str::parse::<ExecutionSegmentSequence>).transpose();
        let mut errors = Vec::new();
        if let Err(message) = &segment {
            errors.push(PlanError::new(format!("{PATH}.segment"), message.clone()));
        }
        if let Err(message) = &sequence {
            errors.push(PlanError::new(format!("{PATH}.sequence"), message.clone()));
        }
        let (Ok(segment), Ok(sequence)) = (segment, sequence) else { return Err(errors) };
        let given = sequence.is_some();
        let sequence = sequence.unwrap_or_else(|| ExecutionSegmentSequence::around(segment));
        let Some(index) = sequence.position(segment) else {
            return Err(vec![PlanError::new(
                format!("{PATH}.segment"),
                format!(
                    "{segment} is not one of the sequence's segments ({}): each process runs one of them",
                    sequence.segments().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
                ),
            )]);
        };
        match sequence.denominator() {
            Some(denominator) => Ok(Segmentation { sequence, index, denominator }),
            None => Err(vec![PlanError::new(
                format!("{PATH}.{}", if given { "sequence" } else { "segment" }),
                format!(
                    "the segments' lengths have no common denominator up to {MAX_SEGMENT_DENOMINATOR}, the \
                     largest block horde stripes a run in: use simpler fractions (1/3 rather than 0.3333)"
                ),
            )]),
        }
    }
}

/// A rational number in [0, 1], reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fraction {
    numerator: u64,
    denominator: u64,
}

impl Fraction {
    const ZERO: Fraction = Fraction { numerator: 0, denominator: 1 };
    const ONE: Fraction = Fraction { numerator: 1, denominator: 1 };

    fn new(numerator: u128, denominator: u128) -> Option<Fraction> {
        if denominator == 0 {
            return None;
        }
        let divisor = gcd(numerator, denominator);
        let (numerator, denominator) = (numerator / divisor, denominator / divisor);
        Some(Fraction { numerator: u64::try_from(numerator).ok()?, denominator: u64::try_from(denominator).ok()? })
    }

    /// `self - other`, for `other <= self`.
    fn minus(self, other: Fraction) -> Fraction {
        let (a, b) = (u128::from(self.numerator), u128::from(self.denominator));
        let (c, d) = (u128::from(other.numerator), u128::from(other.denominator));
        // Both denominators are at most the cap squared once checked; u128 holds the products.
        Fraction::new(a * d - c * b, b * d).expect("the difference of two fractions of [0, 1] fits")
    }
}

impl Ord for Fraction {
    fn cmp(&self, other: &Fraction) -> Ordering {
        (u128::from(self.numerator) * u128::from(other.denominator))
            .cmp(&(u128::from(other.numerator) * u128::from(self.denominator)))
    }
}

impl PartialOrd for Fraction {
    fn partial_cmp(&self, other: &Fraction) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Fraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.denominator {
            1 => write!(f, "{}", self.numerator),
            denominator => write!(f, "{}/{denominator}", self.numerator),
        }
    }
}

impl FromStr for Fraction {
    type Err = String;

    /// `1/3`, `0.25`, `25%` or `12.5%`, between 0 and 1.
    fn from_str(text: &str) -> Result<Fraction, String> {
        let not_a_value = || format!("{text:?} is not a fraction, decimal or percentage (1/3, 0.25, 25%)");
        let trimmed = text.trim();
        let (number, per) = match trimmed.strip_suffix('%') {
            Some(number) => (number, 100),
            None => (trimmed, 1),
        };
        let value = match number.split_once('/') {
            Some((numerator, denominator)) if per == 1 => {
                let (numerator, denominator) = (digits(numerator), digits(denominator));
                match (numerator, denominator) {
                    (Some(n), Some(d)) => Fraction::new(n, d).ok_or_else(|| match d {
                        0 => format!("{text:?}: a fraction's denominator cannot be 0"),
                        _ => not_a_value(),
                    })?,
                    _ => return Err(not_a_value()),
                }
            }
            Some(_) => return Err(not_a_value()),
            None => {
                let (whole, decimals) = number.split_once('.').unwrap_or((number, ""));
                // Eighteen decimals are more than a share of a run needs, and fit in u64.
                if decimals.len() > 18 || (whole.is_empty() && decimals.is_empty()) {
                    return Err(not_a_value());
                }
                let whole = if whole.is_empty() { Some(0) } else { digits(whole) };
                let decimals_value = if decimals.is_empty() { Some(0) } else { digits(decimals) };
                let (Some(whole), Some(decimals_value)) = (whole, decimals_value) else { return Err(not_a_value()) };
                let scale = 10u128.pow(decimals.len() as u32);
                let numerator = whole.checked_mul(scale).and_then(|w| w.checked_add(decimals_value));
                numerator.and_then(|n| Fraction::new(n, scale * per)).ok_or_else(not_a_value)?
            }
        };
        if value > Fraction::ONE {
            return Err(format!("{text:?} is more than 1 (the whole run)"));
        }
        Ok(value)
    }
}

/// A number of decimal digits only (no sign, no space), as u128; None otherwise or when it
/// does not fit.
fn digits(text: &str) -> Option<u128> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) || text.len() > 30 {
        return None;
    }
    text.parse().ok()
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// A part (from, to] of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutionSegment {
    pub from: Fraction,
    pub to: Fraction,
}

impl fmt::Display for ExecutionSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.from, self.to)
    }
}

impl FromStr for ExecutionSegment {
    type Err = String;

    /// `from:to`, or a lone `to` for `0:to`.
    fn from_str(text: &str) -> Result<ExecutionSegment, String> {
        let (from, to) = match text.split_once(':') {
            Some((from, to)) => (from.parse::<Fraction>()?, to.parse::<Fraction>()?),
            None => (Fraction::ZERO, text.parse::<Fraction>()?),
        };
        if from >= to {
            return Err(format!("{text:?}: a segment's start ({from}) must be below its end ({to})"));
        }
        Ok(ExecutionSegment { from, to })
    }
}

/// The points that cut (0, 1] into every process's segment, from 0 to 1, increasing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionSegmentSequence {
    points: Vec<Fraction>,
}

impl ExecutionSegmentSequence {
    /// The sequence k6 assumes for a segment given alone: `0,from,to,1`.
    fn around(segment: ExecutionSegment) -> ExecutionSegmentSequence {
        let mut points = vec![Fraction::ZERO, segment.from, segment.to, Fraction::ONE];
        points.dedup();
        ExecutionSegmentSequence { points }
    }

    pub fn segments(&self) -> impl Iterator<Item = ExecutionSegment> + '_ {
        self.points.windows(2).map(|pair| ExecutionSegment { from: pair[0], to: pair[1] })
    }

    fn position(&self, segment: ExecutionSegment) -> Option<usize> {
        self.segments().position(|s| s == segment)
    }

    /// The lowest common denominator of the points (which is that of the lengths: each is
    /// a sum of lengths, and each length a difference of points), if it is at most
    /// [`MAX_SEGMENT_DENOMINATOR`].
    fn denominator(&self) -> Option<u64> {
        let mut lcm: u64 = 1;
        for point in &self.points {
            let d = point.denominator;
            lcm = lcm.checked_mul(d / gcd(u128::from(lcm), u128::from(d)) as u64)?;
            if lcm > MAX_SEGMENT_DENOMINATOR {
                return None;
            }
        }
        Some(lcm)
    }
}

impl fmt::Display for ExecutionSegmentSequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let points: Vec<String> = self.points.iter().map(Fraction::to_string).collect();
        write!(f, "{}", points.join(","))
    }
}

impl FromStr for ExecutionSegmentSequence {
    type Err = String;

    /// Comma-separated increasing points; 0 and 1 are added when missing, as k6 does.
    fn from_str(text: &str) -> Result<ExecutionSegmentSequence, String> {
        let mut points = Vec::new();
        for part in text.split(',') {
            let point = part.parse::<Fraction>()?;
            if let Some(&last) = points.last() {
                match point.cmp(&last) {
                    Ordering::Equal => {
                        return Err(format!("{text:?}: {point} twice makes an empty segment"));
                    }
                    Ordering::Less => {
                        return Err(format!(
                            "{text:?}: {point} after {last}: the points must increase, or segments overlap"
                        ));
                    }
                    Ordering::Greater => {}
                }
            }
            points.push(point);
        }
        if points.first() != Some(&Fraction::ZERO) {
            points.insert(0, Fraction::ZERO);
        }
        if points.last() != Some(&Fraction::ONE) {
            points.push(Fraction::ONE);
        }
        Ok(ExecutionSegmentSequence { points })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(segment: &str, sequence: Option<&str>) -> Result<Segmentation, Vec<String>> {
        let options = ExecutionSegmentOptions {
            segment: segment.into(),
            sequence: sequence.map(Into::into),
            resume: None,
            row_grants: None,
            request_log: None,
        };
        options.resolve().map_err(|errors| errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn values_are_fractions_decimals_or_percentages() {
        let value = |text: &str| text.parse::<Fraction>().map(|f| f.to_string());
        assert_eq!(value("1/3"), Ok("1/3".into()));
        assert_eq!(value("2/6"), Ok("1/3".into()));
        assert_eq!(value("0.25"), Ok("1/4".into()));
        assert_eq!(value(".5"), Ok("1/2".into()));
        assert_eq!(value("25%"), Ok("1/4".into()));
        assert_eq!(value("12.5%"), Ok("1/8".into()));
        assert_eq!(value("1"), Ok("1".into()));
        assert_eq!(value("0"), Ok("0".into()));
        for bad in ["", "a", "-1/3", "1/0", "1/3%", "1.5.2", "1/", "+0.5", "0x1"] {
            assert!(value(bad).is_err(), "{bad:?}");
        }
        assert!(value("3/2").unwrap_err().contains("more than 1"));
        assert!(value("1/0").unwrap_err().contains("denominator cannot be 0"));
    }

    #[test]
    fn segments_read_as_k6_writes_them() {
        let segment = |text: &str| text.parse::<ExecutionSegment>().map(|s| s.to_string());
        assert_eq!(segment("1/3:2/3"), Ok("1/3:2/3".into()));
        assert_eq!(segment("50%:0.75"), Ok("1/2:3/4".into()));
        assert_eq!(segment("1/4"), Ok("0:1/4".into()));
        assert!(segment("1/2:1/2").unwrap_err().contains("must be below its end"));
        assert!(segment("2/3:1/3").unwrap_err().contains("must be below its end"));
    }

    #[test]
    fn a_segment_resolves_in_its_sequence() {
        let thirds = resolve("1/3:2/3", Some("0,1/3,2/3,1")).unwrap();
        assert_eq!((thirds.index, thirds.denominator, thirds.weights()), (1, 3, vec![1, 1, 1]));
        let quarters = resolve("1/4:1/2", Some("0,1/4,1/2,1")).unwrap();
        assert_eq!((quarters.index, quarters.denominator, quarters.weights()), (1, 4, vec![1, 1, 2]));
        // 0 and 1 are implied, as in k6.
        let implied = resolve("1/4:1/2", Some("1/4,1/2")).unwrap();
        assert_eq!(implied.sequence.to_string(), "0,1/4,1/2,1");
        // A segment alone belongs to 0,from,to,1.
        let alone = resolve("1/2:1", None).unwrap();
        assert_eq!((alone.sequence.to_string(), alone.index), ("0,1/2,1".into(), 1));
        let whole = resolve("0:1", None).unwrap();
        assert_eq!((whole.weights(), whole.index), (vec![1], 0));
    }

    #[test]
    fn bad_segments_and_sequences_are_named_with_their_paths() {
        let errors = resolve("1/3:x", Some("0,1/2,1/3,1")).unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("options.execution_segment.segment: \"x\" is not a fraction"), "{errors:?}");
        assert!(errors[1].starts_with("options.execution_segment.sequence:"), "{errors:?}");
        assert!(errors[1].contains("1/3 after 1/2: the points must increase, or segments overlap"), "{errors:?}");
        let errors = resolve("1/4:3/4", Some("0,1/3,2/3,1")).unwrap_err();
        assert_eq!(
            errors,
            ["options.execution_segment.segment: 1/4:3/4 is not one of the sequence's segments (0:1/3, 1/3:2/3, \
              2/3:1): each process runs one of them"]
        );
        assert!(resolve("0:1/2", Some("0,1/2,1/2,1")).unwrap_err()[0].contains("1/2 twice makes an empty segment"));
        let errors = resolve("0:1/3", Some("0,1/3,0.33334,1")).unwrap_err();
        assert!(errors[0].starts_with("options.execution_segment.sequence: the segments' lengths have no common"));
        let errors = resolve("0:0.123457", None).unwrap_err();
        assert!(errors[0].starts_with("options.execution_segment.segment: the segments' lengths have no common"));
        // Up to the cap is fine.
        assert_eq!(resolve("0:0.00001", None).unwrap().denominator, MAX_SEGMENT_DENOMINATOR);
    }
}

//! The thresholds' grammar: assertions on a run's results that gate CI (Gatling's assertions,
//! k6's thresholds) and the SLOs of `horde sweep`. One grammar for the CLI (`--threshold`), plan
//! files (`thresholds`) and the Python DSL (`setup(...).assertions(...)`, which writes it):
//!
//! ```text
//! [scope:] metric op value unit [over WINDOW] [abort [after DELAY]]
//! ```
//!
//! `p99<500ms`, `"login": p95<=300ms`, `each: errors<1%`, `rps>=1000`, `connect.p99<5ms`,
//! `p99<2s over 30s abort`. Parsing knows nothing of the plan's names; whether a named scope
//! exists is decided where the plan's rows are known (lowering).
//!
//! ```
//! use horde_plan::{ThresholdSpec, ThresholdScope, ThresholdMetric, LatencyStat, LatencySource};
//! let t: ThresholdSpec = "\"login\": p95 <= 300ms over 30s abort".parse().unwrap();
//! assert_eq!(t.scope, ThresholdScope::Named("login".into()));
//! assert_eq!(t.metric, ThresholdMetric::Latency(LatencySource::Corrected, LatencyStat::Percentile(95.0)));
//! assert_eq!((t.bound, t.window_ms, t.abort_after_ms), (300_000.0, Some(30_000), Some(0)));
//! ```

use std::fmt;
use std::str::FromStr;

/// What a threshold judges.
#[derive(Debug, Clone, PartialEq)]
pub enum ThresholdScope {
    /// All requests together (Gatling's `global`).
    Global,
    /// Every request row, each on its own (Gatling's `forAll`): fails if any row fails.
    Each,
    /// One request row or group, by its name in the results.
    Named(String),
}

/// Which latency a latency metric reads, of which responses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencySource {
    /// From each request's intended start: what a user waited, coordinated omission included.
    /// Every exchange, OK and KO; with no OK response at all there is nothing to judge.
    Corrected,
    /// As `Corrected`, of the OK responses only (`ok.p95`, k6's `{expected_response:true}`).
    Ok,
    /// From the moment the request was actually sent.
    Uncorrected,
    /// One phase of the exchange.
    Phase(Phase),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Dns,
    Connect,
    Tls,
    Send,
    Wait,
    Receive,
}

impl Phase {
    pub const ALL: [Phase; 6] = [Phase::Dns, Phase::Connect, Phase::Tls, Phase::Send, Phase::Wait, Phase::Receive];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Dns => "dns",
            Phase::Connect => "connect",
            Phase::Tls => "tls",
            Phase::Send => "send",
            Phase::Wait => "wait",
            Phase::Receive => "receive",
        }
    }
}

/// A statistic of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyStat {
    /// Any percentile, computed from the HDR histogram: not only the configured ones.
    Percentile(f64),
    Mean,
    Min,
    Max,
    Stddev,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThresholdMetric {
    /// In microseconds.
    Latency(LatencySource, LatencyStat),
    /// KO / all, a fraction (written as a percentage).
    ErrorRate,
    /// KO requests.
    ErrorCount,
    /// All requests per second (OK and KO) over the measured time.
    Throughput,
    /// All requests.
    Count,
    /// Starts later than their intended time, as a fraction of scheduled starts (global only).
    LateStarts,
}

/// What a metric is measured in, which decides the units its bound may be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricUnit {
    Microseconds,
    Fraction,
    PerSecond,
    Count,
}

impl ThresholdMetric {
    pub fn unit(self) -> MetricUnit {
        match self {
            ThresholdMetric::Latency(..) => MetricUnit::Microseconds,
            ThresholdMetric::ErrorRate | ThresholdMetric::LateStarts => MetricUnit::Fraction,
            ThresholdMetric::Throughput => MetricUnit::PerSecond,
            ThresholdMetric::ErrorCount | ThresholdMetric::Count => MetricUnit::Count,
        }
    }

    /// Which responses a latency metric judges, as reports say it; None for counts and rates,
    /// which count every request.
    pub fn population(self) -> Option<&'static str> {
        match self {
            ThresholdMetric::Latency(LatencySource::Ok, _) => Some("OK responses"),
            ThresholdMetric::Latency(LatencySource::Corrected | LatencySource::Uncorrected, _) => {
                Some("OK and KO responses")
            }
            ThresholdMetric::Latency(LatencySource::Phase(_), _) => Some("every exchange with the phase"),
            _ => None,
        }
    }

    /// Whether the metric needs at least one OK response to say anything: a latency of OK and
    /// KO responses together judged on failures alone (a refused TLS handshake in 3 ms) would
    /// pass a gate the server never met.
    pub fn needs_an_ok_response(self) -> bool {
        matches!(
            self,
            ThresholdMetric::Latency(LatencySource::Corrected | LatencySource::Uncorrected | LatencySource::Ok, _)
        )
    }

    /// The metric as the grammar spells it: `p99`, `connect.p99`, `uncorrected.mean`, `errors`.
    pub fn name(self) -> String {
        match self {
            ThresholdMetric::Latency(source, stat) => {
                let stat = match stat {
                    LatencyStat::Percentile(p) => format!("p{}", trim_number(p)),
                    LatencyStat::Mean => "mean".into(),
                    LatencyStat::Min => "min".into(),
                    LatencyStat::Max => "max".into(),
                    LatencyStat::Stddev => "stddev".into(),
                };
                match source {
                    LatencySource::Corrected => stat,
                    LatencySource::Ok => format!("ok.{stat}"),
                    LatencySource::Uncorrected => format!("uncorrected.{stat}"),
                    LatencySource::Phase(phase) => format!("{}.{stat}", phase.name()),
                }
            }
            ThresholdMetric::ErrorRate => "errors".into(),
            ThresholdMetric::ErrorCount => "errors.count".into(),
            ThresholdMetric::Throughput => "rps".into(),
            ThresholdMetric::Count => "count".into(),
            ThresholdMetric::LateStarts => "late_starts".into(),
        }
    }

    /// A value of this metric in the unit a reader expects: `412.3 ms`, `0.52 %`, `980.1/s`.
    pub fn format_value(self, value: f64) -> String {
        match self.unit() {
            MetricUnit::Microseconds => format_time_us(value),
            MetricUnit::Fraction => format!("{} %", trim_number(round_to(value * 100.0, 3))),
            MetricUnit::PerSecond => format!("{}/s", trim_number(round_to(value, 1))),
            MetricUnit::Count => format!("{}", value.round() as i64),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    Equal,
    NotEqual,
}

impl Comparison {
    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::Less => "<",
            Comparison::LessOrEqual => "<=",
            Comparison::Greater => ">",
            Comparison::GreaterOrEqual => ">=",
            Comparison::Equal => "==",
            Comparison::NotEqual => "!=",
        }
    }

    pub fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Comparison::Less => value < bound,
            Comparison::LessOrEqual => value <= bound,
            Comparison::Greater => value > bound,
            Comparison::GreaterOrEqual => value >= bound,
            Comparison::Equal => value == bound,
            Comparison::NotEqual => value != bound,
        }
    }

    /// Of two observations, the one further on the failing side: the one a report shows for
    /// a threshold judged many times (each row, each window).
    pub fn worse(self, a: f64, b: f64) -> f64 {
        match self {
            Comparison::Less | Comparison::LessOrEqual => a.max(b),
            Comparison::Greater | Comparison::GreaterOrEqual => a.min(b),
            // Any failing value will do; keep the first.
            Comparison::Equal | Comparison::NotEqual => a,
        }
    }
}

/// One threshold, parsed. `bound` is in the metric's unit (microseconds, a fraction, per
/// second, a count).
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdSpec {
    /// As written.
    pub text: String,
    pub scope: ThresholdScope,
    pub metric: ThresholdMetric,
    pub comparison: Comparison,
    pub bound: f64,
    /// `over W`: judged on the last W of the run after every interval, not on the whole run.
    pub window_ms: Option<u64>,
    /// `abort [after D]`: a failure stops the run (not before D into it).
    pub abort_after_ms: Option<u64>,
}

impl ThresholdSpec {
    /// The scope as a report names it: `global`, `each`, or the row's name.
    pub fn scope_name(&self) -> &str {
        match &self.scope {
            ThresholdScope::Global => "global",
            ThresholdScope::Each => "each",
            ThresholdScope::Named(name) => name,
        }
    }

    /// The bound in the metric's display unit: `500 ms`, `1 %`.
    pub fn bound_text(&self) -> String {
        self.metric.format_value(self.bound)
    }
}

impl fmt::Display for ThresholdSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

const GRAMMAR: &str = "[scope:] metric op value unit [over WINDOW] [abort [after DELAY]], such as p99<500ms, \
                       \"login\": p95<=300ms, each: errors<1%, rps>=1000, p99<2s over 30s abort";

const METRICS: &str = "pNN (p50, p99, p99.9), mean, min, max, stddev, errors (%), errors.count, rps, count, \
                       late_starts (%); latencies also of OK responses only as ok.pNN, as uncorrected.pNN and per \
                       phase: dns, connect, tls, send, wait, receive (connect.p99)";

impl FromStr for ThresholdSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<ThresholdSpec, String> {
        let whole = text.trim();
        let problem = |message: String| format!("threshold {whole:?}: {message}");
        if whole.is_empty() {
            return Err(format!("an empty threshold: expected {GRAMMAR}"));
        }
        let (scope, rest) = split_scope(whole).map_err(problem)?;
        let (metric_text, comparison, after_op) = split_comparison(rest)
            .ok_or_else(|| problem(format!("no comparison (<, <=, >, >=, ==, !=): expected {GRAMMAR}")))?;
        let metric = parse_metric(metric_text).map_err(problem)?;
        let mut words = after_op.split_whitespace().peekable();
        // The value and its unit, written together (`500ms`) or apart (`500 ms`).
        let mut value = words.next().ok_or_else(|| problem("no value after the comparison".into()))?.to_string();
        if value.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '-') {
            if let Some(unit) = words.peek().filter(|w| !matches!(**w, "over" | "abort")) {
                value.push_str(unit);
                words.next();
            }
        }
        let bound = parse_bound(metric, &value).map_err(problem)?;
        let mut window_ms = None;
        let mut abort_after_ms = None;
        while let Some(word) = words.next() {
            match word {
                "over" if window_ms.is_none() && abort_after_ms.is_none() => {
                    let duration =
                        words.next().ok_or_else(|| problem("`over` needs a window, such as over 30s".into()))?;
                    window_ms =
                        Some(parse_duration_ms(duration).map_err(|e| problem(format!("over {duration}: {e}")))?);
                }
                "abort" if abort_after_ms.is_none() => {
                    abort_after_ms = Some(0);
                    if words.peek() == Some(&"after") {
                        words.next();
                        let duration = words
                            .next()
                            .ok_or_else(|| problem("`abort after` needs a delay, such as abort after 10s".into()))?;
                        abort_after_ms =
                            Some(parse_duration_ms(duration).map_err(|e| problem(format!("after {duration}: {e}")))?);
                    }
                }
                other => return Err(problem(format!("unexpected {other:?}: expected {GRAMMAR}"))),
            }
        }
        if metric == ThresholdMetric::LateStarts && scope != ThresholdScope::Global {
            return Err(problem("late_starts is measured for the whole run: it takes no scope".into()));
        }
        if window_ms.is_some() && metric == ThresholdMetric::LateStarts {
            return Err(problem("late_starts is judged over the whole run: it takes no window".into()));
        }
        Ok(ThresholdSpec { text: whole.to_string(), scope, metric, comparison, bound, window_ms, abort_after_ms })
    }
}

/// `"login": rest`, `each: rest`, `login page: rest` or just `rest`. A name with a colon is
/// written quoted.
fn split_scope(text: &str) -> Result<(ThresholdScope, &str), String> {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut name = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, escaped)) => name.push(escaped),
                    None => break,
                },
                '"' => {
                    let rest = quoted[i + 1..].trim_start();
                    let rest =
                        rest.strip_prefix(':').ok_or_else(|| format!("expected a colon after the scope \"{name}\""))?;
                    if name.is_empty() {
                        return Err("an empty scope name".into());
                    }
                    return Ok((ThresholdScope::Named(name), rest.trim()));
                }
                c => name.push(c),
            }
        }
        return Err("the quoted scope name has no closing quote".into());
    }
    let operator = text.find(['<', '>', '=', '!']).unwrap_or(text.len());
    match text[..operator].find(':') {
        Some(colon) => {
            let name = text[..colon].trim();
            let rest = text[colon + 1..].trim();
            let scope = match name {
                "" => return Err("an empty scope before the colon".into()),
                "global" => ThresholdScope::Global,
                "each" => ThresholdScope::Each,
                name => ThresholdScope::Named(name.to_string()),
            };
            Ok((scope, rest))
        }
        None => Ok((ThresholdScope::Global, text)),
    }
}

fn split_comparison(text: &str) -> Option<(&str, Comparison, &str)> {
    let position = text.find(['<', '>', '=', '!'])?;
    let (metric, rest) = text.split_at(position);
    let (comparison, length) = if rest.starts_with("<=") {
        (Comparison::LessOrEqual, 2)
    } else if rest.starts_with(">=") {
        (Comparison::GreaterOrEqual, 2)
    } else if rest.starts_with("==") {
        (Comparison::Equal, 2)
    } else if rest.starts_with("!=") {
        (Comparison::NotEqual, 2)
    } else if rest.starts_with('<') {
        (Comparison::Less, 1)
    } else if rest.starts_with('>') {
        (Comparison::Greater, 1)
    } else {
        return None;
    };
    Some((metric.trim(), comparison, rest[length..].trim()))
}

fn parse_metric(text: &str) -> Result<ThresholdMetric, String> {
    let name = text.to_ascii_lowercase();
    let unknown = || format!("unknown metric {text:?}; known: {METRICS}");
    Ok(match name.as_str() {
        "" => return Err(format!("no metric before the comparison; known: {METRICS}")),
        "errors" | "error_rate" | "errors.rate" | "errors.percent" => ThresholdMetric::ErrorRate,
        "errors.count" => ThresholdMetric::ErrorCount,
        "rps" | "throughput" => ThresholdMetric::Throughput,
        "count" | "requests" => ThresholdMetric::Count,
        "late_starts" => ThresholdMetric::LateStarts,
        _ => {
            // `p99.9` has a dot too: only a source's name before it makes a prefix.
            let (source, stat) = match name.split_once('.') {
                Some(("uncorrected", stat)) => (LatencySource::Uncorrected, stat),
                Some(("ok", stat)) => (LatencySource::Ok, stat),
                Some((prefix, stat)) => match Phase::ALL.into_iter().find(|p| p.name() == prefix) {
                    Some(phase) => (LatencySource::Phase(phase), stat),
                    None => (LatencySource::Corrected, name.as_str()),
                },
                None => (LatencySource::Corrected, name.as_str()),
            };
            ThresholdMetric::Latency(source, parse_latency_stat(stat).ok_or_else(unknown)?)
        }
    })
}

fn parse_latency_stat(text: &str) -> Option<LatencyStat> {
    Some(match text {
        "mean" | "avg" => LatencyStat::Mean,
        "min" => LatencyStat::Min,
        "max" => LatencyStat::Max,
        "stddev" | "std" => LatencyStat::Stddev,
        "median" => LatencyStat::Percentile(50.0),
        _ => match text.strip_prefix('p')?.parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => LatencyStat::Percentile(p),
            _ => return None,
        },
    })
}

/// The bound in the metric's unit. Times and error rates need their unit: `p99<500` could be
/// microseconds or milliseconds, `errors<1` a count or a percentage.
fn parse_bound(metric: ThresholdMetric, value: &str) -> Result<f64, String> {
    let split = value.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).unwrap_or(value.len());
    let (number_text, unit) = value.split_at(split);
    let number: f64 = number_text
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite())
        .ok_or_else(|| format!("{value:?} is not a number with a unit"))?;
    if number < 0.0 {
        return Err(format!("{value:?}: a bound is not negative"));
    }
    let metric_name = metric.name();
    match metric.unit() {
        MetricUnit::Microseconds => {
            let factor = match unit {
                "us" | "µs" => 1.0,
                "ms" => 1000.0,
                "s" => 1_000_000.0,
                "" => {
                    return Err(format!(
                        "{metric_name} is a time: write its unit, such as {number}ms, {number}us or {number}s"
                    ))
                }
                other => return Err(format!("unknown time unit {other:?} (us, ms, s)")),
            };
            Ok(number * factor)
        }
        MetricUnit::Fraction => match unit {
            "%" if number <= 100.0 => Ok(number / 100.0),
            "%" => Err(format!("{value:?}: a percentage is at most 100")),
            "" => Err(format!("{metric_name} is a percentage: write {number}%")),
            other => Err(format!("{metric_name} is a percentage, not {other:?}: write {number}%")),
        },
        MetricUnit::PerSecond => match unit {
            "" | "/s" | "rps" => Ok(number),
            other => Err(format!("{metric_name} is per second, not {other:?}: write {number} or {number}/s")),
        },
        MetricUnit::Count => match unit {
            "" if number.fract() == 0.0 => Ok(number),
            "" => Err(format!("{metric_name} is a count: a whole number, not {number}")),
            other => Err(format!("{metric_name} is a count, with no unit ({other:?})")),
        },
    }
}

/// `30s`, `500ms`, `2m`, `1h`.
fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| "not a duration (such as 30s, 500ms, 2m)".to_string())?;
    let factor = match unit {
        "ms" => 1.0,
        "s" => 1000.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        "" => return Err("a duration needs its unit (ms, s, m, h)".into()),
        other => return Err(format!("unknown unit {other:?} (ms, s, m, h)")),
    };
    let ms = number * factor;
    if ms > crate::MAX_DURATION_MS as f64 {
        return Err("longer than 365 days".into());
    }
    Ok(ms.round() as u64)
}

fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// `99`, `99.9`: no trailing zeros.
fn trim_number(value: f64) -> String {
    let text = format!("{value}");
    text.strip_suffix(".0").map(str::to_string).unwrap_or(text)
}

/// A time in microseconds in the unit that reads best: `850 us`, `412.35 ms`, `2.5 s`. Rounded
/// as the console's tables round (`{:.2}`), so the same value reads the same everywhere.
fn format_time_us(us: f64) -> String {
    let (value, unit) = if us < 1000.0 {
        (format!("{us:.1}"), "us")
    } else if us < 1_000_000.0 {
        (format!("{:.2}", us / 1000.0), "ms")
    } else {
        (format!("{:.3}", us / 1_000_000.0), "s")
    };
    format!("{} {unit}", value.trim_end_matches('0').trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ThresholdSpec {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn error(text: &str) -> String {
        text.parse::<ThresholdSpec>().unwrap_err()
    }

    #[test]
    fn the_issue_examples_parse() {
        let t = parse("p99<500ms");
        assert_eq!(t.scope, ThresholdScope::Global);
        assert_eq!(t.metric, ThresholdMetric::Latency(LatencySource::Corrected, LatencyStat::Percentile(99.0)));
        assert_eq!((t.comparison, t.bound, t.window_ms, t.abort_after_ms), (Comparison::Less, 500_000.0, None, None));
        let t = parse("\"login\": p95<=300ms");
        assert_eq!(
            (t.scope, t.comparison, t.bound),
            (ThresholdScope::Named("login".into()), Comparison::LessOrEqual, 300_000.0)
        );
        let t = parse("each: errors<1%");
        assert_eq!((t.scope, t.metric, t.bound), (ThresholdScope::Each, ThresholdMetric::ErrorRate, 0.01));
        let t = parse("rps>=1000");
        assert_eq!(
            (t.metric, t.comparison, t.bound),
            (ThresholdMetric::Throughput, Comparison::GreaterOrEqual, 1000.0)
        );
        let t = parse("connect.p99<5ms");
        assert_eq!(
            t.metric,
            ThresholdMetric::Latency(LatencySource::Phase(Phase::Connect), LatencyStat::Percentile(99.0))
        );
        let t = parse("p99<2s over 30s abort");
        assert_eq!((t.bound, t.window_ms, t.abort_after_ms), (2_000_000.0, Some(30_000), Some(0)));
        let t = parse("p99.9 < 1.5 s abort after 10s");
        assert_eq!((t.bound, t.window_ms, t.abort_after_ms), (1_500_000.0, None, Some(10_000)));
    }

    #[test]
    fn every_metric_has_a_spelling_that_reads_back() {
        for text in [
            "p50<1ms",
            "p99.99<1ms",
            "mean<1ms",
            "min<1ms",
            "max<1ms",
            "stddev<1ms",
            "errors<1%",
            "errors.count<1",
            "rps>1",
            "count>=10",
            "late_starts<5%",
            "uncorrected.p99<1ms",
            "dns.mean<1ms",
            "tls.max<1ms",
            "send.p50<1ms",
            "wait.p90<1ms",
            "receive.p99<1ms",
        ] {
            let t = parse(text);
            let (name, _) = text.split_once(['<', '>', '=']).unwrap();
            assert_eq!(t.metric.name(), name, "{text}");
        }
    }

    #[test]
    fn scopes_may_be_bare_or_quoted() {
        assert_eq!(parse("login page: p95<1s").scope, ThresholdScope::Named("login page".into()));
        assert_eq!(parse("global: p95<1s").scope, ThresholdScope::Global);
        assert_eq!(parse(r#""a: \"b\"": p95<1s"#).scope, ThresholdScope::Named("a: \"b\"".into()));
        assert_eq!(parse("\"each\": count>1").scope, ThresholdScope::Named("each".into()));
    }

    #[test]
    fn units_are_required_where_a_number_is_ambiguous() {
        assert!(error("p99<500").contains("write its unit, such as 500ms"));
        assert!(error("errors<1").contains("errors is a percentage: write 1%"));
        assert!(error("errors<0.5ms").contains("is a percentage, not \"ms\""));
        assert!(error("p99<5h").contains("unknown time unit"));
        assert!(error("errors<120%").contains("at most 100"));
        assert!(error("count>1.5").contains("whole number"));
        assert!(error("p99<2s over 30").contains("needs its unit"));
    }

    #[test]
    fn errors_name_the_threshold_and_the_problem() {
        assert!(error("q99<5ms").contains("unknown metric \"q99\""));
        assert!(error("q99<5ms").starts_with("threshold \"q99<5ms\""));
        assert!(error("p99").contains("no comparison"));
        assert!(error("p99<").contains("no value"));
        assert!(error("p99<1s forever").contains("unexpected \"forever\""));
        assert!(error("login: late_starts<1%").contains("takes no scope"));
        assert!(error("\"login p95<1s").contains("no closing quote"));
        assert!(error("p101<1s").contains("unknown metric"));
        assert!(error("").contains("empty threshold"));
    }

    #[test]
    fn values_read_in_the_metrics_units() {
        let p99 = ThresholdMetric::Latency(LatencySource::Corrected, LatencyStat::Percentile(99.0));
        assert_eq!(p99.format_value(412_345.0), "412.35 ms");
        assert_eq!(p99.format_value(850.0), "850 us");
        assert_eq!(p99.format_value(2_500_000.0), "2.5 s");
        assert_eq!(ThresholdMetric::ErrorRate.format_value(0.0052), "0.52 %");
        assert_eq!(ThresholdMetric::Throughput.format_value(980.06), "980.1/s");
        assert_eq!(parse("p99<500ms").bound_text(), "500 ms");
    }

    #[test]
    fn comparisons_know_the_failing_side() {
        assert_eq!(Comparison::Less.worse(1.0, 3.0), 3.0);
        assert_eq!(Comparison::GreaterOrEqual.worse(1.0, 3.0), 1.0);
        assert!(Comparison::NotEqual.holds(1.0, 2.0));
    }
}

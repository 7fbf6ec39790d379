//! Durations as people write them, in the plan's text fields (a pause's template once rendered)
//! and on the command line.

use std::time::Duration;

/// `500ms`, `1.5s`, `2m`, `1h`, or a bare number of seconds, as Gatling's `pause(2)` and
/// `horde http -d 10` read it; white space around the number is ignored. At most 365 days.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(horde_plan::parse_duration("1.5"), Ok(Duration::from_millis(1500)));
/// assert_eq!(horde_plan::parse_duration(" 250ms "), Ok(Duration::from_millis(250)));
/// assert!(horde_plan::parse_duration("-1s").unwrap_err().contains("negative"));
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+'))).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: f64 = number.parse().map_err(|_| format!("{text:?} is not a duration (such as 2, 1.5s, 500ms, 2m)"))?;
    let seconds_per_unit = match unit.trim_start() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" => 60.0,
        "h" => 3600.0,
        other => return Err(format!("{text:?}: unknown unit {other:?} (ms, s, m, h; a bare number is seconds)")),
    };
    if number < 0.0 {
        return Err(format!("{text:?}: a duration cannot be negative"));
    }
    let seconds = number * seconds_per_unit;
    if !seconds.is_finite() || seconds * 1000.0 > crate::MAX_DURATION_MS as f64 {
        return Err(format!("{text:?} is longer than 365 days, the longest duration horde accepts"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds() {
        let ms = Duration::from_millis;
        assert_eq!(parse_duration("2"), Ok(ms(2000)));
        assert_eq!(parse_duration("0"), Ok(ms(0)));
        assert_eq!(parse_duration("0.25"), Ok(ms(250)));
        assert_eq!(parse_duration("300ms"), Ok(ms(300)));
        assert_eq!(parse_duration("300 ms"), Ok(ms(300)));
        assert_eq!(parse_duration("2m"), Ok(ms(120_000)));
        assert_eq!(parse_duration("1h"), Ok(ms(3_600_000)));
        assert!(parse_duration("").unwrap_err().contains("not a duration"));
        assert!(parse_duration("soon").unwrap_err().contains("not a duration"));
        assert!(parse_duration("3 parsecs").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("-0.5").unwrap_err().contains("negative"));
        assert!(parse_duration("1e3").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("99999999999").unwrap_err().contains("365 days"));
        assert!(parse_duration("9999h").unwrap_err().contains("365 days"));
    }
}

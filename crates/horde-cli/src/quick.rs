//! Quick mode (`horde http`): flags become a one-request Plan, run by the same engine.

use crate::args::HttpArgs;
use horde_plan::{Body, Injection, NameValue, OnCheckFailure, Plan, Request, RunOptions, Scenario, Step, ThrottleStep};
use horde_plan::{HttpProtocol, PLAN_VERSION};

/// Parses `10s`, `500ms`, `2m`, `1h`, or a bare number of seconds.
pub(crate) fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| format!("{text:?} is not a duration (try 10s, 500ms, 2m)"))?;
    let factor = match unit {
        "" | "s" => 1000.0,
        "ms" => 1.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return Err(format!("{text:?}: unknown unit {unit:?} (ms, s, m, h)")),
    };
    let ms = number * factor;
    if ms < 1.0 {
        return Err(format!("{text:?} is shorter than a millisecond"));
    }
    Ok(ms as u64)
}

pub fn plan(args: &HttpArgs) -> Result<Plan, String> {
    if args.connections == 0 {
        return Err("-c/--connections must be at least 1".into());
    }
    let timeout_ms = parse_duration_ms(&args.timeout).map_err(|e| format!("--timeout: {e}"))?;
    let duration_ms = match (&args.duration, args.requests) {
        (Some(d), _) => Some(parse_duration_ms(d).map_err(|e| format!("-d/--duration: {e}"))?),
        (None, Some(_)) => None,
        (None, None) => Some(10_000),
    };
    let mut headers = Vec::new();
    for header in &args.headers {
        let (name, value) = header
            .split_once(':')
            .ok_or_else(|| format!("-H {header:?}: expected 'Name: value'"))?;
        headers.push(NameValue::new(name.trim(), value.trim()));
    }
    let body = match &args.body {
        None => None,
        Some(text) => {
            let text = match text.strip_prefix('@') {
                Some(path) => std::fs::read_to_string(path).map_err(|e| format!("--body @{path}: {e}"))?,
                None => text.clone(),
            };
            Some(Body::Raw { text: text.replace('$', "$$") })
        }
    };
    let request = Request {
        name: format!("{} {}", args.method.to_uppercase(), args.url),
        method: args.method.to_uppercase(),
        url: args.url.replace("${", "$${"),
        headers,
        query: vec![],
        body,
        checks: vec![],
    };
    // A loop per connection that runs until the duration is over (or the request budget is
    // spent); a day stands in for "no duration" and -n then bounds the run.
    let loop_ms = duration_ms.unwrap_or(86_400_000);
    let steps = vec![Step::During { duration_ms: loop_ms, counter: None, steps: vec![Step::Request(request)] }];
    let throttle = match args.rate {
        Some(rate) if !(rate > 0.0 && rate.is_finite()) => return Err("--rate must be more than 0".into()),
        Some(rps) => vec![ThrottleStep::JumpToRps { rps }],
        None => vec![],
    };
    Ok(Plan {
        version: PLAN_VERSION,
        name: "http".into(),
        base_dir: None,
        protocol: HttpProtocol {
            request_timeout_ms: timeout_ms,
            follow_redirects: !args.no_follow,
            ..HttpProtocol::default()
        },
        scenarios: vec![Scenario {
            name: "http".into(),
            steps,
            injection: vec![Injection::AtOnceUsers { users: args.connections }],
            after: None,
        }],
        options: RunOptions {
            // Like wrk, a failed request does not stop a connection's loop.
            on_check_failure: OnCheckFailure::Continue,
            max_requests: args.requests,
            // The loop ends by itself; this bounds a request still hanging at the end.
            max_duration_ms: duration_ms.map(|d| d + timeout_ms),
            throttle,
            workers: args.workers,
            ..RunOptions::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration_ms("10s"), Ok(10_000));
        assert_eq!(parse_duration_ms("500ms"), Ok(500));
        assert_eq!(parse_duration_ms("2m"), Ok(120_000));
        assert_eq!(parse_duration_ms("1.5"), Ok(1_500));
        assert!(parse_duration_ms("10 parsecs").unwrap_err().contains("unknown unit"));
        assert!(parse_duration_ms("soon").is_err());
    }
}

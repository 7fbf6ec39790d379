//! Quick mode (`horde http`): flags become a one-request Plan, run by the same engine. Every
//! problem is reported in the flags' own terms, all at once, before anything is created.

use crate::args::{at_least_one, workers, HttpArgs};
use crate::output::status;
use horde_plan::{
    Body, CoreStep, HttpStep, Injection, NameValue, OnCheckFailure, Plan, Request, RunOptions, Scenario, ThrottleStep,
};
use horde_plan::{HttpProtocol, BROWSER_ACCEPT_ENCODING, MAX_DURATION_MS};

/// Connections when -c is not given, as oha.
const DEFAULT_CONNECTIONS: u64 = 50;

/// h2load allows more; a few hundred streams is already past what servers announce.
const MAX_STREAMS: u64 = 1000;

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
    if ms > MAX_DURATION_MS as f64 {
        return Err(format!("{text:?} is longer than 365 days, the longest duration horde accepts"));
    }
    Ok(ms as u64)
}

/// The request URL of quick mode and of `horde sweep URL`: absolute, http or https, with a host.
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    // The plan's own rule first: the URL parser reads `http:///path` as the host "path".
    if let Some(problem) = horde_plan::http_url_problem(url) {
        return Err(problem);
    }
    let parsed = url::Url::parse(url).map_err(|err| format!("{url:?} is not a URL: {err}"))?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("{url:?} has no host"));
    }
    Ok(())
}

/// Where each plan path of a quick-mode plan came from, to name problems by their flag.
const FLAG_OF_PATH: &[(&str, &str)] = &[
    ("scenarios[0].steps[0].steps[0].method", "-m/--method"),
    ("scenarios[0].steps[0].steps[0].headers", "-H/--header"),
    ("scenarios[0].steps[0].steps[0].body", "--body"),
    ("scenarios[0].steps[0].steps[0].url", "URL"),
    ("scenarios[0].steps[0].duration_ms", "-d/--duration"),
    ("scenarios[0].injection", "-c/--connections"),
    ("options.max_duration_ms", "-d/--duration"),
    ("options.max_requests", "-n/--requests"),
    ("options.throttle", "--rate"),
    ("options.workers", "--workers"),
    ("options.execution_segment.segment", "--execution-segment"),
    ("options.execution_segment.sequence", "--execution-segment-sequence"),
    ("thresholds", "--threshold"),
    ("protocol.request_timeout_ms", "--timeout"),
    ("protocol.tls.ca_file", "--cacert"),
    ("protocol.resolve", "--resolve"),
    ("protocol.http2", "--http2"),
    ("protocol.accept_encoding", "--compressed"),
];

pub(crate) fn flag_of(path: &str) -> Option<&'static str> {
    FLAG_OF_PATH.iter().find(|(prefix, _)| path.starts_with(prefix)).map(|(_, flag)| *flag)
}

/// The lowered plan of `horde http`, or every problem with the flags, in their terms.
pub fn program(args: &HttpArgs) -> Result<horde_engine::Program, Vec<String>> {
    let mut problems = Vec::new();
    let mut count = |flag: &str, text: &Option<String>| match text.as_deref().map(at_least_one) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(problem)) => {
            problems.push(format!("{flag}: {problem}"));
            None
        }
    };
    let requests = count("-n/--requests", &args.requests);
    let connections_given = count("-c/--connections", &args.connections);
    let streams = count("--streams", &args.streams).unwrap_or(1);
    if streams > 1 && !args.transport.http2 {
        problems.push(
            "--streams: needs --http2 (HTTP/1.1 has one request in flight per connection: raise -c instead)".into(),
        );
    }
    if streams > MAX_STREAMS {
        problems.push(format!("--streams: at most {MAX_STREAMS} streams per connection"));
    }
    let workers = match args.workers.as_deref().map(workers) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(problem)) => {
            problems.push(format!("--workers: {problem}"));
            None
        }
    };
    let rate = match args.rate.as_deref().map(|text| (text, text.trim().parse::<f64>())) {
        None => None,
        Some((_, Ok(rate))) if rate > 0.0 && rate.is_finite() => Some(rate),
        Some((text, _)) => {
            problems.push(format!("--rate {text}: must be a number of requests per second above 0"));
            None
        }
    };
    let url_checked = check_url(&args.url);
    if let Err(problem) = &url_checked {
        problems.push(problem.clone());
    }
    let mut duration = |flag: &str, text: &str| match parse_duration_ms(text) {
        Ok(ms) => Some(ms),
        Err(problem) => {
            problems.push(format!("{flag}: {problem}"));
            None
        }
    };
    let timeout_ms = duration("--timeout", &args.timeout).unwrap_or(1);
    let duration_ms = match (&args.duration, requests) {
        (Some(d), _) => Some(duration("-d/--duration", d).unwrap_or(1)),
        (None, Some(_)) => None,
        (None, None) => Some(10_000),
    };
    let mut headers = Vec::new();
    for header in &args.headers {
        match header.split_once(':') {
            Some((name, value)) => headers.push(NameValue::new(name.trim(), horde_plan::escape_template(value.trim()))),
            None => problems.push(format!("-H {header:?}: expected 'Name: value'")),
        }
    }
    let body = match &args.body {
        None => None,
        Some(text) => {
            let text = match text.strip_prefix('@') {
                Some(path) => {
                    let read = horde_plan::input::read_text_bounded(
                        std::path::Path::new(path),
                        horde_plan::input::MAX_INPUT_FILE_BYTES,
                    );
                    read.unwrap_or_else(|problem| {
                        problems.push(format!("--body @{path}: {problem}"));
                        String::new()
                    })
                }
                None => text.clone(),
            };
            Some(Body::Raw { text: horde_plan::escape_template(&text) })
        }
    };
    let throttle = rate.map(|rps| vec![ThrottleStep::JumpToRps { rps }]).unwrap_or_default();
    // More connections than requests would open connections that never send: one per
    // request is all -n can use.
    let connections = match (connections_given, requests) {
        (Some(connections), Some(requests)) if requests < connections => {
            status!("horde: -c {connections} is more than -n {requests}: using {requests} connections");
            requests
        }
        (given, requests) => given.unwrap_or(DEFAULT_CONNECTIONS).min(requests.unwrap_or(u64::MAX)),
    };
    // Streams beyond what -n leaves each connection would never be sent.
    let streams = streams.min(requests.map_or(u64::MAX, |n| n.div_ceil(connections.max(1)))).max(1);
    let mut protocol = HttpProtocol {
        request_timeout_ms: timeout_ms,
        follow_redirects: !args.no_follow,
        accept_encoding: if args.compressed { BROWSER_ACCEPT_ENCODING.to_string() } else { String::new() },
        ..HttpProtocol::default()
    };
    if let Err(flag_problems) = args.transport.apply(&mut protocol, Some(&args.url)) {
        problems.extend(flag_problems);
    }
    let request = Request {
        // The row's name is in every result (and --metrics' labels): never a password.
        name: format!("{} {}", args.method.to_uppercase(), horde_plan::redacted_url(&args.url)),
        method: args.method.to_uppercase(),
        url: horde_plan::escape_template(&args.url),
        headers,
        query: vec![],
        body,
        checks: vec![],
        resources: vec![],
        follow_redirects: None,
    };
    let exchange = match streams {
        1 => HttpStep::Request(request).into(),
        _ => HttpStep::Batch { requests: vec![request; streams as usize] }.into(),
    };
    // A loop per connection that the run's deadline cuts, as wrk's -d does (requests then in
    // flight are counted as interrupted): the loop itself lasts a little longer, or users
    // whose loops end with the deadline could finish first and the run would end unlimited.
    // A year stands in for "no duration", and -n then bounds the run.
    let loop_ms = duration_ms.map_or(MAX_DURATION_MS, |ms| ms.saturating_add(1000).min(MAX_DURATION_MS));
    let steps = vec![CoreStep::During { duration_ms: loop_ms, counter: None, steps: vec![exchange] }.into()];
    let scenario = Scenario {
        name: "http".into(),
        steps,
        injection: vec![Injection::AtOnceUsers { users: connections }],
        after: None,
    };
    let mut plan = Plan {
        thresholds: args.thresholds.thresholds.clone(),
        protocol,
        options: RunOptions {
            // Like wrk, a failed request does not stop a connection's loop.
            on_check_failure: OnCheckFailure::Continue,
            max_requests: requests,
            // The run ends at -d, whatever is in flight (counted as interrupted): a stalled
            // server cannot stretch it by the request timeout.
            max_duration_ms: duration_ms,
            throttle,
            workers,
            ..RunOptions::default()
        },
        ..Plan::new("http", vec![scenario])
    };
    args.segment.apply(&mut plan.options);
    match horde_engine::lower(&plan) {
        Ok(program) if problems.is_empty() => Ok(program),
        Ok(_) => Err(problems),
        Err(errors) => {
            for error in errors {
                match flag_of(&error.path) {
                    // Said above, in the URL's own terms.
                    Some("URL") if url_checked.is_err() => {}
                    Some(flag) => problems.push(format!("{flag}: {}", error.message)),
                    None => problems.push(format!("{}: {}", error.path, error.message)),
                }
            }
            Err(problems)
        }
    }
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
        assert!(parse_duration_ms("99999999999999999999h").unwrap_err().contains("365 days"));
    }

    #[test]
    fn plan_paths_are_named_by_their_flags() {
        assert_eq!(flag_of("scenarios[0].steps[0].steps[0].headers[1].name"), Some("-H/--header"));
        assert_eq!(flag_of("options.throttle[0].rps"), Some("--rate"));
        assert_eq!(flag_of("scenarios[0].steps[0].steps[0].url"), Some("URL"));
    }
}

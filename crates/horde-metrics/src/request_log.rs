//! The per-request log (`--request-log FILE.jsonl|.jtl`): one record per exchange, formatted
//! by the worker that measured it into its own buffer, which a writer thread appends to the file
//! (horde-report). Formatting is here, next to what it formats; writing files is not.
//!
//! JSONL: one object per line. JTL: JMeter's CSV results format with its header, so that
//! `jmeter -g FILE.jtl -o DIR` builds JMeter's dashboard from a horde run.

use crate::recorder::RequestTiming;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::Sender;

/// JMeter's CSV header, in JMeter's column order (its default `jmeter.save.saveservice.*`
/// columns with sent bytes, URL and connect time).
pub const JTL_HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,\
failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestLogFormat {
    Jsonl,
    Jtl,
}

impl RequestLogFormat {
    /// The format a file's extension names: `.jsonl` or `.jtl` (in any case).
    pub fn from_path(path: &Path) -> Result<RequestLogFormat, String> {
        let extension = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
        match extension.as_deref() {
            Some("jsonl") => Ok(RequestLogFormat::Jsonl),
            Some("jtl") => Ok(RequestLogFormat::Jtl),
            _ => Err(format!(
                "--request-log {}: the file name must end in .jsonl (a JSON object per request) or .jtl (JMeter's CSV results)",
                path.display()
            )),
        }
    }

    /// What the file starts with.
    pub fn header(self) -> &'static str {
        match self {
            RequestLogFormat::Jsonl => "",
            RequestLogFormat::Jtl => JTL_HEADER,
        }
    }

    /// Appends one record, a whole line, to `out`.
    pub fn append(self, out: &mut Vec<u8>, record: &RequestRecord<'_>) {
        match self {
            RequestLogFormat::Jsonl => append_jsonl(out, record),
            RequestLogFormat::Jtl => append_jtl(out, record),
        }
    }
}

/// A share of a distributed run logs in the format of the coordinator's file.
impl From<horde_plan::ShareRequestLog> for RequestLogFormat {
    fn from(format: horde_plan::ShareRequestLog) -> RequestLogFormat {
        match format {
            horde_plan::ShareRequestLog::Jsonl => RequestLogFormat::Jsonl,
            horde_plan::ShareRequestLog::Jtl => RequestLogFormat::Jtl,
        }
    }
}

impl From<RequestLogFormat> for horde_plan::ShareRequestLog {
    fn from(format: RequestLogFormat) -> horde_plan::ShareRequestLog {
        match format {
            RequestLogFormat::Jsonl => horde_plan::ShareRequestLog::Jsonl,
            RequestLogFormat::Jtl => horde_plan::ShareRequestLog::Jtl,
        }
    }
}

/// One exchange (or a request never sent) as the log sees it.
#[derive(Debug, Clone, Copy)]
pub struct RequestRecord<'a> {
    /// When it actually started, Unix time in microseconds.
    pub started_epoch_us: u64,
    /// The request row.
    pub name: &'a str,
    pub scenario: &'a str,
    /// The virtual user's number within its scenario.
    pub user: u64,
    /// The response's status code, when there was one.
    pub status: Option<u16>,
    /// Where it went: the request's URL (an HTTP request, a redirect's hop, a socket's
    /// opening); none for what has no URL of its own (a message on a socket, a feeder). Its
    /// password, if it has one, is logged as `***`.
    pub url: Option<&'a str>,
    pub ok: bool,
    /// KO and never sent: no latency.
    pub unsent: bool,
    /// A failed attempt of `try_max` or `eventually` that was tried again (not a KO in the summary).
    pub retried: bool,
    pub timing: &'a RequestTiming,
    /// The failure's stable kind and message.
    pub error: Option<(&'static str, &'a str)>,
    /// Users running in this scenario, and in the whole run, when the request ended.
    pub scenario_users: u64,
    pub all_users: u64,
}

impl RequestRecord<'_> {
    /// The corrected start: the intended start, when the request started late.
    fn corrected_start_epoch_us(&self) -> u64 {
        let lateness = self.timing.latency_us.saturating_sub(self.timing.uncorrected_us);
        self.started_epoch_us.saturating_sub(lateness)
    }
}

fn millis(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn append_jsonl(out: &mut Vec<u8>, r: &RequestRecord<'_>) {
    let t = r.timing;
    let json_string = |out: &mut Vec<u8>, text: &str| {
        serde_json::to_writer(&mut *out, text).expect("writing to a Vec cannot fail");
    };
    let _ = write!(out, "{{\"epoch_ms\":{},\"name\":", r.started_epoch_us / 1000);
    json_string(out, r.name);
    out.extend_from_slice(b",\"scenario\":");
    json_string(out, r.scenario);
    out.extend_from_slice(b",\"url\":");
    match r.url {
        Some(url) => json_string(out, &horde_plan::redacted_url(url)),
        None => out.extend_from_slice(b"null"),
    }
    let _ = write!(out, ",\"user\":{},\"status\":", r.user);
    match r.status {
        Some(status) => {
            let _ = write!(out, "{status}");
        }
        None => out.extend_from_slice(b"null"),
    }
    let _ = write!(
        out,
        ",\"ok\":{},\"unsent\":{},\"retried\":{},\"latency_ms\":{:.3},\"uncorrected_ms\":{:.3},\"bytes_sent\":{},\"bytes_received\":{}",
        r.ok,
        r.unsent,
        r.retried,
        millis(t.latency_us),
        millis(t.uncorrected_us),
        t.bytes_sent,
        t.bytes_received
    );
    match r.error {
        Some((kind, message)) => {
            let _ = write!(out, ",\"error\":\"{kind}\",\"message\":");
            json_string(out, message);
        }
        None => out.extend_from_slice(b",\"error\":null,\"message\":null"),
    }
    out.extend_from_slice(b"}\n");
}

/// JMeter's columns: `timeStamp` the start in ms since the epoch (JMeter's default,
/// `sampleresult.timestamp.start=true`), here the corrected start; `elapsed` to the last byte
/// (horde's corrected latency); `Latency` to the first byte; `Connect` the connection's set-up
/// (DNS, TCP and TLS) when this request made one; `bytes` received and `sentBytes` on the wire.
fn append_jtl(out: &mut Vec<u8>, r: &RequestRecord<'_>) {
    let t = r.timing;
    let elapsed_ms = (t.latency_us + 500) / 1000;
    let first_byte_ms = (t.latency_us.saturating_sub(t.receive_us) + 500) / 1000;
    let connect_us = t.dns_us.unwrap_or(0) + t.connect_us.unwrap_or(0) + t.tls_us.unwrap_or(0);
    let _ = write!(out, "{},{},", r.corrected_start_epoch_us() / 1000, elapsed_ms);
    csv_field(out, r.name);
    out.push(b',');
    // What JMeter writes for a sample that got no HTTP response.
    match (r.status, r.error) {
        (Some(status), _) => {
            let _ = write!(out, "{status},{}", reason_phrase(status));
        }
        (None, Some((kind, message))) => {
            let _ = write!(out, "Non HTTP response code: {kind},");
            let mut text = Vec::with_capacity(message.len() + 30);
            text.extend_from_slice(b"Non HTTP response message: ");
            text.extend_from_slice(message.as_bytes());
            csv_field(out, &String::from_utf8_lossy(&text));
        }
        (None, None) => out.push(b','),
    }
    out.push(b',');
    let mut thread = Vec::with_capacity(r.scenario.len() + 24);
    let _ = write!(thread, "{} 1-{}", r.scenario, r.user + 1);
    csv_field(out, &String::from_utf8_lossy(&thread));
    let data_type = if r.status.is_some() { "text" } else { "" };
    let _ = write!(out, ",{data_type},{},", r.ok);
    if let (false, Some((_, message))) = (r.ok, r.error) {
        csv_field(out, message);
    }
    let _ = write!(out, ",{},{},{},{},", t.bytes_received, t.bytes_sent, r.scenario_users, r.all_users);
    if let Some(url) = r.url {
        csv_field(out, &horde_plan::redacted_url(url));
    }
    let _ = writeln!(out, ",{},0,{}", if r.status.is_some() { first_byte_ms } else { 0 }, (connect_us + 500) / 1000);
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(out: &mut Vec<u8>, text: &str) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        for byte in text.bytes() {
            if byte == b'"' {
                out.push(b'"');
            }
            out.push(byte);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(text.as_bytes());
    }
}

/// The standard reason phrase of a status, for JMeter's `responseMessage` (JMeter writes the
/// server's own phrase; horde does not keep it). Empty for codes without a common phrase.
fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        410 => "Gone",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// Where workers hand their filled buffers: the format, and the writer thread's channel.
#[derive(Debug, Clone)]
pub struct RequestLogOutput {
    pub format: RequestLogFormat,
    pub chunks: Sender<Vec<u8>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(
        timing: &'a RequestTiming,
        status: Option<u16>,
        error: Option<(&'static str, &'a str)>,
    ) -> RequestRecord<'a> {
        RequestRecord {
            started_epoch_us: 1_700_000_000_123_456,
            name: "login, \"fast\"",
            scenario: "shop",
            user: 4,
            status,
            url: status.map(|_| "http://127.0.0.1:8080/login?next=a,b"),
            ok: error.is_none(),
            unsent: false,
            retried: false,
            timing,
            error,
            scenario_users: 3,
            all_users: 7,
        }
    }

    #[test]
    fn jsonl_lines_are_json_objects() {
        let timing = RequestTiming {
            latency_us: 2500,
            uncorrected_us: 2000,
            bytes_sent: 10,
            bytes_received: 20,
            ..Default::default()
        };
        let mut out = Vec::new();
        RequestLogFormat::Jsonl.append(&mut out, &record(&timing, Some(200), None));
        RequestLogFormat::Jsonl.append(&mut out, &record(&timing, None, Some(("connect_refused", "refused \"x\"\n"))));
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines[0]["epoch_ms"], 1_700_000_000_123u64);
        assert_eq!(lines[0]["name"], "login, \"fast\"");
        assert_eq!(lines[0]["url"], "http://127.0.0.1:8080/login?next=a,b");
        assert!(lines[1]["url"].is_null());
        assert_eq!((lines[0]["status"].as_u64(), lines[0]["latency_ms"].as_f64()), (Some(200), Some(2.5)));
        assert_eq!(lines[1]["error"], "connect_refused");
        assert_eq!(lines[1]["message"], "refused \"x\"\n");
        assert!(lines[1]["status"].is_null());
    }

    #[test]
    fn jtl_lines_have_jmeters_columns() {
        let timing = RequestTiming {
            latency_us: 12_400,
            uncorrected_us: 10_400,
            receive_us: 1000,
            connect_us: Some(1600),
            bytes_sent: 10,
            bytes_received: 20,
            ..Default::default()
        };
        let mut out = Vec::new();
        RequestLogFormat::Jtl.append(&mut out, &record(&timing, Some(200), None));
        RequestLogFormat::Jtl.append(&mut out, &record(&timing, None, Some(("connect_refused", "refused, twice"))));
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "1700000000121,12,\"login, \"\"fast\"\"\",200,OK,shop 1-5,text,true,,20,10,3,7,\"http://127.0.0.1:8080/login?next=a,b\",11,0,2"
        );
        assert_eq!(
            lines[1],
            "1700000000121,12,\"login, \"\"fast\"\"\",Non HTTP response code: connect_refused,\
             \"Non HTTP response message: refused, twice\",shop 1-5,,false,\"refused, twice\",20,10,3,7,,0,0,2"
        );
        assert_eq!(
            JTL_HEADER.split(',').count(),
            lines[0].split(',').count() - 2,
            "the name's and the URL's commas are quoted"
        );
        assert!(RequestLogFormat::from_path(Path::new("log.JTL")).is_ok());
        assert!(RequestLogFormat::from_path(Path::new("log.csv")).unwrap_err().contains(".jsonl"));
    }
}

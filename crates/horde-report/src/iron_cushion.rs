//! The CouchDB steps' results in Iron Cushion's own format, so its users can read them as they
//! always have: `BULK INSERT BENCHMARK RESULTS:` then `name=value` lines, seconds with three
//! decimals and thousands separators.

use horde_metrics::{CouchdbStepReport, SpreadSecs};
use std::fmt::Write;

/// Every CouchDB step of the run, in Iron Cushion's format.
pub fn render_iron_cushion(steps: &[CouchdbStepReport]) -> String {
    let mut out = String::new();
    for step in steps {
        let title = if step.kind == "bulk_insert" { "BULK INSERT" } else { "CRUD" };
        let _ = writeln!(
            out,
            "{title} BENCHMARK RESULTS ({}, {} connections):",
            crate::terminal::printable(&step.name),
            step.connections
        );
        let mut field = |name: &str, value: String| {
            let _ = writeln!(out, "  {name}={value}");
        };
        field("timeTaken", format!("{} secs", decimal(step.time_taken)));
        field("totalJsonBytesSent", format!("{} bytes", grouped(step.total_json_bytes_sent)));
        field("totalJsonBytesReceived", format!("{} bytes", grouped(step.total_json_bytes_received)));
        field("localProcessing", spread(&step.local_processing));
        field("sendData", spread(&step.send_data));
        let remote = [
            ("remoteProcessing", &step.remote_processing),
            ("remoteCreateProcessing", &step.remote_create_processing),
            ("remoteReadProcessing", &step.remote_read_processing),
            ("remoteUpdateProcessing", &step.remote_update_processing),
            ("remoteDeleteProcessing", &step.remote_delete_processing),
        ];
        for (name, value) in remote {
            if let Some(value) = value {
                field(name, spread(value));
            }
        }
        field("receiveData", spread(&step.receive_data));
        let rates = [
            ("remoteProcessingRate", step.remote_processing_rate),
            ("localInsertRate", step.local_insert_rate),
            ("remoteCreateProcessingRate", step.remote_create_processing_rate),
            ("remoteReadProcessingRate", step.remote_read_processing_rate),
            ("remoteUpdateProcessingRate", step.remote_update_processing_rate),
            ("remoteDeleteProcessingRate", step.remote_delete_processing_rate),
        ];
        for (name, value) in rates {
            if let Some(value) = value {
                field(name, format!("{} docs/sec", decimal(value)));
            }
        }
        let _ = writeln!(out);
    }
    out
}

fn spread(s: &SpreadSecs) -> String {
    format!(
        "{{min={} secs, max={} secs, median={} secs, sd={} secs}}",
        decimal(s.min),
        decimal(s.max),
        decimal(s.median),
        decimal(s.sd)
    )
}

/// `1234567` as `1,234,567`.
fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Three decimals with grouped thousands: `10,003.030`.
fn decimal(value: f64) -> String {
    if !value.is_finite() {
        return "-".into();
    }
    let rounded = format!("{:.3}", value.abs());
    let (whole, fraction) = rounded.split_once('.').expect("three decimals");
    let sign = if value < 0.0 && rounded != "0.000" { "-" } else { "" };
    format!("{sign}{}.{fraction}", grouped(whole.parse().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_look_like_iron_cushions() {
        assert_eq!(grouped(374_240_177), "374,240,177");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(decimal(10_003.03), "10,003.030");
        assert_eq!(decimal(0.0004), "0.000");
        assert_eq!(decimal(249.1816), "249.182");
    }
}

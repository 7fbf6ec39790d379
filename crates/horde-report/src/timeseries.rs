//! timeseries.csv and timeseries.jsonl: one line per request row (and `all`) per interval,
//! appended as the run goes so that an interrupted run keeps every finished interval.

use horde_metrics::IntervalSample;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

pub struct TimeSeriesWriter {
    csv: BufWriter<File>,
    jsonl: BufWriter<File>,
    percentiles: Vec<f64>,
}

impl TimeSeriesWriter {
    pub fn create(dir: &Path, percentiles: &[f64]) -> std::io::Result<TimeSeriesWriter> {
        let mut csv = BufWriter::new(File::create(dir.join("timeseries.csv"))?);
        let columns: Vec<String> = percentiles.iter().map(|p| format!("p{}_us", percentile_label(*p))).collect();
        writeln!(
            csv,
            "start_ms,duration_ms,name,ok,ko,rps,mean_us,{},max_us,users_active,\
             dns_mean_us,connect_mean_us,tls_mean_us,send_mean_us,wait_mean_us,receive_mean_us,epoch_ms",
            columns.join(",")
        )?;
        csv.flush()?;
        let jsonl = BufWriter::new(File::create(dir.join("timeseries.jsonl"))?);
        Ok(TimeSeriesWriter { csv, jsonl, percentiles: percentiles.to_vec() })
    }

    pub fn write(&mut self, samples: &[IntervalSample]) -> std::io::Result<()> {
        for sample in samples {
            let latency = &sample.latency;
            let values: Vec<String> = self
                .percentiles
                .iter()
                .map(|p| latency.percentile(*p).map(|v| v.to_string()).unwrap_or_default())
                .collect();
            let phases = &sample.phases_mean_us;
            writeln!(
                self.csv,
                "{},{},{},{},{},{:.3},{:.1},{},{},{},{:.1},{:.1},{:.1},{:.1},{:.1},{:.1},{}",
                sample.start_ms,
                sample.duration_ms,
                csv_field(&sample.name),
                sample.ok,
                sample.ko,
                sample.rps,
                latency.mean_us,
                values.join(","),
                latency.max_us,
                sample.users_active,
                phases.dns,
                phases.connect,
                phases.tls,
                phases.send,
                phases.wait,
                phases.receive,
                sample.epoch_ms
            )?;
            serde_json::to_writer(&mut self.jsonl, sample)?;
            self.jsonl.write_all(b"\n")?;
        }
        self.csv.flush()?;
        self.jsonl.flush()
    }
}

/// `99.9` as `99_9`, so the column name stays an identifier.
fn percentile_label(p: f64) -> String {
    format!("{p}").replace('.', "_")
}

pub(crate) fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(csv_field("home"), "home");
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(percentile_label(99.9), "99_9");
        assert_eq!(percentile_label(50.0), "50");
    }
}

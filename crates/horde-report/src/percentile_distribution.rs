//! `.hgrm` files: HdrHistogram's classic percentile distribution (what its Java
//! `outputPercentileDistribution` prints and what HdrHistogram's online plotter reads), one per
//! request row and one for all requests, under `hgrm/` in the results directory, with
//! `hgrm/index.json` mapping each name to its file. Values are corrected latencies (from the
//! intended start, OK and KO together) in milliseconds: microseconds scaled by 1000.

use hdrhistogram::Histogram;
use horde_metrics::Totals;
use serde::Serialize;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

pub const HGRM_DIR: &str = "hgrm";
/// The file of all requests together; a request named `all` gets `all-2.hgrm`.
const ALL_REQUESTS_FILE: &str = "all.hgrm";
/// Microseconds per millisecond: the output value unit scaling ratio.
const MICROS_PER_MILLI: f64 = 1000.0;
/// Java's default: percentile ticks per half distance to 100 %.
const TICKS_PER_HALF_DISTANCE: u32 = 5;
/// Longest stem of a file name made from a request name, so that a long URL stays a valid name.
const MAX_STEM_CHARS: usize = 80;

/// One line of hgrm/index.json.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct HgrmEntry {
    /// The request row's name (`all requests` for the global file).
    pub name: String,
    /// `global`, or `request` with `index` its position in summary.json's `requests[]`.
    pub scope: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// The file's name inside hgrm/.
    pub file: String,
    pub count: u64,
}

/// Writes hgrm/*.hgrm and hgrm/index.json from the run's totals.
pub fn write_percentile_distributions(dir: &Path, totals: &Totals) -> std::io::Result<Vec<HgrmEntry>> {
    let hgrm = dir.join(HGRM_DIR);
    std::fs::create_dir_all(&hgrm)?;
    let mut taken = HashSet::from([ALL_REQUESTS_FILE.to_string(), "index.json".to_string()]);
    let global = totals.global().corrected();
    std::fs::write(hgrm.join(ALL_REQUESTS_FILE), render(&global))?;
    let mut entries = vec![HgrmEntry {
        name: "all requests".into(),
        scope: "global",
        index: None,
        file: ALL_REQUESTS_FILE.into(),
        count: global.len(),
    }];
    for (index, (name, recorder)) in totals.requests.iter().enumerate() {
        let file = unique_file_name(name, &mut taken);
        let histogram = recorder.corrected();
        std::fs::write(hgrm.join(&file), render(&histogram))?;
        entries.push(HgrmEntry {
            name: name.to_string(),
            scope: "request",
            index: Some(index),
            file,
            count: histogram.len(),
        });
    }
    let index = serde_json::to_string_pretty(&entries).expect("an index serializes");
    std::fs::write(hgrm.join("index.json"), index + "\n")?;
    Ok(entries)
}

/// A file name for a request name: letters, digits, `.`, `-` and `_` kept, the rest `_`, cut to
/// a reasonable length, and numbered (`-2`, `-3`, ...) when two names come out the same (case
/// folded, for file systems that ignore case).
fn unique_file_name(name: &str, taken: &mut HashSet<String>) -> String {
    let mut stem: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' })
        .take(MAX_STEM_CHARS)
        .collect();
    // No hidden files, and never `.` or `..`.
    if stem.is_empty() || stem.starts_with('.') {
        stem.insert(0, '_');
    }
    let mut candidate = format!("{stem}.hgrm");
    let mut n = 2;
    while !taken.insert(candidate.to_ascii_lowercase()) {
        candidate = format!("{stem}-{n}.hgrm");
        n += 1;
    }
    candidate
}

/// The percentile distribution in HdrHistogram's format (Java's `%12.3f %2.12f %10d %14.2f`),
/// values in milliseconds.
pub fn render(histogram: &Histogram<u64>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:>12} {:>14} {:>10} {:>14}\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    let mut total = 0u64;
    if !histogram.is_empty() {
        for step in histogram.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
            total += step.count_since_last_iteration();
            let value = step.value_iterated_to() as f64 / MICROS_PER_MILLI;
            let quantile = step.quantile_iterated_to();
            if quantile < 1.0 {
                let _ = writeln!(out, "{value:12.3} {quantile:2.12} {total:10} {:14.2}", 1.0 / (1.0 - quantile));
            } else {
                let _ = writeln!(out, "{value:12.3} {quantile:2.12} {total:10}");
            }
        }
    }
    let (mean, stdev) = if histogram.is_empty() { (0.0, 0.0) } else { (histogram.mean(), histogram.stdev()) };
    let _ = writeln!(
        out,
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]",
        mean / MICROS_PER_MILLI,
        stdev / MICROS_PER_MILLI
    );
    let _ = writeln!(
        out,
        "#[Max     = {:12.3}, Total count    = {:12}]",
        histogram.max() as f64 / MICROS_PER_MILLI,
        histogram.len()
    );
    let _ = writeln!(out, "#[Buckets = {:12}, SubBuckets     = {:12}]", histogram.buckets(), sub_buckets(histogram));
    out
}

/// HdrHistogram's sub-bucket count for the histogram's precision: the power of two above
/// 2·10^digits (2048 for 3 significant figures).
fn sub_buckets(histogram: &Histogram<u64>) -> u64 {
    let largest_single_unit = 2 * 10u64.pow(u32::from(histogram.sigfig()));
    largest_single_unit.next_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;
    use horde_metrics::new_histogram;

    #[test]
    fn the_distribution_ends_at_the_count_and_the_max() {
        let mut histogram = new_histogram();
        for value in 1..=1000u64 {
            histogram.record(value * 10).unwrap();
        }
        let text = render(&histogram);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "       Value     Percentile TotalCount 1/(1-Percentile)");
        assert_eq!(lines[1], "");
        let last = lines.iter().rev().find(|l| !l.starts_with('#')).unwrap();
        let fields: Vec<&str> = last.split_whitespace().collect();
        assert_eq!(fields, ["10.007", "1.000000000000", "1000"]);
        assert!(text.contains("#[Max     =       10.007, Total count    =         1000]"), "{text}");
        assert!(text.ends_with("#[Buckets =            4, SubBuckets     =         2048]\n"), "{text}");
        let first: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(first, ["0.010", "0.000000000000", "1", "1.00"]);
    }

    #[test]
    fn file_names_are_safe_and_unique() {
        let mut taken = HashSet::from([ALL_REQUESTS_FILE.to_string()]);
        assert_eq!(unique_file_name("GET /users/{id}", &mut taken), "GET__users__id_.hgrm");
        assert_eq!(unique_file_name("GET /users/[id]", &mut taken), "GET__users__id_-2.hgrm");
        assert_eq!(unique_file_name("all", &mut taken), "all-2.hgrm");
        assert_eq!(unique_file_name("..", &mut taken), "_...hgrm");
        assert_eq!(unique_file_name("", &mut taken), "_.hgrm");
        assert_eq!(unique_file_name("Home", &mut taken), "Home.hgrm");
        assert_eq!(unique_file_name("home", &mut taken), "home-2.hgrm");
    }
}

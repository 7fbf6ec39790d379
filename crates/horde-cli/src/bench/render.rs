//! What a result looks like: JMH's console table (Cnt is the trials) with a header naming the
//! machine and configuration and the diagnostics under it; JMH's JSON, which jmh-visualizer
//! reads; JMH's CSV; a Markdown table; horde's own JSON.

use super::result::{value_text, BenchResult, Cell};
use super::Format;
use serde_json::json;

pub fn render(result: &BenchResult, format: Format) -> String {
    match format {
        Format::Table => table(result),
        Format::JmhJson => serde_json::to_string_pretty(&jmh_json(result)).expect("JSON") + "\n",
        Format::Csv => csv(result),
        Format::Markdown => markdown(result),
        Format::Json => serde_json::to_string_pretty(result).expect("JSON") + "\n",
    }
}

/// A figure with three decimals, as JMH prints them; small ones in scientific notation.
pub fn number(x: f64) -> String {
    if x == 0.0 || x.abs() >= 0.001 {
        format!("{x:.3}")
    } else {
        format!("{x:.3e}")
    }
}

/// The parameter columns: every name, in the order first seen.
fn param_names(cells: &[Cell]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for cell in cells {
        for name in &cell.param_names {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names
}

fn param_value(cell: &Cell, name: &str) -> String {
    cell.params.get(name).map(value_text).unwrap_or_else(|| "N/A".into())
}

fn score_error(cell: &Cell) -> (String, String, usize) {
    match &cell.stats {
        Some(s) => (number(s.score), s.error.map(number).unwrap_or_else(|| "NaN".into()), s.trials),
        None => ("NaN".into(), "NaN".into(), 0),
    }
}

/// Right-aligned columns (the first left-aligned), two spaces apart.
fn align(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                line.push_str(&format!("{cell:<width$}", width = widths[0]));
            } else {
                line.push_str(&format!("  {cell:>width$}", width = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub fn table(result: &BenchResult) -> String {
    let config = &result.config;
    let mut out = format!("# Machine: {}\n", result.machine.describe());
    out.push_str(&format!(
        "# Run: {}; {} trials (fresh processes) per cell, interleaved in shuffled rounds; {} warm-up + {} measured \
         iterations per trial{}; Error = {} % confidence over the trials\n",
        config.source,
        config.trials,
        config.warmup_iterations,
        config.measure_iterations,
        if result.cells.iter().any(|c| c.kind != "command") {
            format!(" of ~{} ms", config.iteration_time_ms)
        } else {
            String::new()
        },
        config.confidence * 100.0
    ));
    if result.status != "completed" {
        out.push_str(&format!("# Status: {} (the trials measured until then)\n", result.status));
    }
    out.push('\n');
    let names = param_names(&result.cells);
    let mut header = vec!["Benchmark".to_string()];
    header.extend(names.iter().map(|n| format!("({n})")));
    header.extend(["Mode", "Cnt", "Score", "", "Error", "Units"].map(String::from));
    let mut rows = vec![header];
    for cell in &result.cells {
        let (score, error, count) = score_error(cell);
        let mut row = vec![cell.benchmark.clone()];
        row.extend(names.iter().map(|n| param_value(cell, n)));
        row.extend([cell.mode.clone(), count.to_string(), score, "±".into(), error, cell.unit.clone()]);
        rows.push(row);
    }
    out.push_str(&align(&rows));
    out.push_str(&diagnostics(result));
    out
}

/// What the figures rest on, cell by cell, and what to do about noise.
fn diagnostics(result: &BenchResult) -> String {
    let mut out = String::from("\nDiagnostics (the trial is the unit; JMH's pooled Error, as if every iteration were independent, in brackets):\n");
    for cell in &result.cells {
        let Some(s) = &cell.stats else {
            out.push_str(&format!("  {}: no trial finished\n", label(cell)));
            continue;
        };
        let mut parts = vec![format!("CV {:.1} %", s.cv * 100.0)];
        let total = s.within_trial_variance + s.between_trial_variance;
        if s.trials >= 2 && total > 0.0 && s.iterations > s.trials {
            let share = s.between_trial_variance / total * 100.0;
            parts.push(if share >= 50.0 {
                format!("between-trial variance {share:.0} % of a trial mean's: add trials, not longer iterations")
            } else {
                format!("between-trial variance {share:.0} % of a trial mean's (the rest is within trials)")
            });
        }
        if let Some(k) = s.trials_for_1pct {
            parts.push(format!("±1 % needs {k} trials"));
        }
        parts.push(format!(
            "{} Tukey outlier{} of {} iterations (kept)",
            s.outliers,
            if s.outliers == 1 { "" } else { "s" },
            s.iterations
        ));
        if let Some(pooled) = s.jmh_pooled_error {
            parts.push(format!("[JMH's Error ±{}]", number(pooled)));
        }
        if let Some(loops) = cell.loops {
            parts.push(format!("{loops} call{} per iteration", if loops == 1 { "" } else { "s" }));
        }
        let cpu: Vec<(f64, f64, u64)> =
            cell.trials.iter().filter_map(|t| Some((t.cpu_user_ms?, t.cpu_system_ms?, t.peak_rss_kib?))).collect();
        if !cpu.is_empty() {
            let n = cpu.len() as f64;
            parts.push(format!(
                "CPU user {:.1} ms + system {:.1} ms per run, peak RSS {:.1} MiB",
                cpu.iter().map(|c| c.0).sum::<f64>() / n,
                cpu.iter().map(|c| c.1).sum::<f64>() / n,
                cpu.iter().map(|c| c.2).max().unwrap_or(0) as f64 / 1024.0
            ));
        }
        out.push_str(&format!("  {}: {}\n", label(cell), parts.join("; ")));
    }
    let m = &result.machine;
    out.push_str(&format!(
        "  timer floor {:.0} ns; load average {}; steal {}; ASLR {}; governor {}; boost {}; virtualization {}\n",
        result.config.timer_floor_ns,
        m.conditions.loadavg_1m.map_or("?".into(), |l| format!("{l:.2}")),
        m.conditions.steal_percent.map_or("?".into(), |s| format!("{s:.1} %")),
        m.aslr.map_or("?".into(), |a| a.to_string()),
        m.governor.as_deref().unwrap_or("?"),
        m.boost.map_or("?", |b| if b { "on" } else { "off" }),
        m.virtualization
    ));
    if let Some(floor) = result.config.command_floor_ms {
        out.push_str(&format!("  a command's floor (sh -c true) is {floor:.2} ms, included in the commands' Scores\n"));
    }
    for warning in &result.warnings {
        out.push_str(&format!("  warning: {warning}\n"));
    }
    out
}

fn label(cell: &Cell) -> String {
    super::label(cell)
}

/// JMH's names have a class and a method: `file.benchmark`.
fn jmh_name(result: &BenchResult, cell: &Cell) -> String {
    let source = std::path::Path::new(&result.config.source);
    let class = match cell.kind.as_str() {
        "function" | "command" if source.extension().is_some_and(|e| e == "py") => {
            source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "bench".into())
        }
        kind => kind.to_string(),
    };
    format!("horde.{class}.{}", cell.benchmark)
}

pub fn jmh_json(result: &BenchResult) -> serde_json::Value {
    let config = &result.config;
    let time = format!("{} ms", config.iteration_time_ms);
    let cells: Vec<serde_json::Value> = result
        .cells
        .iter()
        .filter_map(|cell| {
            let s = cell.stats.as_ref()?;
            let mut all: Vec<f64> = cell.trials.iter().flat_map(|t| t.iterations.iter().copied()).collect();
            all.sort_by(f64::total_cmp);
            let percentiles: serde_json::Map<String, serde_json::Value> =
                [0.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 99.999, 99.9999, 100.0]
                    .iter()
                    .map(|p| (format!("{p:?}"), json!(super::stats::quantile(&all, p / 100.0))))
                    .collect();
            let params: serde_json::Map<String, serde_json::Value> =
                cell.params.iter().map(|(k, v)| (k.clone(), json!(value_text(v)))).collect();
            let error = s.error.unwrap_or(f64::NAN);
            let mut entry = json!({
                "jmhVersion": "horde",
                "benchmark": jmh_name(result, cell),
                "mode": cell.mode,
                "threads": 1,
                "forks": s.trials,
                "jvm": "",
                "jvmArgs": [],
                "jdkVersion": "",
                "vmName": result.machine.runtimes.get("python").map(|v| format!("Python {v}")).unwrap_or_default(),
                "vmVersion": result.machine.runtimes.get("python").cloned().unwrap_or_default(),
                "warmupIterations": config.warmup_iterations,
                "warmupTime": time,
                "warmupBatchSize": 1,
                "measurementIterations": config.measure_iterations,
                "measurementTime": time,
                "measurementBatchSize": 1,
                "primaryMetric": {
                    "score": s.score,
                    "scoreError": if error.is_nan() { json!("NaN") } else { json!(error) },
                    "scoreConfidence": [s.ci_low.unwrap_or(s.score), s.ci_high.unwrap_or(s.score)],
                    "scorePercentiles": percentiles,
                    "scoreUnit": cell.unit,
                    "rawData": cell.trials.iter().map(|t| t.iterations.clone()).collect::<Vec<_>>(),
                },
                "secondaryMetrics": {},
                "horde": {
                    "machine": result.machine.label,
                    "fingerprint": result.machine.fingerprint,
                    "confidence": config.confidence,
                    "jmhPooledError": s.jmh_pooled_error,
                }
            });
            if !params.is_empty() {
                entry["params"] = serde_json::Value::Object(params);
            }
            Some(entry)
        })
        .collect();
    serde_json::Value::Array(cells)
}

fn csv_field(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

pub fn csv(result: &BenchResult) -> String {
    let names = param_names(&result.cells);
    let mut header = vec![
        "Benchmark".to_string(),
        "Mode".into(),
        "Threads".into(),
        "Samples".into(),
        "Score".into(),
        format!("Score Error ({}%)", result.config.confidence * 100.0),
        "Unit".into(),
    ];
    header.extend(names.iter().map(|n| format!("Param: {n}")));
    let mut out = header.iter().map(|h| csv_field(h)).collect::<Vec<_>>().join(",") + "\n";
    for cell in &result.cells {
        let Some(s) = &cell.stats else { continue };
        let mut row = vec![
            csv_field(&jmh_name(result, cell)),
            csv_field(&cell.mode),
            "1".into(),
            s.trials.to_string(),
            format!("{}", s.score),
            s.error.map_or("NaN".into(), |e| format!("{e}")),
            csv_field(&cell.unit),
        ];
        row.extend(names.iter().map(|n| cell.params.get(n).map(|v| csv_field(&value_text(v))).unwrap_or_default()));
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

pub fn markdown(result: &BenchResult) -> String {
    let names = param_names(&result.cells);
    let mut out = format!(
        "Machine: {}\n\nTrials {}, {} warm-up + {} measured iterations; Error at {} % confidence over the trials.\n\n",
        result.machine.describe(),
        result.config.trials,
        result.config.warmup_iterations,
        result.config.measure_iterations,
        result.config.confidence * 100.0
    );
    let mut header = vec!["Benchmark".to_string()];
    header.extend(names.iter().map(|n| format!("({n})")));
    header.extend(["Mode", "Cnt", "Score", "Error", "Units"].map(String::from));
    out.push_str(&format!("| {} |\n", header.join(" | ")));
    out.push_str(&format!(
        "|{}\n",
        header.iter().enumerate().map(|(i, _)| if i == 0 { "---|" } else { "---:|" }).collect::<String>()
    ));
    for cell in &result.cells {
        let (score, error, count) = score_error(cell);
        let mut row = vec![cell.benchmark.replace('|', "\\|")];
        row.extend(names.iter().map(|n| param_value(cell, n).replace('|', "\\|")));
        row.extend([cell.mode.clone(), count.to_string(), score, format!("± {error}"), cell.unit.clone()]);
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::machine::{Conditions, Machine};
    use crate::bench::result::{Config, Trial};
    use std::collections::BTreeMap;

    fn sample() -> BenchResult {
        let machine = Machine {
            label: "m5.large".into(),
            label_source: "dmi".into(),
            hostname: "ip-10-0-0-5".into(),
            cpu_model: "Intel Xeon".into(),
            logical_cpus: 2,
            physical_cores: 1,
            sockets: 1,
            threads_per_core: 2,
            caches: vec!["L1d 32K".into()],
            memory_kib: 8 * 1024 * 1024,
            os: "Debian".into(),
            kernel: "6.1.0".into(),
            kernel_cmdline: String::new(),
            virtualization: "kvm".into(),
            cpu_quota: None,
            governor: Some("performance".into()),
            boost: None,
            aslr: Some(2),
            dmi_product: Some("Amazon EC2 m5.large".into()),
            runtimes: BTreeMap::from([("horde".to_string(), "0.1.0".to_string())]),
            conditions: Conditions { loadavg_1m: Some(0.1), steal_percent: Some(0.0) },
            fingerprint: "0123456789abcdef".into(),
        };
        let trial = |round, values: &[f64]| Trial {
            round,
            warmup: vec![values[0] * 1.5],
            iterations: values.to_vec(),
            mean: values.iter().sum::<f64>() / values.len() as f64,
            cpu_user_ms: None,
            cpu_system_ms: None,
            peak_rss_kib: None,
        };
        let mut cells = Vec::new();
        for (rounds, scale) in [(6, 1.0), (8, 4.0)] {
            let mut params = serde_json::Map::new();
            params.insert("log_rounds".into(), rounds.into());
            let trials = vec![trial(0, &[5.0 * scale, 5.2 * scale]), trial(1, &[5.1 * scale, 5.3 * scale])];
            let iterations: Vec<Vec<f64>> = trials.iter().map(|t| t.iterations.clone()).collect();
            cells.push(Cell {
                benchmark: "hashpw".into(),
                kind: "function".into(),
                param_names: vec!["log_rounds".into()],
                params,
                mode: "avgt".into(),
                unit: "ms/op".into(),
                metric: "wall time per call".into(),
                loops: Some(10),
                stats: crate::bench::stats::cell_stats(&iterations, 0.95),
                trials,
            });
        }
        BenchResult {
            format: "horde-bench".into(),
            version: 1,
            started_at: "2026-11-26T10:00:00.000Z".into(),
            status: "completed".into(),
            machine,
            config: Config {
                source: "bcrypt.py".into(),
                trials: 2,
                warmup_iterations: 1,
                measure_iterations: 2,
                iteration_time_ms: 1000.0,
                confidence: 0.95,
                seed: 1,
                timer_floor_ns: 20.0,
                command_floor_ms: None,
            },
            cells,
            warnings: vec![],
        }
    }

    #[test]
    fn the_table_speaks_jmh() {
        let table = table(&sample());
        let expected = "\
# Machine: m5.large (Intel Xeon; 2 CPUs, 1 cores x 2 threads; 8.0 GiB; 6.1.0; virt kvm; governor performance; fingerprint 0123456789abcdef)
# Run: bcrypt.py; 2 trials (fresh processes) per cell, interleaved in shuffled rounds; 1 warm-up + 2 measured iterations per trial of ~1000 ms; Error = 95 % confidence over the trials

Benchmark  (log_rounds)  Mode  Cnt   Score     Error  Units
hashpw                6  avgt    2   5.150  ±  0.635  ms/op
hashpw                8  avgt    2  20.600  ±  2.541  ms/op
";
        assert!(table.starts_with(expected), "{table}");
        assert!(table.contains("hashpw (log_rounds=6): CV 1.4 %"), "{table}");
        assert!(table.contains("[JMH's Error ±0.205]"), "{table}");
    }

    #[test]
    fn exports_have_jmh_shapes() {
        let result = sample();
        let json = jmh_json(&result);
        assert_eq!(json[0]["benchmark"], "horde.bcrypt.hashpw");
        assert_eq!(json[0]["params"]["log_rounds"], "6");
        assert_eq!(json[1]["primaryMetric"]["rawData"][1][0], 20.4);
        let csv = csv(&result);
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some("\"Benchmark\",\"Mode\",\"Threads\",\"Samples\",\"Score\",\"Score Error (95%)\",\"Unit\",\"Param: log_rounds\"")
        );
        assert!(lines.next().unwrap().starts_with("\"horde.bcrypt.hashpw\",\"avgt\",1,2,5.1"), "{csv}");
        assert!(markdown(&result).contains("| hashpw | 8 | avgt | 2 | 20.600 | ± 2.541 | ms/op |"));
    }
}

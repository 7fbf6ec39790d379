//! `horde bench compare FILES...`: one table with the benchmarks' cells as rows and machines as
//! columns, each "Score ± Error", and against the reference machine the ratio of geometric
//! means with its interval (Welch on the logarithms of the trial means) and a verdict. Results
//! under one label are pooled only when their machines' fingerprints agree.

use super::render::number;
use super::result::{BenchResult, Cell};
use super::stats::{self, Ratio, Verdict};
use crate::output::{print_text, status};
use crate::{exit, Failure};
use clap::{Args, ValueEnum};
use horde_report::{BenchPage, IntervalChart};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CompareBenchArgs {
    /// Result files of horde bench (at least one; the machines are their labels).
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// The machine the others are compared with (default: the first file's).
    #[arg(long, value_name = "LABEL")]
    pub reference: Option<String>,
    /// Changes within this relative threshold are noise, not verdicts.
    #[arg(long, default_value = "1%")]
    pub threshold: String,
    /// The confidence of the Errors and ratio intervals.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Exit 99 when a cell of any machine is slower than the reference (for CI).
    #[arg(long, value_enum)]
    pub fail_on: Option<FailOn>,
    /// For each machine and benchmark, the cell with the largest Score whose upper bound fits
    /// this time (100ms, 2s): "which log rounds can this machine afford?"
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<String>,
    /// Markdown instead of the aligned table.
    #[arg(long)]
    pub markdown: bool,
    /// Also write the comparison as a self-contained page: each benchmark's Scores with their
    /// Errors per machine, each machine's change against the reference with its interval.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    Slower,
}

/// One machine: its label, fingerprint, and its cells' trial means pooled over its files.
struct MachineColumn {
    label: String,
    fingerprint: String,
    files: Vec<String>,
    /// Per row key: the cell (its unit and mode) and the pooled trial means.
    cells: Vec<(String, Cell, Vec<f64>)>,
}

fn parse_threshold(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(format!("--threshold {text:?}: a share such as 1% or 0.01")),
    }
}

/// A budget in seconds: `100ms`, `2s`, `250us`.
fn parse_budget(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number.parse().map_err(|_| format!("--budget {text:?}: a duration such as 100ms"))?;
    let factor = match unit.trim() {
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" | "" => 1.0,
        other => return Err(format!("--budget {text:?}: unknown unit {other:?} (ns, us, ms, s)")),
    };
    Ok(number * factor)
}

/// Files of one machine (one fingerprint), said once per fingerprint: under different labels they
/// compare a machine with itself, under one label they are pooled, where two versions of the
/// code may have been meant to be compared.
fn same_machine_warnings(machines: &[MachineColumn]) -> Vec<String> {
    let mut fingerprints: Vec<&str> = Vec::new();
    for machine in machines {
        if !fingerprints.contains(&machine.fingerprint.as_str()) {
            fingerprints.push(&machine.fingerprint);
        }
    }
    fingerprints
        .into_iter()
        .filter_map(|fingerprint| {
            let of_it: Vec<&MachineColumn> = machines.iter().filter(|m| m.fingerprint == fingerprint).collect();
            let files: Vec<&str> = of_it.iter().flat_map(|m| m.files.iter().map(String::as_str)).collect();
            if files.len() < 2 {
                return None;
            }
            let both = if files.len() == 2 { "both files".to_string() } else { format!("{} files", files.len()) };
            let how = if of_it.len() == 1 {
                format!(
                    "they are pooled as one machine, {:?} (if they measure two versions of your code, give each its own                      --machine label to compare them)",
                    of_it[0].label
                )
            } else {
                let labels: Vec<&str> = of_it.iter().map(|m| m.label.as_str()).collect();
                format!("{} are one machine, not several", labels.join(", "))
            };
            Some(format!(
                "warning: {both} ({}) come from the same machine (fingerprint {fingerprint}): {how}; if you meant to \
                 compare machines, run the benchmark on each (horde bench there, or --host) and compare those files",
                files.join(", ")
            ))
        })
        .collect()
}

pub fn compare(args: &CompareBenchArgs) -> Result<i32, Failure> {
    let mut problems = Vec::new();
    let threshold = parse_threshold(&args.threshold).unwrap_or_else(|e| {
        problems.push(e);
        0.01
    });
    let budget = args.budget.as_deref().map(parse_budget).transpose().unwrap_or_else(|e| {
        problems.push(e);
        None
    });
    if !(args.confidence > 0.5 && args.confidence < 1.0) {
        problems.push(format!("--confidence {}: a level between 0.5 and 1", args.confidence));
    }
    if !problems.is_empty() {
        return Err(crate::invalid_flags(problems));
    }
    let mut machines: Vec<MachineColumn> = Vec::new();
    for path in &args.files {
        let result = BenchResult::read(path).map_err(Failure::Invalid)?;
        let file = path.display().to_string();
        let machine = match machines.iter_mut().find(|m| m.label == result.machine.label) {
            Some(m) if m.fingerprint != result.machine.fingerprint => {
                return Err(Failure::Invalid(format!(
                    "refusing to pool results of different machines under one label {:?}: {} has fingerprint {}, {} has {} \
                     (the CPU, memory, kernel, virtualization, governor or runtimes differ); give each machine its own \
                     --machine label",
                    m.label,
                    m.files[0],
                    m.fingerprint,
                    file,
                    result.machine.fingerprint
                )));
            }
            Some(m) => m,
            None => {
                machines.push(MachineColumn {
                    label: result.machine.label.clone(),
                    fingerprint: result.machine.fingerprint.clone(),
                    files: Vec::new(),
                    cells: Vec::new(),
                });
                machines.last_mut().expect("just pushed")
            }
        };
        machine.files.push(file.clone());
        for cell in result.cells {
            let key = cell.key();
            let means = cell.trial_means();
            match machine.cells.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, existing, pooled)) => {
                    if existing.unit != cell.unit || existing.mode != cell.mode {
                        return Err(Failure::Invalid(format!(
                            "{file}: {key} is in {} ({}) here and in {} ({}) in another file of {}",
                            cell.unit, cell.mode, existing.unit, existing.mode, machine.label
                        )));
                    }
                    pooled.extend(means);
                }
                None => machine.cells.push((key, cell, means)),
            }
        }
    }
    let reference_index = match &args.reference {
        Some(label) => machines.iter().position(|m| &m.label == label).ok_or_else(|| {
            Failure::Invalid(format!(
                "--reference {label:?}: no file is of that machine (machines: {})",
                machines.iter().map(|m| m.label.as_str()).collect::<Vec<_>>().join(", ")
            ))
        })?,
        None => 0,
    };
    // Rows: every key, in the order first seen.
    let mut keys: Vec<(String, Cell)> = Vec::new();
    for m in &machines {
        for (key, cell, _) in &m.cells {
            if !keys.iter().any(|(k, _)| k == key) {
                keys.push((key.clone(), cell.clone()));
            }
        }
    }
    let confidence = args.confidence;
    let reference = &machines[reference_index];
    let mut header = vec!["Benchmark".to_string(), "Units".into(), format!("{} (reference)", reference.label)];
    let others: Vec<&MachineColumn> =
        machines.iter().enumerate().filter(|(i, _)| *i != reference_index).map(|(_, m)| m).collect();
    for m in &others {
        header.push(m.label.clone());
        header.push(format!("{} / {}", m.label, reference.label));
    }
    let mut rows = vec![header];
    let mut ratios: Vec<Vec<Ratio>> = vec![Vec::new(); others.len()];
    let mut slower = Vec::new();
    let mut change_charts: Vec<IntervalChart> = others
        .iter()
        .map(|m| IntervalChart {
            title: format!(
                "{} against {}: change of each cell's Score, {:.0} % interval; shaded: the {:.1} % noise threshold",
                m.label,
                reference.label,
                confidence * 100.0,
                threshold * 100.0
            ),
            axis: "change (%)".into(),
            unit: "%".into(),
            band: Some([-threshold * 100.0, threshold * 100.0]),
            ..IntervalChart::default()
        })
        .collect();
    for (key, template) in &keys {
        let mut row = vec![key.clone(), template.unit.clone(), cell_text(find(reference, key), confidence)];
        for (i, m) in others.iter().enumerate() {
            let mine = find(m, key);
            row.push(cell_text(mine, confidence));
            let ratio = match (find(reference, key), mine) {
                (Some(r), Some(o)) => stats::ratio(r, o, confidence),
                _ => None,
            };
            let change = &mut change_charts[i];
            change.labels.push(key.clone());
            let percent = |v: f64| Some(((v - 1.0) * 100_000.0).round() / 1000.0);
            change.values.push(ratio.as_ref().and_then(|r| percent(r.ratio)));
            change.low.push(ratio.as_ref().and_then(|r| percent(r.low)));
            change.high.push(ratio.as_ref().and_then(|r| percent(r.high)));
            change.colors.push(
                ratio.as_ref().map_or(NEUTRAL_COLOUR, |r| {
                    verdict_colour(stats::verdict(r, threshold, template.higher_is_better()))
                }),
            );
            row.push(match ratio {
                Some(r) => {
                    let verdict = stats::verdict(&r, threshold, template.higher_is_better());
                    if verdict == Verdict::Slower {
                        slower.push(format!("{key} on {}", m.label));
                    }
                    let text = ratio_text(&r, verdict);
                    ratios[i].push(r);
                    text
                }
                None => "n/a".into(),
            });
        }
        rows.push(row);
    }
    // The geometric mean of the ratios, where every cell has one (times and rates are not mixed).
    let all_same_direction =
        keys.iter().all(|(_, c)| c.higher_is_better()) || keys.iter().all(|(_, c)| !c.higher_is_better());
    if keys.len() > 1 && !others.is_empty() && all_same_direction {
        let mut row = vec!["geometric mean".to_string(), String::new(), String::new()];
        let higher_is_better = keys[0].1.higher_is_better();
        for list in &ratios {
            row.push(String::new());
            let refs: Vec<&Ratio> = list.iter().collect();
            row.push(match stats::geometric_mean(&refs, confidence) {
                Some(g) => ratio_text(&g, stats::verdict(&g, threshold, higher_is_better)),
                None => "n/a".into(),
            });
        }
        rows.push(row);
    }
    // What the table is: the console's header lines, and the page's notes.
    let mut notes = vec![
        format!(
            "Machines: {}",
            machines
                .iter()
                .map(|m| format!(
                    "{} ({} file{}, fingerprint {})",
                    m.label,
                    m.files.len(),
                    if m.files.len() == 1 { "" } else { "s" },
                    m.fingerprint
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        format!(
            "Score ± Error ({:.1} % confidence over trials); ratios of geometric means with their interval (Welch on log \
             trial means); noise threshold {:.1} %",
            confidence * 100.0,
            threshold * 100.0
        ),
    ];
    notes.extend(same_machine_warnings(&machines));
    let mut out: String = notes.iter().map(|note| format!("# {note}\n")).collect();
    out.push('\n');
    if args.markdown {
        out.push_str(&markdown(&rows));
    } else {
        out.push_str(&aligned(&rows));
    }
    let budget_text =
        budget.map(|b| budget_lines(&machines, &keys, b, confidence, args.budget.as_deref().unwrap_or_default()));
    if let Some(text) = &budget_text {
        out.push('\n');
        out.push_str(text);
    }
    print_text(&out);
    if let Some(path) = &args.html {
        let mut charts = score_charts(&machines, &keys, confidence);
        charts.extend(change_charts);
        let page = BenchPage {
            title: format!("bench: {}", machines.iter().map(|m| m.label.as_str()).collect::<Vec<_>>().join(" vs ")),
            slower: slower.clone(),
            notes: notes.clone(),
            charts,
            table: rows,
            budget: budget_text,
        };
        let written = horde_report::write_bench_html(&page, path)?;
        status!("horde bench compare: comparison page written to {}", written.display());
    }
    if args.fail_on == Some(FailOn::Slower) && !slower.is_empty() {
        status!("horde bench compare: slower than {}: {}", reference.label, slower.join("; "));
        return Ok(exit::REGRESSION);
    }
    Ok(exit::OK)
}

/// Colours that stay apart for the colour-blind (Okabe and Ito's), one per machine, with the
/// names the charts' titles give them (the colour-blind read the name).
const MACHINE_COLOURS: [(&str, &str); 6] = [
    ("#0072B2", "blue"),
    ("#E69F00", "orange"),
    ("#009E73", "green"),
    ("#CC79A7", "pink"),
    ("#56B4E9", "sky blue"),
    ("#555555", "grey"),
];
const SLOWER_COLOUR: &str = "#D55E00";
const FASTER_COLOUR: &str = "#009E73";
const NEUTRAL_COLOUR: &str = "#555555";

fn verdict_colour(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Slower => SLOWER_COLOUR,
        Verdict::Faster => FASTER_COLOUR,
        Verdict::WithinThreshold | Verdict::NotSignificant => NEUTRAL_COLOUR,
    }
}

/// Per benchmark, every cell's Score with its Error on each machine, side by side, a colour
/// per machine (the first machine's colour is the reference's).
fn score_charts(machines: &[MachineColumn], keys: &[(String, Cell)], confidence: f64) -> Vec<IntervalChart> {
    let mut benchmarks: Vec<&str> = Vec::new();
    for (_, cell) in keys {
        if !benchmarks.contains(&cell.benchmark.as_str()) {
            benchmarks.push(&cell.benchmark);
        }
    }
    let legend = machines
        .iter()
        .zip(MACHINE_COLOURS.iter().cycle())
        .map(|(m, (_, name))| format!("{} {name}", m.label))
        .collect::<Vec<_>>()
        .join(", ");
    benchmarks
        .into_iter()
        .map(|benchmark| {
            let cells: Vec<&(String, Cell)> = keys.iter().filter(|(_, c)| c.benchmark == benchmark).collect();
            let unit = cells.first().map(|(_, c)| c.unit.clone()).unwrap_or_default();
            let mut chart = IntervalChart {
                title: format!("{benchmark}: Score ± Error ({:.0} %) per machine ({legend})", confidence * 100.0),
                axis: unit.clone(),
                unit,
                positive: true,
                ..IntervalChart::default()
            };
            for (key, cell) in cells {
                for (machine, (colour, _)) in machines.iter().zip(MACHINE_COLOURS.iter().cycle()) {
                    let params = cell.params_text();
                    let slot =
                        if params.is_empty() { machine.label.clone() } else { format!("{params} {}", machine.label) };
                    chart.labels.push(slot);
                    chart.colors.push(colour);
                    match find(machine, key) {
                        Some(means) => {
                            let (score, error) = score(means, confidence);
                            let error = error.unwrap_or(0.0);
                            chart.values.push(Some(score));
                            chart.low.push(Some(score - error));
                            chart.high.push(Some(score + error));
                        }
                        None => {
                            chart.values.push(None);
                            chart.low.push(None);
                            chart.high.push(None);
                        }
                    }
                }
            }
            chart
        })
        .collect()
}

fn unit_of(machine: &MachineColumn, benchmark: &str) -> String {
    machine.cells.iter().find(|(_, c, _)| c.benchmark == benchmark).map(|(_, c, _)| c.unit.clone()).unwrap_or_default()
}

fn find<'a>(machine: &'a MachineColumn, key: &str) -> Option<&'a [f64]> {
    machine.cells.iter().find(|(k, _, _)| k == key).map(|(_, _, means)| means.as_slice()).filter(|m| !m.is_empty())
}

/// Score, Error and upper bound of pooled trial means.
fn score(means: &[f64], confidence: f64) -> (f64, Option<f64>) {
    let single: Vec<Vec<f64>> = means.iter().map(|m| vec![*m]).collect();
    let s = stats::cell_stats(&single, confidence).expect("at least one trial");
    (s.score, s.error)
}

fn cell_text(means: Option<&[f64]>, confidence: f64) -> String {
    match means {
        None => "-".into(),
        Some(means) => {
            let (score, error) = score(means, confidence);
            match error {
                Some(e) => format!("{} ± {}", number(score), number(e)),
                None => format!("{} (1 trial)", number(score)),
            }
        }
    }
}

fn ratio_text(r: &Ratio, verdict: Verdict) -> String {
    format!("x{:.3} [{:.3}, {:.3}] {}", r.ratio, r.low, r.high, verdict.symbol())
}

fn aligned(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(
                |(c, cell)| {
                    if c == 0 {
                        format!("{cell:<w$}", w = widths[c])
                    } else {
                        format!("{cell:>w$}", w = widths[c])
                    }
                },
            )
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn markdown(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        out.push_str(&format!("| {} |\n", row.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | ")));
        if i == 0 {
            out.push_str(&format!(
                "|{}\n",
                row.iter().enumerate().map(|(c, _)| if c == 0 { "---|" } else { "---:|" }).collect::<String>()
            ));
        }
    }
    out
}

/// Per machine and benchmark: the cell with the largest Score whose upper bound fits.
fn budget_lines(
    machines: &[MachineColumn],
    keys: &[(String, Cell)],
    budget_s: f64,
    confidence: f64,
    text: &str,
) -> String {
    let mut benchmarks: Vec<&str> = Vec::new();
    for (_, cell) in keys {
        if cell.mode == "avgt" && !benchmarks.contains(&cell.benchmark.as_str()) {
            benchmarks.push(&cell.benchmark);
        }
    }
    let mut out = String::new();
    for benchmark in benchmarks {
        out.push_str(&format!("Budget {text} for {benchmark} (the upper bound of the interval must fit):\n"));
        for m in machines {
            let mut best: Option<(f64, f64, String)> = None;
            for (_, cell, means) in &m.cells {
                if cell.benchmark != benchmark || cell.mode != "avgt" || means.is_empty() {
                    continue;
                }
                let budget = budget_s * super::unit_factor(&cell.unit);
                let (s, e) = score(means, confidence);
                let upper = s + e.unwrap_or(0.0);
                if upper <= budget && best.as_ref().is_none_or(|b| s > b.0) {
                    best = Some((s, upper, cell.params_text()));
                }
            }
            out.push_str(&match best {
                Some((s, upper, what)) => format!(
                    "  {}: {what}: {} {} (upper bound {})\n",
                    m.label,
                    number(s),
                    unit_of(m, benchmark),
                    number(upper)
                ),
                None => format!("  {}: none fits\n", m.label),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_and_budgets_parse() {
        assert_eq!(parse_threshold("1%").unwrap(), 0.01);
        assert_eq!(parse_threshold("0.05").unwrap(), 0.05);
        assert!(parse_threshold("150%").is_err());
        assert!((parse_budget("100ms").unwrap() - 0.1).abs() < 1e-12);
        assert!((parse_budget("2s").unwrap() - 2.0).abs() < 1e-12);
        assert!(parse_budget("3 parsecs").is_err());
    }
}

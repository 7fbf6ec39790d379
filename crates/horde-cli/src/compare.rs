//! `horde compare A B`: reads two sets of runs, checks that they ran the same plan, prints
//! the comparison and exits 99 on a regression. The statistics are horde_report::compare's.

use crate::args::CompareArgs;
use crate::output::{print_text, status};
use crate::{exit, invalid_flags, Failure};
use anyhow::Context;
use horde_report::compare::{self, CompareOptions, CompareReport, LoadedSide, Tolerance};
use std::path::{Path, PathBuf};

/// The word between the two sides when each has several paths.
const SEPARATOR: &str = "vs";

pub(crate) fn compare(args: &CompareArgs) -> Result<i32, Failure> {
    let Settings { options, names: [name_a, name_b] } = Settings::from_args(args)?;
    let (a_specs, b_specs) = split_sides(&args.paths)?;
    let a = compare::load_side(&name_a, &a_specs).map_err(|e| Failure::Invalid(e.to_string()))?;
    let b = compare::load_side(&name_b, &b_specs).map_err(|e| Failure::Invalid(e.to_string()))?;
    let mut differences_within = Vec::new();
    for side in [&a, &b] {
        differences_within.extend(plans_within(side));
    }
    let mut report = compare::compare_sides(&a, &b, &options).map_err(|e| Failure::Invalid(e.to_string()))?;
    // The two plans of `horde run --trials N A B` differ by design: listed, as the trials
    // listed them, not refused.
    let trials_of_two_plans = trials_parent(&a, &b).is_some();
    if !args.force && (!report.plan_differences.is_empty() && !trials_of_two_plans || !differences_within.is_empty()) {
        let mut message = String::from("the runs did not run the same plan (base URLs and names aside):");
        for difference in differences_within.iter().chain(&report.plan_differences) {
            message.push_str("\n  ");
            message.push_str(difference);
        }
        message.push_str("\npass --force to compare them anyway");
        return Err(Failure::Invalid(message));
    }
    report.warnings.extend(differences_within);
    print_text(&compare::render(&report));
    finish(&report, args.json.as_deref(), args.html.as_deref())
}

/// Writes the report's JSON and HTML page when asked, and gives the exit code.
pub(crate) fn finish(report: &CompareReport, json: Option<&Path>, html: Option<&Path>) -> Result<i32, Failure> {
    if let Some(path) = json {
        write_json(report, path)?;
    }
    if let Some(path) = html {
        write_html(report, path)?;
    }
    Ok(if report.regression { exit::REGRESSION } else { exit::OK })
}

pub(crate) fn write_html(report: &CompareReport, path: &Path) -> Result<(), Failure> {
    let written = horde_report::write_compare_html(report, path)?;
    status!("horde: comparison page written to {}", written.display());
    Ok(())
}

pub(crate) fn write_json(report: &CompareReport, path: &Path) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(report).expect("a comparison serializes") + "\n";
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The flags of a comparison once every one is valid.
struct Settings {
    options: CompareOptions,
    /// The sides' names: A and B, or `--names`.
    names: [String; 2],
}

impl Settings {
    /// Every problem with the flags, at once.
    fn from_args(args: &CompareArgs) -> Result<Settings, Failure> {
        let mut problems = Vec::new();
        let tolerance = Tolerance::parse(&args.tolerance).unwrap_or_else(|problem| {
            problems.push(format!("--tolerance: {problem}"));
            Tolerance::default()
        });
        if !(args.alpha > 0.0 && args.alpha < 1.0) {
            problems.push(format!("--alpha: {} is not a probability between 0 and 1 (e.g. 0.05)", args.alpha));
        }
        let names = match args.names.as_deref().map(side_names) {
            None => ["A".to_string(), "B".to_string()],
            Some(Ok(names)) => names,
            Some(Err(problem)) => {
                problems.push(format!("--names {problem}"));
                Default::default()
            }
        };
        if problems.is_empty() {
            Ok(Settings { options: CompareOptions { alpha: args.alpha, tolerance }, names })
        } else {
            Err(invalid_flags(problems))
        }
    }
}

/// `--names before,after`: two names, different and not empty.
fn side_names(text: &str) -> Result<[String; 2], String> {
    match text.split(',').map(str::trim).collect::<Vec<_>>().as_slice() {
        [a, b] if !a.is_empty() && !b.is_empty() && a != b => Ok([a.to_string(), b.to_string()]),
        _ => Err(format!("{text:?}: give two different names separated by a comma, the base first (before,after)")),
    }
}

/// The directory `horde run --trials N A B` made, when the two sides are its `A` and `B`
/// (every run of A in its A/, every run of B in its B/, and its trials.json beside them).
fn trials_parent(a: &LoadedSide, b: &LoadedSide) -> Option<PathBuf> {
    let parent_of = |side: &LoadedSide, arm: &str| -> Option<PathBuf> {
        let mut parents = side.runs.iter().map(|run| {
            let arm_dir = std::fs::canonicalize(&run.dir).ok()?.parent()?.to_path_buf();
            (arm_dir.file_name()? == arm).then(|| arm_dir.parent().map(Path::to_path_buf)).flatten()
        });
        let first = parents.next()??;
        parents.all(|parent| parent.as_ref() == Some(&first)).then_some(first)
    };
    let parent = parent_of(a, "A")?;
    (parent_of(b, "B")? == parent && parent.join(crate::trials::TRIALS_FILE).is_file()).then_some(parent)
}

/// `A B`, or `A1 A2 ... vs B1 B2 ...`.
fn split_sides(paths: &[String]) -> Result<(Vec<String>, Vec<String>), Failure> {
    let separators: Vec<usize> = paths.iter().enumerate().filter(|(_, p)| *p == SEPARATOR).map(|(i, _)| i).collect();
    match separators.as_slice() {
        [] if paths.len() == 2 => Ok((vec![paths[0].clone()], vec![paths[1].clone()])),
        [] => Err(Failure::Invalid(format!(
            "{} paths given: with more than one a side, separate A's from B's with `{SEPARATOR}` \
             (horde compare a1 a2 {SEPARATOR} b1 b2), or give each side as one quoted pattern",
            paths.len()
        ))),
        [at] if *at > 0 && *at + 1 < paths.len() => Ok((paths[..*at].to_vec(), paths[at + 1..].to_vec())),
        [_] => Err(Failure::Invalid(format!("`{SEPARATOR}` needs runs on both sides"))),
        _ => Err(Failure::Invalid(format!("`{SEPARATOR}` may separate the two sides only once"))),
    }
}

/// The runs of one side must have run one plan too.
fn plans_within(side: &LoadedSide) -> Vec<String> {
    let first = &side.runs[0];
    side.runs[1..]
        .iter()
        .flat_map(|run| {
            compare::plan_differences(&first.summary.plan, &run.summary.plan)
                .into_iter()
                .map(move |difference| format!("{} vs {}: {difference}", first.dir.display(), run.dir.display()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sides_split_at_vs() {
        let (a, b) = split_sides(&strings(&["x", "y"])).ok().unwrap();
        assert_eq!((a, b), (strings(&["x"]), strings(&["y"])));
        let (a, b) = split_sides(&strings(&["a1", "a2", "vs", "b1"])).ok().unwrap();
        assert_eq!((a, b), (strings(&["a1", "a2"]), strings(&["b1"])));
        for bad in [&["a", "b", "c"][..], &["vs", "b"], &["a", "vs"], &["a", "vs", "b", "vs", "c"]] {
            assert!(split_sides(&strings(bad)).is_err(), "{bad:?}");
        }
    }
}

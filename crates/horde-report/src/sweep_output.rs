//! A sweep's files: sweep.json (what `horde report` re-renders from), sweep.csv (seed 004's
//! table), sweep.svg (its chart) and report.html. Kept apart from the sweep's analysis, which
//! the chart and the pages read and which reads neither.

use crate::sweep::SweepReport;
use std::path::Path;

/// Writes sweep.json, sweep.csv, sweep.svg and report.html into `dir`.
pub fn write_sweep(report: &SweepReport, dir: &Path) -> std::io::Result<()> {
    let json = serde_json::to_string_pretty(report).expect("reports serialize");
    std::fs::write(dir.join("sweep.json"), json + "\n")?;
    std::fs::write(dir.join("sweep.csv"), report.csv())?;
    std::fs::write(dir.join("sweep.svg"), crate::sweep_chart::render(report))?;
    crate::html::write_file(dir, &crate::html::render_sweep(report)).map(|_| ()).map_err(std::io::Error::other)
}

//! horde's outputs, from measurements to what people read: summary.json (the results
//! directory, written as the run goes), the console summary, and the progress line.
//! Everything here works from a saved summary alone, so a run can be re-rendered.
//!
//! ```no_run
//! let summary = horde_report::read_summary(std::path::Path::new("results/journey-20261121-062100")).unwrap();
//! print!("{}", horde_report::render_console(&summary));
//! ```

pub mod compare;
mod console;
mod histogram_log;
mod html;
mod iron_cushion;
mod job_summary;
mod junit;
mod locust;
mod openmetrics;
mod percentile_distribution;
mod request_log;
mod results;
mod results_dir;
mod results_watch;
mod sql;
mod summary;
mod sweep;
mod sweep_chart;
mod sweep_output;
pub mod terminal;
mod timeseries;

pub use console::render as render_console;
pub use histogram_log::{HistogramLogWriter, HISTOGRAM_LOG};
pub use html::{
    render_bench, render_compare, render_html, render_live, write_bench_html, write_compare_html, write_html,
    BenchPage, IntervalChart, LiveDocument, LivePage, LiveReport, ReadCache,
};
pub use iron_cushion::render_iron_cushion;
pub use job_summary::render_job_summary;
pub use junit::{render_junit, verdict_message};
pub use locust::LocustExport;
pub use openmetrics::{render_openmetrics, LiveMetrics, MAX_ERROR_LABELS, MAX_REQUEST_LABELS};
pub use percentile_distribution::{render as render_percentile_distribution, HgrmEntry, HGRM_DIR};
pub use request_log::RequestLogWriter;
pub use results::ResultsSink;
pub use results_dir::{create_results_dir, read_summary, write_summary, ResultsError};
pub use results_watch::{ResultsWatch, Written};
pub use sql::render_sql;
pub use summary::{rfc3339, Environment, RunInfo, Summary, SUMMARY_VERSION};
pub use sweep::{format_level, Boundary, SweepLevel, SweepReport};
pub use sweep_output::write_sweep;
pub use timeseries::TimeSeriesWriter;

#[cfg(test)]
mod layering {
    /// The modules others build on read none of the modules built on them, so no two modules
    /// of this crate need each other: a sweep's analysis reads neither its chart nor its pages
    /// nor its files, and the results directory's files read neither the sink nor the pages.
    #[test]
    fn leaves_read_nothing_built_on_them() {
        let leaves: [(&str, &[&str]); 3] = [
            ("sweep.rs", &["crate::html", "crate::sweep_chart", "crate::sweep_output"]),
            ("results_dir.rs", &["crate::html", "crate::results::", "crate::results_watch"]),
            ("sweep_chart.rs", &["crate::html", "crate::sweep_output"]),
        ];
        for (file, forbidden) in leaves {
            let text = std::fs::read_to_string(format!("{}/src/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for name in forbidden {
                assert!(!code.contains(name), "{file} names {name}");
            }
        }
    }
}

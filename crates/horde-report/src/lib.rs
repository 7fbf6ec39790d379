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
mod results_watch;
mod sql;
mod summary;
mod sweep;
mod sweep_chart;
pub mod terminal;
mod timeseries;

pub use console::render as render_console;
pub use histogram_log::{HistogramLogWriter, HISTOGRAM_LOG};
pub use html::{
    render_bench, render_compare, render_html, render_live, write_bench_html, write_compare_html, write_html,
    BenchPage, IntervalChart, LivePage, LiveReport,
};
pub use iron_cushion::render_iron_cushion;
pub use job_summary::render_job_summary;
pub use junit::{render_junit, verdict_message};
pub use locust::LocustExport;
pub use openmetrics::{render_openmetrics, LiveMetrics, MAX_ERROR_LABELS, MAX_REQUEST_LABELS};
pub use percentile_distribution::{render as render_percentile_distribution, HgrmEntry, HGRM_DIR};
pub use request_log::RequestLogWriter;
pub use results::{create_results_dir, read_summary, write_summary, ResultsError, ResultsSink};
pub use results_watch::{ResultsWatch, Written};
pub use sql::render_sql;
pub use summary::{rfc3339, Environment, RunInfo, Summary, SUMMARY_VERSION};
pub use sweep::{format_level, Boundary, SweepLevel, SweepReport};
pub use timeseries::TimeSeriesWriter;

//! `--export FORMAT:PREFIX` and `--request-log FILE`: checked with the other flags before
//! anything is created, then opened (files created, headers written) before the run starts,
//! so that a path that cannot be written is found before the load.

use crate::args::ExportArgs;
use crate::{invalid_flags, Failure};
use horde_engine::Program;
use horde_metrics::{RequestLogFormat, RequestLogOutput};
use horde_report::{LocustExport, RequestLogWriter};
use std::collections::HashMap;
use std::path::PathBuf;

/// The formats `--export` knows.
const EXPORT_FORMATS: &str = "locust";

/// The exports the flags ask for, checked.
#[derive(Default)]
pub(crate) struct Requested {
    locust: Option<PathBuf>,
    request_log: Option<(PathBuf, RequestLogFormat)>,
}

/// The exports, open and ready for the run.
#[derive(Default)]
pub(crate) struct Opened {
    pub locust: Option<LocustExport>,
    pub request_log: Option<(RequestLogWriter, RequestLogOutput)>,
}

impl Requested {
    pub fn parse(args: &ExportArgs) -> Result<Requested, Failure> {
        let mut problems = Vec::new();
        let mut requested = Requested::default();
        for spec in &args.exports {
            match spec.split_once(':') {
                Some(("locust", prefix)) if !prefix.is_empty() => {
                    if requested.locust.replace(PathBuf::from(prefix)).is_some() {
                        problems.push(format!("--export {spec}: locust is given twice"));
                    }
                }
                Some(("locust", _)) => problems.push(format!(
                    "--export {spec}: the prefix is missing: locust:PREFIX writes PREFIX_stats.csv and the other files"
                )),
                _ => problems.push(format!(
                    "--export {spec}: expected FORMAT:PREFIX, where FORMAT is one of: {EXPORT_FORMATS} (e.g. locust:results/run)"
                )),
            }
        }
        if let Some(path) = &args.request_log {
            match RequestLogFormat::from_path(path) {
                Ok(format) => requested.request_log = Some((path.clone(), format)),
                Err(problem) => problems.push(problem),
            }
        }
        if problems.is_empty() {
            Ok(requested)
        } else {
            Err(invalid_flags(problems))
        }
    }

    /// Creates the files. Locust's prefix is relative to the current directory, as Locust's
    /// `--csv`; its directory is created when missing.
    pub fn open(self, program: &Program) -> Result<Opened, Failure> {
        let mut opened = Opened::default();
        if let Some(prefix) = self.locust {
            let methods: HashMap<String, String> = program
                .rows
                .iter()
                .zip(&program.row_methods)
                .filter_map(|(name, method)| method.map(|m| (name.to_string(), m.to_string())))
                .collect();
            let cannot = |cause: std::io::Error| {
                Failure::Runtime(anyhow::anyhow!(
                    "--export locust:{}: cannot write its files: {cause}",
                    prefix.display()
                ))
            };
            if let Some(parent) = prefix.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(cannot)?;
            }
            opened.locust = Some(LocustExport::create(&prefix, methods).map_err(cannot)?);
        }
        if let Some((path, format)) = self.request_log {
            let started = RequestLogWriter::start(&path, format).map_err(|cause| {
                Failure::Runtime(anyhow::anyhow!("--request-log {}: cannot create it: {cause}", path.display()))
            })?;
            opened.request_log = Some(started);
        }
        Ok(opened)
    }
}

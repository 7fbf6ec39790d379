//! Python function benchmarks: each call starts `python -m horde.bench_worker` afresh, so
//! every trial is a new interpreter (pyperf's way), and reads the JSON it prints.

use serde::Deserialize;
use std::path::Path;
use std::process::Command;

/// The interpreter: `$HORDE_PYTHON` (the console script sets it to its own), else `python3`.
pub fn interpreter() -> String {
    std::env::var("HORDE_PYTHON").ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "python3".into())
}

/// Why a worker failed: the file's problem (exit 2), Ctrl-C, or anything else.
pub enum WorkerError {
    Invalid(String),
    Interrupted,
    Failed(String),
}

fn call(args: &[&str]) -> Result<serde_json::Value, WorkerError> {
    let python = interpreter();
    let output = Command::new(&python)
        .args(["-m", "horde.bench_worker"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| WorkerError::Failed(format!("cannot start {python}: {e}")))?;
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    match output.status.code() {
        Some(0) => {}
        Some(2) => return Err(WorkerError::Invalid(stderr)),
        Some(130) => return Err(WorkerError::Interrupted),
        _ if crate::signals::interrupted() => return Err(WorkerError::Interrupted),
        _ => {
            return Err(WorkerError::Failed(format!(
                "the benchmark worker ({python} -m horde.bench_worker) failed ({}): {}",
                output.status,
                crate::loader::explain_python_failure(&python, &stderr)
            )))
        }
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| WorkerError::Failed(format!("the benchmark worker printed no JSON ({e}): {stderr}")))
}

#[derive(Debug, Deserialize)]
pub struct Declared {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub prepare: Option<String>,
    pub params: Vec<DeclaredParam>,
    pub unit: String,
    /// A scenario's metric (`mean`, `p99`, `throughput`...).
    #[serde(default)]
    pub metric: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct DeclaredParam {
    pub name: String,
    pub values: Vec<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
pub struct Listing {
    pub python: String,
    pub benchmarks: Vec<Declared>,
}

pub fn list(file: &Path) -> Result<Listing, WorkerError> {
    let value = call(&["list", &file.to_string_lossy()])?;
    serde_json::from_value(value).map_err(|e| WorkerError::Failed(format!("the worker's listing: {e}")))
}

pub fn calibrate(file: &Path, name: &str, params: &str, iteration_seconds: f64) -> Result<u64, WorkerError> {
    let value = call(&["calibrate", &file.to_string_lossy(), name, params, &iteration_seconds.to_string()])?;
    value["loops"].as_u64().ok_or_else(|| WorkerError::Failed("the worker's calibration had no loops".into()))
}

#[derive(Debug, Deserialize)]
pub struct TrialOutput {
    /// Seconds per call.
    pub warmup: Vec<f64>,
    pub iterations: Vec<f64>,
    pub timer_resolution_ns: f64,
}

pub fn trial(
    file: &Path,
    name: &str,
    params: &str,
    loops: u64,
    warmup: usize,
    measure: usize,
) -> Result<TrialOutput, WorkerError> {
    let value = call(&[
        "run",
        &file.to_string_lossy(),
        name,
        params,
        &loops.to_string(),
        &warmup.to_string(),
        &measure.to_string(),
    ])?;
    serde_json::from_value(value).map_err(|e| WorkerError::Failed(format!("the worker's trial: {e}")))
}

/// The plan of one trial of a scenario benchmark.
pub fn plan(file: &Path, name: &str, params: &str, warmup_ms: u64, measure_ms: u64) -> Result<String, WorkerError> {
    let value =
        call(&["plan", &file.to_string_lossy(), name, params, &warmup_ms.to_string(), &measure_ms.to_string()])?;
    Ok(value.to_string())
}

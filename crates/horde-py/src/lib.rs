//! `horde._engine`: the bridge between the Python package and the Rust crates. It converts,
//! raises, and releases the GIL; the logic lives in horde-cli and below.
//!
//! One crossing per run: the plan goes in as JSON, the engine runs with the GIL released, and
//! only the simulation loader (Python code, by nature) takes the GIL back.

mod cluster;

use pyo3::prelude::*;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Loads simulations by calling `horde.loader` in this interpreter.
struct InProcessLoader;

impl InProcessLoader {
    fn call(
        &self,
        function: &str,
        args: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>>,
    ) -> Result<String, horde_cli::LoadError> {
        Python::attach(|py| {
            let result = (|| {
                let module = py.import("horde.loader")?;
                let args = args(py)?;
                module.getattr(function)?.call1(args)?.extract::<String>()
            })();
            result.map_err(|err| {
                if err.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                    horde_cli::LoadError::interrupted()
                } else {
                    horde_cli::LoadError::new(err.value(py).to_string())
                }
            })
        })
    }
}

impl horde_cli::SimulationLoader for InProcessLoader {
    fn load(&self, path: &Path, params: &[(String, String)]) -> Result<String, horde_cli::LoadError> {
        let path = path.to_string_lossy().into_owned();
        let params = params.to_vec();
        self.call("load_simulation", move |py| {
            let dict = pyo3::types::PyDict::new(py);
            for (name, value) in params {
                dict.set_item(name, value)?;
            }
            pyo3::types::PyTuple::new(py, [path.into_pyobject(py)?.into_any(), dict.into_any()])
        })
    }

    fn demo_simulation(&self) -> Result<PathBuf, horde_cli::LoadError> {
        self.call("demo_simulation_path", |py| Ok(pyo3::types::PyTuple::empty(py))).map(PathBuf::from)
    }

    fn session_functions(&self) -> Option<std::sync::Arc<dyn horde_engine::SessionFunctions>> {
        loaded_session_functions()
    }

    fn run_python_command(&self, command: &str, flags_json: &str) -> Result<i32, horde_cli::LoadError> {
        let (command, flags_json) = (command.to_string(), flags_json.to_string());
        Python::attach(|py| {
            let result = (|| {
                let module = py.import("horde.recording.cli")?;
                module.getattr("run")?.call1((command.as_str(), flags_json.as_str()))?.extract::<i32>()
            })();
            result.map_err(|err| {
                if err.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                    horde_cli::LoadError::interrupted()
                } else {
                    // A bug of the command's own: the traceback says where.
                    err.print(py);
                    horde_cli::LoadError::new(format!("internal error in horde {command}"))
                }
            })
        })
    }

    fn open_cluster(
        &self,
        spec: &str,
        spares: u32,
        simulation: Option<&horde_cli::SimulationFile>,
    ) -> Result<std::sync::Arc<dyn horde_engine::cluster::ShareHosts>, horde_cli::ClusterOpenError> {
        cluster::open_cluster(spec, spares, simulation)
    }

    fn front_end(&self) -> String {
        Python::attach(|py| {
            let version = py
                .import("platform")
                .and_then(|platform| platform.call_method0("python_version"))
                .and_then(|v| v.extract::<String>())
                .unwrap_or_default();
            format!("python {version}")
        })
    }
}

/// The session functions and hooks of the simulation this interpreter loaded last
/// (`horde.session`), if it has any.
pub(crate) fn loaded_session_functions() -> Option<std::sync::Arc<dyn horde_engine::SessionFunctions>> {
    let call = Python::attach(|py| {
        let module = py.import("horde.session").ok()?;
        let any = module.getattr("_has_any").and_then(|f| f.call0()?.extract::<bool>()).unwrap_or(false);
        any.then(|| module.getattr("_call").ok().map(Bound::unbind)).flatten()
    })?;
    Some(std::sync::Arc::new(PythonFunctions { call }) as std::sync::Arc<dyn horde_engine::SessionFunctions>)
}

/// Runs the simulation's session functions and hooks (`horde.session`) in this interpreter,
/// taking Python's lock for each call.
struct PythonFunctions {
    /// `horde.session._call`, looked up once: not a module import and an attribute lookup per
    /// call.
    call: Py<PyAny>,
}

impl PythonFunctions {
    fn invoke(
        function: &str,
        args: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>>,
    ) -> Result<Option<String>, String> {
        Python::attach(|py| {
            let result = (|| {
                let module = py.import("horde.session")?;
                let value = module.getattr(function)?.call1(args(py)?)?;
                if value.is_none() {
                    Ok(None)
                } else {
                    value.extract::<String>().map(Some)
                }
            })();
            result.map_err(|err| err.value(py).to_string())
        })
    }
}

impl horde_engine::SessionFunctions for PythonFunctions {
    fn call(&self, key: &str, user_id: u64, scenario: &str, variables: &str) -> Result<String, String> {
        Python::attach(|py| {
            self.call
                .bind(py)
                .call1((key, user_id, scenario, variables))
                .and_then(|changes| changes.extract::<String>())
                .map_err(|err| err.value(py).to_string())
        })
    }

    /// The worker thread gets its Python thread state once, and keeps it while it runs with
    /// the lock released: each call then only takes the lock, instead of creating and
    /// destroying a thread state, which was three quarters of a call (31 -> 7.6 µs of CPU,
    /// bench/session_function_cost.py).
    fn on_worker_thread(&self, run: &mut (dyn FnMut() + Send)) {
        Python::attach(|py| py.detach(run));
    }

    fn before_run(&self) -> Result<(), String> {
        Self::invoke("_before", |py| Ok(pyo3::types::PyTuple::empty(py))).map(drop)
    }

    fn after_run(&self, summary: &str) -> Result<(), String> {
        let summary = summary.to_string();
        Self::invoke("_after", move |py| pyo3::types::PyTuple::new(py, [summary.into_pyobject(py)?.into_any()]))
            .map(drop)
    }
}

/// Runs the horde command line with `argv` (argv[0] included) and returns its exit code.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    let argv: Vec<OsString> = argv.into_iter().map(OsString::from).collect();
    py.detach(|| horde_cli::cli_main(argv, &InProcessLoader))
}

/// Validates a plan (JSON text); returns a list of (path, message), empty when valid.
#[pyfunction]
fn validate_plan(plan_json: &str) -> Vec<(String, String)> {
    let errors = match horde_plan::Plan::from_json(plan_json) {
        Ok(plan) => plan.validate(),
        Err(errors) => errors,
    };
    errors.into_iter().map(|e| (e.path, e.message)).collect()
}

/// The JSON Schema of the plan format.
#[pyfunction]
fn plan_schema() -> String {
    horde_plan::Plan::json_schema().to_string()
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(validate_plan, m)?)?;
    m.add_function(wrap_pyfunction!(plan_schema, m)?)?;
    m.add_class::<cluster::ShareRunner>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PLAN_VERSION", horde_plan::PLAN_VERSION)?;
    Ok(())
}

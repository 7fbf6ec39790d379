//! Python simulations become plans through a loader. The Python package provides one that
//! runs in-process; [`PythonSubprocessLoader`] lets the standalone binary do the same through
//! `python3 -m horde.loader`, when the horde package is installed.

use horde_engine::cluster::ShareHosts;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A simulation that could not be turned into a plan; the message says where and why.
#[derive(Debug, Clone)]
pub struct LoadError {
    pub message: String,
    /// Loading stopped for Ctrl-C or SIGTERM, not for a problem of the simulation.
    pub interrupted: bool,
}

impl LoadError {
    pub fn new(message: impl Into<String>) -> LoadError {
        LoadError { message: message.into(), interrupted: false }
    }

    pub fn interrupted() -> LoadError {
        LoadError { message: "interrupted".into(), interrupted: true }
    }
}

/// The exit code of `python -m horde.loader` interrupted by Ctrl-C.
const LOADER_INTERRUPTED: i32 = 130;

pub trait SimulationLoader {
    /// Runs the simulation file with `-D` parameters and returns its plan as JSON.
    fn load(&self, path: &Path, params: &[(String, String)]) -> Result<String, LoadError>;
    /// The simulation `horde demo` runs.
    fn demo_simulation(&self) -> Result<PathBuf, LoadError>;
    /// What made the plan, for the environment block of the results.
    fn front_end(&self) -> String;
    /// Runs a command written in Python (`import`, `record`: horde.recording) with its flags as
    /// JSON, its output going straight to the terminal; returns its exit code.
    fn run_python_command(&self, command: &str, flags_json: &str) -> Result<i32, LoadError>;
    /// The session functions and run hooks of the simulation just loaded, when it has any
    /// and this loader can run them (in-process Python can; a child process cannot).
    fn session_functions(&self) -> Option<std::sync::Arc<dyn horde_engine::SessionFunctions>> {
        None
    }
    /// The machines of `--cluster SPEC` (Dask, in horde.cluster), connected to or started,
    /// `spares` of them kept to replace lost ones; `simulation`, when its session functions
    /// must run in the shares, is loaded by each worker for them. Only the Python package has
    /// Dask: the standalone binary refuses the flag.
    fn open_cluster(
        &self,
        spec: &str,
        _spares: u32,
        _simulation: Option<&SimulationFile>,
    ) -> Result<std::sync::Arc<dyn ShareHosts>, ClusterOpenError> {
        Err(ClusterOpenError::Invalid(format!(
            "--cluster {spec}: runs on Dask from Python; this standalone binary has no Dask. Run the horde of the \
             Python package, with Dask: pip install 'horde[cluster]'"
        )))
    }
}

/// A simulation file and its `-D` parameters: what a process loads to get the simulation's
/// session functions (a share on another machine of `--cluster` reads it at the same path).
#[derive(Debug, Clone, Default)]
pub struct SimulationFile {
    pub path: PathBuf,
    pub params: Vec<(String, String)>,
}

/// Why `--cluster` has no machines.
#[derive(Debug, Clone)]
pub enum ClusterOpenError {
    /// The user's to fix (exit 2): Dask is not installed, an address that is no scheduler's.
    Invalid(String),
    /// The cluster could not be reached or started (exit 3).
    Unavailable(String),
    /// Ctrl-C or SIGTERM while it was started.
    Interrupted,
}

/// Loads simulations with `$HORDE_PYTHON` (default `python3`) in a child process.
pub struct PythonSubprocessLoader {
    python: String,
}

impl Default for PythonSubprocessLoader {
    fn default() -> Self {
        PythonSubprocessLoader { python: std::env::var("HORDE_PYTHON").unwrap_or_else(|_| "python3".into()) }
    }
}

impl PythonSubprocessLoader {
    fn call(&self, args: &[String]) -> Result<String, LoadError> {
        let output = Command::new(&self.python)
            .args(["-m", "horde.loader"])
            .args(args)
            .output()
            .map_err(|e| LoadError::new(format!("cannot start {}: {e}", self.python)))?;
        if output.status.code() == Some(LOADER_INTERRUPTED) {
            return Err(LoadError::interrupted());
        }
        if !output.status.success() {
            return Err(LoadError::new(explain_python_failure(
                &self.python,
                String::from_utf8_lossy(&output.stderr).trim(),
            )));
        }
        // What the simulation printed (the loader sends it to stderr, keeping stdout for the
        // plan) is shown as it would be in-process.
        let printed = String::from_utf8_lossy(&output.stderr);
        if !printed.trim().is_empty() {
            crate::output::status_line(format_args!("{}", printed.trim_end()));
        }
        String::from_utf8(output.stdout).map_err(|_| LoadError::new("the loader printed non-UTF-8 text"))
    }
}

impl SimulationLoader for PythonSubprocessLoader {
    fn load(&self, path: &Path, params: &[(String, String)]) -> Result<String, LoadError> {
        let mut args = vec!["load".to_string(), path.to_string_lossy().into_owned()];
        for (name, value) in params {
            args.push("-D".into());
            args.push(format!("{name}={value}"));
        }
        self.call(&args)
    }

    fn demo_simulation(&self) -> Result<PathBuf, LoadError> {
        self.call(&["demo-path".to_string()]).map(|p| PathBuf::from(p.trim()))
    }

    fn front_end(&self) -> String {
        format!("{} (subprocess)", self.python)
    }

    fn run_python_command(&self, command: &str, flags_json: &str) -> Result<i32, LoadError> {
        let started = |e: std::io::Error| LoadError::new(format!("cannot start {}: {e}", self.python));
        let mut child =
            Command::new(&self.python).args(["-m", "horde.recording", command, flags_json]).spawn().map_err(started)?;
        let mut forwarded = false;
        loop {
            if let Some(status) = child.try_wait().map_err(started)? {
                return Ok(status.code().unwrap_or(LOADER_INTERRUPTED));
            }
            // Ctrl-C at a terminal reaches the child too; a signal sent to horde alone (kill,
            // a CI runner's SIGTERM) must reach it as well: the recorder writes its file then.
            if !forwarded && crate::signals::interrupted() {
                forwarded = true;
                if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// What a child `python -m horde....` printed when it failed; when that interpreter cannot
/// import horde at all, how to give it one that can: the message alone ("No module named
/// 'horde'") does not say that `$HORDE_PYTHON` chose the interpreter.
pub(crate) fn explain_python_failure(python: &str, stderr: &str) -> String {
    let lacks_horde = stderr.contains("No module named 'horde'") || stderr.contains("No module named horde");
    if !lacks_horde {
        return stderr.to_string();
    }
    let chosen = match std::env::var("HORDE_PYTHON") {
        Ok(value) if !value.is_empty() => format!("HORDE_PYTHON={value}"),
        _ => "the default python3 (HORDE_PYTHON is not set)".to_string(),
    };
    format!(
        "{python} cannot import horde: horde's Python workers run in {chosen}, which must have horde installed. \
         Install it there ({python} -m pip install horde), or set HORDE_PYTHON to an interpreter that has it \
         (the one horde runs from is set by default). {python} said: {stderr}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interpreter_without_horde_is_named_with_the_way_out() {
        let said = "/usr/bin/python3: Error while finding module specification for 'horde.loader' \
                    (ModuleNotFoundError: No module named 'horde')";
        let explained = explain_python_failure("/usr/bin/python3", said);
        assert!(explained.starts_with("/usr/bin/python3 cannot import horde"), "{explained}");
        assert!(explained.contains("-m pip install horde") && explained.contains("HORDE_PYTHON"), "{explained}");
        assert!(explained.ends_with(said));
        assert_eq!(explain_python_failure("python3", "sim.py:3: NameError: x"), "sim.py:3: NameError: x");
    }
}

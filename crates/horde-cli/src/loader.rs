//! Python simulations become plans through a loader. The Python package provides one that
//! runs in-process; [`PythonSubprocessLoader`] lets the standalone binary do the same through
//! `python3 -m horde.loader`, when the horde package is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A simulation that could not be turned into a plan; the message says where and why.
#[derive(Debug, Clone)]
pub struct LoadError {
    pub message: String,
}

pub trait SimulationLoader {
    /// Runs the simulation file with `-D` parameters and returns its plan as JSON.
    fn load(&self, path: &Path, params: &[(String, String)]) -> Result<String, LoadError>;
    /// The simulation `horde demo` runs.
    fn demo_simulation(&self) -> Result<PathBuf, LoadError>;
    /// What made the plan, for the environment block of the results.
    fn front_end(&self) -> String;
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
            .map_err(|e| LoadError { message: format!("cannot start {}: {e}", self.python) })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
            return Err(LoadError { message: stderr });
        }
        String::from_utf8(output.stdout).map_err(|_| LoadError { message: "the loader printed non-UTF-8 text".into() })
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
}

//! `--cluster` between Rust and horde.cluster (Dask): the coordinator's machines and links
//! (`PyShareHosts`, over horde.cluster's `Coordinator`), and a share run by a Dask worker
//! (`ShareRunner`, its link over horde.cluster's share link). Conversions only: what a run
//! means is in horde-engine's cluster/ and horde-cli.

use horde_engine::cluster::{CoordinatorLink, LostShare, ShareClock, ShareHosts, ShareLease, ShareLink};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Opens `--cluster SPEC` with `horde.cluster.open_cluster`, `spares` workers kept idle, and
/// the `simulation` each worker loads for its session functions: its `ClusterInputError` is
/// the user's to fix (exit 2), any other exception a cluster that could not be had (exit 3).
pub(crate) fn open_cluster(
    spec: &str,
    spares: u32,
    simulation: Option<&horde_cli::SimulationFile>,
) -> Result<Arc<dyn ShareHosts>, horde_cli::ClusterOpenError> {
    Python::attach(|py| {
        let simulation = simulation.map(|file| (file.path.to_string_lossy().into_owned(), file.params.clone()));
        let opened = py
            .import("horde.cluster")
            .and_then(|module| module.getattr("open_cluster")?.call1((spec, spares, simulation)));
        match opened {
            Ok(coordinator) => Ok(Arc::new(PyShareHosts { coordinator: coordinator.unbind() }) as Arc<dyn ShareHosts>),
            Err(err) if err.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => {
                Err(horde_cli::ClusterOpenError::Interrupted)
            }
            Err(err) => {
                let input_error = err.get_type(py).name().map(|name| name == "ClusterInputError").unwrap_or(false);
                let message = err.value(py).to_string();
                Err(if input_error {
                    horde_cli::ClusterOpenError::Invalid(message)
                } else {
                    horde_cli::ClusterOpenError::Unavailable(message)
                })
            }
        }
    })
}

/// Calls Python on a thread of its own when the caller is the command's main thread: Python
/// runs its signal handlers there, so Ctrl-C (which the command line handles, stopping the
/// shares) would raise KeyboardInterrupt in the middle of a call to Dask.
fn off_main_thread<T: Send>(call: impl FnOnce() -> T + Send) -> T {
    let on_main_thread = rustix::thread::gettid().as_raw_nonzero() == rustix::process::getpid().as_raw_nonzero();
    if !on_main_thread {
        return call();
    }
    std::thread::scope(|scope| scope.spawn(call).join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
}

/// A Python exception as the engine's error text.
fn text(py: Python<'_>, err: PyErr) -> String {
    err.value(py).to_string()
}

/// The coordinator's machines and links: horde.cluster's `Coordinator`.
struct PyShareHosts {
    coordinator: Py<PyAny>,
}

impl PyShareHosts {
    /// Calls `method` (no arguments, nothing returned); an exception is printed: what it could
    /// not give back is given back when the cluster or the shares stop on their own.
    fn call_reporting_errors(&self, method: &str) {
        off_main_thread(|| {
            Python::attach(|py| {
                if let Err(err) = self.coordinator.call_method0(py, method) {
                    err.print(py);
                }
            })
        })
    }
}

impl CoordinatorLink for PyShareHosts {
    fn receive(&self, timeout: Duration) -> Result<Option<Vec<u8>>, String> {
        off_main_thread(|| {
            Python::attach(|py| {
                let message =
                    self.coordinator.call_method1(py, "receive", (timeout.as_secs_f64(),)).map_err(|e| text(py, e))?;
                message.extract::<Option<Vec<u8>>>(py).map_err(|e| text(py, e))
            })
        })
    }

    fn start(&self, at: SystemTime) -> Result<(), String> {
        let ns = at.duration_since(UNIX_EPOCH).map_err(|e| e.to_string())?.as_nanos() as u64;
        off_main_thread(|| {
            Python::attach(|py| self.coordinator.call_method1(py, "start", (ns,)).map(drop).map_err(|e| text(py, e)))
        })
    }

    fn stop(&self, reason: &str) {
        off_main_thread(|| {
            Python::attach(|py| {
                if let Err(err) = self.coordinator.call_method1(py, "stop", (reason,)) {
                    // The shares then stop on their own (their coordinator's silence).
                    err.print(py);
                }
            })
        })
    }

    fn lost_shares(&self) -> Vec<LostShare> {
        off_main_thread(|| {
            Python::attach(|py| {
                let lost = self.coordinator.call_method0(py, "lost_shares");
                let lost = lost.and_then(|l| l.extract::<Vec<(usize, u32, String)>>(py)).unwrap_or_else(|err| {
                    err.print(py);
                    Vec::new()
                });
                lost.into_iter().map(|(share, attempt, reason)| LostShare { share, attempt, reason }).collect()
            })
        })
    }

    fn clock(&self, share: usize) -> Option<ShareClock> {
        off_main_thread(|| {
            Python::attach(|py| {
                let clock = self.coordinator.call_method1(py, "clock", (share,));
                match clock.and_then(|c| c.extract::<Option<(i64, u64)>>(py)) {
                    Ok(clock) => clock.map(|(offset_ns, round_trip_ns)| ShareClock { offset_ns, round_trip_ns }),
                    Err(err) => {
                        err.print(py);
                        None
                    }
                }
            })
        })
    }

    fn replace_share(&self, share: usize, plan: &str) -> Result<String, String> {
        off_main_thread(|| {
            Python::attach(|py| {
                let machine =
                    self.coordinator.call_method1(py, "replace_share", (share, plan)).map_err(|e| text(py, e))?;
                machine.extract::<String>(py).map_err(|e| text(py, e))
            })
        })
    }

    fn grant_rows(&self, share: usize, bounds: &[u64]) {
        off_main_thread(|| {
            Python::attach(|py| {
                if let Err(err) = self.coordinator.call_method1(py, "grant_rows", (share, bounds.to_vec())) {
                    // The share then waits at its last grant: slower, never a row used twice.
                    err.print(py);
                }
            })
        })
    }

    fn stop_share(&self, share: usize, reason: &str) {
        off_main_thread(|| {
            Python::attach(|py| {
                if let Err(err) = self.coordinator.call_method1(py, "stop_share", (share, reason)) {
                    // The share then stops on its own once its coordinator's beat is gone.
                    err.print(py);
                }
            })
        })
    }
}

impl ShareHosts for PyShareHosts {
    fn machines(&self) -> Vec<String> {
        off_main_thread(|| {
            Python::attach(|py| {
                let machines = self.coordinator.call_method0(py, "machines");
                machines.and_then(|m| m.extract::<Vec<String>>(py)).unwrap_or_else(|err| {
                    err.print(py);
                    Vec::new()
                })
            })
        })
    }

    fn launch(&self, plans: &[String]) -> Result<(), String> {
        off_main_thread(|| {
            Python::attach(|py| {
                let launched = self.coordinator.call_method1(py, "launch", (plans.to_vec(),));
                launched.map(drop).map_err(|e| text(py, e))
            })
        })
    }

    fn threads_per_share(&self) -> Option<u32> {
        off_main_thread(|| {
            Python::attach(|py| {
                let threads = self.coordinator.call_method0(py, "threads_per_share");
                threads.and_then(|t| t.extract::<Option<u32>>(py)).unwrap_or_else(|err| {
                    err.print(py);
                    None
                })
            })
        })
    }

    fn cores(&self) -> Result<Vec<u64>, String> {
        off_main_thread(|| {
            Python::attach(|py| {
                let cores = self.coordinator.call_method0(py, "cores").map_err(|e| text(py, e))?;
                cores.extract::<Vec<u64>>(py).map_err(|e| text(py, e))
            })
        })
    }

    fn end_run(&self) {
        self.call_reporting_errors("end_run");
    }

    fn close(&self) {
        self.call_reporting_errors("close");
    }
}

/// Runs one share on a Dask worker (horde.cluster's share task); `stop` is what the
/// coordinator's stop sets, read by the engine without Python's lock.
#[pyclass(module = "horde._engine")]
pub(crate) struct ShareRunner {
    stop: Arc<Mutex<Option<String>>>,
    /// The coordinator's lease: `beat` extends it, the engine checks it before each request.
    lease: Arc<ShareLease>,
}

#[pymethods]
impl ShareRunner {
    /// `lease_s`: how long the share may go on without hearing the coordinator's beat.
    #[new]
    fn new(lease_s: f64) -> ShareRunner {
        let term = Duration::try_from_secs_f64(lease_s).unwrap_or(Duration::from_secs(5));
        ShareRunner { stop: Arc::new(Mutex::new(None)), lease: Arc::new(ShareLease::new(term)) }
    }

    /// The coordinator's beat was heard: the lease holds for its term from now, and the
    /// share may take up to `rows[i]` rows of the plan's feeder i (its row grants), if given.
    #[pyo3(signature = (rows=None))]
    fn beat(&self, rows: Option<Vec<u64>>) {
        self.lease.extend();
        if let Some(rows) = rows {
            self.lease.grant_rows(&rows);
        }
    }

    /// Seconds since the coordinator's last beat once the lease has lapsed; None while held.
    fn lease_lapsed_s(&self) -> Option<f64> {
        self.lease.lapsed().map(|silence| silence.as_secs_f64())
    }

    /// Asks the share to stop, and why (the coordinator asked every share to).
    fn stop(&self, reason: String) {
        self.stop.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(reason);
    }

    /// Why the share was asked to stop, if it was.
    fn stop_reason(&self) -> Option<String> {
        self.stop.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Runs the share's plan (JSON) with its results in `results_dir`; `link` has
    /// `ready(bytes) -> int` (the start, in nanoseconds of this machine's clock) and
    /// `send(bytes)`; `with_functions`: the simulation this process loaded last has the
    /// session functions the plan calls. Returns (0, the run's status) or (exit code, why it
    /// could not run).
    #[pyo3(signature = (plan_json, results_dir, link, with_functions=false))]
    fn run(
        &self,
        py: Python<'_>,
        plan_json: String,
        results_dir: PathBuf,
        link: Py<PyAny>,
        with_functions: bool,
    ) -> (i32, String) {
        let link = Arc::new(PyShareLink { link, stop: self.stop.clone(), lease: self.lease.clone() });
        let functions = if with_functions { crate::loaded_session_functions() } else { None };
        match py.detach(|| horde_cli::run_linked_share(&plan_json, &results_dir, link, functions)) {
            Ok(status) => (0, status),
            Err((code, message)) => (code, message),
        }
    }
}

/// A share's link: horde.cluster's, called with Python's lock; the stop without it.
struct PyShareLink {
    link: Py<PyAny>,
    stop: Arc<Mutex<Option<String>>>,
    lease: Arc<ShareLease>,
}

impl ShareLink for PyShareLink {
    fn ready(&self, message: &[u8]) -> Result<SystemTime, String> {
        Python::attach(|py| {
            let at = self.link.call_method1(py, "ready", (PyBytes::new(py, message),)).map_err(|e| text(py, e))?;
            let ns = at.extract::<u64>(py).map_err(|e| text(py, e))?;
            Ok(UNIX_EPOCH + Duration::from_nanos(ns))
        })
    }

    fn send(&self, message: &[u8]) -> Result<(), String> {
        Python::attach(|py| {
            self.link.call_method1(py, "send", (PyBytes::new(py, message),)).map(drop).map_err(|e| text(py, e))
        })
    }

    fn stop_requested(&self) -> Option<String> {
        self.stop.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn lease(&self) -> Option<Arc<ShareLease>> {
        Some(self.lease.clone())
    }
}

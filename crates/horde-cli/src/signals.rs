//! Ctrl-C and SIGTERM (and SIGXFSZ, below). The first one stops the current run gracefully (its results are
//! written) and marks the whole command as interrupted, so that a sweep runs no further level
//! and a simulation still loading never starts; a second one exits at once.
//!
//! Listening starts when the command does, not when a run does: a signal between two sweep
//! levels is noticed too, and one while a simulation loads ends the command at once.

use crate::exit;
use crate::output::status;
use horde_engine::RunControl;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

static CURRENT_RUN: Mutex<Option<Weak<RunControl>>> = Mutex::new(None);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// A simulation is being loaded: nothing has run, nothing is to be saved.
static LOADING: AtomicBool = AtomicBool::new(false);
/// A command written in Python runs (`horde record`): it takes Ctrl-C itself (Python's own
/// handler still runs, or the child process gets the signal too), so this one says nothing.
static PYTHON_COMMAND: AtomicBool = AtomicBool::new(false);

/// While the returned guard lives, a first signal is left to the Python command running; a
/// second one still ends the process at once.
pub fn while_python_command() -> PythonCommandGuard {
    PYTHON_COMMAND.store(true, Ordering::SeqCst);
    PythonCommandGuard
}

pub struct PythonCommandGuard;

impl Drop for PythonCommandGuard {
    fn drop(&mut self) {
        PYTHON_COMMAND.store(false, Ordering::SeqCst);
    }
}

/// While the returned guard lives, a signal ends the command at once (exit 130): a simulation
/// that loops or waits while it loads must not hold horde up, and there is nothing to save.
pub fn while_loading() -> LoadingGuard {
    LOADING.store(true, Ordering::SeqCst);
    LoadingGuard
}

pub struct LoadingGuard;

impl Drop for LoadingGuard {
    fn drop(&mut self) {
        LOADING.store(false, Ordering::SeqCst);
    }
}

/// Whether Ctrl-C or SIGTERM came since the command started.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Starts a command afresh: an interruption of an earlier one in this process is forgotten.
pub fn forget_interruption() {
    INTERRUPTED.store(false, Ordering::SeqCst);
}

/// Sends signals to `control` until [`stop_routing`] is called. A signal that came before
/// the run started interrupts it at once.
pub fn route_interruptions_to(control: &Arc<RunControl>) {
    *CURRENT_RUN.lock().expect("signal routing lock") = Some(Arc::downgrade(control));
    if interrupted() {
        control.interrupt();
    }
}

pub fn stop_routing() {
    *CURRENT_RUN.lock().expect("signal routing lock") = None;
}

/// The dashboard's Stop button (`--dashboard-control`): as a first Ctrl-C, the current run
/// stops gracefully and the command counts as interrupted. A second press changes nothing.
pub fn interrupt_from_dashboard() {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        return;
    }
    status!("horde: stop asked from the dashboard; stopping users and writing results");
    if let Some(control) = CURRENT_RUN.lock().expect("signal routing lock").as_ref().and_then(Weak::upgrade) {
        control.interrupt();
    }
}

/// Starts listening for Ctrl-C and SIGTERM, once per process.
pub fn listen() {
    static LISTENING: OnceLock<()> = OnceLock::new();
    LISTENING.get_or_init(|| {
        // Registered here, before this function returns, so that no signal is missed.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let terminate =
            runtime.block_on(async { tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) });
        let interrupt =
            runtime.block_on(async { tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) });
        // A file-size limit (`ulimit -f`) reached: by default the signal kills the process
        // before the results are saved. Caught, it leaves the write failing with EFBIG, which
        // horde reports as it does a full disk (Python, hosting horde, ignores it too).
        let file_too_large = runtime.block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(
                rustix::process::Signal::XFSZ.as_raw(),
            ))
        });
        let (Ok(mut terminate), Ok(mut interrupt)) = (terminate, interrupt) else { return };
        let _ = std::thread::Builder::new().name("horde-signals".into()).spawn(move || {
            runtime.block_on(async {
                let mut file_too_large = file_too_large.ok();
                loop {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = terminate.recv() => {}
                        // Nothing to do but take it: the write that exceeded the limit fails.
                        Some(_) = async { file_too_large.as_mut()?.recv().await } => continue,
                    }
                    if INTERRUPTED.swap(true, Ordering::SeqCst) {
                        std::process::exit(exit::INTERRUPTED);
                    }
                    if PYTHON_COMMAND.load(Ordering::SeqCst) {
                        continue;
                    }
                    if LOADING.load(Ordering::SeqCst) {
                        status!("\nhorde: interrupted while loading the simulation");
                        std::process::exit(exit::INTERRUPTED);
                    }
                    let current = CURRENT_RUN.lock().expect("signal routing lock").as_ref().and_then(Weak::upgrade);
                    match current {
                        Some(control) => {
                            status!("\nhorde: interrupted; stopping users and writing results (again to quit at once)");
                            control.interrupt();
                        }
                        None => status!("\nhorde: interrupted (again to quit at once)"),
                    }
                }
            });
        });
    });
}

/// Blocks until Ctrl-C or SIGTERM (for `horde target`).
pub fn wait_for_termination() {
    while !interrupted() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

//! Ctrl-C and SIGTERM: the first one stops the current run gracefully (its results are
//! written); a second one exits at once.

use horde_engine::RunControl;
use std::sync::{Arc, Mutex, OnceLock, Weak};

static CURRENT_RUN: Mutex<Option<Weak<RunControl>>> = Mutex::new(None);

/// Starts listening for signals (once per process) and sends them to `control` until
/// [`stop_routing`] is called.
pub fn route_interruptions_to(control: &Arc<RunControl>) {
    *CURRENT_RUN.lock().expect("signal routing lock") = Some(Arc::downgrade(control));
    listen();
}

pub fn stop_routing() {
    *CURRENT_RUN.lock().expect("signal routing lock") = None;
}

fn listen() {
    static LISTENING: OnceLock<()> = OnceLock::new();
    LISTENING.get_or_init(|| {
        let _ = std::thread::Builder::new().name("horde-signals".into()).spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async {
                let Ok(mut terminate) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
                    return;
                };
                loop {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = terminate.recv() => {}
                    }
                    let current = CURRENT_RUN.lock().expect("signal routing lock").as_ref().and_then(Weak::upgrade);
                    match current {
                        Some(control) if !control.is_interrupted() => {
                            eprintln!("\nhorde: interrupted; stopping users and writing results (again to quit at once)");
                            control.interrupt();
                        }
                        Some(_) => std::process::exit(crate::exit::INTERRUPTED),
                        None => {}
                    }
                }
            });
        });
    });
}

/// Blocks until Ctrl-C or SIGTERM (for `horde target`).
pub fn wait_for_termination() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    });
}

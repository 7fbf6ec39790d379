//! One run of a shell command: its wall time from spawn to exit, its user and system CPU
//! time, and its peak resident memory.
//!
//! The CPU times are read from /proc/PID/stat while the finished process is a zombie (`waitid`
//! with `WNOWAIT` waits without reaping it), so no unsafe `wait4` is needed; they include the
//! children it waited for. A zombie has no memory left to read, so the peak (VmHWM, a
//! high-water mark) is sampled every few milliseconds while it runs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunMeasure {
    pub wall: Duration,
    pub cpu_user_ms: f64,
    pub cpu_system_ms: f64,
    pub peak_rss_kib: u64,
}

/// How often the memory high-water mark is read while a command runs.
const MEMORY_SAMPLE: Duration = Duration::from_millis(2);

/// Runs `sh -c COMMAND` with its output discarded (hyperfine's default); a failing command
/// (non-zero exit, killed) is an error naming it.
pub fn run(command: &str, dir: Option<&Path>) -> Result<RunMeasure, String> {
    let mut process = Command::new("sh");
    process.arg("-c").arg(command).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    if let Some(dir) = dir {
        process.current_dir(dir);
    }
    let start = Instant::now();
    let mut child = process.spawn().map_err(|e| format!("cannot start sh: {e}"))?;
    let pid = rustix::process::Pid::from_child(&child);
    let raw = child.id();
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            let path = format!("/proc/{raw}/status");
            while !done.load(Ordering::Relaxed) {
                if let Some(kib) = vm_hwm(&path) {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(MEMORY_SAMPLE);
            }
        })
    };
    // Drained on a thread: a command that writes much to stderr must not block on the pipe.
    let stderr = child.stderr.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut pipe, &mut text);
            text
        })
    });
    let waited = loop {
        match rustix::process::waitid(
            rustix::process::WaitId::Pid(pid),
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other,
        }
    };
    let wall = start.elapsed();
    done.store(true, Ordering::Relaxed);
    let (user_ticks, system_ticks) = zombie_cpu_ticks(raw).unwrap_or((0, 0));
    let status = child.wait().map_err(|e| format!("waiting for sh: {e}"))?;
    let _ = sampler.join();
    let stderr = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    if let Err(e) = waited {
        return Err(format!("waiting for {command:?}: {e}"));
    }
    if !status.success() {
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!(
            "the command {command:?} failed ({status}){}",
            if last.is_empty() { String::new() } else { format!(": {last}") }
        ));
    }
    let tick_ms = 1000.0 / rustix::param::clock_ticks_per_second() as f64;
    Ok(RunMeasure {
        wall,
        cpu_user_ms: user_ticks as f64 * tick_ms,
        cpu_system_ms: system_ticks as f64 * tick_ms,
        peak_rss_kib: peak.load(Ordering::Relaxed),
    })
}

fn vm_hwm(path: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()
}

/// utime + cutime and stime + cstime of a process from /proc/PID/stat (fields 14 to 17,
/// counted after the command name, which may hold spaces and parentheses).
fn zombie_cpu_ticks(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 2..];
    let fields: Vec<u64> = after.split_whitespace().skip(11).take(4).map(|f| f.parse().unwrap_or(0)).collect();
    (fields.len() == 4).then(|| (fields[0] + fields[2], fields[1] + fields[3]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_takes_its_time_and_little_cpu() {
        let m = run("sleep 0.05", None).unwrap();
        assert!(m.wall >= Duration::from_millis(50) && m.wall < Duration::from_millis(500), "{m:?}");
        assert!(m.cpu_user_ms < 40.0, "{m:?}");
    }

    #[test]
    fn a_busy_command_uses_cpu_and_memory() {
        // About 100 ms of CPU in the shell itself.
        let m = run("i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done", None).unwrap();
        assert!(m.cpu_user_ms + m.cpu_system_ms > 0.0, "{m:?}");
        assert!(m.peak_rss_kib > 0, "{m:?}");
    }

    #[test]
    fn a_failing_command_is_named_with_its_message() {
        let err = run("echo nope >&2; exit 3", None).unwrap_err();
        assert!(err.contains("exit status: 3") && err.contains("nope"), "{err}");
    }
}

//! What this process has used: CPU time and peak resident memory. The load generator's own
//! cost, reported beside what it measured (summary.json's `generator`, a share's
//! `machines[]` entry, a `horde sql` phase). Linux's /proc and clocks; where they cannot be
//! read, the figures are absent rather than wrong.

use std::time::Duration;

/// CPU time this process has used, all threads: how busy the load generator itself was.
pub(crate) fn process_cpu_time() -> Option<Duration> {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Some(Duration::new(u64::try_from(now.tv_sec).ok()?, u32::try_from(now.tv_nsec).ok()?))
}

/// Starts a new measure of the process's peak resident memory (Linux: `clear_refs` 5 resets
/// VmHWM to the current size).
pub(crate) fn reset_peak_memory() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident memory since the last reset, in bytes.
pub(crate) fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_used_cpu_and_memory() {
        reset_peak_memory();
        assert!(peak_memory().unwrap() > 0);
        assert!(process_cpu_time().unwrap() > Duration::ZERO);
    }
}

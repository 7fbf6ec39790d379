//! The machine a benchmark ran on, recorded in every result file: what decides whether two
//! results are comparable (hashed into a fingerprint) and the conditions of the run (load,
//! steal time), which are reported but not hashed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Machine {
    /// The name results are grouped under in `horde bench compare`.
    pub label: String,
    /// Where the label came from: `--machine`, `dmi` (a cloud instance type) or `hostname`.
    pub label_source: String,
    pub hostname: String,
    pub cpu_model: String,
    pub logical_cpus: usize,
    pub physical_cores: usize,
    pub sockets: usize,
    pub threads_per_core: usize,
    /// Cache levels and sizes as the kernel names them (`L1d 48K`, `L3 32768K`).
    pub caches: Vec<String>,
    pub memory_kib: u64,
    pub os: String,
    pub kernel: String,
    pub kernel_cmdline: String,
    /// `none`, or what systemd-detect-virt (or the CPU's hypervisor flag) says.
    pub virtualization: String,
    /// The container's CPU quota (cgroup v2 cpu.max) in CPUs, when one is set.
    pub cpu_quota: Option<f64>,
    pub governor: Option<String>,
    /// Turbo or boost enabled, when the kernel says.
    pub boost: Option<bool>,
    /// Address space layout randomization (0 off, 2 full).
    pub aslr: Option<u8>,
    /// The DMI's vendor and product (a cloud instance type on EC2).
    pub dmi_product: Option<String>,
    /// Runtime versions: horde's own, Python's when a Python benchmark ran.
    pub runtimes: BTreeMap<String, String>,
    /// The conditions at the start of the run: not part of the fingerprint.
    pub conditions: Conditions,
    /// SHA-256 (16 hex digits) of the fields that decide comparability.
    pub fingerprint: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Conditions {
    pub loadavg_1m: Option<f64>,
    /// The share of CPU time stolen by the hypervisor over a short sample, in percent.
    pub steal_percent: Option<f64>,
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

impl Machine {
    /// Reads this machine; `label` is `--machine`.
    pub fn detect(label: Option<&str>) -> Machine {
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let logical_cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let (physical_cores, sockets) = topology();
        let physical_cores = physical_cores.max(1);
        let online = count_online_cpus().unwrap_or(logical_cpus);
        let hostname = read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into());
        let dmi_vendor = read("/sys/class/dmi/id/sys_vendor");
        let dmi_name = read("/sys/class/dmi/id/product_name");
        let dmi_product = match (&dmi_vendor, &dmi_name) {
            (Some(v), Some(p)) => Some(format!("{v} {p}")),
            (None, Some(p)) => Some(p.clone()),
            _ => None,
        };
        // EC2 names the instance type as the DMI product (m5.large); elsewhere it is a model name.
        let instance_type = match (&dmi_vendor, &dmi_name) {
            (Some(v), Some(p)) if v.contains("Amazon EC2") && !p.is_empty() => Some(p.clone()),
            _ => None,
        };
        let (label, label_source) = match (label, instance_type) {
            (Some(l), _) => (l.to_string(), "--machine"),
            (None, Some(t)) => (t, "dmi"),
            (None, None) => (hostname.clone(), "hostname"),
        };
        let mut runtimes = BTreeMap::new();
        runtimes.insert("horde".to_string(), env!("CARGO_PKG_VERSION").to_string());
        let mut machine = Machine {
            label,
            label_source: label_source.into(),
            hostname,
            cpu_model,
            logical_cpus: online,
            physical_cores,
            sockets: sockets.max(1),
            threads_per_core: (online / physical_cores).max(1),
            caches: caches(),
            memory_kib: read("/proc/meminfo")
                .and_then(|m| {
                    m.lines()
                        .find_map(|l| l.strip_prefix("MemTotal:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                })
                .unwrap_or(0),
            os: read("/etc/os-release")
                .and_then(|t| {
                    t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=")).map(|v| v.trim_matches('"').to_string())
                })
                .unwrap_or_else(|| std::env::consts::OS.into()),
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_default(),
            kernel_cmdline: read("/proc/cmdline").unwrap_or_default(),
            virtualization: virtualization(&cpuinfo),
            cpu_quota: cpu_quota(),
            governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            boost: boost(),
            aslr: read("/proc/sys/kernel/randomize_va_space").and_then(|v| v.parse().ok()),
            dmi_product,
            runtimes,
            conditions: Conditions { loadavg_1m: loadavg(), steal_percent: steal_percent() },
            fingerprint: String::new(),
        };
        // The logical count of the fingerprint is what the process may use (a quota or an
        // affinity mask changes what a parallel benchmark measures).
        machine.logical_cpus = logical_cpus.min(online).max(1);
        machine.refresh_fingerprint();
        machine
    }

    /// Recomputes the fingerprint, after runtimes were added.
    pub fn refresh_fingerprint(&mut self) {
        self.fingerprint = self.compute_fingerprint();
    }

    /// What decides comparability: the processor and how many of it, memory (to the GiB), the
    /// kernel, virtualization, quota, governor and boost, and the runtimes' versions. Not the
    /// label, host name, load or steal.
    pub fn compute_fingerprint(&self) -> String {
        let fields = [
            self.cpu_model.clone(),
            self.logical_cpus.to_string(),
            self.physical_cores.to_string(),
            self.threads_per_core.to_string(),
            self.caches.join(","),
            (self.memory_kib / (1024 * 1024)).to_string(),
            self.kernel.clone(),
            self.virtualization.clone(),
            format!("{:?}", self.cpu_quota),
            format!("{:?}", self.governor),
            format!("{:?}", self.boost),
            self.runtimes.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","),
        ];
        let digest = Sha256::digest(fields.join("\n").as_bytes());
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// The one-line description of the console's header.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} ({}; {} CPUs, {} cores x {} threads; {:.1} GiB; {}; virt {}",
            self.label,
            self.cpu_model,
            self.logical_cpus,
            self.physical_cores,
            self.threads_per_core,
            self.memory_kib as f64 / 1024.0 / 1024.0,
            self.kernel,
            self.virtualization
        );
        if let Some(quota) = self.cpu_quota {
            text.push_str(&format!("; quota {quota} CPUs"));
        }
        if let Some(governor) = &self.governor {
            text.push_str(&format!("; governor {governor}"));
        }
        if let Some(boost) = self.boost {
            text.push_str(if boost { "; boost on" } else { "; boost off" });
        }
        text.push_str(&format!("; fingerprint {})", self.fingerprint));
        text
    }

    /// The machine's conditions that make timings noisier, as warnings.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if let Some(load) = self.conditions.loadavg_1m {
            if load > 0.5 * self.logical_cpus as f64 {
                warnings.push(format!(
                    "the load average was {load:.2} on {} CPUs: other work competes with the benchmark",
                    self.logical_cpus
                ));
            }
        }
        if let Some(steal) = self.conditions.steal_percent.filter(|s| *s > 1.0) {
            warnings.push(format!("the hypervisor stole {steal:.1} % of CPU time: a noisy neighbour"));
        }
        if self.governor.as_deref().is_some_and(|g| g != "performance") {
            warnings.push(format!(
                "the CPU frequency governor is {:?}, not \"performance\": frequency changes add noise",
                self.governor.as_deref().unwrap_or_default()
            ));
        }
        if self.boost == Some(true) {
            warnings.push("turbo boost is on: the frequency depends on temperature and load".into());
        }
        warnings
    }
}

/// Physical cores and sockets from /proc/cpuinfo's "physical id" and "core id".
fn topology() -> (usize, usize) {
    let text = read("/proc/cpuinfo").unwrap_or_default();
    let mut cores = std::collections::BTreeSet::new();
    let mut sockets = std::collections::BTreeSet::new();
    let mut physical = String::new();
    for line in text.lines() {
        if let Some((key, value)) = line.split_once(':') {
            match key.trim() {
                "physical id" => {
                    physical = value.trim().to_string();
                    sockets.insert(physical.clone());
                }
                "core id" => {
                    cores.insert((physical.clone(), value.trim().to_string()));
                }
                _ => {}
            }
        }
    }
    if cores.is_empty() {
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        return (n, 1);
    }
    (cores.len(), sockets.len())
}

fn count_online_cpus() -> Option<usize> {
    let online = read("/sys/devices/system/cpu/online")?;
    let mut count = 0;
    for part in online.split(',') {
        match part.split_once('-') {
            Some((a, b)) => count += b.parse::<usize>().ok()? - a.parse::<usize>().ok()? + 1,
            None => count += 1,
        }
    }
    Some(count)
}

fn caches() -> Vec<String> {
    let mut caches = Vec::new();
    for index in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{index}");
        let (Some(level), Some(kind), Some(size)) =
            (read(format!("{dir}/level")), read(format!("{dir}/type")), read(format!("{dir}/size")))
        else {
            break;
        };
        let suffix = match kind.as_str() {
            "Data" => "d",
            "Instruction" => "i",
            _ => "",
        };
        caches.push(format!("L{level}{suffix} {size}"));
    }
    caches
}

fn virtualization(cpuinfo: &str) -> String {
    // A container in a VM is both: systemd-detect-virt alone names only the container.
    let detect = |kind: &str| {
        Command::new("systemd-detect-virt")
            .arg(kind)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|t| !t.is_empty())
    };
    if let (Some(vm), Some(container)) = (detect("--vm"), detect("--container")) {
        return match (vm.as_str(), container.as_str()) {
            ("none", "none") => "none".into(),
            (vm, "none") => vm.into(),
            ("none", container) => container.into(),
            (vm, container) => format!("{vm}+{container}"),
        };
    }
    let container = Path::new("/.dockerenv").exists()
        || read("/proc/1/cgroup").is_some_and(|c| c.contains("docker") || c.contains("kubepods"));
    let vm = cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    match (vm, container) {
        (true, true) => "vm+container".into(),
        (true, false) => read("/sys/hypervisor/type").unwrap_or_else(|| "vm".into()),
        (false, true) => "container".into(),
        (false, false) => "none".into(),
    }
}

fn cpu_quota() -> Option<f64> {
    let text = read("/sys/fs/cgroup/cpu.max")?;
    let (quota, period) = text.split_once(' ')?;
    let quota: f64 = quota.parse().ok()?;
    let period: f64 = period.parse().ok()?;
    Some((quota / period * 100.0).round() / 100.0)
}

fn boost() -> Option<bool> {
    if let Some(no_turbo) = read("/sys/devices/system/cpu/intel_pstate/no_turbo") {
        return Some(no_turbo == "0");
    }
    read("/sys/devices/system/cpu/cpufreq/boost").map(|b| b == "1")
}

fn loadavg() -> Option<f64> {
    read("/proc/loadavg")?.split_whitespace().next()?.parse().ok()
}

/// The steal column of /proc/stat's cpu line over 200 ms.
fn steal_percent() -> Option<f64> {
    fn sample() -> Option<Vec<u64>> {
        let stat = read("/proc/stat")?;
        let line = stat.lines().next()?;
        line.split_whitespace().skip(1).map(|v| v.parse().ok()).collect()
    }
    let before = sample()?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let after = sample()?;
    let deltas: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a.saturating_sub(*b)).collect();
    let total: u64 = deltas.iter().take(8).sum();
    let steal = *deltas.get(7)?;
    (total > 0).then(|| (steal as f64 / total as f64 * 1000.0).round() / 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_ignores_the_label_and_the_load() {
        let machine = Machine::detect(Some("a"));
        let mut other = machine.clone();
        other.label = "b".into();
        other.hostname = "elsewhere".into();
        other.conditions.loadavg_1m = Some(99.0);
        assert_eq!(machine.fingerprint, other.compute_fingerprint());
        other.cpu_model.push_str(" v2");
        assert_ne!(machine.fingerprint, other.compute_fingerprint());
        assert_eq!(machine.fingerprint.len(), 16);
        assert!(machine.logical_cpus >= 1 && !machine.kernel.is_empty());
    }
}

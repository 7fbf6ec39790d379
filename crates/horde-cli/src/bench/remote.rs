//! `horde bench --host user@h1 --host user@h2 FILE.py`: the file is copied over SSH to each
//! host, run there by that host's horde (each machine measures only itself, all at once), and
//! the results are gathered here, one file per machine, then compared.
//!
//! Everything goes through the `ssh` command (`--ssh` gives it options: a key, a port): the
//! file on its standard input, the result as JSON on its standard output, the remote progress
//! on its standard error, prefixed with the host.

use super::result::BenchResult;
use super::{RunOptions, RunPreset};
use crate::output::status;
use crate::{exit, Failure};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The flags forwarded to each host: the run's, not where the results go.
fn forwarded(options: &RunOptions, params: &[String]) -> Vec<String> {
    let mut args = Vec::new();
    for p in params {
        args.extend(["-p".to_string(), p.clone()]);
    }
    if let Some(t) = options.trials {
        args.extend(["--trials".into(), t.to_string()]);
    }
    if let Some(w) = options.warmup {
        args.extend(["--warmup".into(), w.to_string()]);
    }
    if let Some(m) = options.measure {
        args.extend(["--measure".into(), m.to_string()]);
    }
    if let Some(i) = &options.iteration_time {
        args.extend(["--iteration-time".into(), i.clone()]);
    }
    match options.preset() {
        RunPreset::Fast => args.push("--fast".into()),
        RunPreset::Rigorous => args.push("--rigorous".into()),
        RunPreset::Default => {}
    }
    args.extend(["--confidence".into(), options.confidence.to_string()]);
    if let Some(seed) = options.seed {
        args.extend(["--seed".into(), seed.to_string()]);
    }
    args
}

/// Quotes a word for the remote shell.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

fn ssh(ssh: &[String], host: &str, remote: &str) -> Command {
    let mut command = Command::new(&ssh[0]);
    command.args(&ssh[1..]).arg(host).arg("--").arg(remote);
    command
}

/// One host's run: copy, run, read the result, clean up.
fn run_host(
    ssh_words: &[String],
    remote_horde: &str,
    host: &str,
    file: &Path,
    args: &[String],
) -> Result<BenchResult, Failure> {
    let text = std::fs::read(file).map_err(|e| Failure::Invalid(format!("cannot read {}: {e}", file.display())))?;
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "bench.py".into());
    let dir = format!("/tmp/horde-bench-{}-{}", std::process::id(), super::unix_ms());
    let copy = format!("mkdir -p {} && cat > {}/{}", quote(&dir), quote(&dir), quote(&name));
    let mut child = ssh(ssh_words, host, &copy)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::Runtime(anyhow::anyhow!("cannot start {}: {e}", ssh_words[0])))?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(&text)
        .map_err(|e| Failure::Runtime(anyhow::anyhow!("{host}: {e}")))?;
    let copied = child.wait_with_output().map_err(|e| Failure::Runtime(anyhow::anyhow!("{host}: {e}")))?;
    if !copied.status.success() {
        return Err(Failure::Runtime(anyhow::anyhow!(
            "{host}: copying {} failed: {}",
            file.display(),
            String::from_utf8_lossy(&copied.stderr).trim()
        )));
    }
    let mut remote = format!("cd {} && {} bench {}", quote(&dir), quote(remote_horde), quote(&name));
    for arg in args {
        remote.push(' ');
        remote.push_str(&quote(arg));
    }
    remote.push_str(" --out result.json --format json");
    let mut child = ssh(ssh_words, host, &remote)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::Runtime(anyhow::anyhow!("cannot start {}: {e}", ssh_words[0])))?;
    let stderr = child.stderr.take().expect("piped");
    let prefix = host.to_string();
    let progress = std::thread::spawn(move || {
        let mut last = String::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            status!("[{prefix}] {line}");
            last = line;
        }
        last
    });
    let output = child.wait_with_output().map_err(|e| Failure::Runtime(anyhow::anyhow!("{host}: {e}")))?;
    let last = progress.join().unwrap_or_default();
    let _ = ssh(ssh_words, host, &format!("rm -rf {}", quote(&dir))).stdin(Stdio::null()).output();
    match output.status.code() {
        Some(0) => {}
        Some(exit::INVALID_INPUT) => return Err(Failure::Invalid(format!("{host}: {last}"))),
        Some(exit::INTERRUPTED) => return Err(Failure::Interrupted("on a host")),
        _ => return Err(Failure::Runtime(anyhow::anyhow!("{host}: horde bench failed ({}): {last}", output.status))),
    }
    let value: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| Failure::Runtime(anyhow::anyhow!("{host}: the result is not JSON: {e}")))?;
    serde_json::from_value(value).map_err(|e| Failure::Runtime(anyhow::anyhow!("{host}: the result: {e}")))
}

/// Runs the file on every host at once, writes one result per machine into `--out DIR` (or the
/// current directory) and prints the comparison.
pub fn run(
    hosts: &[String],
    ssh_command: &str,
    remote_horde: &str,
    file: &Path,
    params: &[String],
    options: &RunOptions,
) -> Result<i32, Failure> {
    let ssh_words: Vec<String> = ssh_command.split_whitespace().map(String::from).collect();
    if ssh_words.is_empty() {
        return Err(Failure::Invalid("--ssh: the command is empty".into()));
    }
    if options.machine.is_some() {
        return Err(Failure::Invalid(
            "--machine names one machine; with --host each host is labelled by itself".into(),
        ));
    }
    if !file.is_file() {
        return Err(Failure::Invalid(format!("benchmark file not found: {}", file.display())));
    }
    let dir = options.out.clone().unwrap_or_else(|| PathBuf::from("."));
    if !dir.is_dir() {
        return Err(Failure::Invalid(format!(
            "--out {}: with --host, a directory for one result per host",
            dir.display()
        )));
    }
    let args = forwarded(options, params);
    status!("horde bench: running {} on {} hosts at once", file.display(), hosts.len());
    let results: Vec<(String, Result<BenchResult, Failure>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|host| {
                let (ssh_words, args) = (&ssh_words, &args);
                (host.clone(), scope.spawn(move || run_host(ssh_words, remote_horde, host, file, args)))
            })
            .collect();
        handles
            .into_iter()
            .map(|(host, handle)| {
                let result = handle
                    .join()
                    .unwrap_or_else(|_| Err(Failure::Runtime(anyhow::anyhow!("{host}: the thread panicked"))));
                (host, result)
            })
            .collect()
    });
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "bench".into());
    let mut written = Vec::new();
    let mut first_failure = None;
    for (host, result) in results {
        match result {
            Ok(result) => {
                // Two hosts of one label (two machines of one instance type) keep a file each.
                let base = format!("{}-{}", super::sanitize(&stem), super::sanitize(&result.machine.label));
                let mut path = dir.join(format!("{base}.bench.json"));
                let mut n = 2;
                while written.contains(&path) {
                    path = dir.join(format!("{base}-{n}.bench.json"));
                    n += 1;
                }
                let json = serde_json::to_string_pretty(&result).expect("a result serializes") + "\n";
                std::fs::write(&path, json)
                    .map_err(|e| Failure::Runtime(anyhow::anyhow!("writing {}: {e}", path.display())))?;
                status!("horde bench: {host}: results written to {}", path.display());
                crate::output::print_text(&format!("## {host}\n{}\n", super::render::render(&result, options.format)));
                written.push(path);
            }
            Err(failure) => {
                if first_failure.is_some() {
                    // The first failure is the command's error; the others are said here.
                    let message = match &failure {
                        Failure::Invalid(m) => m.clone(),
                        Failure::Runtime(e) => format!("{e:#}"),
                        Failure::Interrupted(what) => format!("interrupted {what}"),
                    };
                    status!("horde bench: {message}");
                }
                first_failure.get_or_insert(failure);
            }
        }
    }
    if let Some(failure) = first_failure {
        return Err(failure);
    }
    if written.len() >= 2 {
        let args = super::compare::CompareBenchArgs {
            files: written,
            reference: None,
            threshold: "1%".into(),
            confidence: options.confidence,
            fail_on: None,
            budget: None,
            markdown: false,
            // The pictures beside the hosts' results.
            html: Some(dir.join(format!("{}.compare.html", super::sanitize(&stem)))),
        };
        super::compare::compare(&args)?;
    }
    Ok(exit::OK)
}

//! What a phase cost besides time: this process's CPU and peak memory, and the database
//! server's CPU when it runs on this machine (found by the port or Unix socket it listens on). Linux's /proc;
//! elsewhere, or where it cannot be read, the figures are absent rather than wrong.

use super::database::LocalServer;
pub(crate) use crate::process_usage::{peak_memory, reset_peak_memory};
use std::time::Duration;

/// Readings at one moment, to subtract.
#[derive(Debug, Clone, Copy, Default)]
pub struct Readings {
    pub client_cpu: Option<Duration>,
    pub server_cpu: Option<Duration>,
}

impl Readings {
    pub fn now(server_pid: Option<u32>) -> Readings {
        Readings {
            client_cpu: crate::process_usage::process_cpu_time(),
            server_cpu: server_pid.and_then(server_cpu_time),
        }
    }
}

/// The process listening at `server` on this machine (a TCP port or a Unix socket): the
/// database server, when it runs here.
pub fn listening_process(server: &LocalServer) -> Option<u32> {
    let mut inodes = Vec::new();
    match server {
        LocalServer::Port(port) => {
            for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
                let Ok(text) = std::fs::read_to_string(table) else {
                    continue;
                };
                for line in text.lines().skip(1) {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    // local_address is HEX_IP:HEX_PORT; state 0A is LISTEN.
                    let Some(local) = fields.get(1) else { continue };
                    let listening = fields.get(3) == Some(&"0A");
                    let on_port = local.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok()) == Some(*port);
                    if listening && on_port {
                        if let Some(inode) = fields.get(9) {
                            inodes.push(format!("socket:[{inode}]"));
                        }
                    }
                }
            }
        }
        LocalServer::Socket(path) => {
            let text = std::fs::read_to_string("/proc/net/unix").ok()?;
            for line in text.lines().skip(1) {
                // Num RefCount Protocol Flags Type St Inode Path; flag 00010000 is a listener.
                let fields: Vec<&str> = line.split_whitespace().collect();
                let listening = fields.get(3) == Some(&"00010000");
                if listening && fields.get(7).is_some_and(|p| std::path::Path::new(p) == path) {
                    if let Some(inode) = fields.get(6) {
                        inodes.push(format!("socket:[{inode}]"));
                    }
                }
            }
        }
    }
    if inodes.is_empty() {
        return None;
    }
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                if inodes.iter().any(|i| target.as_os_str() == i.as_str()) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

/// CPU time of a server process, its children (PostgreSQL's backends: one per connection)
/// and the children it has reaped.
fn server_cpu_time(pid: u32) -> Option<Duration> {
    let ticks = rustix::param::clock_ticks_per_second();
    if ticks == 0 {
        return None;
    }
    let (own, reaped) = process_ticks(pid)?;
    let mut total = own + reaped;
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for task in tasks.flatten() {
        let Ok(children) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        for child in children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()) {
            total += process_ticks(child).map_or(0, |(own, _)| own);
        }
    }
    Some(Duration::from_secs_f64(total as f64 / ticks as f64))
}

/// (utime + stime, cutime + cstime) of a process, in clock ticks.
fn process_ticks(pid: u32) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
    // Fields 14-17 of stat(5), counted from the state (field 3) here.
    Some((field(11)? + field(12)?, field(13)? + field(14)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_socket_is_found_with_its_process() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(listening_process(&LocalServer::Port(port)), Some(std::process::id()));
        assert!(server_cpu_time(std::process::id()).is_some());
        drop(listener);
        assert_eq!(listening_process(&LocalServer::Port(port)), None);
        // A Unix socket, by its path.
        let path = std::env::temp_dir().join(format!("horde-resources-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert_eq!(listening_process(&LocalServer::Socket(path.clone())), Some(std::process::id()));
        drop(listener);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(listening_process(&LocalServer::Socket(path)), None);
    }
}

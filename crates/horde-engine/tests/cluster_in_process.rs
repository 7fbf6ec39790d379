//! A distributed run inside one test process: three shares and a coordinator linked by an
//! in-memory hub (any transport implements the two link traits; Dask's will too). The merged
//! totals equal a local run's of the same plan and the target's own count; error kinds decoded
//! from the shares' messages count under the same keys as a local run's.

use horde_engine::cluster::{run_coordinated, run_share, CoordinatorLink, CoordinatorOptions, ShareLink};
use horde_engine::{lower, run, RunControl};
use horde_metrics::{RunStatus, Sink, Totals};
use horde_plan::Plan;
use horde_target::TargetServer;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

struct Quiet;
impl Sink for Quiet {
    fn interval(&mut self, _: &mut Totals) {}
    fn finish(&mut self, _: &mut Totals, _: RunStatus) {}
}

/// Messages from the shares, the start and the stop, in memory.
#[derive(Default)]
struct Hub {
    messages: Mutex<VecDeque<Vec<u8>>>,
    start: Mutex<Option<SystemTime>>,
    started: Condvar,
    stop: Mutex<Option<String>>,
}

struct HubShare(Arc<Hub>);
struct HubCoordinator(Arc<Hub>);

impl ShareLink for HubShare {
    fn ready(&self, message: &[u8]) -> Result<SystemTime, String> {
        self.0.messages.lock().unwrap().push_back(message.to_vec());
        let start = self.0.start.lock().unwrap();
        let (start, _) = self.0.started.wait_timeout_while(start, Duration::from_secs(30), |s| s.is_none()).unwrap();
        start.ok_or_else(|| "no start".to_string())
    }

    fn send(&self, message: &[u8]) -> Result<(), String> {
        self.0.messages.lock().unwrap().push_back(message.to_vec());
        Ok(())
    }

    fn stop_requested(&self) -> Option<String> {
        self.0.stop.lock().unwrap().clone()
    }
}

impl CoordinatorLink for HubCoordinator {
    fn receive(&self, timeout: Duration) -> Result<Option<Vec<u8>>, String> {
        let until = Instant::now() + timeout;
        loop {
            if let Some(message) = self.0.messages.lock().unwrap().pop_front() {
                return Ok(Some(message));
            }
            if Instant::now() >= until {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn start(&self, at: SystemTime) -> Result<(), String> {
        *self.0.start.lock().unwrap() = Some(at);
        self.0.started.notify_all();
        Ok(())
    }

    fn stop(&self, reason: &str) {
        *self.0.stop.lock().unwrap() = Some(reason.to_string());
    }
}

fn plan(base: &str, segment: Option<&str>) -> Plan {
    let segment = segment
        .map(|s| format!(r#", "execution_segment": {{"segment": "{s}", "sequence": "0,1/3,2/3,1"}}"#))
        .unwrap_or_default();
    let json = format!(
        r#"{{"version": 1, "name": "spread", "protocol": {{"base_url": "{base}"}},
            "options": {{"workers": 2, "seed": 11 {segment}}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 30}}],
              "steps": [
                {{"type": "request", "name": "home", "method": "GET", "url": "/"}},
                {{"type": "request", "name": "gone", "method": "GET", "url": "/no-such-page"}}
              ]}}]}}"#
    );
    Plan::from_json(&json).unwrap_or_else(|e| panic!("{e:?}"))
}

#[test]
fn three_shares_merged_by_a_coordinator_are_the_local_run() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let local = run(Arc::new(lower(&plan(&server.base_url(), None)).unwrap()), &RunControl::new(), &mut Quiet);
    let served_locally = server.stats().total;

    let hub = Arc::new(Hub::default());
    let shares: Vec<_> = ["0:1/3", "1/3:2/3", "2/3:1"]
        .into_iter()
        .map(|segment| {
            let program = Arc::new(lower(&plan(&server.base_url(), Some(segment))).unwrap());
            let link = Arc::new(HubShare(hub.clone()));
            std::thread::spawn(move || run_share(program, &RunControl::new(), &mut Quiet, None, link).map(|r| r.status))
        })
        .collect();
    let program = Arc::new(lower(&plan(&server.base_url(), None)).unwrap());
    let merged = run_coordinated(
        program,
        &RunControl::new(),
        &mut Quiet,
        Arc::new(HubCoordinator(hub.clone())),
        &CoordinatorOptions::new(3),
    )
    .unwrap();
    for share in shares {
        assert_eq!(share.join().unwrap(), Ok(RunStatus::Completed));
    }

    let (local, merged_totals) = (&local.totals, &merged.totals);
    assert_eq!(merged.status, RunStatus::Completed);
    assert_eq!(merged_totals.request_counts(), local.request_counts());
    assert_eq!(merged_totals.request_counts(), (30, 30));
    assert_eq!(server.stats().total - served_locally, 60);
    assert_eq!((merged_totals.users_started, merged_totals.users_finished), (30, 30));
    // One error key, as in the local run, though each share's kind was decoded apart.
    let errors = |totals: &Totals| {
        let mut errors: Vec<_> =
            totals.errors.iter().map(|(k, r)| (k.kind.to_string(), k.request.to_string(), r.count)).collect();
        errors.sort();
        errors
    };
    assert_eq!(errors(merged_totals), errors(local));
    assert_eq!(errors(merged_totals).len(), 1);
    // Users split 10/10/10, each share reported.
    let machines: Vec<_> = merged_totals.machines.iter().map(|m| (m.share, m.requests, m.delivered)).collect();
    assert_eq!(machines, [(0, 20, true), (1, 20, true), (2, 20, true)]);
}

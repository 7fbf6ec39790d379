//! The load a lost share did not deliver, from its own plan: what its schedule had due in the
//! window nobody ran it (from the end of its last counted interval to its replacement's
//! takeover, or to the run's end). The schedule is the one its workers ran: the same seed,
//! the same stripe.

use crate::injection::{arrivals, closed_slots, RateSchedule};
use crate::segment::{shared_seed, Share};
use horde_metrics::MissedLoad;
use horde_plan::{Injection, Plan};
use std::time::Duration;

/// What `plan` (a share's) had due between `from` and `to` after the run's start: open-model
/// arrivals, closed-model user-seconds and the throttle's slots (requests it would have let
/// the share send). Scenarios started after another are left out (their start is not known
/// here); `Duration::MAX`: to the schedule's end (a throttle's last step then ends it).
pub(crate) fn load_due(plan: &Plan, from: Duration, to: Duration) -> MissedLoad {
    let share = Share::of(plan);
    let seed = shared_seed(plan).unwrap_or(0);
    let mut missed = MissedLoad { from_s: from.as_secs_f64(), ..Default::default() };
    // The schedule's last instant: the window ends there when the run has no planned end.
    let mut last_due = from;
    for (index, scenario) in plan.scenarios.iter().enumerate().filter(|(_, s)| s.after.is_none()) {
        if scenario.injection.iter().any(Injection::is_closed) {
            for slot in closed_slots(&scenario.injection, |user| share.schedule.owns(user)).iter().flatten() {
                let overlap = slot.until.min(to).saturating_sub(slot.from.max(from));
                missed.user_seconds += overlap.as_secs_f64();
                last_due = last_due.max(slot.until);
            }
        } else {
            // Seeded as the share's workers seed their scenario (worker.rs).
            let due = arrivals(&scenario.injection, seed ^ index as u64);
            for (k, offset) in due.enumerate().take_while(|&(_, offset)| offset < to) {
                if offset >= from && share.schedule.owns(k as u64) {
                    missed.arrivals += 1;
                    last_due = last_due.max(offset);
                }
            }
        }
    }
    if let Some(throttle) = RateSchedule::throttle(&plan.options.throttle) {
        let end = match to {
            Duration::MAX => throttle.time_of(throttle.total()).unwrap_or(0.0),
            to => to.as_secs_f64(),
        };
        let from_s = from.as_secs_f64();
        if end > from_s {
            missed.throttle_slots =
                throttle.stripe_events_before(&share.work, end) - throttle.stripe_events_before(&share.work, from_s);
            last_due = last_due.max(Duration::from_secs_f64(end));
        }
    }
    missed.to_s = to.min(last_due).as_secs_f64();
    missed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::share_plans;

    fn plan(injection: &str) -> Plan {
        let json = format!(
            r#"{{"version": 1, "name": "p", "protocol": {{"base_url": "http://127.0.0.1:1"}},
               "scenarios": [{{"name": "s", "steps": [{{"type": "request", "name": "r", "method": "GET", "url": "/"}}],
                              "injection": [{injection}]}}]}}"#
        );
        Plan::from_json(&json).expect("a valid plan")
    }

    /// Half of a 100/s rate over two shares: 50 a second each, in any window.
    #[test]
    fn a_rate_share_misses_its_arrivals_in_the_window() {
        let whole = plan(r#"{"type": "constant_users_per_sec", "rate": 100, "duration_ms": 10000}"#);
        let plans = share_plans(&whole, &["a".into(), "b".into()], &[1, 1], None).unwrap();
        let missed = load_due(&plans[1], Duration::from_secs(2), Duration::from_secs(6));
        assert_eq!(missed.arrivals, 200);
        assert_eq!((missed.user_seconds, missed.throttle_slots), (0.0, 0));
        // Past the schedule's end nothing more is due, and the window ends with it.
        let to_the_end = load_due(&plans[0], Duration::from_secs(8), Duration::MAX);
        assert_eq!(to_the_end.arrivals, 100);
        assert!(to_the_end.to_s > 9.9 && to_the_end.to_s < 10.0, "{}", to_the_end.to_s);
    }

    /// A throttle's slots of a share (`horde http --rate`): half of 100 a second, in the window
    /// or to the throttle's end.
    #[test]
    fn a_throttled_share_misses_its_slots_in_the_window() {
        let mut whole = plan(r#"{"type": "at_once_users", "users": 2}"#);
        whole.options.throttle = vec![
            horde_plan::ThrottleStep::JumpToRps { rps: 100.0 },
            horde_plan::ThrottleStep::HoldFor { duration_ms: 6000 },
        ];
        let plans = share_plans(&whole, &["a".into(), "b".into()], &[1, 1], None).unwrap();
        let missed = load_due(&plans[1], Duration::from_secs(1), Duration::from_secs(6));
        assert_eq!((missed.throttle_slots, missed.arrivals), (250, 0));
        let to_the_end = load_due(&plans[1], Duration::from_secs(1), Duration::MAX);
        assert_eq!((to_the_end.throttle_slots, to_the_end.to_s), (250, 6.0));
    }

    /// Closed-model users of a share count for the part of the window they would have run.
    #[test]
    fn a_closed_share_misses_its_users_time_in_the_window() {
        let whole = plan(r#"{"type": "constant_concurrent_users", "users": 4, "duration_ms": 10000}"#);
        let plans = share_plans(&whole, &["a".into(), "b".into()], &[1, 1], None).unwrap();
        let missed = load_due(&plans[0], Duration::from_millis(2500), Duration::from_secs(20));
        assert_eq!((missed.arrivals, missed.user_seconds, missed.to_s), (0, 2.0 * 7.5, 10.0));
    }
}

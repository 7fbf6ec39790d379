//! The coordinator's cost per share per interval: decoding a share's message
//! ([`horde_metrics::wire`]) and merging it into the run's totals, for snapshots of R busy rows
//! (each row over `FEW_VALUES` requests, so every measure is a histogram: the costly case). Also
//! the share's cost to encode one. CPU time of this thread (/proc/thread-self/schedstat), not
//! wall time: the figure holds on a machine busy with other work.
//!
//! `cargo bench -p horde-metrics --bench wire_merge`

use horde_metrics::wire::{ShareInterval, ShareMessage};
use horde_metrics::{Recorder, RequestTiming, Snapshot, Totals};
use std::time::{Duration, SystemTime};

/// Requests per row per interval: enough for every distribution to be a histogram.
const REQUESTS_PER_ROW: u64 = 1_000;

fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux's schedstat");
    let ns: u64 = text.split_whitespace().next().and_then(|n| n.parse().ok()).expect("CPU ns first");
    Duration::from_nanos(ns)
}

fn share_interval(share: usize, rows: usize, interval: u64) -> ShareInterval {
    let requests = (0..rows)
        .map(|row| {
            let mut recorder = Recorder::default();
            for i in 0..REQUESTS_PER_ROW {
                // Latencies spread over three decades, as a real row's are.
                let latency_us = 200 + (i * 7919 + row as u64 * 104_729) % 200_000;
                let timing = RequestTiming {
                    latency_us,
                    uncorrected_us: latency_us - 100,
                    send_us: 20,
                    wait_us: latency_us - 150,
                    receive_us: 30 + i % 50,
                    bytes_sent: 120,
                    bytes_received: 900,
                    ..Default::default()
                };
                recorder.started += 1;
                recorder.record(&timing, i % 100 != 0);
            }
            (format!("request {row}").into(), recorder)
        })
        .collect();
    let snapshot = Snapshot { worker: share, requests, interval, ..Default::default() };
    ShareInterval {
        share,
        attempt: 0,
        snapshot,
        cpu_ns: Some(1),
        stop_reason: None,
        fenced: None,
        log: None,
        resumed_after_ms: None,
        rows_taken: Vec::new(),
        row_waits: 0,
        started_late_ns: None,
        peak_memory_bytes: None,
    }
}

fn main() {
    println!("rows | bytes per message | encode, ms CPU | decode, ms CPU | decode + merge into the totals, ms CPU");
    for rows in [1, 10, 100, 1000] {
        let message = ShareMessage::Interval(Box::new(share_interval(0, rows, 1)));
        let bytes = message.encode();
        let repetitions = (2000 / rows).clamp(5, 200) as u32;
        let started = thread_cpu();
        for _ in 0..repetitions {
            std::hint::black_box(message.encode());
        }
        let encode = (thread_cpu() - started) / repetitions;
        let started = thread_cpu();
        for _ in 0..repetitions {
            std::hint::black_box(ShareMessage::decode(&bytes).expect("decodes"));
        }
        let decode = (thread_cpu() - started) / repetitions;
        // The coordinator's steady state: the totals already hold every row.
        let mut totals = Totals::new(SystemTime::now(), 1);
        let ShareMessage::Interval(first) = ShareMessage::decode(&bytes).expect("decodes") else { unreachable!() };
        totals.absorb(first.snapshot);
        let started = thread_cpu();
        for _ in 0..repetitions {
            let ShareMessage::Interval(interval) = ShareMessage::decode(&bytes).expect("decodes") else {
                unreachable!()
            };
            std::hint::black_box(totals.absorb(interval.snapshot));
        }
        let merged = (thread_cpu() - started) / repetitions;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!("{rows} | {} | {:.3} | {:.3} | {:.3}", bytes.len(), ms(encode), ms(decode), ms(merged));
    }
}

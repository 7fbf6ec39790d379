//! YCSB's core workloads, one operation per step: the load phase inserts the next record of
//! the run's shared sequence; the run phase draws an operation in the workload's proportions
//! and a key as YCSB's choosers do, and records it on the operation's row (`READ`, `UPDATE`,
//! `INSERT`, `SCAN`, `READ-MODIFY-WRITE`).
//!
//! The key choosers follow YCSB's definitions: zipfian with constant 0.99 by Gray et al.'s
//! method ("Quickly generating billion-record synthetic databases", SIGMOD 1994), scattered
//! over the key space by FNV-1a so that the hot records are not neighbours; "latest" as the
//! same zipfian counted back from the newest record; uniform over the loaded records. Keys are
//! `user` followed by the record number's FNV-1a hash, as YCSB's hashed insert order names them.

use super::error::CqlFailure;
use super::run::{count_started, prepared, session, take_turn, timing};
use super::Prepared;
use crate::failure::Failure;
use crate::user::{Flow, VirtualUser};
use horde_plan::{Consistency, YcsbDistribution, YcsbPhase};
use rand::rngs::SmallRng;
use rand::Rng;
use scylla::client::session::Session;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// YCSB's zipfian constant.
const ZIPFIAN_CONSTANT: f64 = 0.99;

/// The run phase's operations, in YCSB's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

impl Operation {
    pub const ALL: [Operation; 5] =
        [Operation::Read, Operation::Update, Operation::Insert, Operation::Scan, Operation::ReadModifyWrite];
}

/// A `cql_ycsb` step, lowered.
pub struct YcsbProgram {
    pub phase: YcsbPhase,
    /// Each operation with a share above 0: its cumulative share (out of 1) and its row.
    pub mix: Vec<(f64, Operation, usize)>,
    pub statements: YcsbStatements,
    pub keys: KeyChooser,
    pub field_count: usize,
    pub field_length: usize,
    pub write_all_fields: bool,
    pub max_scan_length: u32,
    pub consistency: Option<Consistency>,
    pub shared: Arc<InsertSequence>,
}

/// The statements, prepared once per worker. With every field read (or written), each list
/// holds one statement; otherwise one per field, the field chosen at random.
pub struct YcsbStatements {
    pub read: Vec<Prepared>,
    pub scan: Vec<Prepared>,
    pub update: Vec<Prepared>,
    pub insert: Prepared,
}

impl YcsbStatements {
    /// The statements of `table` with `fields` fields, through `prepare` (which gives each its
    /// slot among the worker's prepared statements).
    pub fn new(
        table: &str,
        fields: usize,
        read_all: bool,
        write_all: bool,
        prepare: &mut dyn FnMut(String) -> Prepared,
    ) -> YcsbStatements {
        let field = |i: usize| format!("field{i}");
        let all: Vec<String> = (0..fields).map(field).collect();
        let read = match read_all {
            true => vec![prepare(format!("SELECT * FROM {table} WHERE y_id = ? LIMIT 1"))],
            false => (0..fields)
                .map(|i| prepare(format!("SELECT {} FROM {table} WHERE y_id = ? LIMIT 1", field(i))))
                .collect(),
        };
        let scan = match read_all {
            true => vec![prepare(format!("SELECT * FROM {table} WHERE token(y_id) >= token(?) LIMIT ?"))],
            false => (0..fields)
                .map(|i| prepare(format!("SELECT {} FROM {table} WHERE token(y_id) >= token(?) LIMIT ?", field(i))))
                .collect(),
        };
        let update = match write_all {
            true => {
                let sets: Vec<String> = all.iter().map(|f| format!("{f} = ?")).collect();
                vec![prepare(format!("UPDATE {table} SET {} WHERE y_id = ?", sets.join(", ")))]
            }
            false => {
                (0..fields).map(|i| prepare(format!("UPDATE {table} SET {} = ? WHERE y_id = ?", field(i)))).collect()
            }
        };
        let markers = vec!["?"; fields + 1].join(", ");
        let insert = prepare(format!("INSERT INTO {table} (y_id, {}) VALUES ({markers})", all.join(", ")));
        YcsbStatements { read, scan, update, insert }
    }
}

/// The record numbers of one run: the next to insert, and how far every insert has been
/// answered (YCSB's acknowledged counter: a read never picks a record still being written).
pub struct InsertSequence {
    next: AtomicU64,
    /// Every record below this one is written.
    written_below: AtomicU64,
    /// Records answered above `written_below`, waiting for the ones before them.
    answered_early: Mutex<BTreeSet<u64>>,
}

impl InsertSequence {
    /// A sequence whose records before `first` are all written.
    pub fn starting_at(first: u64) -> InsertSequence {
        InsertSequence {
            next: AtomicU64::new(first),
            written_below: AtomicU64::new(first),
            answered_early: Mutex::default(),
        }
    }

    fn take(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The record's insert was answered (well or not: as YCSB does, a failed insert does not
    /// hold back every later one).
    fn answered(&self, record: u64) {
        let mut early = self.answered_early.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut below = self.written_below.load(Ordering::Relaxed);
        if record != below {
            early.insert(record);
            return;
        }
        below += 1;
        while early.remove(&below) {
            below += 1;
        }
        self.written_below.store(below, Ordering::Release);
    }

    fn written_below(&self) -> u64 {
        self.written_below.load(Ordering::Acquire)
    }
}

/// How the run phase picks a record.
pub struct KeyChooser {
    pub distribution: YcsbDistribution,
    pub first: u64,
    pub records: u64,
    /// The zipfian's items and their zeta (an O(n) sum, done once when the plan is lowered).
    pub zipfian: Zipfian,
}

impl KeyChooser {
    /// `expected_inserts`: records the run may add, for which the zipfian keeps room (as YCSB
    /// does, twice the expected count); a key not yet written is drawn again.
    pub fn new(distribution: YcsbDistribution, first: u64, records: u64, expected_inserts: u64) -> KeyChooser {
        let items = match distribution {
            YcsbDistribution::Zipfian => records.saturating_add(expected_inserts.saturating_mul(2)),
            YcsbDistribution::Latest => records,
            // Not used: no O(n) sum to make.
            YcsbDistribution::Uniform => 1,
        };
        KeyChooser { distribution, first, records, zipfian: Zipfian::new(items.max(1)) }
    }

    fn choose(&self, rng: &mut SmallRng, latest: &mut Option<Zipfian>, written_below: u64) -> u64 {
        match self.distribution {
            YcsbDistribution::Uniform => self.first + rng.random_range(0..self.records),
            YcsbDistribution::Zipfian => loop {
                let rank = self.zipfian.draw(rng);
                let key = self.first + fnv1a_64(rank) % self.zipfian.items;
                // Never a record that is not written yet; the loaded ones always are.
                if key < written_below.max(self.first + self.records) {
                    return key;
                }
            },
            YcsbDistribution::Latest => {
                let present = written_below.saturating_sub(self.first).max(1);
                let zipfian = latest.get_or_insert_with(|| self.zipfian.clone());
                zipfian.grow_to(present);
                self.first + present - 1 - zipfian.draw(rng).min(present - 1)
            }
        }
    }
}

/// Gray et al.'s zipfian over `0..items`: rank 0 is the most frequent.
#[derive(Clone)]
pub struct Zipfian {
    items: u64,
    zeta_n: f64,
    eta: f64,
}

impl Zipfian {
    pub fn new(items: u64) -> Zipfian {
        let zeta_n = (1..=items).map(|i| 1.0 / (i as f64).powf(ZIPFIAN_CONSTANT)).sum();
        Zipfian::with_zeta(items, zeta_n)
    }

    fn with_zeta(items: u64, zeta_n: f64) -> Zipfian {
        let zeta_2 = 1.0 + 0.5f64.powf(ZIPFIAN_CONSTANT);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - ZIPFIAN_CONSTANT)) / (1.0 - zeta_2 / zeta_n);
        Zipfian { items, zeta_n, eta }
    }

    /// Extends the sum to `items` (the "latest" chooser's records only grow): O(new items).
    fn grow_to(&mut self, items: u64) {
        if items > self.items {
            let added: f64 = (self.items + 1..=items).map(|i| 1.0 / (i as f64).powf(ZIPFIAN_CONSTANT)).sum();
            *self = Zipfian::with_zeta(items, self.zeta_n + added);
        }
    }

    fn draw(&self, rng: &mut SmallRng) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(ZIPFIAN_CONSTANT) {
            return 1.min(self.items - 1);
        }
        let alpha = 1.0 / (1.0 - ZIPFIAN_CONSTANT);
        ((self.items as f64 * (self.eta * u - self.eta + 1.0).powf(alpha)) as u64).min(self.items - 1)
    }
}

/// FNV-1a over the number's eight bytes, low byte first (YCSB's `fnvhash64`).
fn fnv1a_64(value: u64) -> u64 {
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    for byte in value.to_le_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01B3);
    }
    hash & (u64::MAX >> 1)
}

/// The record's key.
fn key_of(record: u64) -> String {
    format!("user{}", fnv1a_64(record))
}

/// A field's value: printable characters, as YCSB's random values are.
fn random_value(rng: &mut SmallRng, length: usize) -> String {
    (0..length).map(|_| char::from(rng.random_range(b' '..=b'~'))).collect()
}

/// A user's own state: the "latest" chooser's zipfian, grown as records are added.
#[derive(Default)]
pub(crate) struct UserYcsb {
    latest: Option<Zipfian>,
}

/// Runs one operation of the step.
pub(crate) async fn run_step(step: &YcsbProgram, user: &mut VirtualUser) -> Flow {
    let held_since = match take_turn(user).await {
        Ok(held_since) => held_since,
        Err(flow) => return flow,
    };
    let (operation, row_id) = match step.phase {
        YcsbPhase::Load => (Operation::Insert, step.mix[0].2),
        YcsbPhase::Run => {
            let u: f64 = user.session.rng.random();
            let chosen = step.mix.iter().find(|(upto, _, _)| u < *upto).unwrap_or(&step.mix[step.mix.len() - 1]);
            (chosen.1, chosen.2)
        }
    };
    let record = match operation {
        Operation::Insert => {
            let record = step.shared.take();
            if step.phase == YcsbPhase::Load && record >= step.keys.first + step.keys.records {
                // Every record is loaded: this user is done.
                return Flow::ExitUser;
            }
            record
        }
        _ => {
            let written_below = step.shared.written_below();
            step.keys.choose(
                &mut user.session.rng,
                &mut user.protocols.cql.get_or_insert_default().ycsb.latest,
                written_below,
            )
        }
    };
    let started = count_started(user, row_id);
    let outcome = match session(&user.ctx).await {
        Ok(session) => operate(step, user, &session, operation, record).await,
        Err(failure) => Err(failure),
    };
    if operation == Operation::Insert {
        step.shared.answered(record);
    }
    let end = Instant::now();
    let origin = user.latency_origin(held_since, started);
    let timing = timing(origin, started, end);
    match outcome {
        Ok(()) => {
            user.record_ok(row_id, started, &timing, None);
            Flow::Next
        }
        Err(failure) if failure.unsent => {
            user.record_unsent(row_id, &failure, 0, None);
            user.after_failure()
        }
        Err(failure) => {
            user.record_failure(row_id, started, &timing, &failure, 0, None);
            user.after_failure()
        }
    }
}

/// The operation on `record`, answered.
async fn operate(
    step: &YcsbProgram,
    user: &mut VirtualUser,
    session: &Session,
    operation: Operation,
    record: u64,
) -> Result<(), Failure> {
    let key = key_of(record);
    match operation {
        Operation::Read => read(step, user, session, &key).await,
        Operation::Update => update(step, user, session, key).await,
        Operation::Insert => {
            let mut values = Vec::with_capacity(step.field_count + 1);
            values.push(key);
            values.extend((0..step.field_count).map(|_| random_value(&mut user.session.rng, step.field_length)));
            execute(user, session, &step.statements.insert, step.consistency, values).await.map(|_| ())
        }
        Operation::Scan => {
            let statement = pick(&step.statements.scan, &mut user.session.rng);
            let length = user.session.rng.random_range(1..=step.max_scan_length);
            execute(user, session, statement, step.consistency, (key, length as i32)).await.map(|_| ())
        }
        Operation::ReadModifyWrite => {
            read(step, user, session, &key).await?;
            update(step, user, session, key).await
        }
    }
}

async fn read(step: &YcsbProgram, user: &mut VirtualUser, session: &Session, key: &str) -> Result<(), Failure> {
    let statement = pick(&step.statements.read, &mut user.session.rng);
    let rows = execute(user, session, statement, step.consistency, (key,)).await?;
    match rows {
        0 => Err(Failure::new("ycsb_not_found", format!("no record {key}: load the table first (--phase load)"))),
        _ => Ok(()),
    }
}

async fn update(step: &YcsbProgram, user: &mut VirtualUser, session: &Session, key: String) -> Result<(), Failure> {
    let rng = &mut user.session.rng;
    let written = if step.write_all_fields { step.field_count } else { 1 };
    let statement = pick(&step.statements.update, rng);
    let mut values: Vec<String> = (0..written).map(|_| random_value(rng, step.field_length)).collect();
    values.push(key);
    execute(user, session, statement, step.consistency, values).await.map(|_| ())
}

/// One statement of a list, at random (the field a one-field read or write names).
fn pick<'a>(statements: &'a [Prepared], rng: &mut SmallRng) -> &'a Prepared {
    match statements {
        [only] => only,
        _ => &statements[rng.random_range(0..statements.len())],
    }
}

/// Executes a prepared statement; the rows of its answer.
async fn execute(
    user: &VirtualUser,
    session: &Session,
    statement: &Prepared,
    consistency: Option<Consistency>,
    values: impl scylla::serialize::row::SerializeRow,
) -> Result<usize, Failure> {
    let prepared = prepared(&user.ctx, session, statement, (consistency, None)).await?;
    let result =
        session.execute_unpaged(&prepared, values).await.map_err(|error| failure(&CqlFailure::of_execution(&error)))?;
    Ok(result.into_rows_result().map_or(0, |rows| rows.rows_num()))
}

fn failure(error: &CqlFailure) -> Failure {
    Failure::new(error.kind, error.message.clone())
}

/// The table a YCSB workload works on, before anything is measured.
pub struct YcsbTable<'a> {
    pub cluster: &'a horde_plan::CqlCluster,
    pub keyspace: &'a str,
    pub table: &'a str,
    pub field_count: u32,
}

impl YcsbTable<'_> {
    /// Makes the keyspace (SimpleStrategy with `replication` replicas) and the table when
    /// missing, as the load phase needs them; an existing table is kept, rows and all.
    pub fn create(&self, replication: u32) -> Result<(), String> {
        let fields: Vec<String> = (0..self.field_count).map(|i| format!("field{i} text")).collect();
        let statements = [
            format!(
                "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {{'class': 'SimpleStrategy', \
                 'replication_factor': {replication}}}",
                self.keyspace
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {}.{} (y_id text PRIMARY KEY, {})",
                self.keyspace,
                self.table,
                fields.join(", ")
            ),
        ];
        self.on_cluster(|session| async move {
            for statement in &statements {
                session
                    .query_unpaged(statement.as_str(), ())
                    .await
                    .map_err(|e| super::error::describe_execution(&e))?;
            }
            Ok(())
        })
    }

    /// Whether the table is there with the fields the run writes (the run phase needs a
    /// loaded table): its own message otherwise.
    pub fn check(&self) -> Result<(), String> {
        let last = self.field_count - 1;
        let probe = format!("SELECT y_id, field{last} FROM {}.{} LIMIT 1", self.keyspace, self.table);
        self.on_cluster(|session| async move {
            session.query_unpaged(probe.as_str(), ()).await.map(|_| ()).map_err(|e| {
                format!(
                    "{}.{} cannot be read as a YCSB table of {} fields ({}): load it first (--phase load)",
                    self.keyspace,
                    self.table,
                    self.field_count,
                    super::error::describe_execution(&e)
                )
            })
        })
    }

    fn on_cluster<F, Fut>(&self, work: F) -> Result<(), String>
    where
        F: FnOnce(Arc<Session>) -> Fut,
        Fut: std::future::Future<Output = Result<(), String>>,
    {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        // Connected without a keyspace: the load phase may be about to create it.
        let cluster = horde_plan::CqlCluster { keyspace: None, ..self.cluster.clone() };
        let timeout = std::time::Duration::from_millis(self.cluster.request_timeout_ms);
        runtime.block_on(async {
            let session = super::run::connect(&cluster, timeout).await.map_err(|message| {
                format!("cannot connect to the CQL cluster at {}: {message}", cluster.contact_points.join(", "))
            })?;
            work(Arc::new(session)).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_zipfian_favours_low_ranks_as_zipfs_law_says() {
        let zipfian = Zipfian::new(1000);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut counts = vec![0u64; 1000];
        let draws = 200_000;
        for _ in 0..draws {
            counts[zipfian.draw(&mut rng) as usize] += 1;
        }
        // P(rank 0) = 1 / zeta(n); rank 1 is 2^-0.99 of it.
        let expected_first = draws as f64 / zipfian.zeta_n;
        assert!((counts[0] as f64 - expected_first).abs() < 0.03 * expected_first, "{} vs {expected_first}", counts[0]);
        let ratio = counts[1] as f64 / counts[0] as f64;
        assert!((ratio - 0.5f64.powf(ZIPFIAN_CONSTANT)).abs() < 0.03, "{ratio}");
        assert!(counts[999] > 0 && counts[999] < counts[10]);
    }

    #[test]
    fn a_grown_zipfian_equals_one_made_at_that_size() {
        let mut grown = Zipfian::new(100);
        grown.grow_to(5000);
        let made = Zipfian::new(5000);
        assert!((grown.zeta_n - made.zeta_n).abs() < 1e-9);
        assert_eq!(grown.items, 5000);
    }

    #[test]
    fn keys_stay_among_written_records() {
        let mut rng = SmallRng::seed_from_u64(1);
        for distribution in [YcsbDistribution::Zipfian, YcsbDistribution::Uniform, YcsbDistribution::Latest] {
            let chooser = KeyChooser::new(distribution, 100, 1000, 500);
            let mut latest = None;
            for _ in 0..20_000 {
                let key = chooser.choose(&mut rng, &mut latest, 1100);
                assert!((100..1100).contains(&key), "{distribution:?} chose {key}");
            }
        }
    }

    #[test]
    fn latest_prefers_the_newest_records() {
        let mut rng = SmallRng::seed_from_u64(3);
        let chooser = KeyChooser::new(YcsbDistribution::Latest, 0, 1000, 0);
        let mut latest = None;
        let newest = (0..10_000).filter(|_| chooser.choose(&mut rng, &mut latest, 1000) >= 990).count();
        assert!(newest > 3000, "{newest} of 10000 among the 10 newest records");
        // A record added later becomes the newest.
        let after = (0..10_000).filter(|_| chooser.choose(&mut rng, &mut latest, 1001) == 1000).count();
        assert!(after > 1000, "{after}");
    }

    #[test]
    fn the_sequence_waits_for_earlier_inserts() {
        let sequence = InsertSequence::starting_at(10);
        let (a, b, c) = (sequence.take(), sequence.take(), sequence.take());
        assert_eq!((a, b, c), (10, 11, 12));
        sequence.answered(c);
        sequence.answered(b);
        assert_eq!(sequence.written_below(), 10);
        sequence.answered(a);
        assert_eq!(sequence.written_below(), 13);
    }
}

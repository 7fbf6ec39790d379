//! Feeders at run time: records loaded once per run and shared read-only by every worker (a
//! record is an `Arc`, so handing it to a user copies nothing), taken in queue order by one
//! atomic counter across all workers, so each record goes to exactly one user.
//!
//! With an execution segment, queue, shuffle and circular feeders take only the rows of the
//! share's stripe (the c-th take is row `stripe.global(c)`, modulo the count for circular): the
//! processes of a sequence together take each row once, as one process would have, with no
//! call between them. Random feeders draw from every row, in each process.
//!
//! A feeder with `batch` keeps only a batch of records in memory, behind a lock: for files
//! larger than memory, at the cost of a lock per record taken.

use super::value::Value;
use crate::segment::Stripe;
use horde_plan::{Feeder, FeederSource, FeederStrategy, OnFeederExhausted};
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The most a feeder file may hold when it is read whole; larger files take `batch`.
pub const MAX_FEEDER_FILE_BYTES: u64 = 1024 * 1024 * 1024;

/// One record: a value for each of the feeder's columns (None: the record lacks it).
pub type Record = Arc<[Option<Value>]>;

pub struct FeederRuntime {
    pub name: Arc<str>,
    /// Every column any record has, in the order records hold them.
    pub columns: Vec<String>,
    pub strategy: FeederStrategy,
    pub on_exhausted: OnFeederExhausted,
    /// The statistics row of the feeder's failures (`feed users`).
    pub row_id: usize,
    /// Where the source is, for messages.
    pub origin: String,
    records: Records,
    /// How many takes the share may make of a queue or shuffle feeder, its coordinator's
    /// grant (`options.execution_segment.row_grants`); `u64::MAX`: unbounded, as in a local run.
    grant: AtomicU64,
    /// Takes that found the grant used up, and waited for the next.
    grant_waits: AtomicU64,
}

enum Records {
    InMemory {
        records: Vec<Record>,
        /// `shuffle`: the order records are taken in, drawn once per run.
        order: Option<Vec<u32>>,
        /// The next of this share's records in queue order, across all workers.
        next: AtomicU64,
        /// The share's rows: its c-th take is row `rows.global(c)`.
        rows: Stripe,
    },
    Batched(Box<Mutex<BatchReader>>),
}

/// Why a feed found no record.
#[derive(Debug)]
pub enum FeedError {
    Exhausted,
    /// The share has taken every row its coordinator granted so far: the next grant comes
    /// with the coordinator's next beat.
    AwaitingGrant,
    /// Reading the file failed mid-run (it changed after it was checked).
    Read(String),
}

impl FeederRuntime {
    /// Reads and checks the feeder's source: `file`, the source's path resolved by the plan's
    /// rules, or the plan's inline records. `seed` orders a `shuffle`; `rows` are the share's
    /// (every row without a segment).
    pub fn load(
        feeder: &Feeder,
        file: Option<PathBuf>,
        row_id: usize,
        seed: u64,
        rows: Stripe,
    ) -> Result<FeederRuntime, String> {
        let origin = match &file {
            Some(file) => file.display().to_string(),
            None => format!("feeder {:?}", feeder.name),
        };
        let (columns, records) = match (&feeder.source, feeder.batch) {
            (FeederSource::Inline { records }, _) => inline_records(records),
            (FeederSource::JsonFile { .. }, Some(_)) => {
                return Err("a JSON array is read whole: use jsonl (one object per line) to read in batches".into())
            }
            (source, Some(batch)) => {
                let file = file.expect("files only");
                // Checked whole now, kept a batch at a time later: a bad line is an error
                // before the run, not in its middle.
                let mut reader = BatchReader::open(source, &file, batch as usize, feeder.strategy, seed, rows)?;
                let (columns, count) = reader.check_all()?;
                if count == 0 {
                    return Err(format!("{}: no records", file.display()));
                }
                reader.columns = columns.clone();
                return Ok(FeederRuntime {
                    name: feeder.name.as_str().into(),
                    columns,
                    strategy: feeder.strategy,
                    on_exhausted: feeder.on_exhausted,
                    row_id,
                    origin,
                    records: Records::Batched(Box::new(Mutex::new(reader))),
                    grant: AtomicU64::new(u64::MAX),
                    grant_waits: AtomicU64::new(0),
                });
            }
            (source, None) => {
                let file = file.expect("files only");
                read_all(source, &file)?
            }
        };
        if records.is_empty() {
            return Err(format!("{origin}: no records"));
        }
        let order = (feeder.strategy == FeederStrategy::Shuffle).then(|| {
            let mut order: Vec<u32> = (0..records.len() as u32).collect();
            order.shuffle(&mut <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed));
            order
        });
        Ok(FeederRuntime {
            name: feeder.name.as_str().into(),
            columns,
            strategy: feeder.strategy,
            on_exhausted: feeder.on_exhausted,
            row_id,
            origin,
            records: Records::InMemory { records, order, next: AtomicU64::new(0), rows },
            grant: AtomicU64::new(u64::MAX),
            grant_waits: AtomicU64::new(0),
        })
    }

    /// Whether the share's takes of this feeder can be bounded by grants: a queue or a
    /// shuffle, whose rows go out once each.
    pub fn rows_are_granted(&self) -> bool {
        self.strategy.runs_out()
    }

    /// Starts the takes after the first `takes` (those an earlier attempt of the share may
    /// have made: they are skipped, never used twice). Before the run.
    pub fn skip_takes(&self, takes: u64) {
        match &self.records {
            Records::InMemory { next, .. } => next.store(takes, Ordering::Relaxed),
            Records::Batched(_) => {
                let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(0);
                for _ in 0..takes {
                    if self.take(&mut rng).is_err() {
                        break;
                    }
                }
            }
        }
    }

    /// Bounds the takes to `bound` (counted from the first, skipped ones included) until a
    /// grant raises it. Before the run; for queue and shuffle feeders only.
    pub fn limit_takes(&self, bound: u64) {
        if self.rows_are_granted() {
            self.grant.store(bound, Ordering::Relaxed);
        }
    }

    /// The coordinator granted takes up to `bound`: never lowered, and an unbounded feeder
    /// stays unbounded.
    pub fn grant_takes(&self, bound: u64) {
        self.grant.fetch_max(bound, Ordering::Relaxed);
    }

    /// A take found the grant used up, and waits for the next.
    pub fn waited_for_grant(&self) {
        self.grant_waits.fetch_add(1, Ordering::Relaxed);
    }

    /// How many takes found the grant used up.
    pub fn grant_waits(&self) -> u64 {
        self.grant_waits.load(Ordering::Relaxed)
    }

    /// The next take's number (`next` of an in-memory queue), within the grant.
    fn claim(&self, next: &AtomicU64) -> Result<u64, FeedError> {
        let bound = self.grant.load(Ordering::Relaxed);
        if bound == u64::MAX {
            return Ok(next.fetch_add(1, Ordering::Relaxed));
        }
        next.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |take| (take < bound).then_some(take + 1))
            .map_err(|_| FeedError::AwaitingGrant)
    }

    /// The next record by the feeder's strategy; `rng` is the user's, for `random`.
    pub fn take(&self, rng: &mut impl Rng) -> Result<Record, FeedError> {
        match &self.records {
            Records::InMemory { records, order, next, rows } => {
                let count = records.len() as u64;
                let index = match self.strategy {
                    FeederStrategy::Random => rng.random_range(0..count),
                    FeederStrategy::Circular => rows.global(next.fetch_add(1, Ordering::Relaxed)) % count,
                    FeederStrategy::Queue | FeederStrategy::Shuffle => {
                        let taken = rows.global(self.claim(next)?);
                        if taken >= count {
                            return Err(FeedError::Exhausted);
                        }
                        match order {
                            Some(order) => u64::from(order[taken as usize]),
                            None => taken,
                        }
                    }
                };
                Ok(records[index as usize].clone())
            }
            Records::Batched(reader) => {
                let mut reader = reader.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if reader.taken >= self.grant.load(Ordering::Relaxed) {
                    return Err(FeedError::AwaitingGrant);
                }
                reader.take(rng)
            }
        }
    }

    /// How many records a queue has handed out in this process (for tests and the summary).
    pub fn taken(&self) -> u64 {
        match &self.records {
            Records::InMemory { next, .. } => next.load(Ordering::Relaxed),
            Records::Batched(reader) => reader.lock().map(|r| r.taken).unwrap_or(0),
        }
    }
}

fn delimiter(source: &FeederSource) -> Option<u8> {
    match source {
        FeederSource::Csv { .. } => Some(b','),
        FeederSource::Tsv { .. } => Some(b'\t'),
        FeederSource::Ssv { .. } => Some(b';'),
        _ => None,
    }
}

/// Columns in order of first appearance, and records holding a value per column.
struct RecordBuilder {
    columns: Vec<String>,
    index: HashMap<String, usize>,
    objects: Vec<Vec<(usize, Option<Value>)>>,
}

impl RecordBuilder {
    fn new() -> Self {
        RecordBuilder { columns: Vec::new(), index: HashMap::new(), objects: Vec::new() }
    }

    fn column(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.columns.push(name.to_string());
        self.index.insert(name.to_string(), self.columns.len() - 1);
        self.columns.len() - 1
    }

    fn object(&mut self, object: &serde_json::Map<String, serde_json::Value>) {
        let fields = object
            .iter()
            .map(|(key, value)| {
                // JSON null is no value: the variable stays unset.
                let value = (!value.is_null()).then(|| Value::from_json(value.clone()));
                (self.column(key), value)
            })
            .collect();
        self.objects.push(fields);
    }

    fn finish(self) -> (Vec<String>, Vec<Record>) {
        let width = self.columns.len();
        let records = self
            .objects
            .into_iter()
            .map(|fields| {
                let mut record = vec![None; width];
                for (i, value) in fields {
                    record[i] = value;
                }
                Record::from(record)
            })
            .collect();
        (self.columns, records)
    }
}

fn inline_records(records: &[serde_json::Map<String, serde_json::Value>]) -> (Vec<String>, Vec<Record>) {
    let mut builder = RecordBuilder::new();
    for record in records {
        builder.object(record);
    }
    builder.finish()
}

fn read_all(source: &FeederSource, file: &Path) -> Result<(Vec<String>, Vec<Record>), String> {
    let name = file.display();
    let size = std::fs::metadata(file).map_err(|e| format!("cannot read feeder file {name}: {e}"))?.len();
    if size > MAX_FEEDER_FILE_BYTES {
        return Err(format!(
            "{name} is {size} bytes, more than a feeder reads whole ({MAX_FEEDER_FILE_BYTES}): set batch to read it a batch at a time"
        ));
    }
    if let Some(delimiter) = delimiter(source) {
        let mut reader = csv_reader(file, delimiter)?;
        let columns = csv_header(&mut reader, file)?;
        let mut records = Vec::new();
        for row in reader.records() {
            records.push(csv_record(row, file)?);
        }
        return Ok((columns, records));
    }
    let mut builder = RecordBuilder::new();
    match source {
        FeederSource::JsonFile { .. } => {
            let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read feeder file {name}: {e}"))?;
            let value: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| format!("{name}:{}:{}: not valid JSON: {e}", e.line(), e.column()))?;
            let items = value.as_array().ok_or_else(|| format!("{name}: a JSON feeder is an array of objects"))?;
            for (i, item) in items.iter().enumerate() {
                let object =
                    item.as_object().ok_or_else(|| format!("{name}: element {i} of the array is not an object"))?;
                builder.object(object);
            }
        }
        FeederSource::Jsonl { .. } => {
            let reader = BufReader::new(File::open(file).map_err(|e| format!("cannot read feeder file {name}: {e}"))?);
            for (number, line) in reader.lines().enumerate() {
                let line = line.map_err(|e| format!("{name}:{}: {e}", number + 1))?;
                if let Some(object) = jsonl_object(&line, file, number + 1)? {
                    builder.object(&object);
                }
            }
        }
        _ => unreachable!("delimited files are read above"),
    }
    Ok(builder.finish())
}

fn csv_reader(file: &Path, delimiter: u8) -> Result<csv::Reader<File>, String> {
    csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(true)
        .flexible(false)
        .from_path(file)
        .map_err(|e| format!("cannot read feeder file {}: {e}", file.display()))
}

fn csv_header(reader: &mut csv::Reader<File>, file: &Path) -> Result<Vec<String>, String> {
    let header = reader.headers().map_err(|e| csv_error(&e, file))?;
    let columns: Vec<String> = header.iter().map(|c| c.trim_start_matches('\u{feff}').to_string()).collect();
    if columns.iter().all(|c| c.is_empty()) {
        return Err(format!("{}:1: the first line names the columns, and it is empty", file.display()));
    }
    for (i, column) in columns.iter().enumerate() {
        if columns[..i].contains(column) {
            return Err(format!("{}:1: column {column:?} is named twice", file.display()));
        }
    }
    Ok(columns)
}

fn csv_record(row: Result<csv::StringRecord, csv::Error>, file: &Path) -> Result<Record, String> {
    let row = row.map_err(|e| csv_error(&e, file))?;
    Ok(row.iter().map(|field| Some(Value::from(field))).collect::<Vec<_>>().into())
}

fn csv_error(error: &csv::Error, file: &Path) -> String {
    let name = file.display();
    match error.kind() {
        csv::ErrorKind::UnequalLengths { pos, expected_len, len } => {
            let line = pos.as_ref().map(|p| p.line()).unwrap_or(0);
            format!("{name}:{line}: a record of {len} fields where the header names {expected_len} columns")
        }
        _ => match error.position() {
            Some(pos) => format!("{name}:{}: {error}", pos.line()),
            None => format!("{name}: {error}"),
        },
    }
}

fn jsonl_object(
    line: &str,
    file: &Path,
    number: usize,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, String> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(serde_json::Value::Object(object)) => Ok(Some(object)),
        Ok(_) => Err(format!("{}:{number}: a line of a jsonl feeder is an object", file.display())),
        Err(e) => Err(format!("{}:{number}: not valid JSON: {e}", file.display())),
    }
}

/// A file read a batch of records at a time.
struct BatchReader {
    source: FeederSource,
    file: PathBuf,
    batch: usize,
    strategy: FeederStrategy,
    columns: Vec<String>,
    rows: Option<RowSource>,
    buffer: std::collections::VecDeque<Record>,
    exhausted: bool,
    taken: u64,
    rng: rand::rngs::SmallRng,
    /// The share's rows, and the run-wide index of the next row read (it goes on counting
    /// past the file's end when a circular feeder starts it over).
    share: Stripe,
    position: u64,
}

enum RowSource {
    Delimited(csv::StringRecordsIntoIter<File>),
    Lines(std::iter::Enumerate<std::io::Lines<BufReader<File>>>),
}

impl BatchReader {
    fn open(
        source: &FeederSource,
        file: &Path,
        batch: usize,
        strategy: FeederStrategy,
        seed: u64,
        rows: Stripe,
    ) -> Result<BatchReader, String> {
        Ok(BatchReader {
            source: source.clone(),
            file: file.to_path_buf(),
            batch,
            strategy,
            columns: Vec::new(),
            rows: None,
            buffer: Default::default(),
            exhausted: false,
            taken: 0,
            rng: rand::SeedableRng::seed_from_u64(seed),
            // Random draws within batches of every row: not striped.
            share: if strategy == FeederStrategy::Random { Stripe::whole() } else { rows },
            position: 0,
        })
    }

    /// Reads the whole file once, to check every line; returns the columns and the count.
    fn check_all(&mut self) -> Result<(Vec<String>, u64), String> {
        let mut count = 0;
        let columns;
        if let Some(delimiter) = delimiter(&self.source) {
            let mut reader = csv_reader(&self.file, delimiter)?;
            columns = csv_header(&mut reader, &self.file)?;
            for row in reader.records() {
                row.map_err(|e| csv_error(&e, &self.file))?;
                count += 1;
            }
        } else {
            let name = self.file.display();
            let reader =
                BufReader::new(File::open(&self.file).map_err(|e| format!("cannot read feeder file {name}: {e}"))?);
            let mut builder = RecordBuilder::new();
            for (number, line) in reader.lines().enumerate() {
                let line = line.map_err(|e| format!("{name}:{}: {e}", number + 1))?;
                if let Some(object) = jsonl_object(&line, &self.file, number + 1)? {
                    for key in object.keys() {
                        builder.column(key);
                    }
                    count += 1;
                }
            }
            columns = builder.columns;
        }
        Ok((columns, count))
    }

    fn reopen(&mut self) -> Result<(), String> {
        self.rows = Some(match delimiter(&self.source) {
            Some(delimiter) => {
                let mut reader = csv_reader(&self.file, delimiter)?;
                csv_header(&mut reader, &self.file)?;
                RowSource::Delimited(reader.into_records())
            }
            None => {
                let file = File::open(&self.file)
                    .map_err(|e| format!("cannot read feeder file {}: {e}", self.file.display()))?;
                RowSource::Lines(BufReader::new(file).lines().enumerate())
            }
        });
        Ok(())
    }

    /// The next record of the file that is the share's, or None at the file's end.
    fn read_one(&mut self) -> Result<Option<Record>, String> {
        loop {
            let record = self.read_next()?;
            if record.is_none() {
                return Ok(None);
            }
            let position = self.position;
            self.position += 1;
            if self.share.owns(position) {
                return Ok(record);
            }
        }
    }

    /// The next record of the file, or None at its end.
    fn read_next(&mut self) -> Result<Option<Record>, String> {
        if self.rows.is_none() {
            self.reopen()?;
        }
        match self.rows.as_mut().expect("opened above") {
            RowSource::Delimited(rows) => match rows.next() {
                None => Ok(None),
                Some(row) => csv_record(row, &self.file).map(Some),
            },
            RowSource::Lines(lines) => loop {
                let Some((number, line)) = lines.next() else { return Ok(None) };
                let line = line.map_err(|e| format!("{}:{}: {e}", self.file.display(), number + 1))?;
                if let Some(object) = jsonl_object(&line, &self.file, number + 1)? {
                    let mut record = vec![None; self.columns.len()];
                    for (key, value) in object {
                        if let Some(i) = self.columns.iter().position(|c| *c == key) {
                            record[i] = (!value.is_null()).then(|| Value::from_json(value));
                        }
                    }
                    return Ok(Some(record.into()));
                }
            },
        }
    }

    fn refill(&mut self) -> Result<(), FeedError> {
        // Where the file was last started over in this refill: a pass from there that reads
        // no row at all (the share's or not) finds an empty file.
        let mut restarted_at = None;
        while self.buffer.len() < self.batch {
            match self.read_one().map_err(FeedError::Read)? {
                Some(record) => {
                    self.buffer.push_back(record);
                    restarted_at = None;
                }
                None if self.strategy.runs_out() => {
                    self.exhausted = true;
                    break;
                }
                // An empty file (it was checked to hold records: it changed since).
                None if restarted_at == Some(self.position) => return Err(FeedError::Exhausted),
                None => {
                    // Circular and random start the file over: at once when the batch is
                    // empty, else at the next refill. A share's rows of a small file may
                    // come only after a few passes.
                    self.rows = None;
                    if !self.buffer.is_empty() {
                        break;
                    }
                    restarted_at = Some(self.position);
                }
            }
        }
        if self.strategy == FeederStrategy::Shuffle {
            self.buffer.make_contiguous().shuffle(&mut self.rng);
        }
        Ok(())
    }

    fn take(&mut self, rng: &mut impl Rng) -> Result<Record, FeedError> {
        if self.buffer.is_empty() {
            if self.exhausted {
                return Err(FeedError::Exhausted);
            }
            self.refill()?;
        }
        let record = match self.strategy {
            // Drawn within the batch; the batch is read anew once as many draws were made.
            FeederStrategy::Random => {
                let pick = rng.random_range(0..self.buffer.len());
                let record = self.buffer[pick].clone();
                self.taken += 1;
                if self.taken.is_multiple_of(self.batch as u64) {
                    self.buffer.clear();
                }
                return Ok(record);
            }
            _ => self.buffer.pop_front(),
        };
        self.taken += 1;
        record.ok_or(FeedError::Exhausted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn feeder(source: FeederSource, strategy: FeederStrategy, batch: Option<u32>) -> Feeder {
        Feeder { name: "f".into(), source, strategy, on_exhausted: OnFeederExhausted::Ko, batch }
    }

    fn load(feeder: Feeder) -> Result<FeederRuntime, String> {
        let file = feeder.source.path().map(PathBuf::from);
        FeederRuntime::load(&feeder, file, 0, 1, Stripe::whole())
    }

    fn ids(runtime: &FeederRuntime, takes: usize) -> Vec<Option<String>> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        (0..takes)
            .map(|_| runtime.take(&mut rng).ok().map(|record| record[0].as_ref().unwrap().as_text().into_owned()))
            .collect()
    }

    /// A granted queue hands out rows up to its grant, then waits; a later attempt skips the
    /// takes an earlier one may have made; in memory and read in batches alike.
    #[test]
    fn a_granted_queue_stops_at_its_grant_and_a_replacement_skips_ahead() {
        let dir = temp_dir("granted");
        let file = csv_file(&dir, 10);
        for batch in [None, Some(3)] {
            let source = FeederSource::Csv { path: file.display().to_string() };
            let queue = load(feeder(source, FeederStrategy::Queue, batch)).unwrap();
            queue.skip_takes(2);
            queue.limit_takes(5);
            let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
            let taken: Vec<_> =
                (0..3).map(|_| queue.take(&mut rng).unwrap()[0].clone().unwrap().as_text().into_owned()).collect();
            assert_eq!(taken, ["2", "3", "4"], "batch {batch:?}");
            assert!(matches!(queue.take(&mut rng), Err(FeedError::AwaitingGrant)));
            assert_eq!(queue.taken(), 5);
            queue.grant_takes(4);
            assert!(matches!(queue.take(&mut rng), Err(FeedError::AwaitingGrant)), "a grant never goes down");
            queue.grant_takes(6);
            assert_eq!(ids(&queue, 2), [Some("5".to_string()), None]);
        }
        // A feeder without a bound ignores grants.
        let circular =
            load(feeder(FeederSource::Csv { path: file.display().to_string() }, FeederStrategy::Circular, None))
                .unwrap();
        circular.limit_takes(1);
        circular.grant_takes(1);
        assert_eq!(ids(&circular, 12).iter().flatten().count(), 12);
    }

    fn csv_file(dir: &Path, rows: usize) -> PathBuf {
        let path = dir.join("rows.csv");
        let mut text = String::from("id,name\n");
        for i in 0..rows {
            text.push_str(&format!("{i},\"name, {i}\"\n"));
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("horde-feeder-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_queue_gives_each_record_once_whole_or_in_batches() {
        let dir = temp_dir("queue");
        let path = csv_file(&dir, 25).display().to_string();
        for batch in [None, Some(7)] {
            let runtime = load(feeder(FeederSource::Csv { path: path.clone() }, FeederStrategy::Queue, batch)).unwrap();
            assert_eq!(runtime.columns, ["id", "name"]);
            let taken = ids(&runtime, 26);
            let expected: Vec<Option<String>> = (0..25).map(|i| Some(i.to_string())).chain([None]).collect();
            assert_eq!(taken, expected, "batch {batch:?}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn circular_starts_over_and_shuffle_takes_each_once() {
        let dir = temp_dir("circular");
        let path = csv_file(&dir, 10).display().to_string();
        for batch in [None, Some(4)] {
            let circular =
                load(feeder(FeederSource::Csv { path: path.clone() }, FeederStrategy::Circular, batch)).unwrap();
            let taken: Vec<String> = ids(&circular, 25).into_iter().map(Option::unwrap).collect();
            let expected: Vec<String> = (0..25).map(|i| (i % 10).to_string()).collect();
            assert_eq!(taken, expected, "batch {batch:?}");
            let shuffle =
                load(feeder(FeederSource::Csv { path: path.clone() }, FeederStrategy::Shuffle, batch)).unwrap();
            let mut taken: Vec<String> = ids(&shuffle, 10).into_iter().map(Option::unwrap).collect();
            assert_ne!(taken, (0..10).map(|i| i.to_string()).collect::<Vec<_>>(), "shuffled");
            taken.sort_by_key(|id| id.parse::<u32>().unwrap());
            assert_eq!(taken, (0..10).map(|i| i.to_string()).collect::<Vec<_>>());
            assert!(ids(&shuffle, 1)[0].is_none(), "a shuffle runs out");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// P5: with segments, queue, shuffle and circular feeders, whole or in batches, hand
    /// each row to exactly one share; together the shares take what one process would.
    #[test]
    fn the_shares_of_a_feeder_take_each_row_once() {
        let dir = temp_dir("shares");
        let path = csv_file(&dir, 25).display().to_string();
        for weights in [vec![1, 1, 1], vec![1, 1, 2], vec![5, 3], vec![1, 0]] {
            for strategy in [FeederStrategy::Queue, FeederStrategy::Shuffle, FeederStrategy::Circular] {
                for batch in [None, Some(4)] {
                    let mut union = Vec::new();
                    for member in 0..weights.len() {
                        let share = Stripe::of(&weights, member);
                        let source = FeederSource::Csv { path: path.clone() };
                        let runtime = FeederRuntime::load(
                            &feeder(source, strategy, batch),
                            Some(path.clone().into()),
                            0,
                            1,
                            share.clone(),
                        )
                        .unwrap();
                        // A queue is taken until it runs out; a circular feeder, for the
                        // share's part of one pass.
                        let takes = if strategy == FeederStrategy::Circular { share.scale(25) as usize } else { 30 };
                        let ids: Vec<String> = ids(&runtime, takes).into_iter().flatten().collect();
                        assert_eq!(ids.len() as u64, share.scale(25), "{weights:?} {strategy:?} {batch:?}");
                        union.extend(ids);
                    }
                    union.sort_by_key(|id| id.parse::<u32>().unwrap());
                    let every_row: Vec<String> = (0..25).map(|i| i.to_string()).collect();
                    assert_eq!(union, every_row, "{weights:?} {strategy:?} {batch:?}");
                }
            }
        }
        // A circular feeder's share of a file smaller than its block still comes round.
        let small = csv_file(&dir, 1).display().to_string();
        let third = Stripe::of(&[1, 1, 1], 2);
        let circular = feeder(FeederSource::Csv { path: small }, FeederStrategy::Circular, Some(2));
        let runtime = FeederRuntime::load(&circular, circular.source.path().map(PathBuf::from), 0, 1, third).unwrap();
        assert_eq!(ids(&runtime, 3), [Some("0".to_string()), Some("0".to_string()), Some("0".to_string())]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_sources_name_the_file_and_line() {
        let dir = temp_dir("bad");
        let ragged = dir.join("ragged.tsv");
        std::fs::write(&ragged, "a\tb\n1\t2\n3\n").unwrap();
        let jsonl = dir.join("bad.jsonl");
        std::fs::write(&jsonl, "{\"a\": 1}\n\n[1]\n").unwrap();
        let broken = dir.join("broken.jsonl");
        std::fs::write(&broken, "{\"a\": 1}\n{\"a\": \n").unwrap();
        let cases = [
            (
                FeederSource::Tsv { path: ragged.display().to_string() },
                "ragged.tsv:3: a record of 1 fields where the header names 2 columns",
            ),
            (
                FeederSource::Jsonl { path: jsonl.display().to_string() },
                "bad.jsonl:3: a line of a jsonl feeder is an object",
            ),
            (FeederSource::Jsonl { path: broken.display().to_string() }, "broken.jsonl:2: not valid JSON"),
            (FeederSource::Csv { path: dir.join("none.csv").display().to_string() }, "cannot read feeder file"),
        ];
        for (source, expected) in cases {
            for batch in [None, Some(2)] {
                let error = load(feeder(source.clone(), FeederStrategy::Queue, batch)).err().unwrap();
                assert!(error.contains(expected), "{error}");
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn json_records_keep_their_types_and_null_is_no_value() {
        let records = serde_json::json!([{"id": 1, "tags": ["a", "b"], "gone": null}, {"id": 2, "extra": "x"}]);
        let records = records.as_array().unwrap().iter().map(|r| r.as_object().unwrap().clone()).collect();
        let runtime = load(feeder(FeederSource::Inline { records }, FeederStrategy::Queue, None)).unwrap();
        let column = |name: &str| runtime.columns.iter().position(|c| c == name).unwrap();
        assert_eq!(runtime.columns.len(), 4);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let first = runtime.take(&mut rng).unwrap();
        assert_eq!(first[column("tags")].as_ref().unwrap().as_text(), r#"["a","b"]"#);
        assert!(first[column("gone")].is_none() && first[column("extra")].is_none());
        assert!(runtime.take(&mut rng).unwrap()[column("extra")].is_some());
    }
}

//! The flags, defined once.

use clap::{Args, Parser, Subcommand};
use horde_engine::cluster::{ShareHosts, ShareLink};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A count of at least 1 (connections, requests, workers, users): a negative or zero one is
/// named as such rather than mistaken for a flag.
pub(crate) fn at_least_one(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("expected a whole number of at least 1, not {text:?}")),
    }
}

pub(crate) fn workers(text: &str) -> Result<u32, String> {
    let n = at_least_one(text)?;
    u32::try_from(n).map_err(|_| format!("{n} is more worker threads than horde runs"))
}

#[derive(Parser, Debug)]
#[command(
    name = "horde",
    version,
    about = "Load testing and benchmarking for web applications and databases",
    after_help = "Exit codes: 0 finished, 2 invalid input, 3 run failed (an internal error too), 4 the workload \
                  failed (horde sql), 5 a sweep measured no level (load not delivered), 99 thresholds failed (or a \
                  sweep where no level met its SLOs, or a regression found by compare), 130 interrupted."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a simulation (sim.py) or a plan (plan.json).
    Run(RunArgs),
    /// Print the Plan a simulation produces, after validating it.
    Plan {
        /// A Python simulation or a plan.json.
        file: PathBuf,
        /// A simulation parameter, read with horde.param(NAME).
        #[arg(short = 'D', value_name = "NAME=VALUE")]
        params: Vec<String>,
    },
    /// Quick mode, like wrk and oha: load one URL.
    Http(HttpArgs),
    /// Start the built-in target and run the JSF journey example against it.
    Demo {
        /// Virtual users of the demo journey.
        #[arg(long, default_value_t = 20, value_parser = at_least_one, allow_negative_numbers = true)]
        users: u64,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Serve the built-in target until Ctrl-C (for practice and tests).
    Target(TargetArgs),
    /// Find capacity: run a simulation at increasing levels of load and read off where it breaks.
    Sweep(SweepArgs),
    /// Iron Cushion's CouchDB benchmark: bulk insert, then weighted CRUD (its flags, its report).
    Couchdb(CouchdbArgs),
    /// Seed 000's SQL experiment against SQLite (the default), PostgreSQL or MariaDB/MySQL:
    /// create, populate, select, alter and update a table by several strategies, timed and
    /// checked by the database.
    Sql(SqlArgs),
    /// YCSB's core workloads (a to f) on Apache Cassandra or ScyllaDB: a load phase that
    /// inserts the records, a run phase of the workload's operations, YCSB's report.
    Cql(CqlArgs),
    /// Compare two sets of runs: per request and metric, the change B/A with its confidence
    /// interval and a verdict (exit 99 on a regression beyond the tolerance).
    Compare(CompareArgs),
    /// Benchmark Python functions, shell commands or a URL over parameter matrices: trials in
    /// fresh processes, JMH's table with honest error bars, the machine recorded; `compare`
    /// puts machines side by side.
    Bench(crate::bench::BenchArgs),
    /// Turn a HAR recording of a browser journey into a simulation that replays it: requests,
    /// pauses, bodies and uploads, with CSRF tokens, ViewStates, bearer tokens and ids
    /// correlated (docs/record-import.md).
    Import(ImportArgs),
    /// Record a journey: an HTTP and HTTPS proxy that writes every exchange to a HAR file, whole
    /// bodies included, until Ctrl-C; then `horde import` it.
    Record(RecordArgs),
    /// Print the console summary of a saved run, or write its report.html (--html).
    Report {
        /// A results directory or its summary.json (a sweep's directory with --html).
        results: PathBuf,
        /// Write DIR/report.html (from the directory alone, killed runs too) and print its path.
        #[arg(long)]
        html: bool,
    },
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A Python simulation (sim.py) or a plan (plan.json); with --trials, a second one (B) is
    /// run interleaved with the first (A) and compared against it.
    #[arg(required = true, num_args = 1..=2, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Run the plan this many times, each into its own results directory (under a parent
    /// named after the file); with two plans, N runs of each in the order A B B A A B ...,
    /// then `horde compare` of the two sets (compare.json beside them).
    #[arg(long, value_name = "N", value_parser = at_least_one, allow_negative_numbers = true)]
    pub trials: Option<u64>,
    /// A simulation parameter, read with horde.param(NAME); environment variables work too.
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    #[command(flatten)]
    pub transport: TransportArgs,
    #[command(flatten)]
    pub segment: SegmentArgs,
    #[command(flatten)]
    pub thresholds: GateArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub exports: ExportArgs,
}

/// What a run reports beyond its results directory: thresholds that gate CI, the JUnit report
/// CI reads, live metrics for a scraper.
#[derive(Args, Debug, Default)]
pub struct GateArgs {
    /// An assertion on the results, added to the plan's: '[scope:] metric op value unit
    /// [over WINDOW] [abort [after DELAY]]', e.g. 'p99<500ms', '"login": p95<=300ms',
    /// 'each: errors<1%', 'p99<2s over 30s abort' (docs/thresholds.md); repeatable. A failed
    /// threshold exits 99.
    #[arg(long = "threshold", value_name = "THRESHOLD")]
    pub thresholds: Vec<String>,
    /// Write the thresholds' verdicts as JUnit XML (a testcase per threshold), for CI.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Serve live metrics in the OpenMetrics text format at http://ADDRESS/metrics while the
    /// run goes (Prometheus can scrape it), e.g. 127.0.0.1:9464; with --trials, for all of
    /// them, each sample labelled with its trial (trial="3", and arm="A" with two plans).
    #[arg(long, value_name = "ADDRESS")]
    pub metrics: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
}

/// The live dashboard: the run's report served while it goes (docs/report.md).
#[derive(Args, Debug, Default, Clone)]
pub struct DashboardArgs {
    /// Serve the report page live while the run goes, updated every interval, and at the end
    /// the final report (as report.html): at ADDRESS (PORT, or IP:PORT), else 127.0.0.1 and a
    /// free port; the address is printed. Beyond loopback, the printed address carries a
    /// token that every request must give.
    #[arg(long, value_name = "ADDRESS", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    pub dashboard: Option<String>,
    /// With --dashboard: the page shows a Stop button, which stops the run as Ctrl-C does.
    #[arg(long, requires = "dashboard")]
    pub dashboard_control: bool,
    /// With --dashboard: open the page in the system's browser (xdg-open, open).
    #[arg(long, requires = "dashboard")]
    pub open: bool,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// A (the base), then B: a results directory, a directory of them (what `--results` or
    /// `horde run --trials` filled), or a quoted pattern ('results/base-*'); several a side
    /// are separated by `vs`: `horde compare a1 a2 a3 vs b1 b2 b3` (so an unquoted pattern
    /// the shell expands works too).
    #[arg(required = true, num_args = 2.., value_name = "A [vs] B")]
    pub paths: Vec<String>,
    /// How large a change must be to count (its whole confidence interval beyond it):
    /// latency and throughput relative, errors in percentage points.
    #[arg(
        long,
        value_name = "latency=5%,throughput=2%,errors=0%",
        default_value = "latency=5%,throughput=2%,errors=0%"
    )]
    pub tolerance: String,
    /// Significance level after Benjamini-Hochberg; the intervals are at 1 - alpha.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub alpha: f64,
    /// Also write the comparison as JSON (schema: docs/compare.schema.json).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the comparison as a self-contained HTML page (report.html's compare page:
    /// the tables, a chart of each metric's changes and of every run's values).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Compare even when the runs' plans differ (beyond base URLs and names). Not needed for
    /// the two sides `horde run --trials N A B` made, whose plans differ by design.
    #[arg(long)]
    pub force: bool,
    /// Names for the two sides, in the console, the JSON and the page (default A and B).
    #[arg(long, value_name = "A_NAME,B_NAME")]
    pub names: Option<String>,
}

/// `horde import`: read by the Python package (horde.recording), which gets these flags as JSON.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The recording: HAR 1.1 or 1.2 from a browser's DevTools, Playwright, mitmproxy, Charles
    /// or `horde record`.
    pub har: PathBuf,
    /// The simulation to write [default: the recording's name with .py, in the current
    /// directory]; its data (feeder, upload files, report) goes beside it.
    #[arg(short = 'o', long, value_name = "SIM.py")]
    pub output: Option<PathBuf>,
    /// The site to replay against, instead of the recording's most used origin (Origin and
    /// Referer follow it); `-D base_url=...` changes it again at run time.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// A folder holding the files uploaded during the recording, matched by file name: browser
    /// recordings leave uploaded bytes out.
    #[arg(long, value_name = "DIR")]
    pub files: Option<PathBuf>,
    /// Static resources (scripts, styles, images, fonts): `keep` them as the resources of their
    /// page, `infer` them from each page's HTML at run time, or `drop` them.
    #[arg(long, value_parser = ["keep", "infer", "drop"], default_value = "keep")]
    pub resources: String,
    /// Replay every value as recorded: no correlation, no generated values (a control that
    /// shows what correlation does).
    #[arg(long)]
    pub no_correlate: bool,
    /// Replay the simulation with one user against this site, compare each response with the
    /// recording, correlate what the differences reveal, and repeat until every status matches.
    #[arg(long, value_name = "URL")]
    pub validate: Option<String>,
    /// A second recording of the same journey: values that differ between the two are dynamic.
    #[arg(long, value_name = "HAR")]
    pub second: Option<PathBuf>,
    /// With --validate: at most this many replays.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub rounds: u32,
    /// The scenario's name [default: the recording's file name].
    #[arg(long)]
    pub name: Option<String>,
    /// Overwrite the simulation and its data if they exist.
    #[arg(long)]
    pub force: bool,
}

/// `horde record`: run by the Python package (horde.recording), which gets these flags as JSON.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The proxy's port (0 picks a free one; the first line printed names it).
    #[arg(long, default_value_t = 8888)]
    pub port: u16,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The HAR file written at Ctrl-C.
    #[arg(short = 'o', long, default_value = "recording.har", value_name = "HAR")]
    pub output: PathBuf,
    /// Start Chromium through the proxy on this page (with a profile of its own, trusting the
    /// proxy's certificate authority); closing it ends the recording too.
    #[arg(long, value_name = "URL")]
    pub browser: Option<String>,
    /// With --browser: no window (for scripts and CI).
    #[arg(long, requires = "browser")]
    pub headless: bool,
    /// With --browser: the Chromium to start [default: chromium or chromium-browser on PATH].
    #[arg(long, value_name = "PATH", requires = "browser")]
    pub chromium: Option<PathBuf>,
    /// Where the proxy's certificate authority is kept (made at first start) [default:
    /// ~/.horde/recorder].
    #[arg(long, value_name = "DIR")]
    pub ca_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct TargetArgs {
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// 0 picks a free port; the first line printed names it.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Requests to /work/{ms} served at once (capacity = slots / service time).
    #[arg(long, default_value_t = 4)]
    pub work_slots: usize,
    /// Serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN) with a self-signed certificate made at
    /// start; its fingerprint and the file holding it are printed after the URL.
    #[arg(long)]
    pub tls: bool,
    /// Where to write the certificate (PEM), for --cacert [default: horde-target-PORT.pem
    /// in the temporary directory].
    #[arg(long, value_name = "PATH", requires = "tls")]
    pub cert_out: Option<PathBuf>,
    /// How long a write to /eventual/{key} stays unseen by reads, unless the write says
    /// (?delay_ms=N); at most 3600000 (an hour).
    #[arg(long, value_name = "MS", default_value_t = 500, value_parser = clap::value_parser!(u64).range(..=3_600_000))]
    pub eventual_delay_ms: u64,
}

#[derive(Args, Debug)]
pub struct OutputArgs {
    /// Where results directories are created (each run gets a new one, named after the
    /// simulation or plan file and the time).
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub results: PathBuf,
    /// Write the results into exactly this directory, for CI: created if missing; refused if
    /// it holds anything but hidden files (such as .gitkeep).
    #[arg(long, value_name = "DIR", conflicts_with = "results")]
    pub results_dir: Option<PathBuf>,
    /// No progress line and no console summary (results are still written); the results
    /// directory's path is the last line on stdout.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Outputs for other tools, beyond the results directory.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Also write another tool's files: locust:PREFIX writes Locust's CSV files
    /// (PREFIX_stats.csv, PREFIX_stats_history.csv, PREFIX_failures.csv, PREFIX_exceptions.csv),
    /// PREFIX relative to the current directory as Locust's --csv. Repeatable.
    #[arg(long = "export", value_name = "FORMAT:PREFIX")]
    pub exports: Vec<String>,
    /// Log every request as it completes to FILE: .jsonl (a JSON object per request) or .jtl
    /// (JMeter's CSV results, which `jmeter -g` reads).
    #[arg(long, value_name = "FILE")]
    pub request_log: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct HttpArgs {
    /// The URL to load (http:// or https://).
    pub url: String,
    // Numbers are taken as text and checked with the other flags, so that every problem of a
    // command line is named at once.
    /// Connections (virtual users), each with its own keep-alive connection [default: 50].
    #[arg(short = 'c', long, allow_hyphen_values = true, value_name = "N")]
    pub connections: Option<String>,
    /// How long to run: 10s, 500ms, 2m. Default 10s unless -n is given.
    #[arg(short = 'd', long, allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Stop after exactly this many requests.
    #[arg(short = 'n', long, allow_hyphen_values = true, value_name = "N")]
    pub requests: Option<String>,
    /// Total requests per second; latency is then measured from each request's intended
    /// start, as wrk2 and oha -q do.
    #[arg(long, allow_hyphen_values = true, value_name = "R")]
    pub rate: Option<String>,
    /// The request method: GET, POST, ... or any other token (PURGE, PROPFIND), as curl's -X.
    #[arg(short = 'm', long, short_alias = 'X', default_value = "GET")]
    pub method: String,
    /// A request header, 'Name: value'; repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// The request body; @path reads it from a file.
    #[arg(long)]
    pub body: Option<String>,
    /// Request timeout: 60s by default.
    #[arg(long, default_value = "60s", allow_hyphen_values = true)]
    pub timeout: String,
    /// Worker threads (default: one per core).
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub workers: Option<String>,
    /// Do not follow redirects.
    #[arg(long)]
    pub no_follow: bool,
    #[command(flatten)]
    pub transport: TransportArgs,
    /// With --http2: requests in flight at once on each connection, as h2load's -m and oha's -p (each
    /// connection sends them together and waits for all, then again). Default 1.
    #[arg(long, value_name = "S")]
    pub streams: Option<String>,
    /// Ask for a compressed response (Accept-Encoding: gzip, deflate, br, zstd), as curl's
    /// --compressed; without it no Accept-Encoding is sent, as wrk and oha.
    #[arg(long)]
    pub compressed: bool,
    #[command(flatten)]
    pub segment: SegmentArgs,
    #[command(flatten)]
    pub thresholds: GateArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub exports: ExportArgs,
}

/// This process's share of a run that several processes make together (k6's execution
/// segments, docs/cli.md#execution-segments), over the plan's `options.execution_segment`.
#[derive(Args, Debug, Default, Clone)]
pub struct SegmentArgs {
    /// Run only this share of the plan: FROM:TO, fractions, decimals or percentages of the
    /// whole (1/3:2/3, 0.5:1, 25%:50%; a lone TO is 0:TO). The processes of a sequence
    /// together send exactly what one process would.
    #[arg(long, value_name = "FROM:TO", value_parser = execution_segment, conflicts_with = "cluster")]
    pub execution_segment: Option<String>,
    /// Every process's segments, the same for all of them: the points that cut the run
    /// (0,1/3,2/3,1) [default: 0,FROM,TO,1].
    #[arg(long, value_name = "0,P1,...,1", value_parser = execution_segment_sequence, requires = "execution_segment")]
    pub execution_segment_sequence: Option<String>,
    /// Internal (issue 26): run this segment as a share of a distributed run, its start given
    /// and its intervals merged by a coordinator through the spool directory DIR
    /// (horde-engine's cluster/spool.rs). Hidden: the tests run shares as separate processes
    /// with it; users will get --cluster.
    #[arg(long, value_name = "DIR", hide = true, requires = "execution_segment", conflicts_with = "cluster")]
    pub share_spool: Option<PathBuf>,
    /// Internal (issue 26): coordinate SHARES shares started with --share-spool DIR: one start,
    /// their intervals merged into this run's results and thresholds.
    #[arg(
        long,
        value_name = "SHARES:DIR",
        hide = true,
        value_parser = coordinate_spool,
        conflicts_with_all = ["execution_segment", "share_spool", "cluster"]
    )]
    pub coordinate_spool: Option<(usize, PathBuf)>,
    /// Internal: how long a coordinator waits for every share to be ready (a share waits
    /// twice as long for its start).
    #[arg(long, value_name = "MS", hide = true, default_value_t = 30_000)]
    pub spool_ready_timeout_ms: u64,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `--cluster` and its flags: the machines of a distributed engine a command runs on
/// (`horde run`, `horde http`, `horde sweep`).
#[derive(Args, Debug, Default, Clone)]
pub struct ClusterArgs {
    /// Run across processes or machines on Dask (pip install 'horde[cluster]',
    /// docs/cluster.md): local:N starts N worker processes on this machine, ssh:HOST,HOST,...
    /// starts a Dask scheduler on the first host and a worker on each other one over SSH,
    /// tcp://HOST:PORT uses the workers of an existing Dask scheduler. Each worker runs an
    /// equal share of the plan (or as --cluster-weights says); this process starts them
    /// together and merges their results.
    #[arg(
        long,
        value_name = "local:N|ssh:HOST,HOST,...|tcp://HOST:PORT",
        value_parser = cluster_address
    )]
    pub cluster: Option<String>,
    /// With --cluster: each worker's part of the run in proportion to its weight, one weight
    /// per worker in the order of summary.json's machines[] (3,1,1: the first worker sends
    /// 3/5 of it), or `cores`: each worker's number of cores.
    #[arg(long, value_name = "W1,W2,...|cores", value_parser = cluster_weights, requires = "cluster")]
    pub cluster_weights: Option<ClusterWeights>,
    /// With --cluster: what a lost worker (dead, gone from the cluster, silent for 10 s) does
    /// to the run: the others go on (continue, the default), its share starts again on a
    /// spare worker from a moment later on (replace; see --spares), or every worker stops
    /// (abort). Over the plan's options.cluster.on_worker_loss.
    #[arg(long, value_enum, requires = "cluster")]
    pub on_worker_loss: Option<WorkerLoss>,
    /// With --cluster: workers kept idle to replace lost ones (--on-worker-loss replace):
    /// local:N starts N more; on an existing cluster, the last N workers in the order of
    /// summary.json's machines[] run no share. A worker that joins during the run (one a
    /// nanny restarted) is a spare too. Over the plan's options.cluster.spares [default: 0].
    #[arg(long, value_name = "N", requires = "cluster")]
    pub spares: Option<u32>,
    /// With --cluster: a lost worker does not fail the command (exit 6); the run's status and
    /// thresholds decide, and summary.json still names the worker lost. The plan's
    /// options.cluster.allow_worker_loss says the same.
    #[arg(long, requires = "cluster")]
    pub allow_worker_loss: bool,
}

/// `--cluster-weights`: how the run is split over the workers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterWeights {
    /// One weight per worker, in the order of the machines.
    Given(Vec<u64>),
    /// Each worker's cores, as the worker counts them.
    Cores,
}

impl std::fmt::Display for ClusterWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterWeights::Given(weights) => {
                write!(f, "{}", weights.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
            }
            ClusterWeights::Cores => write!(f, "cores"),
        }
    }
}

/// `--on-worker-loss`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WorkerLoss {
    #[default]
    Continue,
    Replace,
    Abort,
}

/// How a coordinated run takes a lost worker: the policy, and whether the command fails.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LossHandling {
    pub policy: horde_engine::cluster::WorkerLossPolicy,
    pub allowed: bool,
}

impl ClusterArgs {
    /// With `--cluster`, puts the worker-loss flags over the plan's `options.cluster`, so that
    /// the plan the results keep says what the run did. Without it, nothing changes.
    pub(crate) fn apply(&self, options: &mut horde_plan::RunOptions) {
        if self.cluster.is_none() {
            return;
        }
        let mut cluster = options.cluster.unwrap_or_default();
        if let Some(loss) = self.on_worker_loss {
            cluster.on_worker_loss = match loss {
                WorkerLoss::Continue => horde_plan::WorkerLoss::Continue,
                WorkerLoss::Replace => horde_plan::WorkerLoss::Replace,
                WorkerLoss::Abort => horde_plan::WorkerLoss::Abort,
            };
        }
        if let Some(spares) = self.spares {
            cluster.spares = spares;
        }
        cluster.allow_worker_loss |= self.allow_worker_loss;
        options.cluster = Some(cluster);
    }
}

impl LossHandling {
    /// The plan's `options.cluster` (flags already applied) as the coordinator runs it.
    pub(crate) fn of(options: &horde_plan::ClusterOptions) -> LossHandling {
        let policy = match options.on_worker_loss {
            horde_plan::WorkerLoss::Continue => horde_engine::cluster::WorkerLossPolicy::Continue,
            horde_plan::WorkerLoss::Replace => horde_engine::cluster::WorkerLossPolicy::Replace,
            horde_plan::WorkerLoss::Abort => horde_engine::cluster::WorkerLossPolicy::Abort,
        };
        LossHandling { policy, allowed: options.allow_worker_loss }
    }
}

/// What this process is in a run made by several: the hidden spool flags, or `--cluster`.
#[derive(Clone, Default)]
pub(crate) enum ClusterRole {
    #[default]
    Local,
    /// A share whose messages go through this spool directory.
    Share { spool: PathBuf, ready_timeout: Duration },
    /// The coordinator of this many shares, through this spool directory.
    Coordinator { shares: usize, spool: PathBuf, ready_timeout: Duration },
    /// A share started by a distributed engine, which links it to its coordinator.
    LinkedShare(Arc<dyn ShareLink>),
    /// The coordinator of shares on the machines of a distributed engine (`--cluster`), one
    /// weight per machine.
    Hosts { hosts: Arc<dyn ShareHosts>, loss: LossHandling, weights: Vec<u64> },
}

impl ClusterRole {
    /// Whether a lost worker leaves the command's exit code alone (`--allow-worker-loss`).
    pub(crate) fn worker_loss_allowed(&self) -> bool {
        matches!(self, ClusterRole::Hosts { loss, .. } if loss.allowed)
    }

    /// Whether this process coordinates shares, which hold the connections.
    pub(crate) fn coordinates(&self) -> bool {
        matches!(self, ClusterRole::Coordinator { .. } | ClusterRole::Hosts { .. })
    }
}

impl SegmentArgs {
    /// Puts the flags over the plan's segment: the flag's segment, with the flag's sequence or
    /// else the plan's; and the cluster's flags over its `options.cluster`.
    pub(crate) fn apply(&self, options: &mut horde_plan::RunOptions) {
        self.cluster.apply(options);
        let Some(segment) = &self.execution_segment else { return };
        let plan_sequence = options.execution_segment.take().and_then(|s| s.sequence);
        options.execution_segment = Some(horde_plan::ExecutionSegmentOptions {
            segment: segment.clone(),
            sequence: self.execution_segment_sequence.clone().or(plan_sequence),
            resume: None,
            row_grants: None,
            request_log: None,
        });
    }
}

impl SegmentArgs {
    pub(crate) fn role(&self) -> ClusterRole {
        let ready_timeout = Duration::from_millis(self.spool_ready_timeout_ms);
        match (&self.share_spool, &self.coordinate_spool) {
            (Some(spool), _) => ClusterRole::Share { spool: spool.clone(), ready_timeout: ready_timeout * 2 },
            (None, Some((shares, spool))) => {
                ClusterRole::Coordinator { shares: *shares, spool: spool.clone(), ready_timeout }
            }
            (None, None) => ClusterRole::Local,
        }
    }
}

/// `--cluster`: `local:N` with N at least 1, `ssh:` and the scheduler's host then at least one
/// worker's, or a Dask scheduler's address (`tcp://HOST:PORT`, `tls://HOST:PORT`).
fn cluster_address(text: &str) -> Result<String, String> {
    const EXPECTED: &str = "local:N (N worker processes on this machine), ssh:HOST,HOST,... (the scheduler's \
                            host, then each worker's) or a Dask scheduler's address, tcp://HOST:PORT";
    if let Some(count) = text.strip_prefix("local:") {
        return match count.parse::<usize>() {
            Ok(count) if count >= 1 => Ok(text.to_string()),
            _ => Err(format!("{count:?} is not a number of worker processes (at least 1): {EXPECTED}")),
        };
    }
    if let Some(hosts) = text.strip_prefix("ssh:") {
        let hosts: Vec<&str> = hosts.split(',').collect();
        if let Some(bad) = hosts.iter().find(|host| host.is_empty() || host.contains(char::is_whitespace)) {
            return Err(format!("{bad:?} is not a host name: {EXPECTED}"));
        }
        if hosts.len() < 2 {
            return Err(format!(
                "ssh:{} names only the scheduler's host: list the workers' hosts after it (name a host twice to \
                 run the scheduler and a worker there)",
                hosts[0]
            ));
        }
        return Ok(text.to_string());
    }
    let address = text.strip_prefix("tcp://").or_else(|| text.strip_prefix("tls://")).ok_or(EXPECTED)?;
    match address.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => Ok(text.to_string()),
        _ => Err(format!("{text:?} has no HOST:PORT: {EXPECTED}")),
    }
}

/// `--cluster-weights`: positive integers, comma-separated, or `cores`.
fn cluster_weights(text: &str) -> Result<ClusterWeights, String> {
    if text == "cores" {
        return Ok(ClusterWeights::Cores);
    }
    let weights = text
        .split(',')
        .map(|weight| match weight.trim().parse::<u64>() {
            Ok(weight) if weight >= 1 => Ok(weight),
            _ => {
                Err(format!("{weight:?} is not a weight: one whole number of at least 1 per worker (3,1,1), or cores"))
            }
        })
        .collect::<Result<Vec<u64>, String>>()?;
    Ok(ClusterWeights::Given(weights))
}

fn coordinate_spool(text: &str) -> Result<(usize, PathBuf), String> {
    let (shares, dir) = text.split_once(':').ok_or("SHARES:DIR, as 2:/tmp/spool")?;
    let shares: usize = shares.parse().map_err(|_| format!("{shares:?} is not a number of shares"))?;
    if shares == 0 || dir.is_empty() {
        return Err("SHARES:DIR with at least one share and a directory, as 2:/tmp/spool".into());
    }
    Ok((shares, PathBuf::from(dir)))
}

fn execution_segment(text: &str) -> Result<String, String> {
    text.parse::<horde_plan::ExecutionSegment>().map(|_| text.to_string())
}

fn execution_segment_sequence(text: &str) -> Result<String, String> {
    text.parse::<horde_plan::ExecutionSegmentSequence>().map(|_| text.to_string())
}

/// Whom https trusts, where names lead and which HTTP version is spoken: `horde http`'s flags,
/// which `run` and `sweep` take too, over what the plan or simulation says.
#[derive(Args, Debug, Default, Clone)]
pub struct TransportArgs {
    /// https: accept any certificate (the summary says verification was off); over a plan's
    /// `tls.verify`.
    #[arg(long, short = 'k')]
    pub insecure: bool,
    /// https: also trust the certificates of this PEM file: certificate authorities, or the
    /// server's own certificate (a self-signed one, as curl accepts it); over a plan's
    /// `tls.ca_file`.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<String>,
    /// Connect to ADDRESS for HOST:PORT instead of resolving HOST, as curl; repeatable; added
    /// to a plan's `resolve`.
    #[arg(long, value_name = "HOST:PORT:ADDRESS")]
    pub resolve: Vec<String>,
    /// Speak HTTP/2: on https offered by ALPN (a server without it gets HTTP/1.1, and the
    /// summary says so); on http:// h2c with prior knowledge (a server without it: KO
    /// http2_not_supported). For a plan, prior knowledge when its base URL is http://.
    #[arg(long)]
    pub http2: bool,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("levels").required(true).args(["users", "rate", "auto"])))]
pub struct SweepArgs {
    /// A Python simulation, a plan.json, or an http:// URL to GET.
    pub target: String,
    /// A simulation parameter, read with horde.param(NAME).
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Closed model: these numbers of concurrent users, e.g. 10,25,50,100.
    #[arg(long, value_delimiter = ',', value_name = "N,N,...", value_parser = at_least_one, allow_negative_numbers = true)]
    pub users: Option<Vec<u64>>,
    /// Open model: these arrival rates (users per second), e.g. 100,200,400.
    #[arg(long, value_delimiter = ',', value_name = "R,R,...", allow_negative_numbers = true)]
    pub rate: Option<Vec<f64>>,
    /// Search by itself: step up geometrically until an SLO breaks or throughput stops
    /// growing, then bisect between the last good and the first bad level.
    #[arg(long)]
    pub auto: bool,
    /// With --auto: sweep concurrent users (closed) or arrival rates (open).
    #[arg(long, value_parser = ["users", "rate"], default_value = "users", requires = "auto")]
    pub model: String,
    /// With --auto: the first level.
    #[arg(long, allow_negative_numbers = true, requires = "auto")]
    pub start: Option<f64>,
    /// With --auto: each level is this many times the previous one.
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true, requires = "auto")]
    pub factor: f64,
    /// With --auto: never go above this level.
    #[arg(long, allow_negative_numbers = true, requires = "auto")]
    pub max_level: Option<f64>,
    /// With --auto: bisection steps after the geometric search.
    #[arg(long, default_value_t = 3, requires = "auto")]
    pub bisect: u32,
    /// Measured time of each level: 10s, 500ms, 2m.
    #[arg(long, default_value = "10s", allow_hyphen_values = true)]
    pub level_duration: String,
    /// Time at the start of each level that is run but not measured.
    #[arg(long, default_value = "2s", allow_hyphen_values = true)]
    pub warmup: String,
    /// A service-level objective every measured level is checked against, in the thresholds'
    /// grammar (docs/thresholds.md): 'p99<500ms', 'errors<1%', 'rps>=1000'; repeatable. The
    /// simulation's own thresholds count too. No level meeting them exits 99.
    #[arg(long = "slo", visible_alias = "threshold", value_name = "SLO")]
    pub slos: Vec<String>,
    /// Worker threads of every level (default: the plan's, else one per core).
    #[arg(long, value_parser = workers, allow_negative_numbers = true)]
    pub workers: Option<u32>,
    /// A start later than this after its intended time counts as late: 2ms, 500us (default:
    /// the plan's, else 1ms). More than 1 % of starts late marks a level "load not delivered".
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub late_start_threshold: Option<String>,
    /// Serve live metrics in the OpenMetrics text format at http://ADDRESS/metrics for the
    /// whole sweep, each sample labelled with its level (level="25", level_run="1").
    #[arg(long, value_name = "ADDRESS")]
    pub metrics: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub transport: TransportArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Iron Cushion's flags, spelled as it spells them (`--num_connections=50`); each also has a
/// kebab-case alias (`--num-connections`). Numbers are read as signed so that a negative one
/// gets the rule it breaks, not a parse error.
#[derive(Args, Debug)]
pub struct CouchdbArgs {
    /// The server: http://[hostname]:[port].
    #[arg(long = "database_address", alias = "database-address", value_name = "URL")]
    pub database_address: Option<String>,
    /// The database; created when it does not exist.
    #[arg(long = "database_name", alias = "database-name", value_name = "NAME")]
    pub database_name: Option<String>,
    /// Concurrent connections (virtual users), each with its share of the work.
    #[arg(long = "num_connections", alias = "num-connections", default_value_t = 1, allow_negative_numbers = true)]
    pub num_connections: i64,
    /// A JSON document to use as the template of generated documents.
    #[arg(long = "json_document_schema_filename", alias = "json-document-schema-filename", value_name = "FILE")]
    pub json_document_schema_filename: Option<std::path::PathBuf>,
    /// An XML schema of generated documents (object/entry/name/value, array/element, ...).
    #[arg(long = "xml_document_schema_filename", alias = "xml-document-schema-filename", value_name = "FILE")]
    pub xml_document_schema_filename: Option<std::path::PathBuf>,
    /// Seed of every random choice: the same seed gives the same documents and order.
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<i64>,
    /// Documents in each bulk insert.
    #[arg(
        long = "num_documents_per_bulk_insert",
        alias = "num-documents-per-bulk-insert",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub num_documents_per_bulk_insert: i64,
    /// Bulk inserts per connection.
    #[arg(
        long = "num_bulk_insert_operations",
        alias = "num-bulk-insert-operations",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub num_bulk_insert_operations: i64,
    /// CRUD operations per connection.
    #[arg(
        long = "num_crud_operations",
        alias = "num-crud-operations",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub num_crud_operations: i64,
    #[arg(long = "create_weight", alias = "create-weight", default_value_t = 0, allow_negative_numbers = true)]
    pub create_weight: i64,
    #[arg(long = "read_weight", alias = "read-weight", default_value_t = 0, allow_negative_numbers = true)]
    pub read_weight: i64,
    #[arg(long = "update_weight", alias = "update-weight", default_value_t = 0, allow_negative_numbers = true)]
    pub update_weight: i64,
    #[arg(long = "delete_weight", alias = "delete-weight", default_value_t = 0, allow_negative_numbers = true)]
    pub delete_weight: i64,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = workers, allow_negative_numbers = true)]
    pub workers: Option<u32>,
    /// Write the plan this command would run and exit (to run it later, or edit it).
    #[arg(long, alias = "print_plan")]
    pub print_plan: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `horde sql`: seed 000's experiment. Lists are comma-separated; every strategy of a phase
/// starts from the same state.
#[derive(Args, Debug)]
pub struct SqlArgs {
    /// The database: postgres://user:password@host:port/db, mysql://user:password@host:port/db
    /// (MariaDB too), sqlite:///path/file.db. Default: a SQLite file in the results directory.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Rows of the table.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub rows: u64,
    /// Connections working at once, each on its share of the rows (default: 4; SQLite, which
    /// has one writer at a time: 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Rows per multi-row statement, per transaction (row-txn), in flight (pipeline).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch_size: u32,
    /// Characters of random text per row.
    #[arg(long, default_value_t = 45, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub text_length: u32,
    /// The phases to run, in this order: create, populate, select, alter, update.
    #[arg(long, value_delimiter = ',', default_value = "create,populate,select,alter,update")]
    pub phases: Vec<String>,
    /// Populate strategies: row (autocommit: slow), row-txn, pipeline (PostgreSQL), batch, bulk.
    #[arg(long, value_delimiter = ',', default_value = "row-txn,batch,bulk")]
    pub populate: Vec<String>,
    /// Update strategies: row (autocommit: slow), row-txn, temp-join, swap, server.
    #[arg(long, value_delimiter = ',', default_value = "row-txn,temp-join,swap,server")]
    pub update: Vec<String>,
    /// Alter strategies, how the phase adds the column: in-place, rebuild (a rewrite of every
    /// row).
    #[arg(long, value_delimiter = ',', default_value = "in-place")]
    pub alter: Vec<String>,
    /// The table (created by the create phase; it must not exist unless --replace).
    #[arg(long, default_value = "bulktest")]
    pub table: String,
    /// Drop the table first if it exists.
    #[arg(long)]
    pub replace: bool,
    /// Keep the table at the end (it is dropped otherwise).
    #[arg(long)]
    pub keep: bool,
    /// Seed of the random text: the same seed gives the same rows.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = workers, allow_negative_numbers = true)]
    pub workers: Option<u32>,
    /// Write the plan this command would run and exit.
    #[arg(long)]
    pub print_plan: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `horde cql`: YCSB's core workloads on CQL, YCSB's flags under horde's names.
#[derive(Args, Debug)]
pub struct CqlArgs {
    /// Nodes to reach first, host or host:port, comma-separated (default 127.0.0.1:9042).
    #[arg(value_name = "NODES", value_delimiter = ',')]
    pub contact_points: Vec<String>,
    /// The core workload: a (50 % reads, 50 % updates), b (95/5), c (reads), d (read latest),
    /// e (short scans), f (read-modify-write).
    #[arg(long, default_value = "a")]
    pub workload: String,
    /// load (insert the records), run (the workload's operations), or both, load first.
    #[arg(long, default_value = "both")]
    pub phase: String,
    /// Records to load, and the run phase's keys (YCSB's recordcount).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub records: u64,
    /// Operations of the run phase (operationcount); with --duration, whichever ends first.
    /// Default: 1000, or none with --duration.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub operations: Option<u64>,
    /// The run phase's longest time (maxexecutiontime), e.g. 30s, 5m.
    #[arg(long, short = 'd')]
    pub duration: Option<String>,
    /// Client threads: users each running one operation at a time (YCSB's -threads).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub threads: u32,
    /// Operations per second of the run phase, all threads together (YCSB's -target);
    /// latencies count from when each operation was due.
    #[arg(long)]
    pub target: Option<f64>,
    /// Reads' and writes' consistency: one, quorum, all, local_quorum, local_one...
    /// (default: local_one, the drivers').
    #[arg(long)]
    pub consistency: Option<String>,
    /// The key chooser, instead of the workload's: zipfian, uniform, latest.
    #[arg(long)]
    pub distribution: Option<String>,
    #[arg(long, default_value = "ycsb")]
    pub keyspace: String,
    #[arg(long, default_value = "usertable")]
    pub table: String,
    /// Replicas of the keyspace the load phase creates when it is missing.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub replication: u32,
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub field_count: u32,
    /// Characters per field.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub field_length: u32,
    /// The first record's number (insertstart): loaders of one table in parts each take a range.
    #[arg(long, default_value_t = 0)]
    pub insert_start: u64,
    /// Reads read one field, chosen at random (readallfields=false).
    #[arg(long)]
    pub read_one_field: bool,
    /// Updates write every field (writeallfields=true).
    #[arg(long)]
    pub write_all_fields: bool,
    /// A scan reads from 1 to this many records.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_scan_length: u32,
    /// The datacenter whose nodes are preferred.
    #[arg(long)]
    pub local_datacenter: Option<String>,
    /// Password authentication: the user (and --password, or HORDE_CQL_PASSWORD).
    #[arg(long)]
    pub user: Option<String>,
    #[arg(long, env = "HORDE_CQL_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Speak TLS to the nodes, trusting the certificate authorities of this PEM file besides
    /// the system's (each node's certificate must list its IP address).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Speak TLS to the nodes, verifying the system's trusted roots only.
    #[arg(long, conflicts_with = "cacert")]
    pub tls: bool,
    /// Connections each worker thread keeps to each node [default: 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub pool_size: Option<u32>,
    /// Seed of keys, operations and values: the same seed gives the same sequence per user.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = workers, allow_negative_numbers = true)]
    pub workers: Option<u32>,
    /// Write the plan of one phase (--phase load or run) and exit.
    #[arg(long)]
    pub print_plan: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn cluster_flags(argv: &[&str]) -> ClusterArgs {
        let cli = Cli::try_parse_from(["horde", "run", "sim.py"].iter().chain(argv)).expect("valid flags");
        let Command::Run(args) = cli.command else { unreachable!("parsed as horde run") };
        args.segment.cluster
    }

    #[test]
    fn the_cluster_flags_go_over_the_plans_policy_and_only_with_a_cluster() {
        let plan_policy = horde_plan::ClusterOptions {
            on_worker_loss: horde_plan::WorkerLoss::Abort,
            spares: 0,
            allow_worker_loss: true,
        };
        let mut options = horde_plan::RunOptions { cluster: Some(plan_policy), ..Default::default() };
        cluster_flags(&["--cluster", "local:2", "--spares", "2"]).apply(&mut options);
        assert_eq!(options.cluster, Some(horde_plan::ClusterOptions { spares: 2, ..plan_policy }));
        cluster_flags(&["--cluster", "local:2", "--on-worker-loss", "replace"]).apply(&mut options);
        assert_eq!(options.cluster.map(|c| c.on_worker_loss), Some(horde_plan::WorkerLoss::Replace));
        // A local run keeps the plan as it is; the flags need --cluster.
        let mut local = horde_plan::RunOptions::default();
        cluster_flags(&[]).apply(&mut local);
        assert_eq!(local.cluster, None);
        assert!(Cli::try_parse_from(["horde", "run", "sim.py", "--spares", "1"]).is_err());
    }
}

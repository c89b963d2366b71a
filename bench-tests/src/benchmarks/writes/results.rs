//! What a writes run records (every field in docs/kinds/writes.md): the workload it was
//! asked for, which counters the engine has, the runner check on the INSERT, every
//! (round, level) with every statement, its rows, its time split, its threads, its CPU and
//! its parts, each level across rounds, and the completed INSERTs as query runs (one per
//! level) for the comparison of two bundles.

use serde::{Deserialize, Serialize};

use super::decomposition::{Decomposition, EventsDelta};
use super::server::GaugeMeans;
use crate::engine_threads::ThreadStateMeans;
use crate::levels::{Latency, LevelBound, LevelRound, LevelSummary, RunnerCheck, Spread};
use crate::load_generator::{ClientPlacement, LoadFrom};
use crate::query_runs::QueryRuns;
use crate::results::{KindResults, RunBundle};
use crate::stats::{EngineEvents, StatsSource};

pub type WritesBundle = RunBundle<WritesResults>;
pub type WritesQueryRuns = QueryRuns<WritesVariant>;

/// The share of an open loop's asked rate a round must complete to have kept it (its wall
/// time includes the last INSERTs' latency, so a kept rate reads a little below the asked).
pub const RATE_KEPT: f64 = 0.95;

/// The name the INSERT goes by in records and comparisons.
pub const INSERT: &str = "insert";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WritesResults {
    pub workload: WritesWorkload,
    /// Which of the counters the time split reads the engine has (with zero values
    /// shown), or why that is unknown; `Unknown` until the prepare phase reads it.
    pub engine_events: EngineEvents,
    /// Where each statement's sample comes from: its result's counters alone (no
    /// ProfileEvents per statement; the time split is per level, from the events' delta).
    pub statement_records: StatsSource,
    pub runner_check: Option<RunnerCheck>,
    /// Why the engine's own count of its threads' I/O wait (`OSIOWaitMicroseconds`) is
    /// unknown on this run, when it is: the kernel's delay accounting that feeds it is off.
    pub os_io_wait_unknown: Option<String>,
    /// Every (round, level) measured, in the order they ran.
    pub rounds: Vec<WritesRound>,
    /// Each level across its complete rounds, recomputed after every level.
    pub levels: Vec<WritesLevel>,
    /// The completed INSERTs of each level, as samples.
    pub queries: Vec<WritesQueryRuns>,
    /// What the run had to say (a target that runs one statement at a time, figures it
    /// cannot read there).
    pub notes: Vec<String>,
}

impl KindResults for WritesResults {
    const KIND: &'static str = "writes";
    type Variant = WritesVariant;

    fn queries(&self) -> &[WritesQueryRuns] {
        &self.queries
    }

    fn queries_mut(&mut self) -> &mut Vec<WritesQueryRuns> {
        &mut self.queries
    }

    fn compared_inputs(&self) -> Vec<(String, String)> {
        let workload = &self.workload;
        vec![
            ("table".to_string(), workload.schema_file.clone()),
            ("batch rows".to_string(), workload.batch_rows.to_string()),
            ("insert".to_string(), workload.statement.clone()),
            ("level bound".to_string(), workload.bound.to_string()),
        ]
    }

    /// Durability is what a comparison of two runs is often there to show.
    fn stated_inputs(&self) -> Vec<(String, String)> {
        vec![
            ("durability".to_string(), self.workload.durability.name().to_string()),
            // Where the clients ran is what a comparison of the tunnel against the cluster shows.
            ("clients".to_string(), self.workload.clients_description()),
        ]
    }
}

/// What the run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WritesWorkload {
    /// The scenario pack whose design and INSERT the run used (`--pack`); `None`: the logs
    /// table.
    pub pack: Option<String>,
    /// The pack's design, in pack mode.
    pub design: Option<String>,
    /// The table the INSERTs write to.
    pub table: String,
    /// The statements that make it: relative to `fixtures/`, or as shown.
    pub schema_file: String,
    /// The INSERT's file: relative to `fixtures/`, or as shown.
    pub insert_file: String,
    /// The INSERT every client sends, as run, on one line (past its file's comments).
    pub statement: String,
    /// Rows per INSERT.
    pub batch_rows: u64,
    pub durability: Durability,
    /// Client counts as asked for.
    pub concurrency: Vec<u32>,
    /// Client counts as run: `[1]` on a target that runs one statement at a time.
    pub levels_run: Vec<u32>,
    pub bound: LevelBound,
    pub rounds: u32,
    /// `--rate`: an open loop's INSERTs per second over all clients; `None` for a closed loop.
    pub rate: Option<f64>,
    /// The statements the clients send, at their shares (`--mix`).
    pub mix: super::Mix,
    /// `--async-insert`: the INSERT's rows sent inline, with `async_insert = 1,
    /// wait_for_async_insert = 1`.
    pub async_insert: bool,
    /// Where the clients ran: this tool's loop on this machine, or clickhouse-benchmark
    /// in the cluster (a bundle from before the choice: local).
    #[serde(default)]
    pub load_from: LoadFrom,
    /// In the cluster: where the clients' pods were asked to run (the node each ran on is
    /// in its round's `closed_loop.load`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_placement: Option<ClientPlacement>,
}

impl WritesWorkload {
    /// Where the clients ran, in words.
    pub fn clients_description(&self) -> String {
        crate::load_generator::clients_description(self.load_from, self.client_placement.as_ref())
    }
}

/// Whether an INSERT returns before or after its part is on stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// MergeTree's default: the part is in the page cache when the INSERT returns.
    None,
    /// `fsync_after_insert = 1, fsync_part_directory = 1`: its files and directory fsynced.
    Fsync,
}

impl Durability {
    pub const ALL: [Durability; 2] = [Durability::None, Durability::Fsync];

    pub fn name(self) -> &'static str {
        match self {
            Durability::None => "none",
            Durability::Fsync => "fsync",
        }
    }

    /// The fixture that puts it in force on the table.
    pub fn fixture(self) -> &'static str {
        match self {
            Durability::None => "writes/durability_none.sql",
            Durability::Fsync => "writes/durability_fsync.sql",
        }
    }
}

/// One level of one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WritesRound {
    /// The A/B variant it ran, in an A/B run; `None` otherwise.
    pub variant: Option<String>,
    /// Its statements and figures as every closed loop's (`qps`: INSERTs per second).
    pub closed_loop: LevelRound,
    /// Rows the completed INSERTs wrote (`batch_rows` each); unknown when the INSERTs
    /// cannot be counted (`inserts_unknown` says why).
    pub rows_written: Option<u64>,
    /// Why the level's INSERTs cannot be counted among its mix: in the cluster, a server's
    /// log that does not hold every statement the generator finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inserts_unknown: Option<String>,
    /// `rows_written` per second of the level's wall time; unknown when none completed.
    pub rows_per_second: Option<f64>,
    /// The failed statements by the engine's error code.
    pub errors_by_code: Vec<CodeErrors>,
    /// The engine's counters over the level: what they rose by, for the counters the
    /// time split reads (a counter the engine lacks is absent, one that did not move is 0).
    pub events: EventsDelta,
    /// The level's INSERTs' own counters, summed from each one's record (a server's
    /// `system.query_log` row, found by the level's `log_comment`), or why there are none
    /// (the embedded engine keeps no record of a statement; `--async-insert`).
    #[serde(default = "EventsDelta::not_recorded")]
    pub inserts_own: EventsDelta,
    pub threads: ThreadsSampled,
    pub cpu: CpuUse,
    pub parts: PartsSampled,
}

/// Failed statements of one error code in a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeErrors {
    /// The engine's error code (`Code: 252`), when the message has one.
    pub code: Option<u32>,
    /// Its name (`TOO_MANY_PARTS`), when the message has one.
    pub name: Option<String>,
    pub count: u64,
    /// The first one's message.
    pub first: String,
}

/// The engine's threads through a level: looked at every few milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum ThreadsSampled {
    Known {
        /// Milliseconds between looks.
        every_ms: u64,
        means: ThreadStateMeans,
    },
    /// A server's own thread gauges (`system.metrics`), where its threads are not this
    /// process's.
    Gauges {
        /// Milliseconds between looks.
        every_ms: u64,
        means: GaugeMeans,
    },
    Unknown {
        reason: String,
    },
}

impl ThreadsSampled {
    pub fn io_wait_share(&self) -> Option<f64> {
        match self {
            ThreadsSampled::Known { means, .. } => means.io_wait_share,
            ThreadsSampled::Gauges { means, .. } => means.io_share,
            ThreadsSampled::Unknown { .. } => None,
        }
    }
}

/// The CPU the engine used in a level against what its cores offered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    /// User and system CPU of the engine's threads (`UserTimeMicroseconds` and
    /// `SystemTimeMicroseconds` over the level), background merges included.
    pub used_seconds: Option<f64>,
    /// The cores the engine could use: this process's available parallelism for the
    /// embedded engine, a server's cgroup limit or machine's cores (fractional under a limit).
    pub cores: Option<f64>,
    /// Why `cores` is unknown, when it is.
    #[serde(default)]
    pub cores_unknown: Option<String>,
    /// `cores` times the level's wall time.
    pub offered_seconds: Option<f64>,
    /// `used_seconds / offered_seconds`.
    pub share: Option<f64>,
}

/// The table's active parts and running merges, looked at through a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartsSampled {
    /// Looks taken.
    pub looks: u64,
    pub active_parts_first: Option<u64>,
    pub active_parts_last: Option<u64>,
    pub active_parts_max: Option<u64>,
    pub merges_max: Option<u64>,
    /// Why the figures are unknown, when they are.
    pub unknown: Option<String>,
}

/// One level across the complete rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WritesLevel {
    /// The A/B variant, in an A/B run; `None` otherwise.
    pub variant: Option<String>,
    /// Its statements' figures as every closed loop's (`qps`: INSERTs per second).
    pub closed_loop: LevelSummary,
    /// Rows written per second across rounds.
    pub rows_per_second: Spread,
    /// An open loop's schedule lag over every INSERT of those rounds, ms; `None` for a
    /// closed loop.
    pub schedule_lag: Option<Latency>,
    /// Whether every complete round held at least [`RATE_KEPT`] of the asked rate; `None`
    /// for a closed loop or without a complete round.
    pub rate_kept: Option<bool>,
    /// The time split of an INSERT, from the counters' rise over every complete round.
    pub decomposition: Decomposition,
    /// The share of the engine's busy threads in I/O wait, across rounds.
    pub io_wait_share: Spread,
    /// CPU used and offered, every complete round together.
    pub cpu_used_seconds: Option<f64>,
    pub cpu_offered_seconds: Option<f64>,
    pub errors_by_code: Vec<CodeErrors>,
    pub active_parts_max: Option<u64>,
    /// With a mix, each statement's own figures over those rounds; empty for INSERTs alone.
    pub by_statement: Vec<StatementFigures>,
}

/// One statement of a mix at one level, across its complete rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementFigures {
    /// `insert`, `update`, `delete` or `read`.
    pub statement: String,
    pub completed: u64,
    pub errors: u64,
    /// Its completed statements per second of each round's wall time, across rounds.
    pub per_second: Spread,
    /// Its completed statements' latency, every round together.
    pub latency: Latency,
}

impl WritesResults {
    /// These results with the rounds and levels of one A/B variant only (`None`: those of a
    /// run without variants), for a comparison of one A/B bundle's variants.
    pub fn of_variant(&self, variant: Option<&str>) -> WritesResults {
        WritesResults {
            rounds: self.rounds.iter().filter(|round| round.variant.as_deref() == variant).cloned().collect(),
            levels: self.levels.iter().filter(|level| level.variant.as_deref() == variant).cloned().collect(),
            ..self.clone()
        }
    }
}

/// An INSERT's form in the comparison: the level it ran at (`clients=4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WritesVariant {
    pub clients: u32,
}

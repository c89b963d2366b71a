//! What a throughput run records (every field in docs/results.md): the workload it was
//! asked for, the dataset it built, the runner check, every (round, level) with every
//! statement it ran, each level's figures across rounds, and the completed statements as
//! query runs (one per query and level) for the comparison of two bundles.

use serde::{Deserialize, Serialize};

use crate::numbers::{median_unsorted, ratio};
use crate::query_runs::QueryRuns;
use crate::results::{KindResults, RunBundle};
use crate::stats::StatsSource;

pub type ThroughputBundle = RunBundle<ThroughputResults>;
pub type ThroughputQueryRuns = QueryRuns<ThroughputVariant>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputResults {
    pub workload: Workload,
    /// The pack's dataset as the run built it; `None` until it is built.
    pub dataset: Option<DatasetBuild>,
    /// Where each statement's record comes from: its result's counters alone on every
    /// target (no ProfileEvents; docs/throughput.md).
    pub statement_records: StatsSource,
    pub runner_check: Option<RunnerCheck>,
    /// Every (round, level) measured, in the order they ran.
    pub rounds: Vec<LevelRound>,
    /// Each level across its complete rounds, recomputed after every round.
    pub levels: Vec<LevelSummary>,
    /// The completed statements of each (query, level), as samples.
    pub queries: Vec<ThroughputQueryRuns>,
    /// What the run had to say (a target that runs one statement at a time, a query that
    /// failed in the warm-up).
    pub notes: Vec<String>,
}

impl KindResults for ThroughputResults {
    const KIND: &'static str = "throughput";
    type Variant = ThroughputVariant;

    fn queries(&self) -> &[ThroughputQueryRuns] {
        &self.queries
    }

    fn queries_mut(&mut self) -> &mut Vec<ThroughputQueryRuns> {
        &mut self.queries
    }

    /// Each (query, level) none of whose statements completed: its every figure there is
    /// an error's, so it is failed in a comparison, never fast; by its label (`q1
    /// (clients=4)`), the query's other levels compared as they ran.
    fn failed_queries(&self) -> Vec<(String, String)> {
        self.levels_without_a_completed_statement()
            .into_iter()
            .filter_map(|(query, clients, errors)| {
                let runs = self.queries.iter().find(|runs| runs.query == query && runs.variant.clients == clients)?;
                let first = self.errors_of(&query).map_or("", |(_, first)| first);
                Some((
                    crate::compare::runs_label(runs, true),
                    format!("every statement failed ({errors}; first: {first})"),
                ))
            })
            .collect()
    }

    fn compared_inputs(&self) -> Vec<(String, String)> {
        let workload = &self.workload;
        let mut inputs = vec![
            ("pack".to_string(), workload.pack.clone()),
            ("design".to_string(), workload.design.clone()),
            ("rows".to_string(), workload.rows.to_string()),
            ("level bound".to_string(), workload.bound.to_string()),
        ];
        for query in &workload.queries {
            inputs.push((format!("query {}", query.name), query.sql.clone()));
        }
        inputs
    }
}

impl ThroughputResults {
    /// How many statements of `query` failed in every round, and the first error; `None`
    /// when none did.
    pub fn errors_of(&self, query: &str) -> Option<(u64, &str)> {
        let errors: Vec<&QueryErrors> = self
            .rounds
            .iter()
            .flat_map(|round| &round.errors_by_query)
            .filter(|errors| errors.query == query)
            .collect();
        let first = errors.first()?;
        Some((errors.iter().map(|errors| errors.count).sum(), first.first.as_str()))
    }

    /// Each (query, level) that ran in a complete round and completed no statement there,
    /// with how many failed: its figures are unknown.
    pub fn levels_without_a_completed_statement(&self) -> Vec<(String, u32, u64)> {
        let mut found: Vec<(String, u32, u64)> = Vec::new();
        for round in self.rounds.iter().filter(|round| round.complete) {
            for errors in &round.errors_by_query {
                let completed = self.queries.iter().any(|runs| {
                    runs.query == errors.query && runs.variant.clients == round.clients && !runs.samples.is_empty()
                });
                if completed {
                    continue;
                }
                match found.iter_mut().find(|(query, clients, _)| *query == errors.query && *clients == round.clients) {
                    Some((_, _, count)) => *count += errors.count,
                    None => found.push((errors.query.clone(), round.clients, errors.count)),
                }
            }
        }
        found
    }
}

/// What the run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub pack: String,
    pub design: String,
    pub rows: u64,
    pub queries: Vec<WorkloadQuery>,
    /// Client counts as asked for.
    pub concurrency: Vec<u32>,
    /// Client counts as run: `[1]` on a target that runs one statement at a time.
    pub levels_run: Vec<u32>,
    pub bound: LevelBound,
    pub rounds: u32,
    /// The seed of every client's order of the queries.
    pub seed: u64,
}

/// One query of the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadQuery {
    pub name: String,
    /// The file it came from: relative to `fixtures/` for a pack's query, as given for `--sql`.
    pub file: String,
    /// The statement measured.
    pub sql: String,
    /// The statements before it in its file, run once before the levels.
    pub setup: Vec<String>,
}

/// What ends a level in each round.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelBound {
    /// No statement starts after this many seconds from the start line.
    Duration { seconds: Option<f64> },
    /// This many statements in all clients together.
    Iterations { statements: u64 },
}

impl std::fmt::Display for LevelBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LevelBound::Duration { seconds } => write!(f, "{} s", crate::units::exact(*seconds)),
            LevelBound::Iterations { statements } => write!(f, "{statements} statements"),
        }
    }
}

/// The pack's dataset, built in the run's database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetBuild {
    pub name: String,
    pub statements: usize,
    pub seconds: Option<f64>,
}

/// A query's form in the comparison: the level it ran at (`clients=4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThroughputVariant {
    pub clients: u32,
}

/// One level of one round: what its clients ran, and its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelRound {
    /// From 1.
    pub round: u32,
    pub clients: u32,
    /// Whether it ran to its bound; an interrupted one is kept but counts in no summary.
    pub complete: bool,
    /// From the first client's start to the last client's end.
    pub wall_seconds: Option<f64>,
    /// Statements that completed without error.
    pub completed: u64,
    pub errors: u64,
    /// `completed / wall_seconds`; unknown when none completed.
    pub qps: Option<f64>,
    /// Rows read by the completed statements, per second of `wall_seconds`.
    pub rows_per_second: Option<f64>,
    /// Of the completed statements only.
    pub latency: Latency,
    /// Why `qps` and `latency` are unknown, when they are.
    pub unknown: Option<String>,
    /// The clients' CPU time outside the engine calls, per statement they ran.
    pub runner_cpu_us_per_statement: Option<f64>,
    pub errors_by_query: Vec<QueryErrors>,
    /// Every statement, by client, then in the client's order.
    pub statements: Vec<StatementRecord>,
}

/// Latency percentiles in milliseconds (nearest rank), unknown without statements.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

impl Latency {
    /// Of latencies in milliseconds, any order: the nearest-rank percentiles (the smallest
    /// value with at least that share of the values at or below it).
    pub fn of(mut ms: Vec<f64>) -> Latency {
        ms.sort_by(f64::total_cmp);
        let rank = |share: f64| -> Option<f64> {
            let n = ms.len();
            if n == 0 {
                return None;
            }
            let rank = ((share * n as f64).ceil() as usize).clamp(1, n);
            Some(ms[rank - 1])
        };
        Latency { p50_ms: rank(0.50), p90_ms: rank(0.90), p99_ms: rank(0.99), max_ms: ms.last().copied() }
    }
}

/// A query's errors in one level of one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryErrors {
    pub query: String,
    pub count: u64,
    /// The first one's message.
    pub first: String,
}

/// One statement a client ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementRecord {
    pub client: u32,
    pub query: String,
    /// When it started, from the level's start.
    pub start_offset_us: u64,
    /// Wall time around the call, in this process.
    pub latency_us: u64,
    /// Rows read, as the result's counters say; `None` for a failed statement.
    pub read_rows: Option<u64>,
    /// The error, in one line; `None` when it completed.
    pub error: Option<String>,
}

/// One level across the complete rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelSummary {
    pub clients: u32,
    /// Complete rounds.
    pub rounds: usize,
    /// QPS across rounds.
    pub qps: Spread,
    pub rows_per_second: Spread,
    /// Of every completed statement of its rounds together.
    pub latency: Latency,
    pub completed: u64,
    pub errors: u64,
    pub runner_cpu_us_per_statement: Option<f64>,
}

/// Smallest, median and largest across rounds; unknown when a round's value is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub min: Option<f64>,
    pub median: Option<f64>,
    pub max: Option<f64>,
}

impl Spread {
    /// Of every round's value: unknown when any is (a median of the known ones would
    /// describe other rounds).
    pub fn of(values: impl IntoIterator<Item = Option<f64>>) -> Spread {
        let Some(mut values) = values.into_iter().collect::<Option<Vec<f64>>>() else { return Spread::default() };
        values.sort_by(f64::total_cmp);
        Spread { min: values.first().copied(), median: median_unsorted(values.clone()), max: values.last().copied() }
    }
}

impl LevelSummary {
    /// Of the complete rounds of `clients` in `rounds`.
    pub fn of(clients: u32, rounds: &[LevelRound]) -> LevelSummary {
        let rounds: Vec<&LevelRound> =
            rounds.iter().filter(|round| round.clients == clients && round.complete).collect();
        let latencies = rounds
            .iter()
            .flat_map(|round| round.statements.iter())
            .filter(|statement| statement.error.is_none())
            .map(|statement| statement.latency_us as f64 / 1e3)
            .collect();
        let statements: u64 = rounds.iter().map(|round| round.completed + round.errors).sum();
        let cpu: Option<f64> = rounds
            .iter()
            .map(|round| round.runner_cpu_us_per_statement.map(|us| us * (round.completed + round.errors) as f64))
            .sum();
        LevelSummary {
            clients,
            rounds: rounds.len(),
            qps: Spread::of(rounds.iter().map(|round| round.qps)),
            rows_per_second: Spread::of(rounds.iter().map(|round| round.rows_per_second)),
            latency: Latency::of(latencies),
            completed: rounds.iter().map(|round| round.completed).sum(),
            errors: rounds.iter().map(|round| round.errors).sum(),
            runner_cpu_us_per_statement: cpu.and_then(|cpu| ratio(cpu, statements as f64)),
        }
    }
}

/// `SELECT 1` at one client through the runner and through a tight loop on the engine, in
/// interleaved blocks of the same number of statements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunnerCheck {
    pub query: String,
    /// In the order they ran.
    pub blocks: Vec<CheckBlock>,
    /// Statements on each side, all blocks together (the same on both).
    pub statements_per_side: u64,
    pub runner_qps: Option<f64>,
    pub direct_qps: Option<f64>,
    /// `runner_qps / direct_qps`.
    pub ratio: Option<f64>,
    /// What the ratio should reach.
    pub goal: Option<f64>,
    /// The runner's thread CPU outside the engine calls, per statement of its blocks.
    pub runner_cpu_us_per_statement: Option<f64>,
}

/// One block of the runner check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckBlock {
    pub path: CheckPath,
    pub statements: u64,
    pub seconds: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckPath {
    /// Through the throughput runner's closed loop.
    Runner,
    /// A tight loop on the target's backend.
    Direct,
}

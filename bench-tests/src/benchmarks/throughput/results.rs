//! What a throughput run records (every field in docs/results.md): the workload it was
//! asked for, the dataset it built, the runner check, every (round, level) with every
//! statement it ran, each level's figures across rounds, and the completed statements as
//! query runs (one per query and level) for the comparison of two bundles.

use serde::{Deserialize, Serialize};

use crate::levels::{LevelBound, LevelRound, LevelSummary, QueryErrors, RunnerCheck};
use crate::load_generator::{ClientPlacement, LoadFrom};
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

    /// Where the clients ran is what a comparison of the tunnel against the cluster shows,
    /// not a reason to refuse one.
    fn stated_inputs(&self) -> Vec<(String, String)> {
        vec![("clients".to_string(), self.workload.clients_description())]
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
                // A level run beside the engine keeps no statement of its own: a query there
                // completed none only when nothing in the level did.
                let completed = match round.load {
                    Some(_) => round.completed > 0,
                    None => self.queries.iter().any(|runs| {
                        runs.query == errors.query && runs.variant.clients == round.clients && !runs.samples.is_empty()
                    }),
                };
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
    /// Where the clients ran: this tool's loop on this machine, or clickhouse-benchmark
    /// in the cluster (a bundle from before the choice: local).
    #[serde(default)]
    pub load_from: LoadFrom,
    /// In the cluster: where the clients' pods were asked to run (the node each ran on is
    /// in its round's `load`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_placement: Option<ClientPlacement>,
}

impl Workload {
    /// Where the clients ran, in words: `this machine`, `clickhouse-benchmark in the
    /// cluster, on a node of their own`.
    pub fn clients_description(&self) -> String {
        crate::load_generator::clients_description(self.load_from, self.client_placement.as_ref())
    }
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

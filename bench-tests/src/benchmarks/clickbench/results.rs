//! What the clickbench benchmark records: its part of a results bundle (`benchmark`, of
//! kind `clickbench`): the dataset (the shipped table at N rows, or a ClickBench checkout
//! and the official hits file), the runs asked for, `max_threads` in force and where it
//! came from, the load (time, rows, data size), every sample of every query with its
//! answer's digest, each query's answer check, and the totals as ClickBench's source
//! reports them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::answers::AnswerDigest;
use crate::query_runs::QueryRuns;
use crate::results::{KindResults, RunBundle};

/// Everything the clickbench benchmark measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClickBenchResults {
    pub dataset: ClickBenchDataset,
    /// Runs of each query before the counted ones (their times are not counted).
    pub warm_ups: u32,
    /// Counted runs of each query.
    pub runs: u32,
    /// `max_threads` as every query ran with it; `None` until the load phase read it.
    pub max_threads: Option<MaxThreads>,
    /// The reference the answers were checked against, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_answers: Option<String>,
    pub load: Option<Load>,
    /// Every run of every query, in the order the queries file lists them.
    pub queries: Vec<QueryRuns<ClickBenchVariant>>,
    /// Each query's answer check, once its runs ended.
    pub checks: Vec<AnswerCheck>,
    /// The totals over the queries whose answers passed, once every query ran.
    pub totals: Option<Totals>,
}

/// Which `hits` the run queried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "source")]
pub enum ClickBenchDataset {
    /// `fixtures/clickbench/`: the hits-like table the generator fills with `rows` rows,
    /// and the source's Q19, Q33 and Q34.
    Shipped { rows: u64 },
    /// A ClickBench checkout's `create.sql` and `queries.sql`, and the official data.
    Checkout {
        checkout: String,
        create_sql: String,
        queries_sql: String,
        hits_file: String,
        /// `Parquet` or `TabSeparated`, from the file's extension.
        format: String,
    },
}

/// The `max_threads` every query ran with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaxThreads {
    /// As the engine says it (`system.settings`), e.g. `2` or `'auto(2)'`.
    pub value: String,
    /// `flag` (`--max-threads`, set on every query) or `engine` (its default, read).
    pub source: MaxThreadsSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxThreadsSource {
    Flag,
    /// The run's session settings (`--setting max_threads=N`, a matrix variant's).
    Session,
    Engine,
}

/// Loading `hits`, as ClickBench records it: the load's time and the data's size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// The engine's duration of the `INSERT` that filled the table.
    pub seconds: Option<f64>,
    /// Wall time of creating and filling the table, as this process saw it.
    pub wall_seconds: Option<f64>,
    /// `system.tables.total_rows` after the load.
    pub rows: Option<u64>,
    /// `system.tables.total_bytes` after the load (ClickBench's `data_size`); `None` when
    /// the engine does not say.
    pub data_size_bytes: Option<u64>,
}

/// The one form every query is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClickBenchVariant {
    Default,
}

/// Whether a query's answers allow its times to count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerCheck {
    pub query: String,
    #[serde(flatten)]
    pub outcome: AnswerOutcome,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum AnswerOutcome {
    /// Every run gave this answer (and the reference's, when it has the query).
    Passed {
        answer: AnswerDigest,
        /// Whether a reference had the query and agreed.
        matches_reference: bool,
    },
    /// The runs gave different answers: the query is failed, its times not counted.
    RunsDisagree { answers: Vec<(AnswerDigest, usize)> },
    /// Every run agreed, on another answer than the reference's: failed.
    DiffersFromReference { answer: AnswerDigest, reference: AnswerDigest },
    /// A run failed with this error: failed, the query's later runs not made.
    Error { message: String },
}

impl AnswerOutcome {
    pub fn passed(&self) -> bool {
        matches!(self, AnswerOutcome::Passed { .. })
    }

    /// One line for messages and the report.
    pub fn line(&self) -> String {
        match self {
            AnswerOutcome::Passed { answer, matches_reference: true } => format!("passed: {answer}, as the reference"),
            AnswerOutcome::Passed { answer, matches_reference: false } => format!("passed: every run {answer}"),
            AnswerOutcome::RunsDisagree { answers } => {
                format!("failed: the runs gave {}", crate::answers::describe_tally(answers))
            }
            AnswerOutcome::DiffersFromReference { answer, reference } => {
                format!("failed: every run gave {answer}, the reference {reference}")
            }
            AnswerOutcome::Error { message } => format!("failed: {message}"),
        }
    }

    /// [`AnswerOutcome::line`] for a line that names several queries: an error by the
    /// engine's code name (`failed: TOO_MANY_ROWS_OR_BYTES`), the whole message being in
    /// the report.
    pub fn short_line(&self) -> String {
        let AnswerOutcome::Error { message } = self else { return self.line() };
        let code = message
            .trim_end()
            .strip_suffix(')')
            .and_then(|rest| rest.rsplit_once('('))
            .map(|(_, code)| code)
            .filter(|code| !code.is_empty() && code.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
        // `clickhouse/queries.sql:3`, where the message starts with the query's place.
        let at = message
            .split(": ")
            .next()
            .filter(|first| first.rsplit_once(".sql:").is_some_and(|(_, line)| line.parse::<u32>().is_ok()))
            .map_or(String::new(), |place| format!(" ({place})"));
        match code {
            Some(code) => format!("failed{at}: {code}"),
            None => format!("failed{at}: {}", message.split_whitespace().take(20).collect::<Vec<_>>().join(" ")),
        }
    }
}

/// The totals as the source reports them, over the queries whose answers passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Queries in the totals.
    pub queries: usize,
    /// Queries failed (an error or a wrong answer): not in the totals, never timed as fast.
    pub failed: Vec<String>,
    /// The sum over queries of the mean of the counted runs, in seconds: the source's total.
    pub sum_of_means_seconds: Option<f64>,
    /// The sum over queries of the fastest counted run (ClickBench's hot time), in seconds.
    pub hot_sum_seconds: Option<f64>,
}

/// The answers a run's queries gave, as `answers.json` holds them: what a later run on
/// the same dataset checks against (`--reference-answers`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReferenceAnswers {
    /// The dataset they are answers about, as the run recorded it.
    pub dataset: Option<ClickBenchDataset>,
    pub queries: BTreeMap<String, AnswerDigest>,
}

/// A bundle of the clickbench benchmark.
pub type ClickBenchBundle = RunBundle<ClickBenchResults>;
/// Every run of one query.
pub type ClickBenchQueryRuns = QueryRuns<ClickBenchVariant>;

impl KindResults for ClickBenchResults {
    const KIND: &'static str = "clickbench";
    type Variant = ClickBenchVariant;

    fn queries(&self) -> &[QueryRuns<ClickBenchVariant>] {
        &self.queries
    }

    fn queries_mut(&mut self) -> &mut Vec<QueryRuns<ClickBenchVariant>> {
        &mut self.queries
    }

    fn stated_inputs(&self) -> Vec<(String, String)> {
        let max_threads = self.max_threads.as_ref().map(|max_threads| max_threads.value.clone());
        max_threads.map(|value| ("max_threads".to_string(), value)).into_iter().collect()
    }

    fn failed_queries(&self) -> Vec<(String, String)> {
        self.checks
            .iter()
            .filter(|check| !check.outcome.passed())
            .map(|check| (check.query.clone(), check.outcome.short_line()))
            .collect()
    }

    /// The dataset: the shipped table's rows, or the official data's file name (the
    /// queries' text is compared as SQL files). `max_threads` is left out: a comparison
    /// of node types is meant to differ in it.
    fn compared_inputs(&self) -> Vec<(String, String)> {
        vec![("dataset".to_string(), self.dataset.identity())]
    }
}

impl ClickBenchDataset {
    /// What makes two runs' data the same, as comparisons and reference answers check it:
    /// the shipped table's rows, or the official data's file name (a copy elsewhere is the
    /// same data).
    pub fn identity(&self) -> String {
        match self {
            ClickBenchDataset::Shipped { rows } => format!("shipped table, {rows} rows"),
            ClickBenchDataset::Checkout { hits_file, .. } => {
                let name = std::path::Path::new(hits_file)
                    .file_name()
                    .map_or_else(|| hits_file.clone(), |name| name.to_string_lossy().into_owned());
                format!("hits file {name}")
            }
        }
    }
}

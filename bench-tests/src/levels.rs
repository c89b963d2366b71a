//! A load level's records, for a kind that runs K clients at once in a closed loop (the
//! throughput benchmark, and the write path next): what ends a level, each level of each
//! round with every statement it ran and its figures, a level's figures across rounds, and
//! the check that the runner is not the bottleneck. The arithmetic that fills them from a
//! closed loop is `closed_loop`'s; a kind's bundle holds them under its own fields.

use serde::{Deserialize, Serialize};

use crate::load_generator::InClusterLoad;
use crate::numbers::{median_unsorted, ratio};
use crate::significance::{Significance, Thresholds, Verdict, compare_timings};

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
    /// An open loop's schedule lag (how late each statement was sent against its
    /// schedule), every statement's, in ms; absent for a closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag: Option<Latency>,
    /// An open loop's statements due within the level (those not in `statements` were
    /// skipped, still unsent when it ended); absent for a closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled: Option<u64>,
    /// Every statement, by client, then in the client's order; empty for a level run
    /// beside the engine (`load`), whose generator reports figures, not statements.
    pub statements: Vec<StatementRecord>,
    /// A level whose clients ran beside the engine (clickhouse-benchmark in the cluster):
    /// where, what the generator reported, and the server's own count; absent for a level
    /// run by this tool's own loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<InClusterLoad>,
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
    /// In an open loop, how late it was sent against its schedule, µs; absent in a closed
    /// loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag_us: Option<u64>,
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
    /// Of every completed statement of its rounds together; for rounds run beside the
    /// engine, whose generator reports percentiles rather than statements, each
    /// percentile's median across the rounds.
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
    /// A rate's spread as a report's cell: `98 (95 to 110)`, or `unknown`.
    pub fn rate_cell(&self) -> String {
        match (self.min, self.median, self.max) {
            (Some(min), Some(median), Some(max)) => {
                let rate = |value: f64| crate::units::per_second(Some(value));
                format!("{} ({} to {})", rate(median), rate(min), rate(max))
            }
            _ => "unknown".to_string(),
        }
    }

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
        let latency = if !rounds.is_empty() && rounds.iter().all(|round| round.load.is_some()) {
            let median = |percentile: fn(&Latency) -> Option<f64>| {
                Spread::of(rounds.iter().map(|round| percentile(&round.latency))).median
            };
            Latency {
                p50_ms: median(|latency| latency.p50_ms),
                p90_ms: median(|latency| latency.p90_ms),
                p99_ms: median(|latency| latency.p99_ms),
                max_ms: median(|latency| latency.max_ms),
            }
        } else {
            Latency::of(
                rounds
                    .iter()
                    .flat_map(|round| round.statements.iter())
                    .filter(|statement| statement.error.is_none())
                    .map(|statement| statement.latency_us as f64 / 1e3)
                    .collect(),
            )
        };
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
            latency,
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
    /// Through the runner's closed loop.
    Runner,
    /// A tight loop on the target's backend.
    Direct,
}

/// Two sides' rates at one level (statements per second of each complete round, `None`
/// for a round that completed none) tested with the statistics every timing gets, on each
/// round's wall milliseconds per completed statement (`1000 / rate`), so that `faster` is
/// a higher rate. A round without a rate makes the level untestable: its spread is
/// unknown, and a test of the other rounds would hide the worst one.
pub fn rate_significance(baseline: &[Option<f64>], candidate: &[Option<f64>], thresholds: &Thresholds) -> Significance {
    let ms_per_statement =
        |rates: &[Option<f64>]| -> Vec<f64> { rates.iter().flatten().map(|rate| 1e3 / rate).collect() };
    let mut significance = compare_timings(&ms_per_statement(baseline), &ms_per_statement(candidate), thresholds);
    significance.unknown_samples = baseline.iter().chain(candidate).filter(|rate| rate.is_none()).count();
    if significance.unknown_samples > 0 {
        significance.verdict = Verdict::Untestable;
        significance.p_value = None;
        significance.reason = Some(format!(
            "{} without a completed statement, whose rate is unknown",
            crate::units::plural(significance.unknown_samples as u64, "round")
        ));
    }
    significance
}

/// How many levels got each verdict, in a rate's words, the noun once: `1 level higher,
/// 2 unchanged` (a comparison's headline of levels).
pub fn levels_by_verdict(verdicts: impl IntoIterator<Item = Verdict>) -> String {
    let mut counts: Vec<(&str, u64)> = Vec::new();
    for word in verdicts.into_iter().map(rate_verdict_word) {
        match counts.iter_mut().find(|(seen, _)| *seen == word) {
            Some((_, count)) => *count += 1,
            None => counts.push((word, 1)),
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .enumerate()
        .map(|(at, (word, count))| match at {
            0 => format!("{} {word}", crate::units::plural(*count, "level")),
            _ => format!("{count} {word}"),
        })
        .collect();
    parts.join(", ")
}

/// A rate's verdict in a rate's words: `higher`, `lower`, `unchanged`...
pub fn rate_verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Faster => "higher",
        Verdict::Slower => "lower",
        Verdict::Unchanged => "unchanged",
        Verdict::Unstable => "unstable",
        Verdict::Untestable => "untestable",
        // Set on queries from their answers or checks, never by a test on a rate.
        Verdict::AnswersDiffer => "answers differ",
        Verdict::Failed => "failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let latency = Latency::of((1..=100).rev().map(f64::from).collect());
        assert_eq!(
            (latency.p50_ms, latency.p90_ms, latency.p99_ms, latency.max_ms),
            (Some(50.0), Some(90.0), Some(99.0), Some(100.0))
        );
        let one = Latency::of(vec![3.0]);
        assert_eq!((one.p50_ms, one.p99_ms, one.max_ms), (Some(3.0), Some(3.0), Some(3.0)));
        assert_eq!(Latency::of(Vec::new()), Latency::default());
        let spread = Spread::of([Some(3.0), Some(1.0), Some(2.0)]);
        assert_eq!((spread.min, spread.median, spread.max), (Some(1.0), Some(2.0), Some(3.0)));
        assert_eq!(Spread::of([Some(1.0), None]), Spread::default());
    }
}

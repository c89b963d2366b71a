//! The clickbench benchmark's section of a report, from its results alone: the dataset and
//! its load as ClickBench records them, `max_threads`, each query's mean, fastest and
//! answer check, and the totals as the source reports them.

use std::fmt::Write as _;

use super::results::{AnswerOutcome, ClickBenchDataset, ClickBenchResults, MaxThreadsSource};
use crate::markdown::Table;
use crate::units::{human_bytes, milliseconds, plural, seconds};

pub fn markdown(results: &ClickBenchResults) -> String {
    let mut out = String::new();
    let dataset = match &results.dataset {
        ClickBenchDataset::Shipped { rows } => {
            format!(
                "the shipped hits-like table (`fixtures/clickbench/`, {}) and the source's Q19, Q33, Q34",
                plural(*rows, "row")
            )
        }
        ClickBenchDataset::Checkout { queries_sql, hits_file, .. } => {
            format!("the ClickBench checkout's queries (`{queries_sql}`) on the hits file `{hits_file}`")
        }
    };
    let threads = match &results.max_threads {
        Some(threads) if threads.source == MaxThreadsSource::Flag => {
            format!("`max_threads = {}` (--max-threads)", threads.value)
        }
        Some(threads) if threads.source == MaxThreadsSource::Session => {
            format!("`max_threads = {}` (a session setting of the run)", threads.value)
        }
        Some(threads) => format!("`max_threads = {}` (the engine's default)", threads.value),
        None => "`max_threads` unknown (the load did not finish)".to_string(),
    };
    let _ = writeln!(
        out,
        "## ClickBench query set\n\nQueried {dataset}: each query {} warm-up and {} counted runs, with {threads}. A query's \
         times count only when every run gave the same answer (rows and an order-insensitive checksum){}.\n",
        results.warm_ups,
        results.runs,
        results.reference_answers.as_ref().map_or(String::new(), |file| format!(", and the reference's (`{file}`)"))
    );
    match &results.load {
        Some(load) => {
            let _ = writeln!(
                out,
                "Load: {} in {} (the INSERT; {} with the table's creation); data size {} \
                 (`system.tables.total_bytes`).\n",
                load.rows.map_or("unknown rows".to_string(), |rows| plural(rows, "row")),
                seconds(load.seconds, 2),
                seconds(load.wall_seconds, 2),
                load.data_size_bytes.map_or("unknown".to_string(), human_bytes)
            );
        }
        None => {
            let _ = writeln!(out, "Nothing measured yet: the run stopped before the load finished.\n");
            return out;
        }
    }
    let mut table = Table::new(["query", "runs", "mean", "fastest (hot)", "answer"]);
    for runs in &results.queries {
        let warm = runs.warm_ms();
        let mean = (!warm.is_empty()).then(|| warm.iter().sum::<f64>() / warm.len() as f64);
        let check = results.checks.iter().find(|check| check.query == runs.query);
        let answer = check.map_or("not checked yet (the run stopped)".to_string(), |check| check.outcome.line());
        let failed = check.is_some_and(|check| !check.outcome.passed());
        // A failed query's times are shown struck through: they are not results.
        let shown =
            |value: Option<f64>| if failed { format!("~~{}~~", milliseconds(value)) } else { milliseconds(value) };
        table.row([runs.query.clone(), warm.len().to_string(), shown(mean), shown(warm.first().copied()), answer]);
    }
    let _ = writeln!(out, "{table}");
    if let Some(totals) = &results.totals {
        let _ = writeln!(
            out,
            "Totals over the {} queries whose answers passed: sum of means {} (the source's total), hot sum {} \
             (the fastest run of each, ClickBench's hot time).{}\n",
            totals.queries,
            seconds(totals.sum_of_means_seconds, 3),
            seconds(totals.hot_sum_seconds, 3),
            if totals.failed.is_empty() {
                String::new()
            } else {
                format!(" **Failed, not counted**: {}.", totals.failed.join(", "))
            }
        );
    }
    let disagreeing =
        results.checks.iter().filter(|check| matches!(check.outcome, AnswerOutcome::RunsDisagree { .. })).count();
    if disagreeing > 0 {
        let _ = writeln!(
            out,
            "A query whose runs disagree has an answer its data does not determine (a `LIMIT` without `ORDER BY`, ties \
             at the cut) or an engine that answers wrongly; either way its times say nothing (docs/clickbench.md).\n"
        );
    }
    out
}

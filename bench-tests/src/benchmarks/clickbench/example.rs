//! The clickbench kind's example bundles: every field they can hold filled and every answer
//! outcome once ([`crate::benchmarks::Benchmark::examples`]), on the shipped table and on a
//! checkout's.

use super::{
    AnswerCheck, AnswerOutcome, ClickBenchBundle, ClickBenchDataset, ClickBenchQueryRuns, ClickBenchResults,
    ClickBenchVariant, Load, MaxThreads, MaxThreadsSource, Totals,
};
use crate::answers::AnswerDigest;
use crate::query_runs::{Sample, SampleKind};
use crate::results::RunBundle;
use crate::results::example::{example_bundle, example_sample};

/// A bundle of the shipped table and one of a checkout, numbers `value` or `count`.
pub fn examples(value: f64, count: u64) -> Vec<ClickBenchBundle> {
    let checkout = ClickBenchDataset::Checkout {
        checkout: "/data/ClickBench".to_string(),
        create_sql: "/data/ClickBench/clickhouse/create.sql".to_string(),
        queries_sql: "/data/ClickBench/clickhouse/queries.sql".to_string(),
        hits_file: "/data/hits.parquet".to_string(),
        format: "Parquet".to_string(),
    };
    [ClickBenchDataset::Shipped { rows: count }, checkout]
        .into_iter()
        .map(|dataset| example(value, count, dataset))
        .collect()
}

/// A clickbench bundle of `dataset` with every optional field present and every answer
/// outcome once, its samples' answers digested.
fn example(value: f64, count: u64, dataset: ClickBenchDataset) -> ClickBenchBundle {
    let answer = AnswerDigest::of_tab_separated("a\t1\n");
    let other = AnswerDigest::of_tab_separated("b\t2\n");
    let digested = |attempt: u32| Sample { answer: Some(answer.clone()), ..example_sample(value, count, attempt) };
    let outcomes = [
        AnswerOutcome::Passed { answer: answer.clone(), matches_reference: true },
        AnswerOutcome::RunsDisagree { answers: vec![(answer.clone(), 9), (other.clone(), 2)] },
        AnswerOutcome::DiffersFromReference { answer: answer.clone(), reference: other },
        AnswerOutcome::Error { message: "queries.sql:4: statement failed".to_string() },
    ];
    let results = ClickBenchResults {
        dataset,
        warm_ups: 1,
        runs: 10,
        max_threads: Some(MaxThreads { value: "auto(2)".to_string(), source: MaxThreadsSource::Engine }),
        reference_answers: Some("results/run/answers.json".to_string()),
        load: Some(Load {
            seconds: Some(value),
            wall_seconds: Some(value),
            rows: Some(count),
            data_size_bytes: Some(count),
        }),
        queries: vec![ClickBenchQueryRuns {
            query: "q19".to_string(),
            variant: ClickBenchVariant::Default,
            ab_variant: None,
            plan: None,
            sql_file: "clickbench/queries/q19.sql".to_string(),
            answer: "a\t1\n".to_string(),
            samples: vec![Sample { kind: SampleKind::WarmUp, ..digested(1) }, digested(2)],
        }],
        checks: outcomes.into_iter().map(|outcome| AnswerCheck { query: "q19".to_string(), outcome }).collect(),
        totals: Some(Totals {
            queries: 1,
            failed: vec!["q33".to_string()],
            sum_of_means_seconds: Some(value),
            hot_sum_seconds: Some(value),
        }),
    };
    let sql_files = vec!["clickbench/create.sql".to_string(), "/data/ClickBench/clickhouse/queries.sql".to_string()];
    RunBundle { ab_run: None, ..example_bundle(value, count, sql_files, results) }
}

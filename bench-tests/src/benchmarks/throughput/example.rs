//! The throughput kind's example bundles: every field they can hold filled, every number
//! `value` or `count` ([`crate::benchmarks::Benchmark::examples`]), its levels bounded by a
//! duration and by a statement count.

use std::collections::BTreeMap;

use super::{
    CheckBlock, CheckPath, DatasetBuild, Latency, LevelBound, LevelRound, LevelSummary, QueryErrors, RunnerCheck,
    Spread, StatementRecord, ThroughputBundle, ThroughputResults, ThroughputVariant, Workload, WorkloadQuery,
};
use crate::load_generator::{ClientPlacement, LoadFrom};
use crate::query_runs::{QueryRuns, Sample, SampleKind};
use crate::results::RunBundle;
use crate::results::example::{example_bundle, example_load, example_sample, example_stats};
use crate::settings::Settings;
use crate::stats::{QueryStats, StatsSource};

/// A bundle whose levels last a duration, and one whose levels run a statement count.
pub fn examples(value: f64, count: u64) -> Vec<ThroughputBundle> {
    [LevelBound::Duration { seconds: Some(value) }, LevelBound::Iterations { statements: count }]
        .into_iter()
        .map(|bound| example(value, count, bound))
        .collect()
}

/// A throughput bundle with every optional field present and every number `value` or
/// `count`, its levels bounded by `bound`.
fn example(value: f64, count: u64, bound: LevelBound) -> ThroughputBundle {
    let clients = u32::try_from(count).unwrap_or(u32::MAX);
    let latency = Latency { p50_ms: Some(value), p90_ms: Some(value), p99_ms: Some(value), max_ms: Some(value) };
    let spread = Spread { min: Some(value), median: Some(value), max: Some(value) };
    let statement = |error: Option<&str>| StatementRecord {
        client: clients,
        query: "q1".to_string(),
        start_offset_us: count,
        latency_us: count,
        read_rows: error.is_none().then_some(count),
        error: error.map(str::to_string),
        schedule_lag_us: None,
    };
    let concurrent = |attempt: u32| Sample {
        kind: SampleKind::Warm,
        settings: Settings::new(),
        stats: QueryStats {
            source: StatsSource::ResultCounters,
            profile_events: BTreeMap::new(),
            ..example_stats(count)
        },
        breakdown: None,
        round_position: None,
        ..example_sample(value, count, attempt)
    };
    let results = ThroughputResults {
        workload: Workload {
            pack: "logs".to_string(),
            design: "source".to_string(),
            rows: count,
            queries: vec![WorkloadQuery {
                name: "q1".to_string(),
                file: "logs/queries/q1.sql".to_string(),
                sql: "SELECT count() FROM logs".to_string(),
                setup: vec!["CREATE TABLE extra (k UInt64) ENGINE = Memory".to_string()],
            }],
            concurrency: vec![1, clients],
            levels_run: vec![1, clients],
            bound,
            rounds: clients,
            seed: count,
            load_from: LoadFrom::Cluster,
            client_placement: Some(ClientPlacement::OwnNode { node_type: Some("c7g.4xlarge".to_string()) }),
        },
        dataset: Some(DatasetBuild { name: "logs_source_7".to_string(), statements: 3, seconds: Some(value) }),
        statement_records: StatsSource::ResultCounters,
        runner_check: Some(RunnerCheck {
            query: "SELECT 1".to_string(),
            blocks: vec![
                CheckBlock { path: CheckPath::Direct, statements: count, seconds: Some(value) },
                CheckBlock { path: CheckPath::Runner, statements: count, seconds: Some(value) },
            ],
            statements_per_side: count,
            runner_qps: Some(value),
            direct_qps: Some(value),
            ratio: Some(value),
            goal: Some(0.9),
            runner_cpu_us_per_statement: Some(value),
        }),
        rounds: vec![LevelRound {
            round: 1,
            clients,
            complete: false,
            wall_seconds: Some(value),
            completed: count,
            errors: count,
            qps: Some(value),
            rows_per_second: Some(value),
            latency,
            unknown: Some("no statement completed (7 failed)".to_string()),
            runner_cpu_us_per_statement: Some(value),
            errors_by_query: vec![QueryErrors { query: "q1".to_string(), count, first: "Code: 60".to_string() }],
            schedule_lag: None,
            scheduled: None,
            statements: vec![statement(None), statement(Some("Code: 60"))],
            load: Some(example_load(value, count)),
        }],
        levels: vec![LevelSummary {
            clients,
            rounds: 1,
            qps: spread,
            rows_per_second: spread,
            latency,
            completed: count,
            errors: count,
            runner_cpu_us_per_statement: Some(value),
        }],
        queries: vec![QueryRuns {
            query: "q1".to_string(),
            variant: ThroughputVariant { clients },
            ab_variant: None,
            plan: None,
            sql_file: "logs/queries/q1.sql".to_string(),
            answer: "7\n".to_string(),
            samples: vec![concurrent(1), concurrent(2)],
        }],
        notes: vec!["target url runs one statement at a time: measuring at 1 client only".to_string()],
    };
    RunBundle { ab_run: None, ..example_bundle(value, count, vec!["logs/queries/q1.sql".to_string()], results) }
}

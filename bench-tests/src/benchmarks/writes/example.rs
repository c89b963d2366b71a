//! The writes kind's example bundles: every field they can hold filled, every number
//! `value` or `count` ([`crate::benchmarks::Benchmark::examples`]): an A/B run's whose every
//! figure is known (levels bounded by a duration, fsync), and a run of one configuration
//! whose figures a target could not read (levels bounded by a statement count, no
//! durability).

use std::collections::BTreeMap;

use super::decomposition::EVENTS;
use super::mix::Mix;
use super::{
    CodeErrors, Counted, CpuUse, Decomposition, Durability, EventsDelta, GaugeMeans, INSERT, INSERT_FILE, PartsSampled,
    SCHEMA_FILE, StatementFigures, ThreadsSampled, WritesBundle, WritesLevel, WritesResults, WritesRound,
    WritesVariant, WritesWorkload,
};
use crate::engine_threads::ThreadStateMeans;
use crate::levels::{
    CheckBlock, CheckPath, Latency, LevelBound, LevelRound, LevelSummary, QueryErrors, RunnerCheck, Spread,
    StatementRecord,
};
use crate::load_generator::{ClientPlacement, LoadFrom};
use crate::query_runs::{QueryRuns, Sample, SampleKind};
use crate::results::example::{example_bundle, example_load, example_sample, example_stats};
use crate::settings::Settings;
use crate::stats::{EngineEvents, QueryStats, StatsSource};

pub fn examples(value: f64, count: u64) -> Vec<WritesBundle> {
    vec![known(value, count), unknown(value, count)]
}

/// Every figure known.
fn known(value: f64, count: u64) -> WritesBundle {
    let clients = u32::try_from(count).unwrap_or(u32::MAX);
    let latency = Latency { p50_ms: Some(value), p90_ms: Some(value), p99_ms: Some(value), max_ms: Some(value) };
    let spread = Spread { min: Some(value), median: Some(value), max: Some(value) };
    let statement = |error: Option<&str>| StatementRecord {
        client: clients,
        query: INSERT.to_string(),
        start_offset_us: count,
        latency_us: count,
        read_rows: error.is_none().then_some(count),
        error: error.map(str::to_string),
        schedule_lag_us: Some(count),
    };
    let failure = "Code: 252. DB::Exception: Too many parts. (TOO_MANY_PARTS)";
    let closed_loop = LevelRound {
        round: 1,
        clients,
        complete: true,
        wall_seconds: Some(value),
        completed: count,
        errors: count,
        qps: Some(value),
        rows_per_second: Some(value),
        latency,
        unknown: Some("no statement completed (7 failed)".to_string()),
        runner_cpu_us_per_statement: Some(value),
        errors_by_query: vec![QueryErrors { query: INSERT.to_string(), count, first: failure.to_string() }],
        schedule_lag: Some(latency),
        scheduled: Some(count),
        statements: vec![statement(None), statement(Some(failure))],
        load: Some(example_load(value, count)),
    };
    let errors =
        CodeErrors { code: Some(252), name: Some("TOO_MANY_PARTS".to_string()), count, first: failure.to_string() };
    let rises: BTreeMap<String, u64> = EVENTS.iter().map(|name| (name.to_string(), count)).collect();
    let decomposition = Decomposition {
        counted: Counted::InsertRecords,
        inserts: Some(count),
        insert_us: Some(value),
        cpu_us: Some(value),
        write_us: Some(value),
        fsync_us: Some(value),
        lock_wait_us: Some(value),
        throttle_us: Some(value),
        cpu_wait_us: Some(value),
        rest_us: Some(value),
        file_syncs: Some(value),
        directory_syncs: Some(value),
        os_io_wait_us: Some(value),
        unknown: Some("the engine has no counter FileSync".to_string()),
    };
    let means = ThreadStateMeans {
        samples: count,
        mean_running: Some(value),
        mean_io_wait: Some(value),
        mean_other: Some(value),
        io_wait_share: Some(value),
    };
    let round = WritesRound {
        variant: Some("durable".to_string()),
        closed_loop,
        rows_written: None,
        inserts_unknown: Some(
            "the server's query_log holds 6 finished statements of the generator's 7: the mix's INSERTs cannot be \
             counted from it"
                .to_string(),
        ),
        rows_per_second: Some(value),
        errors_by_code: vec![errors.clone()],
        events: EventsDelta::Known { engine_wide: true, rises: rises.clone() },
        inserts_own: EventsDelta::Known { engine_wide: false, rises },
        threads: ThreadsSampled::Known { every_ms: count, means },
        cpu: CpuUse {
            used_seconds: Some(value),
            cores: Some(value),
            cores_unknown: Some(
                "system.asynchronous_metrics has neither CGroupMaxCPU nor NumberOfCPUCores".to_string(),
            ),
            offered_seconds: Some(value),
            share: Some(value),
        },
        parts: PartsSampled {
            looks: count,
            active_parts_first: Some(count),
            active_parts_last: Some(count),
            active_parts_max: Some(count),
            merges_max: Some(count),
            unknown: Some("the observer had no connection to the engine".to_string()),
        },
    };
    // A server's round: its thread gauges in place of the threads' states.
    let gauges = GaugeMeans {
        looks: count,
        active_threads: Some(value),
        in_io: Some(value),
        lock_waiting: Some(value),
        queries: Some(value),
        delayed_inserts: Some(value),
        machine_running: Some(value),
        machine_blocked: Some(value),
        io_share: Some(value),
    };
    let server_round =
        WritesRound { threads: ThreadsSampled::Gauges { every_ms: count, means: gauges }, ..round.clone() };
    let level = WritesLevel {
        variant: Some("durable".to_string()),
        schedule_lag: Some(latency),
        rate_kept: Some(false),
        closed_loop: LevelSummary {
            clients,
            rounds: 1,
            qps: spread,
            rows_per_second: spread,
            latency,
            completed: count,
            errors: count,
            runner_cpu_us_per_statement: Some(value),
        },
        rows_per_second: spread,
        decomposition,
        io_wait_share: spread,
        cpu_used_seconds: Some(value),
        cpu_offered_seconds: Some(value),
        errors_by_code: vec![errors],
        active_parts_max: Some(count),
        by_statement: vec![StatementFigures {
            statement: "update".to_string(),
            completed: count,
            errors: count,
            per_second: spread,
            latency,
        }],
    };
    let sample = |attempt: u32| Sample {
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
    let results = WritesResults {
        workload: workload(count, LevelBound::Duration { seconds: Some(value) }, Durability::Fsync, Some(value)),
        engine_events: EngineEvents::Known { names: EVENTS.iter().map(|name| name.to_string()).collect() },
        statement_records: StatsSource::ResultCounters,
        runner_check: Some(RunnerCheck {
            query: "INSERT INTO logs SELECT 1".to_string(),
            blocks: vec![
                CheckBlock { path: CheckPath::Direct, statements: count, seconds: Some(value) },
                CheckBlock { path: CheckPath::Runner, statements: count, seconds: Some(value) },
            ],
            statements_per_side: count,
            runner_qps: Some(value),
            direct_qps: Some(value),
            ratio: Some(value),
            goal: Some(0.95),
            runner_cpu_us_per_statement: Some(value),
        }),
        os_io_wait_unknown: Some("the kernel's delay accounting is off".to_string()),
        rounds: vec![round, server_round],
        levels: vec![level],
        queries: vec![QueryRuns {
            query: INSERT.to_string(),
            variant: WritesVariant { clients },
            ab_variant: None,
            plan: None,
            sql_file: INSERT_FILE.to_string(),
            answer: String::new(),
            samples: vec![sample(1), sample(2)],
        }],
        notes: vec!["target url runs one statement at a time: measuring at 1 client only".to_string()],
    };
    example_bundle(value, count, sql_files(), results)
}

/// What a target could not read, unknown with why.
fn unknown(value: f64, count: u64) -> WritesBundle {
    let mut bundle = known(value, count);
    let results = &mut bundle.benchmark;
    results.workload = workload(count, LevelBound::Iterations { statements: count }, Durability::None, None);
    results.engine_events = EngineEvents::Unknown { reason: "system.events could not be read".to_string() };
    for level in &mut results.levels {
        level.variant = None;
        level.decomposition.counted = Counted::EngineCounters;
    }
    for round in &mut results.rounds {
        round.variant = None;
        round.events = EventsDelta::Unknown { reason: "system.events could not be read".to_string() };
        round.inserts_own = EventsDelta::Unknown { reason: "the embedded engine has no query_log".to_string() };
        round.threads =
            ThreadsSampled::Unknown { reason: "the engine's threads are in a server's process".to_string() };
        round.cpu.cores = None;
    }
    bundle.sql_files = sql_files();
    bundle.ab_run = None;
    bundle
}

fn workload(count: u64, bound: LevelBound, durability: Durability, rate: Option<f64>) -> WritesWorkload {
    let clients = u32::try_from(count).unwrap_or(u32::MAX);
    // A pack's run for the known figures, the logs table's for the unknown ones.
    let pack = rate.is_some();
    WritesWorkload {
        pack: pack.then(|| "tenants".to_string()),
        design: pack.then(|| "by_day".to_string()),
        table: "logs".to_string(),
        schema_file: SCHEMA_FILE.to_string(),
        insert_file: INSERT_FILE.to_string(),
        statement: "INSERT INTO logs SELECT 1".to_string(),
        batch_rows: count,
        durability,
        concurrency: vec![1, clients],
        levels_run: vec![1, clients],
        bound,
        rounds: clients,
        rate,
        mix: Mix { inserts: clients, updates: clients, deletes: clients, reads: clients },
        async_insert: pack,
        load_from: if pack { LoadFrom::Cluster } else { LoadFrom::Local },
        client_placement: pack.then(|| ClientPlacement::OwnNode { node_type: Some("c7g.4xlarge".to_string()) }),
    }
}

fn sql_files() -> Vec<String> {
    let durabilities = Durability::ALL.iter().map(|durability| durability.fixture().to_string());
    [SCHEMA_FILE.to_string()].into_iter().chain(durabilities).chain([INSERT_FILE.to_string()]).collect()
}

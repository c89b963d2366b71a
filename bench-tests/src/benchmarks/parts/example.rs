//! The parts kind's example bundles: every field they can hold filled, every number `value`
//! or `count` ([`crate::benchmarks::Benchmark::examples`]), with the engine's counters known
//! and unknown.

use super::{
    EngineEvents, FitQuality, Fitted, Gate, LOCK_EVENTS, Limits, OTHER_EVENTS, PLANNING_EVENTS, PartsBundle,
    PartsQueryRuns, PartsResults, PartsVariant, PhaseTime, Point, PointBuild, SlopeFit, Sweep,
};
use crate::query_runs::Sample;
use crate::results::example::{example_bundle, example_sample, example_stats};
use crate::stats::{QueryStats, StatsSource};

/// A parts bundle with every number set to `value` or `count` and every optional field
/// present: limits, a point's measure time, the gate, a fit of each quality, the engine's
/// counters known; one client's samples with their counters and two clients' without.
/// Then the same on an engine whose counter list could not be read.
pub fn examples(value: f64, count: u64) -> Vec<PartsBundle> {
    let known_events = example(value, count);
    let mut unknown_events = known_events.clone();
    unknown_events.benchmark.engine_events =
        EngineEvents::Unknown { reason: "system.events could not be read".to_string() };
    vec![known_events, unknown_events]
}

fn example(value: f64, count: u64) -> PartsBundle {
    let clients = u32::try_from(count).unwrap_or(u32::MAX);
    let counters = PLANNING_EVENTS.iter().chain(&LOCK_EVENTS).chain(&OTHER_EVENTS);
    let variant = |clients: u32| PartsVariant {
        design: "by_namespace_day".to_string(),
        point: count,
        active_parts: count,
        clients,
    };
    // One sample per round here: several clients' samples of one round are another test's.
    let concurrent = |round: u32| Sample {
        stats: QueryStats { source: StatsSource::ResultCounters, ..example_stats(count) },
        breakdown: None,
        ..example_sample(value, count, round)
    };
    let fit = |fitted: Fitted, quality: FitQuality| {
        let known = !matches!(quality, FitQuality::Unknown { .. });
        SlopeFit {
            design: "by_namespace_day".to_string(),
            query: "day_by_date".to_string(),
            fitted,
            samples: usize::MAX,
            part_counts: usize::MAX,
            slope_us_per_1k_parts: known.then_some(value),
            intercept_us: known.then_some(value),
            r_squared: known.then_some(value),
            slope_stderr_us_per_1k_parts: known.then_some(value),
            quality,
        }
    };
    let results = PartsResults {
        sweep: Sweep {
            points: vec![count],
            rows_per_part: count,
            namespaces: count,
            designs: vec!["by_namespace_day".to_string()],
            queries: vec!["day_by_date".to_string()],
            runs: clients,
            clients: vec![1, clients],
            max_slope_us_per_1k_parts: Some(value),
        },
        engine_events: EngineEvents::Known { names: counters.map(|name| name.to_string()).collect() },
        limits: Some(Limits { max_parts_in_total: Some(count) }),
        points: vec![Point {
            parts: count,
            builds: vec![PointBuild {
                design: "by_namespace_day".to_string(),
                added_rows: count,
                rows: count,
                active_parts: count,
                partitions: count,
                bytes_on_disk: count,
                seconds: Some(value),
                insert: example_stats(count),
            }],
            measure_seconds: Some(value),
        }],
        queries: vec![
            PartsQueryRuns {
                query: "day_by_date".to_string(),
                variant: variant(1),
                ab_variant: None,
                plan: None,
                sql_file: "parts/queries/day_by_date.sql".to_string(),
                answer: "100\t707.14\n".to_string(),
                samples: vec![example_sample(value, count, 1), example_sample(value, count, 2)],
            },
            PartsQueryRuns {
                variant: variant(clients),
                samples: vec![concurrent(1), concurrent(2)],
                ..no_samples_yet()
            },
        ],
        fits: vec![
            fit(Fitted::Planning, FitQuality::Linear),
            fit(Fitted::Duration, FitQuality::Flat),
            fit(Fitted::Planning, FitQuality::Poor),
            fit(Fitted::Duration, FitQuality::Unknown { reason: "one part count: a slope needs two".to_string() }),
        ],
        // The bound is always finite: a run refuses any other `--max-slope` before it
        // starts (and the field has no `null` reading).
        gate: Some(Gate {
            max_slope_us_per_1k_parts: Some(if value.is_finite() { value } else { 5_000.0 }),
            design: "by_namespace_day".to_string(),
            failures: vec!["query day_by_date on by_namespace_day: planning grows".to_string()],
        }),
        phase_times: vec![PhaseTime { phase: "sweep".to_string(), seconds: Some(value) }],
    };
    example_bundle(value, count, vec!["parts/generator.sql".to_string()], results)
}

/// A parts query as it is started, before its first sample.
fn no_samples_yet() -> PartsQueryRuns {
    PartsQueryRuns {
        query: "day_by_date".to_string(),
        variant: PartsVariant { design: "by_day".to_string(), point: 20, active_parts: 1, clients: 1 },
        ab_variant: None,
        plan: None,
        sql_file: "parts/queries/day_by_date.sql".to_string(),
        answer: String::new(),
        samples: Vec::new(),
    }
}

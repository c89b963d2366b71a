//! The logs kind's example bundle: every field it can hold filled, every number `value` or
//! `count` ([`crate::benchmarks::Benchmark::examples`]).

use super::cost::{CostInputs, CostModel};
use super::{
    BloomFilter, CalibrationRun, HarnessIngest, Ingest, IngestCalibration, IngestPath, IngestTiming, LogsBundle,
    LogsDataset, LogsQueryRuns, LogsResults, QueryVariant, RunTime,
};
use crate::plan::{IndexStage, TableRead};
use crate::query_runs::Step;
use crate::results::example::{example_bundle, example_sample, example_stats};
use crate::table_bytes::{ColumnBytes, StorageSnapshot, TableBytes};

/// A logs bundle with every field present and every number `value` or `count`.
pub fn example(value: f64, count: u64) -> LogsBundle {
    let step = Step { seconds: Some(value), stats: Some(example_stats(count)) };
    let inputs = CostInputs {
        node_usd_per_hour: Some(value),
        volume_usd_per_gb_month: Some(value),
        volume_gib: Some(value),
        rows_per_day: count,
        retention_days: count,
    };
    let results = LogsResults {
        dataset: LogsDataset { rows: count, step_ms: count, warm_runs: u32::MAX },
        volume_limit_mib_per_s: Some(value),
        ingest: Some(Ingest {
            rows: count,
            raw_engine: Some(IngestTiming { seconds: Some(value), rows_per_second: Some(value) }),
            harness: Some(HarnessIngest {
                timing: IngestTiming { seconds: Some(value), rows_per_second: Some(value) },
                rows: count,
                partitions: count,
                active_parts: count,
                stats: example_stats(count),
            }),
            calibration: Some(IngestCalibration {
                sample_rows: count,
                warm_up: IngestTiming { seconds: Some(value), rows_per_second: Some(value) },
                runs: vec![
                    CalibrationRun {
                        path: IngestPath::RawEngine,
                        timing: IngestTiming { seconds: Some(value), rows_per_second: Some(value) },
                    },
                    CalibrationRun {
                        path: IngestPath::Harness,
                        timing: IngestTiming { seconds: Some(value), rows_per_second: None },
                    },
                ],
                harness_over_raw: vec![Some(value), None],
            }),
        }),
        storage: vec![StorageSnapshot {
            label: "as ingested".to_string(),
            table: "logs".to_string(),
            codec: "LZ4".to_string(),
            active_parts: count,
            partitions: count,
            compact_parts: count,
            table_bytes: TableBytes { compressed_bytes: count, uncompressed_bytes: count },
            columns: vec![ColumnBytes {
                column: "message".to_string(),
                compressed_bytes: count,
                uncompressed_bytes: count,
                marks_bytes: count,
            }],
            columns_note: Some("compact parts".to_string()),
        }],
        zstd_reinsert: Some(step.clone()),
        queries: vec![LogsQueryRuns {
            query: "q1".to_string(),
            variant: QueryVariant::Default,
            ab_variant: Some("A".to_string()),
            plan: Some(vec![TableRead {
                table: "chbench_run.logs".to_string(),
                projection: None,
                stages: vec![IndexStage {
                    kind: "PrimaryKey".to_string(),
                    name: Some("trace_bf".to_string()),
                    initial_parts: count,
                    selected_parts: count,
                    initial_granules: count,
                    selected_granules: count,
                    applied_on_data_read: true,
                }],
            }]),
            sql_file: "logs/queries/q1.sql".to_string(),
            answer: "42\n".to_string(),
            samples: vec![example_sample(value, count, 0), example_sample(value, count, 1)],
        }],
        bloom_filter: Some(BloomFilter {
            add_index: step.clone(),
            materialize: step,
            index_compressed_bytes: count,
            index_uncompressed_bytes: count,
            table_compressed_bytes: count,
        }),
        cost: Some(CostModel::new(inputs, count, count)),
        run_time: Some(RunTime {
            wall_seconds: Some(value),
            statements: count,
            engine_seconds: Some(value),
            client_seconds: Some(value),
            statements_without_engine_time: count,
        }),
    };
    example_bundle(value, count, vec!["logs/schema.sql".to_string()], results)
}

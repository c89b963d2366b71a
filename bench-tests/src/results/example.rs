//! Example bundles, for the tests every kind of the registry is held to (its fields
//! documented, its bundles written, read back and reported; `Benchmark::examples`): the
//! envelope with every field filled, and the records a kind's results hold, every number
//! `value` or `count`. Non-finite values are allowed on purpose: the writer must take
//! them (as unknown), and the report must say so.

use std::collections::BTreeMap;

use super::{DONE, KindResults, RunBundle, RunStatus, SCHEMA_VERSION};
use crate::ab_variants::{AbRun, AbVariant};
use crate::breakdown::{Bottleneck, TimeBreakdown};
use crate::load_generator::{ClientPlacement, InClusterLoad, LoadReport, Percentile};
use crate::machine::{LoadAverage, MachineInfo, SeenProcess};
use crate::query_runs::{Sample, SampleKind};
use crate::settings::Settings;
use crate::stats::{QueryStats, StatsSource};
use crate::storage_baseline::{Device, Latency, RandRead, SeqRead, StorageBaseline, StorageBaselineRecord};
use crate::target_info::{KubernetesDeployment, TargetInfo, TargetKind};

/// A bundle of `benchmark` whose envelope has every field filled (an A/B run, a measured
/// storage baseline, the machine, an error), every number `value` or `count`.
pub fn example_bundle<Results: KindResults>(
    value: f64,
    count: u64,
    sql_files: Vec<String>,
    benchmark: Results,
) -> RunBundle<Results> {
    let load = LoadAverage { one: Some(value), five: Some(value), fifteen: Some(value) };
    let rate =
        || crate::target_info::ProbedRate { measured: Some(value), limit: Some(count), verdict: "held".to_string() };
    RunBundle {
        schema_version: SCHEMA_VERSION,
        run_id: "extreme".to_string(),
        status: RunStatus::Complete,
        phase: DONE.to_string(),
        started_at: jiff::Timestamp::from_second(1_796_007_599).unwrap_or(jiff::Timestamp::UNIX_EPOCH),
        finished_at: Some(jiff::Timestamp::MAX),
        target: TargetInfo {
            kind: TargetKind::Embedded,
            engine_version: "26.7.2.1".to_string(),
            endpoint: "libchdb".to_string(),
            // Every field filled, so that the documentation test sees each.
            deployment: Some(KubernetesDeployment {
                namespace: "chbench".to_string(),
                pod: "clickhouse".to_string(),
                image: "clickhouse/clickhouse-server:26.3.33.24".to_string(),
                image_id: Some("docker.io/clickhouse/clickhouse-server@sha256:00".to_string()),
                node: "node-1".to_string(),
                instance_type: Some("c7g.2xlarge".to_string()),
            }),
            storage: Some(crate::target_info::StorageVolume {
                limits: crate::target_info::Limits {
                    name: "gp3".to_string(),
                    read_iops: Some(count),
                    write_iops: Some(count),
                    read_bytes_per_second: Some(count),
                    write_bytes_per_second: Some(count),
                },
                device: "/dev/loop3 (7:3)".to_string(),
                image_bytes: count,
                sized_by: "the run's data estimated at 1.00 GiB".to_string(),
                cgroup: "cgroup v1 blkio /sys/fs/cgroup/blkio/chbench-1234".to_string(),
                approximation: crate::target_info::APPROXIMATION.to_string(),
                probe: Some(crate::target_info::VolumeProbe {
                    tool: "chbench's probe".to_string(),
                    ms_per_pass: count,
                    sequential_in_flight: u32::try_from(count).unwrap_or(u32::MAX),
                    random_in_flight: u32::try_from(count).unwrap_or(u32::MAX),
                    sequential_read_bytes_per_second: rate(),
                    random_read_iops: rate(),
                    sequential_write_bytes_per_second: rate(),
                    random_write_iops: rate(),
                }),
                probe_unknown: Some("the probe failed".to_string()),
            }),
        },
        storage_baseline: StorageBaselineRecord::Measured(Box::new(example_baseline(value, count))),
        session_settings: Settings::session_defaults(),
        sql_files,
        machine: Some(MachineInfo {
            cpu_model: String::new(),
            logical_cores: 0,
            memory_bytes: count,
            load_average_start: load,
            load_average_end: Some(load),
            other_chbench_processes: vec![SeenProcess { pid: u32::MAX, name: "x".to_string() }],
            others_cpu_cores: Some(value),
            others_cpu_unknown: Some("a reason".to_string()),
            noise: vec!["busy".to_string()],
        }),
        error: Some("a\nmultiline \"error\"".to_string()),
        ab_run: Some(AbRun {
            variants: vec![AbVariant {
                name: "A".to_string(),
                settings: Settings::new().with("max_threads", count),
                engine_version: Some("26.5.3".to_string()),
            }],
            seed: count,
            rounds: u32::MAX,
        }),
        profiles: Some(crate::profiles::ProfileRecord {
            choice: crate::profiles::ProfileChoice::Both,
            period_ns: count,
            queries: vec![crate::profiles::QueryProfile {
                label: "q1".to_string(),
                trace_type: crate::profiles::TraceType::Real,
                statements: usize::try_from(count).unwrap_or(usize::MAX),
                samples: count,
                stacks: usize::try_from(count).unwrap_or(usize::MAX),
                folded: Some("profiles/01-q1.real.folded".to_string()),
                svg: Some("profiles/01-q1.real.svg".to_string()),
                unknown: Some("a reason".to_string()),
            }],
            unknown: Some("a reason".to_string()),
        }),
        benchmark,
    }
}

/// A statistics record whose every number is `count`.
pub fn example_stats(count: u64) -> QueryStats {
    QueryStats {
        log_comment: "run/logs/q1/0".to_string(),
        source: StatsSource::ResultAndEventsDelta,
        read_rows: count,
        read_bytes: count,
        result_rows: count,
        server_duration_us: count,
        client_duration_us: count,
        memory_usage: Some(count),
        profile_events: BTreeMap::from([("SelectedRows".to_string(), count)]),
        raw: serde_json::json!({ "count": count }),
    }
}

/// A sample (direct I/O for attempt 0, else warm) with every field filled, its numbers
/// `value` or `count`.
pub fn example_sample(value: f64, count: u64, attempt: u32) -> Sample {
    Sample {
        kind: if attempt == 0 { SampleKind::DirectIo } else { SampleKind::Warm },
        attempt,
        settings: Settings::direct_io(),
        stats: example_stats(count),
        breakdown: Some(TimeBreakdown {
            thread_us: count,
            cpu_us: count,
            read_wait_us: count,
            other_us: count,
            bottleneck: Bottleneck::Unknown,
            read_mib_per_s: Some(value),
        }),
        round_position: Some(attempt),
        answer: None,
    }
}

/// A storage baseline with every number set to `value` or `count`.
fn example_baseline(value: f64, count: u64) -> StorageBaseline {
    let depth = u32::try_from(count).unwrap_or(u32::MAX);
    StorageBaseline {
        tool: "fio-3.33".to_string(),
        measured_at: jiff::Timestamp::from_second(1_796_007_000).unwrap_or(jiff::Timestamp::UNIX_EPOCH),
        device: Device {
            variant: "eks-gp3".to_string(),
            description: "a new gp3 EBS volume".to_string(),
            node: "ip-10-0-1-23".to_string(),
            instance_type: None,
        },
        direct: true,
        file_size_bytes: count,
        seq_read: SeqRead {
            block_size_bytes: count,
            iodepth: depth,
            runtime_ms: count,
            bytes: count,
            mib_per_s: Some(value),
        },
        rand_read: RandRead {
            block_size_bytes: count,
            iodepth: depth,
            runtime_ms: count,
            ios: count,
            iops: Some(value),
            latency_us: Latency { mean: Some(value), p50: Some(value), p99: Some(value) },
        },
    }
}

/// A level run in the cluster, every field filled: the throughput and writes examples' `load`.
pub fn example_load(value: f64, count: u64) -> InClusterLoad {
    InClusterLoad {
        generator: "clickhouse-benchmark (clickhouse/clickhouse-server:26.3.33.24)".to_string(),
        pod: "chbench-load-x7k2p".to_string(),
        node: Some("ip-10-0-1-24.ap-northeast-2.compute.internal".to_string()),
        placement: ClientPlacement::OwnNode { node_type: Some("c7g.4xlarge".to_string()) },
        query_id_prefix: "chbench-3f1c0e2a-p7-r1-c2".to_string(),
        report: LoadReport {
            loaded: Some(count),
            executed: count,
            completed: count,
            errors: count,
            qps: Some(value),
            rows_per_second: Some(value),
            // As the generator prints them: finite, to the millisecond.
            percentiles: vec![Percentile { percent: 50.0, ms: 148.0 }],
            first_error: Some("Code: 60. DB::Exception: Unknown table".to_string()),
        },
        server_finished: Some(count),
        server_failed: Some(count),
        server_unknown: Some("cannot read system.query_log: Code: 497 (ACCESS_DENIED)".to_string()),
        mismatch: Some(
            "clickhouse-benchmark counted 7 completed and 7 failed, the server's query_log 6 finished and 7 failed"
                .to_string(),
        ),
    }
}

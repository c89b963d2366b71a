//! Whatever the results writer produces, the reader and the report accept: bundles with
//! extreme, non-finite and missing values round-trip, a journal cut short by a kill is
//! read up to its last whole line, and a schema-1 bundle gets one line saying what to
//! do. Every field of a bundle of each kind (logs, parts, clickbench, throughput) is documented in
//! docs/results.md. No engine is needed: these bundles are built by hand.

use std::collections::BTreeMap;

use chbench::ab_variants::{AbRun, AbVariant};
use chbench::answers::AnswerDigest;
use chbench::benchmarks::clickbench::{
    AnswerCheck, AnswerOutcome, ClickBenchBundle, ClickBenchDataset, ClickBenchQueryRuns, ClickBenchResults,
    ClickBenchVariant, Load, MaxThreads, MaxThreadsSource, Totals,
};
use chbench::benchmarks::kinds::write_report;
use chbench::benchmarks::logs::cost::{CostInputs, CostModel};
use chbench::benchmarks::logs::{
    BloomFilter, CalibrationRun, HarnessIngest, Ingest, IngestCalibration, IngestPath, IngestTiming, LogsBundle,
    LogsDataset, LogsQueryRuns, LogsResults, QueryVariant, RunTime,
};
use chbench::benchmarks::parts::{
    EngineEvents, FitQuality, Fitted, Gate, LOCK_EVENTS, Limits, OTHER_EVENTS, PLANNING_EVENTS, PartsBundle,
    PartsQueryRuns, PartsResults, PartsVariant, PhaseTime, Point, PointBuild, SlopeFit, Sweep,
};
use chbench::benchmarks::throughput::{
    CheckBlock, CheckPath, DatasetBuild, Latency as LevelLatency, LevelBound, LevelRound, LevelSummary, QueryErrors,
    RunnerCheck, Spread, StatementRecord, ThroughputBundle, ThroughputResults, ThroughputVariant, Workload,
    WorkloadQuery,
};
use chbench::breakdown::{Bottleneck, TimeBreakdown};
use chbench::machine::{LoadAverage, MachineInfo, SeenProcess};
use chbench::plan::{IndexStage, TableRead};
use chbench::query_runs::{QueryRuns, Sample, SampleKind, Step};
use chbench::results::{
    BundleWriter, DONE, ExistingFolder, KindResults, RESULTS_FILE, RunBundle, RunStatus, SAMPLES_FILE, SCHEMA_VERSION,
    STARTING, load_bundle,
};
use chbench::settings::Settings;
use chbench::stats::{QueryStats, StatsSource};
use chbench::storage_baseline::{
    Device, Latency, NOT_RECORDED_BEFORE, RandRead, SeqRead, StorageBaseline, StorageBaselineRecord,
};
use chbench::table_bytes::{ColumnBytes, StorageSnapshot, TableBytes};
use chbench::target_info::{KubernetesDeployment, TargetInfo, TargetKind};

fn stats(count: u64) -> QueryStats {
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

fn sample(value: f64, count: u64, attempt: u32) -> Sample {
    Sample {
        kind: if attempt == 0 { SampleKind::DirectIo } else { SampleKind::Warm },
        attempt,
        settings: Settings::direct_io(),
        stats: stats(count),
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
fn baseline(value: f64, count: u64) -> StorageBaseline {
    let depth = u32::try_from(count).unwrap_or(u32::MAX);
    StorageBaseline {
        fio_version: "fio-3.33".to_string(),
        measured_at: jiff::Timestamp::from_second(1_796_007_000).unwrap(),
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

/// A bundle with every number set to `value` or `count`.
fn extreme_bundle(value: f64, count: u64) -> LogsBundle {
    let step = Step { seconds: Some(value), stats: Some(stats(count)) };
    let load = LoadAverage { one: Some(value), five: Some(value), fifteen: Some(value) };
    let inputs = CostInputs {
        node_usd_per_hour: Some(value),
        volume_usd_per_gb_month: Some(value),
        volume_gib: Some(value),
        rows_per_day: count,
        retention_days: count,
    };
    LogsBundle {
        schema_version: SCHEMA_VERSION,
        run_id: "extreme".to_string(),
        status: RunStatus::Complete,
        phase: DONE.to_string(),
        started_at: jiff::Timestamp::from_second(1_796_007_599).unwrap(),
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
        },
        storage_baseline: StorageBaselineRecord::Measured(Box::new(baseline(value, count))),
        session_settings: Settings::session_defaults(),
        sql_files: vec!["logs/schema.sql".to_string()],
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
        benchmark: LogsResults {
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
                    stats: stats(count),
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
                samples: vec![sample(value, count, 0), sample(value, count, 1)],
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
        },
    }
}

/// A parts bundle with every number set to `value` or `count` and every optional field
/// present: limits, a point's measure time, the gate, a fit of each quality, the engine's
/// counters known; one client's samples with their counters and two clients' without.
fn extreme_parts_bundle(value: f64, count: u64) -> PartsBundle {
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
        stats: QueryStats { source: StatsSource::ResultCounters, ..stats(count) },
        breakdown: None,
        ..sample(value, count, round)
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
    let envelope = extreme_bundle(value, count);
    PartsBundle {
        schema_version: envelope.schema_version,
        run_id: envelope.run_id,
        status: envelope.status,
        phase: envelope.phase,
        started_at: envelope.started_at,
        finished_at: envelope.finished_at,
        target: envelope.target,
        storage_baseline: envelope.storage_baseline,
        session_settings: envelope.session_settings,
        sql_files: vec!["parts/generator.sql".to_string()],
        machine: envelope.machine,
        error: envelope.error,
        ab_run: envelope.ab_run,
        benchmark: PartsResults {
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
                    insert: stats(count),
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
                    samples: vec![sample(value, count, 1), sample(value, count, 2)],
                },
                PartsQueryRuns {
                    variant: variant(clients),
                    samples: vec![concurrent(1), concurrent(2)],
                    ..parts_no_samples_yet()
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
        },
    }
}

/// The same bundle on an engine whose counter list could not be read: `engine_events` is
/// unknown, with the reason.
fn unknown_events_parts_bundle() -> PartsBundle {
    let mut bundle = extreme_parts_bundle(1.5, 7);
    bundle.benchmark.engine_events = EngineEvents::Unknown { reason: "system.events could not be read".to_string() };
    bundle
}

/// A parts query as it is started, before its first sample.
fn parts_no_samples_yet() -> PartsQueryRuns {
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

/// A bundle that stopped before measuring anything.
fn empty_bundle() -> LogsBundle {
    LogsBundle {
        status: RunStatus::Incomplete,
        phase: STARTING.to_string(),
        error: None,
        finished_at: None,
        sql_files: Vec::new(),
        machine: None,
        storage_baseline: StorageBaselineRecord::Unknown { reason: "the target measures none".to_string() },
        benchmark: LogsResults {
            dataset: LogsDataset { rows: 1, step_ms: 1, warm_runs: 1 },
            volume_limit_mib_per_s: None,
            ingest: None,
            storage: Vec::new(),
            zstd_reinsert: None,
            queries: Vec::new(),
            bloom_filter: None,
            cost: None,
            run_time: None,
        },
        ..extreme_bundle(1.0, 1)
    }
}

/// Writes `bundle` as a run does (its last query's samples through the journal), reads
/// it back and renders its report.
fn write_read_and_report<Results: KindResults>(bundle: &RunBundle<Results>) -> (RunBundle<Results>, String) {
    let root = tempfile::tempdir().unwrap();
    let mut first = bundle.clone();
    let last = first.benchmark.queries_mut().pop();
    let mut writer = BundleWriter::create(root.path(), first, ExistingFolder::Refuse).unwrap();
    if let Some(last) = last {
        writer.start_query(QueryRuns { answer: String::new(), samples: Vec::new(), ..last.clone() }).unwrap();
        for (index, sample) in last.samples.into_iter().enumerate() {
            writer.record_sample(sample, (index == 0).then(|| last.answer.clone())).unwrap();
        }
    }
    let read =
        load_bundle::<Results>(writer.dir()).unwrap_or_else(|error| panic!("the reader refused the bundle: {error:#}"));
    let report = write_report(writer.dir()).unwrap_or_else(|error| panic!("the report refused the bundle: {error:#}"));
    (read, std::fs::read_to_string(report).unwrap())
}

#[test]
fn bundles_with_extreme_and_missing_values_round_trip_and_report() {
    let values = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MAX, f64::MIN_POSITIVE, 0.0, -0.0, -1.0];
    for (value, count) in values.iter().flat_map(|value| [(*value, 0), (*value, u64::MAX)]) {
        let written = extreme_bundle(value, count);
        let (read, report) = write_read_and_report(&written);
        // Not-finite numbers come back as unknown; everything else exactly. Compared as the
        // JSON the writer would write again.
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::to_value(&written).unwrap(),
            "value {value}, count {count}"
        );
        // Rust prints non-finite numbers as NaN, inf and -inf: none may reach the report.
        let words: Vec<&str> = report.split(|c: char| !c.is_alphabetic()).collect();
        assert!(!words.contains(&"NaN") && !words.contains(&"inf"), "value {value} leaks into the report:\n{report}");
        if !value.is_finite() {
            assert!(report.contains("unknown"), "value {value} is not reported as unknown:\n{report}");
        }
    }
    let (read, report) = write_read_and_report(&empty_bundle());
    assert_eq!(read, empty_bundle());
    assert!(report.contains("**Incomplete run**"), "{report}");
}

/// A parts bundle with extreme values comes back as written, through `results.json` and
/// the journal (a not-finite number as unknown), and its report shows no NaN or inf.
#[test]
fn parts_bundles_with_extreme_values_round_trip_and_report() {
    let values = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MAX, f64::MIN_POSITIVE, 0.0, -0.0, -1.0];
    for (value, count) in values.iter().flat_map(|value| [(*value, 0), (*value, u64::MAX)]) {
        let written = extreme_parts_bundle(value, count);
        let (read, report) = write_read_and_report(&written);
        // Compared as the JSON the writer would write again: NaN, which equals nothing,
        // is `null` there, as is the unknown it reads back as.
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::to_value(&written).unwrap(),
            "value {value}, count {count}"
        );
        if value.is_finite() {
            assert_eq!(read, written, "value {value}, count {count}");
        } else {
            assert_eq!(read.benchmark.points[0].builds[0].seconds, None, "value {value}: seconds not read as unknown");
            assert_eq!(read.benchmark.points[0].measure_seconds, None, "value {value}");
        }
        let unknown_fit = read.benchmark.fits.iter().find(|fit| matches!(fit.quality, FitQuality::Unknown { .. }));
        assert!(unknown_fit.is_some_and(|fit| fit.slope_us_per_1k_parts.is_none()), "{:?}", read.benchmark.fits);
        let words: Vec<&str> = report.split(|c: char| !c.is_alphabetic()).collect();
        assert!(!words.contains(&"NaN") && !words.contains(&"inf"), "value {value} leaks into the report:\n{report}");
        assert!(report.contains("unknown"), "value {value}: no unknown fit in the report:\n{report}");
    }
    let (read, _) = write_read_and_report(&unknown_events_parts_bundle());
    assert_eq!(read, unknown_events_parts_bundle());
}

#[test]
fn throughput_bundles_with_extreme_values_round_trip_and_report() {
    let values = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MAX, f64::MIN_POSITIVE, 0.0, -0.0, -1.0];
    for (value, count) in values.iter().flat_map(|value| [(*value, 0), (*value, u64::MAX)]) {
        let written = extreme_throughput_bundle(value, count, LevelBound::Duration { seconds: Some(value) });
        let (read, report) = write_read_and_report(&written);
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::to_value(&written).unwrap(),
            "value {value}, count {count}"
        );
        if value.is_finite() {
            assert_eq!(read, written, "value {value}, count {count}");
        } else {
            assert_eq!(read.benchmark.rounds[0].wall_seconds, None, "value {value}: wall time not read as unknown");
            assert_eq!(read.benchmark.rounds[0].qps, None, "value {value}");
        }
        let words: Vec<&str> = report.split(|c: char| !c.is_alphabetic()).collect();
        assert!(!words.contains(&"NaN") && !words.contains(&"inf"), "value {value} leaks into the report:\n{report}");
    }
}

/// K clients' samples of one round are numbered in turn (the journal folds a sample in by
/// its kind and number, so two of one number would be one): each is kept, as the run
/// records it, as `results.json` and the journal hold it, and as it is read back.
#[test]
fn every_clients_sample_of_a_round_is_kept() {
    let client = |client: u32| Sample {
        stats: QueryStats {
            log_comment: format!("run/day_by_date_by_day_20/clients_2_{client}/1"),
            source: StatsSource::ResultCounters,
            ..stats(7)
        },
        breakdown: None,
        ..sample(1.5, 7, client + 1)
    };
    let mut bundle = extreme_parts_bundle(1.5, 7);
    bundle.benchmark.queries.clear();
    let root = tempfile::tempdir().unwrap();
    let mut writer = BundleWriter::create(root.path(), bundle, ExistingFolder::Refuse).unwrap();
    writer
        .start_query(PartsQueryRuns {
            variant: PartsVariant { clients: 2, ..parts_no_samples_yet().variant },
            ..parts_no_samples_yet()
        })
        .unwrap();
    writer.record_sample(client(0), Some("1\n".to_string())).unwrap();
    writer.record_sample(client(1), None).unwrap();
    let tags = |runs: &[PartsQueryRuns]| -> Vec<String> {
        runs[0].samples.iter().map(|sample| sample.stats.log_comment.clone()).collect()
    };
    let expected = [client(0).stats.log_comment, client(1).stats.log_comment];
    assert_eq!(tags(&writer.bundle.benchmark.queries), expected, "as the run holds them");
    assert_eq!(
        tags(&load_bundle::<PartsResults>(writer.dir()).unwrap().benchmark.queries),
        expected,
        "from the journal"
    );
    writer.finish(None).unwrap();
    assert_eq!(tags(&load_bundle::<PartsResults>(writer.dir()).unwrap().benchmark.queries), expected, "finished");
}

/// The source's Q3: a direct-I/O scan reading 130 MiB/s from a volume fio measured at
/// 125 MiB/s is volume-bound; an older bundle without a baseline still loads, and says
/// the verdict is unknown.
#[test]
fn the_report_says_whether_a_scan_was_volume_bound() {
    let mut bundle = extreme_bundle(125.0, 7);
    let logs = &mut bundle.benchmark;
    logs.queries[0].query = "q3".to_string();
    logs.queries[0].samples[0].breakdown.as_mut().unwrap().read_mib_per_s = Some(130.0);
    let (_, report) = write_read_and_report(&bundle);
    assert!(report.contains("| against the storage baseline |"), "{report}");
    assert!(report.contains("| volume-bound (104 % of 125.0 MiB/s) |"), "{report}");
    assert!(
        report.contains("- storage baseline (fio on the target's volume): sequential read 125.0 MiB/s"),
        "{report}"
    );

    // As a bundle written before the field existed.
    let root = tempfile::tempdir().unwrap();
    let writer = BundleWriter::create(root.path(), bundle.clone(), ExistingFolder::Refuse).unwrap();
    let path = writer.dir().join(RESULTS_FILE);
    let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("storage_baseline");
    std::fs::write(&path, json.to_string()).unwrap();
    let old = load_bundle::<LogsResults>(writer.dir()).unwrap();
    assert_eq!(old.storage_baseline, StorageBaselineRecord::Unknown { reason: NOT_RECORDED_BEFORE.to_string() });
    assert_eq!(old, LogsBundle { storage_baseline: old.storage_baseline.clone(), ..bundle });
    let report = std::fs::read_to_string(write_report(writer.dir()).unwrap()).unwrap();
    assert!(
        report.contains(&format!("- storage baseline (fio on the target's volume): unknown ({NOT_RECORDED_BEFORE})"))
    );
    assert!(report.contains("| unknown (no storage baseline) |"), "{report}");
}

/// Q1 as it is started, before its first sample.
fn no_samples_yet() -> LogsQueryRuns {
    LogsQueryRuns {
        query: "q1".to_string(),
        variant: QueryVariant::Default,
        ab_variant: None,
        plan: None,
        sql_file: "logs/queries/q1.sql".to_string(),
        answer: String::new(),
        samples: Vec::new(),
    }
}

#[test]
fn the_journal_keeps_samples_up_to_a_line_cut_short_by_a_kill() {
    let root = tempfile::tempdir().unwrap();
    let mut writer = BundleWriter::create(root.path(), empty_bundle(), ExistingFolder::Refuse).unwrap();
    writer.start_query(no_samples_yet()).unwrap();
    for attempt in 0..3 {
        writer.record_sample(sample(1.5, 7, attempt), (attempt == 0).then(|| "615\n".to_string())).unwrap();
    }
    let dir = writer.dir().to_path_buf();
    // As a kill leaves it: results.json from before the samples, the journal with them
    // and half a line more.
    std::mem::forget(writer);
    let journal = dir.join(SAMPLES_FILE);
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.push_str("{\"query_index\":0,\"answer\":null,\"sam");
    std::fs::write(&journal, &text).unwrap();
    let bundle = load_bundle::<LogsResults>(&dir).unwrap();
    assert_eq!(bundle.benchmark.queries[0].samples.len(), 3);
    assert_eq!(bundle.benchmark.queries[0].answer, "615\n");
    // A damaged line that is not the last one is skipped (said on stderr, which
    // `report`'s test reads): the samples around it are kept.
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&journal, format!("{}\nnot json\n{}\n{}", lines[0], lines[1..].join("\n"), "{\"query_index\":0}\n"))
        .unwrap();
    let bundle = load_bundle::<LogsResults>(&dir).unwrap();
    assert_eq!(bundle.benchmark.queries[0].samples.len(), 3);
    // A sample of a query the bundle lacks is another run's journal: refused.
    std::fs::write(&journal, text.replace("\"query_index\":0", "\"query_index\":7")).unwrap();
    let error = format!("{:#}", load_bundle::<LogsResults>(&dir).unwrap_err());
    assert!(error.contains(&format!("{}:1 is a sample of query 7", journal.display())), "{error}");
}

#[test]
fn a_finished_bundle_has_its_samples_in_results_json_and_no_journal() {
    let root = tempfile::tempdir().unwrap();
    let mut writer = BundleWriter::create(root.path(), empty_bundle(), ExistingFolder::Refuse).unwrap();
    writer.start_query(no_samples_yet()).unwrap();
    writer.record_sample(sample(1.5, 7, 0), None).unwrap();
    writer.finish(Some("interrupted".to_string())).unwrap();
    assert!(!writer.dir().join(SAMPLES_FILE).exists());
    let text = std::fs::read_to_string(writer.dir().join(RESULTS_FILE)).unwrap();
    let bundle: LogsBundle = serde_json::from_str(&text).unwrap();
    assert_eq!(bundle.benchmark.queries[0].samples.len(), 1);
}

/// Every file of a folder and its subfolders, but the SQL copies (which keep the
/// fixtures' own permissions), with its permission bits.
fn modes(folder: &std::path::Path, modes: &mut BTreeMap<String, u32>) {
    use std::os::unix::fs::PermissionsExt as _;
    for entry in std::fs::read_dir(folder).unwrap() {
        let entry = entry.unwrap();
        let metadata = entry.metadata().unwrap();
        if metadata.is_dir() {
            if entry.file_name() != "sql" {
                self::modes(&entry.path(), modes);
            }
        } else {
            modes.insert(entry.file_name().to_string_lossy().into_owned(), metadata.permissions().mode() & 0o777);
        }
    }
}

#[test]
fn every_file_of_a_bundle_has_the_same_permissions() {
    let root = tempfile::tempdir().unwrap();
    let mut writer = BundleWriter::create(root.path(), extreme_bundle(1.5, 7), ExistingFolder::Refuse).unwrap();
    writer.start_query(no_samples_yet()).unwrap();
    writer.record_sample(sample(1.5, 7, 0), Some("615\n".to_string())).unwrap();
    write_report(writer.dir()).unwrap();
    let mut found = BTreeMap::new();
    modes(writer.dir(), &mut found);
    // samples.jsonl is opened as any new file is: the others must match it.
    let journal = found[SAMPLES_FILE];
    assert!(found.contains_key(RESULTS_FILE) && found.contains_key("report.md"), "{found:?}");
    assert!(found.keys().any(|name| name.ends_with(".svg")), "no chart was written: {found:?}");
    for (name, mode) in &found {
        assert_eq!(format!("{mode:o}"), format!("{journal:o}"), "{name} has other permissions than {SAMPLES_FILE}");
    }
}

#[test]
fn a_schema_1_bundle_gets_one_line_saying_what_to_do() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("old");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(RESULTS_FILE), r#"{"schema_version": 1, "run_id": "old", "queries": []}"#).unwrap();
    let error = format!("{:#}", load_bundle::<LogsResults>(&dir).unwrap_err());
    assert!(error.contains("has results schema 1, written by an earlier chbench"), "{error}");
    assert!(error.contains("run the benchmark again (`cargo xtask bench`)"), "{error}");
    assert!(!error.contains('\n'), "{error}");
}

/// Object paths whose keys are data, not fields: settings by name, ProfileEvents by
/// name, and the raw record a statistic came from.
const OPEN_MAPS: [&str; 7] = [
    "session_settings",
    "ab_run.variants[].settings",
    "benchmark.queries[].samples[].settings",
    "benchmark.queries[].samples[].stats.profile_events",
    "benchmark.queries[].samples[].stats.raw",
    ".stats.raw",
    "benchmark.points[].builds[].insert.raw",
];

/// Statistics records under another name than `stats`: documented once, as `stats.<field>`.
/// A throughput bundle with every optional field present and every number `value` or
/// `count`, its levels bounded by `bound`.
fn extreme_throughput_bundle(value: f64, count: u64, bound: LevelBound) -> ThroughputBundle {
    let clients = u32::try_from(count).unwrap_or(u32::MAX);
    let latency = LevelLatency { p50_ms: Some(value), p90_ms: Some(value), p99_ms: Some(value), max_ms: Some(value) };
    let spread = Spread { min: Some(value), median: Some(value), max: Some(value) };
    let statement = |error: Option<&str>| StatementRecord {
        client: clients,
        query: "q1".to_string(),
        start_offset_us: count,
        latency_us: count,
        read_rows: error.is_none().then_some(count),
        error: error.map(str::to_string),
    };
    let concurrent = |attempt: u32| Sample {
        kind: SampleKind::Warm,
        settings: Settings::new(),
        stats: QueryStats { source: StatsSource::ResultCounters, profile_events: BTreeMap::new(), ..stats(count) },
        breakdown: None,
        round_position: None,
        ..sample(value, count, attempt)
    };
    let envelope = extreme_bundle(value, count);
    ThroughputBundle {
        schema_version: envelope.schema_version,
        run_id: envelope.run_id,
        status: envelope.status,
        phase: envelope.phase,
        started_at: envelope.started_at,
        finished_at: envelope.finished_at,
        target: envelope.target,
        storage_baseline: envelope.storage_baseline,
        session_settings: envelope.session_settings,
        sql_files: vec!["logs/queries/q1.sql".to_string()],
        machine: envelope.machine,
        error: envelope.error,
        ab_run: None,
        benchmark: ThroughputResults {
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
                statements: vec![statement(None), statement(Some("Code: 60"))],
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
        },
    }
}

const STATS_RECORDS: [&str; 1] = ["benchmark.points[].builds[].insert"];

/// Fields whose values are names a reader must know: each value a bundle holds is
/// documented in its kind's section, as `value`.
const NAMED_VALUES: [&str; 11] = [
    "benchmark.dataset.source",
    "benchmark.max_threads.source",
    "benchmark.checks[].outcome",
    "benchmark.queries[].variant",
    "benchmark.statement_records",
    "benchmark.runner_check.blocks[].path",
    "benchmark.queries[].samples[].kind",
    "benchmark.queries[].samples[].breakdown.bottleneck",
    "benchmark.engine_events.state",
    "benchmark.fits[].fitted",
    "benchmark.fits[].quality.verdict",
];

/// Every field path of `value`, e.g. `benchmark.queries[].samples[].stats.read_rows`.
fn field_paths(value: &serde_json::Value, path: &str, paths: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(fields) => {
            for (name, field) in fields {
                let path = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                paths.push(path.clone());
                let open = OPEN_MAPS.iter().any(|map| path == *map || (map.starts_with('.') && path.ends_with(map)))
                    || path.ends_with(".profile_events");
                if !open {
                    field_paths(field, &path, paths);
                }
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                field_paths(item, &format!("{path}[]"), paths);
            }
        }
        _ => {}
    }
}

/// Every string of `value` at a path of [`NAMED_VALUES`], with its path.
fn named_values(value: &serde_json::Value, path: &str, values: &mut Vec<(String, String)>) {
    match value {
        serde_json::Value::Object(fields) => {
            for (name, field) in fields {
                let path = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                named_values(field, &path, values);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                named_values(item, &format!("{path}[]"), values);
            }
        }
        serde_json::Value::String(text) if NAMED_VALUES.contains(&path) => {
            values.push((path.to_string(), text.clone()))
        }
        _ => {}
    }
}

/// The section of docs/results.md that describes `kind`'s fields, up to the next section.
fn kind_section<'a>(docs: &'a str, kind: &str) -> &'a str {
    let heading = format!("\n## The {kind} benchmark (`benchmark.kind` = `{kind}`)\n");
    let start = docs.find(&heading).unwrap_or_else(|| panic!("docs/results.md has no section {heading:?}"));
    let section = &docs[start + heading.len()..];
    section.find("\n## ").map_or(section, |end| &section[..end])
}

/// The path a field is documented as: a statistics record's fields once, as `stats.<field>`.
fn documented_as(path: &str) -> String {
    let record_field = STATS_RECORDS.iter().find_map(|record| path.strip_prefix(record)?.strip_prefix('.'));
    match (record_field, path.rsplit_once(".stats.")) {
        (Some(field), _) | (None, Some((_, field))) => format!("stats.{field}"),
        (None, None) => path.to_string(),
    }
}

/// A clickbench bundle of `dataset` with every optional field present and every answer
/// outcome once, its samples' answers digested.
fn clickbench_bundle(dataset: ClickBenchDataset) -> ClickBenchBundle {
    let envelope = extreme_bundle(1.5, 7);
    let answer = AnswerDigest::of_tab_separated("a\t1\n");
    let other = AnswerDigest::of_tab_separated("b\t2\n");
    let digested = |attempt: u32| Sample { answer: Some(answer.clone()), ..sample(1.5, 7, attempt) };
    let outcomes = [
        AnswerOutcome::Passed { answer: answer.clone(), matches_reference: true },
        AnswerOutcome::RunsDisagree { answers: vec![(answer.clone(), 9), (other.clone(), 2)] },
        AnswerOutcome::DiffersFromReference { answer: answer.clone(), reference: other },
        AnswerOutcome::Error { message: "queries.sql:4: statement failed".to_string() },
    ];
    ClickBenchBundle {
        schema_version: envelope.schema_version,
        run_id: envelope.run_id,
        status: envelope.status,
        phase: envelope.phase,
        started_at: envelope.started_at,
        finished_at: envelope.finished_at,
        target: envelope.target,
        storage_baseline: envelope.storage_baseline,
        session_settings: envelope.session_settings,
        sql_files: vec!["clickbench/create.sql".to_string(), "/data/ClickBench/clickhouse/queries.sql".to_string()],
        machine: envelope.machine,
        error: envelope.error,
        ab_run: None,
        benchmark: ClickBenchResults {
            dataset,
            warm_ups: 1,
            runs: 10,
            max_threads: Some(MaxThreads { value: "auto(2)".to_string(), source: MaxThreadsSource::Engine }),
            reference_answers: Some("results/run/answers.json".to_string()),
            load: Some(Load { seconds: Some(1.5), wall_seconds: Some(1.6), rows: Some(7), data_size_bytes: Some(7) }),
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
                sum_of_means_seconds: Some(1.5),
                hot_sum_seconds: Some(1.5),
            }),
        },
    }
}

/// Every field of a bundle of each kind, with every optional field present, is in
/// docs/results.md: a kind's own fields (and the names its fields hold) in its section,
/// the envelope's and a statistics record's in theirs. A parts bundle twice: with the
/// engine's counters known, and unknown with the reason.
#[test]
fn every_field_of_a_bundle_is_documented() {
    let docs_path = chbench::files::workspace_root().join("docs/results.md");
    let docs = std::fs::read_to_string(&docs_path).unwrap();
    let bundles = [
        ("logs", serde_json::to_value(extreme_bundle(1.5, 7)).unwrap()),
        ("parts", serde_json::to_value(extreme_parts_bundle(1.5, 7)).unwrap()),
        ("parts", serde_json::to_value(unknown_events_parts_bundle()).unwrap()),
        ("clickbench", serde_json::to_value(clickbench_bundle(ClickBenchDataset::Shipped { rows: 7 })).unwrap()),
        (
            "clickbench",
            serde_json::to_value(clickbench_bundle(ClickBenchDataset::Checkout {
                checkout: "/data/ClickBench".to_string(),
                create_sql: "/data/ClickBench/clickhouse/create.sql".to_string(),
                queries_sql: "/data/ClickBench/clickhouse/queries.sql".to_string(),
                hits_file: "/data/hits.parquet".to_string(),
                format: "Parquet".to_string(),
            }))
            .unwrap(),
        ),
        (
            "throughput",
            serde_json::to_value(extreme_throughput_bundle(1.5, 7, LevelBound::Duration { seconds: Some(1.5) }))
                .unwrap(),
        ),
        (
            "throughput",
            serde_json::to_value(extreme_throughput_bundle(1.5, 7, LevelBound::Iterations { statements: 7 })).unwrap(),
        ),
    ];
    let mut missing = Vec::new();
    for (kind, bundle) in &bundles {
        let section = kind_section(&docs, kind);
        let mut paths = Vec::new();
        field_paths(bundle, "", &mut paths);
        for path in paths.iter().map(|path| documented_as(path)) {
            let own = path.starts_with("benchmark.") && path != "benchmark.kind";
            if !(if own { section } else { docs.as_str() }).contains(&format!("`{path}`")) {
                missing.push(format!("{kind}: `{path}`"));
            }
        }
        let mut values = Vec::new();
        named_values(bundle, "", &mut values);
        for (path, value) in values {
            if !section.contains(&format!("`{value}`")) {
                missing.push(format!("{kind}: `{path}` holds `{value}`"));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "{} does not document these fields and values: {missing:#?}", docs_path.display());
}

#[test]
fn run_ids_that_could_name_a_path_elsewhere_are_refused() {
    let root = tempfile::tempdir().unwrap();
    for run_id in ["../escaped", "/tmp/absolute", "a/b", ".hidden", "-flag", "", "é", &"x".repeat(101)] {
        let bundle = LogsBundle { run_id: run_id.to_string(), ..empty_bundle() };
        let error = BundleWriter::create(root.path(), bundle, ExistingFolder::Refuse).err().unwrap().to_string();
        assert!(error.contains("is not a usable run id"), "{run_id}: {error}");
    }
    assert_eq!(std::fs::read_dir(root.path()).map(|entries| entries.count()).unwrap_or(0), 0);
    assert!(!root.path().parent().unwrap().join("escaped").exists());
}

#[test]
fn a_run_id_taken_by_another_run_is_refused_or_numbered() {
    let root = tempfile::tempdir().unwrap();
    let bundle = LogsBundle { run_id: "same".to_string(), ..empty_bundle() };
    BundleWriter::create(root.path(), bundle.clone(), ExistingFolder::Refuse).unwrap();
    let error = BundleWriter::create(root.path(), bundle.clone(), ExistingFolder::Refuse).err().unwrap().to_string();
    assert!(error.contains("already exists; choose another run id"), "{error}");
    let numbered = BundleWriter::create(root.path(), bundle, ExistingFolder::AddSuffix).unwrap();
    assert_eq!(numbered.bundle.run_id, "same-2");
    assert!(root.path().join("same-2").join(RESULTS_FILE).is_file());
}

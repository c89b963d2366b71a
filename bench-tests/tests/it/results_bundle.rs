//! Whatever the results writer produces, the reader and the report accept: bundles with
//! extreme, non-finite and missing values round-trip, a journal cut short by a kill is
//! read up to its last whole line, and a schema-1 bundle gets one line saying what to
//! do. Every field is documented in docs/results.md. No engine is needed: these bundles
//! are built by hand.

use std::collections::BTreeMap;

use chbench::benchmarks::kinds::write_report;
use chbench::benchmarks::logs::cost::{CostInputs, CostModel};
use chbench::benchmarks::logs::{
    BloomFilter, CalibrationRun, HarnessIngest, Ingest, IngestCalibration, IngestPath, IngestTiming, LogsBundle,
    LogsDataset, LogsQueryRuns, LogsResults, QueryVariant, RunTime,
};
use chbench::breakdown::{Bottleneck, TimeBreakdown};
use chbench::machine::{LoadAverage, MachineInfo, SeenProcess};
use chbench::query_runs::{Sample, SampleKind, Step};
use chbench::results::{
    BundleWriter, DONE, ExistingFolder, RESULTS_FILE, RunStatus, SAMPLES_FILE, SCHEMA_VERSION, STARTING, load_bundle,
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
        breakdown: TimeBreakdown {
            thread_us: count,
            cpu_us: count,
            read_wait_us: count,
            other_us: count,
            bottleneck: Bottleneck::Unknown,
            read_mib_per_s: Some(value),
        },
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
        },
        direct: true,
        file_size_bytes: count,
        seq_read: SeqRead {
            block_size_bytes: count,
            iodepth: depth,
            runtime_ms: count,
            bytes: count,
            mib_per_s: value,
        },
        rand_read: RandRead {
            block_size_bytes: count,
            iodepth: depth,
            runtime_ms: count,
            ios: count,
            iops: value,
            latency_us: Latency { mean: value, p50: value, p99: value },
        },
    }
}

/// A bundle with every number set to `value` or `count`.
fn extreme_bundle(value: f64, count: u64) -> LogsBundle {
    let step = Step { seconds: value, stats: Some(stats(count)) };
    let load = LoadAverage { one: value, five: value, fifteen: value };
    let inputs = CostInputs {
        node_usd_per_hour: value,
        volume_usd_per_gb_month: value,
        volume_gib: value,
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
        benchmark: LogsResults {
            dataset: LogsDataset { rows: count, step_ms: count, warm_runs: u32::MAX },
            volume_limit_mib_per_s: Some(value),
            ingest: Some(Ingest {
                rows: count,
                raw_engine: Some(IngestTiming { seconds: value, rows_per_second: Some(value) }),
                harness: Some(HarnessIngest {
                    timing: IngestTiming { seconds: value, rows_per_second: Some(value) },
                    rows: count,
                    partitions: count,
                    active_parts: count,
                    stats: stats(count),
                }),
                calibration: Some(IngestCalibration {
                    sample_rows: count,
                    warm_up: IngestTiming { seconds: value, rows_per_second: Some(value) },
                    runs: vec![
                        CalibrationRun {
                            path: IngestPath::RawEngine,
                            timing: IngestTiming { seconds: value, rows_per_second: Some(value) },
                        },
                        CalibrationRun {
                            path: IngestPath::Harness,
                            timing: IngestTiming { seconds: value, rows_per_second: None },
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
                wall_seconds: value,
                statements: count,
                engine_seconds: value,
                client_seconds: value,
                statements_without_engine_time: count,
            }),
        },
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

/// Writes `bundle` as the writer does, reads it back and renders its report.
fn write_read_and_report(bundle: &LogsBundle) -> (LogsBundle, String) {
    let root = tempfile::tempdir().unwrap();
    let writer = BundleWriter::create(root.path(), bundle.clone(), ExistingFolder::Refuse).unwrap();
    let read = load_bundle::<LogsResults>(writer.dir())
        .unwrap_or_else(|error| panic!("the reader refused the bundle: {error:#}"));
    let report = write_report(writer.dir()).unwrap_or_else(|error| panic!("the report refused the bundle: {error:#}"));
    (read, std::fs::read_to_string(report).unwrap())
}

#[test]
fn bundles_with_extreme_and_missing_values_round_trip_and_report() {
    let values = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MAX, f64::MIN_POSITIVE, 0.0, -0.0, -1.0];
    for (value, count) in values.iter().flat_map(|value| [(*value, 0), (*value, u64::MAX)]) {
        let written = extreme_bundle(value, count);
        let (read, report) = write_read_and_report(&written);
        // Not-finite numbers come back as NaN; everything else exactly. Compared as the
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

/// The source's Q3: a direct-I/O scan reading 130 MiB/s from a volume fio measured at
/// 125 MiB/s is volume-bound; an older bundle without a baseline still loads, and says
/// the verdict is unknown.
#[test]
fn the_report_says_whether_a_scan_was_volume_bound() {
    let mut bundle = extreme_bundle(125.0, 7);
    let logs = &mut bundle.benchmark;
    logs.queries[0].query = "q3".to_string();
    logs.queries[0].samples[0].breakdown.read_mib_per_s = Some(130.0);
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
    // A damaged line that is not the last one is an error naming the file and line.
    std::fs::write(&journal, format!("not json\n{text}")).unwrap();
    let error = format!("{:#}", load_bundle::<LogsResults>(&dir).unwrap_err());
    assert!(error.contains(&format!("{}:1 is not a sample record", journal.display())), "{error}");
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
const OPEN_MAPS: [&str; 5] = [
    "session_settings",
    "benchmark.queries[].samples[].settings",
    "benchmark.queries[].samples[].stats.profile_events",
    "benchmark.queries[].samples[].stats.raw",
    ".stats.raw",
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

#[test]
fn every_field_of_a_bundle_is_documented() {
    let docs_path = chbench::files::workspace_root().join("docs/results.md");
    let docs = std::fs::read_to_string(&docs_path).unwrap();
    let mut paths = Vec::new();
    field_paths(&serde_json::to_value(extreme_bundle(1.5, 7)).unwrap(), "", &mut paths);
    paths.sort();
    paths.dedup();
    // A statistics record appears in several places and is documented once, as `stats.<field>`.
    let documented_as = |path: &String| match path.rsplit_once(".stats.") {
        Some((_, field)) => format!("stats.{field}"),
        None => path.clone(),
    };
    let missing: Vec<String> =
        paths.iter().map(documented_as).filter(|path| !docs.contains(&format!("`{path}`"))).collect();
    assert!(missing.is_empty(), "{} does not document these fields (as `path`): {missing:#?}", docs_path.display());
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

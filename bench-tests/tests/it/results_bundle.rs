//! Whatever the results writer produces, the reader and the report accept: bundles with
//! extreme, non-finite and missing values round-trip, a journal cut short by a kill is
//! read up to its last whole line, and a schema-1 bundle gets one line saying what to
//! do. Every field of every kind's example bundles (`Benchmark::examples`, each kind of the
//! registry) is documented, in docs/results.md and the kind's `docs/kinds/<kind>.md`. No
//! engine is needed: these bundles are built by hand.

use std::collections::BTreeMap;

use chbench::benchmarks::Benchmark;
use chbench::benchmarks::kinds::{KindVisitor, visit_kinds, write_report};
use chbench::benchmarks::logs::{LogsBenchmark, LogsBundle, LogsDataset, LogsQueryRuns, LogsResults, QueryVariant};
use chbench::benchmarks::parts::{FitQuality, PartsBenchmark, PartsBundle, PartsQueryRuns, PartsResults, PartsVariant};
use chbench::benchmarks::throughput::{ThroughputBenchmark, ThroughputBundle};
use chbench::query_runs::{QueryRuns, Sample};
use chbench::results::example::{example_sample as sample, example_stats as stats};
use chbench::results::{
    BundleWriter, ExistingFolder, KindResults, RESULTS_FILE, RunBundle, RunStatus, SAMPLES_FILE, STARTING, load_bundle,
};
use chbench::stats::{QueryStats, StatsSource};
use chbench::storage_baseline::{NOT_RECORDED_BEFORE, StorageBaselineRecord};

/// The logs kind's example bundle, every number `value` or `count`.
fn extreme_bundle(value: f64, count: u64) -> LogsBundle {
    LogsBenchmark::examples(value, count).remove(0)
}

/// The parts kind's first example bundle (the engine's counters known).
fn extreme_parts_bundle(value: f64, count: u64) -> PartsBundle {
    PartsBenchmark::examples(value, count).remove(0)
}

/// The parts kind's example on an engine whose counter list could not be read:
/// `engine_events` is unknown, with the reason.
fn unknown_events_parts_bundle() -> PartsBundle {
    PartsBenchmark::examples(1.5, 7).remove(1)
}

/// The throughput kind's example whose levels last `value` seconds.
fn extreme_throughput_bundle(value: f64, count: u64) -> ThroughputBundle {
    ThroughputBenchmark::examples(value, count).remove(0)
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

/// The numbers the round-trip tests fill bundles with: each of these floats (not finite,
/// extreme, zero of both signs, negative) with a count of 0 and of `u64::MAX`.
fn extreme_values() -> impl Iterator<Item = (f64, u64)> {
    [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MAX, f64::MIN_POSITIVE, 0.0, -0.0, -1.0]
        .into_iter()
        .flat_map(|value| [(value, 0), (value, u64::MAX)])
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
    for (value, count) in extreme_values() {
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
    for (value, count) in extreme_values() {
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
    for (value, count) in extreme_values() {
        let written = extreme_throughput_bundle(value, count);
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
    let first_query = bundle.benchmark.queries.remove(0);
    bundle.benchmark.queries.clear();
    let root = tempfile::tempdir().unwrap();
    let mut writer = BundleWriter::create(root.path(), bundle, ExistingFolder::Refuse).unwrap();
    writer
        .start_query(PartsQueryRuns {
            variant: PartsVariant { clients: 2, ..first_query.variant.clone() },
            samples: Vec::new(),
            answer: String::new(),
            ..first_query
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
        report.contains("- storage baseline (measured on the target's volume): sequential read 125.0 MiB/s"),
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
        report.contains(&format!(
            "- storage baseline (measured on the target's volume): unknown ({NOT_RECORDED_BEFORE})"
        ))
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

const STATS_RECORDS: [&str; 1] = ["benchmark.points[].builds[].insert"];

/// Fields whose values are names a reader must know: each value a bundle holds is
/// documented in its kind's section, as `value`.
const NAMED_VALUES: [&str; 14] = [
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
    "benchmark.levels[].decomposition.counted",
    "benchmark.rounds[].threads.state",
    "benchmark.rounds[].inserts_own.state",
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

/// The path a field is documented as: a statistics record's fields once, as `stats.<field>`.
fn documented_as(path: &str) -> String {
    let record_field = STATS_RECORDS.iter().find_map(|record| path.strip_prefix(record)?.strip_prefix('.'));
    match (record_field, path.rsplit_once(".stats.")) {
        (Some(field), _) | (None, Some((_, field))) => format!("stats.{field}"),
        (None, None) => path.to_string(),
    }
}

/// Each kind's example bundles as JSON, by kind, from the registry: a kind added to it is
/// in every test over this.
fn examples_of_every_kind(value: f64, count: u64) -> Vec<(&'static str, Vec<serde_json::Value>)> {
    struct Examples {
        value: f64,
        count: u64,
        of_kinds: Vec<(&'static str, Vec<serde_json::Value>)>,
    }
    impl KindVisitor for Examples {
        fn visit<B: Benchmark>(&mut self) {
            let examples = B::examples(self.value, self.count);
            assert!(!examples.is_empty(), "kind {} has no example bundle", <B::Results as KindResults>::KIND);
            let json = examples.iter().map(|bundle| serde_json::to_value(bundle).unwrap()).collect();
            self.of_kinds.push((<B::Results as KindResults>::KIND, json));
        }
    }
    let mut examples = Examples { value, count, of_kinds: Vec::new() };
    visit_kinds(&mut examples);
    examples.of_kinds
}

/// Every field of every kind's example bundles, which have every optional field present,
/// is documented: the envelope's and a statistics record's in docs/results.md, a kind's own
/// fields (and the names its fields hold) in `docs/kinds/<kind>.md`, which each kind of
/// the registry must have.
#[test]
fn every_field_of_a_bundle_is_documented() {
    let docs_root = chbench::files::workspace_root().join("docs");
    let docs = std::fs::read_to_string(docs_root.join("results.md")).unwrap();
    let mut missing = Vec::new();
    for (kind, bundles) in examples_of_every_kind(1.5, 7) {
        let kind_path = docs_root.join("kinds").join(format!("{kind}.md"));
        let Ok(section) = std::fs::read_to_string(&kind_path) else {
            missing.push(format!("{kind}: no {}", kind_path.display()));
            continue;
        };
        for bundle in &bundles {
            let mut paths = Vec::new();
            field_paths(bundle, "", &mut paths);
            for path in paths.iter().map(|path| documented_as(path)) {
                let own = path.starts_with("benchmark.") && path != "benchmark.kind";
                let (text, file) = if own { (&section, kind_path.as_path()) } else { (&docs, docs_root.as_path()) };
                if !text.contains(&format!("`{path}`")) {
                    missing.push(format!("{kind}: `{path}` (in {})", file.display()));
                }
            }
            let mut values = Vec::new();
            named_values(bundle, "", &mut values);
            for (path, value) in values {
                if !section.contains(&format!("`{value}`")) {
                    missing.push(format!("{kind}: `{path}` holds `{value}` (in {})", kind_path.display()));
                }
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "these fields and values are not documented: {missing:#?}");
}

/// Every kind's example bundles, with extreme, non-finite and missing values, come back as
/// written (through `results.json` and the journal; a non-finite number as unknown), and
/// their report shows no NaN or inf.
#[test]
fn every_kinds_examples_round_trip_and_report() {
    struct RoundTrip;
    impl KindVisitor for RoundTrip {
        fn visit<B: Benchmark>(&mut self) {
            let kind = <B::Results as KindResults>::KIND;
            for (value, count) in extreme_values() {
                for example in B::examples(value, count) {
                    // The SQL files an example names need not exist here (a checkout's).
                    let written = RunBundle { sql_files: Vec::new(), ..example };
                    let (read, report) = write_read_and_report(&written);
                    assert_eq!(
                        serde_json::to_value(&read).unwrap(),
                        serde_json::to_value(&written).unwrap(),
                        "{kind}: value {value}, count {count}"
                    );
                    let words: Vec<&str> = report.split(|c: char| !c.is_alphabetic()).collect();
                    assert!(
                        !words.contains(&"NaN") && !words.contains(&"inf"),
                        "{kind}: value {value} leaks into the report:\n{report}"
                    );
                }
            }
        }
    }
    visit_kinds(&mut RoundTrip);
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

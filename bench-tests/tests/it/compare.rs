//! The comparison of bundles, on bundles built by hand (no engine): the same bundle twice
//! is unchanged everywhere, a query made slower is flagged and explained by the events
//! that moved, bundles asked to do different things are refused (and compared with
//! `--force`, saying so), what is meant to differ is said, and the edges (one sample, a
//! query on one side, an incomplete run, an A/B bundle's variants) each get their answer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chbench::ab_variants::{AbRun, AbVariant};
use chbench::benchmarks::clickbench::{ClickBenchComparison, ClickBenchDataset, ClickBenchResults, ClickBenchVariant};
use chbench::benchmarks::kinds;
use chbench::benchmarks::logs::{LogsBundle, LogsDataset, LogsQueryRuns, LogsResults, QueryVariant};
use chbench::breakdown::TimeBreakdown;
use chbench::compare::report::markdown;
use chbench::compare::{CompareOptions, Compared, Comparison, PlanChange};
use chbench::machine::{LoadAverage, MachineInfo};
use chbench::plan::{IndexStage, TableRead};
use chbench::query_runs::{QueryRuns, Sample, SampleKind};
use chbench::results::{DONE, KindResults, RESULTS_FILE, RunBundle, RunStatus, SCHEMA_VERSION};
use chbench::settings::Settings;
use chbench::significance::Verdict;
use chbench::stats::{QueryStats, StatsSource};
use chbench::storage_baseline::StorageBaselineRecord;
use chbench::target_info::{TargetInfo, TargetKind};

const QUERIES: [&str; 3] = ["q1", "q2", "q3"];

/// A warm sample of `ms`, whose events say how it spent them: `cpu_share` of it on CPU.
fn sample(attempt: u32, ms: f64, cpu_share: f64, slots: u64) -> Sample {
    let us = (ms * 1e3) as u64;
    let cpu_us = (us as f64 * cpu_share) as u64;
    let profile_events = BTreeMap::from([
        ("RealTimeMicroseconds".to_string(), us),
        ("UserTimeMicroseconds".to_string(), cpu_us),
        ("ConcurrencyControlSlotsGranted".to_string(), slots),
        ("SelectedRows".to_string(), 1_000_000),
    ]);
    let stats = QueryStats {
        log_comment: format!("run/logs/q/{attempt}"),
        source: StatsSource::ResultAndEventsDelta,
        read_rows: 1_000_000,
        read_bytes: 8_000_000,
        result_rows: 1,
        server_duration_us: us,
        client_duration_us: us + 100,
        memory_usage: None,
        profile_events,
        raw: serde_json::Value::Null,
    };
    let breakdown = TimeBreakdown::of_record(&stats);
    Sample {
        kind: SampleKind::Warm,
        attempt,
        settings: Settings::new(),
        stats,
        breakdown,
        round_position: None,
        answer: None,
    }
}

/// `runs` warm samples around `ms`, spread by ±2 % in a fixed pattern.
fn runs_of(query: &str, ab_variant: Option<&str>, ms: f64, runs: u32, slots: u64) -> LogsQueryRuns {
    let samples = (1..=runs)
        .map(|attempt| sample(attempt, ms * (1.0 + 0.02 * (f64::from(attempt) * 2.4).sin()), 0.5, slots))
        .collect();
    LogsQueryRuns {
        query: query.to_string(),
        variant: QueryVariant::Default,
        ab_variant: ab_variant.map(str::to_string),
        plan: None,
        sql_file: format!("logs/queries/{query}.sql"),
        answer: "1\n".to_string(),
        samples,
    }
}

fn bundle(run_id: &str, queries: Vec<LogsQueryRuns>) -> LogsBundle {
    let load = LoadAverage { one: Some(0.1), five: Some(0.1), fifteen: Some(0.1) };
    LogsBundle {
        schema_version: SCHEMA_VERSION,
        run_id: run_id.to_string(),
        status: RunStatus::Complete,
        phase: DONE.to_string(),
        started_at: jiff::Timestamp::from_second(1_796_007_599).unwrap(),
        finished_at: Some(jiff::Timestamp::from_second(1_796_007_699).unwrap()),
        target: TargetInfo {
            kind: TargetKind::Embedded,
            engine_version: "26.7.3.1".to_string(),
            endpoint: "libchdb".to_string(),
            deployment: None,
            storage: None,
        },
        storage_baseline: StorageBaselineRecord::Unknown { reason: "none".to_string() },
        session_settings: Settings::session_defaults(),
        sql_files: QUERIES.iter().map(|query| format!("logs/queries/{query}.sql")).collect(),
        machine: Some(MachineInfo {
            cpu_model: "cpu".to_string(),
            logical_cores: 2,
            memory_bytes: 1 << 34,
            load_average_start: load,
            load_average_end: Some(load),
            other_chbench_processes: Vec::new(),
            others_cpu_cores: Some(0.01),
            others_cpu_unknown: None,
            noise: Vec::new(),
        }),
        error: None,
        ab_run: None,
        profiles: None,
        benchmark: LogsResults {
            dataset: LogsDataset { rows: 10_000_000, step_ms: 1, warm_runs: 50 },
            volume_limit_mib_per_s: None,
            ingest: None,
            storage: Vec::new(),
            zstd_reinsert: None,
            queries,
            bloom_filter: None,
            cost: None,
            run_time: None,
        },
    }
}

/// Three queries of 50 runs; `q3` takes `q3_ms` and is granted `q3_slots` slots.
fn three_queries(q3_ms: f64, q3_slots: u64) -> Vec<LogsQueryRuns> {
    vec![runs_of("q1", None, 10.0, 50, 4), runs_of("q2", None, 80.0, 50, 4), runs_of("q3", None, q3_ms, 50, q3_slots)]
}

/// `bundle` as a ClickBench bundle of the same queries and samples, whose comparison adds
/// ClickBench's sections (the relative score, the cost of a query-set run).
fn as_clickbench(bundle: LogsBundle) -> RunBundle<ClickBenchResults> {
    let queries = bundle
        .benchmark
        .queries
        .into_iter()
        .map(|runs| QueryRuns {
            query: runs.query,
            variant: ClickBenchVariant::Default,
            ab_variant: runs.ab_variant,
            plan: runs.plan,
            sql_file: runs.sql_file,
            answer: runs.answer,
            samples: runs.samples,
        })
        .collect();
    RunBundle {
        schema_version: bundle.schema_version,
        run_id: bundle.run_id,
        status: bundle.status,
        phase: bundle.phase,
        started_at: bundle.started_at,
        finished_at: bundle.finished_at,
        target: bundle.target,
        storage_baseline: bundle.storage_baseline,
        session_settings: bundle.session_settings,
        sql_files: bundle.sql_files,
        machine: bundle.machine,
        error: bundle.error,
        ab_run: bundle.ab_run,
        profiles: bundle.profiles,
        benchmark: ClickBenchResults {
            dataset: ClickBenchDataset::Shipped { rows: 2_000 },
            warm_ups: 1,
            runs: 10,
            max_threads: None,
            reference_answers: None,
            load: None,
            queries,
            checks: Vec::new(),
            totals: None,
        },
    }
}

/// A ClickBench comparison's own sections, from its JSON.
fn clickbench_sections(compared: &Compared) -> ClickBenchComparison {
    let json: serde_json::Value = serde_json::from_str(&compared.json().unwrap()).unwrap();
    serde_json::from_value(json["clickbench"].clone()).unwrap()
}

/// Writes `bundle` into `<root>/<run id>/` with its SQL files.
fn write<Results: KindResults>(root: &Path, bundle: &RunBundle<Results>) -> PathBuf {
    let dir = root.join(&bundle.run_id);
    for file in &bundle.sql_files {
        let path = dir.join("sql").join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("SELECT '{file}'\n")).unwrap();
    }
    std::fs::write(dir.join(RESULTS_FILE), serde_json::to_string_pretty(bundle).unwrap()).unwrap();
    dir
}

fn compare(dirs: &[PathBuf], options: &CompareOptions) -> Compared {
    kinds::compare(dirs, options).unwrap_or_else(|error| panic!("the comparison failed: {error:#}"))
}

fn verdicts(comparison: &Comparison) -> Vec<(String, Verdict)> {
    comparison.queries.iter().map(|query| (query.query.clone(), query.significance.verdict)).collect()
}

#[test]
fn the_same_bundle_twice_is_unchanged_everywhere() {
    let root = tempfile::tempdir().unwrap();
    let dir = write(root.path(), &bundle("a", three_queries(200.0, 4)));
    let compared = compare(&[dir.clone(), dir], &CompareOptions::default());
    let comparison = &compared.comparison;
    assert_eq!(
        verdicts(comparison),
        QUERIES.iter().map(|query| (query.to_string(), Verdict::Unchanged)).collect::<Vec<_>>()
    );
    assert!(comparison.differences.is_empty() && comparison.forced_differences.is_empty());
    assert_eq!(comparison.totals.geometric_mean_ratio, Some(1.0));
    assert_eq!(comparison.totals.gain, Some(0.0));
    assert!(comparison.queries.iter().all(|query| query.why.is_none()));
    assert!(markdown(&compared).contains("an A/A comparison"));
}

/// A kind that adds no sections to a comparison (`logs`) says nothing of what another
/// kind adds: no ClickBench relative score, no price, no rate per level.
#[test]
fn a_logs_comparison_says_nothing_about_clickbench_prices_or_levels() {
    let root = tempfile::tempdir().unwrap();
    let dir = write(root.path(), &bundle("a", three_queries(200.0, 4)));
    let compared = compare(&[dir.clone(), dir], &CompareOptions::default());
    let report = markdown(&compared);
    for words in ["ClickBench", "relative score", "Price-performance", "price", "cost", "QPS", "level"] {
        assert!(!report.contains(words), "{words:?} in: {report}");
    }
    let json = compared.json().unwrap();
    for field in ["clickbench", "throughput", "relative_score", "cost", "price", "levels", "basis"] {
        assert!(!json.contains(&format!("\"{field}\"")), "{field:?} in: {json}");
    }
    let sections = compared.sections();
    assert!(sections.headlines().is_empty() && sections.terminal_lines().is_empty());
    assert!(sections.regressions().is_empty() && sections.priced_node_types().is_none());
}

#[test]
fn a_slower_query_is_flagged_and_explained_by_what_moved() {
    let root = tempfile::tempdir().unwrap();
    let before = write(root.path(), &bundle("before", three_queries(200.0, 4)));
    let after = write(root.path(), &bundle("after", three_queries(400.0, 1)));
    let compared = compare(&[before, after], &CompareOptions::default());
    let comparison = &compared.comparison;
    let verdicts = verdicts(comparison);
    assert_eq!(verdicts[0].1, Verdict::Unchanged);
    assert_eq!(verdicts[1].1, Verdict::Unchanged);
    assert_eq!(verdicts[2], ("q3".to_string(), Verdict::Slower));
    assert_eq!(comparison.summary.slower, 1);
    let why = comparison.queries[2].why.as_ref().expect("a slower query says why");
    assert!(why.summary.starts_with("slower: "), "{}", why.summary);
    let moved: Vec<&str> = why.moved_events.iter().map(|event| event.event.as_str()).collect();
    assert!(moved.contains(&"ConcurrencyControlSlotsGranted"), "{moved:?}");
    assert!(moved.contains(&"RealTimeMicroseconds"), "{moved:?}");
    assert!(!moved.contains(&"SelectedRows"), "an event that did not move is not listed: {moved:?}");
    let slots = why.moved_events.iter().find(|event| event.event == "ConcurrencyControlSlotsGranted").unwrap();
    assert_eq!(slots.ratio, Some(0.25));
    // Sum of means: 290 ms against 490 ms (the pattern's spread averages out to about 0).
    let gain = comparison.totals.gain.unwrap();
    assert!((gain + 200.0 / 290.0).abs() < 0.01, "{gain}");
    let report = markdown(&compared);
    assert!(report.contains("**1 slower, 2 unchanged**"), "{report}");
    assert!(report.contains("## Why it changed"), "{report}");
}

#[test]
fn bundles_asked_to_do_different_things_are_refused_unless_forced() {
    let root = tempfile::tempdir().unwrap();
    let a = write(root.path(), &bundle("a", three_queries(200.0, 4)));
    let mut other = bundle("b", three_queries(200.0, 4));
    other.benchmark.dataset.rows = 1_000_000;
    other.session_settings = other.session_settings.with("max_threads", 1);
    let b = write(root.path(), &other);
    std::fs::write(b.join("sql/logs/queries/q2.sql"), "SELECT 2\n").unwrap();
    let error = format!("{:#}", kinds::compare(&[a.clone(), b.clone()], &CompareOptions::default()).unwrap_err());
    for expected in [
        "rows: 10000000 against 1000000",
        "sql/logs/queries/q2.sql differs",
        "session setting max_threads: default against 1",
        "--force",
    ] {
        assert!(error.contains(expected), "{expected:?} not in: {error}");
    }
    let forced_compared = compare(&[a, b], &CompareOptions { force: true, ..CompareOptions::default() });
    let forced = &forced_compared.comparison;
    assert_eq!(forced.forced_differences.len(), 3, "{:?}", forced.forced_differences);
    let report = markdown(&forced_compared);
    assert!(report.find("Compared with --force").unwrap() < report.find("## Queries").unwrap(), "{report}");
}

#[test]
fn what_a_comparison_is_for_is_said_and_caution_comes_first() {
    let root = tempfile::tempdir().unwrap();
    let a = write(root.path(), &bundle("a", three_queries(200.0, 4)));
    let mut other = bundle("b", three_queries(200.0, 4));
    other.target.engine_version = "26.5.1.1".to_string();
    other.status = RunStatus::Incomplete;
    other.phase = "queries".to_string();
    other.error = Some("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)".to_string());
    other.machine.as_mut().unwrap().noise = vec!["other processes used 1.2 cores".to_string()];
    // Stopped before q3 ran.
    other.benchmark.queries.pop();
    let b = write(root.path(), &other);
    let compared = compare(&[a, b], &CompareOptions::default());
    let comparison = &compared.comparison;
    assert_eq!(comparison.differences, vec!["engine version: 26.7.3.1 against 26.5.1.1".to_string()]);
    assert_eq!(comparison.warnings.len(), 3, "{:?}", comparison.warnings);
    assert!(comparison.warnings[0].contains("separate runs"), "{:?}", comparison.warnings);
    assert!(comparison.warnings[1].contains("incomplete") && comparison.warnings[1].contains("`queries`"));
    assert!(comparison.warnings[2].contains("not quiet"));
    assert_eq!(comparison.only_in_baseline, vec!["q3".to_string()]);
    assert_eq!(comparison.queries.len(), 2);
    let report = markdown(&compared);
    assert!(report.find("**Warning**").unwrap() < report.find("## Queries").unwrap());
    assert!(report.contains("Measured in a only, not compared: q3."), "{report}");
}

#[test]
fn one_sample_a_side_is_said_untestable_not_guessed() {
    let root = tempfile::tempdir().unwrap();
    let one = |run_id: &str, ms: f64| {
        let queries = QUERIES.iter().map(|query| runs_of(query, None, ms, 1, 4)).collect();
        write(root.path(), &bundle(run_id, queries))
    };
    let compared = compare(&[one("a", 10.0), one("b", 20.0)], &CompareOptions::default());
    let comparison = &compared.comparison;
    for query in &comparison.queries {
        assert_eq!(query.significance.verdict, Verdict::Untestable, "{}", query.query);
        assert!(query.significance.reason.is_some(), "an untestable verdict says why");
        assert_eq!(query.significance.ratio, Some(2.0), "the medians are still shown");
        assert!(query.why.is_none());
    }
}

/// An A/B bundle: every query in two variants, compared with each other.
fn ab_bundle(root: &Path) -> PathBuf {
    let mut queries = Vec::new();
    for query in QUERIES {
        let slow = if query == "q3" { 2.0 } else { 1.0 };
        queries.push(runs_of(query, Some("default"), 100.0, 50, 4));
        queries.push(runs_of(query, Some("one_thread"), 100.0 * slow, 50, if slow > 1.0 { 1 } else { 4 }));
        queries.push(runs_of(query, Some("same"), 100.0, 50, 4));
    }
    let mut ab = bundle("ab", queries);
    let variant = |name: &str, settings: Settings| AbVariant { name: name.to_string(), settings, engine_version: None };
    ab.ab_run = Some(AbRun {
        variants: vec![
            variant("default", Settings::new()),
            variant("one_thread", Settings::new().with("max_threads", 1)),
            variant("same", Settings::new()),
        ],
        seed: 7,
        rounds: 50,
    });
    write(root, &ab)
}

#[test]
fn one_ab_bundle_compares_its_variants() {
    let root = tempfile::tempdir().unwrap();
    let dir = ab_bundle(root.path());
    let compared = compare(std::slice::from_ref(&dir), &CompareOptions::default());
    let comparison = &compared.comparison;
    assert_eq!(comparison.baseline.ab_variant.as_deref(), Some("default"));
    assert_eq!(comparison.candidate.ab_variant.as_deref(), Some("one_thread"));
    assert_eq!(comparison.differences, vec!["setting max_threads: default against 1".to_string()]);
    assert_eq!(
        verdicts(comparison),
        vec![
            ("q1".to_string(), Verdict::Unchanged),
            ("q2".to_string(), Verdict::Unchanged),
            ("q3".to_string(), Verdict::Slower)
        ]
    );
    // One bundle: its warnings and refusals are not doubled.
    assert!(comparison.forced_differences.is_empty() && comparison.warnings.is_empty());

    let chosen = CompareOptions { variants: Some(("default".into(), "same".into())), ..CompareOptions::default() };
    let aa = compare(std::slice::from_ref(&dir), &chosen);
    assert!(aa.comparison.queries.iter().all(|query| query.significance.verdict == Verdict::Unchanged));

    let unknown = CompareOptions { variants: Some(("default".into(), "nope".into())), ..CompareOptions::default() };
    let error = format!("{:#}", kinds::compare(std::slice::from_ref(&dir), &unknown).unwrap_err());
    assert!(error.contains("no variant \"nope\"") && error.contains("default, one_thread, same"), "{error}");
}

#[test]
fn a_bundle_of_one_configuration_alone_is_refused_in_one_line() {
    let root = tempfile::tempdir().unwrap();
    let dir = write(root.path(), &bundle("a", three_queries(200.0, 4)));
    let error = format!("{:#}", kinds::compare(&[dir], &CompareOptions::default()).unwrap_err());
    assert!(error.contains("a run of one configuration") && error.contains("--variant"), "{error}");
}

#[test]
fn a_plan_that_prunes_differently_is_said_stage_by_stage() {
    let root = tempfile::tempdir().unwrap();
    let stage = |kind: &str, selected_granules| IndexStage {
        kind: kind.to_string(),
        name: None,
        initial_parts: 4,
        selected_parts: 4,
        initial_granules: 1221,
        selected_granules,
        applied_on_data_read: false,
    };
    let with_plan = |run_id: &str, granules| {
        let mut queries = three_queries(200.0, 4);
        for runs in &mut queries {
            runs.plan = Some(vec![TableRead {
                table: format!("chbench_{run_id}.logs"),
                projection: None,
                stages: vec![stage("PrimaryKey", if runs.query == "q2" { granules } else { 10 })],
            }]);
        }
        write(root.path(), &bundle(run_id, queries))
    };
    let compared = compare(&[with_plan("a", 12), with_plan("b", 3)], &CompareOptions::default());
    let comparison = &compared.comparison;
    assert_eq!(comparison.queries[0].plan, PlanChange::Same);
    assert_eq!(
        comparison.queries[1].plan,
        PlanChange::Changed {
            lines: vec![
                "PrimaryKey: 4/4 parts, 12/1221 granules -> PrimaryKey: 4/4 parts, 3/1221 granules".to_string()
            ]
        }
    );
    assert!(markdown(&compared).contains("- **q2**: PrimaryKey: 4/4 parts, 12/1221 granules ->"));
    let without = write(root.path(), &bundle("c", three_queries(200.0, 4)));
    let unknown = compare(&[with_plan("a", 12), without], &CompareOptions::default());
    assert!(matches!(unknown.comparison.queries[0].plan, PlanChange::Unknown { .. }));
}

#[test]
fn a_stopped_ab_run_compares_the_rounds_every_variant_completed() {
    let root = tempfile::tempdir().unwrap();
    let dir = ab_bundle(root.path());
    let path = dir.join(RESULTS_FILE);
    let mut stopped: LogsBundle = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // Stopped in round 51: the baseline measured, the others not yet.
    let extra = sample(51, 500.0, 0.5, 4);
    stopped.benchmark.queries[0].samples.push(extra);
    stopped.status = RunStatus::Incomplete;
    std::fs::write(&path, serde_json::to_string(&stopped).unwrap()).unwrap();
    let compared = compare(std::slice::from_ref(&dir), &CompareOptions::default());
    let comparison = &compared.comparison;
    let q1 = &comparison.queries[0];
    assert_eq!((q1.significance.baseline_samples, q1.significance.candidate_samples), (50, 50));
    assert_eq!(q1.significance.verdict, Verdict::Unchanged);
    assert_eq!(comparison.warnings.len(), 1, "{:?}", comparison.warnings);
}

#[test]
fn an_ab_bundle_against_a_run_of_one_configuration_is_one_line_saying_why() {
    let root = tempfile::tempdir().unwrap();
    let ab = ab_bundle(root.path());
    let plain = write(root.path(), &bundle("plain", three_queries(100.0, 4)));
    let error = format!("{:#}", kinds::compare(&[ab, plain], &CompareOptions::default()).unwrap_err());
    assert!(error.contains("measured no query in common"), "{error}");
    assert!(error.contains("compare its variants alone"), "{error}");
}

#[test]
fn a_copied_bundle_is_named_by_its_folder() {
    let root = tempfile::tempdir().unwrap();
    let original = write(root.path(), &bundle("run", three_queries(200.0, 4)));
    let copy = root.path().join("copy");
    std::fs::create_dir_all(copy.join("sql/logs/queries")).unwrap();
    for entry in ["results.json", "sql/logs/queries/q1.sql", "sql/logs/queries/q2.sql", "sql/logs/queries/q3.sql"] {
        std::fs::copy(original.join(entry), copy.join(entry)).unwrap();
    }
    let compared = compare(&[original, copy], &CompareOptions::default());
    let comparison = &compared.comparison;
    assert_eq!((comparison.baseline.label.as_str(), comparison.candidate.label.as_str()), ("run", "copy"));
}

/// `runs` with every sample's answer digested from `answer`.
fn answered(mut runs: LogsQueryRuns, answer: &str) -> LogsQueryRuns {
    for sample in &mut runs.samples {
        sample.answer = Some(chbench::answers::AnswerDigest::of_tab_separated(answer));
    }
    runs
}

#[test]
fn a_query_whose_answers_differ_is_never_faster_or_slower_and_is_left_out_of_the_totals() {
    let root = tempfile::tempdir().unwrap();
    let a = write(
        root.path(),
        &bundle(
            "a",
            vec![answered(runs_of("q1", None, 10.0, 20, 4), "1\n"), answered(runs_of("q2", None, 80.0, 20, 4), "2\n")],
        ),
    );
    // q1 answers otherwise on B, and is far "faster": it must not be called so.
    let b = write(
        root.path(),
        &bundle(
            "b",
            vec![
                answered(runs_of("q1", None, 1.0, 20, 4), "other\n"),
                answered(runs_of("q2", None, 80.0, 20, 4), "2\n"),
            ],
        ),
    );
    let compared = compare(&[a, b], &CompareOptions::default());
    let comparison = &compared.comparison;
    let q1 = &comparison.queries[0];
    assert_eq!(q1.significance.verdict, Verdict::AnswersDiffer);
    assert!(q1.significance.reason.as_deref().unwrap().contains("not one query's times"), "{:?}", q1.significance);
    assert!(q1.why.is_none());
    assert!(matches!(comparison.queries[1].answers, chbench::compare::AnswerComparison::Same { .. }));
    assert_eq!((comparison.summary.answers_differ, comparison.summary.faster), (1, 0));
    assert_eq!(comparison.totals.left_out, ["q1"]);
    assert_eq!(comparison.totals.queries, 1);
    assert!(markdown(&compared).contains("**answers differ**"));
    // Runs that disagree within one side are answers that differ too.
    let mut flaky = answered(runs_of("q1", None, 10.0, 20, 4), "1\n");
    flaky.samples[3].answer = Some(chbench::answers::AnswerDigest::of_tab_separated("3\n"));
    let c = write(root.path(), &bundle("c", vec![flaky]));
    let d = write(root.path(), &bundle("d", vec![answered(runs_of("q1", None, 10.0, 20, 4), "1\n")]));
    let compared = compare(&[c, d], &CompareOptions { force: true, ..CompareOptions::default() });
    let comparison = &compared.comparison;
    assert_eq!(comparison.queries[0].significance.verdict, Verdict::AnswersDiffer);
}

#[test]
fn the_relative_score_is_clickbenchs_shifted_ratio_of_hot_times_and_cost_follows_the_price() {
    let root = tempfile::tempdir().unwrap();
    let fixed = |query: &str, ms: f64| {
        let mut runs = runs_of(query, None, ms, 10, 4);
        for (index, sample) in runs.samples.iter_mut().enumerate() {
            // The fastest run is exactly `ms`; the others slower.
            sample.stats.server_duration_us = (ms * 1e3) as u64 + index as u64 * 1_000;
        }
        runs
    };
    let a = write(root.path(), &as_clickbench(bundle("a", vec![fixed("q1", 10.0), fixed("q2", 90.0)])));
    let b = write(root.path(), &as_clickbench(bundle("b", vec![fixed("q1", 30.0), fixed("q2", 40.0)])));
    let prices = (
        chbench::node_prices::PriceOverrides { side: Some(0.36), ..Default::default() },
        chbench::node_prices::PriceOverrides::default(),
    );
    let compared = compare(&[a, b], &CompareOptions { prices, ..CompareOptions::default() });
    let comparison = clickbench_sections(&compared);
    // (10 + 30) / (10 + 10) = 2 and (10 + 40) / (10 + 90) = 0.5: the geometric mean is 1.
    let score = comparison.relative_score.unwrap();
    assert!((score - 1.0).abs() < 1e-9, "{score}");
    assert_eq!(comparison.relative_score_queries, 2);
    // A: 0.36 $/h over its sum of means (two queries' means, 14.5 and 94.5 ms).
    let cost = &comparison.cost.baseline;
    let per_run = cost.usd_per_query_set_run.unwrap();
    assert!((per_run - (0.0145 + 0.0945) * 0.36 / 3600.0).abs() < 1e-12, "{per_run}");
    assert!((cost.usd_per_1000_queries.unwrap() - per_run / 2.0 * 1000.0).abs() < 1e-12);
    // B names no node type and got no price: unknown, with how to give one; never 0.
    let candidate = &comparison.cost.candidate;
    assert_eq!(candidate.usd_per_query_set_run, None);
    assert!(candidate.price.to_string().contains("--price-b"), "{}", candidate.price);
    assert!(markdown(&compared).contains("## Price-performance"));
}

#[test]
fn a_declared_node_type_prices_a_side_whose_bundle_names_none_from_the_table() {
    let root = tempfile::tempdir().unwrap();
    let a = write(root.path(), &as_clickbench(bundle("a", vec![runs_of("q1", None, 10.0, 10, 1)])));
    let b = write(root.path(), &as_clickbench(bundle("b", vec![runs_of("q1", None, 10.0, 10, 2)])));
    let declared = |node_type: &str| chbench::node_prices::PriceOverrides {
        declared_node_type: Some(node_type.to_string()),
        ..Default::default()
    };
    let options = CompareOptions { prices: (declared("c7g.2xlarge"), declared("c6i.2xlarge")), ..Default::default() };
    let comparison = clickbench_sections(&compare(&[a, b], &options));
    let table = |node_type: &str| {
        chbench::node_prices::NODE_PRICES.iter().find(|(name, _)| *name == node_type).map(|(_, price)| *price)
    };
    assert_eq!(comparison.cost.baseline.node_type.as_deref(), Some("c7g.2xlarge"));
    assert_eq!(comparison.cost.baseline.price.usd_per_hour(), table("c7g.2xlarge"));
    assert_eq!(comparison.cost.candidate.price.usd_per_hour(), table("c6i.2xlarge"));
    assert!(comparison.cost.candidate.usd_per_query_set_run.is_some());
}

/// An eks bundle whose storage baseline was measured on its node prices itself by the
/// instance type the baseline recorded; one measured on another node does not.
#[test]
fn an_eks_bundle_is_priced_by_the_instance_type_its_nodes_baseline_recorded() {
    let root = tempfile::tempdir().unwrap();
    let on_node = |run_id: &str, pod_node: &str, instance_type: &str| {
        let mut eks = bundle(run_id, vec![runs_of("q1", None, 10.0, 10, 1)]);
        eks.target.kind = TargetKind::Eks;
        eks.target.deployment = Some(chbench::target_info::KubernetesDeployment {
            namespace: "chbench".to_string(),
            pod: "clickhouse".to_string(),
            image: "clickhouse/clickhouse-server:26.3".to_string(),
            image_id: None,
            node: pod_node.to_string(),
            instance_type: None,
        });
        let fio = std::fs::read_to_string(chbench::files::workspace_root().join("fixtures/fio/fio-3.33.json")).unwrap();
        let device = chbench::storage_baseline::Device {
            variant: "eks-gp3".to_string(),
            description: "gp3".to_string(),
            node: "ip-10-0-1-5".to_string(),
            instance_type: Some(instance_type.to_string()),
        };
        let baseline = chbench::storage_baseline::parse_fio_output(&fio, device).unwrap();
        eks.storage_baseline = StorageBaselineRecord::Measured(Box::new(baseline));
        write(root.path(), &as_clickbench(eks))
    };
    let (a, b) = (on_node("a", "ip-10-0-1-5", "c7g.2xlarge"), on_node("b", "ip-10-0-9-9", "c6i.2xlarge"));
    let comparison = clickbench_sections(&compare(&[a, b], &CompareOptions::default()));
    let table = |node_type: &str| {
        chbench::node_prices::NODE_PRICES.iter().find(|(name, _)| *name == node_type).map(|(_, price)| *price)
    };
    assert_eq!(comparison.cost.baseline.node_type.as_deref(), Some("c7g.2xlarge"));
    assert_eq!(comparison.cost.baseline.price.usd_per_hour(), table("c7g.2xlarge"));
    // B's baseline is of another node than its pod's: it says nothing of B's node.
    assert_eq!(comparison.cost.candidate.node_type, None);
    assert_eq!(comparison.cost.candidate.price.usd_per_hour(), None);
}

/// A bundle measured under the query profiler (`--profile`) against one that was not: its
/// sampling costs time, which would read as the change, so the comparison says so.
#[test]
fn a_profiled_bundle_against_one_that_was_not_is_said_under_what_differs() {
    let root = tempfile::tempdir().unwrap();
    let a = write(root.path(), &bundle("a", three_queries(200.0, 4)));
    let mut profiled = bundle("b", three_queries(200.0, 4));
    profiled.profiles = Some(chbench::profiles::ProfileRecord {
        choice: chbench::profiles::ProfileChoice::Both,
        period_ns: chbench::profiles::PERIOD_NS,
        queries: Vec::new(),
        unknown: None,
    });
    let b = write(root.path(), &profiled);
    let compared = compare(&[a, b], &CompareOptions::default());
    assert_eq!(
        compared.comparison.differences,
        vec!["query profiler: not profiled against --profile both".to_string()]
    );
}

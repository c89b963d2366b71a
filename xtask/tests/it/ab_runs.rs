//! `cargo xtask bench logs --variant ...`: an A/B run measures its variants in turns on
//! one dataset and writes one bundle holding them all: a warm-up per variant, then rounds
//! in an order shuffled from the recorded seed, which the same seed replays; each
//! variant's settings reach its own statements only. Mistakes in `--variant` are one line
//! before the engine starts, a setting the engine does not know one line before anything
//! is measured, and SIGTERM keeps the rounds done.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use chbench::benchmarks::logs::{LogsBundle, LogsQueryRuns, LogsResults, QueryVariant};
use chbench::query_runs::SampleKind;
use chbench::results::{RunStatus, SAMPLES_FILE, load_bundle};
use chbench::settings::Settings;

use crate::common::{error_line, error_lines, xtask};

/// The second variant: one thread, and no skip indexes, so that its reads tell its
/// statements from the first's (the bloom filter's Q5 reads every row without its index).
const SECOND: &str = "b:max_threads=1,use_skip_indexes=0";

/// `cargo xtask bench logs` on the embedded engine, its bundle `run_id` under `results`.
fn logs_command(results: &Path, run_id: &str, flags: &[&str]) -> Command {
    let mut command = xtask();
    command
        .args(["bench", "logs", "--target", "embedded", "--run-id", run_id])
        .args(flags)
        .arg("--results-dir")
        .arg(results);
    command
}

fn small_ab_run(results: &Path, run_id: &str) -> LogsBundle {
    let flags = ["--rows", "100K", "--runs", "3", "--variant", "a:", "--variant", SECOND, "--seed", "7"];
    let output = logs_command(results, run_id, &flags).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    load_bundle(&results.join(run_id)).unwrap()
}

/// Every sample's place in its round, by (query, form, variant, attempt).
fn round_positions(bundle: &LogsBundle) -> BTreeMap<(String, String, String, u32), u32> {
    let mut positions = BTreeMap::new();
    for runs in &bundle.benchmark.queries {
        for sample in &runs.samples {
            let key = (
                runs.query.clone(),
                runs.variant.label().to_string(),
                runs.ab_variant.clone().unwrap(),
                sample.attempt,
            );
            positions.insert(key, sample.round_position.expect("an A/B sample has its place in its round"));
        }
    }
    positions
}

#[test]
fn an_interleaved_run_writes_every_variant_into_one_bundle_and_its_seed_replays_the_order() {
    let results = tempfile::tempdir().unwrap();
    let bundle = small_ab_run(results.path(), "ab");
    assert_eq!(bundle.status, RunStatus::Complete);
    let ab = bundle.ab_run.as_ref().expect("the bundle records the A/B run");
    assert_eq!((ab.seed, ab.rounds), (7, 3));
    let names: Vec<&str> = ab.variants.iter().map(|variant| variant.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let second = Settings::new().with("max_threads", 1).with("use_skip_indexes", 0);
    assert_eq!((&ab.variants[0].settings, &ab.variants[1].settings), (&Settings::new(), &second));
    let logs: &LogsResults = &bundle.benchmark;
    assert_eq!(logs.dataset.warm_runs, 3);

    // One query runs per (query, form, variant), the variants of a pass side by side.
    let forms: Vec<(&str, QueryVariant, Option<&str>)> =
        logs.queries.iter().map(|runs| (runs.query.as_str(), runs.variant, runs.ab_variant.as_deref())).collect();
    let mut expected = Vec::new();
    for (query, form) in [
        ("q1", QueryVariant::Default),
        ("q2", QueryVariant::Default),
        ("q3", QueryVariant::Default),
        ("q4", QueryVariant::Default),
        ("q5", QueryVariant::WithoutIndex),
        ("q5", QueryVariant::BloomFilter),
    ] {
        expected.extend([(query, form, Some("a")), (query, form, Some("b"))]);
    }
    assert_eq!(forms, expected);
    for runs in &logs.queries {
        let variant = ab.variants.iter().find(|variant| Some(&variant.name) == runs.ab_variant.as_ref()).unwrap();
        // One warm-up, then a warm sample per round, numbered by its round; no direct I/O.
        let kinds: Vec<(SampleKind, u32)> = runs.samples.iter().map(|sample| (sample.kind, sample.attempt)).collect();
        assert_eq!(
            kinds,
            [(SampleKind::WarmUp, 0), (SampleKind::Warm, 1), (SampleKind::Warm, 2), (SampleKind::Warm, 3)],
            "{} {:?} {}",
            runs.query,
            runs.variant,
            variant.name
        );
        assert!(runs.samples.iter().all(|sample| sample.settings == variant.settings));
        assert!(!runs.answer.is_empty(), "{} {}: no answer", runs.query, variant.name);
        let tag = format!("ab/logs/{}.{}/", scenario(runs), variant.name);
        assert!(runs.samples.iter().all(|sample| sample.stats.log_comment.starts_with(&tag)), "{tag}");
    }
    // Every round, warm-ups included, is a permutation of the variants.
    let positions = round_positions(&bundle);
    for ((query, form, variant, attempt), position) in &positions {
        if variant == "a" {
            let other = positions[&(query.clone(), form.clone(), "b".to_string(), *attempt)];
            let mut round = [*position, other];
            round.sort_unstable();
            assert_eq!(round, [0, 1], "{query} {form} round {attempt}");
        }
    }
    // Each variant's settings reach its statements alone, whichever ran first: without
    // skip indexes `b` reads every row, `a` after it still uses the bloom filter.
    let bloom = |name: &str| -> &LogsQueryRuns {
        logs.queries
            .iter()
            .find(|runs| runs.variant == QueryVariant::BloomFilter && runs.ab_variant.as_deref() == Some(name))
            .unwrap()
    };
    let rows = |name: &str| -> Vec<u64> { bloom(name).samples.iter().map(|sample| sample.stats.read_rows).collect() };
    assert!(rows("b").iter().all(|&read| read == 100_000), "{:?}", rows("b"));
    assert!(rows("a").iter().all(|&read| read * 2 < 100_000), "{:?}", rows("a"));
    assert_eq!(bloom("a").answer, bloom("b").answer);

    let report = std::fs::read_to_string(results.path().join("ab").join("report.md")).unwrap();
    assert!(
        report.contains("| query | form | rounds | a: warm median (min-max) | b: warm median (min-max) |"),
        "{report}"
    );
    assert!(report.contains("| q5 | bloom filter | 3 |"), "{report}");

    // The same seed, another run: the same order in every round of every query.
    let again = small_ab_run(results.path(), "ab-again");
    assert_eq!(round_positions(&again), positions);
}

/// The scenario part of a query runs' tags.
fn scenario(runs: &LogsQueryRuns) -> String {
    match runs.variant {
        QueryVariant::BloomFilter => format!("{}_bloom_filter", runs.query),
        _ => runs.query.clone(),
    }
}

/// Runs `cargo xtask bench logs` with an engine that does not exist: reaching it would be
/// its error. Returns the output after checking that no engine started and no bundle was
/// made.
fn refused(results: &Path, flags: &[&str]) -> Output {
    let output =
        logs_command(results, "refused", flags).env("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("chbench: target") && !stderr.contains("CHBENCH_LIBCHDB"), "the engine started: {stderr}");
    assert!(!results.join("refused").exists(), "a bundle was made");
    output
}

#[test]
fn mistakes_in_variants_are_one_line_each_before_the_engine_starts() {
    let results = tempfile::tempdir().unwrap();
    // The flag's own syntax: clap refuses it with its usage-error code.
    for (variant, said) in [
        ("a", "--variant \"a\" has no `:` after its name"),
        ("a b:", "\"a b\" is not a variant name; use letters, digits, `_` and `-`"),
        ("a:max_threads", "\"max_threads\" is not SETTING=VALUE"),
        ("a:max-threads=1", "\"max-threads\" is not a setting name"),
        ("a:max_threads=", "max_threads has no value"),
    ] {
        let output = refused(results.path(), &["--variant", "base:", "--variant", variant]);
        assert_eq!(output.status.code(), Some(2), "{variant}: {:?}", output.status);
        let errors = error_lines(&output);
        assert_eq!(errors.len(), 1, "{variant}: {errors:?}");
        assert!(errors[0].contains(said), "{variant}: {}", errors[0]);
    }
    // The list: checked with the run's other inputs.
    for (flags, said) in [
        (&["--variant", "a:max_threads=1"][..], "--variant a:max_threads=1 is the only variant"),
        (&["--variant", "a:", "--variant", "a:max_threads=1"][..], "--variant names a twice"),
        (
            &["--variant", "a:", "--variant", "old:engine_version=9.9"][..],
            "--variant old:engine_version=9.9: \"9.9\" is not a pinned engine version; the pinned ones: ",
        ),
        (&["--seed", "7"][..], "--seed 7 orders an A/B run's rounds: give two or more --variant flags too"),
    ] {
        let line = error_line(&refused(results.path(), flags));
        assert!(line.contains(said), "{flags:?}: {line}");
    }
}

/// A setting name the engine does not list, or a value it refuses, is one line naming the
/// variant, on the open target before any bundle is made.
#[test]
fn a_setting_the_engine_does_not_take_is_one_line_before_anything_is_measured() {
    let results = tempfile::tempdir().unwrap();
    for (variant, said) in [
        ("b:max_thread=1", "--variant b:max_thread=1: max_thread is not a setting of ClickHouse "),
        ("b:max_threads=lots", "--variant b:max_threads=lots: the engine refused its settings"),
    ] {
        let run_id = variant.replace([':', '='], "-");
        let output = logs_command(results.path(), &run_id, &["--rows", "1K", "--variant", "a:", "--variant", variant])
            .output()
            .unwrap();
        let line = error_line(&output);
        assert!(line.contains(said), "{variant}: {line}");
        // The cause alone, checked on the open target before any bundle is made.
        assert!(!line.contains("stopped during"), "{variant}: {line}");
        assert!(!results.path().join(&run_id).exists(), "{variant}: a bundle was made");
    }
}

/// SIGTERM in the middle of an interleaved query: the run ends with 130, and every round
/// done is in the bundle, each variant's samples in its own query runs.
#[test]
fn sigterm_during_interleaved_rounds_keeps_the_rounds_done() {
    let results = tempfile::tempdir().unwrap();
    let flags = ["--rows", "100K", "--runs", "100000", "--variant", "a:", "--variant", SECOND, "--seed", "3"];
    let stderr_file = results.path().join("stopped.stderr.txt");
    let mut child = logs_command(results.path(), "stopped", &flags)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_file).unwrap())
        .spawn()
        .unwrap();
    let dir = results.path().join("stopped");
    // Two warm-ups and five rounds of Q1.
    let journaled = || std::fs::read_to_string(dir.join(SAMPLES_FILE)).map_or(0, |text| text.lines().count());
    wait_for(&mut child, || journaled() >= 12);
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill -TERM failed");
    let code = child.wait().unwrap().code();
    let stderr = std::fs::read_to_string(&stderr_file).unwrap();
    assert_eq!(code, Some(130), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error: ")).collect();
    assert!(
        errors.len() == 1 && errors[0].ends_with("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"),
        "{stderr}"
    );

    let bundle: LogsBundle = load_bundle(&dir).unwrap();
    assert_eq!((bundle.status, bundle.phase.as_str()), (RunStatus::Incomplete, "queries"));
    assert_eq!(bundle.ab_run.as_ref().map(|ab| (ab.seed, ab.rounds)), Some((3, 100_000)));
    let q1: Vec<&LogsQueryRuns> = bundle.benchmark.queries.iter().filter(|runs| runs.query == "q1").collect();
    assert_eq!(q1.len(), 2, "{stderr}");
    let warm = |runs: &LogsQueryRuns| runs.warm_samples().count();
    assert!(q1.iter().all(|runs| runs.samples[0].kind == SampleKind::WarmUp && warm(runs) >= 5), "{stderr}");
    // The last round may be cut short: one variant ran in it, the other not yet.
    assert!(warm(q1[0]).abs_diff(warm(q1[1])) <= 1, "{} and {}", warm(q1[0]), warm(q1[1]));
    let positions = round_positions(&bundle);
    for round in 1..=warm(q1[0]).min(warm(q1[1])) as u32 {
        let place = |name: &str| positions[&("q1".to_string(), "default".to_string(), name.to_string(), round)];
        assert_ne!(place("a"), place("b"), "round {round}");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("**Incomplete run**") && report.contains("| q1 | default |"), "{report}");
}

fn wait_for(child: &mut Child, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !done() {
        assert!(Instant::now() < deadline, "the run never got there");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be interrupted");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Variants on two engine versions in one run: each runs in a worker of its version (the
/// run's own for the variant that names none) on a copy of the run's folder, both read
/// the same tables, the workers are not counted as other processes, and the comparison
/// says what differs.
#[test]
fn variants_on_two_engine_versions_run_in_workers_of_their_versions() {
    let results = tempfile::tempdir().unwrap();
    let flags = ["--rows", "100K", "--runs", "5", "--variant", "new:", "--variant", "old:engine_version=26.5.3"];
    let output = logs_command(results.path(), "versions", &flags).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ClickHouse 26.5.1.1") && stderr.contains("in engine worker pid"), "{stderr}");
    let dir = results.path().join("versions");
    let bundle: LogsBundle = load_bundle(&dir).unwrap();
    let logs = &bundle.benchmark;
    for query in ["q1", "q2", "q3", "q4", "q5"] {
        let of = |variant: &str| {
            logs.queries.iter().find(|runs| runs.query == query && runs.ab_variant.as_deref() == Some(variant)).unwrap()
        };
        let (new, old) = (of("new"), of("old"));
        assert_eq!(new.warm_samples().count(), 5, "{query}");
        assert_eq!(old.warm_samples().count(), 5, "{query}");
        // One dataset: both engines read the same rows and answer the same (but Q2's ties
        // and Q4's approximate quantiles, which may differ from run to run).
        if matches!(query, "q1" | "q3" | "q5") {
            assert_eq!(new.answer, old.answer, "{query}");
        }
        let rows = |runs: &LogsQueryRuns| runs.samples.iter().map(|sample| sample.stats.read_rows).max();
        assert_eq!(rows(new), rows(old), "{query}");
    }
    // The workers are this run's own: never counted as other processes (others, such as
    // this suite's other tests, may be).
    let workers: Vec<u32> = stderr
        .split("in engine worker pid ")
        .skip(1)
        .map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap())
        .collect();
    assert!(workers.len() >= 2, "{stderr}");
    let machine = bundle.machine.as_ref().unwrap();
    assert!(
        !machine.other_chbench_processes.iter().any(|process| workers.contains(&process.pid)),
        "the workers {workers:?} are this run's: {machine:?}"
    );
    // Its files go beside the run's bundle, never into the working folder.
    let compared =
        xtask().arg("compare").arg(&dir).arg("--json").arg("--results-dir").arg(results.path()).output().unwrap();
    assert!(compared.status.success(), "{}", String::from_utf8_lossy(&compared.stderr));
    let comparison: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
    assert_eq!(comparison["differences"][0], "engine version: 26.7.2.1 against 26.5.1.1 (engine 26.5.3)");
}

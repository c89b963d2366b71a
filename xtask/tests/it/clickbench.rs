//! `cargo xtask bench clickbench`: the shipped table's run keeps every sample with its
//! answer's digest, checks the answers before it counts a time, writes the answers a later
//! run checks against and the totals as the source reports them; a checkout's queries and
//! the official data's load, a query that errors failing the run (after the bundle) but not
//! stopping it; and every bad input one line before anything runs.

use std::path::Path;
use std::process::Output;

use chbench::benchmarks::clickbench::{
    ANSWERS_FILE, AnswerOutcome, ClickBenchBundle, ClickBenchDataset, MaxThreadsSource, ReferenceAnswers,
};
use chbench::query_runs::SampleKind;
use chbench::results::{RunStatus, load_bundle};

use crate::common::{error_line, workspace, xtask};

fn bench(results: &Path, run_id: &str, flags: &[&str]) -> Output {
    xtask()
        .args(["bench", "clickbench", "--target", "embedded", "--run-id", run_id])
        .args(flags)
        .arg("--results-dir")
        .arg(results)
        .output()
        .unwrap()
}

fn succeeded(output: &Output) {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn the_shipped_run_checks_every_answer_then_totals_and_a_reference_run_agrees() {
    let results = tempfile::tempdir().unwrap();
    succeeded(&bench(results.path(), "first", &["--rows", "20K", "--runs", "3"]));
    let bundle: ClickBenchBundle = load_bundle(&results.path().join("first")).unwrap();
    assert_eq!(bundle.status, RunStatus::Complete);
    let clickbench = &bundle.benchmark;
    assert_eq!(clickbench.dataset, ClickBenchDataset::Shipped { rows: 20_000 });
    assert_eq!(clickbench.max_threads.as_ref().unwrap().source, MaxThreadsSource::Engine);
    assert_eq!(clickbench.queries.iter().map(|runs| runs.query.as_str()).collect::<Vec<_>>(), ["q19", "q33", "q34"]);
    for runs in &clickbench.queries {
        let kinds: Vec<SampleKind> = runs.samples.iter().map(|sample| sample.kind).collect();
        assert_eq!(kinds, [SampleKind::WarmUp, SampleKind::Warm, SampleKind::Warm, SampleKind::Warm]);
        assert!(runs.samples.iter().all(|sample| sample.answer.as_ref().is_some_and(|answer| answer.rows == 10)));
    }
    assert!(clickbench.checks.iter().all(|check| check.outcome.passed()), "{:?}", clickbench.checks);
    let totals = clickbench.totals.as_ref().unwrap();
    assert_eq!((totals.queries, totals.failed.len()), (3, 0));
    // The hot sum is the fastest runs', the total the means': never above it.
    let (hot_sum, sum_of_means) = (totals.hot_sum_seconds.unwrap(), totals.sum_of_means_seconds.unwrap());
    assert!(hot_sum > 0.0 && hot_sum <= sum_of_means, "{totals:?}");
    let load = clickbench.load.as_ref().unwrap();
    assert_eq!(load.rows, Some(20_000));
    assert!(load.data_size_bytes.is_some_and(|bytes| bytes > 0));
    let answers_file = results.path().join("first").join(ANSWERS_FILE);
    let answers: ReferenceAnswers = serde_json::from_str(&std::fs::read_to_string(&answers_file).unwrap()).unwrap();
    assert_eq!(answers.queries.len(), 3);
    assert!(results.path().join("first/sql/clickbench/queries/q19.sql").is_file());

    // Another run on the same data, one thread, checked against the first's answers.
    let reference = answers_file.to_string_lossy().into_owned();
    let flags = ["--rows", "20K", "--runs", "1", "--max-threads", "1", "--reference-answers", &reference];
    succeeded(&bench(results.path(), "second", &flags));
    let second: ClickBenchBundle = load_bundle(&results.path().join("second")).unwrap();
    assert_eq!(second.benchmark.max_threads.as_ref().unwrap().value, "1");
    assert!(second.benchmark.queries[0].samples.iter().all(|sample| sample.settings.get("max_threads") == Some("1")));
    for check in &second.benchmark.checks {
        assert!(matches!(check.outcome, AnswerOutcome::Passed { matches_reference: true, .. }), "{check:?}");
    }

    // Another dataset's answers are refused before anything runs, in one line.
    let output = bench(results.path(), "other", &["--rows", "30K", "--runs", "1", "--reference-answers", &reference]);
    let line = error_line(&output);
    assert!(line.contains("answers of another dataset") && line.contains("20000 rows"), "{line}");
    assert!(!results.path().join("other").exists());

    // The same data with another answer on record: that query failed against the
    // reference, the run fails after its bundle is written, and its time is not counted.
    let mut edited = answers.clone();
    edited.queries.get_mut("q19").unwrap().checksum = "0000000000000000".to_string();
    let edited_file = results.path().join("edited-answers.json");
    std::fs::write(&edited_file, serde_json::to_string(&edited).unwrap()).unwrap();
    let edited_file = edited_file.to_string_lossy().into_owned();
    let output =
        bench(results.path(), "edited", &["--rows", "20K", "--runs", "1", "--reference-answers", &edited_file]);
    let line = error_line(&output);
    assert!(line.contains("failed its check") && line.contains("1 of 3 queries failed"), "{line}");
    let edited: ClickBenchBundle = load_bundle(&results.path().join("edited")).unwrap();
    let outcome = |query: &str| &edited.benchmark.checks.iter().find(|check| check.query == query).unwrap().outcome;
    assert!(matches!(outcome("q19"), AnswerOutcome::DiffersFromReference { .. }), "{:?}", outcome("q19"));
    assert!(matches!(outcome("q33"), AnswerOutcome::Passed { matches_reference: true, .. }));
    assert_eq!(edited.benchmark.totals.as_ref().unwrap().queries, 2);

    // A comparison calls the failed query failed and leaves it out of every total; the
    // threads the runs asked for differ, and it says so rather than refusing.
    let compare = |a: &str, b: &str| {
        let dirs = [results.path().join(a), results.path().join(b)];
        chbench::benchmarks::kinds::compare(&dirs, &chbench::compare::CompareOptions::default()).unwrap().comparison
    };
    let against_failed = compare("first", "edited");
    let q19 = against_failed.queries.iter().find(|query| query.query.starts_with("q19")).unwrap();
    assert_eq!(q19.significance.verdict, chbench::significance::Verdict::Failed);
    assert!(q19.significance.reason.as_deref().unwrap().contains("B: "), "{:?}", q19.significance.reason);
    assert_eq!((against_failed.summary.failed, against_failed.totals.queries), (1, 2));
    let one_thread = compare("first", "second");
    assert!(
        one_thread.differences.iter().any(|line| line.starts_with("max_threads: ") && line.ends_with(" against 1")),
        "{:?}",
        one_thread.differences
    );
}

#[test]
fn a_one_row_table_answers_one_row_per_query() {
    let results = tempfile::tempdir().unwrap();
    succeeded(&bench(results.path(), "one", &["--rows", "1", "--runs", "1", "--warm-ups", "0"]));
    let bundle: ClickBenchBundle = load_bundle(&results.path().join("one")).unwrap();
    for runs in &bundle.benchmark.queries {
        assert_eq!(runs.samples.len(), 1);
        assert_eq!(runs.samples[0].answer.as_ref().map(|answer| answer.rows), Some(1), "{}", runs.query);
    }
}

/// A checkout of the shipped table with `queries` as its queries.sql, and a TSV of two
/// rows of it: the shape of ClickBench's files, small.
fn checkout(dir: &Path, queries: &str) {
    std::fs::create_dir_all(dir.join("clickhouse")).unwrap();
    std::fs::copy(workspace().join("fixtures/clickbench/create.sql"), dir.join("clickhouse/create.sql")).unwrap();
    std::fs::write(dir.join("clickhouse/queries.sql"), queries).unwrap();
    let row = |id: u32| format!("{id}\t2013-07-01 00:0{id}:00\t{id}\t{id}\thttps://example.com/{id}\t0\t1920\t\n");
    std::fs::write(dir.join("hits.tsv"), row(1) + &row(2)).unwrap();
    std::fs::write(dir.join("short.tsv"), "1\thttps://example.com/\n").unwrap();
}

#[test]
fn a_checkouts_queries_run_on_the_loaded_file_and_a_query_that_errors_fails_the_run_after_the_bundle() {
    let results = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    checkout(
        dir.path(),
        "SELECT COUNT(*) FROM hits;\nSELECT URL, COUNT(*) AS c FROM hits GROUP BY URL ORDER BY URL;\nSELECT nosuch FROM hits;\n",
    );
    let (checkout, hits) = (dir.path().to_string_lossy().into_owned(), dir.path().join("hits.tsv"));
    let flags = ["--clickbench-dir", &checkout, "--hits-file", hits.to_str().unwrap(), "--runs", "2"];
    let line = error_line(&bench(results.path(), "co", &flags));
    assert!(line.contains("1 of 3 queries failed") && line.contains("queries.sql:3"), "{line}");
    let bundle: ClickBenchBundle = load_bundle(&results.path().join("co")).unwrap();
    assert_eq!(bundle.status, RunStatus::Complete);
    assert_eq!(bundle.benchmark.load.as_ref().unwrap().rows, Some(2));
    let outcomes: Vec<bool> = bundle.benchmark.checks.iter().map(|check| check.outcome.passed()).collect();
    assert_eq!(outcomes, [true, true, false]);
    assert_eq!(bundle.benchmark.totals.as_ref().unwrap().failed, ["q3"]);
    assert_eq!(bundle.benchmark.queries[0].answer, "2\n");
    // The checkout's files are in the bundle, at their path.
    let canonical = dir.path().canonicalize().unwrap();
    let kept = results.path().join("co/sql/outside").join(canonical.strip_prefix("/").unwrap());
    assert!(kept.join("clickhouse/queries.sql").is_file() && kept.join("clickhouse/create.sql").is_file());
}

/// ClickBench's own load reads its data partitioned (`hits_*.parquet`): a file name
/// pattern loads every file it matches, with the types ClickBench's Parquet files use
/// (times as Int64 seconds), converted by the checkout's table.
#[test]
fn a_hits_file_pattern_loads_every_part_it_matches() {
    let results = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    checkout(dir.path(), "SELECT COUNT(*) FROM hits;\nSELECT MIN(EventTime) FROM hits;\n");
    let mut engine = chbench::targets::open_target().unwrap();
    for part in 0..2 {
        let file = dir.path().join(format!("hits_{part}.parquet"));
        engine
            .execute(&format!(
                "INSERT INTO FUNCTION file('{}', Parquet, 'WatchID Int64, EventTime Int64, ClientIP Int32, UserID \
                 Int64, URL String, Refresh Int16, ResolutionWidth Int16, SearchPhrase String') SELECT number, \
                 1372636800 + number, 1, number, 'https://example.com/', 0, 1920, '' FROM numbers({part} * 10, 10)",
                file.display()
            ))
            .unwrap();
    }
    drop(engine);
    let pattern = dir.path().join("hits_*.parquet").to_string_lossy().into_owned();
    let checkout = dir.path().to_string_lossy().into_owned();
    succeeded(&bench(
        results.path(),
        "parts",
        &["--clickbench-dir", &checkout, "--hits-file", &pattern, "--runs", "2"],
    ));
    let bundle: ClickBenchBundle = load_bundle(&results.path().join("parts")).unwrap();
    assert_eq!(bundle.benchmark.load.as_ref().unwrap().rows, Some(20), "both parts");
    assert_eq!(bundle.benchmark.queries[0].answer, "20\n");
    assert_eq!(bundle.benchmark.queries[1].answer, "2013-07-01 00:00:00\n", "Int64 seconds as a TIMESTAMP");
}

#[test]
fn a_bad_checkout_or_hits_file_or_run_count_is_one_line_before_anything_runs() {
    let results = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    checkout(dir.path(), "SELECT COUNT(*) FROM hits;\n");
    let at = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let checkout = at("");
    let refused = |flags: &[&str], expected: &str| {
        let line = error_line(&bench(results.path(), "bad", flags));
        assert!(line.contains(expected), "{flags:?}: {line}");
        assert!(!results.path().join("bad").exists(), "{flags:?} left a bundle");
    };
    refused(&["--runs", "0"], "--runs 0 measures nothing");
    refused(&["--clickbench-dir", &at("nowhere"), "--hits-file", &at("hits.tsv")], "no such folder");
    refused(&["--clickbench-dir", &checkout], "--clickbench-dir and --hits-file go together");
    refused(&["--clickbench-dir", &checkout, "--hits-file", &at("none.parquet")], "none.parquet: no such file");
    refused(&["--clickbench-dir", &checkout, "--hits-file", &at("hits.csv")], "neither Parquet nor TSV");
    refused(
        &["--clickbench-dir", &checkout, "--hits-file", &at("short.tsv")],
        "2 columns a row, and create.sql declares 8",
    );
    std::fs::write(dir.path().join("clickhouse/queries.sql"), "\n").unwrap();
    refused(&["--clickbench-dir", &checkout, "--hits-file", &at("hits.tsv")], "holds no query");
    std::fs::write(dir.path().join("clickhouse/queries.sql"), "SELECT 1\nFROM hits;\n").unwrap();
    refused(
        &["--clickbench-dir", &checkout, "--hits-file", &at("hits.tsv")],
        "queries.sql:1: not one query on one line",
    );
    // Names and counts match, but a value create.sql's types cannot take: the first rows are
    // loaded into a scratch table before the run, so this is one line too, and no bundle.
    std::fs::write(dir.path().join("clickhouse/queries.sql"), "SELECT COUNT(*) FROM hits;\n").unwrap();
    let tsv = std::fs::read_to_string(dir.path().join("hits.tsv")).unwrap();
    std::fs::write(dir.path().join("typed.tsv"), tsv.replacen("1\t", "one\t", 1)).unwrap();
    refused(
        &["--clickbench-dir", &checkout, "--hits-file", &at("typed.tsv")],
        "typed.tsv: its first rows do not load into",
    );
    // The same in a Parquet file: a string column where create.sql declares WatchID a number.
    let parquet = at("typed.parquet");
    let mut engine = chbench::targets::open_target().unwrap();
    engine
        .execute(&format!(
            "INSERT INTO FUNCTION file('{parquet}', Parquet, 'WatchID String, EventTime DateTime, ClientIP Int32, \
             UserID Int64, URL String, Refresh Int16, ResolutionWidth Int16, SearchPhrase String') \
             SELECT 'not a number', now(), 1, 2, 'https://example.com/', 0, 1920, ''"
        ))
        .unwrap();
    drop(engine);
    let line = error_line(&bench(results.path(), "bad", &["--clickbench-dir", &checkout, "--hits-file", &parquet]));
    assert!(line.contains("typed.parquet: its first rows do not load into") && line.contains("create.sql"), "{line}");
    assert!(!results.path().join("bad").exists());
    std::fs::remove_file(dir.path().join("clickhouse/create.sql")).unwrap();
    refused(&["--clickbench-dir", &checkout, "--hits-file", &at("hits.tsv")], "clickhouse/create.sql: no such file");
}

/// A checkout's create.sql is guarded before anything of it runs, the hits file's first
/// rows tried included: a column DEFAULT that reads a host file, of a type the file's text
/// cannot take (so that running it would quote the file in the engine's error), is refused
/// at its line and the file is never read.
#[test]
fn a_checkouts_create_sql_is_guarded_before_the_hits_file_is_tried() {
    let results = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    checkout(dir.path(), "SELECT COUNT(*) FROM hits;\n");
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "the-host-file\n").unwrap();
    let create = std::fs::read_to_string(dir.path().join("clickhouse/create.sql")).unwrap();
    let poisoned = create.replacen(
        "URL TEXT NOT NULL,",
        &format!("URL TEXT NOT NULL DEFAULT toString(toUInt64(file('{}'))),", secret.display()),
        1,
    );
    assert_ne!(poisoned, create, "the shipped create.sql has a column `URL TEXT NOT NULL`");
    std::fs::write(dir.path().join("clickhouse/create.sql"), poisoned).unwrap();
    let (checkout, hits) = (dir.path().to_string_lossy().into_owned(), dir.path().join("hits.tsv"));
    let flags = ["--clickbench-dir", &checkout, "--hits-file", hits.to_str().unwrap(), "--runs", "1"];
    let output = bench(results.path(), "poisoned", &flags);
    let line = error_line(&output);
    assert!(line.contains("clickhouse/create.sql:") && line.contains("file(...) reaches outside"), "{line}");
    assert!(!String::from_utf8_lossy(&output.stderr).contains("the-host-file"));
    assert!(!results.path().join("poisoned").exists(), "no bundle is made");
}

//! `cargo xtask bench --matrix FILE` on the embedded engine, for real: a settings matrix and
//! an engine-version matrix each run their variants one after another, each into a bundle
//! of its own, and end with the comparison of the first against the others, which says
//! what the matrix declared differs instead of refusing it; a variant that fails does not
//! stop the others unless --fail-fast; SIGTERM half way keeps the variants done and names
//! the missing ones. Structure only: statuses, bundles, settings, versions, never a time.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use chbench::benchmarks::logs::LogsBundle;
use chbench::matrix::{MatrixSummary, SUMMARY_JSON, SUMMARY_MARKDOWN, VariantStatus};
use chbench::results::{RunStatus, load_bundle};

use crate::common::{error_line, xtask};

/// The kind and its flags every matrix here shares: the logs benchmark, small.
const SMALL_LOGS: &str = "kind = \"logs\"\nflags = [\"--rows\", \"100K\", \"--runs\", \"5\"]\ntarget = \"embedded\"\n";

fn matrix_file(folder: &Path, name: &str, variants: &str) -> PathBuf {
    let file = folder.join(format!("{name}.toml"));
    std::fs::write(&file, format!("{SMALL_LOGS}{variants}")).unwrap();
    file
}

fn matrix_command(results: &Path, file: &Path, matrix_id: &str, flags: &[&str]) -> Command {
    let mut command = xtask();
    command.args(["bench", "--matrix"]).arg(file).args(["--run-id", matrix_id, "--results-dir"]).arg(results);
    command.args(flags);
    command
}

fn run_matrix(results: &Path, file: &Path, matrix_id: &str, flags: &[&str]) -> Output {
    matrix_command(results, file, matrix_id, flags).output().unwrap()
}

fn summary(folder: &Path) -> MatrixSummary {
    serde_json::from_str(&std::fs::read_to_string(folder.join(SUMMARY_JSON)).unwrap()).unwrap()
}

fn statuses(summary: &MatrixSummary) -> Vec<(&str, VariantStatus)> {
    summary.variants.iter().map(|variant| (variant.name.as_str(), variant.status)).collect()
}

fn comparison(folder: &Path, name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(folder.join(name).join("compare.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|line| line.as_str().unwrap().to_string()).collect()
}

#[test]
fn a_settings_matrix_runs_each_variant_into_its_bundle_and_compares_them_saying_what_differs() {
    let results = tempfile::tempdir().unwrap();
    let file = matrix_file(
        results.path(),
        "threads",
        "[[variant]]\nname = \"default\"\n[[variant]]\nname = \"one_thread\"\nsettings = { max_threads = 1 }\n",
    );
    let output = run_matrix(results.path(), &file, "threads", &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let folder = results.path().join("threads");
    let summary = summary(&folder);
    assert_eq!(statuses(&summary), [("default", VariantStatus::Done), ("one_thread", VariantStatus::Done)]);
    let bundles: Vec<Option<&str>> = summary.variants.iter().map(|variant| variant.bundle.as_deref()).collect();
    assert_eq!(bundles, [Some("threads-default"), Some("threads-one_thread")]);
    let default: LogsBundle = load_bundle(&folder.join("threads-default")).unwrap();
    let one_thread: LogsBundle = load_bundle(&folder.join("threads-one_thread")).unwrap();
    assert_eq!((default.status, one_thread.status), (RunStatus::Complete, RunStatus::Complete));
    // The variant's setting is its run's session setting, recorded; the other has none.
    assert_eq!(default.session_settings.get("max_threads"), None);
    assert_eq!(one_thread.session_settings.get("max_threads"), Some("1"));
    // Every query of both ran, on the same rows.
    let rows = |bundle: &LogsBundle| -> Vec<(String, u64)> {
        let mut rows: Vec<(String, u64)> = bundle
            .benchmark
            .queries
            .iter()
            .map(|runs| (runs.query.clone(), runs.samples.iter().map(|sample| sample.stats.read_rows).max().unwrap()))
            .collect();
        rows.sort();
        rows
    };
    assert_eq!(rows(&default), rows(&one_thread));
    // The comparison: the declared difference said, nothing refused.
    assert_eq!(summary.comparisons.len(), 1);
    let compared = &summary.comparisons[0];
    assert_eq!((compared.baseline.as_str(), compared.candidate.as_str()), ("default", "one_thread"));
    assert_eq!(compared.folder.as_deref(), Some("compare-default-vs-one_thread"));
    let json = comparison(&folder, "compare-default-vs-one_thread");
    assert_eq!(strings(&json["forced_differences"]), Vec::<String>::new());
    assert!(strings(&json["differences"]).contains(&"session setting max_threads: default against 1".to_string()));
    assert!(!json["queries"].as_array().unwrap().is_empty());
    let markdown = std::fs::read_to_string(folder.join(SUMMARY_MARKDOWN)).unwrap();
    assert!(markdown.contains("| one_thread | max_threads=1 | done | threads-one_thread |"), "{markdown}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("matrix: {}", folder.join(SUMMARY_MARKDOWN).display())), "{stdout}");
}

#[test]
fn an_engine_version_matrix_runs_each_variant_on_its_engine_and_compares_them() {
    let results = tempfile::tempdir().unwrap();
    let file = matrix_file(
        results.path(),
        "versions",
        "[[variant]]\nname = \"v26_7\"\n[[variant]]\nname = \"v26_5\"\nengine_version = \"26.5.3\"\n",
    );
    let output = run_matrix(results.path(), &file, "versions", &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let folder = results.path().join("versions");
    let summary = summary(&folder);
    assert_eq!(statuses(&summary), [("v26_7", VariantStatus::Done), ("v26_5", VariantStatus::Done)]);
    let new: LogsBundle = load_bundle(&folder.join("versions-v26_7")).unwrap();
    let old: LogsBundle = load_bundle(&folder.join("versions-v26_5")).unwrap();
    assert_eq!((new.target.engine_version.as_str(), old.target.engine_version.as_str()), ("26.7.2.1", "26.5.1.1"));
    assert_eq!(new.session_settings, old.session_settings);
    let json = comparison(&folder, "compare-v26_7-vs-v26_5");
    assert_eq!(strings(&json["forced_differences"]), Vec::<String>::new());
    assert!(strings(&json["differences"]).contains(&"engine version: 26.7.2.1 against 26.5.1.1".to_string()));
}

/// Three variants, the second with a value the engine refuses.
const ONE_BAD: &str = "[[variant]]\nname = \"default\"\n[[variant]]\nname = \"bad\"\nsettings = { max_threads = \
                       \"many\" }\n[[variant]]\nname = \"one_thread\"\nsettings = { max_threads = 1 }\n";

#[test]
fn a_variant_that_fails_does_not_stop_the_others_and_the_run_fails_naming_it() {
    let results = tempfile::tempdir().unwrap();
    let file = matrix_file(results.path(), "one_bad", ONE_BAD);
    let output = run_matrix(results.path(), &file, "one_bad", &[]);
    let line = error_line(&output);
    assert!(
        line.starts_with("error: matrix one_bad: 1 of 3 variants failed or did not finish (bad: bench: "),
        "{line}"
    );
    assert!(line.contains("max_threads"), "{line}");
    let folder = results.path().join("one_bad");
    let summary = summary(&folder);
    assert_eq!(
        statuses(&summary),
        [("default", VariantStatus::Done), ("bad", VariantStatus::Failed), ("one_thread", VariantStatus::Done)]
    );
    let bad = &summary.variants[1];
    assert!(bad.error.as_deref().unwrap().starts_with("bench: "), "{bad:?}");
    // The others are compared; the failed one is not.
    let compared: Vec<(&str, &str)> =
        summary.comparisons.iter().map(|c| (c.baseline.as_str(), c.candidate.as_str())).collect();
    assert_eq!(compared, [("default", "one_thread")]);
    assert!(folder.join("compare-default-vs-one_thread").join("compare.md").is_file());
}

/// A variant whose benchmark ran to its end but failed its own check (here ClickBench
/// queries that error on the variant's setting) is failed, and still compared: its bundle is
/// complete, and those queries are `failed` in the comparison.
#[test]
fn a_variant_that_failed_its_check_with_a_complete_bundle_is_still_compared() {
    let results = tempfile::tempdir().unwrap();
    let file = results.path().join("checked.toml");
    std::fs::write(
        &file,
        "kind = \"clickbench\"\nflags = [\"--rows\", \"10K\", \"--runs\", \"5\"]\ntarget = \"embedded\"\n\
         [[variant]]\nname = \"default\"\n[[variant]]\nname = \"one_row\"\n\
         settings = { max_rows_to_group_by = 1, group_by_overflow_mode = \"throw\" }\n",
    )
    .unwrap();
    let output = run_matrix(results.path(), &file, "checked", &[]);
    let line = error_line(&output);
    assert!(line.contains("1 of 2 variants failed or did not finish (one_row: bench: "), "{line}");
    let folder = results.path().join("checked");
    let summary = summary(&folder);
    assert_eq!(statuses(&summary), [("default", VariantStatus::Done), ("one_row", VariantStatus::Failed)]);
    let compared = comparison(&folder, "compare-default-vs-one_row");
    let verdicts: Vec<&str> = compared["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|query| query["significance"]["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["failed"; 3], "each of Q19, Q33, Q34 groups more than one row: {compared:#}");
}

#[test]
fn fail_fast_stops_at_the_first_variant_that_fails_and_names_the_ones_it_left() {
    let results = tempfile::tempdir().unwrap();
    let file = matrix_file(results.path(), "fast", ONE_BAD);
    let output = run_matrix(results.path(), &file, "fast", &["--fail-fast"]);
    let line = error_line(&output);
    assert!(line.starts_with("error: matrix fast: 2 of 3 variants failed or did not finish (bad: bench: "), "{line}");
    assert!(!line.contains("  "), "{line}");
    // The variant's error is said once as it ends, and once in the matrix's last line.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches("cannot apply `SET max_threads").count(), 2, "{stderr}");
    assert!(line.contains("one_thread: --fail-fast: variant bad failed"), "{line}");
    let summary = summary(&results.path().join("fast"));
    assert_eq!(
        statuses(&summary),
        [("default", VariantStatus::Done), ("bad", VariantStatus::Failed), ("one_thread", VariantStatus::Missing)]
    );
    assert_eq!(summary.variants[2].bundle, None);
    assert!(summary.comparisons.is_empty(), "{:?}", summary.comparisons);
    assert!(!results.path().join("fast").join("fast-one_thread").exists());
}

/// SIGTERM once the first variant is done: the variant running stops the normal way (its
/// bundle kept, incomplete), the rest never start, the summary names them, exit 130.
#[test]
fn sigterm_half_way_keeps_the_variants_done_and_names_the_missing() {
    stop_half_way("-TERM");
}

/// SIGHUP (a closed terminal, a dropped SSH session) stops a matrix as SIGTERM does: it
/// passes the stop on to its variant, waits for it, and records it as interrupted.
#[test]
fn sighup_half_way_stops_the_matrix_as_sigterm_does() {
    stop_half_way("-HUP");
}

/// Three variants of a slow logs run: once `variant`'s run has measured something (its
/// journal), the matrix is running it. Returns the matrix, its folder and its stderr's file.
fn matrix_running(results: &Path, matrix_id: &str, variant: &str) -> (std::process::Child, PathBuf, PathBuf) {
    let three = "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nsettings = { max_threads = 1 }\n\
                 [[variant]]\nname = \"c\"\nsettings = { max_threads = 2 }\n";
    let file = results.join(format!("{matrix_id}.toml"));
    let slow = "kind = \"logs\"\nflags = [\"--rows\", \"100K\", \"--runs\", \"100\"]\ntarget = \"embedded\"\n";
    std::fs::write(&file, format!("{slow}{three}")).unwrap();
    let stderr_file = results.join(format!("{matrix_id}.stderr.txt"));
    let mut child = matrix_command(results, &file, matrix_id, &[])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_file).unwrap())
        .spawn()
        .unwrap();
    let folder = results.join(matrix_id);
    let samples = folder.join(format!("{matrix_id}-{variant}")).join(chbench::results::SAMPLES_FILE);
    let deadline = Instant::now() + Duration::from_secs(300);
    while !samples.is_file() {
        assert!(Instant::now() < deadline, "variant {variant} never started measuring");
        assert!(child.try_wait().unwrap().is_none(), "the matrix ended before it could be interrupted");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, folder, stderr_file)
}

/// `signal` (as `kill` takes it) while the second of three variants runs.
fn stop_half_way(signal: &str) {
    let results = tempfile::tempdir().unwrap();
    let (mut child, folder, stderr_file) = matrix_running(results.path(), "stopped", "b");
    let sent = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(sent.success(), "kill {signal} failed");
    let code = child.wait().unwrap().code();
    let stderr = std::fs::read_to_string(&stderr_file).unwrap();
    assert_eq!(code, Some(130), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    // One signal, one "stopping" line: the variant's own, which it passed on, is not relayed.
    assert_eq!(stderr.matches("chbench: stopping: ").count(), 1, "{stderr}");
    assert!(errors[0].starts_with("error: matrix stopped stopped: the variants done are kept in"), "{stderr}");
    assert!(
        errors[0].contains("not finished: b, c")
            && errors[0].ends_with("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"),
        "{stderr}"
    );
    let summary = summary(&folder);
    assert!(summary.interrupted && summary.finished_at.is_some());
    assert_eq!(
        statuses(&summary),
        [("a", VariantStatus::Done), ("b", VariantStatus::Interrupted), ("c", VariantStatus::Missing)]
    );
    assert_eq!(summary.variants[2].bundle, None);
    // What b measured is kept, as an interrupted bench keeps it.
    let b: LogsBundle = load_bundle(&folder.join("stopped-b")).unwrap();
    assert_eq!(b.status, RunStatus::Incomplete);
    let a: LogsBundle = load_bundle(&folder.join("stopped-a")).unwrap();
    assert_eq!(a.status, RunStatus::Complete);
    let markdown = std::fs::read_to_string(folder.join(SUMMARY_MARKDOWN)).unwrap();
    assert!(markdown.contains("**Interrupted**") && markdown.contains("Not finished: b, c."), "{markdown}");
}

/// A matrix killed outright (SIGKILL: no code of its runs) leaves no variant running:
/// the variant is told its parent is gone (SIGTERM), stops the normal way and keeps its
/// bundle, marked interrupted; the summary says it was running.
#[test]
#[cfg(target_os = "linux")]
fn a_killed_matrix_leaves_no_variant_running() {
    let results = tempfile::tempdir().unwrap();
    let (mut child, folder, stderr_file) = matrix_running(results.path(), "killed", "a");
    let variants = children_of(child.id());
    assert_eq!(variants.len(), 1, "the matrix runs one variant at a time: {variants:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while runs(variants[0]) {
        assert!(Instant::now() < deadline, "variant a (pid {}) still runs after its matrix was killed", variants[0]);
        std::thread::sleep(Duration::from_millis(50));
    }
    let a: LogsBundle = load_bundle(&folder.join("killed-a")).unwrap();
    assert_eq!(a.status, RunStatus::Incomplete);
    let stderr = std::fs::read_to_string(&stderr_file).unwrap();
    assert_eq!(a.error.as_deref(), Some(chbench::interrupt::Interrupted.to_string().as_str()), "{stderr}");
    assert!(a.finished_at.is_some(), "{stderr}");
    assert!(!folder.join("killed-b").exists());
    let summary = summary(&folder);
    assert_eq!(
        statuses(&summary),
        [("a", VariantStatus::Running), ("b", VariantStatus::Missing), ("c", VariantStatus::Missing)]
    );
    assert_eq!(summary.variants[0].bundle.as_deref(), Some("killed-a"));
}

/// The processes whose parent is `pid` (Linux's /proc).
#[cfg(target_os = "linux")]
fn children_of(pid: u32) -> Vec<u32> {
    let children = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flat_map(|task| {
        let children = std::fs::read_to_string(task.unwrap().path().join("children")).unwrap_or_default();
        children.split_whitespace().map(|child| child.parse::<u32>().unwrap()).collect::<Vec<_>>()
    });
    children.collect()
}

/// Whether `pid` runs: an ended process whose new parent has not reaped it yet (a
/// zombie) does not.
#[cfg(target_os = "linux")]
fn runs(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command's closing parenthesis.
    stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
}

#[test]
fn a_bad_matrix_command_line_or_file_is_one_line_before_anything_runs() {
    let results = tempfile::tempdir().unwrap();
    let file = matrix_file(results.path(), "m", "[[variant]]\nname = \"a\"\n");
    let line = error_line(&run_matrix(results.path(), &file, "m", &[]));
    assert!(
        line.starts_with(&format!("error: {}:4: a matrix compares at least two variants", file.display())),
        "{line}"
    );
    let two = matrix_file(results.path(), "two", "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n");
    let line = error_line(&run_matrix(results.path(), &two, "two", &["--rows", "1M"]));
    assert!(
        line.starts_with("error: --rows with --matrix: the kind, its flags, settings, engine versions and storage"),
        "{line}"
    );
    let line = error_line(&run_matrix(results.path(), &two, "two", &["--setting", "max_threads=1"]));
    assert!(line.starts_with("error: --setting with --matrix"), "{line}");
    // Storage profiles are the variants': not the command line's, nor the environment's.
    let line = error_line(&run_matrix(results.path(), &two, "two", &["--storage", "gp3"]));
    assert!(line.starts_with("error: --storage with --matrix"), "{line}");
    let output = matrix_command(results.path(), &two, "two", &[]).env("CHBENCH_STORAGE", "gp3").output().unwrap();
    let line = error_line(&output);
    assert!(line.starts_with("error: CHBENCH_STORAGE with --matrix: a matrix's storage profiles are its variants'"));
    let bad_profile = matrix_file(
        results.path(),
        "profile",
        "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nstorage = \"iops=0\"\n",
    );
    let line = error_line(&run_matrix(results.path(), &bad_profile, "profile", &[]));
    assert!(
        line.starts_with(&format!(
            "error: {}:8: variant \"b\": storage \"iops=0\": iops=0 is not a limit above 0",
            bad_profile.display()
        )),
        "{line}"
    );
    // --profile in the flags needs a server's profiler: refused at the flags' line.
    let profiled = results.path().join("profiled.toml");
    std::fs::write(
        &profiled,
        "kind = \"logs\"\nflags = [\"--profile\", \"real\"]\ntarget = \"embedded\"\n[[variant]]\nname = \"a\"\n\
         [[variant]]\nname = \"b\"\nsettings = { max_threads = 1 }\n",
    )
    .unwrap();
    let line = error_line(&run_matrix(results.path(), &profiled, "profiled", &[]));
    assert!(
        line.starts_with(&format!(
            "error: {}:2: flags: --profile real: target embedded cannot sample stacks",
            profiled.display()
        )),
        "{line}"
    );
    // The clients in a cluster on a target in none: refused at the flags' line too, before
    // any variant runs.
    let in_cluster = results.path().join("in_cluster.toml");
    std::fs::write(
        &in_cluster,
        "kind = \"throughput\"\nflags = [\"--load-from\", \"cluster\"]\ntarget = \"embedded\"\n[[variant]]\n\
         name = \"a\"\n[[variant]]\nname = \"b\"\nsettings = { max_threads = 1 }\n",
    )
    .unwrap();
    let line = error_line(&run_matrix(results.path(), &in_cluster, "in_cluster", &[]));
    assert!(
        line.starts_with(&format!(
            "error: {}:2: flags: --load-from cluster: target embedded runs no load beside its engine",
            in_cluster.display()
        )),
        "{line}"
    );
    assert!(!results.path().join("in_cluster").exists());
    let missing = results.path().join("missing.toml");
    let line = error_line(&run_matrix(results.path(), &missing, "x", &[]));
    assert!(line.starts_with(&format!("error: cannot read the matrix file {}", missing.display())), "{line}");
    // --target is one of the matrix's run flags: the file is read (and found missing).
    let line = error_line(&run_matrix(results.path(), &missing, "x", &["--target", "embedded"]));
    assert!(line.starts_with(&format!("error: cannot read the matrix file {}", missing.display())), "{line}");
    // --fail-fast belongs to --matrix.
    let output = xtask().args(["bench", "--fail-fast"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--matrix"));
    assert!(!results.path().join("two").exists() && !results.path().join("m").exists());
    assert!(!results.path().join("profiled").exists());
}

#[test]
fn a_setting_flag_is_checked_and_recorded_in_a_plain_bench_too() {
    let results = tempfile::tempdir().unwrap();
    let bench = |flags: &[&str]| {
        xtask()
            .args(["bench", "logs", "--target", "embedded", "--rows", "100K", "--runs", "1", "--results-dir"])
            .arg(results.path())
            .args(flags)
            .output()
            .unwrap()
    };
    let line = error_line(&bench(&["--setting", "max_threads"]));
    assert_eq!(line, "error: --setting \"max_threads\" is not NAME=VALUE; write e.g. --setting max_threads=1");
    let line = error_line(&bench(&["--setting", "max_threads=1", "--setting", "max_threads=2"]));
    assert_eq!(line, "error: --setting max_threads is given twice; give it once");
    let output = bench(&["--setting", "max_threads=2", "--run-id", "two_threads"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bundle: LogsBundle = load_bundle(&results.path().join("two_threads")).unwrap();
    assert_eq!(bundle.session_settings.get("max_threads"), Some("2"));
    assert_eq!(bundle.session_settings.get("use_query_cache"), Some("0"), "the defaults stay");
}

//! `cargo xtask bench` writes a results bundle as it goes: a finished run is complete
//! and reports; a killed or interrupted run leaves a valid, incomplete bundle with every
//! sample it measured; two runs never share a folder; a run beside another says the
//! machine was not quiet. A run leaves no engine folder behind, except a killed one
//! until the next start.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use chbench::benchmarks::logs::{IngestPath, LogsBundle, LogsResults, calibration_rows};
use chbench::results::{RunStatus, SAMPLES_FILE, load_bundle};
use chbench::targets::embedded::storage_dir_of_process;

use crate::common::{error_lines, xtask};

fn logs(bundle: &LogsBundle) -> &LogsResults {
    &bundle.benchmark
}

/// The raw engine and the harness take turns on a bounded sample before the full ingest
/// runs once; the bundle holds the run's wall time and its statements' engine time.
#[test]
fn the_ingest_is_calibrated_in_turns_on_a_sample_and_the_run_time_is_recorded() {
    let results = tempfile::tempdir().unwrap();
    let output = xtask()
        .args(["bench", "--target", "embedded", "--rows", "400K", "--runs", "1", "--run-id", "calibrated"])
        .arg("--results-dir")
        .arg(results.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let dir = results.path().join("calibrated");
    let bundle = load_bundle::<LogsResults>(&dir).unwrap();
    let ingest = logs(&bundle).ingest.as_ref().unwrap();
    let calibration = ingest.calibration.as_ref().expect("the ingest was calibrated");
    assert_eq!(calibration.sample_rows, calibration_rows(400_000));
    assert_eq!(calibration.sample_rows, 100_000);
    use IngestPath::{Harness as H, RawEngine as R};
    let order: Vec<IngestPath> = calibration.runs.iter().map(|run| run.path).collect();
    assert_eq!(order, [R, H, H, R, H, R, R, H]);
    assert_eq!(calibration.harness_over_raw.len(), 4);
    assert!(calibration.harness_over_raw.iter().all(Option::is_some), "{:?}", calibration.harness_over_raw);
    let raw = ingest.raw_engine.as_ref().unwrap();
    assert!(calibration.runs.iter().any(|run| run.path == R && run.timing.seconds == raw.seconds));
    // The full ingest ran once, through the harness, into the table the rest measured.
    let harness = ingest.harness.as_ref().unwrap();
    assert_eq!(harness.rows, 400_000);
    assert_eq!(harness.stats.log_comment, "calibrated/logs/ingest/1");

    let time = logs(&bundle).run_time.as_ref().expect("the run time is recorded");
    assert_eq!(time.statements_without_engine_time, 0);
    assert!(time.statements > 100, "{time:?}");
    // Each statement's engine time is inside the call's, and the calls follow each other.
    let (engine, client, wall) =
        (time.engine_seconds.unwrap(), time.client_seconds.unwrap(), time.wall_seconds.unwrap());
    assert!(0.0 < engine && engine <= client, "{time:?}");
    assert!(client <= wall, "{time:?}");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("harness over raw") && report.contains("Wall time over engine time: "), "{report}");
}

#[test]
fn a_finished_run_is_complete_round_trips_and_reports() {
    let results = tempfile::tempdir().unwrap();
    let child = xtask()
        .args(["bench", "--target", "embedded", "--rows", "200K", "--runs", "2", "--run-id", "small"])
        .arg("--results-dir")
        .arg(results.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!storage_dir_of_process(pid).exists(), "the run left its engine folder");
    let dir = results.path().join("small");
    let bundle = load_bundle::<LogsResults>(&dir).unwrap();
    assert_eq!(bundle.status, RunStatus::Complete);
    assert_eq!(bundle.target.engine_version.split('.').count(), 4);
    let logs = logs(&bundle);
    assert_eq!(logs.ingest.as_ref().unwrap().harness.as_ref().unwrap().rows, 200_000);
    assert_eq!(logs.storage.len(), 2);
    // Q1-Q5, then Q5 with the bloom filter; a direct-I/O run and two warm runs each.
    let queries: Vec<_> = logs.queries.iter().map(|runs| (runs.query.as_str(), runs.samples.len())).collect();
    assert_eq!(queries, [("q1", 3), ("q2", 3), ("q3", 3), ("q4", 3), ("q5", 3), ("q5", 3)]);
    assert!(logs.bloom_filter.is_some() && logs.cost.is_some());
    let machine = bundle.machine.as_ref().expect("the machine is recorded");
    assert!(machine.logical_cores >= 1 && machine.memory_bytes > 0 && machine.load_average_end.is_some());
    // Every sample keeps its raw statistics.
    assert!(logs.queries.iter().flat_map(|runs| &runs.samples).all(|sample| !sample.stats.raw.is_null()));
    // The typed bundle survives a round trip through JSON unchanged.
    let text = serde_json::to_string(&bundle).unwrap();
    assert_eq!(serde_json::from_str::<LogsBundle>(&text).unwrap(), bundle);
    for file in ["report.md", "storage.svg", "queries.svg", "breakdown.svg", "sql/logs/generator.sql"] {
        assert!(dir.join(file).is_file(), "{file} is missing from the bundle");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("the ClickHouse on EKS field benchmark") && !report.contains("Incomplete run"));
}

#[test]
fn a_killed_run_leaves_a_valid_incomplete_bundle_with_what_it_measured() {
    let (bundle, pid) = interrupt_after_ingest("killed", |child| child.kill().unwrap());
    assert!(bundle.finished_at.is_none() && bundle.error.is_none());
    // A killed process runs no code: its engine folder stays until the next start
    // (here, or any test process's), which removes it and later its own.
    let folder = tempfile::tempdir().unwrap();
    let query = folder.path().join("one.sql");
    std::fs::write(&query, "SELECT 1").unwrap();
    let next = xtask().args(["measure", "--target", "embedded"]).arg(&query).stdout(Stdio::null()).spawn().unwrap();
    let next_pid = next.id();
    let status = next.wait_with_output().unwrap().status;
    assert!(status.success(), "{status:?}");
    assert!(!storage_dir_of_process(pid).exists(), "the next start left the killed run's folder");
    assert!(!storage_dir_of_process(next_pid).exists(), "the next start left its own folder");
}

#[test]
fn ctrl_c_leaves_a_valid_incomplete_bundle_with_what_it_measured() {
    let (bundle, pid) = interrupt_after_ingest("interrupted", ctrl_c);
    // Ctrl-C stops the run at its next statement, through the normal way out: the
    // bundle says when and why it stopped, and the engine's folder is gone.
    assert!(bundle.finished_at.is_some());
    let error = bundle.error.unwrap_or_default();
    assert!(error.ends_with("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"), "{error}");
    assert!(!storage_dir_of_process(pid).exists(), "the interrupted run left its engine folder");
}

/// As a terminal's Ctrl-C does.
fn ctrl_c(child: &mut Child) {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill -INT failed");
}

/// SIGKILL, then the engine folder the killed process could not remove (the next start
/// would; this test leaves nothing behind).
fn kill(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(storage_dir_of_process(child.id()));
}

/// Starts a run, waits until its ingest is recorded, interrupts it with `interrupt`,
/// then checks the bundle it left and that the report renders from it. Returns the
/// bundle and the run's process id.
fn interrupt_after_ingest(run_id: &str, interrupt: impl FnOnce(&mut std::process::Child)) -> (LogsBundle, u32) {
    let results = tempfile::tempdir().unwrap();
    let mut child = xtask()
        .args(["bench", "--target", "embedded", "--rows", "4M", "--runs", "3", "--run-id", run_id])
        .arg("--results-dir")
        .arg(results.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dir = results.path().join(run_id);
    let deadline = Instant::now() + Duration::from_secs(300);
    while !ingest_recorded(&dir) {
        assert!(Instant::now() < deadline, "the run never recorded its ingest");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be interrupted");
        std::thread::sleep(Duration::from_millis(50));
    }
    interrupt(&mut child);
    let status = child.wait().unwrap();
    assert!(!status.success(), "the interrupted run should not succeed: {status:?}");

    let bundle = load_bundle::<LogsResults>(&dir).expect("an interrupted run leaves a readable bundle");
    assert_eq!(bundle.status, RunStatus::Incomplete);
    assert_eq!(logs(&bundle).ingest.as_ref().unwrap().harness.as_ref().unwrap().rows, 4_000_000);
    // The report renders from what there is, and says the run is incomplete.
    let output = xtask().args(["report", run_id, "--results-dir"]).arg(results.path()).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("**Incomplete run**"), "{report}");
    (bundle, child.id())
}

fn ingest_recorded(dir: &Path) -> bool {
    load_bundle::<LogsResults>(dir)
        .is_ok_and(|bundle| logs(&bundle).ingest.as_ref().is_some_and(|ingest| ingest.harness.is_some()))
}

/// A run that would take days: Q1 over and over. Returns it once `samples` of its Q1
/// samples are on disk.
fn endless_run(results: &Path, run_id: &str, samples: usize) -> (Child, PathBuf) {
    let mut child = xtask()
        .args(["bench", "--target", "embedded", "--rows", "1M", "--runs", "100000", "--run-id", run_id])
        .arg("--results-dir")
        .arg(results)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let dir = results.join(run_id);
    let deadline = Instant::now() + Duration::from_secs(300);
    let journaled = |dir: &Path| std::fs::read_to_string(dir.join(SAMPLES_FILE)).map_or(0, |text| text.lines().count());
    while journaled(&dir) < samples {
        assert!(Instant::now() < deadline, "the run never measured {samples} samples");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be interrupted");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, dir)
}

fn q1_samples(bundle: &LogsBundle) -> usize {
    bundle.benchmark.queries.iter().find(|runs| runs.query == "q1").map_or(0, |runs| runs.samples.len())
}

#[test]
fn ctrl_c_in_the_middle_of_a_query_keeps_its_samples_says_where_and_reports() {
    stop_in_the_middle_of_a_query("ctrl-c", "-INT");
}

/// A closed terminal or a dropped SSH session (SIGHUP) stops a run as Ctrl-C does.
#[test]
fn sighup_in_the_middle_of_a_query_stops_as_ctrl_c_does() {
    stop_in_the_middle_of_a_query("sighup", "-HUP");
}

/// The signal a matrix's variant gets when its matrix dies comes once per thread of the
/// dying matrix (the kernel hands the variant from thread to thread): however often it
/// comes, it is one request to stop, and the run stops the normal way.
#[test]
fn the_parent_death_signal_many_times_is_one_stop() {
    stop_in_the_middle_of_a_query("parent-gone", "-USR1,-USR1,-USR1");
}

/// `signals` (as `kill` takes one, `,` between several sent in a row) once 20 samples of
/// Q1 are on disk: the run stops the normal way, says so once, keeps the samples and
/// reports.
fn stop_in_the_middle_of_a_query(run_id: &str, signals: &str) {
    let results = tempfile::tempdir().unwrap();
    let (child, dir) = endless_run(results.path(), run_id, 20);
    for signal in signals.split(',') {
        let sent = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
        assert!(sent.success(), "kill {signal} failed");
    }
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    assert!(!storage_dir_of_process(pid).exists(), "the interrupted run left its engine folder");
    // 128 + SIGINT, as a shell reports a command stopped by Ctrl-C, whichever signal it was.
    assert_eq!(output.status.code(), Some(130), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches(chbench::interrupt::STOPPING_LINE).count(), 1, "{stderr}");
    let errors = error_lines(&output);
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains(&format!("what it measured is in {}", dir.display())), "{stderr}");
    assert!(
        errors[0].contains("report.md") && errors[0].ends_with("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"),
        "{stderr}"
    );
    // The interruption is not blamed on the query it came before.
    assert!(!errors[0].contains(".sql"), "{stderr}");
    let bundle = load_bundle::<LogsResults>(&dir).unwrap();
    assert_eq!(bundle.status, RunStatus::Incomplete);
    assert_eq!(bundle.phase, "queries");
    assert!(q1_samples(&bundle) >= 20, "only {} samples kept", q1_samples(&bundle));
    // Everything is in results.json now; the journal is gone.
    assert!(!dir.join(SAMPLES_FILE).exists());
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("**Incomplete run**") && report.contains("| q1 | default |"), "{report}");
}

#[test]
fn a_kill_in_the_middle_of_a_query_keeps_every_sample_journaled() {
    let results = tempfile::tempdir().unwrap();
    let (mut child, dir) = endless_run(results.path(), "killed-in-q1", 20);
    kill(&mut child);
    let bundle = load_bundle::<LogsResults>(&dir).unwrap();
    assert_eq!(bundle.status, RunStatus::Incomplete);
    assert!(q1_samples(&bundle) >= 20, "only {} samples kept", q1_samples(&bundle));
    // The bundle's folder, as the run printed it, works as well as its id.
    let output = xtask().arg("report").arg(&dir).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn a_run_beside_another_chbench_run_warns_that_the_machine_was_not_quiet() {
    let results = tempfile::tempdir().unwrap();
    let (mut busy, _) = endless_run(results.path(), "busy", 1);
    let output = small_run(results.path(), "beside");
    ctrl_c(&mut busy);
    busy.wait().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let busy_pid = format!("pid {}", busy.id());
    assert!(
        stderr.contains("warning: another chbench process is running (xtask, ") && stderr.contains(&busy_pid),
        "{stderr}"
    );
    assert!(stderr.contains("warning: the machine was not quiet: other chbench processes ran"), "{stderr}");
    let bundle = load_bundle::<LogsResults>(&results.path().join("beside")).unwrap();
    let machine = bundle.machine.unwrap();
    assert!(machine.other_chbench_processes.iter().any(|process| process.pid == busy.id()), "{machine:?}");
    assert!(!machine.quiet());
    let report = std::fs::read_to_string(results.path().join("beside").join("report.md")).unwrap();
    assert!(report.contains("**Warning: the machine was not quiet.**"), "{report}");
}

/// A bench run small enough to take seconds.
fn small_run(results: &Path, run_id: &str) -> Output {
    xtask()
        .args(["bench", "--target", "embedded", "--rows", "1K", "--runs", "1", "--run-id", run_id])
        .arg("--results-dir")
        .arg(results)
        .output()
        .unwrap()
}

#[test]
fn two_runs_with_the_same_run_id_get_one_folder_and_one_clear_error() {
    let results = tempfile::tempdir().unwrap();
    let start = || {
        let mut command = xtask();
        command
            .args(["bench", "--target", "embedded", "--rows", "1K", "--runs", "1", "--run-id", "twice"])
            .arg("--results-dir")
            .arg(results.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command.spawn().unwrap()
    };
    let (first, second) = (start(), start());
    let outputs = [first.wait_with_output().unwrap(), second.wait_with_output().unwrap()];
    let winners = outputs.iter().filter(|output| output.status.success()).count();
    assert_eq!(winners, 1, "exactly one run should get the folder");
    let loser = outputs.iter().find(|output| !output.status.success()).unwrap();
    let stderr = String::from_utf8_lossy(&loser.stderr);
    let errors = error_lines(loser);
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("twice already exists; choose another run id"), "{stderr}");
    assert_eq!(load_bundle::<LogsResults>(&results.path().join("twice")).unwrap().status, RunStatus::Complete);
}

#[test]
fn runs_started_together_without_a_run_id_get_folders_of_their_own() {
    let results = tempfile::tempdir().unwrap();
    let start = || {
        xtask()
            .args(["bench", "--target", "embedded", "--rows", "1K", "--runs", "1", "--results-dir"])
            .arg(results.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (start(), start());
    for output in [first.wait_with_output().unwrap(), second.wait_with_output().unwrap()] {
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let folders: Vec<_> = std::fs::read_dir(results.path()).unwrap().flatten().collect();
    assert_eq!(folders.len(), 2);
    for folder in folders {
        assert_eq!(load_bundle::<LogsResults>(&folder.path()).unwrap().status, RunStatus::Complete);
    }
}

#[test]
fn a_run_on_compact_parts_reports_column_sizes_as_unknown_not_zero() {
    let results = tempfile::tempdir().unwrap();
    let output = small_run(results.path(), "compact");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bundle = load_bundle::<LogsResults>(&results.path().join("compact")).unwrap();
    for snapshot in &logs(&bundle).storage {
        // 1,000 rows make compact parts: no per-column sizes, but the table's are known.
        assert!(snapshot.columns.is_empty() && snapshot.compact_parts > 0, "{snapshot:?}");
        assert!(snapshot.columns_note.as_ref().unwrap().contains("compact"), "{snapshot:?}");
        assert!(snapshot.compressed_bytes() > 0 && snapshot.compression_ratio().is_some(), "{snapshot:?}");
    }
    let share = logs(&bundle).bloom_filter.as_ref().unwrap().index_share_of_table().unwrap();
    assert!(share > 0.0 && share < 1.0, "the index is {share} of the table");
    let report = std::fs::read_to_string(results.path().join("compact").join("report.md")).unwrap();
    assert!(report.contains("per column: all ") && report.contains("are compact"), "{report}");
    assert!(!report.contains("0 B (0.00x)") && !report.contains("0.00 B (0.00x)"), "{report}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("are compact"));
}

#[test]
fn a_run_of_one_row_completes_and_reports() {
    let results = tempfile::tempdir().unwrap();
    let output = xtask()
        .args(["bench", "--target", "embedded", "--rows", "1", "--runs", "1", "--run-id", "one"])
        .arg("--results-dir")
        .arg(results.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bundle = load_bundle::<LogsResults>(&results.path().join("one")).unwrap();
    assert_eq!(bundle.status, RunStatus::Complete);
    assert_eq!(logs(&bundle).ingest.as_ref().unwrap().harness.as_ref().unwrap().rows, 1);
}

#[test]
fn a_missing_bundle_is_named() {
    let results = tempfile::tempdir().unwrap();
    let output = xtask().args(["report", "nope", "--results-dir"]).arg(results.path()).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no results bundle") && stderr.contains("nope"), "{stderr}");
}

#[test]
fn a_run_beside_a_busy_process_measures_the_cpu_it_took() {
    // Not this tool: a shell spinning on one core.
    let mut busy = Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
    let results = tempfile::tempdir().unwrap();
    let output = xtask()
        .args(["bench", "--target", "embedded", "--rows", "1M", "--runs", "3", "--run-id", "busy-cpu"])
        .arg("--results-dir")
        .arg(results.path())
        .output()
        .unwrap();
    busy.kill().unwrap();
    busy.wait().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let machine = load_bundle::<LogsResults>(&results.path().join("busy-cpu")).unwrap().machine.unwrap();
    // A whole core was taken for the whole run; other tests may take more.
    let others = machine.others_cpu_cores.expect("measured on the embedded engine");
    assert!(others > chbench::machine::QUIET_OTHERS_CPU_CORES, "others used {others} cores");
    assert!(!machine.quiet() && machine.noise.iter().any(|reason| reason.contains("other processes used")));
}

/// SIGTERM while the ingest statement runs cancels it: the run ends at once with 130 (not
/// after the statement, minutes at the source's scale), the bundle is finished as
/// interrupted during the ingest, and the cancelled statement's figure is not recorded
/// (the statement that ran to its end would have been).
#[test]
fn sigterm_during_the_ingest_cancels_the_statement_and_keeps_the_bundle() {
    let results = tempfile::tempdir().unwrap();
    let run_id = "sigterm-ingest";
    let mut child = xtask()
        .args(["bench", "--target", "embedded", "--rows", "20M", "--runs", "1", "--run-id", run_id])
        .arg("--results-dir")
        .arg(results.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // The raw ingest is writing its first parts.
    let deadline = Instant::now() + Duration::from_secs(300);
    while !writing_parts(&storage_dir_of_process(pid)) {
        assert!(Instant::now() < deadline, "the run never started its ingest");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be interrupted");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill -TERM failed");
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(!storage_dir_of_process(pid).exists(), "the interrupted run left its engine folder");
    let bundle = load_bundle::<LogsResults>(&results.path().join(run_id)).unwrap();
    assert_eq!((bundle.status, bundle.phase.as_str()), (RunStatus::Incomplete, "ingest"));
    assert!(
        bundle.error.as_deref().unwrap_or_default().ends_with("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"),
        "{stderr}"
    );
    let raw = logs(&bundle).ingest.as_ref().and_then(|ingest| ingest.raw_engine.as_ref());
    assert!(raw.is_none(), "the raw ingest ran to its end: {raw:?}");
}

/// Whether an engine folder holds a part being written or written (`tmp_insert_...`, or
/// a part name ending in `_0`) of any table.
fn writing_parts(folder: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(folder) else { return false };
    entries.flatten().any(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        is_dir && (name.starts_with("tmp_insert_") || name.ends_with("_1_1_0") || writing_parts(&entry.path()))
    })
}

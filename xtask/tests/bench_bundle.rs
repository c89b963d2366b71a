//! `cargo xtask bench` writes a results bundle as it goes: a finished run is complete
//! and reports; a killed run leaves a valid, incomplete bundle with what it measured.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bench_tests::results::{RunStatus, load_bundle};

fn xtask() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    command.env_remove("CHBENCH_TARGET");
    command
}

#[test]
fn a_finished_run_is_complete_round_trips_and_reports() {
    let results = tempfile::tempdir().unwrap();
    let output = xtask()
        .args(["bench", "--target", "embedded", "--rows", "200K", "--runs", "2", "--run-id", "small"])
        .arg("--results-dir")
        .arg(results.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let dir = results.path().join("small");
    let bundle = load_bundle(&dir).unwrap();
    assert_eq!(bundle.status, RunStatus::Complete);
    assert_eq!(bundle.target.engine_version.split('.').count(), 4);
    assert_eq!(bundle.ingest.as_ref().unwrap().rows, 200_000);
    assert_eq!(bundle.storage.len(), 2);
    // Q1-Q5, then Q5 with the bloom filter; a direct-I/O run and two warm runs each.
    let queries: Vec<_> = bundle.queries.iter().map(|runs| (runs.query.as_str(), runs.samples.len())).collect();
    assert_eq!(queries, [("q1", 3), ("q2", 3), ("q3", 3), ("q4", 3), ("q5", 3), ("q5", 3)]);
    assert!(bundle.bloom_filter.is_some() && bundle.cost.is_some());
    // Every sample keeps its raw statistics.
    assert!(bundle.queries.iter().flat_map(|runs| &runs.samples).all(|sample| !sample.stats.raw.is_null()));
    // The typed bundle survives a round trip through JSON unchanged.
    let text = serde_json::to_string(&bundle).unwrap();
    assert_eq!(serde_json::from_str::<bench_tests::results::RunBundle>(&text).unwrap(), bundle);
    for file in ["report.md", "storage.svg", "queries.svg", "breakdown.svg", "sql/logs/generator.sql"] {
        assert!(dir.join(file).is_file(), "{file} is missing from the bundle");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("source: m5.xlarge") && !report.contains("Incomplete run"));
}

#[test]
fn a_killed_run_leaves_a_valid_incomplete_bundle_with_what_it_measured() {
    interrupt_after_ingest("killed", |child| child.kill().unwrap());
}

#[test]
fn ctrl_c_leaves_a_valid_incomplete_bundle_with_what_it_measured() {
    interrupt_after_ingest("interrupted", |child| {
        let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
        assert!(status.success(), "kill -INT failed");
    });
}

/// Starts a run, waits until its ingest is recorded, interrupts it with `interrupt`,
/// then checks the bundle it left and that the report renders from it.
fn interrupt_after_ingest(run_id: &str, interrupt: impl FnOnce(&mut std::process::Child)) {
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

    let bundle = load_bundle(&dir).expect("an interrupted run leaves a readable bundle");
    assert_eq!(bundle.status, RunStatus::Incomplete);
    assert_eq!(bundle.ingest.as_ref().unwrap().rows, 4_000_000);
    assert!(bundle.finished_at.is_none());
    // The report renders from what there is, and says the run is incomplete.
    let output = xtask().args(["report", run_id, "--results-dir"]).arg(results.path()).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("**Incomplete run**"), "{report}");
}

fn ingest_recorded(dir: &Path) -> bool {
    load_bundle(dir).is_ok_and(|bundle| bundle.ingest.is_some())
}

#[test]
fn a_missing_bundle_is_named() {
    let results = tempfile::tempdir().unwrap();
    let output = xtask().args(["report", "nope", "--results-dir"]).arg(results.path()).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no results bundle") && stderr.contains("nope"), "{stderr}");
}

//! A stop request ends `report` and `compare` on a large bundle at once, as it ends a
//! bench: exit 130, the stopping line once, one error line, and nothing written (no
//! report, no chart, no comparison folder). SIGTERM here, sent once the command handles
//! it; Ctrl-C and SIGHUP take the same path. Structure only, never a time.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{error_lines, xtask};

/// A real small run, its samples then repeated 40 times over (about 50 MB of
/// `results.json`), so that reading and comparing it takes seconds; without its report
/// and charts, so that any written after the stop shows.
fn large_bundle(results: &Path, run_id: &str) -> PathBuf {
    let output = xtask()
        .args(["bench", "--target", "embedded", "--rows", "100K", "--runs", "8", "--run-id", run_id])
        .arg("--results-dir")
        .arg(results)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let dir = results.join(run_id);
    let path = dir.join("results.json");
    let mut bundle: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for runs in bundle["benchmark"]["queries"].as_array_mut().unwrap() {
        let samples = runs["samples"].as_array().unwrap().clone();
        let last = samples.iter().map(|sample| sample["attempt"].as_u64().unwrap()).max().unwrap();
        let repeated = (0..40u64).flat_map(|round| {
            samples.iter().map(move |sample| {
                let mut sample = sample.clone();
                sample["attempt"] = Value::from(sample["attempt"].as_u64().unwrap() + round * last);
                sample
            })
        });
        runs["samples"] = Value::Array(repeated.collect());
    }
    std::fs::write(&path, serde_json::to_string_pretty(&bundle).unwrap()).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "md" || extension == "svg") {
            std::fs::remove_file(path).unwrap();
        }
    }
    dir
}

/// Whether `pid` has its SIGTERM handler yet (installed first thing in `main`): a SIGTERM
/// sent before would end it as an unhandled signal does, which is not what is tested.
fn handles_sigterm(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let caught = status.lines().find_map(|line| line.strip_prefix("SigCgt:"));
    caught.and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok()).is_some_and(|mask| mask & (1 << (15 - 1)) != 0)
}

/// Starts `command`, sends SIGTERM once it handles it, and returns its exit code and
/// stderr; a command that outlives a generous deadline fails the test.
fn sigterm_once_handled(mut command: Command) -> (Option<i32>, String) {
    let mut child: Child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !handles_sigterm(child.id()) {
        assert!(Instant::now() < deadline, "the command never handled SIGTERM");
        assert!(child.try_wait().unwrap().is_none(), "the command ended before it could be stopped");
        std::thread::sleep(Duration::from_millis(5));
    }
    let sent = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(sent.success(), "kill -TERM failed");
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the command went on after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.matches(chbench::interrupt::STOPPING_LINE).count(), 1, "{stderr}");
    assert_eq!(error_lines(&output), [format!("error: {}", chbench::interrupt::Interrupted)], "{stderr}");
    (output.status.code(), stderr)
}

#[test]
fn sigterm_ends_report_and_compare_on_a_large_bundle_with_nothing_written() {
    let results = tempfile::tempdir().unwrap();
    let dir = large_bundle(results.path(), "large");
    let files = |dir: &Path| {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().file_name().to_string_lossy().into()).collect();
        names.sort();
        names
    };
    let before = files(&dir);

    let mut report = xtask();
    report.arg("report").arg(&dir);
    let (code, stderr) = sigterm_once_handled(report);
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(files(&dir), before, "the stopped report wrote into the bundle");

    let out = results.path().join("comparison");
    let mut compare = xtask();
    compare.arg("compare").arg(&dir).arg(&dir).arg("--out").arg(&out);
    let (code, stderr) = sigterm_once_handled(compare);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(!out.exists(), "the stopped comparison wrote {}", out.display());
    assert_eq!(files(&dir), before);
}

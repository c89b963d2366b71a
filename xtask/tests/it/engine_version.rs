//! `--engine-version` and `CHBENCH_ENGINE_VERSION`: each mistake one line, before the engine
//! loads and before any bundle is made; the version asked for is the one that runs.

use std::process::Output;

use crate::common::{self, error_line, error_lines};

/// Runs xtask with `env` on top of the caller's, `CHBENCH_ENGINE_VERSION` removed unless given.
fn xtask(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = common::xtask();
    command.args(args).env_remove("CHBENCH_ENGINE_VERSION");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("cannot run xtask")
}

const PINNED: &str = "the pinned ones: 26.7.3-stable.1 (default), 26.5.3";

#[test]
fn an_unknown_version_lists_the_pinned_ones_from_the_flag_or_the_variable() {
    for args in [&["setup", "--engine-version", "26.6.0"][..], &["bench", "--engine-version", "26.6.0"]] {
        let output = xtask(args, &[]);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let line = &error_lines(&output)[0];
        assert!(line.contains("'26.6.0' for '--engine-version <V>'") && line.contains(PINNED), "{line}");
    }
    let output = xtask(&["measure", "q.sql"], &[("CHBENCH_ENGINE_VERSION", "26.6.0")]);
    assert_eq!(output.status.code(), Some(2));
    let line = &error_lines(&output)[0];
    assert!(line.starts_with("error: CHBENCH_ENGINE_VERSION=\"26.6.0\": \"26.6.0\" is not a pinned"), "{line}");
    assert!(line.contains(PINNED) && !line.contains("--engine-version"), "{line}");
}

#[test]
fn a_server_target_or_a_library_of_another_version_is_refused_in_one_line() {
    let results = tempfile::tempdir().unwrap();
    let results_dir = results.path().to_str().unwrap();
    let bench = ["bench", "--engine-version", "26.5.3", "--rows", "100K", "--results-dir", results_dir];
    let line = error_line(&xtask(&[&bench[..], &["--target", "url"]].concat(), &[]));
    assert!(line.contains("chooses the embedded engine's version, and the target is url"), "{line}");
    // A library of the user's that is not 26.5.3's (this test binary: no size of a pinned one).
    let other = std::env::current_exe().unwrap();
    let line = error_line(&xtask(&bench, &[("CHBENCH_LIBCHDB", other.to_str().unwrap())]));
    assert!(line.contains("is set and engine 26.5.3 was asked for, but the file is not its library"), "{line}");
    assert!(line.ends_with("unset CHBENCH_LIBCHDB to use the pinned 26.5.3, or do not ask for a version"), "{line}");
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
}

#[test]
fn the_version_asked_for_is_the_one_that_answers_in_setup_and_measure() {
    // The pinned cache, not the caller's library: 26.5.3 fetched the first time.
    let without_library = |args: &[&str]| {
        let mut command = common::xtask();
        command.args(args).env_remove("CHBENCH_ENGINE_VERSION").env_remove("CHBENCH_LIBCHDB");
        command.output().expect("cannot run xtask")
    };
    let setup = without_library(&["setup", "--engine-version", "26.5.3"]);
    assert!(setup.status.success(), "{}", String::from_utf8_lossy(&setup.stderr));
    let printed = String::from_utf8_lossy(&setup.stdout);
    assert!(
        printed.contains("libchdb/26.5.3/libchdb.so") && printed.contains("ClickHouse version: 26.5.1.1"),
        "{printed}"
    );
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("version.sql");
    std::fs::write(&file, "SELECT version()\n").unwrap();
    let file = file.to_str().unwrap();
    let measured = without_library(&["measure", "--target", "embedded", "--engine-version", "26.5.3", "--json", file]);
    assert!(measured.status.success(), "{}", String::from_utf8_lossy(&measured.stderr));
    let record: serde_json::Value = serde_json::from_slice(&measured.stdout).unwrap();
    assert_eq!(record["answer"], "26.5.1.1\n", "{record}");
}

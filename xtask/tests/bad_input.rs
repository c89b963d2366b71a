//! Bad input gets one clear line naming what failed and a non-zero exit. These run the
//! real `xtask` binary, each in its own process, as a user would.

use std::path::Path;
use std::process::{Command, Output};

fn xtask(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    command.args(args).env_remove("CHBENCH_TARGET").env_remove("CHBENCH_LIBCHDB");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("cannot run xtask")
}

/// The error line, after checking that the run failed and printed exactly one.
fn error_line(output: &Output) -> String {
    assert!(!output.status.success(), "expected a failure, got {:?}", output.status);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "expected one error line in:\n{stderr}");
    errors[0].to_string()
}

#[test]
fn a_missing_engine_file_is_named_with_what_to_do() {
    let output = xtask(&["setup"], &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
    let line = error_line(&output);
    assert!(line.contains("CHBENCH_LIBCHDB=/nonexistent/libchdb.so is not a file"), "{line}");
}

#[test]
fn a_broken_engine_file_is_named_with_what_to_do() {
    let folder = tempfile::tempdir().unwrap();
    let broken = folder.path().join("libchdb.so");
    std::fs::write(&broken, b"not a shared library").unwrap();
    let output = xtask(&["setup"], &[("CHBENCH_LIBCHDB", broken.to_str().unwrap())]);
    let line = error_line(&output);
    assert!(line.contains(&format!("the embedded engine {} failed to load", broken.display())), "{line}");
    assert!(line.contains("cargo xtask setup"), "{line}");
}

#[test]
fn an_unreachable_url_is_named_and_the_password_is_not() {
    let output = xtask(
        &["bench", "--rows", "1000"],
        &[("CHBENCH_TARGET", "url"), ("CHBENCH_URL", "http://127.0.0.1:1"), ("CHBENCH_PASSWORD", "s3cret-pw")],
    );
    let line = error_line(&output);
    assert!(line.contains("cannot reach ClickHouse at http://127.0.0.1:1"), "{line}");
    let everything = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!everything.contains("s3cret-pw"), "the password leaked:\n{everything}");
}

#[test]
fn credentials_in_the_url_never_reach_the_output() {
    let output = xtask(
        &["bench", "--target", "url", "--rows", "1000"],
        &[("CHBENCH_URL", "http://bench:s3cret-pw@127.0.0.1:1")],
    );
    let line = error_line(&output);
    assert!(line.contains("cannot reach ClickHouse at http://127.0.0.1:1"), "{line}");
    assert!(!line.contains("s3cret-pw"), "{line}");
}

#[test]
fn an_unknown_target_lists_the_known_ones() {
    let line = error_line(&xtask(&["bench", "--target", "kubernetes"], &[]));
    assert!(line.contains("\"kubernetes\" is not a target; choose one of auto, embedded, container, url"), "{line}");
}

#[test]
fn an_sql_error_names_the_file_and_the_statement() {
    let folder = tempfile::tempdir().unwrap();
    let fixture = folder.path().join("typo.sql");
    std::fs::write(&fixture, "SELECT 1;\nSELEC count() FROM numbers(10);\n").unwrap();
    let line = error_line(&xtask(&["measure", "--target", "embedded", fixture.to_str().unwrap()], &[]));
    assert!(line.contains(&format!("{} failed", fixture.display())), "{line}");
    assert!(line.contains("statement failed: SELEC count() FROM numbers(10)"), "{line}");
    assert!(line.contains("SYNTAX_ERROR"), "{line}");
}

#[test]
fn a_missing_sql_file_is_named() {
    let line = error_line(&xtask(&["measure", "--target", "embedded", "no/such/file.sql"], &[]));
    assert!(line.contains("cannot read no/such/file.sql"), "{line}");
    assert!(!Path::new("no/such/file.sql").exists());
}

/// Needs a running server: `CHBENCH_URL` (and `CHBENCH_USER`); run with
/// `cargo nextest run --run-ignored only`. Checked against a real server on loopback.
#[test]
#[ignore = "needs a ClickHouse server at CHBENCH_URL"]
fn a_wrong_password_is_refused_and_never_echoed() {
    let url = std::env::var("CHBENCH_URL").expect("CHBENCH_URL");
    let user = std::env::var("CHBENCH_USER").unwrap_or_else(|_| "default".to_string());
    let output = xtask(
        &["bench", "--target", "url", "--rows", "1000"],
        &[("CHBENCH_URL", &url), ("CHBENCH_USER", &user), ("CHBENCH_PASSWORD", "surely-wrong-pw")],
    );
    let line = error_line(&output);
    assert!(line.contains(&format!("refused user {user:?}")), "{line}");
    let everything = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!everything.contains("surely-wrong-pw"), "the password leaked:\n{everything}");
}

#[test]
fn a_missing_npm_says_what_to_do() {
    // An empty cache (a fresh target dir) and no npm on the PATH.
    let fresh_target = tempfile::tempdir().unwrap();
    let output =
        xtask(&["setup"], &[("CARGO_TARGET_DIR", fresh_target.path().to_str().unwrap()), ("PATH", "/nonexistent")]);
    let line = error_line(&output);
    assert!(line.contains("`npm` is required to fetch the embedded engine"), "{line}");
    assert!(line.contains("CHBENCH_LIBCHDB"), "{line}");
}

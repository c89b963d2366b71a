//! Fetching the pinned engine when the npm registry cannot be reached, with no network
//! used: npm is pointed at a loopback registry (`npm_config_registry`) that is closed or
//! never answers, with an empty npm cache and an empty engine cache of the test's own
//! (`CARGO_TARGET_DIR`), so the real cache under `target/chbench/` is never touched. Each
//! fails in one line naming `CHBENCH_LIBCHDB` as the way round, and leaves no library.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{error_line, xtask};

/// `cargo xtask setup` fetching the default engine from `registry` into `folder`, and
/// nowhere else: no library of the caller's, no engine version, no proxy, no npm cache.
fn setup_from(registry: &str, folder: &Path, bound: Option<&str>) -> Command {
    let mut command = xtask();
    command
        .arg("setup")
        .env("CARGO_TARGET_DIR", folder.join("target"))
        .env("npm_config_registry", registry)
        .env("npm_config_cache", folder.join("npm-cache"))
        .env("npm_config_proxy", "")
        .env("npm_config_https_proxy", "")
        .env_remove("CHBENCH_LIBCHDB")
        .env_remove("CHBENCH_ENGINE_VERSION")
        .env_remove("CHBENCH_ENGINE_FETCH_TIMEOUT");
    for proxy in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"] {
        command.env_remove(proxy);
    }
    if let Some(bound) = bound {
        command.env("CHBENCH_ENGINE_FETCH_TIMEOUT", bound);
    }
    command
}

/// Runs the command, failing the test if it hangs (a generous deadline, not a measure).
fn output_within(mut command: Command, deadline: Duration) -> Output {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > deadline {
            child.kill().unwrap();
            panic!("setup still ran after {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

/// `setup` fetching from `registry` (with `bound`, if given) into a folder of its own:
/// it fails in one line naming the way round and leaves no library. Returns the line.
fn fetch_fails_from(registry: &str, bound: Option<&str>) -> String {
    let folder = tempfile::tempdir().unwrap();
    let output = output_within(setup_from(registry, folder.path(), bound), Duration::from_secs(120));
    let line = error_line(&output);
    assert!(line.starts_with("error: cannot fetch the embedded engine @chdb/lib-"), "{line}");
    assert!(line.contains("the npm registry cannot be reached"), "{line}");
    assert!(line.contains("set CHBENCH_LIBCHDB=/path/to/libchdb.so"), "{line}");
    let cache = folder.path().join("target").join("chbench").join("libchdb");
    let library = std::fs::read_dir(&cache)
        .into_iter()
        .flatten()
        .flatten()
        .any(|version| version.path().join("libchdb.so").exists());
    assert!(!library, "a library was left in {}", cache.display());
    // Every other line says what the fetch is doing.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.lines().all(|line| line.starts_with("setup: ") || line.starts_with("error: ")), "{stderr}");
    line
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A loopback listener that accepts every connection and never answers; it lives as long
/// as the returned value.
fn silent_registry() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let registry = format!("http://127.0.0.1:{}/", listener.local_addr().unwrap().port());
    let accepting = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        // Held open, unanswered, until the test process ends.
        let held: Vec<_> = accepting.incoming().collect();
        drop(held);
    });
    (listener, registry)
}

#[test]
fn offline_the_fetch_fails_in_one_line_naming_chbench_libchdb() {
    let line = fetch_fails_from(&format!("http://127.0.0.1:{}/", closed_port()), None);
    assert!(line.contains("ECONNREFUSED"), "{line}");
}

#[test]
fn a_registry_that_never_answers_fails_in_one_line_on_npms_short_timeouts() {
    let (_listener, registry) = silent_registry();
    let line = fetch_fails_from(&registry, None);
    assert!(line.contains("network timeout"), "{line}");
}

#[test]
fn the_fetch_ends_at_its_bound_and_a_bad_bound_is_one_line() {
    let (_listener, registry) = silent_registry();
    let line = fetch_fails_from(&registry, Some("2"));
    assert!(line.contains("(it did not answer within 2 s)"), "{line}");

    let folder = tempfile::tempdir().unwrap();
    let output = output_within(setup_from(&registry, folder.path(), Some("soon")), Duration::from_secs(120));
    let line = error_line(&output);
    assert!(line.starts_with("error: CHBENCH_ENGINE_FETCH_TIMEOUT=soon is not a number of seconds"), "{line}");
}

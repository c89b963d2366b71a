//! An xtask built without the `eks` feature runs an `eks` command again as
//! `cargo run --features eks`, by becoming that cargo process (`exec`): the signals sent
//! to the command reach it, and its end (a signal, an exit code) is the command's. Checked
//! with a stand-in for cargo (`CARGO` names the cargo xtask runs) that records its pid and
//! arguments, then ends as SIGTERM ends a process.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;

use crate::common::{error_lines, workspace, xtask};

#[test]
fn the_rerun_is_this_process_so_signals_and_exit_codes_are_direct() {
    let folder = tempfile::tempdir().unwrap();
    let record = folder.path().join("record");
    let cargo = folder.path().join("cargo");
    std::fs::write(
        &cargo,
        format!("#!/bin/sh\nprintf '%s\\n' \"$$\" \"$(pwd -P)\" \"$*\" > '{}'\nkill -TERM $$\n", record.display()),
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let working_dir = folder.path().join("here");
    std::fs::create_dir(&working_dir).unwrap();

    let child = xtask()
        .args(["eks", "status", "--namespace", "bench-2"])
        .env("CARGO", &cargo)
        .current_dir(&working_dir)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cannot run xtask");
    let pid = child.id();
    let output = child.wait_with_output().unwrap();

    // Ended by the signal, as a shell sees it (128 + 15), not with exit code 1.
    assert_eq!(output.status.signal(), Some(15), "{:?}", output.status);
    // The first eks command builds for minutes behind `--quiet`: one line says so first.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        ["chbench: cargo xtask eks needs the Kubernetes client (the eks feature): running xtask built with it; the \
             first time, cargo builds it now, a few minutes once, and later commands reuse it"],
        "{stderr}"
    );
    let recorded = std::fs::read_to_string(&record).unwrap();
    let [recorded_pid, recorded_dir, arguments] = recorded.lines().collect::<Vec<_>>()[..] else {
        panic!("unexpected record {recorded:?}")
    };
    assert_eq!(recorded_pid, pid.to_string(), "cargo ran as a child, not in xtask's place");
    assert_eq!(recorded_dir, working_dir.canonicalize().unwrap().display().to_string());
    let manifest = workspace().join("Cargo.toml");
    assert_eq!(
        arguments,
        format!(
            "run --quiet --package xtask --features eks --bin xtask --manifest-path {} -- eks status --namespace bench-2",
            manifest.display()
        )
    );
}

#[test]
fn a_cargo_that_cannot_start_is_one_line() {
    let output = xtask().args(["eks", "status"]).env("CARGO", "/nonexistent/cargo").output().expect("cannot run xtask");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors = error_lines(&output);
    assert_eq!(
        errors,
        [
            "error: cannot run /nonexistent/cargo to build xtask with the eks feature: No such file or directory (os error 2)"
        ],
        "{stderr}"
    );
}

/// `cargo xtask eks up && cargo xtask bench` on a laptop's default build: the bench that
/// chose the deployment for want of a target says so first, then builds itself with the
/// Kubernetes client, as `bench --target eks` does.
#[test]
fn a_bench_with_no_target_after_up_says_its_choice_first_then_builds_with_the_client() {
    let folder = tempfile::tempdir().unwrap();
    let record = folder.path().join("chbench/eks/last-up.json");
    std::fs::create_dir_all(record.parent().unwrap()).unwrap();
    std::fs::write(
        &record,
        r#"{"cluster": "https://127.0.0.1:6443", "namespace": "chbench", "variant": "kind", "run": "0b6e", "brought_up_at": "2026-12-06T19:40:12Z"}"#,
    )
    .unwrap();
    let arguments = folder.path().join("arguments");
    let cargo = folder.path().join("cargo");
    std::fs::write(
        &cargo,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" \"$CHBENCH_TARGET\" \"$CHBENCH_NAMESPACE\" > '{}'\nexit 3\n",
            arguments.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = xtask()
        .args(["bench", "--rows", "1K"])
        .env("CARGO", &cargo)
        .env("CARGO_TARGET_DIR", folder.path())
        .env_remove("CHBENCH_TARGET")
        .env_remove("CHBENCH_NAMESPACE")
        .output()
        .expect("cannot run xtask");
    assert_eq!(output.status.code(), Some(3), "the rerun's exit code is the command's");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            "chbench: no target given: the deployment `cargo xtask eks up` brought up on https://127.0.0.1:6443 in \
             namespace chbench (kind, run 0b6e) at 2026-12-06 19:40 UTC, until `cargo xtask eks down` (--target or \
             CHBENCH_TARGET chooses another: embedded, container, url)",
            "chbench: target eks needs the Kubernetes client (the eks feature): running xtask built with it; the \
             first time, cargo builds it now, a few minutes once, and later commands reuse it",
        ],
        "{stderr}"
    );
    let given = std::fs::read_to_string(&arguments).unwrap();
    let [arguments, target, namespace] = given.lines().collect::<Vec<_>>()[..] else { panic!("{given:?}") };
    assert!(arguments.contains("run --quiet --package xtask --features eks"), "{arguments}");
    assert!(arguments.ends_with(" -- bench --rows 1K"), "{arguments}");
    // The rebuilt command runs on the target chosen here; the namespace stays the record's.
    assert_eq!((target, namespace), ("eks", ""));
}

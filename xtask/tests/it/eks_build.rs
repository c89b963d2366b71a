//! What the default build compiles, and switching between it and the `eks` and
//! `container` builds (what `cargo xtask eks ...` and `--target container` run themselves
//! as). The default build has no TLS stack (no ring, aws-lc or rustls) and no Docker
//! client; the `eks` build's Kubernetes client and the `container` build's testcontainers
//! bring them. The builds ask for different features of the crates they share, and cargo
//! keeps each variant side by side in target/, so once both are built a switch compiles
//! nothing: such a command is itself a switch each way (the default build of xtask runs
//! the other).

use std::collections::BTreeSet;
use std::process::Command;

use crate::common::{cargo, workspace};

/// The crates xtask's build compiles (normal and build-script dependencies, with what
/// they build on), as (name, version), as `cargo tree` resolves them from the lock file.
fn crates_compiled(extra: &[&str]) -> BTreeSet<(String, String)> {
    let output = Command::new(cargo())
        .args(["tree", "--locked", "-p", "xtask", "-e", "normal,build", "--prefix", "none", "-f", "{p}"])
        .args(extra)
        .current_dir(workspace())
        .output()
        .expect("cannot run cargo tree");
    assert!(output.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.to_string()))
        })
        .collect()
}

fn names(crates: &BTreeSet<(String, String)>) -> BTreeSet<&str> {
    crates.iter().map(|(name, _)| name.as_str()).collect()
}

/// The TLS stack, and the Docker client that brings one (testcontainers: bollard's
/// buildkit, tonic, reqwest with rustls).
const NOT_IN_THE_DEFAULT_BUILD: [&str; 11] = [
    "ring",
    "aws-lc-sys",
    "aws-lc-rs",
    "rustls",
    "tokio-rustls",
    "hyper-rustls",
    "reqwest",
    "tonic",
    "testcontainers",
    "testcontainers-modules",
    "bollard",
];

#[test]
fn the_default_build_compiles_no_tls_stack() {
    let compiled = crates_compiled(&[]);
    let (default, eks) = (names(&compiled), crates_compiled(&["--features", "xtask/eks"]));
    let eks = names(&eks);
    let container = crates_compiled(&["--features", "xtask/container"]);
    let container = names(&container);
    assert!(default.contains("chbench") && default.contains("clickhouse"), "cargo tree listed {default:?}");
    // The query sees a TLS stack and a Docker client where there are.
    assert!(eks.contains("kube-client") && eks.contains("rustls"), "the eks build: {eks:?}");
    assert!(container.contains("testcontainers-modules") && container.contains("bollard"), "{container:?}");
    let present: Vec<&str> = NOT_IN_THE_DEFAULT_BUILD.into_iter().filter(|name| default.contains(*name)).collect();
    assert!(
        present.is_empty(),
        "the default build compiles {present:?} again (`cargo tree -p xtask -e normal,build -i <crate>` says \
         through what); keep TLS in the eks feature"
    );
    // 180 when this was written (191 with bollard before the container target became a
    // feature; 285 in the container build): a bound, so that a new dependency's weight is
    // a decision.
    assert!(compiled.len() <= 200, "the default build compiles {} crates; it was 180", compiled.len());
}

/// `cargo xtask eks up --dry-run` (the eks build, no cluster) as a shell runs it: the variables cargo and nextest set for
/// this test process are not a shell's, and build scripts track some of them (ring's
/// `rerun-if-env-changed=CARGO_MANIFEST_DIR`), so leaving them would rebuild the
/// default build here. Cargo's fingerprint log says what it finds stale, and why.
fn eks_command_from_a_shell() -> std::process::Output {
    cargo_from_a_shell(&["xtask", "eks", "up", "--dry-run"])
}

/// Cargo with `args` as a shell runs it (see [`eks_command_from_a_shell`]).
fn cargo_from_a_shell(args: &[&str]) -> std::process::Output {
    cargo_from_a_shell_with(args, &[])
}

/// [`cargo_from_a_shell`], with the variables `env` set.
fn cargo_from_a_shell_with(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    const SET_FOR_A_PACKAGE: [&str; 7] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "OUT_DIR",
    ];
    let mut command = Command::new(cargo());
    command.args(args).current_dir(workspace());
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_BIN_EXE_") || SET_FOR_A_PACKAGE.contains(&name) {
            command.env_remove(name);
        }
    }
    command
        .envs(env.iter().copied())
        .env("CARGO_LOG", "cargo::core::compiler::fingerprint=info")
        .output()
        .unwrap_or_else(|error| panic!("cannot run cargo {}: {error}", args.join(" ")))
}

/// Each run switches twice (the default build of xtask, then the `eks` build it runs),
/// so a second run that compiles nothing shows that a switch rebuilds nothing. Slow the
/// first time on a fresh clone (it builds the Kubernetes client, about a minute on 2
/// cores); after that both runs only check fingerprints. So it runs where the `eks`
/// feature is built anyway (`.ci/run`'s and the PR gate's eks step), not in every laptop
/// run of the suite, whose first run would build the Kubernetes client for it.
#[test]
#[cfg_attr(
    not(feature = "eks"),
    ignore = "builds the eks feature: run with --features xtask/eks, as CI's eks step does"
)]
fn a_second_eks_command_compiles_nothing() {
    // The manifests it prints say that the eks build of xtask ran.
    let manifest = "# manifests/eks-gp3/clickhouse.yaml:1";
    let first = eks_command_from_a_shell();
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(stdout.contains(manifest), "the eks build did not run:\n{}", String::from_utf8_lossy(&first.stderr));

    let second = eks_command_from_a_shell();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(String::from_utf8_lossy(&second.stdout).contains(manifest), "the eks build did not run:\n{stderr}");
    let stale: Vec<&str> =
        stderr.lines().filter(|line| line.contains("fingerprint dirty") || line.contains("dirty:")).collect();
    assert!(
        stale.is_empty(),
        "the second `cargo xtask eks up --dry-run` rebuilt what the first built (cargo's reasons):\n{}",
        stale.join("\n")
    );
    assert!(!stderr.contains("Compiling "), "the second run compiled:\n{stderr}");

    // The `eks` build's xtask replaced target/debug/xtask, the binary the other tests
    // run as the default build (eks_rerun's expect it to rerun cargo): put the default
    // build's back (fresh, so cargo only links it into place) and check that it is.
    let restored = cargo_from_a_shell(&["build", "--quiet", "-p", "xtask"]);
    assert!(restored.status.success(), "cannot build xtask: {}", String::from_utf8_lossy(&restored.stderr));
    let output = crate::common::xtask().args(["eks", "status"]).env("CARGO", "/nonexistent/cargo").output().unwrap();
    let errors = crate::common::error_lines(&output).join("\n");
    assert!(errors.contains("cannot run /nonexistent/cargo"), "target/debug/xtask is not the default build: {errors}");
}

/// The first `--target container` command of a default build (here, a bench with no
/// Docker daemon to reach) says what it builds, then runs from the container build; the
/// second compiles nothing. Ignored unless the container feature is built anyway (CI's
/// container step), for the reason the eks test above is.
#[test]
#[cfg_attr(
    not(feature = "container"),
    ignore = "builds the container feature: run with --features xtask/container, as CI's container step does"
)]
fn a_second_container_command_compiles_nothing() {
    let results = tempfile::tempdir().unwrap();
    let results = results.path().to_str().unwrap();
    let building = "chbench: target container needs testcontainers, the Docker client (the container feature): running xtask built \
         with it";
    let bench = ["xtask", "bench", "--target", "container", "--rows", "1K", "--results-dir", results];
    for attempt in ["first", "second"] {
        // A daemon address where none answers, on any machine: the default build builds
        // the container build, which then cannot reach it.
        let output = cargo_from_a_shell_with(&bench, &[("DOCKER_HOST", "tcp://127.0.0.1:1")]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "a bench without Docker succeeded:\n{stderr}");
        assert!(stderr.contains(building), "the {attempt} run did not say what it builds:\n{stderr}");
        // Ran from the container build: its own error, the daemon's, not the feature's.
        assert!(stderr.contains("is a Docker daemon running?"), "the {attempt} run:\n{stderr}");
        if attempt == "second" {
            let stale: Vec<&str> =
                stderr.lines().filter(|line| line.contains("fingerprint dirty") || line.contains("dirty:")).collect();
            assert!(stale.is_empty(), "the second run rebuilt (cargo's reasons):\n{}", stale.join("\n"));
            assert!(!stderr.contains("Compiling "), "the second run compiled:\n{stderr}");
        }
    }
    // As the eks test does: the default build's xtask back in target/debug/xtask.
    let restored = cargo_from_a_shell(&["build", "--quiet", "-p", "xtask"]);
    assert!(restored.status.success(), "cannot build xtask: {}", String::from_utf8_lossy(&restored.stderr));
}

//! The default build and the `eks` build (what `cargo xtask eks ...` runs itself as) turn
//! on the same features in every crate they share, so that switching between them
//! relinks chbench and xtask and rebuilds nothing else (see "One build for both" in
//! bench-tests/Cargo.toml). When a dependency's features drift, this names the crate
//! and the features to add there. And the `eks` build is built once: a second `cargo
//! xtask eks ...` compiles nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use crate::common::{cargo, workspace};

/// Each crate of xtask's build (its normal dependencies, with what they build on) and the
/// features it is built with, as `cargo tree` resolves them from the lock file.
fn features_of_each_crate(extra: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let output = Command::new(cargo())
        .args(["tree", "--locked", "-p", "xtask", "-e", "normal", "--prefix", "none", "-f", "{p} [{f}]"])
        .args(extra)
        .current_dir(workspace())
        .output()
        .expect("cannot run cargo tree");
    assert!(output.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
    let mut crates: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some((package, features)) = line.trim_end_matches(" (*)").split_once(" [") else { continue };
        // A crate built for the host (a proc-macro's dependency) and for the target shows
        // twice; what matters is that the two builds ask for the same features of it.
        let features = features.trim_end_matches(']').split(',').filter(|f| !f.is_empty()).map(str::to_string);
        crates.entry(package.to_string()).or_default().extend(features);
    }
    crates
}

#[test]
fn the_eks_build_turns_on_no_feature_the_default_build_lacks() {
    let default = features_of_each_crate(&[]);
    let eks = features_of_each_crate(&["--features", "xtask/eks"]);
    assert!(default.len() > 100, "cargo tree listed only {} crates", default.len());
    let drifted: Vec<String> = default
        .iter()
        .filter(|(package, _)| !package.starts_with("chbench ") && !package.starts_with("xtask "))
        .filter_map(|(package, features)| {
            let with_eks = eks.get(package)?;
            (with_eks != features).then(|| {
                let added: Vec<&String> = with_eks.difference(features).collect();
                format!("{package}: the eks build adds {added:?}")
            })
        })
        .collect();
    assert!(
        drifted.is_empty(),
        "each switch between `cargo xtask` and `cargo xtask eks` would rebuild these and what depends on them; \
         turn the same features on in bench-tests/Cargo.toml (\"One build for both\"):\n{}",
        drifted.join("\n")
    );
}

/// `cargo xtask eks up --dry-run` (the eks build, no cluster) as a shell runs it: the variables cargo and nextest set for
/// this test process are not a shell's, and build scripts track some of them (ring's
/// `rerun-if-env-changed=CARGO_MANIFEST_DIR`), so leaving them would rebuild the
/// default build here. Cargo's fingerprint log says what it finds stale, and why.
fn eks_command_from_a_shell() -> std::process::Output {
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
    command.args(["xtask", "eks", "up", "--dry-run"]).current_dir(workspace());
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_BIN_EXE_") || SET_FOR_A_PACKAGE.contains(&name) {
            command.env_remove(name);
        }
    }
    command
        .env("CARGO_LOG", "cargo::core::compiler::fingerprint=info")
        .output()
        .expect("cannot run cargo xtask eks up --dry-run")
}

/// Slow the first time on a fresh clone (it builds the Kubernetes client, about a minute
/// on 2 cores); after that both runs only check fingerprints.
#[test]
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
}

//! Targets this xtask was built without: the eks target's Kubernetes client and the
//! container target's Docker client are cargo features, off in the default build so that
//! a laptop that never uses them never compiles them. A command that needs one runs
//! itself again as `cargo run --features <theirs>` (with the features this build has),
//! so that its first use builds it, once, and later uses reuse the build.

use anyhow::Result;
use chbench::target_info::TargetKind;
use chbench::targets::{MissingFeature, Target, open_target_of_kind};

/// The features this xtask was built with: a rerun keeps them.
const BUILT_WITH: &[(&str, bool)] = &[("eks", cfg!(feature = "eks")), ("container", cfg!(feature = "container"))];

/// Opens a target of `kind`; one this xtask was built without the feature for (its
/// [`MissingFeature`]) is opened by this command run again from an xtask built with it.
pub fn open_target(kind: TargetKind) -> Result<Target> {
    or_rerun_with_the_feature(kind, open_target_of_kind(kind))
}

/// Returns when this xtask can reach a target of `kind`; otherwise this command runs
/// again from an xtask built with the feature the target needs.
pub fn ensure_the_feature(kind: TargetKind) -> Result<()> {
    match chbench::targets::spec(kind).missing_feature {
        Some(missing) => rerun_for_the_target(&missing, kind).map(|never| match never {}),
        None => Ok(()),
    }
}

/// `outcome` of work that opened a target of `kind` (and did nothing before that could
/// not be done again), or, when the target needs a feature this xtask was built without,
/// this command run again from an xtask built with it.
pub fn or_rerun_with_the_feature<T>(kind: TargetKind, outcome: Result<T>) -> Result<T> {
    if let Err(error) = &outcome
        && let Some(missing) = error.chain().find_map(|cause| cause.downcast_ref::<MissingFeature>())
    {
        return rerun_for_the_target(missing, kind).map(|never| match never {});
    }
    outcome
}

/// [`rerun_with_the_feature`] for a target of `kind` (`auto` resolved: the rerun gets the
/// kind chosen here).
fn rerun_for_the_target(missing: &MissingFeature, kind: TargetKind) -> Result<std::convert::Infallible> {
    let kind = chbench::targets::resolve_kind(kind);
    rerun_with_the_feature(missing, &format!("target {kind}"), Some(kind))
}

/// The variables the outer `cargo run` set for this process about the xtask package
/// (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, ...). Build scripts track some of them (ring's
/// `rerun-if-env-changed`), and the inner cargo would see them where a cargo run from a
/// shell sees none: every such command would rebuild ring, rustls, kube and chbench.
/// Without them the inner cargo sees what a shell's does, and a second command builds
/// nothing. `CARGO` stays: it names the cargo to run, and cargo sets it for its children.
fn variables_cargo_run_set() -> Vec<std::ffi::OsString> {
    const SET_FOR_THE_PACKAGE: [&str; 5] =
        ["CARGO_MANIFEST_DIR", "CARGO_MANIFEST_PATH", "CARGO_CRATE_NAME", "CARGO_BIN_NAME", "CARGO_PRIMARY_PACKAGE"];
    std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| {
            name.to_str().is_some_and(|name| name.starts_with("CARGO_PKG_") || SET_FOR_THE_PACKAGE.contains(&name))
        })
        .collect()
}

/// The features the rebuilt xtask has: this build's and `missing`'s, comma-separated.
fn features_with(missing: &MissingFeature) -> String {
    let mut features: Vec<&str> = BUILT_WITH.iter().filter(|(_, built)| *built).map(|(name, _)| *name).collect();
    if !features.contains(&missing.feature) {
        features.push(missing.feature);
    }
    features.join(",")
}

/// Runs this command again from an xtask built with `missing`'s feature: this process
/// becomes `cargo run --features <...> -- <its arguments>` (`exec`), so that Ctrl-C or
/// SIGTERM reach cargo and the rebuilt xtask directly and their exit code (130 after
/// Ctrl-C) is this command's; no parent is left to pass them on. Same folder, arguments
/// and environment (less what `cargo run` set about xtask), so that relative paths
/// (`--results-dir`, `--out`) and `CHBENCH_TARGET` mean what they meant. Returns only when
/// cargo cannot be started. Unix only, as the whole workspace is (chbench's signal
/// handling and hard-linked copies).
///
/// `needing` (`cargo xtask eks`, `target container`) is said first, with the build: the
/// first such command compiles the client for minutes with nothing else on the screen
/// (`--quiet`), so the line says what is going on and that it happens once.
///
/// For a target (`pinned`), the rebuilt command gets the target this one chose
/// (`CHBENCH_TARGET`): a deployment taken down during the build does not send it
/// elsewhere, and the choice is said once, here.
pub fn rerun_with_the_feature(
    missing: &MissingFeature,
    needing: &str,
    pinned: Option<TargetKind>,
) -> Result<std::convert::Infallible> {
    use std::io::Write;
    use std::os::unix::process::CommandExt;

    use anyhow::Context;

    // A build that could only end in a refusal (no Docker at all, say) is not started.
    (missing.check_before_building)()?;
    chbench::say!("{}", building_line(missing, needing));
    let arguments: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = chbench::files::workspace_root().join("Cargo.toml");
    // Nothing of this process runs after exec: what it printed must be out first.
    let _ = std::io::stdout().flush();
    let mut command = std::process::Command::new(&cargo);
    command
        .args(["run", "--quiet", "--package", "xtask", "--features", &features_with(missing)])
        .args(["--bin", "xtask", "--manifest-path"])
        .arg(&manifest)
        .arg("--")
        .args(&arguments);
    for name in variables_cargo_run_set() {
        command.env_remove(name);
    }
    // The eks target's namespace stays as it was chosen (`CHBENCH_NAMESPACE`, or the
    // record, whose cluster the rebuilt command then checks).
    if let Some(kind) = pinned {
        command.env(chbench::target_info::TARGET_ENV, kind.to_string());
    }
    let error = command.exec();
    Err(error).with_context(|| {
        format!(
            "cannot run {} to build xtask with the {} feature",
            std::path::Path::new(&cargo).display(),
            missing.feature
        )
    })
}

/// The line said before xtask runs itself again with `missing`'s feature.
fn building_line(missing: &MissingFeature, needing: &str) -> String {
    format!(
        "chbench: {needing} needs {} (the {} feature): running xtask built with it; the first time, cargo builds it \
         now, a few minutes once, and later commands reuse it",
        missing.builds, missing.feature
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rebuilt_xtask_keeps_this_builds_features_and_adds_the_missing_one() {
        let container = chbench::targets::container::NO_CLIENT;
        let eks = chbench::targets::eks::NO_CLIENT;
        let has = |feature: &str| BUILT_WITH.iter().any(|(name, built)| *name == feature && *built);
        for missing in [container, eks] {
            let features = features_with(&missing);
            let listed: Vec<&str> = features.split(',').collect();
            assert!(listed.contains(&missing.feature), "{features}");
            for (name, _) in BUILT_WITH {
                assert_eq!(listed.contains(name), has(name) || *name == missing.feature, "{features}");
            }
        }
        let line = building_line(&container, "target container");
        assert_eq!(
            line,
            "chbench: target container needs testcontainers, the Docker client (the container feature): running \
             xtask built with it; the first time, cargo builds it now, a few minutes once, and later commands reuse it"
        );
    }
}

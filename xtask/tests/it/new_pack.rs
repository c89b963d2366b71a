//! `cargo xtask new-pack`: the pack it writes runs through the real packs harness (in a
//! temporary folder, through `CHBENCH_PACKS_DIR`, so nothing lands in fixtures/), fails
//! its first run on its new snapshot alone, and passes once that is accepted.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{error_line, workspace, xtask};

/// The packs harness (chbench's `packs` test binary) on the packs under `packs`, the tests
/// whose names contain `filter`, with insta's update mode `update`.
fn run_packs(packs: &Path, filter: &str, update: &str) -> Output {
    Command::new(packs_harness())
        .arg(filter)
        .env("CHBENCH_PACKS_DIR", packs)
        .env("INSTA_UPDATE", update)
        .env_remove("INSTA_OUTPUT")
        .current_dir(workspace())
        .output()
        .expect("cannot run the packs harness")
}

/// The newest build of chbench's `packs` test binary, beside this one in `deps/` (a
/// workspace's `cargo nextest run` builds both; a nested cargo would rebuild chbench
/// with other features, for minutes).
fn packs_harness() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let newest = std::fs::read_dir(deps)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.strip_prefix("packs-").is_some_and(|hash| hash.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .max_by_key(|path| path.metadata().and_then(|metadata| metadata.modified()).ok());
    newest.unwrap_or_else(|| panic!("no packs harness in {}: build it (cargo nextest run builds it)", deps.display()))
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_new_pack_passes_as_written_once_its_first_snapshot_is_accepted() {
    let packs = tempfile::tempdir().unwrap();
    let output = xtask().args(["new-pack", "fresh_pack", "--dir"]).arg(packs.path()).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let said = stdout(&output);
    assert!(said.contains("cargo nextest run -E 'test(/^fresh_pack::/)'"), "{said}");
    for file in ["claims.toml", "designs/by_key.sql", "generator.sql", "queries/one_key_range.sql"] {
        assert!(packs.path().join("fresh_pack").join(file).is_file(), "no {file}");
    }

    // Its claims hold; the one failure is the new snapshot, one line, no panic.
    let first = run_packs(packs.path(), "fresh_pack::", "no");
    let text = stdout(&first);
    assert!(!first.status.success(), "{text}");
    let failures: Vec<&str> =
        text.lines().filter(|line| line.starts_with("new snapshot: ") || line.starts_with("claim failed: ")).collect();
    assert_eq!(
        failures,
        ["new snapshot: fresh_pack_one_key_range_by_key_100000: none written (INSTA_UPDATE=no, or CI): run the \
             case locally, then cargo insta review"],
        "{text}"
    );
    assert!(!text.contains("panicked"), "{text}");
    assert!(text.contains("failed cases: 1 new snapshot to review (cargo insta review)"), "{text}");

    // Accepted (as cargo insta accept would), it passes.
    let accepted = run_packs(packs.path(), "fresh_pack::", "always");
    assert!(accepted.status.success(), "{}", stdout(&accepted));
    assert!(packs.path().join("snapshots").read_dir().unwrap().next().is_some(), "no snapshot folder written");
    let again = run_packs(packs.path(), "fresh_pack::", "no");
    let text = stdout(&again);
    assert!(again.status.success(), "{text}");
    assert!(text.contains("2 passed; 0 failed"), "the case and the determinism check: {text}");
}

#[test]
fn new_pack_refuses_an_existing_folder_or_a_bad_name() {
    let packs = tempfile::tempdir().unwrap();
    std::fs::create_dir(packs.path().join("taken")).unwrap();
    let output = xtask().args(["new-pack", "taken", "--dir"]).arg(packs.path()).output().unwrap();
    let line = error_line(&output);
    assert!(line.ends_with("/taken already exists; choose another name, or remove that folder first"), "{line}");
    assert!(std::fs::read_dir(packs.path().join("taken")).unwrap().next().is_none(), "it wrote into taken/");

    let output = xtask().args(["new-pack", "My-Pack", "--dir"]).arg(packs.path()).output().unwrap();
    assert_eq!(
        error_line(&output),
        "error: cargo xtask new-pack: name \"My-Pack\" must be lowercase letters, digits and _, starting with a letter"
    );
    assert!(!packs.path().join("My-Pack").exists());
}

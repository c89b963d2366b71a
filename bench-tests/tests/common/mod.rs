//! What every scenario pack shares: opening the target for a scenario and snapshotting
//! its structural facts.

// Each scenario file compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use bench_tests::target::{Target, open_target};
use serde::Serialize;

/// Opens the target chosen by `CHBENCH_TARGET` and switches to a fresh database named
/// after the scenario.
pub fn scenario_target(scenario: &str) -> Target {
    let mut target = open_target().expect("cannot open the target");
    target.use_fresh_database(scenario).expect("cannot create the scenario's database");
    target
}

/// The workspace's `snapshots/` folder.
fn snapshot_dir() -> PathBuf {
    bench_tests::engine::workspace_root().join("snapshots")
}

/// Snapshots a scenario's structural facts as `snapshots/<name>.snap`, with the
/// statement that produced them as the snapshot's info. When the stored snapshot was
/// taken on another engine version, fails saying so instead of showing a bare diff.
pub fn assert_structure<T: Serialize>(name: &str, engine_version: &str, statement: &str, facts: &T) {
    let stored = snapshot_dir().join(format!("{name}.snap"));
    if let Ok(text) = std::fs::read_to_string(&stored) {
        let stored_version = text
            .lines()
            .find_map(|line| line.trim().strip_prefix("engine_version: "))
            .map(|version| version.trim_matches('"').to_string());
        if let Some(stored_version) = stored_version
            && stored_version != engine_version
        {
            panic!(
                "snapshot {name} was taken on ClickHouse {stored_version}, this engine is {engine_version}: \
                 re-record it on purpose (delete {} and run the test, then `cargo insta review`) and say \
                 in the commit what changed",
                stored.display()
            );
        }
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshot_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.set_sort_maps(true);
    settings.set_info(&statement.trim());
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_yaml_snapshot!(name, facts));
}

//! What every scenario pack shares: opening the target for a scenario and snapshotting
//! its structural facts.

// Both test binaries (`it` and `packs`) compile this module, each using part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use chbench::targets::{Target, open_target};
use serde::Serialize;
use serde_json::Value;

/// Opens the target chosen by `CHBENCH_TARGET` and switches to a fresh database for the
/// scenario (this process's own on a shared server: `Target::use_scenario_database`).
pub fn scenario_target(scenario: &str) -> Target {
    let mut target = open_target().expect("cannot open the target");
    target.use_scenario_database(scenario).expect("cannot create the scenario's database");
    target
}

/// The snapshots of one engine version: `snapshots/clickhouse-<version>/`. Each version
/// has its own, so the same tests gate the embedded engine and a server of another
/// release, and two versions' folders side by side show what changed between them.
fn snapshot_dir(engine_version: &str) -> PathBuf {
    // The version was read as digits and dots (`ClickHouseVersion::parse`); a path component
    // made of anything else would be a bug.
    assert!(
        !engine_version.is_empty() && engine_version.chars().all(|c| c.is_ascii_digit() || c == '.'),
        "engine version {engine_version:?} is not digits and dots"
    );
    // Packs run from another folder keep their snapshots there, out of the tree's.
    let snapshots = std::env::var_os(chbench::packs::PACKS_DIR_ENV)
        .map_or_else(chbench::files::workspace_root, PathBuf::from)
        .join("snapshots");
    snapshots.join(format!("clickhouse-{engine_version}"))
}

/// Where the snapshot `name` of an engine version is kept (it may not exist yet).
pub fn snapshot_file(name: &str, engine_version: &str) -> PathBuf {
    snapshot_dir(engine_version).join(format!("{name}.snap"))
}

/// The facts a stored snapshot holds, when the file exists and reads as one.
pub fn stored_facts(path: &std::path::Path) -> Option<Value> {
    stored_snapshot_body(&std::fs::read_to_string(path).ok()?)
}

/// Snapshots a scenario's structural facts as `snapshots/clickhouse-<version>/<name>.snap`,
/// with the statement that produced them as the snapshot's info. A stored snapshot that
/// names another engine version than its folder fails saying so instead of showing a bare
/// diff.
pub fn assert_structure<T: Serialize>(name: &str, engine_version: &str, statement: &str, facts: &T) {
    assert_structure_within(name, engine_version, statement, facts, &[]);
}

/// How far an approximate number may move from its snapshot before it counts as changed.
pub const APPROXIMATE_TOLERANCE: f64 = 0.02;

/// Like [`assert_structure`], but numbers under the keys in `approximate` count as
/// unchanged within [`APPROXIMATE_TOLERANCE`] (relative) of the stored snapshot: compressed
/// sizes move slightly between builds of the same data (LowCardinality dictionaries
/// depend on how the insert threads split the rows), counts and uncompressed sizes do not.
pub fn assert_structure_within<T: Serialize>(
    name: &str,
    engine_version: &str,
    statement: &str,
    facts: &T,
    approximate: &[&str],
) {
    let snapshot_dir = snapshot_dir(engine_version);
    if !snapshot_dir.is_dir() {
        eprintln!(
            "chbench: no snapshots for ClickHouse {engine_version} yet: this test writes its first one under {} for \
             review (cargo insta review); in CI that is a failure",
            snapshot_dir.display()
        );
    }
    let stored_path = snapshot_dir.join(format!("{name}.snap"));
    let stored = std::fs::read_to_string(&stored_path).ok().and_then(|text| stored_snapshot_body(&text));
    if let Some(stored_version) = stored.as_ref().and_then(|body| body.get("engine_version")).and_then(|v| v.as_str())
        && stored_version != engine_version
    {
        panic!(
            "snapshot {} was taken on ClickHouse {stored_version}, but its folder is this engine's \
             ({engine_version}): it was moved by hand; put it back in snapshots/clickhouse-{stored_version}/",
            stored_path.display()
        );
    }
    let mut facts = serde_json::to_value(facts).expect("facts serialise to JSON");
    if let Some(stored) = stored {
        keep_stored_within_tolerance(&mut facts, &stored, approximate, false);
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(&snapshot_dir);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_info(&statement.trim());
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_json_snapshot!(name, facts));
}

/// The JSON after a snapshot file's metadata header.
fn stored_snapshot_body(text: &str) -> Option<serde_json::Value> {
    let body = text.strip_prefix("---")?.split_once("\n---\n")?.1;
    serde_json::from_str(body).ok()
}

/// Replaces each approximate number in `facts` by the stored one when they differ by
/// less than the tolerance, so that the snapshot comparison sees them as equal.
fn keep_stored_within_tolerance(facts: &mut Value, stored: &Value, approximate: &[&str], under_key: bool) {
    match (facts, stored) {
        (Value::Object(fields), Value::Object(stored_fields)) => {
            for (key, value) in fields.iter_mut() {
                if let Some(stored_value) = stored_fields.get(key) {
                    keep_stored_within_tolerance(value, stored_value, approximate, approximate.contains(&key.as_str()));
                }
            }
        }
        (Value::Array(items), Value::Array(stored_items)) => {
            for (item, stored_item) in items.iter_mut().zip(stored_items) {
                keep_stored_within_tolerance(item, stored_item, approximate, under_key);
            }
        }
        (Value::Number(measured), Value::Number(stored_number)) if under_key => {
            if let (Some(measured_value), Some(stored_value)) = (measured.as_f64(), stored_number.as_f64())
                && (measured_value - stored_value).abs() <= APPROXIMATE_TOLERANCE * stored_value.abs()
            {
                *measured = stored_number.clone();
            }
        }
        _ => {}
    }
}

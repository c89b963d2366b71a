//! Pinned engine versions side by side (docs/embedded-engine.md, "Engine versions"): a test
//! process loads one engine, so what must run on another version runs in a process of its
//! own, this test binary run again on that one test with `CHBENCH_ENGINE_VERSION` set and
//! `CHBENCH_LIBCHDB` unset, so that it provisions the pinned library as `cargo xtask setup`
//! does (the first time: a 170 MB download, cached under `target/chbench/libchdb/<version>/`).
//! The parent waits for it with a deadline, so a hang fails the test instead of blocking it.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chbench::dataset::{Dataset, DatasetManifest, datasets_root};
use chbench::engine::{ENGINE_VERSION_ENV, LIBCHDB_ENV, asked_engine_version, engine_version_named};
use chbench::fixtures::Params;
use chbench::target_info::TargetKind;
use chbench::targets::open_target_of_kind;

/// The older pinned engine, the one with the `DROP ... SYNC` hang.
const OLDER: &str = "26.5.3";
/// How long the other process may take: a download, an extraction and a SHA-256 of 560 MB
/// the first time, then seconds.
const DEADLINE: Duration = Duration::from_secs(240);

/// Whether this process runs on `version` (then the test's body runs here); else runs
/// `test` (its full name in this binary) again in a process on `version` and fails unless
/// it passes before [`DEADLINE`].
fn on_engine(version: &str, test: &str) -> bool {
    let engine = engine_version_named(version).unwrap();
    if asked_engine_version().unwrap() == Some(engine) {
        return true;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ENGINE_VERSION_ENV, version)
        .env_remove(LIBCHDB_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut stdout, mut stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > DEADLINE {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    match status {
        Some(status) if status.success() => {
            // libtest exits 0 when the filter matched nothing: the test must have run.
            assert!(out.contains("1 passed"), "{test} did not run on {version}:\n{out}\n{err}");
        }
        Some(status) => panic!("{test} failed on {version} ({status}):\n{out}\n{err}"),
        None => panic!("{test} did not end on {version} within {DEADLINE:?} (a hang):\n{out}\n{err}"),
    }
    false
}

#[test]
fn on_26_5_3_the_first_drop_sync_in_a_fresh_folder_returns() {
    if !on_engine(OLDER, "engine_versions::on_26_5_3_the_first_drop_sync_in_a_fresh_folder_returns") {
        return;
    }
    // A fresh folder: this process's own, created empty by the open.
    let mut target = open_target_of_kind(TargetKind::Embedded).unwrap();
    assert_eq!(target.info().engine_version, "26.5.1.1");
    assert!(target.info().endpoint.contains("libchdb/26.5.3/libchdb.so"), "{}", target.info().endpoint);
    // `use_fresh_database` starts with `DROP DATABASE IF EXISTS ... SYNC`.
    target.use_fresh_database("engine_versions_drop").unwrap();
    target.execute("CREATE TABLE t (k UInt8) ENGINE = MergeTree ORDER BY k").unwrap();
    target.execute("INSERT INTO t SELECT number FROM numbers(10)").unwrap();
    target.execute("DROP TABLE t SYNC").unwrap();
    target.execute("DROP DATABASE engine_versions_drop SYNC").unwrap();
    assert_eq!(
        target.query_text("SELECT count() FROM system.databases WHERE name = 'engine_versions_drop'").unwrap(),
        "0\n"
    );
}

/// A tiny dataset of the `primary_key` pack's files, named for this test alone.
fn tiny_dataset() -> Dataset {
    let name = "engine_versions_tiny";
    let params = Params::new().with("rows", "1000");
    Dataset::new(name, name, &["primary_key/designs/readings.sql", "primary_key/generator.sql"], params)
}

/// The engine versions of the complete builds of `dataset`.
fn built_versions(dataset: &Dataset) -> BTreeSet<String> {
    let prefix = format!("{}-", dataset.name);
    std::fs::read_dir(datasets_root())
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("chbench-dataset.json")).ok())
        .map(|text| serde_json::from_str::<DatasetManifest>(&text).unwrap().engine_version)
        .collect()
}

#[test]
fn a_dataset_built_on_each_engine_version_keeps_both_builds() {
    let dataset = tiny_dataset();
    if asked_engine_version().unwrap() == Some(engine_version_named(OLDER).unwrap()) {
        // The other process: builds (or reuses) the dataset on 26.5.3, in a fresh folder.
        let (mut target, manifest) = dataset.open_on(TargetKind::Embedded).unwrap();
        assert_eq!(manifest.engine_version, "26.5.1.1");
        assert_eq!(target.query_text("SELECT count() FROM readings").unwrap(), "1000\n");
        return;
    }
    let (mut target, manifest) = dataset.open_on(TargetKind::Embedded).unwrap();
    let here = manifest.engine_version.clone();
    assert_eq!(target.query_text("SELECT count() FROM readings").unwrap(), "1000\n");
    drop(target);
    on_engine(OLDER, "engine_versions::a_dataset_built_on_each_engine_version_keeps_both_builds");
    // The other version's build did not remove this one, nor this one's that.
    let versions = built_versions(&dataset);
    assert!(versions.contains(&here) && versions.contains("26.5.1.1"), "{versions:?}");
    // Opened again here, this version's build is reused, not rebuilt.
    let (_, again) = dataset.open_on(TargetKind::Embedded).unwrap();
    assert_eq!(again.key, manifest.key);
    assert_eq!(again.build_seconds, manifest.build_seconds);
}

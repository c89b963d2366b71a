//! The results bundle: one directory per benchmark run, `results/<run-id>/`, holding
//! `results.json` (this module's [`RunBundle`], schema [`SCHEMA_VERSION`], every field
//! documented in `docs/results.md`), the exact SQL files the run used under `sql/`, and
//! the report made from them.
//!
//! A bundle is a common envelope (run id, status, phase, times, target, settings, SQL
//! files, machine, error) around one benchmark kind's own results, tagged by the kind's
//! name: any type that is [`KindResults`]. This module knows no kind; the types it stores
//! are records of their own modules (statistics, query runs, target and machine
//! descriptions, the storage baseline).
//!
//! The bundle is written as the run goes ([`writer`]). It starts as `incomplete`, and
//! every recorded step rewrites `results.json` atomically (a temporary file, then a
//! rename). Every query sample is also appended, as it is measured, to `samples.jsonl`, a
//! journal ([`journal`]) that [`load_bundle`] folds back in: rewriting `results.json` per
//! sample would cost time that grows with the run. A run that stops anyhow (an error,
//! Ctrl-C, a kill) leaves a valid bundle: it is still marked incomplete, and it holds
//! every step and every sample measured before it stopped. Only a run that finishes marks
//! it `complete`; a run that ends in this process (finished, failed or interrupted) has
//! everything in `results.json` and removes the journal. Credentials are never part of a
//! bundle: [`TargetInfo`] holds none.
//!
//! Whatever the writer produces, the reader accepts: a number that may be unknown is an
//! `Option`, written as `null` when `None` (as is any number that is not finite: JSON has
//! no NaN) and read back as `None`, which reports show as unknown.

pub mod example;
mod journal;
mod load;
mod writer;

use std::fmt::Debug;

use anyhow::{Result, bail};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use self::load::{bundle_is_complete, bundle_kind, load_bundle};
pub use self::writer::{
    BundleWriter, ExistingFolder, prepare_folder_of_flag, prepare_results_folder, refuse_a_file_for_a_folder,
    refuse_a_taken_run_id,
};
use crate::ab_variants::AbRun;
use crate::machine::MachineInfo;
use crate::query_runs::QueryRuns;
use crate::settings::Settings;
use crate::storage_baseline::StorageBaselineRecord;
use crate::target_info::TargetInfo;

/// Bumped whenever a field changes meaning or is removed; readers refuse other versions.
/// Schema 1 was one bundle type for the logs benchmark; schema 2 is the envelope.
pub const SCHEMA_VERSION: u32 = 2;
pub const RESULTS_FILE: &str = "results.json";
/// The journal of samples measured since `results.json` was last written.
pub const SAMPLES_FILE: &str = "samples.jsonl";
/// The longest run id accepted (it names a folder).
const MAX_RUN_ID_LEN: usize = 100;

/// The phase a bundle records before its kind's first phase starts.
pub const STARTING: &str = "starting";
/// The phase a bundle records once every phase of its kind ran.
pub const DONE: &str = "done";
/// The phase a bundle records while the run removes what it made on the target, after
/// every phase ran (a run whose phase failed keeps that phase's name).
pub const CLEAN_UP: &str = "clean_up";
/// The phase a bundle records while a profiled run (`--profile`) reads its statements'
/// samples, after its clean-up: what it measured is saved by then.
pub const PROFILES: &str = "profiles";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Running, or stopped before the end: everything recorded so far is valid.
    Incomplete,
    Complete,
}

/// One benchmark kind's part of a bundle: what the envelope holds under `benchmark`,
/// tagged with the kind's name, and the query runs the samples journal folds into.
pub trait KindResults: Debug + Clone + PartialEq + Serialize + DeserializeOwned + Send {
    /// The kind's name, as `cargo xtask bench` takes it and `benchmark.kind` records it.
    const KIND: &'static str;
    /// The forms the kind measures a query in (e.g. without and with a skip index).
    type Variant: Debug + Clone + PartialEq + Serialize + DeserializeOwned + Send;

    /// Every query run of the benchmark, in the order they started.
    fn queries(&self) -> &[QueryRuns<Self::Variant>];
    fn queries_mut(&mut self) -> &mut Vec<QueryRuns<Self::Variant>>;
    /// What a run of the kind was asked to do, by name (its dataset: generator and rows),
    /// so that a comparison refuses two runs that differ in them. Empty by default.
    fn compared_inputs(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The queries the run's own checks failed (their answers), by query name (every form
    /// of it) or by one form's label in a comparison (`compare::runs_label`), each with
    /// why: a comparison leaves them out of every total and calls them failed, never
    /// faster or slower. Empty by default.
    fn failed_queries(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// What a run was asked to do that a comparison is there to show rather than refuse
    /// (the threads a query may use, which a comparison of node types is meant to differ
    /// in), by name: said under what differs. Empty by default.
    fn stated_inputs(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// Everything one benchmark run measured: the envelope every kind shares, and the kind's
/// own results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "Results: KindResults")]
pub struct RunBundle<Results> {
    pub schema_version: u32,
    pub run_id: String,
    pub status: RunStatus,
    /// The phase that was running when the bundle was last written, by the name its kind
    /// gives it ([`STARTING`] and [`DONE`] before and after every phase).
    pub phase: String,
    /// RFC 3339, UTC.
    pub started_at: jiff::Timestamp,
    pub finished_at: Option<jiff::Timestamp>,
    pub target: TargetInfo,
    /// What fio measured on the target's volume, read from the target when the run
    /// started, or why it is unknown. A bundle written before the field existed reads as
    /// unknown, with that reason.
    #[serde(default)]
    pub storage_baseline: StorageBaselineRecord,
    /// Settings in force for every statement unless a sample says otherwise.
    pub session_settings: Settings,
    /// The SQL files used, relative to `fixtures/`, copied verbatim under `sql/`.
    pub sql_files: Vec<String>,
    /// The machine the run measured on, and whether it was quiet.
    pub machine: Option<MachineInfo>,
    /// Why the run stopped early, when it did so with an error.
    pub error: Option<String>,
    /// The variants an A/B run measured in turns, and how; `None` for a run of one
    /// configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab_run: Option<AbRun>,
    /// The query profiler's flame graphs of the measured queries (`--profile`), or why
    /// there are none; `None` for a run that asked for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiles: Option<crate::profiles::ProfileRecord>,
    #[serde(serialize_with = "tagged_with_kind", deserialize_with = "of_kind")]
    pub benchmark: Results,
}

/// `{"kind": "<KIND>", ...the kind's fields}`: the kind's results with its name first.
fn tagged_with_kind<Results: KindResults, S: Serializer>(results: &Results, serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Tagged<'a, Results> {
        kind: &'static str,
        #[serde(flatten)]
        results: &'a Results,
    }
    Tagged { kind: Results::KIND, results }.serialize(serializer)
}

/// Reads what [`tagged_with_kind`] wrote, refusing another kind's results. The kind is
/// read from the results' text first (a bundle of 10 MB is read in one pass more, rather
/// than built as a `Value` and converted).
fn of_kind<'de, Results: KindResults, D: Deserializer<'de>>(deserializer: D) -> Result<Results, D::Error> {
    #[derive(Deserialize)]
    struct KindOnly {
        kind: Option<serde_json::Value>,
    }
    // Borrowed from the text being read (a bundle is read from a string), not copied: a
    // copy of a large bundle's results is as large as the file.
    let raw = <&serde_json::value::RawValue>::deserialize(deserializer)?;
    let KindOnly { kind } = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
    match kind {
        Some(serde_json::Value::String(kind)) if kind == Results::KIND => {}
        Some(serde_json::Value::String(kind)) => {
            return Err(D::Error::custom(format!("the benchmark is of kind {kind}, not {}", Results::KIND)));
        }
        _ => return Err(D::Error::custom("the benchmark has no kind")),
    }
    serde_json::from_str(raw.get()).map_err(D::Error::custom)
}

/// Where the bundle keeps a copy of SQL file `file` (an entry of `sql_files`), relative
/// to its folder: `sql/<file>` for a fixture (relative to `fixtures/`), and
/// `sql/outside/<path>` for a file outside `fixtures/`, given by its absolute path (a
/// ClickBench checkout's `queries.sql`), so that no entry can name a place outside `sql/`.
pub fn bundled_sql_path(file: &str) -> std::path::PathBuf {
    let path = std::path::Path::new(file);
    if path.is_absolute() {
        let inside: std::path::PathBuf =
            path.components().filter(|part| matches!(part, std::path::Component::Normal(_))).collect();
        return std::path::Path::new("sql").join("outside").join(inside);
    }
    std::path::Path::new("sql").join(file)
}

/// A run id names a folder under the results folder: letters, digits, `.`, `_` and
/// `-`, not starting with `.` or `-`, so that it can never name a path elsewhere.
pub fn check_run_id(run_id: &str) -> Result<()> {
    let safe = run_id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if run_id.is_empty() || run_id.len() > MAX_RUN_ID_LEN || !safe || run_id.starts_with('.') || run_id.starts_with('-')
    {
        bail!(
            "{run_id:?} is not a usable run id: use 1 to {MAX_RUN_ID_LEN} letters, digits, `.`, `_` or `-`, \
             not starting with `.` or `-` (it names a folder under the results folder)"
        );
    }
    Ok(())
}

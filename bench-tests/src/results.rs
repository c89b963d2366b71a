//! The results bundle: one directory per benchmark run, `results/<run-id>/`, holding
//! `results.json` (this module's [`RunBundle`], schema [`SCHEMA_VERSION`]), the exact SQL
//! files the run used under `sql/`, and the report made from them.
//!
//! The bundle is written as the run goes. It starts as `incomplete`, and every recorded
//! step rewrites `results.json` atomically (a temporary file, then a rename). A run that
//! stops anyhow (an error, Ctrl-C, a kill) leaves a valid bundle: it is still marked
//! incomplete, and it holds everything measured up to its last completed step. Only a run
//! that finishes marks it `complete`. Credentials are never part of a bundle:
//! [`TargetInfo`] holds none.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::breakdown::TimeBreakdown;
use crate::cost::CostModel;
use crate::measure::QueryStats;
use crate::parts::ColumnBytes;
use crate::settings::Settings;
use crate::target::TargetInfo;

/// Bumped whenever a field changes meaning or is removed; readers refuse other versions.
pub const SCHEMA_VERSION: u32 = 1;
pub const RESULTS_FILE: &str = "results.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Running, or stopped before the end: everything recorded so far is valid.
    Incomplete,
    Complete,
}

/// Everything one benchmark run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunBundle {
    pub schema_version: u32,
    pub run_id: String,
    pub status: RunStatus,
    /// Why the run stopped early, when it did so with an error.
    pub error: Option<String>,
    /// The step that was running when the bundle was last written.
    pub phase: String,
    /// Seconds since the Unix epoch.
    pub started_at: u64,
    pub finished_at: Option<u64>,
    pub target: TargetInfo,
    pub dataset: DatasetParams,
    /// Settings in force for every statement unless a sample says otherwise.
    pub session_settings: Settings,
    /// The volume's read limit, when the target knows it (MiB/s).
    pub volume_limit_mib_per_s: Option<f64>,
    /// The SQL files used, relative to `fixtures/`, copied verbatim under `sql/`.
    pub sql_files: Vec<String>,
    pub ingest: Option<Ingest>,
    pub storage: Vec<StorageSnapshot>,
    pub zstd_reinsert: Option<Step>,
    pub queries: Vec<QueryRuns>,
    pub bloom_filter: Option<BloomFilter>,
    pub cost: Option<CostModel>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetParams {
    pub name: String,
    pub rows: u64,
    pub step_ms: u64,
    pub warm_runs: u32,
}

/// A timed statement that is not a query run (DDL, re-insert, materialize).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub seconds: f64,
    pub stats: Option<QueryStats>,
}

/// The server-side `INSERT ... SELECT` of the generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ingest {
    pub rows: u64,
    /// Through the harness (`measure`): the figure the report shows.
    pub seconds: f64,
    pub rows_per_second: f64,
    /// The same statement run straight on the engine in the same run, without the
    /// harness's tagging and statistics reads, into a table dropped afterwards. Both
    /// figures are the engine's own duration of the statement.
    pub raw_engine_seconds: f64,
    pub raw_engine_rows_per_second: f64,
    pub partitions: u64,
    pub active_parts: u64,
    pub stats: QueryStats,
}

/// Bytes per column of one table at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageSnapshot {
    /// What this is, e.g. `LZ4 (default), as ingested`.
    pub label: String,
    pub table: String,
    pub codec: String,
    pub active_parts: u64,
    pub partitions: u64,
    pub columns: Vec<ColumnBytes>,
}

impl StorageSnapshot {
    pub fn compressed_bytes(&self) -> u64 {
        self.columns.iter().map(|column| column.compressed_bytes).sum()
    }

    pub fn uncompressed_bytes(&self) -> u64 {
        self.columns.iter().map(|column| column.uncompressed_bytes).sum()
    }

    /// Uncompressed over compressed bytes of the whole table.
    pub fn compression_ratio(&self) -> f64 {
        self.uncompressed_bytes() as f64 / self.compressed_bytes().max(1) as f64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleKind {
    /// After dropping the caches, with `min_bytes_to_use_direct_io = 1`.
    DirectIo,
    Warm,
}

/// One run of one query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub kind: SampleKind,
    pub attempt: u32,
    /// Statement-level settings of this run (on top of the session's).
    pub settings: Settings,
    pub stats: QueryStats,
    pub breakdown: TimeBreakdown,
}

/// Every run of one query in one variant (e.g. Q5 `without index` and `bloom filter`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryRuns {
    pub query: String,
    pub variant: String,
    pub sql_file: String,
    /// The first run's result, as tab-separated text (cut to 2,000 characters).
    pub answer: String,
    pub samples: Vec<Sample>,
}

impl QueryRuns {
    pub fn direct_io(&self) -> Option<&Sample> {
        self.samples.iter().find(|sample| sample.kind == SampleKind::DirectIo)
    }

    pub fn warm_samples(&self) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(|sample| sample.kind == SampleKind::Warm)
    }

    /// The warm run with the median server-side duration (the upper middle one for an
    /// even count).
    pub fn warm_median_sample(&self) -> Option<&Sample> {
        let mut warm: Vec<&Sample> = self.warm_samples().collect();
        warm.sort_by_key(|sample| sample.stats.server_duration_us);
        warm.get(warm.len() / 2).copied()
    }

    /// Server-side durations of the warm runs, in milliseconds, sorted.
    pub fn warm_ms(&self) -> Vec<f64> {
        let mut warm: Vec<f64> =
            self.warm_samples().map(|sample| sample.stats.server_duration_us as f64 / 1e3).collect();
        warm.sort_by(f64::total_cmp);
        warm
    }

    pub fn warm_min_ms(&self) -> Option<f64> {
        self.warm_ms().first().copied()
    }

    pub fn warm_median_ms(&self) -> Option<f64> {
        median(&self.warm_ms())
    }

    /// Median of client-observed minus server-reported time over the warm runs: what
    /// the harness and transport add to a query.
    pub fn harness_overhead_ms(&self) -> Option<f64> {
        let mut overhead: Vec<f64> = self
            .warm_samples()
            .map(|sample| {
                (sample.stats.client_duration_us as f64 - sample.stats.server_duration_us as f64).max(0.0) / 1e3
            })
            .collect();
        overhead.sort_by(f64::total_cmp);
        median(&overhead)
    }
}

/// The median of sorted values (the mean of the middle two for an even count).
pub fn median(sorted: &[f64]) -> Option<f64> {
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BloomFilter {
    pub add_index: Step,
    pub materialize: Step,
    pub index_compressed_bytes: u64,
    pub index_uncompressed_bytes: u64,
    pub table_compressed_bytes: u64,
}

/// Writes a bundle as the run goes.
pub struct BundleWriter {
    dir: PathBuf,
    pub bundle: RunBundle,
}

impl BundleWriter {
    /// Creates `<root>/<run_id>/`, copies the SQL files into `sql/` and writes the first,
    /// incomplete `results.json`.
    pub fn create(root: &Path, bundle: RunBundle) -> Result<BundleWriter> {
        let dir = root.join(&bundle.run_id);
        if dir.exists() {
            bail!("the results folder {} already exists; choose another run id", dir.display());
        }
        fs::create_dir_all(dir.join("sql")).with_context(|| format!("cannot create {}", dir.display()))?;
        let fixtures = crate::fixtures::fixtures_root();
        for relative in &bundle.sql_files {
            let destination = dir.join("sql").join(relative);
            if let Some(parent) = destination.parent() {
                fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
            }
            fs::copy(fixtures.join(relative), &destination)
                .with_context(|| format!("cannot copy fixture {relative} into the bundle"))?;
        }
        let writer = BundleWriter { dir, bundle };
        writer.save()?;
        Ok(writer)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records the step about to run and saves.
    pub fn phase(&mut self, phase: &str) -> Result<()> {
        self.bundle.phase = phase.to_string();
        self.save()
    }

    /// Rewrites `results.json` atomically.
    pub fn save(&self) -> Result<()> {
        let path = self.dir.join(RESULTS_FILE);
        let temporary = self.dir.join(format!("{RESULTS_FILE}.tmp"));
        let text = serde_json::to_string_pretty(&self.bundle).context("cannot serialise the results")?;
        fs::write(&temporary, text).with_context(|| format!("cannot write {}", temporary.display()))?;
        fs::rename(&temporary, &path).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Marks the run complete (or failed, with the error) and saves.
    pub fn finish(&mut self, error: Option<String>) -> Result<()> {
        self.bundle.finished_at = Some(unix_seconds());
        match error {
            None => {
                self.bundle.status = RunStatus::Complete;
                self.bundle.phase = "done".to_string();
            }
            Some(error) => self.bundle.error = Some(error),
        }
        self.save()
    }
}

/// Reads `results.json` from a bundle folder, refusing other schema versions.
pub fn load_bundle(dir: &Path) -> Result<RunBundle> {
    let path = dir.join(RESULTS_FILE);
    let text = fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let version: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let found = version.get("schema_version").and_then(serde_json::Value::as_u64);
    if found != Some(u64::from(SCHEMA_VERSION)) {
        bail!("{} has results schema {found:?}; this version reads schema {SCHEMA_VERSION}", path.display());
    }
    serde_json::from_str(&text)
        .with_context(|| format!("{} does not match results schema {SCHEMA_VERSION}", path.display()))
}

pub fn unix_seconds() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|elapsed| elapsed.as_secs()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, 2.0, 9.0]), Some(2.0));
        assert_eq!(median(&[1.0, 2.0, 4.0, 9.0]), Some(3.0));
    }
}

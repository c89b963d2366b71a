//! The results bundle: one directory per benchmark run, `results/<run-id>/`, holding
//! `results.json` (this module's [`RunBundle`], schema [`SCHEMA_VERSION`]), the exact SQL
//! files the run used under `sql/`, and the report made from them.
//!
//! The bundle is written as the run goes. It starts as `incomplete`, and every recorded
//! step rewrites `results.json` atomically (a temporary file, then a rename). Every query
//! sample is also appended, as it is measured, to `samples.jsonl`, a journal that
//! [`load_bundle`] folds back in: rewriting `results.json` per sample would cost time
//! that grows with the run. A run that stops anyhow (an error, Ctrl-C, a kill) leaves a
//! valid bundle: it is still marked incomplete, and it holds every step and every sample
//! measured before it stopped. Only a run that finishes marks it `complete`; a run that
//! ends in this process (finished, failed or interrupted) has everything in
//! `results.json` and removes the journal. Credentials are never part of a bundle:
//! [`TargetInfo`] holds none.
//!
//! Whatever the writer produces, the reader accepts: a number that is not finite is
//! written as `null` (JSON has no NaN) and read back as NaN, which reports show as
//! unknown; fields added since schema 1 came out have defaults.

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Deserializer, Serialize};

use crate::breakdown::TimeBreakdown;
use crate::cost::CostModel;
use crate::machine::MachineInfo;
use crate::measure::QueryStats;
use crate::parts::ColumnBytes;
use crate::settings::Settings;
use crate::targets::TargetInfo;

/// Bumped whenever a field changes meaning or is removed; readers refuse other versions.
pub const SCHEMA_VERSION: u32 = 1;
pub const RESULTS_FILE: &str = "results.json";
/// The journal of samples measured since `results.json` was last written.
pub const SAMPLES_FILE: &str = "samples.jsonl";
/// The longest run id accepted (it names a folder).
const MAX_RUN_ID_LEN: usize = 100;

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
    /// The machine the run measured on, and whether it was quiet.
    #[serde(default)]
    pub machine: Option<MachineInfo>,
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
    #[serde(deserialize_with = "nan_if_null")]
    pub seconds: f64,
    pub stats: Option<QueryStats>,
}

/// The server-side `INSERT ... SELECT` of the generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ingest {
    pub rows: u64,
    /// Through the harness (`measure`): the figure the report shows.
    #[serde(deserialize_with = "nan_if_null")]
    pub seconds: f64,
    /// Unknown (`null`) when the engine reported no duration to divide by.
    pub rows_per_second: Option<f64>,
    /// The same statement run straight on the engine in the same run, without the
    /// harness's tagging and statistics reads, into a table dropped afterwards. Both
    /// figures are the engine's own duration of the statement.
    #[serde(deserialize_with = "nan_if_null")]
    pub raw_engine_seconds: f64,
    pub raw_engine_rows_per_second: Option<f64>,
    pub partitions: u64,
    pub active_parts: u64,
    pub stats: QueryStats,
}

/// Bytes of one table, in all and per column, at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageSnapshot {
    /// What this is, e.g. `LZ4 (default), as ingested`.
    pub label: String,
    pub table: String,
    pub codec: String,
    pub active_parts: u64,
    pub partitions: u64,
    /// The whole table's data bytes, from `system.parts` (known for every kind of part).
    /// Absent in bundles written before it was recorded: the columns' sum stands in.
    #[serde(default)]
    pub table_bytes: Option<TableBytes>,
    /// Active parts that keep all columns in one file: ClickHouse records no per-column
    /// sizes for them.
    #[serde(default)]
    pub compact_parts: u64,
    /// Bytes per column, summed over the wide parts; empty when every part is compact.
    pub columns: Vec<ColumnBytes>,
    /// What `columns` leaves out (compact parts), when it leaves anything out.
    #[serde(default)]
    pub columns_note: Option<String>,
}

/// Compressed and uncompressed data bytes of a whole table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableBytes {
    pub compressed_bytes: u64,
    pub uncompressed_bytes: u64,
}

impl StorageSnapshot {
    pub fn compressed_bytes(&self) -> u64 {
        match self.table_bytes {
            Some(table) => table.compressed_bytes,
            None => self.columns.iter().map(|column| column.compressed_bytes).sum(),
        }
    }

    pub fn uncompressed_bytes(&self) -> u64 {
        match self.table_bytes {
            Some(table) => table.uncompressed_bytes,
            None => self.columns.iter().map(|column| column.uncompressed_bytes).sum(),
        }
    }

    /// Uncompressed over compressed bytes of the whole table; unknown for an empty table.
    pub fn compression_ratio(&self) -> Option<f64> {
        ratio(self.uncompressed_bytes() as f64, self.compressed_bytes() as f64)
    }
}

/// `numerator / denominator` when both are finite and the denominator is positive:
/// a rate or ratio over nothing is unknown, never zero or infinite.
pub fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    let value = numerator / denominator;
    (denominator > 0.0 && value.is_finite()).then_some(value)
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

impl BloomFilter {
    /// The index's compressed bytes over the table's; unknown for an empty table.
    pub fn index_share_of_table(&self) -> Option<f64> {
        ratio(self.index_compressed_bytes as f64, self.table_compressed_bytes as f64)
    }
}

/// Writes a bundle as the run goes.
pub struct BundleWriter {
    dir: PathBuf,
    pub bundle: RunBundle,
    /// The samples journal, opened on the first sample.
    journal: Option<File>,
}

/// What [`BundleWriter::create`] does when the run's folder exists already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExistingFolder {
    /// Refuse: the user chose the run id.
    Refuse,
    /// Add `-2`, `-3`, ... to the run id: it was made up from the time, and another run
    /// started in the same second.
    AddSuffix,
}

impl BundleWriter {
    /// Creates `<root>/<run_id>/` (atomically: of two runs with the same id, one gets
    /// the folder and the other an error), copies the SQL files into `sql/` and writes
    /// the first, incomplete `results.json`.
    pub fn create(root: &Path, mut bundle: RunBundle, existing: ExistingFolder) -> Result<BundleWriter> {
        check_run_id(&bundle.run_id)?;
        fs::create_dir_all(root).with_context(|| format!("cannot create the results folder {}", root.display()))?;
        let base_id = bundle.run_id.clone();
        let mut attempt = 1;
        let dir = loop {
            let dir = root.join(&bundle.run_id);
            match fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    if existing == ExistingFolder::Refuse || attempt >= 100 {
                        bail!("the results folder {} already exists; choose another run id", dir.display());
                    }
                    attempt += 1;
                    bundle.run_id = format!("{base_id}-{attempt}");
                }
                Err(error) => return Err(error).with_context(|| format!("cannot create {}", dir.display())),
            }
        };
        let fixtures = crate::fixtures::fixtures_root();
        for relative in &bundle.sql_files {
            let destination = dir.join("sql").join(relative);
            if let Some(parent) = destination.parent() {
                fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
            }
            fs::copy(fixtures.join(relative), &destination)
                .with_context(|| format!("cannot copy fixture {relative} into the bundle"))?;
        }
        let writer = BundleWriter { dir, bundle, journal: None };
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

    /// Starts the runs of one query: saved at once, so that its samples have a place
    /// to go back to when the journal is read.
    pub fn start_query(&mut self, runs: QueryRuns) -> Result<()> {
        self.bundle.queries.push(runs);
        self.save()
    }

    /// Adds a sample to the query started last and appends it to the journal, so it is
    /// on disk before the next one is measured. `answer` is the query's result, given
    /// with the first sample.
    pub fn record_sample(&mut self, sample: Sample, answer: Option<String>) -> Result<()> {
        let query_index = self.bundle.queries.len().checked_sub(1).context("a sample before any query started")?;
        let record = JournalRecord { query_index, answer, sample };
        let mut line = serde_json::to_string(&record).context("cannot serialise a sample")?;
        line.push('\n');
        let path = self.dir.join(SAMPLES_FILE);
        let journal = match &mut self.journal {
            Some(journal) => journal,
            empty => empty.insert(
                File::options()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .with_context(|| format!("cannot open {}", path.display()))?,
            ),
        };
        // One write per line: a kill leaves at most a partial last line, which the
        // reader drops. The kernel has it once write returns; no fsync, since the
        // journal guards against the process stopping, not the machine.
        journal.write_all(line.as_bytes()).with_context(|| format!("cannot append to {}", path.display()))?;
        record.fold_into(&mut self.bundle);
        Ok(())
    }

    /// Marks the run complete (or failed, with the error) and saves. Everything is in
    /// `results.json` then, so the journal goes.
    pub fn finish(&mut self, error: Option<String>) -> Result<()> {
        self.bundle.finished_at = Some(unix_seconds());
        match error {
            None => {
                self.bundle.status = RunStatus::Complete;
                self.bundle.phase = "done".to_string();
            }
            Some(error) => self.bundle.error = Some(error),
        }
        self.save()?;
        self.journal = None;
        match fs::remove_file(self.dir.join(SAMPLES_FILE)) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => {
                Err(error).with_context(|| format!("cannot remove {}", self.dir.join(SAMPLES_FILE).display()))
            }
            _ => Ok(()),
        }
    }
}

/// One line of the samples journal.
#[derive(Debug, Serialize, Deserialize)]
struct JournalRecord {
    /// Which of the bundle's `queries` the sample belongs to.
    query_index: usize,
    answer: Option<String>,
    sample: Sample,
}

impl JournalRecord {
    /// Adds the sample to its query unless the query has it already (`results.json`
    /// may have been saved after the sample was journaled).
    fn fold_into(self, bundle: &mut RunBundle) {
        let Some(runs) = bundle.queries.get_mut(self.query_index) else { return };
        if let Some(answer) = self.answer
            && runs.answer.is_empty()
        {
            runs.answer = answer;
        }
        let known =
            runs.samples.iter().any(|sample| sample.kind == self.sample.kind && sample.attempt == self.sample.attempt);
        if !known {
            runs.samples.push(self.sample);
        }
    }
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

/// Reads a bundle folder: `results.json`, refusing other schema versions, with the
/// samples journal folded in.
pub fn load_bundle(dir: &Path) -> Result<RunBundle> {
    let path = dir.join(RESULTS_FILE);
    let text = fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let version: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    match version.get("schema_version").and_then(serde_json::Value::as_u64) {
        None => bail!("{} is not a results bundle: it has no schema_version", path.display()),
        Some(found) if found != u64::from(SCHEMA_VERSION) => {
            bail!("{} has results schema {found}; this version reads schema {SCHEMA_VERSION}", path.display())
        }
        Some(_) => {}
    }
    let mut bundle: RunBundle = serde_json::from_str(&text)
        .with_context(|| format!("{} does not match results schema {SCHEMA_VERSION}", path.display()))?;
    fold_journal(dir, &mut bundle)?;
    Ok(bundle)
}

/// Folds the samples journal, if any, into `bundle`. A last line without its newline
/// was cut short by a kill and is dropped; any other unreadable line is an error.
fn fold_journal(dir: &Path, bundle: &mut RunBundle) -> Result<()> {
    let path = dir.join(SAMPLES_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
    };
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    for (index, line) in complete.lines().enumerate() {
        let record: JournalRecord = serde_json::from_str(line)
            .with_context(|| format!("{}:{} is not a sample record", path.display(), index + 1))?;
        record.fold_into(bundle);
    }
    Ok(())
}

/// Reads a number that may have been written as `null` (not finite: JSON has no NaN)
/// as NaN, so that nothing the writer produces is refused; reports show it as unknown.
pub fn nan_if_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
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

//! The results bundle: one directory per benchmark run, `results/<run-id>/`, holding
//! `results.json` (this module's [`RunBundle`], schema [`SCHEMA_VERSION`], every field
//! documented in `docs/results.md`), the exact SQL files the run used under `sql/`, and
//! the report made from them.
//!
//! A bundle is a common envelope (run id, status, phase, times, target, settings, SQL
//! files, machine, error) around one benchmark's own results, tagged by its kind
//! ([`BenchmarkResults`]). Types every kind uses (query runs, samples, steps, storage
//! snapshots) live here; each kind's own live in its folder under `benchmarks/`.
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
//! unknown.

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Deserializer, Serialize};

use crate::benchmarks::logs::LogsResults;
use crate::breakdown::TimeBreakdown;
use crate::machine::MachineInfo;
use crate::measure::QueryStats;
use crate::parts::ColumnBytes;
use crate::settings::Settings;
use crate::storage_baseline::StorageBaselineRecord;
use crate::targets::TargetInfo;

/// Bumped whenever a field changes meaning or is removed; readers refuse other versions.
/// Schema 1 was one bundle type for the logs benchmark; schema 2 is the envelope.
pub const SCHEMA_VERSION: u32 = 2;
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

/// Where a run is, or was when it stopped. One list for every benchmark kind: each runs
/// the phases it has, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The bundle exists; nothing has run yet.
    Starting,
    /// Loading the dataset.
    Ingest,
    /// Bytes per table and column, under each codec.
    Storage,
    /// The measured queries.
    Queries,
    /// Adding a skip index and running the query it serves again.
    BloomFilter,
    /// The cost arithmetic.
    Cost,
    /// Every phase ran.
    Done,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Ingest => "ingest",
            Phase::Storage => "storage",
            Phase::Queries => "queries",
            Phase::BloomFilter => "bloom filter",
            Phase::Cost => "cost",
            Phase::Done => "done",
        }
    }
}

/// Everything one benchmark run measured: the envelope every kind shares, and the kind's
/// own results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunBundle {
    pub schema_version: u32,
    pub run_id: String,
    pub status: RunStatus,
    /// The phase that was running when the bundle was last written.
    pub phase: Phase,
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
    pub benchmark: BenchmarkResults,
}

/// One benchmark kind's results, tagged by the kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BenchmarkResults {
    Logs(LogsResults),
}

impl BenchmarkResults {
    /// The kind's name, as `cargo xtask bench` takes it.
    pub fn kind(&self) -> &'static str {
        match self {
            BenchmarkResults::Logs(_) => "logs",
        }
    }

    /// Every query run of the benchmark, where the samples journal folds back in.
    pub fn queries(&self) -> &[QueryRuns] {
        match self {
            BenchmarkResults::Logs(logs) => &logs.queries,
        }
    }

    pub fn queries_mut(&mut self) -> &mut Vec<QueryRuns> {
        match self {
            BenchmarkResults::Logs(logs) => &mut logs.queries,
        }
    }
}

/// A timed statement that is not a query run (DDL, re-insert, materialize).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    #[serde(deserialize_with = "nan_if_null")]
    pub seconds: f64,
    pub stats: Option<QueryStats>,
}

/// Bytes of one table, in all and per column, at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageSnapshot {
    /// When it was taken, e.g. `as ingested, 26 active parts`.
    pub label: String,
    pub table: String,
    pub codec: String,
    pub active_parts: u64,
    pub partitions: u64,
    /// Active parts that keep all columns in one file: ClickHouse records no per-column
    /// sizes for them.
    pub compact_parts: u64,
    /// The whole table's data bytes, from `system.parts` (known for every kind of part).
    pub table_bytes: TableBytes,
    /// Bytes per column, summed over the wide parts; empty when every part is compact.
    pub columns: Vec<ColumnBytes>,
    /// What `columns` leaves out (compact parts), when it leaves anything out.
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
        self.table_bytes.compressed_bytes
    }

    pub fn uncompressed_bytes(&self) -> u64 {
        self.table_bytes.uncompressed_bytes
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

/// Which form of a query's setting was measured: the same query before and after a
/// change to the table (e.g. Q5 without and with its bloom filter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryVariant {
    /// The query on the table as designed.
    Default,
    /// Before the skip index that serves it exists.
    WithoutIndex,
    /// After a bloom filter skip index was added and materialized.
    BloomFilter,
}

impl QueryVariant {
    pub fn label(self) -> &'static str {
        match self {
            QueryVariant::Default => "default",
            QueryVariant::WithoutIndex => "without index",
            QueryVariant::BloomFilter => "bloom filter",
        }
    }
}

/// Every run of one query in one variant (e.g. Q5 `without_index` and `bloom_filter`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryRuns {
    pub query: String,
    pub variant: QueryVariant,
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
        let mut warm: Vec<f64> = self.warm_samples().map(|sample| sample.stats.server_ms()).collect();
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
        prepare_results_folder(root)?;
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
    pub fn phase(&mut self, phase: Phase) -> Result<()> {
        self.bundle.phase = phase;
        self.save()
    }

    /// Rewrites `results.json` atomically.
    pub fn save(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(&self.bundle).context("cannot serialise the results")?;
        write_atomically(&self.dir.join(RESULTS_FILE), &text)
    }

    /// Starts the runs of one query: saved at once, so that its samples have a place
    /// to go back to when the journal is read.
    pub fn start_query(&mut self, runs: QueryRuns) -> Result<()> {
        self.bundle.benchmark.queries_mut().push(runs);
        self.save()
    }

    /// Adds a sample to the query started last and appends it to the journal, so it is
    /// on disk before the next one is measured. `answer` is the query's result, given
    /// with the first sample.
    pub fn record_sample(&mut self, sample: Sample, answer: Option<String>) -> Result<()> {
        let query_index =
            self.bundle.benchmark.queries().len().checked_sub(1).context("a sample before any query started")?;
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
        // The query was started just above: the sample always has its place.
        record.fold_into(&mut self.bundle);
        Ok(())
    }

    /// Marks the run complete (or failed, with the error) and saves. Everything is in
    /// `results.json` then, so the journal goes.
    pub fn finish(&mut self, error: Option<String>) -> Result<()> {
        self.bundle.finished_at = Some(jiff::Timestamp::now());
        match error {
            None => {
                self.bundle.status = RunStatus::Complete;
                self.bundle.phase = Phase::Done;
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

/// Writes a file whole or not at all: into a temporary file of its own in the same
/// folder, then renamed into place, so that a reader (or a kill) never sees half of it and
/// two writers at once do not trip over one temporary name.
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut temporary =
        tempfile::NamedTempFile::new_in(folder).with_context(|| format!("cannot write into {}", folder.display()))?;
    temporary.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
    temporary.persist(path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Creates the folder runs go into, or checks that it is one: done before a run starts
/// its engine, so that a bad `--results-dir` costs nothing.
pub fn prepare_results_folder(root: &Path) -> Result<()> {
    if root.exists() && !root.is_dir() {
        bail!("the results folder {} is not a folder; give --results-dir a folder", root.display());
    }
    fs::create_dir_all(root).with_context(|| format!("cannot create the results folder {}", root.display()))
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
    /// Adds the sample to its query; `false` when the bundle has no such query (the
    /// journal does not belong to this `results.json`).
    fn fold_into(self, bundle: &mut RunBundle) -> bool {
        let Some(runs) = bundle.benchmark.queries_mut().get_mut(self.query_index) else { return false };
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
        true
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
        Some(1) => bail!(
            "{} has results schema 1, written by an earlier chbench; this one reads schema {SCHEMA_VERSION}: run \
             the benchmark again (`cargo xtask bench`), or render it with the chbench that wrote it",
            path.display()
        ),
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
        let query_index = record.query_index;
        if !record.fold_into(bundle) {
            bail!(
                "{}:{} is a sample of query {query_index}, which results.json does not have: the journal belongs \
                 to another run",
                path.display(),
                index + 1
            );
        }
    }
    Ok(())
}

/// Reads a number that may have been written as `null` (not finite: JSON has no NaN)
/// as NaN, so that nothing the writer produces is refused; reports show it as unknown.
pub fn nan_if_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
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

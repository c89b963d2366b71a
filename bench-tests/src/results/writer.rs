//! Writing a bundle as the run goes: the folder created atomically with the run's SQL
//! files, `results.json` rewritten atomically after every step, each sample appended to
//! the journal as it is measured.

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::journal::JournalRecord;
use super::{DONE, KindResults, RESULTS_FILE, RunBundle, RunStatus, SAMPLES_FILE, check_run_id};
use crate::files::{fixtures_root, write_atomically};
use crate::query_runs::{QueryRuns, Sample};

/// Writes a bundle as the run goes.
pub struct BundleWriter<Results> {
    dir: PathBuf,
    pub bundle: RunBundle<Results>,
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

impl<Results: KindResults> BundleWriter<Results> {
    /// Creates `<root>/<run_id>/` (atomically: of two runs with the same id, one gets
    /// the folder and the other an error), copies the SQL files into `sql/` and writes
    /// the first, incomplete `results.json`.
    pub fn create(
        root: &Path,
        mut bundle: RunBundle<Results>,
        existing: ExistingFolder,
    ) -> Result<BundleWriter<Results>> {
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
                        return Err(taken(&dir));
                    }
                    attempt += 1;
                    bundle.run_id = format!("{base_id}-{attempt}");
                }
                Err(error) => return Err(error).with_context(|| format!("cannot create {}", dir.display())),
            }
        };
        let fixtures = fixtures_root();
        for relative in &bundle.sql_files {
            let destination = dir.join(super::bundled_sql_path(relative));
            if let Some(parent) = destination.parent() {
                fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
            }
            // An absolute path is a file outside fixtures/ (a ClickBench checkout's).
            fs::copy(fixtures.join(relative), &destination)
                .with_context(|| format!("cannot copy SQL file {relative} into the bundle"))?;
        }
        let writer = BundleWriter { dir, bundle, journal: None };
        writer.save()?;
        Ok(writer)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records the phase about to run, by its kind's name for it, and saves.
    pub fn phase(&mut self, phase: &str) -> Result<()> {
        self.bundle.phase = phase.to_string();
        self.save()
    }

    /// Rewrites `results.json` atomically.
    pub fn save(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(&self.bundle).context("cannot serialise the results")?;
        write_atomically(&self.dir.join(RESULTS_FILE), &text)
    }

    /// Starts the runs of one query: saved at once, so that its samples have a place
    /// to go back to when the journal is read. Returns its index, for
    /// [`BundleWriter::record_sample_into`].
    pub fn start_query(&mut self, runs: QueryRuns<Results::Variant>) -> Result<usize> {
        self.bundle.benchmark.queries_mut().push(runs);
        self.save()?;
        Ok(self.bundle.benchmark.queries().len() - 1)
    }

    /// Adds a sample to the query started last and appends it to the journal, so it is
    /// on disk before the next one is measured. `answer` is the query's result, given
    /// with the first sample.
    pub fn record_sample(&mut self, sample: Sample, answer: Option<String>) -> Result<()> {
        let query_index =
            self.bundle.benchmark.queries().len().checked_sub(1).context("a sample before any query started")?;
        self.record_sample_into(query_index, sample, answer)
    }

    /// [`BundleWriter::record_sample`] into the query runs `query_index` (as
    /// [`BundleWriter::start_query`] returned it): an A/B run measures several query runs
    /// in turns, one per variant.
    pub fn record_sample_into(&mut self, query_index: usize, sample: Sample, answer: Option<String>) -> Result<()> {
        if query_index >= self.bundle.benchmark.queries().len() {
            bail!("a sample of query runs {query_index}, which were never started");
        }
        let record = JournalRecord::new(query_index, answer, sample);
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
        // The query runs exist (checked above): the sample always has its place.
        record.fold_into(self.bundle.benchmark.queries_mut());
        Ok(())
    }

    /// Marks the run complete (or failed, with the error) and saves. Everything is in
    /// `results.json` then, so the journal goes.
    pub fn finish(&mut self, error: Option<String>) -> Result<()> {
        self.bundle.finished_at = Some(jiff::Timestamp::now());
        match error {
            None => {
                self.bundle.status = RunStatus::Complete;
                self.bundle.phase = DONE.to_string();
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

/// Creates the folder runs go into, or checks that it is one: done before a run starts
/// its engine, so that a bad `--results-dir` costs nothing.
pub fn prepare_results_folder(root: &Path) -> Result<()> {
    prepare_folder_of_flag(root, "--results-dir")
}

/// Creates the folder `flag` names, or checks that it is one; a mistake names `flag`, so
/// that a command with several folder flags (`compare --out`) blames the one given.
pub fn prepare_folder_of_flag(root: &Path, flag: &str) -> Result<()> {
    refuse_a_file_for_a_folder(root, flag)?;
    fs::create_dir_all(root).with_context(|| format!("cannot create the results folder {} ({flag})", root.display()))
}

/// Refuses a `root` that exists and is not a folder, naming `flag`; creates nothing (a
/// check before work whose folder is made only at its end).
pub fn refuse_a_file_for_a_folder(root: &Path, flag: &str) -> Result<()> {
    if root.exists() && !root.is_dir() {
        bail!("the results folder {} is not a folder; give {flag} a folder", root.display());
    }
    Ok(())
}

/// Refuses a run id the user chose whose folder exists under `root`: checked before a run
/// starts its engine. [`BundleWriter::create`] still refuses it atomically, for a run that
/// takes it meanwhile.
pub fn refuse_a_taken_run_id(root: &Path, run_id: &str) -> Result<()> {
    let dir = root.join(run_id);
    // `exists` follows a symlink; a dangling one would still block create_dir.
    if dir.symlink_metadata().is_ok() {
        return Err(taken(&dir));
    }
    Ok(())
}

fn taken(dir: &Path) -> anyhow::Error {
    anyhow::anyhow!("the results folder {} already exists; choose another run id", dir.display())
}

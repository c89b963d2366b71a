//! `cargo xtask history [--kind K] [RUN...]`: a kind's runs in the order they started,
//! each query's median and spread per run and the verdict against the run before, a
//! break where their inputs differ; written as history.md, a chart and a page. A stop
//! request (Ctrl-C, SIGTERM, SIGHUP) ends it at once, with nothing written.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use chbench::history::{HISTORY_HTML, bundles_under, history};
use chbench::interrupt;
use chbench::results::{bundle_kind, prepare_folder_of_flag, refuse_a_file_for_a_folder};

use crate::flags::History;
use crate::report::bundle_dir;

impl History {
    pub fn run(self) -> Result<()> {
        if let Some(out) = &self.out {
            refuse_a_file_for_a_folder(out, "--out")?;
        }
        let (runs, kind, results_dir) = (self.runs.clone(), self.kind.clone(), self.results_dir.clone());
        // Reading every bundle and comparing each with the one before takes seconds to
        // minutes; listing a results folder of large bundles, seconds.
        let history = interrupt::until_stopped(move || history(&bundles(&runs, kind.as_deref(), &results_dir)?))?;
        let (out, flag) = match &self.out {
            Some(out) => (out.clone(), "--out"),
            None => (self.results_dir.join(format!("history-{}", history.kind)), "--results-dir"),
        };
        prepare_folder_of_flag(&out, flag)?;
        let report = history.write(&out)?;
        println!("history: {}", report.display());
        println!("page: {}", out.join(HISTORY_HTML).display());
        Ok(())
    }
}

/// The bundles of the history: the runs given (each of `kind`, when it is given), or
/// those under `results_dir`.
fn bundles(runs: &[String], kind: Option<&str>, results_dir: &Path) -> Result<Vec<PathBuf>> {
    if runs.is_empty() {
        return bundles_under(results_dir, kind);
    }
    let dirs = runs.iter().map(|run| bundle_dir(run, results_dir)).collect::<Result<Vec<PathBuf>>>()?;
    // The runs given are the history: one of another kind than --kind is a mistake.
    if let Some(kind) = kind {
        for dir in &dirs {
            let found = bundle_kind(dir)?;
            if found != kind {
                bail!("{} is a {found} bundle, not a {kind} one (--kind {kind})", dir.display());
            }
        }
    }
    Ok(dirs)
}

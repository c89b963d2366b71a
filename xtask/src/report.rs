//! `cargo xtask report <run-id>`: render a bundle's report from the bundle alone. A stop
//! request (Ctrl-C, SIGTERM, SIGHUP) ends it at once, with nothing written.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chbench::benchmarks::kinds::render_report;
use chbench::compare::report::COMPARE_FILE;
use chbench::history::HISTORY_FILE;
use chbench::interrupt;
use chbench::matrix::{SUMMARY_JSON, SUMMARY_MARKDOWN};
use chbench::report::html::REPORT_HTML;
use chbench::results::{RESULTS_FILE, check_run_id};

use crate::flags::Report;

impl Report {
    pub fn run(self) -> Result<()> {
        let dir = bundle_dir(&self.run_id, &self.results_dir)?;
        // Reading and rendering a large bundle takes seconds; writing, once it is done, not.
        let rendered = interrupt::until_stopped(move || render_report(&dir))?;
        let report = rendered.write()?;
        println!("report: {}", report.display());
        println!("page: {}", report.with_file_name(REPORT_HTML).display());
        Ok(())
    }
}

/// The folder of the bundle `run_id` names: a run id under `results_dir`, or a bundle's
/// folder as the bench printed it (`results/<run-id>`).
pub fn bundle_dir(run_id: &str, results_dir: &Path) -> Result<PathBuf> {
    let as_path = Path::new(run_id);
    let dir = if as_path.join(RESULTS_FILE).is_file() {
        as_path.to_path_buf()
    } else if run_id.contains(std::path::MAIN_SEPARATOR) {
        refuse_a_matrix_folder(as_path)?;
        bail!("no results bundle at {} (a bundle's folder holds {RESULTS_FILE})", as_path.display());
    } else {
        check_run_id(run_id)?;
        results_dir.join(run_id)
    };
    if !dir.is_dir() {
        bail!("no results bundle {} (runs are folders under {})", dir.display(), results_dir.display());
    }
    refuse_a_matrix_folder(&dir)?;
    Ok(dir)
}

/// A matrix's folder holds its variants' bundles and its summary, but no bundle of its own:
/// said as such, with a variant's bundle to give instead, rather than as an unreadable
/// `results.json`.
fn refuse_a_matrix_folder(dir: &Path) -> Result<()> {
    if dir.join(RESULTS_FILE).exists() {
        return Ok(());
    }
    // A comparison's or a history's folder, written beside the bundles it read.
    for (file, what) in [(COMPARE_FILE, "a comparison's"), (HISTORY_FILE, "a history's")] {
        if dir.join(file).is_file() {
            bail!("{} is {what} folder ({file}), not a results bundle: give a run's bundle", dir.display());
        }
    }
    if !dir.join(SUMMARY_JSON).is_file() {
        return Ok(());
    }
    let mut variants: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.join(RESULTS_FILE).is_file())
        .collect();
    variants.sort();
    let markdown = dir.join(SUMMARY_MARKDOWN);
    match variants.first() {
        Some(variant) => bail!(
            "{} is a matrix folder, not a results bundle: give one of its variants' bundles (e.g. {}), or read {}",
            dir.display(),
            variant.display(),
            markdown.display()
        ),
        None => bail!(
            "{} is a matrix folder, not a results bundle, and none of its variants has a bundle yet: read {}",
            dir.display(),
            markdown.display()
        ),
    }
}

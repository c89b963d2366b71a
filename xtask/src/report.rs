//! `cargo xtask report <run-id>`: render a bundle's report from the bundle alone. A stop
//! request (Ctrl-C, SIGTERM, SIGHUP) ends it at once, with nothing written.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use chbench::benchmarks::kinds::render_report;
use chbench::interrupt;
use chbench::results::{RESULTS_FILE, check_run_id};

use crate::flags::Report;

impl Report {
    pub fn run(self) -> Result<()> {
        let dir = bundle_dir(&self.run_id, &self.results_dir)?;
        // Reading and rendering a large bundle takes seconds; writing, once it is done, not.
        let rendered = interrupt::until_stopped(move || render_report(&dir))?;
        let report = rendered.write()?;
        println!("report: {}", report.display());
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
        bail!("no results bundle at {} (a bundle's folder holds {RESULTS_FILE})", as_path.display());
    } else {
        check_run_id(run_id)?;
        results_dir.join(run_id)
    };
    if !dir.is_dir() {
        bail!("no results bundle {} (runs are folders under {})", dir.display(), results_dir.display());
    }
    Ok(dir)
}

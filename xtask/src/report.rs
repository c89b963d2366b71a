//! `cargo xtask report <run-id>`: render a bundle's report from the bundle alone.

use anyhow::{Result, bail};
use chbench::benchmarks::kinds::write_report;
use chbench::results::{RESULTS_FILE, check_run_id};

use crate::flags::Report;

impl Report {
    pub fn run(self) -> Result<()> {
        // A bundle's folder as the bench printed it (`results/<run-id>`) works too.
        let as_path = std::path::Path::new(&self.run_id);
        let dir = if as_path.join(RESULTS_FILE).is_file() {
            as_path.to_path_buf()
        } else if self.run_id.contains(std::path::MAIN_SEPARATOR) {
            bail!("no results bundle at {} (a bundle's folder holds {RESULTS_FILE})", as_path.display());
        } else {
            check_run_id(&self.run_id)?;
            self.results_dir.join(&self.run_id)
        };
        if !dir.is_dir() {
            bail!("no results bundle {} (runs are folders under {})", dir.display(), self.results_dir.display());
        }
        let report = write_report(&dir)?;
        println!("report: {}", report.display());
        Ok(())
    }
}

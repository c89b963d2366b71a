//! `cargo xtask report <run-id>`: render a bundle's report from the bundle alone.

use anyhow::{Result, bail};
use chbench::report::write_report;
use chbench::results::check_run_id;

use crate::flags::Report;

impl Report {
    pub fn run(self) -> Result<()> {
        check_run_id(&self.run_id)?;
        let dir = self.results_dir.join(&self.run_id);
        if !dir.is_dir() {
            bail!("no results bundle {} (runs are folders under {})", dir.display(), self.results_dir.display());
        }
        let report = write_report(&dir)?;
        println!("report: {}", report.display());
        Ok(())
    }
}

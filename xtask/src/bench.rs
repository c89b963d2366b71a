//! `cargo xtask bench`: the logs benchmark on the chosen target, written to a results
//! bundle as it goes, then the report.
//!
//! Ctrl-C (or SIGTERM) stops the run after the statement in progress (see
//! `chbench::interrupt`): the bundle is finished as incomplete, the report is
//! rendered from it, the error line says where they are, and the command exits with
//! 130. A second Ctrl-C stops at once; the bundle on disk is valid all the same.

use anyhow::{Context, Result};
use chbench::benchmark::LogsBenchmark;
use chbench::cost::CostInputs;
use chbench::interrupt::Interrupted;
use chbench::report::write_report;
use chbench::results::{BundleWriter, ExistingFolder, check_run_id};
use chbench::targets::open_target_of_kind;

use crate::flags::Bench;
use crate::progress::TerminalProgress;

impl Bench {
    pub fn run(self) -> Result<()> {
        if let Some(run_id) = &self.run_id {
            check_run_id(run_id)?;
        }
        let mut benchmark = LogsBenchmark {
            run_id: String::new(),
            rows: self.rows,
            warm_runs: self.runs,
            cost: CostInputs {
                node_usd_per_hour: self.node_usd_per_hour,
                volume_usd_per_gb_month: self.volume_usd_per_gb_month,
                volume_gib: self.volume_gib,
                rows_per_day: self.rows_per_day,
                retention_days: self.retention_days,
            },
            volume_limit_mib_per_s: self.volume_mib_per_s,
        };
        // Bad inputs end here, before the engine starts.
        benchmark.check()?;
        let mut target = open_target_of_kind(self.target.target)?;
        let (run_id, existing) = match &self.run_id {
            Some(run_id) => (run_id.clone(), ExistingFolder::Refuse),
            None => (
                format!("{}-{}-{}", utc_stamp(jiff::Timestamp::now()), target.info().kind, short_count(self.rows)),
                ExistingFolder::AddSuffix,
            ),
        };
        benchmark.run_id = run_id;
        let mut writer = BundleWriter::create(&self.results_dir, benchmark.new_bundle(&target), existing)?;
        // The folder may have taken a suffix: the statements' tags follow it.
        benchmark.run_id = writer.bundle.run_id.clone();
        let dir = writer.dir().to_path_buf();
        eprintln!("chbench: run {}, results in {}", benchmark.run_id, dir.display());
        // An interruption is one fact, not a failure of the statement it came before.
        let outcome = benchmark
            .run(&mut target, &mut writer, &TerminalProgress::new())
            .map_err(|error| if error.is::<Interrupted>() { Interrupted.into() } else { error });
        // Whatever happened, what was measured is saved and reported.
        writer
            .finish(outcome.as_ref().err().map(|error| format!("{error:#}")))
            .with_context(|| format!("cannot save the results in {}", dir.display()))?;
        let report = write_report(&dir);
        if let Err(error) = outcome {
            let report = match report {
                Ok(report) => format!("its report is {}", report.display()),
                Err(report_error) => format!("its report could not be written ({report_error:#})"),
            };
            let phase = &writer.bundle.phase;
            return Err(error).with_context(|| {
                format!(
                    "run {} stopped during {phase}; what it measured is in {} ({report}); run \
                     `cargo xtask bench` again for a complete bundle",
                    benchmark.run_id,
                    dir.display()
                )
            });
        }
        println!("report: {}", report?.display());
        Ok(())
    }
}

/// `20261130T031500Z`: a UTC time as a folder name.
fn utc_stamp(time: jiff::Timestamp) -> String {
    time.strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// `10M`, `250K`, `1234` for folder names.
fn short_count(rows: u64) -> String {
    match rows {
        rows if rows >= 1_000_000 && rows % 1_000_000 == 0 => format!("{}M", rows / 1_000_000),
        rows if rows >= 1_000 && rows % 1_000 == 0 => format!("{}K", rows / 1_000),
        rows => rows.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_read_as_utc_time() {
        let at = |seconds| utc_stamp(jiff::Timestamp::from_second(seconds).unwrap());
        assert_eq!(at(0), "19700101T000000Z");
        assert_eq!(at(1_796_007_599), "20261130T025959Z");
        assert_eq!(at(1_000_000_000), "20010909T014640Z");
        assert_eq!(short_count(10_000_000), "10M");
        assert_eq!(short_count(250_000), "250K");
        assert_eq!(short_count(1234), "1234");
    }
}

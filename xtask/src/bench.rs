//! `cargo xtask bench [KIND]`: a benchmark on the chosen target, written to a results
//! bundle as it goes, then the report. Each kind maps its flags to its benchmark here;
//! the run itself is the same for every kind.
//!
//! Ctrl-C (or SIGTERM) stops the run after the statement in progress (see
//! `chbench::interrupt`): the bundle is finished as incomplete, the report is rendered
//! from it, the error line says where they are, and the command exits with 130. A
//! second Ctrl-C stops at once; the bundle on disk is valid all the same.

use anyhow::{Context, Result};
use chbench::benchmarks::logs::LogsBenchmark;
use chbench::benchmarks::{self, Benchmark};
use chbench::cost::CostInputs;
use chbench::interrupt::Interrupted;
use chbench::report::write_report;
use chbench::results::{BundleWriter, ExistingFolder, check_run_id, prepare_results_folder};

use crate::flags::{Bench, BenchKind, LogsBench, RunFlags};
use crate::progress::TerminalProgress;

impl Bench {
    pub fn run(self) -> Result<()> {
        match self.kind.unwrap_or(BenchKind::Logs(self.logs)) {
            BenchKind::Logs(logs) => run(&logs.run, &logs_benchmark(&logs)),
        }
    }
}

fn logs_benchmark(flags: &LogsBench) -> LogsBenchmark {
    LogsBenchmark {
        rows: flags.rows,
        warm_runs: flags.runs,
        cost: CostInputs {
            node_usd_per_hour: flags.node_usd_per_hour,
            volume_usd_per_gb_month: flags.volume_usd_per_gb_month,
            volume_gib: flags.volume_gib,
            rows_per_day: flags.rows_per_day,
            retention_days: flags.retention_days,
        },
        volume_limit_mib_per_s: flags.volume_mib_per_s,
    }
}

/// Checks the inputs, opens the target, creates the bundle, runs every phase, and
/// finishes the bundle and its report whatever happened.
fn run(flags: &RunFlags, benchmark: &dyn Benchmark) -> Result<()> {
    // Bad inputs end here, before the engine starts.
    if let Some(run_id) = &flags.run_id {
        check_run_id(run_id)?;
    }
    benchmark.check()?;
    prepare_results_folder(&flags.results_dir)?;
    // The eks target from an xtask built without it: this command runs again, built with it.
    let mut target = crate::eks::open_target(flags.target.target)?;
    let (run_id, existing) = match &flags.run_id {
        Some(run_id) => (run_id.clone(), ExistingFolder::Refuse),
        None => (
            format!("{}-{}-{}", utc_stamp(jiff::Timestamp::now()), target.info().kind, benchmark.run_label()),
            ExistingFolder::AddSuffix,
        ),
    };
    let bundle = benchmarks::new_bundle(benchmark, &run_id, &mut target);
    eprintln!("chbench: storage baseline: {}", bundle.storage_baseline);
    let mut writer = BundleWriter::create(&flags.results_dir, bundle, existing)?;
    let dir = writer.dir().to_path_buf();
    eprintln!("chbench: run {}, results in {}", writer.bundle.run_id, dir.display());
    // An interruption is one fact, not a failure of the statement it came before.
    let outcome = benchmarks::run(benchmark, &mut target, &mut writer, &TerminalProgress::new())
        .map_err(|error| if error.is::<Interrupted>() { Interrupted.into() } else { error });
    // Whatever happened, what was measured is saved and reported.
    let saved = writer
        .finish(outcome.as_ref().err().map(|error| format!("{error:#}")))
        .with_context(|| format!("cannot save the results in {}", dir.display()));
    let report = saved.and_then(|()| write_report(&dir));
    if let Err(error) = outcome {
        // The run's error stays the error (and sets the exit code); a failure to save or
        // report is said beside it.
        let report = match report {
            Ok(report) => format!("its report is {}", report.display()),
            Err(report_error) => format!("its report could not be written ({report_error:#})"),
        };
        let (run_id, phase) = (&writer.bundle.run_id, writer.bundle.phase.label());
        return Err(error).with_context(|| {
            format!(
                "run {run_id} stopped during {phase}; what it measured is in {} ({report}); run `cargo xtask \
                 bench` again for a complete bundle",
                dir.display()
            )
        });
    }
    println!("report: {}", report?.display());
    Ok(())
}

/// `20261130T031500Z`: a UTC time as a folder name.
fn utc_stamp(time: jiff::Timestamp) -> String {
    time.strftime("%Y%m%dT%H%M%SZ").to_string()
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
    }
}

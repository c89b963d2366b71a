//! `cargo xtask bench [KIND]`: a benchmark on the chosen target, written to a results
//! bundle as it goes, then the report. Each kind maps its flags to its benchmark here;
//! the run itself is the same for every kind.
//!
//! Ctrl-C (or SIGTERM) stops the run, cancelling the statement in progress (see
//! `chbench::interrupt`): the bundle is finished as incomplete, the report is rendered
//! from it, the error line says where they are, and the command exits with 130. A
//! second Ctrl-C stops at once; the bundle on disk is valid all the same.

use std::io::Write as _;

use anyhow::{Context, Result};
use chbench::benchmarks::kinds::default_kind;
use chbench::benchmarks::{AnyBenchmark, BundlePlace};
use chbench::results::{ExistingFolder, check_run_id, prepare_results_folder, refuse_a_taken_run_id};
use clap::FromArgMatches;

use crate::flags::{Bench, RunFlags};
use crate::progress::TerminalProgress;

impl Bench {
    pub fn run(self) -> Result<()> {
        let (kind, matches) = match &self.kind {
            Some(chosen) => (chosen.kind, &chosen.matches),
            None => (default_kind(), &self.default_kind.matches),
        };
        let flags = RunFlags::from_arg_matches(matches).context("cannot read the run's flags")?;
        run(&flags, kind.name, (kind.benchmark)(matches)?.as_ref())
    }
}

/// Checks the inputs, opens the target, creates the bundle, runs every phase, and
/// finishes the bundle and its report whatever happened.
fn run(flags: &RunFlags, kind_name: &str, benchmark: &dyn AnyBenchmark) -> Result<()> {
    // Bad inputs end here, before the engine starts.
    if let Some(run_id) = &flags.run_id {
        check_run_id(run_id)?;
    }
    benchmark.check()?;
    flags.engine.choose_for(flags.target.target)?;
    // An engine in this process writes under target/chbench/: the run must fit there.
    let kind = chbench::targets::resolve_kind(flags.target.target);
    if chbench::targets::spec(kind).capabilities.engine_in_process {
        benchmark.check_storage(&chbench::files::chbench_dir())?;
    }
    prepare_results_folder(&flags.results_dir)?;
    if let Some(run_id) = &flags.run_id {
        refuse_a_taken_run_id(&flags.results_dir, run_id)?;
    }
    // The eks target from an xtask built without it: this command runs again, built with it.
    let mut target = crate::eks::open_target(flags.target.target)?;
    let (run_id, existing) = match &flags.run_id {
        Some(run_id) => (run_id.clone(), ExistingFolder::Refuse),
        None => (
            format!("{}-{}-{}", utc_stamp(jiff::Timestamp::now()), target.info().kind, benchmark.run_label()),
            ExistingFolder::AddSuffix,
        ),
    };
    let place = BundlePlace { root: flags.results_dir.clone(), run_id, existing };
    let end = benchmark.run_to_bundle(&mut target, &place, &TerminalProgress::new())?;
    if let Err(error) = end.outcome {
        // The run's error stays the error (and sets the exit code); a failure to save or
        // report is said beside it.
        let report = match end.report {
            Ok(report) => format!("its report is {}", report.display()),
            Err(report_error) => format!("its report could not be written ({report_error:#})"),
        };
        let (run_id, phase, dir) = (&end.run_id, &end.phase, end.dir.display());
        return Err(error).with_context(|| {
            format!(
                "run {run_id} stopped during {phase}; what it measured is in {dir} ({report}); run `cargo xtask \
                 bench {kind_name}` again for a complete bundle"
            )
        });
    }
    let report = end.report?;
    // As the progress lines: a reader that went away does not make a finished run fail.
    let _ = writeln!(std::io::stdout(), "report: {}", report.display());
    // What the run was held to fails it only now, with everything written.
    end.verdict.with_context(|| {
        format!("run {} failed its check (its bundle and report are in {})", end.run_id, end.dir.display())
    })
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

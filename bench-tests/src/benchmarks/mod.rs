//! Benchmarks: measurements that run on a target and write a results bundle.
//!
//! Every kind implements [`Benchmark`]: the phases it runs, in order, each a method of
//! its own, and the results it starts from. [`run`] is the one runner: it checks the
//! inputs, watches the machine, records each phase in the bundle before it starts, and
//! leaves the bundle incomplete when a phase fails or Ctrl-C stops it. Each kind lives
//! in a folder of its own (`logs/`), with its results types and its report section.
//!
//! Nothing here draws: progress goes through [`Progress`], implemented by the command line.

pub mod logs;

use anyhow::Result;

use crate::machine::{MachineWatch, SeenProcess};
use crate::results::{BenchmarkResults, BundleWriter, Phase, RunBundle, RunStatus, SCHEMA_VERSION};
use crate::settings::Settings;
use crate::storage_baseline::StorageBaselineRecord;
use crate::targets::Target;

/// One kind of benchmark.
pub trait Benchmark {
    /// Refuses inputs that would put meaningless numbers in the results, before the
    /// engine starts.
    fn check(&self) -> Result<()>;
    /// The phases it runs, in order.
    fn phases(&self) -> &'static [Phase];
    /// The fixture files it runs, relative to `fixtures/`; the bundle keeps a copy.
    fn sql_files(&self) -> Vec<String>;
    /// Its results before anything is measured.
    fn new_results(&self) -> BenchmarkResults;
    /// What a default run id says after the time and target, e.g. `logs-10M`.
    fn run_label(&self) -> String;
    /// Runs one phase, recording what it measures in `run.writer.bundle`.
    fn run_phase(&self, phase: Phase, run: &mut Run<'_>) -> Result<()>;
    /// Removes what the run made on the target, after the phases, whether they ran to the
    /// end or not.
    fn clean_up(&self, _run: &mut Run<'_>) -> Result<()> {
        Ok(())
    }
}

/// What a phase works with.
pub struct Run<'a> {
    pub target: &'a mut Target,
    pub writer: &'a mut BundleWriter,
    pub progress: &'a dyn Progress,
}

impl Run<'_> {
    /// The run's id, which tags every statement it measures.
    pub fn run_id(&self) -> String {
        self.writer.bundle.run_id.clone()
    }
}

/// How a benchmark reports progress; the command line draws it.
pub trait Progress {
    /// A step starts; `units` is how many `advance` calls it will make, if it knows.
    fn start(&self, step: &str, units: Option<u64>);
    /// One unit of the current step is done.
    fn advance(&self, message: &str);
    /// The step is done; `summary` is one line of what it measured.
    fn finish(&self, summary: &str);
    /// Something the user should know now (e.g. the machine is not quiet).
    fn warn(&self, line: &str);
}

/// A new bundle for a run of `benchmark` on `target`, not yet written, with the target's
/// storage baseline (or why it is unknown: a baseline that cannot be read does not stop
/// the run).
pub fn new_bundle(benchmark: &dyn Benchmark, run_id: &str, target: &mut Target) -> RunBundle {
    let storage_baseline = StorageBaselineRecord::from_answer(target.storage_baseline());
    RunBundle {
        schema_version: SCHEMA_VERSION,
        run_id: run_id.to_string(),
        status: RunStatus::Incomplete,
        phase: Phase::Starting,
        started_at: jiff::Timestamp::now(),
        finished_at: None,
        target: target.info().clone(),
        storage_baseline,
        session_settings: Settings::session_defaults(),
        sql_files: benchmark.sql_files(),
        machine: None,
        error: None,
        benchmark: benchmark.new_results(),
    }
}

/// Runs every phase of `benchmark`, recording each in the bundle before it starts, and
/// watches the machine throughout. On error (an interruption included) the bundle keeps
/// what was measured and stays incomplete; the caller records the error and finishes it.
pub fn run(
    benchmark: &dyn Benchmark,
    target: &mut Target,
    writer: &mut BundleWriter,
    progress: &dyn Progress,
) -> Result<()> {
    benchmark.check()?;
    let mut machine = MachineWatch::start(target.capabilities().engine_in_process);
    warn_about_processes(progress, &machine.info().other_chbench_processes);
    writer.bundle.machine = Some(machine.info().clone());
    let mut outcome = Ok(());
    for &phase in benchmark.phases() {
        if let Err(error) = crate::interrupt::check() {
            outcome = Err(error);
            break;
        }
        warn_about_processes(progress, &machine.observe());
        writer.bundle.machine = Some(machine.info().clone());
        outcome = writer.phase(phase).and_then(|()| benchmark.run_phase(phase, &mut Run { target, writer, progress }));
        if outcome.is_err() {
            break;
        }
    }
    if let Err(error) = benchmark.clean_up(&mut Run { target, writer, progress }) {
        let error = error.context("cannot clean up after the run");
        match outcome {
            Ok(()) => outcome = Err(error),
            // The run's own error is the one to report; this one is said too.
            Err(_) => progress.warn(&format!("{error:#}")),
        }
    }
    let machine = machine.finish();
    if !machine.quiet() {
        progress.warn(&format!("the machine was not quiet: {}; timings may be inflated", machine.noise.join("; ")));
    }
    writer.bundle.machine = Some(machine);
    outcome
}

fn warn_about_processes(progress: &dyn Progress, processes: &[SeenProcess]) {
    for process in processes {
        progress.warn(&format!(
            "another chbench process is running ({}, pid {}): timings will be noisy",
            process.name, process.pid
        ));
    }
}

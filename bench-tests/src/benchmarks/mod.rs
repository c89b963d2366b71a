//! Benchmarks: measurements that run on a target and write a results bundle.
//!
//! A benchmark kind is a plug-in: a folder of its own (`logs/`) with a type implementing
//! [`Benchmark`], which carries everything the kind does: its flags, its phases (its own
//! [`Phase`] type, recorded in the bundle by name), its results body, its report section
//! and charts, what its comparisons add to every kind's
//! ([`crate::compare::ComparisonSections`]) and its example bundles. The kind is then one
//! line in the registry ([`kinds`]), which the command line, the report, the comparison
//! and the tests over every kind read; nothing else names a kind (ARCHITECTURE.md,
//! "Adding a benchmark kind").
//!
//! [`run`] is the one runner: it checks the inputs, watches the machine, records each
//! phase in the bundle before it starts, and leaves the bundle incomplete when a phase
//! fails or Ctrl-C stops it. [`AnyBenchmark::run_to_bundle`] wraps it for a kind chosen
//! at run time: bundle created, phases run, bundle finished and reported whatever
//! happened. Nothing here draws: progress goes through [`Progress`], implemented by the
//! command line.

pub mod clickbench;
pub mod kinds;
pub mod logs;
pub mod parts;
pub mod raw_samples;
pub mod throughput;
pub mod writes;

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::ab_variants::AbRun;
use crate::compare::{BundleAt, CompareOptions, Comparison, ComparisonSections};
use crate::dataset::DiskEstimate;
use crate::files::write_atomically;
use crate::fixtures::Statement;
use crate::guard;
use crate::interrupt::Interrupted;
use crate::machine::{MachineWatch, SeenProcess};
use crate::profiles::{ProfileChoice, ProfileRecord};
use crate::profiling::ProfiledRuns;
use crate::query_runs::QueryRuns;
use crate::report::{self, Section};
use crate::results::{
    self, BundleWriter, ExistingFolder, KindResults, RunBundle, RunStatus, SCHEMA_VERSION, load_bundle,
};
use crate::settings::Settings;
use crate::storage_baseline::StorageBaselineRecord;
use crate::target_info::TargetKind;
use crate::targets::Target;

/// One phase of a kind: each kind lists its own.
pub trait Phase: Copy + PartialEq + fmt::Debug + 'static {
    /// Every phase of the kind, in the order it runs them.
    const ALL: &'static [Self];
    /// The phase's name in the bundle (`phase`): lowercase, `_` between words.
    fn name(self) -> &'static str;
    /// How messages and reports say it.
    fn label(self) -> &'static str;
}

/// One kind of benchmark: what it takes, runs, records, reports and compares.
pub trait Benchmark: Sized + 'static {
    /// Its part of a bundle, tagged with its name.
    type Results: KindResults;
    /// Its phases.
    type Phase: Phase;
    /// Its flags, as `cargo xtask bench <kind>` takes them (the command line adds where
    /// to run and where the bundle goes).
    type Flags: clap::Args + clap::FromArgMatches;
    /// What its comparisons add to every kind's, written under its name in `compare.json`
    /// ([`crate::compare::NoSections`] for nothing).
    type ComparisonSections: ComparisonSections + serde::Serialize + 'static;
    /// One line for `cargo xtask bench --help`.
    const ABOUT: &'static str;

    /// The benchmark its flags ask for.
    fn from_flags(flags: Self::Flags) -> Self;
    /// Refuses inputs that would put meaningless numbers in the results, before the
    /// engine starts.
    fn check(&self) -> Result<()>;
    /// What the run's data will take at its peak, from its inputs, when the kind can say:
    /// what [`Benchmark::check_storage`] holds against the free space, and what a storage
    /// profile's volume is sized by.
    fn disk_estimate(&self) -> Result<Option<DiskEstimate>> {
        Ok(None)
    }
    /// Refuses inputs that would not fit in `folder`, where an in-process engine keeps its
    /// data, before it starts (a server's disk is not this machine's: not called there).
    fn check_storage(&self, folder: &Path) -> Result<()> {
        match self.disk_estimate()? {
            Some(estimate) => estimate.check_fits(folder),
            None => Ok(()),
        }
    }
    /// Refuses inputs the opened target cannot take (a setting it does not know, a
    /// capability it lacks), before the bundle is made, so that such a mistake is one line
    /// and leaves nothing behind.
    fn check_target(&self, _target: &mut Target) -> Result<()> {
        Ok(())
    }
    /// Refuses, in one line, what its flags ask of a target of `kind` that the kind's
    /// declared capabilities already rule out (the clients in a cluster on a target in
    /// none), before the target opens or a matrix brings anything up; nothing by default.
    fn check_target_kind(&self, _kind: TargetKind) -> Result<()> {
        Ok(())
    }
    /// The fixture files it runs, relative to `fixtures/`; the bundle keeps a copy.
    fn sql_files(&self) -> Vec<String>;
    /// Every statement it will read from those files, rendered, for the engine's parser to
    /// check as a pack's SQL is checked ([`crate::guard`]) before the bundle is made and
    /// anything runs: a pull request may change them as it may change a pack. Each file of
    /// [`Benchmark::sql_files`] is in it; what must reach outside (the file a flag names)
    /// is code, not such a file.
    fn guarded_sql(&self) -> Result<GuardedSql>;
    /// Its results before anything is measured.
    fn new_results(&self) -> Self::Results;
    /// The variants it measures in turns, when it is an A/B run (recorded in the bundle).
    fn ab_run(&self) -> Option<AbRun> {
        None
    }
    /// What a default run id says after the time and target, e.g. `logs-10M`.
    fn run_label(&self) -> String;
    /// The profilers its flags ask for on the measured statements (`--profile`), on the
    /// kinds that take the flag; none by default.
    fn profile(&self) -> Option<ProfileChoice> {
        None
    }
    /// Whether `runs` get flame graphs when the run is profiled: every query's by default;
    /// a kind that measures one query in many forms may keep to the telling ones.
    fn profiles_runs(_results: &Self::Results, _runs: &QueryRuns<<Self::Results as KindResults>::Variant>) -> bool {
        true
    }
    /// Runs one phase, recording what it measures in `run.results()`.
    fn run_phase(&self, phase: Self::Phase, run: &mut Run<'_, Self::Results>) -> Result<()>;
    /// Removes what the run made on the target, after the phases, whether they ran to the
    /// end or not.
    fn clean_up(&self, _run: &mut Run<'_, Self::Results>) -> Result<()> {
        Ok(())
    }
    /// Its report section and charts, made from its bundle alone.
    fn report(bundle: &RunBundle<Self::Results>) -> Result<Section>;
    /// The raw samples behind its report's figures, listed on the report's page: every
    /// query's runs by default. A kind whose figures are made of other samples (a level's
    /// rounds) lists those.
    fn raw_samples(bundle: &RunBundle<Self::Results>) -> Vec<report::html::SampleTable> {
        raw_samples::of_queries(bundle.benchmark.queries())
    }
    /// Bundles of its kind with every field they can hold filled, each optional field
    /// present and each named value once, every number `value` or `count` (its folder's
    /// `example.rs`, on [`crate::results::example::example_bundle`]): what every kind of
    /// the registry is held to, its fields documented in `docs/kinds/<kind>.md` and its
    /// bundles written, read back and reported whatever the numbers.
    fn examples(value: f64, count: u64) -> Vec<RunBundle<Self::Results>>;
    /// Whether a run that measured everything passes what its flags asked of it (a bound
    /// on a slope, say): called on the finished bundle, after its report is written, so a
    /// failed verdict loses nothing. An error is the verdict's one line.
    fn verdict(_bundle: &RunBundle<Self::Results>) -> Result<()> {
        Ok(())
    }
    /// Its sections of the comparison of `bundles` (two of its bundles, or one A/B bundle's
    /// variants), from what the comparison every kind shares found in them
    /// ([`crate::compare::compare_bundles`], query by query).
    fn comparison_sections(
        bundles: &[BundleAt<Self::Results>],
        comparison: &Comparison,
        options: &CompareOptions,
    ) -> Result<Self::ComparisonSections>;
}

/// A run's SQL as the guard checks it ([`Benchmark::guarded_sql`]).
#[derive(Debug, Default)]
pub struct GuardedSql {
    /// What builds, fills and changes its tables: checked as a pack's design and generator.
    pub dataset: Vec<Statement>,
    /// What it measures: checked as a pack's queries, one SELECT each.
    pub queries: Vec<Statement>,
}

impl GuardedSql {
    /// Both parts checked by `target`'s parser, in one line at the first refused
    /// statement's file and line.
    pub fn check(&self, target: &mut Target) -> Result<()> {
        guard::check_statements(target, &self.dataset, &self.queries)
    }
}

/// What a phase works with.
pub struct Run<'a, Results> {
    pub target: &'a mut Target,
    pub writer: &'a mut BundleWriter<Results>,
    pub progress: &'a dyn Progress,
}

impl<Results> Run<'_, Results> {
    /// The run's id, which tags every statement it measures.
    pub fn run_id(&self) -> String {
        self.writer.bundle.run_id.clone()
    }

    /// The run's own database on the target: `chbench_<run id>_p<pid>` (the run id's `.`
    /// and `-` as `_`), so that two runs on one server never share one, whether their ids
    /// differ only there (`a-b`, `a.b`) or are the same in two results folders.
    pub fn database(&self) -> String {
        format!("chbench_{}_p{}", self.writer.bundle.run_id.replace(['.', '-'], "_"), std::process::id())
    }

    /// Drops [`Run::database`], the clean-up of a kind that works in it: on a shared server
    /// it would hold the run's tables for nothing. An error says how to drop it by hand.
    pub fn drop_database(&mut self) -> Result<()> {
        let database = self.database();
        self.target.execute(&format!("DROP DATABASE IF EXISTS {database} SYNC")).with_context(|| {
            format!("database {database} may be left on the target: drop it with DROP DATABASE {database} SYNC")
        })
    }

    /// The kind's results in the bundle being written.
    pub fn results(&mut self) -> &mut Results {
        &mut self.writer.bundle.benchmark
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
    /// A line of information (where the bundle is, the storage baseline).
    fn note(&self, line: &str);
}

/// A new bundle for a run of `benchmark` on `target`, not yet written, with the target's
/// storage baseline (or why it is unknown: a baseline that cannot be read does not stop
/// the run).
pub fn new_bundle<B: Benchmark>(benchmark: &B, run_id: &str, target: &mut Target) -> RunBundle<B::Results> {
    let storage_baseline = StorageBaselineRecord::from_answer(target.storage_baseline());
    RunBundle {
        schema_version: SCHEMA_VERSION,
        run_id: run_id.to_string(),
        status: RunStatus::Incomplete,
        phase: results::STARTING.to_string(),
        started_at: jiff::Timestamp::now(),
        finished_at: None,
        target: target.info().clone(),
        storage_baseline,
        session_settings: Settings::session_defaults(),
        sql_files: benchmark.sql_files(),
        machine: None,
        error: None,
        ab_run: benchmark.ab_run(),
        profiles: None,
        benchmark: benchmark.new_results(),
    }
}

/// How a run ended: its phases, and apart from them its clean-up.
#[derive(Debug)]
pub struct RunOutcome {
    /// The phases' error (an interruption included): the bundle stays incomplete.
    pub phases: Result<()>,
    /// The clean-up's error, after every phase ran: what was measured is whole, so the
    /// bundle is complete, and this says what the clean-up may have left. `Ok` when the
    /// phases failed (the clean-up's error is then said as a warning beside theirs).
    pub clean_up: Result<()>,
}

/// Runs every phase of `benchmark`, recording each in the bundle before it starts, and
/// watches the machine throughout, then its clean-up. On a phase's error (an
/// interruption included) the bundle keeps what was measured and stays incomplete; the
/// caller records the error and finishes it.
pub fn run<B: Benchmark>(
    benchmark: &B,
    target: &mut Target,
    writer: &mut BundleWriter<B::Results>,
    progress: &dyn Progress,
) -> RunOutcome {
    if let Err(error) = benchmark.check() {
        return RunOutcome { phases: Err(error), clean_up: Ok(()) };
    }
    let mut machine = MachineWatch::start(target.capabilities().engine_in_process);
    warn_about_processes(progress, &machine.info().other_chbench_processes);
    writer.bundle.machine = Some(machine.info().clone());
    let mut outcome = Ok(());
    for &phase in B::Phase::ALL {
        if let Err(error) = crate::interrupt::check() {
            outcome = Err(error);
            break;
        }
        warn_about_processes(progress, &machine.observe());
        writer.bundle.machine = Some(machine.info().clone());
        outcome =
            writer.phase(phase.name()).and_then(|()| benchmark.run_phase(phase, &mut Run { target, writer, progress }));
        if outcome.is_err() {
            break;
        }
    }
    // A stop that came during the last phase's last step, which checked for none after it:
    // the run was stopped, not finished.
    if outcome.is_ok()
        && let Err(error) = crate::interrupt::check()
    {
        outcome = Err(error);
    }
    // Where a run that stops now stopped: in the clean-up, once every phase ran.
    if outcome.is_ok()
        && let Err(error) = writer.phase(results::CLEAN_UP)
    {
        outcome = Err(error);
    }
    let mut clean_up = Ok(());
    if let Err(error) = benchmark.clean_up(&mut Run { target, writer, progress }) {
        let error = error.context("cannot clean up after the run");
        match outcome {
            // Every phase ran: the measurements are whole, and only the clean-up was cut.
            Ok(()) => clean_up = Err(error),
            // The run's own error is the one to report; this one is said too.
            Err(_) => progress.warn(&format!("{error:#}")),
        }
    }
    let machine = machine.finish();
    if !machine.quiet() {
        progress.warn(&format!("the machine was not quiet: {}; timings may be inflated", machine.noise.join("; ")));
    }
    writer.bundle.machine = Some(machine);
    RunOutcome { phases: outcome, clean_up }
}

fn warn_about_processes(progress: &dyn Progress, processes: &[SeenProcess]) {
    for process in processes {
        progress.warn(&format!(
            "another chbench process is running ({}, pid {}): timings will be noisy",
            process.name, process.pid
        ));
    }
}

/// Where a run's bundle goes: under `root`, in a folder named `run_id`.
#[derive(Debug, Clone)]
pub struct BundlePlace {
    pub root: PathBuf,
    pub run_id: String,
    pub existing: ExistingFolder,
}

/// How a run ended, once its bundle is finished: the run's own outcome (the error that
/// stopped it), and its report or why it could not be written.
#[derive(Debug)]
pub struct RunEnd {
    pub run_id: String,
    pub dir: PathBuf,
    /// The phase it stopped in, as messages say it.
    pub phase: String,
    pub outcome: Result<()>,
    pub report: Result<PathBuf>,
    /// The kind's [`Benchmark::verdict`] on the finished bundle; `Ok` when the run did not
    /// end (its outcome is the error then) or the bundle could not be read.
    pub verdict: Result<()>,
    /// The clean-up's error after every phase ran ([`RunOutcome::clean_up`]): the bundle
    /// is complete, and this says what may be left on the target.
    pub clean_up: Result<()>,
    /// [`Interrupted`] when a stop request came while a profiled run (`--profile`) read its
    /// samples: the bundle is complete, with the flame graphs drawn by then.
    pub profiles: Result<()>,
}

/// A benchmark of a kind chosen at run time, from the command line.
pub trait AnyBenchmark {
    fn check(&self) -> Result<()>;
    fn sql_files(&self) -> Vec<String>;
    fn guarded_sql(&self) -> Result<GuardedSql>;
    fn check_storage(&self, folder: &Path) -> Result<()>;
    /// [`Benchmark::disk_estimate`]'s bytes.
    fn disk_bytes_needed(&self) -> Result<Option<u64>>;
    fn run_label(&self) -> String;
    /// [`Benchmark::profile`].
    fn profile(&self) -> Option<ProfileChoice>;
    /// [`Benchmark::check_target_kind`].
    fn check_target_kind(&self, kind: TargetKind) -> Result<()>;
    /// Creates the bundle at `place`, runs every phase into it, and finishes it and its
    /// report whatever happened. An error is returned only when there is no bundle to keep
    /// what was measured; otherwise the run's own error is in [`RunEnd::outcome`].
    fn run_to_bundle(&self, target: &mut Target, place: &BundlePlace, progress: &dyn Progress) -> Result<RunEnd>;
}

impl<B: Benchmark> AnyBenchmark for B {
    fn check(&self) -> Result<()> {
        Benchmark::check(self)
    }

    fn check_storage(&self, folder: &Path) -> Result<()> {
        Benchmark::check_storage(self, folder)
    }

    fn disk_bytes_needed(&self) -> Result<Option<u64>> {
        Ok(Benchmark::disk_estimate(self)?.map(|estimate| estimate.bytes()))
    }

    fn sql_files(&self) -> Vec<String> {
        Benchmark::sql_files(self)
    }

    fn guarded_sql(&self) -> Result<GuardedSql> {
        Benchmark::guarded_sql(self)
    }

    fn profile(&self) -> Option<ProfileChoice> {
        Benchmark::profile(self)
    }

    fn check_target_kind(&self, kind: TargetKind) -> Result<()> {
        Benchmark::check_target_kind(self, kind)
    }

    fn run_label(&self) -> String {
        Benchmark::run_label(self)
    }

    fn run_to_bundle(&self, target: &mut Target, place: &BundlePlace, progress: &dyn Progress) -> Result<RunEnd> {
        // The guard first: a kind's own checks on the target may run its SQL (ClickBench
        // creates the checkout's table to try the hits file's first rows).
        Benchmark::guarded_sql(self)?.check(target)?;
        Benchmark::check_target(self, target)?;
        let bundle = new_bundle(self, &place.run_id, target);
        progress.note(&format!("storage baseline: {}", bundle.storage_baseline));
        let mut writer = BundleWriter::create(&place.root, bundle, place.existing)?;
        let dir = writer.dir().to_path_buf();
        progress.note(&format!("run {}, results in {}", writer.bundle.run_id, dir.display()));
        // An interruption is one fact, not a failure of the statement it came before.
        let RunOutcome { phases, clean_up } = run(self, target, &mut writer, progress);
        let outcome = phases.map_err(|error| if error.is::<Interrupted>() { Interrupted.into() } else { error });
        // A stopped run (in a phase or its clean-up) ends now; a failed one still has its
        // measured statements' samples.
        let mut profiles = Ok(());
        if let Some(choice) = crate::profiling::chosen()
            && !outcome.as_ref().is_err_and(|error| error.is::<Interrupted>())
            && !crate::interrupt::requested()
        {
            // What was measured is saved first: a kill while the samples are read loses none.
            // A failed run keeps its failed phase's name.
            let saved = if outcome.is_ok() { writer.phase(results::PROFILES) } else { writer.save() };
            writer.bundle.profiles = Some(profile::<B>(target, &writer.bundle, choice, &dir, progress));
            if let Err(error) = saved {
                progress.warn(&format!("{error:#}"));
            }
            if crate::interrupt::requested() {
                profiles = Err(Interrupted.into());
            }
        }
        // Whatever happened, what was measured is saved and reported.
        let saved = writer
            .finish(outcome.as_ref().err().map(|error| format!("{error:#}")))
            .with_context(|| format!("cannot save the results in {}", dir.display()));
        // From the bundle in memory, which holds every sample: reading back what was just
        // written would double the time a stop takes on a large bundle.
        let report = saved.and_then(|()| render_report::<B>(&writer.bundle, &dir)?.write());
        let verdict = match (&outcome, &report) {
            (Ok(()), Ok(_)) => B::verdict(&writer.bundle),
            _ => Ok(()),
        };
        Ok(RunEnd {
            run_id: writer.bundle.run_id.clone(),
            phase: phase_label::<B>(&writer.bundle.phase).to_string(),
            dir,
            outcome,
            report,
            verdict,
            clean_up,
            profiles,
        })
    }
}

/// The flame graphs of the measured statements of `bundle`'s queries that `B` profiles,
/// written under `dir`; said as they are read.
fn profile<B: Benchmark>(
    target: &mut Target,
    bundle: &RunBundle<B::Results>,
    choice: ProfileChoice,
    dir: &Path,
    progress: &dyn Progress,
) -> ProfileRecord {
    let results = &bundle.benchmark;
    let runs: Vec<ProfiledRuns> = results
        .queries()
        .iter()
        .filter(|runs| B::profiles_runs(results, runs))
        .map(|runs| ProfiledRuns {
            label: crate::compare::runs_label(runs, true),
            // The runs measured, which the profilers were on for: not a direct-I/O run or
            // a warm-up.
            query_ids: runs
                .warm_samples()
                .filter_map(|sample| sample.stats.raw.get("query_id")?.as_str().map(str::to_string))
                .collect(),
        })
        .collect();
    progress.start(&format!("profiles: {choice} samples of {} queries from system.trace_log", runs.len()), None);
    let record =
        crate::profiling::gather(target, &runs, choice, bundle.started_at, dir, &|line| progress.advance(line));
    let folder = dir.join(crate::profiling::PROFILES_DIR);
    match record.drawn() {
        0 => progress.finish("profiles: no flame graph"),
        drawn => progress.finish(&format!("profiles: {drawn} flame graphs in {}", folder.display())),
    }
    if let Some(why) = &record.unknown {
        progress.warn(&format!("flame graphs: {why}"));
    }
    // Once a query: a failed lookup is both trace types' reason.
    let mut said: Vec<(&str, &str)> = Vec::new();
    for profile in &record.queries {
        let Some(why) = profile.unknown.as_deref() else { continue };
        if !said.contains(&(profile.label.as_str(), why)) {
            said.push((profile.label.as_str(), why));
            progress.warn(&format!("no flame graph of {}: {why}", profile.label));
        }
    }
    record
}

/// A bundle's report rendered and not yet written: its charts, `report.md` and
/// `report.html`, so that the rendering (long on a large bundle) can be abandoned with
/// nothing half-written.
#[derive(Debug)]
pub struct RenderedReport {
    dir: PathBuf,
    charts: Vec<(&'static str, String)>,
    markdown: String,
    html: String,
}

impl RenderedReport {
    /// Writes the charts, `report.html`, then `report.md`, each whole; returns the
    /// Markdown report's path (the page is beside it).
    pub fn write(&self) -> Result<PathBuf> {
        for (name, svg) in &self.charts {
            write_atomically(&self.dir.join(name), svg)?;
        }
        write_atomically(&self.dir.join(report::html::REPORT_HTML), &self.html)?;
        let path = self.dir.join(report::REPORT_FILE);
        write_atomically(&path, &self.markdown)?;
        Ok(path)
    }
}

/// Renders the report of a bundle of `B`'s kind read from its folder.
fn render_report_of<B: Benchmark>(bundle_dir: &Path) -> Result<RenderedReport> {
    render_report::<B>(&load_bundle::<B::Results>(bundle_dir)?, bundle_dir)
}

/// Renders the report of `bundle`, whose folder is `bundle_dir`.
fn render_report<B: Benchmark>(bundle: &RunBundle<B::Results>, bundle_dir: &Path) -> Result<RenderedReport> {
    let section = B::report(bundle)?;
    let header = report::header(bundle, phase_label::<B>(&bundle.phase));
    let profiles = report::profiles_section(bundle.profiles.as_ref());
    let markdown = header + &section.markdown + &profiles;
    let title = format!("{} benchmark, run {}", B::Results::KIND, bundle.run_id);
    let html = report::html::page(&title, &markdown, &section.charts, &B::raw_samples(bundle));
    Ok(RenderedReport { dir: bundle_dir.to_path_buf(), charts: section.charts, markdown, html })
}

/// How messages say a phase the bundle names: the kind's label for it, or the name as it
/// is (`starting`, `done`, or a phase of another build).
fn phase_label<B: Benchmark>(name: &str) -> &str {
    B::Phase::ALL.iter().find(|phase| phase.name() == name).map_or(name, |phase| phase.label())
}

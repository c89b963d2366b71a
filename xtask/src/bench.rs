//! `cargo xtask bench [KIND]`: a benchmark on the chosen target, written to a results
//! bundle as it goes, then the report. Each kind maps its flags to its benchmark here;
//! the run itself is the same for every kind.
//!
//! Ctrl-C (or SIGTERM, or SIGHUP) stops the run, cancelling the statement in progress (see
//! `chbench::interrupt`): the bundle is finished as incomplete, the report is rendered
//! from it, the error line says where they are, and the command exits with 130. A
//! second Ctrl-C stops at once; the bundle on disk is valid all the same.
//!
//! `bench --matrix FILE` runs a matrix file's variants instead (`chbench::matrix`), each
//! as this command run again for one variant.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};
use chbench::benchmarks::kinds::default_kind;
use chbench::benchmarks::{AnyBenchmark, BundlePlace};
use chbench::matrix::{MatrixRun, ProcessBench, SUMMARY_MARKDOWN, read_matrix, run_matrix};
use chbench::report::html::REPORT_HTML;
use chbench::results::{ExistingFolder, check_run_id, prepare_results_folder, refuse_a_taken_run_id};
use chbench::settings::{Settings, choose_run_settings, parse_setting};
use clap::FromArgMatches;
use clap::parser::ValueSource;

use crate::flags::{Bench, RunFlags};
use crate::progress::TerminalProgress;

impl Bench {
    pub fn run(self) -> Result<()> {
        if let Some(file) = &self.matrix {
            return matrix(file, self.fail_fast, &self.default_kind.matches);
        }
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
    // Resolved once, first: `auto` says which deployment it chose before anything else,
    // and one brought up or down meanwhile (the eks feature's build takes minutes) changes
    // nothing of this run.
    let kind = chbench::targets::resolve_kind(flags.target.target);
    flags.engine.choose_for(kind)?;
    let settings = run_settings(&flags.settings)?;
    if !settings.is_empty() {
        choose_run_settings(settings)?;
    }
    // After the run's settings are chosen: a kind's check may read them.
    benchmark.check()?;
    benchmark.check_target_kind(kind)?;
    // An engine in this process writes under target/chbench/: the run must fit there.
    if chbench::targets::spec(kind).capabilities.engine_in_process {
        benchmark.check_storage(&chbench::files::chbench_dir())?;
    }
    if let Some(choice) = benchmark.profile() {
        chbench::profiling::check_target(choice, kind)?;
        chbench::profiling::check_settings(choice, &chbench::settings::run_settings(), "--setting")?;
        chbench::profiling::choose(choice)?;
    }
    prepare_results_folder(&flags.results_dir)?;
    if let Some(run_id) = &flags.run_id {
        refuse_a_taken_run_id(&flags.results_dir, run_id)?;
    }
    // After every cheap check, before the target opens, and dropped after it closes: the
    // engine's folder is on it, sized for the run's data, which must then fit on it too (a
    // kind may count files).
    let _volume = flags.storage.activate_for(kind, benchmark.disk_bytes_needed()?, true)?;
    if let Some(folder) = chbench::targets::volume::active_engine_folder() {
        benchmark.check_storage(&folder)?;
    }
    // A target this xtask was built without (eks, container): this command runs again, built with it.
    let mut target = crate::features::open_target(kind)?;
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
                "run {run_id} stopped during {phase}; what it measured is in {dir} ({report}); run `{}` again for a \
                 complete bundle",
                this_command(kind_name)
            )
        });
    }
    let report = end.report?;
    // As the progress lines: a reader that went away does not make a finished run fail.
    let _ = writeln!(std::io::stdout(), "report: {}", report.display());
    let _ = writeln!(std::io::stdout(), "page: {}", report.with_file_name(REPORT_HTML).display());
    // Every phase ran, so the bundle is complete; only what the run made on the target may
    // be left (a stop there still exits with 130).
    end.clean_up.with_context(|| {
        format!(
            "run {} is complete (its bundle and report are in {}), but its clean-up was cut short",
            end.run_id,
            end.dir.display()
        )
    })?;
    // A stop while the samples were read: the bundle is complete, with the graphs drawn by
    // then, and the run exits as stopped (130).
    end.profiles.with_context(|| {
        format!(
            "run {} is complete (its bundle and report are in {}), but reading its flame graphs was stopped",
            end.run_id,
            end.dir.display()
        )
    })?;
    // What the run was held to fails it only now, with everything written.
    end.verdict.with_context(|| {
        format!("run {} failed its check (its bundle and report are in {})", end.run_id, end.dir.display())
    })
}

/// `--setting NAME=VALUE`s as settings, each name once.
pub fn run_settings(given: &[String]) -> Result<Settings> {
    let mut settings = Settings::new();
    for text in given {
        let (name, value) = parse_setting(text)?;
        if settings.get(&name).is_some() {
            bail!("--setting {name} is given twice; give it once");
        }
        settings = settings.with(&name, value);
    }
    Ok(settings)
}

/// The run flags `bench --matrix` takes; the rest is the matrix file's. `TargetFlag` is
/// `--target`'s group (clap names a flattened struct's arguments after it), given when
/// `--target` is.
const MATRIX_RUN_FLAGS: [&str; 6] = ["matrix", "fail_fast", "target", "TargetFlag", "results_dir", "run_id"];

/// `bench --matrix FILE`: the file read and checked whole, then its variants, each this
/// command run again (`std::env::current_exe()`), then the comparisons and the summary.
fn matrix(file: &Path, fail_fast: bool, matches: &clap::ArgMatches) -> Result<()> {
    if let Some(given) = matches
        .ids()
        .map(|id| id.as_str())
        .find(|id| !MATRIX_RUN_FLAGS.contains(id) && matches.value_source(id) == Some(ValueSource::CommandLine))
    {
        bail!(
            "--{} with --matrix: the kind, its flags, settings, engine versions and storage are the matrix file's \
             ({}); give it there",
            given.replace('_', "-"),
            file.display()
        );
    }
    let flags = RunFlags::from_arg_matches(matches).context("cannot read the run's flags")?;
    if flags.storage.storage != chbench::targets::volume::StorageProfile::Local {
        bail!(
            "{} with --matrix: a matrix's storage profiles are its variants' (storage = \"gp3\" in a [[variant]], \
             docs/matrix.md); unset it, and give them there",
            chbench::targets::volume::PROFILE_ENV
        );
    }
    let matrix = read_matrix(file, flags.target.target)?;
    // A variant's storage profile the machine cannot hold is refused before the first
    // variant runs, not after the ones before it.
    for variant in &matrix.variants {
        if let Some(text) = &variant.storage_profile {
            let profile = chbench::targets::volume::parse_profile(text).map_err(anyhow::Error::msg)?;
            chbench::targets::volume::check_prerequisites(&profile)
                .with_context(|| format!("{}: variant {:?}", file.display(), variant.name))?;
        }
    }
    // A matrix on eks brings a deployment up with each variant's values in its namespace,
    // and takes it down: never the one the last `eks up` brought up for the user.
    if let Some(eks) = &matrix.eks
        && let Ok(Some(last_up)) = chbench::cluster::last_up::LastUp::recall()
        && eks.namespace == last_up.namespace
    {
        bail!(
            "{}: the matrix's namespace {} is that of {last_up}, which the matrix would bring up again with each \
             variant's values and take down: give the matrix a namespace of its own ([eks] namespace = \"...\"), or \
             `{}` first",
            file.display(),
            eks.namespace,
            chbench::cluster::eks_command("down", &last_up.namespace)
        );
    }
    // A target this xtask was built without (eks, container): this command runs again, built with it.
    crate::features::ensure_the_feature(matrix.target)?;
    prepare_results_folder(&flags.results_dir)?;
    let matrix_id = match &flags.run_id {
        Some(run_id) => {
            check_run_id(run_id)?;
            refuse_a_taken_run_id(&flags.results_dir, run_id)?;
            run_id.clone()
        }
        None => {
            let stem = file.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
            let stem: String =
                stem.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')).take(30).collect();
            let base = format!("{}-{}-matrix-{stem}", utc_stamp(jiff::Timestamp::now()), matrix.target);
            let base = base.trim_end_matches('-').to_string();
            (1..)
                .map(|n| if n == 1 { base.clone() } else { format!("{base}-{n}") })
                .find(|id| !flags.results_dir.join(id).exists())
                .context("no free matrix id")?
        }
    };
    for variant in &matrix.variants {
        check_run_id(&format!("{matrix_id}-{}", variant.name))
            .with_context(|| format!("variant {} of matrix {matrix_id}", variant.name))?;
    }
    let run = MatrixRun { folder: flags.results_dir.join(&matrix_id), matrix_id: matrix_id.clone(), fail_fast };
    let program = std::env::current_exe().context("cannot find this xtask's executable to run each variant")?;
    let mut bench = ProcessBench { program };
    // A closed terminal (SIGHUP) must not panic the matrix before it has said how it ended.
    let progress = |line: &str| {
        let _ = writeln!(std::io::stderr(), "chbench: {line}");
    };
    let summary = {
        #[cfg(feature = "eks")]
        {
            let mut cluster = chbench::matrix::eks::ClusterDeployments::from_kubeconfig();
            let deployments: Option<&mut dyn chbench::matrix::DeploymentSteps> =
                matrix.eks.is_some().then_some(&mut cluster as &mut dyn chbench::matrix::DeploymentSteps);
            run_matrix(&matrix, &run, &mut bench, deployments, &progress)?
        }
        #[cfg(not(feature = "eks"))]
        run_matrix(&matrix, &run, &mut bench, None, &progress)?
    };
    let summary_file = run.folder.join(SUMMARY_MARKDOWN);
    let _ = writeln!(std::io::stdout(), "matrix: {}", summary_file.display());
    let unfinished = summary.unfinished();
    if summary.interrupted {
        return Err(chbench::interrupt::Interrupted).with_context(|| {
            format!(
                "matrix {matrix_id} stopped: the variants done are kept in {}; not finished: {} (summary: {})",
                run.folder.display(),
                unfinished.join(", "),
                summary_file.display()
            )
        });
    }
    if !unfinished.is_empty() {
        let reasons: Vec<String> = summary
            .variants
            .iter()
            .filter(|variant| unfinished.contains(&variant.name.as_str()))
            .map(|variant| format!("{}: {}", variant.name, variant.error.as_deref().unwrap_or("unknown")))
            .collect();
        bail!(
            "matrix {matrix_id}: {} of {} variants failed or did not finish ({}); the others' bundles and comparisons are in {} \
             (summary: {})",
            unfinished.len(),
            summary.variants.len(),
            reasons.join("; "),
            run.folder.display(),
            summary_file.display()
        );
    }
    Ok(())
}

/// `20261130T031500Z`: a UTC time as a folder name.
fn utc_stamp(time: jiff::Timestamp) -> String {
    time.strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// This command as it was typed (`cargo xtask` and its arguments, quoted for a shell), to
/// repeat in a message, without `--run-id`: its folder now exists, and the same id would
/// be refused. `cargo xtask bench KIND` where an argument cannot be quoted.
fn this_command(kind_name: &str) -> String {
    let mut arguments: Vec<String> =
        std::env::args_os().skip(1).map(|argument| argument.to_string_lossy().into_owned()).collect();
    while let Some(at) = arguments.iter().position(|argument| argument == "--run-id") {
        arguments.drain(at..(at + 2).min(arguments.len()));
    }
    arguments.retain(|argument| !argument.starts_with("--run-id="));
    shlex::try_join(arguments.iter().map(String::as_str))
        .map_or_else(|_| format!("cargo xtask bench {kind_name}"), |quoted| format!("cargo xtask {quoted}"))
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

//! Matrix runs (`cargo xtask bench --matrix FILE`, docs/matrix.md): one benchmark kind
//! with one set of flags, run once per variant, one variant after another, each a normal
//! bench run with a bundle of its own, then the first variant compared with each other
//! one. On the eks target a variant is a deployment (a node type, a storage variant), and
//! each runs `eks up`, the benchmark, `eks collect` and `eks down`; elsewhere a variant is
//! session settings or an engine version.
//!
//! This module owns the matrix file ([`file`]), the order of the steps, what a failure or
//! an interruption leaves, and the summary (`matrix.json`, `matrix.md`). The steps
//! themselves are seams: [`BenchStep`] runs one variant's benchmark ([`ProcessBench`]: a
//! `bench` process of its own, since one process loads one engine version and holds one
//! set of session settings), [`DeploymentSteps`] its deployment's lifecycle (with the
//! `eks` feature, [`eks::ClusterDeployments`], through the functions the `eks` commands
//! use). It sits above the registry: it chooses a kind by name.

#[cfg(feature = "eks")]
pub mod eks;
pub mod file;

use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, Once};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

pub use self::file::{parse_matrix, read_matrix};
use crate::benchmarks::kinds::{self, Kind};
use crate::cluster::{Values, Variant};
use crate::compare::CompareOptions;
use crate::compare::report::{COMPARE_FILE, write_files};
use crate::engine::EngineVersion;
use crate::files::write_atomically;
use crate::interrupt::Interrupted;
use crate::markdown::Table;
use crate::node_prices::PriceOverrides;
use crate::settings::Settings;
use crate::target_info::TargetKind;

/// The summary's files in the matrix folder.
pub const SUMMARY_JSON: &str = "matrix.json";
pub const SUMMARY_MARKDOWN: &str = "matrix.md";

/// A matrix file, read and checked.
#[derive(Debug, Clone)]
pub struct Matrix {
    pub file: PathBuf,
    pub kind: &'static Kind,
    /// The kind's flags, the same for every variant.
    pub flags: Vec<String>,
    /// The target every variant runs on (resolved: never `auto`).
    pub target: TargetKind,
    /// On the eks target: what every variant's deployment shares.
    pub eks: Option<EksShared>,
    /// At least two, names unique; the first is the comparisons' baseline.
    pub variants: Vec<MatrixVariant>,
}

/// The `[eks]` table: what every variant's `eks up` shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EksShared {
    pub namespace: String,
    pub image: String,
    /// The data volume when a variant gives none [default: its storage's].
    pub volume_gib: Option<u32>,
    /// How long `up` waits for the pod and `down` for the namespace to go.
    pub timeout_seconds: u64,
    /// Whether `up` measures the storage baseline (fio), as `eks up` does by default.
    pub baseline: bool,
}

/// One variant: its name and what it changes.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixVariant {
    pub name: String,
    /// Session settings for every statement of its run (`bench --setting`); on eks they
    /// include `max_threads` from the node's vCPUs.
    pub settings: Settings,
    /// The embedded engine's version it runs on; `None`: this process's.
    pub engine_version: Option<&'static EngineVersion>,
    /// On a target whose engine is in the process, the storage profile it runs on
    /// (`bench --storage`, docs/storage-profiles.md), as the file gives it; `None`: the
    /// machine's own disk.
    pub storage_profile: Option<String>,
    /// On the eks target, the deployment it runs on.
    pub deployment: Option<VariantDeployment>,
}

/// What an eks variant's `up` deploys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantDeployment {
    pub storage: Variant,
    pub values: Values,
    /// The node's vCPUs or the variant's own `max_threads`; `None` on kind, which names no node.
    pub max_threads: Option<u32>,
}

impl MatrixVariant {
    /// What the variant changes, as one line for the summary (`default` when nothing).
    pub fn changes(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(deployment) = &self.deployment {
            parts.push(deployment.storage.to_string());
            if deployment.storage != Variant::Kind {
                parts.push(deployment.values.node_type.clone());
            }
        }
        parts.extend(self.settings.iter().map(|(name, value)| format!("{name}={value}")));
        if let Some(engine) = self.engine_version {
            parts.push(format!("engine {}", engine.npm_version));
        }
        if let Some(profile) = &self.storage_profile {
            parts.push(format!("storage {profile}"));
        }
        if parts.is_empty() { "the defaults".to_string() } else { parts.join(", ") }
    }
}

/// A matrix run's place and how it goes on after a failure.
#[derive(Debug, Clone)]
pub struct MatrixRun {
    /// `<results dir>/<matrix id>`: every variant's bundle, the comparisons and the summary.
    pub folder: PathBuf,
    pub matrix_id: String,
    /// Stop at the first variant that fails (the others are then missing).
    pub fail_fast: bool,
}

impl MatrixRun {
    /// A variant's run id: `<matrix id>-<variant>`.
    pub fn run_id_of(&self, variant: &MatrixVariant) -> String {
        format!("{}-{}", self.matrix_id, variant.name)
    }
}

/// One variant's benchmark, ready to run: where its bundle goes and what it runs with.
#[derive(Debug, Clone)]
pub struct PlannedVariant<'a> {
    pub matrix: &'a Matrix,
    pub variant: &'a MatrixVariant,
    pub run_id: String,
    /// The folder the bundle goes in (the matrix folder); the bundle is `results_dir/run_id`.
    pub results_dir: PathBuf,
}

impl PlannedVariant<'_> {
    /// The `bench` command line of the variant, after the program: the kind, its flags,
    /// the run flags, the variant's settings and engine version.
    pub fn bench_args(&self) -> Vec<String> {
        let mut args = vec!["bench".to_string(), self.matrix.kind.name.to_string()];
        args.extend(self.matrix.flags.iter().cloned());
        args.extend(["--target".to_string(), self.matrix.target.to_string()]);
        args.extend(["--results-dir".to_string(), self.results_dir.display().to_string()]);
        args.extend(["--run-id".to_string(), self.run_id.clone()]);
        for (name, value) in self.variant.settings.iter() {
            args.extend(["--setting".to_string(), format!("{name}={value}")]);
        }
        if let Some(engine) = self.variant.engine_version {
            args.extend(["--engine-version".to_string(), engine.npm_version.to_string()]);
        }
        if let Some(profile) = &self.variant.storage_profile {
            args.extend(["--storage".to_string(), profile.clone()]);
        }
        args
    }

    pub fn bundle_dir(&self) -> PathBuf {
        self.results_dir.join(&self.run_id)
    }
}

/// Runs one variant's benchmark into its bundle. An [`Interrupted`] error (in its chain)
/// says the run was stopped by Ctrl-C; any other error is the variant's failure.
pub trait BenchStep {
    fn bench(&mut self, planned: &PlannedVariant<'_>) -> Result<()>;
}

/// An eks variant's deployment: `up` before its benchmark, `collect` and `down` after, in
/// that order (`down` is refused before `collect`).
pub trait DeploymentSteps {
    fn up(&mut self, planned: &PlannedVariant<'_>, deployment: &VariantDeployment) -> Result<()>;
    /// Copies what the run left out of the cluster; returns the folder it wrote.
    fn collect(&mut self, planned: &PlannedVariant<'_>, deployment: &VariantDeployment) -> Result<PathBuf>;
    fn down(&mut self, planned: &PlannedVariant<'_>, deployment: &VariantDeployment) -> Result<()>;
}

/// How a variant ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VariantStatus {
    /// Its benchmark ran to the end (and on eks, its deployment was collected and removed).
    Done,
    /// A step failed: `error` says which and why.
    Failed,
    /// Ctrl-C, SIGTERM or SIGHUP stopped it; what it measured is in its bundle.
    Interrupted,
    /// It was running when the summary was last written: the matrix was killed during it
    /// (the variant then stopped as on SIGTERM, and its bundle holds what it measured).
    Running,
    /// It never ran: the matrix stopped before it (`error` says why).
    Missing,
}

/// One variant in the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantOutcome {
    pub name: String,
    /// What it changes, as [`MatrixVariant::changes`] says it.
    pub changes: String,
    pub run_id: String,
    pub status: VariantStatus,
    /// Its bundle's folder, relative to the matrix folder, when one was written.
    pub bundle: Option<String>,
    /// The step that failed and why, or why it is missing.
    pub error: Option<String>,
    /// On eks: the folder `collect` wrote, relative to the matrix folder.
    pub collected: Option<String>,
}

/// The first variant against another, as the summary records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonOutcome {
    pub baseline: String,
    pub candidate: String,
    /// The comparison's folder (compare.md, compare.json, medians.svg), relative to the
    /// matrix folder, or `None` when it could not be made (`error`).
    pub folder: Option<String>,
    /// The verdicts' one line (`Summary::line`).
    pub summary: Option<String>,
    pub error: Option<String>,
}

/// `matrix.json`: the whole matrix run, rewritten after every variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixSummary {
    pub matrix_id: String,
    /// The matrix file as given.
    pub file: String,
    pub kind: String,
    pub flags: Vec<String>,
    pub target: String,
    pub started_at: jiff::Timestamp,
    /// Set once every variant ran or the matrix stopped.
    pub finished_at: Option<jiff::Timestamp>,
    /// Whether Ctrl-C, SIGTERM or SIGHUP stopped the matrix.
    pub interrupted: bool,
    pub variants: Vec<VariantOutcome>,
    pub comparisons: Vec<ComparisonOutcome>,
}

impl MatrixSummary {
    /// The variants that did not finish (failed, interrupted or missing), by name.
    pub fn unfinished(&self) -> Vec<&str> {
        self.variants
            .iter()
            .filter(|variant| variant.status != VariantStatus::Done)
            .map(|variant| variant.name.as_str())
            .collect()
    }

    fn write(&self, folder: &Path) -> Result<()> {
        let json = serde_json::to_string_pretty(self).context("cannot serialise the matrix summary")?;
        write_atomically(&folder.join(SUMMARY_JSON), &(json + "\n"))?;
        write_atomically(&folder.join(SUMMARY_MARKDOWN), &self.markdown())
    }

    /// `matrix.md`: the variants and the comparisons, a table each.
    pub fn markdown(&self) -> String {
        let mut text = format!(
            "# Matrix {}\n\n{} benchmark (flags: {}) on {}, from {}.\n\n",
            self.matrix_id,
            self.kind,
            if self.flags.is_empty() { "none".to_string() } else { format!("`{}`", self.flags.join(" ")) },
            self.target,
            self.file
        );
        if self.interrupted {
            text.push_str(
                "**Interrupted** (Ctrl-C, SIGTERM or SIGHUP): the variants done are kept, the others are named below.\n\n",
            );
        }
        let missing: Vec<&str> = self.unfinished();
        if !missing.is_empty() {
            let failed = self.variants.iter().any(|variant| variant.status == VariantStatus::Failed);
            let what = if failed { "Failed or not finished" } else { "Not finished" };
            text.push_str(&format!("{what}: {}.\n\n", missing.join(", ")));
        }
        let mut variants = Table::new(["variant", "changes", "status", "bundle", "error"]);
        for variant in &self.variants {
            variants.row([
                variant.name.clone(),
                variant.changes.clone(),
                format!("{:?}", variant.status).to_lowercase(),
                variant.bundle.clone().unwrap_or_else(|| "none".to_string()),
                variant.error.clone().unwrap_or_default().replace('|', "\\|"),
            ]);
        }
        text.push_str(&format!("## Variants\n\n{variants}\n"));
        let mut comparisons = Table::new(["baseline", "candidate", "verdicts", "comparison"]);
        for comparison in &self.comparisons {
            comparisons.row([
                comparison.baseline.clone(),
                comparison.candidate.clone(),
                comparison
                    .summary
                    .clone()
                    .or_else(|| comparison.error.as_ref().map(|error| format!("not compared: {error}")))
                    .unwrap_or_default()
                    .replace('|', "\\|"),
                comparison.folder.as_ref().map(|folder| format!("{folder}/{COMPARE_FILE}")).unwrap_or_default(),
            ]);
        }
        if comparisons.is_empty() {
            text.push_str(
                "## Comparisons\n\nNone: the first variant (the baseline), or every other one, has no complete \
                 bundle.\n",
            );
        } else {
            text.push_str(&format!("## Comparisons\n\nThe first variant against each other one.\n\n{comparisons}\n"));
        }
        text
    }
}

/// Runs every variant of `matrix` in order, then compares the first with each other one;
/// writes the summary after each variant. Returns the summary; the caller turns an
/// interruption ([`MatrixSummary::interrupted`]) or failed variants into its exit.
pub fn run_matrix(
    matrix: &Matrix,
    run: &MatrixRun,
    bench: &mut dyn BenchStep,
    mut deployments: Option<&mut dyn DeploymentSteps>,
    progress: &dyn Fn(&str),
) -> Result<MatrixSummary> {
    if crate::targets::spec(matrix.target).capabilities.deployed_by_chbench && deployments.is_none() {
        bail!("a matrix on the eks target needs the deployments' steps (up, collect, down)");
    }
    std::fs::create_dir_all(&run.folder)
        .with_context(|| format!("cannot create the matrix folder {}", run.folder.display()))?;
    let mut summary = MatrixSummary {
        matrix_id: run.matrix_id.clone(),
        file: matrix.file.display().to_string(),
        kind: matrix.kind.name.to_string(),
        flags: matrix.flags.clone(),
        target: matrix.target.to_string(),
        started_at: jiff::Timestamp::now(),
        finished_at: None,
        interrupted: false,
        variants: matrix
            .variants
            .iter()
            .map(|variant| VariantOutcome {
                name: variant.name.clone(),
                changes: variant.changes(),
                run_id: run.run_id_of(variant),
                status: VariantStatus::Missing,
                bundle: None,
                error: Some("not run yet".to_string()),
                collected: None,
            })
            .collect(),
        comparisons: Vec::new(),
    };
    summary.write(&run.folder)?;
    let mut stopped: Option<String> = None;
    for (index, variant) in matrix.variants.iter().enumerate() {
        if crate::interrupt::requested() {
            summary.interrupted = true;
            stopped.get_or_insert_with(|| {
                "interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP) before it started".to_string()
            });
        }
        if let Some(why) = &stopped {
            summary.variants[index].error = Some(why.clone());
            continue;
        }
        let planned =
            PlannedVariant { matrix, variant, run_id: run.run_id_of(variant), results_dir: run.folder.clone() };
        progress(&format!(
            "variant {} of {}: {} ({}), run {}",
            index + 1,
            matrix.variants.len(),
            variant.name,
            variant.changes(),
            planned.run_id
        ));
        // What a killed matrix leaves said: the variant it was running, not one never run.
        summary.variants[index].status = VariantStatus::Running;
        summary.variants[index].bundle = Some(planned.run_id.clone());
        summary.variants[index].error = None;
        summary.write(&run.folder)?;
        let ended = run_variant(&planned, bench, deployments.as_deref_mut(), progress);
        let outcome = &mut summary.variants[index];
        outcome.status = ended.status;
        outcome.error = ended.error.clone();
        outcome.collected = ended.collected.as_deref().map(|folder| relative(folder, &run.folder));
        outcome.bundle =
            planned.bundle_dir().join(crate::results::RESULTS_FILE).is_file().then(|| planned.run_id.clone());
        progress(&format!(
            "variant {}: {}{}",
            variant.name,
            format!("{:?}", ended.status).to_lowercase(),
            ended.error.as_ref().map(|error| format!(": {error}")).unwrap_or_default()
        ));
        if ended.status == VariantStatus::Interrupted {
            summary.interrupted = true;
            stopped = Some(format!("the matrix was interrupted during variant {}", variant.name));
        } else if let Some(why) = ended.stops_the_matrix {
            stopped = Some(why);
        } else if ended.status == VariantStatus::Failed && run.fail_fast {
            stopped = Some(format!("--fail-fast: variant {} failed", variant.name));
        }
        summary.write(&run.folder)?;
    }
    summary.comparisons = compare_variants(matrix, &summary, &run.folder, progress);
    // A stop during the comparisons ends them, as one during a variant ends it.
    summary.interrupted |= crate::interrupt::requested();
    summary.finished_at = Some(jiff::Timestamp::now());
    summary.write(&run.folder)?;
    Ok(summary)
}

/// How one variant's steps ended.
struct VariantEnd {
    status: VariantStatus,
    error: Option<String>,
    collected: Option<PathBuf>,
    /// Why no further variant may run (a deployment left on the cluster), if so.
    stops_the_matrix: Option<String>,
}

fn is_interrupted(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<Interrupted>())
}

/// One variant: on eks `up`, the benchmark, `collect`, `down`; elsewhere the benchmark.
fn run_variant<'d>(
    planned: &PlannedVariant<'_>,
    bench: &mut dyn BenchStep,
    deployments: Option<&mut (dyn DeploymentSteps + 'd)>,
    progress: &dyn Fn(&str),
) -> VariantEnd {
    let failed = |step: &str, error: anyhow::Error| VariantEnd {
        status: if is_interrupted(&error) { VariantStatus::Interrupted } else { VariantStatus::Failed },
        error: Some(format!("{step}: {error:#}")),
        collected: None,
        stops_the_matrix: None,
    };
    let (Some(deployments), Some(deployment)) = (deployments, &planned.variant.deployment) else {
        return match bench.bench(planned) {
            Ok(()) => VariantEnd { status: VariantStatus::Done, error: None, collected: None, stops_the_matrix: None },
            Err(error) => failed("bench", error),
        };
    };
    let namespace = &deployment.values.namespace;
    // `up` may fail after it applied something: what it made is collected and removed as
    // after a benchmark, so that the next variant's `up` starts on an empty namespace.
    let mut end = match deployments.up(planned, deployment) {
        Err(error) => failed("eks up", error),
        Ok(()) => match bench.bench(planned) {
            Ok(()) => VariantEnd { status: VariantStatus::Done, error: None, collected: None, stops_the_matrix: None },
            Err(error) => failed("bench", error),
        },
    };
    if end.status == VariantStatus::Interrupted {
        // Collect and down would be cut short by the same stop (their waits end on it).
        end.stops_the_matrix = Some(format!(
            "the matrix was interrupted during variant {}; its deployment in namespace {namespace} is left as it was: \
             run `{}` then `{}`",
            planned.variant.name,
            crate::cluster::eks_command("collect", namespace),
            crate::cluster::eks_command("down", namespace)
        ));
        return end;
    }
    progress(&format!("variant {}: collecting namespace {namespace}", planned.variant.name));
    match deployments.collect(planned, deployment) {
        Ok(folder) => end.collected = Some(folder),
        Err(error) => {
            let why = format!(
                "eks collect: {error:#}; the deployment in namespace {namespace} is left up (down is refused before \
                 collect): run `{}`, then `{}`",
                crate::cluster::eks_command("collect", namespace),
                crate::cluster::eks_command("down", namespace)
            );
            end.status = if is_interrupted(&error) { VariantStatus::Interrupted } else { VariantStatus::Failed };
            end.error = Some(match end.error.take() {
                Some(earlier) => format!("{earlier}; {why}"),
                None => why,
            });
            end.stops_the_matrix = Some(format!(
                "variant {}'s deployment in namespace {namespace} could not be collected, so it is still up and the \
                 next variant cannot deploy there",
                planned.variant.name
            ));
            return end;
        }
    }
    progress(&format!("variant {}: removing namespace {namespace}", planned.variant.name));
    if let Err(error) = deployments.down(planned, deployment) {
        let why = format!("eks down: {error:#}; run `{}` to remove it", crate::cluster::eks_command("down", namespace));
        end.status = if is_interrupted(&error) { VariantStatus::Interrupted } else { VariantStatus::Failed };
        end.error = Some(match end.error.take() {
            Some(earlier) => format!("{earlier}; {why}"),
            None => why,
        });
        end.stops_the_matrix = Some(format!(
            "variant {}'s deployment in namespace {namespace} was not removed, so the next variant cannot deploy there",
            planned.variant.name
        ));
    }
    end
}

/// The first variant against each other one that finished, each written to
/// `compare-<first>-vs-<other>/` in the matrix folder. What the matrix declares may
/// differ (its variants' settings) is not refused.
fn compare_variants(
    matrix: &Matrix,
    summary: &MatrixSummary,
    folder: &Path,
    progress: &dyn Fn(&str),
) -> Vec<ComparisonOutcome> {
    // Done, or failed with a complete bundle (a query failed its check, and the run said
    // so): its failed queries are failed in the comparison, the rest compare.
    let done = |outcome: &&VariantOutcome| {
        outcome.bundle.is_some()
            && match outcome.status {
                VariantStatus::Done => true,
                VariantStatus::Failed => {
                    crate::results::bundle_is_complete(&folder.join(&outcome.run_id)).unwrap_or(false)
                }
                VariantStatus::Interrupted | VariantStatus::Running | VariantStatus::Missing => false,
            }
    };
    let Some(baseline) = summary.variants.first().filter(done) else {
        return Vec::new();
    };
    let declared: std::collections::BTreeSet<String> =
        matrix.variants.iter().flat_map(|variant| variant.settings.iter().map(|(name, _)| name.to_string())).collect();
    // An eks variant's node type prices its side, as a bundle of the eks target does not
    // name its node's type.
    let priced = |name: &str| PriceOverrides {
        declared_node_type: matrix
            .variants
            .iter()
            .find(|variant| variant.name == name)
            .and_then(|variant| variant.deployment.as_ref())
            .filter(|deployment| deployment.storage != Variant::Kind)
            .map(|deployment| deployment.values.node_type.clone()),
        ..PriceOverrides::default()
    };
    summary.variants[1..]
        .iter()
        .filter(done)
        .map(|candidate| {
            let name = format!("compare-{}-vs-{}", baseline.name, candidate.name);
            let dirs = [folder.join(&baseline.run_id), folder.join(&candidate.run_id)];
            let options = CompareOptions {
                declared_session_settings: declared.clone(),
                prices: (priced(&baseline.name), priced(&candidate.name)),
                ..CompareOptions::default()
            };
            // Comparing two large bundles takes minutes: a stop, before or during, ends it,
            // and `cargo xtask compare` makes it later.
            let stoppable_dirs = dirs.clone();
            let written = crate::interrupt::until_stopped(move || kinds::compare(&stoppable_dirs, &options))
                .map_err(|error| {
                    if error.is::<Interrupted>() {
                        error.context(format!(
                            "the matrix was interrupted; `cargo xtask compare {} {}` makes it",
                            dirs[0].display(),
                            dirs[1].display()
                        ))
                    } else {
                        error
                    }
                })
                .and_then(|compared| {
                    let out = folder.join(&name);
                    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
                    write_files(&compared, &out)?;
                    // The kind's own headlines too (a throughput level's rate, a logs
                    // query's direct-I/O run): what the queries' verdicts cannot show.
                    let headlines =
                        std::iter::once(compared.comparison.summary.line()).chain(compared.sections().headlines());
                    Ok(headlines.collect::<Vec<_>>().join("; "))
                });
            match written {
                Ok(line) => {
                    progress(&format!("{} against {}: {line}", candidate.name, baseline.name));
                    ComparisonOutcome {
                        baseline: baseline.name.clone(),
                        candidate: candidate.name.clone(),
                        folder: Some(name),
                        summary: Some(line),
                        error: None,
                    }
                }
                Err(error) => ComparisonOutcome {
                    baseline: baseline.name.clone(),
                    candidate: candidate.name.clone(),
                    folder: None,
                    summary: None,
                    error: Some(format!("{error:#}")),
                },
            }
        })
        .collect()
}

fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).display().to_string()
}

/// The benchmark of a variant as a `bench` process of its own: `program` (xtask's own
/// executable) with [`PlannedVariant::bench_args`]. A variant of another engine version
/// gets that version's library, fetched here once if needed, as `CHBENCH_LIBCHDB`, as an
/// engine worker does. The process runs in a process group of its own: a Ctrl-C, SIGTERM
/// or SIGHUP reaches this process alone, which passes one SIGINT on and waits, so the
/// variant's run ends the normal way (its bundle finished as incomplete, exit 130). When
/// this process dies without a word (SIGKILL, a crash), the kernel sends the variant
/// [`crate::interrupt::PARENT_GONE`] (Linux: the parent-death signal), so it stops the
/// same way rather than run on as an orphan. Its output goes to this process's; its last `error:` line is the
/// variant's error.
#[derive(Debug, Clone)]
pub struct ProcessBench {
    pub program: PathBuf,
}

/// The bench process running now, which a request to stop reaches.
static RUNNING: Mutex<Option<u32>> = Mutex::new(None);
static STOP_HOOK: Once = Once::new();

fn interrupt_running_bench() {
    let Ok(running) = RUNNING.lock() else { return };
    if let Some(pid) = running.and_then(|pid| i32::try_from(pid).ok()).and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
    }
}

/// Has the kernel send [`crate::interrupt::PARENT_GONE`] to the process `command` starts
/// when this one dies, which the variant takes as a request to stop, once. The signal
/// comes when the *thread* that started the child ends, so `bench` starts it from the
/// thread that then waits for it; and again each time the child passes to another thread
/// of a dying process, which is why it is not SIGTERM (a second SIGTERM stops at once).
#[cfg(target_os = "linux")]
fn stop_with_this_process(command: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    let parent = rustix::process::getpid();
    // SAFETY: between fork and exec the closure makes two system calls and builds an
    // error from a static string: no allocation, no lock.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::USR1))?;
            // This process may have died before the call above, which would then never fire.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other("the matrix ended before its variant started"));
            }
            Ok(())
        });
    }
}

/// Elsewhere no parent-death signal: a variant whose matrix was killed runs to its end.
#[cfg(not(target_os = "linux"))]
fn stop_with_this_process(_command: &mut Command) {}

impl BenchStep for ProcessBench {
    fn bench(&mut self, planned: &PlannedVariant<'_>) -> Result<()> {
        crate::interrupt::check()?;
        let mut command = Command::new(&self.program);
        command.args(planned.bench_args());
        // An eks variant runs on the deployment its `up` made, in the matrix's namespace:
        // not the one `CHBENCH_NAMESPACE` or the last `eks up` would name.
        if let Some(deployment) = &planned.variant.deployment {
            command.env(crate::targets::eks::NAMESPACE_ENV, &deployment.values.namespace);
        }
        if let Some(engine) = planned.variant.engine_version {
            // Written as the stopping line is: a closed terminal (SIGHUP) must not panic.
            let library = crate::engine::provision_version(engine, &|line| {
                let _ = writeln!(std::io::stderr(), "chbench: {line}");
            })?;
            command.env(crate::engine::LIBCHDB_ENV, library).env(crate::engine::ENGINE_VERSION_ENV, engine.npm_version);
        }
        {
            use std::os::unix::process::CommandExt as _;
            command.process_group(0);
        }
        stop_with_this_process(&mut command);
        STOP_HOOK.call_once(|| crate::interrupt::on_stop(interrupt_running_bench));
        let mut child = command
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", self.program.display()))?;
        if let Ok(mut running) = RUNNING.lock() {
            *running = Some(child.id());
        }
        // A stop that came between the check and the spawn reached no process.
        if crate::interrupt::requested() {
            interrupt_running_bench();
        }
        let last_error = Arc::new(Mutex::new(None::<String>));
        let relay = child.stderr.take().map(|stderr| {
            let last_error = Arc::clone(&last_error);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    // The variant's error is said once, by the matrix, as the variant's end;
                    // the stop this process passed on, it said itself.
                    match line.strip_prefix("error: ") {
                        Some(error) => {
                            if let Ok(mut last) = last_error.lock() {
                                *last = Some(error.to_string());
                            }
                        }
                        // (With the blank line before it, once this process was asked to stop.)
                        None if line == crate::interrupt::STOPPING_LINE
                            || (line.is_empty() && crate::interrupt::requested()) => {}
                        None => {
                            let _ = writeln!(std::io::stderr(), "{line}");
                        }
                    }
                }
            })
        });
        let status = child.wait().context("cannot wait for the variant's bench process");
        if let Ok(mut running) = RUNNING.lock() {
            *running = None;
        }
        if let Some(relay) = relay {
            let _ = relay.join();
        }
        let status = status?;
        let said = last_error.lock().ok().and_then(|last| last.clone());
        match status.code() {
            Some(0) => Ok(()),
            // 128 + SIGINT: the run stopped on a request to stop.
            // The bench's own line ends with the interruption, which the chain adds again.
            Some(130) => Err(anyhow!(Interrupted).context(
                said.map(|said| said.trim_end_matches(&format!(": {Interrupted}")).to_string())
                    .unwrap_or_else(|| "the bench was interrupted".into()),
            )),
            _ => Err(anyhow!(said.unwrap_or_else(|| format!("the bench process ended with {status}")))),
        }
    }
}

//! A query's history across runs (`cargo xtask history`): bundles of one kind, in the
//! order they started, each query's median and spread per run, the engine and machine of
//! each, and the verdict of the comparison's own test (docs/compare.md) between each run
//! and the one before. Two runs asked to do different things (their inputs differ, as
//! `compare` refuses them) are a break, drawn as one: the line stops and starts again.
//!
//! Everything is read through the registry's comparison: each pair of runs is compared as
//! `compare` compares them, so that the history says nothing `compare` would not, and a
//! run's figures are its side of one of those comparisons (of its A/A comparison, the run
//! against itself, when it is in none that holds all its queries).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::benchmarks::kinds;
use crate::compare::report::verdict_cell;
use crate::compare::{CompareOptions, Comparison, QuerySide};
use crate::files::write_atomically;
use crate::machine::MachineInfo;
use crate::markdown::Table;
use crate::report::charts::{RunLine, RunPoint, runs_over_time};
use crate::report::html;
use crate::results::{RESULTS_FILE, RunStatus, bundle_kind};
use crate::target_info::TargetInfo;
use crate::units::{compact, human_bytes, milliseconds};

/// The history's report, in its folder.
pub const HISTORY_FILE: &str = "history.md";
/// The history's page, beside the report.
pub const HISTORY_HTML: &str = "history.html";
/// The chart of every query's medians across the runs.
pub const HISTORY_CHART: &str = "history.svg";

/// What is read of a bundle's envelope to order it and describe it: the rest is the
/// comparison's.
#[derive(Deserialize)]
struct Head {
    run_id: String,
    started_at: jiff::Timestamp,
    status: RunStatus,
    target: TargetInfo,
    machine: Option<MachineInfo>,
}

/// A bundle of the history, as ordered, and what its envelope says of where it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub dir: PathBuf,
    pub run_id: String,
    pub started_at: jiff::Timestamp,
    pub status: RunStatus,
    pub engine_version: String,
    pub target: String,
    /// CPU, cores and memory, as a comparison says them; `None` before the first phase.
    pub machine: Option<String>,
    /// Whether the machine was quiet (no other chbench process, others under a quarter of
    /// a core); `None` before the first phase.
    pub quiet: Option<bool>,
}

/// The bundles' kind and the bundles in the order they started (ties by run id), or one
/// line saying why they do not go on one axis: none, or of more than one kind.
pub fn order_runs(dirs: &[PathBuf]) -> Result<(String, Vec<Run>)> {
    if dirs.is_empty() {
        bail!("no bundle to put in a history: give the runs, or a --results-dir that holds some");
    }
    for (index, dir) in dirs.iter().enumerate() {
        let same = |other: &PathBuf| other.canonicalize().ok() == dir.canonicalize().ok();
        if dirs[..index].iter().any(same) {
            bail!("{} is given twice: a history holds each run once", dir.display());
        }
    }
    let mut kinds: Vec<(String, PathBuf)> = Vec::new();
    let mut runs = Vec::new();
    for dir in dirs {
        let kind = bundle_kind(dir)?;
        if !kinds.iter().any(|(known, _)| *known == kind) {
            kinds.push((kind, dir.clone()));
        }
        let path = dir.join(RESULTS_FILE);
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let head: Head = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a results bundle's envelope", path.display()))?;
        runs.push(Run {
            dir: dir.clone(),
            run_id: head.run_id,
            started_at: head.started_at,
            status: head.status,
            engine_version: head.target.engine_version.clone(),
            target: head.target.kind.to_string(),
            machine: head.machine.as_ref().map(|machine| {
                format!(
                    "{}, {} logical cores, {}",
                    machine.cpu_model,
                    machine.logical_cores,
                    human_bytes(machine.memory_bytes)
                )
            }),
            quiet: head.machine.as_ref().map(MachineInfo::quiet),
        });
    }
    if let [(first, first_dir), (second, second_dir), ..] = kinds.as_slice() {
        bail!(
            "{} is a {first} bundle and {} a {second} one: a history puts runs of one kind on one axis; give runs of \
             one kind",
            first_dir.display(),
            second_dir.display()
        );
    }
    runs.sort_by(|a, b| (a.started_at, &a.run_id).cmp(&(b.started_at, &b.run_id)));
    Ok((kinds.remove(0).0, runs))
}

/// The bundles directly under `results_dir` (a folder holding `results.json`), of `kind`
/// when it is given; refused in one line when they are of several kinds and none is given.
/// A bundle that does not say its kind (a `results.json` cut short, or not one) is left
/// out with a line that names it, rather than stopping every history of the folder.
pub fn bundles_under(results_dir: &Path, kind: Option<&str>) -> Result<Vec<PathBuf>> {
    if !results_dir.is_dir() {
        bail!(
            "no results folder {}: run `cargo xtask bench` first, or give --results-dir or the runs",
            results_dir.display()
        );
    }
    let entries =
        std::fs::read_dir(results_dir).with_context(|| format!("cannot list the runs in {}", results_dir.display()))?;
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let dir = entry.with_context(|| format!("cannot list the runs in {}", results_dir.display()))?.path();
        if !dir.join(RESULTS_FILE).is_file() {
            continue;
        }
        match bundle_kind(&dir) {
            Ok(bundle) => found.push((bundle, dir)),
            Err(error) => crate::say!(
                "chbench: left out of the history: {error:#} (move it out of {}, or give the runs)",
                results_dir.display()
            ),
        }
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    let mut kinds: Vec<&str> = Vec::new();
    for (bundle, _) in &found {
        if !kinds.contains(&bundle.as_str()) {
            kinds.push(bundle);
        }
    }
    kinds.sort_unstable();
    match kind {
        Some(kind) => {
            let dirs: Vec<PathBuf> =
                found.iter().filter(|(bundle, _)| bundle == kind).map(|(_, dir)| dir.clone()).collect();
            if dirs.is_empty() {
                bail!(
                    "{} holds no {kind} bundle (it holds {}): give another --kind, or the runs",
                    results_dir.display(),
                    if kinds.is_empty() { "none".to_string() } else { kinds.join(", ") }
                );
            }
            Ok(dirs)
        }
        None => match kinds.as_slice() {
            [] => bail!(
                "{} holds no results bundle: run `cargo xtask bench` first, or give the runs",
                results_dir.display()
            ),
            [_] => Ok(found.into_iter().map(|(_, dir)| dir).collect()),
            [many @ .., last] => bail!(
                "{} holds {} and {last} bundles: give --kind K or the runs",
                results_dir.display(),
                many.join(", ")
            ),
        },
    }
}

/// One run of the history: its figures or why they could not be read, and how it stands
/// against the run before.
pub struct RunFigures {
    pub run: Run,
    pub figures: std::result::Result<Figures, String>,
    /// The run it was compared with (by index): the last before it that measured a query.
    pub before: Option<usize>,
    pub against_previous: Against,
}

/// A run's figures: its side of a comparison it is in.
pub struct Figures {
    pub comparison: Comparison,
    /// Whether the run is the comparison's B (else its A).
    pub candidate: bool,
}

impl Figures {
    /// What `query` measured in the run, when it did.
    fn query(&self, query: &str) -> Option<&QuerySide> {
        let measured = self.comparison.queries.iter().find(|measured| measured.query == query)?;
        Some(if self.candidate { &measured.candidate } else { &measured.baseline })
    }
}

/// A run against the one before it.
pub enum Against {
    First,
    /// The comparison `compare` makes, the run before as A.
    Compared(Box<Comparison>),
    /// Why they do not compare (their inputs differ, or a bundle does not read): the
    /// error's first line.
    Break(String),
}

/// The history of `dirs`' bundles: their kind, and each run's figures in the order the
/// runs started.
pub struct History {
    pub kind: String,
    pub runs: Vec<RunFigures>,
}

/// Reads and compares the bundles; a run that does not read is kept, with why, and
/// breaks the line.
pub fn history(dirs: &[PathBuf]) -> Result<History> {
    let (kind, runs) = order_runs(dirs)?;
    let options = CompareOptions::default();
    let first_line = |error: anyhow::Error| {
        format!("{error:#}").lines().next().unwrap_or("unknown").split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let whole =
        |comparison: &Comparison| comparison.only_in_baseline.is_empty() && comparison.only_in_candidate.is_empty();
    let own_figures = |run: &Run| {
        kinds::compare(&[run.dir.clone(), run.dir.clone()], &options)
            .map(|compared| Figures { comparison: compared.comparison, candidate: false })
            .map_err(first_line)
    };
    let count = runs.len();
    let mut against: Vec<(Option<usize>, Against)> = Vec::with_capacity(count);
    // A comparison that holds every query of both runs gives each its figures: the run as
    // B of its run before, else as A of its run after; a run in none is compared with
    // itself (breaks on both sides, or queries the other run lacks).
    let (mut as_candidate, mut as_baseline): (Vec<Option<Comparison>>, Vec<Option<Comparison>>) =
        (vec![None; count], vec![None; count]);
    let mut own: Vec<Option<std::result::Result<Figures, String>>> = (0..count).map(|_| None).collect();
    // The last run with a query of its own: a run that measured none (stopped before its
    // queries) is in the history but is nobody's run before.
    let mut previous: Option<usize> = None;
    for index in 0..count {
        let this = match previous {
            None => Against::First,
            Some(before) => match kinds::compare(&[runs[before].dir.clone(), runs[index].dir.clone()], &options) {
                Ok(compared) => {
                    if whole(&compared.comparison) {
                        as_candidate[index] = Some(compared.comparison.clone());
                        as_baseline[before].get_or_insert_with(|| compared.comparison.clone());
                    }
                    Against::Compared(Box::new(compared.comparison))
                }
                Err(error) => Against::Break(first_line(error)),
            },
        };
        let has_queries = match &this {
            Against::Compared(_) => true,
            _ => {
                let figures = own_figures(&runs[index]);
                let measured = figures.is_ok();
                own[index] = Some(figures);
                measured
            }
        };
        against.push((previous, this));
        if has_queries {
            previous = Some(index);
        }
    }
    let mut history = Vec::with_capacity(count);
    for (index, (run, (before, against_previous))) in runs.into_iter().zip(against).enumerate() {
        let figures = match (as_candidate[index].take(), as_baseline[index].take(), own[index].take()) {
            (Some(comparison), _, _) => Ok(Figures { comparison, candidate: true }),
            (None, Some(comparison), _) => Ok(Figures { comparison, candidate: false }),
            (None, None, Some(figures)) => figures,
            (None, None, None) => own_figures(&run),
        };
        history.push(RunFigures { run, figures, before, against_previous });
    }
    Ok(History { kind, runs: history })
}

impl History {
    /// Every query of any run, in the order the runs first measured them.
    pub fn queries(&self) -> Vec<String> {
        let mut queries: Vec<String> = Vec::new();
        for run in &self.runs {
            for query in run.figures.iter().flat_map(|figures| &figures.comparison.queries) {
                if !queries.contains(&query.query) {
                    queries.push(query.query.clone());
                }
            }
        }
        queries
    }

    /// The runs (by index) whose line starts again: their inputs differ from the run
    /// before's, or one of the two did not read.
    pub fn breaks(&self) -> Vec<usize> {
        self.runs
            .iter()
            .enumerate()
            .filter(|(_, run)| matches!(run.against_previous, Against::Break(_)))
            .map(|(index, _)| index)
            .collect()
    }

    /// What `query` measured in run `index`, when it did.
    fn side(&self, index: usize, query: &str) -> Option<&QuerySide> {
        self.runs[index].figures.as_ref().ok()?.query(query)
    }

    /// Run `index` against the one before, for `query`: the verdict, `break`, or `first`.
    fn against_cell(&self, index: usize, query: &str) -> String {
        match &self.runs[index].against_previous {
            Against::First => "first".to_string(),
            Against::Break(_) => "**break** (see Runs)".to_string(),
            Against::Compared(comparison) => match comparison.queries.iter().find(|compared| compared.query == query) {
                Some(compared) => verdict_cell(compared),
                None => "not measured in both".to_string(),
            },
        }
    }

    /// The chart: a line per query through its medians, broken where the inputs change.
    pub fn chart(&self) -> Result<String> {
        let run_ids: Vec<String> = self.runs.iter().map(|run| run.run.run_id.clone()).collect();
        let lines: Vec<RunLine> = self
            .queries()
            .into_iter()
            .map(|query| {
                let points = (0..self.runs.len())
                    .map(|index| {
                        let side = self.side(index, &query)?;
                        let (min, max) = spread(&side.samples_ms)?;
                        let note = match &self.runs[index].against_previous {
                            Against::First => String::new(),
                            Against::Break(_) => "a break: its inputs differ from the run before's".to_string(),
                            Against::Compared(_) => {
                                format!("{} against the run before", self.against_cell(index, &query).replace("**", ""))
                            }
                        };
                        Some(RunPoint { median: side.median_ms?, min, max, note })
                    })
                    .collect();
                RunLine { name: query, points }
            })
            .collect();
        runs_over_time("Median warm time per run", "ms", &run_ids, &lines, &self.breaks())
    }

    /// The history as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let (first, last) = (&self.runs[0].run.run_id, &self.runs[self.runs.len() - 1].run.run_id);
        let _ = writeln!(out, "# {} benchmark: history of {} runs, {first} to {last}\n", self.kind, self.runs.len());
        let _ = writeln!(
            out,
            "Per query, each run's median warm time and its spread (the fastest and the slowest warm sample), in the \
             order the runs started, with the verdict of the test `cargo xtask compare` uses (docs/compare.md) \
             against the run before. A run asked to do different things from the one before (its inputs differ) \
             is a break: its line starts again rather than reading as a change.\n"
        );
        let _ = writeln!(out, "## Runs\n");
        let mut runs = Table::new([
            "#",
            "run",
            "started",
            "status",
            "engine",
            "target",
            "machine",
            "quiet",
            "against the run before",
        ]);
        for (index, run) in self.runs.iter().enumerate() {
            let mut against = match (&run.against_previous, run.before) {
                (Against::First, _) | (_, None) => "first".to_string(),
                (Against::Break(why), Some(before)) => format!("**break** against #{}: {why}", before + 1),
                (Against::Compared(comparison), Some(before)) if before + 1 == index => comparison.summary.line(),
                (Against::Compared(comparison), Some(before)) => {
                    format!("against #{}: {}", before + 1, comparison.summary.line())
                }
            };
            if let Err(why) = &run.figures {
                against.push_str(&format!("; no figures: {why}"));
            }
            let quiet = match run.run.quiet {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "unknown",
            };
            runs.row([
                format!("#{}", index + 1),
                run.run.run_id.clone(),
                run.run.started_at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
                match run.run.status {
                    RunStatus::Complete => "complete".to_string(),
                    RunStatus::Incomplete => "**incomplete**".to_string(),
                },
                run.run.engine_version.clone(),
                run.run.target.clone(),
                run.run.machine.clone().unwrap_or_else(|| "not recorded".to_string()),
                quiet.to_string(),
                against,
            ]);
        }
        let _ = writeln!(
            out,
            "{runs}\nA break's reason is `cargo xtask compare`'s; `cargo xtask compare --force A B` compares the two \
             runs anyway. A verdict next to a run whose machine was not quiet may be the machine's rather than the \
             code's. A run that measured no query (stopped before its queries) is no run's run before.\n"
        );
        let _ = writeln!(out, "![median per run]({HISTORY_CHART})\n");
        for query in self.queries() {
            let _ = writeln!(out, "## {query}\n");
            let mut table = Table::new(["#", "run", "median", "min–max", "samples", "against the one before"]);
            for (index, run) in self.runs.iter().enumerate() {
                let side = self.side(index, &query);
                let range = side
                    .and_then(|side| spread(&side.samples_ms))
                    .map_or("unknown".to_string(), |(min, max)| format!("{}–{} ms", compact(min), compact(max)));
                table.row([
                    format!("#{}", index + 1),
                    run.run.run_id.clone(),
                    side.map_or("not measured".to_string(), |side| milliseconds(side.median_ms)),
                    range,
                    side.map_or("0".to_string(), |side| side.samples.to_string()),
                    self.against_cell(index, &query),
                ]);
            }
            let _ = writeln!(out, "{table}");
        }
        out
    }

    /// Writes history.svg, history.html and history.md into the folder `out`, which
    /// exists, each whole, then renamed into place; returns the report's path.
    pub fn write(&self, out: &Path) -> Result<PathBuf> {
        let charts = vec![(HISTORY_CHART, self.chart()?)];
        for (name, svg) in &charts {
            write_atomically(&out.join(name), svg)?;
        }
        let markdown = self.markdown();
        let title = format!("{} benchmark: history of {} runs", self.kind, self.runs.len());
        write_atomically(&out.join(HISTORY_HTML), &html::page(&title, &markdown, &charts, &[]))?;
        let report = out.join(HISTORY_FILE);
        write_atomically(&report, &markdown)?;
        Ok(report)
    }
}

/// The fastest and the slowest of `samples` that are times.
fn spread(samples: &[f64]) -> Option<(f64, f64)> {
    let known: Vec<f64> = samples.iter().copied().filter(|ms| ms.is_finite()).collect();
    let min = known.iter().copied().reduce(f64::min)?;
    let max = known.iter().copied().reduce(f64::max)?;
    Some((min, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle folder with what ordering reads of it: its kind and envelope.
    fn bundle(root: &Path, run_id: &str, kind: &str, started_at: &str) -> PathBuf {
        let dir = root.join(run_id);
        std::fs::create_dir_all(&dir).unwrap();
        let results = serde_json::json!({
            "schema_version": crate::results::SCHEMA_VERSION,
            "run_id": run_id,
            "started_at": started_at,
            "status": "complete",
            "target": { "kind": "embedded", "engine_version": "26.7.2.1", "endpoint": "libchdb.so" },
            "machine": null,
            "benchmark": { "kind": kind },
        });
        std::fs::write(dir.join(RESULTS_FILE), results.to_string()).unwrap();
        dir
    }

    #[test]
    fn runs_are_ordered_by_when_they_started_then_by_run_id() {
        let root = tempfile::tempdir().unwrap();
        let dirs = [
            bundle(root.path(), "late", "logs", "2026-03-02T10:00:00Z"),
            bundle(root.path(), "b", "logs", "2026-03-01T10:00:00Z"),
            bundle(root.path(), "a", "logs", "2026-03-01T10:00:00Z"),
        ];
        let (kind, runs) = order_runs(&dirs).unwrap();
        assert_eq!(kind, "logs");
        let ids: Vec<&str> = runs.iter().map(|run| run.run_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "late"]);
    }

    #[test]
    fn what_does_not_go_on_one_axis_is_refused_in_one_line() {
        let root = tempfile::tempdir().unwrap();
        let error = order_runs(&[]).unwrap_err().to_string();
        assert!(error.starts_with("no bundle to put in a history"), "{error}");
        let logs = bundle(root.path(), "l1", "logs", "2026-03-01T10:00:00Z");
        let throughput = bundle(root.path(), "t1", "throughput", "2026-03-01T11:00:00Z");
        let error = order_runs(&[logs, throughput]).unwrap_err().to_string();
        assert!(error.contains("a logs bundle") && error.contains("a throughput one"), "{error}");
        assert!(!error.contains('\n'), "{error}");

        // Under a results folder: two kinds need --kind, which picks its own.
        std::fs::create_dir_all(root.path().join("compare-l1-vs-l2")).unwrap();
        let error = bundles_under(root.path(), None).unwrap_err().to_string();
        assert!(error.ends_with("holds logs and throughput bundles: give --kind K or the runs"), "{error}");
        let logs = bundles_under(root.path(), Some("logs")).unwrap();
        assert_eq!(logs, [root.path().join("l1")]);
        let error = bundles_under(root.path(), Some("parts")).unwrap_err().to_string();
        assert!(error.contains("holds no parts bundle (it holds logs, throughput)"), "{error}");
        let empty = tempfile::tempdir().unwrap();
        let error = bundles_under(empty.path(), None).unwrap_err().to_string();
        assert!(error.contains("holds no results bundle"), "{error}");
    }

    #[test]
    fn the_spread_skips_what_is_not_a_time() {
        assert_eq!(spread(&[3.0, f64::NAN, 1.5, 2.0]), Some((1.5, 3.0)));
        assert_eq!(spread(&[]), None);
    }
}

//! The `clickbench` benchmark: ClickBench's query set as the C7g against C6i study ran it
//! (docs/sources.md, docs/clickbench.md), every query 1 warm-up + 10 counted runs, the
//! total the sum of the means, with each query's answers checked before its times count.
//! One method per phase:
//!
//! 1. [`ClickBenchPhase::Load`]: the run's database, `hits` created and filled (the shipped
//!    table by its generator, or a checkout's `create.sql` and the official hits file),
//!    timed, then its rows and size (`system.tables.total_bytes`) and the `max_threads`
//!    every query runs with (given, or the engine's, read from `system.settings`).
//! 2. [`ClickBenchPhase::Queries`]: each query's warm-ups and runs, every sample journaled
//!    as measured with its answer's digest; then its check: every run must give one answer
//!    (and the reference's, with `--reference-answers`), else the query is failed and its
//!    times are not counted. A query that errors is failed too and the run goes on. The
//!    totals and `answers.json` (the next run's reference) are written at the end.
//!
//! A failed query fails the run ([`Benchmark::verdict`]) once its bundle and report are
//! written.

mod checkout;
mod compare;
pub mod dataset;
mod example;
mod flags;
pub mod report;
mod results;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};

pub use self::checkout::{SetQuery, hits_format, read_queries, schema_mismatch};
pub use self::compare::{ClickBenchComparison, Cost, RELATIVE_SCORE_SHIFT_MS, SideCost};
pub use self::flags::ClickBenchFlags;
pub use self::results::{
    AnswerCheck, AnswerOutcome, ClickBenchBundle, ClickBenchDataset, ClickBenchQueryRuns, ClickBenchResults,
    ClickBenchVariant, Load, MaxThreads, MaxThreadsSource, ReferenceAnswers, Totals,
};
use super::{Benchmark, GuardedSql, Run};
use crate::answers::{AnswerDigest, tally};
use crate::breakdown::TimeBreakdown;
use crate::compare::{BundleAt, CompareOptions, Comparison, side_prices};
use crate::files::{shown, write_atomically};
use crate::fixtures::{Fixture, Params, Statement};
use crate::interrupt::Interrupted;
use crate::measure::measure;
use crate::numbers::known;
use crate::query_runs::{QueryRuns, Sample, SampleKind};
use crate::report::Section;
use crate::results::RunBundle;
use crate::settings::Settings;
use crate::sql::sql_string;
use crate::stats::StatementTag;
use crate::targets::Target;
use crate::units::{milliseconds, plural, plural_as, seconds};

/// Rows of the shipped table in a default run: the whole run, the table's build included,
/// well within a minute on two cores even beside other work (docs/measurements.md, "The
/// ClickBench query set").
pub const DEFAULT_ROWS: u64 = 2_000_000;
/// The shipped queries, by file in `fixtures/clickbench/queries/`: the source's Q19, Q33
/// and Q34.
pub const SHIPPED_QUERIES: [&str; 3] = ["q19", "q33", "q34"];
/// The file a run writes its answers to, in its bundle: the next run's reference.
pub const ANSWERS_FILE: &str = "answers.json";
/// The most runs a query may be asked for: a typo beyond it would run for hours.
const MAX_RUNS: u32 = 1_000;

/// The benchmark's phases, in the order it runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClickBenchPhase {
    Load,
    Queries,
}

impl super::Phase for ClickBenchPhase {
    const ALL: &'static [ClickBenchPhase] = &[ClickBenchPhase::Load, ClickBenchPhase::Queries];

    fn name(self) -> &'static str {
        match self {
            ClickBenchPhase::Load => "load",
            ClickBenchPhase::Queries => "queries",
        }
    }

    fn label(self) -> &'static str {
        self.name()
    }
}

/// Which `hits` to query.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// The shipped table at `rows` rows.
    Shipped { rows: u64 },
    /// A checkout and the official data (both needed; [`Benchmark::check`] says so).
    Checkout { checkout: Option<PathBuf>, hits_file: Option<PathBuf> },
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ClickBenchBenchmark {
    pub source: Source,
    /// `--rows` given with a checkout, which [`Benchmark::check`] refuses.
    pub rows_with_checkout: Option<u64>,
    pub runs: u32,
    pub warm_ups: u32,
    pub max_threads: Option<u32>,
    pub reference_answers: Option<PathBuf>,
    /// `--profile`.
    pub profile: Option<crate::profiles::ProfileChoice>,
}

type ClickBenchRun<'a> = Run<'a, ClickBenchResults>;

/// A checkout's files and the official data, checked.
struct Official {
    checkout: checkout::Checkout,
    hits_file: PathBuf,
    format: &'static str,
}

impl ClickBenchBenchmark {
    fn official(&self) -> Result<Option<Official>> {
        let Source::Checkout { checkout, hits_file } = &self.source else { return Ok(None) };
        let (Some(checkout), Some(hits_file)) = (checkout, hits_file) else {
            bail!(
                "--clickbench-dir and --hits-file go together: the checkout's create.sql and queries need the official \
                 data, and the data the checkout's table; give both, or neither for the shipped table"
            );
        };
        let checkout = checkout::read_checkout(checkout)?;
        let format = hits_format(hits_file)?;
        let hits_file = checkout::check_hits_file(hits_file)?;
        Ok(Some(Official { checkout, hits_file, format }))
    }

    /// The queries the run measures, in order.
    pub fn queries(&self) -> Result<Vec<SetQuery>> {
        match self.official()? {
            Some(official) => read_queries(&official.checkout.queries_sql),
            None => SHIPPED_QUERIES
                .iter()
                .map(|query| {
                    let file = format!("clickbench/queries/{query}.sql");
                    let statement = Fixture::load(&file)?.render_one(&Params::new())?;
                    Ok(SetQuery { name: query.to_string(), sql_file: file, statement })
                })
                .collect(),
        }
    }

    fn reference(&self) -> Result<Option<ReferenceAnswers>> {
        let Some(path) = &self.reference_answers else { return Ok(None) };
        let text = std::fs::read_to_string(path).with_context(|| {
            format!("--reference-answers {}: cannot read it; give a run's {ANSWERS_FILE}", shown(path))
        })?;
        let reference: ReferenceAnswers = serde_json::from_str(&text).with_context(|| {
            format!("--reference-answers {}: not an {ANSWERS_FILE} as a clickbench run writes it", shown(path))
        })?;
        Ok(Some(reference))
    }

    /// The settings every measured query runs with: `max_threads` when given.
    fn query_settings(&self) -> Settings {
        match self.max_threads {
            Some(threads) => Settings::new().with("max_threads", threads.to_string()),
            None => Settings::new(),
        }
    }
}

impl Benchmark for ClickBenchBenchmark {
    type Results = ClickBenchResults;
    type Phase = ClickBenchPhase;
    type Flags = ClickBenchFlags;
    type ComparisonSections = ClickBenchComparison;
    const ABOUT: &'static str = "ClickBench's query set (the C7g against C6i study): the shipped hits-like table and \
                                 Q19, Q33, Q34, or a checkout and the official data; answers checked, sum of means";

    fn from_flags(flags: ClickBenchFlags) -> ClickBenchBenchmark {
        flags.benchmark()
    }

    fn check(&self) -> Result<()> {
        if self.runs == 0 {
            bail!("--runs 0 measures nothing: give 1 or more counted runs per query (the source: 10)");
        }
        if self.runs > MAX_RUNS || self.warm_ups > MAX_RUNS {
            bail!("--runs {} --warm-ups {}: at most {MAX_RUNS} each", self.runs, self.warm_ups);
        }
        if self.max_threads.is_some() && crate::settings::run_settings().get("max_threads").is_some() {
            bail!("--max-threads and --setting max_threads both set the threads a query may use: give one of them");
        }
        if self.max_threads == Some(0) {
            bail!("--max-threads 0 is not a thread count: give 1 or more (the source: the node's vCPUs)");
        }
        if let Some(rows) = self.rows_with_checkout {
            bail!(
                "--rows {rows} sizes the shipped table; with --clickbench-dir the data is the hits file's: drop --rows"
            );
        }
        if let Source::Shipped { rows } = self.source {
            crate::dataset::check_row_bound(&format!("--rows {rows}"), rows)?;
            for file in dataset::DATASET_FILES {
                Fixture::load(file)?.render_dataset(&Params::new().with("rows", rows))?;
            }
        }
        self.official()?;
        let queries = self.queries()?;
        if let (Some(reference), Some(path)) = (self.reference()?, &self.reference_answers) {
            let ours = self.new_results().dataset.identity();
            if let Some(theirs) = reference.dataset.as_ref().map(ClickBenchDataset::identity)
                && theirs != ours
            {
                bail!(
                    "--reference-answers {} holds the answers of another dataset ({theirs}, where this run queries \
                     {ours}): give the {ANSWERS_FILE} of a run on the same data",
                    shown(path)
                );
            }
            if !queries.iter().any(|query| reference.queries.contains_key(&query.name)) {
                bail!(
                    "--reference-answers {} names none of this run's queries ({}): give the {ANSWERS_FILE} of a run of \
                     the same queries",
                    shown(path),
                    queries.iter().map(|query| query.name.as_str()).collect::<Vec<_>>().join(", ")
                );
            }
        }
        Ok(())
    }

    fn disk_estimate(&self) -> Result<Option<crate::dataset::DiskEstimate>> {
        Ok(match self.source {
            Source::Shipped { rows } => Some(dataset::run_disk_estimate(rows)),
            Source::Checkout { .. } => None,
        })
    }

    /// The hits file's columns against the checkout's create.sql, on the engine that will
    /// read it, before the bundle is made.
    fn check_target(&self, target: &mut Target) -> Result<()> {
        let Some(official) = self.official()? else { return Ok(()) };
        let hits_file = official.hits_file.to_string_lossy().into_owned();
        let describe = hits_file_statement(HitsFileRead::Describe, &official);
        let described = target
            .query_text(&describe)
            .with_context(|| format!("--hits-file {hits_file}: the engine cannot read it as {}", official.format))?;
        let columns: Vec<String> =
            described.lines().filter_map(|line| line.split('\t').next()).map(str::to_string).collect();
        if let Some(mismatch) = schema_mismatch(&hits_file, official.format, &columns, &official.checkout.columns) {
            bail!("{mismatch}");
        }
        probe_load(target, &official)
    }

    /// The shipped fixtures, or the checkout's two files by their absolute paths (the
    /// bundle keeps them under `sql/outside/`).
    fn sql_files(&self) -> Vec<String> {
        match self.official() {
            // The hits file's own statements are code (`hits_file_statement`).
            Ok(Some(official)) => [official.checkout.create_sql, official.checkout.queries_sql]
                .iter()
                .map(|path| path.to_string_lossy().into_owned())
                .collect(),
            // Checked before: a checkout that cannot be read never reaches the bundle.
            Ok(None) | Err(_) => dataset::DATASET_FILES
                .iter()
                .map(|file| file.to_string())
                .chain(SHIPPED_QUERIES.iter().map(|query| format!("clickbench/queries/{query}.sql")))
                .collect(),
        }
    }

    fn guarded_sql(&self) -> Result<GuardedSql> {
        let queries = self.queries()?.into_iter().map(|query| query.statement).collect();
        Ok(match (&self.source, self.official()?) {
            (_, Some(official)) => {
                GuardedSql { dataset: Fixture::read(&official.checkout.create_sql)?.render(&Params::new())?, queries }
            }
            (Source::Shipped { rows }, None) => {
                let mut dataset = Vec::new();
                for file in dataset::DATASET_FILES {
                    dataset.extend(Fixture::load(file)?.render_dataset(&Params::new().with("rows", *rows))?);
                }
                GuardedSql { dataset, queries }
            }
            (_, None) => GuardedSql { queries, ..GuardedSql::default() },
        })
    }

    fn new_results(&self) -> ClickBenchResults {
        let dataset = match (&self.source, self.official()) {
            (_, Ok(Some(official))) => ClickBenchDataset::Checkout {
                checkout: official.checkout.dir.to_string_lossy().into_owned(),
                create_sql: official.checkout.create_sql.to_string_lossy().into_owned(),
                queries_sql: official.checkout.queries_sql.to_string_lossy().into_owned(),
                hits_file: official.hits_file.to_string_lossy().into_owned(),
                format: official.format.to_string(),
            },
            (Source::Shipped { rows }, _) => ClickBenchDataset::Shipped { rows: *rows },
            (Source::Checkout { .. }, _) => ClickBenchDataset::Shipped { rows: 0 },
        };
        ClickBenchResults {
            dataset,
            warm_ups: self.warm_ups,
            runs: self.runs,
            max_threads: None,
            reference_answers: self.reference_answers.as_ref().map(|path| path.to_string_lossy().into_owned()),
            load: None,
            queries: Vec::new(),
            checks: Vec::new(),
            totals: None,
        }
    }

    fn profile(&self) -> Option<crate::profiles::ProfileChoice> {
        self.profile
    }

    fn run_label(&self) -> String {
        match &self.source {
            Source::Shipped { rows } => format!("clickbench-{}", crate::units::short_count(*rows)),
            Source::Checkout { .. } => "clickbench-hits".to_string(),
        }
    }

    fn run_phase(&self, phase: ClickBenchPhase, run: &mut ClickBenchRun<'_>) -> Result<()> {
        match phase {
            ClickBenchPhase::Load => self.load(run),
            ClickBenchPhase::Queries => self.query_set(run),
        }?;
        run.writer.save()
    }

    /// The run's database goes, with the table it loaded.
    fn clean_up(&self, run: &mut ClickBenchRun<'_>) -> Result<()> {
        run.drop_database()
    }

    /// ClickBench's relative score, and the cost of a query-set run at each side's price.
    fn comparison_sections(
        bundles: &[BundleAt<ClickBenchResults>],
        comparison: &Comparison,
        options: &CompareOptions,
    ) -> Result<ClickBenchComparison> {
        Ok(ClickBenchComparison::of(comparison, side_prices(bundles, options)?))
    }

    fn examples(value: f64, count: u64) -> Vec<RunBundle<ClickBenchResults>> {
        example::examples(value, count)
    }

    fn report(bundle: &RunBundle<ClickBenchResults>) -> Result<Section> {
        Ok(Section { markdown: report::markdown(&bundle.benchmark), charts: Vec::new() })
    }

    /// A query that failed (an error, answers that disagree or differ from the reference)
    /// fails the run, after its bundle and report are written.
    fn verdict(bundle: &RunBundle<ClickBenchResults>) -> Result<()> {
        let failed: Vec<String> = bundle
            .benchmark
            .checks
            .iter()
            .filter(|check| !check.outcome.passed())
            .map(|check| format!("{} {}", check.query, check.outcome.short_line()))
            .collect();
        if failed.is_empty() {
            return Ok(());
        }
        bail!(
            "{} of {} queries failed, not counted in any total (the whole messages are in the report): {}",
            failed.len(),
            bundle.benchmark.checks.len(),
            failed.join("; ")
        )
    }
}

/// The hits file's first rows into a scratch copy of create.sql's table, dropped after:
/// names and counts match, but a value a column's type cannot take (a string where
/// create.sql declares a number) would otherwise fail the load after the bundle is made.
/// The scratch database is the process's own, as a scenario's (on a shared server, named
/// by its owner and dropped with the target if this cannot drop it).
fn probe_load(target: &mut Target, official: &Official) -> Result<()> {
    let previous = target.database().to_string();
    target.use_scenario_database(PROBE_DATABASE)?;
    let scratch = target.database().to_string();
    let probed = Fixture::read(&official.checkout.create_sql)
        .and_then(|create| create.apply(target, &Params::new()))
        .and_then(|()| {
            let insert = hits_file_statement(HitsFileRead::Probe, official);
            // Only the INSERT's failure is the file's: create.sql's, the engine's or a stop
            // are said as they are.
            target.execute(&insert).map_err(|error| {
                if crate::interrupt::requested() {
                    return Interrupted.into();
                }
                anyhow::anyhow!(
                    "--hits-file {}: its first rows do not load into {}'s hits ({}); give the hits file of this \
                     checkout's schema",
                    shown(&official.hits_file),
                    shown(&official.checkout.create_sql),
                    parse_failure(&format!("{:#}", error.root_cause()))
                )
            })
        });
    // Back, and the scratch database dropped, whatever the probe did; the probe's error
    // first.
    let cleaned = target.use_database(&previous).and_then(|()| {
        target.execute(&format!("DROP DATABASE IF EXISTS {scratch} SYNC")).with_context(|| {
            format!("database {scratch} may be left on the target: drop it with DROP DATABASE {scratch}")
        })
    });
    probed.and(cleaned)
}

/// The part of the engine's message on a value it could not read that names the column
/// (`Column 3, name: UserID, type: Int64, ERROR: text "x" is not like Int64`), which a
/// statement's one line would cut off; else the message's start.
fn parse_failure(message: &str) -> String {
    column_failure(message).unwrap_or_else(|| {
        // Parquet's form: `Cannot parse string 'x' as Int64: ... column: WatchID: (in file/uri
        // ...)`: up to where it names the file.
        let flat = message.split_whitespace().collect::<Vec<_>>().join(" ");
        let end = flat.find(": (in file").unwrap_or(flat.len());
        flat[..end].chars().take(300).collect()
    })
}

/// [`parse_failure`]'s text-format form, the row and the column, where the message has one.
fn column_failure(message: &str) -> Option<String> {
    let flat = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let error_at = flat.find(", ERROR: ")?;
    let start = flat[..error_at].rfind("Column ").unwrap_or(error_at);
    let end = flat[error_at..].find(" : ").map_or(flat.len(), |end| error_at + end);
    let column: String = flat[start..end].chars().take(300).collect();
    // `(at row 1101)`, where the engine says it.
    let row = flat.find("(at row ").and_then(|at| flat[at..].find(')').map(|end| &flat[at + 1..at + end]));
    Some(match row {
        Some(row) => format!("{row}: {column}"),
        None => column,
    })
}

/// The scenario name of the hits-file probe's scratch database.
const PROBE_DATABASE: &str = "chbench_clickbench_probe";

/// What is done with the file `--hits-file` names.
#[derive(Debug, Clone, Copy)]
enum HitsFileRead {
    /// Its columns, to check against the checkout's table.
    Describe,
    /// Its first rows into a scratch copy of the table, to find a value the table cannot take.
    Probe,
    /// All of it into the table, as ClickBench's `clickhouse/load` does.
    Load,
}

/// The statement that reads the file `--hits-file` names. These are the only statements
/// of any kind that reach outside the engine's tables, so they are code here rather than
/// SQL files under `fixtures/`, which the pack guard checks (and would have to let through
/// whole: a changed file could then read, write or fetch anything).
fn hits_file_statement(read: HitsFileRead, official: &Official) -> Statement {
    let file = format!("file({}, {})", sql_string(&official.hits_file.to_string_lossy()), sql_string(official.format));
    let sql = match read {
        HitsFileRead::Describe => format!("DESCRIBE TABLE {file}"),
        HitsFileRead::Probe => format!("INSERT INTO hits SELECT * FROM {file} LIMIT 1000"),
        HitsFileRead::Load => format!("INSERT INTO hits SELECT * FROM {file}"),
    };
    Statement { sql, file: format!("--hits-file {}", shown(&official.hits_file)), line: 1 }
}

impl ClickBenchBenchmark {
    fn load(&self, run: &mut ClickBenchRun<'_>) -> Result<()> {
        let started = Instant::now();
        run.target.use_fresh_database(&run.database())?;
        let (insert, loaded) = match self.official()? {
            Some(official) => {
                run.progress.start(&format!("load: {} into hits", shown(&official.hits_file)), None);
                Fixture::read(&official.checkout.create_sql)?.apply(run.target, &Params::new())?;
                let insert = hits_file_statement(HitsFileRead::Load, &official);
                (insert, format!("the load of {} into hits failed", shown(&official.hits_file)))
            }
            None => {
                let Source::Shipped { rows } = self.source else { bail!("no dataset to load") };
                run.progress.start(&format!("load: the shipped hits-like table, {}", plural(rows, "row")), None);
                Fixture::load("clickbench/create.sql")?.apply(run.target, &Params::new())?;
                let insert = Fixture::load("clickbench/generator.sql")?
                    .render_dataset(&Params::new().with("rows", rows))?
                    .remove(0);
                (insert, "the load of the shipped table failed".to_string())
            }
        };
        let tag = StatementTag::new(&run.run_id(), "clickbench", "load", 1);
        let measured = measure(run.target, &insert, &tag, &Settings::new()).map_err(|error| {
            // A value the table cannot take: its column, not the rows the engine dumps.
            match column_failure(&format!("{:#}", error.root_cause())) {
                Some(column) if !crate::interrupt::requested() => anyhow::anyhow!("{loaded}: {column}"),
                _ => error.context(loaded),
            }
        })?;
        let (rows, data_size_bytes) = table_size(run.target);
        let seconds = measured.stats.server_duration_us as f64 / 1e6;
        let load =
            Load { seconds: Some(seconds), wall_seconds: Some(started.elapsed().as_secs_f64()), rows, data_size_bytes };
        let max_threads = self.max_threads_in_force(run.target)?;
        let summary = format!(
            "load: {} in {seconds:.2} s, {}; max_threads {}",
            rows.map_or("unknown rows".to_string(), |rows| plural(rows, "row")),
            data_size_bytes.map_or("data size unknown".to_string(), crate::units::human_bytes),
            max_threads.value
        );
        run.results().load = Some(load);
        run.results().max_threads = Some(max_threads);
        run.progress.finish(&summary);
        Ok(())
    }

    /// The `max_threads` queries run with: as given (set on each), or the engine's own.
    fn max_threads_in_force(&self, target: &mut Target) -> Result<MaxThreads> {
        if let Some(threads) = self.max_threads {
            return Ok(MaxThreads { value: threads.to_string(), source: MaxThreadsSource::Flag });
        }
        let read = target
            .query_text("SELECT value FROM system.settings WHERE name = 'max_threads'")
            .context("cannot read max_threads from system.settings")?;
        let source = if crate::settings::run_settings().get("max_threads").is_some() {
            MaxThreadsSource::Session
        } else {
            MaxThreadsSource::Engine
        };
        Ok(MaxThreads { value: read.trim().to_string(), source })
    }

    fn query_set(&self, run: &mut ClickBenchRun<'_>) -> Result<()> {
        let queries = self.queries()?;
        let reference = self.reference()?;
        let per_query = u64::from(self.warm_ups + self.runs);
        run.progress.start(
            &format!(
                "queries: {}, {} and {} each",
                plural_as(queries.len() as u64, "query", "queries"),
                plural(self.warm_ups, "warm-up"),
                plural(self.runs, "run")
            ),
            Some(queries.len() as u64 * per_query),
        );
        for query in &queries {
            let outcome = self.query_runs(run, query)?;
            let outcome = match (outcome, reference.as_ref().and_then(|reference| reference.queries.get(&query.name))) {
                (AnswerOutcome::Passed { answer, .. }, Some(expected)) if answer != *expected => {
                    AnswerOutcome::DiffersFromReference { answer, reference: expected.clone() }
                }
                (AnswerOutcome::Passed { answer, .. }, Some(_)) => {
                    AnswerOutcome::Passed { answer, matches_reference: true }
                }
                (outcome, _) => outcome,
            };
            if !outcome.passed() {
                run.progress.warn(&format!("{}: {}", query.name, outcome.line()));
            }
            run.results().checks.push(AnswerCheck { query: query.name.clone(), outcome });
            run.writer.save()?;
        }
        let totals = totals(run.results());
        let summary = format!(
            "queries: sum of means {}, hot sum {} over {} queries{}",
            seconds(totals.sum_of_means_seconds, 3),
            seconds(totals.hot_sum_seconds, 3),
            totals.queries,
            if totals.failed.is_empty() { String::new() } else { format!("; failed: {}", totals.failed.join(", ")) }
        );
        run.results().totals = Some(totals);
        let answers = ReferenceAnswers {
            dataset: Some(run.results().dataset.clone()),
            queries: run
                .results()
                .checks
                .iter()
                .filter_map(|check| match &check.outcome {
                    AnswerOutcome::Passed { answer, .. } => Some((check.query.clone(), answer.clone())),
                    _ => None,
                })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&answers).context("cannot serialise the answers")?;
        write_atomically(&run.writer.dir().join(ANSWERS_FILE), &text)?;
        run.progress.finish(&summary);
        Ok(())
    }

    /// The warm-ups and runs of one query, each sample journaled with its answer's
    /// digest; the outcome of the check across them. An error (not a stop) fails the query
    /// and the run goes on.
    fn query_runs(&self, run: &mut ClickBenchRun<'_>, query: &SetQuery) -> Result<AnswerOutcome> {
        run.writer.start_query(QueryRuns {
            query: query.name.clone(),
            variant: ClickBenchVariant::Default,
            ab_variant: None,
            plan: None,
            sql_file: query.sql_file.clone(),
            answer: String::new(),
            samples: Vec::new(),
        })?;
        let query_settings = self.query_settings();
        let run_id = run.run_id();
        let mut digests = Vec::new();
        for attempt in 1..=self.warm_ups + self.runs {
            let tag = StatementTag::new(&run_id, "clickbench", &query.name, attempt);
            // The runs measured are profiled (`--profile`), not the warm-ups.
            let settings = if attempt <= self.warm_ups {
                query_settings.clone()
            } else {
                crate::profiling::profiled(&query_settings)
            };
            let measured = match measure(run.target, &query.statement, &tag, &settings) {
                Ok(measured) => measured,
                Err(error) if error.is::<Interrupted>() => return Err(error),
                Err(error) => return Ok(AnswerOutcome::Error { message: format!("{error:#}") }),
            };
            let answer = (attempt == 1).then(|| measured.body.chars().take(2000).collect::<String>());
            // On a thread a stop abandons at once: digesting a large answer (its lines
            // sorted) takes long, and a stop must not wait for it.
            let body = measured.body;
            let digest = crate::interrupt::until_stopped(move || Ok(AnswerDigest::of_tab_separated(&body)))?;
            let kind = if attempt <= self.warm_ups { SampleKind::WarmUp } else { SampleKind::Warm };
            run.progress.advance(&format!(
                "{} {}: {}, {}",
                query.name,
                if kind == SampleKind::WarmUp {
                    format!("warm-up {attempt}")
                } else {
                    format!("run {}", attempt - self.warm_ups)
                },
                milliseconds(Some(measured.stats.server_ms())),
                digest
            ));
            let breakdown = TimeBreakdown::of_record(&measured.stats);
            digests.push(digest.clone());
            let sample = Sample {
                kind,
                attempt,
                settings: settings.clone(),
                stats: measured.stats,
                breakdown,
                round_position: None,
                answer: Some(digest),
            };
            run.writer.record_sample(sample, answer)?;
        }
        let tally = tally(&digests);
        Ok(match tally.as_slice() {
            [(answer, _)] => AnswerOutcome::Passed { answer: answer.clone(), matches_reference: false },
            _ => AnswerOutcome::RunsDisagree { answers: tally },
        })
    }
}

/// `system.tables.total_rows` and `total_bytes` of `hits`, each unknown where the engine
/// does not say.
fn table_size(target: &mut Target) -> (Option<u64>, Option<u64>) {
    let text = target
        .query_text(
            "SELECT total_rows, total_bytes FROM system.tables WHERE database = currentDatabase() AND name = 'hits'",
        )
        .unwrap_or_default();
    let mut fields = text.trim().split('\t').map(|field| field.parse::<u64>().ok());
    (fields.next().flatten(), fields.next().flatten())
}

/// The totals over the queries whose answers passed: the sum of the means of the counted
/// runs (the source's total) and of their fastest (ClickBench's hot time).
pub fn totals(results: &ClickBenchResults) -> Totals {
    let passed = |name: &str| results.checks.iter().any(|check| check.query == name && check.outcome.passed());
    let (mut queries, mut sum_of_means_ms, mut hot_sum_ms, mut failed) = (0, 0.0, 0.0, Vec::new());
    for runs in &results.queries {
        let warm = runs.warm_ms();
        match (passed(&runs.query), warm.first()) {
            (true, Some(fastest)) => {
                queries += 1;
                sum_of_means_ms += warm.iter().sum::<f64>() / warm.len() as f64;
                hot_sum_ms += fastest;
            }
            _ => failed.push(runs.query.clone()),
        }
    }
    Totals {
        queries,
        failed,
        sum_of_means_seconds: known(sum_of_means_ms / 1e3),
        hot_sum_seconds: known(hot_sum_ms / 1e3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_the_table_cannot_take_is_said_by_its_column() {
        let message = "Code: 27. DB::Exception: Cannot parse input: expected '\\t' before: 'one\\t2013': (at row 1)\n: \
                       Row 1: Column 0, name: WatchID, type: Int64, ERROR: text \"one<TAB>2013-0\" is not like Int64 : \
                       (in file/uri /tmp/typed.tsv): While executing File. (CANNOT_PARSE_INPUT_ASSERTION_FAILED)";
        assert_eq!(
            parse_failure(message),
            "at row 1: Column 0, name: WatchID, type: Int64, ERROR: text \"one<TAB>2013-0\" is not like Int64"
        );
        assert_eq!(
            parse_failure("Code: 6. Cannot parse string 'x' as Int64"),
            "Code: 6. Cannot parse string 'x' as Int64"
        );
    }
}

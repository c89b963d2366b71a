//! The `throughput` benchmark: queries per second of a set of queries at several levels
//! of concurrency, as a closed loop (docs/throughput.md), one method per phase:
//!
//! 1. [`ThroughputPhase::Prepare`]: the pack's dataset built in the run's own database,
//!    the setup statements of `--sql` files, and one warm-up of every query (an error
//!    there is noted, and the query runs all the same: errors are counted in the levels).
//! 2. [`ThroughputPhase::RunnerCheck`]: `SELECT 1` at one client through the runner and
//!    through a tight loop on the engine, in interleaved blocks of the same number of
//!    statements: both QPS, their ratio and the runner's own CPU per statement.
//! 3. [`ThroughputPhase::Levels`]: `--rounds` rounds, each running every level once
//!    ([`Target::run_closed_loop`]): K clients, each on its own connection, looping over
//!    the queries in its own order until the level's duration or statement budget. After
//!    each level its statements are recorded (every one, with its client, start and
//!    outcome; the completed ones also as samples of their (query, level) query runs) and
//!    the bundle saved, so a stop keeps the levels done (a kill, the levels before the one
//!    running). On a target that can run them beside its engine (`eks`), the clients are
//!    clickhouse-benchmark in the cluster instead ([`in_cluster_level`]), unless
//!    `--load-from local`: each level a Job, its report the level's figures, held against
//!    the server's `query_log`; the runner check, which measures this tool's loop, is then
//!    skipped.

mod compare;
mod example;
mod flags;
mod levels;
pub mod report;
mod results;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};

pub use self::compare::{LevelComparison, LevelSide, NOT_SERIAL, Prices, ThroughputComparison};
pub use self::flags::ThroughputFlags;
use self::levels::{level_line, summary_line};
pub use self::results::{
    DatasetBuild, ThroughputBundle, ThroughputQueryRuns, ThroughputResults, ThroughputVariant, Workload, WorkloadQuery,
};
use super::{Benchmark, GuardedSql, Run};
pub use crate::closed_loop::{CHECK_BLOCKS, Levels, MAX_CLIENTS, client_orders, level_round, runner_check};
use crate::closed_loop::{
    NO_RUNNER_CHECK_IN_CLUSTER, NamedQuery, check_generator_on, in_cluster_level, level_query_id_prefix,
};
use crate::compare::{BundleAt, CompareOptions, Comparison, side_prices};
use crate::dataset::{BytesPerRow, Dataset, DiskEstimate, UNMEASURED_BYTES_PER_ROW, check_row_bound};
use crate::files::{fixture_relative, shown};
use crate::fixtures::{Fixture, Params, Statement};
use crate::interrupt::Interrupted;
pub use crate::levels::{
    CheckBlock, CheckPath, Latency, LevelBound, LevelRound, LevelSummary, QueryErrors, RunnerCheck, Spread,
    StatementRecord,
};
use crate::load_generator::{LoadFlags, LoadFrom};
use crate::measure::closed_loop_stats;
use crate::packs::Pack;
use crate::query_runs::{QueryRuns, Sample, SampleKind};
use crate::report::Section;
use crate::results::RunBundle;
use crate::settings::Settings;
use crate::stats::{StatementTag, StatsSource};
use crate::target_info::TargetKind;
use crate::targets::{ClosedLoop, Concurrency, LoopBound, Target};
use crate::units::{number, plural, times};

/// Rounds by default: five, the fewest a side at which the comparison's test can say
/// anything about two bundles' QPS ([`crate::significance::MIN_SAMPLES`]).
pub const DEFAULT_ROUNDS: u32 = 5;
/// A level's duration by default: with levels 1, 2 and 4 and five rounds, 30 s of
/// measuring, which keeps the default run within a minute with its dataset.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(2);
/// Statements per block of the runner check.
pub const CHECK_BLOCK_STATEMENTS: u64 = 125;
/// The runner check's query: nothing to read, so the engine's per-statement cost alone.
pub const CHECK_QUERY: &str = "SELECT 1";
/// What the runner's QPS of [`CHECK_QUERY`] should reach against the tight loop's.
pub const CHECK_GOAL: f64 = 0.9;
/// The format the statements' results come back in.
const FORMAT: &str = "TabSeparated";

/// The benchmark's phases, in the order it runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThroughputPhase {
    Prepare,
    RunnerCheck,
    Levels,
}

impl super::Phase for ThroughputPhase {
    const ALL: &'static [ThroughputPhase] =
        &[ThroughputPhase::Prepare, ThroughputPhase::RunnerCheck, ThroughputPhase::Levels];

    fn name(self) -> &'static str {
        match self {
            ThroughputPhase::Prepare => "prepare",
            ThroughputPhase::RunnerCheck => "runner_check",
            ThroughputPhase::Levels => "levels",
        }
    }

    fn label(self) -> &'static str {
        match self {
            ThroughputPhase::RunnerCheck => "runner check",
            phase => phase.name(),
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ThroughputBenchmark {
    pub pack: String,
    /// `None`: the pack's first design.
    pub design: Option<String>,
    pub rows: u64,
    /// The pack's queries to run; empty: every one on the design.
    pub queries: Vec<String>,
    /// SQL files instead of the pack's queries.
    pub sql_files: Vec<PathBuf>,
    pub levels: Levels,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
    pub rounds: u32,
    pub seed: u64,
    /// Statements per block of the runner check; 0 skips it.
    pub check_statements: u64,
    /// Where the clients run (by default in the cluster on a target that can run them
    /// there, here otherwise), and on which node.
    pub load: LoadFlags,
}

/// A query of the run, ready to measure.
#[derive(Debug, Clone)]
struct RunQuery {
    name: String,
    file: String,
    sql: String,
    /// The line of its file it starts on, for errors about it.
    line: usize,
    /// Statements before it in its file, with their locations.
    setup: Vec<crate::fixtures::Statement>,
}

impl RunQuery {
    /// The query as the statement of its file it is.
    fn statement(&self) -> Statement {
        Statement { sql: self.sql.clone(), file: self.file.clone(), line: self.line }
    }
}

type ThroughputRun<'a> = Run<'a, ThroughputResults>;

impl Benchmark for ThroughputBenchmark {
    type Results = ThroughputResults;
    type Phase = ThroughputPhase;
    type Flags = ThroughputFlags;
    type ComparisonSections = ThroughputComparison;
    const ABOUT: &'static str = "Queries per second at several levels of concurrency (a closed loop over a pack's \
                                 queries or SQL files), with latency percentiles, errors apart, rounds and their \
                                 spread, and a check that the runner is not the bottleneck";

    fn from_flags(flags: ThroughputFlags) -> ThroughputBenchmark {
        flags.benchmark()
    }

    fn check(&self) -> Result<()> {
        let levels = self.levels.list()?;
        match self.bound() {
            LoopBound::Duration(duration) if duration.is_zero() => {
                bail!("--duration 0s: a level needs time to run; give e.g. --duration 2s")
            }
            LoopBound::Statements(total) => {
                let most = levels.iter().copied().max().unwrap_or(1);
                if total < u64::from(most) {
                    bail!(
                        "--iterations {total} is fewer than the {most} clients of level {most}: each client needs a \
                         statement; give --iterations {most} or more, or a smaller level"
                    );
                }
            }
            LoopBound::Duration(_) => {}
        }
        check_row_bound(&format!("--rows {}", self.rows), self.rows)?;
        self.load.check()?;
        let pack = Pack::named(&self.pack)?;
        self.design_of(&pack)?;
        self.run_queries(&pack)?;
        Ok(())
    }

    /// The pack's design and generator, and the queries the levels run: the pack's, or the
    /// `--sql` files, the user's SQL as a pack's is, their set-up checked as a pack's
    /// dataset, so that an `INTO OUTFILE` writes nothing on the host, once or at every
    /// statement of a level.
    fn guarded_sql(&self) -> Result<GuardedSql> {
        let pack = Pack::named(&self.pack)?;
        let queries = self.run_queries(&pack)?;
        let built = pack.dataset(&self.design_of(&pack)?, self.rows)?.statements()?;
        let dataset = built.into_iter().map(|(_, statement)| statement);
        let setup = queries.iter().flat_map(|query| query.setup.clone());
        // A pack query's own statement names its file as errors do (a run's records
        // name it relative to `fixtures/`).
        let measured = match self.sql_files.is_empty() {
            true => queries.iter().map(|query| pack.statement(&query.name, self.rows)).collect::<Result<_>>()?,
            false => queries.iter().map(RunQuery::statement).collect(),
        };
        Ok(GuardedSql { dataset: dataset.chain(setup).collect(), queries: measured })
    }

    fn disk_estimate(&self) -> Result<Option<DiskEstimate>> {
        let per_row = BytesPerRow {
            bytes: UNMEASURED_BYTES_PER_ROW,
            basis: "the largest figure measured for any dataset of this project".to_string(),
        };
        Ok(Some(DiskEstimate { what: format!("--rows {}", self.rows), rows: self.rows, per_row }))
    }

    /// The pack's design, generator and queries run, relative to `fixtures/`; a `--sql`
    /// file's text is in the workload instead. (A pack or design that does not load was
    /// refused by [`Benchmark::check`] before any bundle is made.)
    fn sql_files(&self) -> Vec<String> {
        let Ok(pack) = Pack::named(&self.pack) else { return Vec::new() };
        let Ok(design) = self.design_of(&pack) else { return Vec::new() };
        let schema = pack.designs.iter().filter(|candidate| candidate.name == design).map(|design| &design.path);
        let mut files: Vec<String> = schema.chain(&pack.generator).filter_map(|path| fixture_relative(path)).collect();
        if self.sql_files.is_empty() {
            files.extend(self.run_queries(&pack).unwrap_or_default().into_iter().map(|query| query.file));
        }
        files
    }

    /// `--load-from cluster`, or a client placement, on a target that cannot run clients
    /// beside its engine: one line, before anything runs.
    fn check_target_kind(&self, kind: TargetKind) -> Result<()> {
        self.load.check_target(crate::targets::spec(kind).capabilities.in_cluster_load, &kind.to_string())
    }

    /// Its kind's check, and a server whose clickhouse-benchmark cannot tag a level's
    /// statements, when the clients run in its cluster.
    fn check_target(&self, target: &mut Target) -> Result<()> {
        self.check_target_kind(target.info().kind)?;
        check_generator_on(&self.load, target)
    }

    fn new_results(&self) -> ThroughputResults {
        let pack = Pack::named(&self.pack).ok();
        let design = pack.as_ref().and_then(|pack| self.design_of(pack).ok()).unwrap_or_default();
        let queries = pack.as_ref().and_then(|pack| self.run_queries(pack).ok()).unwrap_or_default();
        let concurrency = self.levels.list().unwrap_or_default();
        ThroughputResults {
            workload: Workload {
                pack: self.pack.clone(),
                design,
                rows: self.rows,
                queries: queries
                    .iter()
                    .map(|query| WorkloadQuery {
                        name: query.name.clone(),
                        file: query.file.clone(),
                        sql: query.sql.clone(),
                        setup: query.setup.iter().map(|statement| statement.sql.clone()).collect(),
                    })
                    .collect(),
                levels_run: concurrency.clone(),
                concurrency,
                bound: match self.bound() {
                    LoopBound::Duration(duration) => LevelBound::Duration { seconds: Some(duration.as_secs_f64()) },
                    LoopBound::Statements(statements) => LevelBound::Iterations { statements },
                },
                rounds: self.rounds,
                seed: self.seed,
                // Known once the target is: see `prepare`.
                load_from: self.load.load_from.unwrap_or(LoadFrom::Local),
                client_placement: None,
            },
            dataset: None,
            statement_records: StatsSource::ResultCounters,
            runner_check: None,
            rounds: Vec::new(),
            levels: Vec::new(),
            queries: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn run_label(&self) -> String {
        format!("throughput-{}-{}", self.pack, crate::units::short_count(self.rows))
    }

    fn run_phase(&self, phase: ThroughputPhase, run: &mut ThroughputRun<'_>) -> Result<()> {
        match phase {
            ThroughputPhase::Prepare => self.prepare(run),
            ThroughputPhase::RunnerCheck => self.runner_check(run),
            ThroughputPhase::Levels => self.levels(run),
        }?;
        run.writer.save()
    }

    /// The run's database goes: on a shared server it would hold the dataset for nothing.
    fn clean_up(&self, run: &mut ThroughputRun<'_>) -> Result<()> {
        run.drop_database()
    }

    /// A run in which some query completed no statement at some level exits non-zero,
    /// after its bundle and report: that level's figures for it are unknown, and every
    /// statement an error. Some errors among completed statements are counted and said
    /// as the run goes, and pass.
    fn verdict(bundle: &RunBundle<ThroughputResults>) -> Result<()> {
        let results = &bundle.benchmark;
        let levels = results.levels_without_a_completed_statement();
        let mut failed: Vec<String> = Vec::new();
        for query in &results.workload.queries {
            let at: Vec<String> = levels
                .iter()
                .filter(|(name, _, _)| *name == query.name)
                .map(|(_, clients, errors)| format!("{} ({errors} failed)", plural(*clients, "client")))
                .collect();
            if at.is_empty() {
                continue;
            }
            let first = results.errors_of(&query.name).map_or("", |(_, first)| first);
            failed.push(format!(
                "{} completed no statement at {}, so its figures there are unknown (first error: {first})",
                query.name,
                at.join(" and at ")
            ));
        }
        if failed.is_empty() {
            return Ok(());
        }
        bail!("{}", failed.join("; "))
    }

    fn examples(value: f64, count: u64) -> Vec<RunBundle<ThroughputResults>> {
        example::examples(value, count)
    }

    fn report(bundle: &RunBundle<ThroughputResults>) -> Result<Section> {
        Ok(Section {
            markdown: report::markdown(&bundle.benchmark, &bundle.target),
            charts: report::charts(&bundle.benchmark)?,
        })
    }

    /// The rounds of each level: what its figures are the medians of.
    fn raw_samples(bundle: &RunBundle<ThroughputResults>) -> Vec<crate::report::html::SampleTable> {
        super::raw_samples::of_levels(bundle.benchmark.rounds.iter().map(|round| super::raw_samples::ReportedRound {
            variant: None,
            round,
            rows_per_second: round.rows_per_second,
        }))
    }

    /// Each level's QPS across rounds, tested as every timing is, with its errors and its
    /// cost at that QPS; latency per (query, level) is the comparison every kind has.
    fn comparison_sections(
        bundles: &[BundleAt<ThroughputResults>],
        _comparison: &Comparison,
        options: &CompareOptions,
    ) -> Result<ThroughputComparison> {
        let results: Vec<&ThroughputResults> = bundles.iter().map(|at| &at.bundle.benchmark).collect();
        Ok(ThroughputComparison::of(&results, &options.thresholds, side_prices(bundles, options)?))
    }
}

impl ThroughputBenchmark {
    fn bound(&self) -> LoopBound {
        match (self.iterations, self.duration) {
            (Some(statements), _) => LoopBound::Statements(statements),
            (None, Some(duration)) => LoopBound::Duration(duration),
            (None, None) => LoopBound::Duration(DEFAULT_DURATION),
        }
    }

    fn design_of(&self, pack: &Pack) -> Result<String> {
        Ok(pack.chosen_design(self.design.as_deref())?.name.clone())
    }

    /// The pack's queries that run on `design` and are not meant to fail.
    fn pack_queries<'a>(&self, pack: &'a Pack, design: &str) -> Vec<&'a crate::packs::Query> {
        pack.queries
            .iter()
            .filter(|query| {
                query.designs.iter().any(|name| name == design) && query.expected_error_on(design).is_none()
            })
            .collect()
    }

    /// The queries to measure: the `--sql` files' (each its last statement, the rest its
    /// setup), or the pack's (all on the design, or those `--query` names).
    fn run_queries(&self, pack: &Pack) -> Result<Vec<RunQuery>> {
        let params = Params::new().with("rows", self.rows);
        if !self.sql_files.is_empty() {
            let queries: Vec<RunQuery> = self
                .sql_files
                .iter()
                .map(|path| {
                    let fixture = Fixture::read(path)?;
                    let mut statements = fixture.render(&params)?;
                    let query = statements.pop().with_context(|| format!("{} holds no statement", shown(path)))?;
                    Ok(RunQuery {
                        name: fixture.name(),
                        file: query.file,
                        sql: query.sql,
                        line: query.line,
                        setup: statements,
                    })
                })
                .collect::<Result<_>>()?;
            // A query is known by its file's name in the bundle and in a comparison: two of
            // one name would be taken for one query.
            for (at, query) in queries.iter().enumerate() {
                if let Some(other) = queries[..at].iter().find(|other| other.name == query.name) {
                    bail!(
                        "--sql {} and {} are both named {:?}, and a query is known by its file's name: rename one",
                        other.file,
                        query.file,
                        query.name
                    );
                }
            }
            return Ok(queries);
        }
        let design = self.design_of(pack)?;
        let available = self.pack_queries(pack, &design);
        let chosen: Vec<&crate::packs::Query> = if self.queries.is_empty() {
            available
        } else {
            self.queries
                .iter()
                .map(|name| {
                    let query = pack.query(name)?;
                    if !available.iter().any(|candidate| candidate.name == query.name) {
                        bail!(
                            "query {name} of pack {} does not run on design {design} (or is meant to fail)",
                            pack.name
                        );
                    }
                    Ok(query)
                })
                .collect::<Result<_>>()?
        };
        if chosen.is_empty() {
            bail!("pack {} has no query that runs on design {design}: give SQL files with --sql", pack.name);
        }
        chosen
            .into_iter()
            .map(|query| {
                let statement = pack.statement(&query.name, self.rows)?;
                let file = fixture_relative(&query.file).unwrap_or_else(|| shown(&query.file));
                Ok(RunQuery {
                    name: query.name.clone(),
                    file,
                    sql: statement.sql,
                    line: statement.line,
                    setup: Vec::new(),
                })
            })
            .collect()
    }

    fn prepare(&self, run: &mut ThroughputRun<'_>) -> Result<()> {
        let pack = Pack::named(&self.pack)?;
        let design = self.design_of(&pack)?;
        let queries = self.run_queries(&pack)?;
        let dataset = Dataset { database: run.database(), ..pack.dataset(&design, self.rows)? };
        run.progress.start(
            &format!("prepare: dataset {} ({} rows), then a warm-up of every query", dataset.name, self.rows),
            None,
        );
        let manifest = dataset.build(run.target, "throughput-run").context("cannot build the dataset")?;
        run.results().dataset = Some(DatasetBuild {
            name: dataset.name.clone(),
            statements: manifest.statements.len(),
            seconds: Some(manifest.build_seconds),
        });
        for query in &queries {
            for statement in &query.setup {
                crate::interrupt::check()?;
                run.target
                    .execute(statement)
                    .with_context(|| format!("setup of {}: {}", query.name, statement.location()))?;
            }
        }
        for query in &queries {
            crate::interrupt::check()?;
            if let Err(error) = run.target.run(&query.sql, &Settings::new(), FORMAT) {
                if crate::interrupt::requested() {
                    return Err(Interrupted.into());
                }
                let note = format!(
                    "query {} failed in the warm-up ({error:#}); its errors are counted in every level",
                    query.name
                );
                run.progress.warn(&note);
                run.results().notes.push(note);
            }
        }
        let (load_from, client_placement) = self.load.chosen(run.target.capabilities().in_cluster_load);
        run.results().workload.load_from = load_from;
        run.results().workload.client_placement = client_placement;
        let levels = self.levels.list()?;
        if levels.iter().any(|&clients| clients > 1)
            && run.target.capabilities().concurrent_queries == Concurrency::Serial
        {
            let note =
                format!("target {} runs one statement at a time: measuring at 1 client only", run.target.info().kind);
            run.progress.warn(&note);
            run.results().notes.push(note);
            run.results().workload.levels_run = vec![1];
        }
        run.progress.finish(&format!("prepare: {} built in {:.1} s", dataset.name, manifest.build_seconds));
        Ok(())
    }

    fn runner_check(&self, run: &mut ThroughputRun<'_>) -> Result<()> {
        let statements = self.check_statements;
        if statements == 0 {
            return Ok(());
        }
        if run.results().workload.load_from == LoadFrom::Cluster {
            run.progress.note(NO_RUNNER_CHECK_IN_CLUSTER);
            run.results().notes.push(NO_RUNNER_CHECK_IN_CLUSTER.to_string());
            return Ok(());
        }
        run.progress.start(
            &format!("runner check: {CHECK_QUERY} through the runner and on the engine directly, {statements} a block"),
            Some(CHECK_BLOCKS),
        );
        let progress = run.progress;
        let check = runner_check(run.target, CHECK_QUERY, statements, CHECK_GOAL, FORMAT, |block| {
            progress.advance(&format!(
                "{:?}: {} in {:.3} s",
                block.path,
                block.statements,
                block.seconds.unwrap_or_default()
            ))
        })?;
        let summary = format!(
            "runner check: {} QPS through the runner, {} directly ({}, goal {CHECK_GOAL}x)",
            number(check.runner_qps, 0),
            number(check.direct_qps, 0),
            times(check.ratio)
        );
        if check.ratio.is_some_and(|ratio| ratio < CHECK_GOAL) {
            run.progress.warn(&format!("{summary}: the runner costs more than it should; its QPS figures are low"));
        }
        run.results().runner_check = Some(check);
        run.progress.finish(&summary);
        Ok(())
    }

    fn levels(&self, run: &mut ThroughputRun<'_>) -> Result<()> {
        let pack = Pack::named(&self.pack)?;
        let queries = self.run_queries(&pack)?;
        let levels = run.results().workload.levels_run.clone();
        let statements: Vec<&str> = queries.iter().map(|query| query.sql.as_str()).collect();
        let bound = self.bound();
        let run_id = run.run_id();
        // The query runs of each (query, level), started on first use.
        let mut runs_of: BTreeMap<(usize, u32), usize> = BTreeMap::new();
        for round in 1..=self.rounds {
            run.progress.start(&format!("round {round}/{}: levels {levels:?}", self.rounds), Some(levels.len() as u64));
            for &clients in &levels {
                // A stop between levels records no empty one.
                crate::interrupt::check()?;
                let (level, interrupted) = if run.results().workload.load_from == LoadFrom::Cluster {
                    (self.in_cluster(run, &queries, round, clients)?, false)
                } else {
                    let orders = client_orders(self.seed, clients, queries.len());
                    let looped = run.target.run_closed_loop(
                        clients as usize,
                        &statements,
                        &orders,
                        bound,
                        &Settings::new(),
                        FORMAT,
                    )?;
                    let interrupted = looped.interrupted;
                    (self.record_level(run, &queries, &run_id, round, clients, looped, &mut runs_of)?, interrupted)
                };
                run.progress.advance(&level_line(&level));
                // Errors are counted apart, not hidden: each level that had some says so now.
                if let Some(first) = level.errors_by_query.first() {
                    run.progress.warn(&format!(
                        "round {round}, {}: {} of {} statements failed, not counted ({} failed {} \
                         times, first: {})",
                        plural(clients, "client"),
                        level.errors,
                        level.errors + level.completed,
                        first.query,
                        first.count,
                        first.first
                    ));
                }
                run.results().rounds.push(level);
                run.results().levels =
                    levels.iter().map(|&clients| LevelSummary::of(clients, &run.results().rounds)).collect();
                if interrupted {
                    // Not saved here: the stopped run's bundle is saved whole right after, as
                    // finished, and on a long level that save alone takes seconds.
                    return Err(Interrupted.into());
                }
                run.writer.save()?;
            }
            run.progress.finish(&format!("round {round}/{} done", self.rounds));
        }
        // The figures, on the terminal too, not only in the report.
        let lines: Vec<String> = run.results().levels.iter().map(summary_line).collect();
        for line in lines {
            run.progress.note(&line);
        }
        Ok(())
    }

    /// One level run by clickhouse-benchmark in the cluster ([`in_cluster_level`]); the
    /// Job's phases and any count that differs from the server's are said as it goes.
    fn in_cluster(
        &self,
        run: &mut ThroughputRun<'_>,
        queries: &[RunQuery],
        round: u32,
        clients: u32,
    ) -> Result<LevelRound> {
        let named: Vec<NamedQuery<'_>> =
            queries.iter().map(|query| NamedQuery { name: &query.name, sql: &query.sql }).collect();
        let progress = run.progress;
        Ok(in_cluster_level(
            run.target,
            round,
            clients,
            &named,
            self.bound().into(),
            &Settings::new(),
            &self.load.placement(),
            &level_query_id_prefix(&run.database(), round, clients),
            &mut |line| progress.note(line),
            &mut |warning| progress.warn(warning),
        )?
        .level)
    }

    /// A level's loop as the bundle keeps it ([`level_round`]), and each completed
    /// statement a sample of its (query, level) query runs.
    #[allow(clippy::too_many_arguments)]
    fn record_level(
        &self,
        run: &mut ThroughputRun<'_>,
        queries: &[RunQuery],
        run_id: &str,
        round: u32,
        clients: u32,
        looped: ClosedLoop,
        runs_of: &mut BTreeMap<(usize, u32), usize>,
    ) -> Result<LevelRound> {
        let names: Vec<String> = queries.iter().map(|query| query.name.clone()).collect();
        let level = level_round(round, clients, &looped, &names);
        for statement in &looped.statements {
            let query = &queries[statement.query as usize];
            let index = match runs_of.get(&(statement.query as usize, clients)) {
                Some(&index) => index,
                None => {
                    let index = run.writer.start_query(QueryRuns {
                        query: query.name.clone(),
                        variant: ThroughputVariant { clients },
                        ab_variant: None,
                        plan: None,
                        sql_file: query.file.clone(),
                        answer: String::new(),
                        samples: Vec::new(),
                    })?;
                    runs_of.insert((statement.query as usize, clients), index);
                    index
                }
            };
            // A (query, level) whose every statement failed keeps its query runs, empty, so
            // that a comparison shows it failed rather than missing.
            let Ok(counters) = &statement.outcome else { continue };
            // Numbered in turn within the query runs, as every kind numbers a query run's samples.
            let attempt = run.results().queries[index].samples.len() as u32 + 1;
            let name = format!("{}_c{clients}_{}", query.name, statement.client);
            let tag = StatementTag::new(run_id, "throughput", &name, attempt);
            match closed_loop_stats(tag.to_string(), counters, statement.latency, &query.sql) {
                Ok(stats) => {
                    let answer = (attempt == 1)
                        .then(|| looped.answers.get(statement.query as usize).cloned().flatten())
                        .flatten()
                        .map(|body| body.chars().take(2000).collect());
                    let sample = Sample {
                        kind: SampleKind::Warm,
                        attempt,
                        settings: Settings::new(),
                        stats,
                        breakdown: None,
                        round_position: None,
                        // The loop keeps each query's first result only, not every one's.
                        answer: None,
                    };
                    // Into the bundle directly, not through the samples journal: the level
                    // is saved whole when it ends, and the journal's fold, which looks for
                    // the sample's number among those its query runs hold, grows with the
                    // square of a long level's samples.
                    let runs = &mut run.results().queries[index];
                    if let Some(answer) = answer
                        && runs.answer.is_empty()
                    {
                        runs.answer = answer;
                    }
                    runs.samples.push(sample);
                }
                // The statement stays in the level's record; only its sample is missing.
                Err(error) => {
                    let note = format!("some statements of {} have no sample: {error:#}", query.name);
                    if !run.results().notes.contains(&note) {
                        run.results().notes.push(note);
                    }
                }
            }
        }
        Ok(level)
    }
}

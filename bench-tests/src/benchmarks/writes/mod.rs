//! The `writes` benchmark: INSERTs per second and rows per second at several levels of
//! concurrent writers, as a closed loop, with each INSERT's time split into CPU, writing,
//! fsync, lock waits and throttling, the engine's threads in I/O wait, and the CPU it used
//! against what its cores offered (docs/kinds/writes.md), one method per phase:
//!
//! 1. [`WritesPhase::Prepare`]: the logs table (`logs/schema.sql`) made in the run's own
//!    database, `--durability` put in force on it, which counters the engine has, and one
//!    INSERT as a warm-up.
//! 2. [`WritesPhase::RunnerCheck`]: the INSERT at one client through the runner and in a
//!    tight loop on the engine, in interleaved blocks ([`runner_check`]).
//! 3. [`WritesPhase::Levels`]: `--rounds` rounds, each running every level once: K
//!    clients, each on its own connection, sending the INSERT as soon as their last one
//!    returned, until the level's duration or statement budget; meanwhile an observer
//!    looks at the engine's threads and the table's parts ([`Target::observe`]), and the
//!    engine's counters are read before and after. Each level is recorded and the bundle
//!    saved as it ends, so a stop keeps the levels done.

mod compare;
mod decomposition;
mod example;
mod flags;
mod mix;
mod report;
mod results;
mod table;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};

pub use self::compare::{WritesComparison, WritesLevelComparison};
pub use self::decomposition::Decomposition;
use self::decomposition::{EVENTS, SYSTEM_TIME, USER_TIME};
pub use self::flags::WritesFlags;
pub use self::mix::{Mix, MixStatement};
pub use self::results::{
    CodeErrors, CpuUse, Durability, EventsDelta, INSERT, PartsSampled, RATE_KEPT, StatementFigures, ThreadsSampled,
    WritesBundle, WritesLevel, WritesQueryRuns, WritesResults, WritesRound, WritesVariant, WritesWorkload,
};
pub use self::table::{INSERT_FILE, PACK_INSERT_FILE, PackTable, SCHEMA_FILE, WritesTable};
use super::{Benchmark, GuardedSql, Run};
use crate::ab_variants::{AbRun, check_variants};
use crate::closed_loop::{CHECK_BLOCKS, Levels, client_orders, level_round, runner_check};
use crate::compare::{BundleAt, CompareOptions, Comparison};
use crate::dataset::{BytesPerRow, UNMEASURED_BYTES_PER_ROW, check_fits, check_row_bound};
use crate::engine_threads::{TaskStates, ThreadStateMeans, own_task_states};
use crate::fixtures::{Fixture, Params, Statement};
use crate::interrupt::Interrupted;
use crate::levels::{Latency, LevelBound, LevelSummary, Spread, StatementRecord};
use crate::measure::{closed_loop_stats, engine_events};
use crate::numbers::ratio;
use crate::query_runs::{QueryRuns, Sample, SampleKind};
use crate::report::Section;
use crate::results::RunBundle;
use crate::settings::Settings;
use crate::sql::{sql_string, statement_line};
use crate::stats::{EngineEvents, StatementTag, StatsSource};
use crate::targets::{ClosedLoop, Concurrency, LoopBound, ObserverConnection};
use crate::units::{number, plural, times};

/// Levels by default: one writer, a few, and more than this machine's cores.
pub const DEFAULT_CONCURRENCY: &str = "1,4,16";
/// Rows per INSERT by default: the batch the design measurements used.
pub const DEFAULT_BATCH_ROWS: u64 = 1_000;
/// Rounds by default: five, the fewest a side at which a comparison can test two bundles'
/// rates ([`crate::significance::MIN_SAMPLES`]).
pub const DEFAULT_ROUNDS: u32 = 5;
/// A level's duration by default: three levels, five rounds, 30 s of writing.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(2);
/// INSERTs per block of the runner check: 32 blocks of 25, about 4 s at 5 ms an INSERT.
pub const CHECK_BLOCK_STATEMENTS: u64 = 25;
/// What the runner's rate of INSERTs should reach against the tight loop's.
pub const CHECK_GOAL: f64 = 0.95;
/// How often the observer looks at the engine's threads.
const THREADS_EVERY: Duration = Duration::from_millis(20);
/// Every how many looks it also reads the table's parts and merges (a query on the
/// engine, so rarer: every 200 ms).
const PARTS_EVERY_LOOKS: u64 = 10;
/// The format the statements' results come back in.
const FORMAT: &str = "TabSeparated";

/// The benchmark's phases, in the order it runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritesPhase {
    Prepare,
    RunnerCheck,
    Levels,
}

impl super::Phase for WritesPhase {
    const ALL: &'static [WritesPhase] = &[WritesPhase::Prepare, WritesPhase::RunnerCheck, WritesPhase::Levels];

    fn name(self) -> &'static str {
        match self {
            WritesPhase::Prepare => "prepare",
            WritesPhase::RunnerCheck => "runner_check",
            WritesPhase::Levels => "levels",
        }
    }

    fn label(self) -> &'static str {
        match self {
            WritesPhase::RunnerCheck => "runner check",
            phase => phase.name(),
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct WritesBenchmark {
    pub levels: Levels,
    pub batch_rows: u64,
    pub durability: Durability,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
    pub rounds: u32,
    /// INSERTs per block of the runner check; 0 skips it.
    pub check_statements: u64,
    pub stop_on_error: bool,
    /// The variants of an A/B run, each its durability and the INSERT's settings.
    pub ab: Option<AbRun>,
    /// An open loop's INSERTs per second over all clients; `None`: a closed loop.
    pub rate: Option<f64>,
    /// `--mix` as given, read when checked ([`Mix::parse`]).
    pub mix: String,
    /// A pack's table and INSERT instead of the logs table's (`--pack`).
    pub pack: Option<PackTable>,
}

/// The seed of each client's order of a mix's statements: fixed, so that every run of a
/// mix sends the same sequences.
const MIX_SEED: u64 = 1;
/// The fixture that readies the table for lightweight UPDATEs.
const MIX_TABLE_FILE: &str = "writes/mix_table.sql";

/// The key of a variant that names a durability instead of a setting.
pub const DURABILITY_KEY: &str = "durability";

/// One configuration the levels run: the run's own, or an A/B variant's.
#[derive(Debug, Clone, PartialEq)]
struct Turn {
    variant: Option<String>,
    durability: Durability,
    /// The INSERT's settings.
    settings: Settings,
}

impl Turn {
    /// `variant durable: ` before what a message says of it, nothing for a run without.
    fn prefix(&self) -> String {
        self.variant.as_ref().map_or(String::new(), |name| format!("variant {name}: "))
    }
}

type WritesRun<'a> = Run<'a, WritesResults>;

impl Benchmark for WritesBenchmark {
    type Results = WritesResults;
    type Phase = WritesPhase;
    type Flags = WritesFlags;
    type ComparisonSections = WritesComparison;
    const ABOUT: &'static str = "INSERTs and rows per second at several levels of concurrent writers (a closed loop of \
                                 batches into the logs table), each INSERT's time split into CPU, writing, fsync, \
                                 lock waits and throttling, the engine's threads in I/O wait, and the CPU used against \
                                 the cores'";

    fn from_flags(flags: WritesFlags) -> WritesBenchmark {
        flags.benchmark()
    }

    fn check(&self) -> Result<()> {
        let levels = self.levels.list()?;
        if self.batch_rows == 0 {
            bail!("--batch-rows 0: an INSERT needs at least one row; give e.g. --batch-rows 1000");
        }
        check_row_bound(&format!("--batch-rows {}", self.batch_rows), self.batch_rows)?;
        match self.bound() {
            LoopBound::Duration(duration) if duration.is_zero() => {
                bail!("--duration 0s: a level needs time to run; give e.g. --duration 2s")
            }
            LoopBound::Statements(total) => {
                let most = levels.iter().copied().max().unwrap_or(1);
                if total < u64::from(most) {
                    bail!(
                        "--iterations {total} is fewer than the {most} clients of level {most}: each client needs an \
                         INSERT; give --iterations {most} or more, or a smaller level"
                    );
                }
            }
            LoopBound::Duration(_) => {}
        }
        if let Some(rate) = self.rate
            && !(rate.is_finite() && rate > 0.0)
        {
            bail!("--rate {rate}: an open loop needs a rate above 0 INSERTs per second, e.g. --rate 100");
        }
        let table = self.table()?;
        if table.pack.is_some() && !self.mix()?.is_inserts_only() {
            bail!(
                "--mix {} with --pack: the mix's UPDATE, DELETE and read are the logs table's; a pack's run sends \
                 its INSERT alone (drop --mix)",
                self.mix()?
            );
        }
        if let Some(ab) = &self.ab {
            check_variants(&ab.variants)?;
        }
        self.turns()?;
        Ok(())
    }

    /// The first INSERT of every client of the largest level must fit at once: rows that
    /// could not be written even once are refused before anything runs.
    fn check_storage(&self, folder: &std::path::Path) -> Result<()> {
        let most = self.levels.list()?.into_iter().max().unwrap_or(1);
        let rows = self.batch_rows.saturating_mul(u64::from(most));
        let per_row = BytesPerRow {
            bytes: UNMEASURED_BYTES_PER_ROW,
            basis: format!(
                "the first INSERT of {} at once, at the largest figure measured for any dataset of this project",
                plural(most, "client")
            ),
        };
        check_fits(&format!("--batch-rows {} at {}", self.batch_rows, plural(most, "client")), rows, &per_row, folder)
    }

    fn sql_files(&self) -> Vec<String> {
        let mix = self.mix().unwrap_or_default();
        // A pack or file that does not load was refused by `check` before any bundle.
        let Ok(table) = self.table() else { return Vec::new() };
        let table_files = table.fixture_files();
        let mut files: Vec<String> = table_files.iter().filter(|file| **file == table.schema_file).cloned().collect();
        if mix.updates > 0 {
            files.push(MIX_TABLE_FILE.to_string());
        }
        // Both durabilities' files, whichever the run puts in force: bundles that differ in
        // durability alone then hold the same files, and compare without --force (the
        // durability is said as what they differ in).
        files.extend(Durability::ALL.iter().map(|durability| durability.fixture().to_string()));
        // The INSERT's file always: the prepare phase and the runner check send it.
        files.extend(table_files.into_iter().filter(|file| *file == table.insert_file));
        let others = mix.statements().into_iter().filter(|&statement| statement != MixStatement::Insert);
        files.extend(others.map(|statement| statement.fixture().to_string()));
        files
    }

    /// The table, each durability's ALTER and the INSERT, each checked as a pack's dataset
    /// statements are (the INSERT writes rows the engine makes, from a row generator).
    fn guarded_sql(&self) -> Result<GuardedSql> {
        let table = self.table()?;
        let mut dataset = table.schema.clone();
        if self.mix()?.updates > 0 {
            dataset.extend(Fixture::load(MIX_TABLE_FILE)?.render(&Params::new())?);
        }
        for durability in Durability::ALL {
            dataset.extend(Fixture::load(durability.fixture())?.render(&table.params())?);
        }
        dataset.push(table.insert.clone());
        // The mix's writes as a dataset's statements, its reads as a pack's queries.
        let mut queries = Vec::new();
        for (statement, sql) in self.mix_statements()? {
            match statement {
                MixStatement::Insert => {}
                MixStatement::Update | MixStatement::Delete => dataset.push(sql),
                MixStatement::Read => queries.push(sql),
            }
        }
        Ok(GuardedSql { dataset, queries })
    }

    /// The table must be a MergeTree the INSERT writes to, and a mix with lightweight
    /// UPDATEs needs an engine that has them: each refused in one line (naming the
    /// engine's version for the UPDATE), before the bundle is made.
    fn check_target(&self, target: &mut crate::targets::Target) -> Result<()> {
        self.table()?.check_on(target)?;
        if self.mix()?.updates == 0 {
            return Ok(());
        }
        let known = target
            .query_text("SELECT count() FROM system.settings WHERE name = 'enable_lightweight_update'")
            .context("cannot read whether the engine has lightweight UPDATE")?;
        if known.trim() == "0" {
            bail!(
                "--mix updates={}: ClickHouse {} has no lightweight UPDATE (no setting enable_lightweight_update); \
                 drop updates from --mix, or run on a newer engine",
                self.mix()?.updates,
                target.info().engine_version
            );
        }
        Ok(())
    }

    fn ab_run(&self) -> Option<AbRun> {
        self.ab.clone()
    }

    fn new_results(&self) -> WritesResults {
        let concurrency = self.levels.list().unwrap_or_default();
        let table = self.table().ok();
        WritesResults {
            workload: WritesWorkload {
                pack: table.as_ref().and_then(|table| table.pack.clone().map(|(pack, _)| pack)),
                design: table.as_ref().and_then(|table| table.pack.clone().map(|(_, design)| design)),
                table: table.as_ref().map_or_else(String::new, |table| table.name.clone()),
                schema_file: table.as_ref().map_or_else(String::new, |table| table.schema_file.clone()),
                insert_file: table.as_ref().map_or_else(String::new, |table| table.insert_file.clone()),
                statement: table.as_ref().map_or_else(String::new, |table| statement_line(&table.insert.sql)),
                batch_rows: self.batch_rows,
                durability: self.durability,
                levels_run: concurrency.clone(),
                concurrency,
                bound: match self.bound() {
                    LoopBound::Duration(duration) => LevelBound::Duration { seconds: Some(duration.as_secs_f64()) },
                    LoopBound::Statements(statements) => LevelBound::Iterations { statements },
                },
                rounds: self.rounds,
                rate: self.rate,
                mix: self.mix().unwrap_or_default(),
            },
            engine_events: EngineEvents::Unknown { reason: "not read yet".to_string() },
            statement_records: StatsSource::ResultCounters,
            runner_check: None,
            rounds: Vec::new(),
            levels: Vec::new(),
            queries: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn run_label(&self) -> String {
        let configuration = if self.ab.is_some() { "ab" } else { self.durability.name() };
        format!("writes-{}-{configuration}", crate::units::short_count(self.batch_rows))
    }

    fn run_phase(&self, phase: WritesPhase, run: &mut WritesRun<'_>) -> Result<()> {
        match phase {
            WritesPhase::Prepare => self.prepare(run),
            WritesPhase::RunnerCheck => self.runner_check(run),
            WritesPhase::Levels => self.levels(run),
        }?;
        run.writer.save()
    }

    /// The run's database goes: on a shared server it would hold the rows for nothing.
    fn clean_up(&self, run: &mut WritesRun<'_>) -> Result<()> {
        let database = run.database();
        run.target.execute(&format!("DROP DATABASE IF EXISTS {database} SYNC")).with_context(|| {
            format!("database {database} may be left on the target: drop it with DROP DATABASE {database} SYNC")
        })
    }

    /// A run in which a level completed no INSERT exits non-zero, after its bundle and
    /// report: that level's figures are unknown.
    fn verdict(bundle: &RunBundle<WritesResults>) -> Result<()> {
        let failed: Vec<String> = bundle
            .benchmark
            .rounds
            .iter()
            .filter(|round| round.closed_loop.complete && round.closed_loop.completed == 0)
            .map(|round| {
                let first = round.errors_by_code.first().map_or("", |errors| errors.first.as_str());
                format!(
                    "round {} at {} completed no INSERT ({} failed; first: {first})",
                    round.closed_loop.round,
                    plural(round.closed_loop.clients, "client"),
                    round.closed_loop.errors
                )
            })
            .collect();
        if failed.is_empty() {
            return Ok(());
        }
        bail!("{}", failed.join("; "))
    }

    fn examples(value: f64, count: u64) -> Vec<RunBundle<WritesResults>> {
        example::examples(value, count)
    }

    fn report(bundle: &RunBundle<WritesResults>) -> Result<Section> {
        Ok(Section {
            markdown: report::markdown(&bundle.benchmark, &bundle.target),
            charts: report::charts(&bundle.benchmark)?,
        })
    }

    /// Each level's rates across rounds, tested as every timing is, with its time split,
    /// I/O wait and CPU side by side; latency per level is the comparison every kind has.
    fn comparison_sections(
        bundles: &[BundleAt<WritesResults>],
        comparison: &Comparison,
        options: &CompareOptions,
    ) -> Result<WritesComparison> {
        let sides: Vec<WritesResults> = match bundles {
            // One A/B bundle: its two variants the comparison every kind shares chose.
            [one] => {
                let (baseline, candidate) = (&comparison.baseline.ab_variant, &comparison.candidate.ab_variant);
                let results = &one.bundle.benchmark;
                vec![results.of_variant(baseline.as_deref()), results.of_variant(candidate.as_deref())]
            }
            two => two.iter().map(|at| at.bundle.benchmark.clone()).collect(),
        };
        Ok(WritesComparison::of(&sides.iter().collect::<Vec<_>>(), &options.thresholds))
    }
}

impl WritesBenchmark {
    fn bound(&self) -> LoopBound {
        match (self.iterations, self.duration) {
            (Some(statements), _) => LoopBound::Statements(statements),
            (None, duration) => LoopBound::Duration(duration.unwrap_or(DEFAULT_DURATION)),
        }
    }

    /// The configurations the levels run: the run's own, or each A/B variant's (its
    /// `durability=` key, or `--durability`; its other keys the INSERT's settings). A
    /// variant that names an engine version, or a durability there is not, is refused.
    fn turns(&self) -> Result<Vec<Turn>> {
        let Some(ab) = &self.ab else {
            return Ok(vec![Turn { variant: None, durability: self.durability, settings: Settings::new() }]);
        };
        ab.variants
            .iter()
            .map(|variant| {
                if variant.engine_version.is_some() {
                    bail!(
                        "--variant {}: a writes run's variants write to one table of one engine, so they cannot \
                         name an engine version; compare two runs instead (`cargo xtask compare A B`)",
                        variant.flag()
                    );
                }
                let mut turn = Turn {
                    variant: Some(variant.name.clone()),
                    durability: self.durability,
                    settings: Settings::new(),
                };
                for (name, value) in variant.settings.iter() {
                    if name != DURABILITY_KEY {
                        turn.settings = turn.settings.with(name, value);
                        continue;
                    }
                    turn.durability = <Durability as clap::ValueEnum>::from_str(value, false).map_err(|_| {
                        anyhow::anyhow!(
                            "--variant {}: {DURABILITY_KEY}={value} is not a durability; write {DURABILITY_KEY}=none \
                             or {DURABILITY_KEY}=fsync",
                            variant.flag()
                        )
                    })?;
                }
                Ok(turn)
            })
            .collect()
    }

    /// Puts `durability` in force on the table.
    fn apply_durability(run: &mut WritesRun<'_>, table: &WritesTable, durability: Durability) -> Result<()> {
        for statement in Fixture::load(durability.fixture())?.render(&table.params())? {
            run.target.execute(&statement).with_context(|| statement.location())?;
        }
        Ok(())
    }

    /// The INSERT every client sends.
    fn insert(&self) -> Result<Statement> {
        Ok(self.table()?.insert)
    }

    /// The table the run fills, and its INSERT.
    fn table(&self) -> Result<WritesTable> {
        WritesTable::load(self.pack.as_ref(), self.batch_rows)
    }

    fn mix(&self) -> Result<Mix> {
        Mix::parse(&self.mix)
    }

    /// Each statement of the mix with its SQL, in [`MixStatement::ALL`]'s order.
    fn mix_statements(&self) -> Result<Vec<(MixStatement, Statement)>> {
        self.mix()?
            .statements()
            .into_iter()
            .map(|statement| {
                let sql = match statement {
                    MixStatement::Insert => self.insert()?,
                    other => Fixture::load(other.fixture())?.render_one(&Params::new())?,
                };
                Ok((statement, sql))
            })
            .collect()
    }

    fn prepare(&self, run: &mut WritesRun<'_>) -> Result<()> {
        let database = run.database();
        run.progress.start(
            &format!("prepare: the logs table in {database}, durability {}, one INSERT", self.durability.name()),
            None,
        );
        run.target.use_fresh_database(&database)?;
        let table = self.table()?;
        let mut setup = table.schema.clone();
        if self.mix()?.updates > 0 {
            setup.extend(Fixture::load(MIX_TABLE_FILE)?.render(&Params::new())?);
        }
        for statement in setup {
            crate::interrupt::check()?;
            run.target.execute(&statement).with_context(|| statement.location())?;
        }
        run.results().engine_events = engine_events(run.target, EVENTS);
        if let EngineEvents::Known { names } = &run.results().engine_events {
            let missing: Vec<&str> = EVENTS.iter().copied().filter(|name| !names.contains(*name)).collect();
            if !missing.is_empty() {
                let note = format!(
                    "the engine has no counter {}: the parts of the time split that need them are unknown",
                    missing.join(", ")
                );
                run.progress.warn(&note);
                run.results().notes.push(note);
            }
        }
        // Each statement once in each configuration, the INSERT first (the others find its
        // rows): a setting the engine refuses is one line here, not every statement of every
        // level failing.
        let mut warm_ups = vec![(MixStatement::Insert, self.insert()?)];
        warm_ups.extend(self.mix_statements()?.into_iter().filter(|(statement, _)| *statement != MixStatement::Insert));
        for turn in self.turns()? {
            Self::apply_durability(run, &table, turn.durability)?;
            for (statement, sql) in &warm_ups {
                crate::interrupt::check()?;
                run.target.run(sql, &turn.settings, FORMAT).with_context(|| {
                    format!("{}the warm-up {} failed ({})", turn.prefix(), statement.name(), sql.location())
                })?;
            }
        }
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
        if !run.target.capabilities().engine_in_process {
            let note = "the engine's threads are not in this process: their states (I/O wait) and its cores are \
                        unknown on this target"
                .to_string();
            run.results().notes.push(note);
        }
        run.progress.finish(&format!("prepare: logs table ready, durability {}", self.durability.name()));
        Ok(())
    }

    fn runner_check(&self, run: &mut WritesRun<'_>) -> Result<()> {
        let statements = self.check_statements;
        if statements == 0 {
            return Ok(());
        }
        let table = self.table()?;
        let insert = table.insert.clone();
        // In the first configuration (an A/B run's baseline).
        let first = self.turns()?.remove(0);
        Self::apply_durability(run, &table, first.durability)?;
        run.progress.start(
            &format!(
                "runner check: {}the INSERT through the runner and on the engine directly, {statements} a block",
                first.prefix()
            ),
            Some(CHECK_BLOCKS),
        );
        let progress = run.progress;
        let check = runner_check(run.target, &insert, statements, CHECK_GOAL, FORMAT, |block| {
            progress.advance(&format!(
                "{:?}: {} in {:.3} s",
                block.path,
                block.statements,
                block.seconds.unwrap_or_default()
            ))
        })
        .with_context(|| format!("the runner check's INSERT ({})", insert.location()))?;
        let summary = format!(
            "runner check: {} INSERTs/s through the runner, {} directly ({}, goal {CHECK_GOAL}x)",
            number(check.runner_qps, 0),
            number(check.direct_qps, 0),
            times(check.ratio)
        );
        if check.ratio.is_some_and(|ratio| ratio < CHECK_GOAL) {
            run.progress.warn(&format!("{summary}: the runner costs more than it should; its rates are low"));
        }
        run.results().runner_check = Some(check);
        run.progress.finish(&summary);
        Ok(())
    }

    fn levels(&self, run: &mut WritesRun<'_>) -> Result<()> {
        let statements = self.mix_statements()?;
        let unit = self.mix()?.rate_unit();
        let table = self.table()?;
        let turns = self.turns()?;
        let levels = run.results().workload.levels_run.clone();
        let run_id = run.run_id();
        // Each level's order of the configurations in every round: an A/B run's shuffle, one
        // stream per level; the one configuration otherwise.
        let mut orders: Vec<Box<dyn Iterator<Item = Vec<usize>>>> = (0..levels.len())
            .map(|index| -> Box<dyn Iterator<Item = Vec<usize>>> {
                match &self.ab {
                    Some(ab) => Box::new(ab.round_orders(index as u64)),
                    None => Box::new(std::iter::repeat(vec![0])),
                }
            })
            .collect();
        let mut runs_of: BTreeMap<(usize, usize, u32), usize> = BTreeMap::new();
        let mut in_force: Option<Durability> = None;
        for round in 1..=self.rounds {
            let steps = (levels.len() * turns.len()) as u64;
            run.progress.start(&format!("round {round}/{}: levels {levels:?}", self.rounds), Some(steps));
            for (index, &clients) in levels.iter().enumerate() {
                let order = orders[index].next().unwrap_or_default();
                for turn_index in order {
                    let turn = &turns[turn_index];
                    // A stop between levels records no empty one.
                    crate::interrupt::check()?;
                    if in_force != Some(turn.durability) {
                        Self::apply_durability(run, &table, turn.durability)?;
                        in_force = Some(turn.durability);
                    }
                    let level = self.level(run, &statements, &table.name, turn, round, clients)?;
                    let interrupted = !level.round.closed_loop.complete;
                    self.record_samples(
                        run,
                        &run_id,
                        &statements,
                        (turn_index, turn),
                        clients,
                        &level.looped,
                        &mut runs_of,
                    )?;
                    let record = level.round;
                    run.progress.advance(&format!("{}{}", turn.prefix(), report::round_line(&record, unit)));
                    if let Some(first) = record.errors_by_code.first() {
                        run.progress.warn(&format!(
                            "{}round {round}, {}: {} of {} INSERTs failed, not counted (first: {})",
                            turn.prefix(),
                            plural(clients, "client"),
                            record.closed_loop.errors,
                            record.closed_loop.errors.saturating_add(record.closed_loop.completed),
                            first.first
                        ));
                    }
                    if let Some(rate) = self.rate
                        && record.closed_loop.complete
                        && !record.closed_loop.qps.is_some_and(|held| held >= RATE_KEPT * rate)
                    {
                        run.progress.warn(&format!(
                            "{}round {round}, {}: the engine did not keep {} INSERTs/s: it held {} (schedule lag p99 \
                             {} ms)",
                            turn.prefix(),
                            plural(clients, "client"),
                            number(Some(rate), 1),
                            number(record.closed_loop.qps, 1),
                            number(record.closed_loop.schedule_lag.and_then(|lag| lag.p99_ms), 1),
                        ));
                    }
                    let stop = self.stop_after(&record);
                    run.results().rounds.push(record);
                    let events = run.results().engine_events.clone();
                    let rounds = &run.results().rounds;
                    let summaries: Vec<WritesLevel> = turns
                        .iter()
                        .flat_map(|turn| levels.iter().map(move |&clients| (turn, clients)))
                        .map(|(turn, clients)| {
                            level_summary(turn.variant.as_deref(), clients, self.rate, rounds, &events)
                        })
                        .collect();
                    run.results().levels = summaries;
                    if interrupted {
                        return Err(Interrupted.into());
                    }
                    run.writer.save()?;
                    if let Some(why) = stop {
                        bail!("{}{why}", turn.prefix());
                    }
                }
            }
            run.progress.finish(&format!("round {round}/{} done", self.rounds));
        }
        let lines: Vec<String> = run
            .results()
            .levels
            .iter()
            .map(|level| {
                let prefix = level.variant.as_ref().map_or(String::new(), |name| format!("variant {name}: "));
                format!("{prefix}{}", report::summary_line(level, unit))
            })
            .collect();
        for line in lines {
            run.progress.note(&line);
        }
        Ok(())
    }

    /// Why the run stops after this level, if it does: a full disk always (the next level
    /// would fail the same way), any failure with `--stop-on-error`.
    fn stop_after(&self, round: &WritesRound) -> Option<String> {
        let first = round.errors_by_code.first()?;
        let disk_full = round.errors_by_code.iter().find(|errors| {
            errors.name.as_deref() == Some("NOT_ENOUGH_SPACE") || errors.first.contains("No space left on device")
        });
        if let Some(full) = disk_full {
            return Some(format!(
                "the disk is full: {} INSERTs failed at {} (first: {}); the levels done are kept, free space and run \
                 again",
                full.count,
                plural(round.closed_loop.clients, "client"),
                full.first
            ));
        }
        self.stop_on_error.then(|| {
            format!(
                "--stop-on-error: {} INSERTs failed at {} (first: {}); the levels done are kept",
                round.closed_loop.errors,
                plural(round.closed_loop.clients, "client"),
                first.first
            )
        })
    }

    /// One level of one round: the loop, with the observer and the counters around it.
    fn level(
        &self,
        run: &mut WritesRun<'_>,
        statements: &[(MixStatement, Statement)],
        table: &str,
        turn: &Turn,
        round: u32,
        clients: u32,
    ) -> Result<MeasuredLevel> {
        let in_process = run.target.capabilities().engine_in_process;
        let before = run.target.read_events();
        let observer = run.target.observe(THREADS_EVERY, look(in_process, table.to_string()))?;
        // One pass of the mix, each client in its own seeded order of it.
        let pass = self.mix()?.pass();
        let sql_of =
            |kind: MixStatement| statements.iter().find(|(statement, _)| *statement == kind).map(|(_, sql)| sql);
        let pass_sql: Vec<&str> = pass.iter().filter_map(|&kind| sql_of(kind)).map(|sql| sql.sql.as_str()).collect();
        let names: Vec<String> = pass.iter().map(|kind| kind.name().to_string()).collect();
        let orders = client_orders(MIX_SEED, clients, pass.len());
        let looped = match self.rate {
            Some(rate) => run.target.run_open_loop(
                clients as usize,
                &pass_sql,
                &orders,
                self.bound(),
                rate,
                &turn.settings,
                FORMAT,
            ),
            None => {
                run.target.run_closed_loop(clients as usize, &pass_sql, &orders, self.bound(), &turn.settings, FORMAT)
            }
        };
        // The observer stops whatever the loop did.
        let observed = observer.finish();
        let looped = looped?;
        let after = run.target.read_events();
        let events = match (before, after) {
            (Ok(before), Ok(after)) => EventsDelta::Known {
                engine_wide: true,
                rises: EVENTS
                    .iter()
                    .map(|&name| {
                        let value =
                            |snapshot: &crate::targets::EventsSnapshot| snapshot.values.get(name).copied().unwrap_or(0);
                        (name.to_string(), value(&after).saturating_sub(value(&before)))
                    })
                    .collect(),
            },
            (Err(error), _) | (_, Err(error)) => EventsDelta::Unknown { reason: format!("{error:#}") },
        };
        let wall_seconds = looped.wall.as_secs_f64();
        let closed_loop = level_round(round, clients, &looped, &names);
        let inserts_completed = looped
            .statements
            .iter()
            .filter(|statement| {
                statement.outcome.is_ok() && pass.get(statement.query as usize) == Some(&MixStatement::Insert)
            })
            .count() as u64;
        let rows_written = inserts_completed.saturating_mul(self.batch_rows);
        let (threads, parts) = match observed {
            Ok(observed) => sampled(&observed.looks, observed.without_connection, in_process),
            Err(error) => (
                ThreadsSampled::Unknown { reason: format!("{error:#}") },
                PartsSampled { unknown: Some(format!("{error:#}")), ..PartsSampled::empty() },
            ),
        };
        let cores = in_process.then(|| std::thread::available_parallelism().ok()).flatten();
        let cpu = cpu_use(&events, cores.map(|cores| cores.get() as u32), wall_seconds);
        let round = WritesRound {
            variant: turn.variant.clone(),
            rows_per_second: (inserts_completed > 0).then(|| ratio(rows_written as f64, wall_seconds)).flatten(),
            rows_written,
            errors_by_code: errors_by_code(&looped),
            events,
            threads,
            cpu,
            parts,
            closed_loop,
        };
        Ok(MeasuredLevel { round, looped })
    }

    /// Each completed statement a sample of its (statement, level) query runs, for the
    /// comparison of latency every kind has.
    #[allow(clippy::too_many_arguments)]
    fn record_samples(
        &self,
        run: &mut WritesRun<'_>,
        run_id: &str,
        statements: &[(MixStatement, Statement)],
        (turn_index, turn): (usize, &Turn),
        clients: u32,
        looped: &ClosedLoop,
        runs_of: &mut BTreeMap<(usize, usize, u32), usize>,
    ) -> Result<()> {
        let pass = self.mix()?.pass();
        for statement in &looped.statements {
            let Ok(counters) = &statement.outcome else { continue };
            let Some(&kind) = pass.get(statement.query as usize) else { continue };
            let Some((kind_index, (_, sql))) =
                statements.iter().enumerate().find(|(_, (candidate, _))| *candidate == kind)
            else {
                continue;
            };
            let index = match runs_of.get(&(turn_index, kind_index, clients)) {
                Some(&index) => index,
                None => {
                    let index = run.writer.start_query(QueryRuns {
                        query: kind.name().to_string(),
                        variant: WritesVariant { clients },
                        ab_variant: turn.variant.clone(),
                        plan: None,
                        sql_file: kind.fixture().to_string(),
                        answer: String::new(),
                        samples: Vec::new(),
                    })?;
                    runs_of.insert((turn_index, kind_index, clients), index);
                    index
                }
            };
            let attempt = run.results().queries[index].samples.len() as u32 + 1;
            let variant = turn.variant.as_ref().map_or(String::new(), |name| format!(".{name}"));
            let name = format!("{}{variant}_c{clients}_{}", kind.name(), statement.client);
            let tag = StatementTag::new(run_id, "writes", &name, attempt);
            let stats = closed_loop_stats(tag.to_string(), counters, statement.latency, &sql.sql)?;
            // Into the bundle directly, as throughput's are: the level is saved whole.
            run.results().queries[index].samples.push(Sample {
                kind: SampleKind::Warm,
                attempt,
                settings: turn.settings.clone(),
                stats,
                breakdown: None,
                round_position: None,
                answer: None,
            });
        }
        Ok(())
    }
}

/// A level as measured: its record, and the loop its samples come from.
struct MeasuredLevel {
    round: WritesRound,
    looped: ClosedLoop,
}

/// One look of the observer: the engine's threads (when they are this process's), and
/// every [`PARTS_EVERY_LOOKS`] looks the table's active parts and running merges.
#[derive(Debug, Clone, Default)]
struct Look {
    threads: Option<TaskStates>,
    parts: Option<Result<(u64, u64), String>>,
}

/// What the observer does at each look.
fn look(in_process: bool, table: String) -> impl FnMut(Option<&mut ObserverConnection>) -> Look + Send + 'static {
    let mut looks = 0u64;
    move |connection| {
        let threads = in_process.then(own_task_states).and_then(Result::ok);
        let parts = looks
            .is_multiple_of(PARTS_EVERY_LOOKS)
            .then(|| connection.map(|connection| parts_and_merges(connection, &table)))
            .flatten();
        looks += 1;
        Look { threads, parts }
    }
}

/// The table's active parts and the merges running on it, in one query.
fn parts_and_merges(connection: &mut ObserverConnection, table: &str) -> Result<(u64, u64), String> {
    let table = sql_string(table);
    let sql = format!(
        "SELECT (SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = {table} AND active), \
         (SELECT count() FROM system.merges WHERE database = currentDatabase() AND table = {table})"
    );
    let text = connection.query_text(&sql).map_err(|error| format!("{error:#}"))?;
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(parts)), Some(Ok(merges))) => Ok((parts, merges)),
        _ => Err(format!("unexpected answer {text:?} to the parts and merges query")),
    }
}

/// The threads' and parts' figures of a level from its looks.
fn sampled(looks: &[Look], without_connection: Option<String>, in_process: bool) -> (ThreadsSampled, PartsSampled) {
    let states: Vec<TaskStates> = looks.iter().filter_map(|look| look.threads).collect();
    let threads = if !in_process {
        ThreadsSampled::Unknown {
            reason: "the engine's threads are in a server's process, not this one's; their states are not read"
                .to_string(),
        }
    } else if states.is_empty() {
        ThreadsSampled::Unknown { reason: "no look at /proc/self/task succeeded".to_string() }
    } else {
        ThreadsSampled::Known { every_ms: THREADS_EVERY.as_millis() as u64, means: ThreadStateMeans::of(&states) }
    };
    let read: Vec<(u64, u64)> = looks.iter().filter_map(|look| look.parts.clone()?.ok()).collect();
    let first_error = looks.iter().find_map(|look| look.parts.clone()?.err());
    let unknown = match (read.is_empty(), without_connection, first_error) {
        (false, _, _) => None,
        (true, Some(why), _) => Some(format!("the observer had no connection to the engine ({why})")),
        (true, None, Some(error)) => Some(error),
        (true, None, None) => Some("the level ended before the first look at the parts".to_string()),
    };
    let parts = PartsSampled {
        looks: read.len() as u64,
        active_parts_first: read.first().map(|(parts, _)| *parts),
        active_parts_last: read.last().map(|(parts, _)| *parts),
        active_parts_max: read.iter().map(|(parts, _)| *parts).max(),
        merges_max: read.iter().map(|(_, merges)| *merges).max(),
        unknown,
    };
    (threads, parts)
}

impl PartsSampled {
    fn empty() -> PartsSampled {
        PartsSampled {
            looks: 0,
            active_parts_first: None,
            active_parts_last: None,
            active_parts_max: None,
            merges_max: None,
            unknown: None,
        }
    }
}

/// The CPU the engine's threads used over a level against what `cores` offered in it.
fn cpu_use(events: &EventsDelta, cores: Option<u32>, wall_seconds: f64) -> CpuUse {
    let used_seconds = match events {
        EventsDelta::Known { rises, .. } => {
            let us = rises.get(USER_TIME).zip(rises.get(SYSTEM_TIME)).map(|(user, system)| user + system);
            us.map(|us| us as f64 / 1e6)
        }
        EventsDelta::Unknown { .. } => None,
    };
    let offered_seconds = cores.map(|cores| f64::from(cores) * wall_seconds);
    CpuUse {
        used_seconds,
        cores,
        offered_seconds,
        share: used_seconds.zip(offered_seconds).and_then(|(used, offered)| ratio(used, offered)),
    }
}

/// The failed statements of a loop by error code, in the order first seen.
fn errors_by_code(looped: &ClosedLoop) -> Vec<CodeErrors> {
    let mut by_code: Vec<CodeErrors> = Vec::new();
    for statement in &looped.statements {
        let Err(message) = &statement.outcome else { continue };
        let (code, name) = error_code(message);
        match by_code.iter_mut().find(|errors| errors.code == code && errors.name == name) {
            Some(errors) => errors.count += 1,
            None => by_code.push(CodeErrors { code, name, count: 1, first: message.clone() }),
        }
    }
    by_code
}

/// The engine's code and name of an error message: `Code: 252. DB::Exception: Too many
/// parts (300). (TOO_MANY_PARTS)` is 252 and `TOO_MANY_PARTS`.
fn error_code(message: &str) -> (Option<u32>, Option<String>) {
    let code = message.split("Code: ").nth(1).and_then(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    });
    let name = message.rmatch_indices('(').find_map(|(start, _)| {
        let inside = message[start + 1..].split(')').next()?;
        (inside.len() > 2 && inside.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()))
            .then(|| inside.to_string())
    });
    (code, name)
}

/// A level of one configuration (an A/B variant, or the run's one) across its complete
/// rounds.
fn level_summary(
    variant: Option<&str>,
    clients: u32,
    rate: Option<f64>,
    rounds: &[WritesRound],
    events: &EngineEvents,
) -> WritesLevel {
    let complete: Vec<&WritesRound> = rounds
        .iter()
        .filter(|round| {
            round.variant.as_deref() == variant && round.closed_loop.clients == clients && round.closed_loop.complete
        })
        .collect();
    let loops: Vec<_> = complete.iter().map(|round| round.closed_loop.clone()).collect();
    // The counters' rises of every complete round summed: unknown when one round's are.
    let mut summed: Option<BTreeMap<String, u64>> = Some(BTreeMap::new());
    let mut unknown_reason = None;
    for round in &complete {
        match (&round.events, summed.as_mut()) {
            (EventsDelta::Known { rises, .. }, Some(total)) => {
                for (name, rise) in rises {
                    let sum = total.entry(name.clone()).or_insert(0);
                    *sum = sum.saturating_add(*rise);
                }
            }
            (EventsDelta::Unknown { reason }, _) => {
                summed = None;
                unknown_reason.get_or_insert(reason.clone());
            }
            (_, None) => {}
        }
    }
    let delta = match summed {
        Some(rises) => EventsDelta::Known { engine_wide: true, rises },
        None => EventsDelta::Unknown { reason: unknown_reason.unwrap_or_default() },
    };
    let mut errors: Vec<CodeErrors> = Vec::new();
    for round in &complete {
        for code in &round.errors_by_code {
            match errors.iter_mut().find(|errors| errors.code == code.code && errors.name == code.name) {
                Some(errors) => errors.count = errors.count.saturating_add(code.count),
                None => errors.push(code.clone()),
            }
        }
    }
    let lags: Vec<f64> = complete
        .iter()
        .flat_map(|round| &round.closed_loop.statements)
        .filter_map(|statement| statement.schedule_lag_us)
        .map(|us| us as f64 / 1e3)
        .collect();
    let asked = rate.filter(|_| !complete.is_empty());
    WritesLevel {
        variant: variant.map(str::to_string),
        schedule_lag: rate.map(|_| Latency::of(lags)),
        rate_kept: asked.map(|asked| {
            complete.iter().all(|round| round.closed_loop.qps.is_some_and(|held| held >= RATE_KEPT * asked))
        }),
        closed_loop: LevelSummary::of(clients, &loops),
        rows_per_second: Spread::of(complete.iter().map(|round| round.rows_per_second)),
        decomposition: Decomposition::of(&delta, events),
        io_wait_share: Spread::of(complete.iter().map(|round| round.threads.io_wait_share())),
        cpu_used_seconds: complete.iter().map(|round| round.cpu.used_seconds).sum(),
        cpu_offered_seconds: complete.iter().map(|round| round.cpu.offered_seconds).sum(),
        errors_by_code: errors,
        active_parts_max: complete.iter().filter_map(|round| round.parts.active_parts_max).max(),
        by_statement: by_statement(&complete),
    }
}

/// Each statement's figures of a mix's level, in the order first seen; empty when the
/// rounds ran INSERTs alone.
fn by_statement(rounds: &[&WritesRound]) -> Vec<StatementFigures> {
    let mut names: Vec<&str> = Vec::new();
    for statement in rounds.iter().flat_map(|round| &round.closed_loop.statements) {
        if !names.contains(&statement.query.as_str()) {
            names.push(&statement.query);
        }
    }
    if names.len() < 2 {
        return Vec::new();
    }
    names
        .into_iter()
        .map(|name| {
            let completed = |round: &WritesRound| {
                statements_of(round, name).filter(|statement| statement.error.is_none()).count() as u64
            };
            let errors = |round: &WritesRound| {
                statements_of(round, name).filter(|statement| statement.error.is_some()).count() as u64
            };
            let latencies = rounds
                .iter()
                .flat_map(|round| statements_of(round, name))
                .filter(|statement| statement.error.is_none())
                .map(|statement| statement.latency_us as f64 / 1e3)
                .collect();
            StatementFigures {
                statement: name.to_string(),
                completed: rounds.iter().map(|round| completed(round)).sum(),
                errors: rounds.iter().map(|round| errors(round)).sum(),
                per_second: Spread::of(
                    rounds.iter().map(|round| {
                        round.closed_loop.wall_seconds.and_then(|wall| ratio(completed(round) as f64, wall))
                    }),
                ),
                latency: Latency::of(latencies),
            }
        })
        .collect()
}

/// A round's statements named `name`.
fn statements_of<'a>(round: &'a WritesRound, name: &'a str) -> impl Iterator<Item = &'a StatementRecord> + 'a {
    round.closed_loop.statements.iter().filter(move |statement| statement.query == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_message_gives_its_code_and_name() {
        assert_eq!(
            error_code("Code: 252. DB::Exception: Too many parts (300). Merges are slower. (TOO_MANY_PARTS)"),
            (Some(252), Some("TOO_MANY_PARTS".to_string()))
        );
        assert_eq!(
            error_code(
                "Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE) (version 26.7)"
            ),
            (Some(243), Some("NOT_ENOUGH_SPACE".to_string()))
        );
        assert_eq!(error_code("connection reset"), (None, None));
        assert_eq!(error_code("Code: x (ab)"), (None, None));
    }

    fn with_variants(variants: &[&str]) -> WritesBenchmark {
        WritesBenchmark {
            levels: Levels::parse("1"),
            batch_rows: 1,
            durability: Durability::None,
            duration: None,
            iterations: None,
            rounds: 1,
            check_statements: 0,
            stop_on_error: false,
            ab: Some(AbRun {
                variants: variants.iter().map(|text| crate::ab_variants::AbVariant::parse(text).unwrap()).collect(),
                seed: 1,
                rounds: 1,
            }),
            rate: None,
            mix: "inserts=1".to_string(),
            pack: None,
        }
    }

    #[test]
    fn a_variant_names_its_durability_and_the_inserts_settings() {
        let benchmark = with_variants(&["durable:durability=fsync,max_insert_threads=2", "relaxed:"]);
        let turns = benchmark.turns().unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!((turns[0].variant.as_deref(), turns[0].durability), (Some("durable"), Durability::Fsync));
        // The durability is the table's, not a setting sent with the INSERT.
        assert_eq!(turns[0].settings, Settings::new().with("max_insert_threads", "2"));
        // Without the key: --durability, no setting.
        assert_eq!((turns[1].durability, turns[1].settings.is_empty()), (Durability::None, true));
        // Both durabilities' files, whichever runs, so both are guarded and copied.
        assert_eq!(
            benchmark.sql_files(),
            ["logs/schema.sql", "writes/durability_none.sql", "writes/durability_fsync.sql", "writes/insert.sql"]
        );
        assert_eq!(benchmark.run_label(), "writes-1-ab");
        let error = |variants: &[&str]| with_variants(variants).check().unwrap_err().to_string();
        assert_eq!(
            error(&["a:durability=sometimes", "b:"]),
            "--variant a:durability=sometimes: durability=sometimes is not a durability; write durability=none or \
             durability=fsync"
        );
        assert!(error(&["a:engine_version=26.5.3", "b:"]).contains("cannot name an engine version"));
        assert!(error(&["a:durability=fsync"]).contains("is the only variant"));
    }

    #[test]
    fn a_full_disk_stops_the_run_and_other_errors_only_when_asked() {
        let benchmark = WritesBenchmark {
            levels: Levels::parse("1"),
            batch_rows: 1,
            durability: Durability::None,
            duration: None,
            iterations: None,
            rounds: 1,
            check_statements: 0,
            stop_on_error: false,
            ab: None,
            rate: None,
            mix: "inserts=1".to_string(),
            pack: None,
        };
        let errors = |name: &str, first: &str| CodeErrors {
            code: Some(1),
            name: Some(name.to_string()),
            count: 3,
            first: first.to_string(),
        };
        let mut round = example::examples(1.0, 1).remove(0).benchmark.rounds.remove(0);
        round.errors_by_code = vec![errors("TOO_MANY_PARTS", "Code: 252. too many parts")];
        assert_eq!(benchmark.stop_after(&round), None);
        let stopping = WritesBenchmark { stop_on_error: true, ..benchmark.clone() };
        assert!(stopping.stop_after(&round).unwrap().starts_with("--stop-on-error: "));
        round.errors_by_code.push(errors("NOT_ENOUGH_SPACE", "Code: 243. not enough space"));
        assert!(benchmark.stop_after(&round).unwrap().starts_with("the disk is full: 3 INSERTs failed"));
        round.errors_by_code.clear();
        assert_eq!(stopping.stop_after(&round), None);
    }
}

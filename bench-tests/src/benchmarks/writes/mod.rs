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
//!    looks at the engine's threads (a server's thread gauges) and the table's parts
//!    ([`Target::observe`]), and the engine's counters are read before and after, and on a
//!    server the INSERTs' own records after (`server.rs`). Each level is recorded and the
//!    bundle saved as it ends, so a stop keeps the levels done.

mod compare;
mod decomposition;
mod example;
mod flags;
mod level;
mod mix;
mod report;
mod results;
mod server;
mod summary;
mod table;
mod variants;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};

pub use self::compare::{WritesComparison, WritesLevelComparison};
use self::decomposition::EVENTS;
pub use self::decomposition::{Counted, Decomposition, EventsDelta};
pub use self::flags::WritesFlags;
pub use self::mix::{Mix, MixStatement};
pub use self::results::{
    CodeErrors, CpuUse, Durability, INSERT, PartsSampled, RATE_KEPT, StatementFigures, ThreadsSampled, WritesBundle,
    WritesLevel, WritesQueryRuns, WritesResults, WritesRound, WritesVariant, WritesWorkload,
};
pub use self::server::GaugeMeans;
use self::summary::level_summary;
pub use self::table::{INSERT_FILE, InlineInsert, PACK_INSERT_FILE, PackTable, SCHEMA_FILE, WritesTable};
pub use self::variants::DURABILITY_KEY;
use super::{Benchmark, GuardedSql, Run};
use crate::ab_variants::{AbRun, check_variants};
use crate::closed_loop::{CHECK_BLOCKS, Levels, NO_RUNNER_CHECK_IN_CLUSTER, check_generator_on, runner_check};
use crate::compare::{BundleAt, CompareOptions, Comparison};
use crate::dataset::{BytesPerRow, DiskEstimate, UNMEASURED_BYTES_PER_ROW, check_row_bound};
use crate::fixtures::{Fixture, Params, Statement};
use crate::interrupt::Interrupted;
use crate::levels::LevelBound;
use crate::load_generator::{LoadFlags, LoadFrom};
use crate::measure::engine_events;
use crate::report::Section;
use crate::results::RunBundle;
use crate::settings::Settings;
use crate::sql::statement_line;
use crate::stats::{EngineEvents, StatsSource};
use crate::targets::{Concurrency, LoopBound};
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
/// INSERTs per block of the runner check: 32 blocks of 50, 800 a side, about 25 s at 15 ms
/// an INSERT. Fewer left the ratio within noise of the goal: an INSERT's time varies by a
/// few per cent from block to block (merges run beside it), while the runner's own cost is
/// about 15 µs of it.
pub const CHECK_BLOCK_STATEMENTS: u64 = 50;
/// What the runner's rate of INSERTs should reach against the tight loop's.
pub const CHECK_GOAL: f64 = 0.95;
/// The format the statements' results come back in.
pub(super) const FORMAT: &str = "TabSeparated";

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
    /// Where the clients run (by default in the cluster on a target that can run them
    /// there, here otherwise), and on which node.
    pub load: LoadFlags,
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
    /// `--async-insert`: the INSERT's rows inline, with asynchronous insert settings.
    pub async_insert: bool,
    /// The INSERT with its rows inline, made in the prepare phase when `async_insert`.
    pub inline: std::sync::OnceLock<InlineInsert>,
}

/// The most rows a batch sent inline may hold: its text (about 250 bytes a row of the
/// logs table) is in memory once and sent by every INSERT.
pub const MAX_INLINE_ROWS: u64 = 100_000;
/// A batch from which the prepare phase says how much each INSERT writes.
const LARGE_BATCH_ROWS: u64 = 10_000_000;
/// The engine's count of INSERTs it queued as asynchronous ones.
const ASYNC_INSERTS: &str = "AsyncInsertQuery";

/// Why this machine's kernel does not account tasks' block I/O delays, which the engine's
/// `OSIOWaitMicroseconds` reads, when it does not (`kernel.task_delayacct = 0`, the default
/// of recent kernels); `None` when it does, or when that cannot be read.
fn delay_accounting_off() -> Option<String> {
    let setting = std::fs::read_to_string("/proc/sys/kernel/task_delayacct").ok()?;
    (setting.trim() == "0").then(|| {
        "the kernel's delay accounting is off (sysctl kernel.task_delayacct = 0), so the counter never moves; \
         turn it on with sysctl -w kernel.task_delayacct=1 to have it"
            .to_string()
    })
}

/// The seed of each client's order of a mix's statements: fixed, so that every run of a
/// mix sends the same sequences.
pub(super) const MIX_SEED: u64 = 1;
/// The fixture that readies the table for lightweight UPDATEs.
const MIX_TABLE_FILE: &str = "writes/mix_table.sql";

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
        self.load.check()?;
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
        let mix = self.mix()?;
        if mix.inserts == 0 {
            bail!(
                "--mix {mix}: the mix's UPDATEs, DELETEs and reads find the rows its INSERTs write; give inserts a share \
                 above 0 (e.g. --mix inserts=8,{mix})"
            );
        }
        if let (Some(rate), LoopBound::Duration(duration)) = (self.rate, self.bound())
            && rate * duration.as_secs_f64() < 1.0
        {
            bail!(
                "--rate {rate} schedules no INSERT after the first in a level of {} s: give at least {} INSERTs a \
                 second, or a longer --duration",
                duration.as_secs_f64(),
                1.0 / duration.as_secs_f64()
            );
        }
        if self.async_insert && self.batch_rows > MAX_INLINE_ROWS {
            bail!(
                "--async-insert with --batch-rows {}: a batch sent inline is held as text and sent by every INSERT; \
                 give at most {MAX_INLINE_ROWS} rows",
                self.batch_rows
            );
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

    /// The first INSERTs must fit ([`WritesBenchmark::first_inserts`]). No `disk_estimate`:
    /// what a level writes depends on the rate it reaches, unknown before it runs (a
    /// storage profile's volume then takes a share of the free space).
    fn check_storage(&self, folder: &std::path::Path) -> Result<()> {
        self.first_inserts()?.check_fits(folder)
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
        for (statement, sql) in self.mix_statements(table.insert.clone())? {
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
    /// The clients in a cluster on a target in none, or there with what only this tool's
    /// own loop does: the generator keeps no schedule of arrivals (`--rate`), and sends a
    /// statement's text alone (`--async-insert`'s rows inline).
    fn check_target_kind(&self, kind: crate::target_info::TargetKind) -> Result<()> {
        let in_cluster_load = crate::targets::spec(kind).capabilities.in_cluster_load;
        self.load.check_target(in_cluster_load, &kind.to_string())?;
        if self.load.load_from(in_cluster_load) == LoadFrom::Cluster {
            if self.rate.is_some() {
                bail!(
                    "--rate: on target {kind} the clients are clickhouse-benchmark in the cluster, which keeps no \
                     rate of arrivals; give --load-from local to run the open loop here (its figures then include \
                     the port-forward)"
                );
            }
            if self.async_insert {
                bail!(
                    "--async-insert: on target {kind} the clients are clickhouse-benchmark in the cluster, and the \
                     INSERT's rows inline are this tool's own loop's; give --load-from local (its figures then \
                     include the port-forward)"
                );
            }
        }
        Ok(())
    }

    fn check_target(&self, target: &mut crate::targets::Target) -> Result<()> {
        self.check_target_kind(target.info().kind)?;
        check_generator_on(&self.load, target)?;
        let table = self.table()?;
        if self.batch_rows >= LARGE_BATCH_ROWS {
            crate::say!("chbench: trying the INSERT once in each configuration{}", self.large_batch_note());
        }
        table.check_on(target, |target| self.try_inserts(target, &table))?;
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
                // Known once the target is: see `prepare`.
                load_from: self.load.load_from.unwrap_or(LoadFrom::Local),
                client_placement: None,
                mix: self.mix().unwrap_or_default(),
                async_insert: self.async_insert,
            },
            engine_events: EngineEvents::Unknown { reason: "not read yet".to_string() },
            statement_records: StatsSource::ResultCounters,
            runner_check: None,
            os_io_wait_unknown: None,
            rounds: Vec::new(),
            levels: Vec::new(),
            queries: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// `writes-1K-none`, then what sets the run apart from the default, so that bundles in
    /// one results folder tell apart: `-ab`, the pack, `-mix`, `-async`, `-rate100`.
    fn run_label(&self) -> String {
        let configuration = if self.ab.is_some() { "ab" } else { self.durability.name() };
        let mut label = format!("writes-{}-{configuration}", crate::units::short_count(self.batch_rows));
        if let Some(pack) = &self.pack {
            label.push_str(&format!("-{}", pack.pack));
        }
        if self.mix().is_ok_and(|mix| !mix.is_inserts_only()) {
            label.push_str("-mix");
        }
        if self.async_insert {
            label.push_str("-async");
        }
        if let Some(rate) = self.rate {
            // A run id holds letters, digits, `_` and `-`: the rate's whole part.
            label.push_str(&format!("-rate{}", rate.round() as u64));
        }
        label
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
        run.drop_database()
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
            markdown: report::markdown(&bundle.benchmark, &bundle.target, bundle.ab_run.as_ref()),
            charts: report::charts(&bundle.benchmark)?,
        })
    }

    /// The rounds of each level: what its figures are the medians of.
    fn raw_samples(bundle: &RunBundle<WritesResults>) -> Vec<crate::report::html::SampleTable> {
        super::raw_samples::of_levels(bundle.benchmark.rounds.iter().map(|round| super::raw_samples::ReportedRound {
            variant: round.variant.as_deref(),
            round: &round.closed_loop,
            // Rows written, as the writes report gives them, not the loop's rows read.
            rows_per_second: round.rows_per_second,
        }))
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
    /// The first INSERT of every client of the largest level, which must fit at once: rows
    /// that could not be written even once are refused before anything runs.
    fn first_inserts(&self) -> Result<DiskEstimate> {
        let most = self.levels.list()?.into_iter().max().unwrap_or(1);
        let rows = self.batch_rows.saturating_mul(u64::from(most));
        let per_row = BytesPerRow {
            bytes: UNMEASURED_BYTES_PER_ROW,
            basis: format!(
                "the first INSERT of {} at once, at the largest figure measured for any dataset of this project",
                plural(most, "client")
            ),
        };
        let what = format!("--batch-rows {} at {}", self.batch_rows, plural(most, "client"));
        Ok(DiskEstimate { what, rows, per_row })
    }

    fn bound(&self) -> LoopBound {
        match (self.iterations, self.duration) {
            (Some(statements), _) => LoopBound::Statements(statements),
            (None, duration) => LoopBound::Duration(duration.unwrap_or(DEFAULT_DURATION)),
        }
    }

    /// The INSERT every client sends.
    fn insert(&self) -> Result<Statement> {
        Ok(self.table()?.insert)
    }

    /// Sends the INSERT once in each configuration on `table` (made in a scratch database),
    /// so that a setting the engine refuses is one line before the bundle, not every INSERT
    /// of every level failing; and with `--async-insert`, refuses an engine that runs the
    /// INSERT at once (the embedded engine has no queue for asynchronous inserts), which
    /// would otherwise measure synchronous INSERTs under the asynchronous name.
    fn try_inserts(&self, target: &mut crate::targets::Target, table: &WritesTable) -> Result<()> {
        let insert = match self.async_insert {
            true => table.inline_insert(target)?.statement,
            false => table.insert.clone(),
        };
        for turn in self.turns()? {
            for statement in Fixture::load(turn.durability.fixture())?.render(&table.params())? {
                target.execute(&statement).with_context(|| statement.location())?;
            }
            let asynchronous = turn.settings.get("async_insert") == Some("1");
            let before = asynchronous.then(|| target.read_events()).transpose()?;
            target.run(&insert, &turn.settings, FORMAT).with_context(|| {
                format!("{}the INSERT failed with the run's settings ({})", turn.prefix(), insert.location())
            })?;
            if let Some(before) = before {
                let after = target.read_events()?;
                let counted = |events: &crate::targets::EventsSnapshot| events.values.get(ASYNC_INSERTS).copied();
                if counted(&after).unwrap_or(0) <= counted(&before).unwrap_or(0) {
                    bail!(
                        "{}--async-insert: ClickHouse {} on target {} ran the INSERT at once ({ASYNC_INSERTS} did not \
                         move): it has no queue for asynchronous inserts; run on a server target (--target url, \
                         container or eks), or drop --async-insert",
                        turn.prefix(),
                        target.info().engine_version,
                        target.info().kind
                    );
                }
            }
        }
        Ok(())
    }

    /// What a large batch's INSERT writes, said before one runs, so that a quiet terminal
    /// is not taken for a hang; empty for a batch below [`LARGE_BATCH_ROWS`].
    fn large_batch_note(&self) -> String {
        if self.batch_rows < LARGE_BATCH_ROWS {
            return String::new();
        }
        let bytes = self.batch_rows.saturating_mul(UNMEASURED_BYTES_PER_ROW);
        format!(
            " (an INSERT of {} rows writes up to about {}: minutes each)",
            number(Some(self.batch_rows as f64), 0),
            crate::units::human_bytes(bytes)
        )
    }

    /// The INSERT as the clients send it: with its rows inline under `--async-insert` (made
    /// in the prepare phase), else the table's.
    fn sent_insert(&self) -> Result<Statement> {
        match (self.async_insert, self.inline.get()) {
            (false, _) => self.insert(),
            (true, Some(inline)) => Ok(inline.statement.clone()),
            (true, None) => bail!("the INSERT with its rows inline was not made: the prepare phase did not run"),
        }
    }

    /// The settings every statement of the run's levels takes: asynchronous inserts' under
    /// `--async-insert`, none otherwise (an A/B variant's go on top).
    fn run_settings(&self) -> Settings {
        match self.async_insert {
            true => Settings::new().with("async_insert", 1).with("wait_for_async_insert", 1),
            false => Settings::new(),
        }
    }

    /// The table the run fills, and its INSERT.
    fn table(&self) -> Result<WritesTable> {
        WritesTable::load(self.pack.as_ref(), self.batch_rows)
    }

    fn mix(&self) -> Result<Mix> {
        Mix::parse(&self.mix)
    }

    /// Each statement of the mix with its SQL, in [`MixStatement::ALL`]'s order, the INSERT
    /// as `insert`.
    fn mix_statements(&self, insert: Statement) -> Result<Vec<(MixStatement, Statement)>> {
        self.mix()?
            .statements()
            .into_iter()
            .map(|statement| {
                let sql = match statement {
                    MixStatement::Insert => insert.clone(),
                    other => Fixture::load(other.fixture())?.render_one(&Params::new())?,
                };
                Ok((statement, sql))
            })
            .collect()
    }

    fn prepare(&self, run: &mut WritesRun<'_>) -> Result<()> {
        let database = run.database();
        let table = self.table()?;
        run.progress.start(
            &format!("prepare: table {} in {database}, each statement once{}", table.name, self.large_batch_note()),
            None,
        );
        run.target.use_fresh_database(&database)?;
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
        if self.async_insert {
            let inline = table.inline_insert(run.target)?;
            run.results().workload.statement = inline.sent_as.clone();
            // Set once: a run prepares once.
            let _ = self.inline.set(inline);
        }
        let mut warm_ups = vec![(MixStatement::Insert, self.sent_insert()?)];
        warm_ups.extend(
            self.mix_statements(table.insert.clone())?
                .into_iter()
                .filter(|(statement, _)| *statement != MixStatement::Insert),
        );
        for turn in self.turns()? {
            Self::apply_durability(run, &table, turn.durability)?;
            for (statement, sql) in &warm_ups {
                crate::interrupt::check()?;
                run.target.run(sql, &turn.settings, FORMAT).with_context(|| {
                    format!("{}the warm-up {} failed ({})", turn.prefix(), statement.name(), sql.location())
                })?;
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
        if run.target.capabilities().engine_in_process
            && let Some(why) = delay_accounting_off()
        {
            run.results()
                .notes
                .push(format!("the engine's count of I/O wait (OSIOWaitMicroseconds) is unknown: {why}"));
            run.results().os_io_wait_unknown = Some(why);
        }
        if load_from == LoadFrom::Cluster {
            let note = "the clients run in the cluster: the engine's counters, thread gauges and CPU over a level \
                        are unknown, since this process sees the Job's start and end around the level"
                .to_string();
            run.results().notes.push(note);
        } else if !run.target.capabilities().engine_in_process {
            let note = "the engine's threads are not in this process: in place of their states, its own thread \
                        gauges (system.metrics) are sampled"
                .to_string();
            run.results().notes.push(note);
        }
        run.progress.finish(&format!("prepare: table {} ready", table.name));
        Ok(())
    }

    fn runner_check(&self, run: &mut WritesRun<'_>) -> Result<()> {
        let statements = self.check_statements;
        if statements == 0 {
            return Ok(());
        }
        if run.results().workload.load_from == LoadFrom::Cluster {
            run.progress.note(NO_RUNNER_CHECK_IN_CLUSTER);
            run.results().notes.push(NO_RUNNER_CHECK_IN_CLUSTER.to_string());
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
        let statements = self.mix_statements(self.sent_insert()?)?;
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
                    // A stopped level counts in no summary: its statements stay in its round's
                    // record, not as samples a comparison would take.
                    if !interrupted {
                        self.record_samples(
                            run,
                            &run_id,
                            &statements,
                            (turn_index, turn),
                            clients,
                            &level,
                            &mut runs_of,
                        )?;
                    }
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
                    let os_io_wait_unknown = run.results().os_io_wait_unknown.clone();
                    let rounds = &run.results().rounds;
                    let summaries: Vec<WritesLevel> = turns
                        .iter()
                        .flat_map(|turn| levels.iter().map(move |&clients| (turn, clients)))
                        .map(|(turn, clients)| {
                            level_summary(turn.variant.as_deref(), clients, self.rate, rounds, &events)
                        })
                        .map(|mut level| {
                            if os_io_wait_unknown.is_some() {
                                level.decomposition.os_io_wait_us = None;
                            }
                            level
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
                "the disk is full: {} failed at {} (first: {}); the levels done are kept, free space and run again",
                plural(full.count, "INSERT"),
                plural(round.closed_loop.clients, "client"),
                full.first
            ));
        }
        self.stop_on_error.then(|| {
            let codes: Vec<String> = round
                .errors_by_code
                .iter()
                .map(|errors| match (&errors.name, errors.code) {
                    (Some(name), Some(code)) => format!("{} {name} ({code})", errors.count),
                    (None, Some(code)) => format!("{} of code {code}", errors.count),
                    _ => format!("{} without a code", errors.count),
                })
                .collect();
            format!(
                "--stop-on-error: {} failed at {}: {} (first: {}); the levels done are kept",
                plural(round.closed_loop.errors, "INSERT"),
                plural(round.closed_loop.clients, "client"),
                codes.join(", "),
                first.first
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::flags::benchmark_of;
    use super::*;

    #[test]
    fn a_runs_label_says_what_sets_it_apart_from_the_default() {
        assert_eq!(benchmark_of(&["--durability", "fsync"]).run_label(), "writes-1K-fsync");
        let every = benchmark_of(&[
            "--durability",
            "fsync",
            "--rate",
            "99.6",
            "--mix",
            "inserts=4,reads=1",
            "--pack",
            "tenants",
            "--async-insert",
        ]);
        assert_eq!(every.run_label(), "writes-1K-fsync-tenants-mix-async-rate100");
    }

    #[test]
    fn a_full_disk_stops_the_run_and_other_errors_only_when_asked() {
        let benchmark = benchmark_of(&[]);
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

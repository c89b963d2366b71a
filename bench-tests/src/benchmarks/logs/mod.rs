//! The `logs` benchmark: the measurement of the ClickHouse on EKS field benchmark
//! (docs/sources.md) on any target, one method per phase:
//!
//! 1. [`LogsPhase::Ingest`]: the generator's `INSERT ... SELECT` on a bounded sample, after
//!    a warm-up, straight on the engine and through the harness in turn (R H H R H R R H,
//!    so that neither runs first or cold), into scratch tables dropped after: the raw
//!    figure and the harness's ratio to it with its spread. Then the full ingest, once,
//!    through the harness: the figure reported. Each is recorded as soon as it ran.
//! 2. [`LogsPhase::Storage`]: bytes by column, as ingested: LZ4 (the default), then the ZSTD(3)
//!    copy and the time its re-insert took. Background merges pause meanwhile, and the
//!    copy is dropped once measured, to bound disk use (`fixtures/logs/pause_merges.sql`).
//! 3. [`LogsPhase::Queries`]: Q1-Q5, each with caches dropped, one direct-I/O run, then N warm
//!    runs. Every sample is journaled as it is measured, with its time breakdown.
//! 4. [`LogsPhase::BloomFilter`]: add, materialize (waiting for the mutation), its size, and
//!    Q5 again.
//! 5. [`LogsPhase::Cost`]: the cost model, from the measured bytes per row.
//!
//! An A/B run (`--variant`, docs/ab-runs.md) shares phases 1, 2, 4 and 5; its settings are
//! checked on the engine before the ingest. Each query pass of phases 3 and 4 drops the
//! caches once, runs one warm-up per variant, then `rounds` rounds, every variant once a
//! round in an order shuffled from the recorded seed, each variant into query runs of its
//! own. It has no direct-I/O runs: one cold sample per variant is no comparison.

mod ab;
pub mod compare;
pub mod cost;
pub mod dataset;
mod example;
mod flags;
pub mod report;
mod results;
mod summary;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use self::ab::{check_variant_settings, variant_names};
pub use self::compare::LogsComparison;
use self::cost::{CostFlags, CostModel};
use self::dataset::step_ms;
pub use self::flags::LogsFlags;
pub use self::results::{
    BloomFilter, CalibrationRun, HarnessIngest, Ingest, IngestCalibration, IngestPath, IngestTiming, LogsBundle,
    LogsDataset, LogsQueryRuns, LogsResults, QueryVariant, RunTime,
};
use self::summary::{bloom_summary, ingest_summary, queries_summary, storage_summary};
use super::{Benchmark, GuardedSql, Run};
use crate::ab_variants::{AbRun, check_variants};
use crate::breakdown::TimeBreakdown;
use crate::compare::{BundleAt, CompareOptions, Comparison};
use crate::explain::explain_indexes;
use crate::fixtures::{Fixture, Params, Statement};
use crate::measure::{drop_caches, measure};
use crate::numbers::ratio;
use crate::plan::TableRead;
use crate::query_runs::{QueryRuns, Sample, SampleKind, Step};
use crate::report::Section;
use crate::results::RunBundle;
use crate::settings::Settings;
use crate::sql::one_line;
use crate::stats::StatementTag;
use crate::table_bytes::{StorageSnapshot, TableBytes};
use crate::table_parts::{ColumnSizes, column_sizes_of, parts_summary, skip_index_bytes, wait_for_mutations};
use crate::targets::Target;
use crate::units::per_second;

/// The fixture files the benchmark runs, relative to `fixtures/`; all are copied into
/// the bundle.
pub const SQL_FILES: [&str; 12] = [
    "logs/schema.sql",
    "logs/generator.sql",
    "logs/pause_merges.sql",
    "logs/zstd_schema.sql",
    "logs/zstd_insert.sql",
    "logs/resume_merges.sql",
    "logs/bloom_filter.sql",
    "logs/queries/q1.sql",
    "logs/queries/q2.sql",
    "logs/queries/q3.sql",
    "logs/queries/q4.sql",
    "logs/queries/q5.sql",
];
pub const QUERIES: [&str; 5] = ["q1", "q2", "q3", "q4", "q5"];
const MATERIALIZE_TIMEOUT: Duration = Duration::from_secs(3600);
/// The calibration's order: each pair's first and second swap in the second half, so
/// that whatever favours a place in the order (a warmer engine, merges of the previous
/// table still running) falls on both.
const CALIBRATION_ORDER: [IngestPath; 8] = {
    use IngestPath::{Harness as H, RawEngine as R};
    [R, H, H, R, H, R, R, H]
};

/// Rows of each calibration statement: a hundredth of the run's, within 200 K and 1 M,
/// and at most a quarter of the run's. Nine statements (a warm-up and eight counted) so
/// cost at most 9 % of the ingest's rows at 100 M rows, whose ingest is about a quarter
/// of the run: about 2 % of its wall time.
pub fn calibration_rows(rows: u64) -> u64 {
    (rows / 100).clamp(200_000, 1_000_000).min(rows / 4).max(1)
}

/// The benchmark's phases, in the order it runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogsPhase {
    /// Loading the dataset.
    Ingest,
    /// Bytes per table and column, under each codec.
    Storage,
    /// The measured queries.
    Queries,
    /// Adding a skip index and running the query it serves again.
    BloomFilter,
    /// The cost arithmetic.
    Cost,
}

impl super::Phase for LogsPhase {
    const ALL: &'static [LogsPhase] =
        &[LogsPhase::Ingest, LogsPhase::Storage, LogsPhase::Queries, LogsPhase::BloomFilter, LogsPhase::Cost];

    fn name(self) -> &'static str {
        match self {
            LogsPhase::Ingest => "ingest",
            LogsPhase::Storage => "storage",
            LogsPhase::Queries => "queries",
            LogsPhase::BloomFilter => "bloom_filter",
            LogsPhase::Cost => "cost",
        }
    }

    fn label(self) -> &'static str {
        match self {
            LogsPhase::BloomFilter => "bloom filter",
            phase => phase.name(),
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct LogsBenchmark {
    pub rows: u64,
    /// Warm runs per query; in an A/B run, its rounds.
    pub warm_runs: u32,
    /// The variants an A/B run measures in turns; `None` for a run of one configuration.
    pub ab: Option<AbRun>,
    /// A `--seed` given without `--variant`, which [`Benchmark::check`] refuses.
    pub seed_without_variants: Option<u64>,
    pub cost: CostFlags,
    /// The volume's read limit when known (e.g. 125 MiB/s for a default gp3 volume).
    pub volume_limit_mib_per_s: Option<f64>,
    /// `--profile`.
    pub profile: Option<crate::profiles::ProfileChoice>,
}

impl Benchmark for LogsBenchmark {
    type Results = LogsResults;
    type Phase = LogsPhase;
    type Flags = LogsFlags;
    type ComparisonSections = LogsComparison;
    const ABOUT: &'static str = "The ClickHouse on EKS field benchmark's measurement (the default kind): ingest, \
                                 storage by column, Q1-Q5 cold and warm, a bloom filter, cost";

    fn from_flags(flags: LogsFlags) -> LogsBenchmark {
        flags.benchmark()
    }

    fn check(&self) -> Result<()> {
        if let (Some(choice), Some(ab)) = (self.profile, &self.ab) {
            for variant in &ab.variants {
                let given_by = format!("--variant {}", variant.name);
                crate::profiling::check_settings(choice, &variant.settings, &given_by)?;
            }
        }
        if let Some(seed) = self.seed_without_variants {
            bail!("--seed {seed} orders an A/B run's rounds: give two or more --variant flags too, or drop --seed");
        }
        if let Some(ab) = &self.ab {
            check_variants(&ab.variants)?;
        }
        dataset::check_run_inputs(self.rows)?;
        self.cost.check()?;
        if let Some(limit) = self.volume_limit_mib_per_s
            && !(limit.is_finite() && limit > 0.0)
        {
            bail!("--volume-mib-per-s {limit} is not a read limit: give a finite number of MiB/s above 0");
        }
        Ok(())
    }

    fn disk_estimate(&self) -> Result<Option<crate::dataset::DiskEstimate>> {
        Ok(Some(dataset::run_disk_estimate(self.rows)))
    }

    /// An A/B run's variants on this target: a variant on another engine version needs the
    /// engine in this process (its workers copy its folder), and every setting must be one
    /// the engine takes.
    fn check_target(&self, target: &mut Target) -> Result<()> {
        let Some(ab) = &self.ab else { return Ok(()) };
        if let Some(variant) = ab.variants.iter().find(|variant| variant.engine_version.is_some())
            && !target.engine_in_process()
        {
            bail!(
                "--variant {}: a variant on another engine version runs the embedded engine in a worker process \
                 beside this one, on a copy of its folder; run it with --target embedded",
                variant.flag()
            );
        }
        check_variant_settings(ab, target)
    }

    fn sql_files(&self) -> Vec<String> {
        SQL_FILES.iter().map(|file| file.to_string()).collect()
    }

    fn guarded_sql(&self) -> Result<GuardedSql> {
        let mut sql = GuardedSql::default();
        for file in SQL_FILES {
            let statements = Fixture::load(file)?.render(&self.params())?;
            match file.starts_with("logs/queries/") {
                true => sql.queries.extend(statements),
                false => sql.dataset.extend(statements),
            }
        }
        Ok(sql)
    }

    fn new_results(&self) -> LogsResults {
        LogsResults {
            dataset: LogsDataset { rows: self.rows, step_ms: step_ms(self.rows), warm_runs: self.warm_runs },
            volume_limit_mib_per_s: self.volume_limit_mib_per_s,
            ingest: None,
            storage: Vec::new(),
            zstd_reinsert: None,
            queries: Vec::new(),
            bloom_filter: None,
            cost: None,
            run_time: None,
        }
    }

    fn ab_run(&self) -> Option<AbRun> {
        self.ab.clone()
    }

    fn profile(&self) -> Option<crate::profiles::ProfileChoice> {
        self.profile
    }

    fn run_label(&self) -> String {
        let ab = if self.ab.is_some() { "-ab" } else { "" };
        format!("logs-{}{ab}", crate::units::short_count(self.rows))
    }

    /// The run's database goes: on a shared server it would hold a copy of the dataset
    /// for nothing (the measurements are in the bundle).
    fn clean_up(&self, run: &mut LogsRun<'_>) -> Result<()> {
        run.drop_database()
    }

    fn run_phase(&self, phase: LogsPhase, run: &mut LogsRun<'_>) -> Result<()> {
        match phase {
            LogsPhase::Ingest => self.ingest(run),
            LogsPhase::Storage => self.storage(run),
            LogsPhase::Queries => self.queries(run),
            LogsPhase::BloomFilter => self.bloom_filter(run),
            LogsPhase::Cost => self.cost(run),
        }?;
        record_run_time(run);
        run.writer.save()
    }

    /// Each query's direct-I/O run on both sides: where two volumes differ.
    fn comparison_sections(
        bundles: &[BundleAt<LogsResults>],
        comparison: &Comparison,
        _options: &CompareOptions,
    ) -> Result<LogsComparison> {
        Ok(LogsComparison::of(bundles, comparison))
    }

    fn examples(value: f64, count: u64) -> Vec<RunBundle<LogsResults>> {
        vec![example::example(value, count)]
    }

    fn report(bundle: &RunBundle<LogsResults>) -> Result<Section> {
        Ok(Section {
            markdown: report::markdown(
                &bundle.benchmark,
                bundle.storage_baseline.measured(),
                bundle.target.storage.as_ref(),
            ),
            charts: report::charts(&bundle.benchmark)?,
        })
    }

    /// Every query's runs; Q5's again, from the bloom filter's table; and the ingest's:
    /// the statement through the harness, and the calibration's warm-up and runs its
    /// harness overhead comes from, linked from the ingest table's first row.
    fn raw_samples(bundle: &RunBundle<LogsResults>) -> Vec<crate::report::html::SampleTable> {
        let mut lists = super::raw_samples::of_queries(&bundle.benchmark.queries);
        // The bloom filter's table: Q5's list (its runs without and with the index) again,
        // from the table's first row.
        if bundle.benchmark.bloom_filter.is_some()
            && let Some(mut bloom) = lists.iter().find(|list| list.key == "q5").cloned()
        {
            bloom.linked_from = String::new();
            bloom.key = "warm (min)".to_string();
            bloom.title = "q5 without and with the bloom filter".to_string();
            lists.push(bloom);
        }
        let Some(ingest) = &bundle.benchmark.ingest else { return lists };
        let known = super::raw_samples::known;
        let mut rows = Vec::new();
        if let Some(harness) = &ingest.harness {
            rows.push(vec![
                "the ingest, through the harness".to_string(),
                harness.rows.to_string(),
                known(harness.timing.seconds),
                known(harness.timing.rows_per_second),
            ]);
        }
        if let Some(calibration) = &ingest.calibration {
            let sample = calibration.sample_rows.to_string();
            let warm_up = &calibration.warm_up;
            rows.push(vec![
                "calibration warm-up (not counted)".to_string(),
                sample.clone(),
                known(warm_up.seconds),
                known(warm_up.rows_per_second),
            ]);
            for (index, run) in calibration.runs.iter().enumerate() {
                rows.push(vec![
                    format!("calibration {}: {}", index + 1, run.path.label()),
                    sample.clone(),
                    known(run.timing.seconds),
                    known(run.timing.rows_per_second),
                ]);
            }
        }
        lists.push(crate::report::html::SampleTable {
            linked_from: String::new(),
            key: "seconds".to_string(),
            title: "ingest".to_string(),
            columns: ["run", "rows", "seconds", "rows/s"].map(str::to_string).to_vec(),
            rows,
        });
        lists
    }
}

/// What a phase of this benchmark works with.
type LogsRun<'a> = Run<'a, LogsResults>;

impl LogsBenchmark {
    /// `{rows}` is the fixtures' one parameter: the generator derives its timestamp step
    /// from it (the step recorded in the results is the same formula, [`step_ms`]).
    fn params(&self) -> Params {
        Params::new().with("rows", self.rows)
    }

    /// Samples per query pass: the direct-I/O run and the warm runs; in an A/B run, each
    /// variant's warm-up and rounds.
    fn samples_per_query(&self) -> u64 {
        let variants = self.ab.as_ref().map_or(1, |ab| ab.variants.len() as u64);
        variants * (1 + u64::from(self.warm_runs))
    }

    fn ingest(&self, run: &mut LogsRun<'_>) -> Result<()> {
        let params = self.params();
        run.target.use_fresh_database(&run.database())?;
        let schema = Fixture::load("logs/schema.sql")?;
        let generator = Fixture::load("logs/generator.sql")?.render_one(&params)?;
        let sample_rows = calibration_rows(self.rows);
        run.progress.start(
            &format!(
                "ingest: raw engine against the harness on {sample_rows} rows, then {} rows through the harness",
                self.rows
            ),
            Some(2 + CALIBRATION_ORDER.len() as u64),
        );
        let calibration = self.calibrate_ingest(run, &schema, sample_rows)?;
        let raw_engine = median_timing(&calibration, IngestPath::RawEngine, sample_rows);
        run.results().ingest =
            Some(Ingest { rows: self.rows, raw_engine, harness: None, calibration: Some(calibration) });
        run.writer.save()?;

        run.target.execute("DROP TABLE IF EXISTS logs SYNC")?;
        schema.apply(run.target, &params)?;
        let tag = StatementTag::new(&run.run_id(), "logs", "ingest", 1);
        let measured = measure(run.target, &generator, &tag, &Settings::new()).context("ingest failed")?;
        let seconds = measured.stats.server_duration_us as f64 / 1e6;
        let table = parts_summary(run.target, "logs")?;
        let timing = IngestTiming { seconds: Some(seconds), rows_per_second: ratio(table.rows as f64, seconds) };
        run.progress.advance(&format!("harness: {} rows/s", per_second(timing.rows_per_second)));
        let ingest = run.results().ingest.get_or_insert(Ingest {
            rows: self.rows,
            raw_engine: None,
            harness: None,
            calibration: None,
        });
        ingest.harness = Some(HarnessIngest {
            timing,
            rows: table.rows,
            partitions: table.partitions,
            active_parts: table.active_parts,
            stats: measured.stats,
        });
        let summary = ingest_summary(ingest);
        run.writer.save()?;
        run.progress.finish(&summary);
        Ok(())
    }

    /// The raw engine against the harness on `sample_rows` of the generator: a warm-up,
    /// then [`CALIBRATION_ORDER`], each into a fresh `logs` table (the full ingest makes
    /// it again). Each is timed by the engine, as the full ingest is, so the two compare
    /// like for like.
    fn calibrate_ingest(&self, run: &mut LogsRun<'_>, schema: &Fixture, sample_rows: u64) -> Result<IngestCalibration> {
        let params = Params::new().with("rows", sample_rows);
        let generator = Fixture::load("logs/generator.sql")?.render_one(&params)?;
        let mut timings = Vec::new();
        for (index, path) in std::iter::once(IngestPath::Harness).chain(CALIBRATION_ORDER).enumerate() {
            crate::interrupt::check()?;
            run.target.execute("DROP TABLE IF EXISTS logs SYNC")?;
            schema.apply(run.target, &params)?;
            let seconds = match path {
                IngestPath::RawEngine => {
                    let raw = run
                        .target
                        .run(&generator, &Settings::new(), "TabSeparated")
                        .with_context(|| format!("{}: raw engine ingest failed", generator.location()))?;
                    raw.counters.elapsed_us.map(|us| us as f64 / 1e6)
                }
                IngestPath::Harness => {
                    let tag = StatementTag::new(&run.run_id(), "logs", "ingest_calibration", index as u32);
                    let measured = measure(run.target, &generator, &tag, &Settings::new())
                        .context("ingest calibration through the harness failed")?;
                    Some(measured.stats.server_duration_us as f64 / 1e6)
                }
            };
            let timing = IngestTiming {
                seconds,
                rows_per_second: seconds.and_then(|seconds| ratio(sample_rows as f64, seconds)),
            };
            let label = if index == 0 { "warm-up" } else { path.label() };
            run.progress.advance(&format!("{label}: {} rows/s", per_second(timing.rows_per_second)));
            timings.push(CalibrationRun { path, timing });
        }
        let warm_up = timings.remove(0).timing;
        // Each neighbouring pair is one raw and one harness run, in either order.
        let harness_over_raw = timings
            .chunks(2)
            .map(|pair| {
                let rate = |path| pair.iter().find(|run| run.path == path)?.timing.rows_per_second;
                ratio(rate(IngestPath::Harness)?, rate(IngestPath::RawEngine)?)
            })
            .collect();
        Ok(IngestCalibration { sample_rows, warm_up, runs: timings, harness_over_raw })
    }

    fn storage(&self, run: &mut LogsRun<'_>) -> Result<()> {
        let params = self.params();
        run.progress.start("storage by column: LZ4 as ingested, then the ZSTD(3) copy", Some(2));
        let lz4 = storage_snapshot(run.target, "logs", "LZ4 (default)", "as ingested")?;
        run.results().storage.push(lz4.clone());
        run.writer.save()?;
        run.progress.advance("LZ4");
        Fixture::load("logs/zstd_schema.sql")?.apply(run.target, &params)?;
        Fixture::load("logs/pause_merges.sql")?.apply(run.target, &params)?;
        let copied = self.zstd_copy(run);
        // Merges resume whatever happened to the copy.
        let resumed = Fixture::load("logs/resume_merges.sql").and_then(|resume| resume.apply(run.target, &params));
        let zstd = copied?;
        resumed?;
        run.progress.advance("ZSTD(3)");
        let notes: Vec<String> = [&lz4, &zstd]
            .iter()
            .filter_map(|snapshot| {
                snapshot.columns_note.as_ref().map(|note| format!("{} `{}`: {note}", snapshot.codec, snapshot.table))
            })
            .collect();
        run.progress.finish(&storage_summary(&lz4, &zstd));
        for note in notes {
            run.progress.warn(&note);
        }
        Ok(())
    }

    /// Writes the ZSTD(3) copy (merges paused), measures it, records it and drops it.
    fn zstd_copy(&self, run: &mut LogsRun<'_>) -> Result<StorageSnapshot> {
        let reinsert = Fixture::load("logs/zstd_insert.sql")?.render_one(&self.params())?;
        let tag = StatementTag::new(&run.run_id(), "logs", "zstd", 1);
        let reinsert = measure(run.target, &reinsert, &tag, &Settings::new()).context("the ZSTD(3) copy failed")?;
        let zstd = storage_snapshot(run.target, "logs_zstd", "ZSTD(3)", "as inserted, merges paused")?;
        let logs = run.results();
        logs.zstd_reinsert =
            Some(Step { seconds: Some(reinsert.stats.server_duration_us as f64 / 1e6), stats: Some(reinsert.stats) });
        logs.storage.push(zstd.clone());
        run.writer.save()?;
        // Nothing after this reads the copy; dropping it keeps a 100 M-row run within 20 GB.
        run.target.execute("DROP TABLE logs_zstd SYNC")?;
        Ok(zstd)
    }

    fn queries(&self, run: &mut LogsRun<'_>) -> Result<()> {
        let step = match &self.ab {
            Some(ab) => format!(
                "Q1-Q5, A/B: caches dropped, a warm-up per variant, then {} rounds of {} in shuffled turns",
                ab.rounds,
                variant_names(ab)
            ),
            None => "Q1-Q5: caches dropped, one direct-I/O run, then warm runs".to_string(),
        };
        run.progress.start(&step, Some(QUERIES.len() as u64 * self.samples_per_query()));
        for (pass, query) in QUERIES.into_iter().enumerate() {
            let variant = if query == "q5" { QueryVariant::WithoutIndex } else { QueryVariant::Default };
            self.query_pass(run, pass as u64, query, variant)?;
        }
        run.progress.finish(&queries_summary(&run.results().queries));
        Ok(())
    }

    /// One query in one form: [`LogsBenchmark::query_runs`], or in an A/B run
    /// [`LogsBenchmark::ab_query_runs`] (`pass`: the query pass's index in the run, whose
    /// shuffle it takes).
    fn query_pass(&self, run: &mut LogsRun<'_>, pass: u64, query: &str, variant: QueryVariant) -> Result<()> {
        match &self.ab {
            Some(ab) => self.ab_query_runs(run, ab, pass, query, variant),
            None => self.query_runs(run, query, variant),
        }
    }

    fn bloom_filter(&self, run: &mut LogsRun<'_>) -> Result<()> {
        run.progress.start("bloom filter on trace_id: add, materialize, Q5 again", Some(2 + self.samples_per_query()));
        let bloom = Fixture::load("logs/bloom_filter.sql")?.render(&self.params())?;
        let mut steps = Vec::new();
        for (index, statement) in bloom.iter().enumerate() {
            let started = Instant::now();
            let tag = StatementTag::new(&run.run_id(), "logs", "bloom_filter", index as u32 + 1);
            // MATERIALIZE INDEX starts a mutation and returns; `mutations_sync` makes the
            // statement wait for it, so its work is in the statement's engine time rather
            // than in polling around it. The wait after only checks nothing is left.
            let settings = Settings::new().with("mutations_sync", "2");
            let measured =
                measure(run.target, statement, &tag, &settings).context("the bloom filter statements failed")?;
            wait_for_mutations(run.target, MATERIALIZE_TIMEOUT)?;
            steps.push(Step { seconds: Some(started.elapsed().as_secs_f64()), stats: Some(measured.stats) });
            run.progress.advance(&format!("{} done", one_line(statement)));
        }
        let index = skip_index_bytes(run.target, "logs", "trace_bf")
            .context("the trace_bf index is missing after MATERIALIZE INDEX")?;
        let mut steps = steps.into_iter();
        let (add_index, materialize) = (steps.next().context("no ADD INDEX")?, steps.next().context("no MATERIALIZE")?);
        // The table as it is now, merges having run since the storage phase.
        let table_compressed_bytes = parts_summary(run.target, "logs")?.data_compressed_bytes;
        let logs = run.results();
        logs.bloom_filter = Some(BloomFilter {
            add_index,
            materialize,
            index_compressed_bytes: index.data_compressed_bytes,
            index_uncompressed_bytes: index.data_uncompressed_bytes,
            table_compressed_bytes,
        });
        run.writer.save()?;
        // After Q1-Q5's passes: its shuffle is the run's sixth.
        self.query_pass(run, QUERIES.len() as u64, "q5", QueryVariant::BloomFilter)?;
        run.writer.save()?;
        run.progress.finish(&bloom_summary(run.results()));
        Ok(())
    }

    fn cost(&self, run: &mut LogsRun<'_>) -> Result<()> {
        let logs = run.results();
        let used_bytes =
            logs.storage.first().map(StorageSnapshot::compressed_bytes).context("no storage was measured")?;
        logs.cost = Some(CostModel::new(self.cost.inputs(), used_bytes, self.rows));
        run.writer.save()
    }

    /// Drops caches, runs `query` once with direct I/O and `warm_runs` times warm; each
    /// sample goes to the bundle's journal as soon as it is measured.
    fn query_runs(&self, run: &mut LogsRun<'_>, query: &str, variant: QueryVariant) -> Result<()> {
        let sql_file = format!("logs/queries/{query}.sql");
        let sql = Fixture::load(&sql_file)?.render_one(&Params::new())?;
        let scenario = scenario_of(query, variant);
        // The plan's pruning, once: what an engine upgrade may change beside the times.
        let plan = plan_under(run.target, &sql, &Settings::new())?;
        run.writer.start_query(QueryRuns {
            query: query.to_string(),
            variant,
            ab_variant: None,
            plan,
            sql_file: sql_file.clone(),
            answer: String::new(),
            samples: Vec::new(),
        })?;
        drop_caches(run.target)?;
        for attempt in 0..=self.warm_runs {
            let (kind, settings) = if attempt == 0 {
                (SampleKind::DirectIo, Settings::direct_io())
            } else {
                (SampleKind::Warm, crate::profiling::profiled(&Settings::new()))
            };
            let tag = StatementTag::new(&run.run_id(), "logs", &scenario, attempt);
            // An error names the query's file and line.
            let measured = measure(run.target, &sql, &tag, &settings)?;
            let answer = (attempt == 0).then(|| measured.body.chars().take(2000).collect());
            run.progress.advance(&format!(
                "{query} {} {}: {:.1} ms, {} rows read",
                variant.label(),
                if attempt == 0 { "direct I/O".to_string() } else { format!("warm {attempt}") },
                measured.stats.server_ms(),
                measured.stats.read_rows
            ));
            let breakdown = TimeBreakdown::of_record(&measured.stats);
            run.writer.record_sample(
                Sample {
                    kind,
                    attempt,
                    settings,
                    stats: measured.stats,
                    breakdown,
                    round_position: None,
                    answer: None,
                },
                answer,
            )?;
        }
        Ok(())
    }
}

/// The plan's pruning of `sql` under a variant's `settings` (which may change it: a skip
/// index turned off): under the session's own when there are none; else with the settings
/// set for the EXPLAIN, where the target keeps settings between statements; else unknown.
fn plan_under(target: &mut Target, sql: &Statement, settings: &Settings) -> Result<Option<Vec<TableRead>>> {
    if settings.is_empty() {
        return explain_indexes(target, sql).map(Some);
    }
    if !target.capabilities().session_settings_persist {
        return Ok(None);
    }
    target.with_session_settings(settings, |target| explain_indexes(target, sql)).map(Some)
}

/// The scenario part of a query's statement tags: the query, and the bloom filter's pass
/// told apart.
fn scenario_of(query: &str, variant: QueryVariant) -> String {
    match variant {
        QueryVariant::BloomFilter => format!("{query}_bloom_filter"),
        QueryVariant::Default | QueryVariant::WithoutIndex => query.to_string(),
    }
}

/// The calibration's median run of `path` (of an even count, the slower middle one).
fn median_timing(calibration: &IngestCalibration, path: IngestPath, rows: u64) -> Option<IngestTiming> {
    let mut seconds: Vec<Option<f64>> =
        calibration.runs.iter().filter(|run| run.path == path).map(|run| run.timing.seconds).collect();
    // An unknown time sorts last, as the slowest.
    seconds.sort_by(|a, b| match (a, b) {
        (Some(a), Some(b)) => a.total_cmp(b),
        _ => a.is_none().cmp(&b.is_none()),
    });
    let middle = *seconds.get(seconds.len() / 2)?;
    Some(IngestTiming { seconds: middle, rows_per_second: middle.and_then(|middle| ratio(rows as f64, middle)) })
}

/// The run's wall time so far against its statements' engine time, into the results.
fn record_run_time(run: &mut LogsRun<'_>) {
    let wall = jiff::Timestamp::now().duration_since(run.writer.bundle.started_at);
    let time = run.target.statement_time();
    run.results().run_time = Some(RunTime {
        wall_seconds: Some(wall.as_secs_f64()),
        statements: time.statements,
        engine_seconds: Some(time.engine_us as f64 / 1e6),
        client_seconds: Some(time.client_us as f64 / 1e6),
        statements_without_engine_time: time.without_engine_time,
    });
}

fn storage_snapshot(target: &mut Target, table: &str, codec: &str, when: &str) -> Result<StorageSnapshot> {
    let parts = parts_summary(target, table)?;
    let (columns, columns_note) = match column_sizes_of(target, table, &parts)? {
        ColumnSizes::Known(columns) => (columns, None),
        ColumnSizes::WideOnly { columns, note } => (columns, Some(note)),
        ColumnSizes::Unknown { reason } => (Vec::new(), Some(reason)),
    };
    Ok(StorageSnapshot {
        label: format!("{when}, {} active parts", parts.active_parts),
        table: table.to_string(),
        codec: codec.to_string(),
        active_parts: parts.active_parts,
        partitions: parts.partitions,
        compact_parts: parts.compact_parts,
        table_bytes: TableBytes {
            compressed_bytes: parts.data_compressed_bytes,
            uncompressed_bytes: parts.data_uncompressed_bytes,
        },
        columns,
        columns_note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calibration_is_bounded_by_the_run_it_calibrates() {
        let counted_rows = |rows| (CALIBRATION_ORDER.len() as u64 + 1) * calibration_rows(rows);
        // At the source's scale, 9 % of the ingest's rows.
        assert_eq!(calibration_rows(100_000_000), 1_000_000);
        assert!(counted_rows(100_000_000) * 100 <= 9 * 100_000_000);
        assert_eq!(calibration_rows(10_000_000), 200_000);
        assert_eq!(calibration_rows(200_000), 50_000);
        assert_eq!(calibration_rows(1), 1);
        // Every pair is one raw and one harness run, and each path leads as often.
        let pairs: Vec<_> = CALIBRATION_ORDER.chunks(2).collect();
        assert!(pairs.iter().all(|pair| pair[0] != pair[1]));
        let raw_first = pairs.iter().filter(|pair| pair[0] == IngestPath::RawEngine).count();
        assert_eq!(raw_first * 2, pairs.len());
    }

    #[test]
    fn an_ab_runs_label_says_so_and_its_rounds_are_the_warm_runs() {
        use clap::Parser;
        #[derive(Parser)]
        struct Command {
            #[command(flatten)]
            flags: LogsFlags,
        }
        let benchmark = |args: &[&str]| {
            Command::try_parse_from(std::iter::once("logs").chain(args.iter().copied())).unwrap().flags.benchmark()
        };
        let single = benchmark(&["--rows", "10M"]);
        assert_eq!((single.run_label(), single.warm_runs, single.ab_run()), ("logs-10M".to_string(), 3, None));
        let ab = benchmark(&["--rows", "10M", "--variant", "a:", "--variant", "b:max_threads=1", "--seed", "9"]);
        assert_eq!(ab.run_label(), "logs-10M-ab");
        let run = ab.ab_run().unwrap();
        assert_eq!((run.seed, run.rounds, ab.warm_runs, run.variants.len()), (9, 60, 60, 2));
        assert_eq!(ab.samples_per_query(), 2 * 61);
        let short = benchmark(&["--runs", "4", "--variant", "a:", "--variant", "b:"]);
        assert_eq!((short.warm_runs, short.ab_run().unwrap().rounds), (4, 4));
        // Without a seed, one is drawn and recorded.
        assert_ne!(benchmark(&["--variant", "a:", "--variant", "b:"]).ab_run().unwrap().seed, 0);
    }
}

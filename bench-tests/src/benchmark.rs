//! The `logs` benchmark: the measurement of the ClickHouse on EKS field benchmark
//! (docs/sources.md) on any target, recorded
//! step by step into a results bundle.
//!
//! 1. Ingest: the generator's `INSERT ... SELECT`, first straight on the engine into
//!    a table that is then dropped (the raw figure), then through the harness. The
//!    harness figure is the one reported. Partitions and active parts are recorded after it.
//! 2. Storage by column, as ingested: LZ4 (the default), then the ZSTD(3) copy and the
//!    time its re-insert took. Background merges pause meanwhile, and the copy is dropped
//!    once measured, to bound disk use (see `fixtures/logs/pause_merges.sql`).
//! 3. Q1-Q5, each with caches dropped, one direct-I/O run, then N warm runs. Every
//!    sample is kept with its statistics and time breakdown.
//! 4. The bloom filter: add, materialize (waiting for the mutation), its size, and Q5 again.
//! 5. The cost model, from the measured bytes per row.
//!
//! Nothing here draws: progress goes through [`Progress`], implemented by the command line.
//! A run stopped by Ctrl-C (see [`crate::interrupt`]) or by an error loses nothing: every
//! sample is journaled as it is measured.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::breakdown::TimeBreakdown;
use crate::cost::{CostInputs, CostModel};
use crate::dataset::logs::step_ms;
use crate::fixtures::{Fixture, Params};
use crate::machine::MachineWatch;
use crate::measure::{StatementTag, drop_caches, measure};
use crate::parts::{ColumnSizes, column_sizes, parts_summary, skip_index_bytes, wait_for_mutations};
use crate::results::{
    BloomFilter, BundleWriter, DatasetParams, Ingest, QueryRuns, RunBundle, RunStatus, Sample, SampleKind, Step,
    StorageSnapshot, TableBytes, ratio, unix_seconds,
};
use crate::settings::Settings;
use crate::targets::Target;
use crate::units::{human_bytes, milliseconds, per_second, times};

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
const DATABASE: &str = "bench_logs";
const MATERIALIZE_TIMEOUT: Duration = Duration::from_secs(3600);

/// What to run.
#[derive(Debug, Clone)]
pub struct LogsBenchmark {
    pub run_id: String,
    pub rows: u64,
    pub warm_runs: u32,
    pub cost: CostInputs,
    /// The volume's read limit when known (e.g. 125 MiB/s for a default gp3 volume).
    pub volume_limit_mib_per_s: Option<f64>,
}

/// How the benchmark reports progress; the command line draws it.
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

impl LogsBenchmark {
    /// Refuses inputs that would put meaningless numbers in the results, before anything
    /// runs.
    pub fn check(&self) -> Result<()> {
        self.cost.check()?;
        if let Some(limit) = self.volume_limit_mib_per_s
            && !(limit.is_finite() && limit > 0.0)
        {
            bail!("--volume-mib-per-s {limit} is not a read limit: give a finite number of MiB/s above 0");
        }
        Ok(())
    }

    /// Samples per query pass: the direct-I/O run and the warm runs.
    fn samples_per_query(&self) -> u64 {
        1 + u64::from(self.warm_runs)
    }

    /// A new bundle for this run on `target`, not yet written.
    pub fn new_bundle(&self, target: &Target) -> RunBundle {
        RunBundle {
            schema_version: crate::results::SCHEMA_VERSION,
            run_id: self.run_id.clone(),
            status: RunStatus::Incomplete,
            error: None,
            phase: "starting".to_string(),
            started_at: unix_seconds(),
            finished_at: None,
            target: target.info().clone(),
            dataset: DatasetParams {
                name: "logs".to_string(),
                rows: self.rows,
                step_ms: step_ms(self.rows),
                warm_runs: self.warm_runs,
            },
            session_settings: Settings::session_defaults(),
            volume_limit_mib_per_s: self.volume_limit_mib_per_s,
            sql_files: SQL_FILES.iter().map(|file| file.to_string()).collect(),
            ingest: None,
            storage: Vec::new(),
            zstd_reinsert: None,
            queries: Vec::new(),
            bloom_filter: None,
            cost: None,
            machine: None,
        }
    }

    /// Runs every step, saving the bundle after each and journaling every sample. On
    /// error (an interruption included) the bundle keeps what was measured and stays
    /// incomplete; the caller records the error. The machine is watched throughout.
    pub fn run(&self, target: &mut Target, writer: &mut BundleWriter, progress: &dyn Progress) -> Result<()> {
        self.check()?;
        let mut machine = MachineWatch::start(target.engine_in_process());
        warn_about_processes(progress, &machine.info().other_chbench_processes);
        writer.bundle.machine = Some(machine.info().clone());
        let outcome = self.run_steps(target, writer, progress, &mut machine);
        let machine = machine.finish();
        if !machine.quiet() {
            progress.warn(&format!("the machine was not quiet: {}; timings may be inflated", machine.noise.join("; ")));
        }
        writer.bundle.machine = Some(machine);
        outcome
    }

    fn run_steps(
        &self,
        target: &mut Target,
        writer: &mut BundleWriter,
        progress: &dyn Progress,
        machine: &mut MachineWatch,
    ) -> Result<()> {
        // Each phase: look for other runs of this tool, record the phase.
        let mut phase = |writer: &mut BundleWriter, name: &str| -> Result<()> {
            warn_about_processes(progress, &machine.observe());
            writer.bundle.machine = Some(machine.info().clone());
            writer.phase(name)
        };
        let params = Params::new().with("rows", self.rows).with("step_ms", step_ms(self.rows));
        target.use_fresh_database(DATABASE)?;
        let schema = Fixture::load("logs/schema.sql")?;
        let generator = Fixture::load("logs/generator.sql")?.render_one(&params)?;

        phase(writer, "ingest")?;
        progress.start(&format!("ingest {} rows: raw engine, then through the harness", self.rows), Some(2));
        schema.apply(target, &params)?;
        // Timed by the engine, as the harness's figure is, so the two compare like for like.
        let raw = target.run(&generator, &Settings::new(), "TabSeparated").context("raw engine ingest failed")?;
        let raw_seconds = raw.counters.elapsed_us.map_or(raw.client_elapsed.as_secs_f64(), |us| us as f64 / 1e6);
        let raw_rows_per_second = ratio(self.rows as f64, raw_seconds);
        progress.advance(&format!("raw engine: {} rows/s", per_second(raw_rows_per_second)));
        target.execute("DROP TABLE logs SYNC")?;
        schema.apply(target, &params)?;
        let ingest = measure(target, &generator, &self.tag("ingest", 1), &Settings::new()).context("ingest failed")?;
        let seconds = ingest.stats.server_duration_us as f64 / 1e6;
        let table = parts_summary(target, "logs")?;
        let rows_per_second = ratio(table.rows as f64, seconds);
        progress.advance(&format!("harness: {} rows/s", per_second(rows_per_second)));
        writer.bundle.ingest = Some(Ingest {
            rows: table.rows,
            seconds,
            rows_per_second,
            raw_engine_seconds: raw_seconds,
            raw_engine_rows_per_second: raw_rows_per_second,
            partitions: table.partitions,
            active_parts: table.active_parts,
            stats: ingest.stats,
        });
        writer.save()?;
        progress.finish(&format!(
            "ingest: {} rows in {seconds:.1} s ({} rows/s; raw engine {} rows/s), {} partitions, {} active parts",
            table.rows,
            per_second(rows_per_second),
            per_second(raw_rows_per_second),
            table.partitions,
            table.active_parts
        ));

        phase(writer, "storage")?;
        progress.start("storage by column: LZ4 as ingested, then the ZSTD(3) copy", Some(2));
        writer.bundle.storage.push(storage_snapshot(target, "logs", "LZ4 (default)")?);
        progress.advance("LZ4");
        Fixture::load("logs/pause_merges.sql")?.apply(target, &params)?;
        Fixture::load("logs/zstd_schema.sql")?.apply(target, &params)?;
        let reinsert = Fixture::load("logs/zstd_insert.sql")?.render_one(&params)?;
        let reinsert =
            measure(target, &reinsert, &self.tag("zstd", 1), &Settings::new()).context("the ZSTD(3) copy failed")?;
        writer.bundle.zstd_reinsert =
            Some(Step { seconds: reinsert.stats.server_duration_us as f64 / 1e6, stats: Some(reinsert.stats) });
        writer.bundle.storage.push(storage_snapshot(target, "logs_zstd", "ZSTD(3)")?);
        writer.save()?;
        // Nothing after this reads the copy; dropping it keeps a 100 M-row run within 20 GB.
        target.execute("DROP TABLE logs_zstd SYNC")?;
        Fixture::load("logs/resume_merges.sql")?.apply(target, &params)?;
        progress.advance("ZSTD(3)");
        let (lz4, zstd) = (&writer.bundle.storage[0], &writer.bundle.storage[1]);
        let saving = ratio(zstd.compressed_bytes() as f64, lz4.compressed_bytes() as f64).map_or(
            "ZSTD(3) against LZ4 unknown".to_string(),
            |share| match 100.0 * (1.0 - share) {
                saving if saving >= 0.0 => format!("{saving:.0} % smaller"),
                saving => format!("{:.0} % larger", -saving),
            },
        );
        progress.finish(&format!(
            "storage: LZ4 {} ({}), ZSTD(3) {} ({}), {saving}",
            human_bytes(lz4.compressed_bytes()),
            times(lz4.compression_ratio()),
            human_bytes(zstd.compressed_bytes()),
            times(zstd.compression_ratio()),
        ));
        for snapshot in &writer.bundle.storage {
            if let Some(note) = &snapshot.columns_note {
                progress.warn(&format!("{} `{}`: {note}", snapshot.codec, snapshot.table));
            }
        }

        phase(writer, "queries")?;
        progress.start("Q1-Q5: caches dropped, one direct-I/O run, then warm runs", Some(5 * self.samples_per_query()));
        for query in QUERIES {
            let variant = if query == "q5" { "without index" } else { "default" };
            self.query_runs(target, writer, query, variant, progress)?;
        }
        progress.finish(&queries_summary(&writer.bundle.queries));

        phase(writer, "bloom filter")?;
        progress.start("bloom filter on trace_id: add, materialize, Q5 again", Some(2 + self.samples_per_query()));
        let bloom = Fixture::load("logs/bloom_filter.sql")?.render(&params)?;
        let mut steps = Vec::new();
        for (index, statement) in bloom.iter().enumerate() {
            let started = Instant::now();
            let measured = measure(target, statement, &self.tag("bloom_filter", index as u32 + 1), &Settings::new())
                .context("the bloom filter statements failed")?;
            // MATERIALIZE INDEX returns at once; the work is the mutation.
            wait_for_mutations(target, MATERIALIZE_TIMEOUT)?;
            steps.push(Step { seconds: started.elapsed().as_secs_f64(), stats: Some(measured.stats) });
            progress.advance(&format!("{} done", crate::sql::one_line(statement)));
        }
        let index = skip_index_bytes(target, "logs", "trace_bf")
            .context("the trace_bf index is missing after MATERIALIZE INDEX")?;
        let mut steps = steps.into_iter();
        let (add_index, materialize) = (steps.next().context("no ADD INDEX")?, steps.next().context("no MATERIALIZE")?);
        writer.bundle.bloom_filter = Some(BloomFilter {
            add_index,
            materialize,
            index_compressed_bytes: index.data_compressed_bytes,
            index_uncompressed_bytes: index.data_uncompressed_bytes,
            table_compressed_bytes: writer.bundle.storage[0].compressed_bytes(),
        });
        writer.save()?;
        self.query_runs(target, writer, "q5", "bloom filter", progress)?;
        writer.save()?;
        progress.finish(&bloom_summary(&writer.bundle));

        let used_bytes = writer.bundle.storage[0].compressed_bytes();
        writer.bundle.cost = Some(CostModel::new(self.cost.clone(), used_bytes, self.rows));
        writer.save()?;
        Ok(())
    }

    /// Drops caches, runs `query` once with direct I/O and `warm_runs` times warm; each
    /// sample goes to the bundle's journal as soon as it is measured.
    fn query_runs(
        &self,
        target: &mut Target,
        writer: &mut BundleWriter,
        query: &str,
        variant: &str,
        progress: &dyn Progress,
    ) -> Result<()> {
        let sql_file = format!("logs/queries/{query}.sql");
        let sql = Fixture::load(&sql_file)?.render_one(&Params::new())?;
        let scenario = if variant == "bloom filter" { format!("{query}_bloom_filter") } else { query.to_string() };
        writer.start_query(QueryRuns {
            query: query.to_string(),
            variant: variant.to_string(),
            sql_file: sql_file.clone(),
            answer: String::new(),
            samples: Vec::new(),
        })?;
        drop_caches(target)?;
        for attempt in 0..=self.warm_runs {
            let (kind, settings) = if attempt == 0 {
                (SampleKind::DirectIo, Settings::direct_io())
            } else {
                (SampleKind::Warm, Settings::new())
            };
            // An error names the query's file and line.
            let measured = measure(target, &sql, &self.tag(&scenario, attempt), &settings)?;
            let answer = (attempt == 0).then(|| measured.body.chars().take(2000).collect());
            progress.advance(&format!(
                "{query} {variant} {}: {:.1} ms, {} rows read",
                if attempt == 0 { "direct I/O".to_string() } else { format!("warm {attempt}") },
                measured.stats.server_duration_us as f64 / 1e3,
                measured.stats.read_rows
            ));
            let breakdown = TimeBreakdown::from_stats(&measured.stats);
            writer.record_sample(Sample { kind, attempt, settings, stats: measured.stats, breakdown }, answer)?;
        }
        Ok(())
    }

    fn tag(&self, query: &str, attempt: u32) -> StatementTag {
        StatementTag::new(&self.run_id, "logs", query, attempt)
    }
}

fn storage_snapshot(target: &mut Target, table: &str, codec: &str) -> Result<StorageSnapshot> {
    let parts = parts_summary(target, table)?;
    let (columns, columns_note) = match column_sizes(target, table)? {
        ColumnSizes::Known(columns) => (columns, None),
        ColumnSizes::WideOnly { columns, note } => (columns, Some(note)),
        ColumnSizes::Unknown { reason } => (Vec::new(), Some(reason)),
    };
    Ok(StorageSnapshot {
        label: format!("as ingested, {} active parts", parts.active_parts),
        table: table.to_string(),
        codec: codec.to_string(),
        active_parts: parts.active_parts,
        partitions: parts.partitions,
        table_bytes: Some(TableBytes {
            compressed_bytes: parts.data_compressed_bytes,
            uncompressed_bytes: parts.data_uncompressed_bytes,
        }),
        compact_parts: parts.compact_parts,
        columns,
        columns_note,
    })
}

fn warn_about_processes(progress: &dyn Progress, processes: &[crate::machine::SeenProcess]) {
    for process in processes {
        progress.warn(&format!(
            "another chbench process is running ({}, pid {}): timings will be noisy",
            process.name, process.pid
        ));
    }
}

fn queries_summary(queries: &[QueryRuns]) -> String {
    let parts: Vec<String> = queries
        .iter()
        .map(|runs| {
            format!(
                "{} {} / {}",
                runs.query,
                milliseconds(runs.direct_io().map(|sample| sample.stats.server_duration_us as f64 / 1e3)),
                milliseconds(runs.warm_min_ms())
            )
        })
        .collect();
    format!("queries (direct I/O / warm min): {}", parts.join(", "))
}

fn bloom_summary(bundle: &RunBundle) -> String {
    let find = |variant: &str| bundle.queries.iter().find(|runs| runs.query == "q5" && runs.variant == variant);
    let (Some(before), Some(after), Some(bloom)) = (find("without index"), find("bloom filter"), &bundle.bloom_filter)
    else {
        return "bloom filter: incomplete".to_string();
    };
    let rows = |runs: &QueryRuns| runs.samples.last().map_or(0, |sample| sample.stats.read_rows);
    let warm = |runs: &QueryRuns| milliseconds(runs.warm_min_ms());
    format!(
        "bloom filter: q5 warm {} -> {}, {} -> {} rows read, index {} ({} of the table), materialize {:.1} s",
        warm(before),
        warm(after),
        rows(before),
        rows(after),
        human_bytes(bloom.index_compressed_bytes),
        bloom.index_share_of_table().map_or("unknown share".to_string(), |share| format!("{:.2} %", 100.0 * share)),
        bloom.materialize.seconds
    )
}

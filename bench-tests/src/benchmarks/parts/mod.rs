//! The `parts` benchmark: what planning costs as a table's active parts grow, on the
//! Ready-Analytics-like table of Cloudflare's account (docs/sources.md), in its two
//! partition designs (`fixtures/parts/`). One method per phase:
//!
//! 1. [`PartsPhase::Prepare`]: a database per design, its table, merges stopped (a target
//!    that cannot stop them is refused), the counters the engine has, and the sweep held to
//!    the engine's `max_parts_in_total` before anything is built.
//! 2. [`PartsPhase::Sweep`]: for each point, each design's table grown to it by the pack's
//!    generator (parts added to the last point's, never rebuilt), then every query on every
//!    design: one warm-up and N runs from one client, then the same from K clients at once
//!    where the target runs statements at once. Every sample is journaled as measured; the
//!    slopes are fitted again after each point, so an interrupted sweep keeps its curve.
//! 3. [`PartsPhase::Gate`]: `--max-slope` held against each query's planning slope on the
//!    `(namespace, day)` design; the run fails on it after the bundle and report are written
//!    ([`super::Benchmark::verdict`]).

mod checks;
mod example;
pub mod fit;
mod flags;
pub mod report;
mod results;

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use self::checks::{FreeSpace, check_clients, check_parts_fit, check_parts_limit, check_points, with_the_sweeps_size};
pub use self::flags::PartsFlags;
pub use self::results::{
    EngineEvents, FitQuality, Fitted, Gate, LOCK_EVENTS, Limits, OTHER_EVENTS, PLANNING_EVENTS, PartsBundle,
    PartsQueryRuns, PartsResults, PartsVariant, PhaseTime, PlanningSample, Point, PointBuild, SlopeFit, Sweep,
    counters_of,
};
use super::{Benchmark, GuardedSql, Run};
use crate::breakdown::TimeBreakdown;
use crate::compare::{BundleAt, CompareOptions, Comparison, NoSections};
use crate::fixtures::{Fixture, Params};
use crate::measure::{Measured, measure, measure_concurrently};
use crate::numbers::{median_of_all, median_unsorted};
use crate::query_runs::{QueryRuns, Sample, SampleKind};
use crate::report::Section;
use crate::results::RunBundle;
use crate::settings::Settings;
use crate::sql::sql_string;
use crate::stats::StatementTag;
use crate::table_parts::parts_summary;
use crate::targets::Concurrency;
use crate::units::{milliseconds, number, seconds};

/// The designs, by file in `fixtures/parts/designs/`: the first is the one whose parts the
/// points count and the gate holds; the second holds the same rows.
pub const DESIGNS: [&str; 2] = ["by_namespace_day", "by_day"];
/// The queries, by file in `fixtures/parts/queries/`.
pub const QUERIES: [&str; 4] = ["day_by_date", "day_by_range", "namespace_index", "select_one"];
/// The generator's constants (`fixtures/parts/generator.sql`): rows per `(namespace, day)`
/// part, and namespaces per day.
pub const ROWS_PER_PART: u64 = 100;
pub const NAMESPACES: u64 = 20;
/// The table every design creates.
const TABLE: &str = "ready_analytics";
/// The most parts a sweep builds on any target: ten times the default's largest point,
/// and within ClickHouse's default `max_parts_in_total` (100,000).
pub const MAX_PARTS: u64 = 100_000;
/// What a part of this table takes in an in-process engine's folder, and its files: 14
/// small files and a folder, each at least a 4 KiB block on ext4 (measured: the pack's
/// by_namespace_day dataset of 2,000 parts, 115 MB and 28,017 entries in `du` and `find`).
const DISK_BYTES_PER_PART: u64 = 64 * 1024;
const FILES_PER_PART: u64 = 16;

/// The benchmark's phases, in the order it runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartsPhase {
    Prepare,
    Sweep,
    Gate,
}

impl super::Phase for PartsPhase {
    const ALL: &'static [PartsPhase] = &[PartsPhase::Prepare, PartsPhase::Sweep, PartsPhase::Gate];

    fn name(self) -> &'static str {
        match self {
            PartsPhase::Prepare => "prepare",
            PartsPhase::Sweep => "sweep",
            PartsPhase::Gate => "gate",
        }
    }

    fn label(self) -> &'static str {
        self.name()
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct PartsBenchmark {
    /// Active parts of the first design at each point.
    pub points: Vec<u64>,
    pub runs: u32,
    /// Client counts as `--clients` gave them; [`PartsBenchmark::clients`] is what runs.
    pub clients_given: Vec<u32>,
    pub max_slope: Option<f64>,
    /// `--profile`: flame graphs of the planning queries at the largest part count.
    pub profile: Option<crate::profiles::ProfileChoice>,
}

type PartsRun<'a> = Run<'a, PartsResults>;

impl Benchmark for PartsBenchmark {
    type Results = PartsResults;
    type Phase = PartsPhase;
    type Flags = PartsFlags;
    type ComparisonSections = NoSections;
    const ABOUT: &'static str = "Planning cost as a table's active parts grow (Cloudflare's Ready-Analytics account): \
                                 a sweep over part counts on two partition designs, slopes per query, a gate";

    fn from_flags(flags: PartsFlags) -> PartsBenchmark {
        flags.benchmark()
    }

    fn check(&self) -> Result<()> {
        check_points(&self.points)?;
        check_clients(&self.clients_given)?;
        if let Some(bound) = self.max_slope
            && !(bound.is_finite() && bound >= 0.0)
        {
            bail!("--max-slope {bound} is not a bound: give microseconds of planning per 1,000 parts, 0 or more");
        }
        Ok(())
    }

    fn check_storage(&self, folder: &Path) -> Result<()> {
        let parts = self.points.last().copied().unwrap_or(0);
        let free = FreeSpace { bytes: crate::files::free_bytes(folder)?, files: crate::files::free_files(folder)? };
        check_parts_fit(parts, &free, &crate::files::shown(folder))
    }

    fn sql_files(&self) -> Vec<String> {
        let designs = DESIGNS.iter().map(|design| format!("parts/designs/{design}.sql"));
        let queries = QUERIES.iter().map(|query| format!("parts/queries/{query}.sql"));
        designs.chain(["parts/generator.sql".to_string()]).chain(queries).collect()
    }

    fn guarded_sql(&self) -> Result<GuardedSql> {
        let mut sql = GuardedSql::default();
        // The generator's {rows} is each insert's count: any count reads as every other.
        let params = Params::new().with("rows", 1);
        for file in Benchmark::sql_files(self) {
            let statements = Fixture::load(&file)?.render(&params)?;
            match file.starts_with("parts/queries/") {
                true => sql.queries.extend(statements),
                false => sql.dataset.extend(statements),
            }
        }
        Ok(sql)
    }

    fn new_results(&self) -> PartsResults {
        PartsResults {
            sweep: Sweep {
                points: self.points.clone(),
                rows_per_part: ROWS_PER_PART,
                namespaces: NAMESPACES,
                designs: DESIGNS.iter().map(|design| design.to_string()).collect(),
                queries: QUERIES.iter().map(|query| query.to_string()).collect(),
                runs: self.runs,
                clients: self.clients(),
                max_slope_us_per_1k_parts: self.max_slope,
            },
            engine_events: EngineEvents::Unknown { reason: "not read yet".to_string() },
            limits: None,
            points: Vec::new(),
            queries: Vec::new(),
            fits: Vec::new(),
            gate: None,
            phase_times: Vec::new(),
        }
    }

    fn profile(&self) -> Option<crate::profiles::ProfileChoice> {
        self.profile
    }

    /// The planning queries at each design's largest part count, every client count: where
    /// planning costs most, and where the clients contend for the parts list.
    fn profiles_runs(results: &PartsResults, runs: &QueryRuns<PartsVariant>) -> bool {
        let largest = results
            .queries
            .iter()
            .filter(|other| other.variant.design == runs.variant.design)
            .map(|other| other.variant.point)
            .max();
        largest == Some(runs.variant.point)
    }

    fn run_label(&self) -> String {
        let points: Vec<String> = self.points.iter().map(|parts| crate::units::short_count(*parts)).collect();
        format!("parts-{}", points.join("_"))
    }

    fn run_phase(&self, phase: PartsPhase, run: &mut PartsRun<'_>) -> Result<()> {
        let started = Instant::now();
        let outcome = match phase {
            PartsPhase::Prepare => self.prepare(run),
            PartsPhase::Sweep => self.sweep(run),
            PartsPhase::Gate => self.gate(run),
        }
        .map_err(with_the_sweeps_size);
        // Timed whether it ended or not: the time is the performance figure's evidence.
        let seconds = Some(started.elapsed().as_secs_f64());
        run.results().phase_times.push(PhaseTime { phase: super::Phase::name(phase).to_string(), seconds });
        outcome?;
        run.writer.save()
    }

    /// The designs' databases go: on a shared server they would hold thousands of parts
    /// for nothing (what was measured is in the bundle). Dropping thousands of parts takes
    /// a while, so it is timed too.
    fn clean_up(&self, run: &mut PartsRun<'_>) -> Result<()> {
        let started = Instant::now();
        // Every database is tried, and every one left is named.
        let mut left = Vec::new();
        let mut first_error = None;
        for design in DESIGNS {
            let database = database(run, design);
            if let Err(error) = run.target.execute(&format!("DROP DATABASE IF EXISTS {database} SYNC")) {
                first_error.get_or_insert(error);
                left.push(database);
            }
        }
        if let Some(error) = first_error {
            let drops: Vec<String> = left.iter().map(|database| format!("DROP DATABASE {database} SYNC")).collect();
            return Err(error.context(format!(
                "{} may be left on the target: drop {} with {}",
                left.join(" and "),
                if left.len() == 1 { "it" } else { "them" },
                drops.join("; ")
            )));
        }
        let seconds = Some(started.elapsed().as_secs_f64());
        run.results().phase_times.push(PhaseTime { phase: "clean_up".to_string(), seconds });
        run.writer.save()
    }

    fn comparison_sections(
        _bundles: &[BundleAt<PartsResults>],
        _comparison: &Comparison,
        _options: &CompareOptions,
    ) -> Result<NoSections> {
        Ok(NoSections)
    }

    fn examples(value: f64, count: u64) -> Vec<RunBundle<PartsResults>> {
        example::examples(value, count)
    }

    fn report(bundle: &RunBundle<PartsResults>) -> Result<Section> {
        Ok(Section {
            markdown: report::markdown(&bundle.benchmark, &bundle.target.engine_version),
            charts: report::charts(&bundle.benchmark)?,
        })
    }

    fn verdict(bundle: &RunBundle<PartsResults>) -> Result<()> {
        match &bundle.benchmark.gate {
            Some(gate) if !gate.failures.is_empty() => bail!("{}", gate.failures.join("; ")),
            _ => Ok(()),
        }
    }
}

/// The database of `design` for this run, so that two runs on one server never share one.
fn database(run: &PartsRun<'_>, design: &str) -> String {
    format!("{}_{design}", run.database())
}

impl PartsBenchmark {
    /// The client counts to run, rising, 1 first (the slopes are fitted to it, so it is
    /// run whether given or not).
    pub fn clients(&self) -> Vec<u32> {
        let mut clients = self.clients_given.clone();
        if !clients.contains(&1) {
            clients.push(1);
        }
        clients.sort_unstable();
        clients.dedup();
        clients
    }

    fn prepare(&self, run: &mut PartsRun<'_>) -> Result<()> {
        run.progress.start("prepare: a table per design, merges stopped, the engine's counters and limits", None);
        for design in DESIGNS {
            run.target.use_fresh_database(&database(run, design))?;
            Fixture::load(format!("parts/designs/{design}.sql"))?.apply(run.target, &Params::new())?;
            if let Err(error) = run.target.execute(&format!("SYSTEM STOP MERGES {TABLE}")) {
                bail!(
                    "target {} cannot stop merges ({:#}): the sweep counts parts as inserted, which merges would \
                     combine; run it as a user allowed SYSTEM STOP MERGES, or on another target",
                    run.target.info().kind,
                    error
                );
            }
        }
        let events = engine_events(run);
        run.results().engine_events = events;
        let limits = Limits { max_parts_in_total: merge_tree_setting(run, "max_parts_in_total") };
        run.results().limits = Some(limits.clone());
        check_parts_limit(self.points.last().copied().unwrap_or(0), &limits)?;
        let summary = match &run.results().engine_events {
            EngineEvents::Known { names } => {
                let wanted = PLANNING_EVENTS.iter().chain(&LOCK_EVENTS).chain(&OTHER_EVENTS);
                let missing: Vec<&str> = wanted.filter(|name| !names.contains(**name)).copied().collect();
                if missing.is_empty() {
                    "prepare: every planning and lock counter is in this engine".to_string()
                } else {
                    format!("prepare: not in this engine (unknown in every sample): {}", missing.join(", "))
                }
            }
            EngineEvents::Unknown { reason } => format!("prepare: which counters the engine has is unknown ({reason})"),
        };
        run.progress.finish(&summary);
        Ok(())
    }

    fn sweep(&self, run: &mut PartsRun<'_>) -> Result<()> {
        let generator = Fixture::load("parts/generator.sql")?;
        let queries: Vec<(&str, String, crate::fixtures::Statement)> = QUERIES
            .iter()
            .map(|&query| {
                let file = format!("parts/queries/{query}.sql");
                let statement = Fixture::load(&file)?.render_one(&Params::new())?;
                Ok((query, file, statement))
            })
            .collect::<Result<_>>()?;
        let clients = self.clients_on(run);
        let mut before = 0;
        for (index, &parts) in self.points.iter().enumerate() {
            let measures = DESIGNS.len() * QUERIES.len() * clients.len();
            run.progress.start(
                &format!("point {}/{}: {parts} parts on {}", index + 1, self.points.len(), DESIGNS[0]),
                Some((DESIGNS.len() + measures) as u64),
            );
            let mut point = Point { parts, builds: Vec::new(), measure_seconds: None };
            for design in DESIGNS {
                let build = self
                    .build(run, &generator, design, before, parts)
                    .with_context(|| format!("building the point of {parts} parts on {design} failed"))?;
                run.progress.advance(&format!(
                    "{design}: +{} rows, {} active parts in {}",
                    build.added_rows,
                    build.active_parts,
                    seconds(build.seconds, 1)
                ));
                point.builds.push(build);
            }
            // Each design's active parts, as its build left them: what its runs are measured at.
            let active: Vec<u64> = point.builds.iter().map(|build| build.active_parts).collect();
            run.results().points.push(point);
            run.writer.save()?;
            let started = Instant::now();
            for (design, active_parts) in DESIGNS.into_iter().zip(active) {
                run.target.use_database(&database(run, design))?;
                for (query, file, statement) in &queries {
                    for &count in &clients {
                        let variant =
                            PartsVariant { design: design.to_string(), point: parts, active_parts, clients: count };
                        self.query_runs(run, query, file, statement, variant)?;
                    }
                }
            }
            if let Some(point) = run.results().points.last_mut() {
                point.measure_seconds = Some(started.elapsed().as_secs_f64());
            }
            run.results().fits = fits(run.results());
            run.writer.save()?;
            run.progress.finish(&point_summary(run.results(), parts));
            before = parts;
        }
        Ok(())
    }

    /// The client counts this target runs: every one asked for where it runs statements at
    /// once, else one (said once).
    fn clients_on(&self, run: &mut PartsRun<'_>) -> Vec<u32> {
        let clients = self.clients();
        if clients.len() > 1 && run.target.capabilities().concurrent_queries == Concurrency::Serial {
            run.progress.warn(&format!(
                "target {} runs one statement at a time: measuring with 1 client only",
                run.target.info().kind
            ));
            return vec![1];
        }
        clients
    }

    /// Grows `design`'s table from the point of `before` parts to `parts` (of the first
    /// design): the generator adds the rows between, and the table is checked after.
    fn build(
        &self,
        run: &mut PartsRun<'_>,
        generator: &Fixture,
        design: &str,
        before: u64,
        parts: u64,
    ) -> Result<PointBuild> {
        let started = Instant::now();
        run.target.use_database(&database(run, design))?;
        let added_rows = (parts - before) * ROWS_PER_PART;
        let statements = generator.render(&Params::new().with("rows", added_rows))?;
        let (insert, set_up) = statements.split_last().context("fixtures/parts/generator.sql has no statement")?;
        for statement in set_up {
            run.target.execute(statement).with_context(|| statement.location())?;
        }
        let tag = StatementTag::new(&run.run_id(), "parts", &format!("build_{design}"), parts as u32);
        let measured = measure(run.target, insert, &tag, &Settings::new())?;
        let table = parts_summary(run.target, TABLE)?;
        if table.rows != parts * ROWS_PER_PART {
            bail!("the table holds {} rows after the insert, not the {} asked for", table.rows, parts * ROWS_PER_PART);
        }
        // Merges stopped and one part per (namespace, day): the first design has exactly the
        // parts asked for. Fewer means merges ran; more, that the insert was split.
        if design == DESIGNS[0] && table.active_parts != parts {
            bail!(
                "{} active parts after the insert, not {parts}: {}",
                table.active_parts,
                if table.active_parts < parts {
                    "merges ran although they were stopped"
                } else {
                    "the insert was split into more parts than partitions"
                }
            );
        }
        Ok(PointBuild {
            design: design.to_string(),
            added_rows,
            rows: table.rows,
            active_parts: table.active_parts,
            partitions: table.partitions,
            bytes_on_disk: table.bytes_on_disk,
            seconds: Some(started.elapsed().as_secs_f64()),
            insert: measured.stats,
        })
    }

    /// One warm-up, then `runs` measured runs of `statement` by `variant.clients` clients,
    /// every sample journaled as measured.
    fn query_runs(
        &self,
        run: &mut PartsRun<'_>,
        query: &str,
        file: &str,
        statement: &crate::fixtures::Statement,
        variant: PartsVariant,
    ) -> Result<()> {
        let scenario = format!("{query}_{}_{}", variant.design, variant.point);
        let clients = variant.clients;
        let label = format!("{query} on {} x{clients}", variant.design);
        run.writer.start_query(QueryRuns {
            query: query.to_string(),
            variant,
            ab_variant: None,
            plan: None,
            sql_file: file.to_string(),
            answer: String::new(),
            samples: Vec::new(),
        })?;
        let warm_up = StatementTag::new(&run.run_id(), &scenario, &format!("warm_up_{clients}"), 0);
        measure(run.target, statement, &warm_up, &Settings::new())?;
        // Each round is recorded as soon as it ends: one statement from one client, or one
        // from each of K clients started together, so that an interruption keeps the rounds
        // done and every round has K statements running at once.
        let mut durations = Vec::new();
        let run_id = run.run_id();
        // Profiled (`--profile`): the rounds, not the warm-up.
        let settings = crate::profiling::profiled(&Settings::new());
        for round in 1..=self.runs {
            let measured: Vec<Measured> = if clients == 1 {
                let tag = StatementTag::new(&run_id, &scenario, "clients_1", round);
                vec![measure(run.target, statement, &tag, &settings)?]
            } else {
                let tag_of = |client: usize, _: u32| {
                    StatementTag::new(&run_id, &scenario, &format!("clients_{clients}_{client}"), round)
                };
                measure_concurrently(run.target, statement, tag_of, &settings, clients as usize, 1)?
                    .into_iter()
                    .map(|client| client.measured)
                    .collect()
            };
            for (client, measured) in measured.into_iter().enumerate() {
                // A sample's number is unique within its query runs (the journal keys on
                // it): the round's clients one after the other.
                let attempt = (round - 1) * clients + client as u32 + 1;
                durations.push(measured.stats.server_ms());
                let first = run.results().queries.last().is_some_and(|runs| runs.samples.is_empty());
                let answer = first.then(|| measured.body.chars().take(2000).collect());
                let breakdown = TimeBreakdown::of_record(&measured.stats);
                let sample = Sample {
                    kind: SampleKind::Warm,
                    attempt,
                    settings: settings.clone(),
                    stats: measured.stats,
                    breakdown,
                    round_position: None,
                    answer: None,
                };
                run.writer.record_sample(sample, answer)?;
            }
        }
        run.progress.advance(&format!("{label}: median {}", milliseconds(median_unsorted(durations))));
        Ok(())
    }

    /// Holds each query's planning slope on the first design to `--max-slope`.
    fn gate(&self, run: &mut PartsRun<'_>) -> Result<()> {
        let results = run.results();
        results.fits = fits(results);
        let Some(bound) = self.max_slope else {
            return Ok(());
        };
        let failures = gate_failures(&results.fits, bound);
        run.progress.start(&format!("gate: planning slopes on {} within {bound} µs per 1,000 parts", DESIGNS[0]), None);
        let summary = if failures.is_empty() {
            "gate: every query within the bound".to_string()
        } else {
            format!("gate: {} of {} queries not within the bound", failures.len(), QUERIES.len())
        };
        run.results().gate =
            Some(Gate { max_slope_us_per_1k_parts: Some(bound), design: DESIGNS[0].to_string(), failures });
        run.progress.finish(&summary);
        Ok(())
    }
}

/// The lines of the queries whose planning slope on the first design breaks `bound`, or
/// cannot be held to it (a fit that is not trusted, or unknown).
pub fn gate_failures(fits: &[SlopeFit], bound: f64) -> Vec<String> {
    fits.iter()
        .filter(|fit| fit.design == DESIGNS[0] && fit.fitted == Fitted::Planning)
        .filter_map(|fit| {
            let quality = match (fit.r_squared, &fit.quality) {
                (Some(r_squared), quality) => format!("R² {r_squared:.3}, {}", quality.label()),
                (None, quality) => quality.label(),
            };
            match fit.slope_us_per_1k_parts {
                Some(slope) if fit.quality.trusted() && slope <= bound => None,
                Some(slope) if fit.quality.trusted() => Some(format!(
                    "query {} on {}: planning grows {} µs per 1,000 parts ({quality}), above --max-slope {}",
                    fit.query,
                    fit.design,
                    number(slope, 0),
                    number(bound, 0)
                )),
                _ => Some(format!(
                    "query {} on {}: its planning slope cannot be held to --max-slope {} ({quality})",
                    fit.query,
                    fit.design,
                    number(bound, 0)
                )),
            }
        })
        .collect()
}

/// Every design and query's lines, planning and duration, through its one-client samples.
pub fn fits(results: &PartsResults) -> Vec<SlopeFit> {
    let mut fits = Vec::new();
    for design in &results.sweep.designs {
        for query in &results.sweep.queries {
            let runs: Vec<&PartsQueryRuns> = results
                .queries
                .iter()
                .filter(|runs| runs.query == *query && runs.variant.design == *design && runs.variant.clients == 1)
                .collect();
            if runs.is_empty() {
                continue;
            }
            for fitted in [Fitted::Planning, Fitted::Duration] {
                let samples: Vec<(u64, Option<f64>)> = runs
                    .iter()
                    .flat_map(|runs| {
                        runs.samples.iter().map(|sample| {
                            let figures = PlanningSample::of(sample, &results.engine_events);
                            let y = match fitted {
                                Fitted::Planning => figures.planning_us,
                                Fitted::Duration => Some(figures.duration_us),
                            };
                            (runs.variant.active_parts, y)
                        })
                    })
                    .collect();
                fits.push(fit::fit_line(design, query, fitted, &samples));
            }
        }
    }
    fits
}

/// Which of the counters the benchmark reads the engine has.
fn engine_events(run: &mut PartsRun<'_>) -> EngineEvents {
    let names = PLANNING_EVENTS.iter().chain(&LOCK_EVENTS).chain(&OTHER_EVENTS).copied();
    crate::measure::engine_events(run.target, names)
}

/// A MergeTree setting's value as the engine says it, if it is a number.
fn merge_tree_setting(run: &mut PartsRun<'_>, name: &str) -> Option<u64> {
    let sql = format!("SELECT value FROM system.merge_tree_settings WHERE name = {}", sql_string(name));
    run.target.query_text(&sql).ok()?.trim().parse().ok()
}

fn point_summary(results: &PartsResults, parts: u64) -> String {
    let medians: Vec<String> = results
        .queries
        .iter()
        .filter(|runs| runs.variant.point == parts && runs.variant.design == DESIGNS[0] && runs.variant.clients == 1)
        .map(|runs| {
            let planning = median_of_all(
                runs.samples
                    .iter()
                    .map(|sample| PlanningSample::of(sample, &results.engine_events).planning_us.map(|us| us / 1e3)),
            );
            format!("{} {} (planning {})", runs.query, milliseconds(runs.warm_median_ms()), milliseconds(planning))
        })
        .collect();
    format!("{parts} parts on {}: {}", DESIGNS[0], medians.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_names_the_query_its_slope_the_bound_and_the_fit() {
        let fit = |query: &str, slope: f64, quality: FitQuality| SlopeFit {
            design: DESIGNS[0].to_string(),
            query: query.to_string(),
            fitted: Fitted::Planning,
            samples: 20,
            part_counts: 4,
            slope_us_per_1k_parts: Some(slope),
            intercept_us: Some(500.0),
            r_squared: Some(0.99),
            slope_stderr_us_per_1k_parts: Some(10.0),
            quality,
        };
        let fits = [
            fit("fast", 100.0, FitQuality::Linear),
            fit("slow", 8_000.0, FitQuality::Linear),
            fit("noisy", 100.0, FitQuality::Poor),
        ];
        let failures = gate_failures(&fits, 5_000.0);
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert_eq!(
            failures[0],
            "query slow on by_namespace_day: planning grows 8000 µs per 1,000 parts (R² 0.990, linear), above \
             --max-slope 5000"
        );
        assert!(failures[1].contains("query noisy") && failures[1].contains("cannot be held"), "{failures:?}");
    }
}

//! An A/B run's query passes (`--variant`, docs/ab-runs.md): every variant's runs of a
//! query in turns, each variant on its own engine where it names a version, and the
//! variants' settings checked on the engine before anything is measured.

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};

use super::{LogsBenchmark, LogsRun, QueryVariant, plan_under, scenario_of};
use crate::ab_variants::AbRun;
use crate::breakdown::TimeBreakdown;
use crate::fixtures::{Fixture, Params};
use crate::measure::{drop_caches, measure};
use crate::query_runs::{QueryRuns, Sample, SampleKind};
use crate::sql::sql_string;
use crate::stats::StatementTag;
use crate::targets::Target;

impl LogsBenchmark {
    /// An A/B run's pass of `query`: every variant's query runs started, the caches
    /// dropped once, one warm-up per variant, then `ab.rounds` rounds, each variant once
    /// a round in the order the pass's shuffle gives (the warm-ups take its first order).
    /// Each sample goes to its variant's query runs, and to the journal as soon as it is
    /// measured, so a stop keeps every round done.
    pub(super) fn ab_query_runs(
        &self,
        run: &mut LogsRun<'_>,
        ab: &AbRun,
        pass: u64,
        query: &str,
        variant: QueryVariant,
    ) -> Result<()> {
        let sql_file = format!("logs/queries/{query}.sql");
        let sql = Fixture::load(&sql_file)?.render_one(&Params::new())?;
        let scenario = scenario_of(query, variant);
        let run_id = run.run_id();
        // Started for this pass, on a copy of the run's folder as it is now (after the bloom
        // filter, with it), and closed with it.
        let mut workers = variant_engines(ab, run.target)?;
        let mut query_runs = Vec::with_capacity(ab.variants.len());
        for (index, ab_variant) in ab.variants.iter().enumerate() {
            let target = engine_of(&mut workers, index, run.target);
            let plan = plan_under(target, &sql, &ab_variant.settings)?;
            query_runs.push(run.writer.start_query(QueryRuns {
                query: query.to_string(),
                variant,
                ab_variant: Some(ab_variant.name.clone()),
                plan,
                sql_file: sql_file.clone(),
                answer: String::new(),
                samples: Vec::new(),
            })?);
        }
        match &mut workers {
            Some(workers) => workers.iter_mut().try_for_each(drop_caches)?,
            None => drop_caches(run.target)?,
        }
        for (round, order) in (0..=ab.rounds).zip(ab.round_orders(pass)) {
            for (position, &index) in order.iter().enumerate() {
                let ab_variant = &ab.variants[index];
                let tag = StatementTag::new(&run_id, "logs", &format!("{scenario}.{}", ab_variant.name), round);
                // An error names the query's file and line.
                let target = engine_of(&mut workers, index, run.target);
                // The warm-up round is not profiled: the flame graphs are of the rounds measured.
                let settings = if round == 0 {
                    ab_variant.settings.clone()
                } else {
                    crate::profiling::profiled(&ab_variant.settings)
                };
                let measured = measure(target, &sql, &tag, &settings)?;
                let (kind, answer, turn) = if round == 0 {
                    (SampleKind::WarmUp, Some(measured.body.chars().take(2000).collect()), "warm-up".to_string())
                } else {
                    (SampleKind::Warm, None, format!("round {round}/{}", ab.rounds))
                };
                run.progress.advance(&format!(
                    "{query} {} {} {turn}: {:.1} ms, {} rows read",
                    variant.label(),
                    ab_variant.name,
                    measured.stats.server_ms(),
                    measured.stats.read_rows
                ));
                let breakdown = TimeBreakdown::of_record(&measured.stats);
                let sample = Sample {
                    kind,
                    attempt: round,
                    settings,
                    stats: measured.stats,
                    breakdown,
                    round_position: Some(position as u32),
                    answer: None,
                };
                run.writer.record_sample_into(query_runs[index], sample, answer)?;
            }
        }
        Ok(())
    }
}

/// In an A/B run whose variants name engine versions, every variant's engine: a worker
/// of its version (the run's own for a variant that names none, so that both sides pay the
/// same process and pipe), each on a hard-linked copy of the run's folder taken with
/// merges stopped; `None` when every variant runs on the run's own target.
fn variant_engines(ab: &AbRun, target: &mut Target) -> Result<Option<Vec<Target>>> {
    if ab.variants.iter().all(|variant| variant.engine_version.is_none()) {
        return Ok(None);
    }
    let own = crate::engine::engine_version()?;
    // No merge may replace a part while the workers link the folder's files.
    target.execute("SYSTEM STOP MERGES")?;
    let opened = ab
        .variants
        .iter()
        .map(|variant| {
            let engine = match &variant.engine_version {
                Some(version) => crate::engine::engine_version_named(version)?,
                None => own,
            };
            target
                .engine_beside(engine)
                .with_context(|| format!("cannot start variant {}'s engine {}", variant.name, engine.npm_version))
        })
        .collect::<Result<Vec<Target>>>();
    let resumed = target.execute("SYSTEM START MERGES");
    let workers = opened?;
    resumed?;
    Ok(Some(workers))
}

/// The engine variant `index` runs on: its worker, or the run's own target.
fn engine_of<'a>(workers: &'a mut Option<Vec<Target>>, index: usize, target: &'a mut Target) -> &'a mut Target {
    match workers {
        Some(workers) => &mut workers[index],
        None => target,
    }
}

/// The variants' names, for messages: `a, b`.
pub(super) fn variant_names(ab: &AbRun) -> String {
    ab.variants.iter().map(|variant| variant.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// Refuses, before anything is measured, a variant whose settings the engine does not
/// take: a name `system.settings` does not list, then any value it refuses (`SELECT 1`
/// with the variant's settings), so that a typo costs one line, not a run.
pub(super) fn check_variant_settings(ab: &AbRun, target: &mut Target) -> Result<()> {
    let names: BTreeSet<&str> =
        ab.variants.iter().flat_map(|variant| variant.settings.iter().map(|(name, _)| name)).collect();
    if names.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = names.iter().map(|name| sql_string(name)).collect();
    let known = target
        .query_text(&format!("SELECT name FROM system.settings WHERE name IN ({})", list.join(", ")))
        .context("cannot read the engine's settings to check the variants'")?;
    for variant in &ab.variants {
        if let Some((unknown, _)) = variant.settings.iter().find(|(name, _)| !known.lines().any(|line| line == *name)) {
            bail!(
                "--variant {}: {unknown} is not a setting of ClickHouse {} (system.settings has no such name); check \
                 its spelling",
                variant.flag(),
                target.info().engine_version
            );
        }
        target
            .run("SELECT 1", &variant.settings, "TabSeparated")
            .with_context(|| format!("--variant {}: the engine refused its settings", variant.flag()))?;
    }
    Ok(())
}

//! Each level across its complete rounds ([`WritesLevel`]), recomputed after every level:
//! its closed loop's figures, rows written per second, an INSERT's time split from the
//! counters' rises summed, the I/O-wait share and CPU, failures by code, and with a mix each
//! statement's own rate and latency.

use std::collections::BTreeMap;

use super::{CodeErrors, Decomposition, EventsDelta, RATE_KEPT, StatementFigures, WritesLevel, WritesRound};
use crate::levels::{Latency, LevelSummary, Spread, StatementRecord};
use crate::numbers::ratio;
use crate::stats::EngineEvents;

/// A level of one configuration (an A/B variant, or the run's one) across its complete
/// rounds.
pub(super) fn level_summary(
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
    let mut decomposition = Decomposition::of(&delta, events);
    if complete.is_empty() {
        decomposition = Decomposition {
            unknown: Some("no complete round (the level was stopped, or did not run)".to_string()),
            ..Decomposition::default()
        };
    }
    WritesLevel {
        variant: variant.map(str::to_string),
        schedule_lag: rate.map(|_| Latency::of(lags)),
        rate_kept: asked.map(|asked| {
            complete.iter().all(|round| round.closed_loop.qps.is_some_and(|held| held >= RATE_KEPT * asked))
        }),
        closed_loop: LevelSummary::of(clients, &loops),
        rows_per_second: Spread::of(complete.iter().map(|round| round.rows_per_second)),
        decomposition,
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

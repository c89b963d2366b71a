//! Each level across its complete rounds ([`WritesLevel`]), recomputed after every level:
//! its closed loop's figures, rows written per second, an INSERT's time split from the
//! counters' rises summed (the INSERTs' own where every round has them, the engine's
//! otherwise), the I/O-wait share and CPU, failures by code, and with a mix each
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
    // The INSERTs' own counters when every complete round has them, the engine's otherwise.
    let delta = match summed(complete.iter().map(|round| &round.inserts_own), false) {
        own @ EventsDelta::Known { .. } if !complete.is_empty() => own,
        _ => summed(complete.iter().map(|round| &round.events), true),
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
        // Unknown without a complete round (an empty sum would be 0, here -0).
        cpu_used_seconds: complete
            .iter()
            .map(|round| round.cpu.used_seconds)
            .sum::<Option<f64>>()
            .filter(|_| !complete.is_empty()),
        cpu_offered_seconds: complete
            .iter()
            .map(|round| round.cpu.offered_seconds)
            .sum::<Option<f64>>()
            .filter(|_| !complete.is_empty()),
        errors_by_code: errors,
        active_parts_max: complete.iter().filter_map(|round| round.parts.active_parts_max).max(),
        by_statement: by_statement(&complete),
    }
}

/// Counters' rises summed over rounds: unknown, with the first reason, when one round's are.
fn summed<'a>(deltas: impl Iterator<Item = &'a EventsDelta>, engine_wide: bool) -> EventsDelta {
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for delta in deltas {
        match delta {
            EventsDelta::Known { rises, .. } => {
                for (name, rise) in rises {
                    let sum = total.entry(name.clone()).or_insert(0);
                    *sum = sum.saturating_add(*rise);
                }
            }
            EventsDelta::Unknown { reason } => return EventsDelta::Unknown { reason: reason.clone() },
        }
    }
    EventsDelta::Known { engine_wide, rises: total }
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
    use crate::benchmarks::writes::decomposition::{Counted, EVENTS, INSERT_QUERIES, INSERT_TIME};

    fn round_with(inserts_own: EventsDelta) -> WritesRound {
        let example = &super::super::example::examples(1.5, 7)[0];
        let mut round = example.benchmark.rounds[0].clone();
        round.variant = None;
        round.inserts_own = inserts_own;
        round
    }

    fn own(inserts: u64, insert_us: u64) -> EventsDelta {
        let mut rises: BTreeMap<String, u64> = EVENTS.iter().map(|name| (name.to_string(), 0)).collect();
        rises.insert(INSERT_QUERIES.to_string(), inserts);
        rises.insert(INSERT_TIME.to_string(), insert_us);
        EventsDelta::Known { engine_wide: false, rises }
    }

    #[test]
    fn the_split_is_of_the_inserts_own_records_only_when_every_round_has_them() {
        let events = EngineEvents::Known { names: EVENTS.iter().map(|name| name.to_string()).collect() };
        // Two rounds of 10 and 30 INSERTs, 100 and 500 µs each: 16,000 µs over 40 INSERTs.
        let rounds = [round_with(own(10, 1_000)), round_with(own(30, 15_000))];
        let level = level_summary(None, 7, None, &rounds, &events);
        assert_eq!(level.decomposition.counted, Counted::InsertRecords);
        assert_eq!((level.decomposition.inserts, level.decomposition.insert_us), (Some(40), Some(400.0)));
        // One round without its records: the engine's counters for the level, never half of each.
        let why = "system.query_log holds 0 of the level's 30 completed INSERTs";
        let rounds = [round_with(own(10, 1_000)), round_with(EventsDelta::Unknown { reason: why.to_string() })];
        let level = level_summary(None, 7, None, &rounds, &events);
        assert_eq!(level.decomposition.counted, Counted::EngineCounters);
        // The example's engine counters: 7 of each counter a round, 14 over two.
        assert_eq!(level.decomposition.inserts, Some(14));
    }
}

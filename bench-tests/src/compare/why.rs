//! Why a query changed: its time breakdown on both sides (CPU, read wait, the rest) and
//! the ProfileEvents that moved most between them, per row read, in one line such as
//! "slower: other 40 ms -> 210 ms; ConcurrencyControlSlotsGranted x0.25 per row".

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{PlanChange, QuerySide};
use crate::numbers::{median_unsorted, ratio};
use crate::plan::{IndexStage, TableRead};
use crate::query_runs::QueryRuns;
use crate::significance::Verdict;
use crate::units::milliseconds;

/// How many moved events a comparison lists per query.
const MOVED_EVENTS: usize = 5;
/// An event whose per-query median is below this on both sides did not happen. Small
/// counts stay (one thread against two is what `max_threads = 1` changes); the ranking's
/// `+ 1` keeps their ratios from outranking the large ones that moved as much.
const SMALLEST_EVENT: f64 = 1.0;

/// Medians of a query's warm samples' time breakdown, in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakdownMedians {
    pub thread_ms: f64,
    pub cpu_ms: f64,
    pub read_wait_ms: f64,
    pub other_ms: f64,
}

/// A ProfileEvent on both sides: the median per query, and per row read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MovedEvent {
    pub event: String,
    pub baseline_per_query: f64,
    pub candidate_per_query: f64,
    /// Per row read; `None` when the side read no rows.
    pub baseline_per_row: Option<f64>,
    pub candidate_per_row: Option<f64>,
    /// Candidate over baseline, per row where both read rows, else per query; `None` over 0.
    pub ratio: Option<f64>,
}

/// Events one side counted and the other never did, by side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OneSided {
    pub baseline: Vec<String>,
    pub candidate: Vec<String>,
}

/// Why a query got faster or slower.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Why {
    /// One line: the verdict, the part of the breakdown that moved most, the events.
    pub summary: String,
    pub moved_events: Vec<MovedEvent>,
    /// Events counted on one side only: work the other did not do, or a counter its
    /// engine lacks; not ranked among the moved.
    pub counted_on_one_side: OneSided,
    /// Why the events are not known, when a side's records hold none.
    pub events_unknown: Option<String>,
}

/// The breakdown's medians over the warm samples that have one; `None` when none has.
pub(super) fn breakdown_medians<Variant>(runs: &QueryRuns<Variant>) -> Option<BreakdownMedians> {
    let breakdowns: Vec<_> = runs.warm_samples().filter_map(|sample| sample.breakdown.as_ref()).collect();
    // A median of no breakdowns is unknown, and so are the medians.
    let median_ms = |part: fn(&crate::breakdown::TimeBreakdown) -> u64| {
        median_unsorted(breakdowns.iter().map(|breakdown| part(breakdown) as f64 / 1e3).collect())
    };
    Some(BreakdownMedians {
        thread_ms: median_ms(|breakdown| breakdown.thread_us)?,
        cpu_ms: median_ms(|breakdown| breakdown.cpu_us)?,
        read_wait_ms: median_ms(|breakdown| breakdown.read_wait_us)?,
        other_ms: median_ms(|breakdown| breakdown.other_us)?,
    })
}

pub(super) fn why<Variant>(
    verdict: Verdict,
    baseline: &QueryRuns<Variant>,
    candidate: &QueryRuns<Variant>,
    baseline_side: &QuerySide,
    candidate_side: &QuerySide,
) -> Why {
    let with_events = |runs: &QueryRuns<Variant>| runs.warm_samples().any(|sample| sample.breakdown.is_some());
    let events_unknown = (!with_events(baseline) || !with_events(candidate)).then(|| {
        "a side's samples hold no ProfileEvents (their records hold the result's counters alone, as under several \
         clients at once on an engine whose counters are the process's, or in a run of concurrent clients: \
         throughput, writes)"
            .to_string()
    });
    let (moved_events, counted_on_one_side) = if events_unknown.is_none() {
        let (counted_by_a, counted_by_b) = (counted_events(baseline), counted_events(candidate));
        // An event one side never counted may be one its engine lacks: listed apart, not a move.
        let on_one_side = OneSided {
            baseline: counted_by_a.difference(&counted_by_b).cloned().collect(),
            candidate: counted_by_b.difference(&counted_by_a).cloned().collect(),
        };
        let on_both = counted_by_a.intersection(&counted_by_b).map(String::as_str);
        (moved_events(on_both, baseline, candidate, baseline_side, candidate_side), on_one_side)
    } else {
        (Vec::new(), OneSided::default())
    };
    let mut parts = Vec::new();
    if let (Some(a), Some(b)) = (&baseline_side.breakdown, &candidate_side.breakdown) {
        let moved = [
            ("CPU", a.cpu_ms, b.cpu_ms),
            ("read wait", a.read_wait_ms, b.read_wait_ms),
            ("other", a.other_ms, b.other_ms),
        ];
        // The part that moved most the way the query did: a part that fell says nothing of
        // why a query got slower.
        let the_way =
            |before: f64, after: f64| if verdict == Verdict::Slower { after - before } else { before - after };
        if let Some((name, before, after)) = moved
            .iter()
            .filter(|(_, before, after)| before.is_finite() && after.is_finite() && the_way(*before, *after) > 0.0)
            .max_by(|x, y| the_way(x.1, x.2).total_cmp(&the_way(y.1, y.2)))
        {
            parts.push(format!("{name} {} -> {}", milliseconds(Some(*before)), milliseconds(Some(*after))));
        }
    }
    let events: Vec<String> = moved_events
        .iter()
        .take(2)
        .map(|event| match event.ratio {
            Some(ratio) if ratio > 0.0 => format!("{} x{}", event.event, short_ratio(ratio)),
            // Gone on one side, or new: a ratio says nothing, the counts do.
            _ => format!("{} {} -> {}", event.event, event.baseline_per_query, event.candidate_per_query),
        })
        .collect();
    if !events.is_empty() {
        parts.push(events.join(", "));
    }
    let word = if verdict == Verdict::Faster { "faster" } else { "slower" };
    let summary = if parts.is_empty() { word.to_string() } else { format!("{word}: {}", parts.join("; ")) };
    Why { summary, moved_events, counted_on_one_side, events_unknown }
}

/// The events some warm sample of `runs` counted (a record keeps non-zero counters only).
fn counted_events<Variant>(runs: &QueryRuns<Variant>) -> BTreeSet<String> {
    runs.warm_samples().flat_map(|sample| sample.stats.profile_events.keys().cloned()).collect()
}

/// The events of `names` (counted on both sides) that moved most: by the size of the log
/// of their ratio per row read (per query where a side read none, 1 added on both sides so
/// that an event gone on one side ranks and none divides by 0), weighed by their size.
fn moved_events<'a, Variant>(
    names: impl Iterator<Item = &'a str>,
    baseline: &QueryRuns<Variant>,
    candidate: &QueryRuns<Variant>,
    baseline_side: &QuerySide,
    candidate_side: &QuerySide,
) -> Vec<MovedEvent> {
    let (baseline_rows, candidate_rows) = (baseline_side.read_rows, candidate_side.read_rows);
    // A time counter that moved by less than a twentieth of the query's own change (in
    // µs) did not make it: 6 µs of lock wait is no reason for 700 µs.
    let duration_change_us = baseline_side
        .median_ms
        .zip(candidate_side.median_ms)
        .map(|(before, after)| (after - before).abs() * 1e3)
        .unwrap_or(0.0);
    let per_query = |runs: &QueryRuns<Variant>, name: &str| {
        median_unsorted(runs.warm_samples().map(|sample| sample.stats.event(name) as f64).collect()).unwrap_or(0.0)
    };
    let per_row = |value: f64, rows: Option<f64>| rows.filter(|rows| *rows > 0.0).map(|rows| value / rows);
    let mut events: Vec<(f64, MovedEvent)> = names
        .filter_map(|name| {
            let (before, after) = (per_query(baseline, name), per_query(candidate, name));
            if before.max(after) < SMALLEST_EVENT || before == after {
                return None;
            }
            if name.ends_with("Microseconds") && (after - before).abs() < duration_change_us / 20.0 {
                return None;
            }
            let (before_per_row, after_per_row) = (per_row(before, baseline_rows), per_row(after, candidate_rows));
            let event_ratio = match (before_per_row, after_per_row) {
                (Some(before), Some(after)) => ratio(after, before),
                _ => ratio(after, before),
            };
            // How far it moved (the log of its ratio), weighed by its size up to a thousand,
            // so that a counter going from 11 to 0 does not outrank one going from 5,000 to 150.
            let weight = ((before.max(after) + 1.0).log10() / 3.0).min(1.0);
            // Per row read where both sides read rows (runs of other sizes compare so), else
            // per query; `+ 1` on the per-query counts keeps a new or gone event rankable.
            let moved = match event_ratio.filter(|ratio| *ratio > 0.0 && before > 0.0) {
                Some(ratio) => ratio.ln(),
                None => ((after + 1.0) / (before + 1.0)).ln(),
            };
            let size = moved.abs() * weight;
            Some((
                size,
                MovedEvent {
                    event: name.to_string(),
                    baseline_per_query: before,
                    candidate_per_query: after,
                    baseline_per_row: before_per_row,
                    candidate_per_row: after_per_row,
                    ratio: event_ratio,
                },
            ))
        })
        .collect();
    events.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.event.cmp(&b.1.event)));
    events.into_iter().take(MOVED_EVENTS).map(|(_, event)| event).collect()
}

/// A ratio with two significant digits: `x0.01`, `x0.25`, `x3.2`, `x120`.
pub(super) fn short_ratio(ratio: f64) -> String {
    match ratio {
        ratio if ratio >= 10.0 => format!("{ratio:.0}"),
        ratio if ratio >= 1.0 => format!("{ratio:.1}"),
        ratio if ratio >= 0.01 => format!("{ratio:.2}"),
        ratio => format!("{ratio:.1e}"),
    }
}

/// How the plans' pruning differs, read by read and stage by stage: a line for each stage
/// whose parts or granules kept differ, and for a read or stage on one side only.
pub(super) fn plan_change(baseline: Option<&[TableRead]>, candidate: Option<&[TableRead]>) -> PlanChange {
    let (Some(baseline), Some(candidate)) = (baseline, candidate) else {
        return PlanChange::Unknown { reason: "a bundle did not record the query's plan".to_string() };
    };
    let kept = |stage: &IndexStage| {
        format!(
            "{}/{} parts, {}/{} granules",
            stage.selected_parts, stage.initial_parts, stage.selected_granules, stage.initial_granules
        )
    };
    let stage_name = |stage: &IndexStage| match &stage.name {
        Some(name) => format!("{} {name}", stage.kind),
        None => stage.kind.clone(),
    };
    let mut lines = Vec::new();
    // Reads are matched by position: the database names differ between runs.
    for index in 0..baseline.len().max(candidate.len()) {
        match (baseline.get(index), candidate.get(index)) {
            (Some(a), Some(b)) => {
                for at in 0..a.stages.len().max(b.stages.len()) {
                    match (a.stages.get(at), b.stages.get(at)) {
                        (Some(x), Some(y)) if kept(x) != kept(y) || stage_name(x) != stage_name(y) => {
                            lines.push(format!("{}: {} -> {}: {}", stage_name(x), kept(x), stage_name(y), kept(y)))
                        }
                        (Some(x), None) => lines.push(format!("{}: {} -> no such stage", stage_name(x), kept(x))),
                        (None, Some(y)) => lines.push(format!("new stage {}: {}", stage_name(y), kept(y))),
                        _ => {}
                    }
                }
            }
            (Some(a), None) => lines.push(format!("read of {} -> none", a.table)),
            (None, Some(b)) => lines.push(format!("new read of {}", b.table)),
            (None, None) => {}
        }
    }
    if lines.is_empty() { PlanChange::Same } else { PlanChange::Changed { lines } }
}

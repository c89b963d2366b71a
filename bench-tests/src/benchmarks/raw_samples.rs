//! The raw samples behind a report's figures, as its HTML page lists them: every run of a
//! query (the default of [`super::Benchmark::raw_samples`]), and every round of a load
//! level (the kinds that run levels). Each list is linked from the report's table rows
//! whose first column is `query` or `clients`, and names its figures as the bundle holds
//! them: unrounded, in their own units.

use serde::Serialize;

use crate::compare::runs_label;
use crate::levels::LevelRound;
use crate::query_runs::{QueryRuns, SampleKind};
use crate::report::html::SampleTable;

/// One list per query, its forms' runs in the order they ran, linked from rows whose
/// `query` cell names it.
pub fn of_queries<Variant: Serialize>(queries: &[QueryRuns<Variant>]) -> Vec<SampleTable> {
    let mut tables: Vec<SampleTable> = Vec::new();
    for runs in queries {
        let position = match tables.iter().position(|table| table.key == runs.query) {
            Some(position) => position,
            None => {
                tables.push(SampleTable {
                    linked_from: "query".to_string(),
                    key: runs.query.clone(),
                    title: runs.query.clone(),
                    columns: [
                        "form",
                        "run",
                        "server, ms",
                        "client, ms",
                        "read_rows",
                        "read_bytes",
                        "result_rows",
                        "memory_usage",
                    ]
                    .map(str::to_string)
                    .to_vec(),
                    rows: Vec::new(),
                });
                tables.len() - 1
            }
        };
        let label = runs_label(runs, true);
        for sample in &runs.samples {
            let run = match sample.kind {
                SampleKind::DirectIo => "direct I/O".to_string(),
                SampleKind::Warm => format!("warm {}", sample.attempt),
                SampleKind::WarmUp => "warm-up".to_string(),
            };
            let stats = &sample.stats;
            tables[position].rows.push(vec![
                label.clone(),
                run,
                milliseconds(stats.server_duration_us),
                milliseconds(stats.client_duration_us),
                stats.read_rows.to_string(),
                stats.read_bytes.to_string(),
                stats.result_rows.to_string(),
                stats.memory_usage.map_or_else(|| "unknown".to_string(), |bytes| bytes.to_string()),
            ]);
        }
    }
    tables
}

/// A round of a level as its kind reports it: its A/B variant, the loop's round, and the
/// rows a second the kind's report gives for it (rows read for throughput, rows written
/// for writes).
pub struct ReportedRound<'a> {
    pub variant: Option<&'a str>,
    pub round: &'a LevelRound,
    pub rows_per_second: Option<f64>,
}

/// One list per level (a client count, of an A/B variant when it has one), every round of
/// it, linked from rows whose `clients` cell is the count (`variant: count` in an A/B
/// run).
pub fn of_levels<'a>(rounds: impl IntoIterator<Item = ReportedRound<'a>>) -> Vec<SampleTable> {
    let mut tables: Vec<SampleTable> = Vec::new();
    for ReportedRound { variant, round, rows_per_second } in rounds {
        let key = match variant {
            Some(variant) => format!("{variant}: {}", round.clients),
            None => round.clients.to_string(),
        };
        let position = match tables.iter().position(|table| table.key == key) {
            Some(position) => position,
            None => {
                let noun = if round.clients == 1 { "client" } else { "clients" };
                tables.push(SampleTable {
                    linked_from: "clients".to_string(),
                    title: format!("{key} {noun}"),
                    key,
                    columns: [
                        "round",
                        "complete",
                        "wall, s",
                        "completed",
                        "errors",
                        "per second",
                        "rows/s",
                        "p50, ms",
                        "p90, ms",
                        "p99, ms",
                        "max, ms",
                        "unknown because",
                    ]
                    .map(str::to_string)
                    .to_vec(),
                    rows: Vec::new(),
                });
                tables.len() - 1
            }
        };
        let latency = &round.latency;
        tables[position].rows.push(vec![
            round.round.to_string(),
            if round.complete { "yes" } else { "no (interrupted)" }.to_string(),
            known(round.wall_seconds),
            round.completed.to_string(),
            round.errors.to_string(),
            known(round.qps),
            known(rows_per_second),
            known(latency.p50_ms),
            known(latency.p90_ms),
            known(latency.p99_ms),
            known(latency.max_ms),
            round.unknown.clone().unwrap_or_default(),
        ]);
    }
    tables
}

/// Microseconds as milliseconds, every digit kept.
fn milliseconds(us: u64) -> String {
    format!("{}.{:03}", us / 1000, us % 1000)
}

/// A figure as recorded, or `unknown`.
pub fn known(value: Option<f64>) -> String {
    value.map_or_else(|| "unknown".to_string(), |value| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_keep_every_digit() {
        assert_eq!(milliseconds(0), "0.000");
        assert_eq!(milliseconds(2_345), "2.345");
        assert_eq!(milliseconds(31_500_007), "31500.007");
    }
}

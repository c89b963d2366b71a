//! The throughput benchmark's report section, from its bundle alone: the workload, where
//! the clients ran, each level's figures across rounds, every round, errors apart, the
//! load's Jobs against the server's count when they ran in the cluster, and the runner
//! check; and its charts, QPS and latency against clients.

use std::fmt::Write as _;

use anyhow::Result;

use super::results::ThroughputResults;
use crate::levels::{Latency, LevelBound, LevelSummary};
use crate::markdown::Table;
use crate::report::charts::{self, Line};
use crate::report::{CheckWords, clients_paragraph, load_section, runner_check_section};
use crate::stats::StatsSource;
use crate::target_info::TargetInfo;
use crate::targets::Concurrency;
use crate::units::{exact, number, per_second, plural};

fn ms(value: Option<f64>) -> String {
    value.map_or("unknown".to_string(), |ms| format!("{} ms", number(ms, 2)))
}

fn cpu(us: Option<f64>) -> String {
    us.map_or("unknown".to_string(), |us| format!("{} µs", number(us, 1)))
}

fn latency_cells(latency: &Latency) -> [String; 4] {
    [ms(latency.p50_ms), ms(latency.p90_ms), ms(latency.p99_ms), ms(latency.max_ms)]
}

pub fn markdown(results: &ThroughputResults, target: &TargetInfo) -> String {
    let workload = &results.workload;
    let mut out = String::new();
    let _ = writeln!(out, "## Throughput\n");
    let bound = match workload.bound {
        LevelBound::Duration { seconds } => format!("{} s per level", exact(seconds)),
        LevelBound::Iterations { statements } => format!("{statements} statements per level"),
    };
    let names: Vec<&str> = workload.queries.iter().map(|query| query.name.as_str()).collect();
    let _ = writeln!(
        out,
        "A closed loop: each client on a connection of its own runs the next query as soon as its last one \
         ended. Pack `{}`, design `{}`, {}; queries {}; levels of {} clients; {bound}; {} (every level \
         once a round); seed {}.\n",
        workload.pack,
        workload.design,
        plural(workload.rows, "row"),
        names.join(", "),
        workload.levels_run.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        plural(workload.rounds, "round"),
        workload.seed
    );
    if let Some(dataset) = &results.dataset {
        let _ = writeln!(out, "Dataset `{}` built in {} s.\n", dataset.name, number(dataset.seconds, 1));
    }
    let _ = writeln!(
        out,
        "QPS is completed statements over the level's wall time (from the start line to the last client's end; \
         a statement running at the deadline is finished and counted). Latency is the client's wall time around \
         each completed statement (nearest-rank percentiles). A failed statement is counted apart: it adds \
         nothing to QPS or to the percentiles.\n"
    );
    if results.statement_records == StatsSource::ResultCounters {
        let _ = writeln!(
            out,
            "Each statement's record holds its result's counters alone (rows and bytes read, result rows, \
             duration): no ProfileEvents, so no time breakdown.{}\n",
            // Events that are not each statement's own: the engine's, process-wide.
            if crate::targets::spec(target.kind).capabilities.concurrent_queries
                == (Concurrency::Parallel { events_per_statement: false })
            {
                " On the embedded engine `system.events` is process-wide: under concurrency a statement's events \
                 cannot be told from the others'."
            } else {
                ""
            }
        );
    }
    let workload = &results.workload;
    let through_tunnel = crate::targets::spec(target.kind).capabilities.in_cluster_load;
    let _ = writeln!(
        out,
        "{}\n",
        clients_paragraph(workload.load_from, &workload.clients_description(), through_tunnel, "QPS")
    );
    for note in &results.notes {
        let _ = writeln!(out, "**Note**: {note}.\n");
    }

    let _ = writeln!(out, "### Levels\n\n![QPS](qps.svg)\n\n![Latency](latency.svg)\n");
    let mut table = Table::new([
        "clients",
        "rounds",
        "QPS median (min to max)",
        "rows/s median (min to max)",
        "p50",
        "p90",
        "p99",
        "max",
        "completed",
        "errors",
        "runner CPU / statement",
    ]);
    for level in &results.levels {
        let mut cells = vec![
            level.clients.to_string(),
            level.rounds.to_string(),
            level.qps.rate_cell(),
            level.rows_per_second.rate_cell(),
        ];
        cells.extend(latency_cells(&level.latency));
        cells.extend([level.completed.to_string(), level.errors.to_string(), cpu(level.runner_cpu_us_per_statement)]);
        table.row(cells);
    }
    if table.is_empty() {
        let _ = writeln!(out, "No level completed a round.\n");
    } else {
        let _ = writeln!(out, "{table}");
    }

    let _ = writeln!(out, "### Rounds\n");
    let mut rounds = Table::new(["round", "clients", "wall", "completed", "errors", "QPS", "rows/s", "p50", "p99"]);
    for round in &results.rounds {
        let qps = match round.qps {
            Some(qps) => per_second(Some(qps)),
            None => format!("unknown ({})", round.unknown.as_deref().unwrap_or("no statement completed")),
        };
        let label = if round.complete { round.round.to_string() } else { format!("{} (interrupted)", round.round) };
        rounds.row([
            label,
            round.clients.to_string(),
            format!("{} s", number(round.wall_seconds, 3)),
            round.completed.to_string(),
            round.errors.to_string(),
            qps,
            per_second(round.rows_per_second),
            ms(round.latency.p50_ms),
            ms(round.latency.p99_ms),
        ]);
    }
    if !rounds.is_empty() {
        let _ = writeln!(out, "{rounds}");
    }

    out.push_str(&load_section(results.rounds.iter().map(|round| (None, round))));

    let errors: Vec<String> = results
        .rounds
        .iter()
        .flat_map(|round| {
            round.errors_by_query.iter().map(move |errors| {
                format!(
                    "- round {}, {}: {} failed {}; first: {}",
                    round.round,
                    plural(round.clients, "client"),
                    errors.query,
                    plural(errors.count, "time"),
                    errors.first
                )
            })
        })
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "### Errors\n\n{}\n", errors.join("\n"));
    }

    let shown = results.runner_check.as_ref().map_or(String::new(), |check| format!("`{}`", check.query));
    let words = CheckWords { shown: &shown, one: "statement", many: "statements", rate: "QPS" };
    out.push_str(&runner_check_section(results.runner_check.as_ref(), words));
    out
}

/// `qps.svg` (each level's median QPS across rounds, with the lowest and highest round's)
/// and `latency.svg` (p50 and p99 of its completed statements), against clients.
pub fn charts(results: &ThroughputResults) -> Result<Vec<(&'static str, String)>> {
    if results.levels.is_empty() {
        let nothing = charts::empty("no level completed a round");
        return Ok(vec![("qps.svg", nothing.clone()), ("latency.svg", nothing)]);
    }
    // Beyond what any run measures, a value is not drawn (a log axis over hundreds of
    // decades would take the chart forever): as unknown.
    let drawable = |value: Option<f64>| value.filter(|value| (1e-9..1e15).contains(value));
    let line = |name: &str, value: &dyn Fn(&LevelSummary) -> Option<f64>| Line {
        name: name.to_string(),
        points: results.levels.iter().map(|level| (f64::from(level.clients), drawable(value(level)))).collect(),
    };
    let qps = charts::log_log_lines(
        "QPS across rounds",
        "clients",
        "queries/s",
        &[
            line("median", &|level| level.qps.median),
            line("lowest round", &|level| level.qps.min),
            line("highest round", &|level| level.qps.max),
        ],
    )?;
    let latency = charts::log_log_lines(
        "Latency of completed statements",
        "clients",
        "ms",
        &[line("p50", &|level| level.latency.p50_ms), line("p99", &|level| level.latency.p99_ms)],
    )?;
    Ok(vec![("qps.svg", qps), ("latency.svg", latency)])
}

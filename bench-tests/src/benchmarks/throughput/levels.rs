//! How a level is said on the terminal: each level of a round as progress says it, and
//! each level across its rounds in the run's last lines.

use crate::levels::{LevelRound, LevelSummary};
use crate::units::{number, plural};

/// One level across its rounds, as the run's last lines say it: `2 clients: QPS 98 (95–110
/// across 5 rounds), p50 13.50 ms, p99 31.20 ms, 1,081 completed, 0 failed`.
pub(super) fn summary_line(level: &LevelSummary) -> String {
    let ms = |value: Option<f64>| value.map_or("unknown".to_string(), |ms| format!("{} ms", number(ms, 2)));
    let qps = |value: Option<f64>| value.map_or("unknown".to_string(), |qps| number(qps, 0));
    format!(
        "{}: QPS {} ({}–{} across {}), p50 {}, p99 {}, {} completed, {} failed",
        plural(level.clients, "client"),
        qps(level.qps.median),
        qps(level.qps.min),
        qps(level.qps.max),
        plural(level.rounds as u64, "complete round"),
        ms(level.latency.p50_ms),
        ms(level.latency.p99_ms),
        level.completed,
        level.errors
    )
}

/// One line of a level's figures, as progress says it.
pub(super) fn level_line(level: &LevelRound) -> String {
    let qps = match level.qps {
        Some(qps) => format!("{} QPS", number(qps, 0)),
        None => format!("QPS unknown: {}", level.unknown.as_deref().unwrap_or("none completed")),
    };
    format!(
        "{}: {qps}, p50 {} ms, {} completed, {} errors{}",
        plural(level.clients, "client"),
        level.latency.p50_ms.map_or("unknown".to_string(), |ms| number(ms, 2)),
        level.completed,
        level.errors,
        if level.complete { "" } else { " (interrupted)" }
    )
}

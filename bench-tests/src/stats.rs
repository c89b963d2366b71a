//! What one measured statement cost ([`QueryStats`]), the same record on every target,
//! how it was obtained ([`StatsSource`]), and the tag that names the statement in the
//! engine's logs ([`StatementTag`]). The measurement itself is `measure`'s.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The `log_comment` of a measured statement: `<run>/<scenario>/<query>/<attempt>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatementTag {
    pub run: String,
    pub scenario: String,
    pub query: String,
    pub attempt: u32,
}

impl StatementTag {
    /// What every tag looks like, as an RE2 pattern for ClickHouse's `match`: four parts,
    /// the last a number. None of the parts holds a `/` (run ids cannot, scenarios and
    /// queries are file and pack names), so `system.query_log` rows of chbench's measured
    /// statements are told from others' by their `log_comment`.
    pub const PATTERN: &str = "^[^/]+/[^/]+/[^/]+/[0-9]+$";

    pub fn new(run: &str, scenario: &str, query: &str, attempt: u32) -> StatementTag {
        StatementTag { run: run.to_string(), scenario: scenario.to_string(), query: query.to_string(), attempt }
    }
}

impl fmt::Display for StatementTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}/{}", self.run, self.scenario, self.query, self.attempt)
    }
}

/// What one measured statement cost, from whichever source the target has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryStats {
    pub log_comment: String,
    pub source: StatsSource,
    /// Rows and uncompressed bytes read from storage.
    pub read_rows: u64,
    pub read_bytes: u64,
    pub result_rows: u64,
    /// Duration the engine reports for the statement.
    pub server_duration_us: u64,
    /// Wall time around the call in this process (includes the harness and transport).
    pub client_duration_us: u64,
    /// Peak memory of the statement; unknown on the embedded engine.
    pub memory_usage: Option<u64>,
    /// ProfileEvents: the query_log map on servers, the `system.events` delta on the
    /// embedded engine, none from the result's counters alone
    /// ([`StatsSource::ResultCounters`]: unknown, not zero). Only non-zero counters are kept.
    pub profile_events: BTreeMap<String, u64>,
    /// The raw record the numbers came from (a query_log row, or the result counters and
    /// the events before and after, or the result counters alone), kept for results bundles.
    pub raw: serde_json::Value,
}

impl QueryStats {
    pub fn event(&self, name: &str) -> u64 {
        self.profile_events.get(name).copied().unwrap_or(0)
    }

    /// The engine's duration in milliseconds, as reports show it.
    pub fn server_ms(&self) -> f64 {
        self.server_duration_us as f64 / 1e3
    }

    /// The record without its raw source, for printing.
    pub fn without_raw(&self) -> QueryStats {
        QueryStats { raw: serde_json::Value::Null, ..self.clone() }
    }
}

/// How a target's statements are measured: the measurement core's one branch point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatsSource {
    /// The statement's `system.query_log` row, found by its `log_comment` (servers).
    QueryLog,
    /// The result's storage counters and the `system.events` delta around the statement
    /// (the embedded engine, which has no query_log).
    ResultAndEventsDelta,
    /// The result's counters alone, with no ProfileEvents: the embedded engine while other
    /// clients' statements run, since `system.events` is process-wide and a delta would
    /// hold theirs too.
    ResultCounters,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_read_as_the_protocol_says() {
        assert_eq!(StatementTag::new("r1", "logs", "q1", 2).to_string(), "r1/logs/q1/2");
    }
}

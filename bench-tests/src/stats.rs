//! What one measured statement cost ([`QueryStats`]), the same record on every target,
//! how it was obtained ([`StatsSource`]), and the tag that names the statement in the
//! engine's logs ([`StatementTag`]). The measurement itself is `measure`'s.

use std::collections::{BTreeMap, BTreeSet};
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
    /// Read back as `null` by a reader that asks for none ([`without_raw_records`]).
    #[serde(deserialize_with = "raw_unless_skipped")]
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

thread_local! {
    /// Whether this thread's reads of records skip their raw part ([`without_raw_records`]).
    static SKIP_RAW: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `read` with every [`QueryStats::raw`] it deserialises on this thread skipped (read
/// as `null`, its text passed over without being built): for a reader of many samples
/// that uses none of them (a comparison of two large bundles spends a third of its time
/// building them otherwise).
pub fn without_raw_records<T>(read: impl FnOnce() -> T) -> T {
    let before = SKIP_RAW.with(|skip| skip.replace(true));
    let value = read();
    SKIP_RAW.with(|skip| skip.set(before));
    value
}

fn raw_unless_skipped<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<serde_json::Value, D::Error> {
    if SKIP_RAW.with(std::cell::Cell::get) {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(serde_json::Value::Null)
    } else {
        serde_json::Value::deserialize(deserializer)
    }
}

/// Which counters the engine has, or why that is unknown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum EngineEvents {
    Known { names: BTreeSet<String> },
    Unknown { reason: String },
}

impl EngineEvents {
    /// Whether the engine has counter `name`: unknown (`None`) when the list is.
    pub fn has(&self, name: &str) -> Option<bool> {
        match self {
            EngineEvents::Known { names } => Some(names.contains(name)),
            EngineEvents::Unknown { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_read_as_the_protocol_says() {
        assert_eq!(StatementTag::new("r1", "logs", "q1", 2).to_string(), "r1/logs/q1/2");
    }

    #[test]
    fn a_reader_that_asks_for_no_raw_records_reads_them_as_null_and_others_keep_them() {
        let record = r#"{"log_comment": "r/logs/q1/1", "source": "query_log", "read_rows": 1, "read_bytes": 2,
            "result_rows": 1, "server_duration_us": 3, "client_duration_us": 4, "memory_usage": null,
            "profile_events": {"SelectedRows": 1}, "raw": {"query_id": "x", "nested": [1, {"a": 2}]}}"#;
        let kept: QueryStats = serde_json::from_str(record).unwrap();
        assert_eq!(kept.raw["nested"][1]["a"], 2);
        let skipped: QueryStats = without_raw_records(|| serde_json::from_str(record)).unwrap();
        assert_eq!(skipped.raw, serde_json::Value::Null);
        assert_eq!(QueryStats { raw: serde_json::Value::Null, ..kept.clone() }, skipped);
        // Only inside: the next read keeps its record again.
        assert_eq!(serde_json::from_str::<QueryStats>(record).unwrap(), kept);
    }
}

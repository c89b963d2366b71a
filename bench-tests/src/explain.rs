//! Pruning structure from `EXPLAIN indexes = 1, json = 1`: for every MergeTree read in
//! a plan, the parts and granules each index stage (MinMax, Partition, PrimaryKey, Skip)
//! started with and kept; and the query an `EXPLAIN` statement explains.
//!
//! Skip indexes are applied while planning in every measured session
//! ([`Settings::session_defaults`](crate::settings::Settings::session_defaults)), so a
//! skip stage's counts are what the read kept. A statement that sets
//! `use_skip_indexes_on_data_read = 1` itself (or follows a `SET` of it) leaves its skip
//! indexes to the read: its skip stages are marked [`IndexStage::applied_on_data_read`],
//! and with its own SETTINGS the plan's skip stages keep every part and granule they were
//! given (docs/embedded-engine.md has the measured facts).

use anyhow::{Context, Result};
use serde_json::Value;

pub use crate::plan::{IndexStage, TableRead};
use crate::sql::{Sql, one_line};
use crate::targets::Target;

/// Runs `EXPLAIN indexes = 1, json = 1` for a SELECT and returns its MergeTree reads,
/// their skip stages marked when the SELECT applies skip indexes while reading. An error
/// names the SELECT's file and line when it came from a fixture.
pub fn explain_indexes<S: Sql + ?Sized>(target: &mut Target, select: &S) -> Result<Vec<TableRead>> {
    let sql = select.sql().trim().trim_end_matches(';');
    let reads = (|| -> Result<Vec<TableRead>> {
        let plan = target.query_text(&format!("EXPLAIN indexes = 1, json = 1 {sql}"))?;
        let mut reads =
            parse_explain(&plan).with_context(|| format!("cannot read the EXPLAIN of: {}", one_line(sql)))?;
        name_projection_tables(target, &mut reads)?;
        if applies_skip_indexes_on_data_read(target, sql)? {
            for stage in reads.iter_mut().flat_map(|read| &mut read.stages).filter(|stage| stage.kind == "Skip") {
                stage.applied_on_data_read = true;
            }
        }
        Ok(reads)
    })();
    match select.location() {
        Some(location) => reads.context(location),
        None => reads,
    }
}

/// A read of a projection, which the plan names by the projection alone (`by_v`), named
/// by its table (`db.t`) with the projection beside it, from `system.projections` of the
/// current database; a name that is a table stays as it is. A server without
/// `system.projections` (before 24.11) keeps the plan's names.
fn name_projection_tables(target: &mut Target, reads: &mut [TableRead]) -> Result<()> {
    #[derive(serde::Deserialize)]
    struct Projection {
        database: String,
        table: String,
        name: String,
    }
    let unresolved = |read: &TableRead| read.projection.is_none() && !read.table.contains('.');
    if !reads.iter().any(unresolved) {
        return Ok(());
    }
    let Ok(projections) = target.query_rows::<Projection>(
        "SELECT database, table, name FROM system.projections WHERE database = currentDatabase() \
         AND name NOT IN (SELECT name FROM system.tables WHERE database = currentDatabase())",
    ) else {
        return Ok(());
    };
    for read in reads.iter_mut().filter(|read| unresolved(read)) {
        if let Some(projection) = projections.iter().find(|projection| projection.name == read.table) {
            read.projection = Some(projection.name.clone());
            read.table = format!("{}.{}", projection.database, projection.table);
        }
    }
    Ok(())
}

/// The setting that moves skip indexes from planning to reading.
const ON_DATA_READ: &str = "use_skip_indexes_on_data_read";

/// Whether the SELECT applies skip indexes while reading, so that its `SelectedParts`
/// event counts parts before them: the session's value (a `SET` earlier in the session,
/// where settings persist; the session defaults have it off), or the SELECT's own
/// SETTINGS, which the engine's query tree shows, one `SETTINGS` line per query (asked
/// only of a SELECT that names the setting).
pub fn applies_skip_indexes_on_data_read(target: &mut Target, sql: &str) -> Result<bool> {
    let session = target
        .query_text(&format!("SELECT getSetting('{ON_DATA_READ}')"))
        .with_context(|| format!("cannot read the session's {ON_DATA_READ}"))?;
    if is_on(session.trim()) {
        return Ok(true);
    }
    if !sql.to_ascii_lowercase().contains(ON_DATA_READ) {
        return Ok(false);
    }
    let tree = target
        .query_text(&format!("EXPLAIN QUERY TREE {sql}"))
        .with_context(|| format!("cannot read the settings ({ON_DATA_READ}) of: {}", one_line(sql)))?;
    Ok(query_tree_turns_on_data_read_on(&tree))
}

/// A setting's value that turns it on, as ClickHouse prints a UInt or Bool one.
fn is_on(value: &str) -> bool {
    matches!(value.to_ascii_lowercase().as_str(), "1" | "true")
}

/// A value as the query tree prints it, without its quotes (TabSeparated escapes them).
fn unquoted(value: &str) -> &str {
    value.trim_matches(|character| character == '\'' || character == '\\')
}

/// Whether a `SETTINGS` line of an `EXPLAIN QUERY TREE` sets the setting to 1 or true.
fn query_tree_turns_on_data_read_on(tree: &str) -> bool {
    tree.lines().filter_map(|line| line.trim().strip_prefix("SETTINGS ")).any(|settings| {
        settings.split_whitespace().any(|setting| match setting.split_once('=') {
            Some((name, value)) => name == ON_DATA_READ && is_on(unquoted(value)),
            None => false,
        })
    })
}

/// Parses the JSON plan (an array with one `{"Plan": ...}` object).
pub fn parse_explain(json: &str) -> Result<Vec<TableRead>> {
    let document: Value = serde_json::from_str(json.trim()).context("EXPLAIN output is not JSON")?;
    let mut reads = Vec::new();
    let roots = document.as_array().map(Vec::as_slice).unwrap_or_default();
    for root in roots {
        if let Some(plan) = root.get("Plan") {
            collect_reads(plan, &mut reads);
        }
    }
    Ok(reads)
}

fn collect_reads(node: &Value, reads: &mut Vec<TableRead>) {
    if node.get("Node Type").and_then(Value::as_str) == Some("ReadFromMergeTree") {
        let stages = node
            .get("Indexes")
            .and_then(Value::as_array)
            .map(|indexes| indexes.iter().map(index_stage).collect())
            .unwrap_or_default();
        let table = node.get("Description").and_then(Value::as_str).unwrap_or("").to_string();
        reads.push(TableRead { table, projection: None, stages });
    }
    for child in node.get("Plans").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        collect_reads(child, reads);
    }
}

fn index_stage(index: &Value) -> IndexStage {
    let count = |key: &str| index.get(key).and_then(Value::as_u64).unwrap_or(0);
    IndexStage {
        kind: index.get("Type").and_then(Value::as_str).unwrap_or("").to_string(),
        name: index.get("Name").and_then(Value::as_str).map(str::to_string),
        initial_parts: count("Initial Parts"),
        selected_parts: count("Selected Parts"),
        initial_granules: count("Initial Granules"),
        selected_granules: count("Selected Granules"),
        applied_on_data_read: false,
    }
}

/// What an `EXPLAIN` statement explains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Explained<'a> {
    /// `EXPLAIN [PLAN] [options] query`: a plan, whose index stages
    /// [`explain_indexes`] reads from `query`.
    Plan { query: &'a str },
    /// Another kind (`AST`, `SYNTAX`, `QUERY TREE`, `PIPELINE`, `ESTIMATE`...): no index
    /// stages. Its kind as written.
    Other { kind: String },
}

/// The kinds of `EXPLAIN` other than `PLAN`, by their first word.
const OTHER_KINDS: [&str; 6] = ["AST", "SYNTAX", "QUERY", "PIPELINE", "ESTIMATE", "TABLE"];

/// What `sql` explains, when it is an `EXPLAIN` statement (past leading comments); its
/// options (`indexes = 1, json = 1`) are skipped, so the plan's stages are read the way
/// a pack's query's are, whatever format the statement asked for.
pub fn explained(sql: &str) -> Option<Explained<'_>> {
    let rest = past_comments(sql);
    let (word, after) = split_word(rest);
    if !word.eq_ignore_ascii_case("EXPLAIN") {
        return None;
    }
    let (kind, after_kind) = split_word(after.trim_start());
    let upper = kind.to_ascii_uppercase();
    if OTHER_KINDS.contains(&upper.as_str()) {
        let kind = if upper == "QUERY" || upper == "TABLE" {
            format!("{upper} {}", split_word(after_kind.trim_start()).0.to_ascii_uppercase())
        } else {
            upper
        };
        return Some(Explained::Other { kind });
    }
    let mut rest = if upper == "PLAN" { after_kind } else { after };
    // Options: `name = value` pairs separated by commas; the query is what follows.
    loop {
        let candidate = rest.trim_start();
        let (name, after_name) = split_word(candidate);
        let Some(after_equals) = after_name.trim_start().strip_prefix('=') else {
            return Some(Explained::Plan { query: candidate.trim().trim_end_matches(';') });
        };
        if name.is_empty() {
            return Some(Explained::Plan { query: candidate.trim().trim_end_matches(';') });
        }
        let value = after_equals.trim_start();
        let value_end = value.find(|c: char| c.is_whitespace() || c == ',').unwrap_or(value.len());
        rest = value[value_end..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

/// `sql` past leading whitespace and comments.
fn past_comments(mut sql: &str) -> &str {
    loop {
        sql = sql.trim_start();
        if let Some(comment) = sql.strip_prefix("--") {
            sql = comment.split_once('\n').map_or("", |(_, rest)| rest);
        } else if let Some(comment) = sql.strip_prefix("/*") {
            sql = comment.split_once("*/").map_or("", |(_, rest)| rest);
        } else {
            return sql;
        }
    }
}

/// The leading identifier of `text` and what follows it.
fn split_word(text: &str) -> (&str, &str) {
    let end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(text.len());
    text.split_at(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape the engine printed for a primary-key range on this machine (26.7).
    const PLAN: &str = r#"[{"Plan": {"Node Type": "Expression", "Plans": [{"Node Type": "Filter", "Plans": [
        {"Node Type": "ReadFromMergeTree", "Description": "d1.t", "Indexes": [
          {"Type": "Min-Max", "Keys": ["day"], "Initial Parts": 4, "Selected Parts": 2, "Initial Granules": 130, "Selected Granules": 64},
          {"Type": "PrimaryKey", "Keys": ["k"], "Initial Parts": 2, "Selected Parts": 1, "Initial Granules": 64, "Selected Granules": 1},
          {"Type": "Skip", "Name": "trace_bf", "Initial Parts": 1, "Selected Parts": 1, "Initial Granules": 1, "Selected Granules": 1}
        ]}]}]}}]"#;

    #[test]
    fn stages_are_read_in_order_with_their_counts() {
        let reads = parse_explain(PLAN).unwrap();
        assert_eq!(reads.len(), 1);
        assert_eq!(reads[0].table, "d1.t");
        let kinds: Vec<_> = reads[0].stages.iter().map(|stage| stage.kind.as_str()).collect();
        assert_eq!(kinds, ["Min-Max", "PrimaryKey", "Skip"]);
        assert_eq!(reads[0].stage("PrimaryKey").unwrap().selected_granules, 1);
        assert_eq!(reads[0].stage("Skip").unwrap().name.as_deref(), Some("trace_bf"));
        assert_eq!(reads[0].granules_selected(), Some(1));
    }

    #[test]
    fn an_explain_statement_names_the_query_it_explains() {
        let query = |sql| match explained(sql) {
            Some(Explained::Plan { query }) => query,
            other => panic!("{other:?}"),
        };
        assert_eq!(query("-- why\nEXPLAIN indexes = 1 SELECT 1;"), "SELECT 1");
        assert_eq!(query("explain plan indexes=1, json = 1\n  WITH 1 AS x SELECT x"), "WITH 1 AS x SELECT x");
        assert_eq!(query("/* a */ EXPLAIN SELECT count() FROM t"), "SELECT count() FROM t");
        let other = |sql| match explained(sql) {
            Some(Explained::Other { kind }) => kind,
            found => panic!("{found:?}"),
        };
        assert_eq!(other("EXPLAIN PIPELINE SELECT 1"), "PIPELINE");
        assert_eq!(other("EXPLAIN query tree SELECT 1"), "QUERY TREE");
        assert_eq!(explained("SELECT 'EXPLAIN'"), None);
        assert_eq!(explained("EXPLAINED"), None);
    }

    #[test]
    fn the_query_tree_says_when_skip_indexes_are_left_to_the_read() {
        let tree =
            "QUERY id: 0\n  JOIN TREE\n    TABLE id: 3\n  SETTINGS max_threads=2 use_skip_indexes_on_data_read=1\n";
        assert!(query_tree_turns_on_data_read_on(tree));
        assert!(query_tree_turns_on_data_read_on("  SETTINGS use_skip_indexes_on_data_read=\\'true\\'"));
        assert!(!query_tree_turns_on_data_read_on("  SETTINGS use_skip_indexes_on_data_read=0"));
        assert!(!query_tree_turns_on_data_read_on("QUERY id: 0\n  SETTINGS max_threads=2"));
    }

    #[test]
    fn a_skip_stage_applied_on_data_read_keeps_what_the_read_kept() {
        let mut stage = parse_explain(PLAN).unwrap()[0].stages[2].clone();
        assert_eq!((stage.granules_kept(Some(0)), stage.parts_kept()), (Some(1), Some(1)));
        stage.applied_on_data_read = true;
        assert_eq!((stage.granules_kept(Some(0)), stage.parts_kept()), (Some(0), None));
        // The flag is written only when set, so plans without it serialize as before.
        let json = serde_json::to_string(&stage).unwrap();
        assert!(json.ends_with(r#""selected_granules":1,"applied_on_data_read":true}"#), "{json}");
        stage.applied_on_data_read = false;
        assert!(!serde_json::to_string(&stage).unwrap().contains("applied_on_data_read"));
    }

    #[test]
    fn a_plan_without_indexes_has_reads_without_stages() {
        let reads = parse_explain(r#"[{"Plan": {"Node Type": "ReadFromMergeTree", "Description": "d.t"}}]"#).unwrap();
        assert_eq!(reads[0].stages, vec![]);
        assert_eq!(reads[0].granules_selected(), None);
    }
}

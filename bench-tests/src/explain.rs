//! Pruning structure from `EXPLAIN indexes = 1, json = 1`: for every MergeTree read in
//! a plan, the parts and granules each index stage (MinMax, Partition, PrimaryKey, Skip)
//! started with and kept.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sql::{Sql, one_line};
use crate::targets::Target;

/// One index stage of one MergeTree read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexStage {
    /// `Min-Max`, `Partition`, `PrimaryKey` or `Skip`, as the engine names them.
    pub kind: String,
    /// The skip index's name (`None` for the built-in stages).
    pub name: Option<String>,
    pub initial_parts: u64,
    pub selected_parts: u64,
    pub initial_granules: u64,
    pub selected_granules: u64,
}

/// One `ReadFromMergeTree` step and its index stages, in the order they ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRead {
    /// `database.table` as the plan names it.
    pub table: String,
    pub stages: Vec<IndexStage>,
}

impl TableRead {
    pub fn stage(&self, kind: &str) -> Option<&IndexStage> {
        self.stages.iter().find(|stage| stage.kind == kind)
    }

    /// Granules left after the last stage (all granules when no index applied).
    pub fn granules_selected(&self) -> Option<u64> {
        self.stages.last().map(|stage| stage.selected_granules)
    }
}

/// Runs `EXPLAIN indexes = 1, json = 1` for a SELECT and returns its MergeTree reads.
/// An error names the SELECT's file and line when it came from a fixture.
pub fn explain_indexes<S: Sql + ?Sized>(target: &mut Target, select: &S) -> Result<Vec<TableRead>> {
    let sql = select.sql().trim().trim_end_matches(';');
    let reads = target.query_text(&format!("EXPLAIN indexes = 1, json = 1 {sql}")).and_then(|plan| {
        parse_explain(&plan).with_context(|| format!("cannot read the EXPLAIN of: {}", one_line(sql)))
    });
    match select.location() {
        Some(location) => reads.context(location),
        None => reads,
    }
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
        reads.push(TableRead { table, stages });
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
    }
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
    fn a_plan_without_indexes_has_reads_without_stages() {
        let reads = parse_explain(r#"[{"Plan": {"Node Type": "ReadFromMergeTree", "Description": "d.t"}}]"#).unwrap();
        assert_eq!(reads[0].stages, vec![]);
        assert_eq!(reads[0].granules_selected(), None);
    }
}

//! A query plan's pruning as a bundle and a snapshot record it: each MergeTree read and
//! the parts and granules its index stages started with and kept. `explain` reads it from
//! the engine (`EXPLAIN indexes = 1, json = 1`); it lives here, among the records, so that
//! a bundle's query runs can hold it and a comparison read it without a target.

use serde::{Deserialize, Serialize};

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
    /// A skip stage the statement applies while reading (`use_skip_indexes_on_data_read
    /// = 1`, in its own SETTINGS or set earlier in the session): what the read kept is the
    /// statement's granules read (the `SelectedMarks` event; see
    /// [`IndexStage::granules_kept`]). When the statement's own SETTINGS turn it on, the
    /// plan does not evaluate the index and `selected_*` are the counts it was given.
    /// Absent (false) in JSON and snapshots otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub applied_on_data_read: bool,
}

impl IndexStage {
    /// The granules this stage kept, as the read did: the plan's count, or for a skip
    /// stage applied while reading, the granules the statement read (`granules_read`,
    /// what every skip index together kept; `None` when that is unknown).
    pub fn granules_kept(&self, granules_read: Option<u64>) -> Option<u64> {
        if self.applied_on_data_read { granules_read } else { Some(self.selected_granules) }
    }

    /// The parts this stage kept, when the plan knows them: unknown for a skip stage
    /// applied while reading (the read's `SelectedParts` counts parts before skip indexes).
    pub fn parts_kept(&self) -> Option<u64> {
        (!self.applied_on_data_read).then_some(self.selected_parts)
    }
}

/// One `ReadFromMergeTree` step and its index stages, in the order they ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRead {
    /// `database.table` as the plan names it; the projection's table when the read is of
    /// a projection (the plan names the projection alone).
    pub table: String,
    /// The projection the read used, when it used one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<String>,
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

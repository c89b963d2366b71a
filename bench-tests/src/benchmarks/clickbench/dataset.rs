//! The shipped hits-like table (`fixtures/clickbench/`): its fixtures, the disk a run of
//! it needs, and the prepared dataset the tests share ([`shipped_dataset`], built once per
//! row count and engine by [`crate::dataset`]).

use crate::dataset::{BytesPerRow, Dataset, DiskEstimate};
use crate::fixtures::Params;

/// The fixtures that create and fill the shipped table, in order.
pub const DATASET_FILES: [&str; 2] = ["clickbench/create.sql", "clickbench/generator.sql"];
/// The database the prepared dataset fills.
pub const DATABASE: &str = "clickbench";
/// Bytes on disk per row at a run's peak: the table as loaded measured 30 at 2 M and 5 M
/// rows (`system.tables.total_bytes`), doubled for the parts merges replace and have not
/// yet removed.
const RUN_PEAK_BYTES_PER_ROW: u64 = 64;

/// The shipped table at `rows` rows, as a prepared dataset (tests open a copy of it).
pub fn shipped_dataset(rows: u64) -> Dataset {
    Dataset::new(&format!("clickbench_{rows}"), DATABASE, &DATASET_FILES, Params::new().with("rows", rows))
}

/// Refuses `--rows` whose table would not fit in `folder`, where the engine keeps its data.
pub fn run_disk_estimate(rows: u64) -> DiskEstimate {
    let per_row = BytesPerRow {
        bytes: RUN_PEAK_BYTES_PER_ROW,
        basis: "the shipped table's bytes/row at a run's peak, with room for merges".to_string(),
    };
    DiskEstimate { what: format!("--rows {rows}"), rows, per_row }
}

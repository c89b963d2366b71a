//! What a table looks like on disk, from the system tables: active parts and partitions
//! (`system.parts`) and bytes per column (`system.parts_columns`), in the current
//! database.
//!
//! Per-column sizes exist only for wide parts (one file per column). A part smaller
//! than the table's `min_bytes_for_wide_part` (10 MB by default) is compact: all
//! columns in one file, and `system.parts_columns` reports 0 bytes for each of its
//! columns. Such sizes are unknown, never zero: [`column_sizes`] sums the wide parts
//! only and says what the sums leave out, while the table's totals from `system.parts`
//! stay known.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::sql::sql_string;
use crate::table_bytes::ColumnBytes;
use crate::targets::Target;

/// Active parts of one table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartsSummary {
    pub active_parts: u64,
    /// Active parts that keep all columns in one file (no per-column sizes), and their
    /// compressed bytes.
    pub compact_parts: u64,
    pub compact_compressed_bytes: u64,
    pub partitions: u64,
    pub rows: u64,
    pub marks: u64,
    pub bytes_on_disk: u64,
    /// Column data of every active part, whatever its kind.
    pub data_compressed_bytes: u64,
    pub data_uncompressed_bytes: u64,
}

pub fn parts_summary(target: &mut Target, table: &str) -> Result<PartsSummary> {
    // An aggregate without GROUP BY always returns one row, zeros for no parts. Columns
    // are qualified (`p.`): an alias named like a column would otherwise stand for it.
    let sql = format!(
        "SELECT count() AS active_parts, countIf(p.part_type = 'Compact') AS compact_parts, \
         sumIf(p.data_compressed_bytes, p.part_type = 'Compact') AS compact_compressed_bytes, \
         uniqExact(p.partition_id) AS partitions, sum(p.rows) AS rows, sum(p.marks) AS marks, \
         sum(p.bytes_on_disk) AS bytes_on_disk, sum(p.data_compressed_bytes) AS data_compressed_bytes, \
         sum(p.data_uncompressed_bytes) AS data_uncompressed_bytes \
         FROM system.parts AS p WHERE p.active AND p.database = currentDatabase() AND p.table = {}",
        sql_string(table)
    );
    let mut rows: Vec<PartsSummary> = target.query_rows(&sql)?;
    rows.pop().with_context(|| format!("system.parts returned no summary row for table {table}"))
}

/// Bytes per column of a table, or why they cannot be known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnSizes {
    /// Every active part is wide: the sums cover the whole table. In table order.
    Known(Vec<ColumnBytes>),
    /// Some active parts are compact: the sums cover the wide parts only, and `note`
    /// says how much of the table they leave out.
    WideOnly { columns: Vec<ColumnBytes>, note: String },
    /// Every active part is compact.
    Unknown { reason: String },
}

/// Why compact parts have no per-column sizes, and what gives wide parts.
const COMPACT: &str = "compact parts keep all columns in one file (ClickHouse writes parts under \
                       min_bytes_for_wide_part, 10 MB by default, that way) and have no per-column \
                       sizes; more rows, or min_bytes_for_wide_part = 0 on the table, give wide parts";

/// Bytes per column, summed over the wide parts (see the module docs).
pub fn column_sizes(target: &mut Target, table: &str) -> Result<ColumnSizes> {
    let parts = parts_summary(target, table)?;
    column_sizes_of(target, table, &parts)
}

/// [`column_sizes`], for a caller that has already read the table's [`parts_summary`].
pub fn column_sizes_of(target: &mut Target, table: &str, parts: &PartsSummary) -> Result<ColumnSizes> {
    if parts.compact_parts == 0 {
        return Ok(ColumnSizes::Known(query_column_bytes(target, table)?));
    }
    if parts.compact_parts == parts.active_parts {
        return Ok(ColumnSizes::Unknown {
            reason: format!("all {} active parts of {table} are compact: {COMPACT}", parts.active_parts),
        });
    }
    let share = crate::units::percent(
        crate::numbers::ratio(parts.compact_compressed_bytes as f64, parts.data_compressed_bytes as f64),
        "an unknown share",
    );
    Ok(ColumnSizes::WideOnly {
        columns: query_column_bytes(target, table)?,
        note: format!(
            "per-column sizes cover the wide parts only: compact parts {} of {} ({} of {table}'s compressed \
             bytes) are left out; {COMPACT}",
            parts.compact_parts, parts.active_parts, share
        ),
    })
}

/// Bytes per column over the whole table, in table order; an error naming the reason
/// when some part is compact.
pub fn column_bytes(target: &mut Target, table: &str) -> Result<Vec<ColumnBytes>> {
    match column_sizes(target, table)? {
        ColumnSizes::Known(columns) => Ok(columns),
        ColumnSizes::WideOnly { note: reason, .. } | ColumnSizes::Unknown { reason } => {
            bail!("no per-column sizes for the whole table: {reason}")
        }
    }
}

/// Sums over the wide parts: compact parts report 0 bytes for every column.
fn query_column_bytes(target: &mut Target, table: &str) -> Result<Vec<ColumnBytes>> {
    let sql = format!(
        "SELECT column, sum(column_data_compressed_bytes) AS compressed_bytes, \
         sum(column_data_uncompressed_bytes) AS uncompressed_bytes, sum(column_marks_bytes) AS marks_bytes \
         FROM system.parts_columns WHERE active AND part_type = 'Wide' AND database = currentDatabase() \
         AND table = {} GROUP BY column ORDER BY min(column_position)",
        sql_string(table)
    );
    target.query_rows(&sql)
}

/// Compressed and uncompressed bytes of one data-skipping index of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexBytes {
    pub data_compressed_bytes: u64,
    pub data_uncompressed_bytes: u64,
}

/// The size of skip index `index` on `table` (from `system.data_skipping_indices`).
pub fn skip_index_bytes(target: &mut Target, table: &str, index: &str) -> Result<IndexBytes> {
    let sql = format!(
        "SELECT data_compressed_bytes, data_uncompressed_bytes FROM system.data_skipping_indices \
         WHERE database = currentDatabase() AND table = {} AND name = {}",
        sql_string(table),
        sql_string(index)
    );
    let mut sizes: Vec<IndexBytes> = target.query_rows(&sql)?;
    match sizes.pop() {
        Some(size) => Ok(size),
        None => bail!("table {table} has no skip index {index}"),
    }
}

/// Waits until the current database has no unfinished mutation (e.g. a
/// `MATERIALIZE INDEX`); a mutation that reports a failure ends the wait with its reason.
pub fn wait_for_mutations(target: &mut Target, timeout: Duration) -> Result<()> {
    #[derive(Deserialize)]
    struct Pending {
        table: String,
        mutation_id: String,
        command: String,
        latest_fail_reason: String,
    }
    let started = Instant::now();
    loop {
        crate::interrupt::check()?;
        let pending: Vec<Pending> = target.query_rows(
            "SELECT table, mutation_id, command, latest_fail_reason FROM system.mutations \
             WHERE database = currentDatabase() AND NOT is_done",
        )?;
        let Some(first) = pending.first() else { return Ok(()) };
        if !first.latest_fail_reason.is_empty() {
            bail!(
                "mutation {} on {} ({}) failed: {}",
                first.mutation_id,
                first.table,
                first.command,
                first.latest_fail_reason
            );
        }
        if started.elapsed() > timeout {
            bail!(
                "mutation {} on {} ({}) still running after {:?}",
                first.mutation_id,
                first.table,
                first.command,
                timeout
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

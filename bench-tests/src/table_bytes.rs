//! Bytes of a table, in all and per column, as a results bundle records them: a table at
//! one moment ([`StorageSnapshot`]), its totals ([`TableBytes`]) and one column's
//! ([`ColumnBytes`]). Reading them from the system tables is `table_parts`'s.

use serde::{Deserialize, Serialize};

use crate::numbers::ratio;

/// Bytes of one table, in all and per column, at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageSnapshot {
    /// When it was taken, e.g. `as ingested, 26 active parts`.
    pub label: String,
    pub table: String,
    pub codec: String,
    pub active_parts: u64,
    pub partitions: u64,
    /// Active parts that keep all columns in one file: ClickHouse records no per-column
    /// sizes for them.
    pub compact_parts: u64,
    /// The whole table's data bytes, from `system.parts` (known for every kind of part).
    pub table_bytes: TableBytes,
    /// Bytes per column, summed over the wide parts; empty when every part is compact.
    pub columns: Vec<ColumnBytes>,
    /// What `columns` leaves out (compact parts), when it leaves anything out.
    pub columns_note: Option<String>,
}

/// Compressed and uncompressed data bytes of a whole table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableBytes {
    pub compressed_bytes: u64,
    pub uncompressed_bytes: u64,
}

impl StorageSnapshot {
    pub fn compressed_bytes(&self) -> u64 {
        self.table_bytes.compressed_bytes
    }

    pub fn uncompressed_bytes(&self) -> u64 {
        self.table_bytes.uncompressed_bytes
    }

    /// Uncompressed over compressed bytes of the whole table; unknown for an empty table.
    pub fn compression_ratio(&self) -> Option<f64> {
        ratio(self.uncompressed_bytes() as f64, self.compressed_bytes() as f64)
    }
}

/// Compressed and uncompressed bytes of one column over the table's active parts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnBytes {
    pub column: String,
    pub compressed_bytes: u64,
    pub uncompressed_bytes: u64,
    pub marks_bytes: u64,
}

impl ColumnBytes {
    /// Uncompressed over compressed (0 for an empty column).
    pub fn compression_ratio(&self) -> f64 {
        if self.compressed_bytes == 0 { 0.0 } else { self.uncompressed_bytes as f64 / self.compressed_bytes as f64 }
    }
}

//! The `logs` dataset (`fixtures/logs/`): the source's synthetic Kubernetes logs, and
//! the deliberately broken designs the scenarios must catch.
//!
//! The source generates 100 M rows 6 ms apart, a ~6.94-day span in 7 daily partitions.
//! Scaled down, the step grows so that the span stays: `step_ms = 600,000,000 / rows`.
//! Then every window keeps its share of the rows (Q1's hour ≈ 0.0006 N, Q2's two days
//! 2 / 6.94 N) while pruned reads stay a couple of granules.

use super::Dataset;
use crate::fixtures::Params;

/// The source's span: 100,000,000 rows x 6 ms.
pub const SPAN_MS: u64 = 600_000_000;
/// The source's row count.
pub const SOURCE_ROWS: u64 = 100_000_000;
/// Rows per granule (the schema keeps MergeTree's default).
pub const INDEX_GRANULARITY: u64 = 8192;
/// The bloom filter's GRANULARITY: granules per index block.
pub const BLOOM_GRANULARITY: u64 = 4;
/// The bloom filter's configured false-positive rate.
pub const BLOOM_FALSE_POSITIVE_RATE: f64 = 0.01;

/// The timestamp step that keeps the source's span at `rows` rows (at least 1 ms).
pub fn step_ms(rows: u64) -> u64 {
    (SPAN_MS / rows.max(1)).max(1)
}

/// Which design of the table to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// The source's schema, with the ZSTD(3) copy and the bloom filter.
    Source,
    /// `ORDER BY (timestamp, namespace)`: time first.
    OrderByTimestampFirst,
    /// No `PARTITION BY`.
    NoPartitionBy,
    /// The source's schema without the bloom filter.
    NoBloomFilter,
    /// The source's `logs` table alone (no ZSTD copy, no bloom filter): cheaper to build
    /// at larger scales for claims about the table itself.
    TableOnly,
}

impl Design {
    pub fn name(self) -> &'static str {
        match self {
            Design::Source => "source",
            Design::OrderByTimestampFirst => "order_by_timestamp_first",
            Design::NoPartitionBy => "no_partition_by",
            Design::NoBloomFilter => "no_bloom_filter",
            Design::TableOnly => "table_only",
        }
    }

    fn fixtures(self) -> Vec<&'static str> {
        let schema = match self {
            Design::Source | Design::NoBloomFilter | Design::TableOnly => "logs/schema.sql",
            Design::OrderByTimestampFirst => "logs/broken/order_by_timestamp_first.sql",
            Design::NoPartitionBy => "logs/broken/no_partition_by.sql",
        };
        let mut fixtures = vec![schema, "logs/generator.sql", "logs/settle.sql"];
        if self == Design::Source {
            fixtures.extend(["logs/zstd_schema.sql", "logs/zstd_insert.sql", "logs/settle_zstd.sql"]);
        }
        if !matches!(self, Design::NoBloomFilter | Design::TableOnly) {
            fixtures.push("logs/bloom_filter.sql");
        }
        fixtures
    }
}

/// The `logs` dataset at `rows` rows in the given design; tables live in database `logs`.
pub fn logs_dataset(rows: u64, design: Design) -> Dataset {
    let params = Params::new().with("rows", rows).with("step_ms", step_ms(rows));
    Dataset::new(&format!("logs_{}_{rows}", design.name()), "logs", &design.fixtures(), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_keeps_the_source_span() {
        assert_eq!(step_ms(SOURCE_ROWS), 6);
        assert_eq!(step_ms(1_000_000), 600);
        assert_eq!(step_ms(4_000_000), 150);
    }

    #[test]
    fn every_design_renders_its_fixtures() {
        let designs = [
            Design::Source,
            Design::OrderByTimestampFirst,
            Design::NoPartitionBy,
            Design::NoBloomFilter,
            Design::TableOnly,
        ];
        for design in designs {
            let statements = logs_dataset(1_000_000, design).statements().unwrap();
            assert!(statements.iter().any(|(_, sql)| sql.contains("FROM numbers_mt(1000000)")));
            assert!(statements.iter().any(|(_, sql)| sql.contains("toIntervalMillisecond(number * 600)")));
            let has_bloom = statements.iter().any(|(_, sql)| sql.contains("bloom_filter(0.01)"));
            assert_eq!(has_bloom, !matches!(design, Design::NoBloomFilter | Design::TableOnly), "{design:?}");
        }
    }
}

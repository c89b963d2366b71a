//! The `logs` datasets (`fixtures/logs/`): the source's synthetic Kubernetes logs.
//!
//! `fixtures/logs/` is a scenario pack: its designs (the source's and the deliberately
//! broken ones) and datasets are the pack's ([`pack`]), and the Rust scenarios that the
//! claims vocabulary cannot state open those same datasets through [`Pack::dataset`], so
//! each is built once for both. The one dataset of its own here is the source's ZSTD(3)
//! comparison ([`codecs_dataset`]), two tables in one database.
//!
//! The source generates 100 M rows 6 ms apart, a ~6.94-day span in 7 daily partitions.
//! Scaled down, the step grows so that the span stays: `step_ms = 600,000,000 / rows`,
//! computed by `generator.sql` itself from `{rows}` (a pack gives no other parameter).
//! Then every window keeps its share of the rows (Q1's hour ≈ 0.0006 N, Q2's two days
//! 2 / 6.94 N) while pruned reads stay a couple of granules.
//!
//! A run's `--rows` is checked before the engine starts: at most [`crate::dataset::MAX_ROWS`], and within
//! the free space of the engine's folder by [`RUN_PEAK_BYTES_PER_ROW`].

use anyhow::Result;

use crate::dataset::{BytesPerRow, Dataset, DiskEstimate, check_row_bound};
use crate::fixtures::{Fixture, Params};
use crate::packs::Pack;

/// The pack's folder under `fixtures/`, and the database its datasets fill.
pub const PACK: &str = "logs";
/// The pack's design that is the source's table (`designs/source.sql`).
pub const SOURCE_DESIGN: &str = "source";
/// The pack's design without the bloom filter (`broken/no_bloom_filter.sql`): the
/// source's table as `schema.sql` writes it, cheaper to build where the index plays no part.
pub const NO_BLOOM_FILTER_DESIGN: &str = "no_bloom_filter";
/// The source's span: 100,000,000 rows x 6 ms.
pub const SPAN_MS: u64 = 600_000_000;
/// The source's row count.
pub const SOURCE_ROWS: u64 = 100_000_000;
/// Rows per granule (the schema keeps MergeTree's default).
pub const INDEX_GRANULARITY: u64 = 8192;
/// The engine's disk at the peak of a `cargo xtask bench` run, per row: the table, its
/// ZSTD(3) copy, parts that merges replaced and not yet removed, the bloom filter.
/// Measured (the folder sampled every 0.1 s): 131 bytes/row at 1 M rows, 135 at 4 M,
/// 196 at 100 M (19.6 GB), the figure used, as the largest.
pub const RUN_PEAK_BYTES_PER_ROW: u64 = 196;
/// What is added to the measured peak, in percent, for what the measurement did not see.
const RUN_HEADROOM_PERCENT: u64 = 25;

/// The fixtures of a run that build its tables, which must be deterministic.
const RUN_DATASET_FILES: [&str; 4] =
    ["logs/schema.sql", "logs/generator.sql", "logs/zstd_schema.sql", "logs/zstd_insert.sql"];

/// Refuses a run's `--rows` above [`crate::dataset::MAX_ROWS`], and a generator (or schema)
/// of the run that draws random values, naming its file and line.
pub fn check_run_inputs(rows: u64) -> Result<()> {
    check_row_bound(&format!("--rows {rows}"), rows)?;
    for file in RUN_DATASET_FILES {
        Fixture::load(file)?.render_dataset(&Params::new().with("rows", rows))?;
    }
    Ok(())
}

/// What a run of `rows` rows takes at its peak.
pub fn run_disk_estimate(rows: u64) -> DiskEstimate {
    let per_row = BytesPerRow {
        bytes: RUN_PEAK_BYTES_PER_ROW * (100 + RUN_HEADROOM_PERCENT) / 100,
        basis: format!(
            "{RUN_PEAK_BYTES_PER_ROW} bytes/row measured at a run's peak at 100 M rows, plus {RUN_HEADROOM_PERCENT} %"
        ),
    };
    DiskEstimate { what: format!("--rows {rows}"), rows, per_row }
}

/// What builds the ZSTD(3) copy of the source's table, after the table is settled.
const ZSTD_COPY: [&str; 3] = ["logs/zstd_schema.sql", "logs/zstd_insert.sql", "logs/settle_zstd.sql"];

/// The timestamp step that keeps the source's span at `rows` rows (at least 1 ms): what
/// `generator.sql` computes, recorded in `cargo xtask bench` results.
pub fn step_ms(rows: u64) -> u64 {
    (SPAN_MS / rows.max(1)).max(1)
}

/// The `logs` pack, loaded and checked.
pub fn pack() -> Result<Pack> {
    Pack::named(PACK)
}

/// The source's comparison of codecs: the pack's source design at `rows` rows, then the
/// same rows re-inserted into a copy with `CODEC(ZSTD(3))` on every column
/// (`logs_zstd`), both settled. Not a pack design: the source compares two tables of one
/// database, filled from one another, and no query reads the copy.
pub fn codecs_dataset(rows: u64) -> Result<Dataset> {
    let mut dataset = pack()?.dataset(SOURCE_DESIGN, rows)?;
    dataset.name = format!("{PACK}_codecs_{rows}");
    dataset.fixtures.extend(ZSTD_COPY.iter().map(|fixture| fixture.to_string()));
    Ok(dataset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statements of a fixture without comments, whitespace collapsed.
    fn code(relative: &str) -> Vec<String> {
        let statements = Fixture::load(relative).unwrap().render(&Params::new().with("rows", 1)).unwrap();
        statements
            .iter()
            .map(|statement| {
                let lines = statement.sql.lines().filter(|line| !line.trim_start().starts_with("--"));
                lines.flat_map(str::split_whitespace).collect::<Vec<_>>().join(" ")
            })
            .collect()
    }

    #[test]
    fn the_step_keeps_the_source_span() {
        assert_eq!(step_ms(SOURCE_ROWS), 6);
        assert_eq!(step_ms(1_000_000), 600);
        assert_eq!(step_ms(4_000_000), 150);
        assert_eq!(step_ms(SPAN_MS * 2), 1);
        // The generator computes the step itself: the same formula, the same span.
        let generator = code("logs/generator.sql").join(" ");
        assert!(generator.contains(&format!("greatest(1, intDiv({SPAN_MS}, 1)) AS step_ms")), "{generator}");
        assert!(generator.contains("toIntervalMillisecond(number * step_ms)"), "{generator}");
    }

    /// `cargo xtask bench` runs the source's order (schema.sql, then bloom_filter.sql);
    /// the pack declares the same table in one file per design. They must not drift.
    #[test]
    fn the_pack_designs_are_the_bench_schema_with_and_without_its_index() {
        let schema = code("logs/schema.sql");
        let index = code("logs/bloom_filter.sql")[0].replace("ALTER TABLE logs ADD ", "");
        assert!(index.starts_with("INDEX trace_bf trace_id TYPE bloom_filter"), "{index}");
        let source = code("logs/designs/source.sql");
        assert_eq!(source[0].replace(&format!(", {index}"), ""), schema[0]);
        assert!(source[0].contains(&index), "{}", source[0]);
        assert_eq!(code("logs/broken/no_bloom_filter.sql"), schema);
    }

    #[test]
    fn the_codecs_dataset_is_the_source_design_then_its_zstd_copy() {
        let dataset = codecs_dataset(1_000_000).unwrap();
        assert_eq!(dataset.name, "logs_codecs_1000000");
        assert_eq!(
            dataset.fixtures,
            [
                "logs/designs/source.sql",
                "logs/generator.sql",
                "logs/settle.sql",
                "logs/zstd_schema.sql",
                "logs/zstd_insert.sql",
                "logs/settle_zstd.sql"
            ]
        );
        let statements = dataset.statements().unwrap();
        assert!(statements.iter().any(|(_, sql)| sql.contains("FROM numbers_mt(1000000)")));
    }
}

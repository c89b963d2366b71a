//! Scenario pack `primary_key`: does a primary-key range prune a MergeTree read to the
//! granules that hold the range?
//!
//! The `sensors` fixture is a table sorted by `(device_id, ts)`; one device's hour is
//! one contiguous key range. Whatever the table's size, the read touches at most the
//! two granules at the range's ends.

mod common;

use chbench::explain::{TableRead, explain_indexes};
use chbench::fixtures::{Fixture, Params};
use chbench::measure::{StatementTag, measure};
use chbench::parts::parts_summary;
use chbench::settings::Settings;
use rstest::rstest;
use serde::Serialize;

/// Rows per granule in `fixtures/sensors/schema.sql`.
const INDEX_GRANULARITY: u64 = 2048;

/// What the snapshot keeps: structure only, never a time.
#[derive(Debug, Serialize)]
struct PrunedRead {
    engine_version: String,
    rows_in_table: u64,
    active_parts: u64,
    answer: String,
    read_rows: u64,
    granules_read: u64,
    pruning: Vec<TableRead>,
}

#[rstest]
#[case::one_device_one_hour("one_device_one_hour", 1_000_000)]
fn a_key_range_reads_at_most_two_granules(#[case] query: &str, #[case] rows: u64) {
    let scenario = format!("primary_key_{query}");
    let mut target = common::scenario_target(&scenario);
    let params = Params::new().with("rows", rows);
    Fixture::load("sensors/schema.sql").unwrap().apply(&mut target, &params).unwrap();
    Fixture::load("sensors/generator.sql").unwrap().apply(&mut target, &params).unwrap();
    let select = Fixture::load(format!("sensors/queries/{query}.sql")).unwrap().render_one(&params).unwrap();

    let table = parts_summary(&mut target, "readings").unwrap();
    assert_eq!(table.rows, rows, "the generator wrote {} rows, expected {rows}", table.rows);
    assert!(table.marks >= 400, "the table should have hundreds of granules, it has {}", table.marks);

    let tag = StatementTag::new("test", &scenario, query, 1);
    let measured = measure(&mut target, &select, &tag, &Settings::new()).unwrap();
    // Check the answer before trusting the numbers: 36 readings, one per 100 s.
    assert!(measured.body.starts_with("36\t"), "unexpected answer {:?}", measured.body);

    let stats = &measured.stats;
    let granules_read = stats.read_rows.div_ceil(INDEX_GRANULARITY);
    assert!(
        stats.read_rows <= 2 * INDEX_GRANULARITY,
        "primary-key pruning: read {} rows ({granules_read} granules), expected at most 2 granules ({} rows)",
        stats.read_rows,
        2 * INDEX_GRANULARITY
    );
    let pruning = explain_indexes(&mut target, &select).unwrap();
    let primary_key = pruning.first().and_then(|read| read.stage("PrimaryKey")).cloned();
    let selected = primary_key.map(|stage| stage.selected_granules).unwrap_or(u64::MAX);
    assert!(selected <= 2, "EXPLAIN: the primary key selected {selected} granules, expected at most 2");

    let facts = PrunedRead {
        engine_version: target.info().engine_version.clone(),
        rows_in_table: rows,
        active_parts: table.active_parts,
        answer: measured.body.trim().to_string(),
        read_rows: stats.read_rows,
        granules_read,
        pruning,
    };
    common::assert_structure(&format!("{scenario}_{rows}"), &facts.engine_version, &select, &facts);
}

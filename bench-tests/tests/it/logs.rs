//! Scenario pack `logs` (`fixtures/logs/`, the ClickHouse on EKS field benchmark's
//! Kubernetes logs, docs/sources.md): the claims its `claims.toml` cannot state.
//!
//! `fixtures/logs/claims.toml` states, and `tests/packs.rs` checks as tests
//! `logs::<query>::<design>::rows_<N>`: Q1's hour reads at most two granules of one
//! partition, through the primary key; Q1 over a day reads at most two granules as well
//! (the partial count); Q2 keeps at most three partitions and drops at least 0.65 of the
//! granules by the partition key; Q5's bloom filter `trace_bf` drops at least 0.9 of the
//! granules and rows; Q3 and Q4 read every row, the primary key dropping nothing. And
//! that a time-first key (Q1, Q1 over a day), no PARTITION BY
//! (Q1, Q2) and no bloom filter (Q5) each break the claim named there.
//!
//! The vocabulary measures each query once, as written, on one table, and bounds counts.
//! What needs more stays here, in Rust, on the pack's own datasets (opened through
//! `chbench::packs::Pack`, so each is built once for both):
//!
//! - the partial count: the same count with a setting changed reads more;
//! - Q2's read as a share of the table, within two bounds (the vocabulary's bounds on
//!   rows read are absolute, the same at every scale);
//! - Q4 reads no more bytes than its two columns hold (no claim is about bytes read;
//!   that Q3 and Q4 read every row is the pack's `read_rows_share_at_least = 1`);
//! - Q5 answers the same without its index, by a full scan, and the index's size;
//! - ZSTD(3) against LZ4: two tables of one dataset (`chbench::benchmarks::logs::dataset::codecs_dataset`).
//!
//! Snapshot rounding: row and granule counts and uncompressed sizes are exact (the
//! build is deterministic in them); byte sizes and ratios are kept to 3 significant
//! digits and shares to 3 decimals, and compressed sizes (with what derives from them)
//! are compared within 2 % of the snapshot, because LowCardinality dictionaries, and so
//! compressed bytes, depend on how the insert threads happened to split the rows.

use crate::common;

use chbench::benchmarks::logs::dataset::{
    INDEX_GRANULARITY, NO_BLOOM_FILTER_DESIGN, SOURCE_DESIGN, codecs_dataset, pack,
};
use chbench::dataset::{Dataset, DatasetManifest};
use chbench::explain::{TableRead, explain_indexes};
use chbench::fixtures::{Fixture, Params, Statement};
use chbench::invariant::{Check, assert_holds, claim, significant};
use chbench::measure::{Measured, measure};
use chbench::settings::Settings;
use chbench::stats::StatementTag;
use chbench::table_bytes::ColumnBytes;
use chbench::table_parts::{column_bytes, parts_summary, skip_index_bytes};
use chbench::targets::Target;
use rstest::rstest;
use serde::Serialize;

/// Snapshot keys holding compressed sizes and what is derived from them: compared
/// within `common::APPROXIMATE_TOLERANCE` of the snapshot (see there why).
const COMPRESSED: [&str; 9] = [
    "lz4_compressed_bytes",
    "zstd_compressed_bytes",
    "lz4_ratio",
    "zstd_ratio",
    "lz4_total_compressed_bytes",
    "zstd_total_compressed_bytes",
    "zstd_saving_vs_lz4",
    "index_bytes",
    "index_share_of_compressed_table",
];

/// Days the source's timestamps span: 100 M rows x 6 ms.
const SPAN_DAYS: f64 = 600_000.0 / 86_400.0;

/// The pack's dataset of `design` at `rows` rows: the one its own tests open.
fn pack_dataset(design: &str, rows: u64) -> Dataset {
    pack().and_then(|pack| pack.dataset(design, rows)).expect("the logs pack's dataset")
}

fn open(dataset: Dataset) -> (Target, DatasetManifest) {
    dataset.open().unwrap_or_else(|error| panic!("cannot open the logs dataset: {error:#}"))
}

fn query_sql(name: &str) -> Statement {
    Fixture::load(format!("logs/queries/{name}.sql")).unwrap().render_one(&Params::new()).unwrap()
}

fn run(target: &mut Target, query: &str, settings: &Settings) -> Measured {
    let tag = StatementTag::new("test", "logs", query, 1);
    measure(target, &query_sql(query), &tag, settings).unwrap()
}

fn first_read(target: &mut Target, query: &str) -> TableRead {
    explain_indexes(target, &query_sql(query)).unwrap().into_iter().next().expect("a MergeTree read in the plan")
}

fn answer_count(measured: &Measured) -> u64 {
    measured.body.trim().parse().unwrap_or_else(|_| panic!("not a count: {:?}", measured.body))
}

// ---- claims -------------------------------------------------------------------------

fn partial_count_counts_more_than_it_reads(counted: u64, read_rows: u64) -> Check {
    claim(
        "partial_count_counts_more_than_it_reads",
        counted > read_rows,
        format!("counted {counted} rows, read {read_rows}"),
        "more rows counted than read (whole granules counted from the index)",
    )
}

fn q2_reads_two_days_share(read_rows: u64, rows: u64) -> Check {
    let share = read_rows as f64 / rows as f64;
    let expected = 2.0 / SPAN_DAYS;
    // The window is day-aligned: whole partitions, plus at most two edge granules each.
    let slack = (4 * INDEX_GRANULARITY) as f64 / rows as f64;
    claim(
        "q2_reads_two_days_of_rows",
        share >= expected - 0.001 && share <= expected + slack,
        format!("{read_rows} rows ({share:.4} of the table)"),
        format!("about 2 / {SPAN_DAYS:.2} = {expected:.4} of the table"),
    )
}

// ---- scenarios on the source's design -------------------------------------------------

/// The partial-count optimization (ClickHouse 24.6+, the source's explanation of Q1):
/// granules wholly inside the key range are counted from the index, only the two at its
/// ends are read. Shown with `q1_day` (Q1 over a day), because the source's hour spans
/// more than two granules only from about 27 M rows on, and the day from about 1.2 M; at
/// 4 M and 8 M rows (the latter on the table without its bloom filter, which a count over
/// the key does not use, cheaper to build). With the optimization off
/// (`optimize_use_implicit_projections = 0`) the same count reads every granule it spans.
/// The pack states that the day's count reads at most two granules, and that a time-first
/// key breaks it; that the optimization is the reason needs the setting changed.
#[rstest]
#[case::rows_4m(4_000_000, SOURCE_DESIGN)]
#[case::rows_8m(8_000_000, NO_BLOOM_FILTER_DESIGN)]
fn partial_count_counts_more_rows_than_it_reads(#[case] rows: u64, #[case] design: &str) {
    let (mut target, manifest) = open(pack_dataset(design, rows));
    let optimized = run(&mut target, "q1_day", &Settings::new());
    let counted = answer_count(&optimized);
    assert_holds(partial_count_counts_more_than_it_reads(counted, optimized.stats.read_rows));
    let plain = run(&mut target, "q1_day", &Settings::new().with("optimize_use_implicit_projections", 0));
    assert_eq!(answer_count(&plain), counted, "the optimization must not change the answer");
    assert!(
        plain.stats.read_rows > optimized.stats.read_rows,
        "without the optimization the count should read more: {} vs {}",
        plain.stats.read_rows,
        optimized.stats.read_rows
    );
    #[derive(Serialize)]
    struct PartialCount {
        engine_version: String,
        rows_in_table: u64,
        counted: u64,
        read_rows: u64,
        read_rows_without_optimization: u64,
    }
    let facts = PartialCount {
        engine_version: manifest.engine_version,
        rows_in_table: rows,
        counted,
        read_rows: optimized.stats.read_rows,
        read_rows_without_optimization: plain.stats.read_rows,
    };
    common::assert_structure(
        &format!("logs_partial_count_{rows}"),
        &facts.engine_version,
        &query_sql("q1_day"),
        &facts,
    );
}

/// Q2's window is two whole days of the ~6.94: it reads 2 / 6.94 of the table's rows,
/// give or take the granules at partition edges. The pack claims the partitions kept
/// and the granules dropped; its snapshot `logs_q2_source_<rows>` keeps the read.
#[rstest]
#[case::rows_1m(1_000_000)]
#[case::rows_4m(4_000_000)]
fn q2_two_day_window_reads_two_of_seven_days(#[case] rows: u64) {
    let (mut target, _) = open(pack_dataset(SOURCE_DESIGN, rows));
    let measured = run(&mut target, "q2", &Settings::new());
    // Ten namespaces with one pod each: LIMIT 10 returns them all.
    assert_eq!(measured.stats.result_rows, 10);
    assert_holds(q2_reads_two_days_share(measured.stats.read_rows, rows));
}

#[rstest]
#[case::rows_1m(1_000_000)]
#[case::rows_4m(4_000_000)]
fn q4_reads_only_two_columns_bytes(#[case] rows: u64) {
    let (mut target, manifest) = open(pack_dataset(SOURCE_DESIGN, rows));
    let q3 = run(&mut target, "q3", &Settings::new());
    let q4 = run(&mut target, "q4", &Settings::new());
    // That both read every row is the pack's claim (read_rows_share_at_least = 1); the
    // snapshot keeps the counts.
    assert_eq!(q4.stats.result_rows, 10, "one row per namespace");

    let columns = column_bytes(&mut target, "logs").unwrap();
    let uncompressed = |name: &str| columns.iter().find(|column| column.column == name).unwrap().uncompressed_bytes;
    let table_uncompressed: u64 = columns.iter().map(|column| column.uncompressed_bytes).sum();
    let touched = uncompressed("namespace") + uncompressed("duration_ms");
    // Q4 reads namespace and duration_ms and nothing else.
    assert!(
        q4.stats.read_bytes <= touched,
        "q4 read {} bytes, namespace + duration_ms hold {touched}",
        q4.stats.read_bytes
    );
    let share = q4.stats.read_bytes as f64 / table_uncompressed as f64;
    assert!(share < 0.05, "q4 read {share:.3} of the table's uncompressed bytes");

    #[derive(Serialize)]
    struct Scans {
        engine_version: String,
        rows_in_table: u64,
        q3_answer: String,
        q3_read_rows: u64,
        q4_read_rows: u64,
        q4_read_bytes: u64,
        q4_share_of_uncompressed_table: f64,
    }
    let facts = Scans {
        engine_version: manifest.engine_version,
        rows_in_table: rows,
        q3_answer: q3.body.trim().to_string(),
        q3_read_rows: q3.stats.read_rows,
        q4_read_rows: q4.stats.read_rows,
        q4_read_bytes: q4.stats.read_bytes,
        q4_share_of_uncompressed_table: (share * 1000.0).round() / 1000.0,
    };
    let statements = format!("{}\n{}", query_sql("q3"), query_sql("q4"));
    common::assert_structure(&format!("logs_q3_q4_{rows}"), &facts.engine_version, &statements, &facts);
}

/// The pack claims the rows and granules the bloom filter drops; this is the rest of
/// what the source reports about it: without the index the lookup scans every row for
/// the same answer, and what the index costs in storage (kept in the snapshot).
#[rstest]
#[case::rows_1m(1_000_000)]
#[case::rows_4m(4_000_000)]
fn q5_without_the_bloom_filter_scans_every_row_for_the_same_answer(#[case] rows: u64) {
    let (mut target, manifest) = open(pack_dataset(SOURCE_DESIGN, rows));
    // "Without the index" is the same table with skip indexes off: the rows a lookup
    // reads before `ADD INDEX` (the dataset is built with the index).
    let without = run(&mut target, "q5", &Settings::new().with("use_skip_indexes", 0));
    let with = run(&mut target, "q5", &Settings::new());
    assert_eq!(with.stats.result_rows, 1, "the trace of number 42 is one row");
    assert_eq!(with.body, without.body, "the index must not change the answer");
    assert_eq!(without.stats.read_rows, rows, "without the index q5 scans every row");
    let table = parts_summary(&mut target, "logs").unwrap();
    let granules = first_read(&mut target, "q5").stage("Skip").map(|stage| stage.initial_granules);
    let granules = granules.expect("q5's plan has the bloom filter's Skip stage");

    let index_bytes = skip_index_bytes(&mut target, "logs", "trace_bf").unwrap().data_compressed_bytes;
    let table_compressed: u64 = column_bytes(&mut target, "logs").unwrap().iter().map(|c| c.compressed_bytes).sum();
    #[derive(Serialize)]
    struct BloomFilter {
        engine_version: String,
        rows_in_table: u64,
        granules_in_table: u64,
        active_parts: u64,
        read_rows_without_index: u64,
        read_rows_with_index: u64,
        rows_skipped_share: f64,
        index_bytes: f64,
        index_share_of_compressed_table: f64,
    }
    let facts = BloomFilter {
        engine_version: manifest.engine_version,
        rows_in_table: rows,
        granules_in_table: granules,
        active_parts: table.active_parts,
        read_rows_without_index: without.stats.read_rows,
        read_rows_with_index: with.stats.read_rows,
        rows_skipped_share: ((1.0 - with.stats.read_rows as f64 / rows as f64) * 1000.0).round() / 1000.0,
        index_bytes: significant(index_bytes as f64, 3),
        index_share_of_compressed_table: significant(index_bytes as f64 / table_compressed as f64, 3),
    };
    let name = format!("logs_q5_bloom_filter_{rows}");
    common::assert_structure_within(&name, &facts.engine_version, &query_sql("q5"), &facts, &COMPRESSED);
}

#[derive(Serialize)]
struct ColumnCodecs {
    column: String,
    lz4_compressed_bytes: f64,
    zstd_compressed_bytes: f64,
    uncompressed_bytes: f64,
    lz4_ratio: f64,
    zstd_ratio: f64,
}

#[rstest]
#[case::rows_1m(1_000_000)]
#[case::rows_4m(4_000_000)]
fn zstd_saves_storage_and_ids_barely_compress(#[case] rows: u64) {
    let (mut target, manifest) = open(codecs_dataset(rows).expect("the logs codecs dataset"));
    let lz4 = column_bytes(&mut target, "logs").unwrap();
    let zstd = column_bytes(&mut target, "logs_zstd").unwrap();
    let total = |columns: &[ColumnBytes]| columns.iter().map(|column| column.compressed_bytes).sum::<u64>();
    let (lz4_total, zstd_total) = (total(&lz4), total(&zstd));
    assert!(zstd_total < lz4_total, "ZSTD(3) {zstd_total} bytes, LZ4 {lz4_total}");
    let ratio = |name: &str| lz4.iter().find(|column| column.column == name).unwrap().compression_ratio();
    // A 32-hex-digit id is high-entropy text: LZ4 gains little (the source: 1.0x).
    assert!(ratio("trace_id") < 2.0, "trace_id compresses {:.2}x with LZ4", ratio("trace_id"));
    // Sorted first in the key (namespace) or one per namespace (pod): long runs.
    for column in ["namespace", "pod"] {
        assert!(ratio(column) >= 100.0, "{column} compresses only {:.1}x with LZ4", ratio(column));
    }

    let codecs: Vec<ColumnCodecs> = lz4
        .iter()
        .zip(&zstd)
        .map(|(lz4, zstd)| {
            assert_eq!(lz4.column, zstd.column);
            ColumnCodecs {
                column: lz4.column.clone(),
                lz4_compressed_bytes: significant(lz4.compressed_bytes as f64, 3),
                zstd_compressed_bytes: significant(zstd.compressed_bytes as f64, 3),
                uncompressed_bytes: significant(lz4.uncompressed_bytes as f64, 3),
                lz4_ratio: significant(lz4.compression_ratio(), 3),
                zstd_ratio: significant(zstd.compression_ratio(), 3),
            }
        })
        .collect();
    #[derive(Serialize)]
    struct Codecs {
        engine_version: String,
        rows_in_table: u64,
        active_parts: u64,
        lz4_total_compressed_bytes: f64,
        zstd_total_compressed_bytes: f64,
        zstd_saving_vs_lz4: f64,
        columns: Vec<ColumnCodecs>,
    }
    let facts = Codecs {
        engine_version: manifest.engine_version,
        rows_in_table: rows,
        active_parts: parts_summary(&mut target, "logs").unwrap().active_parts,
        lz4_total_compressed_bytes: significant(lz4_total as f64, 3),
        zstd_total_compressed_bytes: significant(zstd_total as f64, 3),
        zstd_saving_vs_lz4: significant(1.0 - zstd_total as f64 / lz4_total as f64, 3),
        columns: codecs,
    };
    let statement = "system.parts_columns of logs (LZ4) and logs_zstd (ZSTD(3)), after OPTIMIZE FINAL";
    common::assert_structure_within(
        &format!("logs_codecs_{rows}"),
        &facts.engine_version,
        statement,
        &facts,
        &COMPRESSED,
    );
}

//! Scenario pack `logs`: the ClickHouse on EKS field benchmark's Kubernetes logs
//! (docs/sources.md) as invariants.
//!
//! The dataset is the source's schema and generator scaled by `rows` (the timestamp step
//! grows so the ~6.94-day span stays; see `chbench::dataset::logs`), merged to one
//! part per partition, with the ZSTD(3) copy and the bloom filter. It is built once per
//! (statements, rows, engine version) and every test opens a hard-linked copy.
//!
//! Each claim is a function returning a `Check`, so the same code asserts that the
//! source's design holds it and that a deliberately broken design violates it.
//!
//! Snapshot rounding: row and granule counts and uncompressed sizes are exact (the
//! build is deterministic in them); byte sizes and ratios are kept to 3 significant
//! digits and shares to 3 decimals, and compressed sizes (with what derives from them)
//! are compared within 2 % of the snapshot, because LowCardinality dictionaries, and so
//! compressed bytes, depend on how the insert threads happened to split the rows.

mod common;

use chbench::dataset::DatasetManifest;
use chbench::dataset::logs::{BLOOM_FALSE_POSITIVE_RATE, BLOOM_GRANULARITY, Design, INDEX_GRANULARITY, logs_dataset};
use chbench::explain::{TableRead, explain_indexes};
use chbench::fixtures::{Fixture, Params, Statement};
use chbench::invariant::{Check, assert_holds, assert_violates, claim, significant};
use chbench::measure::{Measured, StatementTag, measure};
use chbench::parts::{ColumnBytes, column_bytes, parts_summary, skip_index_bytes};
use chbench::settings::Settings;
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

fn open(rows: u64, design: Design) -> (Target, DatasetManifest) {
    logs_dataset(rows, design).open().expect("cannot open the logs dataset")
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

fn q1_reads_at_most_two_granules(read_rows: u64) -> Check {
    claim(
        "q1_reads_at_most_two_granules",
        read_rows <= 2 * INDEX_GRANULARITY,
        format!("{read_rows} rows ({} granules)", read_rows.div_ceil(INDEX_GRANULARITY)),
        format!("at most 2 granules ({} rows)", 2 * INDEX_GRANULARITY),
    )
}

/// Partition pruning (Min-Max on the partition key, then Partition) keeps fewer parts
/// than the table has, and the primary key keeps fewer granules than it was given.
fn q1_prunes_partitions_and_key(read: &TableRead) -> Check {
    let kinds: Vec<&str> = read.stages.iter().map(|stage| stage.kind.as_str()).collect();
    let min_max_prunes = read.stage("Min-Max").is_some_and(|stage| stage.selected_parts < stage.initial_parts);
    claim(
        "q1_prunes_partitions",
        min_max_prunes && read.stage("Partition").is_some(),
        format!("index stages {kinds:?}"),
        "Min-Max selecting fewer parts than the table has, then Partition",
    )?;
    let key_prunes = read.stage("PrimaryKey").is_some_and(|stage| stage.selected_granules < stage.initial_granules);
    claim(
        "q1_prunes_primary_key",
        key_prunes,
        format!("index stages {:?}", read.stages),
        "PrimaryKey selecting fewer granules",
    )
}

fn partial_count_counts_more_than_it_reads(counted: u64, read_rows: u64) -> Check {
    claim(
        "partial_count_counts_more_than_it_reads",
        counted > read_rows,
        format!("counted {counted} rows, read {read_rows}"),
        "more rows counted than read (whole granules counted from the index)",
    )
}

fn q2_selects_two_or_three_partitions(read: &TableRead) -> Check {
    let selected = read.stage("Partition").map(|stage| stage.selected_parts);
    let initial = read.stage("Min-Max").map(|stage| stage.initial_parts);
    claim(
        "q2_selects_two_or_three_of_seven_partitions",
        matches!(selected, Some(2 | 3)) && initial == Some(7),
        format!("{selected:?} of {initial:?} parts selected by partition pruning"),
        "2 or 3 of 7",
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

/// With the bloom filter a point lookup reads one index block (GRANULARITY granules),
/// plus false positives: allow three times the expected number, and at least one.
fn q5_bloom_filter_skips(read_rows: u64, granules_in_table: u64) -> Check {
    let block_rows = BLOOM_GRANULARITY * INDEX_GRANULARITY;
    let blocks = granules_in_table.div_ceil(BLOOM_GRANULARITY);
    let false_positive_blocks = ((3.0 * BLOOM_FALSE_POSITIVE_RATE * blocks as f64).ceil() as u64).max(1);
    let allowed = (1 + false_positive_blocks) * block_rows;
    claim(
        "q5_bloom_filter_skips",
        read_rows <= allowed,
        format!("{read_rows} rows read"),
        format!("at most {allowed} (1 block of {block_rows} rows + {false_positive_blocks} false-positive blocks)"),
    )
}

// ---- scenarios on the source's design -------------------------------------------------

#[derive(Serialize)]
struct PrunedQuery {
    engine_version: String,
    rows_in_table: u64,
    answer: String,
    read_rows: u64,
    granules_read: u64,
    pruning: Vec<TableRead>,
}

impl PrunedQuery {
    fn new(manifest: DatasetManifest, rows: u64, answer: String, measured: &Measured, read: TableRead) -> PrunedQuery {
        PrunedQuery {
            engine_version: manifest.engine_version,
            rows_in_table: rows,
            answer,
            read_rows: measured.stats.read_rows,
            granules_read: measured.stats.read_rows.div_ceil(INDEX_GRANULARITY),
            pruning: vec![read],
        }
    }
}

#[rstest]
#[case::rows_1m(1_000_000)]
#[case::rows_4m(4_000_000)]
fn q1_one_namespace_hour_reads_at_most_two_granules(#[case] rows: u64) {
    let (mut target, manifest) = open(rows, Design::Source);
    let measured = run(&mut target, "q1", &Settings::new());
    // One namespace of ten, one hour of ~166.7: about 0.0006 N rows.
    let counted = answer_count(&measured);
    let expected = 0.0006 * rows as f64;
    assert!((counted as f64 - expected).abs() <= 0.1 * expected, "q1 counted {counted}, expected about {expected}");
    assert_holds(q1_reads_at_most_two_granules(measured.stats.read_rows));
    let read = first_read(&mut target, "q1");
    assert_holds(q1_prunes_partitions_and_key(&read));
    let facts = PrunedQuery::new(manifest, rows, measured.body.trim().to_string(), &measured, read);
    common::assert_structure(&format!("logs_q1_{rows}"), &facts.engine_version, &query_sql("q1"), &facts);
}

/// The partial-count optimization (ClickHouse 24.6+, the source's explanation of Q1):
/// granules wholly inside the key range are counted from the index, only the two at its
/// ends are read. Shown with `q1_day` (Q1 over a day), because the source's hour spans
/// more than two granules only from about 27 M rows on, and the day from about 1.2 M; at
/// 4 M and 8 M rows (the latter on the table alone, cheaper to build). With the
/// optimization off (`optimize_use_implicit_projections = 0`) the same count reads every
/// granule it spans.
#[rstest]
#[case::rows_4m(4_000_000, Design::Source)]
#[case::rows_8m(8_000_000, Design::TableOnly)]
fn partial_count_counts_more_rows_than_it_reads(#[case] rows: u64, #[case] design: Design) {
    let (mut target, manifest) = open(rows, design);
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

#[rstest]
#[case::rows_1m(1_000_000)]
#[case::rows_4m(4_000_000)]
fn q2_two_day_window_reads_two_of_seven_days(#[case] rows: u64) {
    let (mut target, manifest) = open(rows, Design::Source);
    let measured = run(&mut target, "q2", &Settings::new());
    // Ten namespaces with one pod each: LIMIT 10 returns them all.
    assert_eq!(measured.stats.result_rows, 10);
    assert_holds(q2_reads_two_days_share(measured.stats.read_rows, rows));
    let read = first_read(&mut target, "q2");
    assert_holds(q2_selects_two_or_three_partitions(&read));
    // Sorted: namespaces with equal error counts may come back in either order.
    let mut answer: Vec<&str> = measured.body.lines().collect();
    answer.sort_unstable();
    let facts = PrunedQuery::new(manifest, rows, answer.join("\n"), &measured, read);
    common::assert_structure(&format!("logs_q2_{rows}"), &facts.engine_version, &query_sql("q2"), &facts);
}

#[rstest]
#[case::rows_1m(1_000_000)]
#[case::rows_4m(4_000_000)]
fn q3_and_q4_read_every_row_and_q4_only_two_columns(#[case] rows: u64) {
    let (mut target, manifest) = open(rows, Design::Source);
    let q3 = run(&mut target, "q3", &Settings::new());
    let q4 = run(&mut target, "q4", &Settings::new());
    assert_eq!(q3.stats.read_rows, rows, "q3 scans every row");
    assert_eq!(q4.stats.read_rows, rows, "q4 scans every row");
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

#[rstest]
#[case::rows_1m(1_000_000)]
#[case::rows_4m(4_000_000)]
fn q5_bloom_filter_reads_one_block_instead_of_the_table(#[case] rows: u64) {
    let (mut target, manifest) = open(rows, Design::Source);
    // "Without the index" is the same table with skip indexes off: the rows a lookup
    // reads before `ADD INDEX` (the dataset is built with the index).
    let without = run(&mut target, "q5", &Settings::new().with("use_skip_indexes", 0));
    let with = run(&mut target, "q5", &Settings::new());
    assert_eq!(with.stats.result_rows, 1, "the trace of number 42 is one row");
    assert_eq!(with.body, without.body, "the index must not change the answer");
    assert_eq!(without.stats.read_rows, rows, "without the index q5 scans every row");
    let table = parts_summary(&mut target, "logs").unwrap();
    let granules = first_read(&mut target, "q5").stage("Skip").map(|stage| stage.initial_granules).unwrap_or(0);
    assert_holds(q5_bloom_filter_skips(with.stats.read_rows, granules));

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
    let (mut target, manifest) = open(rows, Design::Source);
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

// ---- broken designs must be caught ----------------------------------------------------

/// Time first in the key: one namespace's hour is interleaved with every other
/// namespace's rows of that hour. At 4 M rows the hour spans three granules.
#[test]
fn time_first_in_the_key_breaks_q1_pruning() {
    let (mut target, _) = open(4_000_000, Design::OrderByTimestampFirst);
    let measured = run(&mut target, "q1", &Settings::new());
    let violation =
        assert_violates(q1_reads_at_most_two_granules(measured.stats.read_rows), "q1_reads_at_most_two_granules");
    eprintln!("caught as expected: {violation}");
    let day = run(&mut target, "q1_day", &Settings::new());
    assert_violates(
        partial_count_counts_more_than_it_reads(answer_count(&day), day.stats.read_rows),
        "partial_count_counts_more_than_it_reads",
    );
}

#[test]
fn no_partition_by_loses_partition_pruning() {
    let (mut target, _) = open(1_000_000, Design::NoPartitionBy);
    let q1 = first_read(&mut target, "q1");
    let violation = assert_violates(q1_prunes_partitions_and_key(&q1), "q1_prunes_partitions");
    eprintln!("caught as expected: {violation}");
    let q2 = first_read(&mut target, "q2");
    assert_violates(q2_selects_two_or_three_partitions(&q2), "q2_selects_two_or_three_of_seven_partitions");
}

#[test]
fn dropping_the_bloom_filter_makes_q5_scan_the_table() {
    let (mut target, _) = open(1_000_000, Design::NoBloomFilter);
    let measured = run(&mut target, "q5", &Settings::new());
    let granules = first_read(&mut target, "q5").stage("PrimaryKey").map(|stage| stage.initial_granules).unwrap_or(0);
    let violation = assert_violates(q5_bloom_filter_skips(measured.stats.read_rows, granules), "q5_bloom_filter_skips");
    eprintln!("caught as expected: {violation}");
}

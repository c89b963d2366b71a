//! The measurement core on the chosen target: statistics records, cache control,
//! EXPLAIN parsing, and the system-table readers.

use crate::common;

use chbench::explain::explain_indexes;
use chbench::fixtures::{Fixture, Params};
use chbench::measure::{drop_caches, measure};
use chbench::settings::Settings;
use chbench::stats::StatementTag;
use chbench::stats::StatsSource;
use chbench::table_parts::{ColumnSizes, column_bytes, column_sizes, parts_summary};
use chbench::targets::Target;

/// A 200 k-row MergeTree table in the scenario's database, one part.
fn with_numbers_table(scenario: &str) -> Target {
    let mut target = common::scenario_target(scenario);
    target
        .execute("CREATE TABLE numbers (k UInt64, s String) ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 8192, min_bytes_for_wide_part = 0")
        .unwrap();
    target.execute("INSERT INTO numbers SELECT number, toString(number) FROM numbers(200000)").unwrap();
    target.execute("OPTIMIZE TABLE numbers FINAL").unwrap();
    target
}

#[test]
fn read_rows_agrees_with_the_selected_rows_event() {
    let mut target = with_numbers_table("measure_agreement");
    let tag = StatementTag::new("test", "measure_agreement", "range", 1);
    let measured =
        measure(&mut target, "SELECT sum(k) FROM numbers WHERE k BETWEEN 10000 AND 30000", &tag, &Settings::new())
            .unwrap();
    assert_eq!(measured.body, "400020000\n");
    let stats = measured.stats;
    assert_eq!(stats.log_comment, "test/measure_agreement/range/1");
    assert_eq!(stats.result_rows, 1);
    // Granules 1..=3 of 8192 rows hold keys 10000..=30000.
    assert_eq!(stats.read_rows, 3 * 8192);
    assert_eq!(stats.event("SelectedRows"), stats.read_rows, "events: {:?}", stats.profile_events);
    assert_eq!(stats.event("SelectedMarks"), 3);
    assert_eq!(stats.event("SelectedParts"), 1);
    // Only the statement itself is in the window, not the harness's own statements.
    assert_eq!(stats.event("SelectQuery"), 1, "events: {:?}", stats.profile_events);
    match target.stats_source() {
        StatsSource::QueryLog => assert!(stats.raw.get("query_id").is_some()),
        StatsSource::ResultAndEventsDelta => assert!(stats.raw.get("events_after").is_some()),
        StatsSource::ResultCounters => assert!(stats.raw.get("result_counters").is_some()),
    }
}

#[test]
fn a_direct_io_run_after_dropping_caches_reads_through_direct_io() {
    let mut target = with_numbers_table("measure_direct_io");
    drop_caches(&mut target).unwrap();
    let tag = StatementTag::new("test", "measure_direct_io", "scan", 1);
    let measured =
        measure(&mut target, "SELECT count() FROM numbers WHERE s LIKE '%99%'", &tag, &Settings::direct_io()).unwrap();
    assert_eq!(measured.stats.read_rows, 200_000);
    assert!(measured.stats.event("CreatedReadBufferDirectIO") > 0, "events: {:?}", measured.stats.profile_events);
    // Without the setting the same scan does not use direct I/O.
    let tag = StatementTag::new("test", "measure_direct_io", "scan", 2);
    let warm = measure(&mut target, "SELECT count() FROM numbers WHERE s LIKE '%99%'", &tag, &Settings::new()).unwrap();
    assert_eq!(warm.stats.event("CreatedReadBufferDirectIO"), 0);
    assert_eq!(warm.body, measured.body);
}

#[test]
fn explain_reports_the_primary_key_stage() {
    let mut target = with_numbers_table("measure_explain");
    let reads = explain_indexes(&mut target, "SELECT sum(k) FROM numbers WHERE k BETWEEN 10000 AND 30000").unwrap();
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].table, "measure_explain.numbers");
    let primary_key = reads[0].stage("PrimaryKey").expect("a PrimaryKey stage");
    assert_eq!((primary_key.initial_granules, primary_key.selected_granules), (25, 3));
    assert_eq!((primary_key.initial_parts, primary_key.selected_parts), (1, 1));
}

#[test]
fn parts_and_column_bytes_describe_the_table() {
    let mut target = with_numbers_table("measure_parts");
    let parts = parts_summary(&mut target, "numbers").unwrap();
    assert_eq!((parts.active_parts, parts.partitions, parts.rows), (1, 1, 200_000));
    let columns = column_bytes(&mut target, "numbers").unwrap();
    let names: Vec<_> = columns.iter().map(|column| column.column.as_str()).collect();
    assert_eq!(names, ["k", "s"]);
    // 200 k UInt64 values are 1.6 MB uncompressed; sorted, LZ4 shrinks them.
    assert_eq!(columns[0].uncompressed_bytes, 1_600_000);
    assert!(columns[0].compressed_bytes < columns[0].uncompressed_bytes, "{:?}", columns[0]);
}

#[test]
fn an_error_in_a_query_file_names_the_file_and_line_in_measure_and_explain() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("typo.sql");
    std::fs::write(&path, "-- a query with a typo\n\nSELEC count()\nFROM numbers WHERE k < 10\n").unwrap();
    let query = Fixture::read(&path).unwrap().render_one(&Params::new()).unwrap();
    let mut target = with_numbers_table("measure_error_location");
    let tag = StatementTag::new("test", "measure", "typo", 1);
    let measured = format!("{:#}", measure(&mut target, &query, &tag, &Settings::new()).unwrap_err());
    assert!(measured.starts_with(&format!("{}:3: statement failed: ", path.display())), "{measured}");
    assert!(measured.contains("SELEC count()") && measured.contains("SYNTAX_ERROR"), "{measured}");
    let explained = format!("{:#}", explain_indexes(&mut target, &query).unwrap_err());
    assert!(explained.starts_with(&format!("{}:3: ", path.display())), "{explained}");
}

#[test]
fn column_sizes_of_a_table_with_compact_parts_cover_the_wide_parts_and_say_so() {
    let mut target = common::scenario_target("measure_compact_parts");
    // Parts of 1,000 rows or more are wide, smaller ones compact; no merge joins them.
    target
        .execute(
            "CREATE TABLE mixed (k UInt64, s String) ENGINE = MergeTree ORDER BY k \
             SETTINGS min_rows_for_wide_part = 1000, min_bytes_for_wide_part = 0",
        )
        .unwrap();
    target.execute("SYSTEM STOP MERGES mixed").unwrap();
    target.execute("INSERT INTO mixed SELECT number, toString(number) FROM numbers(5000)").unwrap();
    target.execute("INSERT INTO mixed SELECT number, toString(number) FROM numbers(10)").unwrap();
    let parts = parts_summary(&mut target, "mixed").unwrap();
    assert_eq!((parts.active_parts, parts.compact_parts), (2, 1));
    let ColumnSizes::WideOnly { columns, note } = column_sizes(&mut target, "mixed").unwrap() else {
        panic!("expected sizes of the wide part only");
    };
    // The wide part's 5,000 UInt64 keys, and nothing of the compact part's 10.
    assert_eq!(columns[0].uncompressed_bytes, 40_000);
    assert!(note.contains("compact parts 1 of 2"), "{note}");
    let error = column_bytes(&mut target, "mixed").unwrap_err().to_string();
    assert!(error.contains("no per-column sizes for the whole table"), "{error}");
}

#[test]
fn ctrl_c_stops_before_a_measurement_never_inside_one() {
    let mut target = with_numbers_table("measure_interrupted");
    chbench::interrupt::request_stop();
    let tag = StatementTag::new("test", "measure", "interrupted", 1);
    let error = measure(&mut target, "SELECT count() FROM numbers", &tag, &Settings::new()).unwrap_err();
    assert!(error.is::<chbench::interrupt::Interrupted>(), "{error:#}");
    // The statements a started measurement still needs (the statement itself, the reads
    // of system.events or query_log after it) are not refused.
    assert_eq!(target.query_text("SELECT count() FROM numbers").unwrap(), "200000\n");
    target.read_events().unwrap();
}

/// Five parts of 20,000 rows (20 granules of 1,024 each), a bloom filter on `tag` and a
/// set index on `grp`: `tag` is unique, `grp` changes every 1,000 rows.
fn with_skip_indexes(scenario: &str) -> Target {
    let mut target = common::scenario_target(scenario);
    target
        .execute(
            "CREATE TABLE tagged (k UInt64, tag String, grp UInt32, \
             INDEX tag_bf tag TYPE bloom_filter(0.001) GRANULARITY 1, INDEX grp_set grp TYPE set(100) GRANULARITY 1) \
             ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 1024",
        )
        .unwrap();
    target.execute("SYSTEM STOP MERGES tagged").unwrap();
    for part in 0..5 {
        target
            .execute(&format!(
                "INSERT INTO tagged SELECT number, concat('tag', toString(number)), intDiv(number, 1000) % 97 \
                 FROM numbers({}, 20000)",
                part * 20000
            ))
            .unwrap();
    }
    target
}

/// The skip stage of EXPLAIN and the read agree: the parts and granules the stage kept
/// are the ones the read selected (`SelectedParts`, `SelectedMarks`, read_rows), for a
/// bloom filter and a set index (skip indexes are applied while planning, see
/// `Settings::session_defaults`). On 26.x's default of applying them while reading,
/// `SelectedParts` counted all 5 parts against EXPLAIN's 1.
#[test]
fn explain_skip_stages_and_the_read_agree_on_parts_granules_and_rows() {
    let mut target = with_skip_indexes("measure_skip_indexes");
    let cases = [
        // One row, in one granule of the fourth part.
        ("SELECT count() FROM tagged WHERE tag = 'tag77777'", "tag_bf", "1\n", 1),
        // Rows 70,000 to 70,999: two granules of the fourth part.
        ("SELECT count() FROM tagged WHERE grp = 70", "grp_set", "1000\n", 2),
    ];
    for (attempt, (query, index, answer, granules)) in (1..).zip(cases) {
        let tag = StatementTag::new("test", "measure_skip_indexes", index, attempt);
        let measured = measure(&mut target, query, &tag, &Settings::new()).unwrap();
        assert_eq!(measured.body, answer, "{query}");
        let reads = explain_indexes(&mut target, query).unwrap();
        let skip = reads[0].stage("Skip").expect("a Skip stage");
        assert_eq!(skip.name.as_deref(), Some(index));
        assert!(!skip.applied_on_data_read, "{skip:?}");
        assert_eq!((skip.initial_parts, skip.initial_granules), (5, 100), "{skip:?}");
        assert_eq!((skip.selected_parts, skip.selected_granules), (1, granules), "{skip:?}");
        let stats = &measured.stats;
        assert_eq!(stats.event("SelectedParts"), skip.selected_parts, "{query}: {:?}", stats.profile_events);
        assert_eq!(stats.event("SelectedMarks"), skip.selected_granules, "{query}: {:?}", stats.profile_events);
        assert_eq!(stats.read_rows, 1024 * skip.selected_granules, "{query}");
    }
}

/// A statement that applies skip indexes while reading (its own SETTINGS) gets a plan
/// whose skip stage keeps everything, while the read still skips: the stage says so, and
/// what it kept is what the read selected, the same as when the plan applies the index.
#[test]
fn a_skip_stage_left_to_the_read_is_marked_and_keeps_what_the_read_selected() {
    let mut target = with_skip_indexes("measure_skip_on_read");
    let planned = "SELECT count() FROM tagged WHERE grp = 70";
    let on_read = "SELECT count() FROM tagged WHERE grp = 70 SETTINGS use_skip_indexes_on_data_read = 1";
    let planned_stage = explain_indexes(&mut target, planned).unwrap()[0].stage("Skip").cloned().unwrap();
    let tag = StatementTag::new("test", "measure_skip_on_read", "on_read", 1);
    let measured = measure(&mut target, on_read, &tag, &Settings::new()).unwrap();
    assert_eq!(measured.body, "1000\n");
    let reads = explain_indexes(&mut target, on_read).unwrap();
    let stage = reads[0].stage("Skip").unwrap();
    // The plan did not evaluate the index: it keeps what it was given.
    assert!(stage.applied_on_data_read, "{stage:?}");
    assert_eq!((stage.selected_parts, stage.selected_granules), (5, 100), "{stage:?}");
    // The read skipped as the plan would have: 2 granules, 2,048 rows.
    let granules_read = Some(measured.stats.event("SelectedMarks"));
    assert_eq!(stage.granules_kept(granules_read), Some(planned_stage.selected_granules));
    assert_eq!(measured.stats.read_rows, 2048);
    // Its parts are unknown: SelectedParts counts them before skip indexes.
    assert_eq!(stage.parts_kept(), None);
    assert_eq!(measured.stats.event("SelectedParts"), 5);
    assert!(!planned_stage.applied_on_data_read);
}

/// A `SET` earlier in the session moves skip indexes to the read as well (EXPLAIN still
/// evaluates them while planning then): the stage is marked all the same, and the read
/// kept what it kept. Only where settings persist between statements, the only targets
/// where an earlier `SET` reaches a later statement.
#[test]
fn a_session_that_applies_skip_indexes_on_data_read_marks_the_skip_stage() {
    let mut target = with_skip_indexes("measure_skip_session");
    if !target.capabilities().session_settings_persist {
        return;
    }
    let query = "SELECT count() FROM tagged WHERE grp = 70";
    let on_read = Settings::new().with("use_skip_indexes_on_data_read", 1);
    let tag = StatementTag::new("test", "measure_skip_session", "on_read", 1);
    let (measured, reads) = target
        .with_session_settings(&on_read, |target| {
            let measured = measure(target, query, &tag, &Settings::new())?;
            Ok((measured, explain_indexes(target, query)?))
        })
        .unwrap();
    let stage = reads[0].stage("Skip").unwrap();
    assert!(stage.applied_on_data_read, "{stage:?}");
    assert_eq!(stage.granules_kept(Some(measured.stats.event("SelectedMarks"))), Some(2));
    assert_eq!(measured.stats.event("SelectedParts"), 5, "{:?}", measured.stats.profile_events);
    // Back in the pinned session, the same query's stage is the plan's own.
    assert!(!explain_indexes(&mut target, query).unwrap()[0].stage("Skip").unwrap().applied_on_data_read);
}

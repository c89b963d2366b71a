//! The claims vocabulary on the real engine: each key, on a small pack in a temporary
//! folder (4,000 rows in 4 daily partitions of 4 granules each, two skip indexes), once
//! where it holds and once where it is violated, and what its outcome says.

use std::collections::BTreeMap;
use std::fs;

use chbench::packs::{Case, Pack};
use chbench::target_info::TargetKind;

/// `v` rises with `k`, so its minmax index drops granules; every granule holds all ten
/// values of `s`, so its set index can drop none.
fn schema(codec: &str) -> String {
    format!(
        "CREATE TABLE t\n(\n    k UInt64{codec},\n    day Date{codec},\n    v UInt64{codec},\n    s String{codec},\n    \
         INDEX v_minmax v TYPE minmax GRANULARITY 1,\n    INDEX s_set s TYPE set(100) GRANULARITY 1\n)\n\
         ENGINE = MergeTree\nPARTITION BY day\nORDER BY k\n\
         SETTINGS index_granularity = 256, min_bytes_for_wide_part = 0;\n"
    )
}

/// One insert: one part per partition, whatever merges do. Partition `d` holds the
/// numbers `4j + d`, and `s` cycles with `j`: every granule has all ten values.
const GENERATOR: &str = "INSERT INTO t SELECT number, toDate('2026-01-01') + number % 4, number,\n    toString(intDiv(number, 4) % 10) FROM numbers({rows});\n";

const QUERIES: [(&str, &str); 5] = [
    ("by_v", "SELECT count() FROM t WHERE v BETWEEN 100 AND 200\n"),
    ("both", "SELECT count() FROM t WHERE v BETWEEN 100 AND 200 AND s = '3'\n"),
    ("scan", "SELECT count() FROM t WHERE s = '3'\n"),
    // A scan of 4,000 rows under a limit of 100, and a read of 1,024 under 2,000.
    ("limited", "SELECT count() FROM t WHERE s = '3'\nSETTINGS max_rows_to_read = 100\n"),
    ("roomy", "SELECT count() FROM t WHERE v BETWEEN 100 AND 200\nSETTINGS max_rows_to_read = 2000\n"),
];

/// The pack `vocab` (designs `plain` and `raw`, the latter without compression) with
/// `claims`; every test shares its datasets, since they are built from the same SQL.
fn vocab_pack(claims: &str) -> (tempfile::TempDir, Pack) {
    let mut files = vec![
        ("designs/plain.sql".to_string(), schema("")),
        ("designs/raw.sql".to_string(), schema(" CODEC(NONE)")),
        ("generator.sql".to_string(), GENERATOR.to_string()),
        ("claims.toml".to_string(), claims.to_string()),
    ];
    files.extend(QUERIES.iter().map(|(name, sql)| (format!("queries/{name}.sql"), sql.to_string())));
    write_pack("vocab", files)
}

/// The pack `name` of `files` (path in the pack, text) in a temporary folder.
fn write_pack(name: &str, files: Vec<(String, String)>) -> (tempfile::TempDir, Pack) {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join(name);
    for (path, text) in files {
        let path = folder.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let pack = Pack::load(&folder).unwrap_or_else(|error| panic!("{error:#}"));
    (root, pack)
}

/// Each claim's outcome on the case, by name: `Ok(what held)` or `Err(the violation)`.
fn outcomes(pack: &Pack, query: &str, design: &str, rows: u64) -> BTreeMap<String, Result<String, String>> {
    let case = Case { query: query.into(), design: design.into(), rows, must_violate: None };
    let outcome = pack.run_case(TargetKind::from_env().unwrap(), &case).unwrap_or_else(|error| panic!("{error:#}"));
    outcome
        .checks
        .into_iter()
        .filter_map(|check| {
            let result = check.check?.map(|held| held.to_string()).map_err(|violation| violation.to_string());
            Some((check.claim.name, result))
        })
        .collect()
}

#[track_caller]
fn assert_outcomes(outcomes: &BTreeMap<String, Result<String, String>>, expected: &[(&str, bool, &str)]) {
    for (name, holds, says) in expected {
        let outcome = outcomes.get(*name).unwrap_or_else(|| panic!("no outcome for {name}: {outcomes:#?}"));
        let text = match outcome {
            Ok(text) | Err(text) => text,
        };
        assert_eq!(outcome.is_ok(), *holds, "{name}: {text}");
        assert!(text.contains(says), "{name} should say {says:?}: {text}");
    }
    assert_eq!(outcomes.len(), expected.len(), "{outcomes:#?}");
}

#[test]
fn bounds_on_what_a_query_reads_from_both_sides() {
    let claims = "scales = [4000]\ndesigns = [\"plain\"]\n\
                  [queries.by_v]\nread_rows_at_least = 1000\ngranules_read_at_least = 4\n\
                  read_rows_share_at_most = 0.3\ngranules_read_at_most = 4\n\
                  [queries.both]\nread_rows_at_least = 2000\ngranules_read_at_least = 5\nread_rows_share_at_least = 0.5\n\
                  [queries.scan]\nread_rows_share_at_least = 1\nread_rows_share_at_most = 0.9\n";
    let (_root, pack) = vocab_pack(claims);
    assert_outcomes(
        &outcomes(&pack, "by_v", "plain", 4000),
        &[
            ("read_rows_at_least", true, "holds: measured 1024 rows read, expected at least 1000"),
            ("granules_read_at_least", true, "measured 4 granules read (1024 rows), expected at least 4"),
            ("read_rows_share_at_most", true, "measured 0.2560 of the table's rows read (1024 of 4000)"),
            // A claim that holds says what it measured (issue 16): not just "holds".
            ("granules_read_at_most", true, "holds: measured 4 granules read (1024 rows), expected at most 4"),
        ],
    );
    assert_outcomes(
        &outcomes(&pack, "both", "plain", 4000),
        &[
            ("read_rows_at_least", false, "violated: measured 1024 rows read, expected at least 2000"),
            ("granules_read_at_least", false, "expected at least 5"),
            ("read_rows_share_at_least", false, "expected at least 0.5 of the table's rows read"),
        ],
    );
    assert_outcomes(
        &outcomes(&pack, "scan", "plain", 4000),
        &[
            ("read_rows_share_at_least", true, "measured 1.0000 of the table's rows read (4000 of 4000)"),
            ("read_rows_share_at_most", false, "expected at most 0.9"),
        ],
    );
}

#[test]
fn stages_bounded_on_what_they_start_with_and_keep_and_skip_indexes_by_name() {
    let claims = "scales = [4000]\ndesigns = [\"plain\"]\n\
                  [queries.by_v]\n\
                  index.primary_key.granules_dropped_share_at_most = 0\n\
                  index.primary_key.initial_granules = 16\n\
                  index.skip.initial_parts_at_least = 4\n\
                  index.skip.parts_selected_at_least = 4\n\
                  index.skip.granules_selected_at_least = 4\n\
                  index.skip.initial_granules_at_most = 16\n\
                  index.skip.rows_dropped_share_at_most = 0.8\n\
                  [queries.both]\n\
                  index.primary_key.initial_granules_at_least = 17\n\
                  index.primary_key.initial_parts = 3\n\
                  index.partition.initial_parts_at_most = 3\n\
                  index.skip.granules_dropped_share_at_most = 0.5\n\
                  index.skip_index.v_minmax.granules_dropped_share_at_least = 0.7\n\
                  index.skip_index.v_minmax.granules_selected_at_least = 5\n\
                  index.skip_index.v_minmax.rows_dropped_share_at_most = 0.5\n\
                  index.skip_index.s_set.granules_dropped_share_at_most = 0\n\
                  index.skip_index.s_set.granules_dropped_share_at_least = 0.5\n\
                  index.skip_index.s_set.initial_granules_at_most = 3\n";
    let (_root, pack) = vocab_pack(claims);
    assert_outcomes(
        &outcomes(&pack, "by_v", "plain", 4000),
        &[
            ("index.primary_key.granules_dropped_share_at_most", true, "16 of 16 granules kept, 0.0000 dropped"),
            ("index.primary_key.initial_granules", true, "expected exactly 16 granules to start with"),
            ("index.skip.initial_parts_at_least", true, "skip index v_minmax: 4 of 4 parts selected"),
            ("index.skip.parts_selected_at_least", true, "expected at least 4 parts selected"),
            ("index.skip.granules_selected_at_least", true, "skip index v_minmax: 4 of 16 granules selected"),
            ("index.skip.initial_granules_at_most", true, "expected at most 16 granules to start with"),
            ("index.skip.rows_dropped_share_at_most", true, "0.7440 dropped (1024 rows read, 4000 without"),
        ],
    );
    assert_outcomes(
        &outcomes(&pack, "both", "plain", 4000),
        &[
            ("index.primary_key.initial_granules_at_least", false, "16 of 16 granules selected"),
            ("index.primary_key.initial_parts", false, "expected exactly 3 parts to start with"),
            ("index.partition.initial_parts_at_most", false, "4 of 4 parts selected"),
            // A failed skip claim names the index it measured.
            ("index.skip.granules_dropped_share_at_most", false, "measured skip index v_minmax: 4 of 16 granules kept"),
            ("index.skip_index.v_minmax.granules_dropped_share_at_least", true, "0.7500 dropped"),
            ("index.skip_index.v_minmax.granules_selected_at_least", false, "skip index v_minmax: 4 of 16"),
            ("index.skip_index.v_minmax.rows_dropped_share_at_most", false, "without the skip index v_minmax"),
            ("index.skip_index.s_set.granules_dropped_share_at_most", true, "skip index s_set: 4 of 4 granules kept"),
            ("index.skip_index.s_set.granules_dropped_share_at_least", false, "measured skip index s_set: 4 of 4"),
            ("index.skip_index.s_set.initial_granules_at_most", false, "skip index s_set: 4 of 4 granules selected"),
        ],
    );
}

#[test]
fn read_rows_growth_bounded_from_below() {
    let claims = "scales = [2000, 4000]\ndesigns = [\"plain\"]\n\
                  [queries.scan]\nread_rows_growth_at_least = 1.9\n\
                  [queries.by_v]\nread_rows_growth_at_least = 1.9\nread_rows_growth_at_most = 1\n";
    let (_root, pack) = vocab_pack(claims);
    assert_outcomes(
        &outcomes(&pack, "scan", "plain", 4000),
        &[("read_rows_growth_at_least", true, "measured 4000 rows read at 4000 rows, 2000 at 2000")],
    );
    assert_outcomes(
        &outcomes(&pack, "by_v", "plain", 4000),
        &[
            ("read_rows_growth_at_least", false, "expected at least 1.9 times as many"),
            ("read_rows_growth_at_most", true, "1024 rows read at 4000 rows, 1024 at 2000"),
        ],
    );
}

#[test]
fn table_claims_from_their_section_both_ways() {
    let claims = "scales = [4000]\n\
                  [table]\n\
                  active_parts_at_least = 4\n\
                  on.raw.compressed_bytes_above = \"plain\"\n\
                  on.raw.compression_ratio_at_most = 1.01\n\
                  on.raw.columns.s.compression_ratio_at_least = 2\n\
                  on.plain.compressed_bytes_above = \"raw\"\n\
                  on.plain.active_parts_at_least_share_of = { design = \"raw\", share = 1 }\n\
                  on.plain.active_parts_at_most = 3\n\
                  on.plain.columns.s.compression_ratio_at_most = 1\n";
    let (_root, pack) = vocab_pack(claims);
    assert_outcomes(
        &outcomes(&pack, "scan", "raw", 4000),
        &[
            ("table.active_parts_at_least", true, "holds: measured 4 active parts, expected at least 4"),
            ("table.compressed_bytes_above", true, "expected more compressed bytes than on design plain"),
            ("table.compression_ratio_at_most", true, "expected a compression ratio of at most 1.01"),
            ("columns.s.compression_ratio_at_least", false, "expected a compression ratio of at least 2"),
        ],
    );
    assert_outcomes(
        &outcomes(&pack, "scan", "plain", 4000),
        &[
            ("table.active_parts_at_least", true, "measured 4 active parts"),
            ("table.compressed_bytes_above", false, "expected more compressed bytes than on design raw"),
            ("table.active_parts_at_least_share_of", true, "4 active parts here, 4 on raw"),
            ("table.active_parts_at_most", false, "expected at most 3"),
            ("columns.s.compression_ratio_at_most", false, "expected a compression ratio of at most 1"),
        ],
    );
}

#[test]
fn a_query_can_be_expected_to_fail_with_an_error_code() {
    let claims = "scales = [4000]\ndesigns = [\"plain\"]\n\
                  [queries.limited]\nerror = \"TOO_MANY_ROWS\"\n\
                  [queries.roomy]\nerror = \"TOO_MANY_ROWS\"\n\
                  [queries.scan]\nerror = \"TIMEOUT_EXCEEDED\"\n";
    let (_root, pack) = vocab_pack(claims);
    let kind = TargetKind::from_env().unwrap();
    let run = |query: &str| {
        let case = Case { query: query.into(), design: "plain".into(), rows: 4000, must_violate: None };
        let outcome = pack.run_error_case(kind, &case, "claims.toml").unwrap_or_else(|error| panic!("{error:#}"));
        outcome
            .map(|line| line.replace(&format!("{}/", pack.folder.display()), ""))
            .map_err(|line| line.replace(&format!("{}/", pack.folder.display()), ""))
    };
    assert_eq!(run("limited").unwrap(), "claims.toml:4: queries/limited.sql:1 failed with TOO_MANY_ROWS, as it must");
    assert_eq!(
        run("roomy").unwrap_err(),
        "claims.toml:6: queries/roomy.sql:1 was expected to fail with TOO_MANY_ROWS, but it answered \"101\""
    );
    let otherwise = run("scan").unwrap_err();
    assert!(
        otherwise.starts_with(
            "claims.toml:8: queries/scan.sql:1 was expected to fail with TIMEOUT_EXCEEDED, but it answered"
        ),
        "{otherwise}"
    );
    // The other cases run on, and the determinism check leaves the failing queries out.
    let lines = pack.check_determinism(kind).unwrap_or_else(|error| panic!("{error:#}"));
    assert_eq!(lines.len(), 1, "{lines:?}");
}

/// A bloom filter on a unique `tag`, 4 parts of 4 granules: `tag = '1234'` is in one
/// granule of one part.
const BLOOM_SCHEMA: &str = "CREATE TABLE t\n(\n    k UInt64,\n    day Date,\n    tag String,\n    \
     INDEX tag_bf tag TYPE bloom_filter(0.001) GRANULARITY 1\n)\n\
     ENGINE = MergeTree\nPARTITION BY day\nORDER BY k\nSETTINGS index_granularity = 256;\n";

#[test]
fn a_skip_stage_applied_while_reading_is_claimed_on_what_the_read_kept() {
    let claims = "scales = [4000]\n\
                  [queries.on_read]\n\
                  index.skip_index.tag_bf.granules_selected_at_most = 1\n\
                  index.skip.granules_dropped_share_at_least = 0.9\n\
                  index.skip.parts_selected_at_most = 1\n\
                  index.skip.initial_parts = 4\n\
                  index.skip.initial_granules = 16\n\
                  [queries.planned]\n\
                  index.skip_index.tag_bf.granules_selected_at_most = 1\n\
                  index.skip.granules_dropped_share_at_least = 0.9\n\
                  index.skip.parts_selected_at_most = 1\n\
                  index.skip.initial_parts = 4\n";
    let files = [
        ("designs/bloom.sql", BLOOM_SCHEMA),
        (
            "generator.sql",
            "INSERT INTO t SELECT number, toDate('2026-01-01') + number % 4, toString(number) FROM numbers({rows});\n",
        ),
        (
            "queries/on_read.sql",
            "SELECT count() FROM t WHERE tag = '1234'\nSETTINGS use_skip_indexes_on_data_read = 1\n",
        ),
        ("queries/planned.sql", "SELECT count() FROM t WHERE tag = '1234'\n"),
        ("claims.toml", claims),
    ];
    let (_root, pack) = write_pack("on_read", files.map(|(path, text)| (path.to_string(), text.to_string())).into());
    // The plan keeps all 16 granules of a stage left to the read; the claim reads what the
    // read kept, the same granule the planned twin's stage keeps.
    assert_outcomes(
        &outcomes(&pack, "on_read", "bloom", 4000),
        &[
            (
                "index.skip_index.tag_bf.granules_selected_at_most",
                true,
                "skip index tag_bf: 1 of 16 granules selected (as the read selected them",
            ),
            ("index.skip.granules_dropped_share_at_least", true, "skip index tag_bf: 1 of 16 granules kept, 0.9375"),
            (
                "index.skip.parts_selected_at_most",
                false,
                "measured unknown (skip index tag_bf: the statement applies skip indexes while reading \
                 (use_skip_indexes_on_data_read = 1), so SelectedParts counts parts before them",
            ),
            ("index.skip.initial_parts", true, "skip index tag_bf: 4 parts to start with"),
            ("index.skip.initial_granules", true, "skip index tag_bf: 1 of 16 granules selected"),
        ],
    );
    assert_outcomes(
        &outcomes(&pack, "planned", "bloom", 4000),
        &[
            (
                "index.skip_index.tag_bf.granules_selected_at_most",
                true,
                "skip index tag_bf: 1 of 16 granules selected,",
            ),
            (
                "index.skip.granules_dropped_share_at_least",
                true,
                "skip index tag_bf: 1 of 16 granules kept, 0.9375 dropped,",
            ),
            ("index.skip.parts_selected_at_most", true, "skip index tag_bf: 1 of 4 parts selected"),
            ("index.skip.initial_parts", true, "skip index tag_bf: 1 of 4 parts selected"),
        ],
    );
}

#[test]
fn a_projection_read_is_claimed_on_its_table_and_an_unused_index_is_said() {
    // `INDEX jx(j)` with no space, as ClickHouse's own tests write it; a projection sorted
    // by `v`, which the plan names alone in its read.
    let design = "CREATE TABLE p\n(\n    k UInt64,\n    v UInt64,\n    j UInt64,\n    INDEX jx(j) TYPE minmax GRANULARITY 1,\n    \
                  PROJECTION by_v (SELECT * ORDER BY v)\n)\nENGINE = MergeTree\nORDER BY k\nSETTINGS index_granularity = 256;\n";
    let files = vec![
        ("designs/projected.sql".to_string(), design.to_string()),
        (
            "generator.sql".to_string(),
            "INSERT INTO p SELECT number, number % 100, number FROM numbers({rows});\n".to_string(),
        ),
        ("queries/by_v.sql".to_string(), "SELECT count() FROM p WHERE v = 7\n".to_string()),
        ("queries/by_j.sql".to_string(), "SELECT count() FROM p WHERE j BETWEEN 10 AND 20\n".to_string()),
        (
            "claims.toml".to_string(),
            "scales = [4000]\n[table]\nactive_parts_at_least = 1\n\
             [queries.by_v]\nread_rows_share_at_most = 0.2\nindex.skip_index.jx.used = false\nindex.skip.used = true\n\
             [queries.by_j]\nindex.skip_index.jx.used = true\nindex.skip_index.jx.granules_selected = 1\n"
                .to_string(),
        ),
    ];
    let (_root, pack) = write_pack("projected", files);
    let case = Case { query: "by_v".into(), design: "projected".into(), rows: 4000, must_violate: None };
    let outcome = pack.run_case(TargetKind::from_env().unwrap(), &case).unwrap_or_else(|error| panic!("{error:#}"));
    let read = &outcome.observation.pruning[0];
    assert_eq!((read.table.rsplit('.').next(), read.projection.as_deref()), (Some("p"), Some("by_v")));
    assert_eq!(outcome.observation.parts.as_ref().map(|parts| parts.rows), Some(4000));
    assert_outcomes(
        &outcomes(&pack, "by_v", "projected", 4000),
        &[
            ("table.active_parts_at_least", true, "measured 1 active part"),
            ("read_rows_share_at_most", true, "of the table's rows read (256 of 4000)"),
            ("index.skip_index.jx.used", true, "no Skip jx stage in the read of"),
            ("index.skip.used", false, "no Skip stage in the read of"),
        ],
    );
    assert_outcomes(
        &outcomes(&pack, "by_j", "projected", 4000),
        &[
            ("table.active_parts_at_least", true, "measured 1 active part"),
            ("index.skip_index.jx.used", true, "skip index jx used: 1 of 16 granules kept"),
            ("index.skip_index.jx.granules_selected", true, "1 of 16 granules selected"),
        ],
    );
}

#[test]
fn a_query_can_be_expected_to_fail_on_one_design_only() {
    // Sorted by k, a filter on v reads every row and hits the limit; sorted by v, it
    // reads one granule.
    let design = |key: &str| {
        format!(
            "CREATE TABLE t (k UInt64, v UInt64) ENGINE = MergeTree ORDER BY {key} SETTINGS index_granularity = 256;\n"
        )
    };
    let files = |claims: &str| {
        vec![
            ("designs/by_k.sql".to_string(), design("k")),
            ("designs/by_v.sql".to_string(), design("v")),
            (
                "generator.sql".to_string(),
                "INSERT INTO t SELECT number, number % 100 FROM numbers({rows});\n".to_string(),
            ),
            (
                "queries/q.sql".to_string(),
                "SELECT count() FROM t WHERE v = 7\nSETTINGS max_rows_to_read = 1000\n".to_string(),
            ),
            ("claims.toml".to_string(), claims.to_string()),
        ]
    };
    let claims = "scales = [4000]\n[queries.q]\nread_rows_at_most = 512\non.by_k.error = \"TOO_MANY_ROWS\"\n";
    let (_root, pack) = write_pack("error_on_one", files(claims));
    let query = pack.query("q").unwrap();
    assert_eq!(query.expected_error_on("by_k").map(|expected| expected.code.as_str()), Some("TOO_MANY_ROWS"));
    assert_eq!(query.expected_error_on("by_v"), None);
    let kind = TargetKind::from_env().unwrap();
    let case = Case { query: "q".into(), design: "by_k".into(), rows: 4000, must_violate: None };
    let failed = pack.run_error_case(kind, &case, "claims.toml").unwrap_or_else(|error| panic!("{error:#}"));
    assert_eq!(
        failed.unwrap().replace(&format!("{}/", pack.folder.display()), ""),
        "claims.toml:4: queries/q.sql:1 failed with TOO_MANY_ROWS, as it must"
    );
    assert_outcomes(&outcomes(&pack, "q", "by_v", 4000), &[("read_rows_at_most", true, "256 rows read")]);
    // The determinism check builds both designs and leaves the failing one's query out.
    let lines = pack.check_determinism(kind).unwrap_or_else(|error| panic!("{error:#}"));
    assert_eq!(lines.len(), 2, "{lines:?}");

    // A claim the failing design would have to measure is refused on load.
    let root = tempfile::tempdir().unwrap();
    for (claims, expected) in [
        (
            "scales = [4000]\n[queries.q]\non.by_k.error = \"TOO_MANY_ROWS\"\non.by_k.read_rows_at_most = 1\n",
            "claims.toml:4: read_rows_at_most on query q, which must fail with TOO_MANY_ROWS on design by_k",
        ),
        (
            "scales = [4000]\n[queries.q]\nsame_answer_on_every_design = true\non.by_k.error = \"TOO_MANY_ROWS\"\n",
            "claims.toml:3: same_answer_on_every_design on query q, which must fail with TOO_MANY_ROWS on design by_k",
        ),
        (
            "scales = [4000]\n[queries.q]\non.nowhere.error = \"TOO_MANY_ROWS\"\n",
            "claims.toml:3: design nowhere is not one of this query's designs (by_k, by_v)",
        ),
    ] {
        let folder = root.path().join("refused");
        for (path, text) in files(claims) {
            let path = folder.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        let error = format!("{:#}", Pack::load(&folder).unwrap_err()).replace(&format!("{}/", folder.display()), "");
        assert!(error.starts_with(expected), "{error}");
    }
}

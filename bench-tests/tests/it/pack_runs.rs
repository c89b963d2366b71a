//! How a pack's run reports what went wrong, on the real engine: a generator that draws
//! random values, a claim that fails, a broken design that no claim catches. Each pack is
//! a few thousand rows in a temporary folder.

use std::fs;

use chbench::packs::{Case, Pack};
use chbench::target_info::TargetKind;

const SCHEMA: &str = "CREATE TABLE t (k UInt64, v UInt64) ENGINE = MergeTree ORDER BY k \
                      SETTINGS index_granularity = 256;\n";

/// A pack in a temporary folder; `name` keeps its datasets apart from other tests'.
fn pack_in_temp(name: &str, generator: &str, claims: &str) -> (tempfile::TempDir, Pack) {
    let root = pack_files(name, generator, claims, POINT);
    let pack = Pack::load(&root.path().join(name)).unwrap();
    (root, pack)
}

const POINT: &str = "SELECT count(), sum(v) FROM t WHERE k = 42\n";

/// The files of a pack in a temporary folder, `query` as `queries/point.sql`.
fn pack_files(name: &str, generator: &str, claims: &str, query: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    write_pack(root.path(), name, generator, claims, query);
    root
}

/// The files of pack `name` under `root`.
fn write_pack(root: &std::path::Path, name: &str, generator: &str, claims: &str, query: &str) {
    let folder = root.join(name);
    for (path, text) in [
        ("designs/sorted.sql", SCHEMA),
        ("designs/also_sorted.sql", SCHEMA),
        (
            "broken/unsorted.sql",
            "CREATE TABLE t (k UInt64, v UInt64) ENGINE = MergeTree ORDER BY v SETTINGS index_granularity = 256;\n",
        ),
        ("generator.sql", generator),
        ("queries/point.sql", query),
        ("claims.toml", claims),
    ] {
        let path = folder.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

const GENERATOR: &str = "INSERT INTO t SELECT number, cityHash64(number) % 1000 FROM numbers({rows});\n";

#[test]
fn a_generator_drawing_random_values_is_caught() {
    // A known random function is refused when the pack loads, at its line.
    let random = "INSERT INTO t SELECT number, rand() FROM numbers({rows});\n";
    let (root, _pack) = pack_in_temp("run_hashed_first", GENERATOR, "scales = [5000]\n");
    fs::write(root.path().join("run_hashed_first/generator.sql"), random).unwrap();
    let error = format!("{:#}", Pack::load(&root.path().join("run_hashed_first")).unwrap_err());
    assert!(
        error.ends_with(
            "generator.sql:1: rand() gives other values on every run, so every design and every \
                             rebuild of the dataset gets other rows; derive the value from `number` instead (e.g. \
                             `cityHash64(number) % 100`, or generateRandom with a seed): see docs/packs.md, \
                             \"Generators must be deterministic\""
        ),
        "{error}"
    );

    // One no list knows (each statement's own id) is caught by building twice.
    let (_root, pack) = pack_in_temp(
        "run_random",
        "INSERT INTO t SELECT number, sipHash64(queryID(), number) FROM numbers({rows});\n",
        "scales = [5000]\n",
    );
    let error = format!("{:#}", pack.check_determinism(TargetKind::Embedded).unwrap_err());
    assert!(
        error.starts_with("the generator is not deterministic: two builds of design also_sorted at 5000 rows answer query point differently"),
        "{error}"
    );
    assert!(error.contains("see docs/packs.md"), "{error}");

    // Random where no query looks (the query reads k = 42 only): the tables' checksums
    // still differ.
    let (_root, pack) = pack_in_temp(
        "run_random_unread",
        "INSERT INTO t SELECT number, if(number = 42, 7, sipHash64(queryID(), number) % 1000) FROM numbers({rows});\n",
        "scales = [5000]\n",
    );
    let error = format!("{:#}", pack.check_determinism(TargetKind::Embedded).unwrap_err());
    assert!(error.contains("two builds of design also_sorted at 5000 rows hold table t as differently"), "{error}");

    let (_root, pack) = pack_in_temp("run_hashed", GENERATOR, "scales = [5000]\n");
    let report = pack.check_determinism(TargetKind::Embedded).unwrap();
    assert_eq!(report.len(), 2, "one line per design: {report:?}");
}

#[test]
fn a_failing_claim_names_its_line_and_what_was_measured() {
    let claims = "scales = [5000]\n\n[queries.point]\nread_rows_at_most = 1\ngranules_read_at_most = 1\n";
    let (_root, pack) = pack_in_temp("run_failing", GENERATOR, claims);
    let case = Case { query: "point".into(), design: "sorted".into(), rows: 5000, must_violate: None };
    let outcome = pack.run_case(TargetKind::Embedded, &case).unwrap();
    let failures = outcome.verdict(&case, "claims.toml").unwrap_err();
    assert_eq!(
        failures,
        "claims.toml:4: invariant read_rows_at_most violated: measured 256 rows read, expected at most 1"
    );
    assert_eq!(outcome.observation.granules_read, Some(1));
}

#[test]
fn a_broken_design_that_no_claim_catches_fails_its_test() {
    // Sorted by v, a point lookup on k reads every granule: caught. With the claim on
    // the answer instead, nothing catches the design.
    let claims =
        "scales = [5000]\n[queries.point]\ngranules_read_at_most = 1\nbroken.unsorted = \"granules_read_at_most\"\n";
    let (_root, pack) = pack_in_temp("run_broken", GENERATOR, claims);
    let broken = pack.cases().into_iter().find(|case| case.must_violate.is_some()).unwrap();
    assert_eq!(broken.test_name(&pack.name), "run_broken::point::broken::unsorted::rows_5000");
    let report = pack.run_case(TargetKind::Embedded, &broken).unwrap().verdict(&broken, "claims.toml").unwrap();
    assert!(
        report[0].contains(
            "violated: measured 20 granules read (5000 rows), expected at most 1 (as this broken design must)"
        ),
        "{report:?}"
    );

    let claims = "scales = [5000]\n[queries.point]\nsame_answer_on_every_design = true\nbroken.unsorted = \"same_answer_on_every_design\"\n";
    let (_root, pack) = pack_in_temp("run_uncaught", GENERATOR, claims);
    let broken = pack.cases().into_iter().find(|case| case.must_violate.is_some()).unwrap();
    let failures = pack.run_case(TargetKind::Embedded, &broken).unwrap().verdict(&broken, "claims.toml").unwrap_err();
    assert_eq!(
        failures,
        "claims.toml:3: broken design unsorted at 5000 rows was expected to violate same_answer_on_every_design, \
         but the claim held (5000 rows and 20 granules read): this claim does not catch the design at this scale"
    );
}

#[test]
fn an_empty_answer_fails_its_case_unless_the_query_says_it_may_be_empty() {
    // The generator's keys stop at 4999: the filter finds nothing, and reads 1 granule.
    let claims = "scales = [5000]\n[queries.point]\ngranules_read_at_most = 1\n";
    let root = pack_files("run_empty", GENERATOR, claims, "SELECT k, v FROM t WHERE k = 99999\n");
    let folder = root.path().join("run_empty");
    let case = Case { query: "point".into(), design: "sorted".into(), rows: 5000, must_violate: None };
    let outcome = Pack::load(&folder).unwrap().run_case(TargetKind::Embedded, &case).unwrap();
    assert_eq!(outcome.observation.answer_rows, 0);
    let failures = outcome.verdict(&case, "claims.toml").unwrap_err();
    let query_file = folder.join("queries/point.sql");
    assert_eq!(
        failures,
        format!(
            "{}: the query returned no rows on design sorted at 5000 rows, so claims about what it reads hold for \
             nothing: check its filter against the generator's data, or write answer_may_be_empty = true in \
             [queries.point] of claims.toml if no rows is the answer meant",
            query_file.display()
        )
    );

    fs::write(folder.join("claims.toml"), format!("{claims}answer_may_be_empty = true\n")).unwrap();
    let outcome = Pack::load(&folder).unwrap().run_case(TargetKind::Embedded, &case).unwrap();
    let report = outcome.verdict(&case, "claims.toml").unwrap();
    assert!(
        report.last().unwrap().ends_with("no rows on design sorted at 5000 rows, as answer_may_be_empty = true allows")
    );

    // A count of nothing is one row, 0: an answer.
    fs::write(&query_file, "SELECT count() FROM t WHERE k = 99999\n").unwrap();
    fs::write(folder.join("claims.toml"), claims).unwrap();
    let outcome = Pack::load(&folder).unwrap().run_case(TargetKind::Embedded, &case).unwrap();
    assert_eq!((outcome.observation.answer_rows, outcome.observation.answer.as_str()), (1, "0"));
    outcome.verdict(&case, "claims.toml").unwrap();
}

#[test]
fn a_new_snapshot_and_a_failed_claim_are_one_line_each_and_counted_apart() {
    // Two packs through the real harness (tests/packs.rs): one whose claims hold and whose
    // snapshot is new, one whose claim fails.
    let packs = tempfile::tempdir().unwrap();
    let holds = "scales = [5000]\n[queries.point]\ngranules_read_at_most = 1\n";
    write_pack(packs.path(), "harness_holds", GENERATOR, holds, POINT);
    let fails = "scales = [5000]\n[queries.point]\nread_rows_at_most = 1\n";
    write_pack(packs.path(), "harness_fails", GENERATOR, fails, POINT);
    let output = std::process::Command::new(packs_harness())
        .arg("::point::sorted::")
        .env("CHBENCH_PACKS_DIR", packs.path())
        .env("INSTA_UPDATE", "no")
        .env_remove("INSTA_OUTPUT")
        .current_dir(chbench::files::workspace_root())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{text}");
    let told: Vec<&str> = text
        .lines()
        .filter(|line| {
            ["new snapshot: ", "changed snapshot: ", "claim failed: "].iter().any(|start| line.starts_with(start))
        })
        .collect();
    let claims_file = packs.path().join("harness_fails/claims.toml");
    assert_eq!(
        told,
        [
            format!(
                "claim failed: {}:3: invariant read_rows_at_most violated: measured 256 rows read, expected at most 1",
                claims_file.display()
            ),
            "new snapshot: harness_holds_point_sorted_5000: none written (INSTA_UPDATE=no, or CI): run the case \
             locally, then cargo insta review"
                .to_string(),
        ],
        "{text}"
    );
    let everything = format!("{text}{}", String::from_utf8_lossy(&output.stderr));
    assert!(!everything.contains("panicked") && !everything.contains("stack backtrace"), "{everything}");
    assert!(
        text.contains("failed cases: 1 new snapshot to review (cargo insta review), 1 case whose claims failed"),
        "{text}"
    );
}

/// The newest build of the `packs` test binary, beside this one in `deps/` (nextest builds
/// both; a nested cargo would rebuild chbench with other features, for minutes).
fn packs_harness() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let newest = fs::read_dir(deps)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.strip_prefix("packs-").is_some_and(|hash| hash.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .max_by_key(|path| path.metadata().and_then(|metadata| metadata.modified()).ok());
    newest.unwrap_or_else(|| panic!("no packs harness in {}: build it (cargo nextest run builds it)", deps.display()))
}

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
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join(name);
    for (path, text) in [
        ("designs/sorted.sql", SCHEMA),
        ("designs/also_sorted.sql", SCHEMA),
        (
            "broken/unsorted.sql",
            "CREATE TABLE t (k UInt64, v UInt64) ENGINE = MergeTree ORDER BY v SETTINGS index_granularity = 256;\n",
        ),
        ("generator.sql", generator),
        ("queries/point.sql", "SELECT count(), sum(v) FROM t WHERE k = 42\n"),
        ("claims.toml", claims),
    ] {
        let path = folder.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let pack = Pack::load(&folder).unwrap();
    (root, pack)
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

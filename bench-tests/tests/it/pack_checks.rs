//! A scenario pack is checked before anything runs: each mistake below is refused by
//! `Pack::load`, which reads files only, with one line naming the file and line.

use std::fs;

use chbench::packs::Pack;

const SCHEMA: &str = "CREATE TABLE t (k UInt64) ENGINE = MergeTree ORDER BY k;\n";
const GENERATOR: &str = "-- {rows} rows\nINSERT INTO t\nSELECT number\nFROM numbers({rows});\n";
const QUERY: &str = "SELECT count() FROM t WHERE k < 10\n";
const CLAIMS: &str = "scales = [1000]\n\n[queries.q]\ngranules_read_at_most = 1\n";

/// A valid pack `demo` in a temporary folder, with `changes` (path, contents) written
/// over it; an empty contents removes the file.
fn pack_with(changes: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("demo");
    let files = [
        ("designs/plain.sql", SCHEMA),
        ("broken/unsorted.sql", SCHEMA),
        ("generator.sql", GENERATOR),
        ("queries/q.sql", QUERY),
        ("claims.toml", CLAIMS),
    ];
    for (path, text) in files.iter().chain(changes) {
        let path = folder.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        if text.is_empty() && changes.iter().any(|(changed, _)| folder.join(changed) == path) {
            let _ = fs::remove_file(&path);
        } else {
            fs::write(&path, text).unwrap();
        }
    }
    (root, folder)
}

fn refusal(changes: &[(&str, &str)]) -> String {
    let (_root, folder) = pack_with(changes);
    let error = Pack::load(&folder).expect_err("the pack should be refused");
    let message = format!("{error:#}");
    assert!(!message.contains('\n'), "one line, got: {message}");
    // Errors name files as they are on disk; shorten the temporary folder for asserts.
    message
        .replace(&format!("{}/", folder.display()), "")
        .replace(&format!("{}/", folder.parent().unwrap().display()), "")
}

#[test]
fn the_valid_pack_loads_with_one_case_per_query_design_and_scale() {
    let (_root, folder) = pack_with(&[]);
    let pack = Pack::load(&folder).unwrap();
    let names: Vec<String> = pack.cases().iter().map(|case| case.test_name(&pack.name)).collect();
    assert_eq!(names, ["demo::q::plain::rows_1000"]);
}

#[test]
fn an_unknown_claim() {
    let message = refusal(&[("claims.toml", "scales = [1000]\n[queries.q]\ngranules_red_at_most = 1\n")]);
    assert!(message.starts_with("claims.toml:3: unknown field `granules_red_at_most`, expected one of"), "{message}");
    assert!(message.ends_with("(the claims vocabulary is in docs/packs.md)"), "{message}");
}

#[test]
fn an_unknown_index_stage() {
    let message = refusal(&[("claims.toml", "scales = [1000]\n[queries.q]\nindex.primary.parts_selected = 1\n")]);
    assert!(message.starts_with("claims.toml:3: unknown field `primary`"), "{message}");
}

#[test]
fn a_claims_file_that_does_not_parse() {
    let message = refusal(&[("claims.toml", "scales = [1000]\n\n[queries.q\n")]);
    assert!(message.starts_with("claims.toml:3: "), "{message}");
}

#[test]
fn an_empty_claims_file() {
    let message = refusal(&[("claims.toml", "\n")]);
    assert!(message.starts_with("claims.toml:1: missing field `scales`"), "{message}");
}

#[test]
fn a_query_without_its_file() {
    let message = refusal(&[("claims.toml", "scales = [1000]\n[queries.q]\n[queries.q9]\nread_rows_at_most = 1\n")]);
    assert_eq!(message, "claims.toml:3: query q9 has no file queries/q9.sql");
}

#[test]
fn a_design_without_its_schema_file() {
    let message = refusal(&[("claims.toml", "scales = [1000]\ndesigns = [\"plain\", \"by_dya\"]\n")]);
    assert_eq!(message, "claims.toml:2: design by_dya has no file designs/by_dya.sql");
    let message = refusal(&[("claims.toml", "scales = [1000]\n[queries.q]\ndesigns = [\"nope\"]\n")]);
    assert_eq!(message, "claims.toml:3: design nope is not one of the pack's designs (plain)");
}

#[test]
fn a_broken_design_without_its_file_or_naming_no_claim_of_the_query() {
    let message = refusal(&[("claims.toml", &format!("{CLAIMS}broken.nope = \"granules_read_at_most\"\n"))]);
    assert_eq!(message, "claims.toml:5: broken design nope has no file broken/nope.sql");
    let message = refusal(&[("claims.toml", &format!("{CLAIMS}broken.unsorted = \"read_rows_at_most\"\n"))]);
    assert_eq!(
        message,
        "claims.toml:5: read_rows_at_most is not a claim of query q (its claims: granules_read_at_most)"
    );
}

#[test]
fn a_placeholder_without_a_value() {
    let message = refusal(&[("generator.sql", "INSERT INTO t\nSELECT number\nFROM numbers({row});\n")]);
    assert!(
        message.starts_with("generator.sql:3: parameter {row} has no value (known here: rows; did you mean {rows}?)"),
        "{message}"
    );
    let message = refusal(&[("queries/q.sql", "SELECT count()\nFROM t WHERE k < {limit}\n")]);
    assert!(message.contains("queries/q.sql:2: parameter {limit} has no value (known here: rows)"), "{message}");
}

#[test]
fn a_missing_generator_or_design_folder_or_an_empty_sql_file() {
    assert!(
        refusal(&[("generator.sql", "")])
            .ends_with("has no generator.sql (the statements that fill the table with {rows} rows)")
    );
    let message = refusal(&[("designs/plain.sql", ""), ("designs/empty.sql", "-- nothing yet\n")]);
    assert!(
        message.ends_with("designs/empty.sql has no statement; a fixture holds SQL statements separated by `;`"),
        "{message}"
    );
    let message = refusal(&[("queries/q.sql", "SELECT 1;\nSELECT 2\n")]);
    assert!(message.contains("queries/q.sql should hold one statement, it has 2"), "{message}");
}

#[test]
fn claims_that_compare_need_something_to_compare() {
    let message = refusal(&[("claims.toml", "scales = [1000]\n[queries.q]\nread_rows_growth_at_most = 2\n")]);
    assert_eq!(message, "claims.toml:3: read_rows_growth_at_most compares scales, and the query runs at one");
    let message = refusal(&[("claims.toml", "scales = [0]\n")]);
    assert_eq!(message, "claims.toml:1: scales must list row counts of at least 1, e.g. scales = [1_000_000]");
}

#[test]
fn names_that_cannot_name_a_test_or_a_dataset() {
    let message = refusal(&[("designs/By-Day.sql", SCHEMA)]);
    assert!(message.contains("name \"By-Day\" must be lowercase letters, digits and _"), "{message}");
}

/// The keys serde knows at one level of the claims file: the list its error for an
/// unknown key gives ("expected one of `a`, `b`").
fn keys_known_at(text_with_unknown_key: &str) -> Vec<String> {
    let error = chbench::packs::claims::parse("claims.toml", text_with_unknown_key).unwrap_err().to_string();
    let listed = error.split("expected one of").nth(1).unwrap_or_else(|| panic!("no key list in: {error}"));
    listed.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn every_key_of_the_claims_vocabulary_is_documented() {
    let docs = fs::read_to_string(chbench::files::workspace_root().join("docs/packs.md")).unwrap();
    let levels = [
        "scales = [1]\nunknown = 1\n",
        "scales = [1]\n[queries.q]\nunknown = 1\n",
        "scales = [1]\n[queries.q]\nindex.unknown = 1\n",
        "scales = [1]\n[queries.q]\nindex.skip.unknown = 1\n",
        "scales = [1]\n[queries.q]\nindex.skip_index.bf.unknown = 1\n",
        "scales = [1]\n[table]\nunknown = 1\n",
        "scales = [1]\n[table]\ncolumns.c.unknown = 1\n",
    ];
    let mut undocumented = Vec::new();
    for level in levels {
        for key in keys_known_at(level) {
            // Every key is written in the docs as code: `key`, `key = ...`, `index.<stage>.key ...`.
            let documented = docs.contains(&format!("`{key}"))
                || docs.contains(&format!(".{key}"))
                || docs.contains(&format!("`{key}`"));
            if !documented {
                undocumented.push(key);
            }
        }
    }
    assert!(undocumented.is_empty(), "keys of claims.toml missing from docs/packs.md: {undocumented:?}");
}

#[test]
fn the_claims_example_in_the_docs_parses() {
    let docs = fs::read_to_string(chbench::files::workspace_root().join("docs/packs.md")).unwrap();
    let example = docs.split("```toml\n").nth(1).and_then(|rest| rest.split("```").next()).unwrap();
    let file = chbench::packs::claims::parse("docs/packs.md", example).unwrap();
    assert_eq!(file.queries.len(), 1);
}

/// docs/packs.md's "Add your own schema" shows a complete pack, file by file: it must be
/// `fixtures/tenants/` exactly (which `cargo nextest run` runs as the `tenants::` tests),
/// load on its own from a fresh folder, and take at most 25 lines beyond its schemas.
#[test]
fn the_tutorial_pack_is_fixtures_tenants_and_complete() {
    let root = chbench::files::workspace_root();
    let tutorial = fs::read_to_string(root.join("docs/packs.md")).unwrap();
    let mut shown: Vec<(String, String)> = Vec::new();
    let lines: Vec<&str> = tutorial.lines().collect();
    for (index, line) in lines.iter().enumerate() {
        let Some(path) = line.strip_prefix("`fixtures/tenants/").and_then(|rest| rest.strip_suffix('`')) else {
            continue;
        };
        assert!(lines[index + 1].starts_with("```"), "docs/packs.md: no code block after {line}");
        let body: Vec<&str> = lines[index + 2..].iter().take_while(|body| !body.starts_with("```")).copied().collect();
        shown.push((path.to_string(), format!("{}\n", body.join("\n"))));
    }
    let folder = root.join("fixtures/tenants");
    let mut on_disk: Vec<String> = Vec::new();
    for sub in ["", "designs/", "broken/", "queries/"] {
        for entry in fs::read_dir(folder.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                on_disk.push(format!("{sub}{}", path.file_name().unwrap().to_string_lossy()));
            }
        }
    }
    on_disk.sort();
    let mut shown_paths: Vec<String> = shown.iter().map(|(path, _)| path.clone()).collect();
    shown_paths.sort();
    assert_eq!(shown_paths, on_disk, "docs/packs.md must show every file of fixtures/tenants/");
    for (path, text) in &shown {
        assert_eq!(
            text,
            &fs::read_to_string(folder.join(path)).unwrap(),
            "docs/packs.md's {path} differs from the file"
        );
    }
    let beyond_schemas: usize = shown
        .iter()
        .filter(|(path, _)| !path.starts_with("designs/") && !path.starts_with("broken/"))
        .map(|(_, text)| text.lines().count())
        .sum();
    assert!(beyond_schemas <= 25, "docs/packs.md's pack takes {beyond_schemas} lines beyond its schemas");

    // Followed literally in a new folder, the files make a pack on their own.
    let copy = tempfile::tempdir().unwrap();
    for (path, text) in &shown {
        let target = copy.path().join("tenants").join(path);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(target, text).unwrap();
    }
    let pack = Pack::load(&copy.path().join("tenants")).unwrap();
    assert_eq!(pack.cases().len(), 5, "2 designs x 2 scales, and the broken design");
}

#[test]
fn a_generator_of_several_files_runs_them_in_order_after_the_schema() {
    let claims = "scales = [1000]\ngenerator = [\"generator.sql\", \"settle.sql\"]\n";
    let (_root, folder) = pack_with(&[("claims.toml", claims), ("settle.sql", "OPTIMIZE TABLE t FINAL;\n")]);
    let pack = Pack::load(&folder).unwrap();
    let dataset = pack.dataset("plain", 1000).unwrap();
    let files: Vec<String> = ["designs/plain.sql", "generator.sql", "settle.sql"]
        .iter()
        .map(|file| folder.join(file).display().to_string())
        .collect();
    assert_eq!(dataset.fixtures, files);
    // Every listed file is checked as generator.sql is.
    let message = refusal(&[("claims.toml", claims), ("settle.sql", "OPTIMIZE TABLE {table} FINAL;\n")]);
    assert!(message.starts_with("settle.sql:1: parameter {table} has no value"), "{message}");
}

#[test]
fn a_generator_file_that_does_not_exist() {
    let claims = "scales = [1000]\ngenerator = [\n  \"generator.sql\",\n  \"settle.sql\",\n]\n";
    assert_eq!(refusal(&[("claims.toml", claims)]), "claims.toml:4: generator file settle.sql does not exist");
    // Listed, generator.sql is one file among others: the default is not looked for.
    let message = refusal(&[("claims.toml", "scales = [1000]\ngenerator = [\"fill.sql\"]\n"), ("generator.sql", "")]);
    assert_eq!(message, "claims.toml:2: generator file fill.sql does not exist");
    let message = refusal(&[("claims.toml", "scales = [1000]\ngenerator = [\"../generator.sql\"]\n")]);
    assert_eq!(message, "claims.toml:2: generator file ../generator.sql must be a path inside the pack folder");
    let message = refusal(&[("claims.toml", "scales = [1000]\ngenerator = []\n")]);
    assert!(message.starts_with("claims.toml:2: generator lists no file"), "{message}");
}

#[test]
fn a_query_whose_answer_varies_is_not_compared_by_answer() {
    let claims = "scales = [1000]\n[queries.q]\nanswer_varies = true\ngranules_read_at_most = 1\n";
    let (_root, folder) = pack_with(&[("claims.toml", claims)]);
    assert!(Pack::load(&folder).unwrap().query("q").unwrap().answer_varies);
    let claims = "scales = [1000]\n[queries.q]\nanswer_varies = true\nsame_answer_on_every_design = true\n";
    let message = refusal(&[("claims.toml", claims), ("designs/other.sql", SCHEMA)]);
    assert_eq!(message, "claims.toml:4: same_answer_on_every_design compares answers, and this query's answer varies");
    let claims = "scales = [1000]\n[queries.q]\non.plain.answer_varies = true\n";
    let message = refusal(&[("claims.toml", claims)]);
    assert!(message.starts_with("claims.toml:3: on.plain may hold claims and error only"), "{message}");
}

#[test]
fn a_design_in_both_folders_or_listed_twice() {
    let message = refusal(&[("broken/plain.sql", SCHEMA)]);
    assert!(
        message.ends_with("design plain is in both designs/ and broken/; give the broken one another name"),
        "{message}"
    );
    let message = refusal(&[("claims.toml", "scales = [1000]\ndesigns = [\"plain\",\n  \"plain\"]\n")]);
    assert_eq!(message, "claims.toml:3: design plain is listed twice");
}

#[test]
fn a_pack_without_queries() {
    let message = refusal(&[("queries/q.sql", ""), ("claims.toml", "scales = [1000]\n")]);
    assert!(message.ends_with("holds no query: put each SELECT in queries/<query>.sql"), "{message}");
}

#[test]
fn a_claim_on_one_design_that_names_cases_is_refused_at_its_line() {
    let message = refusal(&[("claims.toml", "scales = [1000]\n[queries.q]\non.plain.scales = [5]\n")]);
    assert!(message.starts_with("claims.toml:3: on.plain may hold claims and error only"), "{message}");
}

#[test]
fn a_claim_above_every_query_section_says_where_claims_go() {
    let message = refusal(&[("claims.toml", "scales = [1000]\ngranules_read_at_most = 2\n")]);
    assert!(message.starts_with("claims.toml:2: unknown field `granules_read_at_most`"), "{message}");
    assert!(message.ends_with("(claims go in a [queries.<query>] section; the claims vocabulary is in docs/packs.md)"));
}

#[test]
fn an_empty_query_file_or_an_empty_design_list() {
    let message = refusal(&[("queries/q.sql", "-- to do\n")]);
    assert!(message.ends_with("queries/q.sql holds no statement; put one query in it"), "{message}");
    let message = refusal(&[("claims.toml", "scales = [1000]\ndesigns = []\n")]);
    assert_eq!(message, "claims.toml:2: designs lists no design; leave it out to run on every design");
    let message = refusal(&[("claims.toml", "scales = [1000]\n[queries.q]\ndesigns = []\n")]);
    assert_eq!(message, "claims.toml:3: designs lists no design; leave it out to run on every design");
}

/// Every claim key serde knows: a query section's, an index stage's and `[table]`'s.
fn claim_keys() -> Vec<String> {
    let levels = [
        "scales = [1]\n[queries.q]\nunknown = 1\n",
        "scales = [1]\n[queries.q]\nindex.skip.unknown = 1\n",
        "scales = [1]\n[table]\nunknown = 1\n",
    ];
    levels.iter().flat_map(|level| keys_known_at(level)).collect()
}

#[test]
fn every_bound_exists_in_both_directions() {
    let keys = claim_keys();
    let twins = [("_at_most", "_at_least"), ("_at_least", "_at_most"), ("_below", "_above"), ("_above", "_below")];
    let mut missing = Vec::new();
    for key in &keys {
        for (end, twin_end) in twins {
            // `active_parts_at_most_share_of`: the direction sits inside the key.
            if let Some(at) = key.find(end) {
                let twin = format!("{}{twin_end}{}", &key[..at], &key[at + end.len()..]);
                if !keys.contains(&twin) {
                    missing.push(format!("{key} without {twin}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "bounds in one direction only: {missing:?}");
    for key in ["initial_parts", "initial_granules_at_most", "granules_dropped_share_at_most", "read_rows_at_least"] {
        assert!(keys.contains(&key.to_string()), "no key {key} in {keys:?}");
    }
}

#[test]
fn a_table_claim_under_a_query_says_it_goes_in_the_table_section() {
    let claims = "scales = [1000]\n[queries.q]\ntable.active_parts_at_most = 1\n";
    let message = refusal(&[("claims.toml", claims)]);
    assert!(message.starts_with("claims.toml:3: unknown field `table`"), "{message}");
    assert!(message.contains("claims about the table go in the [table] section, without `table.`"), "{message}");
    let claims = "scales = [1000]\n[queries.q]\non.plain.columns.k.compression_ratio_at_least = 1\n";
    assert!(refusal(&[("claims.toml", claims)]).contains("go in the [table] section"));
}

#[test]
fn table_claims_are_checked_in_every_query_of_their_designs() {
    let claims = "scales = [1000]\n[table]\nactive_parts_at_most = 1\non.other.columns.k.compression_ratio_at_least = 1\n\
                  [queries.q]\ngranules_read_at_most = 1\n";
    let (_root, folder) = pack_with(&[("claims.toml", claims), ("designs/other.sql", SCHEMA)]);
    let pack = Pack::load(&folder).unwrap();
    let named: Vec<(&str, usize, Option<&str>)> = pack.queries[0]
        .claims
        .iter()
        .map(|claim| (claim.name.as_str(), claim.line, claim.only_on.as_deref()))
        .collect();
    assert_eq!(
        named,
        [
            ("table.active_parts_at_most", 3, None),
            ("columns.k.compression_ratio_at_least", 4, Some("other")),
            ("granules_read_at_most", 6, None),
        ]
    );
    let claims = "scales = [1000]\n[table]\non.nope.active_parts_at_most = 1\n";
    assert_eq!(
        refusal(&[("claims.toml", claims)]),
        "claims.toml:3: design nope is not one of the pack's designs (plain)"
    );
}

#[test]
fn a_column_or_skip_index_a_design_does_not_declare_is_refused_with_the_names_it_has() {
    let schema = "CREATE TABLE t\n(\n    k UInt64,\n    `Body` String,\n    INDEX body_set Body TYPE set(10) GRANULARITY 1\n)\n\
                  ENGINE = MergeTree ORDER BY k;\n";
    let claims = "scales = [1000]\n[table]\n\ncolumns.body.compression_ratio_at_least = 2\n";
    let message = refusal(&[("designs/plain.sql", schema), ("claims.toml", claims)]);
    assert_eq!(
        message,
        "claims.toml:4: columns.body.compression_ratio_at_least names column body, which table t of design plain \
         does not have (designs/plain.sql declares columns: k, Body; did you mean Body?)"
    );
    let claims = "scales = [1000]\n[queries.q]\nindex.skip_index.body_sett.granules_selected_at_most = 2\n";
    let message = refusal(&[("designs/plain.sql", schema), ("claims.toml", claims)]);
    assert_eq!(
        message,
        "claims.toml:3: index.skip_index.body_sett.granules_selected_at_most names skip index body_sett, which \
         table t of design plain does not have (designs/plain.sql declares skip indexes: body_set; did you mean \
         body_set?)"
    );
    let claims =
        "scales = [1000]\n[queries.q]\nindex.skip.name = \"bf\"\nindex.skip.rows_dropped_share_at_least = 0.5\n";
    let message = refusal(&[("claims.toml", claims)]);
    assert!(message.ends_with("(designs/plain.sql declares skip indexes: none)"), "{message}");
    // Only the designs the claim is checked on: a broken design may lack the index.
    let claims = "scales = [1000]\n[queries.q]\nindex.skip_index.body_set.granules_selected_at_most = 2\n";
    let (_root, folder) = pack_with(&[("designs/plain.sql", schema), ("claims.toml", claims)]);
    Pack::load(&folder).unwrap();
}

#[test]
fn a_query_expected_to_fail_names_a_code_and_makes_no_claim() {
    let message = refusal(&[("claims.toml", "scales = [1000]\n[queries.q]\nerror = \"too many rows\"\n")]);
    assert!(message.starts_with("claims.toml:3: error \"too many rows\" is not an error code"), "{message}");
    let claims = "scales = [1000]\n[queries.q]\nerror = \"TOO_MANY_ROWS\"\nread_rows_at_most = 1\n";
    assert_eq!(
        refusal(&[("claims.toml", claims)]),
        "claims.toml:4: read_rows_at_most on query q, which must fail with TOO_MANY_ROWS: a failed statement \
         measures nothing to claim about"
    );
    let claims = "scales = [1000]\n[queries.q]\nerror = \"TOO_MANY_ROWS\"\n";
    let (_root, folder) = pack_with(&[("claims.toml", claims)]);
    let pack = Pack::load(&folder).unwrap();
    let expected = pack.query("q").unwrap().expected_error.clone().unwrap();
    assert_eq!((expected.code.as_str(), expected.line), ("TOO_MANY_ROWS", 3));
}

#[test]
fn a_generator_or_design_that_draws_random_values_is_refused_at_its_line() {
    let generator = "-- {rows} rows\nINSERT INTO t\nSELECT number + rand() % 2\nFROM numbers({rows});\n";
    let message = refusal(&[("generator.sql", generator)]);
    assert!(message.starts_with("generator.sql:3: rand() gives other values on every run"), "{message}");
    let schema = "CREATE TABLE t (k UInt64, at DateTime DEFAULT now()) ENGINE = MergeTree ORDER BY k;\n";
    let message = refusal(&[("designs/plain.sql", schema)]);
    assert!(message.starts_with("designs/plain.sql:1: now() gives other values on every run"), "{message}");
    // A pack that got past the load (changed since) is caught again before its dataset is built.
    let (_root, folder) = pack_with(&[]);
    let pack = Pack::load(&folder).unwrap();
    fs::write(folder.join("generator.sql"), generator).unwrap();
    let error = pack.dataset("plain", 1000).unwrap().statements().unwrap_err().to_string();
    assert!(error.contains("generator.sql:3: rand() gives other values on every run"), "{error}");
}

/// `[table]` claims are about the table a query reads: a query that names none of the
/// designs' tables (a `SELECT 1` floor) takes none of them, the others all.
#[test]
fn a_query_that_reads_no_table_takes_no_table_claims() {
    let claims = "scales = [1000]\n[table]\nactive_parts_at_most = 5\n[queries.q]\ngranules_read_at_most = 1\n";
    let (_root, folder) =
        pack_with(&[("claims.toml", claims), ("queries/floor.sql", "-- reads nothing\nSELECT 1 AS t_count\n")]);
    let pack = Pack::load(&folder).unwrap();
    let claims_of = |name: &str| -> Vec<String> {
        let query = pack.queries.iter().find(|query| query.name == name).unwrap();
        query.claims.iter().map(|claim| claim.name.clone()).collect()
    };
    assert_eq!(claims_of("q"), ["table.active_parts_at_most", "granules_read_at_most"]);
    assert!(claims_of("floor").is_empty(), "{:?}", claims_of("floor"));
}

#[test]
fn a_generator_that_never_uses_rows_is_refused() {
    // `{rows}` in a comment only fills every scale with the same rows.
    let message =
        refusal(&[("generator.sql", "-- {rows} rows, some day\nINSERT INTO t SELECT number, 1 FROM numbers(100)\n")]);
    assert!(message.starts_with("generator.sql: the generator never uses {rows}, so every scale"), "{message}");
}

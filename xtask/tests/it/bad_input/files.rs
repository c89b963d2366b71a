//! Files a command reads: SQL files and their placeholders, packs, queries and designs
//! before the engine starts, and results bundles that are empty, truncated or not one.

use super::*;

#[test]
fn an_sql_error_names_the_file_and_the_statement() {
    let folder = tempfile::tempdir().unwrap();
    let fixture = folder.path().join("typo.sql");
    std::fs::write(&fixture, "SELECT 1;\nSELEC count() FROM numbers(10);\n").unwrap();
    // The engine runs here: the caller's, if chosen, so that the suite never fetches the
    // pinned one behind CHBENCH_LIBCHDB's back.
    let chosen = std::env::var("CHBENCH_LIBCHDB").ok();
    let engine: Vec<(&str, &str)> = chosen.iter().map(|path| ("CHBENCH_LIBCHDB", path.as_str())).collect();
    let line = error_line(&xtask(&["measure", "--target", "embedded", fixture.to_str().unwrap()], &engine));
    assert!(
        line.contains(&format!("{}:2: statement failed: SELEC count() FROM numbers(10)", fixture.display())),
        "{line}"
    );
    assert!(line.contains("SYNTAX_ERROR"), "{line}");
}

#[test]
fn a_placeholder_without_a_value_names_the_file_and_line_before_the_engine_starts() {
    let folder = tempfile::tempdir().unwrap();
    // measure fills no placeholder, not even the packs' {rows}: each says so, and what to do.
    for (name, text, line_of, placeholder) in [
        ("scaled.sql", "-- one day of rows\nSELECT count()\nFROM numbers({rows})\n", 3, "rows"),
        ("x.sql", "SELECT {x}\n", 1, "x"),
    ] {
        let fixture = folder.path().join(name);
        std::fs::write(&fixture, text).unwrap();
        let output = xtask(&["measure", "--target", "embedded", fixture.to_str().unwrap()], &[]);
        let line = error_line(&output);
        assert_eq!(
            line,
            format!(
                "error: {}:{line_of}: parameter {{{placeholder}}} has no value: cargo xtask measure fills no \
                 placeholders; write the value in the file",
                fixture.display()
            )
        );
        assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
    }
}

#[test]
fn a_missing_sql_file_is_named() {
    let line = error_line(&xtask(&["measure", "--target", "embedded", "no/such/file.sql"], &[]));
    assert!(line.contains("cannot read no/such/file.sql"), "{line}");
    assert!(!Path::new("no/such/file.sql").exists());
}

#[test]
fn an_unknown_pack_lists_the_packs_before_the_engine_starts() {
    let line = measure_without_an_engine(&["no_such_pack", "one_tenant_one_hour"]);
    assert!(line.starts_with("error: no_such_pack is neither a pack nor an SQL file (packs here: "), "{line}");
    assert!(line.contains("primary_key") && line.contains("tenants"), "{line}");
    assert!(line.contains("an SQL file must exist or end in .sql"), "{line}");
    // A path never reaches a pack outside fixtures/, even one that exists.
    let line = measure_without_an_engine(&["../fixtures/tenants", "one_tenant_one_hour"]);
    assert!(line.starts_with("error: ../fixtures/tenants is neither a pack nor an SQL file"), "{line}");
}

#[test]
fn an_unknown_query_lists_the_queries_before_the_engine_starts() {
    let line = measure_without_an_engine(&["tenants", "no_such_query"]);
    assert_eq!(line, "error: pack tenants has no query no_such_query (its queries: one_tenant_one_hour)");
}

#[test]
fn an_unknown_design_lists_the_designs_before_the_engine_starts() {
    let line = measure_without_an_engine(&["tenants", "one_tenant_one_hour", "--design", "by_month"]);
    assert_eq!(line, "error: pack tenants has no design by_month (its designs: by_day, by_tenant_day, time_first)");
}

#[test]
fn a_row_count_that_is_zero_or_not_a_count_is_refused_before_the_engine_starts() {
    let line = measure_without_an_engine(&["primary_key", "one_device_one_hour", "--rows", "0"]);
    assert_eq!(line, "error: --rows 0: the row count must be a positive number like 10M");
    // A count below zero is a count, not an unknown flag.
    let line = measure_without_an_engine(&["primary_key", "one_device_one_hour", "--rows", "-5"]);
    assert_eq!(line, "error: --rows -5: \"-5\": a row count must be a positive number like 1000000 or 10M");
    let line = measure_without_an_engine(&["primary_key", "one_device_one_hour", "--rows", "ten"]);
    assert!(line.starts_with("error: --rows ten: \"ten\" is not a row count"), "{line}");
}

#[test]
fn a_pack_without_a_query_or_with_extra_arguments_is_refused_before_the_engine_starts() {
    let line = measure_without_an_engine(&["tenants"]);
    assert_eq!(
        line,
        "error: measure tenants needs a query: cargo xtask measure tenants QUERY (its queries: one_tenant_one_hour)"
    );
    let line = measure_without_an_engine(&["tenants", "one_tenant_one_hour", "by_day"]);
    assert!(
        line.starts_with("error: measure takes a pack and one query (PACK QUERY), or SQL files, and got 3 arguments"),
        "{line}"
    );
    assert!(
        line.contains("tenants was read as a pack since no such file exists and it does not end in .sql"),
        "{line}"
    );
}

#[test]
fn pack_flags_on_sql_files_are_refused_before_the_engine_starts() {
    let line = measure_without_an_engine(&["setup.sql", "--design", "by_day", "--rows", "1M"]);
    assert_eq!(
        line,
        "error: --design and --rows: for a pack's query only (cargo xtask measure PACK QUERY), and setup.sql is an SQL file"
    );
}

/// The other side of the tests above: a good pack command line passes every check (a
/// broken design and a row count with a suffix included) and gets as far as the engine.
#[test]
fn a_good_pack_command_line_gets_as_far_as_the_engine() {
    let output = xtask(
        &[
            "measure",
            "--target",
            "embedded",
            "tenants",
            "one_tenant_one_hour",
            "--design",
            "time_first",
            "--rows",
            "250K",
        ],
        &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")],
    );
    let line = error_line(&output);
    assert!(line.contains("CHBENCH_LIBCHDB=/nonexistent/libchdb.so is not a file"), "{line}");
}

#[test]
fn an_empty_truncated_or_other_results_file_is_named_with_what_to_do() {
    let bundle = tempfile::tempdir().unwrap();
    let results = bundle.path().join("results.json");
    let report = |text: &str| {
        std::fs::write(&results, text).unwrap();
        error_line(&xtask(&["report", bundle.path().to_str().unwrap()], &[]))
    };
    let what_to_do = "copy the bundle again from where it was written, or run the benchmark again";
    for empty in ["", "\n"] {
        assert_eq!(report(empty), format!("error: {} is empty: {what_to_do}", results.display()));
    }
    let line = report("{\n  \"schema_version\": 2,\n  \"run_id\": \"20261130T152128Z-embedded-logs-10M\",\n");
    assert_eq!(
        line,
        format!(
            "error: {} is truncated: it ends at line 4, column 0, before its JSON does; {what_to_do}",
            results.display()
        )
    );
    // JSON, but not a bundle, is told from text that is not JSON.
    for (text, shape) in [("[1,2,3]", "an array"), ("\"a\"", "a string"), ("42", "a number"), ("null", "null")] {
        assert_eq!(
            report(text),
            format!(
                "error: {} is JSON but not a results bundle: it holds {shape}, and a bundle is an object with a \
                 schema_version; give the folder of a bundle `cargo xtask bench` wrote",
                results.display()
            )
        );
    }
    assert_eq!(
        report("{\"run_id\": 1}"),
        format!("error: {} is JSON but not a results bundle: it has no schema_version", results.display())
    );
    let line = report("results: none");
    assert!(line.starts_with(&format!("error: {} is not JSON: ", results.display())), "{line}");
}

#[test]
fn a_matrix_folder_given_as_a_bundle_points_at_its_variants_and_its_summary() {
    let results = tempfile::tempdir().unwrap();
    let matrix = results.path().join("m1");
    std::fs::create_dir_all(matrix.join("m1-b")).unwrap();
    std::fs::create_dir_all(matrix.join("m1-a")).unwrap();
    std::fs::write(matrix.join("m1-a/results.json"), "{}").unwrap();
    std::fs::write(matrix.join("matrix.json"), "{}").unwrap();
    std::fs::write(matrix.join("matrix.md"), "").unwrap();
    let expected = format!(
        "error: {} is a matrix folder, not a results bundle: give one of its variants' bundles (e.g. {}), or read {}",
        matrix.display(),
        matrix.join("m1-a").display(),
        matrix.join("matrix.md").display()
    );
    // By its path, or by its id under --results-dir; compare says the same.
    let by_path = xtask(&["report", matrix.to_str().unwrap()], &[]);
    assert_eq!(by_path.status.code(), Some(1));
    assert_eq!(error_line(&by_path), expected);
    let by_id = xtask(&["report", "m1", "--results-dir", results.path().to_str().unwrap()], &[]);
    assert_eq!(error_line(&by_id), expected);
    let compared = xtask(&["compare", matrix.to_str().unwrap(), matrix.to_str().unwrap()], &[]);
    assert_eq!(error_line(&compared), expected);
}

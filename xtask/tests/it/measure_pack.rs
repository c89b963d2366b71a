//! `cargo xtask measure` on the real engine: a pack's query (the dataset is built or
//! reused) and SQL files, each as the summary it prints by default and as the full record
//! `--json` prints. Its bad command lines are in `bad_input.rs`.

use std::process::Output;

use serde_json::Value;

use crate::common::xtask;

/// `cargo xtask measure ARGS` on the embedded engine, which must succeed.
fn measure(args: &[&str]) -> Output {
    let output =
        xtask().arg("measure").args(args).env("CHBENCH_TARGET", "embedded").output().expect("cannot run xtask");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output
}

/// The keys of a JSON object, in order.
fn keys(record: &Value) -> Vec<&str> {
    record.as_object().expect("an object").keys().map(String::as_str).collect()
}

#[test]
fn a_pack_query_prints_a_summary_of_answer_reads_index_stages_parts_and_columns() {
    let output = measure(&["primary_key", "one_device_one_hour", "--rows", "250000"]);
    let summary = String::from_utf8(output.stdout).unwrap();
    assert!(
        summary.starts_with("pack primary_key, query one_device_one_hour, design readings, 250,000 rows"),
        "{summary}"
    );
    assert!(summary.contains("  answer (1 row):\n    36\t"), "{summary}");
    assert!(summary.contains("  read: 2,048 rows, "), "{summary}");
    assert!(summary.contains("  granules read: 1 (SelectedMarks)"), "{summary}");
    assert!(summary.contains("  parts read: 1 (SelectedParts, after every index)"), "{summary}");
    // The index stages as a table: a header, then one row per stage.
    let header = summary.lines().position(|line| line.split_whitespace().eq(["stage", "index", "parts", "granules"]));
    let header = header.unwrap_or_else(|| panic!("no stage table in:\n{summary}"));
    let primary_key = summary.lines().skip(header).find(|line| line.trim_start().starts_with("PrimaryKey"));
    assert!(primary_key.is_some_and(|line| line.ends_with("-> 1")), "{summary}");
    assert!(summary.contains("  table readings: 250,000 rows in "), "{summary}");
    assert!(summary.contains("  column sizes"), "{summary}");
    assert!(!summary.contains("no rows"), "{summary}");
}

#[test]
fn a_pack_query_prints_its_statistics_record_and_index_stages_with_json() {
    let output = xtask()
        .args(["measure", "--json", "primary_key", "one_device_one_hour", "--rows", "250000"])
        .env("CHBENCH_TARGET", "embedded")
        .output()
        .expect("cannot run xtask");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // stdout is the JSON document alone: progress goes to stderr.
    let record: Value = serde_json::from_slice(&output.stdout).expect("stdout is one JSON document");
    // The record's keys, in the order scripts have read them.
    let expected = ["pack", "query", "design", "rows", "answer", "table", "active_parts", "stats", "index_stages"];
    assert_eq!(keys(&record), expected);
    assert_eq!(record["pack"], "primary_key");
    assert_eq!(record["query"], "one_device_one_hour");
    // The defaults: the query's first design; the rows are the ones asked for.
    assert_eq!(record["design"], "readings");
    assert_eq!(record["rows"], 250_000);
    assert_eq!(record["table"], "readings");
    assert!(record["active_parts"].as_u64().is_some_and(|parts| parts >= 1), "{record:#}");
    // One device's hour: 36 rows, in one granule of 2048 rows.
    let answer = record["answer"].as_str().expect("the answer is text");
    assert!(answer.starts_with("36\t"), "{answer}");
    assert_eq!(record["stats"]["read_rows"], 2048, "{record:#}");
    // The raw record stays out of the printed one, as in the file form.
    assert!(record["stats"]["raw"].is_null(), "{record:#}");
    let stages = record["index_stages"][0]["stages"].as_array().expect("the first read has index stages");
    let primary_key = stages.iter().find(|stage| stage["kind"] == "PrimaryKey").expect("a PrimaryKey stage");
    let selected = primary_key["selected_granules"].as_u64().expect("selected_granules is a count");
    assert!(selected <= 2, "{primary_key}");
}

/// A file whose set-up makes a table of 4,096 rows in granules of 1,024, and `query` last.
fn sql_file(folder: &tempfile::TempDir, name: &str, query: &str) -> String {
    let path = folder.path().join(name);
    let setup = "CREATE TABLE t (k UInt64, v String) ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 1024;\n\
                 INSERT INTO t SELECT number, toString(number) FROM numbers(4096);\n";
    std::fs::write(&path, format!("{setup}{query}\n")).unwrap();
    path.display().to_string()
}

#[test]
fn a_file_whose_answer_has_no_rows_says_so_in_the_summary_and_the_record() {
    let folder = tempfile::tempdir().unwrap();
    let file = sql_file(&folder, "none.sql", "SELECT k FROM t WHERE k BETWEEN 5000 AND 6000");
    let summary = String::from_utf8(measure(&[&file]).stdout).unwrap();
    assert!(summary.starts_with(&format!("{file}:3 (after 2 set-up statements)\n")), "{summary}");
    assert!(summary.contains("  answer: no rows\n"), "{summary}");
    assert!(summary.contains("  note: the query returned no rows\n"), "{summary}");
    // The primary key drops every granule: nothing is read.
    assert!(summary.contains("  read: 0 rows, "), "{summary}");
    let record: Value = serde_json::from_slice(&measure(&["--json", &file]).stdout).unwrap();
    assert_eq!(keys(&record), ["file", "answer", "stats", "notes"]);
    assert_eq!(record["answer"], "");
    assert_eq!(record["notes"], serde_json::json!(["the query returned no rows"]));
}

#[test]
fn a_file_record_with_json_keeps_its_keys_and_the_summary_reads_the_same_numbers() {
    let folder = tempfile::tempdir().unwrap();
    // Not a count(), which would count the granule wholly inside the range from the index.
    let file = sql_file(&folder, "range.sql", "SELECT sum(length(v)) FROM t WHERE k BETWEEN 1000 AND 2100");
    let record: Value = serde_json::from_slice(&measure(&["--json", &file]).stdout).unwrap();
    // What the record has always been: no notes, no index stages for a plain SELECT.
    assert_eq!(keys(&record), ["file", "answer", "stats"]);
    // 1,101 keys of four digits.
    assert_eq!(record["answer"], "4404\n");
    // Granules 0 to 2 hold keys 1000 to 2100.
    assert_eq!(record["stats"]["read_rows"], 3072);
    let summary = String::from_utf8(measure(&[&file]).stdout).unwrap();
    assert!(summary.contains("  answer (1 row):\n    4404\n"), "{summary}");
    assert!(summary.contains("  read: 3,072 rows, "), "{summary}");
    assert!(summary.contains("  granules read: 3 (SelectedMarks)"), "{summary}");
    assert!(!summary.contains("note:"), "{summary}");
}

#[test]
fn an_explain_statement_gets_its_index_stages_and_says_its_read_rows_are_plan_lines() {
    let folder = tempfile::tempdir().unwrap();
    let file =
        sql_file(&folder, "explain.sql", "EXPLAIN indexes = 1 SELECT count() FROM t WHERE k BETWEEN 1000 AND 2100");
    let record: Value = serde_json::from_slice(&measure(&["--json", &file]).stdout).unwrap();
    assert_eq!(keys(&record), ["file", "answer", "stats", "index_stages", "notes"]);
    let plan_lines = record["answer"].as_str().unwrap().lines().count() as u64;
    assert_eq!(record["stats"]["read_rows"], plan_lines, "{record:#}");
    let stages = record["index_stages"][0]["stages"].as_array().expect("the read's stages");
    let primary_key = stages.iter().find(|stage| stage["kind"] == "PrimaryKey").expect("a PrimaryKey stage");
    assert_eq!((&primary_key["initial_granules"], &primary_key["selected_granules"]), (&4.into(), &3.into()));
    let note = format!(
        "this is an EXPLAIN: it reads no table, and its read_rows ({plan_lines}) are the lines of the plan it printed"
    );
    assert_eq!(record["notes"], serde_json::json!([note]));
    let summary = String::from_utf8(measure(&[&file]).stdout).unwrap();
    assert!(summary.contains("index stages of "), "{summary}");
    assert!(summary.contains(&format!("  note: {note}")), "{summary}");
    assert!(!summary.contains("granules read"), "an EXPLAIN reads none:\n{summary}");
}

/// A pack written out of the tree (`new-pack --dir`) is measured through
/// `CHBENCH_PACKS_DIR`, as the tests run it; the dataset it builds and the copy it opens
/// are one target, named once.
#[test]
fn a_pack_in_chbench_packs_dir_is_measured_and_its_target_named_once() {
    let packs = tempfile::tempdir().unwrap();
    let made = xtask().args(["new-pack", "elsewhere", "--dir"]).arg(packs.path()).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    // A target folder of its own, so that the dataset is built here, not reused; the
    // engine is the one this suite uses.
    let scratch = tempfile::tempdir().unwrap();
    let engine = std::env::var_os("CHBENCH_LIBCHDB").unwrap_or_else(|| {
        chbench::engine::provision(&|_| {}).expect("cannot provision the engine");
        chbench::engine::cache_dir().join("libchdb.so").into_os_string()
    });
    let output = xtask()
        .args(["measure", "elsewhere", "one_key_range"])
        .env("CHBENCH_TARGET", "embedded")
        .env("CHBENCH_PACKS_DIR", packs.path())
        .env("CARGO_TARGET_DIR", scratch.path())
        .env("CHBENCH_LIBCHDB", engine)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let summary = String::from_utf8(output.stdout).unwrap();
    assert!(summary.starts_with("pack elsewhere, query one_key_range, design by_key, 100,000 rows"), "{summary}");
    assert_eq!(stderr.matches("chbench: building dataset elsewhere_by_key_100000").count(), 1, "{stderr}");
    assert_eq!(stderr.lines().filter(|line| line.starts_with("chbench: target ")).count(), 1, "{stderr}");
}

/// `measure` of a file holding `sql`, sent one SIGTERM once the process holds
/// `resident_kib` of memory (the statement's work under way), run to its end.
#[cfg(target_os = "linux")]
fn measure_stopped_once_resident(sql: &str, resident_kib: u64) -> Output {
    use std::time::{Duration, Instant};
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("statement.sql");
    std::fs::write(&file, sql).unwrap();
    let mut child = xtask()
        .arg("measure")
        .arg(&file)
        .env("CHBENCH_TARGET", "embedded")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let resident = |pid: u32| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap_or("VmRSS: 0 kB").to_string();
        line.split_whitespace().nth(1).and_then(|kib| kib.parse::<u64>().ok()).unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while resident(child.id()) < resident_kib {
        assert!(child.try_wait().unwrap().is_none(), "the command ended before it could be stopped");
        assert!(Instant::now() < deadline, "the statement's work never got under way");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    child.wait_with_output().unwrap()
}

/// A statement the engine cannot cancel (it computes for seconds within one block of
/// rows, where the engine never looks for a cancel) does not hold the first SIGTERM: the
/// process stops at once after the cancel's bound, in one line saying so, as a second
/// Ctrl-C would stop it.
#[test]
#[cfg(target_os = "linux")]
fn a_statement_that_ignores_its_cancel_does_not_hold_the_stop() {
    // The fold holds its arrays in memory: half a GiB means the statement runs.
    let output = measure_stopped_once_resident(
        "SELECT arrayFold((acc, x) -> acc + x, range(2000000), toUInt64(0))\n",
        512 * 1024,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains(chbench::interrupt::STOPPING_LINE), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "chbench: the statement in progress still runs {} s after it was cancelled",
            chbench::targets::chdb::CANCEL_BOUND.as_secs()
        )),
        "{stderr}"
    );
}

/// A stop while a large answer is sorted for its summary (20 s for 20 million rows) ends
/// the command at once: nothing is printed, and the exit is a stop's.
#[test]
#[cfg(target_os = "linux")]
fn a_stop_while_a_large_answer_is_sorted_ends_at_once() {
    // The answer is in this process once it holds more than a GiB.
    let output =
        measure_stopped_once_resident("SELECT number, toString(number) FROM numbers_mt(20000000)\n", 1024 * 1024);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(output.stdout.is_empty(), "a stopped command prints no summary");
    assert!(stderr.trim_end().ends_with("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"), "{stderr}");
}

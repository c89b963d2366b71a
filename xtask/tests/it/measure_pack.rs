//! `cargo xtask measure PACK QUERY` on the real engine: the dataset is built (or reused)
//! and the query's statistics record and index stages are printed as one JSON document.
//! Its bad command lines are in `bad_input.rs`.

use serde_json::Value;

use crate::common::xtask;

#[test]
fn a_pack_query_prints_its_statistics_record_and_index_stages() {
    let output = xtask()
        .args(["measure", "primary_key", "one_device_one_hour", "--rows", "250000"])
        .env("CHBENCH_TARGET", "embedded")
        .env_remove("CHBENCH_LIBCHDB")
        .output()
        .expect("cannot run xtask");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // stdout is the JSON document alone: progress goes to stderr.
    let record: Value = serde_json::from_slice(&output.stdout).expect("stdout is one JSON document");
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

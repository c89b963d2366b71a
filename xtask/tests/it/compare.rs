//! `cargo xtask compare` on a real bundle (one small logs run) and on copies of it edited
//! the way a user's bundles go wrong: the same bundle twice is unchanged, a query made
//! slower fails `--fail-on-slower`, bundles asked to do different things are refused until
//! `--force`, and a bundle that is of another kind, schema 1, truncated, or of one
//! configuration alone is one line.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{error_line, xtask};

/// One real run, shared by the checks below (one test, so that one run serves them all:
/// nextest runs each test in a process of its own): 200K rows, eight warm runs (enough for
/// the test at p < 0.01).
fn measured() -> &'static Path {
    static RUN: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &RUN.get_or_init(|| {
        let results = tempfile::tempdir().unwrap();
        let output = xtask()
            .args(["bench", "--target", "embedded", "--rows", "200K", "--runs", "8", "--run-id", "a"])
            .arg("--results-dir")
            .arg(results.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let dir = results.path().join("a");
        (results, dir)
    })
    .1
}

/// A copy of the measured bundle at `<root>/<name>`, its results edited by `edit`.
fn copy(root: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let dir = root.join(name);
    copy_folder(measured(), &dir);
    let path = dir.join("results.json");
    let mut bundle: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    bundle["run_id"] = Value::String(name.to_string());
    edit(&mut bundle);
    std::fs::write(&path, serde_json::to_string_pretty(&bundle).unwrap()).unwrap();
    dir
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_folder(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

fn compare(args: &[&str], bundles: &[&Path], out: &Path) -> Output {
    xtask().arg("compare").args(bundles).args(args).arg("--out").arg(out).output().unwrap()
}

#[test]
fn compare_on_a_real_bundle_and_its_edited_copies() {
    the_same_bundle_twice_is_unchanged_and_written_as_markdown_chart_and_json();
    a_slower_query_fails_the_gate_after_the_report_is_written();
    bundles_of_another_dataset_are_refused_until_forced();
    a_bundle_that_cannot_be_compared_is_one_line();
    one_run_twice_warns_once_and_each_warning_once();
    a_query_held_twice_is_said();
    a_bad_journal_line_is_skipped_and_said_once();
}

fn one_run_twice_warns_once_and_each_warning_once() {
    let work = tempfile::tempdir().unwrap();
    let noisy = copy(work.path(), "noisy", |bundle| {
        bundle["machine"]["noise"] = serde_json::json!(["load average 3.0 over 2 cores"]);
    });
    let out = work.path().join("out");
    // The same folder by two names.
    let again = work.path().join(".").join("noisy");
    let output = compare(&[], &[&noisy, &again], &out);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let said = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        said.matches("warning: A and B are the same run (noisy): every query is unchanged").count(),
        1,
        "{said}"
    );
    assert_eq!(said.matches("machine was not quiet").count(), 1, "{said}");
    assert!(!said.contains("separate runs"), "{said}");
}

fn a_query_held_twice_is_said() {
    let work = tempfile::tempdir().unwrap();
    let doubled = copy(work.path(), "doubled", |bundle| {
        let queries = bundle["benchmark"]["queries"].as_array_mut().unwrap();
        assert_eq!(queries[0]["query"], "q1");
        let first = queries[0].clone();
        queries.push(first);
    });
    let output = compare(&["--json"], &[measured(), &doubled], &work.path().join("out"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let comparison: Value = serde_json::from_slice(&output.stdout).unwrap();
    let warnings: Vec<&str> = comparison["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let held_twice = "doubled holds query q1 2 times: its first entry is compared, the other one is left out";
    assert_eq!(warnings.iter().filter(|warning| **warning == held_twice).count(), 1, "{warnings:?}");
    assert_eq!(comparison["queries"].as_array().unwrap().len(), 6, "q1 is compared once");
}

fn a_bad_journal_line_is_skipped_and_said_once() {
    let work = tempfile::tempdir().unwrap();
    let mut extra = Value::Null;
    let journaled = copy(work.path(), "journaled", |bundle| {
        let mut sample = bundle["benchmark"]["queries"][0]["samples"].as_array().unwrap().last().unwrap().clone();
        sample["attempt"] = Value::from(999);
        extra = sample;
    });
    let journal = journaled.join("samples.jsonl");
    let record = serde_json::json!({"query_index": 0, "answer": null, "sample": extra});
    std::fs::write(&journal, format!("{{\"query_index\": 0, \"sam\n{record}\n")).unwrap();
    let output = compare(&["--json"], &[measured(), &journaled], &work.path().join("out"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let skipped: Vec<&str> = stderr.lines().filter(|line| line.contains("is not a sample record")).collect();
    assert_eq!(skipped.len(), 1, "{stderr}");
    let opening = format!("chbench: {}:1 is not a sample record (EOF while parsing", journal.display());
    assert!(skipped[0].starts_with(&opening), "{stderr}");
    assert!(skipped[0].ends_with("): skipped; the bundle is read with the other 1 sample"), "{stderr}");
    // The good line's sample is in: one more sample of q1 on B.
    let comparison: Value = serde_json::from_slice(&output.stdout).unwrap();
    let q1 = &comparison["queries"][0];
    assert_eq!(q1["candidate"]["samples"].as_u64().unwrap(), q1["baseline"]["samples"].as_u64().unwrap() + 1);
    let report = xtask().arg("report").arg(&journaled).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
}

fn the_same_bundle_twice_is_unchanged_and_written_as_markdown_chart_and_json() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let output = compare(&["--json", "--fail-on-slower", "0"], &[measured(), measured()], &out);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let comparison: Value = serde_json::from_slice(&output.stdout).expect("--json prints the comparison alone");
    let queries = comparison["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 6, "Q1-Q5 and Q5 with the bloom filter");
    assert!(queries.iter().all(|query| query["significance"]["verdict"] == "unchanged"), "{comparison:#}");
    assert_eq!(comparison["summary"]["unchanged"], 6);
    for file in ["compare.md", "medians.svg", "compare.json"] {
        assert!(out.join(file).is_file(), "{file} was not written");
    }
    // Each query's direct-I/O run beside the other side's: shown, not tested.
    let direct_io = comparison["logs"]["direct_io"].as_array().unwrap();
    assert_eq!(direct_io.len(), 6, "{comparison:#}");
    for pair in direct_io {
        assert_eq!(pair["baseline"], pair["candidate"], "{pair:#}");
        assert_eq!(pair["ratio"], 1.0, "{pair:#}");
    }
    let report = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(report.contains("## Direct I/O: the run a side that reads the volume"), "{report}");
}

fn a_slower_query_fails_the_gate_after_the_report_is_written() {
    let work = tempfile::tempdir().unwrap();
    // q3 three times as slow: what a regression looks like in the bundle.
    let slower = copy(work.path(), "slower", |bundle| {
        for runs in bundle["benchmark"]["queries"].as_array_mut().unwrap() {
            if runs["query"] == "q3" {
                for sample in runs["samples"].as_array_mut().unwrap() {
                    let us = sample["stats"]["server_duration_us"].as_u64().unwrap();
                    sample["stats"]["server_duration_us"] = Value::from(us * 3);
                }
            }
        }
    });
    let out = work.path().join("out");
    let gated = compare(&["--fail-on-slower", "0"], &[measured(), &slower], &out);
    let line = error_line(&gated);
    assert!(line.contains("slower or failed on B: q3; that is 1, more than --fail-on-slower 0"), "{line}");
    let report = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(report.contains("**slower**") && report.contains("## Why it changed"), "{report}");
    let allowed = compare(&["--fail-on-slower", "1"], &[measured(), &slower], &out);
    assert!(allowed.status.success(), "{}", String::from_utf8_lossy(&allowed.stderr));
    let said = String::from_utf8_lossy(&allowed.stdout);
    assert!(said.contains("q3: slower"), "{said}");
    // A logs comparison prices nothing, and says nothing of prices (a kind that prices its
    // sides says a missing price on the terminal: the throughput and ClickBench tests).
    assert!(!said.contains("cost") && !said.contains("price") && !said.contains("ClickBench"), "{said}");
}

fn bundles_of_another_dataset_are_refused_until_forced() {
    let work = tempfile::tempdir().unwrap();
    let other = copy(work.path(), "other", |bundle| bundle["benchmark"]["dataset"]["rows"] = Value::from(1000));
    let out = work.path().join("out");
    let line = error_line(&compare(&[], &[measured(), &other], &out));
    assert!(line.contains("rows: 200000 against 1000") && line.contains("--force"), "{line}");
    let forced = compare(&["--force"], &[measured(), &other], &out);
    assert!(forced.status.success(), "{}", String::from_utf8_lossy(&forced.stderr));
    // The terminal names what --force let through, as the report does.
    let said = String::from_utf8_lossy(&forced.stdout);
    assert!(
        said.contains(
            "\ncompared with --force, though the runs were asked to do different things: rows: 200000 against 1000\n"
        ),
        "{said}"
    );
    let report = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(report.contains("Compared with --force") && report.contains("rows: 200000 against 1000"));
}

fn a_bundle_that_cannot_be_compared_is_one_line() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let other_kind = copy(work.path(), "parts", |bundle| bundle["benchmark"]["kind"] = Value::from("parts"));
    let line = error_line(&compare(&[], &[measured(), &other_kind], &out));
    assert!(line.contains("is a logs benchmark") && line.contains("a parts one"), "{line}");
    let schema_1 = copy(work.path(), "old", |bundle| bundle["schema_version"] = Value::from(1));
    assert!(error_line(&compare(&[], &[measured(), &schema_1], &out)).contains("schema 1"));
    let truncated = copy(work.path(), "cut", |_| {});
    let text = std::fs::read_to_string(truncated.join("results.json")).unwrap();
    std::fs::write(truncated.join("results.json"), &text[..text.len() / 2]).unwrap();
    assert!(error_line(&compare(&[], &[measured(), &truncated], &out)).contains("is truncated"));
    let alone = error_line(&compare(&[], &[measured()], &out));
    assert!(alone.contains("a run of one configuration"), "{alone}");
    let missing = error_line(&compare(&[], &[measured(), &work.path().join("nothing")], &out));
    assert!(missing.contains("no results bundle"), "{missing}");
    let variants = error_line(&compare(&["--variants", "a"], &[measured()], &out));
    assert!(variants.contains("--variants \"a\" is not two variant names"), "{variants}");
    // A file where the comparison's default folder goes: named, with what to do.
    let (a, b) = (copy(work.path(), "a", |_| {}), copy(work.path(), "b", |_| {}));
    std::fs::write(work.path().join("compare-a-vs-b"), "x").unwrap();
    let in_the_way =
        crate::common::xtask().arg("compare").args([&a, &b]).arg("--results-dir").arg(work.path()).output().unwrap();
    let line = error_line(&in_the_way);
    assert!(line.contains("compare-a-vs-b is a file where the comparison's folder goes: remove it, or give --out"));
    // A price for a comparison whose kind prices nothing would be ignored: refused (the
    // throughput test refuses a node price for a type neither side ran on).
    for price in [&["--node-price", "c7g.2xlarge=0.29"][..], &["--price-b", "0.29"]] {
        let unused = compare(price, &[measured(), measured()], &work.path().join("np"));
        let line = error_line(&unused);
        assert!(line.contains(": a logs comparison prices nothing") && line.contains("drop the price"), "{line}");
        assert!(line.starts_with(&format!("error: {}", price[0])), "{line}");
        assert!(!work.path().join("np").exists(), "nothing written for a refused comparison");
    }
}

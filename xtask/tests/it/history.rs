//! `cargo xtask history` on real runs: three small logs runs, the third of other rows (its
//! inputs differ from the second's), put in time order with a verdict for the second and a
//! break for the third; and bundles of two kinds, with no --kind, refused in one line.

use std::path::Path;

use crate::common::{error_line, xtask};

/// A small logs run into `results` as `run_id`.
fn bench(results: &Path, run_id: &str, rows: &str) {
    let output = xtask()
        .args(["bench", "--target", "embedded", "--rows", rows, "--runs", "3", "--run-id", run_id])
        .arg("--results-dir")
        .arg(results)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// The table rows of `query`'s section of history.md.
fn rows_of<'a>(markdown: &'a str, query: &str) -> Vec<&'a str> {
    let heading = format!("## {query}\n");
    let at = markdown.find(&heading).unwrap_or_else(|| panic!("no {heading:?} in:\n{markdown}"));
    markdown[at + heading.len()..]
        .lines()
        .skip_while(|line| line.is_empty())
        .take_while(|line| line.starts_with('|'))
        .filter(|line| line.starts_with("| #") && !line.starts_with("| # |"))
        .collect()
}

#[test]
fn history_of_three_runs_gives_a_verdict_then_a_break_where_the_inputs_differ() {
    let results = tempfile::tempdir().unwrap();
    bench(results.path(), "h1", "1K");
    bench(results.path(), "h2", "1K");
    bench(results.path(), "h3", "2K");
    let output = xtask().arg("history").arg("--results-dir").arg(results.path()).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let out = results.path().join("history-logs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("history: {}", out.join("history.md").display()))
            && stdout.contains(&format!("page: {}", out.join("history.html").display())),
        "{stdout}"
    );
    let markdown = std::fs::read_to_string(out.join("history.md")).unwrap();
    assert!(markdown.contains("![median per run](history.svg)"), "{markdown}");
    // The runs in the order they started, the third's break with compare's reason.
    let runs = rows_of(&markdown, "Runs");
    assert_eq!(runs.len(), 3, "{markdown}");
    assert!(runs[0].starts_with("| #1 | h1 |") && runs[0].ends_with("| first |"), "{markdown}");
    assert!(runs[1].starts_with("| #2 | h2 |") && !runs[1].contains("break"), "{markdown}");
    assert!(
        runs[2].starts_with("| #3 | h3 |") && runs[2].contains("**break** against #2: ") && runs[2].contains("rows"),
        "{markdown}"
    );
    for query in ["q1", "q2", "q3", "q4"] {
        let rows = rows_of(&markdown, query);
        assert_eq!(rows.len(), 3, "{query}: {markdown}");
        assert!(rows[0].ends_with("| first |"), "{query}: {markdown}");
        let verdicts = ["unchanged", "faster", "slower", "unstable", "untestable"];
        assert!(verdicts.iter().any(|verdict| rows[1].contains(verdict)), "{query}: {markdown}");
        assert!(rows[2].contains("**break**"), "{query}: {markdown}");
        assert!(rows.iter().all(|row| row.contains(" ms |")), "{query}: {markdown}");
    }
    // Every run's point of every query named on hover in the chart, and the chart in the page.
    let svg = std::fs::read_to_string(out.join("history.svg")).unwrap();
    let values = &svg[svg.find("<g class=\"values\"").unwrap()..];
    let queries = markdown.matches("\n## ").count() - 1;
    assert_eq!(values.matches("<title>").count(), 3 * queries, "{values}");
    assert!(values.contains("<title>q1 · h2: median "), "{values}");
    let page = std::fs::read_to_string(out.join("history.html")).unwrap();
    assert!(page.contains("<svg") && page.contains("history of 3 runs"), "{page}");
}

#[test]
fn history_of_bundles_of_two_kinds_without_a_kind_is_refused_in_one_line() {
    let results = tempfile::tempdir().unwrap();
    for (run_id, kind) in [("l1", "logs"), ("t1", "throughput")] {
        let dir = results.path().join(run_id);
        std::fs::create_dir_all(&dir).unwrap();
        let bundle = serde_json::json!({
            "schema_version": chbench::results::SCHEMA_VERSION,
            "run_id": run_id,
            "started_at": "2026-03-01T10:00:00Z",
            "status": "complete",
            "target": { "kind": "embedded", "engine_version": "26.7.2.1", "endpoint": "libchdb.so" },
            "machine": null,
            "benchmark": { "kind": kind },
        });
        std::fs::write(dir.join("results.json"), bundle.to_string()).unwrap();
    }
    let output = xtask().arg("history").arg("--results-dir").arg(results.path()).output().unwrap();
    let line = error_line(&output);
    assert!(line.ends_with("holds logs and throughput bundles: give --kind K or the runs"), "{line}");
    // Given both as runs, the same: one kind to an axis.
    let output = xtask().args(["history", "l1", "t1"]).arg("--results-dir").arg(results.path()).output().unwrap();
    let line = error_line(&output);
    assert!(line.contains("a logs bundle") && line.contains("a throughput one"), "{line}");
    assert!(!results.path().join("history-logs").exists());
}

//! `chbench::history` on bundles written here from the logs kind's example: what a run that
//! stopped before its queries does to a history.

use chbench::benchmarks::Benchmark;
use chbench::benchmarks::logs::LogsBenchmark;
use chbench::history::{Against, history};
use chbench::results::{BundleWriter, ExistingFolder, RunBundle, RunStatus};

/// A run stopped before its queries is in the history, incomplete and without figures,
/// but is no run's run before: the run after it is compared with the last run that
/// measured a query, not broken by it.
#[test]
fn a_run_that_measured_no_query_is_kept_and_skipped_as_the_run_before() {
    let root = tempfile::tempdir().unwrap();
    let example = LogsBenchmark::examples(1.5, 7).remove(0);
    let mut dirs = Vec::new();
    for index in 0..3 {
        let mut bundle = RunBundle { sql_files: Vec::new(), ..example.clone() };
        bundle.run_id = format!("run-{}", index + 1);
        bundle.started_at += jiff::SignedDuration::from_hours(index);
        if index == 1 {
            bundle.status = RunStatus::Incomplete;
            bundle.benchmark.queries.clear();
        }
        dirs.push(BundleWriter::create(root.path(), bundle, ExistingFolder::Refuse).unwrap().dir().to_path_buf());
    }
    let history = history(&dirs).unwrap();
    let runs = &history.runs;
    assert!(runs[0].figures.is_ok() && runs[2].figures.is_ok());
    assert!(runs[1].figures.is_err(), "the stopped run has no figures");
    assert_eq!(runs[1].before, Some(0));
    assert_eq!(runs[2].before, Some(0), "compared with run 1, not the stopped run 2");
    assert!(matches!(runs[2].against_previous, Against::Compared(_)));
    let markdown = history.markdown();
    let stopped = markdown.lines().find(|line| line.starts_with("| #2 |")).unwrap();
    assert!(stopped.contains("**incomplete**") && stopped.contains("no figures"), "{stopped}");
    let third = markdown.lines().find(|line| line.starts_with("| #3 |")).unwrap();
    assert!(third.contains("against #1:"), "{third}");
}

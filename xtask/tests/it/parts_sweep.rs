//! `cargo xtask bench parts`: a sweep grows one table per design point by point, measures
//! every query at every point, fits each query's slope and keeps it all in the bundle; the
//! gate fails a run only after its bundle and report are written; bad points are refused
//! before the engine starts; an interruption while a point is built or measured keeps the
//! points done.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chbench::benchmarks::parts::{DESIGNS, FitQuality, Fitted, PartsBundle, PartsResults, QUERIES, ROWS_PER_PART};
use chbench::results::{RunStatus, SAMPLES_FILE, load_bundle};
use chbench::stats::StatsSource;
use chbench::targets::embedded::storage_dir_of_process;

use crate::common::{error_line, xtask};

/// `cargo xtask bench parts` on the embedded engine, its bundle `run_id` under `results`.
fn parts_command(results: &Path, run_id: &str, flags: &[&str]) -> Command {
    let mut command = xtask();
    command
        .args(["bench", "parts", "--target", "embedded", "--run-id", run_id])
        .args(flags)
        .arg("--results-dir")
        .arg(results);
    command
}

fn sweep(results: &Path, run_id: &str, flags: &[&str]) -> std::process::Output {
    parts_command(results, run_id, flags).output().unwrap()
}

#[test]
fn a_sweep_grows_each_design_point_by_point_and_fits_every_query() {
    let results = tempfile::tempdir().unwrap();
    let output = sweep(results.path(), "sweep", &["--parts", "1,20,200", "--runs", "2", "--clients", "2,1"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let dir = results.path().join("sweep");
    let bundle: PartsBundle = load_bundle(&dir).unwrap();
    assert_eq!(bundle.status, RunStatus::Complete);
    let parts = &bundle.benchmark;
    assert_eq!(parts.sweep.points, [1, 20, 200]);
    assert!(matches!(parts.engine_events, chbench::benchmarks::parts::EngineEvents::Known { .. }));
    // Each point added rows to the last: the first design holds exactly the parts asked for,
    // the second the same rows in days (day 0 in two inserts: two parts).
    let active = |design: &str| -> Vec<u64> {
        parts.points.iter().map(|point| build(parts, point.parts, design).active_parts).collect()
    };
    assert_eq!(active(DESIGNS[0]), [1, 20, 200]);
    assert_eq!(active(DESIGNS[1]), [1, 2, 11]);
    for point in &parts.points {
        for design in DESIGNS {
            let built = build(parts, point.parts, design);
            assert_eq!(built.rows, point.parts * ROWS_PER_PART);
            assert!(built.seconds.unwrap() > 0.0 && built.bytes_on_disk > 0, "{built:?}");
        }
        assert!(point.measure_seconds.is_some_and(|seconds| seconds > 0.0), "{point:?}");
    }
    // Every query on every design at every point, by one client and by two at once; the
    // answer and the part read are the same at every point and on both designs.
    assert_eq!(parts.sweep.clients, [1, 2]);
    assert_eq!(parts.queries.len(), 3 * DESIGNS.len() * QUERIES.len() * 2);
    for query in QUERIES {
        let runs: Vec<_> = parts.queries.iter().filter(|runs| runs.query == query).collect();
        assert!(runs.iter().all(|runs| runs.samples.len() == 2 * runs.variant.clients as usize), "{query}");
        // Two clients at once on the embedded engine: the result's counters alone, since
        // its events are the process's.
        for runs in &runs {
            let expected =
                if runs.variant.clients == 1 { StatsSource::ResultAndEventsDelta } else { StatsSource::ResultCounters };
            assert!(runs.samples.iter().all(|sample| sample.stats.source == expected), "{query} {:?}", runs.variant);
        }
        let runs: Vec<_> = runs.into_iter().filter(|runs| runs.variant.clients == 1).collect();
        assert!(runs.iter().all(|each| each.answer == runs[0].answer && !each.answer.is_empty()), "{query}");
        if query != "select_one" {
            let read_parts =
                runs.iter().flat_map(|runs| &runs.samples).map(|sample| sample.stats.event("SelectedParts"));
            assert!(read_parts.into_iter().all(|parts| parts == 1), "{query} read more than its part");
        }
    }
    // A line per design, query and figure, through three part counts.
    assert_eq!(parts.fits.len(), DESIGNS.len() * QUERIES.len() * 2);
    assert!(parts.fits.iter().all(|fit| fit.part_counts == 3 && fit.samples == 6), "{:?}", parts.fits);
    assert!(parts.fits.iter().all(|fit| !matches!(fit.quality, FitQuality::Unknown { .. })), "{:?}", parts.fits);
    assert!(parts.fits.iter().any(|fit| fit.fitted == Fitted::Planning));
    // Each phase's time, and the clean-up's, are in the bundle.
    let phases: Vec<&str> = parts.phase_times.iter().map(|time| time.phase.as_str()).collect();
    assert_eq!(phases, ["prepare", "sweep", "gate", "clean_up"]);
    assert!(parts.phase_times.iter().all(|time| time.seconds.unwrap() >= 0.0));
    assert!(dir.join("report.md").is_file());
}

#[test]
fn one_point_is_measured_and_its_slopes_are_unknown_not_zero() {
    let results = tempfile::tempdir().unwrap();
    let output = sweep(results.path(), "one", &["--parts", "1", "--runs", "1", "--clients", "1"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bundle: PartsBundle = load_bundle(&results.path().join("one")).unwrap();
    assert_eq!(build(&bundle.benchmark, 1, DESIGNS[0]).active_parts, 1);
    for fit in &bundle.benchmark.fits {
        assert!(fit.slope_us_per_1k_parts.is_none(), "{fit:?}");
        assert!(matches!(&fit.quality, FitQuality::Unknown { reason } if reason.contains("one part count")));
    }
}

/// The gate's verdict is the run's exit: one line per query outside the bound, after the
/// bundle (complete) and the report are written; none, and the run succeeds.
#[test]
fn the_gate_fails_the_run_only_after_its_bundle_and_report_are_written() {
    let results = tempfile::tempdir().unwrap();
    let output =
        sweep(results.path(), "gated", &["--parts", "1,40", "--runs", "2", "--clients", "1", "--max-slope", "0"]);
    let dir = results.path().join("gated");
    let bundle: PartsBundle = load_bundle(&dir).unwrap();
    assert_eq!(bundle.status, RunStatus::Complete, "the gate is not a failure of the run");
    assert!(dir.join("report.md").is_file());
    let gate = bundle.benchmark.gate.as_ref().expect("the gate ran");
    assert_eq!(gate.max_slope_us_per_1k_parts, Some(0.0));
    // Two part counts: no query's slope can be judged, so none can be held to the bound.
    assert_eq!(gate.failures.len(), QUERIES.len(), "{:?}", gate.failures);
    let line = error_line(&output);
    assert!(line.contains("run gated failed its check"), "{line}");
    for failure in &gate.failures {
        assert!(line.contains(failure.as_str()), "{line} lacks {failure}");
        assert!(
            failure.contains("cannot be held to --max-slope 0") && failure.contains("two part counts"),
            "{failure}"
        );
    }
}

#[test]
fn points_that_cannot_be_built_in_turn_are_refused_before_the_engine_starts() {
    let results = tempfile::tempdir().unwrap();
    for (points, said) in [
        ("0", "--parts 0: a point needs at least one part"),
        ("100,10", "--parts lists 10 after a larger one (100 before it)"),
        ("100,100", "--parts lists 100 twice"),
        ("200000", "--parts 200000 is more than this benchmark builds (100000"),
    ] {
        let output = sweep(results.path(), "refused", &["--parts", points]);
        let line = error_line(&output);
        assert!(line.contains(said), "--parts {points}: {line}");
        assert!(!String::from_utf8_lossy(&output.stderr).contains("target embedded"), "the engine started");
    }
    for bound in ["-1", "NaN", "inf"] {
        let output = sweep(results.path(), "refused", &["--max-slope", bound]);
        assert!(error_line(&output).contains(&format!("--max-slope {bound} is not a bound")), "{bound}");
    }
    assert!(!results.path().join("refused").exists());
}

/// SIGTERM while the second point's tables are built: the insert is cancelled, the run
/// ends with 130, and the first point, built and measured, stays in the bundle.
#[test]
fn sigterm_while_a_point_is_built_keeps_the_points_done() {
    let results = tempfile::tempdir().unwrap();
    let mut child = spawn(results.path(), "built", &["--parts", "10,5000", "--runs", "1", "--clients", "1"]);
    let dir = results.path().join("built");
    wait_for(&mut child, || load_bundle::<PartsResults>(&dir).is_ok_and(|bundle| !bundle.benchmark.fits.is_empty()));
    // The first point is measured and fitted: the second's build runs now.
    sigterm(&mut child);
    let pid = child.id();
    let (code, stderr) = finish(child, results.path(), "built");
    assert_eq!(code, Some(130), "{stderr}");
    assert!(!storage_dir_of_process(pid).exists(), "the interrupted run left its engine folder");
    let bundle: PartsBundle = load_bundle(&dir).unwrap();
    assert_eq!((bundle.status, bundle.phase.as_str()), (RunStatus::Incomplete, "sweep"));
    let points: Vec<u64> = bundle.benchmark.points.iter().map(|point| point.parts).collect();
    assert_eq!(points, [10], "{stderr}");
    assert_eq!(bundle.benchmark.queries.iter().filter(|runs| runs.variant.point == 10).count(), 8);
    let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error: ")).collect();
    assert!(
        errors.len() == 1 && errors[0].ends_with("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"),
        "{stderr}"
    );
}

/// SIGTERM in the middle of a point's queries keeps every sample measured so far.
#[test]
fn sigterm_while_a_point_is_measured_keeps_its_samples() {
    let results = tempfile::tempdir().unwrap();
    let mut child = spawn(results.path(), "measured", &["--parts", "10", "--runs", "100000", "--clients", "1"]);
    let dir = results.path().join("measured");
    let journaled = || std::fs::read_to_string(dir.join(SAMPLES_FILE)).map_or(0, |text| text.lines().count());
    wait_for(&mut child, || journaled() >= 10);
    sigterm(&mut child);
    let (code, stderr) = finish(child, results.path(), "measured");
    assert_eq!(code, Some(130), "{stderr}");
    let bundle: PartsBundle = load_bundle(&dir).unwrap();
    assert_eq!(bundle.status, RunStatus::Incomplete);
    assert_eq!(bundle.benchmark.points.len(), 1);
    assert!(bundle.benchmark.points[0].measure_seconds.is_none(), "the point's measuring did not end");
    let samples: usize = bundle.benchmark.queries.iter().map(|runs| runs.samples.len()).sum();
    assert!(samples >= 10, "only {samples} samples kept");
    assert!(std::fs::read_to_string(dir.join("report.md")).unwrap().contains("**Incomplete run**"));
}

/// SIGTERM while the run drops its tables, its last step: every measurement was done, so
/// the bundle is complete, and the one error line says that only the clean-up was cut
/// and names what it could not drop with the statement that drops it.
#[test]
fn sigterm_during_the_clean_up_keeps_the_bundle_complete_and_says_what_it_left() {
    let results = tempfile::tempdir().unwrap();
    let mut child = spawn(results.path(), "cleaning", &["--parts", "2000", "--runs", "1", "--clients", "1"]);
    let dir = results.path().join("cleaning");
    wait_for(&mut child, || load_bundle::<PartsResults>(&dir).is_ok_and(|bundle| bundle.phase == "clean_up"));
    sigterm(&mut child);
    let (code, stderr) = finish(child, results.path(), "cleaning");
    let bundle: PartsBundle = load_bundle(&dir).unwrap();
    // Whether the signal cut the drops or came after them, the measurements are whole.
    assert_eq!((bundle.status, bundle.phase.as_str()), (RunStatus::Complete, "done"), "{stderr}");
    assert_eq!(bundle.error, None, "{stderr}");
    assert_eq!(bundle.benchmark.queries.len(), DESIGNS.len() * QUERIES.len());
    assert!(!std::fs::read_to_string(dir.join("report.md")).unwrap().contains("**Incomplete run**"));
    if code == Some(0) {
        // The drops ended before the signal came: nothing left, nothing to say.
        return;
    }
    assert_eq!(code, Some(130), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    let line = errors[0];
    assert!(
        line.starts_with(&format!(
            "error: run cleaning is complete (its bundle and report are in {}), but its clean-up was cut short: \
             cannot clean up after the run: ",
            dir.display()
        )),
        "{line}"
    );
    assert!(line.contains("may be left on the target") && line.contains("DROP DATABASE chbench_cleaning_"), "{line}");
    assert!(line.ends_with("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"), "{line}");
    assert!(!stderr.contains("stopped during"), "{stderr}");
}

fn build<'a>(parts: &'a PartsResults, point: u64, design: &str) -> &'a chbench::benchmarks::parts::PointBuild {
    let point = parts.points.iter().find(|built| built.parts == point).unwrap();
    point.builds.iter().find(|build| build.design == design).unwrap()
}

/// Starts a sweep whose stderr goes to `stderr.txt` beside the bundles: a pipe nobody
/// reads while the test waits would fill and stop the run.
fn spawn(results: &Path, run_id: &str, flags: &[&str]) -> Child {
    let stderr = std::fs::File::create(results.join(format!("{run_id}.stderr.txt"))).unwrap();
    parts_command(results, run_id, flags).stdout(Stdio::null()).stderr(stderr).spawn().unwrap()
}

/// Waits for the run to end; its exit code and its stderr.
fn finish(mut child: Child, results: &Path, run_id: &str) -> (Option<i32>, String) {
    let status = child.wait().unwrap();
    (status.code(), std::fs::read_to_string(results.join(format!("{run_id}.stderr.txt"))).unwrap())
}

fn wait_for(child: &mut Child, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !done() {
        assert!(Instant::now() < deadline, "the run never got there");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be interrupted");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sigterm(child: &mut Child) {
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill -TERM failed");
}

/// `cargo xtask report` renders a parts bundle again from the bundle alone, by its folder
/// or by its run id: the report the run wrote, every section of it, and its charts.
#[test]
fn a_parts_bundle_reports_again_by_its_folder_or_its_run_id() {
    let results = tempfile::tempdir().unwrap();
    let output = sweep(results.path(), "again", &["--parts", "1,20", "--runs", "1", "--clients", "1,2"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let dir = results.path().join("again");
    let written = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for section in ["## Query duration against total parts", "## Slopes", "## Concurrency", "## Lock counters"] {
        assert!(written.contains(section), "the report lacks {section}:\n{written}");
    }
    let charts = ["duration.svg", "planning.svg", "planning_share.svg"];
    let by_folder = vec![dir.clone().into_os_string()];
    let by_run_id = vec!["again".into(), "--results-dir".into(), results.path().as_os_str().to_owned()];
    for (how, args) in [("by its folder", by_folder), ("by its run id", by_run_id)] {
        for file in charts.iter().chain(&["report.md"]) {
            std::fs::remove_file(dir.join(file)).unwrap();
        }
        let output = xtask().arg("report").args(&args).output().unwrap();
        assert!(output.status.success(), "{how}: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(std::fs::read_to_string(dir.join("report.md")).unwrap(), written, "{how}");
        for chart in charts {
            assert!(dir.join(chart).is_file(), "{how}: no {chart}");
        }
    }
}

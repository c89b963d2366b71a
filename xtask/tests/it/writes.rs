//! `cargo xtask bench writes` at its edges, on the embedded engine: batches of one row at
//! two levels complete with every level recorded and the rows each wrote; fsync durability
//! fsyncs every INSERT of a budget; a Ctrl-C or a SIGTERM inside a level exits 130 and
//! keeps the levels done; two runs at once each write only into their own engine and
//! database; two bundles compare level by level with the time split side by side, and a
//! durability against the other compares saying so; a target that runs one statement at
//! a time in another process runs level 1 only, its threads and cores unknown; a disk that
//! fills in a level ends the run after it, the levels done kept (a real full file system,
//! mounted for the test: run by `.ci/run`, as it needs root). Each run
//! is tiny (200 ms levels or a few INSERTs, one round, a runner check of 2 INSERTs a
//! block, if any): the facts asserted are structural, never a time.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use chbench::benchmarks::writes::{
    Durability, EventsDelta, INSERT, ThreadsSampled, WritesBundle, WritesResults, WritesRound,
};
use chbench::levels::LevelBound;
use chbench::results::{RunStatus, load_bundle};
use chbench::stats::{EngineEvents, StatsSource};
use chbench::targets::embedded::storage_dir_of_process;

use crate::common::{Said, error_line, error_lines, xtask};
use chbench::load_generator::LoadFrom;

/// The smallest run that still has two levels, a runner check and a report.
const TINY: [&str; 10] =
    ["--concurrency", "1,2", "--duration", "200ms", "--rounds", "1", "--check-statements", "2", "--batch-rows", "1"];

/// `cargo xtask bench writes` on the embedded engine, its bundle `run_id` under `results`.
fn writes(results: &Path, run_id: &str, flags: &[&str]) -> Command {
    let mut command = xtask();
    command
        .args(["bench", "writes", "--target", "embedded", "--run-id", run_id])
        .args(flags)
        .arg("--results-dir")
        .arg(results);
    command
}

/// A run that must succeed, and its bundle.
fn run(results: &Path, run_id: &str, flags: &[&str]) -> WritesBundle {
    let output = writes(results, run_id, flags).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    load_bundle(&results.join(run_id)).unwrap()
}

/// What the engine's counters rose by over a level: a test of the embedded engine, whose
/// counters are always readable.
fn rise(round: &WritesRound, counter: &str) -> u64 {
    match &round.events {
        EventsDelta::Known { rises, .. } => rises.get(counter).copied().unwrap_or(0),
        EventsDelta::Unknown { reason } => panic!("the counters of a level are unknown: {reason}"),
    }
}

/// The facts every level of a finished or stopped run keeps: its rows are its completed
/// INSERTs' batches; its threads were looked at (the embedded engine's are this
/// process's). A level run to its bound also had its every INSERT and row counted by the
/// engine, which is this process's alone: no other run's INSERT reached it. (A stopped
/// level's cancelled INSERT may have written its part before it was cancelled.)
fn assert_level_recorded(round: &WritesRound, batch_rows: u64) {
    let closed_loop = &round.closed_loop;
    assert_eq!(round.rows_written, Some(closed_loop.completed * batch_rows), "{closed_loop:?}");
    let failed = closed_loop.statements.iter().filter(|statement| statement.error.is_some()).count() as u64;
    assert_eq!((closed_loop.completed, closed_loop.errors), (closed_loop.statements.len() as u64 - failed, failed));
    assert!(matches!(round.threads, ThreadsSampled::Known { .. }), "{:?}", round.threads);
    assert!(round.cpu.cores.is_some(), "the embedded engine's cores are this process's");
    if closed_loop.complete {
        assert_eq!(rise(round, "InsertQuery"), closed_loop.completed + closed_loop.errors, "{closed_loop:?}");
        assert_eq!(Some(rise(round, "InsertedRows")), round.rows_written, "{closed_loop:?}");
    }
}

#[test]
fn batches_of_one_row_at_two_levels_complete_with_every_level_recorded() {
    let results = tempfile::tempdir().unwrap();
    let bundle = run(results.path(), "tiny", &TINY);
    assert_eq!(bundle.status, RunStatus::Complete);
    let writes = &bundle.benchmark;
    assert_eq!((writes.workload.batch_rows, writes.workload.durability), (1, Durability::None));
    assert_eq!(
        (writes.workload.concurrency.as_slice(), writes.workload.levels_run.as_slice()),
        (&[1, 2][..], &[1, 2][..])
    );
    assert!(matches!(writes.workload.bound, LevelBound::Duration { seconds: Some(_) }), "{:?}", writes.workload.bound);
    assert!(matches!(writes.engine_events, EngineEvents::Known { .. }), "{:?}", writes.engine_events);
    assert_eq!(writes.statement_records, StatsSource::ResultCounters);
    // Nothing to say but, on a kernel without delay accounting, that the engine's count of
    // I/O wait is unknown.
    assert!(
        writes
            .notes
            .iter()
            .all(|note| note.starts_with("the engine's count of I/O wait (OSIOWaitMicroseconds) is unknown")),
        "{:?}",
        writes.notes
    );
    // One round: each level once, in order, each run to its bound.
    let levels: Vec<(u32, u32, bool)> = writes
        .rounds
        .iter()
        .map(|round| (round.closed_loop.round, round.closed_loop.clients, round.closed_loop.complete))
        .collect();
    assert_eq!(levels, [(1, 1, true), (1, 2, true)]);
    for round in &writes.rounds {
        assert_level_recorded(round, 1);
        // Every client ran at least one INSERT.
        let clients: std::collections::BTreeSet<u32> =
            round.closed_loop.statements.iter().map(|statement| statement.client).collect();
        assert_eq!(clients.len() as u32, round.closed_loop.clients);
    }
    for (level, round) in writes.levels.iter().zip(&writes.rounds) {
        assert_eq!((level.closed_loop.clients, level.closed_loop.rounds), (round.closed_loop.clients, 1));
        assert_eq!(level.closed_loop.completed, round.closed_loop.completed);
        // The split is of the INSERTs the engine counted over the level.
        assert_eq!(level.decomposition.inserts, Some(round.closed_loop.completed));
        assert!(level.decomposition.inserts > Some(0), "{:?}", level.decomposition);
    }
    // The completed INSERTs are the samples of their level's query runs.
    let runs: Vec<(u32, usize)> =
        writes.queries.iter().map(|runs| (runs.variant.clients, runs.samples.len())).collect();
    let completed: Vec<(u32, usize)> =
        writes.rounds.iter().map(|round| (round.closed_loop.clients, round.closed_loop.completed as usize)).collect();
    assert_eq!(runs, completed);
    assert!(writes.queries.iter().all(|runs| runs.query == INSERT));
    let check = writes.runner_check.as_ref().expect("--check-statements 2 runs the runner check");
    assert!(check.blocks.iter().all(|block| block.statements == 2), "{:?}", check.blocks);
    let report = std::fs::read_to_string(results.path().join("tiny/report.md")).unwrap();
    assert!(report.contains("Where an INSERT's time went"), "{report}");
    assert!(!report.contains("**Incomplete run**"), "{report}");
}

/// `--durability fsync` and an INSERT budget: every level runs exactly its INSERTs, and
/// each INSERT fsyncs its part's files and directory before it returns.
#[test]
fn fsync_durability_at_an_insert_budget_fsyncs_every_insert() {
    let results = tempfile::tempdir().unwrap();
    let flags = [
        "--durability",
        "fsync",
        "--batch-rows",
        "10",
        "--concurrency",
        "1,2",
        "--iterations",
        "4",
        "--rounds",
        "1",
        "--check-statements",
        "0",
    ];
    let bundle = run(results.path(), "fsync", &flags);
    let writes = &bundle.benchmark;
    assert_eq!(writes.workload.durability, Durability::Fsync);
    assert_eq!(writes.workload.bound, LevelBound::Iterations { statements: 4 });
    assert!(writes.runner_check.is_none(), "--check-statements 0 skips the check");
    for round in &writes.rounds {
        assert_eq!(round.closed_loop.statements.len(), 4, "{:?}", round.closed_loop);
        assert_level_recorded(round, 10);
        assert!(rise(round, "FileSync") >= round.closed_loop.completed, "{:?}", round.events);
        assert!(rise(round, "DirectorySync") >= round.closed_loop.completed, "{:?}", round.events);
    }
    for level in &writes.levels {
        assert!(level.decomposition.file_syncs >= Some(1.0), "{:?}", level.decomposition);
        assert!(level.decomposition.fsync_us.is_some(), "{:?}", level.decomposition);
    }
}

#[test]
fn ctrl_c_in_the_middle_of_a_level_keeps_the_levels_done_and_reports() {
    stop_in_the_middle_of_a_level("ctrl-c", "-INT");
}

#[test]
fn sigterm_in_the_middle_of_a_level_keeps_the_levels_done_and_reports() {
    stop_in_the_middle_of_a_level("sigterm", "-TERM");
}

/// `signal` once the first level is on disk, while the second (3 s) runs: exit 130, the
/// bundle kept as incomplete with the level done and the stopped one marked incomplete,
/// which no summary counts, and the report written.
fn stop_in_the_middle_of_a_level(run_id: &str, signal: &str) {
    let results = tempfile::tempdir().unwrap();
    let flags =
        ["--concurrency", "1,2", "--duration", "3s", "--rounds", "1", "--check-statements", "2", "--batch-rows", "1"];
    let child = writes(results.path(), run_id, &flags).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let dir = results.path().join(run_id);
    let mut child =
        wait_for(child, || load_bundle::<WritesResults>(&dir).is_ok_and(|bundle| !bundle.benchmark.rounds.is_empty()));
    // Into the second level: it lasts 3 s, and the first ended a moment ago.
    std::thread::sleep(Duration::from_millis(300));
    let sent = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(sent.success(), "kill {signal} failed");
    let pid = child.id();
    let output = wait_with_deadline(&mut child);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // 128 + SIGINT, as a shell reports a command stopped by Ctrl-C, whichever signal it was.
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert_eq!(stderr.matches(chbench::interrupt::STOPPING_LINE).count(), 1, "{stderr}");
    let errors = error_lines(&output);
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains(&format!("what it measured is in {}", dir.display())), "{stderr}");
    assert!(errors[0].ends_with(&chbench::interrupt::Interrupted.to_string()), "{stderr}");
    assert!(!storage_dir_of_process(pid).exists(), "the stopped run left its engine folder");

    let bundle: WritesBundle = load_bundle(&dir).unwrap();
    assert_eq!((bundle.status, bundle.phase.as_str()), (RunStatus::Incomplete, "levels"));
    let rounds = &bundle.benchmark.rounds;
    // The level done first, then the stopped one if the signal came inside it (a stop
    // between two levels records no empty one).
    assert!(matches!(rounds.len(), 1 | 2), "{} levels kept", rounds.len());
    assert_eq!((rounds[0].closed_loop.clients, rounds[0].closed_loop.complete), (1, true));
    if let Some(stopped) = rounds.get(1) {
        assert_eq!((stopped.closed_loop.clients, stopped.closed_loop.complete), (2, false));
    }
    for round in rounds {
        assert_level_recorded(round, 1);
    }
    let summarised: Vec<(u32, usize)> =
        bundle.benchmark.levels.iter().map(|level| (level.closed_loop.clients, level.closed_loop.rounds)).collect();
    assert_eq!(summarised, [(1, 1), (2, 0)], "a stopped level counts in no summary");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("**Incomplete run**") && report.contains("Where an INSERT's time went"), "{report}");
}

/// Waits, within a generous deadline, until `done`, with the run still going.
fn wait_for(mut child: Child, done: impl Fn() -> bool) -> Child {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !done() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the run never got there");
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be stopped");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// The run's end, stderr read as it goes; a run that outlives a generous deadline (a stop
/// it ignored, a level that never ends) fails the test rather than hanging it.
fn wait_with_deadline(child: &mut Child) -> Output {
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut text).unwrap();
        text
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the run outlived its deadline");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output { status, stdout: Vec::new(), stderr: reader.join().unwrap() }
}

/// Two runs started together, each its own process: both complete, and each one's engine
/// counted its own INSERTs and rows only, into its own database (`chbench_<run id>_p<pid>`).
#[test]
fn two_runs_at_once_each_write_only_into_their_own_database() {
    let results = tempfile::tempdir().unwrap();
    let started: Vec<(&str, Child)> = ["left", "right"]
        .into_iter()
        .map(|run_id| {
            let child =
                writes(results.path(), run_id, &TINY).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
            (run_id, child)
        })
        .collect();
    for (run_id, mut child) in started {
        let pid = child.id();
        let output = wait_with_deadline(&mut child);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{run_id}: {stderr}");
        assert!(stderr.contains(&format!("table logs in chbench_{run_id}_p{pid},")), "{run_id}: {stderr}");
        assert!(!storage_dir_of_process(pid).exists(), "{run_id} left its engine folder");
        let bundle: WritesBundle = load_bundle(&results.path().join(run_id)).unwrap();
        assert_eq!((bundle.status, bundle.run_id.as_str()), (RunStatus::Complete, run_id));
        assert_eq!(bundle.benchmark.rounds.len(), 2);
        for round in &bundle.benchmark.rounds {
            assert!(round.closed_loop.complete);
            assert_level_recorded(round, 1);
        }
        // Every sample is tagged with its own run, never the other's.
        let tags: Vec<&str> = bundle
            .benchmark
            .queries
            .iter()
            .flat_map(|runs| &runs.samples)
            .map(|sample| sample.stats.log_comment.as_str())
            .collect();
        assert!(!tags.is_empty());
        assert!(tags.iter().all(|tag| tag.starts_with(&format!("{run_id}/writes/insert_c"))), "{tags:?}");
    }
}

/// Two small bundles compare level by level: each level's rates, the time split side by
/// side, the threads and CPU, and each level's INSERTs as a query; a bundle of other
/// levels shows the ones a side did not run as not run.
#[test]
fn two_writes_bundles_compare_level_by_level_with_the_time_split() {
    let results = tempfile::tempdir().unwrap();
    let a = results.path().join("a");
    let b = results.path().join("b");
    run(results.path(), "a", &TINY);
    run(results.path(), "b", &TINY);
    let (comparison, markdown) = compare(&a, &b, &results.path().join("compared"));
    assert_eq!(comparison["kind"], "writes");
    let levels = comparison["writes"]["levels"].as_array().unwrap();
    assert_eq!(levels.iter().map(|level| level["clients"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    for level in levels {
        for side in ["baseline", "candidate"] {
            assert_eq!(level[side]["closed_loop"]["rounds"], 1, "{level}");
            assert!(level[side]["decomposition"]["inserts"].as_u64().unwrap() > 0, "{level}");
        }
        // One round a side is too few to test: untestable, never a verdict.
        assert_eq!(level["significance"]["verdict"], "untestable", "{level}");
    }
    let labels: Vec<&str> =
        comparison["queries"].as_array().unwrap().iter().map(|query| query["query"].as_str().unwrap()).collect();
    assert_eq!(labels, ["insert (clients=1)", "insert (clients=2)"]);
    assert!(markdown.contains("## Writes") && markdown.contains("## Where an INSERT's time went"), "{markdown}");
    assert!(markdown.contains("## Threads and CPU"), "{markdown}");

    // Levels 2 and 4 against 1 and 2: every level either ran, each side's missing one
    // not run, and the time split only where both ran.
    let mut other_levels = TINY;
    other_levels[1] = "2,4";
    run(results.path(), "c", &other_levels);
    let (comparison, markdown) = compare(&a, &results.path().join("c"), &results.path().join("compared-levels"));
    let sides: Vec<(u64, bool, bool)> = comparison["writes"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|level| (level["clients"].as_u64().unwrap(), level["baseline"].is_null(), level["candidate"].is_null()))
        .collect();
    assert_eq!(sides, [(1, false, true), (2, false, false), (4, true, false)]);
    assert_eq!(comparison["only_in_baseline"], serde_json::json!(["insert (clients=1)"]));
    assert_eq!(comparison["only_in_candidate"], serde_json::json!(["insert (clients=4)"]));
    assert!(markdown.contains("| 1 | ") && markdown.contains("| not run |"), "{markdown}");
    assert!(!markdown.contains("| 4 | INSERT |"), "a split with one side only: {markdown}");
}

/// `cargo xtask compare A B --json --out OUT`, which must succeed: its JSON and compare.md.
fn compare(a: &Path, b: &Path, out: &Path) -> (serde_json::Value, String) {
    let output = xtask().arg("compare").args([a, b]).arg("--json").arg("--out").arg(out).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let comparison: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let markdown = std::fs::read_to_string(out.join("compare.md")).unwrap();
    (comparison, markdown)
}

/// On a target that runs one statement at a time, in a process of its own (an engine
/// worker: one pipe), the run measures level 1 only and says so once; the engine's threads
/// and cores are not this process's, so their figures are unknown, with why, never 0.
#[test]
fn a_target_that_runs_one_insert_at_a_time_elsewhere_runs_level_1_only_and_says_what_is_unknown() {
    use chbench::benchmarks::writes::{WritesBenchmark, WritesFlags};
    use chbench::benchmarks::{AnyBenchmark, Benchmark, BundlePlace};
    use chbench::targets::worker::WorkerCommand;
    use clap::{Args, FromArgMatches};

    let command =
        WorkerCommand { program: env!("CARGO_BIN_EXE_xtask").into(), args: vec!["engine-worker".to_string()] };
    let engine = chbench::engine::engine_version().unwrap();
    let mut worker = chbench::targets::open_worker(&command, engine, &chbench::targets::Storage::Scratch).unwrap();
    assert_eq!(worker.capabilities().concurrent_queries, chbench::targets::Concurrency::Serial);
    let matches = WritesFlags::augment_args(clap::Command::new("writes")).get_matches_from([
        "writes",
        "--batch-rows",
        "1",
        "--concurrency",
        "1,2",
        "--iterations",
        "4",
        "--rounds",
        "1",
        "--check-statements",
        "2",
    ]);
    let benchmark = WritesBenchmark::from_flags(WritesFlags::from_arg_matches(&matches).unwrap());
    let results = tempfile::tempdir().unwrap();
    let place = BundlePlace {
        root: results.path().to_path_buf(),
        run_id: "serial".to_string(),
        existing: chbench::results::ExistingFolder::Refuse,
    };
    let said = Said::default();
    let end = AnyBenchmark::run_to_bundle(&benchmark, &mut worker, &place, &said).unwrap();
    end.outcome.unwrap();
    let bundle: WritesBundle = load_bundle(&end.dir).unwrap();
    let writes = &bundle.benchmark;
    assert_eq!((bundle.status, writes.workload.concurrency.as_slice()), (RunStatus::Complete, &[1, 2][..]));
    assert_eq!(writes.workload.levels_run, [1]);
    let levels: Vec<u32> = writes.rounds.iter().map(|round| round.closed_loop.clients).collect();
    assert_eq!(levels, [1]);
    let serial = "target embedded runs one statement at a time: measuring at 1 client only";
    assert_eq!(said.0.lock().unwrap().iter().filter(|warning| warning.as_str() == serial).count(), 1);
    assert_eq!(writes.notes.len(), 2, "{:?}", writes.notes);
    assert_eq!(writes.notes[0], serial);
    assert!(writes.notes[1].starts_with("the engine's threads are not in this process"), "{:?}", writes.notes);
    let round = &writes.rounds[0];
    assert_eq!((round.closed_loop.statements.len(), round.rows_written), (4, Some(round.closed_loop.completed)));
    assert!(
        matches!(&round.threads, ThreadsSampled::Unknown { reason } if reason.contains("not this process's")),
        "{:?}",
        round.threads
    );
    assert_eq!((round.cpu.cores, round.cpu.offered_seconds, round.cpu.share), (None, None, None));
    // The engine in the worker has no system.asynchronous_metrics to read its cores from.
    assert!(
        round.cpu.cores_unknown.as_deref().is_some_and(|why| why.contains("asynchronous_metrics")),
        "{:?}",
        round.cpu
    );
    assert_eq!(writes.levels[0].io_wait_share.median, None);
}

/// Durability is what a comparison of two writes runs is often there to show: a `none`
/// bundle and an `fsync` one compare without `--force`, the durability said under what
/// differs rather than refused.
#[test]
fn a_none_and_an_fsync_bundle_compare_saying_the_durability_differs() {
    let results = tempfile::tempdir().unwrap();
    let flags = |durability| {
        [
            "--durability",
            durability,
            "--concurrency",
            "1",
            "--iterations",
            "4",
            "--rounds",
            "1",
            "--check-statements",
            "0",
        ]
    };
    run(results.path(), "none", &flags("none"));
    run(results.path(), "fsync", &flags("fsync"));
    let (comparison, markdown) =
        compare(&results.path().join("none"), &results.path().join("fsync"), &results.path().join("compared"));
    assert_eq!(comparison["differences"], serde_json::json!(["durability: none against fsync"]));
    assert_eq!(comparison["forced_differences"], serde_json::json!([]));
    assert!(markdown.contains("## Writes"), "{markdown}");
}

/// A pack made by `new-pack` in a folder of its own, with `insert` as its `insert.sql`
/// and its design's table of engine `engine` (a MergeTree's sort key kept, any other
/// engine's clauses dropped): the folder holding it (for `CHBENCH_PACKS_DIR`).
fn pack_with_insert(insert: &str, engine: &str) -> tempfile::TempDir {
    let packs = tempfile::tempdir().unwrap();
    let made = xtask().args(["new-pack", "elsewhere", "--dir"]).arg(packs.path()).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let pack = packs.path().join("elsewhere");
    let design = pack.join("designs/by_key.sql");
    if engine != "MergeTree" {
        let table = format!("CREATE TABLE events (key UInt64, ts DateTime('UTC'), value UInt32) ENGINE = {engine};\n");
        std::fs::write(&design, table).unwrap();
    }
    std::fs::write(pack.join("insert.sql"), insert).unwrap();
    packs
}

const PACK_INSERT: &str =
    "-- New events, {batch} a statement.\nINSERT INTO events SELECT rand64(), now(), number FROM numbers({batch});\n";

/// `--pack`: the design's table (not the logs table) filled with the pack's own INSERT, the
/// pack, design and table in the bundle.
#[test]
fn a_packs_design_is_filled_with_the_packs_insert() {
    let packs = pack_with_insert(PACK_INSERT, "MergeTree");
    let results = tempfile::tempdir().unwrap();
    let flags = ["--pack", "elsewhere", "--concurrency", "1", "--iterations", "3", "--rounds", "1"];
    let output =
        writes(results.path(), "packed", &[&flags[..], &["--check-statements", "1", "--batch-rows", "5"]].concat())
            .env("CHBENCH_PACKS_DIR", packs.path())
            .output()
            .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bundle: WritesBundle = load_bundle(&results.path().join("packed")).unwrap();
    let workload = &bundle.benchmark.workload;
    assert_eq!(
        (workload.pack.as_deref(), workload.design.as_deref(), workload.table.as_str()),
        (Some("elsewhere"), Some("by_key"), "events")
    );
    assert_eq!(workload.statement, "INSERT INTO events SELECT rand64(), now(), number FROM numbers(5)");
    let round = &bundle.benchmark.rounds[0];
    assert_eq!((round.closed_loop.completed, round.rows_written), (3, Some(15)));
    // The engine counted these INSERTs' rows: 5 each.
    assert_eq!(rise(round, "InsertedRows"), 15);
    // The observer read the pack's table's parts, not the logs table's.
    assert!(round.parts.active_parts_max.is_some_and(|parts| parts >= 1), "{:?}", round.parts);
}

/// The writers run in a cluster only on a target deployed in one: elsewhere asking for it
/// is one line before any bundle is made, and a local run says where its clients ran.
#[test]
fn writers_in_a_cluster_are_refused_on_a_target_that_is_in_none() {
    let results = tempfile::tempdir().unwrap();
    for (flags, said) in [
        (&["--load-from", "cluster"][..], "--load-from cluster: target embedded runs no load beside its engine"),
        (&["--client-beside-server"], "--client-beside-server places the clients in a Kubernetes cluster"),
        (&["--load-from", "local", "--client-node-type", "c7g.4xlarge"], "and --load-from local runs them here"),
    ] {
        let output = writes(results.path(), "refused", flags).output().unwrap();
        let line = error_line(&output);
        assert!(line.contains(said), "{flags:?}: {line}");
        assert!(!results.path().join("refused").exists());
    }
    // On eks the writers are in the cluster by default, where --rate and --async-insert are
    // this tool's own loop's: refused from the target's kind alone, before the eks build,
    // any cluster or any bundle.
    for (flag, said) in [
        (&["--rate", "5"][..], "--rate: on target eks the clients are clickhouse-benchmark in the cluster"),
        (&["--async-insert"], "--async-insert: on target eks the clients are clickhouse-benchmark in the cluster"),
    ] {
        let output = xtask()
            .args(["bench", "writes", "--target", "eks", "--run-id", "refused"])
            .args(flag)
            .arg("--results-dir")
            .arg(results.path())
            .output()
            .unwrap();
        let line = error_line(&output);
        assert!(line.contains(said) && line.contains("give --load-from local"), "{flag:?}: {line}");
        assert!(!results.path().join("refused").exists());
    }
    let bundle = run(results.path(), "here", &TINY);
    assert_eq!(bundle.benchmark.workload.load_from, LoadFrom::Local);
    assert!(bundle.benchmark.rounds.iter().all(|round| round.closed_loop.load.is_none()));
    let report = std::fs::read_to_string(results.path().join("here/report.md")).unwrap();
    assert!(report.contains("**Clients**: this tool's loop on this machine."), "{report}");
}

/// A pack whose table is not a MergeTree, or whose INSERT does not take the batch, or
/// a mix with a pack: each refused in one line.
#[test]
fn a_pack_the_write_path_cannot_measure_is_refused_in_one_line() {
    let results = tempfile::tempdir().unwrap();
    let refused = |packs: &Path, flags: &[&str]| -> String {
        let output = writes(results.path(), "refused", &[&["--pack", "elsewhere"][..], flags].concat())
            .env("CHBENCH_PACKS_DIR", packs)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
        let errors = error_lines(&output);
        assert_eq!(errors.len(), 1, "{}", String::from_utf8_lossy(&output.stderr));
        errors[0].clone()
    };
    let memory = pack_with_insert(PACK_INSERT, "Memory");
    let line = refused(memory.path(), &["--check-statements", "0"]);
    assert!(line.contains("table events of pack elsewhere's design by_key is a Memory table"), "{line}");
    let unbatched = pack_with_insert("INSERT INTO events SELECT 1, now(), 2;\n", "MergeTree");
    assert!(refused(unbatched.path(), &[]).contains("insert.sql has no {batch}"));
    let elsewhere = pack_with_insert("INSERT INTO other SELECT number, now(), 2 FROM numbers({batch});\n", "MergeTree");
    let line = refused(elsewhere.path(), &["--check-statements", "0"]);
    assert!(line.contains("writes to table other, which pack elsewhere's design by_key does not make"), "{line}");
    let merge_tree = pack_with_insert(PACK_INSERT, "MergeTree");
    assert!(refused(merge_tree.path(), &["--mix", "inserts=1,reads=1"]).contains("with --pack"));
}

/// `--async-insert` on the embedded engine, which runs every INSERT at once (it has no
/// queue for asynchronous inserts): refused before the bundle, in one line, rather than
/// measuring synchronous INSERTs under the asynchronous name.
#[test]
fn asynchronous_inserts_are_refused_where_the_engine_runs_them_at_once() {
    let results = tempfile::tempdir().unwrap();
    // With data on its standard input, which the engine would take as the INSERT's.
    let mut child = writes(results.path(), "async", &["--async-insert", "--check-statements", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"1\t2\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let errors = error_lines(&output);
    assert_eq!(errors.len(), 1, "{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        errors[0].contains("--async-insert: ClickHouse ") && errors[0].contains("ran the INSERT at once"),
        "{}",
        errors[0]
    );
    assert!(!results.path().join("async").exists(), "a bundle folder was made");
}

/// A pack's table that refuses INSERTs past 3 active parts, its merges stopped: the
/// INSERTs past that fail as TOO_MANY_PARTS, counted by code, and the run goes on to the
/// end (exit 0, the level having completed some); with `--stop-on-error` it stops after
/// the level, in one line, the level kept.
#[test]
fn too_many_parts_are_counted_by_code_and_stop_the_run_only_when_asked() {
    let packs = pack_with_insert(PACK_INSERT, "MergeTree");
    let design = packs.path().join("elsewhere/designs/by_key.sql");
    let table = "CREATE TABLE events (key UInt64, ts DateTime('UTC'), value UInt32) ENGINE = MergeTree ORDER BY key \
                 SETTINGS parts_to_delay_insert = 2, parts_to_throw_insert = 3;\nSYSTEM STOP MERGES events;\n";
    std::fs::write(&design, table).unwrap();
    let results = tempfile::tempdir().unwrap();
    let flags = ["--pack", "elsewhere", "--iterations", "8", "--rounds", "1", "--check-statements", "0"];
    let going_on = writes(results.path(), "going_on", &[&flags[..], &["--concurrency", "1"]].concat())
        .env("CHBENCH_PACKS_DIR", packs.path())
        .output()
        .unwrap();
    assert!(going_on.status.success(), "{}", String::from_utf8_lossy(&going_on.stderr));
    let bundle: WritesBundle = load_bundle(&results.path().join("going_on")).unwrap();
    let round = &bundle.benchmark.rounds[0];
    let codes: Vec<(Option<u32>, Option<&str>)> =
        round.errors_by_code.iter().map(|errors| (errors.code, errors.name.as_deref())).collect();
    assert_eq!(codes, [(Some(252), Some("TOO_MANY_PARTS"))], "{:?}", round.errors_by_code);
    assert!(
        round.closed_loop.completed >= 1 && round.closed_loop.errors >= 1,
        "{:?}",
        round.closed_loop.errors_by_query
    );
    assert_eq!(round.closed_loop.completed + round.closed_loop.errors, 8);
    assert_eq!(bundle.benchmark.levels[0].errors_by_code[0].count, round.closed_loop.errors);
    let stopping = [&flags[..], &["--stop-on-error", "--concurrency", "1,2"]].concat();
    let stopped = writes(results.path(), "stopped", &stopping).env("CHBENCH_PACKS_DIR", packs.path()).output().unwrap();
    assert_eq!(stopped.status.code(), Some(1), "{}", String::from_utf8_lossy(&stopped.stderr));
    let errors = error_lines(&stopped);
    assert_eq!(errors.len(), 1, "{}", String::from_utf8_lossy(&stopped.stderr));
    assert!(errors[0].contains("--stop-on-error: ") && errors[0].contains("TOO_MANY_PARTS"), "{}", errors[0]);
    let bundle: WritesBundle = load_bundle(&results.path().join("stopped")).unwrap();
    // The level that failed is kept; the next one never ran.
    assert_eq!((bundle.status, bundle.benchmark.rounds.len()), (RunStatus::Incomplete, 1));
}

/// A small file system of its own, on a loop device, unmounted and its image removed on drop.
struct SmallDisk {
    _scratch: tempfile::TempDir,
    mount: std::path::PathBuf,
}

impl SmallDisk {
    fn new(mebibytes: u64) -> SmallDisk {
        let scratch = tempfile::tempdir().unwrap();
        let image = scratch.path().join("disk.img");
        let mount = scratch.path().join("target");
        std::fs::File::create(&image).unwrap().set_len(mebibytes << 20).unwrap();
        std::fs::create_dir(&mount).unwrap();
        let mkfs = Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image).output().unwrap();
        assert!(mkfs.status.success(), "mkfs.ext4: {}", String::from_utf8_lossy(&mkfs.stderr));
        let mounted = Command::new("mount").args(["-o", "loop"]).arg(&image).arg(&mount).output().unwrap();
        assert!(
            mounted.status.success(),
            "mount (needs root and a loop device): {}",
            String::from_utf8_lossy(&mounted.stderr)
        );
        SmallDisk { _scratch: scratch, mount }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
    }
}

/// The engine's folder on a 96 MiB file system: 20 INSERTs of 20,000 rows a level (about
/// 50 MiB a level, measured), so level 1 fits and level 4 fills the disk. The run stops after that
/// level with one line, exit 1, and its bundle keeps level 1 whole and the full level with its
/// failures by code.
#[test]
#[ignore = "mounts a file system on a loop device, which needs root: .ci/run runs it"]
fn a_disk_that_fills_in_a_level_ends_the_run_after_it_keeping_the_levels_done() {
    let disk = SmallDisk::new(96);
    let library = chbench::engine::provision(&|_| {}).unwrap();
    let results = tempfile::tempdir().unwrap();
    let flags = [
        "--concurrency",
        "1,4",
        "--batch-rows",
        "20000",
        "--iterations",
        "20",
        "--rounds",
        "3",
        "--check-statements",
        "0",
    ];
    // The engine's folder is under the target directory; the engine itself stays where it is.
    let output = writes(results.path(), "full", &flags)
        .env("CARGO_TARGET_DIR", &disk.mount)
        .env("CHBENCH_LIBCHDB", &library)
        .output()
        .unwrap();
    let line = error_line(&output);
    assert!(
        line.contains("the disk is full: ") && line.contains("the levels done are kept, free space and run again"),
        "{line}"
    );
    let bundle: WritesBundle = load_bundle(&results.path().join("full")).unwrap();
    assert_eq!(bundle.status, RunStatus::Incomplete);
    let rounds = &bundle.benchmark.rounds;
    let (full, done) = rounds.split_last().unwrap();
    assert!(!done.is_empty(), "the disk filled in the first level: give the file system more room");
    for round in done {
        assert!(round.errors_by_code.is_empty(), "{:?}", round.errors_by_code);
        assert_eq!(round.closed_loop.completed, 20);
        assert_level_recorded(round, 20_000);
    }
    let codes: Vec<(Option<u32>, Option<&str>)> =
        full.errors_by_code.iter().map(|errors| (errors.code, errors.name.as_deref())).collect();
    assert!(codes.contains(&(Some(243), Some("NOT_ENOUGH_SPACE"))), "{:?}", full.errors_by_code);
    // The level done is summed; the full level counts its INSERTs that completed before the disk filled.
    let level_1 = bundle.benchmark.levels.iter().find(|level| level.closed_loop.clients == 1).unwrap();
    assert_eq!((level_1.closed_loop.rounds, level_1.closed_loop.completed), (1, 20));
}

//! `cargo xtask bench throughput`: a run over SQL files (one of which fails) at two
//! levels keeps every statement, counts the failures apart and its QPS is what its
//! statements say; the runner check is in the bundle with both sides; two real bundles
//! compare level by level; meaningless inputs are one line before the engine starts; a
//! SIGTERM in the middle of a level keeps the rounds done.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chbench::benchmarks::throughput::{CheckPath, ThroughputBundle, ThroughputResults};
use chbench::load_generator::LoadFrom;
use chbench::results::{RunStatus, load_bundle};
use chbench::stats::StatsSource;

use crate::common::{Said, error_line, xtask};

/// `cargo xtask bench throughput` on the embedded engine at 100K rows, its bundle `run_id`
/// under `results`.
fn throughput(results: &Path, run_id: &str, flags: &[&str]) -> Command {
    let mut command = xtask();
    command
        .args(["bench", "throughput", "--target", "embedded", "--rows", "100K", "--run-id", run_id])
        .args(flags)
        .arg("--results-dir")
        .arg(results);
    command
}

fn run(results: &Path, run_id: &str, flags: &[&str]) -> ThroughputBundle {
    run_saying(results, run_id, flags).0
}

/// [`run`], with what the run said on stderr.
fn run_saying(results: &Path, run_id: &str, flags: &[&str]) -> (ThroughputBundle, String) {
    let output = throughput(results, run_id, flags).output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{said}");
    (load_bundle(&results.join(run_id)).unwrap(), said)
}

#[test]
fn a_run_keeps_every_statement_counts_failures_apart_and_checks_its_runner() {
    let results = tempfile::tempdir().unwrap();
    let files = results.path();
    std::fs::write(files.join("count.sql"), "SELECT count() FROM logs WHERE level = 'ERROR'\n").unwrap();
    std::fs::write(files.join("missing.sql"), "SELECT count() FROM no_such_table\n").unwrap();
    std::fs::write(
        files.join("own_table.sql"),
        "CREATE TABLE extra (k UInt64) ENGINE = MergeTree ORDER BY k;\nINSERT INTO extra SELECT number FROM \
         numbers(1000);\nSELECT sum(k) FROM extra\n",
    )
    .unwrap();
    let sql = |name: &str| files.join(name).display().to_string();
    let (count, missing, own) = (sql("count.sql"), sql("missing.sql"), sql("own_table.sql"));
    let flags = [
        "--sql",
        &count,
        &missing,
        &own,
        "--concurrency",
        "1,2",
        "--duration",
        "200ms",
        "--rounds",
        "5",
        "--check-statements",
        "50",
    ];
    let output = throughput(results.path(), "files", &flags).output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    // The run goes on to its end and keeps everything, then fails: a query that completed
    // nothing has no figure to give.
    assert!(!output.status.success(), "{said}");
    let line = error_line(&output);
    assert!(
        line.contains("missing completed no statement at 1 client (")
            && line.contains("and at 2 clients (")
            && line.contains("so its figures there are unknown (first error: ")
            && line.contains("UNKNOWN_TABLE"),
        "{line}"
    );
    let bundle: ThroughputBundle = load_bundle(&results.path().join("files")).unwrap();
    assert_eq!(bundle.status, RunStatus::Complete);
    // Each level's failures are said as the run goes, not only in the bundle.
    assert!(said.contains("statements failed, not counted (missing failed"), "{said}");
    let tp = &bundle.benchmark;
    let names: Vec<&str> = tp.workload.queries.iter().map(|query| query.name.as_str()).collect();
    assert_eq!(names, ["count", "missing", "own_table"]);
    assert_eq!(tp.workload.queries[2].setup.len(), 2);
    assert_eq!(tp.workload.queries[2].sql, "SELECT sum(k) FROM extra");
    assert_eq!(tp.statement_records, StatsSource::ResultCounters);
    assert_eq!(tp.rounds.len(), 10, "5 rounds of 2 levels");
    for round in &tp.rounds {
        assert!(round.complete);
        // The figures are what the statements say.
        let failed = round.statements.iter().filter(|statement| statement.error.is_some()).count() as u64;
        assert_eq!((round.completed, round.errors), (round.statements.len() as u64 - failed, failed));
        let wall_seconds = round.wall_seconds.unwrap();
        assert_eq!(round.qps, Some(round.completed as f64 / wall_seconds));
        let rows: u64 = round.statements.iter().filter_map(|statement| statement.read_rows).sum();
        assert_eq!(round.rows_per_second, Some(rows as f64 / wall_seconds));
        // Only the missing table fails, and every client ran.
        assert!(round.statements.iter().all(|statement| statement.error.is_some() == (statement.query == "missing")));
        assert_eq!(round.errors_by_query.len(), 1);
        assert_eq!(round.errors_by_query[0].query, "missing");
        assert!(round.errors_by_query[0].first.contains("UNKNOWN_TABLE"), "{:?}", round.errors_by_query);
        let clients: std::collections::BTreeSet<u32> =
            round.statements.iter().map(|statement| statement.client).collect();
        assert_eq!(clients.len() as u32, round.clients);
        assert!(round.runner_cpu_us_per_statement.is_some());
    }
    for level in &tp.levels {
        assert_eq!(level.rounds, 5);
        assert!(level.qps.min <= level.qps.median && level.qps.median <= level.qps.max && level.qps.min.is_some());
        assert!(level.errors > 0 && level.latency.p50_ms <= level.latency.p99_ms);
    }
    // The completed statements are the samples of their (query, level) query runs.
    for runs in &tp.queries {
        let completed = tp
            .rounds
            .iter()
            .filter(|round| round.clients == runs.variant.clients)
            .flat_map(|round| &round.statements)
            .filter(|statement| statement.query == runs.query && statement.error.is_none())
            .count();
        assert_eq!(runs.samples.len(), completed, "{} at {}", runs.query, runs.variant.clients);
        let attempts: Vec<u32> = runs.samples.iter().map(|sample| sample.attempt).collect();
        assert_eq!(attempts, (1..=completed as u32).collect::<Vec<_>>());
        assert!(runs.samples.iter().all(|sample| sample.stats.source == StatsSource::ResultCounters));
    }
    // A query none of whose statements completed keeps its query runs, empty, and is failed.
    let missing: Vec<_> = tp.queries.iter().filter(|runs| runs.query == "missing").collect();
    assert_eq!(missing.len(), 2, "one a level");
    assert!(missing.iter().all(|runs| runs.samples.is_empty()));
    let failed = chbench::results::KindResults::failed_queries(tp);
    let labels: Vec<&str> = failed.iter().map(|(label, _)| label.as_str()).collect();
    assert_eq!(labels, ["missing (clients=1)", "missing (clients=2)"], "each level, by its label in a comparison");
    assert!(failed.iter().all(|(_, why)| why.starts_with("every statement failed (")), "{failed:?}");
    // In a comparison those levels are failed, never fast; the other queries compare.
    let bundle_dir = results.path().join("files");
    let compared = xtask()
        .arg("compare")
        .args([&bundle_dir, &bundle_dir])
        .arg("--json")
        .arg("--out")
        .arg(results.path().join("compared"))
        .output()
        .unwrap();
    assert!(compared.status.success(), "{}", String::from_utf8_lossy(&compared.stderr));
    let comparison: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
    for query in comparison["queries"].as_array().unwrap() {
        let failed = query["query"].as_str().unwrap().starts_with("missing ");
        let verdict = query["significance"]["verdict"].as_str().unwrap();
        assert_eq!(verdict == "failed", failed, "{query}");
    }
    assert_eq!(comparison["summary"]["failed"], 2);
    assert_eq!(tp.queries.iter().find(|runs| runs.query == "own_table").unwrap().answer, "499500\n");
    // The runner check: both sides, the same statements each.
    let check = tp.runner_check.as_ref().unwrap();
    let side = |path: CheckPath| -> (usize, u64) {
        let blocks: Vec<_> = check.blocks.iter().filter(|block| block.path == path).collect();
        (blocks.len(), blocks.iter().map(|block| block.statements).sum())
    };
    assert_eq!(side(CheckPath::Runner), side(CheckPath::Direct));
    assert_eq!(side(CheckPath::Runner), (16, 800));
    assert_eq!(check.statements_per_side, 800);
    assert!(check.runner_qps.is_some() && check.direct_qps.is_some() && check.ratio.is_some());
    assert!(check.runner_cpu_us_per_statement.is_some());
    let report = std::fs::read_to_string(results.path().join("files/report.md")).unwrap();
    assert!(report.contains("### Runner check") && report.contains("missing failed"), "{report}");
    assert!(report.contains("no ProfileEvents"), "{report}");
}

/// Two real runs of the pack's queries compare per (query, level) and per level's QPS.
#[test]
fn two_throughput_bundles_compare_level_by_level() {
    let results = tempfile::tempdir().unwrap();
    let flags =
        ["--query", "q1,q2", "--concurrency", "1,2", "--duration", "150ms", "--rounds", "5", "--check-statements", "0"];
    run(results.path(), "a", &flags);
    run(results.path(), "b", &flags);
    let out = results.path().join("compared");
    let output = xtask()
        .arg("compare")
        .args([results.path().join("a"), results.path().join("b")])
        .arg("--json")
        .args(["--price-a", "0.29"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let comparison: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(comparison["kind"], "throughput");
    let labels: Vec<&str> =
        comparison["queries"].as_array().unwrap().iter().map(|q| q["query"].as_str().unwrap()).collect();
    for label in ["q1 (clients=1)", "q1 (clients=2)", "q2 (clients=1)", "q2 (clients=2)"] {
        assert!(labels.contains(&label), "{labels:?}");
    }
    // Each level's QPS is a record of its own in the JSON, not a line of text.
    let levels = comparison["throughput"]["levels"].as_array().unwrap();
    assert_eq!(levels.iter().map(|level| level["clients"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    for level in levels {
        for side in ["baseline", "candidate"] {
            assert_eq!(level[side]["rounds"], 5, "{level}");
            assert!(level[side]["qps_median"].as_f64().unwrap() > 0.0, "{level}");
            assert_eq!(level[side]["errors"], 0, "{level}");
        }
        assert_eq!(level["significance"]["baseline_samples"], 5, "{level}");
        // A's price gives its cost at the level's QPS; B's is unknown, never 0.
        let usd = level["baseline"]["usd_per_1000_queries"].as_f64().unwrap();
        let qps = level["baseline"]["qps_median"].as_f64().unwrap();
        assert!((usd - 0.29 / 3600.0 / qps * 1000.0).abs() < 1e-12, "{level}");
        assert!(level["candidate"]["usd_per_1000_queries"].is_null(), "{level}");
    }
    // The serial figures do not apply to overlapping statements: none is given, and the
    // kind's section says why; its prices are each side's, at which each level's cost is.
    assert!(comparison["totals"].get("relative_score").is_none() && comparison.get("cost").is_none());
    assert!(comparison.get("clickbench").is_none() && comparison.get("levels").is_none());
    assert!(comparison["throughput"]["basis"].as_str().unwrap().contains("statements overlap"));
    assert_eq!(comparison["throughput"]["prices"]["baseline"]["price"]["usd_per_hour"], 0.29);
    assert_eq!(comparison["throughput"]["prices"]["candidate"]["price"]["state"], "unknown");
    let report = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(report.contains("## Throughput") && report.contains("| 2 "), "{report}");
    assert!(!report.contains("ClickBench's relative score of B against A"), "{report}");
    // The terminal says the levels and each side's cost too.
    let terminal = xtask()
        .arg("compare")
        .args([results.path().join("a"), results.path().join("b")])
        .args(["--price-a", "0.29", "--out"])
        .arg(results.path().join("compared-again"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&terminal.stdout);
    // Two levels: both of one verdict, or one each (the runs are noisy).
    assert!(said.contains("\nQPS: 2 levels ") || said.contains("\nQPS: 1 level "), "{said}");
    assert!(said.contains("\nQPS at 1 client: ") && said.contains("\nQPS at 2 clients: "), "{said}");
    assert!(said.contains("A: per 1,000 queries $") && said.contains("B: cost unknown, price unknown"), "{said}");
    assert!(out.join("compare.md").is_file());
    // A node price for a type neither side ran on would price nothing: refused, not ignored.
    let unused = xtask()
        .arg("compare")
        .args([results.path().join("a"), results.path().join("b")])
        .args(["--node-price", "c7g.2xlarge=0.29", "--out"])
        .arg(results.path().join("np"))
        .output()
        .unwrap();
    let line = error_line(&unused);
    assert!(
        line.contains("--node-price c7g.2xlarge=...: neither side ran on c7g.2xlarge (A's node: not recorded"),
        "{line}"
    );
    assert!(!results.path().join("np").exists(), "nothing written for a refused comparison");
    // A type priced twice would keep one price and drop the other without a word.
    let twice = xtask()
        .arg("compare")
        .args([results.path().join("a"), results.path().join("b")])
        .args(["--node-price", "c7g.2xlarge=0.29", "--node-price", "c7g.2xlarge=0.5", "--out"])
        .arg(results.path().join("np"))
        .output()
        .unwrap();
    assert_eq!(error_line(&twice), "error: --node-price c7g.2xlarge=... is given twice: give each node type one price");
}

#[test]
fn meaningless_levels_and_bounds_are_one_line_before_the_engine_starts() {
    let results = tempfile::tempdir().unwrap();
    for (flags, said) in [
        (&["--concurrency", "0"][..], "--concurrency 0: a level needs at least one client"),
        (&["--concurrency", "1,300"], "--concurrency 300 is more clients than this runner starts (256"),
        (&["--concurrency", ""], "--concurrency lists no level"),
        (&["--concurrency", "1,4", "--iterations", "3"], "--iterations 3 is fewer than the 4 clients of level 4"),
        (&["--pack", "no_such_pack"], "no_such_pack"),
        (&["--query", "q9"], "q9"),
        (&["--sql", "/no/such/file.sql"], "/no/such/file.sql"),
        (
            &["--load-from", "local", "--client-beside-server"],
            "--client-beside-server places the clients in the cluster, and --load-from local runs them here: give one \
             or the other",
        ),
        (
            &["--client-node-type", "c7g/4xlarge"],
            "--client-node-type \"c7g/4xlarge\" is not a node type: give 1 to 63 letters, digits",
        ),
    ] {
        let output = throughput(results.path(), "refused", flags).output().unwrap();
        let line = error_line(&output);
        assert!(line.contains(said), "{flags:?}: {line}");
        assert!(!String::from_utf8_lossy(&output.stderr).contains("target embedded"), "the engine started");
    }
    // A value the flag's parser refuses: one line too, with a command line's exit code 2.
    for (flags, said) in [
        (&["--duration", "1ns"][..], "\"1ns\" is not a duration: write a number and its unit, ms, s or m"),
        // The message says above 0, and 0 is refused: message and rule agree.
        (&["--duration", "0s"], "\"0s\": a level needs time to run; give a duration above 0, e.g. 2s"),
        (&["--iterations", "0"], "'--iterations <ITERATIONS>': a level needs at least one statement"),
    ] {
        let output = throughput(results.path(), "refused", flags).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{flags:?}: {stderr}");
        assert!(stderr.starts_with("error: invalid value ") && stderr.contains(said), "{flags:?}: {stderr}");
    }
    // Two files of one name would be one query in the bundle and in a comparison.
    let (first, second) = (results.path().join("a/q.sql"), results.path().join("b/q.sql"));
    for file in [&first, &second] {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, "SELECT 1").unwrap();
    }
    let (first, second) = (first.to_string_lossy().into_owned(), second.to_string_lossy().into_owned());
    let output = throughput(results.path(), "refused", &["--sql", &first, &second]).output().unwrap();
    let line = error_line(&output);
    assert!(line.contains("are both named \"q\"") && line.contains("rename one"), "{line}");
    assert!(!results.path().join("refused").exists());
}

/// The clients run in a cluster only on a target deployed in one: elsewhere asking for
/// it is one line before any bundle is made, and the report says where they ran.
#[test]
fn clients_in_a_cluster_are_refused_on_a_target_that_is_in_none() {
    let results = tempfile::tempdir().unwrap();
    for (flags, said) in [
        (
            &["--load-from", "cluster"][..],
            "--load-from cluster: target embedded runs no load beside its engine (a target deployed in a Kubernetes \
             cluster does); leave --load-from out to run the clients here",
        ),
        (
            &["--client-node-type", "c7g.4xlarge"],
            "--client-node-type places the clients in a Kubernetes cluster, and target embedded is not in one: leave \
             it out",
        ),
    ] {
        let output = throughput(results.path(), "refused", flags).output().unwrap();
        assert_eq!(error_line(&output), format!("error: {said}"), "{flags:?}");
        assert!(!results.path().join("refused").exists());
    }
    let bundle = run(results.path(), "here", &["--concurrency", "1", "--duration", "100ms", "--rounds", "1"]);
    let workload = &bundle.benchmark.workload;
    assert_eq!((workload.load_from, &workload.client_placement), (LoadFrom::Local, &None));
    assert!(bundle.benchmark.rounds.iter().all(|round| round.load.is_none()));
    let report = std::fs::read_to_string(results.path().join("here/report.md")).unwrap();
    assert!(report.contains("**Clients**: this tool's loop on this machine."), "{report}");
}

/// A `--sql` file's query that would write on the host (`INTO OUTFILE`) is refused by the
/// engine's parser in one line at its file and line, before any bundle is made or any of
/// it runs: no file is written, and no level prints its error a thousand times.
#[test]
fn a_sql_file_that_writes_on_the_host_is_refused_before_anything_runs() {
    let results = tempfile::tempdir().unwrap();
    let written = results.path().join("out.csv");
    let query = results.path().join("outfile.sql");
    std::fs::write(&query, format!("-- the answer, to a file\nSELECT 1\nINTO OUTFILE '{}'\n", written.display()))
        .unwrap();
    let setup = results.path().join("setup_writes.sql");
    std::fs::write(&setup, format!("INSERT INTO FUNCTION file('{}', 'CSV') SELECT 1;\nSELECT 1\n", written.display()))
        .unwrap();
    // The line of the clause at fault, for the query; of the statement, for the set-up.
    for (file, line_of) in [(&query, 3), (&setup, 1)] {
        let output = throughput(results.path(), "refused", &["--sql", file.to_str().unwrap()]).output().unwrap();
        let line = error_line(&output);
        assert!(line.starts_with(&format!("error: {}:{line_of}: ", file.display())), "{line}");
        assert!(!written.exists(), "{} wrote on the host", file.display());
        assert!(!results.path().join("refused").exists(), "a bundle was made");
    }
}

/// `--iterations` at least the clients: every level runs exactly that many statements.
#[test]
fn an_iteration_budget_is_run_exactly_at_every_level() {
    let results = tempfile::tempdir().unwrap();
    let bundle = run(
        results.path(),
        "budget",
        &["--query", "q1", "--concurrency", "1,3", "--iterations", "3", "--rounds", "1", "--check-statements", "0"],
    );
    let counts: Vec<(u32, usize)> =
        bundle.benchmark.rounds.iter().map(|round| (round.clients, round.statements.len())).collect();
    assert_eq!(counts, [(1, 3), (3, 3)]);
}

/// SIGTERM in the middle of a level: the run ends with 130, the rounds done are kept, the
/// level it stopped in is kept marked incomplete, and no summary counts it.
#[test]
fn sigterm_in_the_middle_of_a_level_keeps_the_levels_done() {
    let results = tempfile::tempdir().unwrap();
    let stderr = std::fs::File::create(results.path().join("stderr.txt")).unwrap();
    let mut child = throughput(
        results.path(),
        "stopped",
        &["--query", "q1", "--concurrency", "1,2", "--duration", "1s", "--rounds", "100", "--check-statements", "0"],
    )
    .stdout(Stdio::null())
    .stderr(stderr)
    .spawn()
    .unwrap();
    let dir = results.path().join("stopped");
    wait_for(&mut child, || {
        load_bundle::<ThroughputResults>(&dir).is_ok_and(|bundle| bundle.benchmark.rounds.len() >= 3)
    });
    // Within the fourth level: it lasts a second, and the third ended a moment ago.
    std::thread::sleep(Duration::from_millis(300));
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let code = child.wait().unwrap().code();
    let stderr = std::fs::read_to_string(results.path().join("stderr.txt")).unwrap();
    assert_eq!(code, Some(130), "{stderr}");
    let bundle: ThroughputBundle = load_bundle(&dir).unwrap();
    assert_eq!((bundle.status, bundle.phase.as_str()), (RunStatus::Incomplete, "levels"));
    let rounds = &bundle.benchmark.rounds;
    assert!(rounds.len() >= 4, "{} levels kept", rounds.len());
    assert!(rounds[..rounds.len() - 1].iter().all(|round| round.complete));
    let last = rounds.last().unwrap();
    assert!(!last.complete && !last.statements.is_empty(), "{last:?}");
    let counted: usize = bundle.benchmark.levels.iter().map(|level| level.rounds).sum();
    assert_eq!(counted, rounds.len() - 1, "an interrupted level counts in no summary");
    let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error: ")).collect();
    assert!(
        errors.len() == 1 && errors[0].ends_with("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"),
        "{stderr}"
    );
}

fn wait_for(child: &mut Child, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !done() {
        assert!(Instant::now() < deadline, "the run never got there");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be interrupted");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// On a target that runs one statement at a time (an engine worker: one pipe), the run
/// says so in one line and measures level 1 only.
#[test]
fn a_target_that_runs_one_statement_at_a_time_runs_level_1_only_and_says_so() {
    use chbench::benchmarks::throughput::{ThroughputBenchmark, ThroughputFlags};
    use chbench::benchmarks::{AnyBenchmark, Benchmark, BundlePlace};
    use chbench::targets::worker::WorkerCommand;
    use clap::{Args, FromArgMatches};

    let command =
        WorkerCommand { program: env!("CARGO_BIN_EXE_xtask").into(), args: vec!["engine-worker".to_string()] };
    let engine = chbench::engine::engine_version().unwrap();
    let mut worker = chbench::targets::open_worker(&command, engine, &chbench::targets::Storage::Scratch).unwrap();
    assert_eq!(worker.capabilities().concurrent_queries, chbench::targets::Concurrency::Serial);
    let matches = ThroughputFlags::augment_args(clap::Command::new("throughput")).get_matches_from([
        "throughput",
        "--rows",
        "100K",
        "--query",
        "q1",
        "--concurrency",
        "1,2,4",
        "--iterations",
        "4",
        "--rounds",
        "1",
        "--check-statements",
        "10",
    ]);
    let benchmark = ThroughputBenchmark::from_flags(ThroughputFlags::from_arg_matches(&matches).unwrap());
    let results = tempfile::tempdir().unwrap();
    let place = BundlePlace {
        root: results.path().to_path_buf(),
        run_id: "serial".to_string(),
        existing: chbench::results::ExistingFolder::Refuse,
    };
    let said = Said::default();
    let end = AnyBenchmark::run_to_bundle(&benchmark, &mut worker, &place, &said).unwrap();
    end.outcome.unwrap();
    let bundle: ThroughputBundle = load_bundle(&end.dir).unwrap();
    assert_eq!(bundle.benchmark.workload.concurrency, [1, 2, 4]);
    assert_eq!(bundle.benchmark.workload.levels_run, [1]);
    let levels: Vec<u32> = bundle.benchmark.rounds.iter().map(|round| round.clients).collect();
    assert_eq!(levels, [1]);
    let line = "target embedded runs one statement at a time: measuring at 1 client only";
    assert_eq!(bundle.benchmark.notes, [line]);
    assert_eq!(said.0.lock().unwrap().iter().filter(|warning| warning.as_str() == line).count(), 1);
}

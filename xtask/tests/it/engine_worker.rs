//! A second engine version beside the one this process loaded: a worker process
//! (`cargo xtask engine-worker`, `chbench::targets::worker`) that loads it and answers over
//! pipes. The test process loads the engine its environment names (the default pin).

use chbench::engine::{engine_version, engine_version_named};
use chbench::settings::Settings;
use chbench::target_info::TargetKind;
use chbench::targets::embedded::storage_dir_of_process;
use chbench::targets::worker::{WorkerBackend, WorkerCommand};
use chbench::targets::{Backend, Storage, open_target_of_kind, open_worker};

/// This build's xtask, as a worker.
fn worker_command() -> WorkerCommand {
    WorkerCommand { program: env!("CARGO_BIN_EXE_xtask").into(), args: vec!["engine-worker".to_string()] }
}

#[test]
fn a_worker_on_26_5_3_answers_beside_this_processs_engine_on_a_copy_of_its_folder() {
    let mut here = open_target_of_kind(TargetKind::Embedded).unwrap();
    assert_eq!(here.info().engine_version, engine_version().unwrap().clickhouse_version);
    here.use_scenario_database("engine_worker").unwrap();
    here.execute("CREATE TABLE t (k UInt64, v String) ENGINE = MergeTree ORDER BY k").unwrap();
    here.execute("INSERT INTO t SELECT number, toString(number) FROM numbers(5000)").unwrap();
    let database = here.database().to_string();

    let older = engine_version_named("26.5.3").unwrap();
    let copy = Storage::CopyOf(storage_dir_of_process(std::process::id()));
    let mut worker = open_worker(&worker_command(), older, &copy).unwrap();
    assert_eq!(worker.query_text("SELECT version()").unwrap(), "26.5.1.1\n");
    assert_eq!(worker.info().engine_version, "26.5.1.1");
    assert!(worker.info().endpoint.contains("libchdb/26.5.3/libchdb.so in engine worker pid"), "{}", worker.info());
    // Both engines read the same table: the worker's copy holds what this engine wrote.
    worker.use_database(&database).unwrap();
    let sum = "SELECT count(), sum(k), max(v) FROM t";
    assert_eq!(worker.query_text(sum).unwrap(), here.query_text(sum).unwrap());
    // A measurement through the worker: the worker's own result counters and events.
    let tag = chbench::stats::StatementTag::new("engine_worker", "test", "scan", 1);
    let measured =
        chbench::measure::measure(&mut worker, "SELECT count() FROM t WHERE v != ''", &tag, &Settings::new()).unwrap();
    assert_eq!(measured.body, "5000\n");
    assert_eq!(measured.stats.read_rows, 5000, "{:?}", measured.stats);
    assert_eq!(measured.stats.event("SelectedRows"), 5000, "{:?}", measured.stats.profile_events);
    // Statement settings reach the worker's session for that statement alone.
    let threads = "SELECT getSetting('max_threads')";
    let one = worker.run(threads, &Settings::new().with("max_threads", 1), "TabSeparated").unwrap();
    assert_eq!(one.body, "1\n");
    assert_ne!(worker.query_text(threads).unwrap(), "1\n");
    // An SQL error is the engine's, and the worker answers after it.
    let error = format!("{:#}", worker.execute("SELEC 1").unwrap_err());
    assert!(error.contains("SYNTAX_ERROR"), "{error}");
    assert_eq!(worker.query_text("SELECT 2").unwrap(), "2\n");
    // This process's engine is still its own.
    assert_eq!(here.query_text("SELECT version()").unwrap(), format!("{}\n", here.info().engine_version));
}

#[test]
fn a_worker_that_dies_mid_statement_is_one_error_naming_it_and_the_statement() {
    let older = engine_version_named("26.5.3").unwrap();
    let mut worker = WorkerBackend::spawn(&worker_command(), older, &Storage::Scratch, &|_| {}).unwrap();
    let pid = worker.pid();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(1));
        std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap()
    });
    let long = "SELECT count() FROM numbers_mt(10000000000000)";
    let error = format!("{:#}", worker.run(long, &Settings::new(), "TabSeparated").unwrap_err());
    assert!(killer.join().unwrap().success());
    assert!(
        error.starts_with(&format!("the engine worker (engine 26.5.3, pid {pid}) ended (signal: 9 (SIGKILL))")),
        "{error}"
    );
    assert!(error.contains(&format!("during `{long}`")), "{error}");
    assert!(!error.contains('\n'), "{error}");
    // Ended is ended: the next call says so at once.
    let again = format!("{:#}", worker.run("SELECT 1", &Settings::new(), "TabSeparated").unwrap_err());
    assert!(again.starts_with(&format!("the engine worker (engine 26.5.3, pid {pid}) ended")), "{again}");
    assert!(again.ends_with("start another"), "{again}");
}

#[test]
fn a_stop_request_here_cancels_the_workers_statement_and_the_worker_answers_after() {
    let older = engine_version_named("26.5.3").unwrap();
    let mut worker = WorkerBackend::spawn(&worker_command(), older, &Storage::Scratch, &|_| {}).unwrap();
    let stopper = std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_secs(1));
        chbench::interrupt::request_stop();
    });
    let long = "SELECT count() FROM numbers_mt(10000000000000)";
    let error = worker.run(long, &Settings::new(), "TabSeparated").unwrap_err();
    stopper.join().unwrap();
    assert!(error.is::<chbench::interrupt::Interrupted>(), "{error:#}");
    // Cancelled, not ended: the worker runs the next statement.
    assert_eq!(worker.run("SELECT 1", &Settings::new(), "TabSeparated").unwrap().0, "1\n");
}

/// The run's own session settings (`bench --setting`) are the worker's too: passed on its
/// command line, in force for each of its statements, back after one that set its own.
#[test]
fn the_runs_session_settings_reach_a_worker() {
    chbench::settings::choose_run_settings(Settings::new().with("max_threads", 3)).unwrap();
    let older = engine_version_named("26.5.3").unwrap();
    let mut worker = open_worker(&worker_command(), older, &Storage::Scratch).unwrap();
    let threads = "SELECT getSetting('max_threads')";
    assert_eq!(worker.query_text(threads).unwrap(), "3\n");
    let one = worker.run(threads, &Settings::new().with("max_threads", 1), "TabSeparated").unwrap();
    assert_eq!(one.body, "1\n");
    assert_eq!(worker.query_text(threads).unwrap(), "3\n");
}

//! One statement from several clients at once on the embedded engine
//! (`Target::run_concurrently`, `measure_concurrently`): every client sees the scenario's
//! tables and reads what one client reads, the clients' statements are in the engine's
//! process list together, their records say they hold the result's counters alone, and a
//! stop cancels every client's statement. Structure only: rows, answers, counts of
//! statements, never a time.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use chbench::interrupt::Interrupted;
use chbench::measure::{measure, measure_concurrently};
use chbench::settings::Settings;
use chbench::stats::{StatementTag, StatsSource};
use chbench::target_info::TargetKind;
use chbench::targets::chdb::Connection;
use chbench::targets::embedded::storage_dir_of_process;
use chbench::targets::{Concurrency, Target, open_target_of_kind};

/// The embedded engine in a fresh database `scenario` holding `t`: 100,000 keys in
/// granules of 8,192 rows, one part.
fn embedded_with_table(scenario: &str) -> Target {
    let mut target = open_target_of_kind(TargetKind::Embedded).expect("cannot open the embedded engine");
    target.use_scenario_database(scenario).unwrap();
    target
        .execute("CREATE TABLE t (k UInt64) ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 8192")
        .unwrap();
    target.execute("INSERT INTO t SELECT number FROM numbers(100000)").unwrap();
    target
}

/// A statement that takes a while and no CPU: `rows` blocks of one row, each sleeping
/// 50 ms (a KILL takes effect between blocks).
fn sleeping(rows: u32) -> String {
    format!("SELECT sleepEachRow(0.05) FROM numbers({rows}) SETTINGS max_block_size = 1")
}

/// How many statements of [`sleeping`] the engine lists in `system.processes`.
const SLEEPING_NOW: &str =
    "SELECT count() FROM system.processes WHERE query LIKE '%sleepEachRow%' AND query NOT LIKE '%system.processes%'";

/// Watches the engine's process list from a connection of its own on the process's
/// folder until `done`, returning the most [`sleeping`] statements seen at once; calls
/// `on_all` once when `all` of them run together.
fn watch_sleeping(done: &AtomicBool, all: usize, on_all: impl Fn()) -> usize {
    let connection = Connection::open(&storage_dir_of_process(std::process::id())).unwrap();
    let mut most = 0;
    while !done.load(Ordering::SeqCst) {
        // A stop's KILL may end this read too.
        let Ok(output) = connection.query(SLEEPING_NOW, "TabSeparated") else { continue };
        let now: usize = output.body.trim().parse().unwrap();
        if now > most {
            most = now;
            if most == all {
                on_all();
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    most
}

#[test]
fn the_embedded_engine_runs_clients_in_parallel_without_events_of_their_own() {
    let capabilities = *open_target_of_kind(TargetKind::Embedded).unwrap().capabilities();
    assert_eq!(capabilities.concurrent_queries, Concurrency::Parallel { events_per_statement: false });
    assert_eq!(capabilities.concurrent_stats_source(), StatsSource::ResultCounters);
}

#[test]
fn four_clients_see_the_scenario_table_and_read_what_one_client_reads() {
    let mut target = embedded_with_table("concurrency_same_answer");
    let query = "SELECT sum(k) FROM t WHERE k < 20000";
    let tag =
        |client: usize, run: u32| StatementTag::new("test", "concurrency_same_answer", &format!("c{client}"), run);
    // One client: exactly what `measure` gives.
    let alone = measure_concurrently(&mut target, query, tag, &Settings::new(), 1, 1).unwrap();
    let measured = measure(&mut target, query, &tag(0, 0), &Settings::new()).unwrap();
    assert_eq!(alone.len(), 1);
    let alone = &alone[0].measured;
    assert_eq!(alone.stats.source, measured.stats.source);
    assert_eq!(alone.stats.source, StatsSource::ResultAndEventsDelta);
    assert_eq!((&alone.body, alone.stats.read_rows), (&measured.body, measured.stats.read_rows));
    assert_eq!(alone.stats.event("SelectedRows"), alone.stats.read_rows, "{:?}", alone.stats.profile_events);
    // Keys 0..20000 are in granules 0..=2.
    assert_eq!(alone.body, "199990000\n");
    assert_eq!(alone.stats.read_rows, 3 * 8192);

    let statements_before = target.statement_time().statements;
    let together = measure_concurrently(&mut target, query, tag, &Settings::new(), 4, 2).unwrap();
    // Every statement, in client then run order, and nothing else ran on the target.
    let order: Vec<(usize, u32)> = together.iter().map(|each| (each.client, each.run)).collect();
    assert_eq!(order, [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1)]);
    assert_eq!(target.statement_time().statements - statements_before, 8);
    for each in &together {
        let stats = &each.measured.stats;
        assert_eq!(each.measured.body, alone.body, "client {} run {}", each.client, each.run);
        assert_eq!(stats.read_rows, alone.stats.read_rows, "client {} run {}", each.client, each.run);
        assert_eq!(stats.result_rows, 1);
        assert_eq!(stats.log_comment, format!("test/concurrency_same_answer/c{}/{}", each.client, each.run));
        // system.events is process-wide: no events rather than others' events.
        assert_eq!(stats.source, StatsSource::ResultCounters);
        assert!(stats.profile_events.is_empty(), "{:?}", stats.profile_events);
        assert!(stats.raw.get("result_counters").is_some(), "{}", stats.raw);
    }
    // The target's own connection still works in its database.
    assert_eq!(target.query_text("SELECT count() FROM t").unwrap(), "100000\n");
}

#[test]
fn four_clients_statements_are_in_the_process_list_together() {
    let mut target = embedded_with_table("concurrency_at_once");
    let done = AtomicBool::new(false);
    let (outputs, most) = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| watch_sleeping(&done, 4, || {}));
        let outputs = target.run_concurrently(4, 1, &sleeping(40), |_, _| Settings::new(), "TabSeparated");
        done.store(true, Ordering::SeqCst);
        (outputs, watcher.join().unwrap())
    });
    let outputs = outputs.unwrap();
    assert_eq!(outputs.len(), 4);
    for each in &outputs {
        assert_eq!(each.output.body, "0\n".repeat(40), "client {}", each.client);
    }
    // Serialized clients (one connection) would show one at a time.
    assert_eq!(most, 4, "the most statements running at once");
}

/// On an engine that cannot cancel them, this test runs until the clients' statements end
/// (a minute): the call must come back early, with `Interrupted`.
#[test]
fn a_stop_during_a_concurrent_run_cancels_every_client_and_leaves_nothing_running() {
    let mut target = embedded_with_table("concurrency_stop");
    let done = AtomicBool::new(false);
    let stops = AtomicUsize::new(0);
    let outcome = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            watch_sleeping(&done, 4, || {
                stops.fetch_add(1, Ordering::SeqCst);
                chbench::interrupt::request_stop();
            })
        });
        // Each client would run 1,200 blocks of 50 ms, three times.
        let outcome = target.run_concurrently(4, 3, &sleeping(1200), |_, _| Settings::new(), "TabSeparated");
        done.store(true, Ordering::SeqCst);
        watcher.join().unwrap();
        outcome
    });
    assert_eq!(stops.load(Ordering::SeqCst), 1, "the stop came once all four ran");
    let error = outcome.unwrap_err();
    assert!(error.is::<Interrupted>(), "{error:#}");
    assert_eq!(chbench::targets::chdb::running_statements(), 0);
    // The engine lists none of them; a KILL of the stop still on its way may end a read.
    let listed = (0..20)
        .find_map(|_| {
            let listed = target.query_text(SLEEPING_NOW).ok();
            if listed.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            listed
        })
        .expect("the engine does not answer after the stop");
    assert_eq!(listed, "0\n");
}

/// On the target `CHBENCH_TARGET` chooses: each record of a concurrent run is of the
/// source the target declares for concurrency, and on a server each statement has a
/// query_log row of its own (its own query id, its own events). Servers cannot run here
/// (no Docker); on the embedded engine this checks the counters-alone records again.
#[test]
fn each_statement_of_a_concurrent_run_has_a_record_of_the_declared_source() {
    let mut target = crate::common::scenario_target("concurrency_declared_source");
    target
        .execute("CREATE TABLE t (k UInt64) ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 8192")
        .unwrap();
    target.execute("INSERT INTO t SELECT number FROM numbers(100000)").unwrap();
    let tag =
        |client: usize, run: u32| StatementTag::new("test", "concurrency_declared_source", &format!("c{client}"), run);
    let query = "SELECT count() FROM t WHERE k >= 90000";
    let together = measure_concurrently(&mut target, query, tag, &Settings::new(), 4, 2).unwrap();
    let source = target.capabilities().concurrent_stats_source();
    let mut query_ids = std::collections::BTreeSet::new();
    for each in &together {
        let stats = &each.measured.stats;
        assert_eq!(each.measured.body, "10000\n");
        assert_eq!(stats.source, source);
        match source {
            StatsSource::QueryLog => {
                let query_id = stats.raw.get("query_id").and_then(|id| id.as_str()).unwrap().to_string();
                assert!(query_ids.insert(query_id), "two statements share a query_log row");
                assert_eq!(stats.event("SelectedRows"), stats.read_rows, "{:?}", stats.profile_events);
            }
            StatsSource::ResultCounters => assert!(stats.profile_events.is_empty()),
            StatsSource::ResultAndEventsDelta => panic!("an events delta beside other clients' statements"),
        }
    }
    assert_eq!(together.len(), 8);
}

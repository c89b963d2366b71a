//! The runner's closed loop on the embedded engine (`Target::run_closed_loop`): every
//! client runs at least one statement however short the level, a statement budget is run
//! exactly, a failing statement is counted and its client goes on, a stop ends every
//! client and keeps what ran, and the tight loop it is held to runs what it is asked. Its
//! open loop (`Target::run_open_loop`): no statement is sent before it is due, each
//! carries its lag, and what is still unsent at the end is skipped. Structure only:
//! counts, clients, outcomes, the order of the schedule, never a duration.

use std::collections::BTreeSet;
use std::time::Duration;

use chbench::settings::Settings;
use chbench::target_info::TargetKind;
use chbench::targets::{LoopBound, Target, open_target_of_kind};

/// The embedded engine in a fresh database `scenario` holding `t`: 100,000 keys.
fn embedded_with_table(scenario: &str) -> Target {
    let mut target = open_target_of_kind(TargetKind::Embedded).expect("cannot open the embedded engine");
    target.use_scenario_database(scenario).unwrap();
    target.execute("CREATE TABLE t (k UInt64) ENGINE = MergeTree ORDER BY k").unwrap();
    target.execute("INSERT INTO t SELECT number FROM numbers(100000)").unwrap();
    target
}

const SUM: &str = "SELECT sum(k) FROM t";

#[test]
fn every_client_runs_at_least_one_statement_however_short_the_level() {
    let mut target = embedded_with_table("throughput_short_level");
    let orders = vec![vec![0]; 4];
    let bound = LoopBound::Duration(Duration::from_nanos(1));
    let looped = target.run_closed_loop(4, &[SUM], &orders, bound, &Settings::new(), "TabSeparated").unwrap();
    let clients: BTreeSet<u32> = looped.statements.iter().map(|statement| statement.client).collect();
    assert_eq!(clients, BTreeSet::from([0, 1, 2, 3]));
    assert!(looped.statements.iter().all(|statement| statement.outcome.is_ok()));
    assert!(!looped.wall.is_zero() && !looped.interrupted);
    // Every statement started and ended within the loop's wall time.
    for statement in &looped.statements {
        assert!(statement.start_offset + statement.latency <= looped.wall, "{statement:?}");
    }
    assert_eq!(looped.answers, [Some("4999950000\n".to_string())]);
    // Each client's cost covers its statements.
    let counted: u64 = looped.clients.iter().map(|client| client.statements).sum();
    assert_eq!(counted, looped.statements.len() as u64);
    assert!(looped.clients.iter().all(|client| client.runner_cpu.is_some()));
}

#[test]
fn a_statement_budget_is_shared_by_the_clients_and_run_exactly() {
    let mut target = embedded_with_table("throughput_budget");
    let before = target.statement_time().statements;
    let orders = vec![vec![0, 1]; 3];
    let statements = [SUM, "SELECT count() FROM t WHERE k < 10"];
    let looped = target
        .run_closed_loop(3, &statements, &orders, LoopBound::Statements(10), &Settings::new(), "TabSeparated")
        .unwrap();
    assert_eq!(looped.statements.len(), 10);
    assert_eq!(target.statement_time().statements - before, 10, "every completed statement is counted");
    // One client on the target's own connection runs in this thread, its order cycled.
    let looped = target
        .run_closed_loop(1, &statements, &[vec![1, 0]], LoopBound::Statements(5), &Settings::new(), "TabSeparated")
        .unwrap();
    let order: Vec<u32> = looped.statements.iter().map(|statement| statement.query).collect();
    assert_eq!(order, [1, 0, 1, 0, 1]);
    assert_eq!(looped.answers, [Some("4999950000\n".to_string()), Some("10\n".to_string())]);
}

#[test]
fn a_failing_statement_is_counted_and_its_client_goes_on() {
    let mut target = embedded_with_table("throughput_failing");
    let statements = [SUM, "SELECT * FROM no_such_table"];
    let orders = vec![vec![0, 1]; 2];
    let looped = target
        .run_closed_loop(2, &statements, &orders, LoopBound::Statements(20), &Settings::new(), "TabSeparated")
        .unwrap();
    assert_eq!(looped.statements.len(), 20);
    let failed: Vec<_> = looped.statements.iter().filter(|statement| statement.outcome.is_err()).collect();
    assert!(!failed.is_empty() && failed.len() < 20, "{} failed", failed.len());
    assert!(failed.iter().all(|statement| statement.query == 1));
    let error = failed[0].outcome.as_ref().unwrap_err();
    assert!(error.contains("UNKNOWN_TABLE") && !error.contains('\n'), "{error}");
    // After a failure, the same client ran on.
    for client in 0..2 {
        let mine: Vec<_> = looped.statements.iter().filter(|statement| statement.client == client).collect();
        let first_failure = mine.iter().position(|statement| statement.outcome.is_err());
        if let Some(at) = first_failure {
            assert!(mine[at + 1..].iter().any(|statement| statement.outcome.is_ok()), "client {client} stopped");
        }
    }
}

#[test]
fn the_tight_loop_runs_its_statements_on_the_targets_own_connection() {
    let mut target = embedded_with_table("throughput_direct");
    let before = target.statement_time();
    let direct = target.run_direct_loop("SELECT 1", 50, "TabSeparated").unwrap();
    assert_eq!(direct.statements, 50);
    assert!(!direct.wall.is_zero());
    let after = target.statement_time();
    assert_eq!(after.statements - before.statements, 50);
    let error = target.run_direct_loop("SELECT * FROM no_such_table", 5, "TabSeparated").unwrap_err();
    assert!(format!("{error:#}").contains("UNKNOWN_TABLE"), "{error:#}");
}

/// A stop during a long level: every client ends before its next statement, the
/// statement the stop cancelled is not kept, and what ran is returned, marked.
#[test]
fn a_stop_ends_every_client_and_keeps_what_ran() {
    let mut target = embedded_with_table("throughput_stop");
    let sleeping = "SELECT sleepEachRow(0.05) FROM numbers(2) SETTINGS max_block_size = 1";
    let orders = vec![vec![0]; 2];
    let bound = LoopBound::Duration(Duration::from_secs(600));
    let looped = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(700));
            chbench::interrupt::request_stop();
        });
        target.run_closed_loop(2, &[sleeping], &orders, bound, &Settings::new(), "TabSeparated").unwrap()
    });
    assert!(looped.interrupted);
    assert!(!looped.statements.is_empty());
    assert!(looped.statements.iter().all(|statement| statement.outcome.is_ok()), "a cancelled statement was kept");
}

#[test]
fn an_open_loop_sends_nothing_before_it_is_due_and_measures_from_the_schedule() {
    let mut target = embedded_with_table("open_loop_schedule");
    let orders = vec![vec![0]; 2];
    // 100 a second: statement n is due n x 10 ms after the start line.
    let looped = target
        .run_open_loop(2, &[SUM], &orders, LoopBound::Statements(10), 100.0, &Settings::new(), "TabSeparated")
        .unwrap();
    assert_eq!((looped.statements.len(), looped.scheduled), (10, Some(10)));
    assert!(looped.statements.iter().all(|statement| statement.outcome.is_ok()));
    for statement in &looped.statements {
        let lag = statement.schedule_lag.expect("an open loop's statement has a lag");
        // Its latency runs from when it was due, so it holds the lag.
        assert!(statement.latency >= lag, "{statement:?}");
    }
    // The k-th statement sent was due at k x 10 ms at the earliest: none went early. (The
    // schedule's origin is the first client's start, which the offsets may precede by the
    // other client's start: a millisecond's allowance.)
    let mut starts: Vec<Duration> = looped.statements.iter().map(|statement| statement.start_offset).collect();
    starts.sort();
    for (k, start) in starts.iter().enumerate() {
        let due = Duration::from_millis(10 * k as u64);
        assert!(*start + Duration::from_millis(1) >= due, "statement {k} sent at {start:?}, due at {due:?}");
    }
}

#[test]
fn an_open_loop_skips_what_is_still_unsent_when_its_duration_ends() {
    let mut target = embedded_with_table("open_loop_skips");
    // A million a second for 50 ms: 50,000 due, far more than one client sends.
    let bound = LoopBound::Duration(Duration::from_millis(50));
    let looped = target.run_open_loop(1, &[SUM], &[vec![0]], bound, 1e6, &Settings::new(), "TabSeparated").unwrap();
    assert_eq!(looped.scheduled, Some(50_000));
    assert!(!looped.statements.is_empty() && (looped.statements.len() as u64) < 50_000);
    assert!(looped.statements.iter().all(|statement| statement.schedule_lag.is_some()));
    // A rate that is not one is refused before anything runs.
    for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let error = target
            .run_open_loop(1, &[SUM], &[vec![0]], bound, rate, &Settings::new(), "TabSeparated")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("an open loop needs a rate above 0"), "{error}");
    }
    // A closed loop's statements carry no lag, and its record no schedule.
    let closed = target.run_closed_loop(1, &[SUM], &[vec![0]], bound, &Settings::new(), "TabSeparated").unwrap();
    assert!(closed.scheduled.is_none() && closed.statements.iter().all(|statement| statement.schedule_lag.is_none()));
}

//! What a server keeps that the embedded engine does not, read for a level: each INSERT's
//! own record (its `system.query_log` row, found by the level's `log_comment`) summed into
//! the level's INSERTs' own counters; the engine's gauges (`system.metrics`, and the
//! machine's threads running and blocked on I/O from `system.asynchronous_metrics`), which
//! the observer samples through the level where the engine's threads are not this
//! process's; and the cores the server may use. Each reader is a statement and a parser of
//! its answer, so that what a server answers is tested without one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::decomposition::{EVENTS, EventsDelta, INSERT_QUERIES, INSERT_TIME};
use crate::numbers::ratio;
use crate::sql::sql_string;
use crate::targets::{ObserverConnection, Target};

/// The counters the split reads from each INSERT's own record: every one but the INSERTs'
/// count and their time, which the record holds as its count of rows and its duration (a
/// server increments `InsertQueryTimeMicroseconds` after it has logged the query, so no
/// record holds it).
fn record_events() -> impl Iterator<Item = &'static str> {
    EVENTS.iter().copied().filter(|&name| name != INSERT_QUERIES && name != INSERT_TIME)
}

/// Over the finished INSERTs tagged `log_comment`: their count, those run asynchronously
/// (their record holds the wait for the queue, not the flush that writes the part), those
/// whose record has no counters (the server's `log_profile_events` off), their durations
/// summed in µs, then the sum of each of [`record_events`]. `event_date` bounds the read to
/// the log's latest partitions (a level ends within a day of its start; the server's own
/// clock decides, so a client's skew does not matter); the tag alone finds the rows.
pub(super) fn inserts_own_sql(log_comment: &str) -> String {
    let sums: Vec<String> = record_events().map(|name| format!("sum(ProfileEvents[{}])", sql_string(name))).collect();
    format!(
        "SELECT count(), countIf(ProfileEvents['AsyncInsertQuery'] > 0 OR Settings['async_insert'] IN ('1', 'true')), \
         countIf(empty(ProfileEvents)), sum(toUnixTimestamp64Micro(event_time_microseconds) - \
         toUnixTimestamp64Micro(query_start_time_microseconds)), {} FROM system.query_log WHERE event_date >= \
         yesterday() AND type = 'QueryFinish' AND query_kind = 'Insert' AND log_comment = {}",
        sums.join(", "),
        sql_string(log_comment)
    )
}

/// The INSERTs' own counters from the answer to [`inserts_own_sql`], given the INSERTs the
/// level sent and those that completed: unknown, with why, when the log holds fewer than
/// completed (the server logs no queries, a sample of them, or only some kinds: a part of
/// the INSERTs is not their split), more than were sent, asynchronous ones, or records
/// without counters.
pub(super) fn inserts_own_of(answer: &str, completed: u64, sent: u64) -> EventsDelta {
    let unknown = |reason: String| EventsDelta::Unknown { reason };
    let values: Option<Vec<i64>> = answer.trim().split('\t').map(|field| field.parse().ok()).collect();
    let Some(values) = values.filter(|values| values.len() == 4 + record_events().count()) else {
        return unknown(format!("unexpected answer {:?} from system.query_log", answer.trim()));
    };
    // Counts and sums of counters are never negative; a duration could only be so on a
    // clock stepped back mid-INSERT.
    let value = |index: usize| u64::try_from(values[index]).unwrap_or(0);
    let (logged, asynchronous, without_events, duration_us) = (value(0), value(1), value(2), value(3));
    if logged < completed {
        return unknown(format!(
            "system.query_log holds {logged} of the level's {completed} completed INSERTs (the server's log_queries, \
             log_queries_probability, log_queries_min_query_duration_ms or log_queries_min_type): the split of a \
             part of them would not be theirs"
        ));
    }
    if logged > sent {
        return unknown(format!(
            "system.query_log holds {logged} INSERTs tagged for the level, more than the {sent} it sent"
        ));
    }
    if asynchronous > 0 {
        return unknown(format!(
            "{asynchronous} of the level's INSERTs ran asynchronously (async_insert): their records hold their wait \
             for the queue, not the flush that writes the part"
        ));
    }
    if without_events > 0 {
        return unknown(format!(
            "{without_events} of the level's INSERTs' records have no counters (the server's log_profile_events is off)"
        ));
    }
    let mut rises: BTreeMap<String, u64> = BTreeMap::new();
    rises.insert(INSERT_QUERIES.to_string(), logged);
    rises.insert(INSERT_TIME.to_string(), duration_us);
    for (index, name) in record_events().enumerate() {
        rises.insert(name.to_string(), value(4 + index));
    }
    EventsDelta::Known { engine_wide: false, rises }
}

/// The level's INSERTs' own counters, read after flushing the server's logs.
pub(super) fn inserts_own(target: &mut Target, log_comment: &str, completed: u64, sent: u64) -> EventsDelta {
    let read = target.execute("SYSTEM FLUSH LOGS").and_then(|()| target.query_text(&inserts_own_sql(log_comment)));
    match read {
        Ok(answer) => inserts_own_of(&answer, completed, sent),
        Err(error) => EventsDelta::Unknown { reason: format!("cannot read system.query_log: {error:#}") },
    }
}

/// The engine's gauges the observer reads (ClickHouse's `CurrentMetrics`): threads of its
/// global pool running a task, threads inside a read or a write system call, threads
/// waiting for a table's read-write lock, queries running, INSERTs being delayed for too
/// many parts.
pub(super) const GAUGES: [&str; 7] =
    ["GlobalThreadActive", "Read", "Write", "RWLockWaitingReaders", "RWLockWaitingWriters", "Query", "DelayedInserts"];

/// The machine's threads running or ready to run, and blocked on I/O (`/proc/stat`'s
/// `procs_running` and `procs_blocked`, as a server's `system.asynchronous_metrics` gives
/// them, refreshed every second): every process of the server's machine, not its own alone.
pub(super) const MACHINE_THREADS: [&str; 2] = ["OSProcessesRunning", "OSProcessesBlocked"];

/// One look at the gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct GaugeLook {
    active_threads: f64,
    in_io: f64,
    lock_waiting: f64,
    /// Queries running, the look's own excluded.
    queries: f64,
    delayed_inserts: f64,
    /// The machine's threads running and blocked on I/O, when the engine gives them.
    machine: Option<(f64, f64)>,
}

/// `names` quoted for an `IN (...)` list.
fn sql_list(names: &[&str]) -> String {
    names.iter().map(|name| sql_string(name)).collect::<Vec<_>>().join(", ")
}

/// The engine's own gauges alone: what an engine without `system.asynchronous_metrics` is
/// asked.
fn metrics_sql() -> String {
    format!("SELECT metric, toFloat64(value) FROM system.metrics WHERE metric IN ({})", sql_list(&GAUGES))
}

pub(super) fn gauges_sql() -> String {
    format!(
        "{} UNION ALL SELECT metric, value FROM system.asynchronous_metrics WHERE metric IN ({})",
        metrics_sql(),
        sql_list(&MACHINE_THREADS)
    )
}

/// A look from the answer to [`gauges_sql`]: a gauge of [`GAUGES`] the engine lacks is an
/// error (an older engine's names differ), never a zero; the machine's threads are unknown
/// when either is absent (an engine without `system.asynchronous_metrics`, the embedded one
/// in another process, answers the first part only).
pub(super) fn gauges_of(answer: &str) -> Result<GaugeLook, String> {
    let mut values: BTreeMap<&str, f64> = BTreeMap::new();
    for line in answer.lines().filter(|line| !line.trim().is_empty()) {
        let parsed = line.split_once('\t').and_then(|(name, value)| Some((name, value.trim().parse::<f64>().ok()?)));
        let Some((name, value)) = parsed else {
            return Err(format!("unexpected line {line:?} from the engine's gauges"));
        };
        values.insert(name, value);
    }
    let missing: Vec<&str> = GAUGES.iter().copied().filter(|name| !values.contains_key(name)).collect();
    if !missing.is_empty() {
        return Err(format!("the engine has no gauge {} in system.metrics", missing.join(", ")));
    }
    let gauge = |name: &str| values.get(name).copied().unwrap_or(0.0);
    Ok(GaugeLook {
        active_threads: gauge("GlobalThreadActive"),
        in_io: gauge("Read") + gauge("Write"),
        lock_waiting: gauge("RWLockWaitingReaders") + gauge("RWLockWaitingWriters"),
        // The look is a query itself.
        queries: (gauge("Query") - 1.0).max(0.0),
        delayed_inserts: gauge("DelayedInserts"),
        machine: values.get("OSProcessesRunning").copied().zip(values.get("OSProcessesBlocked").copied()),
    })
}

/// One look at the gauges on the observer's connection. An engine without
/// `system.asynchronous_metrics` is asked for `system.metrics` alone.
pub(super) fn look_at_gauges(connection: &mut ObserverConnection) -> Result<GaugeLook, String> {
    let answer = connection.query_text(&gauges_sql()).or_else(|error| {
        if !format!("{error:#}").contains("asynchronous_metrics") {
            return Err(error);
        }
        connection.query_text(&metrics_sql())
    });
    answer.map_err(|error| format!("{error:#}")).and_then(|answer| gauges_of(&answer))
}

/// The engine's gauges through a level: each one's mean over the looks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaugeMeans {
    /// Looks taken.
    pub looks: u64,
    /// Threads of the engine's global pool running a task (`GlobalThreadActive`).
    pub active_threads: Option<f64>,
    /// Threads inside a read or write system call (`Read + Write`).
    pub in_io: Option<f64>,
    /// Threads waiting for a table's read-write lock (`RWLockWaitingReaders + Writers`).
    pub lock_waiting: Option<f64>,
    /// Queries running (`Query`), the observer's own excluded.
    pub queries: Option<f64>,
    /// INSERTs being delayed for too many parts (`DelayedInserts`).
    pub delayed_inserts: Option<f64>,
    /// The machine's threads running or ready to run (`OSProcessesRunning`), over the
    /// looks that had it.
    pub machine_running: Option<f64>,
    /// The machine's threads blocked on I/O (`OSProcessesBlocked`, state `D`).
    pub machine_blocked: Option<f64>,
    /// `blocked / (running + blocked)` over every look that had both: of the machine's
    /// threads doing something, the share blocked on storage (the embedded engine's
    /// `io_wait_share`, for the whole machine). Unknown when no look had them or saw any.
    pub io_share: Option<f64>,
}

impl GaugeMeans {
    pub(super) fn of(looks: &[GaugeLook]) -> GaugeMeans {
        let n = looks.len() as f64;
        let mean = |gauge: fn(&GaugeLook) -> f64| ratio(looks.iter().map(gauge).sum::<f64>(), n);
        let machine: Vec<(f64, f64)> = looks.iter().filter_map(|look| look.machine).collect();
        let (running, blocked) =
            machine.iter().fold((0.0, 0.0), |(r, b), (running, blocked)| (r + running, b + blocked));
        let machine_looks = machine.len() as f64;
        GaugeMeans {
            looks: looks.len() as u64,
            active_threads: mean(|look| look.active_threads),
            in_io: mean(|look| look.in_io),
            lock_waiting: mean(|look| look.lock_waiting),
            queries: mean(|look| look.queries),
            delayed_inserts: mean(|look| look.delayed_inserts),
            machine_running: ratio(running, machine_looks),
            machine_blocked: ratio(blocked, machine_looks),
            io_share: ratio(blocked, running + blocked),
        }
    }
}

/// The cores a server may use: its cgroup's CPU limit (`CGroupMaxCPU`, given only under a
/// limit), else its machine's CPUs (one `OSUserTimeCPU<N>` figure each, given from the
/// second update of the metrics on).
pub(super) const CORES_SQL: &str = "SELECT maxIf(value, metric = 'CGroupMaxCPU'), countIf(match(metric, \
                                    '^OSUserTimeCPU[0-9]+$')) FROM system.asynchronous_metrics";

/// The cores from the answer to [`CORES_SQL`]: the limit when it is below the machine's
/// CPUs; an error when the answer holds neither.
pub(super) fn cores_of(answer: &str) -> Result<f64, String> {
    let mut fields = answer.trim().split('\t').map(|field| field.parse::<f64>().ok());
    let (limit, cpus) = match (fields.next().flatten(), fields.next().flatten(), fields.next()) {
        (Some(limit), Some(cpus), None) => (limit, cpus),
        _ => return Err(format!("unexpected answer {:?} from system.asynchronous_metrics", answer.trim())),
    };
    match (limit > 0.0, cpus > 0.0) {
        (true, true) => Ok(limit.min(cpus)),
        (true, false) => Ok(limit),
        (false, true) => Ok(cpus),
        (false, false) => Err(
            "system.asynchronous_metrics has no CGroupMaxCPU and no OSUserTimeCPU figure yet (a server just started, \
             or not on Linux)"
                .to_string(),
        ),
    }
}

/// The cores the server may use, or why that is unknown.
pub(super) fn server_cores(target: &mut Target) -> Result<f64, String> {
    target.query_text(CORES_SQL).map_err(|error| format!("{error:#}")).and_then(|answer| cores_of(&answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::writes::decomposition::FILE_SYNC_TIME;

    /// An answer to [`inserts_own_sql`]: the count, the asynchronous ones, those without
    /// counters, the durations, then each counter's sum.
    fn answer(logged: u64, asynchronous: u64, without_events: u64, sums: impl Fn(usize) -> u64) -> String {
        let head = [logged, asynchronous, without_events, 9_000].map(|value| value.to_string());
        let sums = (0..record_events().count()).map(|index| sums(index).to_string());
        head.into_iter().chain(sums).collect::<Vec<_>>().join("\t") + "\n"
    }

    #[test]
    fn the_inserts_own_counters_are_summed_by_the_levels_tag_and_read_back_by_name() {
        let sql = inserts_own_sql("run/writes/durable_c4_r2/5f0c");
        assert!(sql.starts_with("SELECT count(), countIf(ProfileEvents['AsyncInsertQuery'] > 0 OR "), "{sql}");
        assert!(sql.ends_with("query_kind = 'Insert' AND log_comment = 'run/writes/durable_c4_r2/5f0c'"), "{sql}");
        // No record holds the INSERT's own time counter: its duration stands for it.
        assert!(!sql.contains(INSERT_TIME) && sql.contains("query_start_time_microseconds"), "{sql}");
        assert_eq!(sql.matches("sum(ProfileEvents[").count(), EVENTS.len() - 2);
        let EventsDelta::Known { engine_wide, rises } =
            inserts_own_of(&answer(40, 0, 0, |index| index as u64 * 10), 40, 41)
        else {
            panic!("unknown");
        };
        assert!(!engine_wide);
        assert_eq!((rises[INSERT_QUERIES], rises[INSERT_TIME]), (40, 9_000));
        let file_sync_time = record_events().position(|name| name == FILE_SYNC_TIME).unwrap() as u64;
        assert_eq!(rises[FILE_SYNC_TIME], file_sync_time * 10);
        assert_eq!(rises.len(), EVENTS.len());
    }

    #[test]
    fn a_log_short_of_the_levels_inserts_or_beyond_them_or_an_odd_answer_is_unknown_with_why() {
        let seven = |_| 7;
        // More logged than the clients saw complete, up to what they sent: a failed INSERT
        // the server finished after the client gave up on it.
        assert!(matches!(inserts_own_of(&answer(12, 0, 0, seven), 10, 12), EventsDelta::Known { .. }));
        let cases = [
            (answer(0, 0, 0, seven), "system.query_log holds 0 of the level's 10 completed INSERTs"),
            (answer(13, 0, 0, seven), "system.query_log holds 13 INSERTs tagged for the level, more than the 12"),
            (answer(10, 10, 0, seven), "10 of the level's INSERTs ran asynchronously"),
            (answer(10, 0, 2, seven), "2 of the level's INSERTs' records have no counters"),
            (String::new(), "unexpected answer"),
            ("1\t2".to_string(), "unexpected answer"),
            (answer(10, 0, 0, seven).replace("\t7\n", "\tz\n"), "unexpected answer"),
        ];
        for (answer, why) in cases {
            let EventsDelta::Unknown { reason } = inserts_own_of(&answer, 10, 12) else { panic!("known: {answer:?}") };
            assert!(reason.starts_with(why), "{reason}");
        }
    }

    #[test]
    fn the_gauges_are_read_by_name_and_a_missing_one_is_an_error_not_a_zero() {
        assert_eq!(
            gauges_sql(),
            "SELECT metric, toFloat64(value) FROM system.metrics WHERE metric IN ('GlobalThreadActive', 'Read', \
             'Write', 'RWLockWaitingReaders', 'RWLockWaitingWriters', 'Query', 'DelayedInserts') UNION ALL SELECT \
             metric, value FROM system.asynchronous_metrics WHERE metric IN ('OSProcessesRunning', \
             'OSProcessesBlocked')"
        );
        let metrics = "Query\t5\nRead\t1\nWrite\t3\nGlobalThreadActive\t16\nRWLockWaitingReaders\t2\n\
                       RWLockWaitingWriters\t0\nDelayedInserts\t1\n";
        let look = gauges_of(&format!("{metrics}OSProcessesRunning\t6\nOSProcessesBlocked\t2\n")).unwrap();
        let expected = GaugeLook {
            active_threads: 16.0,
            in_io: 4.0,
            lock_waiting: 2.0,
            queries: 4.0,
            delayed_inserts: 1.0,
            machine: Some((6.0, 2.0)),
        };
        assert_eq!(look, expected);
        // Without the machine's figures (no system.asynchronous_metrics): the gauges alone.
        assert_eq!(gauges_of(metrics).unwrap(), GaugeLook { machine: None, ..expected });
        let older = metrics.replace("DelayedInserts\t1\n", "");
        assert_eq!(gauges_of(&older), Err("the engine has no gauge DelayedInserts in system.metrics".to_string()));
        assert!(gauges_of("Query five").unwrap_err().starts_with("unexpected line"));
    }

    #[test]
    fn the_gauges_means_share_is_the_machines_blocked_threads_over_every_look_together() {
        let look = |machine| GaugeLook { active_threads: 10.0, machine, ..GaugeLook::default() };
        let means = GaugeMeans::of(&[look(Some((9.0, 1.0))), look(Some((11.0, 19.0))), look(None)]);
        assert_eq!((means.looks, means.active_threads), (3, Some(10.0)));
        assert_eq!((means.machine_running, means.machine_blocked), (Some(10.0), Some(10.0)));
        // 20 of 40 thread-looks, not the mean of 10 % and 63 %.
        assert_eq!(means.io_share, Some(0.5));
        assert_eq!(GaugeMeans::of(&[look(None)]).io_share, None);
        assert_eq!(GaugeMeans::of(&[look(Some((0.0, 0.0)))]).io_share, None);
        // No look: every mean unknown, not zero.
        assert_eq!((GaugeMeans::of(&[]).io_share, GaugeMeans::of(&[]).queries), (None, None));
    }

    #[test]
    fn a_servers_cores_are_its_cgroups_limit_when_below_its_machines() {
        assert_eq!(cores_of("3.5\t8\n"), Ok(3.5));
        // No limit (the metric absent: 0) or a limit above the machine: the machine's.
        assert_eq!(cores_of("0\t8\n"), Ok(8.0));
        assert_eq!(cores_of("64\t8\n"), Ok(8.0));
        assert_eq!(cores_of("4\t0\n"), Ok(4.0));
        assert!(cores_of("0\t0\n").unwrap_err().starts_with("system.asynchronous_metrics has no CGroupMaxCPU"));
        assert!(cores_of("").unwrap_err().starts_with("unexpected answer"));
        assert!(cores_of("1\t2\t3").unwrap_err().starts_with("unexpected answer"));
    }
}

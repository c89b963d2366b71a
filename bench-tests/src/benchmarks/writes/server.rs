//! What a server keeps that the embedded engine does not, read for a level: each INSERT's
//! own record (its `system.query_log` row, found by the level's `log_comment`) summed into
//! the level's INSERTs' own counters; the server's thread gauges (`system.metrics`), which
//! the observer samples through the level where the engine's threads are not this
//! process's; and the cores the server may use (`system.asynchronous_metrics`). Each reader
//! is a statement and a parser of its answer, so that what a server answers is tested
//! without one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::decomposition::{EVENTS, EventsDelta, INSERT_QUERIES};
use crate::numbers::ratio;
use crate::sql::sql_string;
use crate::targets::{ObserverConnection, Target};

/// The sums of the counters the time split reads over the finished INSERTs tagged
/// `log_comment`, with their count first. `event_date` bounds the read to the log's
/// latest partitions (a level ends within a day of its start; the server's own clock
/// decides, so a client's skew does not matter); the tag alone finds the rows.
pub(super) fn inserts_own_sql(log_comment: &str) -> String {
    let sums: Vec<String> = EVENTS
        .iter()
        .filter(|&&name| name != INSERT_QUERIES)
        .map(|name| format!("sum(ProfileEvents[{}])", sql_string(name)))
        .collect();
    format!(
        "SELECT count(), {} FROM system.query_log WHERE event_date >= yesterday() AND type = 'QueryFinish' AND \
         query_kind = 'Insert' AND log_comment = {}",
        sums.join(", "),
        sql_string(log_comment)
    )
}

/// The INSERTs' own counters from the answer to [`inserts_own_sql`], given the INSERTs the
/// clients saw complete: unknown, with why, when the log has none or fewer of them (the
/// server logs no queries, or only a sample of them: a part of the INSERTs is not their
/// split).
pub(super) fn inserts_own_of(answer: &str, completed: u64) -> EventsDelta {
    let fields: Vec<&str> = answer.trim().split('\t').collect();
    let names = std::iter::once(INSERT_QUERIES).chain(EVENTS.iter().copied().filter(|&name| name != INSERT_QUERIES));
    let values: Option<Vec<u64>> = fields.iter().map(|field| field.parse().ok()).collect();
    let rises: BTreeMap<String, u64> = match values {
        Some(values) if values.len() == EVENTS.len() => {
            names.zip(values).map(|(name, value)| (name.to_string(), value)).collect()
        }
        _ => {
            return EventsDelta::Unknown {
                reason: format!("unexpected answer {:?} from system.query_log", answer.trim()),
            };
        }
    };
    let logged = rises.get(INSERT_QUERIES).copied().unwrap_or(0);
    if logged < completed {
        return EventsDelta::Unknown {
            reason: format!(
                "system.query_log holds {logged} of the level's {completed} completed INSERTs (the server's \
                 log_queries or log_queries_probability): the split of a part of them would not be theirs"
            ),
        };
    }
    EventsDelta::Known { engine_wide: false, rises }
}

/// The level's INSERTs' own counters, read after flushing the server's logs.
pub(super) fn inserts_own(target: &mut Target, log_comment: &str, completed: u64) -> EventsDelta {
    let read = target.execute("SYSTEM FLUSH LOGS").and_then(|()| target.query_text(&inserts_own_sql(log_comment)));
    match read {
        Ok(answer) => inserts_own_of(&answer, completed),
        Err(error) => EventsDelta::Unknown { reason: format!("cannot read system.query_log: {error:#}") },
    }
}

/// The server's thread gauges the observer reads (ClickHouse's `CurrentMetrics`): threads
/// of its global pool running a task, threads inside a read or a write system call,
/// threads waiting for a table's read-write lock, queries running, INSERTs being delayed
/// for too many parts.
pub(super) const GAUGES: [&str; 7] =
    ["GlobalThreadActive", "Read", "Write", "RWLockWaitingReaders", "RWLockWaitingWriters", "Query", "DelayedInserts"];

/// One look at the server's gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct GaugeLook {
    active_threads: f64,
    in_io: f64,
    lock_waiting: f64,
    /// Queries running, the look's own excluded.
    queries: f64,
    delayed_inserts: f64,
}

pub(super) fn gauges_sql() -> String {
    let names: Vec<String> = GAUGES.iter().map(|name| sql_string(name)).collect();
    format!("SELECT metric, value FROM system.metrics WHERE metric IN ({})", names.join(", "))
}

/// A look from the answer to [`gauges_sql`]: a gauge the server lacks is an error (an
/// older server's names differ), never a zero.
pub(super) fn gauges_of(answer: &str) -> Result<GaugeLook, String> {
    let mut values: BTreeMap<&str, f64> = BTreeMap::new();
    for line in answer.lines().filter(|line| !line.trim().is_empty()) {
        let parsed = line.split_once('\t').and_then(|(name, value)| Some((name, value.trim().parse::<f64>().ok()?)));
        let Some((name, value)) = parsed else {
            return Err(format!("unexpected line {line:?} from system.metrics"));
        };
        values.insert(name, value);
    }
    let missing: Vec<&str> = GAUGES.iter().copied().filter(|name| !values.contains_key(name)).collect();
    if !missing.is_empty() {
        return Err(format!("the server has no gauge {} in system.metrics", missing.join(", ")));
    }
    let gauge = |name: &str| values.get(name).copied().unwrap_or(0.0);
    Ok(GaugeLook {
        active_threads: gauge("GlobalThreadActive"),
        in_io: gauge("Read") + gauge("Write"),
        lock_waiting: gauge("RWLockWaitingReaders") + gauge("RWLockWaitingWriters"),
        // The look is a query itself.
        queries: (gauge("Query") - 1.0).max(0.0),
        delayed_inserts: gauge("DelayedInserts"),
    })
}

/// One look at the gauges on the observer's connection.
pub(super) fn look_at_gauges(connection: &mut ObserverConnection) -> Result<GaugeLook, String> {
    connection.query_text(&gauges_sql()).map_err(|error| format!("{error:#}")).and_then(|answer| gauges_of(&answer))
}

/// A server's thread gauges through a level: each one's mean over the looks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaugeMeans {
    /// Looks taken.
    pub looks: u64,
    /// Threads of the server's global pool running a task (`GlobalThreadActive`).
    pub active_threads: Option<f64>,
    /// Threads inside a read or write system call (`Read + Write`).
    pub in_io: Option<f64>,
    /// Threads waiting for a table's read-write lock (`RWLockWaitingReaders + Writers`).
    pub lock_waiting: Option<f64>,
    /// Queries running (`Query`), the observer's own excluded.
    pub queries: Option<f64>,
    /// INSERTs being delayed for too many parts (`DelayedInserts`).
    pub delayed_inserts: Option<f64>,
    /// `in_io / active_threads` over every look together: of the threads at work, the share
    /// inside a storage call. Unknown when no look saw a thread at work.
    pub io_share: Option<f64>,
}

impl GaugeMeans {
    pub(super) fn of(looks: &[GaugeLook]) -> GaugeMeans {
        let n = looks.len() as f64;
        let sum = |gauge: fn(&GaugeLook) -> f64| looks.iter().map(gauge).sum::<f64>();
        let mean = |total: f64| ratio(total, n);
        let (active, in_io) = (sum(|look| look.active_threads), sum(|look| look.in_io));
        GaugeMeans {
            looks: looks.len() as u64,
            active_threads: mean(active),
            in_io: mean(in_io),
            lock_waiting: mean(sum(|look| look.lock_waiting)),
            queries: mean(sum(|look| look.queries)),
            delayed_inserts: mean(sum(|look| look.delayed_inserts)),
            io_share: ratio(in_io, active),
        }
    }
}

/// The cores a server may use: its cgroup's CPU limit where it has one below the machine's
/// cores, the machine's cores otherwise.
pub(super) const CORES_SQL: &str =
    "SELECT metric, value FROM system.asynchronous_metrics WHERE metric IN ('CGroupMaxCPU', 'NumberOfCPUCores')";

/// The cores from the answer to [`CORES_SQL`]; an error when it holds neither figure.
pub(super) fn cores_of(answer: &str) -> Result<f64, String> {
    let value_of = |metric: &str| {
        answer.lines().find_map(|line| {
            let (name, value) = line.split_once('\t')?;
            (name == metric).then(|| value.trim().parse::<f64>().ok()).flatten().filter(|value| *value > 0.0)
        })
    };
    match (value_of("CGroupMaxCPU"), value_of("NumberOfCPUCores")) {
        (Some(limit), Some(cores)) => Ok(limit.min(cores)),
        (Some(cores), None) | (None, Some(cores)) => Ok(cores),
        (None, None) => Err(format!(
            "system.asynchronous_metrics has neither CGroupMaxCPU nor NumberOfCPUCores (answer {:?})",
            answer.trim()
        )),
    }
}

/// The cores the server may use, or why that is unknown.
pub(super) fn server_cores(target: &mut Target) -> Result<f64, String> {
    target.query_text(CORES_SQL).map_err(|error| format!("{error:#}")).and_then(|answer| cores_of(&answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::writes::decomposition::{FILE_SYNC_TIME, INSERT_TIME};

    #[test]
    fn the_inserts_own_counters_are_summed_by_the_levels_tag_and_read_back_by_name() {
        let sql = inserts_own_sql("run/writes/durable_c4_r2/1");
        assert!(sql.starts_with("SELECT count(), sum(ProfileEvents['InsertQueryTimeMicroseconds']), "), "{sql}");
        assert!(sql.ends_with("query_kind = 'Insert' AND log_comment = 'run/writes/durable_c4_r2/1'"), "{sql}");
        assert_eq!(sql.matches("sum(ProfileEvents[").count(), EVENTS.len() - 1);
        // The answer in the statement's order: the count, then each sum.
        let answer: Vec<String> = (0..EVENTS.len()).map(|index| (index * 10).to_string()).collect();
        let mut answer = answer.join("\t");
        answer.replace_range(0..1, "40");
        let EventsDelta::Known { engine_wide, rises } = inserts_own_of(&format!("{answer}\n"), 40) else {
            panic!("unknown");
        };
        assert!(!engine_wide);
        assert_eq!(rises[INSERT_QUERIES], 40);
        assert_eq!(rises[INSERT_TIME], 10);
        let file_sync_time =
            EVENTS.iter().filter(|&&name| name != INSERT_QUERIES).position(|&name| name == FILE_SYNC_TIME);
        assert_eq!(rises[FILE_SYNC_TIME], (file_sync_time.unwrap() as u64 + 1) * 10);
        assert_eq!(rises.len(), EVENTS.len());
    }

    #[test]
    fn a_log_short_of_the_levels_inserts_or_an_odd_answer_is_unknown_with_why() {
        let answer = |count: u64| {
            std::iter::once(count.to_string())
                .chain((1..EVENTS.len()).map(|_| "7".to_string()))
                .collect::<Vec<_>>()
                .join("\t")
        };
        // More logged than the clients saw complete: a stopped client's INSERT that the
        // server finished counts, as the engine's own counters would.
        assert!(matches!(inserts_own_of(&answer(12), 10), EventsDelta::Known { .. }));
        let EventsDelta::Unknown { reason } = inserts_own_of(&answer(0), 10) else { panic!("known") };
        assert!(reason.starts_with("system.query_log holds 0 of the level's 10 completed INSERTs"), "{reason}");
        for odd in ["", "1\t2", "x\ty", &format!("{}\tz", answer(3))] {
            let EventsDelta::Unknown { reason } = inserts_own_of(odd, 0) else { panic!("known: {odd:?}") };
            assert!(reason.starts_with("unexpected answer"), "{reason}");
        }
    }

    #[test]
    fn the_gauges_are_read_by_name_and_a_missing_one_is_an_error_not_a_zero() {
        assert_eq!(
            gauges_sql(),
            "SELECT metric, value FROM system.metrics WHERE metric IN ('GlobalThreadActive', 'Read', 'Write', \
             'RWLockWaitingReaders', 'RWLockWaitingWriters', 'Query', 'DelayedInserts')"
        );
        let answer = "Query\t5\nRead\t1\nWrite\t3\nGlobalThreadActive\t16\nRWLockWaitingReaders\t2\n\
                      RWLockWaitingWriters\t0\nDelayedInserts\t1\n";
        let look = gauges_of(answer).unwrap();
        assert_eq!(
            look,
            GaugeLook { active_threads: 16.0, in_io: 4.0, lock_waiting: 2.0, queries: 4.0, delayed_inserts: 1.0 }
        );
        let older = answer.replace("DelayedInserts\t1\n", "");
        assert_eq!(gauges_of(&older), Err("the server has no gauge DelayedInserts in system.metrics".to_string()));
        assert!(gauges_of("Query five").unwrap_err().starts_with("unexpected line"));
    }

    #[test]
    fn the_gauges_means_share_is_of_every_look_together() {
        let look = |active, in_io| GaugeLook { active_threads: active, in_io, ..GaugeLook::default() };
        let means = GaugeMeans::of(&[look(10.0, 1.0), look(30.0, 19.0)]);
        assert_eq!((means.looks, means.active_threads, means.in_io), (2, Some(20.0), Some(10.0)));
        // 20 of 40 thread-looks, not the mean of 10 % and 63 %.
        assert_eq!(means.io_share, Some(0.5));
        assert_eq!(GaugeMeans::of(&[look(0.0, 0.0)]).io_share, None);
        // No look: every mean unknown, not zero.
        assert_eq!((GaugeMeans::of(&[]).io_share, GaugeMeans::of(&[]).queries), (None, None));
    }

    #[test]
    fn a_servers_cores_are_its_cgroups_limit_when_below_the_machines() {
        assert_eq!(cores_of("CGroupMaxCPU\t3.5\nNumberOfCPUCores\t8\n"), Ok(3.5));
        // No limit (0) or a limit above the machine: the machine's.
        assert_eq!(cores_of("CGroupMaxCPU\t0\nNumberOfCPUCores\t8\n"), Ok(8.0));
        assert_eq!(cores_of("NumberOfCPUCores\t8\nCGroupMaxCPU\t64\n"), Ok(8.0));
        assert_eq!(cores_of("CGroupMaxCPU\t4\n"), Ok(4.0));
        assert!(cores_of("").unwrap_err().starts_with("system.asynchronous_metrics has neither"));
    }
}

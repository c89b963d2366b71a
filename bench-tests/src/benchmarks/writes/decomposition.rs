//! Where an INSERT's time went, from the engine's counters over a level (the network-disk
//! source's split of a transaction: compute, page and log I/O, lock waits, the rest): CPU
//! (user and system), writing (`DiskWriteElapsedMicroseconds`), fsync (files and
//! directories), lock waits (the parts lock and the table's read-write lock), throttling
//! (`DelayedInsertsMilliseconds`: the engine slowing INSERTs down for too many parts),
//! waiting for a CPU (`OSCPUWaitMicroseconds`: ready to run, with every core busy), and the
//! rest of the INSERTs' own time. Each is per INSERT, averaged over the level: either the
//! INSERTs' own counters summed from their records (a server's `system.query_log`), or the
//! whole engine's counters' rise over the level divided by the INSERTs it counted (the
//! embedded engine, which keeps no record of a statement). In the engine's counters, work
//! beside the INSERTs (background merges above all) counts in CPU and writing too, so the
//! parts can add up to more than the INSERTs' time; the rest is then unknown, with why,
//! never negative.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::numbers::ratio;
use crate::stats::EngineEvents;

/// INSERTs the engine ran.
pub const INSERT_QUERIES: &str = "InsertQuery";
/// Their own time, summed.
pub const INSERT_TIME: &str = "InsertQueryTimeMicroseconds";
pub const USER_TIME: &str = "UserTimeMicroseconds";
pub const SYSTEM_TIME: &str = "SystemTimeMicroseconds";
pub const DISK_WRITE: &str = "DiskWriteElapsedMicroseconds";
pub const FILE_SYNCS: &str = "FileSync";
pub const FILE_SYNC_TIME: &str = "FileSyncElapsedMicroseconds";
pub const DIRECTORY_SYNCS: &str = "DirectorySync";
pub const DIRECTORY_SYNC_TIME: &str = "DirectorySyncElapsedMicroseconds";
pub const PARTS_LOCK_WAIT: &str = "PartsLockWaitMicroseconds";
pub const READERS_WAIT_MS: &str = "RWLockReadersWaitMilliseconds";
pub const WRITERS_WAIT_MS: &str = "RWLockWritersWaitMilliseconds";
pub const DELAYED_INSERTS: &str = "DelayedInserts";
pub const DELAYED_MS: &str = "DelayedInsertsMilliseconds";
pub const INSERTED_ROWS: &str = "InsertedRows";
pub const OS_IO_WAIT: &str = "OSIOWaitMicroseconds";
/// Time the engine's threads were ready to run and waited for a CPU.
pub const OS_CPU_WAIT: &str = "OSCPUWaitMicroseconds";

/// Every counter the split reads.
pub const EVENTS: [&str; 17] = [
    INSERT_QUERIES,
    INSERT_TIME,
    USER_TIME,
    SYSTEM_TIME,
    DISK_WRITE,
    FILE_SYNCS,
    FILE_SYNC_TIME,
    DIRECTORY_SYNCS,
    DIRECTORY_SYNC_TIME,
    PARTS_LOCK_WAIT,
    READERS_WAIT_MS,
    WRITERS_WAIT_MS,
    DELAYED_INSERTS,
    DELAYED_MS,
    INSERTED_ROWS,
    OS_IO_WAIT,
    OS_CPU_WAIT,
];

/// The engine's counters' rise over a level, or why it is unknown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum EventsDelta {
    Known {
        /// Whether the counters are the whole engine's (the embedded engine's
        /// `system.events`, a server's): other work on it meanwhile counts too.
        engine_wide: bool,
        rises: BTreeMap<String, u64>,
    },
    Unknown {
        reason: String,
    },
}

impl EventsDelta {
    /// A round recorded before the INSERTs' own counters were read.
    pub fn not_recorded() -> EventsDelta {
        EventsDelta::Unknown { reason: "not recorded in this bundle".to_string() }
    }
}

/// Which counters a split is of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counted {
    /// The whole engine's over the level (`system.events`): work beside the INSERTs counts.
    #[default]
    EngineCounters,
    /// The INSERTs' own, each from its record (a server's `system.query_log`): a mean of
    /// per-statement figures.
    InsertRecords,
}

/// An INSERT's time split, in microseconds per INSERT; each part unknown when a counter it
/// needs is (the engine lacks it, or the counters could not be read).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Decomposition {
    /// Whose counters it is of.
    #[serde(default)]
    pub counted: Counted,
    /// INSERTs the engine counted over the levels it is of.
    pub inserts: Option<u64>,
    /// The INSERTs' own time (`InsertQueryTimeMicroseconds`).
    pub insert_us: Option<f64>,
    pub cpu_us: Option<f64>,
    pub write_us: Option<f64>,
    pub fsync_us: Option<f64>,
    pub lock_wait_us: Option<f64>,
    pub throttle_us: Option<f64>,
    /// Time the engine's threads were ready to run and waited for a core.
    pub cpu_wait_us: Option<f64>,
    /// `insert_us` less the parts above.
    pub rest_us: Option<f64>,
    /// Fsyncs of files and of directories per INSERT.
    pub file_syncs: Option<f64>,
    pub directory_syncs: Option<f64>,
    /// Time the engine's threads waited on block I/O (`OSIOWaitMicroseconds`), per INSERT.
    pub os_io_wait_us: Option<f64>,
    /// Why a part is unknown, when one is.
    pub unknown: Option<String>,
}

impl Decomposition {
    /// Of counters' rises (one level's, or several summed), read on an engine that has
    /// `events`.
    pub fn of(delta: &EventsDelta, events: &EngineEvents) -> Decomposition {
        let (rises, engine_wide) = match delta {
            EventsDelta::Known { rises, engine_wide } => (rises, *engine_wide),
            EventsDelta::Unknown { reason } => {
                return Decomposition {
                    unknown: Some(format!("the engine's counters are unknown ({reason})")),
                    ..Decomposition::default()
                };
            }
        };
        let mut missing: Vec<&str> = Vec::new();
        // A counter the engine has is 0 when absent from the rises (it did not move).
        let mut count = |name: &'static str| -> Option<f64> {
            match events.has(name) {
                Some(false) => {
                    missing.push(name);
                    None
                }
                _ => Some(rises.get(name).copied().unwrap_or(0) as f64),
            }
        };
        let inserts = count(INSERT_QUERIES);
        let insert_time = count(INSERT_TIME);
        let cpu = sum([count(USER_TIME), count(SYSTEM_TIME)]);
        let write = count(DISK_WRITE);
        let fsync = sum([count(FILE_SYNC_TIME), count(DIRECTORY_SYNC_TIME)]);
        let lock_wait = sum([
            count(PARTS_LOCK_WAIT),
            count(READERS_WAIT_MS).map(|ms| ms * 1e3),
            count(WRITERS_WAIT_MS).map(|ms| ms * 1e3),
        ]);
        let throttle = count(DELAYED_MS).map(|ms| ms * 1e3);
        let cpu_wait = count(OS_CPU_WAIT);
        let (file_syncs, directory_syncs, os_io_wait) = (count(FILE_SYNCS), count(DIRECTORY_SYNCS), count(OS_IO_WAIT));
        let per_insert = |total: Option<f64>| total.zip(inserts).and_then(|(total, inserts)| ratio(total, inserts));
        let mut decomposition = Decomposition {
            counted: if engine_wide { Counted::EngineCounters } else { Counted::InsertRecords },
            inserts: inserts.map(|inserts| inserts as u64),
            insert_us: per_insert(insert_time),
            cpu_us: per_insert(cpu),
            write_us: per_insert(write),
            fsync_us: per_insert(fsync),
            lock_wait_us: per_insert(lock_wait),
            throttle_us: per_insert(throttle),
            cpu_wait_us: per_insert(cpu_wait),
            rest_us: None,
            file_syncs: per_insert(file_syncs),
            directory_syncs: per_insert(directory_syncs),
            os_io_wait_us: per_insert(os_io_wait),
            unknown: None,
        };
        let parts = sum(decomposition.parts().map(|(_, us)| us));
        decomposition.unknown = if !missing.is_empty() {
            Some(format!("the engine has no counter {}", missing.join(", ")))
        } else if inserts == Some(0.0) {
            Some("the engine counted no INSERT".to_string())
        } else {
            match decomposition.insert_us.zip(parts) {
                Some((insert, parts)) if insert >= parts => {
                    decomposition.rest_us = Some(insert - parts);
                    None
                }
                Some((insert, parts)) if engine_wide => Some(format!(
                    "the parts add up to {parts:.0} µs, more than an INSERT's own {insert:.0} µs: work beside the \
                     INSERTs (background merges) counts in them, so the rest is unknown"
                )),
                Some((insert, parts)) => Some(format!(
                    "the parts add up to {parts:.0} µs, more than an INSERT's own {insert:.0} µs: its threads \
                     worked in parallel, so their times overlap and the rest is unknown"
                )),
                None => Some("the engine's counters are unknown".to_string()),
            }
        };
        decomposition
    }
}

impl Decomposition {
    /// The parts the INSERT's time is split into, by the name tables give them (the rest
    /// aside).
    pub fn parts(&self) -> [(&'static str, Option<f64>); 6] {
        [
            ("CPU", self.cpu_us),
            ("write", self.write_us),
            ("fsync", self.fsync_us),
            ("lock waits", self.lock_wait_us),
            ("throttling", self.throttle_us),
            ("CPU wait", self.cpu_wait_us),
        ]
    }

    /// The INSERT's own time, its parts and the rest, as a comparison's table lists them.
    pub fn with_totals(&self) -> Vec<(&'static str, Option<f64>)> {
        let mut rows = vec![("INSERT's own time", self.insert_us)];
        rows.extend(self.parts());
        rows.push(("rest", self.rest_us));
        rows
    }
}

/// The sum of parts, unknown when one is.
fn sum<const N: usize>(parts: [Option<f64>; N]) -> Option<f64> {
    parts.into_iter().sum()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn rises(pairs: &[(&str, u64)]) -> EventsDelta {
        EventsDelta::Known {
            engine_wide: true,
            rises: pairs.iter().map(|(name, value)| (name.to_string(), *value)).collect::<BTreeMap<_, _>>(),
        }
    }

    fn every_event() -> EngineEvents {
        EngineEvents::Known { names: EVENTS.iter().map(|name| name.to_string()).collect() }
    }

    /// Two INSERTs of 6 ms each worked out by hand, with the fsyncs measured for the design
    /// (10 of files and 2 of directories each).
    #[test]
    fn the_split_is_per_insert_and_the_rest_is_what_the_parts_leave() {
        let delta = rises(&[
            (INSERT_QUERIES, 2),
            (INSERT_TIME, 12_000),
            (USER_TIME, 3_000),
            (SYSTEM_TIME, 1_000),
            (DISK_WRITE, 120),
            (FILE_SYNCS, 20),
            (FILE_SYNC_TIME, 5_600),
            (DIRECTORY_SYNCS, 4),
            (DIRECTORY_SYNC_TIME, 900),
            (READERS_WAIT_MS, 1),
            (DELAYED_MS, 0),
        ]);
        let split = Decomposition::of(&delta, &every_event());
        assert_eq!(split.inserts, Some(2));
        assert_eq!(split.insert_us, Some(6_000.0));
        assert_eq!(split.cpu_us, Some(2_000.0));
        assert_eq!(split.write_us, Some(60.0));
        assert_eq!(split.fsync_us, Some(3_250.0));
        // 1 ms of read-lock wait in all, and no parts-lock wait (the counter did not move).
        assert_eq!(split.lock_wait_us, Some(500.0));
        assert_eq!((split.throttle_us, split.cpu_wait_us), (Some(0.0), Some(0.0)));
        assert_eq!(split.rest_us, Some(6_000.0 - 2_000.0 - 60.0 - 3_250.0 - 500.0));
        assert_eq!((split.file_syncs, split.directory_syncs), (Some(10.0), Some(2.0)));
        assert_eq!(split.unknown, None);
    }

    #[test]
    fn what_cannot_be_known_is_unknown_with_why_never_zero_or_negative() {
        // Merges' CPU beside the INSERTs: the parts exceed the INSERTs' own time.
        let busy = rises(&[(INSERT_QUERIES, 1), (INSERT_TIME, 1_000), (USER_TIME, 5_000)]);
        let split = Decomposition::of(&busy, &every_event());
        assert_eq!((split.cpu_us, split.rest_us), (Some(5_000.0), None));
        assert!(split.unknown.unwrap().contains("background merges"));
        // An engine without the fsync counters: fsync and the rest unknown, the others known.
        let older = EngineEvents::Known {
            names: EVENTS.iter().filter(|name| !name.contains("Sync")).map(|name| name.to_string()).collect(),
        };
        let split = Decomposition::of(&rises(&[(INSERT_QUERIES, 1), (INSERT_TIME, 9_000)]), &older);
        assert_eq!((split.fsync_us, split.rest_us, split.insert_us), (None, None, Some(9_000.0)));
        assert!(split.unknown.unwrap().starts_with("the engine has no counter FileSync"));
        // No INSERT counted: nothing per INSERT.
        let split = Decomposition::of(&rises(&[]), &every_event());
        assert_eq!((split.inserts, split.insert_us, split.cpu_us), (Some(0), None, None));
        assert_eq!(split.unknown.as_deref(), Some("the engine counted no INSERT"));
        // Counters not read at all.
        let split = Decomposition::of(&EventsDelta::Unknown { reason: "boom".to_string() }, &every_event());
        assert_eq!(split.inserts, None);
        assert_eq!(split.unknown.as_deref(), Some("the engine's counters are unknown (boom)"));
    }
}

//! What the threads of this process are doing at one moment, from the kernel's own account
//! (`/proc/self/task/<tid>/stat`): how many are running, how many wait on the disk
//! (uninterruptible sleep, state `D`, which is how a thread blocked in a read, write or
//! fsync shows) and how many sleep otherwise. With the engine in this process (the
//! embedded target) these are the engine's threads, the runner's clients among them
//! while they are inside an engine call; sampled through a load level, the share in `D`
//! against those doing anything is the figure a storage comparison reports ("29 of 64
//! workers in I/O wait").
//!
//! Read by hand rather than through `sysinfo`: that crate refreshes whole process
//! entries (name, command line, memory) per thread, where one byte of each thread's
//! `stat` is needed, many times a second.

use std::fs;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// How many of the threads were in each state at one look.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskStates {
    /// `R`: on a CPU or waiting for one.
    pub running: u32,
    /// `D`: uninterruptible sleep, waiting on I/O.
    pub io_wait: u32,
    /// Every other state (sleeping, stopped, idle).
    pub other: u32,
}

impl TaskStates {
    /// Adds one thread whose `stat` state letter is `state`.
    fn count(&mut self, state: char) {
        match state {
            'R' => self.running += 1,
            'D' => self.io_wait += 1,
            _ => self.other += 1,
        }
    }
}

/// The threads of this process at this moment, this thread aside (it is busy reading
/// them). A thread that ends between the listing and the read of its `stat` is skipped.
pub fn own_task_states() -> Result<TaskStates> {
    // SAFETY: gettid takes no arguments and cannot fail.
    let own = unsafe { libc::gettid() }.to_string();
    let mut states = TaskStates::default();
    let tasks = fs::read_dir("/proc/self/task").context("cannot list /proc/self/task")?;
    for task in tasks {
        let Ok(task) = task else { continue };
        if task.file_name().to_str() == Some(own.as_str()) {
            continue;
        }
        let Ok(stat) = fs::read_to_string(task.path().join("stat")) else { continue };
        if let Some(state) = state_of(&stat) {
            states.count(state);
        }
    }
    Ok(states)
}

/// The state letter of a `stat` line: the first field after the command name, which is in
/// parentheses and may itself hold spaces and parentheses (so the last `)` ends it).
fn state_of(stat: &str) -> Option<char> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().next()?.chars().next()
}

/// Looks at the threads of a level, taken one moment at a time: the mean of each state
/// over the looks, and the share of those doing anything that waited on I/O.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadStateMeans {
    /// Looks taken.
    pub samples: u64,
    pub mean_running: Option<f64>,
    pub mean_io_wait: Option<f64>,
    pub mean_other: Option<f64>,
    /// `io_wait / (running + io_wait)` over every look together: of the threads doing
    /// something, the share blocked on the disk. Unknown when no look saw any.
    pub io_wait_share: Option<f64>,
}

impl ThreadStateMeans {
    pub fn of(looks: &[TaskStates]) -> ThreadStateMeans {
        let n = looks.len() as f64;
        let sum = |state: fn(&TaskStates) -> u32| looks.iter().map(|look| f64::from(state(look))).sum::<f64>();
        let (running, io_wait, other) = (sum(|look| look.running), sum(|look| look.io_wait), sum(|look| look.other));
        let mean = |total: f64| crate::numbers::ratio(total, n);
        ThreadStateMeans {
            samples: looks.len() as u64,
            mean_running: mean(running),
            mean_io_wait: mean(io_wait),
            mean_other: mean(other),
            io_wait_share: crate::numbers::ratio(io_wait, running + io_wait),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_the_field_after_the_last_parenthesis() {
        assert_eq!(state_of("123 (clickhouse) S 1 2 3"), Some('S'));
        // A thread name may hold spaces and parentheses of its own.
        assert_eq!(state_of("77 (a) b (c)) D 1 2"), Some('D'));
        assert_eq!(state_of("garbage"), None);
        assert_eq!(state_of("1 (x)"), None);
    }

    #[test]
    fn this_process_has_threads_and_the_means_are_of_the_looks() {
        let states = own_task_states().unwrap();
        // This test's thread is left out; the harness's main thread at least remains.
        assert!(states.running + states.io_wait + states.other >= 1, "{states:?}");
        let looks = [
            TaskStates { running: 2, io_wait: 2, other: 10 },
            TaskStates { running: 1, io_wait: 0, other: 11 },
            TaskStates { running: 1, io_wait: 1, other: 10 },
        ];
        let means = ThreadStateMeans::of(&looks);
        assert_eq!(means.samples, 3);
        assert_eq!((means.mean_running, means.mean_io_wait), (Some(4.0 / 3.0), Some(1.0)));
        // 3 in D of the 7 thread-looks doing something.
        assert_eq!(means.io_wait_share, Some(3.0 / 7.0));
        let idle = ThreadStateMeans::of(&[TaskStates { running: 0, io_wait: 0, other: 5 }]);
        assert_eq!(idle.io_wait_share, None);
        assert_eq!(ThreadStateMeans::of(&[]), ThreadStateMeans::default());
    }
}

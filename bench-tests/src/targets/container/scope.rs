//! Which processes share one container, and whose end ends its use: a process told apart
//! from a later one of the same pid, a nextest run's scope or one process's own, the
//! labels that name them, and whether a container's owner on this machine has ended.

use std::collections::HashMap;

use anyhow::{Context, Result, anyhow, bail};
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

use super::{NAME_PREFIX, NEXTEST_RUN_ID_ENV, OWNER_HOST_LABEL, OWNER_PID_LABEL, OWNER_STARTED_LABEL, SCOPE_LABEL};

/// A process, told apart from a later one given the same pid by its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// Seconds since the Unix epoch, as the OS reports it.
    pub started: u64,
}

impl ProcessIdentity {
    /// This process.
    pub fn current() -> Result<ProcessIdentity> {
        let pid = sysinfo::get_current_pid().map_err(|error| anyhow!("cannot read this process's id: {error}"))?;
        Ok(process_info(pid).with_context(|| format!("cannot read process {pid}"))?.0)
    }

    /// This process's parent: under nextest, the test runner.
    pub fn parent() -> Result<ProcessIdentity> {
        let pid = sysinfo::get_current_pid().map_err(|error| anyhow!("cannot read this process's id: {error}"))?;
        let parent = process_info(pid).and_then(|(_, parent)| parent).context("cannot read this process's parent")?;
        Ok(process_info(parent).with_context(|| format!("cannot read process {parent}, this process's parent"))?.0)
    }

    /// Whether this process still runs: its pid belongs to a process started at the same
    /// time (whole seconds, so a second apart at most for one process).
    pub fn is_running(self) -> bool {
        process_info(Pid::from_u32(self.pid)).is_some_and(|(running, _)| running.started.abs_diff(self.started) <= 1)
    }
}

/// Whether any process on this machine has `pid` (a later one given it counts too, so
/// the answer errs toward "runs"), for records that keep a pid alone.
pub fn pid_runs(pid: u32) -> bool {
    process_info(Pid::from_u32(pid)).is_some()
}

/// A process's identity and its parent's pid, if it runs.
fn process_info(pid: Pid) -> Option<(ProcessIdentity, Option<Pid>)> {
    let mut system = System::new();
    system.refresh_processes_specifics(ProcessesToUpdate::Some(&[pid]), true, ProcessRefreshKind::nothing());
    let process = system.process(pid)?;
    Some((ProcessIdentity { pid: pid.as_u32(), started: process.start_time() }, process.parent()))
}

/// This machine's name, for the owner's host label (empty when unknown).
#[cfg(feature = "container")]
pub(super) fn host_name() -> String {
    System::host_name().unwrap_or_default()
}

/// The nextest run this process is a test of (`NEXTEST_RUN_ID`), `None` outside nextest.
/// The one reading of the variable: the container's scope and the names of scenario
/// databases on shared servers both follow it.
pub fn nextest_run_id() -> Result<Option<uuid::Uuid>> {
    match std::env::var(NEXTEST_RUN_ID_ENV) {
        Ok(run_id) => parse_run_id(&run_id).map(Some),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => bail!("{NEXTEST_RUN_ID_ENV} is not valid UTF-8"),
    }
}

/// A run id, checked, since it becomes part of container and database names.
fn parse_run_id(run_id: &str) -> Result<uuid::Uuid> {
    uuid::Uuid::parse_str(run_id.trim())
        .map_err(|_| anyhow!("{NEXTEST_RUN_ID_ENV}={run_id:?} is not a UUID (nextest sets one per run)"))
}

/// Which processes share one container, and whose end ends its use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerScope {
    /// `run-<nextest run id>` or `process-<pid>-<start>`: the end of the container's name
    /// and the value of its [`SCOPE_LABEL`].
    pub key: String,
    /// The process whose end ends the container's use: the test runner, or this process.
    pub owner: ProcessIdentity,
    /// Whether other processes join it (one nextest run's), so that no process that uses
    /// it removes it on closing.
    pub shared: bool,
}

impl ContainerScope {
    /// One nextest run's when `NEXTEST_RUN_ID` is set, else this process's own.
    pub fn from_env() -> Result<ContainerScope> {
        match nextest_run_id()? {
            Some(run_id) => Ok(ContainerScope::of_run(run_id, ProcessIdentity::parent()?)),
            None => Ok(ContainerScope::process(ProcessIdentity::current()?)),
        }
    }

    /// The container every test process of one nextest run shares, owned by the runner.
    pub fn nextest_run(run_id: &str, runner: ProcessIdentity) -> Result<ContainerScope> {
        Ok(ContainerScope::of_run(parse_run_id(run_id)?, runner))
    }

    fn of_run(run_id: uuid::Uuid, runner: ProcessIdentity) -> ContainerScope {
        ContainerScope { key: format!("run-{}", run_id.hyphenated()), owner: runner, shared: true }
    }

    /// A container of this process's own.
    pub fn process(process: ProcessIdentity) -> ContainerScope {
        ContainerScope { key: format!("process-{}-{}", process.pid, process.started), owner: process, shared: false }
    }

    /// `chbench-clickhouse-<key>`: how processes of the scope find the container.
    pub fn container_name(&self) -> String {
        format!("{NAME_PREFIX}{}", self.key)
    }

    /// The scope and its owner, on `host`.
    pub fn labels(&self, host: &str) -> HashMap<String, String> {
        HashMap::from([
            (SCOPE_LABEL.to_string(), self.key.clone()),
            (OWNER_PID_LABEL.to_string(), self.owner.pid.to_string()),
            (OWNER_STARTED_LABEL.to_string(), self.owner.started.to_string()),
            (OWNER_HOST_LABEL.to_string(), host.to_string()),
        ])
    }
}

/// Whether a container with these labels is abandoned: its owner ran on `host` (this
/// machine) and has ended, as `is_running` says. A container whose labels do not name an
/// owner on this machine is never judged abandoned: it is not ours to remove.
pub fn is_abandoned(
    labels: &HashMap<String, String>,
    host: &str,
    is_running: impl Fn(ProcessIdentity) -> bool,
) -> bool {
    let label = |name: &str| labels.get(name).map(String::as_str);
    let owner = || {
        Some(ProcessIdentity {
            pid: label(OWNER_PID_LABEL)?.parse().ok()?,
            started: label(OWNER_STARTED_LABEL)?.parse().ok()?,
        })
    };
    let on_this_host = !host.is_empty() && label(OWNER_HOST_LABEL) == Some(host);
    label(SCOPE_LABEL).is_some() && on_this_host && owner().is_some_and(|owner| !is_running(owner))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN_ID: &str = "1f79aa0d-4ec8-4a5c-aa83-5e8dc2f36573";
    const RUNNER: ProcessIdentity = ProcessIdentity { pid: 4242, started: 1_760_000_000 };

    #[test]
    fn a_nextest_run_shares_one_container_named_after_the_run_and_owned_by_the_runner() {
        let first = ContainerScope::nextest_run(RUN_ID, RUNNER).unwrap();
        let second = ContainerScope::nextest_run(&RUN_ID.to_uppercase(), RUNNER).unwrap();
        assert_eq!(first, second, "every process of the run finds the same container");
        assert_eq!(first.container_name(), format!("chbench-clickhouse-run-{RUN_ID}"));
        assert!(first.shared && first.owner == RUNNER);
        let other_run = ContainerScope::nextest_run("cc815783-2cb1-4003-9d2a-f931bf775280", RUNNER).unwrap();
        assert_ne!(first.container_name(), other_run.container_name());
        for bad in ["", "run; rm -rf /", "../1f79aa0d"] {
            let error = ContainerScope::nextest_run(bad, RUNNER).unwrap_err().to_string();
            assert!(error.contains("NEXTEST_RUN_ID") && error.contains("not a UUID"), "{error}");
        }
    }

    #[test]
    fn outside_nextest_a_process_owns_its_container() {
        let this = ProcessIdentity::current().unwrap();
        assert_eq!(this.pid, std::process::id());
        assert!(this.is_running());
        let scope = ContainerScope::process(this);
        assert_eq!(scope.container_name(), format!("chbench-clickhouse-process-{}-{}", this.pid, this.started));
        assert!(!scope.shared && scope.owner == this);
        assert_ne!(ProcessIdentity::parent().unwrap(), this);
    }

    #[test]
    fn the_scope_follows_nextests_run_id() {
        let scope = ContainerScope::from_env().unwrap();
        match std::env::var(NEXTEST_RUN_ID_ENV) {
            // This test's process is one of the run's: the runner is its parent.
            Ok(run_id) => {
                assert_eq!(scope, ContainerScope::nextest_run(&run_id, ProcessIdentity::parent().unwrap()).unwrap())
            }
            Err(_) => assert_eq!(scope, ContainerScope::process(ProcessIdentity::current().unwrap())),
        }
    }

    #[test]
    fn labels_name_the_scope_and_its_owner() {
        let scope = ContainerScope::nextest_run(RUN_ID, RUNNER).unwrap();
        let labels = scope.labels("laptop");
        assert_eq!(labels[SCOPE_LABEL], format!("run-{RUN_ID}"));
        assert_eq!(labels[OWNER_PID_LABEL], "4242");
        assert_eq!(labels[OWNER_STARTED_LABEL], "1760000000");
        assert_eq!(labels[OWNER_HOST_LABEL], "laptop");
        assert_eq!(scope.labels("laptop"), labels, "every process of the run asks for the same labels");
    }

    #[test]
    fn a_container_is_abandoned_only_when_its_owner_on_this_machine_has_ended() {
        let labels = ContainerScope::nextest_run(RUN_ID, RUNNER).unwrap().labels("laptop");
        assert!(!is_abandoned(&labels, "laptop", |_| true), "its runner still runs");
        assert!(is_abandoned(&labels, "laptop", |_| false), "its runner has ended");
        assert!(!is_abandoned(&labels, "ci-box", |_| false), "owned on another machine sharing the daemon");
        assert!(!is_abandoned(&labels, "", |_| false), "this machine's name is unknown");
        let mut no_owner = labels.clone();
        no_owner.remove(OWNER_STARTED_LABEL);
        assert!(!is_abandoned(&no_owner, "laptop", |_| false), "labels that name no owner");
        let mut not_ours = labels.clone();
        not_ours.remove(SCOPE_LABEL);
        assert!(!is_abandoned(&not_ours, "laptop", |_| false), "not a chbench container");
        // The decision asks about the owner the labels name.
        assert!(is_abandoned(&labels, "laptop", |owner| owner != RUNNER));
    }

    #[test]
    fn a_later_process_with_the_owners_pid_is_not_the_owner() {
        let this = ProcessIdentity::current().unwrap();
        assert!(this.is_running());
        assert!(!ProcessIdentity { started: this.started - 3600, ..this }.is_running());
        assert!(!ProcessIdentity { pid: u32::MAX - 1, started: this.started }.is_running());
        assert!(pid_runs(this.pid) && !pid_runs(u32::MAX - 1));
    }
}

//! The databases a target's scenarios work in: named after the scenario, or on a shared
//! server after the run and process too ([`DatabaseOwner`]), and those a killed process
//! left behind, dropped when a target opens.

use anyhow::Result;

use super::{DatasetProvision, Target, container};

/// The database a scenario works in: `scenario` where the engine's storage is this
/// process's own (datasets as hard-linked copies), `<scenario>__run<run>_p<pid>` on a
/// server that processes share (datasets as shared databases), `owner` saying which run
/// and process (see [`DatabaseOwner`]).
pub fn scenario_database_name(scenario: &str, datasets: DatasetProvision, owner: &DatabaseOwner) -> String {
    match datasets {
        DatasetProvision::HardLinkedCopy => scenario.to_string(),
        DatasetProvision::SharedDatabase => format!("{scenario}{}", owner.suffix()),
    }
}

/// Whose a scenario database on a shared server is: the end of its name,
/// `__run<run>_p<pid>`. The run is the first [`RUN_DIGITS`] hex digits of nextest's run
/// id (every test process of a `cargo nextest run` has the same; 48 random bits, so two
/// runs on one server do not meet), or outside nextest random digits of the process's
/// own. A run's test processes all run on its runner's machine, so within the run the pid
/// says whether the owner still runs; across runs it says nothing (another machine may
/// share a `url` or `eks` server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseOwner {
    /// [`RUN_DIGITS`] lowercase hex digits.
    pub run: String,
    pub pid: u32,
}

/// How many hex digits of a run id a scenario database's name carries.
pub const RUN_DIGITS: usize = 12;
const RUN_MARK: &str = "__run";

impl DatabaseOwner {
    /// This process: its nextest run's and its pid, the same for the whole process.
    pub fn current() -> Result<DatabaseOwner> {
        static OWN_RUN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        let run = match container::nextest_run_id()? {
            Some(run_id) => run_id.simple().to_string()[..RUN_DIGITS].to_string(),
            // A run of its own: no other process shares it.
            None => OWN_RUN.get_or_init(|| uuid::Uuid::new_v4().simple().to_string()[..RUN_DIGITS].to_string()).clone(),
        };
        Ok(DatabaseOwner { run, pid: std::process::id() })
    }

    /// `__run<run>_p<pid>`, what scenario databases' names end with.
    fn suffix(&self) -> String {
        format!("{RUN_MARK}{}_p{}", self.run, self.pid)
    }

    /// The owner a scenario database's name names; `None` for a name not of the pattern
    /// (or not an identifier, which no scenario database is).
    pub fn of_database(name: &str) -> Option<DatabaseOwner> {
        let at = name.rfind(RUN_MARK).filter(|&at| at > 0 && crate::sql::is_identifier(name))?;
        let (run, pid) = name[at + RUN_MARK.len()..].split_once("_p")?;
        let is_hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
        if run.len() != RUN_DIGITS || !run.chars().all(is_hex) || pid.starts_with('0') {
            return None;
        }
        // Digits alone: `parse` would take a sign.
        let pid = pid.chars().all(|c| c.is_ascii_digit()).then(|| pid.parse().ok()).flatten()?;
        Some(DatabaseOwner { run: run.to_string(), pid })
    }
}

/// Whether the database `name` is a scenario database left by a process of `current`'s
/// run that has ended (a killed test), which no process can still use: of the pattern, of
/// this run, not this process, and its pid running nowhere on this machine
/// (`pid_runs`). Another run's is never judged left behind: its processes may run on
/// another machine.
pub fn is_left_behind(name: &str, current: &DatabaseOwner, pid_runs: impl Fn(u32) -> bool) -> bool {
    DatabaseOwner::of_database(name)
        .is_some_and(|owner| owner.run == current.run && owner.pid != current.pid && !pid_runs(owner.pid))
}

/// Drops the scenario databases [`is_left_behind`] judges left behind on this target's
/// server, once per process. Best effort: what it cannot list or drop is said on stderr
/// and left for a later open.
pub(super) fn drop_left_behind_databases(target: &mut Target) {
    static SWEPT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if SWEPT.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let swept = DatabaseOwner::current().and_then(|current| {
        let names =
            target.query_text(&format!("SELECT name FROM system.databases WHERE position(name, '{RUN_MARK}') > 0"))?;
        for name in names.lines().filter(|name| is_left_behind(name, &current, container::pid_runs)) {
            target.execute(&format!("DROP DATABASE IF EXISTS {name} SYNC"))?;
            crate::say!("chbench: dropped database {name}: the test process of this run that made it has ended");
        }
        Ok(())
    });
    if let Err(error) = swept {
        crate::say!("chbench: cannot drop scenario databases left by ended processes: {error:#}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target_info::TargetKind;
    use crate::targets::spec;

    #[test]
    fn scenario_databases_are_this_processs_own_on_a_shared_server() {
        let owner = DatabaseOwner::current().unwrap();
        assert_eq!(owner, DatabaseOwner::current().unwrap(), "one owner for the whole process");
        assert_eq!(owner.pid, std::process::id());
        assert_eq!(owner.run.len(), RUN_DIGITS);
        match container::nextest_run_id().unwrap() {
            // Every test process of this run names the same run.
            Some(run_id) => assert!(run_id.simple().to_string().starts_with(&owner.run), "{owner:?}"),
            None => assert!(owner.run.chars().all(|c| c.is_ascii_hexdigit()), "{owner:?}"),
        }
        // The engine's storage is this process's own: the scenario's name as it is.
        assert_eq!(
            scenario_database_name("measure_agreement", DatasetProvision::HardLinkedCopy, &owner),
            "measure_agreement"
        );
        // Two processes running one scenario on one server: two databases.
        let here = scenario_database_name("measure_agreement", DatasetProvision::SharedDatabase, &owner);
        let other = DatabaseOwner { run: "1f79aa0d4ec8".to_string(), pid: 7 };
        let there = scenario_database_name("measure_agreement", DatasetProvision::SharedDatabase, &other);
        assert_eq!(here, format!("measure_agreement__run{}_p{}", owner.run, owner.pid));
        assert_eq!(there, "measure_agreement__run1f79aa0d4ec8_p7");
        assert_ne!(here, there);
        assert!(crate::sql::is_identifier(&here), "{here}");
        // The name says whose it is.
        assert_eq!(DatabaseOwner::of_database(&here), Some(owner));
        assert_eq!(DatabaseOwner::of_database(&there), Some(other.clone()));
        assert_eq!(DatabaseOwner::of_database("a__run_p__run1f79aa0d4ec8_p7"), Some(other));
        // Every kind of server target shares its datasets, so every one gets the suffix.
        for kind in [TargetKind::Url, TargetKind::Container, TargetKind::Eks] {
            assert_eq!(spec(kind).capabilities.datasets, DatasetProvision::SharedDatabase);
        }
    }

    #[test]
    fn only_names_of_the_pattern_name_an_owner() {
        for name in [
            "measure_agreement",
            "measure_agreement_p7_0badcafe",
            "__run1f79aa0d4ec8_p7",
            "logs__run1f79aa0d4ec8_p",
            "logs__run1f79aa0d4ec8_p07",
            "logs__run1f79aa0d4ec8_p+7",
            "logs__run1f79aa0d4ec8_p7x",
            "logs__run1f79aa0d4ec_p7",
            "logs__run1F79AA0D4EC8_p7",
            "logs__run1f79aa0d4ec8_p99999999999",
            "logs-x__run1f79aa0d4ec8_p7",
            "logs__run1f79aa0d4ec8_p7__run",
        ] {
            assert_eq!(DatabaseOwner::of_database(name), None, "{name}");
        }
    }

    #[test]
    fn only_an_ended_process_of_this_run_leaves_a_database_behind() {
        let current = DatabaseOwner { run: "1f79aa0d4ec8".to_string(), pid: 100 };
        let ended = "logs__run1f79aa0d4ec8_p7";
        assert!(is_left_behind(ended, &current, |_| false), "an ended test process of this run");
        assert!(!is_left_behind(ended, &current, |_| true), "its pid still runs (maybe a later process)");
        assert!(!is_left_behind("logs__run1f79aa0d4ec8_p100", &current, |_| false), "this process's own");
        // Another run's process may run on another machine sharing the server.
        assert!(!is_left_behind("logs__runcc815783d2cb_p7", &current, |_| false), "another run's");
        assert!(!is_left_behind("logs_p7_0badcafe", &current, |_| false), "not of the pattern");
        assert!(!is_left_behind("logs", &current, |_| false), "a dataset or a user's database");
        // The decision asks about the pid the name holds.
        assert!(is_left_behind(ended, &current, |pid| pid != 7));
    }
}

//! A volume's throttle: a cgroup of this process's own (`chbench-<pid>`) holding its I/O
//! on the volume's device to a profile's limits, through cgroup v2's `io.max` where the io
//! controller is there (GitHub's Ubuntu runners), else cgroup v1's `blkio.throttle.*`
//! files. The process moves in (all its threads, and the processes it starts later), and
//! back to the cgroup it came from before the cgroup is removed.
//!
//! Under cgroup v1 the kernel charges a cgroup for its reads, its direct I/O and the writes
//! an fsync forces, not for background writeback of the page cache: buffered writes that
//! no fsync waits for are not held to the write limits (docs/storage-profiles.md).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::Limits;

/// Where the cgroup file systems are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// The cgroup controller that throttles block I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Controller {
    /// cgroup v2's io controller, the unified hierarchy at `root`.
    V2 { root: PathBuf },
    /// cgroup v1's blkio controller, its hierarchy at `root`.
    V1 { root: PathBuf },
}

/// The controller this machine has, or one line saying it has none.
pub fn detect() -> Result<Controller> {
    detect_in(Path::new(CGROUP_ROOT))
}

fn detect_in(base: &Path) -> Result<Controller> {
    let v2_controllers = std::fs::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
    if v2_controllers.split_whitespace().any(|controller| controller == "io") {
        // The io controller must be enabled for the root's children: enabling it is the
        // system's (systemd's) choice, not a benchmark's, which could not undo it safely.
        let subtree = std::fs::read_to_string(base.join("cgroup.subtree_control")).unwrap_or_default();
        if !subtree.split_whitespace().any(|controller| controller == "io") {
            bail!(
                "cgroup v2's io controller is not enabled for {}'s children (its cgroup.subtree_control): enable it \
                 (echo +io > {}/cgroup.subtree_control)",
                base.display(),
                base.display()
            );
        }
        return Ok(Controller::V2 { root: base.to_path_buf() });
    }
    let blkio = base.join("blkio");
    if blkio.join("blkio.throttle.read_iops_device").is_file() {
        return Ok(Controller::V1 { root: blkio });
    }
    bail!("a storage profile needs cgroup v2's io controller or cgroup v1's blkio, and {} has neither", base.display())
}

impl Controller {
    fn root(&self) -> &Path {
        match self {
            Controller::V2 { root } | Controller::V1 { root } => root,
        }
    }

    /// Process `pid`'s cgroup.
    fn cgroup_of(&self, pid: u32) -> PathBuf {
        self.root().join(format!("chbench-{pid}"))
    }
}

/// The files that hold device `major:minor` to `limits`, and what each gets. A limit the
/// profile does not set is left as it is (v1) or `max` (v2).
pub fn limit_files(
    controller: &Controller,
    (major, minor): (u32, u32),
    limits: &Limits,
) -> Vec<(&'static str, String)> {
    match controller {
        Controller::V1 { .. } => [
            ("blkio.throttle.read_iops_device", limits.read_iops),
            ("blkio.throttle.write_iops_device", limits.write_iops),
            ("blkio.throttle.read_bps_device", limits.read_bytes_per_second),
            ("blkio.throttle.write_bps_device", limits.write_bytes_per_second),
        ]
        .into_iter()
        .filter_map(|(file, limit)| Some((file, format!("{major}:{minor} {}", limit?))))
        .collect(),
        Controller::V2 { .. } => {
            let value = |limit: Option<u64>| limit.map_or("max".to_string(), |limit| limit.to_string());
            vec![(
                "io.max",
                format!(
                    "{major}:{minor} riops={} wiops={} rbps={} wbps={}",
                    value(limits.read_iops),
                    value(limits.write_iops),
                    value(limits.read_bytes_per_second),
                    value(limits.write_bytes_per_second)
                ),
            )]
        }
    }
}

/// The cgroup a process is in under `controller`, from its `/proc/<pid>/cgroup` text: the
/// v2 line (`0::/path`) or the v1 line naming blkio (`7:blkio:/path`).
fn own_cgroup(controller: &Controller, proc_cgroup: &str) -> Option<String> {
    proc_cgroup.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let ours = match controller {
            Controller::V2 { .. } => controllers.is_empty(),
            Controller::V1 { .. } => controllers.split(',').any(|name| name == "blkio"),
        };
        ours.then(|| path.to_string())
    })
}

/// This process in its own throttled cgroup, until [`Throttle::remove`].
#[derive(Debug)]
pub struct Throttle {
    controller: Controller,
    dir: PathBuf,
    /// The `cgroup.procs` of the cgroup the process came from.
    back_to: PathBuf,
    pid: u32,
    /// What each limit file was given ([`limit_files`]).
    written: Vec<(&'static str, String)>,
}

/// Puts process `pid` in a cgroup of its own that holds device `device` to `limits`.
pub fn apply(controller: &Controller, pid: u32, device: (u32, u32), limits: &Limits) -> Result<Throttle> {
    let proc_cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .with_context(|| format!("cannot read the cgroups of process {pid}"))?;
    let Some(own) = own_cgroup(controller, &proc_cgroup) else {
        bail!("process {pid} is in no cgroup of {} ({proc_cgroup:?})", controller.root().display());
    };
    let back_to = controller.root().join(own.trim_start_matches('/')).join("cgroup.procs");
    let dir = controller.cgroup_of(pid);
    std::fs::create_dir(&dir).with_context(|| format!("cannot create the cgroup {}", dir.display()))?;
    let written = limit_files(controller, device, limits);
    let throttle = Throttle { controller: controller.clone(), dir, back_to, pid, written };
    let limited = (|| -> Result<()> {
        for (file, value) in &throttle.written {
            let path = throttle.dir.join(file);
            std::fs::write(&path, value).with_context(|| format!("cannot write {value:?} to {}", path.display()))?;
        }
        let procs = throttle.dir.join("cgroup.procs");
        std::fs::write(&procs, pid.to_string())
            .with_context(|| format!("cannot move process {pid} into {}", procs.display()))
    })();
    match limited {
        Ok(()) => Ok(throttle),
        Err(error) => {
            let _ = throttle.remove();
            Err(error)
        }
    }
}

impl Throttle {
    /// `cgroup v1 blkio /sys/fs/cgroup/blkio/chbench-1234`.
    pub fn describe(&self) -> String {
        let controller = match self.controller {
            Controller::V2 { .. } => "cgroup v2 io",
            Controller::V1 { .. } => "cgroup v1 blkio",
        };
        format!("{controller} {}", self.dir.display())
    }

    /// Whether the limits are still in force: this process still in the cgroup, and each
    /// limit file still holding what it was given. Something else (systemd reloading a
    /// unit, another tool) may rewrite a cgroup's files or move a process while a run
    /// lasts; the run would then have measured the machine's disk. One line saying what
    /// changed.
    pub fn check_in_force(&self) -> Result<()> {
        let proc_cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", self.pid))
            .with_context(|| format!("cannot read the cgroups of process {}", self.pid))?;
        let expected = format!("/chbench-{}", self.pid);
        if own_cgroup(&self.controller, &proc_cgroup).as_deref() != Some(expected.as_str()) {
            bail!("process {} was moved out of {} while the run lasted", self.pid, self.dir.display());
        }
        for (file, value) in &self.written {
            let path = self.dir.join(file);
            let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            if !holds(&text, value) {
                bail!("{} holds {:?}, not the {value:?} it was given", path.display(), text.trim());
            }
        }
        Ok(())
    }

    /// Ends every other process in the cgroup (SIGKILL), and waits up to 2 s for them to
    /// be gone: what fio leaves when it is stopped, since its job processes are sessions of
    /// their own (`setsid`), out of reach of a signal to its process group. Called once fio
    /// has ended or been stopped, when nothing else of the run is in the cgroup yet.
    pub fn end_other_processes(&self) {
        let others = || processes_in(&self.dir).into_iter().filter(|pid| *pid != self.pid).collect::<Vec<_>>();
        kill(&others());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while !others().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The process back where it came from (or to the root, when that cgroup is gone),
    /// then the cgroup removed (it must be empty).
    pub fn remove(&self) -> Result<()> {
        let moved = std::fs::write(&self.back_to, self.pid.to_string())
            .or_else(|_| std::fs::write(self.controller.root().join("cgroup.procs"), self.pid.to_string()))
            .with_context(|| format!("cannot move process {} back to {}", self.pid, self.back_to.display()));
        let removed = super::gone(&self.dir, std::fs::remove_dir(&self.dir));
        moved?;
        removed.context("cannot remove the cgroup")
    }
}

/// Whether a limit file's text still holds `value`, what it was given: the device's line
/// with the same limits, in any order (cgroup v2 writes `io.max` back in its own order and
/// leaves out the limits that are `max`).
fn holds(text: &str, value: &str) -> bool {
    let limits = |line: &str| -> Option<(String, Vec<String>)> {
        let mut fields = line.split_whitespace();
        let device = fields.next()?.to_string();
        let mut limits: Vec<String> = fields.filter(|field| !field.ends_with("=max")).map(str::to_string).collect();
        limits.sort();
        Some((device, limits))
    };
    let Some((device, given)) = limits(value) else { return false };
    text.lines().filter_map(limits).any(|(found_device, found)| found_device == device && found == given)
}

/// Removes the cgroups of runs that are gone. A cgroup is `chbench-<pid>`, `<pid>` as its
/// run saw itself, which may be another pid namespace's: a pid this process cannot see
/// proves nothing. So a cgroup is removed only when it is empty (the kernel refuses
/// otherwise), and what is in one is killed only when every process in it is fio (the job
/// processes a SIGKILLed run's fio left): a live run is always in its own cgroup, and it
/// is not fio. A cgroup whose pid is alive here is left alone (a new run's, before it
/// moves in).
pub fn remove_stale(controller: &Controller) {
    let Ok(entries) = std::fs::read_dir(controller.root()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) = name.strip_prefix("chbench-").and_then(|pid| pid.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() || Path::new("/proc").join(pid.to_string()).exists() {
            continue;
        }
        let left = processes_in(&entry.path());
        let only_fio = !left.is_empty() && left.iter().all(|process| is_fio(*process));
        if only_fio {
            kill(&left);
        }
        // A killed process leaves its cgroup once the kernel has reaped it.
        for _ in 0..if only_fio { 50 } else { 1 } {
            if std::fs::remove_dir(entry.path()).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// The processes in the cgroup at `dir` (its `cgroup.procs`, as this process sees them).
fn processes_in(dir: &Path) -> Vec<u32> {
    let listed = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    listed.lines().filter_map(|line| line.trim().parse().ok()).collect()
}

/// SIGKILL to each of `processes`; best effort, as one may have just ended.
fn kill(processes: &[u32]) {
    for process in processes.iter().filter_map(|pid| rustix::process::Pid::from_raw(i32::try_from(*pid).ok()?)) {
        let _ = rustix::process::kill_process(process, rustix::process::Signal::KILL);
    }
}

/// Whether process `pid` (as this process sees it) is fio: its command name. A process
/// this process cannot see is not.
fn is_fio(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim() == "fio")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_file_holds_its_value_in_the_kernels_order_and_not_another() {
        assert!(holds("7:0 3000\n", "7:0 3000"));
        assert!(holds("8:0 100\n7:0 3000\n", "7:0 3000"));
        assert!(!holds("7:0 2000\n", "7:0 3000"));
        assert!(!holds("", "7:0 3000"));
        let written = "7:0 riops=3000 wiops=max rbps=131072000 wbps=max";
        assert!(holds("7:0 rbps=131072000 riops=3000\n", written));
        assert!(!holds("7:0 rbps=131072000\n", written));
        assert!(!holds("7:1 rbps=131072000 riops=3000\n", written));
    }

    fn limits() -> Limits {
        Limits {
            name: "custom".to_string(),
            read_iops: Some(3_000),
            write_iops: None,
            read_bytes_per_second: Some(131_072_000),
            write_bytes_per_second: Some(1_048_576),
        }
    }

    #[test]
    fn the_limits_are_written_as_each_cgroup_version_takes_them() {
        let v1 = Controller::V1 { root: PathBuf::from("/sys/fs/cgroup/blkio") };
        assert_eq!(
            limit_files(&v1, (7, 3), &limits()),
            [
                ("blkio.throttle.read_iops_device", "7:3 3000".to_string()),
                ("blkio.throttle.read_bps_device", "7:3 131072000".to_string()),
                ("blkio.throttle.write_bps_device", "7:3 1048576".to_string()),
            ]
        );
        let v2 = Controller::V2 { root: PathBuf::from("/sys/fs/cgroup") };
        assert_eq!(
            limit_files(&v2, (7, 3), &limits()),
            [("io.max", "7:3 riops=3000 wiops=max rbps=131072000 wbps=1048576".to_string())]
        );
        assert_eq!(v2.cgroup_of(42), PathBuf::from("/sys/fs/cgroup/chbench-42"));
    }

    #[test]
    fn a_process_cgroup_is_read_from_its_proc_file_for_the_controller() {
        let hybrid = "9:name=systemd:/\n7:blkio:/runner\n4:memory:/x\n0::/user.slice/job\n";
        let v1 = Controller::V1 { root: PathBuf::from("/sys/fs/cgroup/blkio") };
        let v2 = Controller::V2 { root: PathBuf::from("/sys/fs/cgroup") };
        assert_eq!(own_cgroup(&v1, hybrid).as_deref(), Some("/runner"));
        assert_eq!(own_cgroup(&v2, hybrid).as_deref(), Some("/user.slice/job"));
        assert_eq!(own_cgroup(&v1, "3:cpu,blkio:/a\n").as_deref(), Some("/a"));
        assert_eq!(own_cgroup(&v1, "0::/only-v2\n"), None);
    }

    #[test]
    fn the_controller_is_v2_io_where_enabled_else_v1_blkio_else_one_line() {
        let base = tempfile::tempdir().unwrap();
        let error = detect_in(base.path()).unwrap_err().to_string();
        assert!(error.contains("needs cgroup v2's io controller or cgroup v1's blkio"), "{error}");
        std::fs::create_dir(base.path().join("blkio")).unwrap();
        std::fs::write(base.path().join("blkio/blkio.throttle.read_iops_device"), "").unwrap();
        assert_eq!(detect_in(base.path()).unwrap(), Controller::V1 { root: base.path().join("blkio") });
        // A unified hierarchy without io (as mounted beside v1 here) is not enough...
        std::fs::write(base.path().join("cgroup.controllers"), "cpu memory pids\n").unwrap();
        assert!(matches!(detect_in(base.path()).unwrap(), Controller::V1 { .. }));
        // ...one with it wins, once enabled for the root's children.
        std::fs::write(base.path().join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
        let error = detect_in(base.path()).unwrap_err().to_string();
        assert!(error.contains("io controller is not enabled for") && error.contains("echo +io >"), "{error}");
        std::fs::write(base.path().join("cgroup.subtree_control"), "cpu io memory\n").unwrap();
        assert_eq!(detect_in(base.path()).unwrap(), Controller::V2 { root: base.path().to_path_buf() });
    }
}

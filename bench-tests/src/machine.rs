//! The machine a run measures on, and whether it was quiet enough for the run's timings
//! to mean what they say.
//!
//! A run records the CPU model, cores and memory, the load average at its start and end,
//! the other processes of this tool that ran meanwhile (this build's `xtask` or test
//! binaries, told by their executable's path: a test suite beside a benchmark doubled its
//! scan times), and the CPU that other processes used during the run. A thread looks for
//! other processes every half second, since most test processes start and end between
//! two phases. The machine counts as not quiet when another
//! process of this tool ran, or when other processes used more than
//! [`QUIET_OTHERS_CPU_CORES`] on average. The load average is recorded but not judged:
//! it remembers the last minutes, so it is high right after `cargo` built the tool.
//!
//! Other processes' CPU is the machine's busy time less this process's own: known only
//! when the engine runs in this process (the embedded target). A server's work would
//! otherwise count as noise, so for server targets it is left unknown, with the reason.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sysinfo::{
    CpuRefreshKind, MemoryRefreshKind, Pid, ProcessRefreshKind, ProcessesToUpdate, RefreshKind, System, UpdateKind,
};

use crate::numbers::known;

/// Other processes may use this much CPU, in cores on average over the run, before the
/// machine counts as busy: background daemons use a few hundredths of a core; a build
/// or a test suite uses one or more.
pub const QUIET_OTHERS_CPU_CORES: f64 = 0.25;

/// What a run records about its machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    pub cpu_model: String,
    pub logical_cores: usize,
    pub memory_bytes: u64,
    pub load_average_start: LoadAverage,
    pub load_average_end: Option<LoadAverage>,
    /// Other processes of this tool seen at the start, at each phase, at the end, and by
    /// the background sampler in between.
    pub other_chbench_processes: Vec<SeenProcess>,
    /// CPU used by other processes during the run, in cores on average.
    pub others_cpu_cores: Option<f64>,
    /// Why `others_cpu_cores` is unknown, when it is.
    pub others_cpu_unknown: Option<String>,
    /// Why the machine was not quiet; empty when it was (or the run has not ended).
    pub noise: Vec<String>,
}

impl MachineInfo {
    pub fn quiet(&self) -> bool {
        self.noise.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadAverage {
    pub one: Option<f64>,
    pub five: Option<f64>,
    pub fifteen: Option<f64>,
}

impl LoadAverage {
    fn now() -> LoadAverage {
        let load = System::load_average();
        LoadAverage { one: known(load.one), five: known(load.five), fifteen: known(load.fifteen) }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenProcess {
    pub pid: u32,
    pub name: String,
}

/// How often the background sampler looks for other processes of this tool. A test
/// process of a suite lives from a fraction of a second to a few seconds, so looking only
/// at the run's phase boundaries missed whole suites. One look reads the status and the
/// executable link of every process: 2.2 ms for 112 processes in a debug build here, under
/// half a percent of a core at this interval.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// Watches the machine while a run goes: [`MachineWatch::start`], [`MachineWatch::observe`]
/// at each phase, [`MachineWatch::finish`] at the end. Between them a background thread
/// looks for other processes of this tool every [`SAMPLE_EVERY`], so that one that starts
/// and ends within a phase is seen too.
pub struct MachineWatch {
    /// The machine's CPU usage is measured between this one's two refreshes, at the start
    /// and at the end: nothing else may refresh it (a process refresh would).
    cpu: System,
    /// For this process's own CPU time and lineage, and the looks `observe` takes.
    system: System,
    started: Instant,
    own_cpu_ms_at_start: Option<u64>,
    engine_in_process: bool,
    /// What tells another process of this tool from the rest.
    finder: ProcessFinder,
    /// Every other process of this tool seen so far, by `observe` or the sampler, in the
    /// order seen; `observe` reports the ones after `reported`.
    seen: Arc<Mutex<Vec<SeenProcess>>>,
    reported: usize,
    sampler: Option<Sampler>,
    info: MachineInfo,
}

/// Finds the other processes of this tool: those running one of this build's binaries
/// (`xtask`, a test binary such as `it-<hash>` or `packs-<hash>`), this process and its
/// ancestors (cargo, a test runner) aside.
#[derive(Clone)]
struct ProcessFinder {
    /// This process and its ancestors: never counted as others.
    own_lineage: Vec<Pid>,
    /// Where this build's binaries live; a process running one is this tool.
    build_dir: PathBuf,
}

impl ProcessFinder {
    fn find(&self, system: &mut System) -> Vec<SeenProcess> {
        refresh_processes(system);
        if self.build_dir.as_os_str().is_empty() {
            return Vec::new();
        }
        system
            .processes()
            .iter()
            // A thread is not another process (sysinfo lists Linux tasks when asked).
            // Nor is a child of this process (an engine worker): its work is this run's.
            .filter(|(pid, process)| {
                !self.own_lineage.contains(pid)
                    && process.thread_kind().is_none()
                    && process.parent() != self.own_lineage.first().copied()
            })
            .filter_map(|(pid, process)| {
                let exe = process.exe().filter(|exe| exe.starts_with(&self.build_dir))?;
                // The executable's name, not sysinfo's: that one is read once per pid, and a
                // pid first seen between a fork and its exec keeps the parent's (`bash`).
                let name = exe.file_name().unwrap_or(process.name()).to_string_lossy().into_owned();
                Some(SeenProcess { pid: pid.as_u32(), name })
            })
            .collect()
    }
}

/// The background thread that looks for other processes of this tool; it stops when
/// its sender is dropped.
struct Sampler {
    stop: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Sampler {
    fn start(finder: ProcessFinder, seen: Arc<Mutex<Vec<SeenProcess>>>) -> std::io::Result<Sampler> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new().name("chbench-machine-watch".to_string()).spawn(move || {
            let mut system = System::new();
            loop {
                record(&seen, finder.find(&mut system));
                match stopped.recv_timeout(SAMPLE_EVERY) {
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    _ => break,
                }
            }
        })?;
        Ok(Sampler { stop, thread })
    }

    fn stop(self) {
        drop(self.stop);
        // A sampler that panicked has lost nothing recorded before.
        let _ = self.thread.join();
    }
}

/// Adds the processes in `found` not seen before to `seen`.
fn record(seen: &Mutex<Vec<SeenProcess>>, found: Vec<SeenProcess>) {
    // A poisoned lock still holds every process recorded before the panic.
    let mut seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for process in found {
        if !seen.contains(&process) {
            seen.push(process);
        }
    }
}

fn refresh_processes(system: &mut System) {
    // The executable every time: a pid first seen between a test runner's fork and its
    // exec would otherwise keep the runner's. No tasks: the engine's threads are not
    // processes, and listing them costs a read per thread.
    system.refresh_processes_specifics(
        ProcessesToUpdate::All,
        true,
        ProcessRefreshKind::nothing().without_tasks().with_exe(UpdateKind::Always),
    );
}

impl MachineWatch {
    /// Records the machine and looks for other processes of this tool, then keeps looking
    /// in the background until [`MachineWatch::finish`]. `engine_in_process` says whether
    /// the measured engine's work shows in this process's CPU time.
    pub fn start(engine_in_process: bool) -> MachineWatch {
        // sysinfo keeps every /proc/<pid>/stat open unless told otherwise.
        sysinfo::set_open_files_limit(0);
        let cpu = System::new_with_specifics(RefreshKind::nothing().with_cpu(CpuRefreshKind::everything()));
        let mut system =
            System::new_with_specifics(RefreshKind::nothing().with_memory(MemoryRefreshKind::nothing().with_ram()));
        let build_dir = crate::files::chbench_dir().parent().map(Path::to_path_buf).unwrap_or_default();
        let cpu_model = cpu.cpus().first().map(|core| core.brand().trim().to_string()).unwrap_or_default();
        let logical_cores = cpu.cpus().len();
        refresh_processes(&mut system);
        let finder = ProcessFinder { own_lineage: lineage(&system), build_dir };
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut watch = MachineWatch {
            cpu,
            started: Instant::now(),
            own_cpu_ms_at_start: None,
            engine_in_process,
            finder: finder.clone(),
            seen: Arc::clone(&seen),
            reported: 0,
            sampler: None,
            info: MachineInfo {
                cpu_model,
                logical_cores,
                memory_bytes: system.total_memory(),
                load_average_start: LoadAverage::now(),
                load_average_end: None,
                other_chbench_processes: Vec::new(),
                others_cpu_cores: None,
                others_cpu_unknown: None,
                noise: Vec::new(),
            },
            system,
        };
        watch.own_cpu_ms_at_start = watch.own_cpu_ms();
        watch.observe();
        // Without the thread (the system refused one) the phases' looks remain.
        watch.sampler = Sampler::start(finder, seen).ok();
        watch
    }

    /// Looks for other processes of this tool now; returns those not reported before,
    /// the background sampler's finds since the last call included.
    pub fn observe(&mut self) -> Vec<SeenProcess> {
        let found = self.finder.find(&mut self.system);
        record(&self.seen, found);
        let seen = self.seen_so_far();
        let new = seen[self.reported.min(seen.len())..].to_vec();
        self.reported = seen.len();
        self.info.other_chbench_processes = seen;
        new
    }

    /// What is known so far, with every process the sampler has seen.
    pub fn info(&self) -> MachineInfo {
        MachineInfo { other_chbench_processes: self.seen_so_far(), ..self.info.clone() }
    }

    fn seen_so_far(&self) -> Vec<SeenProcess> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The end of the run: load average, other processes' CPU, and the verdict.
    pub fn finish(mut self) -> MachineInfo {
        if let Some(sampler) = self.sampler.take() {
            sampler.stop();
        }
        self.observe();
        self.cpu.refresh_cpu_usage();
        self.info.load_average_end = Some(LoadAverage::now());
        let elapsed_seconds = self.started.elapsed().as_secs_f64();
        let cores = self.info.logical_cores as f64;
        match (self.engine_in_process, self.own_cpu_ms_at_start, self.own_cpu_ms()) {
            (false, ..) => {
                self.info.others_cpu_unknown = Some(
                    "the engine runs in another process, whose work would count as other processes' CPU".to_string(),
                )
            }
            (true, Some(start), Some(end)) if elapsed_seconds >= 1.0 && cores > 0.0 => {
                let busy_cores = f64::from(self.cpu.global_cpu_usage()) / 100.0 * cores;
                let own_cores = end.saturating_sub(start) as f64 / 1000.0 / elapsed_seconds;
                self.info.others_cpu_cores = Some((busy_cores - own_cores).max(0.0));
            }
            (true, ..) => {
                self.info.others_cpu_unknown =
                    Some("the run was too short, or this process's CPU time could not be read".to_string())
            }
        }
        self.info.noise = noise(&self.info);
        self.info
    }

    /// CPU time of this process and its children (engine workers): theirs is the run's
    /// work too. Live children are read from the process list, ended ones from the
    /// kernel's account of waited-for children.
    fn own_cpu_ms(&mut self) -> Option<u64> {
        let pid = sysinfo::get_current_pid().ok()?;
        self.system.refresh_processes_specifics(
            ProcessesToUpdate::All,
            false,
            ProcessRefreshKind::nothing().with_cpu(),
        );
        let own = self.system.process(pid).map(|process| process.accumulated_cpu_time())?;
        let live_children: u64 = self
            .system
            .processes()
            .values()
            .filter(|process| process.parent() == Some(pid) && process.thread_kind().is_none())
            .map(|process| process.accumulated_cpu_time())
            .sum();
        Some(own + live_children + ended_children_cpu_ms())
    }
}

/// CPU time of this process's children that ended and were waited for, in ms.
fn ended_children_cpu_ms() -> u64 {
    // SAFETY: getrusage writes one `rusage` into the zeroed value it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) != 0 {
            return 0;
        }
        usage
    };
    let ms = |time: libc::timeval| (time.tv_sec as u64) * 1000 + (time.tv_usec as u64) / 1000;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// This process and its ancestors, as `system` last saw them.
fn lineage(system: &System) -> Vec<Pid> {
    let mut lineage = Vec::new();
    let mut next = sysinfo::get_current_pid().ok();
    while let Some(pid) = next {
        if lineage.contains(&pid) {
            break;
        }
        lineage.push(pid);
        next = system.process(pid).and_then(|process| process.parent());
    }
    lineage
}

/// Why the machine was not quiet, one reason a line.
fn noise(info: &MachineInfo) -> Vec<String> {
    let mut reasons = Vec::new();
    if !info.other_chbench_processes.is_empty() {
        let names: Vec<String> = info
            .other_chbench_processes
            .iter()
            .map(|process| format!("{} (pid {})", process.name, process.pid))
            .collect();
        reasons.push(format!("other chbench processes ran during the run: {}", names.join(", ")));
    }
    if let Some(others) = info.others_cpu_cores
        && others > QUIET_OTHERS_CPU_CORES
    {
        reasons.push(format!(
            "other processes used {others:.2} of {} cores on average during the run (quiet: at most {QUIET_OTHERS_CPU_CORES})",
            info.logical_cores
        ));
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(others: Vec<SeenProcess>, others_cpu_cores: Option<f64>) -> MachineInfo {
        let load = LoadAverage { one: Some(3.0), five: Some(2.0), fifteen: Some(1.0) };
        MachineInfo {
            cpu_model: "test".to_string(),
            logical_cores: 2,
            memory_bytes: 1 << 30,
            load_average_start: load,
            load_average_end: Some(load),
            other_chbench_processes: others,
            others_cpu_cores,
            others_cpu_unknown: None,
            noise: Vec::new(),
        }
    }

    #[test]
    fn a_machine_is_quiet_without_other_chbench_processes_or_busy_cpus() {
        // A high load average alone (e.g. right after a build) is not noise.
        assert!(noise(&info(Vec::new(), Some(0.05))).is_empty());
        assert!(noise(&info(Vec::new(), None)).is_empty());
        let busy = noise(&info(Vec::new(), Some(1.2)));
        assert_eq!(busy.len(), 1);
        assert!(busy[0].contains("1.20 of 2 cores"), "{busy:?}");
        let shared = noise(&info(vec![SeenProcess { pid: 7, name: "logs-0a1b".to_string() }], Some(0.0)));
        assert!(shared[0].contains("logs-0a1b (pid 7)"), "{shared:?}");
    }

    /// A child process killed when the test ends, passed or not.
    struct Child(std::process::Child);

    impl Drop for Child {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// A process this test started through a shell that ended, so that this process is not
    /// its parent (as another test process is not); killed when the test ends.
    struct Detached(u32);

    impl Drop for Detached {
        fn drop(&mut self) {
            if let Some(pid) = rustix::process::Pid::from_raw(self.0 as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }

    /// A copy of sleep in the build folder, named as nextest's test binaries are: a
    /// process running it is one of this tool's.
    fn binary_of_this_build() -> (tempfile::TempDir, std::path::PathBuf) {
        let build = crate::files::chbench_dir();
        std::fs::create_dir_all(&build).unwrap();
        let folder = tempfile::Builder::new().prefix("machine-test-").tempdir_in(&build).unwrap();
        let binary = folder.path().join("it-0a1b2c3d");
        std::fs::copy("/bin/sleep", &binary).unwrap();
        (folder, binary)
    }

    #[test]
    fn a_test_process_that_starts_and_ends_between_phases_is_seen() {
        let watch = MachineWatch::start(true);
        let (_folder, binary) = binary_of_this_build();
        // Another thread's fork may hold the copy open for writing a moment (the exec then
        // fails, and the shell prints no pid of a live process): try again.
        let mut attempts = 0;
        let detached = loop {
            let output = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("'{}' 600 >/dev/null 2>&1 & echo $!", binary.display()))
                .output()
                .unwrap();
            let pid: u32 = String::from_utf8_lossy(&output.stdout).trim().parse().unwrap();
            std::thread::sleep(Duration::from_millis(50));
            if Path::new(&format!("/proc/{pid}")).exists() || attempts >= 50 {
                break Detached(pid);
            }
            attempts += 1;
        };
        let pid = detached.0;
        let seen = |processes: &[SeenProcess]| processes.iter().any(|process| process.pid == pid);
        // No phase boundary (no `observe`) while it runs: only the background sampler can
        // see it. The deadline is for a sampler that never looks, not a measurement.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !seen(&watch.info().other_chbench_processes) {
            assert!(Instant::now() < deadline, "the watch never saw pid {pid}: {:?}", watch.info());
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(detached);
        let finished = watch.finish();
        let process = finished.other_chbench_processes.iter().find(|process| process.pid == pid).unwrap();
        assert_eq!(process.name, "it-0a1b2c3d");
        assert!(!finished.quiet(), "{finished:?}");
        assert!(finished.noise[0].contains(&format!("it-0a1b2c3d (pid {pid})")), "{:?}", finished.noise);
    }

    /// A child of this process (an engine worker) is the run's own: never another process.
    #[test]
    fn a_child_of_this_process_is_not_another_process() {
        let mut watch = MachineWatch::start(true);
        let (_folder, binary) = binary_of_this_build();
        let mut attempts = 0;
        let child = loop {
            match std::process::Command::new(&binary).arg("600").spawn() {
                Err(error) if error.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 50 => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => break Child(other.unwrap()),
            }
        };
        let pid = child.0.id();
        // Two of the sampler's looks, and one at a phase boundary.
        std::thread::sleep(SAMPLE_EVERY * 2);
        watch.observe();
        drop(child);
        let finished = watch.finish();
        assert!(!finished.other_chbench_processes.iter().any(|process| process.pid == pid), "{finished:?}");
    }

    #[test]
    fn the_machine_is_described() {
        let watch = MachineWatch::start(true);
        let info = watch.info();
        assert!(info.logical_cores >= 1 && info.memory_bytes > 0, "{info:?}");
        let finished = watch.finish();
        assert!(finished.load_average_end.is_some());
        // Other processes' CPU is either measured or said to be unknown, with the reason.
        assert!(finished.others_cpu_cores.is_some() != finished.others_cpu_unknown.is_some(), "{finished:?}");
    }
}

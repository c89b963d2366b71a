//! `--storage PROFILE` on a real volume: a loop device, an ext4 file system and a cgroup of
//! the run's own. The bundle records the profile, the limits applied and the probe's rates,
//! and nothing is left behind: after a run that ends, one that fails, one stopped by
//! SIGTERM or Ctrl-C, one killed with SIGKILL (the next run removes what it left), and two
//! runs at once. These need root, so they are ignored in a laptop's `cargo nextest run`;
//! `.ci/run` runs them. Each run has a target folder of its own (`CARGO_TARGET_DIR`), so
//! that one test's volumes are not another's; the engine is the tests' own
//! (`CHBENCH_LIBCHDB`). Bad profiles, refused before anything, are tested without root.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use chbench::benchmarks::logs::LogsBundle;
use chbench::benchmarks::writes::WritesBundle;
use chbench::results::{RunStatus, load_bundle};
use chbench::storage_baseline::StorageBaselineRecord;
use chbench::targets::volume::NO_FIO_ENV;

use crate::common::{error_lines, xtask};

/// An xtask command in a target folder of its own, on the tests' engine, its volume's
/// baseline the probe's (fio, where installed, takes half a minute: one test runs it).
fn on_a_volume(target_dir: &Path) -> Command {
    let library = chbench::engine::provision(&|_| {}).unwrap();
    let mut command = xtask();
    command.env("CARGO_TARGET_DIR", target_dir).env("CHBENCH_LIBCHDB", library).env(NO_FIO_ENV, "1");
    command
}

/// A tiny writes run with every INSERT fsynced (so that writes reach the throttled
/// device), in a target folder of its own.
fn writes(target_dir: &Path, results: &Path, run_id: &str, storage: &str, iterations: &str) -> Command {
    let mut command = on_a_volume(target_dir);
    command
        .args(["bench", "writes", "--target", "embedded", "--storage", storage, "--run-id", run_id])
        .args(["--durability", "fsync", "--concurrency", "1", "--rounds", "1", "--check-statements", "0"])
        .args(["--iterations", iterations, "--batch-rows", "100", "--results-dir"])
        .arg(results);
    command
}

/// What a run with a volume may leave behind, under `target_dir` and the cgroup roots:
/// empty when it left nothing.
fn left_behind(target_dir: &Path, pid: u32) -> Vec<String> {
    let volumes = target_dir.join("chbench/volumes");
    let mut left: Vec<String> = std::fs::read_dir(&volumes)
        .map(|entries| entries.flatten().map(|entry| entry.path().display().to_string()).collect())
        .unwrap_or_default();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    left.extend(mounts.lines().filter(|line| line.contains(&*volumes.to_string_lossy())).map(str::to_string));
    let loops = Command::new("losetup").arg("-a").output().unwrap();
    left.extend(
        String::from_utf8_lossy(&loops.stdout)
            .lines()
            .filter(|line| line.contains(&*volumes.to_string_lossy()))
            .map(str::to_string),
    );
    for root in ["/sys/fs/cgroup/blkio", "/sys/fs/cgroup"] {
        let cgroup = PathBuf::from(root).join(format!("chbench-{pid}"));
        if cgroup.exists() {
            left.push(cgroup.display().to_string());
        }
    }
    left
}

fn run(command: &mut Command) -> (Output, u32) {
    let child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it"]
fn a_run_on_a_profile_records_its_volume_and_leaves_nothing_behind() {
    let (target_dir, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (output, pid) = run(&mut writes(target_dir.path(), results.path(), "limited", "iops=100,mibps=5", "10"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("approximation: IOPS and bandwidth limits only, no network latency per I/O"), "{stderr}");
    let bundle: WritesBundle = load_bundle(&results.path().join("limited")).unwrap();
    assert_eq!(bundle.status, RunStatus::Complete);
    let storage = bundle.target.storage.expect("the bundle records the volume");
    assert_eq!((storage.limits.read_iops, storage.limits.write_iops), (Some(100), Some(100)));
    assert_eq!(storage.limits.write_bytes_per_second, Some(5 << 20));
    assert!(storage.device.starts_with("/dev/loop"), "{}", storage.device);
    assert!(storage.cgroup.ends_with(&format!("chbench-{pid}")), "{}", storage.cgroup);
    // The probe measured the volume, and the throttle let no rate past its limit.
    let probe = storage.probe.expect("the volume was probed");
    for rate in [
        &probe.sequential_read_bytes_per_second,
        &probe.random_read_iops,
        &probe.sequential_write_bytes_per_second,
        &probe.random_write_iops,
    ] {
        assert!(rate.measured.is_some() && !rate.did_not_hold(), "{}", probe.summary());
    }
    // The engine's counters saw every INSERT fsynced on the volume.
    assert_eq!(bundle.benchmark.rounds[0].closed_loop.completed, 10);
    assert_eq!(left_behind(target_dir.path(), pid), Vec::<String>::new());
}

/// Waits until `target_dir` holds a mounted volume, or the child ends.
fn wait_for_volume(child: &mut Child, target_dir: &Path) {
    let volumes = target_dir.join("chbench/volumes");
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        if mounts.contains(&*volumes.to_string_lossy()) {
            return;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended before its volume was mounted");
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no volume mounted in 120 s");
}

/// A gp3 writes run long enough to be stopped, once its volume is mounted; its stderr
/// goes to `stderr`.
fn long_run(target_dir: &Path, results: &Path, run_id: &str, stderr: Stdio) -> Child {
    let mut child =
        writes(target_dir, results, run_id, "gp3", "100000").stdout(Stdio::null()).stderr(stderr).spawn().unwrap();
    wait_for_volume(&mut child, target_dir);
    child
}

#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it"]
fn a_run_killed_on_a_profile_leaves_its_volume_to_the_next_run_which_removes_it() {
    let (target_dir, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut killed = long_run(target_dir.path(), results.path(), "killed", Stdio::null());
    let killed_pid = killed.id();
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(!left_behind(target_dir.path(), killed_pid).is_empty(), "SIGKILL left nothing to clean up");
    let (output, pid) = run(&mut writes(target_dir.path(), results.path(), "next", "gp3", "2"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(left_behind(target_dir.path(), killed_pid), Vec::<String>::new());
    assert_eq!(left_behind(target_dir.path(), pid), Vec::<String>::new());
}

#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it"]
fn two_runs_at_once_on_profiles_each_have_their_own_volume_and_leave_nothing() {
    let (target_dir, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let start = |run_id: &str| {
        writes(target_dir.path(), results.path(), run_id, "iops=300,mibps=20", "20")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (start("first"), start("second"));
    let pids = (first.id(), second.id());
    let (first, second) = (first.wait_with_output().unwrap(), second.wait_with_output().unwrap());
    for output in [&first, &second] {
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let device = |run_id: &str| {
        let bundle: WritesBundle = load_bundle(&results.path().join(run_id)).unwrap();
        bundle.target.storage.unwrap().device
    };
    assert_ne!(device("first"), device("second"));
    assert_eq!(left_behind(target_dir.path(), pids.0), Vec::<String>::new());
    assert_eq!(left_behind(target_dir.path(), pids.1), Vec::<String>::new());
}

/// Refused before anything, as any user (no root needed): a bad profile, and a profile on
/// a target whose data is on its own machine.
#[test]
fn a_bad_profile_or_one_on_a_server_target_is_one_line_before_anything_runs() {
    let results = tempfile::tempdir().unwrap();
    // A value the flag's parser refuses is a usage error (exit 2), as every flag's.
    for (storage, target, code, expected) in [
        ("iops=0", "embedded", 2, "invalid value 'iops=0' for '--storage <PROFILE>': iops=0 is not a limit above 0"),
        ("mibps=-1", "embedded", 2, "mibps=-1 is not a limit above 0"),
        ("gp2", "embedded", 2, "\"gp2\" is not a profile or a limit; give local, gp3, or limits like"),
        ("gp3", "url", 1, "--storage (or CHBENCH_STORAGE) puts the embedded engine's folder on a volume of its own"),
    ] {
        let output = xtask()
            .args(["bench", "writes", "--storage", storage, "--target", target, "--results-dir"])
            .arg(results.path())
            .env("CHBENCH_URL", "http://127.0.0.1:9")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(code), "{}", String::from_utf8_lossy(&output.stderr));
        let errors = error_lines(&output);
        assert_eq!(errors.len(), 1, "{}", String::from_utf8_lossy(&output.stderr));
        assert!(errors[0].contains(expected), "{storage} on {target}: {}", errors[0]);
    }
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
}

/// A matrix whose variant asks for a profile the machine cannot hold (here: run by a user
/// who is not root) is refused in one line before its first variant runs, not after it.
#[test]
fn a_matrix_profile_the_machine_cannot_hold_is_refused_before_any_variant_runs() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("m.toml");
    std::fs::write(
        &file,
        "kind = \"writes\"\nflags = [\"--iterations\", \"5\", \"--concurrency\", \"1\"]\ntarget = \"embedded\"\n\
         [[variant]]\nname = \"local\"\n[[variant]]\nname = \"gp3\"\nstorage = \"gp3\"\n",
    )
    .unwrap();
    let results = folder.path().join("results");
    // As root (CI), the same command as user nobody, who may read the file.
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    let mut command = if root {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let as_nobody = |program: &str| {
            let mut command = Command::new("setpriv");
            command.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]);
            command
        };
        // Nobody must reach the program and the workspace's fixtures, which a clone in a
        // private folder (mktemp -d) does not allow: then this runs where a user runs it.
        let fixtures = chbench::files::fixtures_root();
        let reachable = as_nobody("test")
            .args(["-x", env!("CARGO_BIN_EXE_xtask"), "-a", "-r"])
            .arg(fixtures.join("logs/schema.sql"))
            .status()
            .unwrap();
        if !reachable.success() {
            eprintln!("not run as user nobody: the checkout is private to root; a user who is not root runs this");
            return;
        }
        as_nobody(env!("CARGO_BIN_EXE_xtask"))
    } else {
        xtask()
    };
    let output = command.args(["bench", "--matrix"]).arg(&file).arg("--results-dir").arg(&results).output().unwrap();
    let line = error_lines(&output);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(line.len(), 1, "{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        line[0].starts_with(&format!("error: {}: variant \"gp3\": --storage gp3: a storage profile", file.display())),
        "{}",
        line[0]
    );
    assert!(!results.exists(), "a variant ran");
}

#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it"]
fn sigterm_and_ctrl_c_in_a_run_on_a_profile_leave_nothing_behind() {
    for signal in ["TERM", "INT"] {
        let (target_dir, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let child = long_run(target_dir.path(), results.path(), "stopped", Stdio::piped());
        let pid = child.id();
        assert!(Command::new("kill").args(["-s", signal, &pid.to_string()]).status().unwrap().success());
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(130), "{}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(left_behind(target_dir.path(), pid), Vec::<String>::new(), "after signal {signal}");
    }
}

#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it"]
fn a_run_that_fails_on_a_profile_leaves_nothing_behind() {
    let target_dir = tempfile::tempdir().unwrap();
    let sql = target_dir.path().join("fails.sql");
    std::fs::write(&sql, "SELECT no_such_function(1)\n").unwrap();
    let (output, pid) =
        run(on_a_volume(target_dir.path()).args(["measure", "--target", "embedded", "--storage", "gp3"]).arg(&sql));
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let errors = error_lines(&output);
    assert!(errors.len() == 1 && errors[0].contains("no_such_function"), "{errors:?}");
    assert_eq!(left_behind(target_dir.path(), pid), Vec::<String>::new());
}

/// The volume's storage baseline is the probe's where fio is not used, and with it the logs
/// report holds each direct-I/O run against the volume and against the source's gp3
/// figures; the volume is sized from the run's `--rows`.
#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it"]
fn a_logs_run_on_gp3_holds_its_direct_io_runs_against_the_volumes_baseline_and_the_sources() {
    let (target_dir, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut command = on_a_volume(target_dir.path());
    command
        .args(["bench", "logs", "--target", "embedded", "--storage", "gp3", "--rows", "100K", "--runs", "1"])
        .args(["--run-id", "logs", "--results-dir"])
        .arg(results.path());
    let (output, pid) = run(&mut command);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bundle: LogsBundle = load_bundle(&results.path().join("logs")).unwrap();
    let storage = bundle.target.storage.expect("the bundle records the volume");
    assert!(storage.sized_by.starts_with("the run's data estimated at"), "{}", storage.sized_by);
    // 100 K rows of 245 bytes, 512 MiB for the engine, 64 MiB for the probe: 1 GiB at least.
    assert_eq!(storage.image_bytes, 1 << 30);
    let StorageBaselineRecord::Measured(baseline) = &bundle.storage_baseline else {
        panic!("no baseline: {}", bundle.storage_baseline)
    };
    assert!(baseline.tool.starts_with("chbench's probe"), "{}", baseline.tool);
    assert_eq!(baseline.device.variant, "storage profile gp3");
    assert_eq!((baseline.seq_read.iodepth, baseline.rand_read.iodepth), (16, 64));
    // The throttle holds the baseline's rates to gp3's.
    let sequential = baseline.seq_read.mib_per_s.unwrap();
    assert!(sequential <= 125.0 * 1.1, "{}", baseline.summary());
    assert!(baseline.rand_read.iops.unwrap() <= 3_000.0 * 1.1, "{}", baseline.summary());
    let report = std::fs::read_to_string(results.path().join("logs/report.md")).unwrap();
    assert!(report.contains("## Direct I/O against the source's gp3 volume"), "{report}");
    assert!(!report.contains("unknown (no storage baseline)"), "{report}");
    assert!(report.contains("of 125.3 MiB/s)") || report.contains(" MiB/s)"), "{report}");
    assert_eq!(left_behind(target_dir.path(), pid), Vec::<String>::new());
}

/// Where fio is installed, the volume's baseline is the eks target's fio job, run on the
/// volume; a stop while fio runs ends fio too and leaves nothing.
#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it (and installs fio)"]
fn where_fio_is_installed_the_baseline_is_its_job_and_a_stop_during_it_ends_it() {
    assert!(
        ["/usr/bin/fio", "/usr/sbin/fio", "/bin/fio", "/sbin/fio"].iter().any(|path| Path::new(path).is_file()),
        "fio is not installed (apt-get install fio): this test is of the baseline fio measures"
    );
    let (target_dir, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (output, pid) = run(writes(target_dir.path(), results.path(), "fio", "gp3", "2").env_remove(NO_FIO_ENV));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bundle: WritesBundle = load_bundle(&results.path().join("fio")).unwrap();
    let StorageBaselineRecord::Measured(baseline) = &bundle.storage_baseline else {
        panic!("no baseline: {}", bundle.storage_baseline)
    };
    // Where fio could not run (too little free disk for its file, say), the run says why.
    assert!(baseline.tool.starts_with("fio-"), "{}: {}", baseline.tool, String::from_utf8_lossy(&output.stderr));
    assert_eq!(baseline.file_size_bytes, 2 << 30);
    assert!(baseline.seq_read.mib_per_s.unwrap() <= 125.0 * 1.1, "{}", baseline.summary());
    assert_eq!(left_behind(target_dir.path(), pid), Vec::<String>::new());

    // Stopped while fio runs, by SIGTERM (fio and its jobs end with the run) and by
    // SIGKILL (the next run ends what is left in the dead run's cgroup, then removes it).
    let fio_running = |run_id: &str| {
        let mut child = writes(target_dir.path(), results.path(), run_id, "gp3", "2")
            .env_remove(NO_FIO_ENV)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        while !said.contains("with fio") {
            said.clear();
            assert_ne!(std::io::BufRead::read_line(&mut stderr, &mut said).unwrap(), 0, "the run ended before fio ran");
        }
        // fio's jobs start after its parent has read the job file.
        std::thread::sleep(Duration::from_secs(3));
        child
    };
    let fio_left = || {
        let found = Command::new("pgrep").args(["-f", &*target_dir.path().to_string_lossy()]).output().unwrap();
        String::from_utf8_lossy(&found.stdout).to_string()
    };
    let mut child = fio_running("stopped");
    let pid = child.id();
    assert!(Command::new("kill").args(["-s", "TERM", &pid.to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(fio_left(), "");
    assert_eq!(left_behind(target_dir.path(), pid), Vec::<String>::new());

    let mut killed = fio_running("killed");
    let killed_pid = killed.id();
    killed.kill().unwrap();
    killed.wait().unwrap();
    let (output, pid) = run(&mut writes(target_dir.path(), results.path(), "after", "gp3", "2"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(fio_left(), "");
    assert_eq!(left_behind(target_dir.path(), killed_pid), Vec::<String>::new());
    assert_eq!(left_behind(target_dir.path(), pid), Vec::<String>::new());
}

/// A matrix file gives each variant its profile: one on the machine's disk, one on a
/// volume, compared.
#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it"]
fn a_matrix_runs_each_variant_on_its_own_storage_profile() {
    let (target_dir, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = results.path().join("storage.toml");
    std::fs::write(
        &file,
        "kind = \"writes\"\nflags = [\"--durability\", \"fsync\", \"--concurrency\", \"1\", \"--rounds\", \"1\", \
         \"--check-statements\", \"0\", \"--iterations\", \"5\", \"--batch-rows\", \"100\"]\ntarget = \"embedded\"\n\
         [[variant]]\nname = \"local\"\n[[variant]]\nname = \"slow\"\nstorage = \"iops=300,mibps=20\"\n",
    )
    .unwrap();
    let mut command = on_a_volume(target_dir.path());
    command.args(["bench", "--matrix"]).arg(&file).args(["--run-id", "storage", "--results-dir"]).arg(results.path());
    let (output, _) = run(&mut command);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let folder = results.path().join("storage");
    let storage = |variant: &str| {
        let bundle: WritesBundle = load_bundle(&folder.join(format!("storage-{variant}"))).unwrap();
        bundle.target.storage
    };
    assert_eq!(storage("local"), None);
    let slow = storage("slow").expect("the second variant ran on a volume");
    assert_eq!((slow.limits.read_iops, slow.limits.write_bytes_per_second), (Some(300), Some(20 << 20)));
    let summary = std::fs::read_to_string(folder.join("matrix.md")).unwrap();
    assert!(summary.contains("storage iops=300,mibps=20"), "{summary}");
    let compared = std::fs::read_to_string(folder.join("compare-local-vs-slow/compare.md")).unwrap();
    assert!(
        compared.contains(
            "- what differs: storage: no storage profile against storage profile iops=300,mibps=20 (read 300 IOPS"
        ),
        "{compared}"
    );
    let volumes = target_dir.path().join("chbench/volumes");
    let left: Vec<_> = std::fs::read_dir(&volumes).map(|entries| entries.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// A detached loop device goes only at its last close, and any process may hold it open
/// for a moment (`losetup --all` opens every attached device, from another run or a
/// terminal): the run waits for the kernel to let go of it, so that nothing is attached
/// when the run has ended. The test holds the device open across the run's end.
#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it"]
fn a_loop_device_held_open_elsewhere_is_gone_when_the_run_has_ended() {
    let (target_dir, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let child = long_run(target_dir.path(), results.path(), "held", Stdio::piped());
    let pid = child.id();
    let image = target_dir.path().join(format!("chbench/volumes/{pid}.img"));
    let associated = Command::new("losetup").arg("--associated").arg(&image).output().unwrap();
    let listed = String::from_utf8_lossy(&associated.stdout);
    let loop_device = listed.split(':').next().filter(|name| name.starts_with("/dev/loop")).unwrap().to_string();
    let held = std::fs::File::open(&loop_device).unwrap();
    let mut child = child;
    assert!(Command::new("kill").args(["-s", "TERM", &pid.to_string()]).status().unwrap().success());
    // Closed once the run says it waits for the device, so that the run's end is after it.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() > 0 {
        said.push_str(&line);
        if line.starts_with("chbench: waiting for the kernel to release /dev/loop") {
            break;
        }
        line.clear();
    }
    assert!(said.contains("chbench: waiting for the kernel to release"), "the run never waited: {said}");
    assert!(child.try_wait().unwrap().is_none(), "the run ended while the device was held");
    drop(held);
    let status = child.wait().unwrap();
    let left = left_behind(target_dir.path(), pid);
    assert_eq!(status.code(), Some(130), "{said}");
    assert_eq!(left, Vec::<String>::new(), "{loop_device} was still attached when the run ended");
}

/// A limit taken off the cgroup while the run lasts (as systemd, or another tool, could)
/// is said at the end: the run's figures may then be the disk's, not the profile's.
#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it"]
fn a_limit_taken_off_during_the_run_is_said_at_its_end() {
    let (target_dir, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let child = long_run(target_dir.path(), results.path(), "loosened", Stdio::piped());
    let pid = child.id();
    let limit = PathBuf::from(format!("/sys/fs/cgroup/blkio/chbench-{pid}/blkio.throttle.read_iops_device"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let device = loop {
        let text = std::fs::read_to_string(&limit).unwrap_or_default();
        if let Some(device) = text.split_whitespace().next() {
            break device.to_string();
        }
        assert!(Instant::now() < deadline, "{} never held a limit", limit.display());
        std::thread::sleep(Duration::from_millis(20));
    };
    // In cgroup v1, a limit of 0 removes the device's limit.
    std::fs::write(&limit, format!("{device} 0")).unwrap();
    assert!(Command::new("kill").args(["-s", "TERM", &pid.to_string()]).status().unwrap().success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the storage profile's limits were not in force at the end of the run"), "{stderr}");
    assert!(stderr.contains("blkio.throttle.read_iops_device"), "{stderr}");
    assert_eq!(left_behind(target_dir.path(), pid), Vec::<String>::new());
}

/// An A/B run of two engine versions on a profile: each variant's engine worker keeps its
/// copy on the volume (not on the machine's disk), in the run's cgroup.
#[test]
#[ignore = "mounts a volume and makes a cgroup, which needs root: .ci/run runs it"]
fn engine_versions_in_one_run_keep_their_copies_on_the_volume() {
    let (target_dir, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut command = on_a_volume(target_dir.path());
    command
        .args(["bench", "logs", "--target", "embedded", "--storage", "iops=2000,mibps=100", "--rows", "10K"])
        .args(["--runs", "2", "--variant", "new:", "--variant", "old:engine_version=26.5.3", "--run-id", "ab"])
        .arg("--results-dir")
        .arg(results.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let pid = child.id();
    let (volume, machine) =
        (target_dir.path().join(format!("chbench/volumes/{pid}")), target_dir.path().join("chbench/embedded"));
    let mut workers_on_the_volume = std::collections::BTreeSet::new();
    let mut workers_on_the_machine = std::collections::BTreeSet::new();
    while child.try_wait().unwrap().is_none() {
        let names = |folder: &Path| -> Vec<String> {
            std::fs::read_dir(folder)
                .map(|entries| entries.flatten().map(|entry| entry.file_name().to_string_lossy().to_string()).collect())
                .unwrap_or_default()
        };
        workers_on_the_volume.extend(names(&volume).into_iter().filter(|name| name.starts_with("worker-")));
        workers_on_the_machine.extend(names(&machine).into_iter().filter(|name| *name != pid.to_string()));
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    // A worker per variant and query, each opened on a copy of the run's folder.
    assert!(workers_on_the_volume.len() >= 2, "{workers_on_the_volume:?}");
    assert!(
        workers_on_the_machine.is_empty(),
        "a worker kept its folder on the machine's disk: {workers_on_the_machine:?}"
    );
    assert_eq!(left_behind(target_dir.path(), pid), Vec::<String>::new());
}

//! The storage baseline's fio job on a profile's volume, where fio is installed: the job
//! file the eks target's Job runs (`manifests/<variant>/fio.yaml`,
//! [`crate::storage_baseline::fio_job_file`]), in a folder of the volume, with the throttle
//! in force, its report parsed as the Job's is. Its file is laid out before the throttle
//! ([`lay_out`]), as the probe's is: making it costs no limit.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::storage_baseline::{Device, JOB_FILE_VARIANT, StorageBaseline, fio_job_file, parse_fio_output};

/// Set (to anything but empty or `0`), the volume's baseline is the probe's even where fio
/// is installed: a run that cannot spend fio's half a minute.
pub const NO_FIO_ENV: &str = "CHBENCH_NO_FIO";
/// The job file's test file, `size=2G`: room the volume must have for it.
pub const FILE_BYTES: u64 = 2 << 30;

/// fio, from the system's folders (never the user's `PATH`: this runs as root), unless
/// [`NO_FIO_ENV`] says not to use it.
pub fn program() -> Option<PathBuf> {
    if std::env::var_os(NO_FIO_ENV).is_some_and(|value| !value.is_empty() && value != "0") {
        return None;
    }
    super::device::system_tool("fio").ok()
}

/// The folder of the volume fio works in, with the job file beside its test file.
pub struct FioRun {
    program: PathBuf,
    folder: PathBuf,
    job_file: PathBuf,
}

/// Writes the job file into `mount/fio/` and has fio lay out its test file there
/// (`--create_only`), before the throttle.
pub fn lay_out(program: PathBuf, mount: &Path) -> Result<FioRun> {
    let folder = mount.join("fio");
    std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
    let job_file = folder.join("baseline.fio");
    std::fs::write(&job_file, fio_job_file(JOB_FILE_VARIANT)?)
        .with_context(|| format!("cannot write {}", job_file.display()))?;
    let run = FioRun { program, folder, job_file };
    run.fio(&["--create_only=1".to_string()])
        .with_context(|| format!("fio could not lay out its test file in {}", run.folder.display()))?;
    Ok(run)
}

impl FioRun {
    /// The job, throttled as this process is (fio is its child, in its cgroup), parsed.
    pub fn measure(&self, device: Device) -> Result<StorageBaseline> {
        let report = self.folder.join("report.json");
        self.fio(&["--output-format=json".to_string(), format!("--output={}", report.display())])
            .context("fio failed on the volume")?;
        let output = std::fs::read_to_string(&report).with_context(|| format!("cannot read {}", report.display()))?;
        parse_fio_output(&output, device)
    }

    /// fio on the job file in the folder, with `options`; an error with fio's last line on
    /// stderr when it fails. Ctrl-C, SIGTERM or SIGHUP stop it at once: fio's process
    /// group is killed, and its job processes, sessions of their own, are ended by the
    /// caller with everything else in the run's cgroup (`Throttle::end_other_processes`).
    /// Were this process killed, fio gets SIGKILL from the kernel; a job left behind is in
    /// the dead run's cgroup, where the next run's clean-up ends it
    /// (`throttle::remove_stale`). Through `std::process` rather than xshell, which waits
    /// for a command with no way to end it early.
    fn fio(&self, options: &[String]) -> Result<()> {
        use std::os::unix::process::CommandExt as _;
        let errors = self.folder.join("stderr.txt");
        let stderr = std::fs::File::create(&errors).with_context(|| format!("cannot create {}", errors.display()))?;
        let mut command = std::process::Command::new(&self.program);
        command
            .args(options)
            .arg(format!("--directory={}", self.folder.display()))
            .arg(&self.job_file)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .process_group(0);
        // SAFETY: between fork and exec the closure makes one system call: no allocation,
        // no lock.
        unsafe {
            command.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
                Ok(())
            });
        }
        let mut fio = command.spawn().with_context(|| format!("cannot start {}", self.program.display()))?;
        let group = i32::try_from(fio.id()).ok().and_then(rustix::process::Pid::from_raw);
        let status = loop {
            if crate::interrupt::requested() {
                match group {
                    Some(group) => {
                        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                    }
                    None => {
                        let _ = fio.kill();
                    }
                }
                let _ = fio.wait();
                return Err(crate::interrupt::Interrupted.into());
            }
            match fio.try_wait().context("cannot wait for fio")? {
                Some(status) => break status,
                None => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        };
        if !status.success() {
            let said = std::fs::read_to_string(&errors).unwrap_or_default();
            let last = said.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("nothing on stderr");
            bail!("{status}: {}", last.trim());
        }
        Ok(())
    }

    /// The job's files, so that they take no room from the run.
    pub fn remove(self) {
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

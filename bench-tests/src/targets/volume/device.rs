//! A volume's device: a sparse image file under `target/chbench/volumes/`, a loop device
//! over it, an ext4 file system on that, mounted beside the image. Named by the process
//! that made it (`<pid>.img`, `<pid>/`), so that what a killed process left is found and
//! removed. The system's own tools do the work (`losetup`, `mkfs.ext4`, `mount`,
//! `umount`), through xshell.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

/// The tools a volume needs, each found on `PATH`.
const TOOLS: [&str; 4] = ["losetup", "mkfs.ext4", "mount", "umount"];

/// One process's volume.
#[derive(Debug)]
pub struct Device {
    pub image: PathBuf,
    pub mount: PathBuf,
    pub loop_device: PathBuf,
    pub major: u32,
    pub minor: u32,
}

/// Where every process's volume lives.
pub fn volumes_dir() -> PathBuf {
    crate::files::chbench_dir().join("volumes")
}

/// Refuses, in one line, a machine without the tools or the loop devices a volume needs.
pub fn check_tools() -> Result<()> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let missing: Vec<&str> = TOOLS
        .iter()
        .copied()
        .filter(|tool| !std::env::split_paths(&path).any(|folder| folder.join(tool).is_file()))
        .collect();
    if !missing.is_empty() {
        bail!(
            "a storage profile needs {} on PATH (util-linux, e2fsprogs), and this machine has none",
            missing.join(", ")
        );
    }
    if !Path::new("/dev/loop-control").exists() {
        bail!("a storage profile needs loop devices (/dev/loop-control), and this machine has none (modprobe loop)");
    }
    Ok(())
}

/// Makes process `pid`'s volume of `size` bytes; on a failure, undoes what it did.
pub fn make(pid: u32, size: u64) -> Result<Device> {
    let image = volumes_dir().join(format!("{pid}.img"));
    let mount = volumes_dir().join(pid.to_string());
    let file = std::fs::File::create(&image).with_context(|| format!("cannot create the image {}", image.display()))?;
    file.set_len(size).with_context(|| format!("cannot size the image {}", image.display()))?;
    drop(file);
    let shell = xshell::Shell::new().context("cannot start a shell for losetup")?;
    let attached = xshell::cmd!(shell, "losetup --find --show {image}").quiet().ignore_stderr().read();
    let loop_device = match attached {
        Ok(name) => PathBuf::from(name.trim()),
        Err(error) => {
            let _ = std::fs::remove_file(&image);
            bail!("cannot attach a loop device to {} ({error}): are loop devices free (losetup -a)?", image.display());
        }
    };
    // From here, a failure removes the device too.
    let partial = Device { image, mount, loop_device, major: 0, minor: 0 };
    match finish(&shell, partial) {
        Ok(device) => Ok(device),
        Err((device, error)) => {
            let _ = device.remove();
            Err(error)
        }
    }
}

/// The file system made and mounted on an attached loop device, and the device's numbers.
fn finish(shell: &xshell::Shell, mut device: Device) -> std::result::Result<Device, (Device, anyhow::Error)> {
    let loop_device = device.loop_device.clone();
    let mount = device.mount.clone();
    let made = (|| -> Result<(u32, u32)> {
        xshell::cmd!(shell, "mkfs.ext4 -q -F -m 0 {loop_device}")
            .quiet()
            .ignore_stdout()
            .run()
            .with_context(|| format!("cannot make a file system on {}", loop_device.display()))?;
        std::fs::create_dir_all(&mount).with_context(|| format!("cannot create {}", mount.display()))?;
        xshell::cmd!(shell, "mount {loop_device} {mount}")
            .quiet()
            .run()
            .with_context(|| format!("cannot mount {} on {}", loop_device.display(), mount.display()))?;
        let engine = mount.join("engine");
        std::fs::create_dir_all(&engine).with_context(|| format!("cannot create {}", engine.display()))?;
        let rdev =
            std::fs::metadata(&loop_device).with_context(|| format!("cannot read {}", loop_device.display()))?.rdev();
        Ok((libc::major(rdev), libc::minor(rdev)))
    })();
    match made {
        Ok((major, minor)) => {
            device.major = major;
            device.minor = minor;
            Ok(device)
        }
        Err(error) => Err((device, error)),
    }
}

impl Device {
    /// Unmounts, detaches and deletes, each step whatever the last did; the first failure
    /// is the error.
    pub fn remove(&self) -> Result<()> {
        let outcomes =
            [unmount(&self.mount), detach(&self.loop_device), remove_path(&self.image), remove_path(&self.mount)];
        outcomes.into_iter().collect::<Result<Vec<()>>>().map(|_| ())
    }
}

/// Unmounts `mount` if it is mounted: at once, or lazily when something still holds it (the
/// engine's files, closed when this process ends).
fn unmount(mount: &Path) -> Result<()> {
    if !is_mounted(mount) {
        return Ok(());
    }
    let shell = xshell::Shell::new().context("cannot start a shell for umount")?;
    if xshell::cmd!(shell, "umount {mount}").quiet().ignore_stderr().run().is_ok() {
        return Ok(());
    }
    xshell::cmd!(shell, "umount --lazy {mount}")
        .quiet()
        .run()
        .with_context(|| format!("cannot unmount the volume at {}", mount.display()))
}

/// Whether `mount` is a mount point now (`/proc/self/mountinfo`'s fifth field).
fn is_mounted(mount: &Path) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else { return false };
    let wanted = mount.to_string_lossy();
    table.lines().any(|line| line.split(' ').nth(4) == Some(wanted.as_ref()))
}

fn detach(loop_device: &Path) -> Result<()> {
    let shell = xshell::Shell::new().context("cannot start a shell for losetup")?;
    xshell::cmd!(shell, "losetup --detach {loop_device}")
        .quiet()
        .ignore_stderr()
        .run()
        .with_context(|| format!("cannot detach {}", loop_device.display()))
}

fn remove_path(path: &Path) -> Result<()> {
    let removed = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    match removed {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(anyhow!(error).context(format!("cannot remove {}", path.display())))
        }
        _ => Ok(()),
    }
}

/// The loop devices attached to `image` (`losetup --associated`).
fn loop_devices_of(image: &Path) -> Vec<PathBuf> {
    let Ok(shell) = xshell::Shell::new() else { return Vec::new() };
    let listed = xshell::cmd!(shell, "losetup --associated {image}").quiet().ignore_stderr().read().unwrap_or_default();
    listed.lines().filter_map(|line| line.split(':').next()).map(PathBuf::from).collect()
}

/// Removes the volumes of processes that no longer run (Linux: `/proc/<pid>`): a process
/// killed before its guard ran left its mount, loop device and image.
pub fn remove_stale() {
    let Ok(entries) = std::fs::read_dir(volumes_dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) = name.strip_suffix(".img").unwrap_or(&name).parse::<u32>().ok() else { continue };
        if pid == std::process::id() || Path::new("/proc").join(pid.to_string()).exists() {
            continue;
        }
        let (image, mount) = (volumes_dir().join(format!("{pid}.img")), volumes_dir().join(pid.to_string()));
        let _ = unmount(&mount);
        for loop_device in loop_devices_of(&image) {
            let _ = detach(&loop_device);
        }
        let _ = remove_path(&mount);
        let _ = remove_path(&image);
    }
}

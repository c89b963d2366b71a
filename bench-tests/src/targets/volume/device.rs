//! A volume's device: a sparse image file under `target/chbench/volumes/`, a loop device
//! over it, an ext4 file system on that, mounted beside the image. Named by the process
//! that made it (`<pid>.img`, `<pid>/`), which holds an exclusive lock on `<pid>.lock`
//! for as long as the volume lives: a volume whose lock can be taken is a dead process's
//! (killed before it could remove it; a pid reused, or seen from another pid namespace,
//! changes nothing), and the next activation removes it. The system's own tools do the work
//! (`losetup`, `mkfs.ext4`, `mount`, `umount`), from the system's folders, never from the
//! user's `PATH`: this runs as root.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

/// The tools a volume needs.
const TOOLS: [&str; 4] = ["losetup", "mkfs.ext4", "mount", "umount"];
/// Where they are looked for, in order.
const SYSTEM_FOLDERS: [&str; 4] = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

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

/// The system's `tool`, or one line saying it has none.
pub fn system_tool(tool: &str) -> Result<PathBuf> {
    SYSTEM_FOLDERS.iter().map(|folder| Path::new(folder).join(tool)).find(|path| path.is_file()).ok_or_else(|| {
        anyhow!(
            "a storage profile needs {tool} (util-linux, e2fsprogs) in {}, and this machine has none",
            SYSTEM_FOLDERS.join(", ")
        )
    })
}

/// Refuses, in one line, a machine without the tools or the loop devices a volume needs.
pub fn check_tools() -> Result<()> {
    for name in TOOLS {
        system_tool(name)?;
    }
    if !Path::new("/dev/loop-control").exists() {
        bail!("a storage profile needs loop devices (/dev/loop-control), and this machine has none (modprobe loop)");
    }
    Ok(())
}

/// The volumes' folder, made if need be, and refused when it is not a plain folder of its
/// own (a link there would have root write wherever it points).
pub fn prepare_dir() -> Result<PathBuf> {
    let folder = volumes_dir();
    std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
    let metadata = std::fs::symlink_metadata(&folder).with_context(|| format!("cannot read {}", folder.display()))?;
    if !metadata.file_type().is_dir() {
        bail!("{} is not a folder (a link?): remove it, and run again", folder.display());
    }
    folder.canonicalize().with_context(|| format!("cannot resolve {}", folder.display()))
}

/// The lock a process holds on its volume while it lives ([`File`]'s drop releases it).
pub fn lock(folder: &Path, pid: u32) -> Result<File> {
    let path = folder.join(format!("{pid}.lock"));
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .with_context(|| format!("cannot open the volume's lock {}", path.display()))?;
    // SAFETY: flock on an open descriptor.
    if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        bail!("{} is locked by another process: is a run with this pid still going?", path.display());
    }
    Ok(file)
}

/// Makes process `pid`'s volume of `size` bytes in `folder` (from [`prepare_dir`], with the
/// pid's [`lock`] held); on a failure, undoes what it did.
pub fn make(folder: &Path, pid: u32, size: u64) -> Result<Device> {
    let image = folder.join(format!("{pid}.img"));
    let mount = folder.join(pid.to_string());
    // Whatever an earlier process with this pid left (its lock is ours now).
    remove_volume(&image, &mount);
    // A new file, never one that is there (nor a link's target).
    let file = OpenOptions::new()
        .create_new(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&image)
        .with_context(|| format!("cannot create the image {}", image.display()))?;
    file.set_len(size).with_context(|| format!("cannot size the image {}", image.display()))?;
    drop(file);
    let shell = xshell::Shell::new().context("cannot start a shell for losetup")?;
    let losetup = system_tool("losetup")?;
    let attached = xshell::cmd!(shell, "{losetup} --find --show {image}").quiet().ignore_stderr().read();
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
        let (mkfs, mount_tool) = (system_tool("mkfs.ext4")?, system_tool("mount")?);
        xshell::cmd!(shell, "{mkfs} -q -F -m 0 {loop_device}")
            .quiet()
            .ignore_stdout()
            .run()
            .with_context(|| format!("cannot make a file system on {}", loop_device.display()))?;
        std::fs::create_dir(&mount).with_context(|| format!("cannot create {}", mount.display()))?;
        // noinit_itable: no background zeroing of inode tables while a run measures.
        xshell::cmd!(shell, "{mount_tool} -o noinit_itable {loop_device} {mount}")
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
    /// is the error. The mount point is removed only once nothing is mounted on it.
    pub fn remove(&self) -> Result<()> {
        let unmounted = unmount(&self.mount);
        let detached = detach(&self.loop_device, &self.image).and_then(|()| match &unmounted {
            Ok(Unmounted::AtOnce) => wait_until_released(&self.loop_device, &self.image),
            // A lazy unmount lets go of the device when this process ends, not before; a
            // failed one never: waiting would only add a second error to its own.
            Ok(Unmounted::Lazily) | Err(_) => Ok(()),
        });
        let image = super::gone(&self.image, std::fs::remove_file(&self.image));
        let mount = match is_mounted(&self.mount) {
            true => Err(anyhow!("{} is still mounted: unmount it (umount {0})", self.mount.display())),
            false => super::gone(&self.mount, std::fs::remove_dir(&self.mount)),
        };
        unmounted.and(detached).and(image).and(mount)
    }
}

/// How a volume's file system was unmounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unmounted {
    /// It was not mounted, or is unmounted now.
    AtOnce,
    /// Something still holds it (the engine's files, closed when this process ends): it
    /// goes, and lets go of its device, when that closes.
    Lazily,
}

/// Unmounts `mount` if it is mounted: at once, or lazily when something still holds it.
fn unmount(mount: &Path) -> Result<Unmounted> {
    if !is_mounted(mount) {
        return Ok(Unmounted::AtOnce);
    }
    let shell = xshell::Shell::new().context("cannot start a shell for umount")?;
    let umount = system_tool("umount")?;
    if xshell::cmd!(shell, "{umount} {mount}").quiet().ignore_stderr().run().is_ok() {
        return Ok(Unmounted::AtOnce);
    }
    xshell::cmd!(shell, "{umount} --lazy {mount}")
        .quiet()
        .run()
        .with_context(|| format!("cannot unmount the volume at {}", mount.display()))?;
    Ok(Unmounted::Lazily)
}

/// Whether a file system is mounted on `mount`: it is on another device than its parent.
pub fn is_mounted(mount: &Path) -> bool {
    let device = |path: &Path| std::fs::symlink_metadata(path).ok().filter(|m| m.file_type().is_dir()).map(|m| m.dev());
    match (device(mount), mount.parent().and_then(device)) {
        (Some(own), Some(parent)) => own != parent,
        _ => false,
    }
}

/// Whether `loop_device` is still attached to `image` (`/sys/block/loopN/loop/backing_file`).
fn is_attached(loop_device: &Path, image: &Path) -> bool {
    let Some(name) = loop_device.file_name() else { return false };
    let backing = Path::new("/sys/block").join(name).join("loop/backing_file");
    let backing = std::fs::read_to_string(&backing).unwrap_or_default();
    Path::new(backing.trim()) == image
}

/// Waits until the kernel has let go of `loop_device`. A detach only marks the device: the
/// kernel detaches it at its last close, and any process may hold it open for a moment
/// (`losetup --all` opens every attached device to read its status, from another run or
/// a user's terminal).
fn wait_until_released(loop_device: &Path, image: &Path) -> Result<()> {
    if !is_attached(loop_device, image) {
        return Ok(());
    }
    crate::say!("chbench: waiting for the kernel to release {} (another process holds it open)", loop_device.display());
    let deadline = std::time::Instant::now() + RELEASE_WAIT;
    while is_attached(loop_device, image) {
        if std::time::Instant::now() >= deadline {
            bail!(
                "{} is still attached to {} after {} s: something holds it open (fuser -v {0}); the kernel \
                 detaches it when that closes it",
                loop_device.display(),
                image.display(),
                RELEASE_WAIT.as_secs()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(())
}

/// How long a detached loop device may stay held by another process's open.
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Detaches `loop_device` if it is still `image`'s.
fn detach(loop_device: &Path, image: &Path) -> Result<()> {
    if !is_attached(loop_device, image) {
        return Ok(());
    }
    let shell = xshell::Shell::new().context("cannot start a shell for losetup")?;
    let losetup = system_tool("losetup")?;
    xshell::cmd!(shell, "{losetup} --detach {loop_device}")
        .quiet()
        .ignore_stderr()
        .run()
        .with_context(|| format!("cannot detach {}", loop_device.display()))
}

/// The loop devices attached to `image` (`losetup --associated`), a plain file.
fn loop_devices_of(image: &Path) -> Vec<PathBuf> {
    let plain = std::fs::symlink_metadata(image).is_ok_and(|metadata| metadata.file_type().is_file());
    let (Ok(shell), Ok(losetup)) = (xshell::Shell::new(), system_tool("losetup")) else { return Vec::new() };
    if !plain {
        return Vec::new();
    }
    let listed =
        xshell::cmd!(shell, "{losetup} --associated {image}").quiet().ignore_stderr().read().unwrap_or_default();
    listed.lines().filter_map(|line| line.split(':').next()).map(PathBuf::from).collect()
}

/// Everything of one volume, whatever state it was left in.
fn remove_volume(image: &Path, mount: &Path) {
    let _ = unmount(mount);
    for loop_device in loop_devices_of(image) {
        let _ = detach(&loop_device, image);
    }
    if !is_mounted(mount) {
        let _ = std::fs::remove_dir(mount);
    }
    let _ = std::fs::remove_file(image);
}

/// Removes the volumes whose process is gone (its lock can be taken), and returns their
/// pids, whose cgroups are to go too.
pub fn remove_stale(folder: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    let mut stale = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) = name.strip_suffix(".lock").and_then(|pid| pid.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() || entry.file_type().map_or(true, |kind| !kind.is_file()) {
            continue;
        }
        // Taken at once only when no process holds it.
        let Ok(lock) = lock(folder, pid) else { continue };
        let (image, mount) = (folder.join(format!("{pid}.img")), folder.join(pid.to_string()));
        remove_volume(&image, &mount);
        // What could not be removed keeps its lock file, for the next run to try again.
        if !image.exists() && !mount.exists() {
            let _ = std::fs::remove_file(folder.join(&name));
        }
        drop(lock);
        stale.push(pid);
    }
    stale
}

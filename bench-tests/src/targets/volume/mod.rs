//! Storage profiles (docs/storage-profiles.md): with `--storage PROFILE`, the embedded
//! engine keeps its folder on a file system of its own, on a loop device over a sparse
//! image file ([`device`]), and this process is in a cgroup that holds its I/O on that
//! device to the profile's IOPS and bandwidth ([`throttle`]). An approximation of a
//! network volume on one machine: limits only, no latency added per I/O.
//!
//! [`activate`] makes the volume, sized for the run, measures it (the [`probe`] against
//! the limits, and the storage baseline: fio's job where fio is installed ([`fio`]), the
//! probe's read passes otherwise), and returns the guard that removes it (unmounted, the
//! loop device detached, the image and the cgroup removed); a process killed before its
//! guard ran leaves them to the next activation, which removes every dead process's.

mod device;
mod fio;
mod probe;
mod throttle;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, bail};

use self::device::Device;
pub use self::fio::NO_FIO_ENV;
use self::throttle::Throttle;
use crate::storage_baseline::StorageBaseline;
pub use crate::target_info::{APPROXIMATION, Limits, StorageVolume};
use crate::units::human_bytes;

/// What every refusal ends with: the way to run without a profile.
const WITHOUT: &str = "or run without --storage (the machine's own disk)";

/// The variable `--storage` reads, as the tests do.
pub const PROFILE_ENV: &str = "CHBENCH_STORAGE";

/// A volume smaller than this is refused: the engine's own files and one dataset's parts
/// need room.
const SMALLEST_VOLUME: u64 = 1 << 30;
/// The share of the free space a volume takes when the run gives no estimate of its
/// data: under half, so that two runs at once cannot promise more than the disk has, and
/// each volume fills before the disk under it (a full disk under a loop device fails its
/// writes with I/O errors, not "no space").
const VOLUME_SHARE_OF_FREE: f64 = 0.45;
/// What a volume holds beside the run's data: the engine's own files and logs, and the
/// file system's journal and tables.
const ENGINE_ROOM: u64 = 512 << 20;
/// What ext4 keeps of a volume for itself, in percent of what is put on it: its inode
/// tables (256 bytes per 16 KiB, 1.6 %), its journal and its group descriptors.
const FILE_SYSTEM_PERCENT: u64 = 3;
/// The most of the free space a volume sized from an estimate may take.
const MOST_OF_FREE: f64 = 0.9;

/// Where the engine keeps its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageProfile {
    /// The machine's own disk, as without `--storage`.
    Local,
    /// A volume of its own held to `limits`.
    Limited(Limits),
}

/// AWS's gp3 baseline: 3,000 IOPS and 125 MiB/s, read and write alike (docs/sources.md).
pub const GP3_IOPS: u64 = 3_000;
pub const GP3_MIB_PER_SECOND: u64 = 125;

const MIB: f64 = 1_048_576.0;

/// `--storage`'s parser: `local`, `gp3`, or limits as `iops=N,mibps=M` (read and write
/// alike) and `read_iops`, `write_iops`, `read_mibps`, `write_mibps` (one direction; a
/// direction's own limit wins over the shared one). A limit not given is none; at least
/// one must be.
pub fn parse_profile(text: &str) -> Result<StorageProfile, String> {
    match text.trim() {
        "local" => return Ok(StorageProfile::Local),
        "gp3" => {
            let bytes = GP3_MIB_PER_SECOND * (1 << 20);
            return Ok(StorageProfile::Limited(Limits {
                name: "gp3".to_string(),
                read_iops: Some(GP3_IOPS),
                write_iops: Some(GP3_IOPS),
                read_bytes_per_second: Some(bytes),
                write_bytes_per_second: Some(bytes),
            }));
        }
        _ => {}
    }
    let usage = "give local, gp3, or limits like iops=3000,mibps=125 (or read_iops, write_iops, read_mibps, \
                 write_mibps)";
    let mut given: Vec<(&str, f64)> = Vec::new();
    for pair in text.split(',') {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(format!("{pair:?} is not a profile or a limit; {usage}"));
        };
        let (key, value) = (key.trim(), value.trim());
        if !["iops", "mibps", "read_iops", "write_iops", "read_mibps", "write_mibps"].contains(&key) {
            return Err(format!("{key} is not a limit; {usage}"));
        }
        let Ok(number) = value.parse::<f64>() else {
            return Err(format!("{key}={value}: {value:?} is not a number; {usage}"));
        };
        if !number.is_finite() {
            return Err(format!("{key}={value} is not a finite number; {usage}"));
        }
        if number <= 0.0 {
            return Err(format!("{key}={value} is not a limit above 0; {usage}"));
        }
        if key.ends_with("iops") && number.fract() != 0.0 {
            return Err(format!("{key}={value} is not a whole number of operations; {usage}"));
        }
        // Under 1 MiB/s, one 1 MiB read (the engine's, the probe's) takes more than a
        // second: not a volume a benchmark says anything about, and a stop would wait for it.
        if key.ends_with("mibps") && number < 1.0 {
            return Err(format!("{key}={value} is under 1 MiB/s, the least a profile holds a volume to; {usage}"));
        }
        if given.iter().any(|(seen, _)| *seen == key) {
            return Err(format!("{key} is given twice; give it once"));
        }
        given.push((key, number));
    }
    let limit = |own: &str, shared: &str| {
        given
            .iter()
            .find(|(key, _)| *key == own)
            .or_else(|| given.iter().find(|(key, _)| *key == shared))
            .map(|(_, n)| *n)
    };
    // A limit of a fraction of a byte a second, or beyond what a u64 holds, is no limit a
    // kernel takes.
    let bytes = |mibps: Option<f64>| -> Result<Option<u64>, String> {
        mibps
            .map(|mibps| {
                let bytes = (mibps * MIB).round();
                (1.0..1e18)
                    .contains(&bytes)
                    .then_some(bytes as u64)
                    .ok_or_else(|| format!("{mibps} MiB/s is not a bandwidth a kernel can hold a device to"))
            })
            .transpose()
    };
    let iops = |value: Option<f64>| -> Result<Option<u64>, String> {
        value
            .map(|iops| {
                (iops < 1e15)
                    .then_some(iops as u64)
                    .ok_or_else(|| format!("{iops} IOPS is beyond any device; give at most 10^15"))
            })
            .transpose()
    };
    Ok(StorageProfile::Limited(Limits {
        // As given, without spaces: what a bundle, a report and a comparison call it.
        name: text.chars().filter(|c| !c.is_whitespace()).collect(),
        read_iops: iops(limit("read_iops", "iops"))?,
        write_iops: iops(limit("write_iops", "iops"))?,
        read_bytes_per_second: bytes(limit("read_mibps", "mibps"))?,
        write_bytes_per_second: bytes(limit("write_mibps", "mibps"))?,
    }))
}

/// What removing `path` came to: done, or nothing there to remove, is done; the error
/// names the path. For a mount point, removal is `remove_dir`, never a tree's: were a file
/// system still mounted there, its contents would go.
fn gone(path: &Path, removal: std::io::Result<()>) -> Result<()> {
    match removal {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(anyhow::Error::from(error).context(format!("cannot remove {}", path.display())))
        }
        _ => Ok(()),
    }
}

/// The volume of this process, while its guard lives.
struct Active {
    /// Where the engine keeps its folder: on the volume.
    engine_folder: PathBuf,
    record: StorageVolume,
    /// The volume's storage baseline, or why it has none.
    baseline: std::result::Result<StorageBaseline, String>,
}

static ACTIVE: Mutex<Option<Active>> = Mutex::new(None);

/// In an engine worker of a process with a volume: the worker's folder on that volume.
static PARENTS_VOLUME: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The folder the embedded engine keeps its data in while a volume is active: on it (in
/// an engine worker, on its parent's).
pub fn active_engine_folder() -> Option<PathBuf> {
    if let Some(active) = ACTIVE.lock().ok()?.as_ref() {
        return Some(active.engine_folder.clone());
    }
    PARENTS_VOLUME.lock().ok()?.clone()
}

/// The volume's mount, which an engine worker started by this process keeps its folder in
/// ([`join_parents_volume`]): its copy of the engine's folder is then on the volume, held
/// to the same limits (the worker is this process's child, in its cgroup).
pub fn mount_for_workers() -> Option<PathBuf> {
    ACTIVE.lock().ok()?.as_ref().and_then(|active| active.engine_folder.parent().map(Path::to_path_buf))
}

/// In an engine worker: keep the engine's folder on the parent's volume, mounted at
/// `mount` ([`mount_for_workers`]), in a folder named by this process. Refused unless
/// `mount` is a volume's mount under `target/chbench/volumes/`.
pub fn join_parents_volume(mount: &Path) -> Result<()> {
    let volumes = device::volumes_dir().canonicalize().ok();
    let resolved = mount.canonicalize().ok();
    let on_a_volume = resolved.as_ref().is_some_and(|resolved| {
        volumes.as_ref().is_some_and(|volumes| resolved.parent() == Some(volumes.as_path()))
            && device::is_mounted(resolved)
    });
    let Some(resolved) = resolved.filter(|_| on_a_volume) else {
        bail!("{} is not a storage profile's volume (a mount in {})", mount.display(), device::volumes_dir().display());
    };
    let folder = resolved.join(format!("worker-{}", std::process::id()));
    *PARENTS_VOLUME.lock().map_err(|_| anyhow::anyhow!("the volume's record is poisoned"))? = Some(folder);
    Ok(())
}

/// The active volume's record, for a target whose folder is on it.
pub fn active_record() -> Option<StorageVolume> {
    ACTIVE.lock().ok()?.as_ref().map(|active| active.record.clone())
}

/// The active volume's storage baseline (an error saying why it has none), for a target
/// whose folder is on it; `Ok(None)` without a volume.
pub fn active_baseline() -> Result<Option<StorageBaseline>> {
    let active = ACTIVE.lock().map_err(|_| anyhow::anyhow!("the volume's record is poisoned"))?;
    match active.as_ref().map(|active| &active.baseline) {
        None => Ok(None),
        Some(Ok(baseline)) => Ok(Some(baseline.clone())),
        Some(Err(why)) => bail!("{why}"),
    }
}

/// How large the volume is made: from the bytes the run's data needs at its peak (the
/// kind's estimate for its `--rows`), with room for the engine, the probe's file and
/// fio's, or, without an estimate, a share of the free space. Refused in one line when
/// the disk under it has not that much free.
fn volume_size(profile: &str, needed: Option<u64>, uses_fio: bool, folder: &Path, free: u64) -> Result<(u64, String)> {
    let Some(needed) = needed else {
        let size = (free as f64 * VOLUME_SHARE_OF_FREE) as u64;
        if size < SMALLEST_VOLUME {
            bail!(
                "--storage {profile}: {} has {} free, and a volume needs {} at least ({} of the free space); free \
                 space, {WITHOUT}",
                folder.display(),
                human_bytes(free),
                human_bytes(SMALLEST_VOLUME),
                crate::units::percent(Some(VOLUME_SHARE_OF_FREE), "")
            );
        }
        let basis = format!(
            "{} of the {} free: the run gives no estimate of its data",
            crate::units::percent(Some(VOLUME_SHARE_OF_FREE), ""),
            human_bytes(free)
        );
        return Ok((size, basis));
    };
    let measuring = probe::FILE_BYTES + if uses_fio { fio::FILE_BYTES } else { 0 };
    let contents = needed.saturating_add(ENGINE_ROOM).saturating_add(measuring);
    let size = (contents / 100).saturating_mul(100 + FILE_SYSTEM_PERCENT).max(SMALLEST_VOLUME);
    // The disk under the volume must not fill before the volume does (its writes would
    // fail with I/O errors, not "no space"): a tenth of the free space stays free.
    let most = (free as f64 * MOST_OF_FREE) as u64;
    if size > most {
        bail!(
            "--storage {profile}: the run's volume needs {} (its data's estimate {}, the engine and the \
             measurements {}, the file system's tables {} %), and {} has {} free, of which a volume may take {} \
             ({}); give fewer rows or free space, {WITHOUT}",
            human_bytes(size),
            human_bytes(needed),
            human_bytes(ENGINE_ROOM + measuring),
            FILE_SYSTEM_PERCENT,
            folder.display(),
            human_bytes(free),
            human_bytes(most),
            crate::units::percent(Some(MOST_OF_FREE), "")
        );
    }
    let basis = format!(
        "the run's data estimated at {}, with {} for the engine and {} for the measurements{}",
        human_bytes(needed),
        human_bytes(ENGINE_ROOM),
        human_bytes(measuring),
        if size == SMALLEST_VOLUME { format!(", at least {}", human_bytes(SMALLEST_VOLUME)) } else { String::new() }
    );
    Ok((size, basis))
}

/// The volume, for as long as it lives: dropped, it is removed (this process out of its
/// cgroup, the file system unmounted, the loop device detached, the image deleted).
pub struct VolumeGuard {
    device: Option<Device>,
    throttle: Option<Throttle>,
    /// The process's lock on its volume, and its file: released and removed last.
    lock: Option<(std::fs::File, PathBuf)>,
}

impl Drop for VolumeGuard {
    fn drop(&mut self) {
        if let Ok(mut active) = ACTIVE.lock() {
            *active = None;
        }
        // Best effort, each step whatever the last did: what is left, the next activation
        // removes.
        if let Some(throttle) = self.throttle.take() {
            if let Err(error) = throttle.check_in_force() {
                crate::say!(
                    "chbench: warning: the storage profile's limits were not in force at the end of the run \
                     ({error:#}): its figures may be the disk's under the volume, not the profile's"
                );
            }
            if let Err(error) = throttle.remove() {
                crate::say!("chbench: warning: {error:#}");
            }
        }
        let mut removed = true;
        if let Some(device) = self.device.take()
            && let Err(error) = device.remove()
        {
            crate::say!("chbench: warning: {error:#}");
            removed = false;
        }
        if let Some((lock, path)) = self.lock.take() {
            // A volume not removed keeps its lock file: the next activation finds a dead
            // run's volume by it.
            if removed {
                let _ = std::fs::remove_file(path);
            }
            drop(lock);
        }
    }
}

/// Refuses, in one line, a machine that cannot hold a volume to a profile: not Linux, not
/// root, no controller, no tools or loop devices. What [`activate`] checks first, and a
/// matrix before its first variant runs.
pub fn check_prerequisites(profile: &StorageProfile) -> Result<()> {
    match profile {
        StorageProfile::Local => Ok(()),
        StorageProfile::Limited(limits) => check_machine(limits).map(|_| ()),
    }
}

fn check_machine(limits: &Limits) -> Result<throttle::Controller> {
    if !cfg!(target_os = "linux") {
        bail!("--storage {}: storage profiles need Linux (loop devices and cgroups); {WITHOUT}", limits.name);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!(
            "--storage {}: a storage profile mounts a file system and makes a cgroup, which needs root: run as root \
             (sudo -E cargo xtask ...), {WITHOUT}",
            limits.name
        );
    }
    let controller = throttle::detect().with_context(|| format!("--storage {}: {WITHOUT}", limits.name))?;
    device::check_tools().with_context(|| format!("--storage {}: {WITHOUT}", limits.name))?;
    Ok(controller)
}

/// Puts `profile` in force for this process: nothing for `local`; otherwise the checks
/// (Linux, root, a controller, loop devices, free disk: each refusal one line naming what
/// is missing), what dead processes left removed, then the volume made (sized for
/// `needed` bytes of the run's data, when the run estimates them), this process throttled
/// on it, and the volume measured: the probe, and the storage baseline, fio's job where
/// fio is installed and `use_fio` (a command that records no baseline spares its half a
/// minute), the probe's reads otherwise. The embedded engine opened after this keeps its
/// folder on the volume.
pub fn activate(profile: &StorageProfile, needed: Option<u64>, use_fio: bool) -> Result<Option<VolumeGuard>> {
    let StorageProfile::Limited(limits) = profile else { return Ok(None) };
    let controller = check_machine(limits)?;
    let folder = device::prepare_dir()?;
    device::remove_stale(&folder);
    throttle::remove_stale(&controller);
    let fio_program = fio::program().filter(|_| use_fio);
    let free = crate::files::free_bytes(&folder)?;
    let (size, sized_by) = volume_size(&limits.name, needed, fio_program.is_some(), &folder, free)?;
    let pid = std::process::id();
    let lock = device::lock(&folder, pid)?;
    let mut guard =
        VolumeGuard { device: None, throttle: None, lock: Some((lock, folder.join(format!("{pid}.lock")))) };
    let device = device::make(&folder, pid, size)?;
    let (mount, engine_folder) = (device.mount.clone(), device.mount.join("engine"));
    let (major, minor) = (device.major, device.minor);
    let device_text = format!("{} ({major}:{minor})", device.loop_device.display());
    guard.device = Some(device);
    // The measurements' files are written before the throttle: making them costs no limit.
    let probe_file = probe::prepare(&mount);
    let fio_run = fio_program.map(|program| fio::lay_out(program, &mount));
    crate::interrupt::check()?;
    let throttle = throttle::apply(&controller, pid, (major, minor), limits)?;
    let cgroup = throttle.describe();
    guard.throttle = Some(throttle);
    crate::say!(
        "chbench: storage {} on {device_text}, a {} sparse volume ({sized_by}), through {cgroup}; {APPROXIMATION}",
        limits,
        human_bytes(size),
    );
    crate::say!("chbench: measuring the volume (direct I/O: 4 passes of a 0.3 s warm-up and 1.5 s measured)");
    let probed = probe_file.and_then(|file| {
        let probed = probe::run(&file, limits);
        let _ = std::fs::remove_file(&file);
        probed
    });
    crate::interrupt::check()?;
    match &probed {
        Ok(measured) => {
            crate::say!("chbench: the volume measured: {}", measured.probe.summary());
            for warning in measured.probe.warnings() {
                crate::say!("chbench: warning: {warning}");
            }
        }
        Err(error) => crate::say!("chbench: warning: the volume was not measured: the probe failed: {error:#}"),
    }
    let baseline_device = crate::storage_baseline::Device {
        variant: format!("storage profile {}", limits.name),
        description: format!("ext4 on loop device {device_text}, through {cgroup}"),
        node: sysinfo::System::host_name().unwrap_or_else(|| "this machine".to_string()),
        instance_type: None,
    };
    // fio's job where fio is installed; where it failed, the probe's reads, said so.
    let fio_baseline = fio_run.map(|run| {
        let run = run.context("fio could not lay out its file on the volume")?;
        crate::say!("chbench: measuring the storage baseline with fio (the eks target's job file, about 40 s)");
        let measured = run.measure(baseline_device.clone());
        // fio's job processes outlive a stopped fio: they go before the volume does.
        if let Some(throttle) = &guard.throttle {
            throttle.end_other_processes();
        }
        run.remove();
        measured
    });
    crate::interrupt::check()?;
    let baseline = match (fio_baseline, &probed) {
        (Some(Ok(baseline)), _) => Ok(baseline),
        (None, Ok(measured)) => Ok(measured.baseline(baseline_device)),
        (Some(Err(error)), Ok(measured)) => {
            crate::say!("chbench: warning: fio's storage baseline failed ({error:#}); the probe's reads stand in");
            Ok(measured.baseline(baseline_device))
        }
        (Some(Err(error)), Err(_)) => Err(format!("fio failed ({error:#}), and so did the probe")),
        (None, Err(error)) => Err(format!("the probe failed: {error:#}")),
    };
    let (probe, probe_unknown) = match probed {
        Ok(measured) => (Some(measured.probe), None),
        Err(error) => (None, Some(format!("the probe failed: {error:#}"))),
    };
    let record = StorageVolume {
        limits: limits.clone(),
        device: device_text,
        image_bytes: size,
        sized_by,
        cgroup,
        approximation: APPROXIMATION.to_string(),
        probe,
        probe_unknown,
    };
    // A run says the baseline it records; only its absence is said here.
    if let Err(why) = &baseline {
        crate::say!("chbench: warning: the volume has no storage baseline: {why}");
    }
    *ACTIVE.lock().map_err(|_| anyhow::anyhow!("the volume's record is poisoned"))? =
        Some(Active { engine_folder, record, baseline });
    Ok(Some(guard))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(profile: &str) -> Limits {
        match parse_profile(profile) {
            Ok(StorageProfile::Limited(limits)) => limits,
            other => panic!("{profile}: {other:?}"),
        }
    }

    #[test]
    fn a_worker_joins_only_a_volumes_mount() {
        let folder = tempfile::tempdir().unwrap();
        for mount in [folder.path(), Path::new("/no/such/folder")] {
            let error = join_parents_volume(mount).unwrap_err().to_string();
            assert!(
                error.ends_with(&format!(
                    "is not a storage profile's volume (a mount in {})",
                    device::volumes_dir().display()
                )),
                "{error}"
            );
        }
        assert_eq!(active_engine_folder(), None);
    }

    #[test]
    fn profiles_are_local_gp3_or_limits_shared_or_per_direction() {
        assert_eq!(parse_profile("local"), Ok(StorageProfile::Local));
        let gp3 = limits("gp3");
        assert_eq!((gp3.read_iops, gp3.write_iops), (Some(3_000), Some(3_000)));
        assert_eq!((gp3.read_bytes_per_second, gp3.write_bytes_per_second), (Some(131_072_000), Some(131_072_000)));
        assert_eq!(gp3.to_string(), "gp3 (read 3000 IOPS and 125.0 MiB/s, write 3000 IOPS and 125.0 MiB/s)");
        let custom = limits("iops=200, mibps=10,write_iops=50");
        assert_eq!(custom.name, "iops=200,mibps=10,write_iops=50");
        assert_eq!((custom.read_iops, custom.write_iops), (Some(200), Some(50)));
        assert_eq!(custom.read_bytes_per_second, Some(10 << 20));
        let one_way = limits("read_mibps=1.5");
        assert_eq!((one_way.read_bytes_per_second, one_way.write_bytes_per_second), (Some(1_572_864), None));
        assert_eq!(one_way.read_iops, None);
        assert_eq!(
            one_way.to_string(),
            "read_mibps=1.5 (read unlimited IOPS and 1.5 MiB/s, write unlimited IOPS and unlimited MiB/s)"
        );
    }

    #[test]
    fn a_profile_with_a_zero_negative_or_non_finite_limit_is_refused_in_one_line() {
        for (profile, why) in [
            ("", "is not a profile or a limit"),
            ("gp2", "is not a profile or a limit"),
            ("iops=0", "iops=0 is not a limit above 0"),
            ("iops=-5", "iops=-5 is not a limit above 0"),
            ("mibps=inf", "mibps=inf is not a finite number"),
            ("mibps=1e400", "mibps=1e400 is not a finite number"),
            ("mibps=NaN", "mibps=NaN is not a finite number"),
            ("iops=5;mibps=3", "iops=5;mibps=3: \"5;mibps=3\" is not a number"),
            ("read_iops=0x10", "read_iops=0x10: \"0x10\" is not a number"),
            ("iops=1.5", "iops=1.5 is not a whole number"),
            ("iops=1,iops=2", "iops is given twice"),
            ("latency=5", "latency is not a limit"),
            ("mibps=1e-9", "mibps=1e-9 is under 1 MiB/s, the least a profile holds a volume to"),
            ("mibps=1e30", "is not a bandwidth a kernel can hold a device to"),
            ("iops=1e300", "IOPS is beyond any device"),
        ] {
            let error = parse_profile(profile).unwrap_err();
            assert!(error.contains(why), "{profile}: {error}");
            assert!(!error.contains('\n'), "{error}");
        }
    }
}

//! The embedded target: the real ClickHouse engine in this process (libchdb).
//!
//! The engine opens one storage folder at a time. A process works in its own folder,
//! `target/chbench/embedded/<pid>/`: empty, or a hard-linked copy of a prepared dataset
//! (as ClickHouse's performance CI does with `cp -al`), removed when the process's last
//! embedded target is dropped. A process ended by a signal runs no code, so its folder
//! stays (`xtask` turns Ctrl-C into an error for that reason); folders of processes that
//! no longer run are removed at the next start. Set `CHBENCH_KEEP_DATA=1` to keep the
//! folder for inspection.
//! Datasets are built in a folder of their own ([`Storage::Build`]), kept.
//!
//! Statement settings are applied as `SET` and restored after the statement; session
//! settings stay until restored, which is what lets the measurement window hold the
//! statement alone.
//!
//! Concurrent clients each get a connection of their own on the folder the target has
//! open (the engine runs connections on one folder in parallel, and they see the same
//! tables); they never claim, copy or remove the folder, which stays the target's.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow, bail};

use super::chdb::{self, Connection};
use super::{Backend, Capabilities, ClientOpener, Concurrency, DatasetProvision, ResultCounters, StatsSource, Storage};
use crate::settings::Settings;

/// What the embedded engine can do.
pub const CAPABILITIES: Capabilities = Capabilities {
    // libchdb's C API has no query_log (docs/embedded-engine.md).
    stats_source: StatsSource::ResultAndEventsDelta,
    // One connection, one session: a `SET` stays until changed.
    session_settings_persist: true,
    // The engine opens one folder at a time, so each process gets its own copy.
    datasets: DatasetProvision::HardLinkedCopy,
    caches_droppable: true,
    engine_in_process: true,
    // Connections on the one folder run at once (two threads on one connection would
    // queue), but system.events is process-wide: while others run, a statement's events
    // delta holds theirs too (docs/embedded-engine.md).
    concurrent_queries: Concurrency::Parallel { events_per_statement: false },
    deployed_by_chbench: false,
    // Its library is stripped and keeps no system.trace_log: no flame graphs.
    query_profiler: false,
    in_cluster_load: false,
};

/// Opens the embedded engine on `storage` (the kind's opener for `targets::spec`).
pub fn open(storage: &Storage) -> Result<Box<dyn Backend>> {
    Ok(Box::new(EmbeddedTarget::open(storage)?))
}

/// How many embedded targets use this process's folder (it goes with the last).
static OPEN_TARGETS: Mutex<usize> = Mutex::new(0);

pub struct EmbeddedTarget {
    // Fields drop in declaration order: the connection closes before the storage
    // guard may remove the folder.
    connection: Connection,
    _storage: Option<StorageGuard>,
    /// The folder the engine keeps this target's data in.
    folder: PathBuf,
    library: PathBuf,
    session: Settings,
}

/// Counts the targets using this process's folder and removes it with the last one.
struct StorageGuard {
    storage: PathBuf,
}

impl Drop for StorageGuard {
    fn drop(&mut self) {
        let Ok(mut open_targets) = OPEN_TARGETS.lock() else { return };
        *open_targets = open_targets.saturating_sub(1);
        if *open_targets == 0 && std::env::var_os("CHBENCH_KEEP_DATA").is_none() {
            // Best effort: a folder left behind is removed at the next start.
            let _ = fs::remove_dir_all(&self.storage);
        }
    }
}

impl EmbeddedTarget {
    /// Loads the engine (fetching it first if needed) and connects to `storage`, with
    /// the session defaults in force.
    pub fn open(storage: &Storage) -> Result<EmbeddedTarget> {
        let library = chdb::ensure_loaded()?;
        let (folder, guard) = match storage {
            Storage::Build(folder) => {
                fs::create_dir_all(folder)
                    .with_context(|| format!("cannot create the dataset folder {}", folder.display()))?;
                (folder.clone(), None)
            }
            Storage::Scratch => claim_process_folder(None)?,
            Storage::CopyOf(dataset) => claim_process_folder(Some(dataset))?,
        };
        // If the connection fails, dropping the guard gives the folder back.
        EmbeddedTarget::connect(&folder, guard, library)
    }

    /// A connection to `folder` with the session defaults in force, holding `guard`'s use
    /// of the folder if it has one.
    fn connect(folder: &Path, guard: Option<StorageGuard>, library: PathBuf) -> Result<EmbeddedTarget> {
        let connection = Connection::open(folder)?;
        let session = Settings::session_defaults();
        let target = EmbeddedTarget { connection, _storage: guard, folder: folder.to_path_buf(), library, session };
        for statement in target.session.set_statements() {
            target
                .connection
                .query(&statement, "TabSeparated")
                .with_context(|| format!("cannot apply `{statement}`"))?;
        }
        Ok(target)
    }

    /// Whether the engine's folder is on the storage profile's volume.
    fn on_volume(&self) -> bool {
        super::volume::active_engine_folder().is_some_and(|volume| self.folder.starts_with(volume))
    }
}

impl Backend for EmbeddedTarget {
    fn storage_folder(&self) -> Option<PathBuf> {
        Some(self.folder.clone())
    }

    fn storage_volume(&self) -> Option<super::volume::StorageVolume> {
        self.on_volume().then(super::volume::active_record).flatten()
    }

    /// The storage profile's volume's baseline, when the folder is on one: measured when
    /// the volume was made (fio's job, or the probe where fio is not installed).
    fn storage_baseline(&mut self) -> Result<Option<crate::storage_baseline::StorageBaseline>> {
        if self.on_volume() { super::volume::active_baseline() } else { Ok(None) }
    }

    fn use_database(&mut self, name: &str) -> Result<()> {
        self.connection.query(&format!("USE {name}"), "TabSeparated")?;
        Ok(())
    }

    /// Puts `settings` in force for the following statements (`SET`).
    fn apply_session_settings(&mut self, settings: &Settings) -> Result<()> {
        for statement in settings.set_statements() {
            self.connection.query(&statement, "TabSeparated").with_context(|| format!("cannot apply `{statement}`"))?;
        }
        Ok(())
    }

    /// Puts the session's values of `settings` back in force (the engine default for
    /// settings the session does not set).
    fn restore_session_settings(&mut self, settings: &Settings) -> Result<()> {
        for (name, _) in settings.iter() {
            let session_value = self.session.get(name).unwrap_or("DEFAULT");
            let restore = Settings::new().with(name, session_value).set_statements().concat();
            self.connection.query(&restore, "TabSeparated").with_context(|| format!("cannot restore `{restore}`"))?;
        }
        Ok(())
    }

    /// Runs one statement with statement-level settings applied as `SET` before it and
    /// the session's values restored after it, whether it succeeded or not.
    fn run(&mut self, sql: &str, settings: &Settings, format: &str) -> Result<(String, ResultCounters)> {
        self.apply_session_settings(settings)?;
        let outcome = self.connection.query(sql, format);
        let restored = self.restore_session_settings(settings);
        // The statement's own error first; a failed restore matters when it ran.
        let output = outcome?;
        restored?;
        let counters = ResultCounters {
            read_rows: Some(output.storage_rows_read),
            read_bytes: Some(output.storage_bytes_read),
            result_rows: Some(output.result_rows),
            elapsed_us: output.elapsed.map(|elapsed| u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)),
            memory_usage: None,
        };
        Ok((output.body, counters))
    }

    fn endpoint(&self) -> String {
        format!("libchdb at {}", self.library.display())
    }

    /// Another connection on the folder this target has open, which stays open (and this
    /// target's) while the client's connection lives: no guard, so the client never
    /// removes it.
    fn client_opener(&self) -> Result<ClientOpener> {
        let folder = self.connection.storage().to_path_buf();
        let library = self.library.clone();
        Ok(Box::new(move || Ok(Box::new(EmbeddedTarget::connect(&folder, None, library.clone())?) as Box<dyn Backend>)))
    }
}

/// Takes a use of this process's folder, given back when the guard drops: the first use
/// (re)creates it, empty or as a copy of `dataset`; a dataset can only be copied in while
/// nothing else uses it.
fn claim_process_folder(dataset: Option<&Path>) -> Result<(PathBuf, Option<StorageGuard>)> {
    let folder = process_storage_dir();
    let mut open_targets = OPEN_TARGETS.lock().map_err(|_| anyhow!("embedded target counter poisoned"))?;
    if *open_targets == 0 {
        remove_stale_storage_dirs();
        if folder.exists() {
            fs::remove_dir_all(&folder).with_context(|| format!("cannot clear {}", folder.display()))?;
        }
        match dataset {
            Some(dataset) => hard_link_copy(dataset, &folder)
                .with_context(|| format!("cannot copy the dataset {} to {}", dataset.display(), folder.display()))?,
            None => fs::create_dir_all(&folder)
                .with_context(|| format!("cannot create the engine's storage folder {}", folder.display()))?,
        }
    } else if let Some(dataset) = dataset {
        bail!(
            "cannot open the dataset {}: this process already has an embedded target open, and the engine \
             opens one folder at a time (open the dataset first, or close the other target)",
            dataset.display()
        );
    }
    *open_targets += 1;
    Ok((folder.clone(), Some(StorageGuard { storage: folder })))
}

/// Copies a folder tree with hard links for files (MergeTree parts are immutable, so a
/// copy costs no data), leaving out the engine's `status` lock file.
pub fn hard_link_copy(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", from.display()))?;
        let source = entry.path();
        let destination = to.join(entry.file_name());
        let file_type = entry.file_type().with_context(|| format!("cannot stat {}", source.display()))?;
        if file_type.is_dir() {
            hard_link_copy(&source, &destination)?;
        } else if file_type.is_symlink() {
            let link = fs::read_link(&source).with_context(|| format!("cannot read link {}", source.display()))?;
            std::os::unix::fs::symlink(link, &destination)
                .with_context(|| format!("cannot link {}", destination.display()))?;
        } else if entry.file_name() != "status" {
            // A storage profile's volume is another file system: there, a copy.
            fs::hard_link(&source, &destination)
                .or_else(|error| match error.kind() {
                    std::io::ErrorKind::CrossesDevices => fs::copy(&source, &destination).map(|_| ()),
                    _ => Err(error),
                })
                .with_context(|| format!("cannot link {}", destination.display()))?;
        }
    }
    Ok(())
}

/// Where the embedded engines of this process keep their data: on the storage profile's
/// volume while one is active (`--storage`), else in this process's folder beside the
/// others'.
fn process_storage_dir() -> PathBuf {
    super::volume::active_engine_folder().unwrap_or_else(|| storage_dir_of_process(std::process::id()))
}

/// Where the embedded engines of process `pid` keep (or kept) their data.
pub fn storage_dir_of_process(pid: u32) -> PathBuf {
    storage_root().join(pid.to_string())
}

fn storage_root() -> PathBuf {
    crate::files::chbench_dir().join("embedded")
}

/// Removes storage folders of processes that no longer run (Linux: `/proc/<pid>`).
fn remove_stale_storage_dirs() {
    let Ok(entries) = fs::read_dir(storage_root()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
        if pid != std::process::id() && cfg!(target_os = "linux") && !Path::new("/proc").join(pid.to_string()).exists()
        {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

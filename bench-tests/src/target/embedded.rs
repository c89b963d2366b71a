//! The embedded target: the real ClickHouse engine in this process (libchdb).
//!
//! One storage folder per process (the engine refuses a second one), under
//! `target/chbench/embedded/<pid>/`, removed when the process's last embedded target
//! is dropped; folders left by processes that no longer run are removed at the next
//! start. Set `CHBENCH_KEEP_DATA=1` to keep the folder for inspection.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};

use super::ResultCounters;
use super::chdb::{self, Connection};
use crate::settings::Settings;

/// How many embedded targets are open in this process (the folder goes with the last).
static OPEN_TARGETS: Mutex<usize> = Mutex::new(0);

pub struct EmbeddedTarget {
    // Fields drop in declaration order: the connection closes before the storage
    // guard may remove the folder.
    connection: Connection,
    _storage: StorageGuard,
    library: PathBuf,
    session: Settings,
}

/// Counts this process's open targets and removes the storage folder with the last one.
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
    /// Loads the engine (fetching it first if needed) and connects to this process's
    /// storage folder, with the session defaults in force.
    pub fn open() -> Result<EmbeddedTarget> {
        let library = chdb::ensure_loaded()?;
        let storage = process_storage_dir();
        let mut open_targets = OPEN_TARGETS.lock().map_err(|_| anyhow!("embedded target counter poisoned"))?;
        if *open_targets == 0 {
            remove_stale_storage_dirs();
            fs::create_dir_all(&storage)
                .with_context(|| format!("cannot create the engine's storage folder {}", storage.display()))?;
        }
        let connection = Connection::open(&storage)?;
        *open_targets += 1;
        drop(open_targets);
        let session = Settings::session_defaults();
        let target = EmbeddedTarget { connection, _storage: StorageGuard { storage }, library, session };
        for statement in target.session.set_statements() {
            target
                .connection
                .query(&statement, "TabSeparated")
                .with_context(|| format!("cannot apply `{statement}`"))?;
        }
        Ok(target)
    }

    pub fn library_path(&self) -> &Path {
        &self.library
    }

    pub fn use_database(&mut self, name: &str) -> Result<()> {
        self.connection.query(&format!("USE {name}"), "TabSeparated")?;
        Ok(())
    }

    /// Puts `settings` in force for the following statements (`SET`).
    pub fn apply_settings(&mut self, settings: &Settings) -> Result<()> {
        for statement in settings.set_statements() {
            self.connection.query(&statement, "TabSeparated").with_context(|| format!("cannot apply `{statement}`"))?;
        }
        Ok(())
    }

    /// Puts the session's values of `settings` back in force (the engine default for
    /// settings the session does not set).
    pub fn restore_settings(&mut self, settings: &Settings) -> Result<()> {
        for (name, _) in settings.iter() {
            let session_value = self.session.get(name).unwrap_or("DEFAULT");
            let restore = Settings::new().with(name, session_value).set_statements().concat();
            self.connection.query(&restore, "TabSeparated").with_context(|| format!("cannot restore `{restore}`"))?;
        }
        Ok(())
    }

    /// Runs one statement with statement-level settings applied as `SET` before it and
    /// the session's values restored after it, whether it succeeded or not.
    pub fn run(&mut self, sql: &str, settings: &Settings, format: &str) -> Result<(String, ResultCounters)> {
        self.apply_settings(settings)?;
        let outcome = self.connection.query(sql, format);
        self.restore_settings(settings)?;
        let output = outcome?;
        let counters = ResultCounters {
            read_rows: Some(output.storage_rows_read),
            read_bytes: Some(output.storage_bytes_read),
            result_rows: Some(output.result_rows),
            elapsed_us: Some(u64::try_from(output.elapsed.as_micros()).unwrap_or(u64::MAX)),
            memory_usage: None,
        };
        Ok((output.body, counters))
    }
}

/// Where the embedded engines of this process keep their data.
fn process_storage_dir() -> PathBuf {
    storage_root().join(std::process::id().to_string())
}

fn storage_root() -> PathBuf {
    crate::engine::cache_dir().join("..").join("..").join("embedded")
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

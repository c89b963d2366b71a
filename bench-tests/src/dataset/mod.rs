//! Prepared datasets: built once per (statements, engine) and reused by every process.
//! Each engine version has its own builds, side by side: a build supersedes only the
//! builds of the same dataset on the same version.
//!
//! A [`Dataset`] is a list of fixture files run in order in one database, with their
//! parameters (the row count, say). Its key hashes the rendered statements
//! and the engine's identity, so changing a generator, a row count or the engine builds
//! a new one; nothing else does.
//!
//! How a dataset reaches a process is the target's capability
//! ([`Capabilities::datasets`](crate::targets::Capabilities::datasets)), never its name:
//!
//! - [`DatasetProvision::HardLinkedCopy`] (the embedded engine): built once in
//!   `target/chbench/datasets/<name>-<key>/` (under a lock, so concurrent test processes
//!   wait for one builder), then each process opens a hard-linked copy of it
//!   ([`Storage::CopyOf`]) and may change its copy freely. A build works in
//!   `<name>-<key>.building/`, renamed when complete and removed when it fails; one left
//!   by a builder that died is removed at the next open.
//! - [`DatasetProvision::SharedDatabase`] (servers): built once into a database of the
//!   builder's own, with a manifest table created last, then renamed to `<name>_<key>`
//!   (two builders never write into one database; the first rename wins). Processes share
//!   it and must not change it.
//!
//! After every fixture the build waits for the database's mutations to finish, so a
//! `MATERIALIZE INDEX` is complete before anything measures the index.
//!
//! Before a build, the rows it asks for are checked against a sane bound
//! ([`MAX_ROWS`]) and, where the build writes to this machine's disk, against the free
//! space there ([`check_fits`]), by the bytes per row a smaller build of the same dataset
//! measured (or a documented figure when none did): one line with the estimate and the
//! free space, before anything is written.
//!
//! One submodule per dataset says how its parameters scale.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::files::{free_bytes, shown};
use crate::fixtures::{Fixture, Params, Statement};
use crate::guard;
use crate::sql::sql_string;
use crate::table_parts::wait_for_mutations;
use crate::target_info::TargetKind;
use crate::targets::{
    DatasetProvision, Storage, Target, engine_version_of, open_target_of_kind, open_target_on, resolve_kind,
};
use crate::units::human_bytes;

/// How long a build may wait for one fixture's mutations.
const MUTATION_TIMEOUT: Duration = Duration::from_secs(600);
/// The file in a built dataset folder that says what it holds.
const MANIFEST_FILE: &str = "chbench-dataset.json";
/// The table that marks a dataset on a server as complete.
const MANIFEST_TABLE: &str = "chbench_dataset_manifest";

/// The most rows chbench generates into one table: 100 times the source's 100 M, hours of
/// ingest and terabytes of disk; more is a typo (a missing suffix, a `G` for an `M`), and
/// past the disk check it would only fail later (timestamps past DateTime64's range).
pub const MAX_ROWS: u64 = 10_000_000_000;
/// Bytes per row a build writes when no smaller build of the dataset measured its own:
/// the largest figure measured here, the logs benchmark's peak at 100 M rows (19.6 GB,
/// 196 bytes/row), plus 25 % (docs/embedded-engine.md, "Disk").
pub const UNMEASURED_BYTES_PER_ROW: u64 = 250;

/// A dataset: fixture files (relative to `fixtures/`) run in order in `database`.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Names the dataset's folder or database (letters, digits, `_`).
    pub name: String,
    /// The database the fixtures run in; scenarios find the tables there.
    pub database: String,
    pub fixtures: Vec<String>,
    pub params: Params,
    /// Set for a scenario pack's dataset, SQL from outside the tool: the queries that will
    /// run on it. Its own statements and these are checked by the engine's parser
    /// ([`crate::guard`]) before any of them runs, built or reused. `None` for the tool's
    /// own fixtures.
    pub guarded_queries: Option<Vec<Statement>>,
}

/// What a built dataset records about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetManifest {
    pub name: String,
    pub key: String,
    pub engine_version: String,
    pub database: String,
    /// The statements as run, in order, with the file each came from.
    pub statements: Vec<(String, String)>,
    pub build_seconds: f64,
}

impl Dataset {
    pub fn new(name: &str, database: &str, fixtures: &[&str], params: Params) -> Dataset {
        Dataset {
            name: name.to_string(),
            database: database.to_string(),
            fixtures: fixtures.iter().map(|fixture| fixture.to_string()).collect(),
            params,
            guarded_queries: None,
        }
    }

    /// For a pack's dataset: [`Dataset::guarded_queries`].
    pub fn guarded(self, queries: Vec<Statement>) -> Dataset {
        Dataset { guarded_queries: Some(queries), ..self }
    }

    /// A guarded dataset's statements and queries, each checked by `target`'s parser;
    /// nothing for the tool's own.
    fn check_guarded(&self, target: &mut Target) -> Result<()> {
        let Some(queries) = &self.guarded_queries else { return Ok(()) };
        guard::check_database(target, &self.database, &self.name)?;
        let statements: Vec<Statement> = self.statements()?.into_iter().map(|(_, statement)| statement).collect();
        guard::check_statements(target, &statements, queries)
    }

    /// Every statement the build runs, with the fixture file it came from (relative to
    /// `fixtures/`, or whole for a pack elsewhere).
    pub fn statements(&self) -> Result<Vec<(String, Statement)>> {
        let mut statements = Vec::new();
        for relative in &self.fixtures {
            // A pack's file outside fixtures/ (CHBENCH_PACKS_DIR) is given whole, and its
            // pack's loader checked it is the pack's own plain file.
            let fixture = match std::path::Path::new(relative).is_absolute() {
                true => Fixture::read(std::path::Path::new(relative))?,
                false => Fixture::load(relative)?,
            };
            for statement in fixture.render_dataset(&self.params)? {
                statements.push((relative.clone(), statement));
            }
        }
        Ok(statements)
    }

    /// The hash of the statements and of the engine identity, shortened.
    pub fn key(&self, engine_identity: &str) -> Result<String> {
        let mut hasher = Sha256::new();
        hasher.update(engine_identity.as_bytes());
        hasher.update(self.database.as_bytes());
        // The statements, not the files they come from: the same SQL in another folder
        // (a pack copied elsewhere) is the same dataset.
        for (_, statement) in self.statements()? {
            hasher.update(b"\0");
            hasher.update(statement.sql.as_bytes());
        }
        Ok(hasher.finalize().iter().take(8).map(|byte| format!("{byte:02x}")).collect())
    }

    /// Opens the target chosen by `CHBENCH_TARGET` on this dataset, building it first if
    /// no build with the same key exists, with the dataset's database current.
    pub fn open(&self) -> Result<(Target, DatasetManifest)> {
        self.open_on(TargetKind::from_env()?)
    }

    /// [`Dataset::open`] on a target of the given kind (`auto` asks Docker first).
    pub fn open_on(&self, kind: TargetKind) -> Result<(Target, DatasetManifest)> {
        if let Some(rows) = self.rows() {
            check_row_bound(&self.described(rows), rows)?;
        }
        let kind = resolve_kind(kind);
        match crate::targets::spec(kind).capabilities.datasets {
            DatasetProvision::HardLinkedCopy => self.open_copy(kind),
            DatasetProvision::SharedDatabase => self.open_on_server(open_target_of_kind(kind)?),
        }
    }

    /// The dataset's `{rows}`, when it has one.
    pub fn rows(&self) -> Option<u64> {
        self.params.get("rows").and_then(|rows| rows.parse().ok())
    }

    /// Opens a hard-linked copy of the dataset's folder on `kind`, building the folder
    /// first if needed.
    fn open_copy(&self, kind: TargetKind) -> Result<(Target, DatasetManifest)> {
        // The folder is in the engine's own format: the kind and version are its identity.
        let key = self.key(&format!("{kind} {}", engine_version(kind)?))?;
        let root = datasets_root();
        let folder = root.join(format!("{}-{key}", self.name));
        fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
        remove_abandoned_builds(&root);
        let manifest = match read_manifest(&folder) {
            Some(manifest) => manifest,
            None => {
                // The same name `remove_abandoned_builds` derives from a `.building` folder.
                let lock_path = folder.with_extension("lock");
                let lock =
                    File::create(&lock_path).with_context(|| format!("cannot create {}", lock_path.display()))?;
                lock.lock().with_context(|| format!("cannot lock {}", lock_path.display()))?;
                // Another process may have built it while we waited.
                match read_manifest(&folder) {
                    Some(manifest) => manifest,
                    None => {
                        if let Some(rows) = self.rows() {
                            check_fits(
                                &self.described(rows),
                                rows,
                                &measured_bytes_per_row(&root, &self.name, rows),
                                &root,
                            )?;
                        }
                        let manifest = self.build_folder(kind, &folder, &key)?;
                        remove_superseded_builds(&root, &self.name, &key, &manifest.engine_version);
                        manifest
                    }
                }
            }
        };
        let mut target = open_target_on(kind, &Storage::CopyOf(folder.clone()))
            .with_context(|| format!("cannot open a copy of dataset {}", folder.display()))?;
        // Again for a build made before: nothing of it runs again, but its queries will.
        self.check_guarded(&mut target)?;
        target.use_database(&self.database)?;
        Ok((target, manifest))
    }

    /// Builds into `<folder>.building`, renamed to `folder` once complete. The caller
    /// holds the dataset's build lock.
    fn build_folder(&self, kind: TargetKind, folder: &Path, key: &str) -> Result<DatasetManifest> {
        let building = BuildingFolder::create(folder.with_extension("building"))?;
        crate::say!("chbench: building dataset {} into {}", self.name, folder.display());
        // The engine closes the folder at the end of this block, before it is renamed or,
        // on an error, removed.
        let (manifest, replaced_parts) = {
            let mut target = open_target_on(kind, &Storage::Build(building.path.clone()))?;
            let manifest = self.build(&mut target, key)?;
            (manifest, replaced_part_folders(&mut target)?)
        };
        // Parts that merges replaced stay on disk for minutes (docs/embedded-engine.md) and
        // no query reads them again; left in the dataset, every copy of it would link,
        // load and remove them (for 140 partitions after one OPTIMIZE, 60 % of its files).
        let root =
            building.path.canonicalize().with_context(|| format!("cannot resolve {}", building.path.display()))?;
        for part in replaced_parts.iter().filter(|part| part.starts_with(&root)) {
            fs::remove_dir_all(part).with_context(|| format!("cannot remove the replaced part {}", part.display()))?;
        }
        let text = serde_json::to_string_pretty(&manifest)?;
        let manifest_path = building.path.join(MANIFEST_FILE);
        fs::write(&manifest_path, text).with_context(|| format!("cannot write {}", manifest_path.display()))?;
        building.complete(folder)?;
        Ok(manifest)
    }

    /// Runs every fixture in a fresh database named after the dataset's, waiting for
    /// mutations after each: what [`Dataset::open`] does once per key. Called directly,
    /// it builds again whatever is cached (a determinism check does).
    pub fn build(&self, target: &mut Target, key: &str) -> Result<DatasetManifest> {
        let started = Instant::now();
        self.check_guarded(target)?;
        target.use_fresh_database(&self.database)?;
        let statements = self.statements()?;
        for (_, statement) in &statements {
            let location = || format!("dataset {}: {}", self.name, statement.location());
            crate::interrupt::check()?;
            target.execute(statement).with_context(location)?;
            wait_for_mutations(target, MUTATION_TIMEOUT).with_context(location)?;
        }
        let statements = statements.into_iter().map(|(file, statement)| (file, statement.sql)).collect();
        Ok(DatasetManifest {
            name: self.name.clone(),
            key: key.to_string(),
            engine_version: target.info().engine_version.clone(),
            database: self.database.clone(),
            statements,
            build_seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// On a server the dataset lives in `<name>_<key>`, complete once its manifest table
    /// exists. The fixtures' own database is not used there: two keys must not collide.
    /// A build works in a database of its own and is renamed into place when complete, so
    /// two processes that build the same dataset at once never write into one database:
    /// the first rename wins, and the other process drops its copy and uses the winner's.
    fn open_on_server(&self, mut target: Target) -> Result<(Target, DatasetManifest)> {
        self.check_guarded(&mut target)?;
        let identity = format!("server {}", target.info().engine_version);
        let key = self.key(&identity)?;
        let database = format!("{}_{key}", self.name);
        if let Some(manifest) = server_manifest(&mut target, &database)? {
            target.use_database(&database)?;
            return Ok((target, manifest));
        }
        let building = format!("{database}_building_{}", uuid::Uuid::new_v4().simple());
        let server_dataset = Dataset { database: building.clone(), ..self.clone() };
        let built = server_dataset.build(&mut target, &key).and_then(|mut manifest| {
            manifest.database = database.clone();
            let text = sql_string(&serde_json::to_string(&manifest)?);
            target.execute(&format!("CREATE TABLE {MANIFEST_TABLE} (manifest String) ENGINE = TinyLog"))?;
            target.execute(&format!("INSERT INTO {MANIFEST_TABLE} VALUES ({text})"))?;
            target.execute(&format!("RENAME DATABASE {building} TO {database}"))?;
            Ok(manifest)
        });
        match built {
            Ok(manifest) => {
                target.use_database(&database)?;
                Ok((target, manifest))
            }
            Err(error) => {
                // Best effort: the error below says what failed, and a copy left behind is
                // only disk on the server, never read (its name has no key of a dataset).
                let _ = target.execute(&format!("DROP DATABASE IF EXISTS {building}"));
                match server_manifest(&mut target, &database)? {
                    // Another process completed the same dataset first.
                    Some(manifest) => {
                        target.use_database(&database)?;
                        Ok((target, manifest))
                    }
                    None => Err(error.context(format!("cannot build dataset {} on the server", self.name))),
                }
            }
        }
    }
}

impl Dataset {
    /// How a refusal names the dataset.
    fn described(&self, rows: u64) -> String {
        format!("dataset {} ({rows} rows)", self.name)
    }
}

/// Bytes per row on disk, and where the figure comes from, as a refusal says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BytesPerRow {
    pub bytes: u64,
    /// E.g. `88 bytes/row measured on the 4000000-row build, doubled`.
    pub basis: String,
}

/// What a run's data takes at its peak, from its inputs: `rows` of `per_row` bytes.
/// `what` names the input (`--rows 20G`). A run checks it against the free space before
/// it starts ([`DiskEstimate::check_fits`]), and a storage profile sizes its volume by it.
#[derive(Debug, Clone)]
pub struct DiskEstimate {
    pub what: String,
    pub rows: u64,
    pub per_row: BytesPerRow,
}

impl DiskEstimate {
    pub fn bytes(&self) -> u64 {
        self.rows.saturating_mul(self.per_row.bytes)
    }

    /// [`check_fits`] of the estimate in `folder`.
    pub fn check_fits(&self, folder: &Path) -> Result<()> {
        check_fits(&self.what, self.rows, &self.per_row, folder)
    }
}

/// Refuses more than [`MAX_ROWS`]; `what` names the input (`--rows 20G`, `dataset x`).
pub fn check_row_bound(what: &str, rows: u64) -> Result<()> {
    if rows > MAX_ROWS {
        bail!(
            "{what} is more than chbench generates into one table ({rows} rows; at most {MAX_ROWS}, 100 times the \
             source's scale); give fewer rows"
        );
    }
    Ok(())
}

/// Refuses `rows` when they exceed [`MAX_ROWS`], or when `rows x per_row` bytes exceed
/// the free space of `folder` (or of its nearest existing parent): one line with the
/// estimate, the folder and its free space. `what` names the input.
pub fn check_fits(what: &str, rows: u64, per_row: &BytesPerRow, folder: &Path) -> Result<()> {
    check_row_bound(what, rows)?;
    let needed = rows.saturating_mul(per_row.bytes);
    let free = free_bytes(folder)?;
    if needed > free {
        bail!(
            "{what} needs about {} in {} ({}), which has {} free; give fewer rows or free space",
            human_bytes(needed),
            shown(folder),
            per_row.basis,
            human_bytes(free)
        );
    }
    Ok(())
}

/// What a build of `name` (`<family>_<rows>`) at `rows` rows will write per row: twice
/// the most a complete build of the same family at another scale holds per row (a build's
/// `OPTIMIZE ... FINAL` keeps the old parts beside the merged ones until it ends), or
/// [`UNMEASURED_BYTES_PER_ROW`] when there is none.
fn measured_bytes_per_row(root: &Path, name: &str, rows: u64) -> BytesPerRow {
    let unmeasured = BytesPerRow {
        bytes: UNMEASURED_BYTES_PER_ROW,
        basis: format!(
            "{UNMEASURED_BYTES_PER_ROW} bytes/row: no build of it measured yet, so the largest figure measured \
             here, plus 25 %"
        ),
    };
    let Some(family) = name.strip_suffix(&format!("_{rows}")) else { return unmeasured };
    let Ok(entries) = fs::read_dir(root) else { return unmeasured };
    let measured = entries
        .flatten()
        .filter_map(|entry| {
            let file_name = entry.file_name().into_string().ok()?;
            let (scale, _key) = file_name.strip_prefix(family)?.strip_prefix('_')?.split_once('-')?;
            let scale: u64 = scale.parse().ok().filter(|&scale| scale > 0)?;
            read_manifest(&entry.path())?;
            Some((folder_bytes(&entry.path()).div_ceil(scale), scale))
        })
        .max();
    match measured {
        Some((bytes, scale)) => BytesPerRow {
            bytes: 2 * bytes,
            basis: format!("{bytes} bytes/row measured on its {scale}-row build, doubled for its merges"),
        },
        None => unmeasured,
    }
}

/// The bytes of the files under `folder`.
fn folder_bytes(folder: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(folder) else { return 0 };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => folder_bytes(&entry.path()),
            Ok(kind) if kind.is_file() => entry.metadata().map_or(0, |metadata| metadata.len()),
            _ => 0,
        })
        .sum()
}

/// The manifest of a complete dataset in `database` on a server, if there is one.
fn server_manifest(target: &mut Target, database: &str) -> Result<Option<DatasetManifest>> {
    let built = target.query_text(&format!(
        "SELECT count() FROM system.tables WHERE database = {} AND name = '{MANIFEST_TABLE}'",
        sql_string(database)
    ))?;
    if built.trim() != "1" {
        return Ok(None);
    }
    let rows: Vec<ManifestRow> = target.query_rows(&format!("SELECT manifest FROM {database}.{MANIFEST_TABLE}"))?;
    let row = rows.first().with_context(|| format!("{database}.{MANIFEST_TABLE} is empty"))?;
    let manifest = serde_json::from_str(&row.manifest).context("unreadable dataset manifest on the server")?;
    Ok(Some(manifest))
}

/// `target/chbench/datasets/`: the built datasets, their build locks, and the folders of
/// builds in progress (`<name>-<key>.building`).
pub fn datasets_root() -> PathBuf {
    crate::files::chbench_dir().join("datasets")
}

/// A build's `.building` folder: removed when dropped, so a failed build leaves nothing,
/// unless the build completed and moved it to its final name.
struct BuildingFolder {
    path: PathBuf,
    completed: bool,
}

impl BuildingFolder {
    /// Starts empty: a folder by that name is what a builder that died left.
    fn create(path: PathBuf) -> Result<BuildingFolder> {
        if path.exists() {
            fs::remove_dir_all(&path).with_context(|| format!("cannot clear {}", path.display()))?;
        }
        Ok(BuildingFolder { path, completed: false })
    }

    fn complete(mut self, folder: &Path) -> Result<()> {
        fs::rename(&self.path, folder).with_context(|| format!("cannot move the dataset to {}", folder.display()))?;
        self.completed = true;
        Ok(())
    }
}

impl Drop for BuildingFolder {
    fn drop(&mut self) {
        if !self.completed
            && let Err(error) = fs::remove_dir_all(&self.path)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            crate::say!("chbench: cannot remove {} ({error}); the next dataset open removes it", self.path.display());
        }
    }
}

/// Removes the `.building` folders of builders that died (killed, say) before they could
/// remove their own. A builder holds `<name>-<key>.lock` for its whole build, so a
/// folder whose lock can be taken has no live builder; one whose lock is held is left
/// alone. The lock is held while the folder is removed, so no build can start in it.
fn remove_abandoned_builds(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let building = entry.path();
        if building.extension().is_none_or(|extension| extension != "building") || !building.is_dir() {
            continue;
        }
        // Try the lock, creating its file if missing, rather than reason from the file's
        // absence: a builder may be creating both right now.
        let lock_path = building.with_extension("lock");
        let Ok(lock) = File::options().create(true).truncate(false).write(true).open(&lock_path) else { continue };
        if lock.try_lock().is_ok() {
            let _ = fs::remove_dir_all(&building);
        }
    }
}

/// The folders of the current database's parts that merges replaced (inactive in
/// `system.parts`), as the engine names them.
fn replaced_part_folders(target: &mut Target) -> Result<Vec<PathBuf>> {
    #[derive(Deserialize)]
    struct PartPath {
        path: String,
    }
    let rows: Vec<PartPath> =
        target.query_rows("SELECT path FROM system.parts WHERE NOT active AND database = currentDatabase()")?;
    Ok(rows.into_iter().map(|row| PathBuf::from(row.path)).collect())
}

/// Removes the other builds of the dataset named `name` on the same engine version
/// (`<name>-<key>` with another key, whose manifest names `engine_version`): the SQL or
/// the scale's files changed since, and each edit of a pack would otherwise leave a copy
/// of its data behind. Builds on other engine versions stay: each version has its own,
/// side by side, so that going back and forth between versions rebuilds nothing. A
/// folder whose manifest cannot be read is no usable build and goes too. A build whose
/// lock is held (being built, or waited for) is left alone; one that is needed again is
/// rebuilt.
fn remove_superseded_builds(root: &Path, name: &str, key: &str, engine_version: &str) {
    let Ok(entries) = fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let folder = entry.path();
        let Some(file_name) = folder.file_name().and_then(|file_name| file_name.to_str()) else { continue };
        let Some(other_key) = file_name.strip_prefix(name).and_then(|rest| rest.strip_prefix('-')) else { continue };
        let is_key = other_key.len() == key.len() && other_key.chars().all(|c| c.is_ascii_hexdigit());
        if !is_key || other_key == key || !folder.is_dir() {
            continue;
        }
        if read_manifest(&folder).is_some_and(|manifest| manifest.engine_version != engine_version) {
            continue;
        }
        let lock_path = folder.with_extension("lock");
        let Ok(lock) = File::options().create(true).truncate(false).write(true).open(&lock_path) else { continue };
        if lock.try_lock().is_ok() {
            let _ = fs::remove_dir_all(&folder);
            let _ = fs::remove_file(&lock_path);
        }
    }
}

#[derive(Debug, Deserialize)]
struct ManifestRow {
    manifest: String,
}

/// The engine version of `kind`, asked once per kind and process: a test that compares
/// two datasets opens both.
fn engine_version(kind: TargetKind) -> Result<String> {
    static VERSIONS: Mutex<Vec<(TargetKind, String)>> = Mutex::new(Vec::new());
    let mut versions = VERSIONS.lock().map_err(|_| anyhow::anyhow!("the engine version cache is poisoned"))?;
    if let Some((_, version)) = versions.iter().find(|(known, _)| *known == kind) {
        return Ok(version.clone());
    }
    let version = engine_version_of(kind).with_context(|| format!("cannot read the {kind} engine's version"))?;
    versions.push((kind, version.clone()));
    Ok(version)
}

fn read_manifest(folder: &Path) -> Option<DatasetManifest> {
    let text = fs::read_to_string(folder.join(MANIFEST_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder_with_a_file(path: &Path) {
        fs::create_dir_all(path).unwrap();
        fs::write(path.join("part"), b"data").unwrap();
    }

    #[test]
    fn a_build_folder_goes_unless_the_build_completes() {
        let root = tempfile::tempdir().unwrap();
        let failed = root.path().join("failed-01.building");
        let building = BuildingFolder::create(failed.clone()).unwrap();
        folder_with_a_file(&failed);
        drop(building);
        assert!(!failed.exists());

        let completed = root.path().join("completed-02.building");
        let building = BuildingFolder::create(completed.clone()).unwrap();
        folder_with_a_file(&completed);
        building.complete(&root.path().join("completed-02")).unwrap();
        assert!(root.path().join("completed-02/part").is_file() && !completed.exists());
    }

    #[test]
    fn a_new_build_removes_the_builds_it_supersedes_and_no_other() {
        let root = tempfile::tempdir().unwrap();
        let key = "00000000000000aa";
        for folder in
            ["t_by_day_1000-00000000000000aa", "t_by_day_1000-00000000000000bb", "t_by_day_10000-00000000000000cc"]
        {
            complete_build_on(root.path(), folder, 10, "26.7.2.1");
        }
        // A build of another key in progress: its lock is held.
        folder_with_a_file(&root.path().join("t_by_day_1000-00000000000000dd"));
        let lock = File::create(root.path().join("t_by_day_1000-00000000000000dd.lock")).unwrap();
        lock.lock().unwrap();
        // The same dataset built on another engine version: its own build, kept.
        complete_build_on(root.path(), "t_by_day_1000-00000000000000ee", 10, "26.5.1.1");
        // A folder with no manifest is no build: it goes.
        folder_with_a_file(&root.path().join("t_by_day_1000-00000000000000ff"));
        remove_superseded_builds(root.path(), "t_by_day_1000", key, "26.7.2.1");
        assert_eq!(
            builds_left(root.path()),
            [
                "t_by_day_1000-00000000000000aa",
                "t_by_day_1000-00000000000000dd",
                "t_by_day_1000-00000000000000ee",
                "t_by_day_10000-00000000000000cc"
            ]
        );
        // A new build on the other version supersedes only that version's.
        complete_build_on(root.path(), "t_by_day_1000-0000000000000011", 10, "26.5.1.1");
        remove_superseded_builds(root.path(), "t_by_day_1000", "0000000000000011", "26.5.1.1");
        assert_eq!(
            builds_left(root.path()),
            [
                "t_by_day_1000-0000000000000011",
                "t_by_day_1000-00000000000000aa",
                "t_by_day_1000-00000000000000dd",
                "t_by_day_10000-00000000000000cc"
            ]
        );
        drop(lock);
    }

    /// The folders under `root`, sorted, locks left out.
    fn builds_left(root: &Path) -> Vec<String> {
        let mut left: Vec<String> = fs::read_dir(root)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !name.ends_with(".lock"))
            .collect();
        left.sort();
        left
    }

    #[test]
    fn only_build_folders_whose_lock_nobody_holds_are_removed() {
        let root = tempfile::tempdir().unwrap();
        let abandoned = root.path().join("abandoned-01.building");
        let live = root.path().join("live-02.building");
        folder_with_a_file(&abandoned);
        folder_with_a_file(&live);
        // A builder's lock, as `open_copy` takes it (another open file, so another
        // holder even within this process).
        let lock = File::create(root.path().join("live-02.lock")).unwrap();
        lock.lock().unwrap();
        remove_abandoned_builds(root.path());
        assert!(!abandoned.exists(), "nobody held its lock");
        assert!(live.join("part").is_file(), "its builder holds the lock");
        drop(lock);
        remove_abandoned_builds(root.path());
        assert!(!live.exists(), "its builder is gone");
    }

    /// A complete build of `name` holding `bytes` of data besides its manifest.
    fn complete_build(root: &Path, name: &str, bytes: usize) -> u64 {
        complete_build_on(root, name, bytes, "26.7.2.1")
    }

    /// [`complete_build`] by an engine that reports `engine_version`.
    fn complete_build_on(root: &Path, name: &str, bytes: usize, engine_version: &str) -> u64 {
        let folder = root.join(name);
        folder_with_a_file(&folder);
        fs::write(folder.join("part"), vec![0u8; bytes]).unwrap();
        // read_manifest needs a manifest that parses.
        let manifest = DatasetManifest {
            name: name.to_string(),
            key: "00".to_string(),
            engine_version: engine_version.to_string(),
            database: "p".to_string(),
            statements: Vec::new(),
            build_seconds: 0.0,
        };
        fs::write(folder.join(MANIFEST_FILE), serde_json::to_string(&manifest).unwrap()).unwrap();
        folder_bytes(&folder)
    }

    #[test]
    fn a_build_is_estimated_by_a_smaller_build_of_it_and_refused_beyond_the_free_space() {
        let root = tempfile::tempdir().unwrap();
        let held = complete_build(root.path(), "p_d_1000-00000000000000aa", 88_000);
        // Another family, and a build in progress: not measurements of p_d.
        complete_build(root.path(), "p_other_1000-00000000000000bb", 900_000);
        folder_with_a_file(&root.path().join("p_d_100-00000000000000cc.building"));
        let per_row = measured_bytes_per_row(root.path(), "p_d_10000000000", 10_000_000_000);
        let measured = held.div_ceil(1000);
        assert_eq!(per_row.bytes, 2 * measured);
        assert_eq!(
            per_row.basis,
            format!("{measured} bytes/row measured on its 1000-row build, doubled for its merges")
        );
        let error = check_fits("dataset p_d_10000000000", 10_000_000_000, &per_row, root.path()).unwrap_err();
        let free = human_bytes(free_bytes(root.path()).unwrap());
        assert_eq!(
            error.to_string(),
            format!(
                "dataset p_d_10000000000 needs about {} in {} ({}), which has {free} free; give fewer rows or free \
                 space",
                human_bytes(10_000_000_000 * 2 * measured),
                root.path().display(),
                per_row.basis
            )
        );
        // What fits passes; no build measured: the documented figure.
        check_fits("dataset p_d_10", 10, &per_row, root.path()).unwrap();
        let unmeasured = measured_bytes_per_row(root.path(), "q_d_1000", 1000);
        assert_eq!(unmeasured.bytes, UNMEASURED_BYTES_PER_ROW);
        // Beyond the bound, whatever the disk.
        let error = check_fits("dataset p_d_20G", 2 * MAX_ROWS, &per_row, root.path()).unwrap_err().to_string();
        assert!(error.starts_with("dataset p_d_20G is more than chbench generates into one table"), "{error}");
        // A folder not made yet: its parent's file system says.
        assert!(free_bytes(&root.path().join("not/yet")).is_ok());
    }
}

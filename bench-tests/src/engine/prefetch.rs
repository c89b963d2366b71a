//! What to fetch (the pinned versions, each platform's package) and the download started
//! early: this crate's build script calls [`start`] for the default version while the
//! rest of the build compiles, so that a fresh clone's first run finds the tarball on disk. Only `std` here, since
//! the build script compiles this file on its own.
//!
//! `npm pack` runs detached into a staging folder of its own, `prefetch-<pid>/` in the
//! engine cache, with the tarball's name in `npm-output`. It never writes the library:
//! [`super::provision`] takes the tarball under its lock, extracts it and checks it as
//! it checks its own download, and falls back to that download when anything is amiss
//! (npm failed, offline, a tarball cut short). A failed start is not an error: the run
//! fetches as before.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One engine build the project pins: its npm version, the ClickHouse version it
/// reports, and the libraries checked here. Every snapshot and results bundle records the
/// ClickHouse version the library reports (`SELECT version()`), not the npm version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineVersion {
    /// The npm version of `@chdb/lib-<platform>`, as `--engine-version` names it.
    pub npm_version: &'static str,
    /// What `SELECT version()` answers on it.
    pub clickhouse_version: &'static str,
    /// Each platform package whose `package/libchdb.so` was checked: its npm name, SHA-256
    /// and size. A platform missing here has its download trusted.
    pub libraries: &'static [PinnedLibrary],
}

/// One platform package's `package/libchdb.so`, as checked here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedLibrary {
    pub npm_name: &'static str,
    pub sha256: &'static str,
    pub size: u64,
}

/// The pinned engine builds, the default first. Each was fetched with `npm pack` and its
/// library hashed here (2026-12-01); the registry these machines reach publishes no
/// linux-arm64 or macOS package, so only the linux-x64 one has a hash.
pub const ENGINE_VERSIONS: &[EngineVersion] = &[
    EngineVersion {
        npm_version: "26.7.3-stable.1",
        clickhouse_version: "26.7.2.1",
        libraries: &[PinnedLibrary {
            npm_name: "@chdb/lib-linux-x64-gnu",
            sha256: "36ad4e999882821ef13cf2d0f52c93f48e6ee1b4498b35a201c23ce4b8d15bf5",
            size: 566_330_096,
        }],
    },
    EngineVersion {
        npm_version: "26.5.3",
        clickhouse_version: "26.5.1.1",
        libraries: &[PinnedLibrary {
            npm_name: "@chdb/lib-linux-x64-gnu",
            sha256: "4330da79405733f7572f27c1442f46c03a08301f00859dce0368645731b1e1dc",
            size: 559_044_752,
        }],
    },
];

/// The engine used unless another is asked for (`--engine-version`, `CHBENCH_ENGINE_VERSION`).
pub const DEFAULT_ENGINE: &EngineVersion = &ENGINE_VERSIONS[0];

/// The default engine's npm version: the one the build script prefetches.
pub const CHDB_NPM_VERSION: &str = DEFAULT_ENGINE.npm_version;

/// One platform's npm package at one engine version, and what we know of its library.
#[derive(Debug, Clone, Copy)]
pub struct EnginePackage {
    pub npm_name: &'static str,
    pub npm_version: &'static str,
    /// SHA-256 and size of `package/libchdb.so`, where checked.
    pub pinned: Option<(&'static str, u64)>,
}

impl EnginePackage {
    /// What `npm pack` fetches: `<name>@<version>`.
    pub fn spec(&self) -> String {
        format!("{}@{}", self.npm_name, self.npm_version)
    }
}

/// The package of a platform (`std::env::consts` names; `gnu`: linked against glibc, which
/// the published Linux libraries need) at `engine`, if one is published. The `chdb` npm
/// package names the Linux arm64 and macOS ones as optional dependencies; none was
/// reachable from the machines where the x86-64 one was checked, so they have no pinned
/// hash and their download is trusted.
pub fn package_of(os: &str, arch: &str, gnu: bool, engine: &EngineVersion) -> Option<EnginePackage> {
    let npm_name = match (os, arch, gnu) {
        ("linux", "x86_64", true) => "@chdb/lib-linux-x64-gnu",
        // Graviton and other arm64 Linux machines.
        ("linux", "aarch64", true) => "@chdb/lib-linux-arm64-gnu",
        ("macos", "aarch64", _) => "@chdb/lib-darwin-arm64",
        ("macos", "x86_64", _) => "@chdb/lib-darwin-x64",
        _ => return None,
    };
    let pinned = engine
        .libraries
        .iter()
        .find(|library| library.npm_name == npm_name)
        .map(|library| (library.sha256, library.size));
    Some(EnginePackage { npm_name, npm_version: engine.npm_version, pinned })
}

/// The staging folders' prefix; the rest of the name is the starting process's pid and
/// the time.
pub const STAGING_PREFIX: &str = "prefetch-";
/// The pid of the npm that writes the folder.
pub const NPM_PID: &str = "npm-pid";
/// What npm printed: the tarball's file name, when it finished.
pub const NPM_OUTPUT: &str = "npm-output";

/// Starts `npm pack <spec>` in the background into a new staging folder under `cache`,
/// and returns at once.
pub fn start(cache: &Path, spec: &str) -> std::io::Result<()> {
    start_with(Path::new("npm"), cache, spec)
}

/// [`start`] with another `npm` (the tests' stand-in).
pub fn start_with(npm: &Path, cache: &Path, spec: &str) -> std::io::Result<()> {
    fs::create_dir_all(cache)?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |time| time.as_nanos());
    let staging = cache.join(format!("{STAGING_PREFIX}{}-{nanos}", std::process::id()));
    fs::create_dir(&staging)?;
    let started = File::create(staging.join(NPM_OUTPUT)).and_then(|output| {
        // stdout goes to a file and stderr nowhere: a build waits for pipes its scripts
        // leave open, and this one must not wait for the download.
        let child = Command::new(npm)
            .args(["pack", "--silent", spec, "--pack-destination"])
            .arg(&staging)
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(Stdio::null())
            .spawn()?;
        fs::write(staging.join(NPM_PID), child.id().to_string())
    });
    if started.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    started
}

/// The staging folders under `cache` and the pid of the npm that writes each (`None`
/// when it is not known: npm never started, or the folder is being made).
pub fn staging_folders(cache: &Path) -> Vec<(PathBuf, Option<u32>)> {
    let Ok(entries) = fs::read_dir(cache) else { return Vec::new() };
    entries
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            path.file_name()?.to_str()?.starts_with(STAGING_PREFIX).then_some(())?;
            let pid = fs::read_to_string(path.join(NPM_PID)).ok().and_then(|pid| pid.trim().parse().ok());
            Some((path, pid))
        })
        .collect()
}

/// The tarball a staging folder holds, once npm said its name.
pub fn tarball_of(staging: &Path) -> Option<PathBuf> {
    let name = fs::read_to_string(staging.join(NPM_OUTPUT)).ok()?;
    let name = name.trim().lines().last()?.trim();
    let tarball = staging.join(name);
    (!name.is_empty() && tarball.is_file()).then_some(tarball)
}

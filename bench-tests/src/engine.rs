//! Provisioning of the embedded engine: the pinned `libchdb` shared library.
//!
//! The library comes from the npm package `@chdb/lib-<platform>` (fetched with
//! `npm pack`, never installed), is verified against a pinned SHA-256 and kept in a
//! cache under the workspace's `target/` directory. `cargo xtask setup` and the tests
//! use this same code, so a fresh clone needs nothing but `npm` on the PATH.
//! `CHBENCH_LIBCHDB` points at an existing `libchdb.so` instead and skips the cache.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, anyhow, bail};
use sha2::{Digest, Sha256};

/// The pinned engine build. Every snapshot and results bundle records the ClickHouse
/// version reported by this library (`SELECT version()`), not this npm version.
pub const CHDB_NPM_VERSION: &str = "26.7.3-stable.1";

/// Environment variable naming an existing `libchdb.so` to use instead of the cache.
pub const LIBCHDB_ENV: &str = "CHBENCH_LIBCHDB";

/// One platform's npm package and what we know of its library.
#[derive(Debug, Clone, Copy)]
pub struct EnginePackage {
    pub npm_name: &'static str,
    /// SHA-256 and size of `package/libchdb.so` for [`CHDB_NPM_VERSION`], where checked.
    pub pinned: Option<(&'static str, u64)>,
}

/// The package for the platform this crate was built for.
pub fn engine_package() -> Result<EnginePackage> {
    if cfg!(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu")) {
        Ok(EnginePackage {
            npm_name: "@chdb/lib-linux-x64-gnu",
            pinned: Some(("36ad4e999882821ef13cf2d0f52c93f48e6ee1b4498b35a201c23ce4b8d15bf5", 566_330_096)),
        })
    } else if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
        // Not checked on these machines: no pinned hash, the download is trusted.
        Ok(EnginePackage { npm_name: "@chdb/lib-darwin-arm64", pinned: None })
    } else if cfg!(all(target_os = "macos", target_arch = "x86_64")) {
        Ok(EnginePackage { npm_name: "@chdb/lib-darwin-x64", pinned: None })
    } else {
        bail!(
            "no embedded engine is published for this platform; set {LIBCHDB_ENV} to a libchdb.so \
             or choose a server target with CHBENCH_TARGET"
        )
    }
}

/// Where the cached library lives: `<target dir>/chbench/libchdb/<npm version>/libchdb.so`.
pub fn cache_dir() -> PathBuf {
    chbench_dir().join("libchdb").join(CHDB_NPM_VERSION)
}

/// `<target dir>/chbench`: everything this tool keeps between runs (engine, datasets,
/// per-process storage). `CARGO_TARGET_DIR` moves it with the rest of the build.
pub fn chbench_dir() -> PathBuf {
    let target_dir =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"));
    target_dir.join("chbench")
}

/// The workspace root, known at compile time from this crate's manifest directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}

/// The library to load: `CHBENCH_LIBCHDB` when set, else the cache, fetched first when
/// missing. `progress` receives one line per step that takes time (download, extract).
pub fn library_path(progress: &dyn Fn(&str)) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(LIBCHDB_ENV) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{LIBCHDB_ENV}={} is not a file; point it at a libchdb.so or unset it", path.display());
        }
        return Ok(path);
    }
    provision(progress)
}

/// Fetches and verifies the pinned library into the cache unless it is there already.
/// Safe when several processes call it at once: they take turns on a lock file, and the
/// library appears under its final name only once it is complete and verified.
pub fn provision(progress: &dyn Fn(&str)) -> Result<PathBuf> {
    let package = engine_package()?;
    let dir = cache_dir();
    let library = dir.join("libchdb.so");
    if cached_library_is_complete(&library, &package)? {
        return Ok(library);
    }
    fs::create_dir_all(&dir).with_context(|| format!("cannot create the engine cache {}", dir.display()))?;
    let lock_path = dir.join(".lock");
    let lock = File::create(&lock_path).with_context(|| format!("cannot create {}", lock_path.display()))?;
    lock.lock().with_context(|| format!("cannot lock {}", lock_path.display()))?;
    // Another process may have finished while we waited for the lock.
    if cached_library_is_complete(&library, &package)? {
        return Ok(library);
    }
    let staging =
        tempfile::tempdir_in(&dir).with_context(|| format!("cannot create a staging folder in {}", dir.display()))?;
    let spec = format!("{}@{CHDB_NPM_VERSION}", package.npm_name);
    progress(&format!("fetching the embedded engine {spec} with npm pack (about 170 MB)"));
    let tarball = npm_pack(&spec, staging.path())?;
    progress("extracting libchdb.so (about 560 MB)");
    let extracted = staging.path().join("libchdb.so");
    extract_library(&tarball, &extracted)?;
    if let Some((sha256, size)) = package.pinned {
        progress("verifying its SHA-256");
        verify_file(&extracted, sha256, size).with_context(|| format!("the download of {spec} is corrupt"))?;
    }
    fs::rename(&extracted, &library)
        .with_context(|| format!("cannot move the engine into place at {}", library.display()))?;
    drop(lock);
    Ok(library)
}

/// A cached library counts only if its size is the pinned one (a cheap check that
/// catches truncated files; the full hash was checked when it was fetched).
fn cached_library_is_complete(library: &Path, package: &EnginePackage) -> Result<bool> {
    let metadata = match fs::metadata(library) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", library.display())),
    };
    match package.pinned {
        Some((_, size)) if metadata.len() != size => bail!(
            "the cached engine {} has {} bytes, expected {size}: it is corrupt; delete it and run \
             `cargo xtask setup`, or set {LIBCHDB_ENV} to a good libchdb.so",
            library.display(),
            metadata.len()
        ),
        _ => Ok(true),
    }
}

fn npm_pack(spec: &str, destination: &Path) -> Result<PathBuf> {
    let output =
        Command::new("npm").args(["pack", "--silent", spec, "--pack-destination"]).arg(destination).output().map_err(
            |error| {
                anyhow!(
                    "`npm` is required to fetch the embedded engine ({error}); install Node.js/npm, or set \
                 {LIBCHDB_ENV} to an existing libchdb.so"
                )
            },
        )?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last_line = stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("");
        bail!(
            "`npm pack {spec}` failed ({}): {last_line}; check the network and npm registry access, or set \
             {LIBCHDB_ENV} to an existing libchdb.so",
            output.status
        );
    }
    let file_name = String::from_utf8_lossy(&output.stdout).trim().lines().last().unwrap_or("").to_string();
    let tarball = destination.join(&file_name);
    if file_name.is_empty() || !tarball.is_file() {
        bail!("`npm pack {spec}` reported no tarball in {}", destination.display());
    }
    Ok(tarball)
}

fn extract_library(tarball: &Path, destination: &Path) -> Result<()> {
    let file = File::open(tarball).with_context(|| format!("cannot open {}", tarball.display()))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let entries = archive.entries().with_context(|| format!("{} is not a tar.gz archive", tarball.display()))?;
    for entry in entries {
        let mut entry = entry.with_context(|| format!("{} is corrupt", tarball.display()))?;
        let path = entry.path().with_context(|| format!("{} has an unreadable entry", tarball.display()))?;
        if path == Path::new("package/libchdb.so") {
            entry
                .unpack(destination)
                .with_context(|| format!("cannot extract libchdb.so from {}", tarball.display()))?;
            return Ok(());
        }
    }
    bail!("{} has no package/libchdb.so", tarball.display())
}

/// Checks a file's size and SHA-256 against the expected values.
pub fn verify_file(path: &Path, expected_sha256: &str, expected_size: u64) -> Result<()> {
    let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let read = file.read(&mut buffer).with_context(|| format!("cannot read {}", path.display()))?;
        if read == 0 {
            break;
        }
        size += read as u64;
        hasher.update(&buffer[..read]);
    }
    let actual: String = hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
    if size != expected_size || actual != expected_sha256 {
        bail!(
            "{} has {size} bytes and SHA-256 {actual}, expected {expected_size} bytes and {expected_sha256}",
            path.display()
        );
    }
    Ok(())
}

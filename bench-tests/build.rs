//! Starts the embedded engine's download while the rest of the build compiles, so that
//! a fresh clone's first run does not wait for it after the build (src/engine/prefetch.rs).
//! Nothing here can fail the build: offline, without npm, or with the engine already
//! there, it does nothing and the first run fetches the engine as it always did.

// The build uses the start of the download only; the run uses the rest.
#[allow(dead_code)]
#[path = "src/engine/prefetch.rs"]
mod prefetch;

use std::env::var;
use std::path::PathBuf;

fn main() {
    // Once per build folder: later builds find the engine there, or the run fetched it.
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/engine/prefetch.rs");
    // A library of the user's own needs no download.
    if var("CHBENCH_LIBCHDB").is_ok_and(|path| !path.is_empty()) {
        return;
    }
    let (Ok(os), Ok(arch)) = (var("CARGO_CFG_TARGET_OS"), var("CARGO_CFG_TARGET_ARCH")) else { return };
    let gnu = var("CARGO_CFG_TARGET_ENV").is_ok_and(|env| env == "gnu");
    let Some(package) = prefetch::package_of(&os, &arch, gnu, prefetch::DEFAULT_ENGINE) else { return };
    // Where the run looks for it (chbench::files::chbench_dir, engine::cache_dir_of); only
    // the default engine: another version is fetched by the first run that asks for it.
    let Ok(manifest_dir) = var("CARGO_MANIFEST_DIR") else { return };
    let target_dir = var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(&manifest_dir).join("..").join("target"));
    let cache = target_dir.join("chbench").join("libchdb").join(prefetch::CHDB_NPM_VERSION);
    if cache.join("libchdb.so").is_file() || !prefetch::staging_folders(&cache).is_empty() {
        return;
    }
    if let Err(error) = prefetch::start(&cache, &package.spec()) {
        println!("cargo:warning=the engine download did not start early ({error}); the first run fetches it");
    }
}

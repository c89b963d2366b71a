//! Provisioning of the embedded engine: the pinned `libchdb` shared library, and which
//! of the pinned versions ([`ENGINE_VERSIONS`]) this process loads ([`engine_version`]:
//! the command line's choice, else `CHBENCH_ENGINE_VERSION`, else the default).
//!
//! The library comes from the npm package `@chdb/lib-<platform>` (fetched with
//! `npm pack`, never installed), is verified against a pinned SHA-256 and kept in a
//! cache under the workspace's `target/` directory, a folder per version. `cargo xtask setup` and the tests
//! use this same code, so a fresh clone needs nothing but `npm` on the PATH.
//! `CHBENCH_LIBCHDB` points at an existing `libchdb.so` instead and skips the cache.
//! Whichever it is, its headers are checked before it is loaded ([`check_library`]),
//! and a bad file is named with advice that depends on where it came from.

use std::fs::{self, File};
use std::io::{self, Read, Write as _};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, Result, anyhow, bail};
use object::read::ReadCache;
use object::read::elf::{FileHeader, ProgramHeader};
use object::{Endianness, FileKind, Object, ObjectKind, ObjectSegment, ReadRef, elf};
use sha2::{Digest, Sha256};

use self::fetch::Fetch;
use crate::files::chbench_dir;
use crate::units;

pub mod fetch;
pub mod prefetch;

pub use self::fetch::{DEFAULT_BOUND as DEFAULT_FETCH_BOUND, FETCH_TIMEOUT_ENV};
pub use self::prefetch::{CHDB_NPM_VERSION, DEFAULT_ENGINE, ENGINE_VERSIONS, EnginePackage, EngineVersion};

/// Environment variable naming an existing `libchdb.so` to use instead of the cache.
pub const LIBCHDB_ENV: &str = "CHBENCH_LIBCHDB";
/// Environment variable naming the pinned engine version to load (an npm version of
/// [`ENGINE_VERSIONS`]); `--engine-version` reads it too.
pub const ENGINE_VERSION_ENV: &str = "CHBENCH_ENGINE_VERSION";

/// The engine version chosen for this process by its command line, before the engine loads.
static CHOSEN_VERSION: OnceLock<&'static EngineVersion> = OnceLock::new();

/// The pinned engine of npm version `name`, or one line listing the pinned ones.
pub fn engine_version_named(name: &str) -> Result<&'static EngineVersion> {
    let name = name.trim();
    ENGINE_VERSIONS.iter().find(|engine| engine.npm_version == name).with_context(|| {
        format!("{name:?} is not a pinned engine version; the pinned ones: {}", pinned_version_names())
    })
}

/// The pinned npm versions, the default first, for messages: `26.7.3-stable.1 (default), 26.5.3`.
pub fn pinned_version_names() -> String {
    let names: Vec<String> = ENGINE_VERSIONS
        .iter()
        .map(|engine| {
            if engine == DEFAULT_ENGINE {
                format!("{} (default)", engine.npm_version)
            } else {
                engine.npm_version.to_string()
            }
        })
        .collect();
    names.join(", ")
}

/// Chooses the engine version this process loads (the command line's `--engine-version`).
/// Refused once another version was chosen: the engine loads once per process.
pub fn choose_engine_version(engine: &'static EngineVersion) -> Result<()> {
    let chosen = CHOSEN_VERSION.get_or_init(|| engine);
    if *chosen != engine {
        bail!(
            "engine {} was already chosen for this process, {} cannot be loaded beside it (one engine per process)",
            chosen.npm_version,
            engine.npm_version
        );
    }
    Ok(())
}

/// The engine version asked for, if any: chosen by the command line, else named by
/// `CHBENCH_ENGINE_VERSION` (empty counts as unset).
pub fn asked_engine_version() -> Result<Option<&'static EngineVersion>> {
    if let Some(chosen) = CHOSEN_VERSION.get() {
        return Ok(Some(chosen));
    }
    match std::env::var(ENGINE_VERSION_ENV) {
        Ok(name) if name.trim().is_empty() => Ok(None),
        Ok(name) => engine_version_named(&name).map(Some).with_context(|| format!("{ENGINE_VERSION_ENV}={name:?}")),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => bail!("{ENGINE_VERSION_ENV} is not valid UTF-8"),
    }
}

/// The engine version this process loads: the one asked for, or the default.
pub fn engine_version() -> Result<&'static EngineVersion> {
    Ok(asked_engine_version()?.unwrap_or(DEFAULT_ENGINE))
}

/// The package of `engine` for the platform this crate was built for.
pub fn engine_package(engine: &EngineVersion) -> Result<EnginePackage> {
    engine_package_for(std::env::consts::OS, std::env::consts::ARCH, cfg!(target_env = "gnu"), engine)
}

/// The package of a platform at `engine` ([`prefetch::package_of`]), or why there is none.
pub fn engine_package_for(os: &str, arch: &str, gnu: bool, engine: &EngineVersion) -> Result<EnginePackage> {
    prefetch::package_of(os, arch, gnu, engine).with_context(|| {
        format!(
            "no embedded engine is published for this platform ({os} on {arch}{}); set {LIBCHDB_ENV} to a \
             libchdb.so or choose a server target with CHBENCH_TARGET",
            if os == "linux" && !gnu { ", without glibc" } else { "" }
        )
    })
}

/// Where the default engine's library lives: `<target dir>/chbench/libchdb/<npm version>/libchdb.so`.
pub fn cache_dir() -> PathBuf {
    cache_dir_of(DEFAULT_ENGINE)
}

/// Where `engine`'s library lives, beside the other versions': `<target dir>/chbench/libchdb/<npm version>/`.
pub fn cache_dir_of(engine: &EngineVersion) -> PathBuf {
    chbench_dir().join("libchdb").join(engine.npm_version)
}

/// Where the library to load came from. It decides the advice for a bad file: the
/// cache's file is ours to delete and fetch again, a file the user chose is theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibrarySource {
    /// Named by `CHBENCH_LIBCHDB`.
    Env,
    /// The pinned engine in the cache.
    Cache,
}

/// The library to load, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineLibrary {
    pub path: PathBuf,
    pub source: LibrarySource,
}

impl EngineLibrary {
    /// The error for an unusable library: the file as the user knows it, `problem`
    /// (which completes "`<file> ...`"), and what to do, which depends on the source.
    pub fn unusable(&self, problem: impl std::fmt::Display) -> anyhow::Error {
        match self.source {
            LibrarySource::Env => anyhow!(
                "{LIBCHDB_ENV}={} {problem}: point it at a complete libchdb.so, or unset {LIBCHDB_ENV} to use \
                 the pinned engine",
                self.path.display()
            ),
            LibrarySource::Cache => anyhow!(
                "the cached engine {} {problem}: delete it and run `cargo xtask setup`, or set {LIBCHDB_ENV} to \
                 a good libchdb.so",
                self.path.display()
            ),
        }
    }
}

/// The library to load: `CHBENCH_LIBCHDB` when set, else the cache of the engine version
/// asked for ([`engine_version`]), fetched first when missing. `progress` receives one
/// line per step that takes time (download, extract).
pub fn library(progress: &dyn Fn(&str)) -> Result<EngineLibrary> {
    let asked = asked_engine_version()?;
    // Set but empty counts as unset, as shells make it easy to do by accident.
    if let Some(path) = std::env::var_os(LIBCHDB_ENV).filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{LIBCHDB_ENV}={} is not a file; point it at a libchdb.so or unset it", path.display());
        }
        if let Some(engine) = asked {
            check_named_library_is(&path, engine)?;
        }
        return Ok(EngineLibrary { path, source: LibrarySource::Env });
    }
    Ok(EngineLibrary {
        path: provision_version(asked.unwrap_or(DEFAULT_ENGINE), progress)?,
        source: LibrarySource::Cache,
    })
}

/// Refuses a `CHBENCH_LIBCHDB` file that is not `engine`'s library when that version was
/// asked for: its size must be the pinned library's (the file is the user's, so a size
/// check, not a hash of 560 MB, tells the pinned builds apart).
fn check_named_library_is(path: &Path, engine: &EngineVersion) -> Result<()> {
    let asked = format!("engine {} was asked for", engine.npm_version);
    let advice = format!("unset {LIBCHDB_ENV} to use the pinned {}, or do not ask for a version", engine.npm_version);
    let Some((_, size)) = engine_package(engine)?.pinned else {
        bail!(
            "{LIBCHDB_ENV}={} is set and {asked}, whose library is not pinned on this platform: {advice}",
            path.display()
        );
    };
    let length = fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?.len();
    if length != size {
        bail!(
            "{LIBCHDB_ENV}={} is set and {asked}, but the file is not its library ({length} bytes, the pinned one has \
             {size}): {advice}",
            path.display()
        );
    }
    Ok(())
}

/// Checks that a library is whole before it is loaded: `dlopen` maps every segment of
/// the file, and touching a page past the end of a truncated file kills the process
/// with SIGBUS, with no message. Reads only the headers.
pub fn check_library(library: &EngineLibrary) -> Result<()> {
    let file = File::open(&library.path).map_err(|error| library.unusable(format!("cannot be read ({error})")))?;
    match library_defect(&file) {
        Ok(None) => Ok(()),
        Ok(Some(defect)) => Err(library.unusable(defect)),
        Err(error) => Err(library.unusable(format!("cannot be read ({error})"))),
    }
}

/// Why a file cannot be loaded as this platform's shared library. Each reads as the end
/// of "`<file> ...`".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibraryDefect {
    Empty,
    /// Not an object file this platform loads (or not a shared library): says what it is.
    NotALibrary(String),
    /// The headers say the file goes on further than it does.
    Truncated {
        what: String,
        end: u64,
        length: u64,
    },
}

impl std::fmt::Display for LibraryDefect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LibraryDefect::Empty => write!(f, "is not a complete libchdb.so (the file is empty)"),
            LibraryDefect::NotALibrary(what) => write!(f, "is not a libchdb.so ({what})"),
            LibraryDefect::Truncated { what, end, length } => {
                write!(f, "is not a complete libchdb.so ({what} ends at byte {end}, the file has {length} bytes)")
            }
        }
    }
}

/// What is wrong with `file` as a shared library for this platform, if anything. Reads
/// the headers through a cache, never the whole file.
pub fn library_defect(file: &File) -> io::Result<Option<LibraryDefect>> {
    let length = file.metadata()?.len();
    if length == 0 {
        return Ok(Some(LibraryDefect::Empty));
    }
    let data = ReadCache::new(file);
    let kind = FileKind::parse(&data).ok();
    let expected = if cfg!(target_vendor = "apple") { FileKind::MachO64 } else { FileKind::Elf64 };
    let defect = match kind {
        Some(FileKind::Elf64) if expected == FileKind::Elf64 => elf_defect(&data, length),
        Some(FileKind::MachO64) if expected == FileKind::MachO64 => object_defect(&data, length),
        // A universal Mach-O: dlopen picks the slice, and checks it itself.
        Some(FileKind::MachOFat32 | FileKind::MachOFat64) if expected == FileKind::MachO64 => None,
        Some(other) => Some(LibraryDefect::NotALibrary(format!("it is {}", kind_name(other)))),
        None if expected == FileKind::Elf64 => Some(LibraryDefect::NotALibrary("it is not an ELF file".to_string())),
        None => Some(LibraryDefect::NotALibrary("it is not a Mach-O file".to_string())),
    };
    Ok(defect)
}

/// A file kind that this platform does not load, for a message.
fn kind_name(kind: FileKind) -> String {
    match kind {
        FileKind::Elf32 => "a 32-bit ELF file".to_string(),
        FileKind::Elf64 => "an ELF file, this platform loads Mach-O".to_string(),
        FileKind::MachO32 => "a 32-bit Mach-O file".to_string(),
        FileKind::MachO64 | FileKind::MachOFat32 | FileKind::MachOFat64 => {
            "a Mach-O file, this platform loads ELF".to_string()
        }
        other => format!("a {other:?} file, not a shared library this platform loads"),
    }
}

/// The ELF checks: a shared object for this machine whose program headers and segments
/// all lie within the file.
fn elf_defect<'data, R: ReadRef<'data>>(data: R, length: u64) -> Option<LibraryDefect> {
    type Header = elf::FileHeader64<Endianness>;
    let cut_short = |what: &str, end: u64| Some(LibraryDefect::Truncated { what: what.to_string(), end, length });
    let header_size = std::mem::size_of::<Header>() as u64;
    if length < header_size {
        return cut_short("the ELF header", header_size);
    }
    let Ok(header) = Header::parse(data) else {
        return Some(LibraryDefect::NotALibrary("its ELF header is not one this platform loads".to_string()));
    };
    let Ok(endian) = header.endian() else {
        return Some(LibraryDefect::NotALibrary("its ELF header names no known byte order".to_string()));
    };
    let file_type = header.e_type(endian);
    if file_type != elf::ET_DYN {
        let what = match file_type {
            elf::ET_REL => "an object file",
            elf::ET_EXEC => "an executable",
            elf::ET_CORE => "a core dump",
            _ => "an ELF file of an unknown type",
        };
        return Some(LibraryDefect::NotALibrary(format!("it is {what}, not a shared library")));
    }
    let machine = header.e_machine(endian);
    if let Some(expected) = native_elf_machine()
        && machine != expected
    {
        return Some(LibraryDefect::NotALibrary(format!(
            "it is built for ELF machine {machine}, this is {}",
            std::env::consts::ARCH
        )));
    }
    let table_start: u64 = header.e_phoff(endian);
    let entries = header.phnum(endian, data).unwrap_or(usize::MAX) as u64;
    let table_end = entries
        .checked_mul(u64::from(header.e_phentsize(endian)))
        .and_then(|size| size.checked_add(table_start))
        .unwrap_or(u64::MAX);
    if table_end > length {
        return cut_short("its program header table", table_end);
    }
    let Ok(segments) = header.program_headers(endian, data) else {
        return Some(LibraryDefect::NotALibrary("its program headers are malformed".to_string()));
    };
    segment_past_the_end(segments.iter().map(|segment| segment.file_range(endian)), length)
}

/// The first segment whose file range `(offset, size)` goes past the file's end.
fn segment_past_the_end(ranges: impl Iterator<Item = (u64, u64)>, length: u64) -> Option<LibraryDefect> {
    ranges.enumerate().find_map(|(index, (offset, size))| {
        let end = offset.saturating_add(size);
        (size > 0 && end > length).then(|| LibraryDefect::Truncated { what: format!("segment {index}"), end, length })
    })
}

/// The ELF machine of the platform this crate was built for, where we know it.
fn native_elf_machine() -> Option<u16> {
    match std::env::consts::ARCH {
        "x86_64" => Some(elf::EM_X86_64),
        "aarch64" => Some(elf::EM_AARCH64),
        _ => None,
    }
}

/// The same checks through `object`'s format-independent reader (Mach-O): it reads more
/// than the headers, which is fine for the smaller libraries of those platforms.
fn object_defect<'data, R: ReadRef<'data>>(data: R, length: u64) -> Option<LibraryDefect> {
    let file = match object::File::parse(data) {
        Ok(file) => file,
        Err(error) => return Some(LibraryDefect::NotALibrary(format!("its headers are unreadable: {error}"))),
    };
    if file.kind() != ObjectKind::Dynamic {
        return Some(LibraryDefect::NotALibrary(format!("it is not a shared library but {:?}", file.kind())));
    }
    segment_past_the_end(file.segments().map(|segment| segment.file_range()), length)
}

/// Fetches and verifies the default engine's library into the cache unless it is there
/// already ([`provision_version`]).
pub fn provision(progress: &dyn Fn(&str)) -> Result<PathBuf> {
    provision_version(DEFAULT_ENGINE, progress)
}

/// Fetches and verifies `engine`'s library into its cache folder unless it is there
/// already; each version has a folder of its own, so they live side by side. Safe when
/// several processes call it at once: they take turns on a lock file, and the library
/// appears under its final name only once it is complete and verified.
pub fn provision_version(engine: &EngineVersion, progress: &dyn Fn(&str)) -> Result<PathBuf> {
    let package = engine_package(engine)?;
    let dir = cache_dir_of(engine);
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
    let spec = package.spec();
    let fetch = Fetch::start(&spec, progress)?;
    let extracted = staging.path().join("libchdb.so");
    // The build's download first; anything wrong with it (npm failed, a tarball cut
    // short, a wrong hash) and this fetches its own, as it would without one.
    let prefetched = take_prefetched_tarball(&dir, staging.path(), &fetch)?.and_then(|tarball| {
        unpack_and_verify(&tarball, &extracted, &package, &fetch)
            .map_err(|error| {
                fetch.say(&format!("the download the build started is unusable ({error:#}); fetching again"))
            })
            .ok()
    });
    if prefetched.is_none() {
        fetch.check_registry(staging.path())?;
        fetch.say(&format!("fetching the embedded engine {spec} with npm pack (about 170 MB)"));
        let tarball = npm_pack(&fetch, staging.path())?;
        unpack_and_verify(&tarball, &extracted, &package, &fetch)?;
    }
    fs::rename(&extracted, &library)
        .with_context(|| format!("cannot move the engine into place at {}", library.display()))?;
    drop(lock);
    Ok(library)
}

fn unpack_and_verify(tarball: &Path, extracted: &Path, package: &EnginePackage, fetch: &Fetch<'_>) -> Result<()> {
    fetch.say("extracting libchdb.so (about 560 MB)");
    extract_library(tarball, extracted, fetch)?;
    if let Some((sha256, size)) = package.pinned {
        fetch.say("verifying its SHA-256");
        let said = |done: u64| {
            fetch.tick(|elapsed| {
                format!(
                    "verifying its SHA-256: {} of {} read, {elapsed} so far",
                    units::human_bytes(done),
                    units::human_bytes(size)
                )
            })
        };
        verify_file_saying(extracted, sha256, size, &said)
            .with_context(|| format!("the download of {} is corrupt", fetch.spec()))?;
    }
    Ok(())
}

/// How long a run waits for the download the build started before fetching its own.
const PREFETCH_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// The tarball the build's download ([`prefetch::start`]) left in `cache`, moved into
/// `staging`; waits while its npm still runs, once the registry answers (offline, that
/// npm would go on for minutes). Every staging folder goes afterwards, finished or not:
/// the caller holds the cache's lock, so no other run is reading one.
fn take_prefetched_tarball(cache: &Path, staging: &Path, fetch: &Fetch<'_>) -> Result<Option<PathBuf>> {
    let mut taken = None;
    for (folder, pid) in prefetch::staging_folders(cache) {
        let pid = pid.unwrap_or(0);
        if process_runs(pid) {
            fetch.check_registry(staging)?;
            fetch.say(&format!("waiting for the engine download the build started (npm, pid {pid})"));
            let what = format!("the engine download the build started (npm, pid {pid})");
            fetch.wait_while(&what, Some(PREFETCH_WAIT), || process_runs(pid))?;
        }
        if taken.is_none() && !process_runs(pid) {
            taken = prefetch::tarball_of(&folder).and_then(|tarball| {
                let moved = staging.join(tarball.file_name()?);
                fs::rename(&tarball, &moved).ok().map(|()| moved)
            });
        }
        let _ = fs::remove_dir_all(&folder);
    }
    Ok(taken)
}

/// Whether `pid` runs; one that ended and waits for its parent to reap it (a zombie)
/// does not.
fn process_runs(pid: u32) -> bool {
    use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};
    let pid = Pid::from_u32(pid);
    let mut system = System::new();
    system.refresh_processes_specifics(ProcessesToUpdate::Some(&[pid]), true, ProcessRefreshKind::nothing());
    system.process(pid).is_some_and(|process| process.status() != ProcessStatus::Zombie)
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

/// `npm pack` into `destination`, within what is left of the fetch's bound, saying every
/// 10 s that it goes on.
fn npm_pack(fetch: &Fetch<'_>, destination: &Path) -> Result<PathBuf> {
    let shell = xshell::Shell::new().context("cannot start a shell for npm")?;
    let (npm, spec) = (fetch.npm(), fetch.spec());
    let command = xshell::cmd!(shell, "{npm} pack --silent {spec} --pack-destination {destination}");
    let what = format!("npm pack {spec}");
    let Some(output) = fetch.run_npm(command.into(), &what, None, destination)? else {
        return Err(fetch.over_bound(&format!("the download of the embedded engine ({what})")));
    };
    if !output.success {
        bail!("{}", npm_pack_failure(spec, &output.status, &output.stderr));
    }
    let file_name = output.stdout.trim().lines().last().unwrap_or("").to_string();
    let tarball = destination.join(&file_name);
    if file_name.is_empty() || !tarball.is_file() {
        bail!("`npm pack {spec}` reported no tarball in {}", destination.display());
    }
    Ok(tarball)
}

/// What a failed `npm pack` says. A registry without the package (npm's `E404`: the
/// registry these machines reach serves none of the arm64 and macOS packages) gets what to
/// fetch by hand and where to point the tool; anything else its last line of npm's.
fn npm_pack_failure(spec: &str, status: &str, stderr: &str) -> String {
    if stderr.contains("E404") {
        return format!(
            "the npm registry has no {spec} (404): fetch that package by hand from a registry that has it \
             (`npm pack {spec}`, or its tarball from npmjs.com), take package/libchdb.so out of it \
             (`tar -xzf <tarball> package/libchdb.so`) and set {LIBCHDB_ENV}=/path/to/libchdb.so"
        );
    }
    // npm's last line names its debug log; the line before says what went wrong.
    let last_line = stderr
        .lines()
        .rev()
        .map(|line| line.trim().trim_start_matches("npm error").trim())
        .find(|line| !line.is_empty() && !line.starts_with("A complete log of this run"))
        .unwrap_or("");
    format!(
        "`npm pack {spec}` failed ({status}): {last_line}; check the network and npm registry access, or set \
         {LIBCHDB_ENV} to an existing libchdb.so"
    )
}

/// Takes `package/libchdb.so` out of the tarball into `destination` (a file), saying every
/// 10 s how far it is; ends at a stop request.
fn extract_library(tarball: &Path, destination: &Path, fetch: &Fetch<'_>) -> Result<()> {
    let file = File::open(tarball).with_context(|| format!("cannot open {}", tarball.display()))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let entries = archive.entries().with_context(|| format!("{} is not a tar.gz archive", tarball.display()))?;
    for entry in entries {
        let mut entry = entry.with_context(|| format!("{} is corrupt", tarball.display()))?;
        let path = entry.path().with_context(|| format!("{} has an unreadable entry", tarball.display()))?;
        if path != Path::new("package/libchdb.so") {
            continue;
        }
        let size = entry.size();
        let cannot = || format!("cannot extract libchdb.so from {} into {}", tarball.display(), destination.display());
        let mut out = File::create(destination).with_context(cannot)?;
        let mut buffer = vec![0u8; 1 << 20];
        let mut done = 0u64;
        loop {
            crate::interrupt::check()?;
            let read = entry.read(&mut buffer).with_context(cannot)?;
            if read == 0 {
                break;
            }
            out.write_all(&buffer[..read]).with_context(cannot)?;
            done += read as u64;
            fetch.tick(|elapsed| {
                format!(
                    "extracting libchdb.so: {} of {} written, {elapsed} so far",
                    units::human_bytes(done),
                    units::human_bytes(size)
                )
            });
        }
        return Ok(());
    }
    bail!("{} has no package/libchdb.so", tarball.display())
}

/// Checks a file's size and SHA-256 against the expected values.
pub fn verify_file(path: &Path, expected_sha256: &str, expected_size: u64) -> Result<()> {
    verify_file_saying(path, expected_sha256, expected_size, &|_| {})
}

/// [`verify_file`], calling `read_so_far` with the bytes read after each block; ends at a
/// stop request.
fn verify_file_saying(path: &Path, expected_sha256: &str, expected_size: u64, read_so_far: &dyn Fn(u64)) -> Result<()> {
    let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        crate::interrupt::check()?;
        let read = file.read(&mut buffer).with_context(|| format!("cannot read {}", path.display()))?;
        if read == 0 {
            break;
        }
        size += read as u64;
        hasher.update(&buffer[..read]);
        read_so_far(size);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A file holding the first `length` bytes of `source` (all of it for `None`).
    fn copy_of(source: &Path, length: Option<usize>, folder: &Path) -> File {
        let bytes = fs::read(source).unwrap();
        let path = folder.join("copy");
        fs::write(&path, &bytes[..length.unwrap_or(bytes.len())]).unwrap();
        File::open(path).unwrap()
    }

    // The test executable is a position-independent ELF, a shared object for the loader:
    // a whole one for this machine to check, and one to cut short.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_whole_shared_object_passes_and_a_cut_one_names_what_is_missing() {
        let folder = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        assert_eq!(library_defect(&copy_of(&exe, None, folder.path())).unwrap(), None);

        let cut = library_defect(&copy_of(&exe, Some(65_536), folder.path())).unwrap();
        let Some(LibraryDefect::Truncated { what, end, length }) = cut else { panic!("{cut:?}") };
        assert!(what.starts_with("segment "), "{what}");
        assert!(end > length && length == 65_536, "{end} {length}");

        let header_only = library_defect(&copy_of(&exe, Some(40), folder.path())).unwrap();
        let expected = LibraryDefect::Truncated { what: "the ELF header".to_string(), end: 64, length: 40 };
        assert_eq!(header_only, Some(expected));
    }

    #[test]
    fn an_empty_file_and_a_text_file_are_not_libraries() {
        let folder = tempfile::tempdir().unwrap();
        let empty = folder.path().join("empty.so");
        fs::write(&empty, b"").unwrap();
        assert_eq!(library_defect(&File::open(&empty).unwrap()).unwrap(), Some(LibraryDefect::Empty));
        let text = folder.path().join("text.so");
        fs::write(&text, b"not a shared library\n").unwrap();
        let defect = library_defect(&File::open(&text).unwrap()).unwrap();
        assert!(matches!(defect, Some(LibraryDefect::NotALibrary(_))), "{defect:?}");
    }

    /// A stand-in for npm: `view` answers at once, as a registry that works; anything
    /// else sleeps, then (when `tarball` is given) copies it where `npm pack` would and
    /// prints its name, as npm does; else fails.
    fn fake_npm(folder: &Path, tarball: Option<&Path>) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let view = "if [ \"$1\" = view ]; then echo 1; exit 0; fi\n";
        let body = match tarball {
            Some(tarball) => format!("sleep 1\ncp '{}' \"$5/engine-1.tgz\"\necho engine-1.tgz\n", tarball.display()),
            None => "sleep 1\nexit 1\n".to_string(),
        };
        let npm = folder.join("npm");
        fs::write(&npm, format!("#!/bin/sh\n{view}{body}")).unwrap();
        fs::set_permissions(&npm, fs::Permissions::from_mode(0o755)).unwrap();
        npm
    }

    #[test]
    fn the_builds_download_is_waited_for_taken_and_its_folder_removed() {
        let folder = tempfile::tempdir().unwrap();
        let cache = folder.path().join("cache");
        let tarball = folder.path().join("made.tgz");
        fs::write(&tarball, b"a tarball").unwrap();
        let spec = "@chdb/lib-linux-x64-gnu@26.7.3-stable.1";
        let npm = fake_npm(folder.path(), Some(&tarball));
        prefetch::start_with(&npm, &cache, spec).unwrap();
        let staging = prefetch::staging_folders(&cache);
        assert_eq!(staging.len(), 1, "{staging:?}");
        // Still running: the run waits for it rather than fetching its own.
        assert!(process_runs(staging[0].1.unwrap()));
        let run_staging = tempfile::tempdir().unwrap();
        let lines = std::cell::RefCell::new(Vec::new());
        let progress = |line: &str| lines.borrow_mut().push(line.to_string());
        let fetch = Fetch::start(spec, &progress).unwrap().with_npm(&npm);
        let taken = take_prefetched_tarball(&cache, run_staging.path(), &fetch).unwrap();
        assert_eq!(taken, Some(run_staging.path().join("engine-1.tgz")));
        assert_eq!(fs::read(run_staging.path().join("engine-1.tgz")).unwrap(), b"a tarball");
        assert!(lines.borrow()[0].starts_with("waiting for the engine download the build started"), "{lines:?}");
        assert!(prefetch::staging_folders(&cache).is_empty());
    }

    #[test]
    fn a_failed_build_download_is_removed_and_the_run_fetches_its_own() {
        let folder = tempfile::tempdir().unwrap();
        let cache = folder.path().join("cache");
        let npm = fake_npm(folder.path(), None);
        prefetch::start_with(&npm, &cache, "@chdb/x@1").unwrap();
        let run_staging = tempfile::tempdir().unwrap();
        let fetch = Fetch::start("@chdb/x@1", &|_| {}).unwrap().with_npm(&npm);
        assert_eq!(take_prefetched_tarball(&cache, run_staging.path(), &fetch).unwrap(), None);
        assert!(prefetch::staging_folders(&cache).is_empty());
        assert_eq!(fs::read_dir(&cache).unwrap().count(), 0, "the cache keeps nothing of it");
        // No npm at all: the start fails, and leaves nothing.
        let error = prefetch::start_with(Path::new("/nonexistent/npm"), &cache, "@chdb/x@1").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        assert_eq!(fs::read_dir(&cache).unwrap().count(), 0);
    }

    #[test]
    fn each_published_platform_has_its_package_and_others_are_one_line() {
        let name = |os, arch, gnu| engine_package_for(os, arch, gnu, DEFAULT_ENGINE).map(|package| package.npm_name);
        assert_eq!(name("linux", "x86_64", true).unwrap(), "@chdb/lib-linux-x64-gnu");
        assert_eq!(name("linux", "aarch64", true).unwrap(), "@chdb/lib-linux-arm64-gnu");
        assert_eq!(name("macos", "aarch64", false).unwrap(), "@chdb/lib-darwin-arm64");
        assert_eq!(name("macos", "x86_64", false).unwrap(), "@chdb/lib-darwin-x64");
        // Only the package checked here has a pinned hash, at every pinned version.
        for engine in ENGINE_VERSIONS {
            let linux = engine_package_for("linux", "x86_64", true, engine).unwrap();
            assert!(linux.pinned.is_some(), "{engine:?}");
            assert_eq!(linux.spec(), format!("@chdb/lib-linux-x64-gnu@{}", engine.npm_version));
            assert!(engine_package_for("linux", "aarch64", true, engine).unwrap().pinned.is_none());
        }
        let musl = name("linux", "aarch64", false).unwrap_err().to_string();
        assert!(
            musl.starts_with("no embedded engine is published for this platform (linux on aarch64, without glibc)")
        );
        assert!(musl.contains("set CHBENCH_LIBCHDB"), "{musl}");
    }

    #[test]
    fn pinned_versions_are_found_by_npm_version_and_others_are_one_line_listing_them() {
        assert_eq!(DEFAULT_ENGINE.npm_version, CHDB_NPM_VERSION);
        assert_eq!(engine_version_named("26.5.3").unwrap().clickhouse_version, "26.5.1.1");
        assert_eq!(engine_version_named(" 26.7.3-stable.1 ").unwrap(), DEFAULT_ENGINE);
        let error = engine_version_named("26.6.0").unwrap_err().to_string();
        assert_eq!(
            error,
            "\"26.6.0\" is not a pinned engine version; the pinned ones: 26.7.3-stable.1 (default), 26.5.3"
        );
        // Side by side: a folder per npm version.
        let folders: std::collections::BTreeSet<PathBuf> = ENGINE_VERSIONS.iter().map(cache_dir_of).collect();
        assert_eq!(folders.len(), ENGINE_VERSIONS.len());
        assert!(cache_dir_of(engine_version_named("26.5.3").unwrap()).ends_with("libchdb/26.5.3"));
    }

    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
    fn a_library_of_the_users_that_is_not_the_version_asked_for_is_one_line() {
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join("libchdb.so");
        fs::write(&file, b"some other build").unwrap();
        let engine = engine_version_named("26.5.3").unwrap();
        let error = check_named_library_is(&file, engine).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "CHBENCH_LIBCHDB={} is set and engine 26.5.3 was asked for, but the file is not its library (16 \
                 bytes, the pinned one has 559044752): unset CHBENCH_LIBCHDB to use the pinned 26.5.3, or do not ask \
                 for a version",
                file.display()
            )
        );
    }

    #[test]
    fn a_package_the_registry_lacks_says_what_to_fetch_by_hand() {
        // What npm 10 prints for a package its registry does not serve.
        let stderr = "npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/@chdb%2flib-linux-arm64-gnu\n\
                      npm error 404\nnpm error A complete log of this run can be found in: /root/.npm/_logs/x.log\n";
        let spec = "@chdb/lib-linux-arm64-gnu@26.7.3-stable.1";
        let message = npm_pack_failure(spec, "exit status: 1", stderr);
        assert!(
            message.starts_with("the npm registry has no @chdb/lib-linux-arm64-gnu@26.7.3-stable.1 (404)"),
            "{message}"
        );
        assert!(message.contains("set CHBENCH_LIBCHDB=/path/to/libchdb.so"), "{message}");
        let other = npm_pack_failure(
            spec,
            "exit status: 1",
            "npm error code ETIMEDOUT\nnpm error network timeout\nnpm error A complete log of this run can be found in: x\n",
        );
        assert!(other.contains("failed (exit status: 1): network timeout; check the network"), "{other}");
    }

    #[test]
    fn only_the_cached_engine_is_ever_to_be_deleted() {
        let path = PathBuf::from("/somewhere/libchdb.so");
        let chosen = EngineLibrary { path: path.clone(), source: LibrarySource::Env }.unusable(LibraryDefect::Empty);
        let chosen = chosen.to_string();
        assert!(chosen.starts_with("CHBENCH_LIBCHDB=/somewhere/libchdb.so is not a complete libchdb.so"), "{chosen}");
        assert!(chosen.contains("unset CHBENCH_LIBCHDB") && !chosen.contains("delete"), "{chosen}");
        let cached = EngineLibrary { path, source: LibrarySource::Cache }.unusable(LibraryDefect::Empty).to_string();
        assert!(cached.starts_with("the cached engine /somewhere/libchdb.so is not"), "{cached}");
        assert!(cached.contains("delete it and run `cargo xtask setup`"), "{cached}");
    }
}

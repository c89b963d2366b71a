//! A small safe wrapper over libchdb's C API, loaded at run time.
//!
//! Facts this module relies on (measured; see docs/embedded-engine.md):
//! - the library is loaded once per process and never unloaded: the engine registers
//!   thread-local destructors that crash the process at thread exit once it is gone;
//! - the engine's signal handlers are turned off before the first connection, or a panic
//!   that aborts is caught by the engine's crash handler, which sleeps for minutes;
//! - an empty result (DDL, INSERT) has a NULL buffer;
//! - one storage folder at a time: while a connection is open, another must use the same
//!   `--path`; once all are closed, another folder can be opened (checked here);
//! - every connection is closed before the process exits ([`Connection`]'s `Drop`);
//! - a running statement is cancelled by `KILL QUERY` from a second connection on the
//!   same folder (connections on one folder run in parallel), and then fails with
//!   `QUERY_WAS_CANCELLED`; the C API's own cancel works only on streamed results. A
//!   request to stop ([`crate::interrupt`]) does that to the statements running then
//!   ([`cancel_running_statements`]), and they end with [`Interrupted`];
//! - on 26.5.3, the first `DROP ... SYNC` in a fresh folder never returns unless the
//!   folder's `metadata/` exists before the first connect, so [`Connection::open`] makes it;
//! - a full disk fails a statement with `NOT_ENOUGH_SPACE` (code 243, "Cannot reserve
//!   ..."; measured on a 20 MiB tmpfs) or, past the reservation, `No space left on
//!   device`; neither names the folder, so the error here does ([`disk_full`]).
//!
//! The prototypes below are the exported ones; there is no header in the package, and a
//! prototype that differs crashes.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use libloading::Library;

use crate::engine::{self, EngineLibrary};
use crate::files::shown;
use crate::interrupt::{self, Interrupted};
use crate::units::human_bytes;

type ConnectFn = unsafe extern "C" fn(c_int, *mut *mut c_char) -> *mut *mut c_void;
type CloseConnFn = unsafe extern "C" fn(*mut *mut c_void);
type QueryNFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> *mut c_void;
type ResultBufferFn = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type ResultU64Fn = unsafe extern "C" fn(*mut c_void) -> u64;
type ResultLengthFn = unsafe extern "C" fn(*mut c_void) -> usize;
type ResultElapsedFn = unsafe extern "C" fn(*mut c_void) -> f64;
type ResultErrorFn = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type DestroyResultFn = unsafe extern "C" fn(*mut c_void);
type SetSignalHandlersFn = unsafe extern "C" fn(c_int);

/// The loaded library and the functions we call. Lives in a `static` and is never
/// dropped, so the library is never unloaded.
struct Api {
    path: PathBuf,
    connect: ConnectFn,
    close_conn: CloseConnFn,
    query_n: QueryNFn,
    result_buffer: ResultBufferFn,
    result_length: ResultLengthFn,
    result_elapsed: ResultElapsedFn,
    result_rows_read: ResultU64Fn,
    result_storage_rows_read: ResultU64Fn,
    result_storage_bytes_read: ResultU64Fn,
    result_error: ResultErrorFn,
    destroy_query_result: DestroyResultFn,
    _library: Library,
}

static API: OnceLock<Result<Api, String>> = OnceLock::new();

/// The storage folder this process's engine has open, and how many connections use it.
/// The engine takes one folder at a time; another may be opened once all are closed.
static STORAGE: Mutex<Option<(PathBuf, usize)>> = Mutex::new(None);

/// The statements running now on this process's connections, by number, with the
/// storage folder of their connection: what a request to stop cancels.
static RUNNING: Mutex<BTreeMap<u64, PathBuf>> = Mutex::new(BTreeMap::new());
static NEXT_STATEMENT: AtomicU64 = AtomicU64::new(0);
/// How many cancels (`KILL QUERY`) have begun, and how many have ended: a statement that
/// ends after a cancel began that had not ended when the statement began ran beside it,
/// and may have been killed ([`Connection::query`]).
static KILLS_STARTED: AtomicU64 = AtomicU64::new(0);
static KILLS_ENDED: AtomicU64 = AtomicU64::new(0);
/// How often a cancel is sent again while the statement it is for still runs: one that
/// had not reached the engine's process list yet was not found the first time.
const CANCEL_RETRY: Duration = Duration::from_millis(200);
/// How long a cancelled statement may go on before the process stops at once, as a second
/// Ctrl-C would stop it. The engine looks for a cancel between blocks of rows; a statement
/// that computes long within one (a large `arrayFold` on one row) never looks, and a stop
/// request must not wait for it (a supervisor's one SIGTERM, a matrix's).
pub const CANCEL_BOUND: Duration = Duration::from_secs(2);
/// The exit code of a process stopped by a signal, as a shell reports Ctrl-C.
const STOPPED_EXIT_CODE: i32 = 130;
/// How the engine says a statement was killed.
const CANCELLED: &str = "QUERY_WAS_CANCELLED";

fn api() -> Result<&'static Api> {
    API.get_or_init(|| {
        let progress = |line: &str| crate::say!("chbench: {line}");
        let library = engine::library(&progress).map_err(|error| format!("{error:#}"))?;
        let api = load(&library).map_err(|error| format!("{error:#}"))?;
        hide_stdin().map_err(|error| format!("{error:#}"))?;
        interrupt::on_stop(cancel_running_statements);
        Ok(api)
    })
    .as_ref()
    .map_err(|error| anyhow!("{error}"))
}

/// Points this process's standard input at `/dev/null`. The engine is `clickhouse-local`
/// inside: when its standard input is not a terminal and holds data, it takes that data as
/// an INSERT's (`echo x | cargo xtask bench writes --async-insert` failed with "Processing
/// async inserts with both inlined and external data"), and a statement could read a
/// protocol's bytes meant for this process. Nothing this tool runs reads its standard
/// input, but the engine worker, which takes a copy first ([`take_stdin`]).
fn hide_stdin() -> Result<()> {
    let null = std::fs::File::open("/dev/null").context("cannot open /dev/null to keep the engine off stdin")?;
    // SAFETY: dup2 on two open descriptors; `null` is closed on drop, fd 0 stays open.
    if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), 0) } < 0 {
        bail!("cannot point stdin at /dev/null: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// A copy of this process's standard input, taken before the engine is loaded (which
/// points it at `/dev/null`, [`hide_stdin`]): for a process whose requests come on it.
pub fn take_stdin() -> Result<std::fs::File> {
    if API.get().is_some() {
        bail!("the engine is loaded: its standard input is /dev/null already");
    }
    let stdin = std::io::stdin();
    let copy = std::os::fd::AsFd::as_fd(&stdin).try_clone_to_owned().context("cannot copy stdin")?;
    Ok(std::fs::File::from(copy))
}

/// Checks the library file, loads it and resolves every symbol we use. A failure names
/// the file and what to do, which depends on where the file came from.
fn load(library: &EngineLibrary) -> Result<Api> {
    engine::check_library(library)?;
    // SAFETY: loading runs the library's initialisers; libchdb's are known to be benign
    // when loaded once per process, which the `static` above guarantees.
    let loaded = unsafe { Library::new(&library.path) }
        // `{:#}` adds the system's reason, which libloading keeps as the error's source.
        .map_err(|error| library.unusable(format!("failed to load ({:#})", anyhow::Error::from(error))))?;
    // SAFETY: every type below is the exported prototype (see the module docs).
    unsafe {
        let set_signal_handlers: SetSignalHandlersFn = symbol(&loaded, library, "chdb_set_signal_handlers_enabled")?;
        set_signal_handlers(0);
        Ok(Api {
            path: library.path.clone(),
            connect: symbol(&loaded, library, "chdb_connect")?,
            close_conn: symbol(&loaded, library, "chdb_close_conn")?,
            query_n: symbol(&loaded, library, "chdb_query_n")?,
            result_buffer: symbol(&loaded, library, "chdb_result_buffer")?,
            result_length: symbol(&loaded, library, "chdb_result_length")?,
            result_elapsed: symbol(&loaded, library, "chdb_result_elapsed")?,
            result_rows_read: symbol(&loaded, library, "chdb_result_rows_read")?,
            result_storage_rows_read: symbol(&loaded, library, "chdb_result_storage_rows_read")?,
            result_storage_bytes_read: symbol(&loaded, library, "chdb_result_storage_bytes_read")?,
            result_error: symbol(&loaded, library, "chdb_result_error")?,
            destroy_query_result: symbol(&loaded, library, "chdb_destroy_query_result")?,
            _library: loaded,
        })
    }
}

/// Resolves one function; a library without it is some other library, not libchdb.
///
/// # Safety
/// `T` must be the symbol's exported prototype.
unsafe fn symbol<T: Copy>(loaded: &Library, library: &EngineLibrary, name: &str) -> Result<T> {
    // SAFETY: the caller guarantees the prototype.
    let found = unsafe { loaded.get::<T>(name.as_bytes()) };
    found.map(|symbol| *symbol).map_err(|_| library.unusable(format!("is not a libchdb.so (it has no symbol {name})")))
}

/// Loads the engine library (once per process) and returns the path it came from.
pub fn ensure_loaded() -> Result<PathBuf> {
    Ok(api()?.path.clone())
}

/// What one statement returned, with the engine's own counters.
#[derive(Debug, Clone)]
pub struct ChdbOutput {
    /// The result in the requested output format (empty for DDL and INSERT).
    pub body: String,
    /// Time the engine reports for the statement.
    pub elapsed: Option<Duration>,
    /// Rows in the result.
    pub result_rows: u64,
    /// Rows and bytes read from storage.
    pub storage_rows_read: u64,
    pub storage_bytes_read: u64,
}

/// One connection to the in-process engine. Closed on drop.
pub struct Connection {
    handle: *mut *mut c_void,
    api: &'static Api,
    /// The storage folder, canonical: where a second connection that cancels goes.
    storage: PathBuf,
}

impl Connection {
    /// Opens the engine on a storage directory. The first connection of a process
    /// chooses the directory; later ones must use the same directory.
    pub fn open(storage: &Path) -> Result<Connection> {
        let api = api()?;
        let storage = storage
            .canonicalize()
            .with_context(|| format!("the engine's storage folder {} does not exist", storage.display()))?;
        let mut open = STORAGE.lock().map_err(|_| anyhow!("the engine's storage lock is poisoned"))?;
        if let Some((existing, _)) = open.as_ref()
            && existing != &storage
        {
            bail!(
                "the embedded engine opens one storage folder at a time: {} is open, {} was asked for",
                existing.display(),
                storage.display()
            );
        }
        if open.is_none() {
            // 26.5.3 hangs in the first `DROP TABLE ... SYNC` or `DROP DATABASE ... SYNC` of
            // a fresh folder unless its `metadata/` exists before the first connect
            // (docs/embedded-engine.md); later engines make it themselves.
            let metadata = storage.join("metadata");
            std::fs::create_dir_all(&metadata)
                .with_context(|| format!("cannot create the engine's folder {}", metadata.display()))?;
        }
        let arguments = [
            CString::new("clickhouse")?,
            CString::new(format!("--path={}", storage.display())).context("storage path has a NUL byte")?,
        ];
        let mut argv: Vec<*mut c_char> = arguments.iter().map(|argument| argument.as_ptr().cast_mut()).collect();
        let argc = c_int::try_from(argv.len()).context("too many engine arguments")?;
        // SAFETY: argv points at NUL-terminated strings that outlive the call.
        let handle = unsafe { (api.connect)(argc, argv.as_mut_ptr()) };
        if handle.is_null() {
            bail!(
                "the embedded engine refused a connection to {} (another process may hold it: look for its \
                 `status` lock file)",
                storage.display()
            );
        }
        let connections = open.as_ref().map_or(0, |(_, connections)| *connections);
        *open = Some((storage.clone(), connections + 1));
        Ok(Connection { handle, api, storage })
    }

    /// The storage folder the connection has open (canonical), where another connection
    /// of this process must go while this one is open.
    pub fn storage(&self) -> &Path {
        &self.storage
    }

    /// Runs one statement and returns its output in `format` (e.g. `TabSeparated`).
    /// A statement running when a stop is requested is cancelled, and this returns
    /// [`Interrupted`]. So does any statement that ran while a cancel was sent, whatever
    /// the engine answered: a killed statement can end without an error and with only
    /// some of its rows (a `system.parts` summary came back with none), and a cancel
    /// kills every statement of the process, including one begun after the request.
    pub fn query(&self, sql: &str, format: &str) -> Result<ChdbOutput> {
        let kills_ended_before = KILLS_ENDED.load(Ordering::SeqCst);
        let outcome = self.query_uncancelled(sql, format);
        if outcome.is_ok() && KILLS_STARTED.load(Ordering::SeqCst) > kills_ended_before {
            return Err(Interrupted.into());
        }
        outcome
    }

    /// [`Connection::query`] without the check for a cancel it ran beside: for the
    /// cancel itself.
    fn query_uncancelled(&self, sql: &str, format: &str) -> Result<ChdbOutput> {
        let api = self.api;
        let _running = RunningStatement::start(&self.storage);
        // SAFETY: the handle is a live connection (closed only in Drop); the pointers and
        // lengths describe live buffers; the result is destroyed before returning.
        unsafe {
            let result =
                (api.query_n)(*self.handle, sql.as_ptr().cast(), sql.len(), format.as_ptr().cast(), format.len());
            if result.is_null() {
                bail!("the embedded engine returned no result");
            }
            let outcome = read_result(api, result, &self.storage);
            (api.destroy_query_result)(result);
            outcome
        }
    }
}

/// Copies what we need out of a result; the caller destroys it.
unsafe fn read_result(api: &Api, result: *mut c_void, storage: &Path) -> Result<ChdbOutput> {
    // SAFETY: `result` is a live result from chdb_query_n.
    unsafe {
        let error = (api.result_error)(result);
        if !error.is_null() {
            let text = CStr::from_ptr(error).to_string_lossy();
            let message = without_a_repeated_code(&text);
            // Cancelled because a stop was asked for: one fact, not a failure.
            if message.contains(CANCELLED) && interrupt::check().is_err() {
                return Err(Interrupted.into());
            }
            if let Some(full) = disk_full(message.trim(), storage) {
                return Err(full.into());
            }
            bail!("{}", message.trim());
        }
        let length = (api.result_length)(result);
        let buffer = (api.result_buffer)(result);
        // An empty result (DDL, INSERT) has a NULL buffer.
        let body = if buffer.is_null() || length == 0 {
            String::new()
        } else {
            String::from_utf8_lossy(std::slice::from_raw_parts(buffer.cast::<u8>(), length)).into_owned()
        };
        let elapsed_seconds = (api.result_elapsed)(result);
        Ok(ChdbOutput {
            body,
            // A value the engine should never give (negative, NaN, huge) is unknown.
            elapsed: Duration::try_from_secs_f64(elapsed_seconds).ok(),
            result_rows: (api.result_rows_read)(result),
            storage_rows_read: (api.result_storage_rows_read)(result),
            storage_bytes_read: (api.result_storage_bytes_read)(result),
        })
    }
}

/// The engine's error without the code it repeats: some errors (one raised while the
/// result is written, as `INTO OUTFILE`'s) come as `Code: 504. DB::Exception: Code: 504.
/// DB::Exception: File ... exists`, and every one of a level's statements would say it twice.
pub fn without_a_repeated_code(message: &str) -> &str {
    const EXCEPTION: &str = "DB::Exception: ";
    let mut message = message;
    while message.starts_with("Code: ")
        && let Some(at) = message.find(EXCEPTION)
    {
        let (code, rest) = message.split_at(at + EXCEPTION.len());
        if !rest.starts_with(code) {
            break;
        }
        message = rest;
    }
    message
}

/// The engine's error `message` said as the disk of `storage` being full, with its
/// free space and what to do, when it is that; `None` for any other error.
pub fn disk_full(message: &str, storage: &Path) -> Option<DiskFull> {
    let full = ["NOT_ENOUGH_SPACE", "No space left on device", "ENOSPC"].iter().any(|sign| message.contains(sign));
    if !full {
        return None;
    }
    let free = match crate::files::free_bytes(storage) {
        Ok(bytes) => format!("{} free", human_bytes(bytes)),
        Err(error) => format!("free space unknown: {error:#}"),
    };
    Some(DiskFull { folder: shown(storage), free, smaller: "give fewer rows".to_string(), engine: message.to_string() })
}

/// The disk of the engine's folder full, as the error a statement ends with. What makes
/// a run smaller is rows for most, but not for every kind: one whose size is something
/// else (the parts benchmark's `--parts`) finds this error in its chain
/// (`anyhow::Error::downcast_mut`) and says that instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFull {
    /// The engine's folder, as messages show paths.
    pub folder: String,
    /// Its free space, or why that is unknown.
    pub free: String,
    /// What to give for a smaller run: `give fewer rows`.
    pub smaller: String,
    /// The engine's own message.
    pub engine: String,
}

impl std::fmt::Display for DiskFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the disk of the engine's folder {} is full ({}): free space there, or {} ({})",
            self.folder, self.free, self.smaller, self.engine
        )
    }
}

impl std::error::Error for DiskFull {}

/// A statement in [`RUNNING`] while it runs.
struct RunningStatement {
    number: u64,
}

impl RunningStatement {
    fn start(storage: &Path) -> RunningStatement {
        let number = NEXT_STATEMENT.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut running) = RUNNING.lock() {
            running.insert(number, storage.to_path_buf());
        }
        RunningStatement { number }
    }
}

impl Drop for RunningStatement {
    fn drop(&mut self) {
        if let Ok(mut running) = RUNNING.lock() {
            running.remove(&self.number);
        }
    }
}

/// How many statements run on this process's connections now.
pub fn running_statements() -> usize {
    RUNNING.lock().map_or(0, |running| running.len())
}

/// Cancels the statements running now, from a thread of its own (the caller is the
/// signal's thread, which must stay free for a second Ctrl-C): `KILL QUERY` from a second
/// connection, sent again until each of them has ended. Statements that start later are
/// not touched: the work stops at its next [`interrupt::check`], and what runs after it
/// (dropping the run's database, say) runs.
fn cancel_running_statements() {
    let Ok(running) = RUNNING.lock().map(|running| running.clone()) else { return };
    if running.is_empty() {
        return;
    }
    // A thread of its own: a KILL QUERY sent while the engine is busy may itself take long.
    let watched = running.clone();
    let bounded = std::thread::Builder::new().name("cancel-bound".to_string()).spawn(move || {
        std::thread::sleep(CANCEL_BOUND);
        let still_running = RUNNING.lock().is_ok_and(|now| watched.keys().any(|number| now.contains_key(number)));
        if still_running {
            crate::say!(
                "chbench: the statement in progress still runs {} s after it was cancelled (the engine looks for a \
                 cancel between blocks of rows, and this one computes within one); stopping at once, as a second \
                 Ctrl-C does: what was measured is kept in the run's journal",
                CANCEL_BOUND.as_secs()
            );
            // SAFETY: _exit ends the process at once, without running the engine's
            // destructors, which would wait for the statement or crash under it.
            unsafe { libc::_exit(STOPPED_EXIT_CODE) }
        }
    });
    if let Err(error) = bounded {
        crate::say!(
            "chbench: cannot bound the cancel of the statement in progress ({error}); a second Ctrl-C stops at once"
        );
    }
    let spawned = std::thread::Builder::new().name("cancel-statement".to_string()).spawn(move || {
        loop {
            // The connection opens while the lock shows a statement of ours still running,
            // so the engine has that folder open and a second connection shares it.
            let canceller = {
                let Ok(now) = RUNNING.lock() else { return };
                let Some(storage) = running.keys().find_map(|number| now.get(number)) else { return };
                Connection::open(storage)
            };
            let killed = canceller.and_then(|connection| {
                // Every statement of this process but the KILL itself; ASYNC, since SYNC
                // waits for an end the engine never reports here.
                KILLS_STARTED.fetch_add(1, Ordering::SeqCst);
                let killed =
                    connection.query_uncancelled("KILL QUERY WHERE query NOT LIKE 'KILL QUERY%' ASYNC", "TabSeparated");
                KILLS_ENDED.fetch_add(1, Ordering::SeqCst);
                killed
            });
            if let Err(error) = killed {
                crate::say!("chbench: cannot cancel the statement in progress ({error:#}); it finishes first");
                return;
            }
            std::thread::sleep(CANCEL_RETRY);
        }
    });
    if let Err(error) = spawned {
        crate::say!("chbench: cannot cancel the statement in progress ({error}); it finishes first");
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // SAFETY: the handle came from chdb_connect and is closed exactly once.
        unsafe { (self.api.close_conn)(self.handle) }
        if let Ok(mut open) = STORAGE.lock() {
            match open.as_mut() {
                Some((_, connections)) if *connections > 1 => *connections -= 1,
                _ => *open = None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_that_repeats_its_code_is_said_once() {
        let once = "Code: 504. DB::Exception: File /tmp/out.csv exists, consider using APPEND or TRUNCATE. \
                    (FILE_ALREADY_EXISTS)";
        let twice = format!("Code: 504. DB::Exception: {once}");
        assert_eq!(without_a_repeated_code(&twice), once);
        assert_eq!(without_a_repeated_code(once), once);
        // Another code inside the message is the engine's own wording, kept.
        let nested = "Code: 60. DB::Exception: Code: 81. DB::Exception: Unknown database";
        assert_eq!(without_a_repeated_code(nested), nested);
        assert_eq!(without_a_repeated_code("Syntax error"), "Syntax error");
    }
}

//! Ctrl-C, SIGTERM or SIGHUP (a closed terminal, a dropped SSH session) as a request to
//! stop. Once the command line turns it on, the first signal sets a process-wide flag that work checks between statements ([`check`]: before
//! each measurement, each fixture statement and each wait on mutations, and between
//! phases), so the process ends through its normal path with [`Interrupted`] as its
//! error. A measurement that started is finished, and its answer is not used (as a
//! cancelled statement's is not: digesting or printing a large one takes long). Then the results
//! bundle is finished and its report rendered,
//! every connection closed, the engine's folder removed. A statement already running when
//! the signal comes is cancelled by the code that runs it, through a hook it registers
//! with [`on_stop`] (the embedded engine kills it from a second connection), and ends
//! with [`Interrupted`] too. A second signal stops the process at once, as without this;
//! a run's bundle on disk stays valid, and what the process leaves is removed at the
//! next start. Work that only reads and computes (a report, a comparison) runs through
//! [`until_stopped`], which ends it at once on the first signal.
//!
//! [`PARENT_GONE`] is the one request that never stops at once, however often it comes:
//! the signal a matrix's variant gets when its matrix dies. The kernel sends it each time
//! the variant is handed to another thread of the dying matrix (one per thread that ends),
//! so a SIGTERM there came several times and the second ended the variant before its
//! bundle was finished.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};
use signal_hook::iterator::Signals;

/// The signals that ask to stop, as messages name them.
pub const SIGNALS: &str = "Ctrl-C, SIGTERM or SIGHUP";

/// What the first signal makes the process say (a process that relays another's output,
/// as a matrix its variants', need not say it twice).
pub const STOPPING_LINE: &str =
    "chbench: stopping: cancelling the work in progress (a second Ctrl-C, SIGTERM or SIGHUP stops at once)";

static REQUESTED: AtomicBool = AtomicBool::new(false);
/// What the first request to stop also runs: each cancels the work in progress of its
/// own kind (a statement running in the embedded engine, say).
static ON_STOP: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

/// The error of work stopped by Ctrl-C, SIGTERM or SIGHUP between two statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interrupted by a signal ({SIGNALS})")
    }
}

impl std::error::Error for Interrupted {}

/// The parent-death signal a matrix gives its variants (see the module): a request to
/// stop, once, whatever comes after it.
pub const PARENT_GONE: i32 = SIGUSR1;

/// Handles Ctrl-C, SIGTERM, SIGHUP and [`PARENT_GONE`] as described above, from a thread
/// of its own (a signal handler itself may not print).
pub fn stop_at_the_next_statement_on_ctrl_c() -> Result<()> {
    let mut signals =
        Signals::new([SIGINT, SIGTERM, SIGHUP, PARENT_GONE]).context("cannot install the Ctrl-C handler")?;
    std::thread::Builder::new()
        .name("ctrl-c".to_string())
        .spawn(move || {
            for signal in signals.forever() {
                let asked_before = REQUESTED.swap(true, Ordering::SeqCst);
                if asked_before && signal == PARENT_GONE {
                    continue;
                }
                if asked_before {
                    // Ends the process as an unhandled signal would.
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                }
                // After SIGHUP the terminal may be gone, and after a matrix's end the pipe to
                // it: `eprintln!` would panic there, before the hooks that cancel the work.
                crate::say!("\n{STOPPING_LINE}");
                run_stop_hooks();
            }
        })
        .context("cannot start the Ctrl-C handler's thread")?;
    Ok(())
}

/// What the first Ctrl-C does: asks the work in this process to stop at its next check,
/// and runs the [`on_stop`] hooks, which cancel what is running.
pub fn request_stop() {
    REQUESTED.store(true, Ordering::SeqCst);
    run_stop_hooks();
}

/// Registers `hook` to run, from the thread that handles the signal, when a stop is
/// requested; register each once. It must return at once: slow work goes to a thread of
/// its own, or a second Ctrl-C would wait for it.
pub fn on_stop(hook: fn()) {
    if let Ok(mut hooks) = ON_STOP.lock() {
        hooks.push(hook);
    }
}

fn run_stop_hooks() {
    let hooks = ON_STOP.lock().map(|hooks| hooks.clone()).unwrap_or_default();
    for hook in hooks {
        hook();
    }
}

/// Whether Ctrl-C, SIGTERM or SIGHUP came: what a wait on the network polls, to end at once.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// [`Interrupted`] once Ctrl-C, SIGTERM or SIGHUP came.
pub fn check() -> Result<()> {
    if REQUESTED.load(Ordering::SeqCst) { Err(Interrupted.into()) } else { Ok(()) }
}

/// How often [`until_stopped`] looks for a stop request.
const POLL: Duration = Duration::from_millis(50);

/// Runs `work` on a thread of its own and returns what it returns, or [`Interrupted`] as
/// soon as a stop is requested, leaving the thread to end with the process. For work
/// that only reads and computes (a large bundle read and rendered, two compared), which
/// has no statement to check between and no single loop that holds all its time; what
/// it would write is written after it returns, whole or not at all.
pub fn until_stopped<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    check()?;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("stoppable work".to_string())
        .spawn(move || {
            // The receiver is gone when the work was abandoned: nothing to tell.
            let _ = sender.send(work());
        })
        .context("cannot start a thread for the work")?;
    loop {
        match receiver.recv_timeout(POLL) {
            // A stop that came while the work finished still stops: the caller would
            // write what it returned after the stopping line was said.
            Ok(done) => return check().and(done),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => check()?,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                anyhow::bail!("the work's thread ended without an answer (it panicked)")
            }
        }
    }
}

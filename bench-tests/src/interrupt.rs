//! Ctrl-C (or SIGTERM) as a request to stop. Once the command line turns it on, the first
//! signal sets a process-wide flag that work checks between statements ([`check`]: before
//! each measurement, each fixture statement and each wait on mutations, and between
//! phases), so the process ends through its normal path with [`Interrupted`] as its
//! error. A measurement that started is finished and recorded first. Then the results
//! bundle is finished and its report rendered,
//! every connection closed, the engine's folder removed. A statement already running when
//! the signal comes is cancelled by the code that runs it, through a hook it registers
//! with [`on_stop`] (the embedded engine kills it from a second connection), and ends
//! with [`Interrupted`] too. A second signal stops the process at once, as without this;
//! a run's bundle on disk stays valid, and what the process leaves is removed at the
//! next start.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// What the first signal makes the process say (a process that relays another's output,
/// as a matrix its variants', need not say it twice).
pub const STOPPING_LINE: &str =
    "chbench: stopping: cancelling the statement in progress (a second Ctrl-C or SIGTERM stops at once)";

static REQUESTED: AtomicBool = AtomicBool::new(false);
/// What the first request to stop also runs: each cancels the work in progress of its
/// own kind (a statement running in the embedded engine, say).
static ON_STOP: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

/// The error of work stopped by Ctrl-C or SIGTERM between two statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("interrupted by Ctrl-C or SIGTERM")
    }
}

impl std::error::Error for Interrupted {}

/// Handles Ctrl-C and SIGTERM as described above, from a thread of its own (a signal
/// handler itself may not print).
pub fn stop_at_the_next_statement_on_ctrl_c() -> Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM]).context("cannot install the Ctrl-C handler")?;
    std::thread::Builder::new()
        .name("ctrl-c".to_string())
        .spawn(move || {
            for signal in signals.forever() {
                if REQUESTED.swap(true, Ordering::SeqCst) {
                    // Ends the process as an unhandled signal would.
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                }
                eprintln!("\n{STOPPING_LINE}");
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

/// Whether Ctrl-C or SIGTERM came: what a wait on the network polls, to end at once.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// [`Interrupted`] once Ctrl-C or SIGTERM came.
pub fn check() -> Result<()> {
    if REQUESTED.load(Ordering::SeqCst) { Err(Interrupted.into()) } else { Ok(()) }
}

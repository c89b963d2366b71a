//! The engine's download, bounded and said. Every step that waits (on the registry, on
//! `npm pack`, on the download the build started, on the extraction and the SHA-256 check)
//! says what it does at least every [`PROGRESS_EVERY`], with the time so far, and the
//! network steps end at the bound `CHBENCH_ENGINE_FETCH_TIMEOUT` gives ([`DEFAULT_BOUND`]
//! unless set). Before anything is downloaded the registry is asked for the package's
//! metadata with short timeouts ([`Fetch::check_registry`]): offline, npm's own retries
//! would wait minutes without a word, so this fails in one line within a minute instead,
//! naming `CHBENCH_LIBCHDB` as the way round. A stop request (Ctrl-C, SIGTERM, SIGHUP) ends
//! every wait, and the npm this process started with it.

use std::cell::Cell;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use super::LIBCHDB_ENV;
use crate::env::seconds;
use crate::interrupt::{self, Interrupted};

/// Environment variable bounding the download, in seconds: the registry check, the wait
/// for the build's download and `npm pack` together.
pub const FETCH_TIMEOUT_ENV: &str = "CHBENCH_ENGINE_FETCH_TIMEOUT";
/// The bound when `CHBENCH_ENGINE_FETCH_TIMEOUT` is not set: the 170 MB tarball at
/// 150 KB/s, a slow but working line, still fits.
pub const DEFAULT_BOUND: Duration = Duration::from_secs(20 * 60);
/// The longest silence while the engine is fetched.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// How long the registry check may take: two tries of npm's 10 s fetch timeout (see
/// [`Fetch::check_registry`]) and npm's start, with room to spare, within a minute.
const REGISTRY_CHECK_BOUND: Duration = Duration::from_secs(45);
/// How often a wait looks at what it waits for.
const POLL: Duration = Duration::from_millis(100);

/// One fetch of the engine: its package, its bound, and when it last said something.
pub struct Fetch<'a> {
    spec: String,
    /// The npm to run: `npm` from the PATH, or the unit tests' stand-in.
    npm: PathBuf,
    started: Instant,
    bound: Duration,
    progress: &'a dyn Fn(&str),
    last_said: Cell<Instant>,
    registry_answered: Cell<bool>,
}

/// What a finished npm run left: its exit status and what it printed.
pub struct NpmRun {
    pub success: bool,
    pub status: String,
    pub stdout: String,
    pub stderr: String,
}

impl<'a> Fetch<'a> {
    /// Starts the clock of a fetch of `spec` (`<package>@<version>`); refuses a bad
    /// `CHBENCH_ENGINE_FETCH_TIMEOUT` before anything runs.
    pub fn start(spec: &str, progress: &'a dyn Fn(&str)) -> Result<Fetch<'a>> {
        let now = Instant::now();
        Ok(Fetch {
            spec: spec.to_string(),
            npm: PathBuf::from("npm"),
            started: now,
            bound: fetch_bound()?,
            progress,
            last_said: Cell::new(now),
            registry_answered: Cell::new(false),
        })
    }

    /// The same fetch with another npm (the unit tests' stand-in).
    #[cfg(test)]
    pub fn with_npm(self, npm: &Path) -> Fetch<'a> {
        Fetch { npm: npm.to_path_buf(), ..self }
    }

    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The npm to run.
    pub fn npm(&self) -> &Path {
        &self.npm
    }

    /// Says `line` now.
    pub fn say(&self, line: &str) {
        (self.progress)(line);
        self.last_said.set(Instant::now());
    }

    /// Says what `line` makes of the time since the fetch started, once nothing was said for
    /// [`PROGRESS_EVERY`].
    pub fn tick(&self, line: impl FnOnce(&str) -> String) {
        if self.last_said.get().elapsed() >= PROGRESS_EVERY {
            // Whole seconds: a progress line, not a measurement.
            self.say(&line(&format!("{} s", self.started.elapsed().as_secs())));
        }
    }

    /// Asks the registry for the package's metadata (`npm view`, two tries of 10 s each),
    /// once per fetch: a registry that does not answer fails here in one line, not after
    /// npm's default retries (minutes). `scratch` keeps npm's output.
    pub fn check_registry(&self, scratch: &Path) -> Result<()> {
        if self.registry_answered.get() {
            return Ok(());
        }
        let shell = xshell::Shell::new().context("cannot start a shell for npm")?;
        let (npm, spec) = (&self.npm, &self.spec);
        let command = xshell::cmd!(
            shell,
            "{npm} view {spec} version --fetch-retries=1 --fetch-retry-mintimeout=1000 --fetch-retry-maxtimeout=2000 --fetch-timeout=10000"
        );
        let what = format!("asking the npm registry for {spec}");
        let Some(run) = self.run_npm(command.into(), &what, Some(REGISTRY_CHECK_BOUND), scratch)? else {
            let waited = REGISTRY_CHECK_BOUND.min(self.bound);
            bail!("{}", self.unreachable(&format!("it did not answer within {} s", waited.as_secs())));
        };
        if !run.success {
            if run.stderr.contains("E404") {
                bail!("{}", super::npm_pack_failure(spec, &run.status, &run.stderr));
            }
            bail!("{}", self.unreachable(&npm_network_reason(&run.stderr)));
        }
        self.registry_answered.set(true);
        Ok(())
    }

    /// The one line for a registry that cannot be reached.
    fn unreachable(&self, why: &str) -> String {
        format!(
            "cannot fetch the embedded engine {}: the npm registry cannot be reached ({why}); set \
             {LIBCHDB_ENV}=/path/to/libchdb.so to use a library you have, or check the network and npm's registry \
             setting",
            self.spec
        )
    }

    /// The one line for a download that outgrew the bound.
    pub fn over_bound(&self, what: &str) -> anyhow::Error {
        anyhow!(
            "{what} did not finish within {} ({FETCH_TIMEOUT_ENV}, in seconds, sets the bound); check the network \
             and npm registry access, or set {LIBCHDB_ENV}=/path/to/libchdb.so",
            seconds(self.bound)
        )
    }

    /// Runs npm, its output kept in files in `scratch`, and waits for it as
    /// [`Fetch::wait_while`] does, `limit` bounding it further. `None`: it ran out of
    /// time and was ended.
    pub fn run_npm(
        &self,
        mut command: Command,
        what: &str,
        limit: Option<Duration>,
        scratch: &Path,
    ) -> Result<Option<NpmRun>> {
        let output_file = |name: &str| {
            let path = scratch.join(name);
            File::create(&path).with_context(|| format!("cannot create {}", path.display())).map(|file| (path, file))
        };
        let ((stdout_path, stdout), (stderr_path, stderr)) = (output_file("npm-stdout")?, output_file("npm-stderr")?);
        let mut child = command.stdin(Stdio::null()).stdout(stdout).stderr(stderr).spawn().map_err(|error| {
            anyhow!(
                "`npm` is required to fetch the embedded engine ({error}); install Node.js/npm, or set \
                 {LIBCHDB_ENV} to an existing libchdb.so"
            )
        })?;
        let ended = self.wait_while(what, limit, || matches!(child.try_wait(), Ok(None)));
        if !matches!(ended, Ok(true)) {
            // Out of time or stopped: npm goes too, rather than download on unwatched.
            let _ = child.kill();
        }
        let status = child.wait().context("cannot wait for npm")?;
        if !ended? {
            return Ok(None);
        }
        let read = |path: &Path| std::fs::read(path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        Ok(Some(NpmRun {
            success: status.success(),
            status: status.to_string(),
            stdout: read(&stdout_path).with_context(|| format!("cannot read {}", stdout_path.display()))?,
            stderr: read(&stderr_path).with_context(|| format!("cannot read {}", stderr_path.display()))?,
        }))
    }

    /// Waits while `running` says so, saying every [`PROGRESS_EVERY`] that `what` goes
    /// on: `true` once it ended, `false` when `limit` or the fetch's bound passed first,
    /// [`Interrupted`] on a stop request.
    pub fn wait_while(&self, what: &str, limit: Option<Duration>, mut running: impl FnMut() -> bool) -> Result<bool> {
        let started = Instant::now();
        loop {
            if !running() {
                return Ok(true);
            }
            if interrupt::requested() {
                return Err(Interrupted.into());
            }
            if limit.is_some_and(|limit| started.elapsed() >= limit) || self.started.elapsed() >= self.bound {
                return Ok(false);
            }
            self.tick(|elapsed| format!("{what}: still going, {elapsed} since the fetch started"));
            std::thread::sleep(POLL);
        }
    }

    /// The bound on what is left of the fetch's network steps.
    pub fn remaining(&self) -> Duration {
        self.bound.saturating_sub(self.started.elapsed())
    }
}

/// The bound `CHBENCH_ENGINE_FETCH_TIMEOUT` gives, else the default.
fn fetch_bound() -> Result<Duration> {
    crate::env::seconds_env(FETCH_TIMEOUT_ENV, DEFAULT_BOUND)
}

/// Why npm could not reach its registry, from what it printed: the fetch error's reason
/// (`request to ... failed, reason: connect ECONNREFUSED ...`, `network timeout at: ...`),
/// else npm's error code.
pub fn npm_network_reason(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(|line| line.trim().trim_start_matches("npm error").trim()).collect();
    if let Some(reason) = lines.iter().find_map(|line| line.split_once("FetchError: ").map(|(_, reason)| reason)) {
        return reason.to_string();
    }
    if let Some(line) = lines.iter().find(|line| line.starts_with("network ")) {
        return line.to_string();
    }
    match lines.iter().find_map(|line| line.strip_prefix("code ")) {
        Some(code) => format!("npm error {code}"),
        None => "npm failed without saying why".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_says_why_it_could_not_reach_the_registry_in_one_line() {
        // What npm 11 prints for a closed port and for a peer that never answers.
        let refused = "npm error code ECONNREFUSED\nnpm error syscall connect\nnpm error FetchError: request to \
                       http://127.0.0.1:9/@chdb%2flib-linux-x64-gnu failed, reason: connect ECONNREFUSED \
                       127.0.0.1:9\nnpm error     at ClientRequest.<anonymous> (x.js:130:14)\n";
        assert_eq!(
            npm_network_reason(refused),
            "request to http://127.0.0.1:9/@chdb%2flib-linux-x64-gnu failed, reason: connect ECONNREFUSED 127.0.0.1:9"
        );
        let silent = "npm error code FETCH_ERROR\nnpm error errno FETCH_ERROR\nnpm error network timeout at: \
                      http://127.0.0.1:5/@chdb%2flib-linux-x64-gnu\nnpm error A complete log of this run can be \
                      found in: x.log\n";
        assert_eq!(npm_network_reason(silent), "network timeout at: http://127.0.0.1:5/@chdb%2flib-linux-x64-gnu");
        assert_eq!(npm_network_reason("npm error code EAI_AGAIN\n"), "npm error EAI_AGAIN");
    }
}

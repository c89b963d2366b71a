//! The embedded engine in a process of its own, a worker: how a run talks to a second
//! engine version. The engine loads once per process and never unloads, so a process
//! that has one version loaded reaches another only through a child process that loads
//! it (ARCHITECTURE.md, "Engine versions").
//!
//! The parent ([`WorkerBackend::spawn`]) fetches the version's library through the same
//! provisioning as `cargo xtask setup` (the child never downloads), then starts the
//! worker program (`cargo xtask engine-worker`) with `CHBENCH_LIBCHDB` naming that library
//! and `CHBENCH_ENGINE_VERSION` the version. The child ([`serve`]) opens the embedded
//! target on its storage (a hard-linked copy of a folder, in its own
//! `target/chbench/embedded/<pid>/`, removed when it ends, as any process's), says it is
//! ready, then runs one request at a time from its stdin and answers each on its stdout:
//! one JSON line each, marked with [`PROTOCOL_MARK`] so that anything else the engine
//! prints there is told apart. It ends when its stdin closes (the parent dropped the
//! backend, or died), closing its connection and removing its folder.
//!
//! A worker that ends mid-statement (killed, crashed) is one error naming it, its exit
//! status, its last line on stderr and the statement; the backend is unusable after it.
//!
//! A worker runs in a process group of its own, so a Ctrl-C at a terminal reaches this
//! process alone, which passes one SIGINT on to each worker (a second would stop the
//! worker at once): the worker cancels its statement and answers that it was interrupted,
//! which is [`Interrupted`] here.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use super::{Backend, Capabilities, Concurrency, DatasetProvision, ResultCounters, StatsSource, Storage};
use crate::engine::{self, ENGINE_VERSION_ENV, EngineVersion, LIBCHDB_ENV};
use crate::interrupt::Interrupted;
use crate::settings::Settings;
use crate::sql::one_line;

/// What a worker can do: the embedded engine's, but in another process and through one pipe.
pub const CAPABILITIES: Capabilities = Capabilities {
    // The worker's engine measures as the embedded one does: results and its own process's
    // system.events, statements one at a time.
    stats_source: StatsSource::ResultAndEventsDelta,
    // One connection in the worker, one session.
    session_settings_persist: true,
    // The worker opens a hard-linked copy, as an embedded process does.
    datasets: DatasetProvision::HardLinkedCopy,
    caches_droppable: true,
    // Its CPU is another process's: this process's CPU time says nothing of it.
    engine_in_process: false,
    // One pipe: a statement at a time.
    concurrent_queries: Concurrency::Serial,
    deployed_by_chbench: false,
    // Its library is stripped and keeps no system.trace_log: no flame graphs.
    query_profiler: false,
    in_cluster_load: false,
};

/// How each protocol line starts, on both pipes.
pub const PROTOCOL_MARK: &str = "chbench-worker ";
/// How long a worker whose stdin closed may take to close its engine and remove its folder.
const EXIT_WAIT: Duration = Duration::from_secs(30);
/// Lines of the worker's stderr kept for an error.
const STDERR_LINES: usize = 20;

/// The workers of this process that run, by pid: what a request to stop reaches.
static WORKERS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static STOP_HOOK: Once = Once::new();

/// Passes a request to stop on to every worker (one SIGINT each); best effort, as a
/// worker may have just ended.
fn interrupt_workers() {
    let Ok(workers) = WORKERS.lock() else { return };
    for pid in workers.iter().filter_map(|pid| i32::try_from(*pid).ok()).filter_map(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
    }
}

/// Adds or removes a worker in [`WORKERS`].
fn track_worker(pid: u32, running: bool) {
    if let Ok(mut workers) = WORKERS.lock() {
        workers.retain(|known| *known != pid);
        if running {
            workers.push(pid);
        }
    }
}

/// How to start a worker: a program and the arguments that make it one, before the
/// worker's own (`--engine-version`, `--copy-of` or `--build`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl WorkerCommand {
    /// This process's own executable with `args` (`cargo xtask`'s `engine-worker`): the
    /// one program a run knows is there.
    pub fn this_executable(args: &[&str]) -> Result<WorkerCommand> {
        let program = std::env::current_exe().context("cannot find this process's executable to start a worker")?;
        Ok(WorkerCommand { program, args: args.iter().map(|arg| arg.to_string()).collect() })
    }

    /// The worker's command line for `engine` on `storage`, after [`WorkerCommand::args`].
    pub fn worker_args(engine: &EngineVersion, storage: &Storage) -> Vec<String> {
        let mut args = vec!["--engine-version".to_string(), engine.npm_version.to_string()];
        match storage {
            Storage::Scratch => {}
            Storage::CopyOf(folder) => args.extend(["--copy-of".to_string(), folder.display().to_string()]),
            Storage::Build(folder) => args.extend(["--build".to_string(), folder.display().to_string()]),
        }
        // On a storage profile's volume, the worker's copy is on it too (and the worker, this
        // process's child, in its cgroup).
        if let Some(mount) = super::volume::mount_for_workers() {
            args.extend(["--volume".to_string(), mount.display().to_string()]);
        }
        // The run's own session settings (`bench --setting`) are every session's, the worker's too.
        for (name, value) in crate::settings::run_settings().iter() {
            args.extend(["--setting".to_string(), format!("{name}={value}")]);
        }
        args
    }
}

/// What the parent asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
enum Request {
    Run { sql: String, settings: Settings, format: String },
    UseDatabase { name: String },
    ApplySessionSettings { settings: Settings },
    RestoreSessionSettings { settings: Settings },
}

/// What the worker answers: once when it has opened its engine, then once per request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "response", rename_all = "snake_case")]
enum Response {
    Ready { endpoint: String },
    Done { body: String, counters: ResultCounters },
    Failed { error: String, interrupted: bool },
}

/// The worker's side: opens the embedded engine on `storage` (the engine version this
/// process loads is its `CHBENCH_ENGINE_VERSION`), then answers requests from stdin on
/// stdout until stdin closes. An error here is the worker's own (a pipe gone); a failed
/// statement is an answer.
pub fn serve(storage: &Storage) -> Result<()> {
    let mut stdout = std::io::stdout();
    // The requests' pipe, kept from the engine, which is given /dev/null as its stdin.
    let requests = std::io::BufReader::new(super::chdb::take_stdin()?);
    let mut backend = match super::embedded::open(storage) {
        Ok(backend) => backend,
        Err(error) => {
            send(&mut stdout, &failed(&error))?;
            return Err(error);
        }
    };
    send(&mut stdout, &Response::Ready { endpoint: backend.endpoint() })?;
    for line in requests.lines() {
        let line = line.context("cannot read the engine worker's requests")?;
        let Some(request) = line.strip_prefix(PROTOCOL_MARK) else { continue };
        let request: Request = serde_json::from_str(request).context("unreadable request to the engine worker")?;
        let done = |body: String, counters: ResultCounters| Response::Done { body, counters };
        let outcome = match request {
            Request::Run { sql, settings, format } => {
                backend.run(&sql, &settings, &format).map(|(body, counters)| done(body, counters))
            }
            Request::UseDatabase { name } => {
                backend.use_database(&name).map(|()| done(String::new(), Default::default()))
            }
            Request::ApplySessionSettings { settings } => {
                backend.apply_session_settings(&settings).map(|()| done(String::new(), Default::default()))
            }
            Request::RestoreSessionSettings { settings } => {
                backend.restore_session_settings(&settings).map(|()| done(String::new(), Default::default()))
            }
        };
        send(&mut stdout, &outcome.unwrap_or_else(|error| failed(&error)))?;
    }
    Ok(())
}

fn failed(error: &anyhow::Error) -> Response {
    Response::Failed { error: format!("{error:#}"), interrupted: error.is::<Interrupted>() }
}

fn send(out: &mut impl Write, message: &impl Serialize) -> Result<()> {
    let line = serde_json::to_string(message)?;
    writeln!(out, "{PROTOCOL_MARK}{line}").and_then(|()| out.flush()).context("cannot answer the parent")
}

/// A worker process with one engine version loaded, as a [`Backend`]: every call is a
/// request over its stdin, answered on its stdout.
pub struct WorkerBackend {
    child: Child,
    /// `None` once closed (dropping it is what tells the worker to end).
    requests: Option<ChildStdin>,
    responses: BufReader<ChildStdout>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    engine: &'static EngineVersion,
    endpoint: String,
    /// Why the worker can no longer be used, once it ended.
    ended: Option<String>,
}

impl WorkerBackend {
    /// Fetches `engine`'s library if needed (`progress` gets a line per slow step), starts
    /// the worker on `storage` and waits until its engine is open.
    pub fn spawn(
        command: &WorkerCommand,
        engine: &'static EngineVersion,
        storage: &Storage,
        progress: &dyn Fn(&str),
    ) -> Result<WorkerBackend> {
        // The process's own version is the library it loaded (`CHBENCH_LIBCHDB` included),
        // so that a worker of it measures the same build.
        let library = if engine == engine::engine_version()? {
            engine::library(progress)?.path
        } else {
            engine::provision_version(engine, progress)?
        };
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .args(WorkerCommand::worker_args(engine, storage))
            .env(LIBCHDB_ENV, &library)
            .env(ENGINE_VERSION_ENV, engine.npm_version)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .with_context(|| {
                format!(
                    "cannot start the engine worker {} for engine {}",
                    command.program.display(),
                    engine.npm_version
                )
            })?;
        let (Some(requests), Some(responses), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            bail!("the engine worker for engine {} started without its pipes", engine.npm_version);
        };
        STOP_HOOK.call_once(|| crate::interrupt::on_stop(interrupt_workers));
        track_worker(child.id(), true);
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr_tail);
        // The worker's stderr is kept, not shown: its last lines say why it ended.
        std::thread::Builder::new()
            .name("engine-worker-stderr".to_string())
            .spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Ok(mut tail) = tail.lock() {
                        if tail.len() == STDERR_LINES {
                            tail.pop_front();
                        }
                        tail.push_back(line);
                    }
                }
            })
            .context("cannot start the thread that reads the engine worker's stderr")?;
        let mut worker = WorkerBackend {
            child,
            requests: Some(requests),
            responses: BufReader::new(responses),
            stderr_tail,
            engine,
            endpoint: String::new(),
            ended: None,
        };
        match worker.receive("while opening its engine")? {
            Response::Ready { endpoint } => {
                worker.endpoint = format!("{endpoint} in engine worker pid {}", worker.pid());
                Ok(worker)
            }
            Response::Failed { error, .. } => {
                bail!("the engine worker for engine {} could not open its engine: {error}", engine.npm_version)
            }
            Response::Done { .. } => {
                bail!("the engine worker for engine {} answered before it was asked", engine.npm_version)
            }
        }
    }

    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The engine version the worker loaded.
    pub fn engine(&self) -> &'static EngineVersion {
        self.engine
    }

    /// Sends `request` and returns the answer; `doing` says what the request was, for the
    /// error when the worker ends before it answers.
    fn ask(&mut self, request: &Request, doing: &str) -> Result<(String, ResultCounters)> {
        if let Some(ended) = &self.ended {
            bail!("{ended}; start another");
        }
        let sent = match self.requests.as_mut() {
            Some(requests) => send(requests, request),
            None => Err(anyhow!("its requests pipe is closed")),
        };
        if sent.is_err() {
            return Err(self.died(doing));
        }
        match self.receive(doing)? {
            Response::Done { body, counters } => Ok((body, counters)),
            Response::Failed { interrupted: true, .. } => Err(Interrupted.into()),
            Response::Failed { error, .. } => Err(anyhow!("{error}")),
            Response::Ready { .. } => bail!("the engine worker said it was ready again, {doing}"),
        }
    }

    /// The next protocol line from the worker; its end is [`WorkerBackend::died`].
    fn receive(&mut self, doing: &str) -> Result<Response> {
        loop {
            let mut line = String::new();
            let read = self.responses.read_line(&mut line);
            if !matches!(read, Ok(length) if length > 0) {
                return Err(self.died(doing));
            }
            // Anything else on the worker's stdout is the engine's own, and no answer.
            if let Some(response) = line.trim_end().strip_prefix(PROTOCOL_MARK) {
                return serde_json::from_str(response).context("unreadable answer from the engine worker");
            }
        }
    }

    /// The error for a worker that ended (or closed its stdout) `doing` something: its
    /// exit status and its last line on stderr. Later calls say it ended.
    fn died(&mut self, doing: &str) -> anyhow::Error {
        self.requests = None;
        let status = self.child.wait();
        track_worker(self.child.id(), false);
        let status = match status {
            Ok(status) => status.to_string(),
            Err(error) => format!("its status unknown: {error}"),
        };
        // The stderr thread may still hold its last line for a moment.
        let deadline = Instant::now() + Duration::from_millis(200);
        let last_line = loop {
            let line = self.stderr_tail.lock().ok().and_then(|tail| tail.back().cloned());
            if line.is_some() || Instant::now() > deadline {
                break line;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let said = last_line.map_or_else(String::new, |line| format!("; its last words: {}", line.trim()));
        let ended = format!(
            "the engine worker (engine {}, pid {}) ended ({status}){said}",
            self.engine.npm_version,
            self.child.id()
        );
        self.ended = Some(ended.clone());
        anyhow!("{ended} {doing}: what it was doing is lost, what it answered before stands")
    }
}

impl Backend for WorkerBackend {
    fn run(&mut self, sql: &str, settings: &Settings, format: &str) -> Result<(String, ResultCounters)> {
        let request = Request::Run { sql: sql.to_string(), settings: settings.clone(), format: format.to_string() };
        self.ask(&request, &format!("during `{}`", one_line(sql)))
    }

    fn use_database(&mut self, name: &str) -> Result<()> {
        self.ask(&Request::UseDatabase { name: name.to_string() }, &format!("while changing to database {name}"))
            .map(drop)
    }

    fn apply_session_settings(&mut self, settings: &Settings) -> Result<()> {
        self.ask(&Request::ApplySessionSettings { settings: settings.clone() }, "while applying session settings")
            .map(drop)
    }

    fn restore_session_settings(&mut self, settings: &Settings) -> Result<()> {
        self.ask(&Request::RestoreSessionSettings { settings: settings.clone() }, "while restoring session settings")
            .map(drop)
    }

    fn endpoint(&self) -> String {
        self.endpoint.clone()
    }
}

impl Drop for WorkerBackend {
    /// Closes the worker's stdin, which ends it (its engine closed, its folder removed),
    /// and waits for that; one that does not end in [`EXIT_WAIT`] is killed.
    fn drop(&mut self) {
        self.requests = None;
        let deadline = Instant::now() + EXIT_WAIT;
        let ended = loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break true,
                Ok(None) if Instant::now() > deadline => break false,
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        if !ended {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        track_worker(self.child.id(), false);
    }
}

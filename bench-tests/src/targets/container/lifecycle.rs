//! The container's life, through testcontainers (the `container` feature): the request
//! (testcontainers-modules' ClickHouse image at the pinned tag, the scope's name and
//! labels, a password, the HTTP port on 127.0.0.1 alone), starting or joining the
//! container, waiting until it answers, and removing it.
//!
//! - **testcontainers does:** finding the daemon (`DOCKER_HOST`, then the usual sockets),
//!   pulling the image, creating and starting the container, finding the scope's container
//!   again (`ReuseDirective::Always`: by name and labels, started again if it had ended),
//!   and removing it.
//! - **bollard (re-exported by testcontainers) does what testcontainers exposes nothing
//!   for:** reading a container's state (exit code, out of memory), labels, the environment
//!   it was created with (a joining process's password) and the addresses its port is
//!   published on, pinging the daemon, publishing the port on 127.0.0.1 alone (the
//!   `HostConfig` testcontainers hands its modifier), the tail of its log, starting it
//!   again after a crash (testcontainers' `start` on a handle says any failure is one to
//!   initialise a client), and listing chbench's containers by label to remove the
//!   abandoned ones.
//! - **Readiness is chbench's own** ([`wait_until_answers`]), not the module's HTTP 200 on
//!   `/`: that wait polls for the whole startup timeout without looking at the container,
//!   so one that crashed while starting held a run for 5 minutes, and it goes through
//!   `HTTP_PROXY` when one is set (a laptop behind a proxy never saw the server ready).
//!   Ours logs in as the `bench` user on the loopback port, and fails at a second exit.
//!
//! Images from 25.1 on refuse the `default` user from outside the container unless a
//! user or password is configured, so the container gets a `bench` user with a random
//! password. The password exists in memory and in the container's own configuration (its
//! environment, which Docker keeps); a process that joins the container reads it from
//! there, so it is never written to a file, printed or recorded. A `ContainerRequest` (and
//! a `ContainerAsync`, which holds one) prints its variables when formatted with `{:?}`:
//! neither is ever formatted here.

use std::collections::HashMap;
use std::fs::File;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use futures_util::StreamExt;
use testcontainers::bollard::Docker;
use testcontainers::bollard::errors::Error as DockerError;
use testcontainers::bollard::models::{ContainerState, ContainerStateStatusEnum, HostConfig, PortBinding, PortMap};
use testcontainers::bollard::query_parameters::{ListContainersOptions, LogsOptions, RemoveContainerOptions};
use testcontainers::core::WaitFor;
use testcontainers::core::client::docker_client_instance;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, ContainerRequest, ImageExt, ReuseDirective};
use testcontainers_modules::clickhouse::{CLICKHOUSE_PORT, ClickHouse};

use super::docker_looks_reachable;
use super::scope::host_name;
use super::{CLICKHOUSE_IMAGE, CLICKHOUSE_TAG, ContainerScope, ProcessIdentity, SCOPE_LABEL, is_abandoned};
use crate::settings::Settings;
use crate::targets::server::{BENCH_USER, ServerConfig, ServerTarget};
use crate::targets::{Backend, ClientOpener, ResultCounters};

const PASSWORD_VARIABLE: &str = "CLICKHOUSE_PASSWORD";
/// Pulling the image on a cold machine takes a while: testcontainers' bound on pulling,
/// starting and the module's readiness, and ours on the server answering chbench's client.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(300);
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// How often a start in progress looks for a request to stop.
const STOP_POLL: Duration = Duration::from_millis(100);
/// How long the daemon may take to answer a ping (bollard's own bound is 2 minutes).
const PING_BOUND: Duration = Duration::from_secs(10);
/// The only address the HTTP port is published on.
const LOOPBACK: &str = "127.0.0.1";
/// ClickHouse warns below this many open files, and the official image's docs use it.
pub const NOFILE: i64 = 262_144;

/// The server's HTTP port inside the container, as Docker names it (`8123/tcp`).
fn http_port() -> String {
    CLICKHOUSE_PORT.to_string()
}

/// What testcontainers is asked to start or find: testcontainers-modules' ClickHouse image
/// at the pinned tag, named `name` with `labels`, with a `bench` user of `password` (which
/// lets it drop caches and read system tables), its open-file limit, the HTTP port on
/// 127.0.0.1 alone, readiness left to chbench (see the module docs), and kept when its
/// handle drops (a run's container outlives the process that made it; a process's own is
/// removed by its last target).
pub fn container_request(
    password: &Password,
    name: &str,
    labels: HashMap<String, String>,
) -> ContainerRequest<ClickHouse> {
    ClickHouse::default()
        .with_tag(CLICKHOUSE_TAG)
        .with_ready_conditions(vec![WaitFor::Nothing])
        .with_container_name(name)
        .with_labels(labels)
        .with_env_var("CLICKHOUSE_USER", BENCH_USER)
        .with_env_var(PASSWORD_VARIABLE, password.0.clone())
        .with_env_var("CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT", "1")
        .with_ulimit("nofile", NOFILE, Some(NOFILE))
        .with_startup_timeout(STARTUP_TIMEOUT)
        .with_reuse(ReuseDirective::Always)
        .with_host_config_modifier(publish_on_loopback_alone)
}

/// testcontainers publishes every exposed port on every address when no port is mapped,
/// and a mapped one on every address too: the HTTP port goes to 127.0.0.1 alone, on a
/// port Docker chooses.
fn publish_on_loopback_alone(host_config: &mut HostConfig) {
    let loopback = PortBinding { host_ip: Some(LOOPBACK.to_string()), host_port: Some(String::new()) };
    host_config.publish_all_ports = Some(false);
    host_config.port_bindings = Some(HashMap::from([(http_port(), Some(vec![loopback]))]));
}

/// The ClickHouse password of a container. Shown as `<hidden>`; it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(<hidden>)")
    }
}

impl Password {
    /// A new random password, for a container this process creates.
    pub fn random() -> Password {
        Password(uuid::Uuid::new_v4().simple().to_string())
    }

    /// The password a container was created with, from its environment as Docker
    /// reports it (`NAME=value` entries).
    pub fn from_container_env(env: &[String]) -> Option<Password> {
        env.iter()
            .find_map(|entry| entry.strip_prefix(PASSWORD_VARIABLE)?.strip_prefix('='))
            .map(|value| Password(value.to_string()))
    }
}

/// The port published for the server's HTTP port on 127.0.0.1, from a container's port
/// map. A binding on any other address is never used.
pub fn loopback_port(ports: &PortMap) -> Option<u16> {
    ports
        .get(&http_port())?
        .as_ref()?
        .iter()
        .filter(|binding| binding.host_ip.as_deref() == Some(LOOPBACK))
        .find_map(|binding| binding.host_port.as_deref()?.parse().ok())
}

/// How many of this process's own container's targets are open: the last to close
/// removes the container. Held while a target opens or closes, so that a container being
/// removed is never joined.
static OPEN_OWN_TARGETS: Mutex<usize> = Mutex::new(0);

/// The one runtime of this process's Docker client: testcontainers keeps one client per
/// process, whose connections belong to the runtime that made them, so every target
/// drives it from this one.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let runtime = crate::runtime::blocking_runtime("the container client")?;
    Ok(RUNTIME.get_or_init(|| runtime))
}

pub struct ContainerTarget {
    server: ServerTarget,
    /// testcontainers' handle; never formatted (see the module docs).
    container: Option<ContainerAsync<ClickHouse>>,
    name: String,
    /// This process's own container (not a run's), removed by its last target.
    own: bool,
}

impl ContainerTarget {
    /// Joins the container of this process's scope, creating it if there is none, and
    /// connects to it once it answers. Removes abandoned containers first.
    pub fn start() -> Result<ContainerTarget> {
        let scope = ContainerScope::from_env()?;
        let host = host_name();
        let name = scope.container_name();
        let image = format!("{CLICKHOUSE_IMAGE}:{CLICKHOUSE_TAG}");
        let runtime = runtime()?;
        let docker = until_stopped(runtime, docker_client())?;
        let mut open_own = OPEN_OWN_TARGETS.lock().map_err(|_| anyhow!("the container count is poisoned"))?;
        let abandoned = {
            let (docker, host, key) = (docker.clone(), host.clone(), scope.key.clone());
            until_stopped(runtime, async move { remove_abandoned(&docker, &host, Some(&key)).await })
        };
        match abandoned {
            Ok(removed) => {
                for name in removed {
                    crate::say!("chbench: removed container {name}: the process that owned it has ended");
                }
            }
            Err(error) if error.is::<crate::interrupt::Interrupted>() => return Err(error),
            // Best effort: the clean-up does not stop a run.
            Err(_) => {}
        }
        let (container, started) = {
            // One process of a run at a time finds or creates the container: the others
            // then find it (Docker would refuse a second of the same name).
            let _creating = if scope.shared { Some(creation_lock(&scope)?) } else { None };
            let existing = runtime.block_on(existing_container(&docker, &name))?;
            // A found container is asked for with its own labels: testcontainers finds it
            // by every label, and a process of the run whose parent is not the runner (a
            // variant a test started) would name another owner.
            let (labels, started) = match existing {
                Some(existing) => (existing.labels, existing_state_said(runtime, &docker, &name, &existing.state)?),
                None => (scope.labels(&host), true),
            };
            let request = container_request(&Password::random(), &name, labels);
            let starting = async move { request.start().await.map_err(anyhow::Error::from) };
            let container = until_stopped(runtime, starting).map_err(|error| {
                if error.is::<crate::interrupt::Interrupted>() {
                    return error;
                }
                let tail = runtime.block_on(state_and_log_tail(&docker, &name));
                anyhow!("cannot start {image} in container {name}: {error}{tail}")
            })?;
            (container, started)
        };
        let server = wait_until_answers(runtime, &docker, &name, started)
            .with_context(|| format!("{image} in container {name} does not answer"))?;
        if !scope.shared {
            *open_own += 1;
        }
        Ok(ContainerTarget { server, container: Some(container), name, own: !scope.shared })
    }
}

/// Runs `work` (a ping, testcontainers' start or reuse) to its end, or ends it on a request
/// to stop: [`crate::interrupt::Interrupted`], a container being made left for the next
/// open to remove (its owner, this process, will have ended).
fn until_stopped<T: Send + 'static>(
    runtime: &tokio::runtime::Runtime,
    work: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let mut task = runtime.spawn(work);
    loop {
        if let Err(stopped) = crate::interrupt::check() {
            task.abort();
            return Err(stopped);
        }
        // The timer is made inside the runtime, which it needs.
        match runtime.block_on(async { tokio::time::timeout(STOP_POLL, &mut task).await }) {
            Ok(Ok(outcome)) => return outcome,
            Ok(Err(panicked)) => bail!("the work on the container ended abnormally: {panicked}"),
            Err(_still_starting) => {}
        }
    }
}

/// The lock that serialises finding or creating a run's container, held until dropped: a
/// file under target/chbench/containers/, as dataset builds are serialised. Waited for in
/// steps, so that a stop request ends the wait (another process may be pulling the image).
fn creation_lock(scope: &ContainerScope) -> Result<File> {
    let path = creation_lock_path(&scope.key);
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).with_context(|| format!("cannot create {}", folder.display()))?;
    }
    let file = File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {
                crate::interrupt::check()?;
                std::thread::sleep(STOP_POLL);
            }
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(error).with_context(|| format!("cannot lock {}", path.display()));
            }
        }
    }
}

/// Where the creation lock of scope `key` is.
fn creation_lock_path(key: &str) -> std::path::PathBuf {
    crate::files::chbench_dir().join("containers").join(format!("{key}.lock"))
}

/// A container of the scope's name, as Docker reports it.
struct ExistingContainer {
    state: ContainerState,
    labels: HashMap<String, String>,
}

/// Container `name`, `None` when there is none.
async fn existing_container(docker: &Docker, name: &str) -> Result<Option<ExistingContainer>> {
    match docker.inspect_container(name, None).await {
        Ok(container) => Ok(Some(ExistingContainer {
            state: container.state.unwrap_or_default(),
            labels: container.config.and_then(|config| config.labels).unwrap_or_default(),
        })),
        Err(DockerError::DockerResponseServerError { status_code: 404, .. }) => Ok(None),
        Err(error) => Err(anyhow!("cannot inspect container {name}: {error}")),
    }
}

/// Whether testcontainers will start the existing container `name` (it had ended, or was
/// never started), said when it had ended; one in a state no start mends (dead, paused)
/// is an error with its log. So that a crash is survived once per open: a start here, then
/// an end, is an error.
fn existing_state_said(
    runtime: &tokio::runtime::Runtime,
    docker: &Docker,
    name: &str,
    state: &ContainerState,
) -> Result<bool> {
    match container_action(state.status, false) {
        ContainerAction::Connect | ContainerAction::Wait => Ok(false),
        ContainerAction::Start => {
            say_if_it_had_exited(name, state);
            Ok(true)
        }
        ContainerAction::Fail => {
            let tail = runtime.block_on(state_and_log_tail(docker, name));
            bail!("container {name} cannot be started again{tail}")
        }
    }
}

/// What an opening process does about its scope's container, from the state Docker
/// reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerAction {
    /// It runs: connect to its loopback port.
    Connect,
    /// Start it: it was never started (its creator may have ended before it could), or it
    /// ended (an OOM kill, `docker stop`) and this open has not started it yet.
    Start,
    /// Docker is restarting it: look again.
    Wait,
    /// It ended again after this open started it, or it is in a state no start mends
    /// (dead, paused, being removed): an error with the tail of its log.
    Fail,
}

/// The decision for a container in `status`; `started` is whether this open has started
/// it already, so that one crash is survived and a second is an error rather than a loop.
pub fn container_action(status: Option<ContainerStateStatusEnum>, started: bool) -> ContainerAction {
    match status {
        Some(ContainerStateStatusEnum::RUNNING) => ContainerAction::Connect,
        Some(ContainerStateStatusEnum::CREATED) => ContainerAction::Start,
        Some(ContainerStateStatusEnum::EXITED) if !started => ContainerAction::Start,
        Some(ContainerStateStatusEnum::RESTARTING) => ContainerAction::Wait,
        _ => ContainerAction::Fail,
    }
}

/// How many of a failed container's last log lines its error carries.
const LOG_TAIL_LINES: usize = 20;

/// The last [`LOG_TAIL_LINES`] non-empty lines of `log`, trimmed and joined with ` | `
/// (an error is one line), each occurrence of `password` shown as `<hidden>`.
pub fn log_tail(log: &str, password: &Password) -> String {
    let lines: Vec<&str> = log.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join(" | ");
    if password.0.is_empty() { tail } else { tail.replace(&password.0, "<hidden>") }
}

/// `; it is <state>; its last log lines: ...` for container `name` (what an error about it
/// ends with), or nothing when there is no such container.
async fn state_and_log_tail(docker: &Docker, name: &str) -> String {
    let Ok(container) = docker.inspect_container(name, None).await else { return String::new() };
    let status = state_description(&container.state.unwrap_or_default());
    let env = container.config.and_then(|config| config.env).unwrap_or_default();
    let password = Password::from_container_env(&env).unwrap_or(Password(String::new()));
    format!("; it is {status}; {}", container_log_tail(docker, name, &password).await)
}

/// The container's last log lines (stdout and stderr, in order) as [`log_tail`] gives
/// them, or why they cannot be read. bollard's: testcontainers reads the whole log of a
/// container it holds, each stream apart, and a failed open may hold none.
async fn container_log_tail(docker: &Docker, name: &str, password: &Password) -> String {
    let options = LogsOptions { stdout: true, stderr: true, tail: LOG_TAIL_LINES.to_string(), ..Default::default() };
    let mut log = String::new();
    let mut chunks = docker.logs(name, Some(options));
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(chunk) => log.push_str(&chunk.to_string()),
            Err(error) => return format!("cannot read its log ({error}); see `docker logs {name}`"),
        }
    }
    match log_tail(&log, password) {
        tail if tail.is_empty() => "its log is empty".to_string(),
        tail => format!("its last log lines: {tail}"),
    }
}

/// A container's state as a message says it: `exited (exit code 137, killed for lack of
/// memory)`, `paused`, or `in no known state`.
fn state_description(state: &ContainerState) -> String {
    match state.status {
        Some(ContainerStateStatusEnum::EXITED) => format!("exited ({})", exit_description(state)),
        Some(status) => status.to_string(),
        None => "in no known state".to_string(),
    }
}

/// Says that container `name` had exited, when it had, before it is started again.
fn say_if_it_had_exited(name: &str, state: &ContainerState) {
    if state.status == Some(ContainerStateStatusEnum::EXITED) {
        crate::say!("chbench: container {name} had exited ({}); starting it again", exit_description(state));
    }
}

/// `exit code 137, out of memory` from an ended container's state.
fn exit_description(state: &ContainerState) -> String {
    let code = state.exit_code.map_or_else(|| "exit code unknown".to_string(), |code| format!("exit code {code}"));
    if state.oom_killed == Some(true) { format!("{code}, killed for lack of memory") } else { code }
}

/// Connects to the container once its server answers chbench's own client (the `bench`
/// user on the loopback port), within [`STARTUP_TIMEOUT`]. `started`: this open has
/// started it already (created it, or testcontainers started the one it found), so an
/// end now is an error with its log; a container found running that ends meanwhile is
/// started once more.
fn wait_until_answers(
    runtime: &tokio::runtime::Runtime,
    docker: &Docker,
    name: &str,
    mut started: bool,
) -> Result<ServerTarget> {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    loop {
        crate::interrupt::check()?;
        let inspected = runtime
            .block_on(docker.inspect_container(name, None))
            .with_context(|| format!("cannot inspect container {name}"))?;
        let state = inspected.state.unwrap_or_default();
        let env = inspected.config.and_then(|config| config.env).unwrap_or_default();
        // A container another process created has that process's password.
        let password = Password::from_container_env(&env)
            .with_context(|| format!("container {name} has no {PASSWORD_VARIABLE}: not one chbench made"))?;
        let last_error = match container_action(state.status, started) {
            ContainerAction::Connect => {
                let ports = inspected.network_settings.and_then(|settings| settings.ports).unwrap_or_default();
                let port = loopback_port(&ports)
                    .with_context(|| format!("container {name} does not publish {} on {LOOPBACK}", http_port()))?;
                let config = ServerConfig::new(&format!("http://{LOOPBACK}:{port}"), BENCH_USER, &password.0)?;
                match ServerTarget::connect(config) {
                    Ok(server) => return Ok(server),
                    Err(error) => format!("{error:#}"),
                }
            }
            ContainerAction::Start => {
                say_if_it_had_exited(name, &state);
                // A container already started answers 304, which is not an error.
                runtime
                    .block_on(docker.start_container(name, None))
                    .map_err(|error| anyhow!("cannot start container {name}: {error}"))?;
                started = true;
                "not started yet".to_string()
            }
            ContainerAction::Wait => "being restarted by Docker".to_string(),
            ContainerAction::Fail => {
                let tail = runtime.block_on(container_log_tail(docker, name, &password));
                if state.status == Some(ContainerStateStatusEnum::EXITED) {
                    bail!(
                        "container {name} exited again after this process started it ({}); {tail}",
                        exit_description(&state)
                    );
                }
                bail!("container {name} is {}; {tail}", state_description(&state))
            }
        };
        if Instant::now() >= deadline {
            bail!("no answer within {} s: {last_error}", STARTUP_TIMEOUT.as_secs());
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// A Docker client (testcontainers' own, bollard underneath) once the daemon has answered
/// a ping within [`PING_BOUND`]; what can be refused before is ([`docker_looks_reachable`]).
/// `DOCKER_HOST` is never shown: it may hold a user and password.
async fn docker_client() -> Result<Docker> {
    docker_looks_reachable()?;
    let host = std::env::var("DOCKER_HOST").ok().filter(|host| !host.trim().is_empty());
    let unreachable = |error: &dyn std::fmt::Display| {
        // testcontainers' error ends with bollard's, which may end with a newline.
        let mut said = error.to_string().trim().to_string();
        if let Some(host) = &host {
            said = said.replace(host.as_str(), "DOCKER_HOST");
        }
        anyhow!("cannot reach Docker (is a Docker daemon running?): {said}")
    };
    let docker = docker_client_instance().await.map_err(|error| unreachable(&error))?;
    match tokio::time::timeout(PING_BOUND, docker.ping()).await {
        Ok(answer) => answer.map_err(|error| unreachable(&error))?,
        Err(_) => {
            let place = if host.is_some() { "the daemon DOCKER_HOST names" } else { "the daemon" };
            bail!("cannot reach Docker: {place} did not answer a ping within {} s", PING_BOUND.as_secs())
        }
    };
    Ok(docker)
}

/// Whether a Docker daemon answers a ping within 3 s.
pub(super) fn docker_answers() -> bool {
    let Ok(runtime) = runtime() else { return false };
    runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(3), docker_client()).await.is_ok_and(|docker| docker.is_ok())
    })
}

/// Removes the containers whose owner has ended on this machine, except the one of scope
/// `keep` (this process's: its owner may be a test process that spawned this one);
/// returns their names. testcontainers lists no containers, so this is bollard's.
async fn remove_abandoned(docker: &Docker, host: &str, keep: Option<&str>) -> Result<Vec<String>> {
    let options = ListContainersOptions {
        all: true,
        filters: Some(HashMap::from([("label".to_string(), vec![SCOPE_LABEL.to_string()])])),
        ..Default::default()
    };
    let containers =
        docker.list_containers(Some(options)).await.map_err(|error| anyhow!("cannot list containers: {error}"))?;
    let mut removed = Vec::new();
    for container in containers {
        let labels = container.labels.unwrap_or_default();
        let Some(id) = container.id else { continue };
        let kept = keep.is_some_and(|keep| labels.get(SCOPE_LABEL).map(String::as_str) == Some(keep));
        if kept || !is_abandoned(&labels, host, ProcessIdentity::is_running) {
            continue;
        }
        let name = container
            .names
            .and_then(|names| names.first().map(|name| name.trim_start_matches('/').to_string()))
            .unwrap_or_else(|| id.clone());
        let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
        if docker.remove_container(&id, Some(options)).await.is_ok() {
            removed.push(name);
            // Its run's creation lock, if this machine has it (best effort: a file).
            // A label is any container's to set: only a key of ours names a file.
            if let Some(scope) = labels.get(SCOPE_LABEL)
                && scope.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            {
                let _ = std::fs::remove_file(creation_lock_path(scope));
            }
        }
    }
    Ok(removed)
}

/// The containers removed by [`super::clean_containers`]: those whose owner has ended on
/// this machine.
pub(super) fn remove_abandoned_containers() -> Result<Vec<String>> {
    runtime()?.block_on(async { remove_abandoned(&docker_client().await?, &host_name(), None).await })
}

/// Everything goes to the server inside the container.
impl Backend for ContainerTarget {
    fn run(&mut self, sql: &str, settings: &Settings, format: &str) -> Result<(String, ResultCounters)> {
        self.server.run(sql, settings, format)
    }

    fn use_database(&mut self, name: &str) -> Result<()> {
        self.server.use_database(name)
    }

    fn endpoint(&self) -> String {
        format!("{CLICKHOUSE_IMAGE}:{CLICKHOUSE_TAG} at {}", self.server.config().display_url())
    }

    /// Clients of the server inside; the container stays this target's.
    fn client_opener(&self) -> Result<ClientOpener> {
        self.server.client_opener()
    }
}

impl Drop for ContainerTarget {
    /// This process's own container goes with its last target (testcontainers' `rm`); a
    /// run's stays for the run's other processes (its handle, marked for reuse, leaves it).
    fn drop(&mut self) {
        let Some(container) = self.container.take() else { return };
        if !self.own {
            return;
        }
        let Ok(mut open_own) = OPEN_OWN_TARGETS.lock() else { return };
        *open_own = open_own.saturating_sub(1);
        if *open_own > 0 {
            return;
        }
        // Best effort: a container left behind is removed by the next open, its owner
        // (this process) having ended by then.
        let removed = runtime().map(|runtime| runtime.block_on(container.rm()));
        if !matches!(removed, Ok(Ok(()))) {
            crate::say!("chbench: cannot remove container {}; the next open of the target removes it", self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN_ID: &str = "1f79aa0d-4ec8-4a5c-aa83-5e8dc2f36573";
    const RUNNER: ProcessIdentity = ProcessIdentity { pid: 4242, started: 1_760_000_000 };

    /// The request's variables as Docker keeps them (`NAME=value`).
    fn env_of(request: &ContainerRequest<ClickHouse>) -> Vec<String> {
        request.env_vars().map(|(name, value)| format!("{name}={value}")).collect()
    }

    #[test]
    fn the_image_is_pinned_and_the_user_can_log_in_from_outside() {
        let scope = ContainerScope::process(RUNNER);
        let request = container_request(&Password("pw".to_string()), &scope.container_name(), scope.labels("h"));
        // testcontainers-modules' ClickHouse image, at the tag the README names.
        assert_eq!(request.descriptor(), "clickhouse/clickhouse-server:26.3.33.24");
        let env = env_of(&request);
        assert!(env.contains(&"CLICKHOUSE_USER=bench".to_string()), "{:?}", request.env_vars().count());
        assert!(env.contains(&"CLICKHOUSE_PASSWORD=pw".to_string()));
        assert!(env.contains(&"CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT=1".to_string()));
        assert_eq!(request.startup_timeout(), Some(STARTUP_TIMEOUT));
        // Readiness is chbench's login, not the module's HTTP wait (see the module docs).
        assert!(matches!(request.ready_conditions()[..], [WaitFor::Nothing]));
        // The open-file limit (the request has no getter for it; `pw` is no secret here).
        assert!(format!("{request:?}").contains(&format!("soft: Some({NOFILE}), hard: Some({NOFILE})")));
    }

    #[test]
    fn the_password_never_shows_in_debug_output() {
        let password = Password("s3cret-pw".to_string());
        let scope = ContainerScope::nextest_run(RUN_ID, RUNNER).unwrap();
        for shown in [format!("{password:?}"), format!("{scope:?}"), format!("{:?}", scope.labels("h"))] {
            assert!(!shown.contains("s3cret-pw"), "{shown}");
        }
        // Only the container's environment holds it, which is what joining processes read.
        let request = container_request(&password, &scope.container_name(), scope.labels("h"));
        assert_eq!(Password::from_container_env(&env_of(&request)), Some(password));
        assert_eq!(Password::from_container_env(&["CLICKHOUSE_PASSWORDS=x".to_string()]), None);
        assert_ne!(Password::random(), Password::random());
    }

    #[test]
    fn without_a_docker_daemon_the_target_says_so_in_one_line() {
        if docker_answers() {
            return;
        }
        let error = format!("{:#}", ContainerTarget::start().err().expect("no Docker daemon, no container"));
        assert!(error.contains("is a Docker daemon running?") && !error.contains('\n'), "{error}");
        let error = format!("{:#}", super::super::clean_containers().unwrap_err());
        assert!(error.contains("is a Docker daemon running?") && !error.contains('\n'), "{error}");
    }

    #[test]
    fn a_run_finds_its_container_by_name_and_labels_and_keeps_it() {
        let scope = ContainerScope::nextest_run(RUN_ID, RUNNER).unwrap();
        let request = container_request(&Password::random(), &scope.container_name(), scope.labels("h"));
        assert_eq!(request.container_name().as_deref(), Some(format!("chbench-clickhouse-run-{RUN_ID}").as_str()));
        let labels: HashMap<String, String> = request.labels().clone().into_iter().collect();
        assert_eq!(labels, scope.labels("h"));
        // Found again by the run's other processes, and left by a handle that drops.
        assert_eq!(request.reuse(), ReuseDirective::Always);
    }

    #[test]
    fn the_http_port_is_published_on_loopback_alone() {
        let scope = ContainerScope::process(RUNNER);
        let request = container_request(&Password::random(), &scope.container_name(), scope.labels("h"));
        assert_eq!(request.expose_ports(), [CLICKHOUSE_PORT]);
        assert!(request.ports().is_none(), "a mapped port would be published on every address");
        // What testcontainers sets when no port is mapped, then hands the modifier.
        let mut host_config =
            HostConfig { publish_all_ports: Some(true), port_bindings: Some(HashMap::new()), ..Default::default() };
        let modify = request.host_config_modifier().expect("the request modifies the host config");
        modify(&mut host_config);
        assert_eq!(host_config.publish_all_ports, Some(false));
        let bindings = host_config.port_bindings.unwrap();
        assert_eq!(bindings.len(), 1);
        let http = bindings["8123/tcp"].clone().unwrap();
        assert_eq!(http.len(), 1);
        assert_eq!(http[0].host_ip.as_deref(), Some("127.0.0.1"));
    }

    #[test]
    fn a_container_that_ended_is_started_once_then_its_end_is_an_error() {
        use ContainerStateStatusEnum::*;
        // Not started yet: its creator may have ended before it could start it.
        assert_eq!(container_action(Some(CREATED), false), ContainerAction::Start);
        assert_eq!(container_action(Some(RUNNING), false), ContainerAction::Connect);
        assert_eq!(container_action(Some(RUNNING), true), ContainerAction::Connect);
        assert_eq!(container_action(Some(RESTARTING), false), ContainerAction::Wait);
        // One crash (an OOM kill, `docker stop`) of the run's container: started again,
        // with its data and password.
        assert_eq!(container_action(Some(EXITED), false), ContainerAction::Start);
        // Ended again after this open started it: an error, not a loop of restarts.
        assert_eq!(container_action(Some(EXITED), true), ContainerAction::Fail);
        for status in [None, Some(EMPTY), Some(PAUSED), Some(REMOVING), Some(DEAD)] {
            assert_eq!(container_action(status, false), ContainerAction::Fail, "{status:?}");
        }
    }

    #[test]
    fn a_failed_containers_log_tail_is_one_line_without_the_password() {
        let password = Password("s3cret-pw".to_string());
        let log: String = (1..=30).map(|line| format!("line {line}\n\n")).collect();
        let tail = log_tail(&format!("{log}  Memory limit exceeded: s3cret-pw  \n"), &password);
        assert!(tail.starts_with("line 12 | line 13 | "), "{tail}");
        assert!(tail.ends_with("line 30 | Memory limit exceeded: <hidden>"), "{tail}");
        assert_eq!(tail.split(" | ").count(), LOG_TAIL_LINES);
        assert!(!tail.contains('\n') && !tail.contains("s3cret-pw"), "{tail}");
        assert_eq!(log_tail("\n \n", &password), "");
        let state = ContainerState { exit_code: Some(137), oom_killed: Some(true), ..Default::default() };
        assert_eq!(exit_description(&state), "exit code 137, killed for lack of memory");
        assert_eq!(exit_description(&ContainerState::default()), "exit code unknown");
        let exited = ContainerState { status: Some(ContainerStateStatusEnum::EXITED), ..state };
        assert_eq!(state_description(&exited), "exited (exit code 137, killed for lack of memory)");
        let paused = ContainerState { status: Some(ContainerStateStatusEnum::PAUSED), ..Default::default() };
        assert_eq!(state_description(&paused), "paused");
        assert_eq!(state_description(&ContainerState::default()), "in no known state");
    }

    #[test]
    fn only_a_loopback_binding_is_used() {
        let binding = |ip: &str, port: &str| PortBinding { host_ip: Some(ip.into()), host_port: Some(port.into()) };
        let ports = |bindings: Vec<PortBinding>| PortMap::from([(http_port(), Some(bindings))]);
        assert_eq!(loopback_port(&ports(vec![binding("127.0.0.1", "32768")])), Some(32768));
        assert_eq!(loopback_port(&ports(vec![binding("0.0.0.0", "32768"), binding("::", "32768")])), None);
        assert_eq!(loopback_port(&ports(vec![binding("0.0.0.0", "1"), binding("127.0.0.1", "2")])), Some(2));
        assert_eq!(loopback_port(&PortMap::from([(http_port(), None)])), None);
        assert_eq!(loopback_port(&PortMap::new()), None);
    }
}

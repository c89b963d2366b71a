//! The container target: `clickhouse/clickhouse-server` at a pinned tag in Docker, talked
//! to as a server target on a port published on 127.0.0.1 only.
//!
//! Images from 25.1 on refuse the `default` user from outside the container unless a
//! user or password is configured, so the container gets a `bench` user with a random
//! password. The password exists in memory and in the container's own configuration (its
//! environment, which Docker keeps); a process that joins the container reads it from
//! there, so it is never written to a file, printed or recorded.
//!
//! This module owns the container's life: which processes share one
//! ([`ContainerScope`]), its name and labels, creating or joining it, and removing it.
//!
//! - Under nextest (`NEXTEST_RUN_ID` set) each test is a process, and a whole
//!   `cargo nextest run` shares one container, `chbench-clickhouse-run-<run id>`: the
//!   first process to open the target creates it, the others find it by name and wait
//!   until it answers. Two processes creating it at once: Docker's name conflict decides,
//!   and the loser joins the winner's. Its owner is the test runner (the parent of every
//!   test process); no test process knows it is the last, so the container outlives the
//!   run until an open of the target (any later run or process) or
//!   `cargo xtask clean-containers` removes the containers whose owner has ended.
//! - Elsewhere (`xtask`, a `cargo test` binary) a process has its own container, removed
//!   when its last container target closes; one left by a killed process is removed by
//!   the next open.
//!
//! - A container that ended (an OOM kill, `docker stop`) is started again by the next
//!   open, once ([`container_action`]): it keeps its data and password, so one crash does
//!   not fail every later test of the run. Ending again is an error carrying the tail of
//!   its log.
//!
//! By hand: `docker rm -f $(docker ps -aq --filter label=chbench.scope)`.
//!
//! Docker is driven through bollard alone, over the daemon's local socket or plain tcp
//! ([`docker_host`]); a daemon behind TLS is refused with what to do instead
//! ([`docker_tls_refusal`]), since a TLS stack would be compiled into every build.
//! testcontainers is not used: its runner's container goes when its handle drops, and a
//! run's container must outlive the process that created it; its `reusable-containers`
//! does not fit either (its `CurrentSession` is one process, and `Always` looks a
//! container up, then creates or starts it, with nothing for two processes doing so at
//! once); and it would add about a hundred crates (bollard's buildkit, tonic, rustls) to
//! the default build. Readiness is the server answering chbench's own client
//! (`wait_until_answers`), where testcontainers' ClickHouse module waits for HTTP 200.
//!
//! It is a server target in every respect but one: chbench started it, so it may restart
//! it (under nextest the run's processes share it, so a scenario that restarts it must not
//! run beside others).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use bollard::Docker;
use bollard::errors::Error as DockerError;
use bollard::models::{
    ContainerCreateBody, ContainerState, ContainerStateStatusEnum, HostConfig, PortBinding, PortMap, ResourcesUlimits,
};
use bollard::query_parameters::{
    CreateContainerOptions, CreateImageOptions, ListContainersOptions, LogsOptions, RemoveContainerOptions,
};
use futures_util::StreamExt;
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

use super::server::{BENCH_USER, ServerConfig, ServerTarget};
use super::{Backend, Capabilities, ClientOpener, ResultCounters, Storage};
use crate::settings::Settings;

/// A server chbench started, measured as any server: the `url` target's capabilities
/// (concurrent clients too: each an HTTP client of its own to the container's port, each
/// statement with its own query_log row).
pub const CAPABILITIES: Capabilities = super::server::CAPABILITIES;

/// Starts or joins the container of this process's scope (the `container` kind's opener
/// for `targets::spec`). The server keeps its data inside the container: `storage`
/// does not apply.
pub fn open(_storage: &Storage) -> Result<Box<dyn Backend>> {
    Ok(Box::new(ContainerTarget::start()?))
}

/// The source's manifest pins this release; so do we, never `latest`.
pub const CLICKHOUSE_IMAGE: &str = "clickhouse/clickhouse-server";
pub const CLICKHOUSE_TAG: &str = "26.3.33.24";
const PASSWORD_VARIABLE: &str = "CLICKHOUSE_PASSWORD";
/// Pulling the image on a cold machine takes a while.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(300);
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// The server's HTTP port inside the container, as Docker names it.
const HTTP_PORT: &str = "8123/tcp";
/// The only address the HTTP port is published on.
const LOOPBACK: &str = "127.0.0.1";

/// The variable nextest sets to one UUID in every test process of a run.
pub const NEXTEST_RUN_ID_ENV: &str = "NEXTEST_RUN_ID";
/// On every container chbench creates; its value is the container's scope key.
pub const SCOPE_LABEL: &str = "chbench.scope";
/// The owner: the process whose end ends the container's use.
pub const OWNER_PID_LABEL: &str = "chbench.owner-pid";
/// The owner's start time (seconds since the Unix epoch): a later process given the same
/// pid is not the owner.
pub const OWNER_STARTED_LABEL: &str = "chbench.owner-started";
/// The machine the owner runs on: only there can its end be seen (Docker may be remote).
pub const OWNER_HOST_LABEL: &str = "chbench.owner-host";
/// What container names start with.
const NAME_PREFIX: &str = "chbench-clickhouse-";

/// How the container is configured, kept apart from starting it so it can be checked
/// without Docker.
#[derive(Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    pub image: &'static str,
    pub tag: &'static str,
    pub env: Vec<(&'static str, String)>,
    pub nofile: i64,
}

/// Shows the variables' names only: one of them is the password.
impl std::fmt::Debug for ContainerSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.env.iter().map(|(name, _)| *name).collect();
        f.debug_struct("ContainerSpec")
            .field("image", &self.image)
            .field("tag", &self.tag)
            .field("env", &names)
            .field("nofile", &self.nofile)
            .finish()
    }
}

impl ContainerSpec {
    pub fn new(password: &Password) -> ContainerSpec {
        ContainerSpec {
            image: CLICKHOUSE_IMAGE,
            tag: CLICKHOUSE_TAG,
            env: vec![
                ("CLICKHOUSE_USER", BENCH_USER.to_string()),
                (PASSWORD_VARIABLE, password.0.clone()),
                // Lets the bench user drop caches and read system tables.
                ("CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT", "1".to_string()),
            ],
            // ClickHouse warns below this and the official image docs use it.
            nofile: 262_144,
        }
    }

    /// `image:tag`.
    pub fn image_reference(&self) -> String {
        format!("{}:{}", self.image, self.tag)
    }

    /// What Docker is asked to create: the pinned image, the scope's labels, and the HTTP
    /// port published on 127.0.0.1 alone (testcontainers' runner publishes every exposed
    /// port on all addresses).
    pub fn create_body(&self, scope: &ContainerScope, host: &str) -> ContainerCreateBody {
        let loopback = PortBinding { host_ip: Some(LOOPBACK.to_string()), host_port: Some(String::new()) };
        ContainerCreateBody {
            image: Some(self.image_reference()),
            env: Some(self.env.iter().map(|(name, value)| format!("{name}={value}")).collect()),
            labels: Some(scope.labels(host)),
            exposed_ports: Some(vec![HTTP_PORT.to_string()]),
            host_config: Some(HostConfig {
                port_bindings: Some(HashMap::from([(HTTP_PORT.to_string(), Some(vec![loopback]))])),
                publish_all_ports: Some(false),
                ulimits: Some(vec![ResourcesUlimits {
                    name: Some("nofile".to_string()),
                    soft: Some(self.nofile),
                    hard: Some(self.nofile),
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
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

/// A process, told apart from a later one given the same pid by its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// Seconds since the Unix epoch, as the OS reports it.
    pub started: u64,
}

impl ProcessIdentity {
    /// This process.
    pub fn current() -> Result<ProcessIdentity> {
        let pid = sysinfo::get_current_pid().map_err(|error| anyhow!("cannot read this process's id: {error}"))?;
        Ok(process_info(pid).with_context(|| format!("cannot read process {pid}"))?.0)
    }

    /// This process's parent: under nextest, the test runner.
    pub fn parent() -> Result<ProcessIdentity> {
        let pid = sysinfo::get_current_pid().map_err(|error| anyhow!("cannot read this process's id: {error}"))?;
        let parent = process_info(pid).and_then(|(_, parent)| parent).context("cannot read this process's parent")?;
        Ok(process_info(parent).with_context(|| format!("cannot read process {parent}, this process's parent"))?.0)
    }

    /// Whether this process still runs: its pid belongs to a process started at the same
    /// time (whole seconds, so a second apart at most for one process).
    pub fn is_running(self) -> bool {
        process_info(Pid::from_u32(self.pid)).is_some_and(|(running, _)| running.started.abs_diff(self.started) <= 1)
    }
}

/// Whether any process on this machine has `pid` (a later one given it counts too, so
/// the answer errs toward "runs"), for records that keep a pid alone.
pub fn pid_runs(pid: u32) -> bool {
    process_info(Pid::from_u32(pid)).is_some()
}

/// A process's identity and its parent's pid, if it runs.
fn process_info(pid: Pid) -> Option<(ProcessIdentity, Option<Pid>)> {
    let mut system = System::new();
    system.refresh_processes_specifics(ProcessesToUpdate::Some(&[pid]), true, ProcessRefreshKind::nothing());
    let process = system.process(pid)?;
    Some((ProcessIdentity { pid: pid.as_u32(), started: process.start_time() }, process.parent()))
}

/// This machine's name, for the owner's host label (empty when unknown).
fn host_name() -> String {
    System::host_name().unwrap_or_default()
}

/// The nextest run this process is a test of (`NEXTEST_RUN_ID`), `None` outside nextest.
/// The one reading of the variable: the container's scope and the names of scenario
/// databases on shared servers both follow it.
pub fn nextest_run_id() -> Result<Option<uuid::Uuid>> {
    match std::env::var(NEXTEST_RUN_ID_ENV) {
        Ok(run_id) => parse_run_id(&run_id).map(Some),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => bail!("{NEXTEST_RUN_ID_ENV} is not valid UTF-8"),
    }
}

/// A run id, checked, since it becomes part of container and database names.
fn parse_run_id(run_id: &str) -> Result<uuid::Uuid> {
    uuid::Uuid::parse_str(run_id.trim())
        .map_err(|_| anyhow!("{NEXTEST_RUN_ID_ENV}={run_id:?} is not a UUID (nextest sets one per run)"))
}

/// Which processes share one container, and whose end ends its use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerScope {
    /// `run-<nextest run id>` or `process-<pid>-<start>`: the end of the container's name
    /// and the value of its [`SCOPE_LABEL`].
    pub key: String,
    /// The process whose end ends the container's use: the test runner, or this process.
    pub owner: ProcessIdentity,
    /// Whether other processes join it (one nextest run's), so that no process that uses
    /// it removes it on closing.
    pub shared: bool,
}

impl ContainerScope {
    /// One nextest run's when `NEXTEST_RUN_ID` is set, else this process's own.
    pub fn from_env() -> Result<ContainerScope> {
        match nextest_run_id()? {
            Some(run_id) => Ok(ContainerScope::of_run(run_id, ProcessIdentity::parent()?)),
            None => Ok(ContainerScope::process(ProcessIdentity::current()?)),
        }
    }

    /// The container every test process of one nextest run shares, owned by the runner.
    pub fn nextest_run(run_id: &str, runner: ProcessIdentity) -> Result<ContainerScope> {
        Ok(ContainerScope::of_run(parse_run_id(run_id)?, runner))
    }

    fn of_run(run_id: uuid::Uuid, runner: ProcessIdentity) -> ContainerScope {
        ContainerScope { key: format!("run-{}", run_id.hyphenated()), owner: runner, shared: true }
    }

    /// A container of this process's own.
    pub fn process(process: ProcessIdentity) -> ContainerScope {
        ContainerScope { key: format!("process-{}-{}", process.pid, process.started), owner: process, shared: false }
    }

    /// `chbench-clickhouse-<key>`: how processes of the scope find the container.
    pub fn container_name(&self) -> String {
        format!("{NAME_PREFIX}{}", self.key)
    }

    /// The scope and its owner, on `host`.
    pub fn labels(&self, host: &str) -> HashMap<String, String> {
        HashMap::from([
            (SCOPE_LABEL.to_string(), self.key.clone()),
            (OWNER_PID_LABEL.to_string(), self.owner.pid.to_string()),
            (OWNER_STARTED_LABEL.to_string(), self.owner.started.to_string()),
            (OWNER_HOST_LABEL.to_string(), host.to_string()),
        ])
    }
}

/// Whether a container with these labels is abandoned: its owner ran on `host` (this
/// machine) and has ended, as `is_running` says. A container whose labels do not name an
/// owner on this machine is never judged abandoned: it is not ours to remove.
pub fn is_abandoned(
    labels: &HashMap<String, String>,
    host: &str,
    is_running: impl Fn(ProcessIdentity) -> bool,
) -> bool {
    let label = |name: &str| labels.get(name).map(String::as_str);
    let owner = || {
        Some(ProcessIdentity {
            pid: label(OWNER_PID_LABEL)?.parse().ok()?,
            started: label(OWNER_STARTED_LABEL)?.parse().ok()?,
        })
    };
    let on_this_host = !host.is_empty() && label(OWNER_HOST_LABEL) == Some(host);
    label(SCOPE_LABEL).is_some() && on_this_host && owner().is_some_and(|owner| !is_running(owner))
}

/// The port published for the server's HTTP port on 127.0.0.1, from a container's port
/// map. A binding on any other address is never used.
pub fn loopback_port(ports: &PortMap) -> Option<u16> {
    ports
        .get(HTTP_PORT)?
        .as_ref()?
        .iter()
        .filter(|binding| binding.host_ip.as_deref() == Some(LOOPBACK))
        .find_map(|binding| binding.host_port.as_deref()?.parse().ok())
}

/// Whether a Docker daemon answers a ping (used to resolve `auto`).
pub fn docker_answers() -> bool {
    let Ok(runtime) = crate::runtime::blocking_runtime("the container client") else { return false };
    runtime.block_on(async {
        match connect_docker() {
            Ok(docker) => {
                tokio::time::timeout(Duration::from_secs(3), docker.ping()).await.is_ok_and(|ping| ping.is_ok())
            }
            Err(_) => false,
        }
    })
}

/// The system's Docker socket, where a daemon usually listens.
const SYSTEM_DOCKER_SOCKET: &str = "/var/run/docker.sock";

/// Where the Docker daemon listens: `docker_host` (`DOCKER_HOST`) when set, else the first
/// socket that `exists` of the system's, rootless Docker's (`$XDG_RUNTIME_DIR/docker.sock`)
/// and Docker Desktop's (`~/.docker/run`, `~/.docker/desktop`); testcontainers looks in
/// the same places. None there: the system's, which the error then names.
pub fn docker_host(
    docker_host: Option<&str>,
    runtime_dir: Option<&Path>,
    home: Option<&Path>,
    exists: impl Fn(&Path) -> bool,
) -> String {
    if let Some(host) = docker_host.map(str::trim).filter(|host| !host.is_empty()) {
        return host.to_string();
    }
    let mut sockets = vec![PathBuf::from(SYSTEM_DOCKER_SOCKET)];
    if let Some(runtime_dir) = runtime_dir {
        sockets.extend([runtime_dir.join("docker.sock"), runtime_dir.join(".docker/run/docker.sock")]);
    }
    if let Some(home) = home {
        sockets.extend([home.join(".docker/run/docker.sock"), home.join(".docker/desktop/docker.sock")]);
    }
    let socket = sockets.into_iter().find(|socket| exists(socket));
    format!("unix://{}", socket.as_deref().unwrap_or(Path::new(SYSTEM_DOCKER_SOCKET)).display())
}

/// A Docker client for this machine's daemon ([`docker_host`]); nothing is sent yet.
fn connect_docker() -> Result<Docker> {
    let host = std::env::var("DOCKER_HOST").ok();
    if let Some(refusal) = docker_tls_refusal(host.as_deref(), std::env::var("DOCKER_TLS_VERIFY").ok().as_deref()) {
        bail!("cannot reach Docker: {refusal}");
    }
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let host = docker_host(host.as_deref(), runtime_dir.as_deref(), home.as_deref(), Path::exists);
    Docker::connect_with_host(&host)
        .map_err(|error| anyhow!("cannot reach Docker at {host} (is a Docker daemon running?): {error}"))
}

/// Why the Docker daemon that `DOCKER_HOST` and `DOCKER_TLS_VERIFY` name cannot be
/// reached, when they ask for TLS: the client is built without a TLS stack (which would
/// put ring or aws-lc in every build), so it speaks to a local socket or plain `tcp://`.
/// Only the address's scheme is shown.
pub fn docker_tls_refusal(host: Option<&str>, tls_verify: Option<&str>) -> Option<String> {
    let https = host.is_some_and(|host| host.trim().to_ascii_lowercase().starts_with("https://"));
    let verify = tls_verify.is_some_and(|value| value.trim() == "1");
    let asked = match (https, verify) {
        (true, _) => "DOCKER_HOST is an https:// address",
        (false, true) => "DOCKER_TLS_VERIFY=1 is set",
        (false, false) => return None,
    };
    Some(format!(
        "{asked}, but chbench talks to Docker without TLS: unset DOCKER_HOST and DOCKER_TLS_VERIFY to use the local \
         socket, or forward the remote daemon's socket (`ssh -NL 2375:/var/run/docker.sock <host>`) and set \
         DOCKER_HOST=tcp://127.0.0.1:2375"
    ))
}

/// A Docker client ([`connect_docker`]), once the daemon has answered.
async fn docker_client() -> Result<Docker> {
    let unreachable =
        |error: &dyn std::fmt::Display| anyhow!("cannot reach Docker (is a Docker daemon running?): {error}");
    let docker = connect_docker()?;
    docker.ping().await.map_err(|error| unreachable(&error))?;
    Ok(docker)
}

/// How many of this process's own container's targets are open: the last to close
/// removes the container. Held while a target opens or closes, so that a container being
/// removed is never joined.
static OPEN_OWN_TARGETS: Mutex<usize> = Mutex::new(0);

pub struct ContainerTarget {
    server: ServerTarget,
    docker: Docker,
    /// The runtime the Docker client runs on, kept to remove the container on.
    runtime: tokio::runtime::Runtime,
    name: String,
    image: String,
    /// This process's own container (not a run's), removed by its last target.
    own: bool,
}

impl ContainerTarget {
    /// Joins the container of this process's scope, creating it if there is none, and
    /// connects to it once it answers. Removes abandoned containers first.
    pub fn start() -> Result<ContainerTarget> {
        let scope = ContainerScope::from_env()?;
        let host = host_name();
        let password = Password::random();
        let spec = ContainerSpec::new(&password);
        let image = spec.image_reference();
        let name = scope.container_name();
        let runtime = crate::runtime::blocking_runtime("the container client")?;
        let docker = runtime.block_on(docker_client())?;
        let mut open_own = OPEN_OWN_TARGETS.lock().map_err(|_| anyhow!("the container count is poisoned"))?;
        for removed in runtime.block_on(remove_abandoned(&docker, &host, Some(&scope.key))).unwrap_or_default() {
            crate::say!("chbench: removed container {removed}: the process that owned it has ended");
        }
        let password = runtime.block_on(create_or_join(&docker, &name, &spec, &password, &scope, &host))?;
        let server = wait_until_answers(&runtime, &docker, &name, &password)
            .with_context(|| format!("{image} in container {name} does not answer"))?;
        if !scope.shared {
            *open_own += 1;
        }
        Ok(ContainerTarget { server, docker, runtime, name, image, own: !scope.shared })
    }
}

/// The password of the container `name`, joining it, or creating it with `spec` (which
/// holds `password`) when there is none. Of two processes creating it at once, Docker's name conflict decides
/// and the other joins the winner's.
async fn create_or_join(
    docker: &Docker,
    name: &str,
    spec: &ContainerSpec,
    password: &Password,
    scope: &ContainerScope,
    host: &str,
) -> Result<Password> {
    if let Some(password) = existing_password(docker, name).await? {
        return Ok(password);
    }
    let options = CreateContainerOptions { name: Some(name.to_string()), ..Default::default() };
    let body = spec.create_body(scope, host);
    let mut created = docker.create_container(Some(options.clone()), body.clone()).await;
    if matches!(created, Err(DockerError::DockerResponseServerError { status_code: 404, .. })) {
        // No such image here yet: pull it (anonymously: it is public on Docker Hub).
        pull_image(docker, spec).await?;
        created = docker.create_container(Some(options), body).await;
    }
    match created {
        Ok(_) => Ok(password.clone()),
        Err(DockerError::DockerResponseServerError { status_code: 409, .. }) => existing_password(docker, name)
            .await?
            .with_context(|| format!("container {name} was created by another process and is gone")),
        Err(error) => Err(anyhow!("cannot create container {name} from {}: {error}", spec.image_reference())),
    }
}

/// Pulls the spec's image, to the end of Docker's progress stream (an error ends it early).
async fn pull_image(docker: &Docker, spec: &ContainerSpec) -> Result<()> {
    let options = CreateImageOptions {
        from_image: Some(spec.image.to_string()),
        tag: Some(spec.tag.to_string()),
        ..Default::default()
    };
    let mut progress = docker.create_image(Some(options), None, None);
    while let Some(step) = progress.next().await {
        step.map_err(|error| anyhow!("cannot pull {}: {error}", spec.image_reference()))?;
    }
    Ok(())
}

/// The password of the existing container `name`, if there is one.
async fn existing_password(docker: &Docker, name: &str) -> Result<Option<Password>> {
    match docker.inspect_container(name, None).await {
        Ok(container) => {
            let env = container.config.and_then(|config| config.env).unwrap_or_default();
            let password = Password::from_container_env(&env)
                .with_context(|| format!("container {name} has no {PASSWORD_VARIABLE}: not one chbench made"))?;
            Ok(Some(password))
        }
        Err(DockerError::DockerResponseServerError { status_code: 404, .. }) => Ok(None),
        Err(error) => Err(anyhow!("cannot inspect container {name}: {error}")),
    }
}

/// What an opening process does about its scope's container, from the state Docker
/// reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerAction {
    /// It runs: connect to its loopback port.
    Connect,
    /// Start it: it was never started (its creator may have ended before it could), or it
    /// ended (an OOM kill, `docker stop`) before this open started it. It keeps its data
    /// and its password, so the run's processes go on with it.
    Start,
    /// Docker is restarting it: ask again.
    Wait,
    /// It ended again after this open started it, or is in a state chbench does not
    /// undo (paused, dead, being removed): an error, with the tail of its log.
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

/// The container's last log lines (stdout and stderr) as [`log_tail`] gives them, or why
/// they cannot be read.
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

/// The container's loopback HTTP port once it runs; `None` while it is not running yet,
/// after starting it when [`container_action`] says so (`started` records that).
async fn running_port(docker: &Docker, name: &str, password: &Password, started: &mut bool) -> Result<Option<u16>> {
    let container =
        docker.inspect_container(name, None).await.with_context(|| format!("cannot inspect container {name}"))?;
    let state = container.state.unwrap_or_default();
    match container_action(state.status, *started) {
        ContainerAction::Connect => {
            let ports = container.network_settings.and_then(|settings| settings.ports).unwrap_or_default();
            let port = loopback_port(&ports);
            port.map(Some).with_context(|| format!("container {name} does not publish {HTTP_PORT} on {LOOPBACK}"))
        }
        ContainerAction::Start => {
            if state.status == Some(ContainerStateStatusEnum::EXITED) {
                crate::say!("chbench: container {name} had exited ({}); starting it again", exit_description(&state));
            }
            // A container already started answers 304, which is not an error.
            docker.start_container(name, None).await.with_context(|| format!("cannot start container {name}"))?;
            *started = true;
            Ok(None)
        }
        ContainerAction::Wait => Ok(None),
        ContainerAction::Fail => {
            let tail = container_log_tail(docker, name, password).await;
            match state.status {
                Some(ContainerStateStatusEnum::EXITED) => {
                    bail!(
                        "container {name} exited again after this process started it ({}); {tail}",
                        exit_description(&state)
                    )
                }
                status => {
                    let status = status.map_or_else(|| "in no known state".to_string(), |status| status.to_string());
                    bail!("container {name} is {status}; {tail}")
                }
            }
        }
    }
}

/// `exit code 137, out of memory` from an ended container's state.
fn exit_description(state: &ContainerState) -> String {
    let code = state.exit_code.map_or_else(|| "exit code unknown".to_string(), |code| format!("exit code {code}"));
    if state.oom_killed == Some(true) { format!("{code}, killed for lack of memory") } else { code }
}

/// Connects to the container once its server answers, within [`STARTUP_TIMEOUT`].
fn wait_until_answers(
    runtime: &tokio::runtime::Runtime,
    docker: &Docker,
    name: &str,
    password: &Password,
) -> Result<ServerTarget> {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    let mut started = false;
    loop {
        crate::interrupt::check()?;
        let last_error = match runtime.block_on(running_port(docker, name, password, &mut started))? {
            Some(port) => {
                let config = ServerConfig::new(&format!("http://{LOOPBACK}:{port}"), BENCH_USER, &password.0)?;
                match ServerTarget::connect(config) {
                    Ok(server) => return Ok(server),
                    Err(error) => format!("{error:#}"),
                }
            }
            None => "not started yet".to_string(),
        };
        if Instant::now() >= deadline {
            bail!("no answer within {} s: {last_error}", STARTUP_TIMEOUT.as_secs());
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Removes the containers whose owner has ended on this machine, except the one of scope
/// `keep` (this process's: its owner may be a test process that spawned this one);
/// returns their names.
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
        if remove(docker, &id).await.is_ok() {
            removed.push(name);
        }
    }
    Ok(removed)
}

async fn remove(docker: &Docker, name: &str) -> Result<(), DockerError> {
    let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
    docker.remove_container(name, Some(options)).await
}

/// What [`clean_containers`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerCleanup {
    /// The containers removed: their owner had ended.
    pub removed: Vec<String>,
}

/// Removes chbench's containers whose owner has ended on this machine (what every open
/// of the target does first): `cargo xtask clean-containers`.
pub fn clean_containers() -> Result<ContainerCleanup> {
    let runtime = crate::runtime::blocking_runtime("the container client")?;
    let removed = runtime.block_on(async { remove_abandoned(&docker_client().await?, &host_name(), None).await })?;
    Ok(ContainerCleanup { removed })
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
        format!("{} at {}", self.image, self.server.config().display_url())
    }

    /// Clients of the server inside; the container stays this target's.
    fn client_opener(&self) -> Result<ClientOpener> {
        self.server.client_opener()
    }
}

impl Drop for ContainerTarget {
    /// This process's own container goes with its last target; a run's stays for the
    /// run's other processes (see the module docs).
    fn drop(&mut self) {
        if !self.own {
            return;
        }
        let Ok(mut open_own) = OPEN_OWN_TARGETS.lock() else { return };
        *open_own = open_own.saturating_sub(1);
        // Best effort: a container left behind is removed by the next open, its owner
        // (this process) having ended by then.
        if *open_own == 0 && self.runtime.block_on(remove(&self.docker, &self.name)).is_err() {
            crate::say!("chbench: cannot remove container {}; the next open of the target removes it", self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN_ID: &str = "1f79aa0d-4ec8-4a5c-aa83-5e8dc2f36573";
    const RUNNER: ProcessIdentity = ProcessIdentity { pid: 4242, started: 1_760_000_000 };

    #[test]
    fn the_image_is_pinned_and_the_user_can_log_in_from_outside() {
        let spec = ContainerSpec::new(&Password("pw".to_string()));
        assert_eq!(spec.image_reference(), "clickhouse/clickhouse-server:26.3.33.24");
        assert!(spec.env.contains(&("CLICKHOUSE_USER", "bench".to_string())));
        assert!(spec.env.contains(&("CLICKHOUSE_PASSWORD", "pw".to_string())));
    }

    #[test]
    fn the_password_never_shows_in_debug_output() {
        let password = Password("s3cret-pw".to_string());
        let spec = ContainerSpec::new(&password);
        let scope = ContainerScope::nextest_run(RUN_ID, RUNNER).unwrap();
        for shown in
            [format!("{spec:?}"), format!("{password:?}"), format!("{scope:?}"), format!("{:?}", scope.labels("h"))]
        {
            assert!(!shown.contains("s3cret-pw"), "{shown}");
        }
        assert!(format!("{spec:?}").contains("CLICKHOUSE_PASSWORD"));
        // Only the container's environment holds it, which is what joining processes read.
        let body = spec.create_body(&scope, "h");
        let env = body.env.unwrap();
        assert_eq!(Password::from_container_env(&env), Some(password));
        assert_eq!(Password::from_container_env(&["CLICKHOUSE_PASSWORDS=x".to_string()]), None);
        assert_ne!(Password::random(), Password::random());
    }

    #[test]
    fn a_nextest_run_shares_one_container_named_after_the_run_and_owned_by_the_runner() {
        let first = ContainerScope::nextest_run(RUN_ID, RUNNER).unwrap();
        let second = ContainerScope::nextest_run(&RUN_ID.to_uppercase(), RUNNER).unwrap();
        assert_eq!(first, second, "every process of the run finds the same container");
        assert_eq!(first.container_name(), format!("chbench-clickhouse-run-{RUN_ID}"));
        assert!(first.shared && first.owner == RUNNER);
        let other_run = ContainerScope::nextest_run("cc815783-2cb1-4003-9d2a-f931bf775280", RUNNER).unwrap();
        assert_ne!(first.container_name(), other_run.container_name());
        for bad in ["", "run; rm -rf /", "../1f79aa0d"] {
            let error = ContainerScope::nextest_run(bad, RUNNER).unwrap_err().to_string();
            assert!(error.contains("NEXTEST_RUN_ID") && error.contains("not a UUID"), "{error}");
        }
    }

    #[test]
    fn outside_nextest_a_process_owns_its_container() {
        let this = ProcessIdentity::current().unwrap();
        assert_eq!(this.pid, std::process::id());
        assert!(this.is_running());
        let scope = ContainerScope::process(this);
        assert_eq!(scope.container_name(), format!("chbench-clickhouse-process-{}-{}", this.pid, this.started));
        assert!(!scope.shared && scope.owner == this);
        assert_ne!(ProcessIdentity::parent().unwrap(), this);
    }

    #[test]
    fn the_scope_follows_nextests_run_id() {
        let scope = ContainerScope::from_env().unwrap();
        match std::env::var(NEXTEST_RUN_ID_ENV) {
            // This test's process is one of the run's: the runner is its parent.
            Ok(run_id) => {
                assert_eq!(scope, ContainerScope::nextest_run(&run_id, ProcessIdentity::parent().unwrap()).unwrap())
            }
            Err(_) => assert_eq!(scope, ContainerScope::process(ProcessIdentity::current().unwrap())),
        }
    }

    #[test]
    fn without_a_docker_daemon_the_target_says_so_in_one_line() {
        if docker_answers() {
            return;
        }
        let error = format!("{:#}", ContainerTarget::start().err().expect("no Docker daemon, no container"));
        assert!(error.contains("is a Docker daemon running?") && !error.contains('\n'), "{error}");
        let error = format!("{:#}", clean_containers().unwrap_err());
        assert!(error.contains("is a Docker daemon running?"), "{error}");
    }

    #[test]
    fn labels_name_the_scope_and_its_owner() {
        let scope = ContainerScope::nextest_run(RUN_ID, RUNNER).unwrap();
        let labels = scope.labels("laptop");
        assert_eq!(labels[SCOPE_LABEL], format!("run-{RUN_ID}"));
        assert_eq!(labels[OWNER_PID_LABEL], "4242");
        assert_eq!(labels[OWNER_STARTED_LABEL], "1760000000");
        assert_eq!(labels[OWNER_HOST_LABEL], "laptop");
        assert_eq!(scope.labels("laptop"), labels, "every process of the run asks for the same labels");
    }

    #[test]
    fn a_container_is_abandoned_only_when_its_owner_on_this_machine_has_ended() {
        let labels = ContainerScope::nextest_run(RUN_ID, RUNNER).unwrap().labels("laptop");
        assert!(!is_abandoned(&labels, "laptop", |_| true), "its runner still runs");
        assert!(is_abandoned(&labels, "laptop", |_| false), "its runner has ended");
        assert!(!is_abandoned(&labels, "ci-box", |_| false), "owned on another machine sharing the daemon");
        assert!(!is_abandoned(&labels, "", |_| false), "this machine's name is unknown");
        let mut no_owner = labels.clone();
        no_owner.remove(OWNER_STARTED_LABEL);
        assert!(!is_abandoned(&no_owner, "laptop", |_| false), "labels that name no owner");
        let mut not_ours = labels.clone();
        not_ours.remove(SCOPE_LABEL);
        assert!(!is_abandoned(&not_ours, "laptop", |_| false), "not a chbench container");
        // The decision asks about the owner the labels name.
        assert!(is_abandoned(&labels, "laptop", |owner| owner != RUNNER));
    }

    #[test]
    fn a_later_process_with_the_owners_pid_is_not_the_owner() {
        let this = ProcessIdentity::current().unwrap();
        assert!(this.is_running());
        assert!(!ProcessIdentity { started: this.started - 3600, ..this }.is_running());
        assert!(!ProcessIdentity { pid: u32::MAX - 1, started: this.started }.is_running());
        assert!(pid_runs(this.pid) && !pid_runs(u32::MAX - 1));
    }

    #[test]
    fn the_http_port_is_published_on_loopback_alone() {
        let scope = ContainerScope::process(RUNNER);
        let body = ContainerSpec::new(&Password::random()).create_body(&scope, "h");
        let host_config = body.host_config.unwrap();
        assert_eq!(host_config.publish_all_ports, Some(false));
        let bindings = host_config.port_bindings.unwrap();
        assert_eq!(bindings.len(), 1);
        let http = bindings[HTTP_PORT].clone().unwrap();
        assert_eq!(http.len(), 1);
        assert_eq!(http[0].host_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(body.exposed_ports, Some(vec!["8123/tcp".to_string()]));
        assert_eq!(body.image.as_deref(), Some("clickhouse/clickhouse-server:26.3.33.24"));
        assert_eq!(body.labels.unwrap(), scope.labels("h"));
        assert_eq!(host_config.ulimits.unwrap()[0].soft, Some(262_144));
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
    }

    #[test]
    fn a_docker_daemon_behind_tls_is_refused_in_one_line_that_says_what_to_do() {
        assert_eq!(docker_tls_refusal(None, None), None);
        assert_eq!(docker_tls_refusal(Some("unix:///var/run/docker.sock"), None), None);
        assert_eq!(docker_tls_refusal(Some("tcp://127.0.0.1:2375"), Some("0")), None);
        assert_eq!(docker_tls_refusal(Some("tcp://127.0.0.1:2375"), Some("")), None);
        let https = docker_tls_refusal(Some("HTTPS://docker.example:2376"), None).unwrap();
        assert!(https.starts_with("DOCKER_HOST is an https:// address"), "{https}");
        assert!(!https.contains("docker.example") && !https.contains('\n'), "only the scheme is shown: {https}");
        let verify = docker_tls_refusal(Some("tcp://docker.example:2376"), Some("1")).unwrap();
        assert!(verify.starts_with("DOCKER_TLS_VERIFY=1 is set") && verify.contains("unset DOCKER_HOST"), "{verify}");
    }

    #[test]
    fn the_docker_socket_is_docker_host_else_the_first_that_exists() {
        let runtime = Path::new("/run/user/1000");
        let home = Path::new("/home/me");
        let only = |socket: &'static str| move |path: &Path| path == Path::new(socket);
        let host =
            |set: Option<&str>, exists: &dyn Fn(&Path) -> bool| docker_host(set, Some(runtime), Some(home), exists);
        assert_eq!(host(Some("tcp://127.0.0.1:2375"), &|_| true), "tcp://127.0.0.1:2375");
        assert_eq!(host(Some(" "), &only("/var/run/docker.sock")), "unix:///var/run/docker.sock");
        assert_eq!(host(None, &|_| true), "unix:///var/run/docker.sock", "the system's comes first");
        assert_eq!(host(None, &only("/run/user/1000/docker.sock")), "unix:///run/user/1000/docker.sock");
        assert_eq!(
            host(None, &only("/home/me/.docker/desktop/docker.sock")),
            "unix:///home/me/.docker/desktop/docker.sock"
        );
        assert_eq!(host(None, &|_| false), "unix:///var/run/docker.sock", "none exists: the error names the system's");
        assert_eq!(docker_host(None, None, None, |_| false), "unix:///var/run/docker.sock");
    }

    #[test]
    fn only_a_loopback_binding_is_used() {
        let binding = |ip: &str, port: &str| PortBinding { host_ip: Some(ip.into()), host_port: Some(port.into()) };
        let ports = |bindings: Vec<PortBinding>| PortMap::from([(HTTP_PORT.to_string(), Some(bindings))]);
        assert_eq!(loopback_port(&ports(vec![binding("127.0.0.1", "32768")])), Some(32768));
        assert_eq!(loopback_port(&ports(vec![binding("0.0.0.0", "32768"), binding("::", "32768")])), None);
        assert_eq!(loopback_port(&ports(vec![binding("0.0.0.0", "1"), binding("127.0.0.1", "2")])), Some(2));
        assert_eq!(loopback_port(&PortMap::from([(HTTP_PORT.to_string(), None)])), None);
        assert_eq!(loopback_port(&PortMap::new()), None);
    }
}

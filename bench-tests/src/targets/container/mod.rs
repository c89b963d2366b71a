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
//! ([`ContainerScope`], in `scope`), its name and labels, creating or joining it, and
//! removing it; `docker` finds the daemon and a client for it.
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

use self::docker::docker_client;
pub use self::docker::{docker_answers, docker_host, docker_tls_refusal};
use self::scope::host_name;
pub use self::scope::{ContainerScope, ProcessIdentity, is_abandoned, nextest_run_id, pid_runs};
use super::server::{BENCH_USER, ServerConfig, ServerTarget};
use super::{Backend, Capabilities, ClientOpener, ResultCounters, Storage};
use crate::settings::Settings;

mod docker;
mod scope;

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

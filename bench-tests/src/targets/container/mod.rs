//! The container target: `clickhouse/clickhouse-server` at a pinned tag in Docker, started,
//! found and removed through testcontainers with testcontainers-modules' ClickHouse image,
//! and talked to as a server target on a port published on 127.0.0.1 only.
//!
//! The Docker client is chbench's `container` feature, off by default as the Kubernetes
//! client is: a laptop without Docker never compiles testcontainers (bollard's buildkit,
//! reqwest with rustls: about a hundred crates). Without the feature the target's opener
//! says how to build with it ([`MISSING_FEATURE`]), and `cargo xtask` runs itself again
//! built with it, where a Docker daemon looks to be (none is one line, and no build);
//! `auto` never chooses a target the build lacks, and says so when Docker is there
//! ([`docker_answers`]).
//!
//! What is decided here, with or without the feature: which processes share a container
//! and whose end ends its use (`scope`), and why a daemon behind TLS is refused
//! (`docker`). The container's life is `lifecycle` (the feature's).
//!
//! - Under nextest (`NEXTEST_RUN_ID` set) each test is a process, and a whole
//!   `cargo nextest run` shares one container, `chbench-clickhouse-run-<run id>`: the
//!   first process to open the target creates it, the others find it (testcontainers'
//!   reusable containers, by name and labels) and wait until it answers. Creation is
//!   serialised by a file lock, so two processes never create it at once. Its owner is
//!   the test runner (the parent of every test process); no test process knows it is the
//!   last, so the container outlives the run until an open of the target (any later run
//!   or process) or `cargo xtask clean-containers` removes the containers whose owner
//!   has ended.
//! - Elsewhere (`xtask`, a `cargo test` binary) a process has its own container, removed
//!   when its last container target closes; one left by a killed process is removed by
//!   the next open.
//! - A container that ended (an OOM kill, `docker stop`) is started again by the next
//!   open, once: it keeps its data and password, so one crash does not fail every later
//!   test of the run. Ending again is an error carrying the tail of its log.
//!
//! By hand: `docker rm -f $(docker ps -aq --filter label=chbench.scope)`.
//!
//! It is a server target in every respect but one: chbench started it, so it may restart
//! it (under nextest the run's processes share it, so a scenario that restarts it must not
//! run beside others).

use anyhow::Result;

pub use self::docker::docker_socket_seen;
use self::docker::{docker_host_refusal, rootless_socket_unseen};
#[cfg(feature = "container")]
pub use self::lifecycle::{ContainerAction, ContainerTarget, Password, container_action, log_tail, loopback_port};
pub use self::scope::{ContainerScope, ProcessIdentity, is_abandoned, nextest_run_id, pid_runs};
use super::{Backend, Capabilities, MissingFeature, Storage};

mod docker;
#[cfg(feature = "container")]
mod lifecycle;
mod scope;

/// A server chbench started, measured as any server: the `url` target's capabilities
/// (concurrent clients too: each an HTTP client of its own to the container's port, each
/// statement with its own query_log row).
pub const CAPABILITIES: Capabilities = super::server::CAPABILITIES;

/// The source's manifest pins this release; so do we, never `latest`. testcontainers-modules'
/// ClickHouse image names the repository; its own tag (23.3) is past support.
pub const CLICKHOUSE_IMAGE: &str = "clickhouse/clickhouse-server";
pub const CLICKHOUSE_TAG: &str = "26.3.33.24";

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

/// What this build lacks for the container target: testcontainers, its `container` feature.
#[cfg(not(feature = "container"))]
pub const MISSING_FEATURE: Option<MissingFeature> = Some(NO_CLIENT);
#[cfg(feature = "container")]
pub const MISSING_FEATURE: Option<MissingFeature> = None;

/// The container target's feature, as a build without it names it.
pub const NO_CLIENT: MissingFeature = MissingFeature {
    feature: "container",
    builds: "testcontainers, the Docker client",
    check_before_building: docker_looks_reachable,
    message: "target container needs chbench's container feature: run the tests with `cargo nextest run --features \
              chbench/container` (`cargo xtask bench --target container` turns it on itself)",
};

/// Starts or joins the container of this process's scope (the `container` kind's opener
/// for `targets::spec`). The server keeps its data inside the container: `storage`
/// does not apply.
#[cfg(feature = "container")]
pub fn open(_storage: &Storage) -> Result<Box<dyn Backend>> {
    Ok(Box::new(ContainerTarget::start()?))
}

/// Built without the Docker client: says how to build with it, where a Docker daemon looks
/// to be reachable; otherwise building it would only end in the same refusal.
#[cfg(not(feature = "container"))]
pub fn open(_storage: &Storage) -> Result<Box<dyn Backend>> {
    docker_looks_reachable()?;
    Err(NO_CLIENT.into())
}

/// Where no daemon looks to be: one line, before anything is built.
pub const NO_DOCKER: &str = "cannot reach Docker (is a Docker daemon running?): DOCKER_HOST is not set and no Docker \
                             socket is here (/var/run/docker.sock, rootless Docker's or Docker Desktop's)";

/// What can be said of Docker before any client: a `DOCKER_HOST` chbench's client cannot
/// use (TLS, another scheme, a socket that is not there), rootless Docker's socket where
/// testcontainers does not look, or no daemon at all; each one line, with what to do.
pub fn docker_looks_reachable() -> Result<()> {
    let host = std::env::var("DOCKER_HOST").ok();
    let tls_verify = std::env::var("DOCKER_TLS_VERIFY").ok();
    if let Some(refusal) = docker_host_refusal(host.as_deref(), tls_verify.as_deref(), std::path::Path::exists) {
        anyhow::bail!("cannot reach Docker: {refusal}");
    }
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
    if let Some(set) = rootless_socket_unseen(host.as_deref(), runtime_dir.as_deref(), std::path::Path::exists) {
        anyhow::bail!("cannot reach Docker: {set}");
    }
    if docker_socket_seen().is_none() {
        anyhow::bail!("{NO_DOCKER}");
    }
    Ok(())
}

/// What [`clean_containers`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerCleanup {
    /// The containers removed: their owner had ended.
    pub removed: Vec<String>,
}

/// Removes chbench's containers whose owner has ended on this machine (what every open
/// of the target does first): `cargo xtask clean-containers`. A build without the Docker
/// client says how to build with it.
pub fn clean_containers() -> Result<ContainerCleanup> {
    #[cfg(feature = "container")]
    {
        Ok(ContainerCleanup { removed: lifecycle::remove_abandoned_containers()? })
    }
    #[cfg(not(feature = "container"))]
    {
        Err(NO_CLIENT.into())
    }
}

/// Whether a Docker daemon answers a ping (what `auto` asks). A build without the
/// container target never chooses it: when a daemon's socket is there, it says once
/// how to build with it.
pub fn docker_answers() -> bool {
    #[cfg(feature = "container")]
    {
        lifecycle::docker_answers()
    }
    #[cfg(not(feature = "container"))]
    {
        static SAID: std::sync::Once = std::sync::Once::new();
        if let Some(socket) = docker_socket_seen() {
            // DOCKER_HOST is named, not shown: it is the user's, and may hold a password.
            let from_variable = std::env::var("DOCKER_HOST").is_ok_and(|host| !host.trim().is_empty());
            let place = if from_variable { "DOCKER_HOST".to_string() } else { socket };
            SAID.call_once(|| {
                crate::say!(
                    "chbench: Docker looks to be here ({place}), but this build has no container target: target \
                     embedded; `--target container` (or `cargo nextest run --features chbench/container` for the \
                     tests) builds it"
                )
            });
        }
        false
    }
}

//! The container target: `clickhouse/clickhouse-server` at a pinned tag, started by
//! testcontainers and talked to as a server target on a loopback-mapped port.
//!
//! Images from 25.1 on refuse the `default` user from outside the container unless a
//! user or password is configured, so the container gets a `bench` user with a random
//! password made for this process and held only in memory.
//!
//! Under nextest each test is a process, so a container started here is started per test.
//! That is correct but slow; a run of many tests wants one server started outside the
//! tests and handed to them with the `url` target (see ARCHITECTURE.md).
//!
//! It is a server target in every respect but one: this process started it, so it may
//! restart it.

use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use testcontainers_modules::clickhouse::ClickHouse;
use testcontainers_modules::testcontainers::core::client::docker_client_instance;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, ImageExt};

use super::server::{BENCH_USER, ServerConfig, ServerTarget};
use super::{Backend, Capabilities, ResultCounters, Storage};
use crate::settings::Settings;

/// A server this process started: the `url` target's capabilities, and restartable.
pub const CAPABILITIES: Capabilities = Capabilities { restartable: true, ..super::server::CAPABILITIES };

/// Starts the pinned image (the `container` kind's opener for `TargetKind::spec`). The
/// server keeps its data inside the container: `storage` does not apply.
pub fn open(_storage: &Storage) -> Result<Box<dyn Backend>> {
    Ok(Box::new(ContainerTarget::start()?))
}

/// The source's manifest pins this release; so do we, never `latest`.
pub const CLICKHOUSE_IMAGE: &str = "clickhouse/clickhouse-server";
pub const CLICKHOUSE_TAG: &str = "26.3.33.24";
/// Pulling the image on a cold machine takes a while.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(300);

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
    pub fn new(password: &str) -> ContainerSpec {
        ContainerSpec {
            image: CLICKHOUSE_IMAGE,
            tag: CLICKHOUSE_TAG,
            env: vec![
                ("CLICKHOUSE_USER", BENCH_USER.to_string()),
                ("CLICKHOUSE_PASSWORD", password.to_string()),
                // Lets the bench user drop caches and read system tables.
                ("CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT", "1".to_string()),
            ],
            // ClickHouse warns below this and the official image docs use it.
            nofile: 262_144,
        }
    }
}

/// Whether a Docker daemon answers a ping (used to resolve `auto`).
pub fn docker_answers() -> bool {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return false };
    runtime.block_on(async {
        match docker_client_instance().await {
            Ok(docker) => {
                tokio::time::timeout(Duration::from_secs(3), docker.ping()).await.is_ok_and(|ping| ping.is_ok())
            }
            Err(_) => false,
        }
    })
}

pub struct ContainerTarget {
    container: Option<ContainerAsync<ClickHouse>>,
    /// The runtime the container was started on, kept to remove it on.
    runtime: tokio::runtime::Runtime,
    server: ServerTarget,
    image: String,
}

impl ContainerTarget {
    /// Starts the pinned image and connects to it on its mapped HTTP port.
    pub fn start() -> Result<ContainerTarget> {
        let password = uuid::Uuid::new_v4().simple().to_string();
        let spec = ContainerSpec::new(&password);
        let image = format!("{}:{}", spec.image, spec.tag);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the container client's runtime")?;
        let (container, url) = runtime.block_on(async {
            let mut request = ClickHouse::default().with_tag(spec.tag).with_startup_timeout(STARTUP_TIMEOUT);
            for (name, value) in &spec.env {
                request = request.with_env_var(*name, value.as_str());
            }
            let container = request
                .with_ulimit("nofile", spec.nofile, Some(spec.nofile))
                .start()
                .await
                .map_err(|error| anyhow!("cannot start {image} (is a Docker daemon running?): {error}"))?;
            let port = container.get_host_port_ipv4(8123).await.context("the container has no mapped HTTP port")?;
            Ok::<_, anyhow::Error>((container, format!("http://127.0.0.1:{port}")))
        })?;
        let server = ServerTarget::connect(ServerConfig::new(&url, BENCH_USER, &password)?)
            .with_context(|| format!("{image} started but does not answer"))?;
        Ok(ContainerTarget { container: Some(container), runtime, server, image })
    }
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
}

impl Drop for ContainerTarget {
    fn drop(&mut self) {
        if let Some(container) = self.container.take() {
            // Best effort, like testcontainers' own Drop; a container left behind is
            // labelled by testcontainers and removed by its reaper or by hand.
            let _ = self.runtime.block_on(container.rm());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_is_pinned_and_the_user_can_log_in_from_outside() {
        let spec = ContainerSpec::new("pw");
        assert_eq!(format!("{}:{}", spec.image, spec.tag), "clickhouse/clickhouse-server:26.3.33.24");
        assert!(spec.env.contains(&("CLICKHOUSE_USER", "bench".to_string())));
        assert!(spec.env.contains(&("CLICKHOUSE_PASSWORD", "pw".to_string())));
        let shown = format!("{:?}", ContainerSpec::new("s3cret-pw"));
        assert!(shown.contains("CLICKHOUSE_PASSWORD") && !shown.contains("s3cret-pw"), "{shown}");
    }
}

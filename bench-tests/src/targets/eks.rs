//! The `eks` target: the ClickHouse pod `cargo xtask eks up` deployed, reached through a
//! port-forward made with kube's API (so ClickHouse is never exposed beyond loopback) and
//! talked to as a server target, as the manifests' user, with the password read from the
//! namespace's Secret and held in memory only.
//!
//! The namespace is `CHBENCH_NAMESPACE`, else that of the deployment the last `eks up`
//! brought up ([`LastUp`]), else [`DEFAULT_NAMESPACE`](crate::cluster::DEFAULT_NAMESPACE). The Kubernetes
//! client needs chbench's `eks` feature; built without it, the opener fails with
//! [`MissingFeature`], one line saying how to build with it, which `cargo xtask bench`
//! acts on by building itself again with the feature.

use anyhow::{Context, Result, bail};

use super::{Backend, Capabilities, KubernetesDeployment, Storage};
use crate::cluster::check_namespace;
use crate::cluster::last_up::{LastUp, namespace_for};

/// A server someone else owns (`up` and `down` do): the `url` target's capabilities,
/// statistics from its query_log, datasets as shared databases, concurrent clients each
/// with an HTTP client of its own through the port-forward (which forwards every
/// connection), each statement with its own query_log row.
pub const CAPABILITIES: Capabilities =
    Capabilities { deployed_by_chbench: true, in_cluster_load: true, ..super::server::CAPABILITIES };

/// The environment variable naming the deployment's namespace.
pub const NAMESPACE_ENV: &str = "CHBENCH_NAMESPACE";

/// ClickHouse's HTTP port in the pod.
pub const HTTP_PORT: u16 = 8123;

/// What output shows of the target: the pod, its image and the forward. For display
/// only: results carry the deployment itself ([`Backend::deployment`]).
pub fn endpoint(deployment: &KubernetesDeployment, forward_url: &str) -> String {
    let KubernetesDeployment { namespace, pod, image, .. } = deployment;
    format!("pod {namespace}/{pod} ({image}) through a port-forward at {forward_url}")
}

/// `CHBENCH_NAMESPACE`, else the last `up`'s namespace, else the default; with the last
/// `up`'s record when the namespace is its own. A name Kubernetes would refuse is one line.
pub fn namespace_from_env() -> Result<(String, Option<LastUp>)> {
    let given = match std::env::var(NAMESPACE_ENV) {
        Ok(namespace) => Some(namespace),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => bail!("{NAMESPACE_ENV} is not valid UTF-8"),
    };
    if let Some(namespace) = &given {
        check_namespace(namespace).with_context(|| format!("{NAMESPACE_ENV}={namespace:?}"))?;
    }
    namespace_for(given.as_deref())
}

/// Opens the deployment in `CHBENCH_NAMESPACE` for a bench (the `eks` kind's opener for
/// `targets::spec`), stamping its use. The server keeps its own data: `storage` does
/// not apply.
#[cfg(feature = "eks")]
pub fn open(_storage: &Storage) -> Result<Box<dyn Backend>> {
    let (namespace, last_up) = namespace_from_env()?;
    Ok(Box::new(with_client::EksTarget::connect(&namespace, last_up.as_ref(), Use::Bench)?))
}

/// What the target is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// A bench or test run: stamps the Namespace's
    /// [`LAST_USED_ANNOTATION`](crate::cluster::LAST_USED_ANNOTATION) when it opens and
    /// when it closes, so that `down` knows results may have been written since the last
    /// collect.
    Bench,
    /// `collect` reading the server: no stamp, or every collect would come before a use.
    Collect,
}

/// What this build lacks for the eks target: the Kubernetes client, its `eks` feature.
#[cfg(not(feature = "eks"))]
pub const MISSING_FEATURE: Option<super::MissingFeature> = Some(NO_CLIENT);
#[cfg(feature = "eks")]
pub const MISSING_FEATURE: Option<super::MissingFeature> = None;

/// The eks target's feature, as a build without it names it.
pub const NO_CLIENT: super::MissingFeature = super::MissingFeature {
    feature: "eks",
    builds: "the Kubernetes client",
    // Whether a cluster answers is the client's to find out.
    check_before_building: || Ok(()),
    message: "target eks needs chbench's eks feature: run the tests with `cargo nextest run --features chbench/eks` \
              (`cargo xtask bench --target eks` turns it on itself)",
};

/// Built without the Kubernetes client: says how to build with it.
#[cfg(not(feature = "eks"))]
pub fn open(_storage: &Storage) -> Result<Box<dyn Backend>> {
    // A record that cannot be read is said before the build it would otherwise start.
    namespace_from_env()?;
    Err(NO_CLIENT.into())
}

#[cfg(feature = "eks")]
pub use with_client::{EksTarget, ReadyDeployment, check_baseline_node, find_deployment, open_in};

#[cfg(feature = "eks")]
mod with_client {
    use std::fmt;

    use anyhow::{Result, bail};
    use kube::Client;

    use crate::cluster::api_server::{Cluster, connect};

    use super::{HTTP_PORT, Use, endpoint};
    use crate::cluster::annotations::BenchUse;
    use crate::cluster::baseline::read_baseline;
    use crate::cluster::deploy::{CLICKHOUSE, PASSWORD_SECRET, read_password, up_hint};
    use crate::cluster::deployment::read_pod;
    use crate::cluster::eks_command;
    use crate::cluster::last_up::LastUp;
    use crate::cluster::load::run_level;
    use crate::cluster::portforward::{PortForward, client_runtime};
    use crate::interrupt::Interrupted;
    use crate::load_generator::LoadLevel;
    use crate::load_generator::LoadRun;
    use crate::settings::Settings;
    use crate::storage_baseline::StorageBaseline;
    use crate::targets::server::{BENCH_USER, ServerConfig, ServerTarget};
    use crate::targets::{Backend, ClientOpener, KubernetesDeployment, ResultCounters, Target, TargetKind};

    /// What the target needs of a deployment: which it is (its pod, Ready, its image and
    /// node), and ClickHouse's password.
    pub struct ReadyDeployment {
        pub identity: KubernetesDeployment,
        password: String,
    }

    /// Shows everything but the password.
    impl fmt::Debug for ReadyDeployment {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("ReadyDeployment").field("identity", &self.identity).field("password", &"<hidden>").finish()
        }
    }

    /// Reads (never writes) the deployment in `namespace`: the password Secret, then the
    /// pod ([`read_pod`]), which must be Ready. What is missing is one line saying to run
    /// `up`; when `last_up` (the record of the last `up`, of this namespace) says a
    /// deployment was brought up there, its absence is that deployment gone.
    pub async fn find_deployment(
        client: &Client,
        namespace: &str,
        last_up: Option<&LastUp>,
    ) -> Result<ReadyDeployment> {
        let up = up_hint(namespace);
        let Some(password) = read_password(client, namespace).await? else {
            let missing = format!("no secret {namespace}/{PASSWORD_SECRET}");
            return Err(match last_up {
                Some(record) => record.gone(&missing),
                None => anyhow::anyhow!("{missing}, so no deployment to use: {up}"),
            });
        };
        let doing = || format!("no ClickHouse to use in namespace {namespace}");
        let pod = read_pod(client, namespace).await?.required(doing)?;
        if !pod.ready {
            bail!(
                "pod {namespace}/{CLICKHOUSE} is not Ready (phase {}): {up}, which waits for it and says why not",
                pod.phase
            );
        }
        // A Ready pod is on a node.
        let node = pod.node.required(doing)?;
        let identity = KubernetesDeployment {
            namespace: namespace.to_string(),
            image: pod.image.required(doing)?,
            image_id: pod.image_id.present().cloned(),
            pod: pod.name,
            node,
            // Not read on every open (one more API request): the storage baseline, measured
            // on this node, records its type, and a comparison prices the bundle by that.
            instance_type: None,
        };
        Ok(ReadyDeployment { identity, password })
    }

    /// The storage baseline kept in the deployment's namespace, if it was measured on the
    /// node ClickHouse runs on now; one measured on another node (the pod was made again
    /// elsewhere) is an error saying how to measure it again, as none is.
    pub fn check_baseline_node(
        deployment: &ReadyDeployment,
        stored: Option<StorageBaseline>,
    ) -> Result<StorageBaseline> {
        let KubernetesDeployment { namespace, node, .. } = &deployment.identity;
        let again = eks_command("baseline", namespace);
        let Some(baseline) = stored else {
            bail!(
                "no storage baseline in namespace {namespace} (up --no-baseline, or it failed): `{again}` measures one"
            );
        };
        if baseline.device.node != *node {
            bail!(
                "the storage baseline was measured on node {}, ClickHouse now runs on {node}: {again}",
                baseline.device.node
            );
        }
        Ok(baseline)
    }

    /// The deployment's ClickHouse through a port-forward. Fields drop in order: the HTTP
    /// client, the forward, a bench's use (its last stamp), the Kubernetes client, then
    /// the runtime they use.
    pub struct EksTarget {
        server: ServerTarget,
        forward: PortForward,
        /// A bench's use, held only to be stamped again when it drops.
        _bench_use: Option<BenchUse>,
        /// For what the target reads and stamps of the cluster besides ClickHouse (the
        /// storage baseline, the last use), on the runtime below; each request bounded.
        cluster: Cluster,
        deployment: ReadyDeployment,
        kubernetes: tokio::runtime::Runtime,
        endpoint: String,
    }

    impl EksTarget {
        /// Finds the deployment in `namespace` (the last `up`'s, when `last_up` is its
        /// record), forwards a loopback port to its pod and connects as the manifests'
        /// user; for a bench, stamps the deployment's use.
        pub fn connect(namespace: &str, last_up: Option<&LastUp>, used_for: Use) -> Result<EksTarget> {
            let kubernetes = client_runtime()?;
            let (cluster, deployment) = kubernetes
                .block_on(async {
                    let cluster = connect().await?;
                    if let Some(record) = last_up {
                        record.check_cluster(&cluster.url)?;
                    }
                    let deployment =
                        cluster.run(|client| async move { find_deployment(&client, namespace, last_up).await }).await?;
                    Ok::<_, anyhow::Error>((cluster, deployment))
                })
                .map_err(|error| match last_up {
                    // A cluster that cannot be reached (deleted, say) would leave every run with no
                    // target failing here: the line says which record chose it and the way out.
                    Some(record)
                        if !error.is::<Interrupted>() && !format!("{error:#}").contains(&record.to_string()) =>
                    {
                        error.context(record.way_out())
                    }
                    _ => error,
                })?;
            let forward_client = {
                // Inside the runtime: the client spawns its request buffer on it.
                let _entered = kubernetes.enter();
                cluster.forward_client()?
            };
            // Opening a forward waits for the API server's answer as any request does.
            let bounds = cluster.bounds();
            let open_within = bounds.connect + bounds.answer;
            let forward = PortForward::start(forward_client, namespace, CLICKHOUSE, HTTP_PORT, open_within)?;
            let endpoint = endpoint(&deployment.identity, &forward.url());
            let config = ServerConfig::new(&forward.url(), BENCH_USER, &deployment.password)?;
            let server = match ServerTarget::connect(config) {
                Ok(server) => server,
                // The forward's own failure says more than the client's closed connection.
                Err(error) => match forward.failure() {
                    Some(failure) => return Err(error.context(failure)),
                    None => return Err(error.context(format!("{endpoint} does not answer"))),
                },
            };
            let bench_use = (used_for == Use::Bench)
                .then(|| BenchUse::begin(cluster.client.clone(), namespace, kubernetes.handle().clone()));
            Ok(EksTarget { server, forward, _bench_use: bench_use, cluster, deployment, kubernetes, endpoint })
        }
    }

    /// Everything goes to the server through the forward.
    impl Backend for EksTarget {
        fn run(&mut self, sql: &str, settings: &Settings, format: &str) -> Result<(String, ResultCounters)> {
            self.server.run(sql, settings, format).map_err(|error| self.forward.explain(error))
        }

        fn use_database(&mut self, name: &str) -> Result<()> {
            self.server.use_database(name).map_err(|error| self.forward.explain(error))
        }

        fn endpoint(&self) -> String {
            self.endpoint.clone()
        }

        fn deployment(&self) -> Option<KubernetesDeployment> {
            Some(self.deployment.identity.clone())
        }

        /// Clients of the server through the same forward, which lives as long as this
        /// target (the caller holds it while its clients run).
        fn client_opener(&self) -> Result<ClientOpener> {
            self.server.client_opener()
        }

        /// The baseline `up` (or `eks baseline`) measured on the pod's node and kept in
        /// the namespace; none there is an error saying how to measure one, which the
        /// bundle keeps as the reason it is unknown.
        fn storage_baseline(&mut self) -> Result<Option<StorageBaseline>> {
            let namespace = &self.deployment.identity.namespace;
            let stored = self
                .kubernetes
                .block_on(self.cluster.run(|client| async move { read_baseline(&client, namespace).await }))?;
            check_baseline_node(&self.deployment, stored).map(Some)
        }

        /// clickhouse-benchmark from the pod's own image, as a Job in the namespace,
        /// connecting as the target does, with the settings its session has (those of the
        /// defaults the server knows, and the run's).
        fn run_load_level(&mut self, level: &LoadLevel, progress: &mut dyn FnMut(&str)) -> Result<LoadRun> {
            let level = LoadLevel { settings: self.server.session().merged(&level.settings), ..level.clone() };
            let KubernetesDeployment { namespace, image, .. } = &self.deployment.identity;
            let level = &level;
            self.kubernetes.block_on(self.cluster.run(|client| async move {
                run_level(&client, namespace, image, BENCH_USER, level, LOAD_POLL, |line| progress(line)).await
            }))
        }
    }

    /// How often a load level's Job is asked how it does.
    const LOAD_POLL: std::time::Duration = std::time::Duration::from_secs(1);

    /// The deployment in `namespace` as a [`Target`] for collect (it stamps no use),
    /// whatever `CHBENCH_NAMESPACE` says (`cargo xtask eks collect --namespace`).
    pub fn open_in(namespace: &str) -> Result<Target> {
        crate::cluster::check_namespace(namespace)?;
        // Given (`collect --namespace`, or the last up's chosen by the command): the cluster
        // was the command's to check.
        let target = EksTarget::connect(namespace, None, Use::Collect)?;
        crate::targets::open_backend(TargetKind::Eks, Box::new(target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_names_the_pod_image_and_forward() {
        let deployment = KubernetesDeployment {
            namespace: "bench-2".into(),
            pod: "clickhouse".into(),
            image: "clickhouse/clickhouse-server:26.3.33.24".into(),
            image_id: None,
            node: "ip-10-0-1-5.ec2.internal".into(),
            instance_type: None,
        };
        assert_eq!(
            endpoint(&deployment, "http://127.0.0.1:4"),
            "pod bench-2/clickhouse (clickhouse/clickhouse-server:26.3.33.24) through a port-forward at \
             http://127.0.0.1:4"
        );
    }
}

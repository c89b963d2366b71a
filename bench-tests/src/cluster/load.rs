//! A load level run inside the cluster (docs/throughput.md, "Where the load comes from"):
//! clickhouse-benchmark from the server's image as a Job (`manifests/load/`), on the
//! server's node or a node of its own, given the level's queries in a ConfigMap and let
//! through the namespace's default-deny-ingress to ClickHouse's native port by a
//! NetworkPolicy of its own; its log (the report) read, then all three removed, whether
//! it succeeded or not (Ctrl-C included; a killed run leaves them to the next level, which
//! removes them first, or to `down`, and the Job alone to its TTL). What the level asks
//! for and what the report says are [`crate::load_generator`]'s.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{
    Affinity, EnvVar, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
};
use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, PodAntiAffinity};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::api::Api;
use tokio::time::Instant;

use super::deploy::{CLICKHOUSE, apply_object};
use super::jobs::{JobName, Wait, job_log, remove, wait_for_job};
use super::manifests::{self, Object, PART_OF};
use crate::load_generator::{ClientPlacement, LoadBound, LoadLevel, LoadRun};

/// The Job, its container (whose log is the report) and what it is for.
pub const LOAD_JOB: JobName = JobName { name: "chbench-load", container: "load", doing: "load" };
/// The ConfigMap holding the level's queries, and its key (the file the Job reads).
pub const QUERIES_CONFIG_MAP: &str = "chbench-load-queries";
const QUERIES_KEY: &str = "queries.tsv";
/// Beyond the level itself: time for its pod to be scheduled, a node made for it (by
/// Karpenter, for a node type no node has yet) and the server's image pulled there.
pub const START_TIMEOUT: Duration = Duration::from_secs(600);
/// A level bounded by statements rather than time is given this long to run them.
pub const ITERATIONS_TIMEOUT: Duration = Duration::from_secs(3600);
/// The label of the node type, which `--client-node-type` selects on.
const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";

/// Runs `level` against the ClickHouse pod of `namespace` as `user`, from `image` (the
/// server's), and returns the Job's log; asks how the Job does every `poll`. A Job that fails, or
/// does not finish in time, is an error carrying its pod's events and log. Whatever
/// happens once its objects were applied (Ctrl-C too), they are removed.
pub async fn run_level(
    client: &Client,
    namespace: &str,
    image: &str,
    user: &str,
    level: &LoadLevel,
    poll: Duration,
    mut progress: impl FnMut(&str),
) -> Result<LoadRun> {
    let (server_ip, server_node) = server_address(client, namespace).await?;
    let timeout = match level.bound {
        LoadBound::Seconds(seconds) => Duration::try_from_secs_f64(seconds).unwrap_or(ITERATIONS_TIMEOUT),
        LoadBound::Statements(_) => ITERATIONS_TIMEOUT,
    } + START_TIMEOUT;
    let documents = manifests::render_load(namespace, image, timeout.as_secs())?;
    let mut objects = manifests::parse(&documents)?;
    manifests::check_load(&objects)?;
    let server = Server { ip: &server_ip, node: &server_node, user };
    fill(&mut objects, &level.arguments(&server_ip, user)?, level, &server)?;
    // A run killed before its clean-up leaves a Job that cannot be applied again, and
    // that would be read as this level's.
    remove(client, namespace, &objects, Wait::UntilGone { deadline: Instant::now() + START_TIMEOUT, poll }).await?;
    let ran = async {
        for object in &objects {
            apply_object(client, object).await?;
        }
        let pod = wait_for_job(client, namespace, &LOAD_JOB, timeout, poll, &mut progress).await?;
        let log = job_log(client, namespace, &LOAD_JOB, &pod.name).await?;
        let generator = format!("clickhouse-benchmark ({image})");
        Ok::<_, anyhow::Error>(LoadRun { generator, log, pod: pod.name, node: pod.node })
    }
    .await;
    let removed = remove(client, namespace, &objects, Wait::No).await;
    match (ran, removed) {
        (Ok(output), Ok(())) => Ok(output),
        (Ok(_), Err(error)) => Err(error.context(format!(
            "the level ran, but its objects could not be removed (the next level removes them first; `kubectl -n \
             {namespace} delete job,configmap,networkpolicy -l app.kubernetes.io/name=load` does it now)"
        ))),
        (Err(error), Ok(())) => Err(error),
        (Err(error), Err(removal)) => {
            progress(&format!("{removal:#}"));
            Err(error)
        }
    }
}

/// The ClickHouse pod's IP (the Job reaches it there: the deployment has no Service) and
/// node.
async fn server_address(client: &Client, namespace: &str) -> Result<(String, String)> {
    let shown = format!("pod {namespace}/{CLICKHOUSE}");
    let pod = Api::<Pod>::namespaced(client.clone(), namespace)
        .get_opt(CLICKHOUSE)
        .await
        .with_context(|| format!("cannot read {shown}"))?
        .with_context(|| format!("no {shown} to run the load against"))?;
    let ip = pod.status.as_ref().and_then(|status| status.pod_ip.clone());
    let node = pod.spec.as_ref().and_then(|spec| spec.node_name.clone());
    match (ip, node) {
        (Some(ip), Some(node)) => Ok((ip, node)),
        _ => bail!("{shown} has no IP or node yet: is it Ready? (`cargo xtask eks status` says)"),
    }
}

/// The ClickHouse pod the load goes to.
struct Server<'a> {
    ip: &'a str,
    node: &'a str,
    /// The user the generator logs in as.
    user: &'a str,
}

/// The level in the rendered objects: its queries in the ConfigMap, its arguments and
/// placement in the Job, and the server for the pod's first look at it (the script in
/// the manifest waits until it answers).
fn fill(objects: &mut [Object], arguments: &[String], level: &LoadLevel, server: &Server<'_>) -> Result<()> {
    for object in objects.iter_mut() {
        match object {
            Object::ConfigMap(map) => {
                map.data = Some(BTreeMap::from([(QUERIES_KEY.to_string(), level.queries_file())]));
            }
            Object::Job(job) => {
                let pod = job
                    .spec
                    .as_mut()
                    .and_then(|spec| spec.template.spec.as_mut())
                    .context("the load's Job has no pod template")?;
                let container = pod
                    .containers
                    .iter_mut()
                    .find(|container| container.name == LOAD_JOB.container)
                    .with_context(|| format!("the load's Job has no container {}", LOAD_JOB.container))?;
                container.args = Some(arguments.to_vec());
                let env = container.env.get_or_insert_with(Vec::new);
                for (name, value) in [("CHBENCH_SERVER_HOST", server.ip), ("CHBENCH_SERVER_USER", server.user)] {
                    env.push(EnvVar { name: name.to_string(), value: Some(value.to_string()), value_from: None });
                }
                let (affinity, node_selector) = placement(&level.placement, server.node)?;
                pod.affinity = Some(affinity);
                pod.node_selector = node_selector;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Where the Job's pod runs: on `server_node` by name (beside the server), or on a node
/// without a ClickHouse pod of chbench's, this deployment's or another's (of a type, when
/// given).
fn placement(placement: &ClientPlacement, server_node: &str) -> Result<(Affinity, Option<BTreeMap<String, String>>)> {
    match placement {
        ClientPlacement::BesideServer => {
            let on_node = NodeSelectorTerm {
                match_fields: Some(vec![NodeSelectorRequirement {
                    key: "metadata.name".to_string(),
                    operator: "In".to_string(),
                    values: Some(vec![server_node.to_string()]),
                }]),
                ..NodeSelectorTerm::default()
            };
            let affinity = Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: vec![on_node],
                    }),
                    ..NodeAffinity::default()
                }),
                ..Affinity::default()
            };
            Ok((affinity, None))
        }
        ClientPlacement::OwnNode { node_type } => {
            let not_beside_server = PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([
                        ("app.kubernetes.io/name".to_string(), CLICKHOUSE.to_string()),
                        (PART_OF.0.to_string(), PART_OF.1.to_string()),
                    ])),
                    ..LabelSelector::default()
                }),
                // Every namespace: another deployment's benchmark node is not the load's either.
                namespace_selector: Some(LabelSelector::default()),
                topology_key: "kubernetes.io/hostname".to_string(),
                ..PodAffinityTerm::default()
            };
            let affinity = Affinity {
                pod_anti_affinity: Some(PodAntiAffinity {
                    required_during_scheduling_ignored_during_execution: Some(vec![not_beside_server]),
                    ..PodAntiAffinity::default()
                }),
                ..Affinity::default()
            };
            let selector = match node_type {
                Some(node_type) => {
                    crate::load_generator::check_node_type(node_type)?;
                    Some(BTreeMap::from([(INSTANCE_TYPE.to_string(), node_type.clone())]))
                }
                None => None,
            };
            Ok((affinity, selector))
        }
    }
}

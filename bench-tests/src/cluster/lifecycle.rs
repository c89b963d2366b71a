//! A deployment once it is up: what it is ([`status`]: the [`Deployment`] as the cluster
//! has it, its run and whether it was collected, the pod, its node, its data volume's
//! claim, the volume and its storage class) and taking it away ([`down`]: everything `up`
//! made, refused while its run's results are not collected). What is absent is shown as
//! absent with the reason, never as 0.
//!
//! The steps are async, on kube's client; [`status_blocking`] and [`down_blocking`], what
//! `cargo xtask eks status` and `down` run, drive them as `up` does ([`on_cluster`]).

use std::fmt::{self, Debug, Display};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::deploy::{ClusterConnection, Kubeconfig, Poller, delete_if_present, on_cluster};
use super::deployment::{self, Deployment, Presence, Run};
use super::manifests::PART_OF;

/// How often `down` asks whether what it deleted is gone.
const POLL: Duration = Duration::from_secs(2);

/// The deployment in `namespace`, as `cargo xtask eks status` shows it (its `Display`,
/// or its JSON); a namespace that does not exist, or that `up` did not make, is one line
/// saying so.
pub async fn status(client: &Client, namespace: &str) -> Result<Deployment> {
    let deployment = deployment::read(client, namespace).await?;
    deployment.namespace.as_ref().required(|| no_deployment(namespace))?;
    Ok(deployment)
}

/// The context of a namespace `status` and `down` cannot act on: a type, so that `down`'s
/// caller can tell it (and forget the namespace if it remembered it) with
/// `anyhow::Error::downcast_ref`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoDeployment {
    pub namespace: String,
}

impl std::fmt::Display for NoDeployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no chbench deployment in namespace {}", self.namespace)
    }
}

fn no_deployment(namespace: &str) -> NoDeployment {
    NoDeployment { namespace: namespace.to_string() }
}

/// `cargo xtask eks status`, blocking.
pub fn status_blocking(namespace: &str) -> Result<Deployment> {
    on_cluster(|client| async move { status(&client, namespace).await })
}

/// One object `down` deletes or keeps, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    pub kind: &'static str,
    /// `namespace/name` for an object in a namespace.
    pub name: String,
    pub note: String,
}

impl Display for Listed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.name)?;
        if !self.note.is_empty() {
            write!(f, " ({})", self.note)?;
        }
        Ok(())
    }
}

/// What `down` deletes and keeps.
#[derive(Debug, Clone, Serialize)]
pub struct DownPlan {
    pub namespace: String,
    pub run: Presence<String>,
    /// Why a `down` without `--force` is refused, when it is.
    pub refused: Option<String>,
    pub delete: Vec<Listed>,
    pub keep: Vec<Listed>,
}

impl Display for DownPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "namespace {}, run {}", self.namespace, self.run)?;
        for listed in &self.delete {
            writeln!(f, "  delete {listed}")?;
        }
        for listed in &self.keep {
            writeln!(f, "  keep   {listed}")?;
        }
        match &self.refused {
            Some(why) => writeln!(f, "a down without --force is refused: {why}"),
            None => writeln!(f, "the run is collected: a down goes ahead"),
        }
    }
}

/// How `down` ended.
#[derive(Debug, Clone)]
pub enum DownOutcome {
    /// `--dry-run`: what a down would delete and keep; nothing sent.
    Planned(DownPlan),
    /// Deleted, and gone.
    Deleted(DownPlan),
}

/// Deletes what `up` made in `namespace`: the Namespace (the pod, the volume claim, the
/// Secret and everything else in it go with it; a claim's volume goes too when its
/// reclaim policy is Delete, as the gp3 class's is), then the StorageClasses labelled
/// part-of chbench, unless another chbench namespace still exists. Refused unless the
/// namespace's run was collected, or `force`. Waits, telling `progress`, until what it
/// deleted is gone; after `timeout` the error says what is left. `dry_run` deletes
/// nothing and returns the plan, saying whether a real down would be refused.
pub async fn down(
    client: &Client,
    namespace: &str,
    force: bool,
    dry_run: bool,
    timeout: Duration,
    poll: Duration,
    mut progress: impl FnMut(&str),
) -> Result<DownOutcome> {
    let run = deployment::read_namespace(client, namespace).await?.required(|| no_deployment(namespace))?.run;
    // Collected means this run, by a collect that started after the last bench's use.
    let refused = if run.collected { run.used_since_collect.clone() } else { Some(refusal(namespace, &run)) };
    if let Some(why) = &refused
        && !force
        && !dry_run
    {
        bail!("{why}");
    }
    let plan = plan(client, namespace, run.id, refused).await?;
    if dry_run {
        return Ok(DownOutcome::Planned(plan));
    }
    if let Some(why) = &plan.refused {
        progress(&format!("--force: {why}"));
    }
    let deadline = Instant::now() + timeout;
    progress(&format!("deleting namespace {namespace} and everything in it"));
    let namespaces = Api::<Namespace>::all(client.clone());
    delete_if_present(&namespaces, namespace, &format!("namespace {namespace}")).await?;
    wait_until_gone(&namespaces, namespace, "namespace", deadline, poll, &mut progress, |object| {
        namespace_progress(object)
    })
    .await?;
    let volumes = Api::<PersistentVolume>::all(client.clone());
    for volume in plan.delete.iter().filter(|listed| listed.kind == "PersistentVolume") {
        wait_until_gone(&volumes, &volume.name, "volume", deadline, poll, &mut progress, |volume| {
            volume.status.as_ref().and_then(|status| status.phase.clone()).unwrap_or_else(|| "Unknown".to_string())
        })
        .await?;
    }
    // After the volumes: a CSI driver may read its class's parameters to delete one.
    let classes = Api::<StorageClass>::all(client.clone());
    for class in plan.delete.iter().filter(|listed| listed.kind == "StorageClass") {
        progress(&format!("deleting storage class {}", class.name));
        delete_if_present(&classes, &class.name, &format!("storage class {}", class.name)).await?;
    }
    Ok(DownOutcome::Deleted(plan))
}

/// The refusal of a down whose run was not collected, naming the run and the ways on.
fn refusal(namespace: &str, run: &Run) -> String {
    let last = match &run.collected_run {
        Presence::Present(other) => format!(" (the last collect was of run {other})"),
        Presence::Absent { .. } => String::new(),
    };
    match &run.id {
        Presence::Present(id) => format!(
            "run {id} in namespace {namespace} is not collected{last}: run cargo xtask eks collect first, or down \
             --force to delete it with its results"
        ),
        Presence::Absent { absent } => format!(
            "{absent}, so no collect of it is recorded{last}: run cargo xtask eks collect first, or down --force"
        ),
    }
}

async fn plan(client: &Client, namespace: &str, run: Presence<String>, refused: Option<String>) -> Result<DownPlan> {
    let mut delete = vec![Listed { kind: "Namespace", name: namespace.to_string(), note: String::new() }];
    let in_namespace = |kind: &'static str, names: Vec<String>| -> Vec<Listed> {
        let note = "goes with the namespace";
        names
            .into_iter()
            .map(|name| Listed { kind, name: format!("{namespace}/{name}"), note: note.to_string() })
            .collect()
    };
    delete.extend(in_namespace("Pod", names(list_labelled(Api::<Pod>::namespaced(client.clone(), namespace)).await?)));
    delete.extend(in_namespace("Job", names(list_labelled(Api::<Job>::namespaced(client.clone(), namespace)).await?)));
    delete.extend(in_namespace(
        "Service",
        names(list_labelled(Api::<Service>::namespaced(client.clone(), namespace)).await?),
    ));
    delete.extend(in_namespace(
        "Secret",
        names(list_labelled(Api::<Secret>::namespaced(client.clone(), namespace)).await?),
    ));
    let claims = list_labelled(Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)).await?;
    let volumes: Vec<String> = claims.iter().filter_map(|claim| claim.spec.as_ref()?.volume_name.clone()).collect();
    delete.extend(in_namespace("PersistentVolumeClaim", names(claims)));
    let mut keep = Vec::new();
    for volume in volumes {
        let object = Api::<PersistentVolume>::all(client.clone())
            .get_opt(&volume)
            .await
            .with_context(|| format!("cannot read volume {volume}"))?;
        let policy = object.and_then(|object| object.spec?.persistent_volume_reclaim_policy);
        match policy.as_deref() {
            // A volume already gone has nothing to delete.
            None => {}
            Some("Delete") => delete.push(Listed {
                kind: "PersistentVolume",
                name: volume,
                note: "reclaim policy Delete: goes with its claim, and its disk with it".to_string(),
            }),
            Some(other) => keep.push(Listed {
                kind: "PersistentVolume",
                name: volume.clone(),
                note: format!(
                    "reclaim policy {other}: delete it, and the disk behind it, by hand (kubectl delete pv {volume})"
                ),
            }),
        }
    }
    let classes = names(list_labelled(Api::<StorageClass>::all(client.clone())).await?);
    if !classes.is_empty() {
        let others: Vec<String> = names(list_labelled(Api::<Namespace>::all(client.clone())).await?)
            .into_iter()
            .filter(|other| other != namespace)
            .collect();
        for class in classes {
            if others.is_empty() {
                delete.push(Listed { kind: "StorageClass", name: class, note: String::new() });
            } else {
                let note = format!(
                    "namespace {} (part-of chbench) still exists and may use it; the last down deletes it",
                    others.join(", ")
                );
                keep.push(Listed { kind: "StorageClass", name: class, note });
            }
        }
    }
    Ok(DownPlan { namespace: namespace.to_string(), run, refused, delete, keep })
}

/// The objects of `api` labelled part-of chbench.
async fn list_labelled<K>(api: Api<K>) -> Result<Vec<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let selector = format!("{}={}", PART_OF.0, PART_OF.1);
    let listed = api
        .list(&ListParams::default().labels(&selector))
        .await
        .with_context(|| format!("cannot list {} labelled {selector}", K::plural(&())))?;
    Ok(listed.items)
}

fn names<K: Resource<DynamicType = ()>>(objects: Vec<K>) -> Vec<String> {
    objects.into_iter().filter_map(|object| object.meta().name.clone()).collect()
}

/// Asks every `poll` until the object is gone ([`Poller`]: Ctrl-C ends the wait,
/// the cluster goes on deleting), telling `progress` what `describe` says of it when that
/// changes; at `deadline` the error says what is left.
async fn wait_until_gone<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    deadline: Instant,
    poll: Duration,
    progress: &mut impl FnMut(&str),
    describe: impl Fn(&K) -> String,
) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let poller = Poller::new(deadline, poll, format!("{what} {name} to be gone (the cluster goes on deleting it)"));
    let mut last = String::new();
    loop {
        let object = api.get_opt(name).await.with_context(|| format!("cannot read {what} {name}"))?;
        let Some(object) = object else {
            progress(&format!("{what} {name} is gone"));
            return Ok(());
        };
        let now = describe(&object);
        if now != last {
            progress(&format!("{what} {name}: {now}"));
            last = now;
        }
        if !poller.next_round().await? {
            bail!("{what} {name} is not gone yet ({last}); the cluster goes on deleting it: run down again to wait");
        }
    }
}

/// A terminating namespace's phase and what it still waits for (its conditions).
fn namespace_progress(namespace: &Namespace) -> String {
    let status = namespace.status.clone().unwrap_or_default();
    let phase = status.phase.unwrap_or_else(|| "Unknown".to_string());
    let waiting: Vec<String> = status
        .conditions
        .iter()
        .flatten()
        .filter(|condition| condition.status == "True")
        .filter_map(|condition| condition.message.clone())
        .collect();
    if waiting.is_empty() { phase } else { format!("{phase}: {}", waiting.join("; ")) }
}

/// `cargo xtask eks down`, blocking.
pub fn down_blocking(
    namespace: &str,
    force: bool,
    dry_run: bool,
    timeout: Duration,
    progress: impl FnMut(&str),
) -> Result<DownOutcome> {
    down_through(&Kubeconfig, namespace, force, dry_run, timeout, POLL, progress)
}

/// [`down_blocking`] on the cluster `connection` reaches, polling every `poll` while it
/// waits (a matrix run's steps; a test's mocked API).
pub fn down_through(
    connection: &impl ClusterConnection,
    namespace: &str,
    force: bool,
    dry_run: bool,
    timeout: Duration,
    poll: Duration,
    progress: impl FnMut(&str),
) -> Result<DownOutcome> {
    connection
        .on_cluster(|client| async move { down(&client, namespace, force, dry_run, timeout, poll, progress).await })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{COLLECTED_ANNOTATION, RUN_ANNOTATION};

    #[test]
    fn a_refusal_names_the_run_or_why_there_is_none_and_the_ways_on() {
        let run = |annotations: &[(&str, &str)]| {
            let namespace = Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some("chbench".into()),
                    annotations: Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                    ..Default::default()
                },
                ..Default::default()
            };
            deployment::namespace_facts(&namespace).run
        };
        let no_run = refusal("chbench", &run(&[]));
        assert!(no_run.starts_with("namespace chbench has no chbench.dev/run annotation"), "{no_run}");
        assert!(no_run.ends_with("cargo xtask eks collect first, or down --force"), "{no_run}");
        let other = refusal("chbench", &run(&[(RUN_ANNOTATION, "b"), (COLLECTED_ANNOTATION, "a")]));
        assert_eq!(
            other,
            "run b in namespace chbench is not collected (the last collect was of run a): run cargo xtask eks \
             collect first, or down --force to delete it with its results"
        );
    }
}

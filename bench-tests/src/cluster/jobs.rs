//! A Job chbench runs beside a deployment and removes once it has read what it printed
//! (the storage baseline's fio, a throughput level's load): waiting for it to finish,
//! saying why it failed, and removing its objects.

use std::fmt::Debug;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::deploy::{Poller, cannot_start, delete_if_present, why_it_failed};
use super::manifests::Object;

/// A Job as chbench names it: its name, the container whose log is its output, and what
/// it is for in progress lines ("storage baseline").
#[derive(Debug, Clone, Copy)]
pub struct JobName {
    pub name: &'static str,
    pub container: &'static str,
    pub doing: &'static str,
}

/// The pod a Job ran, once it finished, and the node it ran on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishedPod {
    pub name: String,
    pub node: Option<String>,
}

/// Waits for the Job to finish, asking every `poll` ([`Poller`]: Ctrl-C ends it);
/// `progress` hears its pod's phase when it changes. Returns the pod that ran it. A Job
/// that failed, a pod that cannot start, or a timeout is an error with the pod's events
/// and log.
pub async fn wait_for_job(
    client: &Client,
    namespace: &str,
    job: &JobName,
    timeout: Duration,
    poll: Duration,
    mut progress: impl FnMut(&str),
) -> Result<FinishedPod> {
    let name = job.name;
    let jobs = Api::<Job>::namespaced(client.clone(), namespace);
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let poller = Poller::new(Instant::now() + timeout, poll, format!("job {namespace}/{name} to finish"));
    let mut last_phase = String::new();
    loop {
        let read = jobs.get(name).await.with_context(|| format!("cannot read job {namespace}/{name}"))?;
        // This Job's pods, by the label the Job controller gives them (Kubernetes 1.27 and
        // later): its uid, so that a pod of an earlier Job of the same name, still being
        // deleted, is never taken for this one's; by name for a Job that has no uid.
        let of_job = match &read.metadata.uid {
            Some(uid) => ListParams::default().labels(&format!("batch.kubernetes.io/controller-uid={uid}")),
            None => ListParams::default().labels(&format!("batch.kubernetes.io/job-name={name}")),
        };
        let status = read.status.unwrap_or_default();
        let listed =
            pods.list(&of_job).await.with_context(|| format!("cannot list the pods of job {namespace}/{name}"))?;
        // backoffLimit 0: one pod at most.
        let pod = listed.items.into_iter().next();
        let pod_name = pod.as_ref().and_then(|pod| pod.metadata.name.clone());
        if status.succeeded.unwrap_or(0) > 0 {
            let node = pod.as_ref().and_then(|pod| pod.spec.as_ref()?.node_name.clone());
            let name = pod_name.with_context(|| format!("job {namespace}/{name} succeeded, but its pod is gone"))?;
            return Ok(FinishedPod { name, node });
        }
        let failed = status
            .conditions
            .iter()
            .flatten()
            .find(|condition| condition.type_ == "Failed" && condition.status == "True");
        if failed.is_some() || status.failed.unwrap_or(0) > 0 {
            let reason = failed
                .map(|condition| {
                    format!(
                        "{}: {}",
                        condition.reason.as_deref().unwrap_or("Failed"),
                        condition.message.as_deref().unwrap_or("").trim()
                    )
                })
                .unwrap_or_else(|| "its pod failed".to_string());
            let why = why_the_job_failed(client, namespace, job, &pod_name).await;
            bail!("job {namespace}/{name} failed ({reason}){why}");
        }
        let pod_status = pod.and_then(|pod| pod.status).unwrap_or_default();
        if let Some(stuck) = cannot_start(&pod_status) {
            let why = why_the_job_failed(client, namespace, job, &pod_name).await;
            bail!("job {namespace}/{name} cannot start {}: {stuck}{why}", job.container);
        }
        // A pod the scheduler cannot place yet says why (a node being made for it, or none
        // that fits): the user sees it now, not at the timeout.
        let unscheduled = pod_status
            .conditions
            .iter()
            .flatten()
            .find(|condition| condition.type_ == "PodScheduled" && condition.status == "False")
            .map(|condition| {
                format!(
                    " ({}: {})",
                    condition.reason.as_deref().unwrap_or("not scheduled"),
                    condition.message.as_deref().unwrap_or("").trim()
                )
            })
            .unwrap_or_default();
        let phase = match &pod_name {
            Some(name) => format!("pod {name}: {}{unscheduled}", pod_status.phase.as_deref().unwrap_or("Unknown")),
            None => "no pod yet".to_string(),
        };
        if phase != last_phase {
            progress(&format!("{}: {phase}", job.doing));
            last_phase = phase;
        }
        if !poller.next_round().await? {
            let why = why_the_job_failed(client, namespace, job, &pod_name).await;
            bail!("job {namespace}/{name} did not finish in {} s ({last_phase}){why}", timeout.as_secs());
        }
    }
}

/// The whole log of the Job's container in `pod`.
pub async fn job_log(client: &Client, namespace: &str, job: &JobName, pod: &str) -> Result<String> {
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let params = LogParams { container: Some(job.container.to_string()), ..LogParams::default() };
    pods.logs(pod, &params).await.with_context(|| format!("cannot read the log of pod {namespace}/{pod}"))
}

/// The events and the container's log of the Job's pod, after a failed wait.
async fn why_the_job_failed(client: &Client, namespace: &str, job: &JobName, pod: &Option<String>) -> String {
    match pod {
        Some(pod) => why_it_failed(client, namespace, pod, job.container).await,
        None => "\n(no pod of the job to show the events and log of)".to_string(),
    }
}

/// Whether [`remove`] waits for the objects to be gone.
#[derive(Clone, Copy)]
pub enum Wait {
    No,
    /// Asking every `poll` ([`Poller`]: Ctrl-C ends it).
    UntilGone {
        deadline: Instant,
        poll: Duration,
    },
}

/// Deletes a Job's objects, in the reverse of their order, the Job's pods with it; one
/// that is not there is fine. With [`Wait::UntilGone`], returns once none exists (a claim
/// or Job being deleted would otherwise be applied again and never bind, or be read as
/// the new one).
pub async fn remove(client: &Client, namespace: &str, objects: &[Object], wait: Wait) -> Result<()> {
    for object in objects.iter().rev() {
        match object {
            Object::Job(job) => delete(client, namespace, job.as_ref(), wait).await?,
            Object::PersistentVolumeClaim(claim) => delete(client, namespace, claim.as_ref(), wait).await?,
            Object::ConfigMap(map) => delete(client, namespace, map.as_ref(), wait).await?,
            Object::NetworkPolicy(policy) => delete(client, namespace, policy.as_ref(), wait).await?,
            other => bail!("a Job's manifest has a {}, which chbench does not remove with it", other.kind()),
        }
    }
    Ok(())
}

async fn delete<K>(client: &Client, namespace: &str, object: &K, wait: Wait) -> Result<()>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
{
    let name = object.meta().name.clone().context("an object without a name")?;
    let shown = format!("{} {namespace}/{name}", K::kind(&()));
    let api = Api::<K>::namespaced(client.clone(), namespace);
    let deleting = delete_if_present(&api, &name, &shown).await?;
    let Wait::UntilGone { deadline, poll } = wait else { return Ok(()) };
    if !deleting {
        return Ok(());
    }
    let poller = Poller::new(deadline, poll, format!("{shown} to be gone"));
    while api.get_opt(&name).await.with_context(|| format!("cannot read {shown}"))?.is_some() {
        if !poller.next_round().await? {
            bail!("{shown} left by an earlier run is still being deleted: run again once it is gone");
        }
    }
    Ok(())
}

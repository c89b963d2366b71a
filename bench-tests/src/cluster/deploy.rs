//! Putting a deployment on a cluster and waiting for it: server-side apply of the
//! checked manifests (the Namespace annotated with its run) and of the password Secret,
//! then a wait on the pod's Ready condition that, when it times out, says why (the pod's
//! events and its last log lines).
//!
//! The steps are async, on kube's client; [`up`], what `cargo xtask eks up` runs, is
//! blocking and drives them on a runtime of its own ([`on_cluster`], which every blocking
//! `eks` command uses), as the server targets do. What the `eks` commands share lives here
//! too: the one wait they all poll with ([`Poller`], which Ctrl-C ends), the one
//! delete ([`delete_if_present`]) and the hint to run `up` ([`up_hint`]).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Event, Namespace, Pod, PodStatus, Secret};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::RUN_ANNOTATION;
#[cfg(doc)]
use super::api_server::Cluster;
use super::api_server::{connect, stop_requested};
use super::manifests::{self, Document, Object, PART_OF, Values, Variant, is_part_of};

/// The field manager of every server-side apply: what `kubectl` shows as the owner.
pub const FIELD_MANAGER: &str = "chbench";
/// The pod, and its container, as the manifests name them.
pub const CLICKHOUSE: &str = "clickhouse";
/// The Secret holding ClickHouse's password (the manifests read it by this name).
pub const PASSWORD_SECRET: &str = "clickhouse-password";
/// Where the manifests mount ClickHouse's data: the volume mounted there is the data's
/// ([`super::deployment::DataVolume`]).
pub const DATA_PATH: &str = "/var/lib/clickhouse";
/// Log lines of the pod shown when a wait fails.
const LOG_LINES: i64 = 40;

/// Applies each object in order (namespace first, as the manifests list them), owning
/// its fields, with the password Secret right after the namespace (before the pod that
/// reads it), and the Namespace annotated with its run ([`with_run`]); returns the run
/// and the password. With the same flags a second `up` changes nothing;
/// what Kubernetes does not let change in place (a StorageClass's parameters, a pod's
/// resources or node) is refused by the API server, and needs `down` first.
pub async fn apply(client: &Client, objects: &[Object]) -> Result<Applied> {
    let mut password = None;
    let mut run = None;
    for object in objects {
        if password.is_none() && !matches!(object, Object::Namespace(_)) {
            let namespace = objects
                .iter()
                .find_map(|object| match object {
                    Object::Namespace(namespace) => namespace.metadata.name.clone(),
                    _ => None,
                })
                .context("the manifests define no Namespace")?;
            password = Some(ensure_password(client, &namespace).await?);
        }
        match object {
            Object::Namespace(namespace) => {
                let (namespace, id) = with_run(client, namespace).await?;
                run = Some(id);
                apply_one(Api::<Namespace>::all(client.clone()), &namespace).await?;
            }
            other => apply_object(client, other).await?,
        }
    }
    let password = password.context("the manifests define nothing but a Namespace")?;
    let run = run.context("the manifests define no Namespace")?;
    Ok(Applied { run, password })
}

/// What [`apply`] leaves the caller: the run's id and ClickHouse's password. No `Debug`,
/// so that the password cannot reach a log by a `{:?}`.
pub struct Applied {
    /// The Namespace's [`RUN_ANNOTATION`].
    pub run: String,
    pub password: String,
}

/// The Namespace to apply, annotated with its run: the run it already carries, or a new
/// one (a UUID v4) when it does not exist yet or carries none. An existing namespace
/// without the part-of label is refused: `up` did not make it. Server-side apply drops an
/// annotation the applied object leaves out, so the existing one is read and kept.
async fn with_run(client: &Client, namespace: &Namespace) -> Result<(Namespace, String)> {
    let name = namespace.metadata.name.clone().context("a Namespace without a name")?;
    let existing = Api::<Namespace>::all(client.clone())
        .get_opt(&name)
        .await
        .with_context(|| format!("cannot read namespace {name}"))?;
    // Nothing new can be made in it: the pod would be refused, after the Secret.
    let phase = existing.as_ref().and_then(|existing| existing.status.as_ref()?.phase.as_deref());
    if phase == Some("Terminating") {
        bail!("namespace {name} is still being deleted: run up again once it is gone (kubectl get namespace {name})");
    }
    // The forced apply would label a namespace someone else made as chbench's, and a
    // `down --force` would then delete it with everything in it.
    if let Some(existing) = &existing
        && !is_part_of(existing.metadata.labels.as_ref())
    {
        bail!("namespace {name} exists and was not made by cargo xtask eks up: choose another --namespace");
    }
    let run = existing
        .as_ref()
        .and_then(|existing| existing.metadata.annotations.as_ref()?.get(RUN_ANNOTATION).cloned())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let mut annotated = namespace.clone();
    annotated.metadata.annotations.get_or_insert_with(BTreeMap::new).insert(RUN_ANNOTATION.to_string(), run.clone());
    Ok((annotated, run))
}

/// Applies one object server-side, owning its fields (taking over those another
/// manager set), in its namespace.
pub async fn apply_object(client: &Client, object: &Object) -> Result<()> {
    match object {
        Object::Namespace(namespace) => apply_one(Api::<Namespace>::all(client.clone()), namespace).await,
        Object::StorageClass(class) => apply_one(Api::<StorageClass>::all(client.clone()), class).await,
        Object::PersistentVolumeClaim(claim) => apply_namespaced(client, claim.as_ref()).await,
        Object::Pod(pod) => apply_namespaced(client, pod.as_ref()).await,
        Object::Service(service) => apply_namespaced(client, service.as_ref()).await,
        Object::ConfigMap(map) => apply_namespaced(client, map.as_ref()).await,
        Object::Job(job) => apply_namespaced(client, job.as_ref()).await,
        Object::NetworkPolicy(policy) => apply_namespaced(client, policy.as_ref()).await,
    }
}

/// Deletes one object (`what` names it in the error), its dependents in the background
/// (a Job's pods: deleting a Job through the API orphans them by default); one already
/// gone is fine (a `down` or a clean-up run again). Whether there was one to delete.
pub async fn delete_if_present<K>(api: &Api<K>, name: &str, what: &str) -> Result<bool>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(false),
        Err(error) => Err(error).with_context(|| format!("cannot delete {what}")),
    }
}

/// What to run to make the deployment in `namespace`: `up` with its `--namespace` unless
/// it is the default one.
pub fn up_hint(namespace: &str) -> String {
    format!("run `{}`", super::eks_command("up", namespace))
}

/// The one wait of the `eks` commands: a loop asks the cluster, returns when what it
/// waits for is done, and otherwise calls [`Poller::next_round`], which ends the wait at
/// the deadline or on Ctrl-C and sleeps between rounds. (A loop rather than a closure
/// handed to a helper: the future of an async closure cannot be shown to be `Send`, and
/// the client's work is spawned.)
pub struct Poller {
    deadline: Instant,
    every: Duration,
    waiting_for: String,
}

impl Poller {
    /// Rounds every `every` until `deadline`; `waiting_for` ("pod ns/clickhouse to be
    /// Ready") is what the error of an interrupted wait says it stopped waiting for.
    pub fn new(deadline: Instant, every: Duration, waiting_for: impl Into<String>) -> Poller {
        Poller { deadline, every, waiting_for: waiting_for.into() }
    }

    /// After a round that found the wait not over: `false` once the deadline has passed
    /// (the caller says what it waited for and why it may be stuck); otherwise, after
    /// `every`, `true` for the next round. Ctrl-C ends the wait with
    /// [`crate::interrupt::Interrupted`], saying what it stopped waiting for.
    pub async fn next_round(&self) -> Result<bool> {
        if Instant::now() >= self.deadline {
            return Ok(false);
        }
        let stopped = || crate::interrupt::check().with_context(|| format!("stopped waiting for {}", self.waiting_for));
        stopped()?;
        // A stop during the sleep ends the wait then, not a round later.
        tokio::select! {
            () = tokio::time::sleep(self.every) => {}
            () = stop_requested() => {}
        }
        stopped()?;
        Ok(true)
    }
}

async fn apply_namespaced<K>(client: &Client, object: &K) -> Result<()>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug,
{
    apply_one(Api::<K>::namespaced(client.clone(), namespace_of(object)?), object).await
}

async fn apply_one<K>(api: Api<K>, object: &K) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    let name = object.meta().name.clone().context("an object without a name")?;
    let kind = K::kind(&()).to_string();
    api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(object))
        .await
        .with_context(|| format!("cannot apply {kind} {name}"))?;
    Ok(())
}

fn namespace_of<K: Resource<DynamicType = ()>>(object: &K) -> Result<&str> {
    let name = object.meta().name.as_deref().unwrap_or("?");
    object.meta().namespace.as_deref().with_context(|| format!("{} {name} names no namespace", K::kind(&())))
}

/// ClickHouse's password, from the namespace's Secret, made if missing: 122 random bits
/// (a UUID v4), never written anywhere but the cluster; the caller keeps it in memory for
/// the client. An existing Secret is kept, since the running pod read it when it started.
pub async fn ensure_password(client: &Client, namespace: &str) -> Result<String> {
    if let Some(password) = read_password(client, namespace).await? {
        return Ok(password);
    }
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    let (secret, password) = password_secret(namespace);
    secrets
        .create(&PostParams { field_manager: Some(FIELD_MANAGER.to_string()), ..PostParams::default() }, &secret)
        .await
        .with_context(|| format!("cannot create secret {namespace}/{PASSWORD_SECRET}"))?;
    Ok(password)
}

/// ClickHouse's password from the namespace's Secret, or `None` when there is no Secret;
/// only reads.
pub async fn read_password(client: &Client, namespace: &str) -> Result<Option<String>> {
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    let existing = secrets
        .get_opt(PASSWORD_SECRET)
        .await
        .with_context(|| format!("cannot read secret {namespace}/{PASSWORD_SECRET}"))?;
    let Some(secret) = existing else { return Ok(None) };
    let password = secret.data.as_ref().and_then(|data| data.get("password")).map(|bytes| bytes.0.clone());
    let password = password
        .with_context(|| format!("secret {namespace}/{PASSWORD_SECRET} has no password: delete it, or run down"))?;
    String::from_utf8(password).map(Some).with_context(|| format!("secret {namespace}/{PASSWORD_SECRET} is not text"))
}

/// A new password Secret (labelled as every object is) and its password.
pub fn password_secret(namespace: &str) -> (Secret, String) {
    let password = uuid::Uuid::new_v4().simple().to_string();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(PASSWORD_SECRET.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(PART_OF.0.to_string(), PART_OF.1.to_string())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("password".to_string(), ByteString(password.clone().into_bytes()))])),
        ..Secret::default()
    };
    (secret, password)
}

/// Whether a pod's Ready condition is True: the one test of readiness `up`, `status` and
/// the eks target share.
pub fn is_ready(status: &PodStatus) -> bool {
    status.conditions.iter().flatten().any(|condition| condition.type_ == "Ready" && condition.status == "True")
}

/// Waits until the pod is Ready, asking every `poll` ([`Poller`]: Ctrl-C ends it);
/// `progress` hears the pod's phase when it changes. After `timeout` the error says so
/// and carries the pod's events and its last log lines, which is where the reason is (an
/// image that cannot be pulled, a volume that cannot bind, a server that exits).
pub async fn wait_for_ready(
    client: &Client,
    namespace: &str,
    pod: &str,
    timeout: Duration,
    poll: Duration,
    mut progress: impl FnMut(&str),
) -> Result<()> {
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let poller = Poller::new(Instant::now() + timeout, poll, format!("pod {namespace}/{pod} to be Ready"));
    let mut last_phase = String::new();
    loop {
        let current = pods.get(pod).await.with_context(|| format!("cannot read pod {namespace}/{pod}"))?;
        let status = current.status.unwrap_or_default();
        if is_ready(&status) {
            return Ok(());
        }
        if let Some(stuck) = cannot_start(&status) {
            let why = why_it_failed(client, namespace, pod, CLICKHOUSE).await;
            bail!("pod {namespace}/{pod} cannot start: {stuck}{why}");
        }
        let phase = status.phase.unwrap_or_else(|| "Unknown".to_string());
        if phase != last_phase {
            progress(&format!("pod {namespace}/{pod}: {phase}"));
            last_phase = phase;
        }
        if !poller.next_round().await? {
            let why = why_it_failed(client, namespace, pod, CLICKHOUSE).await;
            bail!("pod {namespace}/{pod} was not Ready after {} s (phase {last_phase}){why}", timeout.as_secs());
        }
    }
}

/// Waiting reasons no amount of waiting cures.
const FATAL_WAITING: [&str; 5] =
    ["ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError", "CrashLoopBackOff"];

/// Why a container of the pod cannot start, when waiting will not cure it (an image that
/// cannot be pulled, a crash loop): say so now rather than at the timeout.
pub(crate) fn cannot_start(status: &PodStatus) -> Option<String> {
    status.container_statuses.iter().flatten().find_map(|container| {
        let waiting = container.state.as_ref()?.waiting.as_ref()?;
        let reason = waiting.reason.as_deref()?;
        FATAL_WAITING.contains(&reason).then(|| {
            format!("container {} is {reason}: {}", container.name, waiting.message.as_deref().unwrap_or("").trim())
        })
    })
}

/// The namespace's events (the pod's, and its volume claim's: a volume that cannot be
/// provisioned says so there) and the last log lines of the pod's `container`, as text
/// after a failed wait; what cannot be read says why, since the wait's error matters more.
pub(crate) async fn why_it_failed(client: &Client, namespace: &str, pod: &str, container: &str) -> String {
    let events = Api::<Event>::namespaced(client.clone(), namespace);
    let listed = events.list(&ListParams::default()).await;
    let events = match listed {
        Ok(list) => list
            .items
            .iter()
            .map(|event| {
                format!(
                    "{} {} {}: {}",
                    event.involved_object.kind.as_deref().unwrap_or("?"),
                    event.type_.as_deref().unwrap_or("?"),
                    event.reason.as_deref().unwrap_or("?"),
                    event.message.as_deref().unwrap_or("").trim()
                )
            })
            .collect::<Vec<_>>()
            .join("\n  "),
        Err(error) => format!("(cannot list them: {error})"),
    };
    let events = if events.is_empty() { "(none)".to_string() } else { events };
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let params =
        LogParams { tail_lines: Some(LOG_LINES), container: Some(container.to_string()), ..LogParams::default() };
    let logs = match pods.logs(pod, &params).await {
        Ok(logs) if logs.trim().is_empty() => "(none)".to_string(),
        Ok(logs) => logs.trim_end().replace('\n', "\n  "),
        // A pod not yet on a node has no log: the events say why.
        Err(kube::Error::Api(status)) => format!("(none: {})", status.message),
        Err(error) => format!("(cannot read it: {error})"),
    };
    format!("\nevents:\n  {events}\nlast {LOG_LINES} log lines:\n  {logs}")
}

/// How `up` ended.
#[derive(Debug)]
pub enum UpOutcome {
    /// `--dry-run`: the checked documents, nothing sent.
    Planned(Vec<Document>),
    /// The pod is Ready; `run` is the Namespace's [`RUN_ANNOTATION`].
    Ready { namespace: String, run: String },
}

/// `cargo xtask eks up`: renders and checks the variant's manifests, then (unless
/// `dry_run`) applies them to the cluster the kubeconfig names and waits for the pod to
/// be Ready, telling `progress` what it does. The password stays in the cluster's Secret.
pub fn up(
    variant: Variant,
    values: &Values,
    timeout: Duration,
    dry_run: bool,
    progress: impl FnMut(&str),
) -> Result<UpOutcome> {
    up_through(&Kubeconfig, variant, values, timeout, dry_run, progress)
}

/// [`up`] on the cluster `connection` reaches (a matrix run's steps; a test's mocked API).
pub fn up_through(
    connection: &impl ClusterConnection,
    variant: Variant,
    values: &Values,
    timeout: Duration,
    dry_run: bool,
    mut progress: impl FnMut(&str),
) -> Result<UpOutcome> {
    let documents = manifests::render(variant, values)?;
    let objects = manifests::parse(&documents)?;
    manifests::check(&objects)?;
    if dry_run {
        return Ok(UpOutcome::Planned(documents));
    }
    connection.on_cluster(|client| async move {
        progress(&format!("applying {} objects ({variant}) with field manager {}", objects.len(), FIELD_MANAGER));
        let applied = apply(&client, &objects).await?;
        progress(&format!("run {}; waiting for the pod to be Ready", applied.run));
        wait_for_ready(&client, &values.namespace, CLICKHOUSE, timeout, Duration::from_secs(2), &mut progress).await?;
        Ok(UpOutcome::Ready { namespace: values.namespace.clone(), run: applied.run })
    })
}

/// How a blocking step reaches a cluster: every command through the kubeconfig
/// ([`Kubeconfig`]); a test through a client of its mocked API server.
pub trait ClusterConnection {
    /// Runs `work` with a client of the cluster, blocking.
    fn on_cluster<T, Work>(&self, work: impl FnOnce(Client) -> Work) -> Result<T>
    where
        Work: Future<Output = Result<T>>;
}

/// The cluster the kubeconfig names ([`on_cluster`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Kubeconfig;

impl ClusterConnection for Kubeconfig {
    fn on_cluster<T, Work>(&self, work: impl FnOnce(Client) -> Work) -> Result<T>
    where
        Work: Future<Output = Result<T>>,
    {
        on_cluster(work)
    }
}

/// Runs `work` with a client for the cluster the kubeconfig names, blocking: the target
/// API is blocking, so the Kubernetes client runs on a runtime of its own. What every
/// blocking `eks` command (up, status, down, baseline) goes through. Every request is
/// bounded, and a stop request ends the work within two seconds ([`Cluster::run`]).
pub fn on_cluster<T, Work>(work: impl FnOnce(Client) -> Work) -> Result<T>
where
    Work: Future<Output = Result<T>>,
{
    let runtime = crate::runtime::blocking_runtime("the Kubernetes client")?;
    runtime.block_on(async {
        // Inside the runtime: the client spawns its request buffer on it.
        connect().await?.run(work).await
    })
}

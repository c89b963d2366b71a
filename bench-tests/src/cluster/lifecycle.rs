//! A deployment once it is up: what it is ([`status`]: its run and whether it was
//! collected, the pod, its node, its volume claim, the volume and its storage class) and
//! taking it away ([`down`]: everything `up` made, refused while its run's results are
//! not collected). What is absent is shown as absent with the reason, never as 0.
//!
//! The steps are async, on kube's client; [`status_blocking`] and [`down_blocking`], what
//! `cargo xtask eks status` and `down` run, drive them as `up` does ([`on_cluster`]).

use std::fmt::{self, Debug, Display};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::deploy::{self, CLICKHOUSE, Poller, delete_if_present, is_ready, on_cluster};
use super::manifests::{PART_OF, is_part_of};
use super::{COLLECTED_ANNOTATION, RUN_ANNOTATION};

/// How often `down` asks whether what it deleted is gone.
const POLL: Duration = Duration::from_secs(2);

/// A part of a deployment, or why it is not there. In JSON: the part itself, or
/// `{"absent": "why"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Presence<T> {
    Present(T),
    Absent { absent: String },
}

impl<T> Presence<T> {
    pub fn absent(why: impl Into<String>) -> Presence<T> {
        Presence::Absent { absent: why.into() }
    }

    fn or_absent(value: Option<T>, why: impl FnOnce() -> String) -> Presence<T> {
        match value {
            Some(value) => Presence::Present(value),
            None => Presence::absent(why()),
        }
    }

    pub fn present(&self) -> Option<&T> {
        match self {
            Presence::Present(value) => Some(value),
            Presence::Absent { .. } => None,
        }
    }

    fn as_ref(&self) -> Presence<&T> {
        match self {
            Presence::Present(value) => Presence::Present(value),
            Presence::Absent { absent } => Presence::Absent { absent: absent.clone() },
        }
    }

    fn map<U>(self, change: impl FnOnce(T) -> U) -> Presence<U> {
        match self {
            Presence::Present(value) => Presence::Present(change(value)),
            Presence::Absent { absent } => Presence::Absent { absent },
        }
    }
}

impl<T: Display> Display for Presence<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Presence::Present(value) => value.fmt(f),
            Presence::Absent { absent } => write!(f, "absent ({absent})"),
        }
    }
}

/// What `cargo xtask eks status` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub namespace: String,
    pub run: Run,
    pub pod: Presence<PodState>,
    pub node: Presence<NodeState>,
    pub claim: Presence<ClaimState>,
}

/// The run `up` started in the namespace and whether `collect` copied its results out.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// [`RUN_ANNOTATION`].
    pub id: Presence<String>,
    /// [`COLLECTED_ANNOTATION`]: the run `collect` last copied out.
    pub collected_run: Presence<String>,
    /// Whether the collected run is this run.
    pub collected: bool,
    /// When it is: what was done on the deployment since that collect (a bench after
    /// it), which a `down` refuses to lose.
    pub used_since_collect: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PodState {
    pub name: String,
    pub phase: String,
    pub ready: bool,
    /// From the ClickHouse container's status.
    pub restarts: Presence<i32>,
    /// The image the container runs (its status), or the one the pod asks for.
    pub image: String,
    /// The image ID the node resolved, with its digest.
    pub image_id: Presence<String>,
    pub node: Presence<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeState {
    pub name: String,
    /// `node.kubernetes.io/instance-type`.
    pub instance_type: Presence<String>,
    /// `kubernetes.io/arch`.
    pub architecture: Presence<String>,
    /// `topology.kubernetes.io/zone`.
    pub zone: Presence<String>,
    /// Capacity, as Kubernetes quantities.
    pub cpu: Presence<String>,
    pub memory: Presence<String>,
}

/// The data's PersistentVolumeClaim, its volume and its storage class.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimState {
    pub name: String,
    pub phase: String,
    pub storage_class: Presence<String>,
    pub capacity: Presence<String>,
    pub volume_name: Presence<String>,
    pub volume: Presence<VolumeState>,
    pub class: Presence<ClassState>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VolumeState {
    pub name: String,
    pub csi_driver: Presence<String>,
    /// The disk behind the volume (an EBS volume id on EKS).
    pub volume_handle: Presence<String>,
}

/// A storage class's provisioner and the EBS CSI driver's parameters.
#[derive(Debug, Clone, Serialize)]
pub struct ClassState {
    pub name: String,
    pub provisioner: String,
    /// `type`, `iops`, `throughput` (MiB/s) and `encrypted`.
    pub volume_type: Presence<String>,
    pub iops: Presence<String>,
    pub throughput: Presence<String>,
    pub encrypted: Presence<String>,
}

/// The deployment in `namespace`; a namespace that does not exist, or that `up` did not
/// make, is one line saying so.
pub async fn status(client: &Client, namespace: &str) -> Result<Status> {
    let object = deployment_namespace(client, namespace).await?;
    let pod = Api::<Pod>::namespaced(client.clone(), namespace)
        .get_opt(CLICKHOUSE)
        .await
        .with_context(|| format!("cannot read pod {namespace}/{CLICKHOUSE}"))?;
    let pod_state = Presence::or_absent(pod.as_ref().map(pod_state), || {
        format!("no pod {CLICKHOUSE} in namespace {namespace}: cargo xtask eks up makes it")
    });
    let node = match &pod_state {
        Presence::Present(PodState { node: Presence::Present(node), .. }) => node_state(client, node).await,
        Presence::Present(PodState { node: Presence::Absent { absent }, .. }) => Presence::absent(absent.clone()),
        Presence::Absent { absent } => Presence::absent(absent.clone()),
    };
    let claims = list_labelled(Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)).await?;
    let claim = match data_volume(pod.as_ref()) {
        DataVolume::Claim(name) => match claims.iter().find(|claim| claim.metadata.name.as_deref() == Some(&name)) {
            Some(claim) => Presence::Present(claim_state(client, claim).await),
            None => Presence::absent(format!("the pod's claim {name} does not exist")),
        },
        DataVolume::EmptyDir => Presence::absent(
            "no PVC: the pod keeps its data in an emptyDir (eks-nvme keeps data on the node's instance store)",
        ),
        DataVolume::Unknown => match claims.first() {
            Some(claim) => Presence::Present(claim_state(client, claim).await),
            None => Presence::absent(format!("no PVC labelled {}={} in namespace {namespace}", PART_OF.0, PART_OF.1)),
        },
    };
    Ok(Status { namespace: namespace.to_string(), run: run_of(&object), pod: pod_state, node, claim })
}

/// The namespace `up` made; the one error line for one that does not exist, or that
/// `up` did not make (`down` must never delete a namespace of someone else's).
async fn deployment_namespace(client: &Client, namespace: &str) -> Result<Namespace> {
    let object = Api::<Namespace>::all(client.clone())
        .get_opt(namespace)
        .await
        .with_context(|| format!("cannot read namespace {namespace}"))?;
    let Some(object) = object else {
        bail!("no chbench deployment in namespace {namespace}: run cargo xtask eks up");
    };
    if !is_part_of(object.metadata.labels.as_ref()) {
        bail!(
            "no chbench deployment in namespace {namespace}: it lacks the label {}: {}, so cargo xtask eks up did \
             not make it",
            PART_OF.0,
            PART_OF.1
        );
    }
    Ok(object)
}

fn run_of(namespace: &Namespace) -> Run {
    let name = namespace.metadata.name.as_deref().unwrap_or("?");
    let annotation = |key: &str| namespace.metadata.annotations.as_ref().and_then(|all| all.get(key)).cloned();
    let id = Presence::or_absent(annotation(RUN_ANNOTATION), || {
        format!("namespace {name} has no {RUN_ANNOTATION} annotation: it was made before up recorded runs")
    });
    let collected_run = Presence::or_absent(annotation(COLLECTED_ANNOTATION), || "never collected".to_string());
    let collected = id.present().is_some() && id.present() == collected_run.present();
    let used_since_collect = if collected { super::collect::down_refusal(namespace) } else { None };
    Run { id, collected_run, collected, used_since_collect }
}

fn pod_state(pod: &Pod) -> PodState {
    let status = pod.status.clone().unwrap_or_default();
    let ready = is_ready(&status);
    let container = status.container_statuses.iter().flatten().find(|container| container.name == CLICKHOUSE);
    let spec_image = pod
        .spec
        .iter()
        .flat_map(|spec| &spec.containers)
        .find(|container| container.name == CLICKHOUSE)
        .and_then(|container| container.image.clone());
    let not_started = || format!("container {CLICKHOUSE} has not started");
    PodState {
        name: pod.metadata.name.clone().unwrap_or_default(),
        phase: status.phase.clone().unwrap_or_else(|| "Unknown".to_string()),
        ready,
        restarts: Presence::or_absent(container.map(|container| container.restart_count), not_started),
        image: container.map(|container| container.image.clone()).or(spec_image).unwrap_or_default(),
        image_id: Presence::or_absent(
            container.map(|container| container.image_id.clone()).filter(|id| !id.is_empty()),
            || format!("container {CLICKHOUSE}'s image is not pulled yet"),
        ),
        node: Presence::or_absent(pod.spec.as_ref().and_then(|spec| spec.node_name.clone()), || {
            "the pod is on no node yet (Pending: cargo xtask eks up shows its events)".to_string()
        }),
    }
}

async fn node_state(client: &Client, name: &str) -> Presence<NodeState> {
    let node = match Api::<Node>::all(client.clone()).get_opt(name).await {
        Ok(Some(node)) => node,
        Ok(None) => return Presence::absent(format!("node {name} is gone")),
        // Reading nodes may be forbidden where reading the namespace is not.
        Err(error) => return Presence::absent(format!("cannot read node {name}: {error}")),
    };
    let label = |key: &str| {
        let value = node.metadata.labels.as_ref().and_then(|labels| labels.get(key)).cloned();
        Presence::or_absent(value, || format!("node {name} has no label {key}"))
    };
    let capacity = |key: &str| {
        let value = node.status.as_ref().and_then(|status| status.capacity.as_ref()?.get(key)).map(|q| q.0.clone());
        Presence::or_absent(value, || format!("node {name} reports no {key} capacity"))
    };
    Presence::Present(NodeState {
        name: name.to_string(),
        instance_type: label("node.kubernetes.io/instance-type"),
        architecture: label("kubernetes.io/arch"),
        zone: label("topology.kubernetes.io/zone"),
        cpu: capacity("cpu"),
        memory: capacity("memory"),
    })
}

/// What holds the data, as the pod's ClickHouse container mounts it.
enum DataVolume {
    Claim(String),
    EmptyDir,
    /// No pod, or one that mounts nothing at [`deploy::DATA_PATH`].
    Unknown,
}

fn data_volume(pod: Option<&Pod>) -> DataVolume {
    let volume = pod.and_then(|pod| pod.spec.as_ref()).and_then(deploy::data_volume);
    match volume {
        Some(volume) if volume.persistent_volume_claim.is_some() => DataVolume::Claim(
            volume.persistent_volume_claim.as_ref().map(|claim| claim.claim_name.clone()).unwrap_or_default(),
        ),
        Some(volume) if volume.empty_dir.is_some() => DataVolume::EmptyDir,
        _ => DataVolume::Unknown,
    }
}

async fn claim_state(client: &Client, claim: &PersistentVolumeClaim) -> ClaimState {
    let name = claim.metadata.name.clone().unwrap_or_default();
    let spec = claim.spec.clone().unwrap_or_default();
    let status = claim.status.clone().unwrap_or_default();
    let unbound =
        || format!("claim {name} is not bound yet (a WaitForFirstConsumer class binds it when the pod is scheduled)");
    let volume = match &spec.volume_name {
        Some(volume) => volume_state(client, volume).await,
        None => Presence::absent(unbound()),
    };
    let class = match &spec.storage_class_name {
        Some(class) => class_state(client, class).await,
        None => Presence::absent(format!("claim {name} names no storage class")),
    };
    ClaimState {
        phase: status.phase.clone().unwrap_or_else(|| "Unknown".to_string()),
        storage_class: Presence::or_absent(spec.storage_class_name.clone(), || {
            format!("claim {name} names no storage class")
        }),
        capacity: Presence::or_absent(
            status.capacity.as_ref().and_then(|capacity| capacity.get("storage")).map(|q| q.0.clone()),
            unbound,
        ),
        volume_name: Presence::or_absent(spec.volume_name.clone(), unbound),
        volume,
        class,
        name,
    }
}

async fn volume_state(client: &Client, name: &str) -> Presence<VolumeState> {
    let volume = match Api::<PersistentVolume>::all(client.clone()).get_opt(name).await {
        Ok(Some(volume)) => volume,
        Ok(None) => return Presence::absent(format!("volume {name} is gone")),
        Err(error) => return Presence::absent(format!("cannot read volume {name}: {error}")),
    };
    let csi = volume.spec.as_ref().and_then(|spec| spec.csi.as_ref());
    let not_csi = || format!("volume {name} is not a CSI volume");
    Presence::Present(VolumeState {
        name: name.to_string(),
        csi_driver: Presence::or_absent(csi.map(|csi| csi.driver.clone()), not_csi),
        volume_handle: Presence::or_absent(csi.map(|csi| csi.volume_handle.clone()), not_csi),
    })
}

async fn class_state(client: &Client, name: &str) -> Presence<ClassState> {
    let class = match Api::<StorageClass>::all(client.clone()).get_opt(name).await {
        Ok(Some(class)) => class,
        Ok(None) => return Presence::absent(format!("storage class {name} is gone")),
        Err(error) => return Presence::absent(format!("cannot read storage class {name}: {error}")),
    };
    let parameter = |key: &str| {
        let value = class.parameters.as_ref().and_then(|parameters| parameters.get(key)).cloned();
        Presence::or_absent(value, || format!("class {name} sets no {key}: its provisioner's default"))
    };
    Presence::Present(ClassState {
        name: name.to_string(),
        provisioner: class.provisioner.clone(),
        volume_type: parameter("type"),
        iops: parameter("iops"),
        throughput: parameter("throughput"),
        encrypted: parameter("encrypted"),
    })
}

/// One line of the status: a label in a column, then its value.
fn row(f: &mut fmt::Formatter<'_>, indent: bool, label: &str, value: impl Display) -> fmt::Result {
    let label = if indent { format!("  {label}") } else { label.to_string() };
    writeln!(f, "{label:<16} {value}")
}

impl Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        row(f, false, "namespace", &self.namespace)?;
        let collected = match (&self.run.collected, &self.run.collected_run) {
            (true, _) => match &self.run.used_since_collect {
                None => "collected".to_string(),
                Some(why) => format!("collected, but {why}"),
            },
            (false, Presence::Present(other)) => {
                format!("not collected (the last collect was of run {other}; cargo xtask eks collect)")
            }
            (false, Presence::Absent { .. }) => "not collected (cargo xtask eks collect)".to_string(),
        };
        row(f, false, "run", format!("{} ({collected})", self.run.id))?;
        match &self.pod {
            Presence::Present(pod) => {
                row(f, false, "pod", &pod.name)?;
                row(f, true, "phase", &pod.phase)?;
                row(f, true, "ready", if pod.ready { "yes" } else { "no" })?;
                row(f, true, "restarts", &pod.restarts)?;
                row(f, true, "image", &pod.image)?;
                row(f, true, "image ID", &pod.image_id)?;
                row(f, true, "node", &pod.node)?;
            }
            absent => row(f, false, "pod", absent.as_ref().map(|pod| &pod.name))?,
        }
        match &self.node {
            Presence::Present(node) => {
                row(f, false, "node", &node.name)?;
                row(f, true, "instance type", &node.instance_type)?;
                row(f, true, "architecture", &node.architecture)?;
                row(f, true, "zone", &node.zone)?;
                row(f, true, "cpu", &node.cpu)?;
                row(f, true, "memory", node.memory.as_ref().map(|memory| readable_memory(memory)))?;
            }
            absent => row(f, false, "node", absent.as_ref().map(|node| &node.name))?,
        }
        let claim = match &self.claim {
            Presence::Present(claim) => claim,
            absent => return row(f, false, "claim", absent.as_ref().map(|claim| &claim.name)),
        };
        row(f, false, "claim", &claim.name)?;
        row(f, true, "phase", &claim.phase)?;
        row(f, true, "storage class", &claim.storage_class)?;
        row(f, true, "capacity", &claim.capacity)?;
        row(f, true, "volume", &claim.volume_name)?;
        match &claim.volume {
            Presence::Present(volume) => {
                row(f, false, "volume", &volume.name)?;
                row(f, true, "CSI driver", &volume.csi_driver)?;
                row(f, true, "volume handle", &volume.volume_handle)?;
            }
            absent => row(f, false, "volume", absent.as_ref().map(|volume| &volume.name))?,
        }
        match &claim.class {
            Presence::Present(class) => {
                row(f, false, "storage class", &class.name)?;
                row(f, true, "provisioner", &class.provisioner)?;
                row(f, true, "type", &class.volume_type)?;
                row(f, true, "iops", &class.iops)?;
                row(f, true, "throughput", class.throughput.as_ref().map(|mibps| format!("{mibps} MiB/s")))?;
                row(f, true, "encrypted", &class.encrypted)?;
            }
            absent => row(f, false, "storage class", absent.as_ref().map(|class| &class.name))?,
        }
        Ok(())
    }
}

/// A node's memory capacity (a Kubernetes quantity, `15896016Ki` as nodes report it) in
/// binary units beside it; a form other than Ki, Mi, Gi or bytes as it is.
fn readable_memory(quantity: &str) -> String {
    let (digits, unit) = match quantity.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => quantity.split_at(at),
        None => (quantity, ""),
    };
    let multiplier: u64 = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => return quantity.to_string(),
    };
    match digits.parse::<u64>().ok().and_then(|count| count.checked_mul(multiplier)) {
        Some(bytes) => format!("{} ({quantity})", crate::units::human_bytes(bytes)),
        None => quantity.to_string(),
    }
}

/// `cargo xtask eks status`, blocking.
pub fn status_blocking(namespace: &str) -> Result<Status> {
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
    let object = deployment_namespace(client, namespace).await?;
    let run = run_of(&object);
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
    on_cluster(|client| async move { down(&client, namespace, force, dry_run, timeout, POLL, progress).await })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_part_says_why_in_text_and_json() {
        let absent: Presence<u32> = Presence::absent("no PVC: x");
        assert_eq!(absent.to_string(), "absent (no PVC: x)");
        assert_eq!(serde_json::to_string(&absent).unwrap(), r#"{"absent":"no PVC: x"}"#);
        assert_eq!(serde_json::to_string(&Presence::Present(3)).unwrap(), "3");
    }

    #[test]
    fn a_run_is_collected_only_when_the_collected_run_is_this_run() {
        let namespace = |annotations: &[(&str, &str)]| Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some("chbench".into()),
                annotations: Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(run_of(&namespace(&[(RUN_ANNOTATION, "a"), (COLLECTED_ANNOTATION, "a")])).collected);
        assert!(!run_of(&namespace(&[(RUN_ANNOTATION, "b"), (COLLECTED_ANNOTATION, "a")])).collected);
        assert!(!run_of(&namespace(&[(RUN_ANNOTATION, "b")])).collected);
        let no_run = run_of(&namespace(&[]));
        assert!(!no_run.collected);
        assert!(refusal("chbench", &no_run).ends_with("cargo xtask eks collect first, or down --force"));
        // Collected, then used by a bench: status says so, as down's refusal does.
        let used_after = run_of(&namespace(&[
            (RUN_ANNOTATION, "a"),
            (COLLECTED_ANNOTATION, "a"),
            (crate::cluster::COLLECTED_AT_ANNOTATION, "2026-11-30T10:00:00Z"),
            (crate::cluster::LAST_USED_ANNOTATION, "2026-11-30T11:00:00Z"),
        ]));
        assert!(used_after.collected);
        let why = used_after.used_since_collect.expect("a bench after the collect");
        assert!(why.starts_with("a bench used the deployment in namespace chbench at 2026-11-30T11:00:00Z"), "{why}");
        let used_before = run_of(&namespace(&[
            (RUN_ANNOTATION, "a"),
            (COLLECTED_ANNOTATION, "a"),
            (crate::cluster::COLLECTED_AT_ANNOTATION, "2026-11-30T12:00:00Z"),
            (crate::cluster::LAST_USED_ANNOTATION, "2026-11-30T11:00:00Z"),
        ]));
        assert_eq!(used_before.used_since_collect, None);
    }
}

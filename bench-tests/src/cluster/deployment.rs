//! One ClickHouse deployment as the cluster has it, read once ([`read`]): its Namespace
//! (the run `up` stamped on it and what `collect` recorded), the ClickHouse pod, the
//! pod's node, the volume ClickHouse's data is on and, when that is a claim, the claim,
//! the PersistentVolume bound to it and the volume's StorageClass. Every part is a
//! [`Presence`]: its facts, or why it is absent (never a 0 or an empty name).
//!
//! `status` shows all of it (its [`Display`]); `collect` records it and the storage
//! baseline measures storage like it, each turning the absence of a part it cannot do
//! without into an error ([`Presence::required`]). `down` reads the Namespace alone
//! ([`read_namespace`]) and the eks target the pod alone ([`read_pod`]), the same way.
//!
//! Reading the Namespace or the pod failing is an error (nothing can be said without
//! them); a part after them that cannot be read is absent with the API server's words,
//! since reading nodes, volumes or classes may be forbidden where the namespace's own
//! objects are not.

use std::fmt::{self, Display};

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, PodSpec, Volume};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::Client;
use kube::api::Api;
use serde::Serialize;

use super::deploy::{CLICKHOUSE, DATA_PATH, is_ready};
use super::manifests::{PART_OF, is_part_of};
use super::{COLLECTED_ANNOTATION, COLLECTED_AT_ANNOTATION, LAST_USED_ANNOTATION, RUN_ANNOTATION, eks_command};

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

    pub fn or_absent(value: Option<T>, why: impl FnOnce() -> String) -> Presence<T> {
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

    pub fn as_ref(&self) -> Presence<&T> {
        match self {
            Presence::Present(value) => Presence::Present(value),
            Presence::Absent { absent } => Presence::Absent { absent: absent.clone() },
        }
    }

    pub fn map<U>(self, change: impl FnOnce(T) -> U) -> Presence<U> {
        match self {
            Presence::Present(value) => Presence::Present(change(value)),
            Presence::Absent { absent } => Presence::Absent { absent },
        }
    }

    /// The part, for a caller that cannot do without it; absent, an error whose context
    /// is `doing` (what the caller was doing, and where) and whose cause is the reason,
    /// which names the part and what to do about it.
    pub fn required<Doing>(self, doing: impl FnOnce() -> Doing) -> Result<T>
    where
        Doing: Display + Send + Sync + 'static,
    {
        match self {
            Presence::Present(value) => Ok(value),
            Presence::Absent { absent } => Err(anyhow::anyhow!(absent).context(doing())),
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

/// A deployment in a namespace, part by part, as [`read`] found it. A part that needs
/// another (the node needs the pod, the volume its claim) carries the other's reason
/// when the other is absent.
#[derive(Debug, Clone, Serialize)]
pub struct Deployment {
    pub namespace: Presence<NamespaceFacts>,
    pub pod: Presence<PodFacts>,
    pub node: Presence<NodeFacts>,
    /// The volume the pod's ClickHouse container mounts at [`DATA_PATH`].
    pub data_volume: Presence<DataVolume>,
    /// The data's PersistentVolumeClaim (none for an emptyDir: eks-nvme).
    pub claim: Presence<ClaimFacts>,
    /// The PersistentVolume bound to the claim.
    pub volume: Presence<VolumeFacts>,
    /// The volume's StorageClass (the claim's, before the claim is bound).
    pub class: Presence<ClassFacts>,
}

/// The Namespace `up` made: its run, and whether `collect` copied the run out.
#[derive(Debug, Clone, Serialize)]
pub struct NamespaceFacts {
    pub name: String,
    /// Its creationTimestamp: the deployment's runs are the ones after it.
    pub created_at: Presence<jiff::Timestamp>,
    pub run: Run,
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PodFacts {
    pub name: String,
    pub phase: String,
    pub ready: bool,
    /// From the ClickHouse container's status.
    pub restarts: Presence<i32>,
    /// The image the pod's ClickHouse container asks for (its spec).
    pub image: Presence<String>,
    /// The image the node runs (`containerStatuses[].imageID`), by digest.
    pub image_id: Presence<String>,
    /// `spec.nodeName`.
    pub node: Presence<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeFacts {
    pub name: String,
    /// `node.kubernetes.io/instance-type` (none on kind).
    pub instance_type: Presence<String>,
    /// `kubernetes.io/arch`.
    pub architecture: Presence<String>,
    /// `topology.kubernetes.io/zone`.
    pub zone: Presence<String>,
    /// Capacity, as Kubernetes quantities.
    pub cpu: Presence<String>,
    pub memory: Presence<String>,
}

/// What ClickHouse's data is on, as the pod mounts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DataVolume {
    /// A PersistentVolumeClaim (the eks-gp3 and kind variants), by name.
    Claim { claim: String },
    /// An emptyDir: on eks-nvme, the node's instance-store NVMe. No limit when `None`.
    EmptyDir { size_limit: Option<String> },
    /// Another volume source, by its field's name (`hostPath`, `configMap`, ...).
    Other { source: String },
}

impl Display for DataVolume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataVolume::Claim { claim } => write!(f, "claim {claim}"),
            DataVolume::EmptyDir { size_limit: Some(limit) } => write!(f, "emptyDir (size limit {limit})"),
            DataVolume::EmptyDir { size_limit: None } => write!(f, "emptyDir (no size limit)"),
            DataVolume::Other { source } => write!(f, "{source}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimFacts {
    pub name: String,
    pub phase: String,
    /// The class the claim names (`spec.storageClassName`).
    pub storage_class: Presence<String>,
    /// The size it asks for (`spec.resources.requests.storage`), as Kubernetes writes it.
    pub requested: Presence<String>,
    /// The size it got (`status.capacity.storage`), once bound.
    pub capacity: Presence<String>,
    /// The PersistentVolume it is bound to.
    pub volume_name: Presence<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VolumeFacts {
    pub name: String,
    /// `spec.capacity.storage`, as Kubernetes writes it (100Gi).
    pub size: Presence<String>,
    /// The class the volume was made by.
    pub storage_class: Presence<String>,
    /// `Delete` (the disk goes with the claim) or `Retain`.
    pub reclaim_policy: Presence<String>,
    pub csi_driver: Presence<String>,
    /// The disk behind the volume (an EBS volume id on EKS).
    pub volume_handle: Presence<String>,
}

/// A storage class's provisioner and the EBS CSI driver's parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassFacts {
    pub name: String,
    pub provisioner: String,
    /// `type`, `iops`, `throughput` (MiB/s) and `encrypted`.
    pub volume_type: Presence<String>,
    pub iops: Presence<String>,
    pub throughput: Presence<String>,
    pub encrypted: Presence<String>,
}

/// Reads the deployment in `namespace`, in this order: the Namespace, the pod, its node,
/// then (when the data is on a claim) the claim, its volume and the class. A part whose
/// prerequisite is absent is not asked for: a namespace `up` did not make is read no
/// further.
pub async fn read(client: &Client, namespace: &str) -> Result<Deployment> {
    let namespace_part = read_namespace(client, namespace).await?;
    if let Presence::Absent { absent } = &namespace_part {
        return Ok(Deployment::absent_after(namespace_part.clone(), Presence::absent(absent.clone()), absent));
    }
    let Some(pod) = get_pod(client, namespace).await? else {
        let why = no_pod(namespace);
        return Ok(Deployment::absent_after(namespace_part, Presence::absent(why.clone()), &why));
    };
    let pod_part = pod_facts(namespace, &pod);
    let node = match &pod_part.node {
        Presence::Present(name) => read_node(client, name).await,
        Presence::Absent { absent } => Presence::absent(absent.clone()),
    };
    let data_volume = data_volume_of(namespace, &pod);
    let claim = match &data_volume {
        Presence::Present(DataVolume::Claim { claim }) => read_claim(client, namespace, claim).await,
        Presence::Present(DataVolume::EmptyDir { .. }) => Presence::absent(
            "no PVC: the pod keeps its data in an emptyDir (eks-nvme keeps data on the node's instance store)",
        ),
        Presence::Present(DataVolume::Other { source }) => {
            Presence::absent(format!("no PVC: the pod keeps its data in a {source} volume"))
        }
        Presence::Absent { absent } => Presence::absent(absent.clone()),
    };
    let volume = match claim.as_ref().map(|claim| claim.volume_name.clone()) {
        Presence::Present(Presence::Present(name)) => read_volume(client, &name).await,
        Presence::Present(Presence::Absent { absent }) | Presence::Absent { absent } => Presence::absent(absent),
    };
    // The class the volume was made by; before it is bound, the one the claim names.
    let class_name = match (volume.present().and_then(|volume| volume.storage_class.present()), &claim) {
        (Some(name), _) => Presence::Present(name.clone()),
        (None, Presence::Present(claim)) => claim.storage_class.clone(),
        (None, Presence::Absent { absent }) => Presence::absent(absent.clone()),
    };
    let class = match class_name {
        Presence::Present(name) => read_class(client, &name).await,
        Presence::Absent { absent } => Presence::absent(absent),
    };
    Ok(Deployment {
        namespace: namespace_part,
        pod: Presence::Present(pod_part),
        node,
        data_volume,
        claim,
        volume,
        class,
    })
}

impl Deployment {
    /// A deployment of which only the namespace (and maybe the pod) could be told: every
    /// later part absent for `why`.
    fn absent_after(namespace: Presence<NamespaceFacts>, pod: Presence<PodFacts>, why: &str) -> Deployment {
        Deployment {
            namespace,
            pod,
            node: Presence::absent(why),
            data_volume: Presence::absent(why),
            claim: Presence::absent(why),
            volume: Presence::absent(why),
            class: Presence::absent(why),
        }
    }
}

/// The Namespace `up` made; one that does not exist, or that `up` did not make (it lacks
/// the part-of label: `down` must never delete someone else's), is absent saying so.
pub async fn read_namespace(client: &Client, namespace: &str) -> Result<Presence<NamespaceFacts>> {
    let object = Api::<Namespace>::all(client.clone())
        .get_opt(namespace)
        .await
        .with_context(|| format!("cannot read namespace {namespace}"))?;
    let Some(object) = object else {
        return Ok(Presence::absent(format!(
            "namespace {namespace} does not exist ({} makes it)",
            eks_command("up", namespace)
        )));
    };
    if !is_part_of(object.metadata.labels.as_ref()) {
        return Ok(Presence::absent(format!(
            "namespace {namespace} lacks the label {}: {}, so cargo xtask eks up did not make it",
            PART_OF.0, PART_OF.1
        )));
    }
    Ok(Presence::Present(namespace_facts(&object)))
}

pub(crate) fn namespace_facts(namespace: &Namespace) -> NamespaceFacts {
    let name = namespace.metadata.name.clone().unwrap_or_default();
    // k8s-openapi's jiff is another major version than the one results use.
    let created_at = namespace.metadata.creation_timestamp.as_ref().map(|created| {
        jiff::Timestamp::new(created.0.as_second(), created.0.subsec_nanosecond())
            .map_err(|_| format!("namespace {name}'s creationTimestamp is out of range"))
    });
    let created_at = match created_at {
        Some(Ok(at)) => Presence::Present(at),
        Some(Err(why)) => Presence::absent(why),
        None => Presence::absent(format!("namespace {name} has no creationTimestamp")),
    };
    NamespaceFacts { run: run_of(&name, namespace), created_at, name }
}

fn run_of(name: &str, namespace: &Namespace) -> Run {
    let annotation = |key: &str| namespace.metadata.annotations.as_ref().and_then(|all| all.get(key)).cloned();
    let id = Presence::or_absent(annotation(RUN_ANNOTATION), || {
        format!(
            "namespace {name} has no {RUN_ANNOTATION} annotation (an older up made it; {} again gives it one)",
            eks_command("up", name)
        )
    });
    let collected_run = Presence::or_absent(annotation(COLLECTED_ANNOTATION), || "never collected".to_string());
    let collected = id.present().is_some() && id.present() == collected_run.present();
    let used_since_collect = if collected { used_since_collect(name, &annotation) } else { None };
    Run { id, collected_run, collected, used_since_collect }
}

/// Why `down` (without `--force`) must refuse although the collected run is the
/// Namespace's run: a bench used the deployment after the collect started, or the
/// collect's time is not recorded. `None` when the last collect covers every use.
fn used_since_collect(name: &str, annotation: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let again = format!("run {} again, or down --force", eks_command("collect", name));
    let time = |key: &str| -> std::result::Result<Option<jiff::Timestamp>, String> {
        match annotation(key) {
            None => Ok(None),
            Some(text) => text.parse().map(Some).map_err(|error| {
                format!("namespace {name}'s annotation {key} is not an RFC 3339 time ({text:?}: {error}): {again}")
            }),
        }
    };
    let collected_at = match time(COLLECTED_AT_ANNOTATION) {
        Ok(Some(at)) => at,
        Ok(None) => {
            return Some(format!(
                "namespace {name} records no {COLLECTED_AT_ANNOTATION} (an older collect marked it), so results \
                 written since may not be collected: {again}"
            ));
        }
        Err(why) => return Some(why),
    };
    match time(LAST_USED_ANNOTATION) {
        Ok(Some(used)) if used > collected_at => Some(format!(
            "a bench used the deployment in namespace {name} at {used}, after the last collect at {collected_at}: \
             {again}"
        )),
        Ok(_) => None,
        Err(why) => Some(why),
    }
}

/// The ClickHouse pod in `namespace`, or why there is none.
pub async fn read_pod(client: &Client, namespace: &str) -> Result<Presence<PodFacts>> {
    let pod = get_pod(client, namespace).await?;
    Ok(Presence::or_absent(pod.map(|pod| pod_facts(namespace, &pod)), || no_pod(namespace)))
}

async fn get_pod(client: &Client, namespace: &str) -> Result<Option<Pod>> {
    Api::<Pod>::namespaced(client.clone(), namespace)
        .get_opt(CLICKHOUSE)
        .await
        .with_context(|| format!("cannot read pod {namespace}/{CLICKHOUSE}"))
}

fn no_pod(namespace: &str) -> String {
    format!("no pod {namespace}/{CLICKHOUSE} ({} makes it)", eks_command("up", namespace))
}

fn pod_facts(namespace: &str, pod: &Pod) -> PodFacts {
    let status = pod.status.clone().unwrap_or_default();
    let container = status.container_statuses.iter().flatten().find(|container| container.name == CLICKHOUSE);
    let image = pod
        .spec
        .iter()
        .flat_map(|spec| &spec.containers)
        .find(|container| container.name == CLICKHOUSE)
        .and_then(|container| container.image.clone());
    let shown = format!("pod {namespace}/{CLICKHOUSE}");
    let not_started = || format!("container {CLICKHOUSE} of {shown} has not started");
    PodFacts {
        name: pod.metadata.name.clone().unwrap_or_else(|| CLICKHOUSE.to_string()),
        phase: status.phase.clone().unwrap_or_else(|| "Unknown".to_string()),
        ready: is_ready(&status),
        restarts: Presence::or_absent(container.map(|container| container.restart_count), not_started),
        image: Presence::or_absent(image, || format!("{shown} has no container {CLICKHOUSE} with an image")),
        image_id: Presence::or_absent(
            container.map(|container| container.image_id.clone()).filter(|id| !id.is_empty()),
            || format!("the image of {shown} is not pulled yet"),
        ),
        node: Presence::or_absent(pod.spec.as_ref().and_then(|spec| spec.node_name.clone()), || {
            format!("{shown} is on no node yet (Pending: cargo xtask eks up shows its events)")
        }),
    }
}

/// The pod volume ClickHouse's container mounts at [`DATA_PATH`]: what holds the data.
fn data_mount(spec: &PodSpec) -> Option<&Volume> {
    let mount = spec
        .containers
        .iter()
        .filter(|container| container.name == CLICKHOUSE)
        .flat_map(|container| container.volume_mounts.iter().flatten())
        .find(|mount| mount.mount_path.trim_end_matches('/') == DATA_PATH)?;
    spec.volumes.iter().flatten().find(|volume| volume.name == mount.name)
}

fn data_volume_of(namespace: &str, pod: &Pod) -> Presence<DataVolume> {
    let Some(volume) = pod.spec.as_ref().and_then(data_mount) else {
        return Presence::absent(format!(
            "pod {namespace}/{CLICKHOUSE} mounts no volume at {DATA_PATH}, where the manifests keep its data (it is \
             on the container's own filesystem)"
        ));
    };
    if let Some(claim) = &volume.persistent_volume_claim {
        return Presence::Present(DataVolume::Claim { claim: claim.claim_name.clone() });
    }
    if let Some(empty_dir) = &volume.empty_dir {
        let size_limit = empty_dir.size_limit.as_ref().map(|quantity| quantity.0.clone());
        return Presence::Present(DataVolume::EmptyDir { size_limit });
    }
    Presence::Present(DataVolume::Other { source: volume_source(volume) })
}

/// The name of the volume source a pod volume uses (`hostPath`, `configMap`, ...).
fn volume_source(volume: &Volume) -> String {
    serde_json::to_value(volume)
        .ok()
        .and_then(|value| value.as_object()?.keys().find(|key| key.as_str() != "name").cloned())
        .unwrap_or_else(|| "unknown".to_string())
}

async fn read_node(client: &Client, name: &str) -> Presence<NodeFacts> {
    let node = match Api::<Node>::all(client.clone()).get_opt(name).await {
        Ok(Some(node)) => node,
        Ok(None) => return Presence::absent(format!("node {name} is gone")),
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
    Presence::Present(NodeFacts {
        name: name.to_string(),
        instance_type: label("node.kubernetes.io/instance-type"),
        architecture: label("kubernetes.io/arch"),
        zone: label("topology.kubernetes.io/zone"),
        cpu: capacity("cpu"),
        memory: capacity("memory"),
    })
}

async fn read_claim(client: &Client, namespace: &str, name: &str) -> Presence<ClaimFacts> {
    let shown = format!("claim {namespace}/{name}");
    let claim = match Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace).get_opt(name).await {
        Ok(Some(claim)) => claim,
        Ok(None) => return Presence::absent(format!("the pod's {shown} does not exist")),
        Err(error) => return Presence::absent(format!("cannot read {shown}: {error}")),
    };
    let spec = claim.spec.unwrap_or_default();
    let status = claim.status.unwrap_or_default();
    let unbound =
        || format!("{shown} is not bound yet (a WaitForFirstConsumer class binds it when the pod is scheduled)");
    let requested = spec.resources.and_then(|resources| resources.requests?.remove("storage")).map(|q| q.0);
    Presence::Present(ClaimFacts {
        name: name.to_string(),
        phase: status.phase.unwrap_or_else(|| "Unknown".to_string()),
        // "" asks for no class at all (a volume bound by hand).
        storage_class: Presence::or_absent(spec.storage_class_name.filter(|class| !class.is_empty()), || {
            format!("{shown} names no storage class")
        }),
        requested: Presence::or_absent(requested, || format!("{shown} requests no storage size")),
        capacity: Presence::or_absent(
            status.capacity.and_then(|mut capacity| capacity.remove("storage")).map(|q| q.0),
            unbound,
        ),
        volume_name: Presence::or_absent(spec.volume_name.filter(|volume| !volume.is_empty()), unbound),
    })
}

async fn read_volume(client: &Client, name: &str) -> Presence<VolumeFacts> {
    let volume = match Api::<PersistentVolume>::all(client.clone()).get_opt(name).await {
        Ok(Some(volume)) => volume,
        Ok(None) => return Presence::absent(format!("volume {name} is gone")),
        Err(error) => return Presence::absent(format!("cannot read volume {name}: {error}")),
    };
    let spec = volume.spec.unwrap_or_default();
    let csi = spec.csi.as_ref();
    let not_csi = || format!("volume {name} is not a CSI volume");
    Presence::Present(VolumeFacts {
        name: name.to_string(),
        size: Presence::or_absent(
            spec.capacity.as_ref().and_then(|capacity| capacity.get("storage")).map(|q| q.0.clone()),
            || format!("volume {name} states no capacity"),
        ),
        storage_class: Presence::or_absent(spec.storage_class_name.clone().filter(|class| !class.is_empty()), || {
            format!("volume {name} belongs to no storage class")
        }),
        reclaim_policy: Presence::or_absent(spec.persistent_volume_reclaim_policy.clone(), || {
            format!("volume {name} states no reclaim policy")
        }),
        csi_driver: Presence::or_absent(csi.map(|csi| csi.driver.clone()), not_csi),
        volume_handle: Presence::or_absent(csi.map(|csi| csi.volume_handle.clone()), not_csi),
    })
}

async fn read_class(client: &Client, name: &str) -> Presence<ClassFacts> {
    let class = match Api::<StorageClass>::all(client.clone()).get_opt(name).await {
        Ok(Some(class)) => class,
        Ok(None) => return Presence::absent(format!("storage class {name} is gone")),
        Err(error) => return Presence::absent(format!("cannot read storage class {name}: {error}")),
    };
    let parameter = |key: &str| {
        let value = class.parameters.as_ref().and_then(|parameters| parameters.get(key)).cloned();
        Presence::or_absent(value, || format!("class {name} sets no {key}: its provisioner's default"))
    };
    Presence::Present(ClassFacts {
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

/// What `cargo xtask eks status` shows: a row per part, its facts indented below it.
impl Display for Deployment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let namespace = match &self.namespace {
            Presence::Present(namespace) => namespace,
            absent => return row(f, false, "namespace", absent.as_ref().map(|namespace| &namespace.name)),
        };
        row(f, false, "namespace", &namespace.name)?;
        let run = &namespace.run;
        let collected = match (&run.collected, &run.collected_run) {
            (true, _) => match &run.used_since_collect {
                None => "collected".to_string(),
                Some(why) => format!("collected, but {why}"),
            },
            (false, Presence::Present(other)) => {
                format!("not collected (the last collect was of run {other}; cargo xtask eks collect)")
            }
            (false, Presence::Absent { .. }) => "not collected (cargo xtask eks collect)".to_string(),
        };
        row(f, false, "run", format!("{} ({collected})", run.id))?;
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
        row(f, false, "data volume", &self.data_volume)?;
        // Without a claim the volume and class are absent for the same reason: said once.
        let claim = match &self.claim {
            Presence::Present(claim) => claim,
            absent => return row(f, false, "claim", absent.as_ref().map(|claim| &claim.name)),
        };
        row(f, false, "claim", &claim.name)?;
        row(f, true, "phase", &claim.phase)?;
        row(f, true, "storage class", &claim.storage_class)?;
        row(f, true, "requested", &claim.requested)?;
        row(f, true, "capacity", &claim.capacity)?;
        row(f, true, "volume", &claim.volume_name)?;
        match &self.volume {
            Presence::Present(volume) => {
                row(f, false, "volume", &volume.name)?;
                row(f, true, "size", &volume.size)?;
                row(f, true, "reclaim policy", &volume.reclaim_policy)?;
                row(f, true, "CSI driver", &volume.csi_driver)?;
                row(f, true, "volume handle", &volume.volume_handle)?;
            }
            absent => row(f, false, "volume", absent.as_ref().map(|volume| &volume.name))?,
        }
        match &self.class {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_part_says_why_in_text_and_json_and_as_an_error() {
        let absent: Presence<u32> = Presence::absent("no PVC: x");
        assert_eq!(absent.to_string(), "absent (no PVC: x)");
        assert_eq!(serde_json::to_string(&absent).unwrap(), r#"{"absent":"no PVC: x"}"#);
        assert_eq!(serde_json::to_string(&Presence::Present(3)).unwrap(), "3");
        let error = absent.required(|| "cannot collect the deployment in namespace chbench".to_string()).unwrap_err();
        assert_eq!(format!("{error:#}"), "cannot collect the deployment in namespace chbench: no PVC: x");
        assert_eq!(Presence::Present(3).required(String::new).unwrap(), 3);
    }

    fn namespace(annotations: &[(&str, &str)]) -> Namespace {
        Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some("chbench".into()),
                annotations: Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_run_is_collected_only_when_the_collected_run_is_this_run() {
        let run = |annotations: &[(&str, &str)]| namespace_facts(&namespace(annotations)).run;
        assert!(run(&[(RUN_ANNOTATION, "a"), (COLLECTED_ANNOTATION, "a")]).collected);
        assert!(!run(&[(RUN_ANNOTATION, "b"), (COLLECTED_ANNOTATION, "a")]).collected);
        assert!(!run(&[(RUN_ANNOTATION, "b")]).collected);
        assert!(!run(&[]).collected);
        // Collected, then used by a bench: status says so, as down's refusal does.
        let used_after = run(&[
            (RUN_ANNOTATION, "a"),
            (COLLECTED_ANNOTATION, "a"),
            (COLLECTED_AT_ANNOTATION, "2026-11-30T10:00:00Z"),
            (LAST_USED_ANNOTATION, "2026-11-30T11:00:00Z"),
        ]);
        assert!(used_after.collected);
        let why = used_after.used_since_collect.expect("a bench after the collect");
        assert!(why.starts_with("a bench used the deployment in namespace chbench at 2026-11-30T11:00:00Z"), "{why}");
        let used_before = run(&[
            (RUN_ANNOTATION, "a"),
            (COLLECTED_ANNOTATION, "a"),
            (COLLECTED_AT_ANNOTATION, "2026-11-30T12:00:00Z"),
            (LAST_USED_ANNOTATION, "2026-11-30T11:00:00Z"),
        ]);
        assert_eq!(used_before.used_since_collect, None);
        let unreadable =
            run(&[(RUN_ANNOTATION, "a"), (COLLECTED_ANNOTATION, "a"), (COLLECTED_AT_ANNOTATION, "yesterday")]);
        let why = unreadable.used_since_collect.expect("an unreadable time");
        assert!(
            why.starts_with("namespace chbench's annotation chbench.dev/collected-at is not an RFC 3339 time"),
            "{why}"
        );
    }

    #[test]
    fn a_namespace_without_its_creation_time_says_so() {
        let facts = namespace_facts(&namespace(&[]));
        assert_eq!(facts.created_at, Presence::absent("namespace chbench has no creationTimestamp"));
        assert_eq!(
            facts.run.id,
            Presence::absent(
                "namespace chbench has no chbench.dev/run annotation (an older up made it; cargo xtask eks up again \
                 gives it one)"
            )
        );
    }
}

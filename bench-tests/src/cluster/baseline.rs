//! The storage baseline on a cluster: fio, as a Job on the ClickHouse pod's node, on a
//! volume like ClickHouse's (the variant's `fio.yaml`), its JSON report read from the
//! pod's log, parsed ([`crate::storage_baseline`]) and kept in the namespace as the
//! ConfigMap [`RESULT_CONFIG_MAP`], where the `eks` target reads it
//! ([`read_baseline`]) for every results bundle, with the node it ran on. The baseline
//! kept before is deleted when a new one starts, so that a failed one leaves none rather
//! than an older one, maybe of another node. The Job, its volume and its job file are
//! removed once the report is read, whether fio succeeded or not (Ctrl-C included).
//!
//! The variant and its values are read from the running deployment
//! ([`deployment::read`]: the pod's data volume, its claim, the StorageClass, the node's
//! instance type), so the baseline always measures the storage ClickHouse has, whatever
//! flags `up` was given.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::Api;
use tokio::time::Instant;

use super::deploy::{CLICKHOUSE, apply_object, delete_if_present, on_cluster};
use super::deployment::{self, DataVolume, Deployment, Presence};
use super::jobs::{JobName, Wait, job_log, remove, wait_for_job};
use super::manifests::{self, Object, PART_OF, Values, Variant};
use crate::storage_baseline::{Device, StorageBaseline, parse_fio_output};

/// The fio Job, as `fio.yaml` names it.
pub const JOB: &str = "chbench-storage-baseline";
/// The Job, its container (whose log is fio's report) and what it is for.
const FIO_JOB: JobName = JobName { name: JOB, container: "fio", doing: "storage baseline" };
/// The ConfigMap holding the last baseline measured in a namespace.
pub const RESULT_CONFIG_MAP: &str = "chbench-storage-baseline";
/// Its key: the [`StorageBaseline`] as JSON.
pub const RESULT_KEY: &str = "baseline.json";
/// How long `up` and `baseline` wait for fio by default: a volume to provision and
/// attach, the image to pull, a 2 GiB file to lay out and two 17-second jobs.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// `cargo xtask eks baseline`, and `up` after the pod is Ready: measures the storage of
/// the deployment in `namespace` and keeps the result there. Blocking: the client runs
/// on a runtime of its own.
pub fn run(namespace: &str, timeout: Duration, mut progress: impl FnMut(&str)) -> Result<StorageBaseline> {
    on_cluster(
        |client| async move { measure(&client, namespace, timeout, Duration::from_secs(2), &mut progress).await },
    )
}

/// Runs fio on a volume like ClickHouse's, on its node, and stores what it measured in
/// [`RESULT_CONFIG_MAP`] (deleting the one there first); asks how the Job does every
/// `poll`, and gives up after `timeout`. A Job that fails, or does not finish in time, is
/// an error carrying its pod's events and log. Whatever happens once the Job was applied
/// (Ctrl-C too), its objects are removed.
pub async fn measure(
    client: &Client,
    namespace: &str,
    timeout: Duration,
    poll: Duration,
    mut progress: impl FnMut(&str),
) -> Result<StorageBaseline> {
    let deployment = deployment_storage(client, namespace).await?;
    let documents = manifests::render_storage_baseline(
        deployment.variant,
        &deployment.values,
        &deployment.node,
        deployment.storage_class.as_deref(),
    )?;
    let objects = manifests::parse(&documents)?;
    manifests::check_storage_baseline(&objects)?;
    // From here the last baseline is no longer this deployment's: if this one fails, the
    // target finds none rather than numbers of another node or volume.
    let results = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    delete_if_present(&results, RESULT_CONFIG_MAP, &format!("configmap {namespace}/{RESULT_CONFIG_MAP}")).await?;
    // A run killed before its clean-up leaves a Job that cannot be applied again (its
    // pod template may differ, and a finished Job would be read as this run's).
    remove(client, namespace, &objects, Wait::UntilGone { deadline: Instant::now() + timeout, poll }).await?;
    progress(&format!(
        "storage baseline: fio on node {} ({}: {})",
        deployment.node, deployment.variant, deployment.description
    ));
    let measured = async {
        for object in &objects {
            apply_object(client, object).await?;
        }
        let pod = wait_for_job(client, namespace, &FIO_JOB, timeout, poll, &mut progress).await?.name;
        let log = job_log(client, namespace, &FIO_JOB, &pod).await?;
        let device = Device {
            variant: deployment.variant.to_string(),
            description: deployment.description.clone(),
            node: deployment.node.clone(),
            instance_type: deployment.instance_type.clone(),
        };
        let baseline = parse_fio_output(&log, device).with_context(|| format!("pod {namespace}/{pod}"))?;
        store(client, namespace, &baseline).await?;
        Ok::<_, anyhow::Error>(baseline)
    }
    .await;
    let removed = remove(client, namespace, &objects, Wait::No).await;
    match (measured, removed) {
        (Ok(baseline), Ok(())) => Ok(baseline),
        (Ok(_), Err(error)) => {
            Err(error.context(format!("the storage baseline is stored in {namespace}/{RESULT_CONFIG_MAP}, but")))
        }
        (Err(error), Ok(())) => Err(error),
        (Err(error), Err(removal)) => {
            // The measurement's error is the one to report; the leftovers are said too.
            progress(&format!("{removal:#}"));
            Err(error)
        }
    }
}

/// The last baseline measured in `namespace`, for the `eks` target; `None` when none
/// was. A ConfigMap that does not hold one is an error naming it.
pub async fn read_baseline(client: &Client, namespace: &str) -> Result<Option<StorageBaseline>> {
    let maps = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let name = format!("{namespace}/{RESULT_CONFIG_MAP}");
    let Some(map) = maps.get_opt(RESULT_CONFIG_MAP).await.with_context(|| format!("cannot read configmap {name}"))?
    else {
        return Ok(None);
    };
    let text = map
        .data
        .as_ref()
        .and_then(|data| data.get(RESULT_KEY))
        .with_context(|| format!("configmap {name} has no {RESULT_KEY}: run `cargo xtask eks baseline` again"))?;
    let baseline = serde_json::from_str(text).with_context(|| {
        format!("configmap {name} does not hold a storage baseline: run `cargo xtask eks baseline` again")
    })?;
    Ok(Some(baseline))
}

/// The ConfigMap keeping `baseline` in `namespace`.
pub fn result_config_map(namespace: &str, baseline: &StorageBaseline) -> Result<ConfigMap> {
    let json = serde_json::to_string_pretty(baseline).context("cannot serialise the storage baseline")?;
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(RESULT_CONFIG_MAP.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(PART_OF.0.to_string(), PART_OF.1.to_string())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(RESULT_KEY.to_string(), json)])),
        ..ConfigMap::default()
    })
}

async fn store(client: &Client, namespace: &str, baseline: &StorageBaseline) -> Result<()> {
    apply_object(client, &Object::ConfigMap(Box::new(result_config_map(namespace, baseline)?))).await
}

/// The storage of the deployment in a namespace, as its pod, claim and class say.
struct DeploymentStorage {
    variant: Variant,
    values: Values,
    /// The node the ClickHouse pod runs on, and fio's Job with it (by node affinity).
    node: String,
    /// The StorageClass of ClickHouse's claim, which fio's claim names; none for an
    /// emptyDir.
    storage_class: Option<String>,
    description: String,
    /// The node's instance type, as its `node.kubernetes.io/instance-type` label says.
    instance_type: Option<String>,
}

/// The storage of the deployment in `namespace`, read once ([`deployment::read`]).
async fn deployment_storage(client: &Client, namespace: &str) -> Result<DeploymentStorage> {
    storage_of(namespace, deployment::read(client, namespace).await?)
}

/// Reads the variant from the ClickHouse pod's data volume: an emptyDir is the node's
/// NVMe (eks-nvme); a claim of the namespace's gp3 StorageClass is eks-gp3, of another
/// class kind. What fio cannot run without (the pod's node, the claim and its class) is
/// an error saying why it is absent.
fn storage_of(namespace: &str, deployment: Deployment) -> Result<DeploymentStorage> {
    let doing = || format!("cannot measure the storage baseline in namespace {namespace}");
    deployment.namespace.required(doing)?;
    let node = deployment.pod.required(doing)?.node.required(doing)?;
    let data = deployment.data_volume.required(doing)?;
    let mut values = Values { namespace: namespace.to_string(), ..Values::defaults(Variant::Kind) };
    let instance_type = deployment.node.present().and_then(|node| node.instance_type.present()).cloned();
    let on_instance = instance_type.as_ref().map(|name| format!(" ({name})")).unwrap_or_default();
    let claim = match data {
        DataVolume::EmptyDir { .. } => {
            let variant = Variant::EksNvme;
            values =
                Values { node_type: instance_type.clone().unwrap_or(Values::defaults(variant).node_type), ..values };
            let description =
                format!("the node's instance-store NVMe{on_instance}, through an emptyDir as ClickHouse's data");
            return Ok(DeploymentStorage { variant, values, node, storage_class: None, description, instance_type });
        }
        DataVolume::Other { source } => {
            bail!("pod {namespace}/{CLICKHOUSE} keeps its data in a {source} volume, neither a claim nor an emptyDir")
        }
        DataVolume::Claim { .. } => deployment.claim.required(doing)?,
    };
    values.volume_gib = claim.requested.present().and_then(|size| gibibytes(size)).with_context(|| {
        format!(
            "claim {namespace}/{} requests {}, not a size in Gi (as the manifests give it)",
            claim.name, claim.requested
        )
    })?;
    // fio's claim names the class by name, never left to whatever the default is now.
    let class = claim.storage_class.required(|| "no volume like ClickHouse's can be made for fio".to_string())?;
    if class != format!("{namespace}-gp3") {
        let description = format!("a new volume of StorageClass {class}, {} GiB, as ClickHouse's", values.volume_gib);
        let storage_class = Some(class);
        return Ok(DeploymentStorage {
            variant: Variant::Kind,
            values,
            node,
            storage_class,
            description,
            instance_type,
        });
    }
    let variant = Variant::EksGp3;
    let parameters = deployment.class.required(doing)?;
    let parameter = |value: &Presence<String>| value.present().and_then(|value| value.parse::<u32>().ok());
    let defaults = Values::defaults(variant);
    values = Values {
        node_type: instance_type.clone().unwrap_or(defaults.node_type),
        iops: parameter(&parameters.iops).unwrap_or(defaults.iops),
        throughput_mibps: parameter(&parameters.throughput).unwrap_or(defaults.throughput_mibps),
        ..values
    };
    let description = format!(
        "a new gp3 EBS volume of StorageClass {class} ({} IOPS, {} MiB/s provisioned), {} GiB, as ClickHouse's, \
         on{on_instance} the same node",
        values.iops, values.throughput_mibps, values.volume_gib
    );
    Ok(DeploymentStorage { variant, values, node, storage_class: Some(class), description, instance_type })
}

/// `100Gi` as 100; the manifests give every size in Gi.
fn gibibytes(quantity: &str) -> Option<u32> {
    quantity.strip_suffix("Gi")?.parse().ok().filter(|gib| *gib > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_sizes_are_read_in_gibibytes() {
        assert_eq!(gibibytes("100Gi"), Some(100));
        assert_eq!(gibibytes("10Gi"), Some(10));
        for other in ["100G", "0Gi", "1Ti", "", "Gi"] {
            assert_eq!(gibibytes(other), None, "{other}");
        }
    }
}

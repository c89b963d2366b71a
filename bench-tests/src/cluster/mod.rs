//! Kubernetes deployments of ClickHouse for the `eks` target: the manifests under
//! `manifests/`, rendered from flags and checked before anything is applied
//! ([`manifests`]), then applied and waited for ([`deploy`]); a deployment as the cluster
//! has it, read once, each part present or absent with the reason ([`deployment`]), which
//! `status` shows and `down` takes away ([`lifecycle`]); the storage baseline fio measures
//! beside it ([`baseline`]); a throughput level's load, run beside it ([`load`]), both
//! Jobs waited for and removed alike ([`jobs`]); the port-forward the target reaches the pod through
//! ([`portforward`]); the Namespace's annotations ([`annotations`]); the deployment the
//! last `up` brought up, which a run with no target given uses until `down`
//! ([`last_up`], always built: choosing a target needs it). What a run leaves is
//! copied out by `crate::collect`, a layer up, since it reads the server through a target.
//!
//! The variants, their values and the values' checks ([`checks`]) are always built (the
//! command line names and checks them); the rest only with the `eks` cargo feature (it brings the Kubernetes client and API
//! types), so that a laptop that never touches a cluster does not compile them.

#[cfg(feature = "eks")]
pub mod annotations;
#[cfg(feature = "eks")]
pub mod api_server;
#[cfg(feature = "eks")]
pub mod baseline;
pub mod checks;
#[cfg(feature = "eks")]
pub mod deploy;
#[cfg(feature = "eks")]
pub mod deployment;
#[cfg(feature = "eks")]
pub mod jobs;
pub mod last_up;
#[cfg(feature = "eks")]
pub mod lifecycle;
#[cfg(feature = "eks")]
pub mod load;
#[cfg(feature = "eks")]
pub mod manifests;
#[cfg(feature = "eks")]
pub mod portforward;

use std::fmt;

/// The namespace every `eks` command and the `eks` target use unless told otherwise.
pub const DEFAULT_NAMESPACE: &str = "chbench";

/// Annotation on the deployment's Namespace: the run `up` started (a UUID), set when
/// `up` creates the namespace and kept by later `up`s on the same deployment.
pub const RUN_ANNOTATION: &str = "chbench.dev/run";
/// Annotation on the deployment's Namespace: the run whose results `collect` last copied
/// out. `down` refuses (without `--force`) unless it equals [`RUN_ANNOTATION`]'s value.
pub const COLLECTED_ANNOTATION: &str = "chbench.dev/collected-run";
/// Annotation on the deployment's Namespace: when (RFC 3339) `collect` that copied out
/// [`COLLECTED_ANNOTATION`]'s run started. A bench that used the deployment after it
/// ([`LAST_USED_ANNOTATION`]) makes `down` refuse again.
pub const COLLECTED_AT_ANNOTATION: &str = "chbench.dev/collected-at";
/// Annotation on the deployment's Namespace: when (RFC 3339) the `eks` target last opened
/// or closed a connection to it for a bench, so that `down` can tell results written
/// after the last collect.
pub const LAST_USED_ANNOTATION: &str = "chbench.dev/last-used";

/// `cargo xtask eks <subcommand>` for the deployment in `namespace`, with `--namespace`
/// when it is not the default: the command a message tells the user to run.
pub fn eks_command(subcommand: &str, namespace: &str) -> String {
    if namespace == DEFAULT_NAMESPACE {
        format!("cargo xtask eks {subcommand}")
    } else {
        format!("cargo xtask eks {subcommand} --namespace {namespace}")
    }
}

/// Refuses what cannot name a Kubernetes namespace (an RFC 1123 label), before a cluster
/// is asked.
pub fn check_namespace(namespace: &str) -> anyhow::Result<()> {
    let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let label = namespace.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && alphanumeric(namespace.chars().next())
        && alphanumeric(namespace.chars().last())
        && namespace.len() <= 63;
    if !label {
        anyhow::bail!(
            "namespace {namespace:?}: lowercase letters, digits and -, starting and ending with a letter or digit, \
             at most 63 (a Kubernetes name)"
        );
    }
    Ok(())
}

/// The pinned server image (the source's manifest, reviewed release 26.3 LTS).
pub const DEFAULT_IMAGE: &str = "clickhouse/clickhouse-server:26.3.33.24";

/// Where ClickHouse runs and keeps its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "kebab-case")]
pub enum Variant {
    /// EKS, data on a gp3 EBS volume (the source's setup).
    EksGp3,
    /// EKS, data on the node's local instance-store NVMe.
    EksNvme,
    /// A local or CI cluster (kind), data on its default storage class.
    Kind,
}

impl Variant {
    /// The variant's folder under `manifests/`.
    pub fn folder(self) -> &'static str {
        match self {
            Variant::EksGp3 => "eks-gp3",
            Variant::EksNvme => "eks-nvme",
            Variant::Kind => "kind",
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.folder())
    }
}

/// The values a variant's manifests take, from flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Values {
    pub namespace: String,
    pub image: String,
    /// `node.kubernetes.io/instance-type` of the benchmark node (EKS variants).
    pub node_type: String,
    /// The data volume (gp3, or the NVMe emptyDir's size limit).
    pub volume_gib: u32,
    /// gp3 only: provisioned IOPS and throughput.
    pub iops: u32,
    pub throughput_mibps: u32,
}

impl Values {
    /// The source's values for a variant: m5.xlarge and gp3 at its baseline (3000 IOPS,
    /// 125 MiB/s, 100 GiB); m6id.xlarge for local NVMe; a small volume on kind.
    pub fn defaults(variant: Variant) -> Values {
        let (node_type, volume_gib) = match variant {
            Variant::EksGp3 => ("m5.xlarge", 100),
            Variant::EksNvme => ("m6id.xlarge", 100),
            Variant::Kind => ("", 10),
        };
        Values {
            namespace: DEFAULT_NAMESPACE.to_string(),
            image: DEFAULT_IMAGE.to_string(),
            node_type: node_type.to_string(),
            volume_gib,
            iops: 3000,
            throughput_mibps: 125,
        }
    }

    /// The `${name}` values of the manifests.
    #[cfg(feature = "eks")]
    pub(crate) fn by_name(&self) -> std::collections::BTreeMap<&'static str, String> {
        std::collections::BTreeMap::from([
            ("namespace", self.namespace.clone()),
            ("image", self.image.clone()),
            ("node_type", self.node_type.clone()),
            ("volume_gib", self.volume_gib.to_string()),
            ("iops", self.iops.to_string()),
            ("throughput_mibps", self.throughput_mibps.to_string()),
        ])
    }
}

#[cfg(feature = "eks")]
pub use deploy::{UpOutcome, up};
#[cfg(feature = "eks")]
pub use lifecycle::{DownOutcome, DownPlan, NoDeployment, down_blocking, status_blocking};

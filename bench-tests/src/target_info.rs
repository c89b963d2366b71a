//! What a run records about the target it measured: its kind, as `--target` and
//! `CHBENCH_TARGET` name it ([`TargetKind`], the one list of target names), and its
//! description ([`TargetInfo`]), with the storage profile's volume its engine's folder was
//! on ([`StorageVolume`]). Opening a target, and making a volume, is `targets`'s.

use std::fmt;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// The environment variable that chooses the target.
pub const TARGET_ENV: &str = "CHBENCH_TARGET";

/// Which engine to run on, as named in `CHBENCH_TARGET` or `--target`. The names are
/// the variants' in lowercase (clap's and serde's); the doc comments are `--help`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
#[value(rename_all = "lowercase")]
pub enum TargetKind {
    /// The deployment `cargo xtask eks up` brought up, until `eks down`; else `container`
    /// when a Docker daemon answers and the build has the container target; else
    /// `embedded`.
    Auto,
    /// The real ClickHouse engine in-process (libchdb).
    Embedded,
    /// `clickhouse/clickhouse-server` in Docker through testcontainers, one container per
    /// nextest run or process; its Docker client (the `container` feature) is built on
    /// first use.
    Container,
    /// Any running server given by `CHBENCH_URL`, `CHBENCH_USER`, `CHBENCH_PASSWORD`.
    Url,
    /// The pod `cargo xtask eks up` deployed (namespace `CHBENCH_NAMESPACE`, else the last
    /// up's, else chbench), through a port-forward; needs the `eks` feature.
    Eks,
}

impl TargetKind {
    /// The known names, for messages: `auto, embedded, container, url, eks`.
    pub fn names() -> String {
        TargetKind::value_variants().iter().map(TargetKind::to_string).collect::<Vec<_>>().join(", ")
    }

    /// Parses a target name strictly: an unknown name is an error that lists the known ones.
    pub fn parse(name: &str) -> Result<TargetKind> {
        match name.trim() {
            "" => Ok(TargetKind::Auto),
            name => match <TargetKind as ValueEnum>::from_str(name, false) {
                Ok(kind) => Ok(kind),
                Err(_) => bail!("{name:?} is not a target; choose one of {}", TargetKind::names()),
            },
        }
    }

    /// The kind named by `CHBENCH_TARGET` (unset means `auto`).
    pub fn from_env() -> Result<TargetKind> {
        match std::env::var(TARGET_ENV) {
            Ok(name) => TargetKind::parse(&name).with_context(|| format!("{TARGET_ENV}={name:?}")),
            Err(std::env::VarError::NotPresent) => Ok(TargetKind::Auto),
            Err(std::env::VarError::NotUnicode(_)) => bail!("{TARGET_ENV} is not valid UTF-8"),
        }
    }

    /// Resolves `auto`: the deployment `eks up` brought up when one is remembered (the
    /// cluster bills by the hour: `eks up && bench` measures it), else a container when a
    /// Docker daemon answers (asked only then; a build without the container target says
    /// no), else the embedded engine. Other kinds stay as they are.
    pub fn resolve(self, deployment_up: impl FnOnce() -> bool, docker_answers: impl FnOnce() -> bool) -> TargetKind {
        match self {
            TargetKind::Auto if deployment_up() => TargetKind::Eks,
            TargetKind::Auto if docker_answers() => TargetKind::Container,
            TargetKind::Auto => TargetKind::Embedded,
            chosen => chosen,
        }
    }
}

impl fmt::Display for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every variant has a name: none is skipped with `#[value(skip)]`.
        match self.to_possible_value() {
            Some(value) => f.write_str(value.get_name()),
            None => write!(f, "{self:?}"),
        }
    }
}

/// What a run records about the target it measured. Never holds a credential.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub kind: TargetKind,
    /// `SELECT version()` on the target.
    pub engine_version: String,
    /// Where the engine is: a library path, an image, or a URL without credentials.
    pub endpoint: String,
    /// The Kubernetes deployment the engine runs in (the `eks` target); none for other
    /// targets, and in bundles written before the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<KubernetesDeployment>,
    /// The storage profile's volume the engine kept its folder on (`--storage`); none on
    /// the machine's own disk, and in bundles written before the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageVolume>,
}

/// Which Kubernetes deployment a target ran on, as data (never parsed back out of the
/// endpoint): the pod, where it ran and what it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesDeployment {
    pub namespace: String,
    pub pod: String,
    /// The image the pod's ClickHouse container asks for.
    pub image: String,
    /// The image the node runs, by digest (`containerStatuses[].imageID`); none when the
    /// pod's status does not say.
    pub image_id: Option<String>,
    /// The node the pod ran on.
    pub node: String,
    /// The node's instance type (`node.kubernetes.io/instance-type`), which prices it in a
    /// comparison; none where the target did not read it (bundles before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
}

/// What the report says of every profile's volume.
pub const APPROXIMATION: &str = "approximation: IOPS and bandwidth limits only, no network latency per I/O";

/// A profile's limits on the volume, per direction; `None` is unlimited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// The profile's name: `gp3`, or `custom` for limits given as numbers.
    pub name: String,
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
    pub read_bytes_per_second: Option<u64>,
    pub write_bytes_per_second: Option<u64>,
}

impl fmt::Display for Limits {
    /// `gp3 (read 3000 IOPS and 125 MiB/s, write 3000 IOPS and 125 MiB/s)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |iops: Option<u64>, bytes: Option<u64>| {
            let iops = iops.map_or("unlimited IOPS".to_string(), |iops| format!("{iops} IOPS"));
            let bandwidth = bytes.map_or("unlimited MiB/s".to_string(), |bytes| {
                format!("{} MiB/s", crate::units::number(Some(bytes as f64 / 1_048_576.0), 1))
            });
            format!("{iops} and {bandwidth}")
        };
        write!(
            f,
            "{} (read {}, write {})",
            self.name,
            side(self.read_iops, self.read_bytes_per_second),
            side(self.write_iops, self.write_bytes_per_second)
        )
    }
}

/// What a run's bundle records of the volume its engine's folder was on
/// ([`TargetInfo::storage`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageVolume {
    /// The profile asked for, and the limits applied from it.
    pub limits: Limits,
    /// The loop device, `/dev/loop3 (7:3)`.
    pub device: String,
    /// The image's size: the most the file system can hold (sparse: only what is written
    /// takes room).
    pub image_bytes: u64,
    /// How that size was chosen: from the run's estimate of its data, or a share of the
    /// free space. Empty in bundles written before volumes were sized.
    #[serde(default)]
    pub sized_by: String,
    /// The cgroup and its controller, `cgroup v1 blkio /sys/fs/cgroup/blkio/chbench-1234`.
    pub cgroup: String,
    /// [`APPROXIMATION`].
    pub approximation: String,
    /// What the volume gave before the benchmark, against the limits; `None` with
    /// `probe_unknown` when the probe failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<VolumeProbe>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_unknown: Option<String>,
}

/// The volume measured before the benchmark (docs/storage-profiles.md): four passes of
/// direct I/O, with as many requests in flight as the storage baseline's fio job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolumeProbe {
    /// What measured it.
    pub tool: String,
    pub ms_per_pass: u64,
    /// Requests in flight in the sequential passes (1 MiB each) and the random ones (4 KiB).
    pub sequential_in_flight: u32,
    pub random_in_flight: u32,
    /// 1 MiB reads in order, bytes a second, against the read bandwidth limit.
    pub sequential_read_bytes_per_second: ProbedRate,
    /// 4 KiB reads at random offsets, a second, against the read IOPS limit.
    pub random_read_iops: ProbedRate,
    /// 1 MiB writes in order, against the write bandwidth limit.
    pub sequential_write_bytes_per_second: ProbedRate,
    /// 4 KiB writes at random offsets, against the write IOPS limit.
    pub random_write_iops: ProbedRate,
}

impl VolumeProbe {
    fn rates(&self) -> [(&'static str, &ProbedRate, bool); 4] {
        [
            ("sequential read", &self.sequential_read_bytes_per_second, true),
            ("random read", &self.random_read_iops, false),
            ("sequential write", &self.sequential_write_bytes_per_second, true),
            ("random write", &self.random_write_iops, false),
        ]
    }

    /// `sequential read 125.0 MiB/s (limit 125.0, held); random read 2990 IOPS (...)...`.
    pub fn summary(&self) -> String {
        let shown = |rate: Option<f64>, bytes: bool| match bytes {
            true => format!("{} MiB/s", crate::units::number(rate.map(|rate| rate / 1_048_576.0), 1)),
            false => format!("{} IOPS", crate::units::number(rate, 0)),
        };
        let parts: Vec<String> = self
            .rates()
            .iter()
            .map(|(name, rate, bytes)| {
                let against = match rate.limit {
                    Some(limit) => format!("limit {}, {}", shown(Some(limit as f64), *bytes), rate.verdict),
                    None => rate.verdict.clone(),
                };
                format!("{name} {} ({against})", shown(rate.measured, *bytes))
            })
            .collect();
        parts.join("; ")
    }

    /// A line for each rate the throttle let past its limit.
    pub fn warnings(&self) -> Vec<String> {
        self.rates()
            .iter()
            .filter(|(_, rate, _)| rate.verdict.starts_with("above"))
            .map(|(name, _, _)| {
                format!(
                    "the storage profile's throttle did not hold: {name} was more than 10 % above its limit ({})",
                    self.summary()
                )
            })
            .collect()
    }
}

/// One measured rate against its limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbedRate {
    pub measured: Option<f64>,
    /// The limit it is held to; `None` for none.
    pub limit: Option<u64>,
    /// `held` (within 10 %), `above the limit: ...` (the throttle did not hold), `below the
    /// limit: ...` (another limit binds first, or the disk under the volume does not reach
    /// it), or `no limit`.
    pub verdict: String,
}

impl fmt::Display for TargetInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "target {} (ClickHouse {}, {})", self.kind, self.engine_version, self.endpoint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names_parse_strictly() {
        assert_eq!(TargetKind::parse("embedded").unwrap(), TargetKind::Embedded);
        assert_eq!(TargetKind::parse("container").unwrap(), TargetKind::Container);
        assert_eq!(TargetKind::parse("url").unwrap(), TargetKind::Url);
        assert_eq!(TargetKind::parse("").unwrap(), TargetKind::Auto);
        assert_eq!(TargetKind::parse("auto").unwrap(), TargetKind::Auto);
        let error = TargetKind::parse("Embeded").unwrap_err().to_string();
        assert!(error.contains("\"Embeded\" is not a target"), "{error}");
        assert!(error.ends_with(&format!("choose one of {}", TargetKind::names())), "{error}");
        assert_eq!(TargetKind::parse("eks").unwrap(), TargetKind::Eks);
    }

    #[test]
    fn names_are_lowercase_in_messages_flags_and_results() {
        for kind in TargetKind::value_variants() {
            let name = kind.to_string();
            assert_eq!(name, name.to_lowercase());
            assert_eq!(TargetKind::parse(&name).unwrap(), *kind);
            assert_eq!(serde_json::to_value(kind).unwrap(), serde_json::Value::String(name));
        }
    }

    #[test]
    fn auto_means_the_deployment_up_then_a_container_when_docker_answers_then_embedded() {
        let unasked = || panic!("Docker was asked with a deployment up");
        assert_eq!(TargetKind::Auto.resolve(|| true, unasked), TargetKind::Eks);
        assert_eq!(TargetKind::Auto.resolve(|| false, || true), TargetKind::Container);
        assert_eq!(TargetKind::Auto.resolve(|| false, || false), TargetKind::Embedded);
        // A kind given wins over a deployment up, and neither is looked for.
        let unlooked = || panic!("looked for a deployment or Docker with a kind given");
        for kind in [TargetKind::Embedded, TargetKind::Container, TargetKind::Url, TargetKind::Eks] {
            assert_eq!(kind.resolve(unlooked, unlooked), kind);
        }
    }
}

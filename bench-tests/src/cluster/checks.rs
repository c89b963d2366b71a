//! The checks of a deployment's values before anything is rendered or sent: the image
//! pinned, the namespace a Kubernetes name, the node type shaped like an EC2 instance
//! type (and one with instance store for eks-nvme), and the gp3 volume within what AWS
//! provisions. Always built (no Kubernetes client), so that `cargo xtask eks up` refuses
//! a mistake before it builds the client. Each refusal is one line naming the flag, the
//! bound and what to give instead.

use anyhow::{Result, bail};

use super::{Values, Variant, check_namespace};

/// gp3's limits, as AWS publishes them: "Amazon EBS volume types", General Purpose SSD
/// (docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html), raised on 2025-09-25
/// ("Amazon EBS increases the maximum size and provisioned performance of gp3 volumes",
/// aws.amazon.com/about-aws/whats-new/2025/09/amazon-ebs-size-provisioned-performance-gp3-volumes/).
/// A volume past them fails to provision, which shows only as an event on its claim.
pub mod gp3 {
    /// The largest volume: 64 TiB.
    pub const MAX_GIB: u32 = 65_536;
    /// Provisioned IOPS: the baseline 3,000 (free) up to 80,000.
    pub const MIN_IOPS: u32 = 3_000;
    pub const MAX_IOPS: u32 = 80_000;
    /// Provisioned throughput: the baseline 125 MiB/s up to 2,000 MiB/s.
    pub const MIN_MIBPS: u32 = 125;
    pub const MAX_MIBPS: u32 = 2_000;
    /// At most 500 provisioned IOPS per GiB of volume.
    pub const IOPS_PER_GIB: u32 = 500;
    /// At most 0.25 MiB/s of throughput per provisioned IOPS: one MiB/s per 4 IOPS.
    pub const IOPS_PER_MIBPS: u32 = 4;
}

/// vCPUs of the node types the manifests and the Karpenter NodePool name, as AWS lists
/// them ("Amazon EC2 instance type specifications", general purpose and compute optimized,
/// docs.aws.amazon.com/ec2/latest/instancetypes/, Amazon Web Services, as of 2026): what a
/// matrix sets `max_threads` to on each node, as the Graviton against Intel study set it
/// to the vCPU count. A type not here needs its `max_threads` given.
pub const VCPUS: &[(&str, u32)] = &[("m5.xlarge", 4), ("c6i.2xlarge", 8), ("c7g.2xlarge", 8), ("m6id.xlarge", 4)];

/// The vCPUs of `node_type`, when [`VCPUS`] lists it.
pub fn vcpus_of(node_type: &str) -> Option<u32> {
    VCPUS.iter().find(|(name, _)| *name == node_type).map(|(_, vcpus)| *vcpus)
}

/// An image must name a tag or digest, and not `latest`: two runs of one manifest must
/// run the same server.
pub fn check_image(image: &str) -> Result<()> {
    if image.is_empty() {
        bail!("the image is empty: give one pinned by tag or digest (--image clickhouse/clickhouse-server:26.3.33.24)");
    }
    if image.chars().any(char::is_whitespace) {
        bail!("image {image:?} has whitespace in it");
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    let pinned = match last.split_once('@') {
        Some((_, digest)) => digest
            .strip_prefix("sha256:")
            .is_some_and(|hex| hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit())),
        None => last.split_once(':').is_some_and(|(_, tag)| !tag.is_empty() && tag != "latest"),
    };
    if !pinned {
        bail!(
            "image {image:?} is not pinned: give a version tag (clickhouse/clickhouse-server:26.3.33.24) or a digest \
             (@sha256:...), not latest"
        );
    }
    Ok(())
}

/// Checks every value a variant's manifests take.
pub fn check_values(variant: Variant, values: &Values) -> Result<()> {
    check_image(&values.image)?;
    check_namespace(&values.namespace)?;
    check_node_type(variant, &values.node_type)?;
    if values.volume_gib == 0 {
        bail!("--volume-gib 0: the volume must hold at least 1 GiB; give --volume-gib 1 or more");
    }
    if variant == Variant::EksGp3 {
        check_gp3(values)?;
    }
    Ok(())
}

/// An EC2 instance type is `<family>.<size>`: the family a series letter (or a few), a
/// generation digit and option letters (`m5`, `c7g`, `m6idn`, `m7i-flex`), the size a word
/// (`xlarge`, `2xlarge`, `metal-24xl`). Whether the type exists in the region is the
/// cluster's to say. kind has no node type (its pod goes wherever the cluster puts it).
pub fn check_node_type(variant: Variant, node_type: &str) -> Result<()> {
    if variant == Variant::Kind {
        return Ok(());
    }
    if node_type.trim().is_empty() {
        bail!("{variant} needs a node type (--node-type m5.xlarge)");
    }
    let word =
        |part: &str| !part.is_empty() && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let shaped = match node_type.split_once('.') {
        Some((family, size)) => {
            word(family)
                && word(size)
                && family.starts_with(|c: char| c.is_ascii_lowercase())
                && family.contains(|c: char| c.is_ascii_digit())
        }
        None => false,
    };
    if !shaped {
        bail!(
            "--node-type {node_type:?} is not an instance type: give FAMILY.SIZE, as m5.xlarge or c7g.2xlarge (the \
             types EC2 lists)"
        );
    }
    if variant == Variant::EksNvme && !has_instance_store(node_type) {
        bail!(
            "--node-type {node_type} has no local NVMe: eks-nvme needs an instance-store type, a `d` among the \
             family's options (m6id.xlarge, c6gd.xlarge, m6idn.xlarge) or a storage-optimized i family (i4i.xlarge)"
        );
    }
    Ok(())
}

/// Whether an instance type comes with instance-store NVMe: the `d` option (`m6id`, `c6gd`,
/// `m5dn`, `g4dn`) or a storage-optimized `i` family (`i3`, `i4i`, `im4gn`).
fn has_instance_store(node_type: &str) -> bool {
    let family = node_type.split('.').next().unwrap_or("");
    let options =
        family.trim_start_matches(|c: char| !c.is_ascii_digit()).trim_start_matches(|c: char| c.is_ascii_digit());
    // Options end at a `-` (`m7i-flex`).
    let options = options.split('-').next().unwrap_or("");
    family.starts_with('i') || options.contains('d')
}

fn check_gp3(values: &Values) -> Result<()> {
    use gp3::*;
    let (gib, iops, mibps) = (values.volume_gib, values.iops, values.throughput_mibps);
    if gib > MAX_GIB {
        bail!(
            "--volume-gib {gib}: a gp3 volume holds at most {MAX_GIB} GiB (64 TiB); give --volume-gib {MAX_GIB} or less"
        );
    }
    if !(MIN_IOPS..=MAX_IOPS).contains(&iops) {
        bail!("--iops {iops}: gp3 takes {MIN_IOPS} to {MAX_IOPS} IOPS; give --iops in that range");
    }
    if !(MIN_MIBPS..=MAX_MIBPS).contains(&mibps) {
        bail!(
            "--throughput-mibps {mibps}: gp3 takes {MIN_MIBPS} to {MAX_MIBPS} MiB/s; give --throughput-mibps in that \
             range"
        );
    }
    // Above the baseline only: a 1 GiB volume still gets its 3,000 IOPS.
    if iops > MIN_IOPS && iops > IOPS_PER_GIB * gib {
        bail!(
            "--iops {iops}: gp3 allows {IOPS_PER_GIB} IOPS per GiB, so {iops} IOPS need --volume-gib {} or more (it is \
             {gib}); give a larger volume or fewer IOPS",
            iops.div_ceil(IOPS_PER_GIB)
        );
    }
    if mibps > MIN_MIBPS && mibps * IOPS_PER_MIBPS > iops {
        bail!(
            "--throughput-mibps {mibps}: gp3 allows 0.25 MiB/s per IOPS, so {mibps} MiB/s need --iops {} or more (it \
             is {iops}); give more IOPS or less throughput",
            mibps * IOPS_PER_MIBPS
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(variant: Variant, change: impl Fn(&mut Values)) -> String {
        let mut values = Values::defaults(variant);
        change(&mut values);
        check_values(variant, &values).unwrap_err().to_string()
    }

    #[test]
    fn gp3_volumes_past_what_aws_provisions_are_refused_naming_the_flag() {
        assert_eq!(
            refused(Variant::EksGp3, |v| v.volume_gib = gp3::MAX_GIB + 1),
            "--volume-gib 65537: a gp3 volume holds at most 65536 GiB (64 TiB); give --volume-gib 65536 or less"
        );
        assert_eq!(
            refused(Variant::EksGp3, |v| v.volume_gib = 0),
            "--volume-gib 0: the volume must hold at least 1 GiB; give --volume-gib 1 or more"
        );
        assert_eq!(
            refused(Variant::EksGp3, |v| v.iops = 100),
            "--iops 100: gp3 takes 3000 to 80000 IOPS; give --iops in that range"
        );
        assert_eq!(
            refused(Variant::EksGp3, |v| v.iops = 80_001),
            "--iops 80001: gp3 takes 3000 to 80000 IOPS; give --iops in that range"
        );
        assert_eq!(
            refused(Variant::EksGp3, |v| v.throughput_mibps = 2001),
            "--throughput-mibps 2001: gp3 takes 125 to 2000 MiB/s; give --throughput-mibps in that range"
        );
        assert_eq!(
            refused(Variant::EksGp3, |v| {
                v.iops = 16_000;
                v.volume_gib = 10;
            }),
            "--iops 16000: gp3 allows 500 IOPS per GiB, so 16000 IOPS need --volume-gib 32 or more (it is 10); give \
             a larger volume or fewer IOPS"
        );
        assert_eq!(
            refused(Variant::EksGp3, |v| v.throughput_mibps = 1000),
            "--throughput-mibps 1000: gp3 allows 0.25 MiB/s per IOPS, so 1000 MiB/s need --iops 4000 or more (it is \
             3000); give more IOPS or less throughput"
        );
        // The largest volume AWS provisions, at its largest performance, passes.
        let largest = Values {
            volume_gib: gp3::MAX_GIB,
            iops: gp3::MAX_IOPS,
            throughput_mibps: gp3::MAX_MIBPS,
            ..Values::defaults(Variant::EksGp3)
        };
        check_values(Variant::EksGp3, &largest).unwrap();
        // The volume bound is gp3's: an NVMe emptyDir or kind's class is not a gp3 volume.
        let large = Values { volume_gib: gp3::MAX_GIB + 1, ..Values::defaults(Variant::Kind) };
        check_values(Variant::Kind, &large).unwrap();
    }

    #[test]
    fn node_types_must_be_shaped_like_instance_types() {
        for shaped in ["m5.xlarge", "c7g.2xlarge", "m7i-flex.large", "u-6tb1.metal", "c6i.metal-24xl", "x2iedn.xlarge"]
        {
            check_node_type(Variant::EksGp3, shaped).unwrap_or_else(|error| panic!("{shaped}: {error}"));
        }
        for wrong in [
            "m5",
            "xlarge",
            "m5.",
            ".xlarge",
            "m5.x.large",
            "M5.xlarge",
            "m.xlarge",
            "5m.xlarge",
            "m5.xlarge\nkind: Service",
        ] {
            let message = check_node_type(Variant::EksGp3, wrong).unwrap_err().to_string();
            assert!(message.starts_with(&format!("--node-type {wrong:?} is not an instance type")), "{message}");
        }
        assert_eq!(
            refused(Variant::EksGp3, |v| v.node_type = " ".into()),
            "eks-gp3 needs a node type (--node-type m5.xlarge)"
        );
    }

    #[test]
    fn eks_nvme_needs_an_instance_store_type() {
        for with_store in [
            "m6id.xlarge",
            "c6gd.2xlarge",
            "m6idn.xlarge",
            "m5dn.large",
            "g4dn.xlarge",
            "i4i.xlarge",
            "im4gn.large",
            "x2iedn.xlarge",
        ] {
            check_node_type(Variant::EksNvme, with_store).unwrap_or_else(|error| panic!("{with_store}: {error}"));
        }
        for without in ["m5.xlarge", "c7g.2xlarge", "m7i-flex.large", "m6in.xlarge"] {
            let message = check_node_type(Variant::EksNvme, without).unwrap_err().to_string();
            assert!(message.starts_with(&format!("--node-type {without} has no local NVMe")), "{message}");
        }
    }

    #[test]
    fn images_must_be_pinned() {
        let digest = format!("registry:5000/ch@sha256:{}", "ab".repeat(32));
        for image in ["clickhouse/clickhouse-server:26.3.33.24", digest.as_str()] {
            check_image(image).unwrap();
        }
        let unpinned = ["clickhouse/clickhouse-server", "clickhouse/clickhouse-server:latest", "registry:5000/ch", ""];
        for image in unpinned.into_iter().chain(["ch@", "ch@sha256:", "ch@sha256:abc", "ch:1 x"]) {
            assert!(check_image(image).is_err(), "{image} should be refused");
        }
        assert!(refused(Variant::Kind, |v| v.namespace = "-a".into()).starts_with("namespace \"-a\""));
    }
}

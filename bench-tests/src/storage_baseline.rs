//! The storage baseline: what fio measured on the volume ClickHouse keeps its data on
//! (sequential read MiB/s, random read IOPS and latency, direct I/O), the fio job file
//! ([`fio_job_file`]), the parser of fio's JSON report, the baseline's place in a results
//! bundle, and the verdict a report gives a scan against it (volume-bound or not). Always
//! built: bundles are read and reported without the `eks` feature, which only runs the
//! fio Job (`cluster::baseline`); a storage profile's volume runs the same job file, or
//! the tool's own probe where fio is not installed (`targets::volume`).
//! docs/storage-baseline.md says what is measured and why.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::numbers::{known, ratio};
use crate::units::{human_bytes, number};

/// The fio job measuring sequential reads (its `[name]` in the job file).
pub const SEQ_READ_JOB: &str = "seq_read";
/// The fio job measuring random reads.
pub const RAND_READ_JOB: &str = "rand_read";

/// A scan reading at least this share of the baseline's sequential rate is volume-bound.
/// fio's sequential job is the volume's best case: one file, large blocks, a deep queue
/// and nothing else to do. A ClickHouse scan reads several column files between
/// decompressing them, so even a scan the volume holds back falls a little short of
/// it; 90 % leaves room for that and for the few percent two measurements of one volume
/// differ by. It is a judgement, not a measured constant: docs/storage-baseline.md.
pub const VOLUME_BOUND_SHARE: f64 = 0.9;
/// A scan reading faster than this share of the baseline's sequential rate was not held to
/// it: it was short enough to fit in what a throttle or a volume lets through at first (a
/// cgroup's first slice, a network volume's burst), so "volume-bound" would be wrong. The
/// source's Q3 read at 104 % of its gp3 volume's rate; 125 % leaves room for that and for
/// the difference between two measurements of one volume.
pub const ABOVE_VOLUME_SHARE: f64 = 1.25;

/// What fio (or the tool's own probe) measured on one volume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageBaseline {
    /// What measured it: fio's version as fio prints it (`fio-3.33`), or the tool's own
    /// probe. Bundles written before the probe could measure a baseline call it
    /// `fio_version`.
    #[serde(alias = "fio_version")]
    pub tool: String,
    /// When fio ran (its report's own timestamp).
    pub measured_at: jiff::Timestamp,
    pub device: Device,
    /// Whether the page cache was bypassed (fio's `direct=1`): always true, since the
    /// parser refuses a report without it.
    pub direct: bool,
    /// The test file's size (fio's `size`).
    pub file_size_bytes: u64,
    pub seq_read: SeqRead,
    pub rand_read: RandRead,
}

/// Where fio ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// The deployment's variant: `eks-gp3`, `eks-nvme` or `kind`; on the embedded
    /// target, `storage profile <name>`.
    pub variant: String,
    /// The volume, e.g. `gp3 EBS volume of StorageClass chbench-gp3 (3000 IOPS, 125 MiB/s), 100 GiB`.
    pub description: String,
    /// The Kubernetes node, the ClickHouse pod's; on the embedded target, the machine.
    pub node: String,
    /// The node's instance type (`node.kubernetes.io/instance-type`), where it has the
    /// label: what a comparison prices an eks bundle by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
}

/// The sequential read job: the volume's throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeqRead {
    pub block_size_bytes: u64,
    pub iodepth: u32,
    /// How long fio measured, milliseconds (the ramp time excluded).
    pub runtime_ms: u64,
    /// Bytes read in that time.
    pub bytes: u64,
    /// fio's bandwidth in MiB/s.
    pub mib_per_s: Option<f64>,
}

/// The random read job: the volume's IOPS and latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandRead {
    pub block_size_bytes: u64,
    pub iodepth: u32,
    pub runtime_ms: u64,
    /// Reads completed in that time.
    pub ios: u64,
    pub iops: Option<f64>,
    /// Completion latency (fio's `clat`: submission to completion), microseconds.
    pub latency_us: Latency,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

impl StorageBaseline {
    /// One line for people: the rates, the parameters, fio, the device.
    pub fn summary(&self) -> String {
        let (seq, rand) = (&self.seq_read, &self.rand_read);
        format!(
            "sequential read {} MiB/s ({} blocks, iodepth {}); random read {} IOPS ({} blocks, iodepth {}), \
             latency mean {} / p50 {} / p99 {} µs; {}, {}direct I/O, {} file; {}: {} on node {}, measured {}",
            number(seq.mib_per_s, 1),
            human_bytes(seq.block_size_bytes),
            seq.iodepth,
            number(rand.iops, 0),
            human_bytes(rand.block_size_bytes),
            rand.iodepth,
            number(rand.latency_us.mean, 1),
            number(rand.latency_us.p50, 1),
            number(rand.latency_us.p99, 1),
            self.tool,
            if self.direct { "" } else { "no " },
            human_bytes(self.file_size_bytes),
            self.device.variant,
            self.device.description,
            self.device.node,
            self.measured_at
        )
    }
}

/// A bundle's storage baseline: measured, or unknown with the reason (never zeros).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageBaselineRecord {
    Measured(Box<StorageBaseline>),
    Unknown { reason: String },
}

/// Why a bundle written before baselines were recorded has none.
pub const NOT_RECORDED_BEFORE: &str = "the bundle was written before chbench recorded storage baselines";
/// Why a target without a baseline has none.
pub const TARGET_HAS_NONE: &str = "the target measures no storage baseline; the eks target reads the one \
                                   `cargo xtask eks up` measured, and the embedded target measures one with \
                                   --storage PROFILE";

impl Default for StorageBaselineRecord {
    /// What a bundle without the field (an older one) reads as.
    fn default() -> Self {
        StorageBaselineRecord::Unknown { reason: NOT_RECORDED_BEFORE.to_string() }
    }
}

impl StorageBaselineRecord {
    /// The record for what a target answered: its baseline, none, or an error reading
    /// it (the run goes on; the bundle says why the baseline is unknown).
    pub fn from_answer(answer: Result<Option<StorageBaseline>>) -> StorageBaselineRecord {
        match answer {
            Ok(Some(baseline)) => StorageBaselineRecord::Measured(Box::new(baseline)),
            Ok(None) => StorageBaselineRecord::Unknown { reason: TARGET_HAS_NONE.to_string() },
            Err(error) => StorageBaselineRecord::Unknown {
                reason: format!("cannot read the target's storage baseline: {error:#}"),
            },
        }
    }

    pub fn measured(&self) -> Option<&StorageBaseline> {
        match self {
            StorageBaselineRecord::Measured(baseline) => Some(baseline.as_ref()),
            StorageBaselineRecord::Unknown { .. } => None,
        }
    }
}

impl fmt::Display for StorageBaselineRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageBaselineRecord::Measured(baseline) => f.write_str(&baseline.summary()),
            StorageBaselineRecord::Unknown { reason } => write!(f, "unknown ({reason})"),
        }
    }
}

/// A scan's read rate against the volume's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ReadVerdict {
    /// At least [`VOLUME_BOUND_SHARE`] of the baseline's sequential rate.
    VolumeBound {
        share: f64,
        baseline_mib_per_s: f64,
    },
    BelowVolume {
        share: f64,
        baseline_mib_per_s: f64,
    },
    /// Above [`ABOVE_VOLUME_SHARE`] of it: faster than the volume holds a scan to.
    AboveVolume {
        share: f64,
        baseline_mib_per_s: f64,
    },
    /// No baseline (or one whose rate is unknown) to compare with.
    NoBaseline,
    /// The scan read nothing from files (its data came from caches, or the counter was missing).
    NoFileReads,
}

impl ReadVerdict {
    /// The verdict on a scan that read files at `read_mib_per_s`.
    pub fn of(read_mib_per_s: Option<f64>, baseline: Option<&StorageBaseline>) -> ReadVerdict {
        let Some(baseline) = baseline else {
            return ReadVerdict::NoBaseline;
        };
        let Some(read) = read_mib_per_s.filter(|rate| rate.is_finite() && *rate > 0.0) else {
            return ReadVerdict::NoFileReads;
        };
        let Some(baseline_mib_per_s) = baseline.seq_read.mib_per_s else {
            return ReadVerdict::NoBaseline;
        };
        match ratio(read, baseline_mib_per_s) {
            None => ReadVerdict::NoBaseline,
            Some(share) if share > ABOVE_VOLUME_SHARE => ReadVerdict::AboveVolume { share, baseline_mib_per_s },
            Some(share) if share >= VOLUME_BOUND_SHARE => ReadVerdict::VolumeBound { share, baseline_mib_per_s },
            Some(share) => ReadVerdict::BelowVolume { share, baseline_mib_per_s },
        }
    }

    pub fn label(&self) -> String {
        match self {
            ReadVerdict::VolumeBound { share, baseline_mib_per_s } => {
                format!("volume-bound ({:.0} % of {} MiB/s)", share * 100.0, number(*baseline_mib_per_s, 1))
            }
            ReadVerdict::BelowVolume { share, baseline_mib_per_s } => {
                format!("below the volume's rate ({:.0} % of {} MiB/s)", share * 100.0, number(*baseline_mib_per_s, 1))
            }
            ReadVerdict::AboveVolume { share, baseline_mib_per_s } => format!(
                "above the volume's rate ({:.0} % of {} MiB/s: too short to be held to it)",
                share * 100.0,
                number(*baseline_mib_per_s, 1)
            ),
            ReadVerdict::NoBaseline => "unknown (no storage baseline)".to_string(),
            ReadVerdict::NoFileReads => "unknown (nothing read from files)".to_string(),
        }
    }
}

/// The folder under `manifests/` whose `fio.yaml` holds the job file a storage profile's
/// volume runs: every variant's is the same (a test keeps them so).
pub const JOB_FILE_VARIANT: &str = "eks-gp3";

/// The fio job file of `manifests/<variant>/fio.yaml` (its ConfigMap's `baseline.fio`), as
/// fio reads it. Read by hand, not by a YAML parser: the parser is in the `eks` build
/// only, and the block is a literal one, each line indented under its key.
pub fn fio_job_file(variant: &str) -> Result<String> {
    let path = crate::files::workspace_root().join("manifests").join(variant).join("fio.yaml");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let key = "  baseline.fio: |\n";
    let Some((_, block)) = text.split_once(key) else {
        bail!("{} has no {:?} block: the storage baseline's job file is missing", path.display(), key.trim());
    };
    let lines: Vec<&str> = block
        .lines()
        .take_while(|line| line.trim().is_empty() || line.starts_with("    "))
        .map(|line| line.strip_prefix("    ").unwrap_or(""))
        .collect();
    let job = lines.join("\n").trim().to_string();
    for section in [SEQ_READ_JOB, RAND_READ_JOB] {
        if !job.lines().any(|line| line.trim() == format!("[{section}]")) {
            bail!("the job file in {} has no [{section}] job", path.display());
        }
    }
    Ok(job + "\n")
}

/// fio's JSON report (`--output-format=json`), the fields the baseline takes.
#[derive(Deserialize)]
struct FioReport {
    #[serde(rename = "fio version")]
    fio_version: String,
    timestamp: i64,
    #[serde(rename = "global options", default)]
    global_options: BTreeMap<String, String>,
    jobs: Vec<FioJob>,
}

#[derive(Deserialize)]
struct FioJob {
    jobname: String,
    error: i64,
    #[serde(rename = "job options", default)]
    job_options: BTreeMap<String, String>,
    read: FioReads,
}

#[derive(Deserialize)]
struct FioReads {
    io_bytes: u64,
    bw_bytes: u64,
    iops: f64,
    runtime: u64,
    total_ios: u64,
    clat_ns: FioLatency,
}

#[derive(Deserialize)]
struct FioLatency {
    mean: f64,
    #[serde(default)]
    percentile: BTreeMap<String, f64>,
}

/// The baseline in the output of fio's Job: its JSON report, after whatever fio wrote to
/// stderr before it (a pod's log holds both). Anything else (no report, one cut short,
/// a report without the two jobs, without direct I/O, or one that read nothing) is one
/// error line saying which.
pub fn parse_fio_output(output: &str, device: Device) -> Result<StorageBaseline> {
    parse(output, device).context("not a usable fio report")
}

fn parse(output: &str, device: Device) -> Result<StorageBaseline> {
    // The report is the first line that opens a JSON object.
    let start = if output.starts_with('{') { Some(0) } else { output.find("\n{").map(|at| at + 1) };
    let Some(start) = start else {
        let first = output.lines().find(|line| !line.trim().is_empty()).unwrap_or("(empty)");
        bail!("no JSON report in the output, which begins {:?}", first.chars().take(80).collect::<String>());
    };
    let mut values = serde_json::Deserializer::from_str(&output[start..]).into_iter::<serde_json::Value>();
    let value = match values.next() {
        Some(Ok(value)) => value,
        Some(Err(error)) => bail!("the JSON report is cut short or damaged ({error})"),
        None => bail!("no JSON report in the output"),
    };
    let report: FioReport =
        serde_json::from_value(value).map_err(|error| anyhow::anyhow!("not a fio JSON report ({error})"))?;
    let job = |name: &str, rw: &str| -> Result<(&FioJob, BTreeMap<&str, &str>)> {
        let job = report.jobs.iter().find(|job| job.jobname == name).with_context(|| {
            let names: Vec<&str> = report.jobs.iter().map(|job| job.jobname.as_str()).collect();
            format!("it has no job {name} (its jobs: {})", names.join(", "))
        })?;
        // A job's own options override the global ones.
        let options: BTreeMap<&str, &str> = report
            .global_options
            .iter()
            .chain(&job.job_options)
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        if job.error != 0 {
            bail!("fio job {name} failed with error {}", job.error);
        }
        let found = options.get("rw").or(options.get("readwrite")).copied().unwrap_or("read");
        if found != rw {
            bail!("fio job {name} ran rw={found}, not rw={rw}");
        }
        if options.get("direct").copied() != Some("1") {
            bail!("fio job {name} did not run with direct=1: the page cache would have served its reads");
        }
        if job.read.io_bytes == 0 || job.read.runtime == 0 || job.read.total_ios == 0 {
            bail!("fio job {name} read nothing");
        }
        Ok((job, options))
    };
    let (seq, seq_options) = job(SEQ_READ_JOB, "read")?;
    let (rand, rand_options) = job(RAND_READ_JOB, "randread")?;
    let percentile = |at: f64| {
        rand.read
            .clat_ns
            .percentile
            .iter()
            .find(|(key, _)| key.parse::<f64>().is_ok_and(|key| key == at))
            .map(|(_, nanoseconds)| nanoseconds / 1e3)
            .with_context(|| format!("fio job {RAND_READ_JOB} has no {at}th latency percentile"))
    };
    Ok(StorageBaseline {
        tool: report.fio_version.clone(),
        measured_at: jiff::Timestamp::from_second(report.timestamp)
            .with_context(|| format!("its timestamp {} is not a time", report.timestamp))?,
        device,
        direct: true,
        file_size_bytes: size_option(&seq_options, "size")?,
        seq_read: SeqRead {
            block_size_bytes: size_option(&seq_options, "bs")?,
            iodepth: depth_option(&seq_options)?,
            runtime_ms: seq.read.runtime,
            bytes: seq.read.io_bytes,
            mib_per_s: known(seq.read.bw_bytes as f64 / 1048576.0),
        },
        rand_read: RandRead {
            block_size_bytes: size_option(&rand_options, "bs")?,
            iodepth: depth_option(&rand_options)?,
            runtime_ms: rand.read.runtime,
            ios: rand.read.total_ios,
            iops: known(rand.read.iops),
            latency_us: Latency {
                mean: known(rand.read.clat_ns.mean / 1e3),
                p50: known(percentile(50.0)?),
                p99: known(percentile(99.0)?),
            },
        },
    })
}

fn size_option(options: &BTreeMap<&str, &str>, name: &str) -> Result<u64> {
    let value = options.get(name).with_context(|| format!("its options give no {name}"))?;
    fio_size(value).with_context(|| format!("its {name}={value} is not a size"))
}

fn depth_option(options: &BTreeMap<&str, &str>) -> Result<u32> {
    // fio's default queue depth.
    let Some(value) = options.get("iodepth") else { return Ok(1) };
    value.parse().with_context(|| format!("its iodepth={value} is not a number"))
}

/// A fio size (`4k`, `1M`, `2G`, `4096`): fio's units are powers of 1024 (its default
/// `kb_base=1024`).
fn fio_size(text: &str) -> Option<u64> {
    let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let number: u64 = text[..digits_end].parse().ok()?;
    let unit = text[digits_end..].to_ascii_lowercase();
    let power = match unit.trim_end_matches('b').trim_end_matches('i') {
        "" => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        _ => return None,
    };
    number.checked_mul(1024u64.pow(power))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline(seq_mib_per_s: Option<f64>) -> StorageBaseline {
        StorageBaseline {
            tool: "fio-3.33".into(),
            measured_at: jiff::Timestamp::UNIX_EPOCH,
            device: Device {
                variant: "eks-gp3".into(),
                description: "gp3".into(),
                node: "n".into(),
                instance_type: None,
            },
            direct: true,
            file_size_bytes: 1 << 31,
            seq_read: SeqRead {
                block_size_bytes: 1 << 20,
                iodepth: 16,
                runtime_ms: 15_000,
                bytes: 1,
                mib_per_s: seq_mib_per_s,
            },
            rand_read: RandRead {
                block_size_bytes: 4096,
                iodepth: 64,
                runtime_ms: 15_000,
                ios: 1,
                iops: Some(3000.0),
                latency_us: Latency { mean: Some(1.0), p50: Some(1.0), p99: Some(1.0) },
            },
        }
    }

    /// The source's Q3: 130 MiB/s read from a gp3 volume provisioned for 125 MiB/s.
    #[test]
    fn the_sources_q3_is_volume_bound_and_a_slow_scan_is_not() {
        let gp3 = baseline(Some(125.0));
        let verdict = ReadVerdict::of(Some(130.0), Some(&gp3));
        assert!(matches!(verdict, ReadVerdict::VolumeBound { .. }), "{verdict:?}");
        assert_eq!(verdict.label(), "volume-bound (104 % of 125.0 MiB/s)");
        // The threshold itself counts; just below it does not.
        assert!(matches!(ReadVerdict::of(Some(112.5), Some(&gp3)), ReadVerdict::VolumeBound { .. }));
        let below = ReadVerdict::of(Some(110.0), Some(&gp3));
        assert_eq!(below.label(), "below the volume's rate (88 % of 125.0 MiB/s)");
        assert_eq!(ReadVerdict::of(Some(40.0), Some(&gp3)).label(), "below the volume's rate (32 % of 125.0 MiB/s)");
        // A short scan that fit in the throttle's first burst was not held to the volume.
        assert!(matches!(ReadVerdict::of(Some(156.25), Some(&gp3)), ReadVerdict::VolumeBound { .. }));
        let burst = ReadVerdict::of(Some(209.6), Some(&gp3));
        assert_eq!(burst.label(), "above the volume's rate (168 % of 125.0 MiB/s: too short to be held to it)");
    }

    #[test]
    fn without_a_baseline_or_file_reads_the_verdict_is_unknown() {
        assert_eq!(ReadVerdict::of(Some(130.0), None).label(), "unknown (no storage baseline)");
        assert_eq!(ReadVerdict::of(None, Some(&baseline(Some(125.0)))).label(), "unknown (nothing read from files)");
        assert_eq!(ReadVerdict::of(Some(130.0), Some(&baseline(None))), ReadVerdict::NoBaseline);
        assert_eq!(ReadVerdict::of(Some(130.0), Some(&baseline(Some(0.0)))), ReadVerdict::NoBaseline);
    }

    #[test]
    fn fio_sizes_are_powers_of_1024() {
        assert_eq!(fio_size("4k"), Some(4096));
        assert_eq!(fio_size("1M"), Some(1 << 20));
        assert_eq!(fio_size("128KiB"), Some(128 << 10));
        assert_eq!(fio_size("2G"), Some(2 << 30));
        assert_eq!(fio_size("512"), Some(512));
        for wrong in ["", "M", "1X", "1.5M", "-1"] {
            assert_eq!(fio_size(wrong), None, "{wrong}");
        }
    }

    #[test]
    fn an_answer_becomes_a_record_with_a_reason_when_unknown() {
        let unknown = StorageBaselineRecord::from_answer(Ok(None));
        assert_eq!(unknown.to_string(), format!("unknown ({TARGET_HAS_NONE})"));
        let failed = StorageBaselineRecord::from_answer(Err(anyhow::anyhow!("configmap is not JSON")));
        assert_eq!(failed.to_string(), "unknown (cannot read the target's storage baseline: configmap is not JSON)");
        let measured = StorageBaselineRecord::from_answer(Ok(Some(baseline(Some(125.0)))));
        assert!(measured.to_string().starts_with("sequential read 125.0 MiB/s (1.00 MiB blocks, iodepth 16)"));
    }
}

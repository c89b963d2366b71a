//! The whole command line, in one place.

use std::path::PathBuf;

use chbench::targets::TargetKind;
use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "Measure how ClickHouse behaves on your schema, node and storage")]
pub struct Xtask {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fetch and verify the pinned embedded engine (libchdb) and print its ClickHouse version.
    Setup(Setup),
    /// Run a benchmark (the logs benchmark unless another kind is named) on the chosen
    /// target, write a results bundle and its report.
    Bench(Box<Bench>),
    /// Render a results bundle's report (Markdown and SVG charts) again.
    Report(Report),
    /// Measure one statement and print its statistics record as JSON: the last statement
    /// of each SQL file, or a scenario pack's query on the pack's dataset.
    #[command(
        override_usage = "cargo xtask measure [--target TARGET] FILE.sql...\n       \
                          cargo xtask measure [--target TARGET] PACK QUERY [--design D] [--rows N]",
        after_long_help = MEASURE_FORMS
    )]
    Measure(Measure),
    /// A ClickHouse deployment on Kubernetes (EKS, or kind): up, status, baseline, collect, down.
    Eks(Eks),
    /// Remove the `container` target's containers whose run or process has ended (what
    /// every open of the target does first), so that none is left running after a run.
    CleanContainers(CleanContainers),
}

/// `cargo xtask eks <command>`. Built with the `eks` feature, which the first `eks`
/// command compiles (a laptop that never runs one never does).
#[derive(Debug, Args)]
pub struct Eks {
    #[command(subcommand)]
    pub command: EksCommand,
}

#[derive(Debug, Subcommand)]
pub enum EksCommand {
    /// Render and check the variant's manifests, apply them (server-side, with a password
    /// Secret made once) to the cluster your kubeconfig names, and wait for the pod.
    Up(EksUp),
    /// Show the deployment: its run and whether it was collected, the pod (image digest,
    /// restarts), its node (instance type, architecture, zone), the volume and its class.
    Status(EksStatus),
    /// Measure the storage ClickHouse uses with fio (sequential read MiB/s, random read
    /// IOPS and latency, direct I/O) on its node, and keep the result in the namespace,
    /// where every results bundle of the eks target reads it. `up` runs it too.
    Baseline(EksBaseline),
    /// Copy what a run on the deployment leaves out of the cluster: deployment.json (server,
    /// pod, node, volume), the run's system.query_log rows, and the bench bundles of its eks
    /// target; then mark the run collected, which down checks.
    Collect(EksCollect),
    /// Delete what up made (the namespace with everything in it, and the StorageClass
    /// unless another chbench namespace remains) and wait until it is gone. Refused until
    /// the run's results are collected, unless --force.
    Down(EksDown),
}

#[derive(Debug, Clone, Args)]
pub struct EksStatus {
    /// The deployment's namespace.
    #[arg(long, env = chbench::targets::eks::NAMESPACE_ENV, default_value = chbench::cluster::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// Print JSON (a part that is absent is {"absent": "why"}) instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct EksDown {
    /// The deployment's namespace.
    #[arg(long, env = chbench::targets::eks::NAMESPACE_ENV, default_value = chbench::cluster::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// Delete even when the run's results were not collected (they are lost with it).
    #[arg(long)]
    pub force: bool,
    /// List what would be deleted and kept, and whether a down would be refused; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// How long to wait for the namespace and the volume to be gone, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_seconds: u64,
}

#[derive(Debug, Clone, Args)]
pub struct EksCollect {
    /// The deployment's namespace.
    #[arg(long, env = chbench::targets::eks::NAMESPACE_ENV, default_value = chbench::cluster::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// Where the files go [default: RESULTS_DIR/eks/NAMESPACE-RUN, RUN the id `up` stamped
    /// on the namespace].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where `cargo xtask bench` wrote its bundles (its --results-dir).
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct EksBaseline {
    /// The namespace of the deployment to measure.
    #[arg(long, env = chbench::targets::eks::NAMESPACE_ENV, default_value = chbench::cluster::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// How long to wait for fio, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_seconds: u64,
}

#[derive(Debug, Clone, Args)]
pub struct EksUp {
    /// Where ClickHouse runs: eks-gp3 (the source's setup), eks-nvme (local NVMe) or kind.
    #[arg(long, value_enum, default_value = "eks-gp3")]
    pub variant: chbench::cluster::Variant,
    /// The namespace every object goes in (and `down` removes).
    #[arg(long, env = chbench::targets::eks::NAMESPACE_ENV, default_value = chbench::cluster::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// The benchmark node's instance type [default: m5.xlarge; m6id.xlarge for eks-nvme].
    #[arg(long)]
    pub node_type: Option<String>,
    /// The server image, pinned by tag or digest.
    #[arg(long, default_value = "clickhouse/clickhouse-server:26.3.33.24")]
    pub image: String,
    /// The data volume in GiB [default: 100; 10 on kind].
    #[arg(long)]
    pub volume_gib: Option<u32>,
    /// gp3 IOPS.
    #[arg(long, default_value_t = 3000)]
    pub iops: u32,
    /// gp3 throughput in MiB/s.
    #[arg(long, default_value_t = 125)]
    pub throughput_mibps: u32,
    /// How long to wait for the pod to be Ready, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_seconds: u64,
    /// Render and check the manifests and print them; send nothing to a cluster.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not measure the storage baseline (fio) once the pod is Ready; `cargo xtask eks
    /// baseline` measures it later.
    #[arg(long)]
    pub no_baseline: bool,
}

/// The two forms of `measure`, spelt out under `measure --help`.
const MEASURE_FORMS: &str = "\
The first argument decides the form: an existing file, or a name ending in .sql, means SQL
files; anything else is the name of a scenario pack (a folder under fixtures/ with a
claims.toml).

  cargo xtask measure FILE.sql...
      Runs each file's statements: every statement but the last is set-up, the last is
      measured. Prints one JSON document per file: {\"file\", \"answer\", \"stats\"}. A file
      takes no parameters: a {name} left in it is an error.

  cargo xtask measure PACK QUERY [--design D] [--rows N]
      Builds the pack's dataset (designs/D.sql, or broken/D.sql, filled with N rows by the
      pack's generator), or reuses it when it was built before, then measures
      queries/QUERY.sql there. Prints one JSON document: {\"pack\", \"query\", \"design\",
      \"rows\", \"answer\" (its lines sorted), \"table\", \"active_parts\", \"stats\",
      \"index_stages\"}, where index_stages is the query's EXPLAIN indexes = 1: the parts
      and granules each index stage started with and kept. Every name is checked before
      the engine starts. Progress goes to stderr.

Examples:
  cargo xtask measure setup_and_query.sql
  cargo xtask measure primary_key one_device_one_hour --rows 1M
  cargo xtask measure tenants one_tenant_one_hour --design time_first";

/// Which target to run on; the same names and variable as the tests.
#[derive(Debug, Clone, Args)]
pub struct TargetFlag {
    /// The engine to run on: auto (container when Docker answers, else embedded),
    /// embedded, container, url (reads CHBENCH_URL, CHBENCH_USER, CHBENCH_PASSWORD), or eks
    /// (the pod `cargo xtask eks up` made, in CHBENCH_NAMESPACE, default chbench).
    #[arg(long, env = "CHBENCH_TARGET", value_parser = parse_target, default_value = "auto")]
    pub target: TargetKind,
}

#[derive(Debug, Args)]
pub struct Setup {}

#[derive(Debug, Args)]
pub struct CleanContainers {}

/// `cargo xtask bench [KIND] [FLAGS]`: a kind's flags follow its name; without a kind,
/// the flags are the logs benchmark's.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Bench {
    #[command(subcommand)]
    pub kind: Option<BenchKind>,
    #[command(flatten)]
    pub logs: LogsBench,
}

/// The benchmark kinds.
#[derive(Debug, Subcommand)]
pub enum BenchKind {
    /// The ClickHouse on EKS field benchmark's measurement: ingest, storage by column,
    /// Q1-Q5 cold and warm, a bloom filter, cost (the default).
    Logs(LogsBench),
}

/// What every benchmark kind takes: where to run and where the bundle goes.
#[derive(Debug, Clone, Args)]
pub struct RunFlags {
    #[command(flatten)]
    pub target: TargetFlag,
    /// Where results bundles go (one folder per run).
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// The run's folder name: 1 to 100 letters, digits, `.`, `_`, `-` (default: UTC time,
    /// target, kind and scale, with `-2`, `-3`... if another run took it in the same second).
    #[arg(long)]
    pub run_id: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct LogsBench {
    #[command(flatten)]
    pub run: RunFlags,
    /// Rows to generate (K, M and G suffixes work: 10M; the source's scale is 100M).
    #[arg(long, default_value = "10M", value_parser = parse_count)]
    pub rows: u64,
    /// Warm runs per query after the direct-I/O run.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Node price, USD per hour (the source: m5.xlarge, Seoul, 2026-09).
    #[arg(long, default_value_t = 0.236)]
    pub node_usd_per_hour: f64,
    /// Volume price, USD per GB-month (the source: gp3, Seoul, 2026-09).
    #[arg(long, default_value_t = 0.0912)]
    pub volume_usd_per_gb_month: f64,
    /// Provisioned volume size, GiB (billed whatever the data uses).
    #[arg(long, default_value_t = 100.0)]
    pub volume_gib: f64,
    /// Retention projection: rows arriving per day.
    #[arg(long, default_value = "100M", value_parser = parse_count)]
    pub rows_per_day: u64,
    /// Retention projection: days kept.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub retention_days: u64,
    /// The volume's read limit in MiB/s, shown beside direct-I/O read rates (gp3 default: 125).
    #[arg(long)]
    pub volume_mib_per_s: Option<f64>,
}

#[derive(Debug, Args)]
pub struct Report {
    /// The run's id (its folder's name under the results directory), or the bundle's folder.
    pub run_id: String,
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct Measure {
    #[command(flatten)]
    pub target: TargetFlag,
    /// SQL files (the first one must exist or end in .sql; every statement but the last
    /// is set-up, the last is measured), or a pack's name and one of its queries.
    #[arg(required = true, value_name = "FILE.sql | PACK QUERY")]
    pub args: Vec<PathBuf>,
    /// Pack form only: the design to measure on, from designs/ or broken/ [default: the
    /// query's first design].
    #[arg(long, value_name = "D")]
    pub design: Option<String>,
    /// Pack form only: rows in the table (K, M and G suffixes work: 250K) [default: the
    /// query's smallest scale; for a broken design its largest, where its test runs].
    // Parsed by `run`, not by clap: a bad count is then one `error:` line and exit code 1,
    // like every other mistake in a pack command line.
    #[arg(long, value_name = "N")]
    pub rows: Option<String>,
}

/// The same strict parse as `CHBENCH_TARGET` gets in the tests.
fn parse_target(text: &str) -> Result<TargetKind, String> {
    TargetKind::parse(text).map_err(|error| error.to_string())
}

/// `10M` is 10,000,000; plain numbers and `_` separators work too.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let cleaned = text.trim().replace('_', "");
    let (digits, multiplier) = match cleaned.chars().last() {
        Some('k' | 'K') => (&cleaned[..cleaned.len() - 1], 1_000),
        Some('m' | 'M') => (&cleaned[..cleaned.len() - 1], 1_000_000),
        Some('g' | 'G') => (&cleaned[..cleaned.len() - 1], 1_000_000_000),
        _ => (cleaned.as_str(), 1),
    };
    let count: u64 = digits.parse().map_err(|_| format!("{text:?} is not a row count (e.g. 1000000 or 10M)"))?;
    let rows = count.checked_mul(multiplier).ok_or_else(|| format!("{text:?} is too large"))?;
    if rows == 0 {
        return Err("the row count must be positive".to_string());
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_counts_take_suffixes() {
        assert_eq!(parse_count("10M"), Ok(10_000_000));
        assert_eq!(parse_count("100m"), Ok(100_000_000));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert_eq!(parse_count("2k"), Ok(2000));
        assert!(parse_count("ten").unwrap_err().contains("not a row count"));
        assert!(parse_count("0").is_err());
    }

    #[test]
    fn the_target_is_parsed_by_clap_into_its_kind() {
        let target = |name: &str| {
            Xtask::try_parse_from(["xtask", "measure", "--target", name, "q.sql"]).map(|flags| match flags.command {
                Command::Measure(measure) => measure.target.target,
                other => panic!("parsed as {other:?}"),
            })
        };
        assert_eq!(target("embedded").unwrap(), TargetKind::Embedded);
        assert_eq!(target("url").unwrap(), TargetKind::Url);
        assert_eq!(target("auto").unwrap(), TargetKind::Auto);
        assert_eq!(target("eks").unwrap(), TargetKind::Eks);
        // As CHBENCH_TARGET in the tests: empty means auto.
        assert_eq!(target("").unwrap(), TargetKind::Auto);
        for wrong in ["Embedded", "kubernetes", "EKS"] {
            let error = target(wrong).unwrap_err();
            assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation, "{wrong}: {error}");
            assert!(error.to_string().contains("choose one of auto, embedded, container, url, eks"), "{error}");
        }
    }

    #[test]
    fn eks_status_and_down_take_their_flags_with_the_default_namespace() {
        let eks = |args: &[&str]| match Xtask::try_parse_from(["xtask", "eks"].iter().chain(args)).unwrap().command {
            Command::Eks(eks) => eks.command,
            other => panic!("parsed as {other:?}"),
        };
        match eks(&["status"]) {
            EksCommand::Status(status) => assert_eq!((status.namespace.as_str(), status.json), ("chbench", false)),
            other => panic!("parsed as {other:?}"),
        }
        match eks(&["status", "--namespace", "bench-2", "--json"]) {
            EksCommand::Status(status) => assert_eq!((status.namespace.as_str(), status.json), ("bench-2", true)),
            other => panic!("parsed as {other:?}"),
        }
        match eks(&["down"]) {
            EksCommand::Down(down) => {
                assert_eq!(
                    (down.namespace.as_str(), down.force, down.dry_run, down.timeout_seconds),
                    ("chbench", false, false, 600)
                )
            }
            other => panic!("parsed as {other:?}"),
        }
        match eks(&["down", "--force", "--dry-run", "--timeout-seconds", "30", "--namespace", "x"]) {
            EksCommand::Down(down) => {
                assert_eq!(
                    (down.namespace.as_str(), down.force, down.dry_run, down.timeout_seconds),
                    ("x", true, true, 30)
                )
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Xtask::command().debug_assert();
    }
}

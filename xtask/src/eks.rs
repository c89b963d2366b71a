//! `cargo xtask eks up|status|baseline|collect|down`: a ClickHouse deployment on
//! Kubernetes, and the storage baseline fio measures beside it. The Kubernetes client is
//! built with the `eks` feature only: an xtask built without it runs itself again as
//! `cargo run --features eks` ([`crate::features`]), so that the first `eks` command (or
//! the first `bench --target eks`) compiles the client and a laptop that never runs one
//! never does.

use anyhow::{Result, anyhow};
use chbench::cluster::checks::check_values;
use chbench::cluster::{Values, Variant};

use crate::flags::{Eks, EksUp};

impl Eks {
    pub fn run(self) -> Result<()> {
        // Checked before the Kubernetes client is built: a mistake costs no build.
        if let crate::flags::EksCommand::Up(up) = &self.command {
            values(up)?;
        }
        #[cfg(not(feature = "eks"))]
        {
            crate::features::rerun_with_the_feature(&chbench::targets::eks::NO_CLIENT, "cargo xtask eks", None)
                .map(|never| match never {})
        }
        #[cfg(feature = "eks")]
        match self.command {
            crate::flags::EksCommand::Up(up) => with_client::up(&up),
            crate::flags::EksCommand::Status(status) => with_client::status(&status),
            crate::flags::EksCommand::Down(down) => with_client::down(&down),
            crate::flags::EksCommand::Collect(collect) => with_client::collect(&collect),
            crate::flags::EksCommand::Baseline(baseline) => with_client::baseline(&baseline),
        }
    }
}

/// The manifests' values: the variant's defaults with what the flags give, checked. A flag
/// the variant would ignore is refused: it would otherwise do nothing, silently.
fn values(flags: &EksUp) -> Result<Values> {
    let variant = flags.variant;
    let ignored = |flag: &str, why: &str, instead: &str| {
        anyhow!("{flag}: {variant} {why}, so {flag} would do nothing; drop it, or use {instead}")
    };
    if variant != Variant::EksGp3 {
        let store = match variant {
            Variant::EksNvme => "the node's instance store",
            _ => "the cluster's default storage class",
        };
        let why = format!("has no gp3 volume (its data is on {store})");
        for (flag, given) in [("--iops", flags.iops), ("--throughput-mibps", flags.throughput_mibps)] {
            if given.is_some() {
                return Err(ignored(flag, &why, "--variant eks-gp3"));
            }
        }
    }
    if variant == Variant::Kind && flags.node_type.is_some() {
        let why = "chooses no node (its pod goes wherever the cluster puts it)";
        return Err(ignored("--node-type", why, "--variant eks-gp3 or eks-nvme"));
    }
    let defaults = Values::defaults(variant);
    let values = Values {
        namespace: flags.namespace.clone(),
        image: flags.image.clone(),
        node_type: flags.node_type.clone().unwrap_or(defaults.node_type),
        volume_gib: flags.volume_gib.unwrap_or(defaults.volume_gib),
        iops: flags.iops.unwrap_or(defaults.iops),
        throughput_mibps: flags.throughput_mibps.unwrap_or(defaults.throughput_mibps),
    };
    check_values(variant, &values)?;
    Ok(values)
}

#[cfg(feature = "eks")]
mod with_client {
    use std::time::Duration;

    use anyhow::{Context, Result, bail};
    use chbench::cluster::last_up::{LastUp, namespace_for};
    use chbench::cluster::{
        DownOutcome, NoDeployment, UpOutcome, baseline, down_blocking, status_blocking, up as deploy,
    };

    use crate::flags::{EksBaseline, EksCollect, EksDown, EksStatus, EksUp};

    fn progress(line: &str) {
        chbench::say!("chbench: {line}");
    }

    fn timeout(seconds: u64) -> Result<Duration> {
        if seconds == 0 {
            bail!("--timeout-seconds must be at least 1");
        }
        Ok(Duration::from_secs(seconds))
    }

    /// The namespace a command acts on: `--namespace` (or `CHBENCH_NAMESPACE`), else the
    /// last `up`'s, else the default. A namespace given needs no record, even a bad one.
    /// A namespace taken from the record is the record's cluster's: on another (the
    /// kubeconfig switched), one line, before anything there is read or deleted.
    fn namespace(given: Option<&str>) -> Result<String> {
        match given {
            Some(namespace) => chbench::cluster::check_namespace(namespace).map(|()| namespace.to_string()),
            None => {
                let (namespace, record) = namespace_for(None)?;
                if let Some(record) = record {
                    record.check_cluster(&chbench::cluster::api_server::kubeconfig_cluster()?)?;
                }
                Ok(namespace)
            }
        }
    }

    pub fn collect(flags: &EksCollect) -> Result<()> {
        let namespace = namespace(flags.namespace.as_deref())?;
        let collected = chbench::collect::collect(&namespace, &flags.results_dir, flags.out.as_deref(), |line| {
            chbench::say!("chbench: {line}")
        })?;
        chbench::say!(
            "chbench: run {} collected ({} query_log rows, {} bundles); namespace {} marked collected",
            collected.run_id,
            collected.query_log_rows,
            collected.bundles.len(),
            namespace
        );
        println!("{}", collected.folder.display());
        Ok(())
    }

    pub fn up(flags: &EksUp) -> Result<()> {
        let values = super::values(flags)?;
        // The API server the deployment goes to, read as `up` starts (the kubeconfig could
        // name another by the time the pod is Ready), for the record.
        let cluster = if flags.dry_run { None } else { Some(chbench::cluster::api_server::kubeconfig_cluster()?) };
        let namespace_given = std::env::var_os(chbench::targets::eks::NAMESPACE_ENV).is_some();
        let outcome = deploy(flags.variant, &values, timeout(flags.timeout_seconds)?, flags.dry_run, progress)
            .map_err(|error| match LastUp::recall() {
                // An up that failed is not remembered: the other commands still default to
                // the last one's namespace, which this one is not.
                Ok(Some(record)) if record.namespace != values.namespace && !namespace_given => error.context(format!(
                    "`cargo xtask eks status` and `down` without --namespace act on namespace {}, the last up's \
                     (give --namespace {} for this one)",
                    record.namespace, values.namespace
                )),
                _ => error,
            })?;
        match outcome {
            UpOutcome::Planned(documents) => {
                // What would be applied, in order, each document under its file and line.
                for document in documents {
                    println!("---\n# {}\n{}", document.location(), document.yaml.trim_end());
                }
            }
            UpOutcome::Ready { namespace, run } => {
                progress(&format!("ClickHouse is Ready in namespace {namespace} ({}), run {run}", flags.variant));
                // Before the baseline, which may fail: the deployment is there to use.
                let last_up = LastUp {
                    cluster: cluster.clone().context("the kubeconfig's cluster was not read")?,
                    namespace: namespace.clone(),
                    variant: flags.variant.to_string(),
                    run,
                    brought_up_at: jiff::Timestamp::now(),
                };
                last_up.remember()?;
                progress(&format!(
                    "`cargo xtask bench` with no target runs on it now, until `{}` (--target chooses another)",
                    chbench::cluster::eks_command("down", &namespace)
                ));
                if !flags.no_baseline {
                    measure_baseline(&namespace, baseline::DEFAULT_TIMEOUT).with_context(|| {
                        format!(
                            "ClickHouse is Ready in namespace {namespace}, but its storage baseline failed; \
                             `cargo xtask eks baseline` tries again"
                        )
                    })?;
                }
            }
        }
        Ok(())
    }

    pub fn status(flags: &EksStatus) -> Result<()> {
        let status = status_blocking(&namespace(flags.namespace.as_deref())?)?;
        if flags.json {
            let json = serde_json::to_string_pretty(&status).context("cannot write the status as JSON")?;
            println!("{json}");
        } else {
            print!("{status}");
        }
        Ok(())
    }

    pub fn down(flags: &EksDown) -> Result<()> {
        let namespace = namespace(flags.namespace.as_deref())?;
        let timeout = timeout(flags.timeout_seconds)?;
        let outcome = down_blocking(&namespace, flags.force, flags.dry_run, timeout, progress);
        // Gone, by this down or before it (and not a dry run's word): bench no longer
        // chooses it, if it is the last up's, on this cluster.
        let gone = match &outcome {
            Ok(DownOutcome::Deleted(_)) => true,
            Ok(DownOutcome::Planned(_)) => false,
            Err(error) => !flags.dry_run && error.downcast_ref::<NoDeployment>().is_some(),
        };
        let forgotten = gone && forget_if_here(&namespace);
        // Found gone, and forgotten: what the user wanted done is done.
        if forgotten && let Err(error) = &outcome {
            progress(&format!("{error:#}: nothing left to delete"));
            return Ok(());
        }
        match outcome? {
            DownOutcome::Planned(plan) => print!("{plan}"),
            DownOutcome::Deleted(plan) => {
                progress(&format!("namespace {} is gone, with its run {}", plan.namespace, plan.run));
                for kept in &plan.keep {
                    progress(&format!("kept {kept}"));
                }
            }
        }
        Ok(())
    }

    /// Forgets the last up's record when it is of `namespace` on the cluster the kubeconfig
    /// names now; what goes wrong is a warning: the down itself is done. Whether it forgot.
    fn forget_if_here(namespace: &str) -> bool {
        // The kubeconfig is read only for a record of this namespace.
        let elsewhere = match LastUp::recall() {
            Ok(Some(record)) if record.namespace == namespace => {
                chbench::cluster::api_server::kubeconfig_cluster().is_ok_and(|here| here != record.cluster)
            }
            _ => false,
        };
        let forgotten = if elsewhere { Ok(None) } else { LastUp::forget(namespace) };
        match forgotten {
            Ok(Some(record)) => {
                progress(&record.forgotten_line());
                true
            }
            Ok(None) => false,
            Err(error) => {
                chbench::say!("chbench: warning: {error:#}");
                false
            }
        }
    }

    pub fn baseline(flags: &EksBaseline) -> Result<()> {
        measure_baseline(&namespace(flags.namespace.as_deref())?, timeout(flags.timeout_seconds)?)
    }

    fn measure_baseline(namespace: &str, timeout: Duration) -> Result<()> {
        let measured = baseline::run(namespace, timeout, progress)?;
        progress(&format!("storage baseline: {}", measured.summary()));
        progress(&format!("kept in {namespace}/{}", baseline::RESULT_CONFIG_MAP));
        Ok(())
    }
}

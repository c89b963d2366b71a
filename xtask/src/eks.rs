//! `cargo xtask eks up` and `baseline`: a ClickHouse deployment on Kubernetes and the
//! storage baseline fio measures beside it. The Kubernetes client is
//! built with the `eks` feature only: an xtask built without it runs itself again as
//! `cargo run --features eks`, so that the first `eks` command compiles the client and a
//! laptop that never runs one never does.

use anyhow::Result;

use crate::flags::Eks;

impl Eks {
    pub fn run(self) -> Result<()> {
        #[cfg(not(feature = "eks"))]
        {
            rerun_with_the_eks_feature()
        }
        #[cfg(feature = "eks")]
        match self.command {
            crate::flags::EksCommand::Up(up) => with_client::up(&up),
            crate::flags::EksCommand::Baseline(baseline) => with_client::baseline(&baseline),
        }
    }
}

#[cfg(feature = "eks")]
mod with_client {
    use anyhow::{Context, Result, bail};
    use chbench::cluster::{UpOutcome, Values, baseline, up as deploy};

    use crate::flags::{EksBaseline, EksUp};

    /// The manifests' values: the variant's defaults, with what the flags give.
    fn values(flags: &EksUp) -> Values {
        let defaults = Values::defaults(flags.variant);
        Values {
            namespace: flags.namespace.clone(),
            image: flags.image.clone(),
            node_type: flags.node_type.clone().unwrap_or(defaults.node_type),
            volume_gib: flags.volume_gib.unwrap_or(defaults.volume_gib),
            iops: flags.iops,
            throughput_mibps: flags.throughput_mibps,
        }
    }

    pub fn up(flags: &EksUp) -> Result<()> {
        let timeout = std::time::Duration::from_secs(flags.timeout_seconds);
        if timeout.is_zero() {
            bail!("--timeout-seconds must be at least 1");
        }
        match deploy(flags.variant, &values(flags), timeout, flags.dry_run, |line| eprintln!("chbench: {line}"))? {
            UpOutcome::Planned(documents) => {
                // What would be applied, in order, each document under its file and line.
                for document in documents {
                    println!("---\n# {}\n{}", document.location(), document.yaml.trim_end());
                }
            }
            UpOutcome::Ready { namespace } => {
                eprintln!("chbench: ClickHouse is Ready in namespace {namespace} ({})", flags.variant);
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

    pub fn baseline(flags: &EksBaseline) -> Result<()> {
        let timeout = std::time::Duration::from_secs(flags.timeout_seconds);
        if timeout.is_zero() {
            bail!("--timeout-seconds must be at least 1");
        }
        measure_baseline(&flags.namespace, timeout)
    }

    fn measure_baseline(namespace: &str, timeout: std::time::Duration) -> Result<()> {
        let measured = baseline::run(namespace, timeout, |line| eprintln!("chbench: {line}"))?;
        eprintln!("chbench: storage baseline: {}", measured.summary());
        eprintln!("chbench: kept in {namespace}/{}", baseline::RESULT_CONFIG_MAP);
        Ok(())
    }
}

/// Runs this command again from an xtask built with the `eks` feature, passing on its
/// exit code. Through std::process rather than xshell: xshell reports a failed child as an
/// error of its own, and the child has already printed its one error line.
#[cfg(not(feature = "eks"))]
fn rerun_with_the_eks_feature() -> Result<()> {
    use anyhow::Context;
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["run", "--quiet", "--package", "xtask", "--features", "eks", "--bin", "xtask", "--"])
        .args(&arguments)
        .current_dir(chbench::engine::workspace_root())
        .status()
        .context("cannot run cargo to build xtask with the eks feature")?;
    std::process::exit(status.code().unwrap_or(1));
}

//! An eks matrix variant's deployment steps, through the functions the `eks` commands use:
//! `up` ([`crate::cluster::deploy::up_through`], then the storage baseline unless the
//! matrix turns it off), `collect` ([`crate::collect::collect_through`], into
//! `eks-<variant>/` in the matrix folder) and `down`
//! ([`crate::cluster::lifecycle::down_through`], never forced: it is refused unless the
//! collect marked the run collected). With the `eks` feature only.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use super::{DeploymentSteps, PlannedVariant, VariantDeployment};
use crate::cluster::baseline;
use crate::cluster::deploy::{ClusterConnection, Kubeconfig, up_through};
use crate::cluster::lifecycle::down_through;
use crate::collect::{ServerReads, collect_through, read_server};

/// How often `down` asks whether the namespace is gone.
const DOWN_POLL: Duration = Duration::from_secs(2);

/// The reads of ClickHouse a collect makes, for a deployment's namespace since its start.
pub type ReadServer = Box<dyn FnMut(&str, jiff::Timestamp) -> Result<ServerReads>>;

/// The deployment steps on the cluster `connection` reaches, ClickHouse read by `server`.
pub struct ClusterDeployments<Connection> {
    pub connection: Connection,
    pub server: ReadServer,
    /// How often `down` polls while it waits.
    pub poll: Duration,
}

impl ClusterDeployments<Kubeconfig> {
    /// What `bench --matrix` uses: the kubeconfig's cluster, ClickHouse through the `eks` target.
    pub fn from_kubeconfig() -> ClusterDeployments<Kubeconfig> {
        ClusterDeployments { connection: Kubeconfig, server: Box::new(read_server), poll: DOWN_POLL }
    }
}

fn progress(line: &str) {
    crate::say!("chbench: {line}");
}

impl<Connection: ClusterConnection> DeploymentSteps for ClusterDeployments<Connection> {
    fn up(&mut self, planned: &PlannedVariant<'_>, deployment: &VariantDeployment) -> Result<()> {
        let eks = planned.matrix.eks.as_ref().context("an eks variant in a matrix without its [eks] values")?;
        let timeout = Duration::from_secs(eks.timeout_seconds);
        up_through(&self.connection, deployment.storage, &deployment.values, timeout, false, progress)?;
        if eks.baseline {
            let namespace = &deployment.values.namespace;
            let measured = baseline::run(namespace, baseline::DEFAULT_TIMEOUT, progress).with_context(|| {
                format!("ClickHouse is Ready in namespace {namespace}, but its storage baseline failed")
            })?;
            progress(&format!("storage baseline: {}", measured.summary()));
        }
        Ok(())
    }

    fn collect(&mut self, planned: &PlannedVariant<'_>, deployment: &VariantDeployment) -> Result<PathBuf> {
        let out = planned.results_dir.join(format!("eks-{}", planned.variant.name));
        let collected = collect_through(
            &self.connection,
            &mut *self.server,
            &deployment.values.namespace,
            &planned.results_dir,
            Some(&out),
            progress,
        )?;
        progress(&format!(
            "run {} collected ({} query_log rows, {} bundles) into {}",
            collected.run_id,
            collected.query_log_rows,
            collected.bundles.len(),
            collected.folder.display()
        ));
        Ok(collected.folder)
    }

    fn down(&mut self, planned: &PlannedVariant<'_>, deployment: &VariantDeployment) -> Result<()> {
        let eks = planned.matrix.eks.as_ref().context("an eks variant in a matrix without its [eks] values")?;
        let timeout = Duration::from_secs(eks.timeout_seconds);
        let namespace = &deployment.values.namespace;
        down_through(&self.connection, namespace, false, false, timeout, self.poll, progress)?;
        // The matrix brought it down: a run with no target no longer chooses it, if the last
        // `eks up` was of the same namespace.
        if let Ok(Some(forgotten)) = crate::cluster::last_up::LastUp::forget(namespace) {
            progress(&forgotten.forgotten_line());
        }
        Ok(())
    }
}

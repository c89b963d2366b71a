//! The annotations chbench writes on a deployment's Namespace after `up`: the run a
//! collect copied out and when ([`mark_collected`]), and when a bench last used the
//! deployment ([`BenchUse`]), which `down` compares.

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};

use super::deploy::FIELD_MANAGER;
use super::{COLLECTED_ANNOTATION, COLLECTED_AT_ANNOTATION, LAST_USED_ANNOTATION};

/// Annotates the Namespace as collected for `run_id` by a collect that started at
/// `started` (what `down` checks).
pub async fn mark_collected(client: &Client, namespace: &str, run_id: &str, started: jiff::Timestamp) -> Result<()> {
    annotate(
        client,
        namespace,
        serde_json::json!({
            COLLECTED_ANNOTATION: run_id,
            COLLECTED_AT_ANNOTATION: started.to_string(),
        }),
    )
    .await
}

/// Stamps the Namespace with the time a bench used the deployment (what the `eks` target
/// does when it opens and when it closes).
pub async fn stamp_last_used(client: &Client, namespace: &str, at: jiff::Timestamp) -> Result<()> {
    annotate(client, namespace, serde_json::json!({ LAST_USED_ANNOTATION: at.to_string() })).await
}

/// How long stamping a use may take: a bench does not wait long on its bookkeeping.
const STAMP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A bench's use of the deployment in a namespace: stamped on the Namespace
/// ([`LAST_USED_ANNOTATION`]) when it begins and again when it ends (is dropped), so that
/// `down` knows results may have been written after the last collect. Best effort, since
/// the measurement matters more: a stamp that fails is one line on stderr, never an error.
pub struct BenchUse {
    client: Client,
    namespace: String,
    /// Runs the client's requests; the caller blocks on it, from outside any runtime.
    runtime: tokio::runtime::Handle,
}

impl BenchUse {
    /// Stamps the beginning of a use.
    pub fn begin(client: Client, namespace: &str, runtime: tokio::runtime::Handle) -> BenchUse {
        let used = BenchUse { client, namespace: namespace.to_string(), runtime };
        used.stamp();
        used
    }

    fn stamp(&self) {
        let namespace = &self.namespace;
        // block_on inside another runtime would panic.
        let stamped = if tokio::runtime::Handle::try_current().is_ok() {
            Err(anyhow::anyhow!("called inside an async runtime"))
        } else {
            self.runtime.block_on(async {
                let stamping = stamp_last_used(&self.client, namespace, jiff::Timestamp::now());
                tokio::time::timeout(STAMP_TIMEOUT, stamping)
                    .await
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("no answer in {} s", STAMP_TIMEOUT.as_secs())))
            })
        };
        if let Err(error) = stamped {
            crate::say!(
                "chbench: {error:#}: down may not know that a bench used the deployment in {namespace} after the \
                 last collect"
            );
        }
    }
}

/// The end of a use: results may have been written up to now.
impl Drop for BenchUse {
    fn drop(&mut self) {
        self.stamp();
    }
}

/// A merge patch of `annotations` alone: an apply by the manager that owns the whole
/// Namespace (`up`'s) would drop the fields it did not repeat.
async fn annotate(client: &Client, namespace: &str, annotations: serde_json::Value) -> Result<()> {
    let names: Vec<&str> = annotations.as_object().into_iter().flat_map(|all| all.keys()).map(String::as_str).collect();
    let names = names.join(" and ");
    let patch = serde_json::json!({ "metadata": { "annotations": &annotations } });
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.to_string()), ..PatchParams::default() };
    Api::<Namespace>::all(client.clone())
        .patch(namespace, &params, &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cannot annotate namespace {namespace} with {names}"))?;
    Ok(())
}

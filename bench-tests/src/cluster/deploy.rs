//! Putting a deployment on a cluster and waiting for it: server-side apply of the
//! checked manifests and of the password Secret, then a wait on the pod's Ready
//! condition that, when it times out, says why (the pod's events and its last log lines).
//!
//! Async, on kube's client; the caller owns the runtime (the target API is blocking, as
//! the server targets' is, each with a runtime of its own).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{Event, Namespace, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, LogParams, Patch, PatchParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::manifests::{Object, PART_OF};

/// The field manager of every server-side apply: what `kubectl` shows as the owner.
pub const FIELD_MANAGER: &str = "chbench";
/// The Secret holding ClickHouse's password (the manifests read it by this name).
pub const PASSWORD_SECRET: &str = "clickhouse-password";
/// Log lines of the pod shown when a wait fails.
const LOG_LINES: i64 = 40;

/// Applies each object in order (namespace first, as the manifests list them), owning
/// its fields (a second `up` changes what the flags changed, and nothing else).
pub async fn apply(client: &Client, objects: &[Object]) -> Result<()> {
    for object in objects {
        match object {
            Object::Namespace(namespace) => apply_one(Api::<Namespace>::all(client.clone()), namespace).await,
            Object::StorageClass(class) => apply_one(Api::<StorageClass>::all(client.clone()), class).await,
            Object::PersistentVolumeClaim(claim) => {
                apply_one(
                    Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace_of(claim.as_ref())?),
                    claim.as_ref(),
                )
                .await
            }
            Object::Pod(pod) => {
                apply_one(Api::<Pod>::namespaced(client.clone(), namespace_of(pod.as_ref())?), pod.as_ref()).await
            }
            Object::Service(service) => {
                apply_one(Api::<Service>::namespaced(client.clone(), namespace_of(service.as_ref())?), service.as_ref())
                    .await
            }
        }?;
    }
    Ok(())
}

async fn apply_one<K>(api: Api<K>, object: &K) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    let name = object.meta().name.clone().context("an object without a name")?;
    let kind = K::kind(&()).to_string();
    api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(object))
        .await
        .with_context(|| format!("cannot apply {kind} {name}"))?;
    Ok(())
}

fn namespace_of<K: Resource<DynamicType = ()>>(object: &K) -> Result<&str> {
    let name = object.meta().name.as_deref().unwrap_or("?");
    object.meta().namespace.as_deref().with_context(|| format!("{} {name} names no namespace", K::kind(&())))
}

/// The Secret with ClickHouse's password: 122 random bits (a UUID v4), made here, never written
/// anywhere but the cluster. The caller keeps the password in memory for the client.
pub fn password_secret(namespace: &str) -> (Secret, String) {
    let password = uuid::Uuid::new_v4().simple().to_string();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(PASSWORD_SECRET.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(PART_OF.0.to_string(), PART_OF.1.to_string())])),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([("password".to_string(), password.clone())])),
        ..Secret::default()
    };
    (secret, password)
}

/// Applies the password Secret.
pub async fn apply_secret(client: &Client, secret: &Secret) -> Result<()> {
    apply_one(Api::<Secret>::namespaced(client.clone(), namespace_of(secret)?), secret).await
}

/// Waits until the pod is Ready, asking every `poll`; `progress` hears the pod's phase
/// when it changes. After `timeout` the error says so and carries the pod's events and
/// its last log lines, which is where the reason is (an image that cannot be pulled, a
/// volume that cannot bind, a server that exits).
pub async fn wait_for_ready(
    client: &Client,
    namespace: &str,
    pod: &str,
    timeout: Duration,
    poll: Duration,
    mut progress: impl FnMut(&str),
) -> Result<()> {
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let started = tokio::time::Instant::now();
    let mut last_phase = String::new();
    loop {
        let current = pods.get(pod).await.with_context(|| format!("cannot read pod {namespace}/{pod}"))?;
        let status = current.status.unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|condition| condition.type_ == "Ready" && condition.status == "True");
        if ready {
            return Ok(());
        }
        let phase = status.phase.unwrap_or_else(|| "Unknown".to_string());
        if phase != last_phase {
            progress(&format!("pod {namespace}/{pod}: {phase}"));
            last_phase = phase.clone();
        }
        if started.elapsed() >= timeout {
            let why = why_not_ready(client, namespace, pod).await;
            bail!("pod {namespace}/{pod} was not Ready after {} s (phase {phase}){why}", timeout.as_secs());
        }
        tokio::time::sleep(poll).await;
    }
}

/// The pod's events and last log lines, as text after a failed wait; what cannot be read
/// says why, since the wait's error matters more.
async fn why_not_ready(client: &Client, namespace: &str, pod: &str) -> String {
    let events = Api::<Event>::namespaced(client.clone(), namespace);
    let listed = events.list(&ListParams::default().fields(&format!("involvedObject.name={pod}"))).await;
    let events = match listed {
        Ok(list) => list
            .items
            .iter()
            .map(|event| {
                format!(
                    "{} {}: {}",
                    event.type_.as_deref().unwrap_or("?"),
                    event.reason.as_deref().unwrap_or("?"),
                    event.message.as_deref().unwrap_or("").trim()
                )
            })
            .collect::<Vec<_>>()
            .join("\n  "),
        Err(error) => format!("(cannot list its events: {error})"),
    };
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let logs = match pods.logs(pod, &LogParams { tail_lines: Some(LOG_LINES), ..LogParams::default() }).await {
        Ok(logs) if logs.trim().is_empty() => "(none)".to_string(),
        Ok(logs) => logs.trim_end().replace('\n', "\n  "),
        Err(error) => format!("(cannot read its log: {error})"),
    };
    format!("\nevents:\n  {events}\nlast {LOG_LINES} log lines:\n  {logs}")
}

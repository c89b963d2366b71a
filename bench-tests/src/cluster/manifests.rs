//! The manifests of a deployment: `manifests/<variant>/*.yaml` with `${name}` values
//! filled from flags, split into documents that know their file and line, parsed into
//! the Kubernetes API types and checked: every object labelled, image tags pinned,
//! requests and limits set, a readiness probe, nothing that exposes ClickHouse (and a
//! NetworkPolicy that denies its pod all ingress), no privilege escalation and no
//! service-account token. A variant's `fio.yaml` is the storage baseline's Job
//! ([`render_storage_baseline`]), rendered apart from the deployment (`up` applies the
//! rest) since it runs on the node the pod was given. `load/clickhouse-benchmark.yaml`
//! is a throughput level's load, the same for every variant ([`render_load`]).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PersistentVolumeClaim, Pod, PodSpec, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::de::DeserializeOwned;

pub use super::{Values, Variant};
use crate::files::shown;
use crate::sql::is_identifier;

/// The label every object carries; `status` and `down` select on it.
pub const PART_OF: (&str, &str) = ("app.kubernetes.io/part-of", "chbench");

/// Whether labels carry [`PART_OF`], the mark of what chbench made.
pub fn is_part_of(labels: Option<&BTreeMap<String, String>>) -> bool {
    labels.and_then(|labels| labels.get(PART_OF.0)).is_some_and(|value| value == PART_OF.1)
}

pub use super::DEFAULT_IMAGE;
pub use super::checks::check_image;
use super::checks::check_values;

/// The storage baseline's file in each variant's folder; the deployment is the others.
pub const STORAGE_BASELINE_FILE: &str = "fio.yaml";
/// The load Job of a level run inside the cluster, under `manifests/`.
pub const LOAD_FILE: &str = "load/clickhouse-benchmark.yaml";

/// One YAML document of a rendered manifest file.
#[derive(Debug, Clone)]
pub struct Document {
    pub file: String,
    /// 1-based line of the document's first line in its file.
    pub line: usize,
    pub yaml: String,
}

impl Document {
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// A parsed object of a variant, in the types the Kubernetes API uses.
#[derive(Debug, Clone)]
pub enum Object {
    Namespace(Namespace),
    StorageClass(StorageClass),
    PersistentVolumeClaim(Box<PersistentVolumeClaim>),
    Pod(Box<Pod>),
    Service(Box<Service>),
    ConfigMap(Box<ConfigMap>),
    Job(Box<Job>),
    NetworkPolicy(Box<NetworkPolicy>),
}

impl Object {
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Namespace(_) => "Namespace",
            Object::StorageClass(_) => "StorageClass",
            Object::PersistentVolumeClaim(_) => "PersistentVolumeClaim",
            Object::Pod(_) => "Pod",
            Object::Service(_) => "Service",
            Object::ConfigMap(_) => "ConfigMap",
            Object::Job(_) => "Job",
            Object::NetworkPolicy(_) => "NetworkPolicy",
        }
    }

    fn labels(&self) -> Option<&BTreeMap<String, String>> {
        match self {
            Object::Namespace(object) => object.metadata.labels.as_ref(),
            Object::StorageClass(object) => object.metadata.labels.as_ref(),
            Object::PersistentVolumeClaim(object) => object.metadata.labels.as_ref(),
            Object::Pod(object) => object.metadata.labels.as_ref(),
            Object::Service(object) => object.metadata.labels.as_ref(),
            Object::ConfigMap(object) => object.metadata.labels.as_ref(),
            Object::Job(object) => object.metadata.labels.as_ref(),
            Object::NetworkPolicy(object) => object.metadata.labels.as_ref(),
        }
    }
}

/// `manifests/` of this workspace.
pub fn manifests_root() -> PathBuf {
    crate::files::workspace_root().join("manifests")
}

/// The variant's deployment (its files but [`STORAGE_BASELINE_FILE`]), rendered with
/// `values` and split into documents. A `${name}` without a value, or a value that is
/// not one (an image without a pinned tag, an empty node type on EKS), is an error
/// naming the file and line.
pub fn render(variant: Variant, values: &Values) -> Result<Vec<Document>> {
    check_values(variant, values)?;
    let files = variant_files(variant)?;
    let deployment = files.into_iter().filter(|path| !path.ends_with(STORAGE_BASELINE_FILE)).collect();
    render_files(deployment, &values.by_name())
}

/// The variant's storage baseline Job ([`STORAGE_BASELINE_FILE`]), rendered with the
/// deployment's `values`, `node_name`, the node the ClickHouse pod runs on, and
/// `storage_class`, the StorageClass of ClickHouse's claim (`${storage_class}`; none on
/// eks-nvme, whose data is an emptyDir).
pub fn render_storage_baseline(
    variant: Variant,
    values: &Values,
    node_name: &str,
    storage_class: Option<&str>,
) -> Result<Vec<Document>> {
    check_values(variant, values)?;
    // A node name and a StorageClass name are DNS subdomains: they go into the YAML as
    // they are.
    if !is_subdomain(node_name) {
        bail!("node name {node_name:?} is not a Kubernetes node name");
    }
    let path = manifests_root().join(variant.folder()).join(STORAGE_BASELINE_FILE);
    let mut by_name = values.by_name();
    by_name.insert("node_name", node_name.to_string());
    if let Some(class) = storage_class {
        if !is_subdomain(class) {
            bail!("storage class {class:?} is not a Kubernetes StorageClass name");
        }
        by_name.insert("storage_class", class.to_string());
    }
    render_files(vec![path], &by_name)
}

/// The load Job of a throughput level run inside the cluster ([`LOAD_FILE`]), rendered for
/// the deployment in `namespace` running `image`, ended by Kubernetes after
/// `deadline_seconds`. The same for every variant: what a level asks for is filled in
/// by `cluster::load`.
pub fn render_load(namespace: &str, image: &str, deadline_seconds: u64) -> Result<Vec<Document>> {
    super::check_namespace(namespace)?;
    check_image(image)?;
    let by_name = BTreeMap::from([
        ("namespace", namespace.to_string()),
        ("image", image.to_string()),
        ("deadline_seconds", deadline_seconds.to_string()),
    ]);
    render_files(vec![manifests_root().join(LOAD_FILE)], &by_name)
}

/// What the load's objects must be: those of a deployment, and one Job.
pub fn check_load(objects: &[Object]) -> Result<()> {
    check_objects(objects)?;
    if objects.iter().filter(|object| matches!(object, Object::Job(_))).count() != 1 {
        bail!("the load's manifest must define one Job to run clickhouse-benchmark in");
    }
    Ok(())
}

/// A DNS subdomain (RFC 1123), what Kubernetes names nodes and StorageClasses with.
fn is_subdomain(name: &str) -> bool {
    let characters = name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    !name.is_empty() && name.len() <= 253 && characters
}

/// The `.yaml` and `.yml` files of the variant's folder, sorted.
fn variant_files(variant: Variant) -> Result<Vec<PathBuf>> {
    let folder = manifests_root().join(variant.folder());
    let mut files: Vec<PathBuf> = fs::read_dir(&folder)
        .with_context(|| format!("cannot list {}", shown(&folder)))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "yaml" || extension == "yml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("{} holds no .yaml or .yml file", shown(&folder));
    }
    Ok(files)
}

fn render_files(files: Vec<PathBuf>, by_name: &BTreeMap<&'static str, String>) -> Result<Vec<Document>> {
    let mut documents = Vec::new();
    for path in files {
        let text = fs::read_to_string(&path).with_context(|| format!("cannot read {}", shown(&path)))?;
        documents.extend(split_documents(&shown(&path), &fill(&path, &text, by_name)?));
    }
    Ok(documents)
}

/// Replaces each `${name}`; the error for one without a value names its line.
fn fill(path: &Path, text: &str, values: &BTreeMap<&'static str, String>) -> Result<String> {
    let mut filled = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        filled.push_str(&rest[..start]);
        let line = text[..text.len() - rest.len() + start].matches('\n').count() + 1;
        let after = &rest[start + 2..];
        let name = after.find('}').map(|end| &after[..end]).filter(|name| is_identifier(name));
        let Some(name) = name else {
            bail!("{}:{line}: `${{` opens no ${{name}} value", shown(path));
        };
        let value = values.get(name).ok_or_else(|| {
            let known: Vec<&str> = values.keys().copied().collect();
            anyhow!("{}:{line}: ${{{name}}} has no value (the flags give: {})", shown(path), known.join(", "))
        })?;
        filled.push_str(value);
        rest = &after[name.len() + 1..];
    }
    filled.push_str(rest);
    Ok(filled)
}

/// Documents separated by `---` lines, comment-only documents left out.
fn split_documents(file: &str, text: &str) -> Vec<Document> {
    let mut documents = Vec::new();
    let mut current = String::new();
    let mut first_line = 1;
    for (index, line) in text.lines().enumerate() {
        // `---`, alone or followed by a comment.
        let separator =
            line.strip_prefix("---").is_some_and(|rest| rest.trim().is_empty() || rest.trim_start().starts_with('#'));
        if separator {
            push_document(file, first_line, &mut current, &mut documents);
            first_line = index + 2;
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    push_document(file, first_line, &mut current, &mut documents);
    documents
}

fn push_document(file: &str, line: usize, yaml: &mut String, documents: &mut Vec<Document>) {
    let has_content = yaml.lines().any(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'));
    if has_content {
        documents.push(Document { file: file.to_string(), line, yaml: std::mem::take(yaml) });
    }
    yaml.clear();
}

/// The documents as API objects; a kind this deployment does not use is an error.
pub fn parse(documents: &[Document]) -> Result<Vec<Object>> {
    documents
        .iter()
        .map(|document| {
            let header: serde_json::Value = serde_saphyr::from_str(&document.yaml)
                .map_err(|error| anyhow!("{}: not YAML: {error}", document.location()))?;
            let kind = header.get("kind").and_then(|kind| kind.as_str()).unwrap_or_default().to_string();
            let object = match kind.as_str() {
                "Namespace" => Object::Namespace(typed(document, &kind)?),
                "StorageClass" => Object::StorageClass(typed(document, &kind)?),
                "PersistentVolumeClaim" => Object::PersistentVolumeClaim(Box::new(typed(document, &kind)?)),
                "Pod" => Object::Pod(Box::new(typed(document, &kind)?)),
                "Service" => Object::Service(Box::new(typed(document, &kind)?)),
                "ConfigMap" => Object::ConfigMap(Box::new(typed(document, &kind)?)),
                "Job" => Object::Job(Box::new(typed(document, &kind)?)),
                "NetworkPolicy" => Object::NetworkPolicy(Box::new(typed(document, &kind)?)),
                other => bail!(
                    "{}: kind {other:?} is not one a deployment uses (Namespace, StorageClass, \
                     PersistentVolumeClaim, Pod, Service, ConfigMap, Job, NetworkPolicy)",
                    document.location()
                ),
            };
            Ok(object)
        })
        .collect()
}

fn typed<T: DeserializeOwned + serde::Serialize>(document: &Document, kind: &str) -> Result<T> {
    // The API types ignore fields they do not know, and what is applied is the typed
    // object: a misspelt field (`tolerationz`) would vanish without a word, so every key
    // of the document must survive the round trip.
    let object: T = serde_saphyr::from_str(&document.yaml)
        .map_err(|error| anyhow!("{}: not a valid {kind}: {error}", document.location()))?;
    let written: serde_json::Value = serde_saphyr::from_str(&document.yaml)
        .map_err(|error| anyhow!("{}: not YAML: {error}", document.location()))?;
    let kept = serde_json::to_value(&object)
        .with_context(|| format!("{}: cannot serialise the {kind}", document.location()))?;
    if let Some(path) = lost_key(&written, &kept, String::new()) {
        bail!("{}: {kind} has no field {path}; check its spelling against the Kubernetes API", document.location());
    }
    Ok(object)
}

/// The first key path of `written` that `kept` does not have (null values aside).
fn lost_key(written: &serde_json::Value, kept: &serde_json::Value, path: String) -> Option<String> {
    use serde_json::Value;
    match (written, kept) {
        (Value::Object(fields), Value::Object(kept_fields)) => fields.iter().find_map(|(key, value)| {
            let at = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            match kept_fields.get(key) {
                None if !value.is_null() => Some(at),
                None => None,
                Some(kept_value) => lost_key(value, kept_value, at),
            }
        }),
        (Value::Array(items), Value::Array(kept_items)) => items
            .iter()
            .zip(kept_items)
            .enumerate()
            .find_map(|(index, (item, kept_item))| lost_key(item, kept_item, format!("{path}[{index}]"))),
        _ => None,
    }
}

/// What every deployment must be; the error names the object and what to change.
pub fn check(objects: &[Object]) -> Result<()> {
    check_objects(objects)?;
    if !objects.iter().any(|object| matches!(object, Object::Pod(_))) {
        bail!("the manifests define no Pod to run ClickHouse in");
    }
    for object in objects {
        if let Object::Pod(pod) = object {
            check_no_ingress(pod, objects)?;
        }
    }
    Ok(())
}

/// No other pod in the cluster may reach the pod on its IP: a NetworkPolicy of its
/// namespace must select it for Ingress with no rule, and none may let anything in (the
/// rules of the policies selecting a pod add up). The client's port-forward goes
/// through the kubelet, which a NetworkPolicy does not filter.
fn check_no_ingress(pod: &Pod, objects: &[Object]) -> Result<()> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let policies = objects.iter().filter_map(|object| match object {
        Object::NetworkPolicy(policy) if policy.metadata.namespace == pod.metadata.namespace => Some(policy),
        _ => None,
    });
    let mut denied = false;
    for policy in policies {
        let policy_name = policy.metadata.name.as_deref().unwrap_or_default();
        let spec = policy.spec.as_ref().with_context(|| format!("networkpolicy {policy_name} has no spec"))?;
        if !selects(spec.pod_selector.as_ref(), &labels) {
            continue;
        }
        let rules = spec.ingress.as_ref().map_or(0, Vec::len);
        if rules > 0 {
            bail!(
                "networkpolicy {policy_name} lets ingress reach pod {name}: ClickHouse takes none, the client reaches \
                 it through a port-forward"
            );
        }
        // Without policyTypes, Ingress is implied.
        let types = spec.policy_types.as_ref();
        denied |= types.is_none_or(|types| types.iter().any(|policy_type| policy_type == "Ingress"));
    }
    if !denied {
        bail!(
            "pod {name}: no NetworkPolicy in its namespace denies it ingress, so any pod in the cluster reaches \
             ClickHouse on its pod IP; add one with podSelector: {{}} and policyTypes: [Ingress]"
        );
    }
    Ok(())
}

/// Whether a NetworkPolicy's pod selector selects a pod with `labels` (no selector, or
/// an empty one, selects every pod of the namespace).
fn selects(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector else { return true };
    let by_labels = selector.match_labels.iter().flatten().all(|(key, value)| labels.get(key) == Some(value));
    let by_expressions = selector.match_expressions.iter().flatten().all(|expression| {
        let value = labels.get(&expression.key);
        let listed = |value: &String| expression.values.iter().flatten().any(|listed| listed == value);
        match expression.operator.as_str() {
            "In" => value.is_some_and(listed),
            "NotIn" => !value.is_some_and(listed),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            // An operator the API server would refuse selects nothing.
            _ => false,
        }
    });
    by_labels && by_expressions
}

/// What the storage baseline's objects must be: those of a deployment, and one Job.
pub fn check_storage_baseline(objects: &[Object]) -> Result<()> {
    check_objects(objects)?;
    if objects.iter().filter(|object| matches!(object, Object::Job(_))).count() != 1 {
        bail!("the storage baseline's manifest must define one Job to run fio in");
    }
    Ok(())
}

fn check_objects(objects: &[Object]) -> Result<()> {
    for object in objects {
        if !is_part_of(object.labels()) {
            bail!("a {} lacks the label {}: {}, which status and down select on", object.kind(), PART_OF.0, PART_OF.1);
        }
        match object {
            Object::Service(service) => {
                let service_type = service.spec.as_ref().and_then(|spec| spec.type_.clone()).unwrap_or_default();
                if matches!(service_type.as_str(), "LoadBalancer" | "NodePort") {
                    bail!(
                        "a Service of type {service_type} would expose ClickHouse beyond the cluster; reach it through a port-forward"
                    );
                }
            }
            Object::Pod(pod) => {
                let name = format!("pod {}", pod.metadata.name.as_deref().unwrap_or_default());
                let spec = pod.spec.as_ref().with_context(|| format!("{name} has no spec"))?;
                check_pod_spec(&name, spec, Probe::Readiness)?;
            }
            Object::Job(job) => check_job(job)?,
            _ => {}
        }
    }
    Ok(())
}

/// Whether a pod's containers must have a readiness probe: a server's do (`up` waits on
/// it), a Job's run to completion.
#[derive(Clone, Copy, PartialEq)]
enum Probe {
    Readiness,
    None,
}

/// A Job runs once: never retried (a retry would measure a volume the first run warmed),
/// bounded in time, removed after a while even when nothing else removes it.
fn check_job(job: &Job) -> Result<()> {
    let name = format!("job {}", job.metadata.name.as_deref().unwrap_or_default());
    let spec = job.spec.as_ref().with_context(|| format!("{name} has no spec"))?;
    if spec.backoff_limit != Some(0) {
        bail!("{name}: set backoffLimit: 0 (a retry would measure what the first run left)");
    }
    if spec.ttl_seconds_after_finished.is_none() || spec.active_deadline_seconds.is_none() {
        bail!("{name}: set ttlSecondsAfterFinished and activeDeadlineSeconds (a Job nobody removes stays)");
    }
    let template_labelled = spec.template.metadata.as_ref().and_then(|metadata| metadata.labels.as_ref());
    if !is_part_of(template_labelled) {
        bail!("{name}: its pod template lacks the label {}: {}, which status and down select on", PART_OF.0, PART_OF.1);
    }
    let pod_spec = spec.template.spec.as_ref().with_context(|| format!("{name} has no pod template spec"))?;
    if pod_spec.restart_policy.as_deref() != Some("Never") {
        bail!("{name}: set restartPolicy: Never (a restarted container would measure twice)");
    }
    check_pod_spec(&name, pod_spec, Probe::None)
}

fn check_pod_spec(name: &str, spec: &PodSpec, probe: Probe) -> Result<()> {
    if spec.automount_service_account_token != Some(false) {
        bail!("{name}: set automountServiceAccountToken: false (nothing in it calls the Kubernetes API)");
    }
    for container in &spec.containers {
        let image = container.image.clone().unwrap_or_default();
        check_image(&image).with_context(|| format!("{name}, container {}", container.name))?;
        let resources = container.resources.as_ref();
        let has = |part: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
            part.is_some_and(|quantities| quantities.contains_key("cpu") && quantities.contains_key("memory"))
        };
        if !has(resources.and_then(|resources| resources.requests.as_ref()))
            || !has(resources.and_then(|resources| resources.limits.as_ref()))
        {
            bail!(
                "{name}, container {}: set cpu and memory requests and limits (a benchmark measures a known share of a node)",
                container.name
            );
        }
        if probe == Probe::Readiness && container.readiness_probe.is_none() {
            bail!("{name}, container {}: add a readiness probe (up waits on it)", container.name);
        }
        let escalates = container.security_context.as_ref().and_then(|context| context.allow_privilege_escalation);
        if escalates != Some(false) {
            bail!("{name}, container {}: set securityContext.allowPrivilegeEscalation: false", container.name);
        }
        for port in container.ports.iter().flatten() {
            if port.host_port.is_some() {
                bail!("{name}, container {}: a hostPort would expose ClickHouse on the node", container.name);
            }
        }
    }
    if spec.host_network == Some(true) {
        bail!("{name}: hostNetwork would expose ClickHouse on the node's network");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_know_their_line_and_comments_alone_are_no_document() {
        let documents = split_documents("f.yaml", "# header\n---\nkind: A\n--- # next\n# note\nkind: B\n");
        let located: Vec<String> = documents.iter().map(Document::location).collect();
        assert_eq!(located, ["f.yaml:3", "f.yaml:5"]);
    }

    #[test]
    fn a_misspelt_field_is_named_not_dropped() {
        let document = Document {
            file: "p.yaml".into(),
            line: 4,
            yaml: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  tolerationz: []\n  containers: []\n".into(),
        };
        let error = parse(&[document]).unwrap_err().to_string();
        assert_eq!(error, "p.yaml:4: Pod has no field spec.tolerationz; check its spelling against the Kubernetes API");
    }

    #[test]
    fn a_value_without_a_flag_is_named_at_its_line() {
        let values = Values::defaults(Variant::Kind).by_name();
        let error = fill(Path::new("/m/x.yaml"), "a: 1\nb: ${nod_type}\n", &values).unwrap_err().to_string();
        assert!(error.starts_with("/m/x.yaml:2: ${nod_type} has no value (the flags give: image, iops,"), "{error}");
        assert_eq!(fill(Path::new("x"), "v: \"${iops}\"", &values).unwrap(), "v: \"3000\"");
    }
}

//! The `eks` commands' conversations with the Kubernetes API (`up`, `status`, `down`,
//! `collect`, the storage baseline's, the eks target's and its port-forward's), against a
//! mocked API server (tower-test, as kube's own tests do): every request is asserted, and
//! the server answers as a real one would. One deployment serves them all (gp3 through a
//! claim on an m5.xlarge in Seoul, or the node's NVMe through an emptyDir); one scaffold
//! ([`converse`]) runs each conversation. Built with the `eks` feature.
//!
//! Here the scaffold and the deployment every conversation reads; each command's
//! conversations in a file of their own.

mod collect;
mod load;
mod matrix;
mod status_and_down;
mod storage_baseline;
mod target;
mod unanswered;
mod up;

use std::time::Duration;

use chbench::cluster::annotations::{BenchUse, mark_collected};
use chbench::cluster::deploy::{FIELD_MANAGER, apply, ensure_password, password_secret, wait_for_ready};
use chbench::cluster::deployment::{DataVolume, Presence};
use chbench::cluster::lifecycle::{DownOutcome, down, status};
use chbench::cluster::manifests::{PART_OF, Values, Variant, parse, render};
use chbench::cluster::portforward::PortForward;
use chbench::cluster::{COLLECTED_ANNOTATION, COLLECTED_AT_ANNOTATION, LAST_USED_ANNOTATION, RUN_ANNOTATION};
use chbench::collect::describe_deployment;
use chbench::interrupt::Interrupted;
use chbench::targets::eks::{check_baseline_node, find_deployment};
use http::{Request, Response};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock::{Handle, pair};

type ApiServer = Handle<Request<Body>, Response<Body>>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn mocked() -> (Client, ApiServer) {
    let (service, server) = pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), server)
}

/// One conversation: `work` runs with a client of a mocked API server while `answer`
/// plays the server; once `work` ends (and drops the client), no request may be left.
/// Returns what `work` returned.
fn converse<T, Work>(work: impl FnOnce(Client) -> Work, answer: impl AsyncFnOnce(&mut ApiServer)) -> T
where
    T: Send + 'static,
    Work: Future<Output = T> + Send + 'static,
{
    runtime().block_on(async {
        // Inside the runtime: the client spawns its request buffer on it.
        let (client, mut server) = mocked();
        let working = tokio::spawn(work(client));
        answer(&mut server).await;
        let result = working.await.unwrap();
        assert_no_more_requests(&mut server).await;
        result
    })
}

/// Answers the next request with `json` after checking its method and path; returns its
/// query and content type, for the caller to check.
async fn expect(server: &mut ApiServer, method: &str, path: &str, json: &str) -> (String, String) {
    expect_status(server, method, path, 200, json).await
}

async fn expect_status(server: &mut ApiServer, method: &str, path: &str, status: u16, json: &str) -> (String, String) {
    let seen = answer(server, method, path, status, json).await;
    (seen.query, seen.content_type)
}

/// What a request carried, once answered.
struct Seen {
    query: String,
    content_type: String,
    body: String,
}

/// Answers the next request with `status` and `json` after checking its method and path.
async fn answer(server: &mut ApiServer, method: &str, path: &str, status: u16, json: &str) -> Seen {
    let (request, reply) =
        server.next_request().await.unwrap_or_else(|| panic!("no request; expected {method} {path}"));
    assert_eq!((request.method().as_str(), request.uri().path()), (method, path), "unexpected request");
    let query = request.uri().query().unwrap_or("").to_string();
    let content_type =
        request.headers().get("content-type").map(|value| value.to_str().unwrap().to_string()).unwrap_or_default();
    let body = request.into_body().collect_bytes().await.unwrap();
    reply.send_response(Response::builder().status(status).body(Body::from(json.as_bytes().to_vec())).unwrap());
    Seen { query, content_type, body: String::from_utf8(body.to_vec()).unwrap() }
}

/// As [`expect`], returning the request's query and body.
async fn expect_query_and_body(server: &mut ApiServer, method: &str, path: &str, json: &str) -> (String, String) {
    let seen = answer(server, method, path, 200, json).await;
    (seen.query, seen.body)
}

/// As [`expect`], returning the request's body as JSON.
async fn expect_body(server: &mut ApiServer, method: &str, path: &str, json: &str) -> Value {
    serde_json::from_str(&answer(server, method, path, 200, json).await.body).unwrap()
}

/// As [`expect`], for a list: the request must select on the part-of label.
async fn expect_list(server: &mut ApiServer, path: &str, items: Value) {
    let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}).to_string();
    let (query, _) = expect(server, "GET", path, &list).await;
    let selector: Vec<String> = url::form_urlencoded::parse(query.as_bytes())
        .filter(|(key, _)| key == "labelSelector")
        .map(|(_, value)| value.into_owned())
        .collect();
    assert_eq!(selector, [format!("{}={}", PART_OF.0, PART_OF.1)], "{path}?{query}");
}

/// Answers the next request, a pod's log, with `log`; returns the request's query.
async fn expect_log(server: &mut ApiServer, path: &str, log: &str) -> String {
    let (request, reply) = server.next_request().await.unwrap_or_else(|| panic!("no request; expected GET {path}"));
    assert_eq!((request.method().as_str(), request.uri().path()), ("GET", path), "unexpected request");
    let query = request.uri().query().unwrap_or("").to_string();
    reply.send_response(Response::builder().body(Body::from(log.as_bytes().to_vec())).unwrap());
    query
}

/// The client is dropped: no request came after the asserted ones (none deleted anything).
async fn assert_no_more_requests(server: &mut ApiServer) {
    if let Some((request, _)) = server.next_request().await {
        panic!("unexpected request {} {}", request.method(), request.uri());
    }
}

/// What a real API server answers for a missing object.
fn not_found(kind: &str, name: &str) -> String {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{kind} \"{name}\" not found"), "reason": "NotFound", "code": 404})
    .to_string()
}

const SUCCESS: &str = r#"{"kind":"Status","apiVersion":"v1","status":"Success"}"#;
const NO_EVENTS: &str = r#"{"apiVersion":"v1","kind":"EventList","metadata":{},"items":[]}"#;

// The deployment: one set of objects, as `up` leaves them.

const RUN: &str = "3f1c0e2a-8d4b-4c1e-9a57-2b6f0d9e8c71";
const NODE: &str = "ip-10-0-1-23.ap-northeast-2.compute.internal";
const IMAGE: &str = "clickhouse/clickhouse-server:26.3.33.24";
const IMAGE_ID: &str =
    "docker.io/clickhouse/clickhouse-server@sha256:5e2a1b4c8f0d3e6a9b7c2d1e4f8a0b3c6d9e2f5a8b1c4d7e0f3a6b9c2d5e8f1a";
const GP3: &str = "chbench-gp3";
const NAMESPACE: &str = "/api/v1/namespaces/chbench";
const POD: &str = "/api/v1/namespaces/chbench/pods/clickhouse";
const NODE_PATH: &str = "/api/v1/nodes/ip-10-0-1-23.ap-northeast-2.compute.internal";
const CLAIMS: &str = "/api/v1/namespaces/chbench/persistentvolumeclaims";
const CLAIM: &str = "/api/v1/namespaces/chbench/persistentvolumeclaims/clickhouse-data";
const VOLUME: &str = "/api/v1/persistentvolumes/pvc-7d1e";
const CLASSES: &str = "/apis/storage.k8s.io/v1/storageclasses";
const SECRET: &str = "/api/v1/namespaces/chbench/secrets/clickhouse-password";
const NETWORK_POLICY: &str = "/apis/networking.k8s.io/v1/namespaces/chbench/networkpolicies/default-deny-ingress";
/// What a real API server answers for a missing Secret.
const SECRET_NOT_FOUND: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"secrets \"clickhouse-password\" not found","reason":"NotFound","code":404}"#;
/// The Secret `up` made: "s3cr3t" in base64.
const SECRET_JSON: &str = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"clickhouse-password"},
    "data":{"password":"czNjcjN0"}}"#;

/// The Namespace's annotations once `up` made run [`RUN`] and a bench used it.
const USED: &[(&str, &str)] = &[(RUN_ANNOTATION, RUN), (LAST_USED_ANNOTATION, "2026-11-30T04:00:00.5Z")];
/// ... and then a collect of the run started, after that use.
const COLLECTED: &[(&str, &str)] = &[
    (RUN_ANNOTATION, RUN),
    (LAST_USED_ANNOTATION, "2026-11-30T04:00:00.5Z"),
    (COLLECTED_ANNOTATION, RUN),
    (COLLECTED_AT_ANNOTATION, "2026-11-30T05:00:00Z"),
];

/// The Namespace `up` made (labelled, made at 03:00) with `annotations`.
fn namespace_json(annotations: &[(&str, &str)]) -> String {
    let annotations: serde_json::Map<String, Value> =
        annotations.iter().map(|(key, value)| (key.to_string(), json!(value))).collect();
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "chbench", "labels": {PART_OF.0: PART_OF.1}, "annotations": annotations,
            "creationTimestamp": "2026-11-30T03:00:00Z"},
        "status": {"phase": "Active"}})
    .to_string()
}

fn terminating_namespace() -> String {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "chbench"},
        "status": {"phase": "Terminating", "conditions": [{"type": "NamespaceContentRemaining", "status": "True",
            "message": "Some resources are remaining: persistentvolumeclaims. has 1 resource instances"}]}})
    .to_string()
}

/// ClickHouse's data volume: the claim `clickhouse-data`, or the node's NVMe.
fn on_claim() -> Value {
    json!({"name": "data", "persistentVolumeClaim": {"claimName": "clickhouse-data"}})
}

fn on_empty_dir() -> Value {
    json!({"name": "data", "emptyDir": {"sizeLimit": "100Gi"}})
}

/// The Ready ClickHouse pod on [`NODE`], with `data` (a volume) at ClickHouse's data path.
fn pod_json(data: Value) -> String {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "clickhouse", "namespace": "chbench"},
        "spec": {"nodeName": NODE,
            "containers": [{"name": "clickhouse", "image": IMAGE,
                "volumeMounts": [{"name": "data", "mountPath": "/var/lib/clickhouse"}]}],
            "volumes": [data]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "clickhouse", "ready": true, "restartCount": 1,
                "image": format!("docker.io/{IMAGE}"), "imageID": IMAGE_ID}]}})
    .to_string()
}

fn node_json(instance_type: &str) -> String {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {
            "node.kubernetes.io/instance-type": instance_type, "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/zone": "ap-northeast-2a"}},
        "status": {"capacity": {"cpu": "4", "memory": "15896016Ki"}}})
    .to_string()
}

/// The data's claim, of `class`, bound to volume pvc-7d1e.
fn claim_json(class: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "clickhouse-data", "namespace": "chbench", "labels": {PART_OF.0: PART_OF.1}},
        "spec": {"storageClassName": class, "volumeName": "pvc-7d1e", "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "100Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": "100Gi"}}})
}

fn volume_json(class: &str, phase: &str) -> String {
    json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pvc-7d1e"},
        "spec": {"capacity": {"storage": "100Gi"}, "storageClassName": class, "persistentVolumeReclaimPolicy": "Delete",
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0a1b2c3d4e5f60718"}},
        "status": {"phase": phase}})
    .to_string()
}

/// [`GP3`] as the eks-gp3 manifests make it, or a kind cluster's default class.
fn class_json(name: &str) -> Value {
    if name == GP3 {
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": GP3, "labels": {PART_OF.0: PART_OF.1}},
            "provisioner": "ebs.csi.aws.com", "reclaimPolicy": "Delete",
            "parameters": {"type": "gp3", "iops": "3000", "throughput": "125", "encrypted": "true"}})
    } else {
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": "rancher.io/local-path", "reclaimPolicy": "Delete"})
    }
}

/// Where the deployment keeps its data.
#[derive(Clone, Copy)]
enum DataOn {
    /// A claim of [`GP3`] (eks-gp3).
    Gp3,
    /// A claim of kind's `standard` class.
    KindClass,
    /// An emptyDir on an m6id.xlarge's NVMe (eks-nvme).
    EmptyDir,
}

impl DataOn {
    fn class(self) -> Option<&'static str> {
        match self {
            DataOn::Gp3 => Some(GP3),
            DataOn::KindClass => Some("standard"),
            DataOn::EmptyDir => None,
        }
    }
}

/// The deployment read once, as `status`, `collect` and the baseline read it: the
/// Namespace with `annotations`, the pod, its node, and for a claim the claim, its volume
/// and the volume's class.
async fn answer_the_deployment(server: &mut ApiServer, annotations: &[(&str, &str)], data: DataOn) {
    expect(server, "GET", NAMESPACE, &namespace_json(annotations)).await;
    let (volume, instance_type) = match data {
        DataOn::EmptyDir => (on_empty_dir(), "m6id.xlarge"),
        DataOn::Gp3 | DataOn::KindClass => (on_claim(), "m5.xlarge"),
    };
    expect(server, "GET", POD, &pod_json(volume)).await;
    expect(server, "GET", NODE_PATH, &node_json(instance_type)).await;
    let Some(class) = data.class() else { return };
    expect(server, "GET", CLAIM, &claim_json(class).to_string()).await;
    expect(server, "GET", VOLUME, &volume_json(class, "Bound")).await;
    expect(server, "GET", &format!("{CLASSES}/{class}"), &class_json(class).to_string()).await;
}

/// What a down lists before deleting: the namespace's labelled objects, the claim's
/// volume, the classes and (with classes) the other chbench namespaces.
async fn answer_the_listing(server: &mut ApiServer, claims: Value, classes: Value, namespaces: Value) {
    let pod = json!({"metadata": {"name": "clickhouse", "namespace": "chbench"}});
    expect_list(server, "/api/v1/namespaces/chbench/pods", json!([pod])).await;
    expect_list(server, "/apis/batch/v1/namespaces/chbench/jobs", json!([])).await;
    expect_list(server, "/api/v1/namespaces/chbench/services", json!([])).await;
    let secret = json!({"metadata": {"name": "clickhouse-password", "namespace": "chbench"}});
    expect_list(server, "/api/v1/namespaces/chbench/secrets", json!([secret])).await;
    let has_volume = !claims.as_array().unwrap().is_empty();
    expect_list(server, CLAIMS, claims).await;
    if has_volume {
        expect(server, "GET", VOLUME, &volume_json(GP3, "Bound")).await;
    }
    let has_classes = !classes.as_array().unwrap().is_empty();
    expect_list(server, CLASSES, classes).await;
    if has_classes {
        expect_list(server, "/api/v1/namespaces", namespaces).await;
    }
}

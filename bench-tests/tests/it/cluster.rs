//! The `eks` commands' conversations with the Kubernetes API (`up`, `status`, `down`,
//! `collect`, the storage baseline's, the eks target's and its port-forward's), against a
//! mocked API server (tower-test, as kube's own tests do): every request is asserted, and
//! the server answers as a real one would. One deployment serves them all (gp3 through a
//! claim on an m5.xlarge in Seoul, or the node's NVMe through an emptyDir); one scaffold
//! ([`converse`]) runs each conversation. Built with the `eks` feature.

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

// up

#[test]
fn up_applies_every_object_server_side_in_order_with_a_new_password_before_the_pod() {
    let objects = parse(&render(Variant::Kind, &Values::defaults(Variant::Kind)).unwrap()).unwrap();
    let applied = converse(
        |client| async move { apply(&client, &objects).await },
        async |server| {
            // A new namespace: read first, to keep a run it would already carry.
            expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
            let namespace = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"chbench"}}"#;
            let (query, content_type) = expect(server, "PATCH", NAMESPACE, namespace).await;
            // Server-side apply, owned by chbench, taking over fields another manager set.
            assert!(
                query.contains(&format!("fieldManager={FIELD_MANAGER}")) && query.contains("force=true"),
                "{query}"
            );
            assert_eq!(content_type, "application/apply-patch+yaml");
            // No Secret yet: one is made, before the pod that reads it.
            expect_status(server, "GET", SECRET, 404, SECRET_NOT_FOUND).await;
            let created = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"clickhouse-password"}}"#;
            expect(server, "POST", "/api/v1/namespaces/chbench/secrets", created).await;
            let rest = [
                // Before the pod: no moment in which other pods reach it.
                (
                    NETWORK_POLICY,
                    r#"{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"default-deny-ingress"}}"#,
                ),
                (CLAIM, r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"clickhouse-data"}}"#),
                (POD, r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"}}"#),
            ];
            for (path, answer) in rest {
                let (query, _) = expect(server, "PATCH", path, answer).await;
                assert!(query.contains("fieldManager=chbench"), "{query}");
            }
        },
    )
    .unwrap();
    assert_eq!(applied.password.len(), 32);
}

/// The rest of a kind `up` after its Namespace: the Secret exists, the claim and the pod
/// are applied.
async fn answer_the_rest_of_up(server: &mut ApiServer) {
    expect(server, "GET", SECRET, SECRET_JSON).await;
    let policy =
        r#"{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"default-deny-ingress"}}"#;
    expect(server, "PATCH", NETWORK_POLICY, policy).await;
    let claim = r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"clickhouse-data"}}"#;
    expect(server, "PATCH", CLAIM, claim).await;
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"}}"#;
    expect(server, "PATCH", POD, pod).await;
}

#[test]
fn up_gives_a_new_namespace_a_fresh_run_id() {
    let objects = parse(&render(Variant::Kind, &Values::defaults(Variant::Kind)).unwrap()).unwrap();
    let mut applied_namespace = Value::Null;
    let applied = converse(
        |client| async move { apply(&client, &objects).await },
        async |server| {
            expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
            let namespace = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"chbench"}}"#;
            applied_namespace = expect_body(server, "PATCH", NAMESPACE, namespace).await;
            answer_the_rest_of_up(server).await;
        },
    )
    .unwrap();
    let run = applied_namespace["metadata"]["annotations"][RUN_ANNOTATION].as_str().unwrap().to_string();
    assert_eq!(uuid::Uuid::parse_str(&run).unwrap().get_version_num(), 4, "{run}");
    assert_eq!(applied.run, run);
    // The label status and down select on is still applied beside it.
    assert_eq!(applied_namespace["metadata"]["labels"][PART_OF.0], PART_OF.1);
}

#[test]
fn up_on_an_existing_namespace_keeps_its_run_id() {
    let objects = parse(&render(Variant::Kind, &Values::defaults(Variant::Kind)).unwrap()).unwrap();
    let mut applied_namespace = Value::Null;
    let applied = converse(
        |client| async move { apply(&client, &objects).await },
        async |server| {
            let existing = namespace_json(USED);
            expect(server, "GET", NAMESPACE, &existing).await;
            // Server-side apply would drop an annotation the applied object left out.
            applied_namespace = expect_body(server, "PATCH", NAMESPACE, &existing).await;
            answer_the_rest_of_up(server).await;
        },
    )
    .unwrap();
    assert_eq!(applied_namespace["metadata"]["annotations"][RUN_ANNOTATION], RUN);
    assert_eq!(applied.run, RUN);
    assert_eq!(applied.password, "s3cr3t");
}

#[test]
fn an_existing_password_is_kept_and_a_new_one_is_random_and_labelled() {
    let (secret, password) = password_secret("chbench");
    let (_, other) = password_secret("chbench");
    assert_eq!(password.len(), 32);
    assert_ne!(password, other, "a new password every time one is made");
    assert_eq!(secret.metadata.labels.as_ref().unwrap()[PART_OF.0], PART_OF.1);
    assert_eq!(secret.data.as_ref().unwrap()["password"].0, password.as_bytes());
    let kept = converse(
        |client| async move { ensure_password(&client, "chbench").await },
        // The running pod read this one at its start; it must stay.
        async |server| {
            expect(server, "GET", SECRET, SECRET_JSON).await;
        },
    );
    assert_eq!(kept.unwrap(), "s3cr3t");
}

#[test]
fn a_wait_that_times_out_says_why_with_the_pods_events_and_logs() {
    let (result, heard) = converse(
        |client| async move {
            let mut heard = Vec::new();
            let result =
                wait_for_ready(&client, "chbench", "clickhouse", Duration::ZERO, Duration::from_millis(1), |line| {
                    heard.push(line.to_string())
                })
                .await;
            (result, heard)
        },
        async |server| {
            let pending = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"},
                "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False"}]}}"#;
            expect(server, "GET", POD, pending).await;
            let events = r#"{"apiVersion":"v1","kind":"EventList","metadata":{},"items":[{"metadata":{"name":"e1"},
                "involvedObject":{"kind":"Pod","name":"clickhouse"},"type":"Warning","reason":"FailedScheduling",
                "message":"0/1 nodes are available: 1 Insufficient memory."}]}"#;
            expect(server, "GET", "/api/v1/namespaces/chbench/events", events).await;
            let query = expect_log(server, &format!("{POD}/log"), "starting\n").await;
            assert!(query.contains("container=clickhouse"), "{query}");
        },
    );
    let error = format!("{:#}", result.unwrap_err());
    assert!(error.starts_with("pod chbench/clickhouse was not Ready after 0 s (phase Pending)"), "{error}");
    assert!(error.contains("Pod Warning FailedScheduling: 0/1 nodes are available: 1 Insufficient memory."), "{error}");
    assert!(error.contains("last 40 log lines:\n  starting"), "{error}");
    assert_eq!(heard, ["pod chbench/clickhouse: Pending"]);
}

#[test]
fn a_wait_ends_when_the_pod_is_ready() {
    converse(
        |client| async move {
            wait_for_ready(&client, "chbench", "clickhouse", Duration::from_secs(60), Duration::from_millis(1), |_| {})
                .await
        },
        async |server| {
            let pending =
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"},"status":{"phase":"Pending"}}"#;
            expect(server, "GET", POD, pending).await;
            expect(server, "GET", POD, &pod_json(on_claim())).await;
        },
    )
    .unwrap();
}

#[test]
fn a_container_that_cannot_start_ends_the_wait_at_once() {
    let result = converse(
        |client| async move {
            wait_for_ready(&client, "chbench", "clickhouse", Duration::from_secs(600), Duration::from_millis(1), |_| {})
                .await
        },
        async |server| {
            let pulling = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"},"status":{"phase":"Pending",
                "containerStatuses":[{"name":"clickhouse","image":"x","imageID":"","ready":false,"restartCount":0,
                "state":{"waiting":{"reason":"ImagePullBackOff","message":"Back-off pulling image \"x\""}}}]}}"#;
            expect(server, "GET", POD, pulling).await;
            expect(server, "GET", "/api/v1/namespaces/chbench/events", NO_EVENTS).await;
            // Not started: the log request is refused as a real server refuses it.
            let no_log = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"container \"clickhouse\" in pod \"clickhouse\" is waiting to start","reason":"BadRequest","code":400}"#;
            expect_status(server, "GET", &format!("{POD}/log"), 400, no_log).await;
        },
    );
    let error = format!("{:#}", result.unwrap_err());
    assert!(
        error.starts_with(
            "pod chbench/clickhouse cannot start: container clickhouse is ImagePullBackOff: Back-off pulling image"
        ),
        "{error}"
    );
    assert!(error.contains("events:\n  (none)"), "{error}");
    assert!(error.contains("(none: container \"clickhouse\" in pod \"clickhouse\" is waiting to start)"), "{error}");
}

#[test]
fn up_on_a_namespace_being_deleted_is_one_line_and_applies_nothing() {
    let objects = parse(&render(Variant::Kind, &Values::defaults(Variant::Kind)).unwrap()).unwrap();
    let result = converse(
        |client| async move { apply(&client, &objects).await },
        async |server| {
            expect(server, "GET", NAMESPACE, &terminating_namespace()).await;
        },
    );
    assert_eq!(
        format!("{:#}", result.err().unwrap()),
        "namespace chbench is still being deleted: run up again once it is gone (kubectl get namespace chbench)"
    );
}

#[test]
fn up_refuses_a_namespace_it_did_not_make_and_applies_nothing() {
    let values = Values { namespace: "team-x".into(), ..Values::defaults(Variant::Kind) };
    let objects = parse(&render(Variant::Kind, &values).unwrap()).unwrap();
    let result = converse(
        |client| async move { apply(&client, &objects).await },
        async |server| {
            // Someone's namespace: no part-of label. Labelling it would let down --force delete it.
            let theirs = json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "team-x", "labels": {"team": "x"}}, "status": {"phase": "Active"}});
            expect(server, "GET", "/api/v1/namespaces/team-x", &theirs.to_string()).await;
        },
    );
    assert_eq!(
        format!("{:#}", result.err().unwrap()),
        "namespace team-x exists and was not made by cargo xtask eks up: choose another --namespace"
    );
}

/// Ctrl-C during `up`'s wait: the wait stops at its next round with [`Interrupted`]
/// (xtask exits 130), naming what it waited for. nextest runs each test in a process of
/// its own, so the stop requested here stays in this test.
#[test]
fn ctrl_c_ends_the_wait_for_the_pod() {
    chbench::interrupt::request_stop();
    let error = converse(
        |client| async move {
            wait_for_ready(&client, "chbench", "clickhouse", Duration::from_secs(600), Duration::from_millis(1), |_| {})
                .await
        },
        async |server| {
            let pending =
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"},"status":{"phase":"Pending"}}"#;
            expect(server, "GET", POD, pending).await;
        },
    )
    .unwrap_err();
    assert!(error.is::<Interrupted>(), "{error:#}");
    assert_eq!(
        format!("{error:#}"),
        "stopped waiting for pod chbench/clickhouse to be Ready: interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"
    );
}

// status

#[test]
fn status_of_a_running_gp3_deployment_shows_node_image_digest_and_volume_settings() {
    let status = converse(
        |client| async move { status(&client, "chbench").await },
        async |server| answer_the_deployment(server, COLLECTED, DataOn::Gp3).await,
    )
    .unwrap();
    assert!(status.namespace.present().unwrap().run.collected);
    let node = status.node.present().unwrap();
    assert_eq!(node.instance_type, Presence::Present("m5.xlarge".to_string()));
    assert_eq!(node.architecture, Presence::Present("amd64".to_string()));
    let pod = status.pod.present().unwrap();
    assert!(pod.ready);
    assert_eq!(pod.restarts, Presence::Present(1));
    assert_eq!(status.data_volume, Presence::Present(DataVolume::Claim { claim: "clickhouse-data".into() }));
    let volume = status.volume.present().unwrap();
    assert_eq!(volume.volume_handle, Presence::Present("vol-0a1b2c3d4e5f60718".to_string()));
    let class = status.class.present().unwrap();
    assert_eq!((class.volume_type.present(), class.iops.present()), (Some(&"gp3".into()), Some(&"3000".into())));

    let shown = status.to_string();
    for line in [
        format!("run              {RUN} (collected)"),
        "  ready          yes".to_string(),
        "  restarts       1".to_string(),
        format!("  image          {IMAGE}"),
        format!("  image ID       {IMAGE_ID}"),
        "  instance type  m5.xlarge".to_string(),
        "  architecture   amd64".to_string(),
        "  zone           ap-northeast-2a".to_string(),
        "  memory         15.16 GiB (15896016Ki)".to_string(),
        "data volume      claim clickhouse-data".to_string(),
        "  requested      100Gi".to_string(),
        "  capacity       100Gi".to_string(),
        "  reclaim policy Delete".to_string(),
        "  CSI driver     ebs.csi.aws.com".to_string(),
        "  volume handle  vol-0a1b2c3d4e5f60718".to_string(),
        "  type           gp3".to_string(),
        "  iops           3000".to_string(),
        "  throughput     125 MiB/s".to_string(),
        "  encrypted      true".to_string(),
    ] {
        assert!(shown.lines().any(|shown_line| shown_line == line), "{line:?} missing from:\n{shown}");
    }
    let as_json = serde_json::to_value(&status).unwrap();
    assert_eq!(as_json["node"]["instance_type"], "m5.xlarge");
    assert_eq!(as_json["class"]["throughput"], "125");
    assert_eq!(as_json["data_volume"], json!({"kind": "claim", "claim": "clickhouse-data"}));
    assert_eq!(as_json["namespace"]["created_at"], "2026-11-30T03:00:00Z");
}

/// No volume, so no claim, PersistentVolume or StorageClass is asked for.
#[test]
fn status_of_eks_nvme_shows_no_pvc_and_why() {
    let status = converse(
        |client| async move { status(&client, "chbench").await },
        async |server| answer_the_deployment(server, USED, DataOn::EmptyDir).await,
    )
    .unwrap();
    assert!(!status.namespace.present().unwrap().run.collected);
    let shown = status.to_string();
    let expected = "claim            absent (no PVC: the pod keeps its data in an emptyDir (eks-nvme keeps data \
                    on the node's instance store))";
    assert!(shown.lines().any(|line| line == expected), "{shown}");
    assert!(shown.lines().any(|line| line == "data volume      emptyDir (size limit 100Gi)"), "{shown}");
    // The volume and class are absent for the claim's reason, said once.
    assert!(!shown.contains("storage class"), "{shown}");
    assert!(shown.contains(&format!("run              {RUN} (not collected (cargo xtask eks collect))")), "{shown}");
    assert!(shown.contains("  instance type  m6id.xlarge"), "{shown}");
    let as_json = serde_json::to_value(&status).unwrap();
    assert!(as_json["claim"]["absent"].as_str().unwrap().starts_with("no PVC: "), "{as_json}");
    assert_eq!(as_json["namespace"]["run"]["collected_run"], json!({"absent": "never collected"}));
}

#[test]
fn status_and_down_on_a_missing_namespace_give_one_clear_line() {
    async fn missing(server: &mut ApiServer) {
        expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
    }
    let expected = "no chbench deployment in namespace chbench: namespace chbench does not exist (cargo xtask eks up \
                    makes it)";
    let error = converse(|client| async move { status(&client, "chbench").await }, missing).unwrap_err();
    assert_eq!(format!("{error:#}"), expected);
    let error = converse(
        |client| async move {
            down(&client, "chbench", true, false, Duration::from_secs(60), Duration::from_millis(1), |_| {}).await
        },
        missing,
    )
    .unwrap_err();
    assert_eq!(format!("{error:#}"), expected);
}

// down

/// `down` in namespace chbench, not forced, not a dry run.
async fn plain_down(client: Client) -> anyhow::Result<DownOutcome> {
    down(&client, "chbench", false, false, Duration::from_secs(60), Duration::from_millis(1), |_| {}).await
}

#[test]
fn down_before_collect_is_refused_and_deletes_nothing() {
    let error = converse(plain_down, async |server| {
        let earlier = [(RUN_ANNOTATION, RUN), (COLLECTED_ANNOTATION, "an-earlier-run")];
        expect(server, "GET", NAMESPACE, &namespace_json(&earlier)).await;
    })
    .unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        format!(
            "run {RUN} in namespace chbench is not collected (the last collect was of run an-earlier-run): run \
             cargo xtask eks collect first, or down --force to delete it with its results"
        )
    );
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

#[test]
fn down_after_collect_deletes_the_namespace_then_the_class_and_waits_until_they_are_gone() {
    let (outcome, heard) = converse(
        |client| async move {
            let mut heard = Vec::new();
            let outcome =
                down(&client, "chbench", false, false, Duration::from_secs(60), Duration::from_millis(1), |line| {
                    heard.push(line.to_string())
                })
                .await;
            (outcome, heard)
        },
        async |server| {
            expect(server, "GET", NAMESPACE, &namespace_json(COLLECTED)).await;
            let only_this = json!([{"metadata": {"name": "chbench", "labels": {PART_OF.0: PART_OF.1}}}]);
            answer_the_listing(server, json!([claim_json(GP3)]), json!([class_json(GP3)]), only_this).await;
            // The namespace takes the pod, the claim and the Secret; the claim's volume goes
            // by its reclaim policy (Delete); the class last.
            expect(server, "DELETE", NAMESPACE, &terminating_namespace()).await;
            expect(server, "GET", NAMESPACE, &terminating_namespace()).await;
            expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
            expect(server, "GET", VOLUME, &volume_json(GP3, "Released")).await;
            expect_status(server, "GET", VOLUME, 404, &not_found("persistentvolumes", "pvc-7d1e")).await;
            expect(server, "DELETE", &format!("{CLASSES}/{GP3}"), &class_json(GP3).to_string()).await;
        },
    );
    let DownOutcome::Deleted(plan) = outcome.unwrap() else { panic!("not deleted") };
    assert_eq!(plan.refused, None);
    let deleted: Vec<String> = plan.delete.iter().map(|listed| format!("{} {}", listed.kind, listed.name)).collect();
    assert_eq!(
        deleted,
        [
            "Namespace chbench",
            "Pod chbench/clickhouse",
            "Secret chbench/clickhouse-password",
            "PersistentVolumeClaim chbench/clickhouse-data",
            "PersistentVolume pvc-7d1e",
            "StorageClass chbench-gp3"
        ]
    );
    assert!(plan.keep.is_empty(), "{:?}", plan.keep);
    assert_eq!(
        heard,
        [
            "deleting namespace chbench and everything in it",
            "namespace chbench: Terminating: Some resources are remaining: persistentvolumeclaims. has 1 resource instances",
            "namespace chbench is gone",
            "volume pvc-7d1e: Released",
            "volume pvc-7d1e is gone",
            "deleting storage class chbench-gp3",
        ]
    );
}

/// Ctrl-C while down waits: the wait stops, saying the cluster goes on deleting; nothing
/// more is asked (nextest runs each test in a process of its own).
#[test]
fn ctrl_c_ends_downs_wait_and_the_cluster_goes_on_deleting() {
    let error = converse(plain_down, async |server| {
        expect(server, "GET", NAMESPACE, &namespace_json(COLLECTED)).await;
        answer_the_listing(server, json!([]), json!([]), json!([])).await;
        expect(server, "DELETE", NAMESPACE, &terminating_namespace()).await;
        chbench::interrupt::request_stop();
        expect(server, "GET", NAMESPACE, &terminating_namespace()).await;
    })
    .unwrap_err();
    assert!(error.is::<Interrupted>(), "{error:#}");
    assert_eq!(
        format!("{error:#}"),
        "stopped waiting for namespace chbench to be gone (the cluster goes on deleting it): interrupted by \
         a signal (Ctrl-C, SIGTERM or SIGHUP)"
    );
}

#[test]
fn down_with_force_before_collect_deletes_and_says_what_it_overrode() {
    let (outcome, heard) = converse(
        |client| async move {
            let mut heard = Vec::new();
            let outcome =
                down(&client, "chbench", true, false, Duration::from_secs(60), Duration::from_millis(1), |line| {
                    heard.push(line.to_string())
                })
                .await;
            (outcome, heard)
        },
        async |server| {
            expect(server, "GET", NAMESPACE, &namespace_json(USED)).await;
            answer_the_listing(server, json!([]), json!([]), json!([])).await;
            expect(server, "DELETE", NAMESPACE, &terminating_namespace()).await;
            expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
        },
    );
    let DownOutcome::Deleted(plan) = outcome.unwrap() else { panic!("not deleted") };
    assert!(plan.refused.as_deref().unwrap().starts_with(&format!("run {RUN} in namespace chbench is not collected")));
    assert!(heard[0].starts_with(&format!("--force: run {RUN} in namespace chbench is not collected")), "{heard:?}");
    assert_eq!(heard.last().unwrap(), "namespace chbench is gone");
}

#[test]
fn down_dry_run_lists_and_says_it_would_be_refused_but_sends_no_delete() {
    let outcome = converse(
        |client| async move {
            down(&client, "chbench", false, true, Duration::from_secs(60), Duration::from_millis(1), |_| {}).await
        },
        async |server| {
            expect(server, "GET", NAMESPACE, &namespace_json(USED)).await;
            let both = json!([
                {"metadata": {"name": "chbench", "labels": {PART_OF.0: PART_OF.1}}},
                {"metadata": {"name": "chbench-2", "labels": {PART_OF.0: PART_OF.1}}}
            ]);
            answer_the_listing(server, json!([claim_json(GP3)]), json!([class_json(GP3)]), both).await;
        },
    );
    let DownOutcome::Planned(plan) = outcome.unwrap() else { panic!("a dry run deleted") };
    let shown = plan.to_string();
    assert!(shown.starts_with(&format!("namespace chbench, run {RUN}\n  delete Namespace chbench\n")), "{shown}");
    assert!(
        shown.contains(
            "  keep   StorageClass chbench-gp3 (namespace chbench-2 (part-of chbench) still exists and may use it; \
             the last down deletes it)"
        ),
        "{shown}"
    );
    assert!(shown.contains("  delete PersistentVolume pvc-7d1e (reclaim policy Delete"), "{shown}");
    assert!(
        shown.ends_with(&format!(
            "a down without --force is refused: run {RUN} in namespace chbench is not collected: run cargo xtask eks \
             collect first, or down --force to delete it with its results\n"
        )),
        "{shown}"
    );
}

#[test]
fn down_never_deletes_a_namespace_up_did_not_make_even_with_force() {
    let error = converse(
        |client| async move {
            down(&client, "default", true, false, Duration::from_secs(60), Duration::from_millis(1), |_| {}).await
        },
        async |server| {
            let unlabelled =
                r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"},"status":{"phase":"Active"}}"#;
            expect(server, "GET", "/api/v1/namespaces/default", unlabelled).await;
        },
    )
    .unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        "no chbench deployment in namespace default: namespace default lacks the label app.kubernetes.io/part-of: \
         chbench, so cargo xtask eks up did not make it"
    );
}

#[test]
fn down_refuses_a_collected_run_that_a_bench_used_after_the_collect_started() {
    let error = converse(plain_down, async |server| {
        let used_after = [
            (RUN_ANNOTATION, RUN),
            (COLLECTED_ANNOTATION, RUN),
            (COLLECTED_AT_ANNOTATION, "2026-11-30T05:00:00Z"),
            (LAST_USED_ANNOTATION, "2026-11-30T05:10:00.5Z"),
        ];
        expect(server, "GET", NAMESPACE, &namespace_json(&used_after)).await;
    })
    .unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        "a bench used the deployment in namespace chbench at 2026-11-30T05:10:00.5Z, after the last collect at \
         2026-11-30T05:00:00Z: run cargo xtask eks collect again, or down --force"
    );
}

#[test]
fn down_refuses_a_collect_whose_time_is_not_recorded_and_goes_ahead_after_the_last_use() {
    let error = converse(plain_down, async |server| {
        // A collect from before chbench recorded its time.
        let untimed = [(RUN_ANNOTATION, RUN), (COLLECTED_ANNOTATION, RUN)];
        expect(server, "GET", NAMESPACE, &namespace_json(&untimed)).await;
    })
    .unwrap_err();
    let error = format!("{error:#}");
    assert!(error.starts_with("namespace chbench records no chbench.dev/collected-at"), "{error}");
    assert!(error.ends_with("run cargo xtask eks collect again, or down --force"), "{error}");
    let planned = converse(
        |client| async move {
            down(&client, "chbench", false, true, Duration::from_secs(60), Duration::from_millis(1), |_| {}).await
        },
        async |server| {
            let used_before = [
                (RUN_ANNOTATION, RUN),
                (COLLECTED_ANNOTATION, RUN),
                (COLLECTED_AT_ANNOTATION, "2026-11-30T05:00:00Z"),
                (LAST_USED_ANNOTATION, "2026-11-30T04:59:59Z"),
            ];
            expect(server, "GET", NAMESPACE, &namespace_json(&used_before)).await;
            answer_the_listing(server, json!([]), json!([]), json!([])).await;
        },
    );
    let DownOutcome::Planned(plan) = planned.unwrap() else { panic!("a dry run deleted") };
    assert_eq!(plan.refused, None);
}

// collect

#[test]
fn collect_reads_namespace_pod_node_claim_volume_and_class_then_marks_the_run_collected() {
    let facts = converse(
        |client| async move { describe_deployment(&client, "chbench").await },
        async |server| answer_the_deployment(server, &[(RUN_ANNOTATION, RUN)], DataOn::Gp3).await,
    )
    .unwrap();
    assert_eq!(facts.run_id, RUN);
    assert_eq!(facts.namespace_created_at.to_string(), "2026-11-30T03:00:00Z");
    assert_eq!(facts.pod.image, Presence::Present(IMAGE.to_string()));
    assert_eq!(facts.pod.image_id, Presence::Present(IMAGE_ID.to_string()));
    assert_eq!(facts.pod.node, Presence::Present(NODE.to_string()));
    assert_eq!(facts.node.instance_type, Presence::Present("m5.xlarge".to_string()));
    assert_eq!(facts.node.architecture, Presence::Present("amd64".to_string()));
    assert_eq!(facts.data_volume, DataVolume::Claim { claim: "clickhouse-data".into() });
    let claim = facts.claim.present().unwrap();
    assert_eq!(claim.requested, Presence::Present("100Gi".to_string()));
    let volume = facts.volume.present().unwrap();
    assert_eq!((volume.name.as_str(), volume.size.present()), ("pvc-7d1e", Some(&"100Gi".to_string())));
    let class = facts.class.present().unwrap();
    assert_eq!(class.provisioner, "ebs.csi.aws.com");
    let parameters = [&class.volume_type, &class.iops, &class.throughput].map(|value| value.present().cloned());
    assert_eq!(parameters, [Some("gp3".into()), Some("3000".into()), Some("125".into())]);
    // deployment.json's cluster half.
    let as_json = serde_json::to_value(&facts).unwrap();
    assert_eq!(as_json["class"]["iops"], "3000");
    assert_eq!(as_json["volume"]["volume_handle"], "vol-0a1b2c3d4e5f60718");

    // Everything written: the run and when the collect started, merged into the Namespace.
    let started: jiff::Timestamp = "2026-11-30T05:00:00.25Z".parse().unwrap();
    converse(
        |client| async move { mark_collected(&client, "chbench", RUN, started).await },
        async |server| {
            let seen = answer(server, "PATCH", NAMESPACE, 200, &namespace_json(COLLECTED)).await;
            assert_eq!(seen.content_type, "application/merge-patch+json");
            let body: Value = serde_json::from_str(&seen.body).unwrap();
            assert_eq!(
                body,
                json!({"metadata": {"annotations": {
                    COLLECTED_ANNOTATION: RUN, COLLECTED_AT_ANNOTATION: "2026-11-30T05:00:00.25Z"}}})
            );
        },
    )
    .unwrap();
}

#[test]
fn collect_on_local_nvme_says_there_is_no_volume_and_asks_nothing_more() {
    let facts = converse(
        |client| async move { describe_deployment(&client, "chbench").await },
        async |server| answer_the_deployment(server, &[(RUN_ANNOTATION, RUN)], DataOn::EmptyDir).await,
    )
    .unwrap();
    assert_eq!(facts.data_volume, DataVolume::EmptyDir { size_limit: Some("100Gi".into()) });
    let why = serde_json::to_value(&facts.claim).unwrap();
    assert!(why["absent"].as_str().unwrap().starts_with("no PVC: the pod keeps its data in an emptyDir"), "{why}");
}

#[test]
fn collect_without_the_run_annotation_says_to_run_up_again() {
    let error = converse(
        |client| async move { describe_deployment(&client, "chbench").await },
        async |server| answer_the_deployment(server, &[], DataOn::Gp3).await,
    )
    .unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        "cannot collect the deployment in namespace chbench: namespace chbench has no chbench.dev/run annotation \
         (an older up made it; cargo xtask eks up again gives it one)"
    );
}

/// Before its pod is scheduled, a WaitForFirstConsumer claim has no volume: there is no
/// volume to record, and the class is the claim's.
#[test]
fn collect_of_a_claim_not_yet_bound_names_the_claim() {
    let error = converse(
        |client| async move { describe_deployment(&client, "chbench").await },
        async |server| {
            expect(server, "GET", NAMESPACE, &namespace_json(USED)).await;
            expect(server, "GET", POD, &pod_json(on_claim())).await;
            expect(server, "GET", NODE_PATH, &node_json("m5.xlarge")).await;
            let mut unbound = claim_json(GP3);
            unbound["spec"].as_object_mut().unwrap().remove("volumeName");
            unbound["status"] = json!({"phase": "Pending"});
            expect(server, "GET", CLAIM, &unbound.to_string()).await;
            expect(server, "GET", &format!("{CLASSES}/{GP3}"), &class_json(GP3).to_string()).await;
        },
    )
    .unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        "cannot collect the deployment in namespace chbench: claim chbench/clickhouse-data is not bound yet (a \
         WaitForFirstConsumer class binds it when the pod is scheduled)"
    );
}

/// Answers the next request, a merge patch of the Namespace, and returns the
/// [`LAST_USED_ANNOTATION`] it sets.
async fn expect_use_stamp(server: &mut ApiServer, status: u16) -> jiff::Timestamp {
    let answer_json = if status == 200 { namespace_json(USED) } else { not_found("namespaces", "chbench") };
    let seen = answer(server, "PATCH", NAMESPACE, status, &answer_json).await;
    assert_eq!(seen.content_type, "application/merge-patch+json");
    assert!(seen.query.contains(&format!("fieldManager={FIELD_MANAGER}")), "{}", seen.query);
    let body: Value = serde_json::from_str(&seen.body).unwrap();
    let annotations = body["metadata"]["annotations"].as_object().unwrap();
    assert_eq!(annotations.len(), 1, "{body}");
    annotations[LAST_USED_ANNOTATION].as_str().unwrap().parse().unwrap()
}

#[test]
fn a_bench_use_is_stamped_when_it_begins_and_when_it_ends_and_a_failed_stamp_is_no_error() {
    // As the eks target holds it: the client's requests on client_runtime, the bench
    // blocking outside it.
    let kubernetes = chbench::cluster::portforward::client_runtime().unwrap();
    let (client, mut server) = {
        let _entered = kubernetes.enter();
        mocked()
    };
    let answering = kubernetes.spawn(async move {
        let began = expect_use_stamp(&mut server, 200).await;
        let ended = expect_use_stamp(&mut server, 200).await;
        // A second use, whose stamps the API server refuses.
        expect_use_stamp(&mut server, 404).await;
        expect_use_stamp(&mut server, 404).await;
        (began, ended)
    });
    let used = BenchUse::begin(client.clone(), "chbench", kubernetes.handle().clone());
    drop(used);
    let refused = BenchUse::begin(client, "chbench", kubernetes.handle().clone());
    drop(refused);
    let (began, ended) = kubernetes.block_on(answering).unwrap();
    assert!(began <= ended, "{began} {ended}");
}

// The eks target and its port-forward

#[test]
fn the_eks_target_refuses_a_namespace_without_the_password_secret() {
    // Read, never made: one GET, and the answer is the line.
    let error = converse(
        |client| async move { find_deployment(&client, "chbench").await },
        async |server| {
            expect_status(server, "GET", SECRET, 404, SECRET_NOT_FOUND).await;
        },
    )
    .unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        "no secret chbench/clickhouse-password, so no deployment to use: run `cargo xtask eks up`"
    );
}

/// A storage baseline fio measured on `node`.
fn baseline_on(node: &str) -> chbench::storage_baseline::StorageBaseline {
    let report = std::fs::read_to_string(chbench::files::workspace_root().join("fixtures/fio/fio-3.33.json")).unwrap();
    let device = chbench::storage_baseline::Device {
        variant: "eks-gp3".into(),
        description: "gp3".into(),
        node: node.into(),
        instance_type: None,
    };
    chbench::storage_baseline::parse_fio_output(&report, device).unwrap()
}

#[test]
fn the_eks_target_names_its_deployment_and_a_baseline_of_another_node_is_the_reason_it_is_unknown() {
    let deployment = converse(
        |client| async move { find_deployment(&client, "bench-2").await },
        async |server| {
            expect(server, "GET", "/api/v1/namespaces/bench-2/secrets/clickhouse-password", SECRET_JSON).await;
            expect(server, "GET", "/api/v1/namespaces/bench-2/pods/clickhouse", &pod_json(on_empty_dir())).await;
        },
    )
    .unwrap();
    // What a bundle records of it: the pod, its image and digest, its node.
    let identity = &deployment.identity;
    assert_eq!((identity.namespace.as_str(), identity.pod.as_str()), ("bench-2", "clickhouse"));
    assert_eq!((identity.image.as_str(), identity.image_id.as_deref()), (IMAGE, Some(IMAGE_ID)));
    assert_eq!(identity.node, NODE);
    let here = baseline_on(NODE);
    assert_eq!(check_baseline_node(&deployment, Some(here.clone())).unwrap(), here);
    let error = format!("{:#}", check_baseline_node(&deployment, Some(baseline_on("ip-10-0-9-9"))).unwrap_err());
    assert_eq!(
        error,
        format!(
            "the storage baseline was measured on node ip-10-0-9-9, ClickHouse now runs on {NODE}: cargo xtask eks \
             baseline --namespace bench-2"
        )
    );
    let error = format!("{:#}", check_baseline_node(&deployment, None).unwrap_err());
    assert!(error.ends_with("`cargo xtask eks baseline --namespace bench-2` measures one"), "{error}");
}

#[test]
fn the_eks_target_refuses_a_pod_that_is_not_ready_and_says_up_waits_for_it() {
    let error = converse(
        |client| async move { find_deployment(&client, "chbench").await },
        async |server| {
            expect(server, "GET", SECRET, SECRET_JSON).await;
            let pending =
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"},"status":{"phase":"Pending"}}"#;
            expect(server, "GET", POD, pending).await;
        },
    )
    .unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        "pod chbench/clickhouse is not Ready (phase Pending): run `cargo xtask eks up`, which waits for it and says \
         why not"
    );
}

#[test]
fn the_port_forward_listens_on_loopback_and_says_once_which_pod_refused() {
    let forward = runtime().block_on(async {
        // Inside the runtime: the client's request task runs on it, as on client_runtime.
        let (client, mut server) = mocked();
        let forward = PortForward::start(client, "chbench", "clickhouse", 8123, Duration::from_secs(30)).unwrap();
        assert!(forward.local_addr().ip().is_loopback(), "{}", forward.local_addr());
        assert_eq!(forward.url(), format!("http://127.0.0.1:{}", forward.local_port()));
        assert_ne!(forward.local_port(), 0);
        assert_eq!(forward.failure(), None);

        let mut connection = tokio::net::TcpStream::connect(forward.local_addr()).await.unwrap();
        let forbidden = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"pods \"clickhouse\" is forbidden: cannot create resource \"pods/portforward\"",
            "reason":"Forbidden","code":403}"#;
        let (query, _) = expect_status(&mut server, "GET", &format!("{POD}/portforward"), 403, forbidden).await;
        assert!(query.contains("ports=8123"), "{query}");
        // The connection is closed once the failure is recorded.
        let mut rest = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut connection, &mut rest).await.unwrap();
        assert!(rest.is_empty());
        forward
    });
    let failure = forward.failure().expect("no failure recorded");
    assert!(failure.starts_with("port-forward to pod chbench/clickhouse port 8123 failed:"), "{failure}");
    assert!(failure.contains("forbidden"), "{failure}");
}

#[test]
fn the_port_forward_keeps_its_latest_failure_and_adds_it_to_a_clients_error() {
    let forward = runtime().block_on(async {
        let (client, mut server) = mocked();
        let forward = PortForward::start(client, "chbench", "clickhouse", 8123, Duration::from_secs(30)).unwrap();
        for (status, message) in [(403, "first: forbidden"), (404, "then: pods \\\"clickhouse\\\" not found")] {
            let mut connection = tokio::net::TcpStream::connect(forward.local_addr()).await.unwrap();
            let failure = format!(
                r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{message}",
                "code":{status}}}"#
            );
            expect_status(&mut server, "GET", &format!("{POD}/portforward"), status, &failure).await;
            let mut rest = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut connection, &mut rest).await.unwrap();
        }
        forward
    });
    let failure = forward.failure().expect("no failure recorded");
    assert!(failure.contains("then: pods \"clickhouse\" not found"), "{failure}");
    let explained = format!("{:#}", forward.explain(anyhow::anyhow!("connection closed")));
    assert!(explained.starts_with("port-forward to pod chbench/clickhouse port 8123 failed:"), "{explained}");
    assert!(explained.contains("then: pods") && explained.ends_with(": connection closed"), "{explained}");
}

/// The storage baseline's conversation: the deployment read, fio on ClickHouse's node,
/// its report kept in the namespace, its Job removed.
mod storage_baseline {
    use super::*;
    use chbench::cluster::baseline::{measure, read_baseline};

    const FIO_JOB: &str = "/apis/batch/v1/namespaces/chbench/jobs/chbench-storage-baseline";
    const FIO_CLAIM: &str = "/api/v1/namespaces/chbench/persistentvolumeclaims/chbench-fio-data";
    const FIO_JOB_FILE: &str = "/api/v1/namespaces/chbench/configmaps/chbench-fio-job";
    const FIO_POD: &str = "chbench-storage-baseline-x7k2p";
    const PODS: &str = "/api/v1/namespaces/chbench/pods";
    const RESULT: &str = "/api/v1/namespaces/chbench/configmaps/chbench-storage-baseline";

    fn job(status: &str) -> String {
        format!(
            r#"{{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"chbench-storage-baseline"}},"status":{status}}}"#
        )
    }

    fn fio_pods(phase: &str) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"PodList","metadata":{{}},"items":[{{"metadata":{{"name":"{FIO_POD}"}},
            "status":{{"phase":"{phase}"}}}}]}}"#
        )
    }

    /// A baseline in namespace chbench; the wait ends by the conversation, not a timeout.
    async fn measure_in_chbench(client: Client) -> anyhow::Result<chbench::storage_baseline::StorageBaseline> {
        measure(&client, "chbench", Duration::from_secs(600), Duration::from_millis(1), |_| {}).await
    }

    /// The deployment's storage read, leftovers of an earlier run removed (none here), the
    /// job file, volume and Job applied, in that order, server-side.
    async fn expect_start(server: &mut ApiServer, data: DataOn) {
        answer_the_deployment(server, USED, data).await;
        // The last baseline is deleted first: a failed measurement leaves none, not an old one.
        let (query, _) = expect(server, "DELETE", RESULT, SUCCESS).await;
        assert!(query.contains("propagationPolicy=Background") || query.is_empty(), "{query}");
        for (path, kind, name) in [
            (FIO_JOB, "jobs.batch", "chbench-storage-baseline"),
            (FIO_CLAIM, "persistentvolumeclaims", "chbench-fio-data"),
            (FIO_JOB_FILE, "configmaps", "chbench-fio-job"),
        ] {
            let (query, _) = expect_status(server, "DELETE", path, 404, &not_found(kind, name)).await;
            assert!(query.contains("propagationPolicy=Background") || query.is_empty(), "{query}");
        }
        let (query, body) =
            expect_query_and_body(server, "PATCH", FIO_JOB_FILE, r#"{"apiVersion":"v1","kind":"ConfigMap"}"#).await;
        assert!(query.contains(&format!("fieldManager={FIELD_MANAGER}")) && query.contains("force=true"), "{query}");
        assert!(body.contains("direct=1") && body.contains(PART_OF.0), "{body}");
        let (_, body) =
            expect_query_and_body(server, "PATCH", FIO_CLAIM, r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim"}"#)
                .await;
        assert!(body.contains("100Gi"), "{body}");
        // ClickHouse's class by name, never left to whatever the default is now.
        let fio_claim: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(fio_claim["spec"]["storageClassName"], data.class().unwrap(), "{body}");
        let (query, body) = expect_query_and_body(server, "PATCH", FIO_JOB, &job("{}")).await;
        assert!(query.contains("fieldManager=chbench"), "{query}");
        // On the ClickHouse pod's node, through the scheduler.
        assert!(body.contains(NODE) && body.contains("metadata.name"), "{body}");
    }

    async fn expect_removal(server: &mut ApiServer) {
        for path in [FIO_JOB, FIO_CLAIM, FIO_JOB_FILE] {
            let (query, _) = expect(server, "DELETE", path, SUCCESS).await;
            assert!(query.contains("propagationPolicy=Background") || query.is_empty(), "{query}");
        }
    }

    #[test]
    fn the_storage_baseline_runs_fio_on_clickhouses_node_keeps_its_report_and_removes_the_job() {
        let fio_report =
            std::fs::read_to_string(chbench::files::workspace_root().join("fixtures/fio/fio-3.33.json")).unwrap();
        let mut stored = Value::Null;
        let (result, heard) = converse(
            |client| async move {
                let mut heard = Vec::new();
                let result = measure(&client, "chbench", Duration::from_secs(60), Duration::from_millis(1), |line| {
                    heard.push(line.to_string())
                })
                .await;
                (result, heard)
            },
            async |server| {
                expect_start(server, DataOn::Gp3).await;
                expect(server, "GET", FIO_JOB, &job(r#"{"active":1}"#)).await;
                let (query, _) = expect(server, "GET", PODS, &fio_pods("Pending")).await;
                assert!(
                    query.contains("labelSelector=batch.kubernetes.io%2Fjob-name%3Dchbench-storage-baseline"),
                    "{query}"
                );
                expect(server, "GET", FIO_JOB, &job(r#"{"succeeded":1}"#)).await;
                expect(server, "GET", PODS, &fio_pods("Succeeded")).await;
                // The whole log (the report), of the fio container.
                let query = expect_log(server, &format!("{PODS}/{FIO_POD}/log"), &fio_report).await;
                assert!(query.contains("container=fio") && !query.contains("tailLines"), "{query}");
                let (query, body) =
                    expect_query_and_body(server, "PATCH", RESULT, r#"{"apiVersion":"v1","kind":"ConfigMap"}"#).await;
                assert!(query.contains("fieldManager=chbench"), "{query}");
                stored = serde_json::from_str(&body).unwrap();
                expect_removal(server).await;
            },
        );
        let baseline = result.unwrap();
        assert_eq!(baseline.device.variant, "eks-gp3");
        assert_eq!(baseline.device.node, NODE);
        assert!(
            baseline.device.description.contains(
                "(3000 IOPS, 125 MiB/s provisioned), 100 GiB, as ClickHouse's, on \
                 (m5.xlarge) the same node"
            ),
            "{baseline:?}"
        );
        assert_eq!(baseline.seq_read.block_size_bytes, 1 << 20);
        assert_eq!(heard[1..], [format!("storage baseline: pod {FIO_POD}: Pending")]);

        // The stored ConfigMap, labelled, is what the eks target reads back.
        assert_eq!(stored["metadata"]["labels"][PART_OF.0], PART_OF.1);
        // With the node fio ran on, for the target to compare with the pod's.
        let kept_baseline: Value = serde_json::from_str(stored["data"]["baseline.json"].as_str().unwrap()).unwrap();
        assert_eq!(kept_baseline["device"]["node"], NODE);
        // And the node's instance type, which prices a bundle of this node in a comparison.
        assert_eq!(kept_baseline["device"]["instance_type"], "m5.xlarge");
        assert_eq!(baseline.device.instance_type.as_deref(), Some("m5.xlarge"));
        let read = converse(
            |client| async move { read_baseline(&client, "chbench").await },
            async |server| {
                expect(server, "GET", RESULT, &stored.to_string()).await;
            },
        );
        assert_eq!(read.unwrap(), Some(baseline));
    }

    #[test]
    fn a_failed_fio_job_is_an_error_with_its_log_and_is_removed_all_the_same() {
        let error = converse(measure_in_chbench, async |server| {
            expect_start(server, DataOn::KindClass).await;
            let failed = r#"{"failed":1,"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded",
                "message":"Job has reached the specified backoff limit"}]}"#;
            expect(server, "GET", FIO_JOB, &job(failed)).await;
            expect(server, "GET", PODS, &fio_pods("Failed")).await;
            expect(server, "GET", "/api/v1/namespaces/chbench/events", NO_EVENTS).await;
            let log = "fio: pid=7, err=22/file:filesetup.c:805, func=open(chbench-fio.data), error=Invalid argument\n";
            let query = expect_log(server, &format!("{PODS}/{FIO_POD}/log"), log).await;
            assert!(query.contains("container=fio"), "{query}");
            expect_removal(server).await;
        })
        .unwrap_err();
        let error = format!("{error:#}");
        assert!(
            error.starts_with(
                "job chbench/chbench-storage-baseline failed (BackoffLimitExceeded: Job has reached the specified \
                 backoff limit)"
            ),
            "{error}"
        );
        assert!(error.contains("last 40 log lines:\n  fio: pid=7, err=22/file:filesetup.c:805"), "{error}");
    }

    /// Ctrl-C while fio runs ends the wait, and the Job, its volume and its job file are
    /// removed all the same (nextest runs each test in a process of its own).
    #[test]
    fn ctrl_c_during_the_baseline_removes_its_job_volume_and_job_file() {
        let error = converse(measure_in_chbench, async |server| {
            expect_start(server, DataOn::KindClass).await;
            chbench::interrupt::request_stop();
            expect(server, "GET", FIO_JOB, &job(r#"{"active":1}"#)).await;
            expect(server, "GET", PODS, &fio_pods("Running")).await;
            expect_removal(server).await;
        })
        .unwrap_err();
        assert!(error.is::<Interrupted>(), "{error:#}");
        assert_eq!(
            format!("{error:#}"),
            "stopped waiting for job chbench/chbench-storage-baseline to finish: interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"
        );
    }

    /// Nothing measured, so the last baseline stays: nothing is deleted.
    #[test]
    fn a_baseline_without_a_deployment_names_up_with_its_namespace() {
        let error = converse(
            |client| async move {
                measure(&client, "team-x", Duration::from_secs(60), Duration::from_millis(1), |_| {}).await
            },
            async |server| {
                let missing = not_found("namespaces", "team-x");
                expect_status(server, "GET", "/api/v1/namespaces/team-x", 404, &missing).await;
            },
        )
        .unwrap_err();
        assert_eq!(
            format!("{error:#}"),
            "cannot measure the storage baseline in namespace team-x: namespace team-x does not exist (cargo xtask \
             eks up --namespace team-x makes it)"
        );
        let error = converse(measure_in_chbench, async |server| {
            expect(server, "GET", NAMESPACE, &namespace_json(USED)).await;
            expect_status(server, "GET", POD, 404, &not_found("pods", "clickhouse")).await;
        })
        .unwrap_err();
        assert_eq!(
            format!("{error:#}"),
            "cannot measure the storage baseline in namespace chbench: no pod chbench/clickhouse (cargo xtask eks up \
             makes it)"
        );
    }

    #[test]
    fn no_baseline_in_the_namespace_reads_as_none() {
        let read = converse(
            |client| async move { read_baseline(&client, "chbench").await },
            async |server| {
                let missing = not_found("configmaps", "chbench-storage-baseline");
                expect_status(server, "GET", RESULT, 404, &missing).await;
            },
        );
        assert_eq!(read.unwrap(), None);
    }
}

// A matrix run on eks: each variant's `up`, then its benchmark, then `collect` and
// `down`, in that order, one variant after the other, every request asserted. The
// benchmark itself cannot run here (no ClickHouse answers a mocked API server): it is
// the test's own step, which records that it ran; so is collect's ClickHouse half (the
// server's version and query_log), given by the test. Everything else is the library's:
// the matrix file, the runner, and up, collect and down through `ClusterDeployments`.
mod matrix {
    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use chbench::cluster::deploy::ClusterConnection;
    use chbench::collect::ServerFacts;
    use chbench::matrix::eks::ClusterDeployments;
    use chbench::matrix::{BenchStep, MatrixRun, PlannedVariant, VariantStatus, parse_matrix, run_matrix};
    use chbench::target_info::TargetKind;

    use super::*;

    /// The mocked API server's client, on a runtime of its own that runs each step.
    struct Mocked {
        runtime: tokio::runtime::Runtime,
        client: Client,
    }

    impl ClusterConnection for Mocked {
        fn on_cluster<T, Work>(&self, work: impl FnOnce(Client) -> Work) -> anyhow::Result<T>
        where
            Work: Future<Output = anyhow::Result<T>>,
        {
            self.runtime.block_on(work(self.client.clone()))
        }
    }

    type Steps = Arc<Mutex<Vec<String>>>;

    /// The test's benchmark step: it records the variant it ran for, and the settings
    /// its `bench` command line would carry.
    struct RecordedBench {
        steps: Steps,
    }

    impl BenchStep for RecordedBench {
        fn bench(&mut self, planned: &PlannedVariant<'_>) -> anyhow::Result<()> {
            let settings: Vec<String> = planned
                .bench_args()
                .windows(2)
                .filter(|pair| pair[0] == "--setting")
                .map(|pair| pair[1].clone())
                .collect();
            self.steps.lock().unwrap().push(format!("bench {} {}", planned.variant.name, settings.join(" ")));
            Ok(())
        }
    }

    /// As `answer`, with `step` recorded once the request came and before it is answered.
    async fn answer_noting(server: &mut ApiServer, steps: &Steps, step: String, method: &str, path: &str, json: &str) {
        let (request, reply) =
            server.next_request().await.unwrap_or_else(|| panic!("no request; expected {method} {path}"));
        assert_eq!((request.method().as_str(), request.uri().path()), (method, path), "unexpected request");
        steps.lock().unwrap().push(step);
        reply.send_response(Response::builder().status(200).body(Body::from(json.as_bytes().to_vec())).unwrap());
    }

    const MATRIX: &str = r#"
kind = "logs"
flags = ["--rows", "1M"]
target = "eks"
[eks]
no_baseline = true

[[variant]]
name = "c7g"
node_type = "c7g.2xlarge"

[[variant]]
name = "c6i"
node_type = "c6i.2xlarge"
"#;

    /// One variant's conversation: up on a new namespace (the pod pinned to `node_type`),
    /// then, after the benchmark, collect and down.
    async fn answer_one_variant(server: &mut ApiServer, steps: &Steps, name: &str, node_type: &str) {
        // up: the namespace, the password, then every object server-side, in order.
        expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
        let namespace = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"chbench"}}"#;
        expect(server, "PATCH", NAMESPACE, namespace).await;
        expect_status(server, "GET", SECRET, 404, SECRET_NOT_FOUND).await;
        let created = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"clickhouse-password"}}"#;
        expect(server, "POST", "/api/v1/namespaces/chbench/secrets", created).await;
        let policy = r#"{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"default-deny-ingress"}}"#;
        expect(server, "PATCH", NETWORK_POLICY, policy).await;
        let class = expect_body(server, "PATCH", &format!("{CLASSES}/{GP3}"), &class_json(GP3).to_string()).await;
        assert_eq!(class["parameters"]["type"], "gp3", "{class}");
        expect(server, "PATCH", CLAIM, &claim_json(GP3).to_string()).await;
        let pod = expect_body(server, "PATCH", POD, &pod_json(on_claim())).await;
        assert_eq!(pod["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"], node_type, "{pod}");
        // The wait: Ready at once.
        answer_noting(server, steps, format!("up {name}"), "GET", POD, &pod_json(on_claim())).await;
        // collect, once the benchmark ran: the deployment read, then the run marked collected.
        answer_noting(server, steps, format!("collect {name}"), "GET", NAMESPACE, &namespace_json(USED)).await;
        expect(server, "GET", POD, &pod_json(on_claim())).await;
        expect(server, "GET", NODE_PATH, &node_json(node_type)).await;
        expect(server, "GET", CLAIM, &claim_json(GP3).to_string()).await;
        expect(server, "GET", VOLUME, &volume_json(GP3, "Bound")).await;
        expect(server, "GET", &format!("{CLASSES}/{GP3}"), &class_json(GP3).to_string()).await;
        let marked = answer(server, "PATCH", NAMESPACE, 200, &namespace_json(COLLECTED)).await;
        let marked: Value = serde_json::from_str(&marked.body).unwrap();
        assert!(marked["metadata"]["annotations"][COLLECTED_ANNOTATION].is_string(), "{marked}");
        // down: allowed, since collected; the namespace, then the class, and the waits.
        answer_noting(server, steps, format!("down {name}"), "GET", NAMESPACE, &namespace_json(COLLECTED)).await;
        let only_this = json!([{"metadata": {"name": "chbench", "labels": {PART_OF.0: PART_OF.1}}}]);
        answer_the_listing(server, json!([claim_json(GP3)]), json!([class_json(GP3)]), only_this).await;
        expect(server, "DELETE", NAMESPACE, &terminating_namespace()).await;
        expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
        expect_status(server, "GET", VOLUME, 404, &not_found("persistentvolumes", "pvc-7d1e")).await;
        expect(server, "DELETE", &format!("{CLASSES}/{GP3}"), &class_json(GP3).to_string()).await;
    }

    #[test]
    fn a_node_type_matrix_runs_up_bench_collect_down_for_each_variant_in_order() {
        let results = tempfile::tempdir().unwrap();
        let matrix = parse_matrix(Path::new("c7g-vs-c6i.toml"), MATRIX, TargetKind::Auto).unwrap();
        let runtime = runtime();
        // Inside the runtime: the client spawns its request buffer on it.
        let (client, mut server) = {
            let _inside = runtime.enter();
            mocked()
        };
        let steps: Steps = Arc::default();
        let answering = {
            let steps = Arc::clone(&steps);
            std::thread::spawn(move || {
                super::runtime().block_on(async {
                    answer_one_variant(&mut server, &steps, "c7g", "c7g.2xlarge").await;
                    answer_one_variant(&mut server, &steps, "c6i", "c6i.2xlarge").await;
                    assert_no_more_requests(&mut server).await;
                })
            })
        };
        let server_reads = |_: &str, _: jiff::Timestamp| {
            Ok((ServerFacts { version: "26.3.33.24".into(), timezone: "UTC".into() }, Ok(String::new())))
        };
        let mut deployments = ClusterDeployments {
            connection: Mocked { runtime, client },
            server: Box::new(server_reads),
            poll: Duration::from_millis(1),
        };
        let run = MatrixRun { folder: results.path().join("nodes"), matrix_id: "nodes".into(), fail_fast: false };
        let mut bench = RecordedBench { steps: Arc::clone(&steps) };
        let summary = run_matrix(&matrix, &run, &mut bench, Some(&mut deployments), &|_| {}).unwrap();
        // The client goes: the server sees no request after the asserted ones.
        drop(deployments);
        answering.join().unwrap();
        assert_eq!(
            *steps.lock().unwrap(),
            [
                "up c7g",
                "bench c7g max_threads=8",
                "collect c7g",
                "down c7g",
                "up c6i",
                "bench c6i max_threads=8",
                "collect c6i",
                "down c6i"
            ]
        );
        let statuses: Vec<VariantStatus> = summary.variants.iter().map(|variant| variant.status).collect();
        assert_eq!(statuses, [VariantStatus::Done, VariantStatus::Done]);
        let collected: Vec<Option<&str>> =
            summary.variants.iter().map(|variant| variant.collected.as_deref()).collect();
        assert_eq!(collected, [Some("eks-c7g"), Some("eks-c6i")]);
        let deployment: Value =
            serde_json::from_str(&std::fs::read_to_string(run.folder.join("eks-c6i/deployment.json")).unwrap())
                .unwrap();
        assert_eq!(deployment["node"]["instance_type"], "c6i.2xlarge", "{deployment}");
        assert_eq!(deployment["clickhouse"]["version"], "26.3.33.24");
    }

    /// An `up` that fails is still collected (it may have applied something); a collect
    /// that fails leaves the deployment where the next variant would go, so the matrix
    /// stops there and says what to run, the variants after it missing, no bench run.
    #[test]
    fn a_failed_up_whose_deployment_cannot_be_collected_stops_the_matrix_before_the_next_variant() {
        let results = tempfile::tempdir().unwrap();
        let matrix = parse_matrix(Path::new("c7g-vs-c6i.toml"), MATRIX, TargetKind::Auto).unwrap();
        let runtime = runtime();
        // Inside the runtime: the client spawns its request buffer on it.
        let (client, mut server) = {
            let _inside = runtime.enter();
            mocked()
        };
        let answering = std::thread::spawn(move || {
            super::runtime().block_on(async {
                // up: the namespace of an earlier down is still going.
                expect(&mut server, "GET", NAMESPACE, &terminating_namespace()).await;
                // collect: it carries no run.
                expect(&mut server, "GET", NAMESPACE, &terminating_namespace()).await;
                assert_no_more_requests(&mut server).await;
            })
        });
        let mut deployments = ClusterDeployments {
            connection: Mocked { runtime, client },
            server: Box::new(|_: &str, _: jiff::Timestamp| panic!("no ClickHouse half without a deployment")),
            poll: Duration::from_millis(1),
        };
        let run = MatrixRun { folder: results.path().join("nodes"), matrix_id: "nodes".into(), fail_fast: false };
        let steps: Steps = Arc::default();
        let mut bench = RecordedBench { steps: Arc::clone(&steps) };
        let summary = run_matrix(&matrix, &run, &mut bench, Some(&mut deployments), &|_| {}).unwrap();
        drop(deployments);
        answering.join().unwrap();
        assert!(steps.lock().unwrap().is_empty(), "a bench ran: {:?}", steps.lock().unwrap());
        let statuses: Vec<VariantStatus> = summary.variants.iter().map(|variant| variant.status).collect();
        assert_eq!(statuses, [VariantStatus::Failed, VariantStatus::Missing]);
        let error = summary.variants[0].error.as_deref().unwrap();
        assert!(error.starts_with("eks up: namespace chbench is still being deleted"), "{error}");
        assert!(
            error.contains("eks collect: ")
                && error.ends_with("run `cargo xtask eks collect`, then `cargo xtask eks down`"),
            "{error}"
        );
        let missing = summary.variants[1].error.as_deref().unwrap();
        assert!(missing.contains("could not be collected, so it is still up"), "{missing}");
        assert!(summary.comparisons.is_empty());
    }
}

// An API server that takes the connection and never answers, as a hung one or a
// `kubectl proxy` whose upstream is gone does: on plain http and after a completed TLS
// handshake. Each request is bounded, and a stop request ends the wait; both say which
// server and what was asked. Real loopback listeners and kubeconfigs, not the mock: the
// bounds live in the client's connector.
mod unanswered {
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::sync::mpsc::{Receiver, channel};

    use crate::server::silent_peer;

    use chbench::cluster::api_server::{Bounds, Cluster};
    use kube::config::{KubeConfigOptions, Kubeconfig};

    use super::*;

    /// A listener on loopback that completes a TLS handshake (an ephemeral key, and no
    /// certificate worth the name: the kubeconfig skips verifying), then never says a
    /// word; each completed handshake is told on the receiver. Its `https://` URL.
    fn silent_after_tls() -> (String, Receiver<()>) {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let algorithm = &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING;
        let key = aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(algorithm, &rng).unwrap();
        let key = rustls::pki_types::PrivatePkcs8KeyDer::from(key.as_ref().to_vec());
        let signing = provider.key_provider.load_private_key(key.into()).unwrap();
        let certificate = rustls::pki_types::CertificateDer::from(b"not verified".to_vec());
        let resolver = AlwaysThisKey(Arc::new(rustls::sign::CertifiedKey::new(vec![certificate], signing)));
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_cert_resolver(Arc::new(resolver)),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let (accepted, connections) = channel();
        std::thread::spawn(move || {
            let mut open = Vec::new();
            for mut stream in listener.incoming().flatten() {
                let mut tls = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
                while tls.is_handshaking() {
                    if tls.complete_io(&mut stream).is_err() {
                        break;
                    }
                }
                open.push((tls, stream));
                let _ = accepted.send(());
            }
        });
        (url, connections)
    }

    /// The one key a [`silent_after_tls`] listener shows.
    #[derive(Debug)]
    struct AlwaysThisKey(Arc<rustls::sign::CertifiedKey>);

    impl rustls::server::ResolvesServerCert for AlwaysThisKey {
        fn resolve(&self, _hello: rustls::server::ClientHello<'_>) -> Option<Arc<rustls::sign::CertifiedKey>> {
            Some(Arc::clone(&self.0))
        }
    }

    /// The kubeconfig of the API server at `url`, as a user's would name it.
    fn config(url: &str) -> kube::Config {
        let yaml = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: silent\nclusters:\n- name: silent\n  cluster:\n    \
             server: {url}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: silent\n  context:\n    \
             cluster: silent\n    user: silent\nusers:\n- name: silent\n  user: {{}}\n"
        );
        let kubeconfig = Kubeconfig::from_yaml(&yaml).unwrap();
        runtime().block_on(kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())).unwrap()
    }

    /// `status` of namespace chbench through a client of `url` bounded by `bounds`.
    fn status_of(url: &str, bounds: Bounds) -> anyhow::Error {
        let config = config(url);
        runtime()
            .block_on(async {
                let cluster = Cluster::new(config, bounds)?;
                cluster.run(|client| async move { status(&client, "chbench").await }).await
            })
            .unwrap_err()
    }

    const SHORT: Duration = Duration::from_millis(200);
    /// Far longer than any test waits: what a stop must end.
    const LONG: Duration = Duration::from_secs(600);

    #[test]
    fn a_request_unanswered_after_tls_or_on_plain_http_fails_at_its_bound_naming_the_server_and_the_request() {
        for (url, _connections) in [silent_after_tls(), silent_peer()] {
            let error = status_of(&url, Bounds { connect: LONG, answer: SHORT });
            assert_eq!(
                format!("{error:#}"),
                format!(
                    "cannot read namespace chbench: the API server at {url} gave no answer within 0.2 s \
                     (CHBENCH_KUBE_REQUEST_TIMEOUT)"
                )
            );
        }
    }

    /// A listener that takes the TCP connection and never starts TLS: the connection is
    /// what times out.
    #[test]
    fn a_tls_handshake_that_never_completes_fails_at_the_connect_bound() {
        let (url, _connections) = silent_peer();
        let url = url.replacen("http://", "https://", 1);
        let error = status_of(&url, Bounds { connect: SHORT, answer: LONG });
        assert_eq!(
            format!("{error:#}"),
            format!(
                "cannot read namespace chbench: the API server at {url} took no connection within 0.2 s \
                 (CHBENCH_KUBE_CONNECT_TIMEOUT)"
            )
        );
    }

    /// A stop request while the request waits (nextest runs each test in a process of its
    /// own, so the stop stays in this test) ends it with [`Interrupted`], naming the
    /// server and the request, long before its bound.
    fn a_stop_ends_the_wait(url: &str, connections: Receiver<()>) {
        let stopper = std::thread::spawn(move || {
            connections.recv().expect("the client never connected");
            chbench::interrupt::request_stop();
        });
        let error = status_of(url, Bounds { connect: LONG, answer: LONG });
        stopper.join().unwrap();
        assert!(error.is::<Interrupted>(), "{error:#}");
        let said = format!("{error:#}");
        let expected = format!("stopped waiting for the API server at {url} (reading namespace chbench): ");
        assert!(said.starts_with(&expected), "{said}");
    }

    #[test]
    fn a_stop_ends_a_wait_for_an_answer_after_tls() {
        let (url, connections) = silent_after_tls();
        a_stop_ends_the_wait(&url, connections);
    }

    #[test]
    fn a_stop_ends_a_wait_for_an_answer_on_plain_http() {
        let (url, connections) = silent_peer();
        a_stop_ends_the_wait(&url, connections);
    }

    /// A peer that answers at once with headers, then sends its body a byte at a time,
    /// forever: never silent, so no bound of silence ends it; each answer begun is told on
    /// the receiver.
    fn dripping_peer() -> (String, Receiver<()>) {
        use std::io::{Read, Write};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (begun, answers) = channel();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let begun = begun.clone();
                std::thread::spawn(move || {
                    let mut request = [0u8; 4096];
                    let _ = stream.read(&mut request);
                    let headers =
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
                    if stream.write_all(headers.as_bytes()).is_err() {
                        return;
                    }
                    let _ = begun.send(());
                    while stream.write_all(b"1\r\n \r\n").is_ok() {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                });
            }
        });
        (url, answers)
    }

    /// A stop while an answer's body is still arriving ends the work too: the grace of
    /// each request covers its headers, the work's covers the rest.
    #[test]
    fn a_stop_ends_an_answer_that_keeps_arriving() {
        let (url, answers) = dripping_peer();
        let stopper = std::thread::spawn(move || {
            answers.recv().expect("the server never began an answer");
            chbench::interrupt::request_stop();
        });
        let error = status_of(&url, Bounds { connect: LONG, answer: SHORT });
        stopper.join().unwrap();
        assert!(error.is::<Interrupted>(), "{error:#}");
        let said = format!("{error:#}");
        assert!(said.starts_with(&format!("stopped waiting for the API server at {url} (")), "{said}");
    }
}

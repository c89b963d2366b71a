//! The conversations with the Kubernetes API (`up`'s, `collect`'s, the eks target's and
//! its port-forward's), against a mocked API server (tower-test, as kube's own tests do):
//! every request is asserted, and the server answers as a real one would. Built with the
//! `eks` feature.

use std::time::Duration;

use chbench::cluster::collect::{DataVolume, describe_deployment, mark_collected};
use chbench::cluster::deploy::{FIELD_MANAGER, apply, ensure_password, password_secret, wait_for_ready};
use chbench::cluster::manifests::{PART_OF, Values, Variant, parse, render};
use chbench::cluster::portforward::PortForward;
use chbench::cluster::{COLLECTED_ANNOTATION, RUN_ANNOTATION};
use chbench::targets::eks::find_deployment;
use http::{Request, Response};
use kube::Client;
use kube::client::Body;
use tower_test::mock::{Handle, pair};

type ApiServer = Handle<Request<Body>, Response<Body>>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn mocked() -> (Client, ApiServer) {
    let (service, server) = pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), server)
}

/// Answers the next request with `json` after checking its method and path; returns its
/// query and content type, for the caller to check.
async fn expect(server: &mut ApiServer, method: &str, path: &str, json: &str) -> (String, String) {
    expect_status(server, method, path, 200, json).await
}

async fn expect_status(server: &mut ApiServer, method: &str, path: &str, status: u16, json: &str) -> (String, String) {
    let (request, reply) =
        server.next_request().await.unwrap_or_else(|| panic!("no request; expected {method} {path}"));
    assert_eq!((request.method().as_str(), request.uri().path()), (method, path), "unexpected request");
    let query = request.uri().query().unwrap_or("").to_string();
    let content_type =
        request.headers().get("content-type").map(|value| value.to_str().unwrap().to_string()).unwrap_or_default();
    reply.send_response(Response::builder().status(status).body(Body::from(json.as_bytes().to_vec())).unwrap());
    (query, content_type)
}

/// What a real API server answers for a missing Secret.
const SECRET_NOT_FOUND: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"secrets \"clickhouse-password\" not found","reason":"NotFound","code":404}"#;
const SECRET: &str = "/api/v1/namespaces/chbench/secrets/clickhouse-password";

#[test]
fn up_applies_every_object_server_side_in_order_with_a_new_password_before_the_pod() {
    let objects = parse(&render(Variant::Kind, &Values::defaults(Variant::Kind)).unwrap()).unwrap();
    runtime().block_on(async {
        // Inside the runtime: the client spawns its request buffer on it.
        let (client, mut server) = mocked();
        let applying = tokio::spawn(async move { apply(&client, &objects).await });
        let namespace = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"chbench"}}"#;
        let (query, content_type) = expect(&mut server, "PATCH", "/api/v1/namespaces/chbench", namespace).await;
        // Server-side apply, owned by chbench, taking over fields another manager set.
        assert!(query.contains(&format!("fieldManager={FIELD_MANAGER}")) && query.contains("force=true"), "{query}");
        assert_eq!(content_type, "application/apply-patch+yaml");
        // No Secret yet: one is made, before the pod that reads it.
        expect_status(&mut server, "GET", SECRET, 404, SECRET_NOT_FOUND).await;
        let created = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"clickhouse-password"}}"#;
        expect(&mut server, "POST", "/api/v1/namespaces/chbench/secrets", created).await;
        let rest = [
            (
                "/api/v1/namespaces/chbench/persistentvolumeclaims/clickhouse-data",
                r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"clickhouse-data"}}"#,
            ),
            (
                "/api/v1/namespaces/chbench/pods/clickhouse",
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"}}"#,
            ),
        ];
        for (path, answer) in rest {
            let (query, _) = expect(&mut server, "PATCH", path, answer).await;
            assert!(query.contains("fieldManager=chbench"), "{query}");
        }
        let password = applying.await.unwrap().unwrap();
        assert_eq!(password.len(), 32);
    });
}

#[test]
fn an_existing_password_is_kept_and_a_new_one_is_random_and_labelled() {
    let (secret, password) = password_secret("chbench");
    let (_, other) = password_secret("chbench");
    assert_eq!(password.len(), 32);
    assert_ne!(password, other, "a new password every time one is made");
    assert_eq!(secret.metadata.labels.as_ref().unwrap()[PART_OF.0], PART_OF.1);
    assert_eq!(secret.data.as_ref().unwrap()["password"].0, password.as_bytes());
    runtime().block_on(async {
        let (client, mut server) = mocked();
        let ensuring = tokio::spawn(async move { ensure_password(&client, "chbench").await });
        // "s3cr3t" in base64: the running pod read this one at its start; it must stay.
        let existing = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"clickhouse-password"},
            "data":{"password":"czNjcjN0"}}"#;
        expect(&mut server, "GET", SECRET, existing).await;
        assert_eq!(ensuring.await.unwrap().unwrap(), "s3cr3t");
    });
}

#[test]
fn a_wait_that_times_out_says_why_with_the_pods_events_and_logs() {
    runtime().block_on(async {
        // Inside the runtime: the client spawns its request buffer on it.
        let (client, mut server) = mocked();
        let waiting = tokio::spawn(async move {
            let mut heard = Vec::new();
            let result =
                wait_for_ready(&client, "chbench", "clickhouse", Duration::ZERO, Duration::from_millis(1), |line| {
                    heard.push(line.to_string())
                })
                .await;
            (result, heard)
        });
        let pending = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"},
            "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False"}]}}"#;
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/pods/clickhouse", pending).await;
        let events = r#"{"apiVersion":"v1","kind":"EventList","metadata":{},"items":[{"metadata":{"name":"e1"},
            "involvedObject":{"kind":"Pod","name":"clickhouse"},"type":"Warning","reason":"FailedScheduling",
            "message":"0/1 nodes are available: 1 Insufficient memory."}]}"#;
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/events", events).await;
        let (request, reply) = server.next_request().await.unwrap();
        assert_eq!(request.uri().path(), "/api/v1/namespaces/chbench/pods/clickhouse/log");
        assert!(request.uri().query().unwrap().contains("container=clickhouse"));
        reply.send_response(Response::builder().body(Body::from(b"starting\n".to_vec())).unwrap());

        let (result, heard) = waiting.await.unwrap();
        let error = format!("{:#}", result.unwrap_err());
        assert!(error.starts_with("pod chbench/clickhouse was not Ready after 0 s (phase Pending)"), "{error}");
        assert!(
            error.contains("Pod Warning FailedScheduling: 0/1 nodes are available: 1 Insufficient memory."),
            "{error}"
        );
        assert!(error.contains("last 40 log lines:\n  starting"), "{error}");
        assert_eq!(heard, ["pod chbench/clickhouse: Pending"]);
    });
}

#[test]
fn a_wait_ends_when_the_pod_is_ready() {
    runtime().block_on(async {
        // Inside the runtime: the client spawns its request buffer on it.
        let (client, mut server) = mocked();
        let waiting = tokio::spawn(async move {
            wait_for_ready(&client, "chbench", "clickhouse", Duration::from_secs(60), Duration::from_millis(1), |_| {})
                .await
        });
        let pending =
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"},"status":{"phase":"Pending"}}"#;
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/pods/clickhouse", pending).await;
        let ready = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"},
            "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/pods/clickhouse", ready).await;
        waiting.await.unwrap().unwrap();
    });
}

#[test]
fn a_container_that_cannot_start_ends_the_wait_at_once() {
    runtime().block_on(async {
        let (client, mut server) = mocked();
        let waiting = tokio::spawn(async move {
            wait_for_ready(&client, "chbench", "clickhouse", Duration::from_secs(600), Duration::from_millis(1), |_| {}).await
        });
        let pulling = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"},"status":{"phase":"Pending",
            "containerStatuses":[{"name":"clickhouse","image":"x","imageID":"","ready":false,"restartCount":0,
            "state":{"waiting":{"reason":"ImagePullBackOff","message":"Back-off pulling image \"x\""}}}]}}"#;
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/pods/clickhouse", pulling).await;
        let no_events = r#"{"apiVersion":"v1","kind":"EventList","metadata":{},"items":[]}"#;
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/events", no_events).await;
        // Not started: the log request is refused as a real server refuses it.
        let no_log = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"container \"clickhouse\" in pod \"clickhouse\" is waiting to start","reason":"BadRequest","code":400}"#;
        expect_status(&mut server, "GET", "/api/v1/namespaces/chbench/pods/clickhouse/log", 400, no_log).await;
        let error = format!("{:#}", waiting.await.unwrap().unwrap_err());
        assert!(
            error.starts_with("pod chbench/clickhouse cannot start: container clickhouse is ImagePullBackOff: Back-off pulling image"),
            "{error}"
        );
        assert!(error.contains("events:\n  (none)"), "{error}");
        assert!(error.contains("(none: container \"clickhouse\" in pod \"clickhouse\" is waiting to start)"), "{error}");
    });
}

/// The collected deployment: gp3 through a claim, on an m5.xlarge, as `up` leaves it.
const RUN: &str = "4f1c2b7e-0d7a-4b57-9d1e-2a3c4b5d6e7f";
const NODE: &str = "ip-10-0-1-5.ec2.internal";
const DIGEST: &str =
    "docker.io/clickhouse/clickhouse-server@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";

fn namespace_json(annotations: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"chbench",
            "creationTimestamp":"2026-11-30T03:00:00Z","annotations":{{{annotations}}}}}}}"#
    )
}

fn pod_json(volume: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"clickhouse","namespace":"chbench"}},
        "spec":{{"nodeName":"{NODE}","containers":[{{"name":"clickhouse","image":"clickhouse/clickhouse-server:26.3.33.24",
            "volumeMounts":[{{"name":"data","mountPath":"/var/lib/clickhouse"}}]}}],
            "volumes":[{{"name":"data",{volume}}}]}},
        "status":{{"phase":"Running","conditions":[{{"type":"Ready","status":"True"}}],
            "containerStatuses":[{{"name":"clickhouse","image":"clickhouse/clickhouse-server:26.3.33.24",
            "imageID":"{DIGEST}","ready":true,"restartCount":0}}]}}}}"#
    )
}

const NODE_JSON: &str = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"ip-10-0-1-5.ec2.internal",
    "labels":{"node.kubernetes.io/instance-type":"m5.xlarge","kubernetes.io/arch":"amd64"}}}"#;

#[test]
fn collect_reads_namespace_pod_node_claim_volume_and_class_then_marks_the_run_collected() {
    runtime().block_on(async {
        let (client, mut server) = mocked();
        let describing = {
            let client = client.clone();
            tokio::spawn(async move { describe_deployment(&client, "chbench").await })
        };
        let namespace = namespace_json(&format!(r#""{RUN_ANNOTATION}":"{RUN}""#));
        expect(&mut server, "GET", "/api/v1/namespaces/chbench", &namespace).await;
        let pod = pod_json(r#""persistentVolumeClaim":{"claimName":"clickhouse-data"}"#);
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/pods/clickhouse", &pod).await;
        expect(&mut server, "GET", &format!("/api/v1/nodes/{NODE}"), NODE_JSON).await;
        let claim = r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"clickhouse-data"},
            "spec":{"storageClassName":"chbench-gp3","volumeName":"pvc-0a1b"}}"#;
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/persistentvolumeclaims/clickhouse-data", claim).await;
        let volume = r#"{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pvc-0a1b"},
            "spec":{"capacity":{"storage":"100Gi"},"storageClassName":"chbench-gp3"}}"#;
        expect(&mut server, "GET", "/api/v1/persistentvolumes/pvc-0a1b", volume).await;
        let class = r#"{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"chbench-gp3"},
            "provisioner":"ebs.csi.aws.com","parameters":{"type":"gp3","iops":"3000","throughput":"125","encrypted":"true"}}"#;
        expect(&mut server, "GET", "/apis/storage.k8s.io/v1/storageclasses/chbench-gp3", class).await;
        let facts = describing.await.unwrap().unwrap();
        assert_eq!(facts.run_id, RUN);
        assert_eq!(facts.namespace_created_at.to_string(), "2026-11-30T03:00:00Z");
        assert_eq!(facts.pod.image, "clickhouse/clickhouse-server:26.3.33.24");
        assert_eq!(facts.pod.image_id.as_deref(), Some(DIGEST));
        assert_eq!(facts.pod.node_name, NODE);
        assert_eq!(facts.node.instance_type.as_deref(), Some("m5.xlarge"));
        assert_eq!(facts.node.architecture.as_deref(), Some("amd64"));
        assert_eq!(
            facts.volume,
            DataVolume::Persistent {
                claim: "clickhouse-data".into(),
                volume: "pvc-0a1b".into(),
                storage_class: Some("chbench-gp3".into()),
                provisioner: Some("ebs.csi.aws.com".into()),
                volume_type: Some("gp3".into()),
                size: Some("100Gi".into()),
                iops: Some("3000".into()),
                throughput_mibps: Some("125".into()),
            }
        );

        // Everything written: the one annotation, merged into the Namespace.
        let marking = tokio::spawn(async move { mark_collected(&client, "chbench", RUN).await });
        let (request, reply) = server.next_request().await.expect("no PATCH");
        assert_eq!((request.method().as_str(), request.uri().path()), ("PATCH", "/api/v1/namespaces/chbench"));
        assert_eq!(request.headers()["content-type"], "application/merge-patch+json");
        let body: serde_json::Value =
            serde_json::from_slice(&request.into_body().collect_bytes().await.unwrap()).unwrap();
        assert_eq!(body, serde_json::json!({"metadata": {"annotations": {COLLECTED_ANNOTATION: RUN}}}));
        reply.send_response(Response::builder().body(Body::from(namespace.into_bytes())).unwrap());
        marking.await.unwrap().unwrap();
    });
}

#[test]
fn collect_on_local_nvme_says_there_is_no_volume_and_asks_nothing_more() {
    runtime().block_on(async {
        let (client, mut server) = mocked();
        let describing = tokio::spawn(async move { describe_deployment(&client, "chbench").await });
        let namespace = namespace_json(&format!(r#""{RUN_ANNOTATION}":"{RUN}""#));
        expect(&mut server, "GET", "/api/v1/namespaces/chbench", &namespace).await;
        let pod = pod_json(r#""emptyDir":{"sizeLimit":"100Gi"}"#);
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/pods/clickhouse", &pod).await;
        expect(&mut server, "GET", &format!("/api/v1/nodes/{NODE}"), NODE_JSON).await;
        let facts = describing.await.unwrap().unwrap();
        assert_eq!(facts.volume, DataVolume::None { source: "emptyDir".into(), size_limit: Some("100Gi".into()) });
    });
}

#[test]
fn collect_without_the_run_annotation_says_to_run_up_again() {
    runtime().block_on(async {
        let (client, mut server) = mocked();
        let describing = tokio::spawn(async move { describe_deployment(&client, "chbench").await });
        expect(&mut server, "GET", "/api/v1/namespaces/chbench", &namespace_json("")).await;
        let error = format!("{:#}", describing.await.unwrap().unwrap_err());
        assert_eq!(
            error,
            "namespace chbench has no chbench.dev/run annotation (an older up made it): run cargo xtask eks up again"
        );
    });
}

#[test]
fn the_eks_target_refuses_a_namespace_without_the_password_secret() {
    runtime().block_on(async {
        let (client, mut server) = mocked();
        let finding = tokio::spawn(async move { find_deployment(&client, "chbench").await });
        // Read, never made: one GET, and the answer is the line.
        expect_status(&mut server, "GET", SECRET, 404, SECRET_NOT_FOUND).await;
        let error = format!("{:#}", finding.await.unwrap().unwrap_err());
        assert_eq!(error, "no secret chbench/clickhouse-password, so no deployment to use: run `cargo xtask eks up`");
    });
}

#[test]
fn the_port_forward_listens_on_loopback_and_says_once_which_pod_refused() {
    let forward = runtime().block_on(async {
        // Inside the runtime: the client's request task runs on it, as on client_runtime.
        let (client, mut server) = mocked();
        let forward = PortForward::start(client, "chbench", "clickhouse", 8123).unwrap();
        assert!(forward.local_addr().ip().is_loopback(), "{}", forward.local_addr());
        assert_eq!(forward.url(), format!("http://127.0.0.1:{}", forward.local_port()));
        assert_ne!(forward.local_port(), 0);
        assert_eq!(forward.failure(), None);

        let mut connection = tokio::net::TcpStream::connect(forward.local_addr()).await.unwrap();
        let forbidden = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"pods \"clickhouse\" is forbidden: cannot create resource \"pods/portforward\"",
            "reason":"Forbidden","code":403}"#;
        let (query, _) =
            expect_status(&mut server, "GET", "/api/v1/namespaces/chbench/pods/clickhouse/portforward", 403, forbidden)
                .await;
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

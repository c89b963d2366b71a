//! `up`'s and the storage baseline's conversation with the Kubernetes API, against a mocked API server (tower-test,
//! as kube's own tests do): every request is asserted, and the server answers as a real
//! one would. Built with the `eks` feature.

use std::time::Duration;

use chbench::cluster::baseline::{measure, read_baseline};
use chbench::cluster::deploy::{FIELD_MANAGER, apply, ensure_password, password_secret, wait_for_ready};
use chbench::cluster::manifests::{PART_OF, Values, Variant, parse, render};
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

/// Answers the next request with `json` after checking its method and path; returns its
/// query and body, for the caller to check.
async fn expect_body(server: &mut ApiServer, method: &str, path: &str, json: &str) -> (String, String) {
    let (request, reply) =
        server.next_request().await.unwrap_or_else(|| panic!("no request; expected {method} {path}"));
    assert_eq!((request.method().as_str(), request.uri().path()), (method, path), "unexpected request");
    let query = request.uri().query().unwrap_or("").to_string();
    let body = request.into_body().collect_bytes().await.unwrap();
    reply.send_response(Response::builder().body(Body::from(json.as_bytes().to_vec())).unwrap());
    (query, String::from_utf8(body.to_vec()).unwrap())
}

/// What a real API server answers for a missing object.
fn not_found(kind: &str, name: &str) -> String {
    format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{kind} \"{name}\" not found",
        "reason":"NotFound","code":404}}"#
    )
}

const NODE: &str = "ip-10-0-1-23.ap-northeast-2.compute.internal";
const FIO_JOB: &str = "/apis/batch/v1/namespaces/chbench/jobs/chbench-storage-baseline";
const FIO_CLAIM: &str = "/api/v1/namespaces/chbench/persistentvolumeclaims/chbench-fio-data";
const FIO_JOB_FILE: &str = "/api/v1/namespaces/chbench/configmaps/chbench-fio-job";
const FIO_POD: &str = "chbench-storage-baseline-x7k2p";

/// The ClickHouse pod on its node, its data on the claim `clickhouse-data`.
fn clickhouse_pod() -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"clickhouse"}},"spec":{{"nodeName":"{NODE}",
        "nodeSelector":{{"node.kubernetes.io/instance-type":"m5.xlarge"}},"containers":[{{"name":"clickhouse"}}],
        "volumes":[{{"name":"data","persistentVolumeClaim":{{"claimName":"clickhouse-data"}}}}]}}}}"#
    )
}

fn claim(class: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{{"name":"clickhouse-data"}},
        "spec":{{"storageClassName":"{class}","resources":{{"requests":{{"storage":"100Gi"}}}}}}}}"#
    )
}

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

/// The deployment's storage read, leftovers of an earlier run removed (none here), the
/// job file, volume and Job applied, in that order, server-side.
async fn expect_start(server: &mut ApiServer, class: &str) {
    expect(server, "GET", "/api/v1/namespaces/chbench/pods/clickhouse", &clickhouse_pod()).await;
    expect(server, "GET", "/api/v1/namespaces/chbench/persistentvolumeclaims/clickhouse-data", &claim(class)).await;
    if class == "chbench-gp3" {
        let gp3 = r#"{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"chbench-gp3"},
            "provisioner":"ebs.csi.aws.com","parameters":{"type":"gp3","iops":"3000","throughput":"125"}}"#;
        expect(server, "GET", "/apis/storage.k8s.io/v1/storageclasses/chbench-gp3", gp3).await;
    }
    for (path, kind, name) in [
        (FIO_JOB, "jobs.batch", "chbench-storage-baseline"),
        (FIO_CLAIM, "persistentvolumeclaims", "chbench-fio-data"),
        (FIO_JOB_FILE, "configmaps", "chbench-fio-job"),
    ] {
        let (query, _) = expect_status(server, "DELETE", path, 404, &not_found(kind, name)).await;
        assert!(query.contains("propagationPolicy=Background") || query.is_empty(), "{query}");
    }
    let (query, body) = expect_body(server, "PATCH", FIO_JOB_FILE, r#"{"apiVersion":"v1","kind":"ConfigMap"}"#).await;
    assert!(query.contains(&format!("fieldManager={FIELD_MANAGER}")) && query.contains("force=true"), "{query}");
    assert!(body.contains("direct=1") && body.contains(PART_OF.0), "{body}");
    let (_, body) =
        expect_body(server, "PATCH", FIO_CLAIM, r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim"}"#).await;
    assert!(body.contains("100Gi"), "{body}");
    let (query, body) = expect_body(server, "PATCH", FIO_JOB, &job("{}")).await;
    assert!(query.contains("fieldManager=chbench"), "{query}");
    // On the ClickHouse pod's node, through the scheduler.
    assert!(body.contains(NODE) && body.contains("metadata.name"), "{body}");
}

async fn expect_removal(server: &mut ApiServer) {
    for path in [FIO_JOB, FIO_CLAIM, FIO_JOB_FILE] {
        let (query, _) =
            expect(server, "DELETE", path, r#"{"kind":"Status","apiVersion":"v1","status":"Success"}"#).await;
        assert!(query.contains("propagationPolicy=Background") || query.is_empty(), "{query}");
    }
}

#[test]
fn the_storage_baseline_runs_fio_on_clickhouses_node_keeps_its_report_and_removes_the_job() {
    let fio_report =
        std::fs::read_to_string(chbench::engine::workspace_root().join("fixtures/fio/fio-3.33.json")).unwrap();
    runtime().block_on(async {
        let (client, mut server) = mocked();
        let reader = client.clone();
        let measuring = tokio::spawn(async move {
            let mut heard = Vec::new();
            let result = measure(&client, "chbench", Duration::from_secs(60), Duration::from_millis(1), |line| {
                heard.push(line.to_string())
            })
            .await;
            (result, heard)
        });
        expect_start(&mut server, "chbench-gp3").await;
        let pods = "/api/v1/namespaces/chbench/pods";
        expect(&mut server, "GET", FIO_JOB, &job(r#"{"active":1}"#)).await;
        let (query, _) = expect(&mut server, "GET", pods, &fio_pods("Pending")).await;
        assert!(query.contains("labelSelector=batch.kubernetes.io%2Fjob-name%3Dchbench-storage-baseline"), "{query}");
        expect(&mut server, "GET", FIO_JOB, &job(r#"{"succeeded":1}"#)).await;
        expect(&mut server, "GET", pods, &fio_pods("Succeeded")).await;
        // The whole log (the report), of the fio container.
        let (request, reply) = server.next_request().await.unwrap();
        assert_eq!(request.uri().path(), format!("{pods}/{FIO_POD}/log"));
        let query = request.uri().query().unwrap_or("");
        assert!(query.contains("container=fio") && !query.contains("tailLines"), "{query}");
        reply.send_response(Response::builder().body(Body::from(fio_report.clone().into_bytes())).unwrap());
        let kept = "/api/v1/namespaces/chbench/configmaps/chbench-storage-baseline";
        let (query, stored) =
            expect_body(&mut server, "PATCH", kept, r#"{"apiVersion":"v1","kind":"ConfigMap"}"#).await;
        assert!(query.contains("fieldManager=chbench"), "{query}");
        expect_removal(&mut server).await;

        let (result, heard) = measuring.await.unwrap();
        let baseline = result.unwrap();
        assert_eq!(baseline.device.variant, "eks-gp3");
        assert_eq!(baseline.device.node, NODE);
        assert!(baseline.device.description.contains("(3000 IOPS, 125 MiB/s provisioned), 100 GiB"), "{baseline:?}");
        assert_eq!(baseline.seq_read.block_size_bytes, 1 << 20);
        assert_eq!(heard[1..], [format!("storage baseline: pod {FIO_POD}: Pending")]);

        // The stored ConfigMap, labelled, is what the eks target reads back.
        let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
        assert_eq!(stored["metadata"]["labels"][PART_OF.0], PART_OF.1);
        let reading = tokio::spawn(async move { read_baseline(&reader, "chbench").await });
        expect(&mut server, "GET", kept, &stored.to_string()).await;
        assert_eq!(reading.await.unwrap().unwrap(), Some(baseline));
    });
}

#[test]
fn a_failed_fio_job_is_an_error_with_its_log_and_is_removed_all_the_same() {
    runtime().block_on(async {
        let (client, mut server) = mocked();
        let measuring = tokio::spawn(async move {
            measure(&client, "chbench", Duration::from_secs(60), Duration::from_millis(1), |_| {}).await
        });
        expect_start(&mut server, "standard").await;
        let failed = r#"{"failed":1,"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded",
            "message":"Job has reached the specified backoff limit"}]}"#;
        expect(&mut server, "GET", FIO_JOB, &job(failed)).await;
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/pods", &fio_pods("Failed")).await;
        let no_events = r#"{"apiVersion":"v1","kind":"EventList","metadata":{},"items":[]}"#;
        expect(&mut server, "GET", "/api/v1/namespaces/chbench/events", no_events).await;
        let (request, reply) = server.next_request().await.unwrap();
        assert_eq!(request.uri().path(), format!("/api/v1/namespaces/chbench/pods/{FIO_POD}/log"));
        assert!(request.uri().query().unwrap().contains("container=fio"));
        let log = "fio: pid=7, err=22/file:filesetup.c:805, func=open(chbench-fio.data), error=Invalid argument\n";
        reply.send_response(Response::builder().body(Body::from(log.as_bytes().to_vec())).unwrap());
        expect_removal(&mut server).await;

        let error = format!("{:#}", measuring.await.unwrap().unwrap_err());
        assert!(
            error.starts_with(
                "job chbench/chbench-storage-baseline failed (BackoffLimitExceeded: Job has reached the specified backoff limit)"
            ),
            "{error}"
        );
        assert!(error.contains("last 40 log lines:\n  fio: pid=7, err=22/file:filesetup.c:805"), "{error}");
    });
}

#[test]
fn no_baseline_in_the_namespace_reads_as_none() {
    runtime().block_on(async {
        let (client, mut server) = mocked();
        let reading = tokio::spawn(async move { read_baseline(&client, "chbench").await });
        let path = "/api/v1/namespaces/chbench/configmaps/chbench-storage-baseline";
        expect_status(&mut server, "GET", path, 404, &not_found("configmaps", "chbench-storage-baseline")).await;
        assert_eq!(reading.await.unwrap().unwrap(), None);
    });
}

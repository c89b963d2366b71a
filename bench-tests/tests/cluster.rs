//! `up`'s conversation with the Kubernetes API, against a mocked API server (tower-test,
//! as kube's own tests do): every request is asserted, and the server answers as a real
//! one would. Built with the `eks` feature.

use std::time::Duration;

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

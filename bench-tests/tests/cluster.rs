//! `up`'s conversation with the Kubernetes API, against a mocked API server (tower-test,
//! as kube's own tests do): every request is asserted, and the server answers as a real
//! one would. Built with the `eks` feature.

use std::time::Duration;

use chbench::cluster::deploy::{FIELD_MANAGER, apply, apply_secret, password_secret, wait_for_ready};
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

/// Answers the next request with `json` after checking its method and path (and
/// returns its query, for the caller to check).
async fn expect(server: &mut ApiServer, method: &str, path: &str, json: &str) -> String {
    let (request, reply) =
        server.next_request().await.unwrap_or_else(|| panic!("no request; expected {method} {path}"));
    assert_eq!((request.method().as_str(), request.uri().path()), (method, path), "unexpected request");
    let query = request.uri().query().unwrap_or("").to_string();
    reply.send_response(Response::builder().status(200).body(Body::from(json.as_bytes().to_vec())).unwrap());
    query
}

#[test]
fn up_applies_every_object_server_side_in_order() {
    let objects = parse(&render(Variant::Kind, &Values::defaults(Variant::Kind)).unwrap()).unwrap();
    runtime().block_on(async {
        // Inside the runtime: the client spawns its request buffer on it.
        let (client, mut server) = mocked();
        let applying = tokio::spawn(async move { apply(&client, &objects).await });
        let expected = [
            ("/api/v1/namespaces/chbench", r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"chbench"}}"#),
            (
                "/api/v1/namespaces/chbench/persistentvolumeclaims/clickhouse-data",
                r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"clickhouse-data"}}"#,
            ),
            (
                "/api/v1/namespaces/chbench/pods/clickhouse",
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"clickhouse"}}"#,
            ),
        ];
        for (path, answer) in expected {
            let query = expect(&mut server, "PATCH", path, answer).await;
            // Server-side apply, owned by chbench, taking over fields another manager set.
            assert!(
                query.contains(&format!("fieldManager={FIELD_MANAGER}")) && query.contains("force=true"),
                "{query}"
            );
        }
        applying.await.unwrap().unwrap();
    });
}

#[test]
fn the_password_secret_is_random_labelled_and_applied_in_the_namespace() {
    let (secret, password) = password_secret("chbench");
    let (_, other) = password_secret("chbench");
    assert_eq!(password.len(), 32);
    assert_ne!(password, other, "a new password every time");
    assert_eq!(secret.metadata.labels.as_ref().unwrap()[PART_OF.0], PART_OF.1);
    assert_eq!(secret.string_data.as_ref().unwrap()["password"], password);
    runtime().block_on(async {
        // Inside the runtime: the client spawns its request buffer on it.
        let (client, mut server) = mocked();
        let applying = tokio::spawn(async move { apply_secret(&client, &secret).await });
        let answer = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"clickhouse-password"}}"#;
        expect(&mut server, "PATCH", "/api/v1/namespaces/chbench/secrets/clickhouse-password", answer).await;
        applying.await.unwrap().unwrap();
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
            "involvedObject":{"name":"clickhouse"},"type":"Warning","reason":"FailedScheduling",
            "message":"0/1 nodes are available: 1 Insufficient memory."}]}"#;
        let query = expect(&mut server, "GET", "/api/v1/namespaces/chbench/events", events).await;
        assert!(query.contains("fieldSelector=involvedObject.name%3Dclickhouse"), "{query}");
        let (request, reply) = server.next_request().await.unwrap();
        assert_eq!(request.uri().path(), "/api/v1/namespaces/chbench/pods/clickhouse/log");
        reply.send_response(Response::builder().body(Body::from(b"starting\n".to_vec())).unwrap());

        let (result, heard) = waiting.await.unwrap();
        let error = format!("{:#}", result.unwrap_err());
        assert!(error.starts_with("pod chbench/clickhouse was not Ready after 0 s (phase Pending)"), "{error}");
        assert!(error.contains("Warning FailedScheduling: 0/1 nodes are available: 1 Insufficient memory."), "{error}");
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

//! `up`: every object applied server-side in order, the password, the wait for the pod, and
//! what ends it (ready, a container that cannot start, a timeout, Ctrl-C).

use super::*;

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

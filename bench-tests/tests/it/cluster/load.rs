//! A throughput level's load in the cluster: clickhouse-benchmark from the server's image
//! as a Job, let through to ClickHouse's native port, given its queries; its log read,
//! and its objects removed, whether it succeeded, failed or was stopped.

use super::*;
use chbench::cluster::load::run_level;
use chbench::load_generator::{ClientPlacement, LoadBound, LoadLevel, LoadReport, LoadRun};
use chbench::settings::Settings;

const LOAD_JOB: &str = "/apis/batch/v1/namespaces/chbench/jobs/chbench-load";
const LOAD_POLICY: &str = "/apis/networking.k8s.io/v1/namespaces/chbench/networkpolicies/chbench-load-to-clickhouse";
const LOAD_QUERIES: &str = "/api/v1/namespaces/chbench/configmaps/chbench-load-queries";
const LOAD_POD: &str = "chbench-load-q8m4z";
const LOAD_NODE: &str = "ip-10-0-2-51.ap-northeast-2.compute.internal";
const PODS: &str = "/api/v1/namespaces/chbench/pods";
const SERVER_IP: &str = "10.0.1.7";

/// The uid the API server gave this level's Job: its pods are found by it.
const JOB_UID: &str = "8c0f6a4e-1d2b-4e5f-9a7c-3b2d1e0f4a5c";

fn job(status: &str) -> String {
    format!(
        r#"{{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"chbench-load","uid":"{JOB_UID}"}},"status":{status}}}"#
    )
}

fn load_pods(phase: &str) -> String {
    json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [{"metadata": {"name": LOAD_POD},
        "spec": {"nodeName": LOAD_NODE, "containers": [{"name": "load"}]}, "status": {"phase": phase}}]})
    .to_string()
}

/// The ClickHouse pod, Ready on [`NODE`] at [`SERVER_IP`].
fn server_pod() -> String {
    let mut pod: Value = serde_json::from_str(&pod_json(on_claim())).unwrap();
    pod["status"]["podIP"] = json!(SERVER_IP);
    pod.to_string()
}

fn level(placement: ClientPlacement) -> LoadLevel {
    LoadLevel {
        clients: 4,
        bound: LoadBound::Seconds(2.0),
        queries: vec!["SELECT count() FROM logs".to_string(), "SELECT count() FROM logs_missing".to_string()],
        database: "chbench_run_p7".to_string(),
        query_id_prefix: "chbench-run-r1-c4".to_string(),
        settings: Settings::new().with("max_threads", 2),
        placement,
    }
}

fn run(
    level: LoadLevel,
) -> impl FnOnce(Client) -> std::pin::Pin<Box<dyn Future<Output = anyhow::Result<LoadRun>> + Send>> {
    move |client| {
        Box::pin(async move {
            run_level(&client, "chbench", IMAGE, "bench", &level, Duration::from_millis(1), |_| {}).await
        })
    }
}

/// The server's pod read, leftovers removed (none), then the queries, the opening to
/// ClickHouse and the Job applied; returns the Job as applied.
async fn expect_start(server: &mut ApiServer) -> Value {
    expect(server, "GET", POD, &server_pod()).await;
    for (path, kind, name) in [
        (LOAD_JOB, "jobs.batch", "chbench-load"),
        (LOAD_POLICY, "networkpolicies.networking.k8s.io", "chbench-load-to-clickhouse"),
        (LOAD_QUERIES, "configmaps", "chbench-load-queries"),
    ] {
        expect_status(server, "DELETE", path, 404, &not_found(kind, name)).await;
    }
    let (query, body) =
        expect_query_and_body(server, "PATCH", LOAD_QUERIES, r#"{"apiVersion":"v1","kind":"ConfigMap"}"#).await;
    assert!(query.contains(&format!("fieldManager={FIELD_MANAGER}")), "{query}");
    let queries: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        queries["data"]["queries.tsv"], "SELECT count() FROM logs\nSELECT count() FROM logs_missing\n",
        "{body}"
    );
    let policy = expect_body(server, "PATCH", LOAD_POLICY, r#"{"kind":"NetworkPolicy"}"#).await;
    // Only the load's pods, only to ClickHouse, only its native port.
    assert_eq!(policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"], "clickhouse");
    let from = &policy["spec"]["ingress"][0];
    assert_eq!(from["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"], "load");
    assert_eq!(from["ports"], json!([{"protocol": "TCP", "port": 9000}]));
    let job_body = expect_body(server, "PATCH", LOAD_JOB, &job("{}")).await;
    let pod = &job_body["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    // The server's own image, so its own clickhouse-benchmark.
    assert_eq!(container["image"], IMAGE);
    let arguments: Vec<&str> = container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert!(arguments.contains(&"--host=10.0.1.7") && arguments.contains(&"--concurrency=4"), "{arguments:?}");
    assert!(arguments.contains(&"--user=bench") && arguments.contains(&"--max_threads=2"), "{arguments:?}");
    // The password from the Secret, in the environment; never on the command line.
    assert_eq!(container["env"][0]["name"], "CLICKHOUSE_PASSWORD");
    assert_eq!(container["env"][0]["valueFrom"]["secretKeyRef"]["name"], "clickhouse-password");
    // The server the pod's first SELECT 1 goes to, before the level.
    assert_eq!(container["env"][1], json!({"name": "CHBENCH_SERVER_HOST", "value": SERVER_IP}));
    assert_eq!(container["env"][2], json!({"name": "CHBENCH_SERVER_USER", "value": "bench"}));
    assert_eq!(pod["terminationGracePeriodSeconds"], 1);
    assert!(!job_body.to_string().contains("s3cr3t") && !job_body.to_string().contains("--password"));
    assert_eq!(job_body["spec"]["backoffLimit"], 0);
    // The level's 2 s and 600 s to start.
    assert_eq!(job_body["spec"]["activeDeadlineSeconds"], 602);
    job_body
}

async fn expect_removal(server: &mut ApiServer) {
    for path in [LOAD_JOB, LOAD_POLICY, LOAD_QUERIES] {
        expect(server, "DELETE", path, SUCCESS).await;
    }
}

fn fixture_log() -> String {
    std::fs::read_to_string(chbench::files::workspace_root().join("fixtures/load/clickhouse-benchmark.log")).unwrap()
}

#[test]
fn a_level_runs_as_a_job_on_a_node_of_its_own_type_and_its_report_is_read() {
    let mut applied = Value::Null;
    let output =
        converse(run(level(ClientPlacement::OwnNode { node_type: Some("c7g.4xlarge".to_string()) })), async |server| {
            applied = expect_start(server).await;
            expect(server, "GET", LOAD_JOB, &job(r#"{"active":1}"#)).await;
            let (query, _) = expect(server, "GET", PODS, &load_pods("Running")).await;
            // This Job's pods, by its uid: never an earlier one's of the same name.
            assert!(
                query.contains(&format!("labelSelector=batch.kubernetes.io%2Fcontroller-uid%3D{JOB_UID}")),
                "{query}"
            );
            expect(server, "GET", LOAD_JOB, &job(r#"{"succeeded":1}"#)).await;
            expect(server, "GET", PODS, &load_pods("Succeeded")).await;
            let query = expect_log(server, &format!("{PODS}/{LOAD_POD}/log"), &fixture_log()).await;
            assert!(query.contains("container=load") && !query.contains("tailLines"), "{query}");
            expect_removal(server).await;
        })
        .unwrap();
    assert_eq!((output.pod.as_str(), output.node.as_deref()), (LOAD_POD, Some(LOAD_NODE)));
    assert_eq!(output.generator, format!("clickhouse-benchmark ({IMAGE})"));
    assert_eq!(LoadReport::parse(&output.log).unwrap().completed, 1205);
    // A node of its own: never the server's, and of the type asked for.
    let pod = &applied["spec"]["template"]["spec"];
    assert_eq!(pod["nodeSelector"], json!({"node.kubernetes.io/instance-type": "c7g.4xlarge"}));
    let apart = &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(
        apart["labelSelector"]["matchLabels"],
        json!({"app.kubernetes.io/name": "clickhouse", "app.kubernetes.io/part-of": "chbench"})
    );
    // Any namespace's chbench server: another deployment's node is not the load's either.
    assert_eq!(apart["namespaceSelector"], json!({}));
    assert_eq!(apart["topologyKey"], "kubernetes.io/hostname");
    assert!(pod["affinity"]["nodeAffinity"].is_null(), "{pod}");
}

#[test]
fn beside_the_server_the_job_goes_to_the_servers_node_by_name() {
    let mut applied = Value::Null;
    converse(run(level(ClientPlacement::BesideServer)), async |server| {
        applied = expect_start(server).await;
        expect(server, "GET", LOAD_JOB, &job(r#"{"succeeded":1}"#)).await;
        expect(server, "GET", PODS, &load_pods("Succeeded")).await;
        expect_log(server, &format!("{PODS}/{LOAD_POD}/log"), &fixture_log()).await;
        expect_removal(server).await;
    })
    .unwrap();
    let pod = &applied["spec"]["template"]["spec"];
    let terms = &pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    assert_eq!(terms[0]["matchFields"][0], json!({"key": "metadata.name", "operator": "In", "values": [NODE]}));
    assert!(pod["nodeSelector"].is_null() && pod["affinity"]["podAntiAffinity"].is_null(), "{pod}");
}

#[test]
fn a_failed_load_job_is_an_error_with_its_log_and_is_removed_all_the_same() {
    let error = converse(run(level(ClientPlacement::OwnNode { node_type: None })), async |server| {
        expect_start(server).await;
        let failed = r#"{"failed":1,"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded",
            "message":"Job has reached the specified backoff limit"}]}"#;
        expect(server, "GET", LOAD_JOB, &job(failed)).await;
        expect(server, "GET", PODS, &load_pods("Failed")).await;
        expect(server, "GET", "/api/v1/namespaces/chbench/events", NO_EVENTS).await;
        let log = "Code: 516. DB::Exception: bench: Authentication failed. (AUTHENTICATION_FAILED)\n";
        let query = expect_log(server, &format!("{PODS}/{LOAD_POD}/log"), log).await;
        assert!(query.contains("container=load"), "{query}");
        expect_removal(server).await;
    })
    .unwrap_err();
    let error = format!("{error:#}");
    assert!(error.starts_with("job chbench/chbench-load failed (BackoffLimitExceeded"), "{error}");
    assert!(error.contains("Authentication failed"), "{error}");
}

/// Ctrl-C while the level runs ends the wait, and the Job, its opening and its queries
/// are removed all the same (nextest runs each test in a process of its own).
#[test]
fn ctrl_c_during_a_load_level_removes_its_job() {
    let error = converse(run(level(ClientPlacement::BesideServer)), async |server| {
        expect_start(server).await;
        chbench::interrupt::request_stop();
        expect(server, "GET", LOAD_JOB, &job(r#"{"active":1}"#)).await;
        expect(server, "GET", PODS, &load_pods("Running")).await;
        expect_removal(server).await;
    })
    .unwrap_err();
    assert!(error.is::<Interrupted>(), "{error:#}");
}

#[test]
fn a_server_pod_without_an_ip_is_one_line_and_nothing_is_applied() {
    let error = converse(run(level(ClientPlacement::BesideServer)), async |server| {
        let mut pod: Value = serde_json::from_str(&pod_json(on_claim())).unwrap();
        pod["status"] = json!({"phase": "Pending"});
        expect(server, "GET", POD, &pod.to_string()).await;
    })
    .unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        "pod chbench/clickhouse has no IP or node yet: is it Ready? (`cargo xtask eks status` says)"
    );
}

/// A pod the scheduler cannot place says why as the level waits (a node being made for
/// it, or none that fits), not only at the timeout.
#[test]
fn a_load_pod_that_cannot_be_scheduled_says_why_while_it_waits() {
    let unschedulable = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [{
        "metadata": {"name": LOAD_POD}, "spec": {"containers": [{"name": "load"}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules."}]}}]})
    .to_string();
    let heard = converse(
        |client| async move {
            let mut heard = Vec::new();
            let level = level(ClientPlacement::OwnNode { node_type: None });
            let ran = run_level(&client, "chbench", IMAGE, "bench", &level, Duration::from_millis(1), |line| {
                heard.push(line.to_string())
            })
            .await;
            (ran.map(|_| ()), heard)
        },
        async |server| {
            expect_start(server).await;
            expect(server, "GET", LOAD_JOB, &job(r#"{"active":1}"#)).await;
            expect(server, "GET", PODS, &unschedulable).await;
            expect(server, "GET", LOAD_JOB, &job(r#"{"succeeded":1}"#)).await;
            expect(server, "GET", PODS, &load_pods("Succeeded")).await;
            expect_log(server, &format!("{PODS}/{LOAD_POD}/log"), &fixture_log()).await;
            expect_removal(server).await;
        },
    );
    heard.0.unwrap();
    assert_eq!(
        heard.1,
        [format!(
            "load: pod {LOAD_POD}: Pending (Unschedulable: 0/1 nodes are available: 1 node(s) didn't match pod \
             anti-affinity rules.)"
        )]
    );
}

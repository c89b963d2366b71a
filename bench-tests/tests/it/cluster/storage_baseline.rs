//! The storage baseline's conversation: the deployment read, fio on ClickHouse's node,
//! its report kept in the namespace, its Job removed.

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
    let error =
        converse(
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

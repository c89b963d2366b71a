//! `collect`: what it reads of the deployment and how it marks the run collected; a bench's
//! use stamps.

use super::*;

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

//! `status` and `down`: what a deployment shows, and what `down` deletes, refuses, waits
//! for and says.

use super::*;

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
    // A type `eks down` tells, to forget the namespace if the last `up` was there.
    let gone = error.downcast_ref::<chbench::cluster::NoDeployment>();
    assert_eq!(gone.map(|gone| gone.namespace.as_str()), Some("chbench"));
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

//! The eks target: the deployment it finds, the baseline of its node, and its port-forward.

use super::*;

#[test]
fn the_eks_target_refuses_a_namespace_without_the_password_secret() {
    // Read, never made: one GET, and the answer is the line.
    let error = converse(
        |client| async move { find_deployment(&client, "chbench", None).await },
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

/// The deployment the last `up` brought up, which bench chose for want of a target, gone
/// from the cluster (a `down` from another machine, a deleted namespace, another cluster):
/// one line naming it and the ways on.
#[test]
fn the_last_ups_deployment_gone_from_the_cluster_is_one_line_naming_the_remedy() {
    let last_up = chbench::cluster::last_up::LastUp {
        cluster: "https://127.0.0.1:6443".into(),
        namespace: "chbench".into(),
        variant: "eks-gp3".into(),
        run: "0b6e".into(),
        brought_up_at: "2026-12-06T19:40:12Z".parse().unwrap(),
    };
    let error = converse(
        move |client| async move { find_deployment(&client, "chbench", Some(&last_up)).await },
        async |server| {
            expect_status(server, "GET", SECRET, 404, SECRET_NOT_FOUND).await;
        },
    )
    .unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        "the deployment `cargo xtask eks up` brought up on https://127.0.0.1:6443 in namespace chbench (eks-gp3, run \
         0b6e) at 2026-12-06 19:40 UTC is gone from its cluster (no secret chbench/clickhouse-password): `cargo \
         xtask eks up` brings it up again, `cargo xtask eks down` takes away what is left of it and forgets it, or \
         choose another target with --target"
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
        |client| async move { find_deployment(&client, "bench-2", None).await },
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
        |client| async move { find_deployment(&client, "chbench", None).await },
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

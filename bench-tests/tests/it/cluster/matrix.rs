//! A matrix run on eks: each variant's `up`, then its benchmark, then `collect` and
//! `down`, in that order, one variant after the other, every request asserted. The
//! benchmark itself cannot run here (no ClickHouse answers a mocked API server): it is
//! the test's own step, which records that it ran; so is collect's ClickHouse half (the
//! server's version and query_log), given by the test. Everything else is the library's:
//! the matrix file, the runner, and up, collect and down through `ClusterDeployments`.
//! Here too the matrix files of `manifests/matrices/`, each read as `bench --matrix` reads it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chbench::benchmarks::kinds;
use chbench::cluster::deploy::ClusterConnection;
use chbench::cluster::manifests::manifests_root;
use chbench::collect::ServerFacts;
use chbench::matrix::eks::ClusterDeployments;
use chbench::matrix::{BenchStep, MatrixRun, PlannedVariant, VariantStatus, parse_matrix, read_matrix, run_matrix};
use chbench::target_info::TargetKind;

use super::*;

/// The mocked API server's client, on a runtime of its own that runs each step.
struct Mocked {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

impl ClusterConnection for Mocked {
    fn on_cluster<T, Work>(&self, work: impl FnOnce(Client) -> Work) -> anyhow::Result<T>
    where
        Work: Future<Output = anyhow::Result<T>>,
    {
        self.runtime.block_on(work(self.client.clone()))
    }
}

type Steps = Arc<Mutex<Vec<String>>>;

/// The test's benchmark step: it records the variant it ran for, and the settings
/// its `bench` command line would carry; and that whole command line in `command_lines`.
struct RecordedBench {
    steps: Steps,
    command_lines: Arc<Mutex<Vec<Vec<String>>>>,
}

impl RecordedBench {
    fn new(steps: &Steps) -> RecordedBench {
        RecordedBench { steps: Arc::clone(steps), command_lines: Arc::default() }
    }
}

impl BenchStep for RecordedBench {
    fn bench(&mut self, planned: &PlannedVariant<'_>) -> anyhow::Result<()> {
        let args = planned.bench_args();
        let settings: Vec<String> =
            args.windows(2).filter(|pair| pair[0] == "--setting").map(|pair| pair[1].clone()).collect();
        self.steps.lock().unwrap().push(format!("bench {} {}", planned.variant.name, settings.join(" ")));
        self.command_lines.lock().unwrap().push(args);
        Ok(())
    }
}

/// As `answer`, with `step` recorded once the request came and before it is answered.
async fn answer_noting(server: &mut ApiServer, steps: &Steps, step: String, method: &str, path: &str, json: &str) {
    let (request, reply) =
        server.next_request().await.unwrap_or_else(|| panic!("no request; expected {method} {path}"));
    assert_eq!((request.method().as_str(), request.uri().path()), (method, path), "unexpected request");
    steps.lock().unwrap().push(step);
    reply.send_response(Response::builder().status(200).body(Body::from(json.as_bytes().to_vec())).unwrap());
}

const MATRIX: &str = r#"
kind = "logs"
flags = ["--rows", "1M"]
target = "eks"
[eks]
no_baseline = true

[[variant]]
name = "c7g"
node_type = "c7g.2xlarge"

[[variant]]
name = "c6i"
node_type = "c6i.2xlarge"
"#;

/// One eks-gp3 variant's conversation: up on a new namespace (the pod pinned to
/// `node_type`, its data on a gp3 claim), then, after the benchmark, collect and down.
async fn answer_one_gp3_variant(server: &mut ApiServer, steps: &Steps, name: &str, node_type: &str) {
    // up: the namespace, the password, then every object server-side, in order.
    expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
    let namespace = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"chbench"}}"#;
    expect(server, "PATCH", NAMESPACE, namespace).await;
    expect_status(server, "GET", SECRET, 404, SECRET_NOT_FOUND).await;
    let created = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"clickhouse-password"}}"#;
    expect(server, "POST", "/api/v1/namespaces/chbench/secrets", created).await;
    let policy =
        r#"{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"default-deny-ingress"}}"#;
    expect(server, "PATCH", NETWORK_POLICY, policy).await;
    let class = expect_body(server, "PATCH", &format!("{CLASSES}/{GP3}"), &class_json(GP3).to_string()).await;
    assert_eq!(class["parameters"]["type"], "gp3", "{class}");
    expect(server, "PATCH", CLAIM, &claim_json(GP3).to_string()).await;
    let pod = expect_body(server, "PATCH", POD, &pod_json(on_claim())).await;
    assert_eq!(pod["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"], node_type, "{pod}");
    // The wait: Ready at once.
    answer_noting(server, steps, format!("up {name}"), "GET", POD, &pod_json(on_claim())).await;
    // collect, once the benchmark ran: the deployment read, then the run marked collected.
    answer_noting(server, steps, format!("collect {name}"), "GET", NAMESPACE, &namespace_json(USED)).await;
    expect(server, "GET", POD, &pod_json(on_claim())).await;
    expect(server, "GET", NODE_PATH, &node_json(node_type)).await;
    expect(server, "GET", CLAIM, &claim_json(GP3).to_string()).await;
    expect(server, "GET", VOLUME, &volume_json(GP3, "Bound")).await;
    expect(server, "GET", &format!("{CLASSES}/{GP3}"), &class_json(GP3).to_string()).await;
    let marked = answer(server, "PATCH", NAMESPACE, 200, &namespace_json(COLLECTED)).await;
    let marked: Value = serde_json::from_str(&marked.body).unwrap();
    assert!(marked["metadata"]["annotations"][COLLECTED_ANNOTATION].is_string(), "{marked}");
    // down: allowed, since collected; the namespace, then the class, and the waits.
    answer_noting(server, steps, format!("down {name}"), "GET", NAMESPACE, &namespace_json(COLLECTED)).await;
    let only_this = json!([{"metadata": {"name": "chbench", "labels": {PART_OF.0: PART_OF.1}}}]);
    answer_the_listing(server, json!([claim_json(GP3)]), json!([class_json(GP3)]), only_this).await;
    expect(server, "DELETE", NAMESPACE, &terminating_namespace()).await;
    expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
    expect_status(server, "GET", VOLUME, 404, &not_found("persistentvolumes", "pvc-7d1e")).await;
    expect(server, "DELETE", &format!("{CLASSES}/{GP3}"), &class_json(GP3).to_string()).await;
}

/// One eks-nvme variant's conversation: as [`answer_one_gp3_variant`], with the data on
/// the node's instance store (an emptyDir), so no StorageClass or claim is applied, read
/// or deleted, and no volume is waited for.
async fn answer_one_nvme_variant(server: &mut ApiServer, steps: &Steps, name: &str, node_type: &str) {
    // up: the namespace, the password, the policy, then the pod: nothing between them.
    expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
    let namespace = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"chbench"}}"#;
    expect(server, "PATCH", NAMESPACE, namespace).await;
    expect_status(server, "GET", SECRET, 404, SECRET_NOT_FOUND).await;
    let created = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"clickhouse-password"}}"#;
    expect(server, "POST", "/api/v1/namespaces/chbench/secrets", created).await;
    let policy =
        r#"{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"default-deny-ingress"}}"#;
    expect(server, "PATCH", NETWORK_POLICY, policy).await;
    let pod = expect_body(server, "PATCH", POD, &pod_json(on_empty_dir())).await;
    assert_eq!(pod["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"], node_type, "{pod}");
    let volumes = pod["spec"]["volumes"].as_array().unwrap_or_else(|| panic!("no volumes: {pod}"));
    assert!(volumes.iter().any(|volume| volume["emptyDir"].is_object()), "{pod}");
    assert!(volumes.iter().all(|volume| volume.get("persistentVolumeClaim").is_none()), "{pod}");
    // The wait: Ready at once.
    answer_noting(server, steps, format!("up {name}"), "GET", POD, &pod_json(on_empty_dir())).await;
    // collect: the namespace, the pod and its node; no claim, volume or class to read.
    answer_noting(server, steps, format!("collect {name}"), "GET", NAMESPACE, &namespace_json(USED)).await;
    expect(server, "GET", POD, &pod_json(on_empty_dir())).await;
    expect(server, "GET", NODE_PATH, &node_json(node_type)).await;
    let marked = answer(server, "PATCH", NAMESPACE, 200, &namespace_json(COLLECTED)).await;
    let marked: Value = serde_json::from_str(&marked.body).unwrap();
    assert!(marked["metadata"]["annotations"][COLLECTED_ANNOTATION].is_string(), "{marked}");
    // down: no claim (so no volume) and no class listed; the namespace alone, and its wait.
    answer_noting(server, steps, format!("down {name}"), "GET", NAMESPACE, &namespace_json(COLLECTED)).await;
    answer_the_listing(server, json!([]), json!([]), json!([])).await;
    expect(server, "DELETE", NAMESPACE, &terminating_namespace()).await;
    expect_status(server, "GET", NAMESPACE, 404, &not_found("namespaces", "chbench")).await;
}

#[test]
fn a_node_type_matrix_runs_up_bench_collect_down_for_each_variant_in_order() {
    let results = tempfile::tempdir().unwrap();
    let matrix = parse_matrix(Path::new("c7g-vs-c6i.toml"), MATRIX, TargetKind::Auto).unwrap();
    let runtime = runtime();
    // Inside the runtime: the client spawns its request buffer on it.
    let (client, mut server) = {
        let _inside = runtime.enter();
        mocked()
    };
    let steps: Steps = Arc::default();
    let answering = {
        let steps = Arc::clone(&steps);
        std::thread::spawn(move || {
            super::runtime().block_on(async {
                answer_one_gp3_variant(&mut server, &steps, "c7g", "c7g.2xlarge").await;
                answer_one_gp3_variant(&mut server, &steps, "c6i", "c6i.2xlarge").await;
                assert_no_more_requests(&mut server).await;
            })
        })
    };
    let server_reads = |_: &str, _: jiff::Timestamp| {
        Ok((ServerFacts { version: "26.3.33.24".into(), timezone: "UTC".into() }, Ok(String::new())))
    };
    let mut deployments = ClusterDeployments {
        connection: Mocked { runtime, client },
        server: Box::new(server_reads),
        poll: Duration::from_millis(1),
    };
    let run = MatrixRun { folder: results.path().join("nodes"), matrix_id: "nodes".into(), fail_fast: false };
    let mut bench = RecordedBench::new(&steps);
    let summary = run_matrix(&matrix, &run, &mut bench, Some(&mut deployments), &|_| {}).unwrap();
    // The client goes: the server sees no request after the asserted ones.
    drop(deployments);
    answering.join().unwrap();
    assert_eq!(
        *steps.lock().unwrap(),
        [
            "up c7g",
            "bench c7g max_threads=8",
            "collect c7g",
            "down c7g",
            "up c6i",
            "bench c6i max_threads=8",
            "collect c6i",
            "down c6i"
        ]
    );
    let statuses: Vec<VariantStatus> = summary.variants.iter().map(|variant| variant.status).collect();
    assert_eq!(statuses, [VariantStatus::Done, VariantStatus::Done]);
    let collected: Vec<Option<&str>> = summary.variants.iter().map(|variant| variant.collected.as_deref()).collect();
    assert_eq!(collected, [Some("eks-c7g"), Some("eks-c6i")]);
    let deployment: Value =
        serde_json::from_str(&std::fs::read_to_string(run.folder.join("eks-c6i/deployment.json")).unwrap()).unwrap();
    assert_eq!(deployment["node"]["instance_type"], "c6i.2xlarge", "{deployment}");
    assert_eq!(deployment["clickhouse"]["version"], "26.3.33.24");
}

/// An `up` that fails is still collected (it may have applied something); a collect
/// that fails leaves the deployment where the next variant would go, so the matrix
/// stops there and says what to run, the variants after it missing, no bench run.
#[test]
fn a_failed_up_whose_deployment_cannot_be_collected_stops_the_matrix_before_the_next_variant() {
    let results = tempfile::tempdir().unwrap();
    let matrix = parse_matrix(Path::new("c7g-vs-c6i.toml"), MATRIX, TargetKind::Auto).unwrap();
    let runtime = runtime();
    // Inside the runtime: the client spawns its request buffer on it.
    let (client, mut server) = {
        let _inside = runtime.enter();
        mocked()
    };
    let answering = std::thread::spawn(move || {
        super::runtime().block_on(async {
            // up: the namespace of an earlier down is still going.
            expect(&mut server, "GET", NAMESPACE, &terminating_namespace()).await;
            // collect: it carries no run.
            expect(&mut server, "GET", NAMESPACE, &terminating_namespace()).await;
            assert_no_more_requests(&mut server).await;
        })
    });
    let mut deployments = ClusterDeployments {
        connection: Mocked { runtime, client },
        server: Box::new(|_: &str, _: jiff::Timestamp| panic!("no ClickHouse half without a deployment")),
        poll: Duration::from_millis(1),
    };
    let run = MatrixRun { folder: results.path().join("nodes"), matrix_id: "nodes".into(), fail_fast: false };
    let steps: Steps = Arc::default();
    let mut bench = RecordedBench::new(&steps);
    let summary = run_matrix(&matrix, &run, &mut bench, Some(&mut deployments), &|_| {}).unwrap();
    drop(deployments);
    answering.join().unwrap();
    assert!(steps.lock().unwrap().is_empty(), "a bench ran: {:?}", steps.lock().unwrap());
    let statuses: Vec<VariantStatus> = summary.variants.iter().map(|variant| variant.status).collect();
    assert_eq!(statuses, [VariantStatus::Failed, VariantStatus::Missing]);
    let error = summary.variants[0].error.as_deref().unwrap();
    assert!(error.starts_with("eks up: namespace chbench is still being deleted"), "{error}");
    assert!(
        error.contains("eks collect: ")
            && error.ends_with("run `cargo xtask eks collect`, then `cargo xtask eks down`"),
        "{error}"
    );
    let missing = summary.variants[1].error.as_deref().unwrap();
    assert!(missing.contains("could not be collected, so it is still up"), "{missing}");
    assert!(summary.comparisons.is_empty());
}

/// The published matrices (`manifests/matrices/*.toml`), each read from disk as `bench
/// --matrix FILE` reads it: it parses, its kind is one of the registry's, and its flags
/// are that kind's (the parser checks them; here they are also given to the kind's own
/// flags and benchmark check, as `cargo xtask bench KIND` would).
#[test]
fn every_matrix_file_of_the_manifests_parses_names_a_registered_kind_and_gives_it_flags_it_accepts() {
    let folder = manifests_root().join("matrices");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder).unwrap().map(|entry| entry.unwrap().path()).collect();
    files.sort();
    let names: Vec<String> =
        files.iter().map(|file| file.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for published in ["c7g-vs-c6i.toml", "gp3-vs-nvme.toml", "gp3-vs-nvme-writes.toml"] {
        assert!(names.iter().any(|name| name == published), "{published} missing from {}: {names:?}", folder.display());
    }
    for file in &files {
        assert_eq!(file.extension().and_then(|extension| extension.to_str()), Some("toml"), "{}", file.display());
        let matrix = read_matrix(file, TargetKind::Auto).unwrap_or_else(|error| panic!("{error:#}"));
        let kind = kinds::kind_named(matrix.kind.name)
            .unwrap_or_else(|| panic!("{}: kind {} is not in the registry", file.display(), matrix.kind.name));
        assert!(std::ptr::eq(kind, matrix.kind), "{}", file.display());
        let command = (kind.flags)(clap::Command::new(kind.name).no_binary_name(true));
        let matches = command
            .try_get_matches_from(&matrix.flags)
            .unwrap_or_else(|error| panic!("{}: {} refuses {:?}: {error}", file.display(), kind.name, matrix.flags));
        let benchmark = (kind.benchmark)(&matches).unwrap_or_else(|error| panic!("{}: {error:#}", file.display()));
        benchmark.check().unwrap_or_else(|error| panic!("{}: {error:#}", file.display()));
        assert!(matrix.variants.len() >= 2, "{}", file.display());
    }
}

/// `manifests/matrices/gp3-vs-nvme-writes.toml`, read from disk, against the mocked API
/// server: gp3 on an m5.xlarge (a StorageClass and a claim), then nvme on an m6id.xlarge
/// (an emptyDir on its instance store), each up, its writes benchmark, collect and down,
/// in that order, every request asserted.
#[test]
fn the_writes_matrix_file_runs_up_bench_collect_down_on_gp3_then_on_nvme() {
    let file = manifests_root().join("matrices/gp3-vs-nvme-writes.toml");
    let mut matrix = read_matrix(&file, TargetKind::Auto).unwrap();
    assert_eq!((matrix.kind.name, matrix.target), ("writes", TargetKind::Eks));
    let eks = matrix.eks.as_mut().unwrap();
    // The file measures the storage baseline after each up, as `eks up` does; the baseline
    // reaches the cluster through the kubeconfig only, never the mocked API server.
    assert!(eks.baseline);
    eks.baseline = false;
    let deployments: Vec<(&str, Variant, &str)> = matrix
        .variants
        .iter()
        .map(|variant| {
            let deployment = variant.deployment.as_ref().unwrap();
            (variant.name.as_str(), deployment.storage, deployment.values.node_type.as_str())
        })
        .collect();
    assert_eq!(deployments, [("gp3", Variant::EksGp3, "m5.xlarge"), ("nvme", Variant::EksNvme, "m6id.xlarge")]);
    let results = tempfile::tempdir().unwrap();
    let runtime = runtime();
    // Inside the runtime: the client spawns its request buffer on it.
    let (client, mut server) = {
        let _inside = runtime.enter();
        mocked()
    };
    let steps: Steps = Arc::default();
    let answering = {
        let steps = Arc::clone(&steps);
        std::thread::spawn(move || {
            super::runtime().block_on(async {
                answer_one_gp3_variant(&mut server, &steps, "gp3", "m5.xlarge").await;
                answer_one_nvme_variant(&mut server, &steps, "nvme", "m6id.xlarge").await;
                assert_no_more_requests(&mut server).await;
            })
        })
    };
    let server_reads = |_: &str, _: jiff::Timestamp| {
        Ok((ServerFacts { version: "26.3.33.24".into(), timezone: "UTC".into() }, Ok(String::new())))
    };
    let mut deployments = ClusterDeployments {
        connection: Mocked { runtime, client },
        server: Box::new(server_reads),
        poll: Duration::from_millis(1),
    };
    let run = MatrixRun { folder: results.path().join("storage"), matrix_id: "storage".into(), fail_fast: false };
    let mut bench = RecordedBench::new(&steps);
    let summary = run_matrix(&matrix, &run, &mut bench, Some(&mut deployments), &|_| {}).unwrap();
    // The client goes: the server sees no request after the asserted ones.
    drop(deployments);
    answering.join().unwrap();
    assert_eq!(
        *steps.lock().unwrap(),
        [
            "up gp3",
            "bench gp3 max_threads=4",
            "collect gp3",
            "down gp3",
            "up nvme",
            "bench nvme max_threads=4",
            "collect nvme",
            "down nvme"
        ]
    );
    // Each benchmark is the file's kind with the file's flags, on eks, as its own run.
    let command_lines = bench.command_lines.lock().unwrap();
    assert_eq!(command_lines.len(), 2);
    for (command_line, variant) in command_lines.iter().zip(["gp3", "nvme"]) {
        assert_eq!(command_line[..2], ["bench", "writes"], "{command_line:?}");
        assert_eq!(command_line[2..2 + matrix.flags.len()], matrix.flags[..], "{command_line:?}");
        let value_of = |flag: &str| {
            let at = command_line.iter().position(|arg| arg == flag).unwrap_or_else(|| panic!("no {flag}"));
            command_line[at + 1].clone()
        };
        assert_eq!(value_of("--target"), "eks");
        assert_eq!(value_of("--run-id"), format!("storage-{variant}"));
    }
    let statuses: Vec<VariantStatus> = summary.variants.iter().map(|variant| variant.status).collect();
    assert_eq!(statuses, [VariantStatus::Done, VariantStatus::Done]);
    let collected: Vec<Option<&str>> = summary.variants.iter().map(|variant| variant.collected.as_deref()).collect();
    assert_eq!(collected, [Some("eks-gp3"), Some("eks-nvme")]);
    let read = |folder: &str| -> Value {
        let text = std::fs::read_to_string(run.folder.join(folder).join("deployment.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let gp3 = read("eks-gp3");
    assert_eq!(gp3["node"]["instance_type"], "m5.xlarge", "{gp3}");
    assert_eq!(gp3["data_volume"]["kind"], "claim", "{gp3}");
    let nvme = read("eks-nvme");
    assert_eq!(nvme["node"]["instance_type"], "m6id.xlarge", "{nvme}");
    assert_eq!(nvme["data_volume"]["kind"], "empty_dir", "{nvme}");
    assert!(nvme["claim"]["absent"].is_string(), "{nvme}");
}

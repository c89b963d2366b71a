//! The deployment manifests (`manifests/`), rendered for every variant and parsed into
//! the Kubernetes API types: what a cluster would be given, checked without one.
//! Built with the `eks` feature (`cargo nextest run --features chbench/eks`).

use chbench::cluster::manifests::{
    DEFAULT_IMAGE, Document, Object, PART_OF, Values, Variant, check, check_storage_baseline, manifests_root, parse,
    render, render_storage_baseline,
};
use clap::ValueEnum;

fn objects(variant: Variant, values: &Values) -> Vec<Object> {
    let documents = render(variant, values).unwrap_or_else(|error| panic!("{variant}: {error:#}"));
    parse(&documents).unwrap_or_else(|error| panic!("{variant}: {error:#}"))
}

#[test]
fn every_variant_renders_parses_and_passes_the_checks() {
    for &variant in Variant::value_variants() {
        let objects = objects(variant, &Values::defaults(variant));
        check(&objects).unwrap_or_else(|error| panic!("{variant}: {error:#}"));
        let kinds: Vec<&str> = objects.iter().map(Object::kind).collect();
        let expected: &[&str] = match variant {
            Variant::EksGp3 => &["Namespace", "NetworkPolicy", "StorageClass", "PersistentVolumeClaim", "Pod"],
            Variant::EksNvme => &["Namespace", "NetworkPolicy", "Pod"],
            Variant::Kind => &["Namespace", "NetworkPolicy", "PersistentVolumeClaim", "Pod"],
        };
        assert_eq!(kinds, expected, "{variant}");
    }
}

/// The source's resources: gp3 at 3000 IOPS and 125 MiB/s, encrypted, bound when the
/// pod is scheduled, deleted with its claim; a 100 Gi claim; the pod on an m5.xlarge,
/// 2.5/3.5 vCPU and 9/12 Gi, not disrupted by Karpenter, with a readiness probe.
#[test]
fn eks_gp3_is_the_sources_setup_and_its_flags_change_it() {
    let objects = objects(Variant::EksGp3, &Values::defaults(Variant::EksGp3));
    let Some(Object::StorageClass(class)) = objects.iter().find(|object| object.kind() == "StorageClass") else {
        panic!("no StorageClass")
    };
    let parameters = class.parameters.clone().unwrap();
    assert_eq!(parameters["type"], "gp3");
    assert_eq!((parameters["iops"].as_str(), parameters["throughput"].as_str()), ("3000", "125"));
    assert_eq!(parameters["encrypted"], "true");
    assert_eq!(class.volume_binding_mode.as_deref(), Some("WaitForFirstConsumer"));
    assert_eq!(class.reclaim_policy.as_deref(), Some("Delete"));
    let Some(Object::PersistentVolumeClaim(claim)) = objects.iter().find(|o| o.kind() == "PersistentVolumeClaim")
    else {
        panic!("no claim")
    };
    let requests = claim.spec.as_ref().unwrap().resources.as_ref().unwrap().requests.clone().unwrap();
    assert_eq!(requests["storage"].0, "100Gi");
    let Some(Object::Pod(pod)) = objects.iter().find(|object| object.kind() == "Pod") else { panic!("no Pod") };
    let annotations = pod.metadata.annotations.clone().unwrap();
    assert_eq!(annotations["karpenter.sh/do-not-disrupt"], "true");
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(spec.node_selector.as_ref().unwrap()["node.kubernetes.io/instance-type"], "m5.xlarge");
    let container = &spec.containers[0];
    assert_eq!(container.image.as_deref(), Some(DEFAULT_IMAGE));
    let resources = container.resources.as_ref().unwrap();
    assert_eq!(resources.requests.as_ref().unwrap()["cpu"].0, "2500m");
    assert_eq!(resources.limits.as_ref().unwrap()["memory"].0, "12Gi");
    assert!(container.readiness_probe.is_some());
    // The password comes from the Secret `up` generates, never from the files.
    let password = container.env.iter().flatten().find(|env| env.name == "CLICKHOUSE_PASSWORD").unwrap();
    assert!(password.value.is_none() && password.value_from.is_some());

    let values = Values {
        node_type: "c7g.2xlarge".into(),
        volume_gib: 500,
        iops: 6000,
        throughput_mibps: 250,
        image: "clickhouse/clickhouse-server:26.8.2.1".into(),
        ..Values::defaults(Variant::EksGp3)
    };
    let rendered: String = render(Variant::EksGp3, &values).unwrap().iter().map(|d| d.yaml.clone()).collect();
    for expected in ["c7g.2xlarge", "storage: 500Gi", "iops: \"6000\"", "throughput: \"250\"", "server:26.8.2.1"] {
        assert!(rendered.contains(expected), "{expected} missing from the rendered manifests");
    }
}

#[test]
fn unpinned_images_and_impossible_volumes_are_refused_before_rendering() {
    let refused = |values: Values| format!("{:#}", render(Variant::EksGp3, &values).unwrap_err());
    let defaults = Values::defaults(Variant::EksGp3);
    let message = refused(Values { image: "clickhouse/clickhouse-server:latest".into(), ..defaults.clone() });
    assert!(message.starts_with("image \"clickhouse/clickhouse-server:latest\" is not pinned"), "{message}");
    let message = refused(Values { image: "clickhouse/clickhouse-server".into(), ..defaults.clone() });
    assert!(message.contains("is not pinned"), "{message}");
    let message = refused(Values { image: String::new(), ..defaults.clone() });
    assert!(message.starts_with("the image is empty"), "{message}");
    let message = refused(Values { iops: 100, ..defaults.clone() });
    assert_eq!(message, "--iops 100: gp3 takes 3000 to 80000 IOPS; give --iops in that range");
    let message = refused(Values { node_type: " ".into(), ..defaults.clone() });
    assert_eq!(message, "eks-gp3 needs a node type (--node-type m5.xlarge)");
    let message = refused(Values { namespace: "Bench_DB".into(), ..defaults });
    assert!(message.starts_with("namespace \"Bench_DB\""), "{message}");
}

/// No file under manifests/ pins `latest`, exposes a port beyond the cluster, or leaves
/// an object unlabelled; the Karpenter example is checked as text (its kinds are custom
/// resources, not in the API types).
#[test]
fn no_manifest_exposes_clickhouse_or_floats_a_tag() {
    for entry in walk(&manifests_root()) {
        let text = std::fs::read_to_string(&entry).unwrap();
        for forbidden in ["LoadBalancer", "NodePort", "hostNetwork", "hostPort", ":latest"] {
            assert!(!text.contains(forbidden), "{} contains {forbidden}", entry.display());
        }
        if entry.extension().is_some_and(|extension| extension == "yaml") {
            let objects = text.matches("\nkind: ").count() + usize::from(text.starts_with("kind: "));
            let labelled = text.matches(&format!("{}: {}", PART_OF.0, PART_OF.1)).count();
            assert!(labelled >= objects, "{}: {objects} objects, {labelled} labelled", entry.display());
        }
    }
}

const NODE: &str = "ip-10-0-1-23.ap-northeast-2.compute.internal";

/// The StorageClass of ClickHouse's claim, as the baseline reads it from the cluster:
/// the gp3 class on eks-gp3, kind's default on kind, none for an emptyDir.
fn storage_class(variant: Variant) -> Option<&'static str> {
    match variant {
        Variant::EksGp3 => Some("chbench-gp3"),
        Variant::EksNvme => None,
        Variant::Kind => Some("standard"),
    }
}

fn baseline_objects(variant: Variant) -> Vec<Object> {
    let documents = render_storage_baseline(variant, &Values::defaults(variant), NODE, storage_class(variant))
        .unwrap_or_else(|error| panic!("{variant}: {error:#}"));
    parse(&documents).unwrap_or_else(|error| panic!("{variant}: {error:#}"))
}

/// The storage baseline's fio.yaml, per variant: a job file, a volume like ClickHouse's
/// (none on NVMe: an emptyDir), a Job that runs once on the ClickHouse pod's node with a
/// pinned image, direct I/O and JSON output, and nothing more than it needs.
#[test]
fn every_variants_storage_baseline_renders_parses_and_passes_the_checks() {
    for &variant in Variant::value_variants() {
        let objects = baseline_objects(variant);
        check_storage_baseline(&objects).unwrap_or_else(|error| panic!("{variant}: {error:#}"));
        let kinds: Vec<&str> = objects.iter().map(Object::kind).collect();
        let expected: &[&str] = match variant {
            Variant::EksNvme => &["ConfigMap", "Job"],
            Variant::EksGp3 | Variant::Kind => &["ConfigMap", "PersistentVolumeClaim", "Job"],
        };
        assert_eq!(kinds, expected, "{variant}");
        let Some(Object::Job(job)) = objects.iter().find(|object| object.kind() == "Job") else { panic!("no Job") };
        let spec = job.spec.as_ref().unwrap();
        assert_eq!(spec.backoff_limit, Some(0));
        assert!(spec.ttl_seconds_after_finished.is_some() && spec.active_deadline_seconds.is_some());
        let pod = spec.template.spec.as_ref().unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        assert_eq!(pod.automount_service_account_token, Some(false));
        let terms = &pod.affinity.as_ref().unwrap().node_affinity.as_ref().unwrap();
        let term = &terms.required_during_scheduling_ignored_during_execution.as_ref().unwrap().node_selector_terms[0];
        let field = &term.match_fields.as_ref().unwrap()[0];
        assert_eq!((field.key.as_str(), field.values.clone().unwrap()), ("metadata.name", vec![NODE.to_string()]));
        let tolerates = pod.tolerations.iter().flatten().any(|toleration| toleration.key.as_deref() == Some("chbench"));
        assert_eq!(tolerates, variant != Variant::Kind, "{variant}");
        let container = &pod.containers[0];
        let image = container.image.as_deref().unwrap();
        assert!(image.starts_with("ghcr.io/kastenhq/kubestr:v"), "{image}");
        let command = container.command.clone().unwrap();
        assert_eq!(command[0], "fio");
        assert!(command.contains(&"--output-format=json".to_string()), "{command:?}");
        let security = container.security_context.as_ref().unwrap();
        assert_eq!(security.allow_privilege_escalation, Some(false));
        assert_eq!(security.capabilities.as_ref().unwrap().drop.clone().unwrap(), ["ALL"]);
        let data = pod.volumes.iter().flatten().find(|volume| volume.name == "data").unwrap();
        match variant {
            Variant::EksNvme => assert!(data.empty_dir.is_some()),
            _ => assert_eq!(data.persistent_volume_claim.as_ref().unwrap().claim_name, "chbench-fio-data"),
        }
    }
}

/// fio's volume is ClickHouse's kind: the StorageClass of ClickHouse's claim (the gp3
/// one on eks-gp3; on kind the one the cluster gave it, named rather than left to the
/// default) and the same size.
#[test]
fn the_baselines_volume_is_like_clickhouses() {
    for variant in [Variant::EksGp3, Variant::Kind] {
        let values = Values { volume_gib: 321, ..Values::defaults(variant) };
        let claims = |objects: Vec<Object>| -> Vec<_> {
            objects
                .into_iter()
                .filter_map(|object| match object {
                    Object::PersistentVolumeClaim(claim) => Some(claim.spec.clone().unwrap()),
                    _ => None,
                })
                .collect()
        };
        let deployment = claims(objects(variant, &values));
        let documents = render_storage_baseline(variant, &values, NODE, storage_class(variant)).unwrap();
        let fio = claims(parse(&documents).unwrap());
        assert_eq!(fio.len(), 1, "{variant}");
        assert_eq!(fio[0].storage_class_name.as_deref(), storage_class(variant), "{variant}");
        if variant == Variant::EksGp3 {
            assert_eq!(fio[0].storage_class_name, deployment[0].storage_class_name);
        }
        assert_eq!(fio[0].resources, deployment[0].resources, "{variant}");
        assert_eq!(fio[0].resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].0, "321Gi");
        // Without the class there is no claim to render.
        let missing = render_storage_baseline(variant, &values, NODE, None).unwrap_err().to_string();
        assert!(missing.contains("${storage_class} has no value"), "{missing}");
    }
    let odd = render_storage_baseline(Variant::Kind, &Values::defaults(Variant::Kind), NODE, Some("x\nkind: Pod"));
    assert!(format!("{:#}", odd.unwrap_err()).contains("is not a Kubernetes StorageClass name"));
}

/// Every variant denies ClickHouse's pod all ingress; without the policy, or with one
/// that lets something in, the manifests are refused.
#[test]
fn clickhouse_takes_no_ingress_from_other_pods() {
    for &variant in Variant::value_variants() {
        let documents = render(variant, &Values::defaults(variant)).unwrap();
        let without: Vec<Document> =
            documents.iter().filter(|document| !document.yaml.contains("kind: NetworkPolicy")).cloned().collect();
        assert_eq!(without.len(), documents.len() - 1, "{variant}");
        let message = format!("{:#}", check(&parse(&without).unwrap()).unwrap_err());
        assert!(
            message.starts_with("pod clickhouse: no NetworkPolicy in its namespace denies it ingress"),
            "{message}"
        );

        let allowing: Vec<Document> = documents
            .iter()
            .map(|document| Document {
                yaml: document
                    .yaml
                    .replace("policyTypes: [\"Ingress\"]", "policyTypes: [\"Ingress\"]\n  ingress:\n    - {}"),
                ..document.clone()
            })
            .collect();
        let message = format!("{:#}", check(&parse(&allowing).unwrap()).unwrap_err());
        assert!(
            message.starts_with("networkpolicy default-deny-ingress lets ingress reach pod clickhouse"),
            "{message}"
        );

        // A policy for other pods only does not protect ClickHouse's.
        let elsewhere: Vec<Document> = documents
            .iter()
            .map(|document| Document {
                yaml: document
                    .yaml
                    .replace("podSelector: {}", "podSelector:\n    matchLabels: {app.kubernetes.io/name: other}"),
                ..document.clone()
            })
            .collect();
        let message = format!("{:#}", check(&parse(&elsewhere).unwrap()).unwrap_err());
        assert!(message.contains("no NetworkPolicy in its namespace denies it ingress"), "{message}");
    }
}

#[test]
fn a_baseline_job_that_could_run_twice_or_stay_forever_is_refused() {
    let refused = |change: &dyn Fn(&str) -> String| {
        let documents: Vec<Document> =
            render_storage_baseline(Variant::Kind, &Values::defaults(Variant::Kind), NODE, Some("standard"))
                .unwrap()
                .into_iter()
                .map(|document| Document { yaml: change(&document.yaml), ..document })
                .collect();
        format!("{:#}", check_storage_baseline(&parse(&documents).unwrap()).unwrap_err())
    };
    let message = refused(&|yaml| yaml.replace("backoffLimit: 0", "backoffLimit: 3"));
    assert_eq!(
        message,
        "job chbench-storage-baseline: set backoffLimit: 0 (a retry would measure what the first run left)"
    );
    let message = refused(&|yaml| yaml.replace("  ttlSecondsAfterFinished: 3600\n", ""));
    assert!(message.contains("set ttlSecondsAfterFinished and activeDeadlineSeconds"), "{message}");
    let message =
        refused(&|yaml| yaml.replace("automountServiceAccountToken: false", "automountServiceAccountToken: true"));
    assert!(message.ends_with("set automountServiceAccountToken: false (nothing in it calls the Kubernetes API)"));
    let message = refused(&|yaml| yaml.replace("allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true"));
    assert_eq!(
        message,
        "job chbench-storage-baseline, container fio: set securityContext.allowPrivilegeEscalation: false"
    );
    let message = refused(&|yaml| yaml.replace("kubestr:v0.4.49", "kubestr:latest"));
    assert!(message.contains("is not pinned"), "{message}");
    let node = render_storage_baseline(
        Variant::Kind,
        &Values::defaults(Variant::Kind),
        "node\nkind: Service",
        Some("standard"),
    );
    assert!(format!("{:#}", node.unwrap_err()).contains("is not a Kubernetes node name"));
}

fn walk(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}

/// The eks target logs in as the user every variant's pod creates, on the port it serves
/// and probes, in the container its code names.
#[test]
fn every_pod_makes_the_user_the_eks_target_logs_in_as() {
    use chbench::cluster::deploy::CLICKHOUSE;
    use chbench::targets::eks::HTTP_PORT;
    use chbench::targets::server::BENCH_USER;
    for &variant in Variant::value_variants() {
        let objects = objects(variant, &Values::defaults(variant));
        let Some(Object::Pod(pod)) = objects.iter().find(|object| object.kind() == "Pod") else { panic!("no Pod") };
        assert_eq!(pod.metadata.name.as_deref(), Some(CLICKHOUSE), "{variant}");
        let spec = pod.spec.as_ref().unwrap();
        let container = spec.containers.iter().find(|container| container.name == CLICKHOUSE).unwrap();
        let user = container.env.iter().flatten().find(|env| env.name == "CLICKHOUSE_USER").unwrap();
        assert_eq!(user.value.as_deref(), Some(BENCH_USER), "{variant}");
        let probe = container.readiness_probe.as_ref().and_then(|probe| probe.http_get.as_ref()).unwrap();
        assert_eq!(probe.port, k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(HTTP_PORT.into()));
    }
}

/// The load of a level run in the cluster: one Job from the server's image, its password
/// from the deployment's Secret, reading the queries where chbench mounts them, and one
/// opening in the namespace's default-deny-ingress: from the load's pods, to ClickHouse's
/// native port, nothing more.
#[test]
fn the_load_job_reaches_clickhouses_native_port_only_and_reads_its_password_from_the_secret() {
    use chbench::cluster::deploy::{CLICKHOUSE, PASSWORD_SECRET};
    use chbench::cluster::load::{LOAD_JOB, QUERIES_CONFIG_MAP};
    use chbench::cluster::manifests::{check_load, render_load};
    use chbench::load_generator::{NATIVE_PORT, QUERIES_PATH};
    let image = "clickhouse/clickhouse-server:26.3.33.24";
    let objects = parse(&render_load("team-x", image, 602).unwrap()).unwrap();
    check_load(&objects).unwrap();
    let kinds: Vec<&str> = objects.iter().map(Object::kind).collect();
    assert_eq!(kinds, ["ConfigMap", "NetworkPolicy", "Job"]);
    let Object::NetworkPolicy(policy) = &objects[1] else { unreachable!() };
    let spec = policy.spec.as_ref().unwrap();
    let name_of = |selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector| {
        selector.match_labels.as_ref().unwrap()["app.kubernetes.io/name"].clone()
    };
    assert_eq!(name_of(spec.pod_selector.as_ref().unwrap()), CLICKHOUSE);
    let ingress = spec.ingress.as_ref().unwrap();
    assert_eq!(ingress.len(), 1);
    let peers = ingress[0].from.as_ref().unwrap();
    assert_eq!(peers.len(), 1);
    assert!(peers[0].namespace_selector.is_none() && peers[0].ip_block.is_none(), "{peers:?}");
    let ports = ingress[0].ports.as_ref().unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].port, Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(NATIVE_PORT.into())));
    let Object::Job(job) = &objects[2] else { unreachable!() };
    assert_eq!(job.metadata.name.as_deref(), Some(LOAD_JOB.name));
    assert_eq!(job.metadata.namespace.as_deref(), Some("team-x"));
    let template = &job.spec.as_ref().unwrap().template;
    // The opening is for the Job's pods, by their label.
    assert_eq!(
        template.metadata.as_ref().unwrap().labels.as_ref().unwrap()["app.kubernetes.io/name"],
        name_of(peers[0].pod_selector.as_ref().unwrap())
    );
    let pod = template.spec.as_ref().unwrap();
    let container = &pod.containers[0];
    assert_eq!(container.name, LOAD_JOB.container);
    assert_eq!(container.image.as_deref(), Some(image));
    assert!(container.command.as_ref().unwrap().iter().any(|part| part.contains(QUERIES_PATH)));
    let password = container.env.as_ref().unwrap().iter().find(|env| env.name == "CLICKHOUSE_PASSWORD").unwrap();
    let secret = password.value_from.as_ref().unwrap().secret_key_ref.as_ref().unwrap();
    assert_eq!((secret.name.as_str(), secret.key.as_str()), (PASSWORD_SECRET, "password"));
    let mounted = pod.volumes.as_ref().unwrap()[0].config_map.as_ref().unwrap();
    assert_eq!(mounted.name, QUERIES_CONFIG_MAP);
    assert_eq!(job.spec.as_ref().unwrap().active_deadline_seconds, Some(602));
    // A floating tag is refused, as for the server.
    assert!(render_load("team-x", "clickhouse/clickhouse-server:latest", 602).is_err());
}

/// The load pod's script, as the manifest gives it, run by this machine's `sh` with a
/// stand-in `clickhouse` on the PATH: it waits for a SELECT 1 through refusals, then runs
/// the level with its arguments; a refused login ends it at once, saying so.
#[test]
fn the_load_pods_script_waits_for_a_select_1_and_stops_at_a_refused_login() {
    use chbench::cluster::manifests::render_load;
    let objects = parse(&render_load("chbench", DEFAULT_IMAGE, 602).unwrap()).unwrap();
    let Some(Object::Job(job)) = objects.iter().find(|object| object.kind() == "Job") else { panic!("no Job") };
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let command = pod.containers[0].command.clone().unwrap();
    assert_eq!(command[..2], ["sh", "-c"]);
    let folder = tempfile::tempdir().unwrap();
    let queries = folder.path().join("queries.tsv");
    std::fs::write(&queries, "SELECT 1\n").unwrap();
    let script = command[2].replace(chbench::load_generator::QUERIES_PATH, &queries.display().to_string());
    // Refuses (code 210) while its count is below REFUSALS, or a login (516) always; then
    // says its arguments and what it read.
    let stand_in = folder.path().join("clickhouse");
    std::fs::write(
        &stand_in,
        "#!/bin/sh\ncalls=$(($(cat \"$STAND_IN_CALLS\" 2>/dev/null || echo 0) + 1)); echo $calls > \"$STAND_IN_CALLS\"\n\
         echo \"$*\" >> \"$STAND_IN_CALLS.args\"\n\
         if [ \"$REFUSE_LOGIN\" = 1 ]; then echo 'Code: 516. DB::Exception: bench: Authentication failed. \
         (AUTHENTICATION_FAILED)' >&2; exit 4; fi\n\
         if [ \"$calls\" -le \"$REFUSALS\" ]; then echo 'Code: 210. DB::NetException: Connection refused' >&2; exit 210; fi\n\
         echo \"ran: $*\"; cat\n",
    )
    .unwrap();
    std::fs::set_permissions(&stand_in, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let run = |refusals: &str, refuse_login: &str| {
        let calls = folder.path().join(format!("calls-{refusals}-{refuse_login}"));
        let output = std::process::Command::new("sh")
            .args(["-c", &script, "clickhouse-benchmark", "--concurrency=2", "--timelimit=2"])
            .env("PATH", format!("{}:{}", folder.path().display(), std::env::var("PATH").unwrap()))
            .env("CHBENCH_SERVER_HOST", "10.0.1.7")
            .env("CHBENCH_SERVER_USER", "bench")
            .env("STAND_IN_CALLS", &calls)
            .env("REFUSALS", refusals)
            .env("REFUSE_LOGIN", refuse_login)
            .output()
            .unwrap();
        let count: u32 = std::fs::read_to_string(&calls).unwrap().trim().parse().unwrap();
        let first = std::fs::read_to_string(format!("{}.args", calls.display())).unwrap();
        (output, count, first.lines().next().unwrap_or("").to_string())
    };
    // Two refusals, the SELECT 1 answered, then the level with its arguments and queries.
    let (output, calls, probe) = run("2", "0");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(calls, 4);
    assert_eq!(said.lines().last(), Some("SELECT 1"), "{said}");
    assert!(said.contains("ran: benchmark --concurrency=2 --timelimit=2\n"), "{said}");
    // The probe went to the server given, with a second to connect.
    assert_eq!(
        probe,
        "benchmark --host=10.0.1.7 --port=9000 --user=bench --iterations=1 --delay=0 --connect_timeout=1"
    );
    // A refused login: once, and said.
    let (output, calls, _) = run("0", "1");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!((output.status.code(), calls), (Some(1), 1), "{stderr}");
    assert!(stderr.contains("AUTHENTICATION_FAILED") && stderr.contains("refused this pod's login"), "{stderr}");
}

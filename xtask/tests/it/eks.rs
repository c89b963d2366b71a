//! `cargo xtask eks up|status|collect|down`, and `bench --target eks`, as a user runs
//! them, without a cluster: everything is checked and rendered before a cluster is
//! contacted, and no cluster gives one clear line. (Their conversations with a cluster
//! are in `bench-tests/tests/cluster.rs`.) Built with the `eks` feature
//! (`cargo nextest run -p xtask --features eks`).

use std::process::Output;

use crate::common::{self, error_line};

fn xtask(args: &[&str]) -> Output {
    common::xtask()
        .args(args)
        // No cluster: a kubeconfig that does not exist, and nothing in the cluster's env.
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("HOME", "/nonexistent")
        .output()
        .expect("cannot run xtask")
}

#[test]
fn a_dry_run_prints_the_checked_manifests_and_contacts_no_cluster() {
    let output = xtask(&["eks", "up", "--variant", "kind", "--dry-run", "--volume-gib", "20"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("---\n# manifests/kind/clickhouse.yaml:"), "{stdout}");
    for expected in ["kind: Namespace", "kind: PersistentVolumeClaim", "storage: 20Gi", "kind: Pod"] {
        assert!(stdout.contains(expected), "{expected} missing from:\n{stdout}");
    }
    assert!(!stdout.contains("${"), "a value left unfilled:\n{stdout}");
}

#[test]
fn bad_flags_are_refused_before_any_cluster_is_contacted() {
    let line = error_line(&xtask(&["eks", "up", "--image", "clickhouse/clickhouse-server:latest"]));
    assert!(line.starts_with("error: image \"clickhouse/clickhouse-server:latest\" is not pinned"), "{line}");
    let line = error_line(&xtask(&["eks", "up", "--variant", "eks-nvme", "--node-type", "m5.xlarge"]));
    assert!(line.starts_with("error: --node-type m5.xlarge has no local NVMe"), "{line}");
    let line = error_line(&xtask(&["eks", "up", "--iops", "100"]));
    assert_eq!(line, "error: --iops 100: gp3 takes 3000 to 80000 IOPS; give --iops in that range");
    // A variant's own defaults are not refused as flags it would ignore.
    for variant in ["kind", "eks-nvme", "eks-gp3"] {
        let output = xtask(&["eks", "up", "--variant", variant, "--dry-run"]);
        assert!(output.status.success(), "{variant}: {}", String::from_utf8_lossy(&output.stderr));
    }
}

#[test]
fn no_cluster_is_one_line_saying_where_kube_looks() {
    let line = error_line(&xtask(&["eks", "up", "--variant", "kind"]));
    assert!(line.starts_with("error: cannot reach a cluster: kube reads KUBECONFIG or ~/.kube/config"), "{line}");
}

#[test]
fn help_lists_status_and_down_with_their_flags() {
    let output = xtask(&["eks", "--help"]);
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for command in ["up", "status", "down"] {
        assert!(help.lines().any(|line| line.trim_start().starts_with(command)), "{command} missing from:\n{help}");
    }
    let output = xtask(&["eks", "down", "--help"]);
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in ["--namespace", "--force", "--dry-run", "--timeout-seconds"] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    let output = xtask(&["eks", "status", "--help"]);
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in ["--namespace", "--json"] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
}

#[test]
fn status_and_down_without_a_cluster_are_one_line_saying_where_kube_looks() {
    for args in [&["eks", "status"][..], &["eks", "status", "--json"], &["eks", "down", "--dry-run"], &["eks", "down"]]
    {
        let line = error_line(&xtask(args));
        assert!(
            line.starts_with("error: cannot reach a cluster: kube reads KUBECONFIG or ~/.kube/config"),
            "{args:?}: {line}"
        );
    }
}

#[test]
fn bad_status_and_down_flags_are_refused() {
    let line = error_line(&xtask(&["eks", "down", "--timeout-seconds", "0"]));
    assert_eq!(line, "error: --timeout-seconds must be at least 1");
    // clap's own refusals: exit code 2, and its error line first.
    for args in [&["eks", "down", "--timeout-seconds", "soon"][..], &["eks", "status", "--force"], &["eks", "stat"]] {
        let output = xtask(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    }
}

#[test]
fn collect_refuses_bad_flags_before_any_cluster_is_contacted() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let line = error_line(&xtask(&["eks", "collect", "--namespace", "Bench_DB"]));
    assert!(line.starts_with("error: namespace \"Bench_DB\": lowercase letters, digits and -"), "{line}");
    let line = error_line(&xtask(&["eks", "collect", "--out", file.to_str().unwrap()]));
    assert_eq!(line, format!("error: {} is not a folder; give --out a folder", file.display()));
    let line = error_line(&xtask(&["eks", "collect", "--results-dir", file.to_str().unwrap()]));
    assert_eq!(line, format!("error: {} is not a folder; give --results-dir a folder", file.display()));
    // A flag collect does not take is clap's usage error.
    let output = xtask(&["eks", "collect", "--variant", "kind"]);
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn collect_without_a_cluster_is_one_line_and_writes_nothing() {
    let folder = tempfile::tempdir().unwrap();
    let out = folder.path().join("out");
    let results = folder.path().join("results");
    let line = error_line(&xtask(&[
        "eks",
        "collect",
        "--namespace",
        "bench-2",
        "--out",
        out.to_str().unwrap(),
        "--results-dir",
        results.to_str().unwrap(),
    ]));
    assert!(line.starts_with("error: cannot reach a cluster: kube reads KUBECONFIG or ~/.kube/config"), "{line}");
    assert!(!out.exists() && !results.exists(), "something was written");
}

#[test]
fn bench_on_the_eks_target_without_a_cluster_is_one_line() {
    let folder = tempfile::tempdir().unwrap();
    let results = folder.path().join("results");
    let output = common::xtask()
        .args(["bench", "--rows", "1K", "--results-dir", results.to_str().unwrap()])
        .env("CHBENCH_TARGET", "eks")
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("HOME", "/nonexistent")
        .output()
        .expect("cannot run xtask");
    let line = error_line(&output);
    assert!(line.starts_with("error: cannot reach a cluster: kube reads KUBECONFIG"), "{line}");
    let output = xtask(&["bench", "--target", "eks", "--rows", "1K", "--results-dir", results.to_str().unwrap()]);
    assert!(error_line(&output).starts_with("error: cannot reach a cluster"));
    // A namespace Kubernetes would refuse is refused before a cluster is asked.
    let output = common::xtask()
        .args(["bench", "--target", "eks", "--rows", "1K", "--results-dir", results.to_str().unwrap()])
        .env("CHBENCH_NAMESPACE", "Bench_DB")
        .output()
        .expect("cannot run xtask");
    let line = error_line(&output);
    assert!(line.starts_with("error: CHBENCH_NAMESPACE=\"Bench_DB\": namespace \"Bench_DB\""), "{line}");
}

#[test]
fn the_baseline_checks_its_flags_then_needs_a_cluster() {
    let line = error_line(&xtask(&["eks", "baseline", "--timeout-seconds", "0"]));
    assert_eq!(line, "error: --timeout-seconds must be at least 1");
    let line = error_line(&xtask(&["eks", "baseline", "--namespace", "bench-2"]));
    assert!(line.starts_with("error: cannot reach a cluster: kube reads KUBECONFIG or ~/.kube/config"), "{line}");
    // A dry run measures nothing, with or without --no-baseline.
    let output = xtask(&["eks", "up", "--variant", "kind", "--dry-run", "--no-baseline"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!String::from_utf8_lossy(&output.stdout).contains("kind: Job"));
}

#[test]
fn a_bad_namespace_is_one_line_naming_it_before_any_cluster_is_contacted() {
    for command in ["status", "down", "baseline"] {
        // A kubeconfig that would be read, were a cluster contacted: it is not there, and
        // its error would be "cannot reach a cluster".
        let line = error_line(&xtask(&["eks", command, "--namespace", "Bad_NS"]));
        assert!(line.starts_with("error: namespace \"Bad_NS\": lowercase letters, digits and -"), "{command}: {line}");
        assert!(!line.contains("cluster"), "{command}: {line}");
    }
    let line = error_line(&xtask(&["eks", "down", "--namespace=-bench", "--dry-run"]));
    assert!(line.starts_with("error: namespace \"-bench\""), "{line}");
}

/// An API server on loopback that takes every connection and never answers (a hung one, a
/// `kubectl proxy` whose upstream is gone), the kubeconfig that names it, and a receiver
/// told of each connection. The TLS case is `bench-tests/tests/it/cluster.rs`'s.
struct SilentApiServer {
    url: String,
    kubeconfig: std::path::PathBuf,
    connections: std::sync::mpsc::Receiver<()>,
    _folder: tempfile::TempDir,
}

fn silent_api_server() -> SilentApiServer {
    let (url, connections) = common::silent_peer();
    let folder = tempfile::tempdir().unwrap();
    let kubeconfig = folder.path().join("kubeconfig");
    let yaml = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: silent\nclusters:\n- name: silent\n  cluster:\n    server: \
         {url}\ncontexts:\n- name: silent\n  context:\n    cluster: silent\n    user: silent\nusers:\n- name: silent\n  \
         user: {{}}\n"
    );
    std::fs::write(&kubeconfig, yaml).unwrap();
    SilentApiServer { url, kubeconfig, connections, _folder: folder }
}

impl SilentApiServer {
    /// xtask with `args`, on this server's kubeconfig and the bounds' defaults.
    fn xtask(&self, args: &[&str]) -> std::process::Command {
        let mut command = common::xtask();
        command
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("CHBENCH_NAMESPACE")
            .env_remove("CHBENCH_KUBE_CONNECT_TIMEOUT")
            .env_remove("CHBENCH_KUBE_REQUEST_TIMEOUT")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        command
    }
}

#[test]
fn a_request_the_api_server_never_answers_fails_at_its_bound_in_one_line() {
    let server = silent_api_server();
    let output = server.xtask(&["eks", "status"]).env("CHBENCH_KUBE_REQUEST_TIMEOUT", "0.5").output().unwrap();
    assert_eq!(
        error_line(&output),
        format!(
            "error: cannot read namespace chbench: the API server at {} gave no answer within 0.5 s \
             (CHBENCH_KUBE_REQUEST_TIMEOUT)",
            server.url
        )
    );
}

#[test]
fn a_bad_bound_is_one_line_naming_its_variable() {
    let server = silent_api_server();
    for (variable, default) in [("CHBENCH_KUBE_CONNECT_TIMEOUT", 10), ("CHBENCH_KUBE_REQUEST_TIMEOUT", 30)] {
        for bad in ["soon", "0", "-1"] {
            let output = server.xtask(&["eks", "status"]).env(variable, bad).output().unwrap();
            assert_eq!(
                error_line(&output),
                format!("error: {variable}={bad} is not a number of seconds above 0; give one like {default}")
            );
        }
    }
    assert!(server.connections.try_recv().is_err(), "a command with a bad bound contacted the API server");
}

/// SIGTERM while a command waits on the API server's answer: it ends with 130 and one line
/// naming the server and the request, whatever the command, with the bounds at their
/// defaults (30 s an answer). The 20 s limit only fails a hung test: the ending itself
/// takes about the stop's grace, a second.
#[test]
fn sigterm_ends_every_eks_command_waiting_on_an_api_server_that_never_answers() {
    let folder = tempfile::tempdir().unwrap();
    let results = folder.path().join("results");
    let out = folder.path().join("out");
    let results = results.to_str().unwrap();
    let commands: [(&[&str], &str); 6] = [
        (&["eks", "status"], "reading namespace chbench"),
        (&["eks", "collect", "--results-dir", results, "--out", out.to_str().unwrap()], "reading namespace chbench"),
        (&["eks", "baseline"], "reading namespace chbench"),
        (&["eks", "up", "--variant", "kind", "--timeout-seconds", "20"], "reading namespace chbench"),
        (&["eks", "down", "--dry-run"], "reading namespace chbench"),
        (
            &["bench", "--target", "eks", "--rows", "1K", "--results-dir", results],
            "reading secret chbench/clickhouse-password",
        ),
    ];
    for (args, waiting_for) in commands {
        let server = silent_api_server();
        let mut child = server.xtask(args).spawn().unwrap();
        let limit = std::time::Duration::from_secs(20);
        if server.connections.recv_timeout(limit).is_err() {
            let _ = child.kill();
            panic!("{args:?} never reached the API server");
        }
        let sent = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        assert!(sent.success());
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > limit {
                let _ = child.kill();
                panic!("{args:?} was still waiting {limit:?} after SIGTERM");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(130), "{args:?}: {stderr}");
        let errors = common::error_lines(&output);
        assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
        let expected = format!("error: stopped waiting for the API server at {} ({waiting_for}): ", server.url);
        assert!(errors[0].starts_with(&expected), "{args:?}: {stderr}");
    }
}

/// An API server on loopback (plain http) that refuses every request with 403 Forbidden,
/// as one does a user without the rights, and the kubeconfig that names it.
fn forbidding_api_server() -> (String, tempfile::TempDir) {
    let forbidden = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"chbench\" is forbidden: User \"system:anonymous\" cannot get resource \"namespaces\"","reason":"Forbidden","details":{"name":"chbench","kind":"namespaces"},"code":403}"#;
    let url = common::loopback_peer("403 Forbidden", forbidden);
    let folder = tempfile::tempdir().unwrap();
    let yaml = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters:\n- name: x\n  cluster:\n    server: {url}\n\
         contexts:\n- name: x\n  context:\n    cluster: x\n    user: x\nusers:\n- name: x\n  user: {{}}\n"
    );
    std::fs::write(folder.path().join("kubeconfig"), yaml).unwrap();
    (url, folder)
}

#[test]
fn a_failure_the_api_server_answers_is_said_once() {
    let (url, folder) = forbidding_api_server();
    for args in [&["eks", "down", "--dry-run"][..], &["eks", "status"]] {
        let output = common::xtask()
            .args(args)
            .env("KUBECONFIG", folder.path().join("kubeconfig"))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("CHBENCH_NAMESPACE")
            .output()
            .unwrap();
        let line = error_line(&output);
        assert!(line.contains(&format!("the API server at {url} answered 403 Forbidden: namespaces")), "{line}");
        assert_eq!(line.matches("is forbidden").count(), 1, "{args:?}: {line}");
        assert!(!line.contains("ApiError") && !line.contains("Status {"), "{line}");
    }
}

/// A target folder of its own holding the record `eks up` leaves of the deployment it
/// brought up in `namespace`; `None` writes `text` there instead.
fn target_dir_with_last_up(namespace: &str, text: Option<&str>) -> tempfile::TempDir {
    let target_dir = tempfile::tempdir().unwrap();
    let record = target_dir.path().join("chbench/eks/last-up.json");
    std::fs::create_dir_all(record.parent().unwrap()).unwrap();
    let written = format!(
        r#"{{"cluster": "https://127.0.0.1:6443", "namespace": "{namespace}", "variant": "eks-gp3", "run": "0b6e", "brought_up_at": "2026-12-06T19:40:12Z"}}"#
    );
    std::fs::write(&record, text.unwrap_or(&written)).unwrap();
    target_dir
}

/// `xtask` in `target_dir` (which holds the tests' engine's path, not a copy), without a
/// cluster.
fn xtask_in(target_dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let library = chbench::engine::provision(&|_| {}).unwrap();
    let mut command = common::xtask();
    command
        .args(args)
        .env("CARGO_TARGET_DIR", target_dir)
        .env("CHBENCH_LIBCHDB", library)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("CHBENCH_NAMESPACE")
        .env_remove("CHBENCH_TARGET")
        .env("HOME", "/nonexistent");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("cannot run xtask")
}

/// `cargo xtask eks up && cargo xtask bench`: with no target given, bench (and measure)
/// choose the deployment up brought up, and say so first, with its namespace, when it was
/// brought up and how to choose another; here no cluster answers, which is the next line.
#[test]
fn after_up_bench_and_measure_with_no_target_choose_its_deployment_and_say_so_first() {
    let target_dir = target_dir_with_last_up("bench-2", None);
    let results = target_dir.path().join("results");
    let query = target_dir.path().join("one.sql");
    std::fs::write(&query, "SELECT 1").unwrap();
    let chosen = "chbench: no target given: the deployment `cargo xtask eks up` brought up on https://127.0.0.1:6443 \
                  in namespace bench-2 (eks-gp3, run 0b6e) at 2026-12-06 19:40 UTC, until `cargo xtask eks down \
                  --namespace bench-2` (--target or CHBENCH_TARGET chooses another: embedded, container, url)";
    for args in [
        vec!["bench", "--rows", "1K", "--results-dir", results.to_str().unwrap()],
        vec!["measure", query.to_str().unwrap()],
    ] {
        let output = xtask_in(target_dir.path(), &args, &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().next(), Some(chosen), "{args:?}: {stderr}");
        // The line names the record that chose the deployment, and the way out.
        let line = error_line(&output);
        assert!(line.contains("remembered in") && line.contains("last-up.json (delete it, or give --target"), "{line}");
        assert!(line.contains(": cannot reach a cluster: kube reads KUBECONFIG"), "{line}");
        assert!(nothing_in(&results), "something was written");
    }
    // CHBENCH_TARGET=auto is no target given, too.
    let output = xtask_in(target_dir.path(), &["measure", query.to_str().unwrap()], &[("CHBENCH_TARGET", "auto")]);
    assert_eq!(String::from_utf8_lossy(&output.stderr).lines().next(), Some(chosen));
    // CHBENCH_NAMESPACE naming another deployment: that one, said so.
    let output = xtask_in(target_dir.path(), &["measure", query.to_str().unwrap()], &[("CHBENCH_NAMESPACE", "other")]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.lines().next(),
        Some(
            "chbench: no target given: target eks, as `cargo xtask eks up` brought up a deployment (in namespace \
             bench-2), in namespace other (CHBENCH_NAMESPACE) (--target or CHBENCH_TARGET chooses another)"
        ),
        "{stderr}"
    );
}

/// `--target` and `CHBENCH_TARGET` win over the deployment up brought up.
#[test]
fn a_target_given_wins_over_the_deployment_up_brought_up() {
    let target_dir = target_dir_with_last_up("chbench", None);
    let query = target_dir.path().join("one.sql");
    std::fs::write(&query, "SELECT 1").unwrap();
    for (args, env) in [
        (vec!["measure", "--target", "embedded", "--json", query.to_str().unwrap()], vec![]),
        (vec!["measure", "--json", query.to_str().unwrap()], vec![("CHBENCH_TARGET", "embedded")]),
    ] {
        let output = xtask_in(target_dir.path(), &args, &env);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert!(!stderr.contains("no target given"), "{stderr}");
        assert!(stderr.lines().next().is_some_and(|line| line.starts_with("chbench: target embedded")), "{stderr}");
    }
}

/// A record of the last up that is empty, truncated or not one: one line naming the file
/// and what to do, before any cluster is asked and nothing written.
#[test]
fn a_record_of_the_last_up_that_is_not_one_is_one_line_naming_it() {
    for text in ["", "{\"namespace\": \"bench", "[]", "{\"namespace\": \"Bench_2\"}"] {
        let target_dir = target_dir_with_last_up("", Some(text));
        let results = target_dir.path().join("results");
        let output =
            xtask_in(target_dir.path(), &["bench", "--rows", "1K", "--results-dir", results.to_str().unwrap()], &[]);
        let line = error_line(&output);
        let record = target_dir.path().join("chbench/eks/last-up.json");
        assert!(
            line.starts_with(&format!(
                "error: {} is not the record of a deployment `cargo xtask eks up` brought up (",
                record.display()
            )),
            "{text:?}: {line}"
        );
        assert!(
            line.ends_with("delete it (bench then chooses its target as before), or run `cargo xtask eks up` again")
        );
        assert!(nothing_in(&results), "something was written");
    }
}

/// `eks down` of a namespace that is gone forgets it when it is the last up's, and says
/// so: bench chooses as before. (Against no cluster, the down fails before it learns
/// anything, so the record stays: it is forgotten only on the cluster's word.)
#[test]
fn down_without_a_cluster_keeps_the_record_of_the_last_up() {
    let target_dir = target_dir_with_last_up("bench-2", None);
    let output = xtask_in(target_dir.path(), &["eks", "down"], &[]);
    assert!(error_line(&output).starts_with("error: cannot reach a cluster"));
    assert!(target_dir.path().join("chbench/eks/last-up.json").exists());
}

/// Whether `folder` is absent or empty (the results folder is made before the target opens).
fn nothing_in(folder: &std::path::Path) -> bool {
    std::fs::read_dir(folder).map_or(true, |mut entries| entries.next().is_none())
}

/// A matrix never chooses the last up's deployment for want of a target: on eks it brings up
/// and takes down a deployment per variant, and would remake, then delete, the user's.
/// Here an eks-only key shows which target the file was read for.
#[test]
fn a_matrix_with_no_target_does_not_choose_the_deployment_up_brought_up() {
    let target_dir = target_dir_with_last_up("chbench", None);
    let file = target_dir.path().join("nodes.toml");
    std::fs::write(
        &file,
        "kind = \"logs\"\nflags = [\"--rows\", \"1K\"]\n[[variant]]\nname = \"a\"\nnode_type = \"m5.xlarge\"\n\
         [[variant]]\nname = \"b\"\nnode_type = \"c7g.xlarge\"\n",
    )
    .unwrap();
    let output = xtask_in(target_dir.path(), &["bench", "--matrix", file.to_str().unwrap()], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("no target given"), "{stderr}");
    let line = error_line(&output);
    assert!(line.contains("node_type") && !line.contains("target eks"), "{line}");
}

/// A record of a deployment on another cluster than the one the kubeconfig names now is
/// not that cluster's namespace of the same name: refused in one line, before any request
/// (the kubeconfig's server here never answers; the run does not wait on it).
#[test]
fn the_last_ups_deployment_on_another_cluster_than_the_kubeconfigs_is_one_line() {
    let server = silent_api_server();
    let target_dir = target_dir_with_last_up("chbench", None);
    let library = chbench::engine::provision(&|_| {}).unwrap();
    let query = target_dir.path().join("one.sql");
    std::fs::write(&query, "SELECT 1").unwrap();
    let output = server
        .xtask(&["measure", query.to_str().unwrap()])
        .env_remove("CHBENCH_TARGET")
        .env("CARGO_TARGET_DIR", target_dir.path())
        .env("CHBENCH_LIBCHDB", library)
        .env("CHBENCH_KUBE_REQUEST_TIMEOUT", "30")
        .output()
        .unwrap();
    let line = error_line(&output);
    assert!(line.contains("brought up on https://127.0.0.1:6443 in namespace chbench"), "{line}");
    assert!(
        line.ends_with(&format!(
            "and the kubeconfig now names the cluster at {}: switch back to its context (kubectl config \
             use-context), or choose another target with --target",
            server.url
        )),
        "{line}"
    );
    assert!(server.connections.try_recv().is_err(), "a request went to the other cluster");
    // status (and down, baseline, collect) without --namespace act on the record's
    // namespace: not another cluster's of that name.
    let output = server.xtask(&["eks", "status"]).env("CARGO_TARGET_DIR", target_dir.path()).output().unwrap();
    let line = error_line(&output);
    assert!(line.contains("and the kubeconfig now names the cluster at"), "{line}");
    assert!(server.connections.try_recv().is_err(), "status asked the other cluster");
    // A namespace given is that cluster's, record or not: asked there (and it never answers).
    let output = server
        .xtask(&["eks", "status", "--namespace", "chbench"])
        .env("CARGO_TARGET_DIR", target_dir.path())
        .env("CHBENCH_KUBE_REQUEST_TIMEOUT", "0.5")
        .output()
        .unwrap();
    let line = error_line(&output);
    assert!(line.contains("gave no answer within 0.5 s"), "{line}");
}

/// A matrix on eks whose namespace is the one the last `eks up` brought a deployment up in
/// would remake it with each variant's values and take it down: refused in one line,
/// before any cluster is asked; the shipped matrix has a namespace of its own.
#[test]
fn a_matrix_in_the_namespace_of_the_last_ups_deployment_is_refused() {
    let target_dir = target_dir_with_last_up("chbench", None);
    let file = target_dir.path().join("nodes.toml");
    std::fs::write(
        &file,
        "kind = \"logs\"\ntarget = \"eks\"\n[eks]\nnamespace = \"chbench\"\n[[variant]]\nname = \"a\"\n\
         node_type = \"m5.xlarge\"\n[[variant]]\nname = \"b\"\nnode_type = \"c6i.2xlarge\"\n",
    )
    .unwrap();
    let line = error_line(&xtask_in(target_dir.path(), &["bench", "--matrix", file.to_str().unwrap()], &[]));
    assert!(
        line.starts_with(&format!(
            "error: {}: the matrix's namespace chbench is that of the deployment",
            file.display()
        )),
        "{line}"
    );
    assert!(
        line.ends_with(
            "give the matrix a namespace of its own ([eks] namespace = \"...\"), or `cargo xtask eks down` first"
        ),
        "{line}"
    );
    let shipped = chbench::files::workspace_root().join("manifests/matrices/c7g-vs-c6i.toml");
    let results = target_dir.path().join("results");
    let output = xtask_in(
        target_dir.path(),
        &["bench", "--matrix", shipped.to_str().unwrap(), "--results-dir", results.to_str().unwrap()],
        &[],
    );
    assert!(!String::from_utf8_lossy(&output.stderr).contains("the matrix's namespace"), "the shipped matrix collides");
}

//! `cargo xtask eks up`, as a user runs it, without a cluster: everything is checked and
//! rendered before a cluster is contacted, and no cluster gives one clear line. Built
//! with the `eks` feature (`cargo nextest run -p xtask --features eks`).

use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        // No cluster: a kubeconfig that does not exist, and nothing in the cluster's env.
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("HOME", "/nonexistent")
        .output()
        .expect("cannot run xtask")
}

fn error_line(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(1), "expected exit code 1, got {:?}", output.status);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "expected one error line in:\n{stderr}");
    errors[0].to_string()
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
    assert!(line.starts_with("error: m5.xlarge has no local NVMe"), "{line}");
    let line = error_line(&xtask(&["eks", "up", "--iops", "100"]));
    assert_eq!(line, "error: gp3 takes 3000 to 16000 IOPS and 125 to 1000 MiB/s, not 100 and 125");
}

#[test]
fn no_cluster_is_one_line_saying_where_kube_looks() {
    let line = error_line(&xtask(&["eks", "up", "--variant", "kind"]));
    assert!(line.starts_with("error: cannot reach a cluster: kube reads KUBECONFIG or ~/.kube/config"), "{line}");
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

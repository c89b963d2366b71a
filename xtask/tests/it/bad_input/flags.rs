//! The command line: flags out of range or of another kind, run ids and results folders,
//! `--rows` past the disk, `eks up` flags no cluster would take.

use super::*;

#[test]
fn prices_and_sizes_that_are_not_finite_or_negative_are_refused_before_anything_runs() {
    for (flag, value) in [
        ("--volume-gib", "inf"),
        ("--node-usd-per-hour", "NaN"),
        ("--node-usd-per-hour", "-1"),
        ("--volume-usd-per-gb-month", "-0.5"),
        ("--volume-gib", "0"),
        ("--volume-mib-per-s", "-125"),
    ] {
        let results = tempfile::tempdir().unwrap();
        let output = xtask(
            &[
                "bench",
                "--target",
                "embedded",
                "--results-dir",
                results.path().to_str().unwrap(),
                &format!("{flag}={value}"),
            ],
            &[],
        );
        let line = error_line(&output);
        assert!(line.starts_with(&format!("error: {flag} ")) && line.contains("give"), "{line}");
        assert_eq!(output.status.code(), Some(1), "{line}");
        // Refused before the engine started or any bundle was made.
        assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "{line}");
        assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0);
    }
}

#[test]
fn a_results_folder_that_is_a_file_is_named_with_its_flag_before_anything_runs() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("README.md");
    std::fs::write(&file, "not a folder").unwrap();
    let output = xtask(&["bench", "--target", "embedded", "--results-dir", file.to_str().unwrap()], &[]);
    let line = error_line(&output);
    assert!(line.contains(&format!("the results folder {} is not a folder", file.display())), "{line}");
    assert!(line.ends_with("give --results-dir a folder"), "{line}");
    assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
    // compare's --out names --out, not --results-dir, and is checked before the bundles are
    // read (these need not exist); the file is left as it was.
    let line = error_line(&xtask(&["compare", "a", "b", "--out", file.to_str().unwrap()], &[]));
    assert_eq!(line, format!("error: the results folder {} is not a folder; give --out a folder", file.display()));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder");
}

#[test]
fn run_ids_that_could_name_a_path_elsewhere_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let results = outside.path().join("results");
    let absolute = outside.path().join("absolute");
    for run_id in ["../escaped", absolute.to_str().unwrap(), "a/b", ".", ".."] {
        for command in [&["bench", "--target", "embedded", "--run-id", run_id][..], &["report", run_id][..]] {
            let mut args = command.to_vec();
            args.extend(["--results-dir", results.to_str().unwrap()]);
            let line = error_line(&xtask(&args, &[]));
            // `report` also takes a bundle's folder, and says when a path holds none.
            let refused = line.contains("is not a usable run id") || line.contains("no results bundle at");
            assert!(refused, "{run_id}: {line}");
        }
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "something was written");
}

/// Runs a command line clap refuses and returns its one error line.
pub(super) fn usage_error(args: &[&str], env: &[(&str, &str)]) -> String {
    let output = xtask(args, env);
    // clap refuses it before anything runs, with its own usage-error code.
    assert_eq!(output.status.code(), Some(2), "{args:?}: {:?}", output.status);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors = error_lines(&output);
    assert_eq!(errors.len(), 1, "expected one error line in:\n{stderr}");
    errors[0].clone()
}

#[test]
fn an_unknown_target_lists_the_known_ones() {
    let choose = format!("is not a target; choose one of {}", chbench::target_info::TargetKind::names());
    let line = usage_error(&["bench", "--target", "kubernetes"], &[]);
    assert!(line.contains("'kubernetes'") && line.contains("--target") && line.contains(&choose), "{line}");
    // From the variable, the line names the variable: no --target was given.
    for args in [&["bench"][..], &["measure", "q.sql"]] {
        let line = usage_error(args, &[("CHBENCH_TARGET", "kubernetes")]);
        assert!(line.starts_with("error: CHBENCH_TARGET=\"kubernetes\": \"kubernetes\" is not a target"), "{line}");
        assert!(line.contains(&choose) && line.ends_with("set CHBENCH_TARGET to one of them, or unset it"), "{line}");
        assert!(!line.contains("--target"), "{line}");
    }
    // Both given: the flag is what clap read, and what the line names.
    let line = usage_error(&["bench", "--target=kubernetes"], &[("CHBENCH_TARGET", "embedded")]);
    assert!(line.contains("'kubernetes'") && line.contains("--target"), "{line}");
}

#[test]
fn an_unknown_benchmark_kind_lists_the_kinds() {
    let kinds: Vec<&str> = chbench::benchmarks::kinds::KINDS.iter().map(|kind| kind.name).collect();
    for name in ["nope", "log"] {
        let line = usage_error(&["bench", name], &[]);
        assert_eq!(
            line,
            format!(
                "error: {name:?} is not a benchmark kind; the kinds: {} (`cargo xtask bench KIND --help` lists a \
                 kind's flags)",
                kinds.join(", ")
            )
        );
    }
}

#[test]
fn a_negative_row_count_says_what_a_row_count_is() {
    for args in
        [&["bench", "--rows", "-5"][..], &["bench", "logs", "--rows", "-5"], &["bench", "throughput", "--rows", "-5"]]
    {
        let line = usage_error(args, &[]);
        assert!(line.contains("--rows") && !line.contains("unexpected argument"), "{args:?}: {line}");
        assert!(line.contains("\"-5\": a row count must be a positive number like 1000000 or 10M"), "{line}");
    }
}

#[test]
fn a_flag_of_another_kind_names_the_kind_that_takes_it() {
    let line = usage_error(&["bench", "logs", "--parts", "10"], &[]);
    assert_eq!(
        line,
        "error: --parts is not a flag of bench logs but of bench parts: cargo xtask bench parts --parts ..."
    );
    // The default kind's, without a kind named.
    let line = usage_error(&["bench", "--clients=1,4"], &[]);
    assert_eq!(
        line,
        "error: --clients is not a flag of bench logs but of bench parts: cargo xtask bench parts --clients ..."
    );
    // Several kinds take --rows: each is named.
    let line = usage_error(&["bench", "parts", "--rows", "1M"], &[]);
    assert!(line.starts_with("error: --rows is not a flag of bench parts but of bench logs, bench "), "{line}");
    // No kind takes it: the kind's own flags are listed.
    let line = usage_error(&["bench", "parts", "--no-such-flag"], &[]);
    assert!(line.starts_with("error: --no-such-flag is not a flag of bench parts; its flags: "), "{line}");
    assert!(line.contains("--parts") && line.contains("--clients") && line.contains("--target"), "{line}");
}

#[test]
fn a_client_count_given_twice_is_refused_as_a_part_count_given_twice_is() {
    let results = tempfile::tempdir().unwrap();
    for (flag, value, said) in [
        ("--clients", "1,1", "error: --clients lists 1 twice: give each client count once, e.g. --clients 1,4,16"),
        ("--parts", "10,10", "error: --parts lists 10 twice (10 before it)"),
    ] {
        let args =
            ["bench", "parts", "--target", "embedded", flag, value, "--results-dir", results.path().to_str().unwrap()];
        let output = xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
        let line = error_line(&output);
        assert!(line.starts_with(said), "{line}");
        assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
    }
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
}

#[test]
fn readonly_as_a_run_setting_is_refused_saying_why() {
    let results = tempfile::tempdir().unwrap();
    let args =
        ["bench", "--target", "embedded", "--setting", "readonly=1", "--results-dir", results.path().to_str().unwrap()];
    let output = xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
    let line = error_line(&output);
    assert_eq!(
        line,
        "error: --setting \"readonly=1\": readonly cannot be set for a run: the tool's session needs to set its own \
         settings (and create its tables), which a read-only session refuses; leave it out"
    );
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
}

#[test]
fn a_reference_answers_file_that_is_not_one_is_named_in_good_grammar() {
    let folder = tempfile::tempdir().unwrap();
    let answers = folder.path().join("answers.json");
    std::fs::write(&answers, "not json").unwrap();
    let args = ["bench", "clickbench", "--target", "embedded", "--reference-answers", answers.to_str().unwrap()];
    let line = error_line(&xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]));
    assert!(
        line.starts_with(&format!(
            "error: --reference-answers {}: not an answers.json as a clickbench run writes it",
            answers.display()
        )),
        "{line}"
    );
}

#[test]
fn an_absurd_price_is_refused_in_one_line_rather_than_an_unknown_cost() {
    let results = tempfile::tempdir().unwrap();
    for (flag, said) in [
        (
            "--node-usd-per-hour",
            "error: --node-usd-per-hour 1e308 is not a price: give USD per hour, a finite number from 0 to 10000",
        ),
        ("--volume-usd-per-gb-month", "error: --volume-usd-per-gb-month 1e308 is not a price: give USD per GB-month"),
        (
            "--volume-gib",
            "error: --volume-gib 1e308 is not a volume: give the provisioned size in GiB, above 0 and at most",
        ),
    ] {
        let args = ["bench", "--target", "embedded", flag, "1e308", "--results-dir", results.path().to_str().unwrap()];
        let line = error_line(&xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]));
        assert!(line.starts_with(said), "{line}");
    }
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
    // A comparison's price too.
    let line = usage_error(&["compare", "a", "b", "--price-a", "1e308"], &[]);
    assert!(line.contains("\"1e308\" is not a price: give USD per hour from 0.001 to 10000"), "{line}");
}

#[test]
fn a_pack_name_too_long_for_a_file_name_is_one_line_naming_the_limit() {
    let packs = tempfile::tempdir().unwrap();
    let name = "p".repeat(300);
    let output = xtask(&["new-pack", &name, "--dir", packs.path().to_str().unwrap()], &[]);
    let line = error_line(&output);
    assert!(
        line.starts_with(
            "error: cargo xtask new-pack: name pppppppppppppppppppp... has 300 characters, and a name has \
             at most 64"
        ),
        "{line}"
    );
    assert!(!line.contains("os error"), "{line}");
    assert_eq!(std::fs::read_dir(packs.path()).unwrap().count(), 0, "something was written");
}

#[test]
fn a_kinds_flags_before_its_name_say_to_put_the_kind_first() {
    let line = usage_error(&["bench", "--rows", "10", "logs"], &[]);
    assert_eq!(line, "error: a kind's flags follow its name: cargo xtask bench logs --rows 10");
    let line = usage_error(&["bench", "--runs", "2", "logs", "--rows", "1K"], &[]);
    assert_eq!(line, "error: a kind's flags follow its name: cargo xtask bench logs --runs 2 --rows 1K");
}

/// `--rows` beyond what the engine's disk holds (by the run's measured peak per row), or
/// beyond any sane scale, is one line with the estimate and the free space, before the
/// engine is touched or a bundle made.
#[test]
fn rows_beyond_the_free_disk_or_a_sane_bound_are_refused_before_anything_runs() {
    let results = tempfile::tempdir().unwrap();
    let bench = |rows: &str| {
        let args = ["bench", "--target", "embedded", "--rows", rows, "--results-dir", results.path().to_str().unwrap()];
        let output = xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
        assert_eq!(output.status.code(), Some(1));
        assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
        error_line(&output)
    };
    // 2.23 TiB: more than this machine has free.
    let line = bench("10G");
    assert!(
        line.starts_with(
            "error: --rows 10000000000 needs about 2.23 TiB in target/chbench (196 bytes/row measured at a run's \
             peak at 100 M rows, plus 25 %), which has "
        ),
        "{line}"
    );
    assert!(line.ends_with(" free; give fewer rows or free space"), "{line}");
    let line = bench("11G");
    assert!(line.starts_with("error: --rows 11000000000 is more than chbench generates into one table"), "{line}");
    assert!(line.ends_with("give fewer rows"), "{line}");
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
    // A pack's scale too, before its dataset is built.
    let line = measure_without_an_engine(&["primary_key", "one_device_one_hour", "--rows", "11G"]);
    assert!(line.contains("dataset primary_key_readings_11000000000 (11000000000 rows) is more than"), "{line}");
}

#[test]
fn a_run_id_already_taken_is_refused_before_the_engine_starts() {
    let results = tempfile::tempdir().unwrap();
    let taken = results.path().join("yesterday");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("results.json"), "{}").unwrap();
    // An engine that does not exist: reaching it would be its error, not this one.
    let output = xtask(
        &["bench", "--target", "embedded", "--run-id", "yesterday", "--results-dir", results.path().to_str().unwrap()],
        &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")],
    );
    let line = error_line(&output);
    assert_eq!(line, format!("error: the results folder {} already exists; choose another run id", taken.display()));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
    assert_eq!(std::fs::read_to_string(taken.join("results.json")).unwrap(), "{}");
}

/// In a build without the container target (a laptop's), `--target container` is one line
/// and no build where no Docker daemon looks to be; where one does, the line says what it
/// builds, then the command runs again from cargo (here one that cannot start, so nothing
/// is built); `auto` runs on the embedded engine and says how to get the container.
#[test]
fn the_container_target_without_its_feature_is_one_line_and_a_build_only_where_docker_is() {
    if chbench::targets::container::MISSING_FEATURE.is_none() {
        return; // built with the container target: its own tests cover it
    }
    let bench_with = |env: &[(&str, &str)]| {
        let env: Vec<(&str, &str)> = env.iter().copied().chain([("CARGO", "/nonexistent/cargo")]).collect();
        let output = xtask(&["bench", "--target", "container", "--rows", "1K"], &env);
        assert!(!String::from_utf8_lossy(&output.stderr).contains("needs testcontainers"), "it would build");
        error_line(&output)
    };
    assert_eq!(
        bench_with(&[("DOCKER_HOST", "unix:///nonexistent/docker.sock")]),
        "error: cannot reach Docker: DOCKER_HOST names the socket /nonexistent/docker.sock, which does not exist: is \
         a Docker daemon running?"
    );
    // What the client would refuse is refused before it is built, showing the scheme alone.
    let ssh = bench_with(&[("DOCKER_HOST", "ssh://me:hunter2pw@example.invalid")]);
    assert!(ssh.starts_with("error: cannot reach Docker: DOCKER_HOST is a ssh:// address") && !ssh.contains("hunter2"));
    let tls = bench_with(&[("DOCKER_HOST", "tcp://127.0.0.1:1"), ("DOCKER_TLS_VERIFY", "1")]);
    assert!(tls.starts_with("error: cannot reach Docker: DOCKER_TLS_VERIFY=1 is set"), "{tls}");

    let docker = [("DOCKER_HOST", "tcp://127.0.0.1:1"), ("CARGO", "/nonexistent/cargo")];
    let output = xtask(&["bench", "--target", "container", "--rows", "1K"], &docker);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(
            "chbench: target container needs testcontainers, the Docker client (the container feature): running \
             xtask built with it; the first time, cargo builds it now"
        ),
        "{stderr}"
    );
    let line = error_line(&output);
    assert!(
        line.starts_with("error: cannot run /nonexistent/cargo to build xtask with the container feature"),
        "{line}"
    );

    let query = tempfile::tempdir().unwrap();
    let sql = query.path().join("one.sql");
    std::fs::write(&sql, "SELECT 1").unwrap();
    let output = xtask(&["measure", sql.to_str().unwrap()], &[("DOCKER_HOST", "tcp://127.0.0.1:1")]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    // DOCKER_HOST is named, never shown.
    assert!(
        stderr.contains(
            "chbench: Docker looks to be here (DOCKER_HOST), but this build has no container target: target embedded"
        ) && stderr.contains("chbench: target embedded")
            && !stderr.contains("127.0.0.1:1"),
        "{stderr}"
    );
}

#[test]
fn clean_containers_without_docker_has_nothing_to_clean() {
    // A socket that does not exist: no daemon answers, as on a machine without Docker.
    let output = xtask(&["clean-containers"], &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("no Docker daemon answers") && stdout.contains("no container to remove"), "{stdout}");
    assert!(error_lines(&output).is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// `eks up` flags that no cluster would take, or that the variant would ignore, each
/// refused in one line before anything is built or sent: a cargo that does not exist
/// would be the error of a rebuild with the Kubernetes client.
#[test]
fn eks_up_flags_are_refused_before_the_kubernetes_client_is_built() {
    let eks_up = |flags: &[&str]| {
        let mut args = vec!["eks", "up"];
        args.extend(flags);
        error_line(&xtask(&args, &[("CARGO", "/nonexistent/cargo"), ("KUBECONFIG", "/nonexistent/kubeconfig")]))
    };
    assert_eq!(
        eks_up(&["--volume-gib", "65537"]),
        "error: --volume-gib 65537: a gp3 volume holds at most 65536 GiB (64 TiB); give --volume-gib 65536 or less"
    );
    assert_eq!(
        eks_up(&["--iops", "100"]),
        "error: --iops 100: gp3 takes 3000 to 80000 IOPS; give --iops in that range"
    );
    assert_eq!(
        eks_up(&["--throughput-mibps", "3000", "--iops", "16000"]),
        "error: --throughput-mibps 3000: gp3 takes 125 to 2000 MiB/s; give --throughput-mibps in that range"
    );
    let line = eks_up(&["--node-type", "xlarge"]);
    assert!(line.starts_with("error: --node-type \"xlarge\" is not an instance type: give FAMILY.SIZE"), "{line}");
    let line = eks_up(&["--variant", "eks-nvme", "--node-type", "m5.xlarge"]);
    assert!(line.starts_with("error: --node-type m5.xlarge has no local NVMe"), "{line}");
    for (variant, flag, value, store) in [
        ("kind", "--iops", "4000", "the cluster's default storage class"),
        ("kind", "--throughput-mibps", "250", "the cluster's default storage class"),
        ("eks-nvme", "--iops", "3000", "the node's instance store"),
        ("eks-nvme", "--throughput-mibps", "125", "the node's instance store"),
    ] {
        assert_eq!(
            eks_up(&["--variant", variant, flag, value]),
            format!(
                "error: {flag}: {variant} has no gp3 volume (its data is on {store}), so {flag} would do nothing; \
                 drop it, or use --variant eks-gp3"
            )
        );
    }
    assert_eq!(
        eks_up(&["--variant", "kind", "--node-type", "m5.xlarge"]),
        "error: --node-type: kind chooses no node (its pod goes wherever the cluster puts it), so --node-type would \
         do nothing; drop it, or use --variant eks-gp3 or eks-nvme"
    );
}

/// `--profile` needs a server's query profiler: the embedded engine refuses it in one
/// line, for each kind that takes it, before the engine starts; a kind that does not take
/// it names the ones that do; a value that is not a profiler is clap's.
#[test]
fn profile_on_the_embedded_engine_or_a_kind_without_it_is_refused_before_anything_runs() {
    for kind in ["logs", "parts", "clickbench"] {
        for choice in ["cpu", "real", "both"] {
            let results = tempfile::tempdir().unwrap();
            let output = xtask(
                &[
                    "bench",
                    kind,
                    "--target",
                    "embedded",
                    "--profile",
                    choice,
                    "--results-dir",
                    results.path().to_str().unwrap(),
                ],
                &[],
            );
            let line = error_line(&output);
            assert_eq!(
                line,
                format!(
                    "error: --profile {choice}: target embedded cannot sample stacks (the embedded engine's library \
                     has no symbols, and it keeps no system.trace_log); profile on a server: --target url, container \
                     or eks"
                ),
                "{kind}"
            );
            assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
            assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0);
        }
    }
    // Beside settings that set the profilers themselves, one of the two would be lost: refused
    // before the server is asked for anything (no CHBENCH_URL is given here).
    for (extra, given_by) in [
        (&["--setting", "query_profiler_real_time_period_ns=1"][..], "--setting"),
        (&["--variant", "a:", "--variant", "b:query_profiler_cpu_time_period_ns=5"][..], "--variant b"),
    ] {
        let mut args = vec!["bench", "logs", "--target", "url", "--profile", "both"];
        args.extend(extra);
        let line = error_line(&xtask(&args, &[]));
        assert!(line.starts_with("error: --profile both sets query_profiler_"), "{line}");
        assert!(line.ends_with(&format!("itself, and {given_by} sets it too: drop one of the two")), "{line}");
    }
    let output = xtask(&["bench", "throughput", "--profile", "cpu"], &[]);
    assert_eq!(output.status.code(), Some(2), "a usage error");
    let line = error_lines(&output).join("\n");
    assert!(
        line.contains("--profile is not a flag of bench throughput but of bench logs, bench parts, bench clickbench"),
        "{line}"
    );
    let output = xtask(&["bench", "logs", "--profile", "memory"], &[]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("error: --profile \"memory\" is not one of its values: cpu, real, both")
    );
}

/// Each kind's help opens on what it measures: a group of flags it flattens in
/// (`--profile`, the load's placement) must not take over its description.
#[test]
fn every_kinds_help_opens_on_what_it_measures() {
    let output = xtask(&["bench", "--help"], &[]);
    let help = String::from_utf8_lossy(&output.stdout);
    for (kind, about) in [
        ("logs", "The ClickHouse on EKS field benchmark"),
        ("parts", "Planning cost as a table's active parts grow"),
        ("clickbench", "ClickBench's query set"),
        ("throughput", "Queries per second at several levels of concurrency"),
        ("writes", "INSERTs and rows per second at several levels of concurrent writers"),
    ] {
        let line = help.lines().find(|line| line.trim_start().starts_with(&format!("{kind} "))).unwrap();
        assert!(line.contains(about), "{line}");
        let own = xtask(&["bench", kind, "--help"], &[]);
        let first = String::from_utf8_lossy(&own.stdout).lines().next().unwrap_or("").to_string();
        assert!(first.starts_with(about), "bench {kind} --help opens on {first:?}");
    }
}

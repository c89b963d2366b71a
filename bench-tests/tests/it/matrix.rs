//! Matrix files (`chbench::matrix::file`): a good one read into its variants, each mistake
//! one line naming the file, the line and the key, before anything runs; and the run's own
//! session settings (`bench --setting`, what a settings variant runs with) in force for
//! every statement of the process, its concurrent clients' included. The runs themselves
//! are in xtask's tests (`xtask/tests/it/matrix.rs`), the eks lifecycle against the mocked
//! API server in `cluster.rs`.

use std::path::Path;

use chbench::cluster::Variant;
use chbench::matrix::{PlannedVariant, parse_matrix};
use chbench::measure::measure;
use chbench::settings::{Settings, choose_run_settings};
use chbench::stats::StatementTag;
use chbench::target_info::TargetKind;
use chbench::targets::open_target_of_kind;

const FILE: &str = "m.toml";

fn mistake(text: &str, target: TargetKind) -> String {
    format!("{:#}", parse_matrix(Path::new(FILE), text, target).unwrap_err())
}

#[test]
fn a_matrix_file_is_its_kind_flags_and_variants_with_what_each_changes() {
    let text = r#"
kind = "logs"
flags = ["--rows", "100K", "--runs", "5"]

[[variant]]
name = "default"

[[variant]]
name = "one_thread"
settings = { max_threads = 1, use_uncompressed_cache = true }

[[variant]]
name = "v26_5"
engine_version = "26.5.3"

[[variant]]
name = "gp3"
storage = "gp3"
"#;
    let matrix = parse_matrix(Path::new(FILE), text, TargetKind::Embedded).unwrap();
    assert_eq!((matrix.kind.name, matrix.target, matrix.eks.is_none()), ("logs", TargetKind::Embedded, true));
    assert_eq!(matrix.flags, ["--rows", "100K", "--runs", "5"]);
    let changes: Vec<String> = matrix.variants.iter().map(|variant| variant.changes()).collect();
    assert_eq!(changes, ["the defaults", "max_threads=1, use_uncompressed_cache=1", "engine 26.5.3", "storage gp3"]);
    assert_eq!(matrix.variants[2].engine_version.map(|engine| engine.npm_version), Some("26.5.3"));
    assert_eq!(matrix.variants[3].storage_profile.as_deref(), Some("gp3"));
    // The variant's bench runs on its profile; the others on the machine's disk.
    let run = |index: usize| PlannedVariant {
        matrix: &matrix,
        variant: &matrix.variants[index],
        run_id: "m-x".to_string(),
        results_dir: "results".into(),
    };
    let args = run(3).bench_args();
    assert!(args.windows(2).any(|pair| pair == ["--storage", "gp3"]), "{args:?}");
    assert!(!run(0).bench_args().contains(&"--storage".to_string()));
}

#[test]
fn an_eks_variant_is_a_deployment_with_max_threads_from_its_nodes_vcpus() {
    let text = r#"
kind = "logs"
target = "eks"
[eks]
namespace = "bench-x"
no_baseline = true

[[variant]]
name = "c7g"
node_type = "c7g.2xlarge"

[[variant]]
name = "nvme"
storage = "eks-nvme"

[[variant]]
name = "big"
node_type = "c7i.4xlarge"
max_threads = 16
"#;
    let matrix = parse_matrix(Path::new(FILE), text, TargetKind::Auto).unwrap();
    assert_eq!(matrix.target, TargetKind::Eks);
    let eks = matrix.eks.as_ref().unwrap();
    assert_eq!((eks.namespace.as_str(), eks.baseline, eks.timeout_seconds), ("bench-x", false, 600));
    let deployed: Vec<(Variant, String, Option<u32>, Option<&str>)> = matrix
        .variants
        .iter()
        .map(|variant| {
            let deployment = variant.deployment.as_ref().unwrap();
            (
                deployment.storage,
                deployment.values.node_type.clone(),
                deployment.max_threads,
                variant.settings.get("max_threads"),
            )
        })
        .collect();
    assert_eq!(
        deployed,
        [
            (Variant::EksGp3, "c7g.2xlarge".to_string(), Some(8), Some("8")),
            (Variant::EksNvme, "m6id.xlarge".to_string(), Some(4), Some("4")),
            (Variant::EksGp3, "c7i.4xlarge".to_string(), Some(16), Some("16")),
        ]
    );
    assert!(matrix.variants.iter().all(|variant| variant.deployment.as_ref().unwrap().values.namespace == "bench-x"));
}

#[test]
fn each_mistake_in_a_matrix_file_is_one_line_naming_the_file_its_line_and_the_key() {
    let two = "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n";
    let cases: Vec<(String, TargetKind, &str)> = vec![
        (format!("kind = \"logs\"\nflag = []\n{two}"), TargetKind::Embedded, "m.toml:2: unknown field `flag`"),
        (format!("kind = \"log\"\n{two}"), TargetKind::Embedded, "m.toml:1: kind \"log\" is not a benchmark kind"),
        (
            "kind = \"logs\"\n[[variant]]\nname = \"a\"\n".to_string(),
            TargetKind::Embedded,
            "m.toml:2: a matrix compares at least two variants and this one has 1",
        ),
        (
            "kind = \"logs\"\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"a\"\n".to_string(),
            TargetKind::Embedded,
            "m.toml:5: variant name \"a\" is given twice",
        ),
        (
            "kind = \"logs\"\n[[variant]]\nname = \"\"\n[[variant]]\nname = \"a\"\n".to_string(),
            TargetKind::Embedded,
            "m.toml:3: variant name \"\": use 1 to 40 letters",
        ),
        (
            "kind = \"logs\"\n[[variant]]\nname = \"a\"\nbogus = 1\n[[variant]]\nname = \"b\"\n".to_string(),
            TargetKind::Embedded,
            "m.toml:4: unknown field `bogus`",
        ),
        (
            "kind = \"logs\"\n[[variant]]\nname = \"a\"\nstorage = \"gp2\"\n[[variant]]\nname = \"b\"\n".to_string(),
            TargetKind::Embedded,
            "m.toml:4: variant \"a\": storage \"gp2\": \"gp2\" is not a profile or a limit; give local, gp3",
        ),
        (
            "kind = \"logs\"\n[[variant]]\nname = \"a\"\nstorage = \"gp3\"\n[[variant]]\nname = \"b\"\n".to_string(),
            TargetKind::Url,
            "m.toml:4: variant \"a\": storage is an eks deployment's storage or, on the embedded target, a storage profile, and the matrix runs on url",
        ),
        (
            format!("kind = \"logs\"\nflags = [\"--run-id\", \"x\"]\n{two}"),
            TargetKind::Embedded,
            "m.toml:2: flags: --run-id is the matrix's to set for each variant",
        ),
        (format!("kind = \"logs\"\nflags = [\"--rows\", \"0\"]\n{two}"), TargetKind::Embedded, "m.toml:2: flags: "),
        (
            format!("kind = \"logs\"\nflags = [\"--nope\"]\n{two}"),
            TargetKind::Embedded,
            "m.toml:2: flags: unexpected argument '--nope' found (the logs benchmark's flags",
        ),
        (
            "kind = \"logs\"\n[[variant]]\nname = \"a\"\nnode_type = \"c7g.2xlarge\"\n[[variant]]\nname = \"b\"\n"
                .to_string(),
            TargetKind::Embedded,
            "m.toml:4: variant \"a\": node_type is a deployment's, for the eks target, and the matrix runs on embedded",
        ),
        (
            format!("kind = \"logs\"\n[eks]\nnamespace = \"x\"\n{two}"),
            TargetKind::Embedded,
            "m.toml:2: [eks] is for the eks target, and the matrix runs on embedded",
        ),
        (
            "kind = \"logs\"\ntarget = \"eks\"\n[[variant]]\nname = \"a\"\nengine_version = \"26.5.3\"\n[[variant]]\n\
             name = \"b\"\n"
                .to_string(),
            TargetKind::Auto,
            "m.toml:5: variant \"a\": engine_version chooses the embedded engine's version, and the matrix runs on eks",
        ),
        (
            "kind = \"logs\"\ntarget = \"eks\"\n[[variant]]\nname = \"a\"\nnode_type = \"c7g\"\n[[variant]]\n\
             name = \"b\"\n"
                .to_string(),
            TargetKind::Auto,
            "m.toml:5: variant \"a\": --node-type \"c7g\" is not an instance type",
        ),
        (
            "kind = \"logs\"\ntarget = \"eks\"\n[[variant]]\nname = \"a\"\nstorage = \"eks-nvme\"\nnode_type = \
             \"m5.xlarge\"\n[[variant]]\nname = \"b\"\n"
                .to_string(),
            TargetKind::Auto,
            "m.toml:6: variant \"a\": --node-type m5.xlarge has no local NVMe",
        ),
        (
            "kind = \"logs\"\ntarget = \"eks\"\n[[variant]]\nname = \"a\"\nnode_type = \"r7g.xlarge\"\n[[variant]]\n\
             name = \"b\"\n"
                .to_string(),
            TargetKind::Auto,
            "m.toml:5: variant \"a\": node type r7g.xlarge is not in the table of vCPUs (m5.xlarge 4, c6i.2xlarge 8, \
             c7g.2xlarge 8, m6id.xlarge 4): give max_threads = its vCPU count",
        ),
        (
            "kind = \"logs\"\ntarget = \"eks\"\n[[variant]]\nname = \"a\"\nstorage = \"eks-ssd\"\n[[variant]]\n\
             name = \"b\"\n"
                .to_string(),
            TargetKind::Auto,
            "m.toml:5: variant \"a\": storage \"eks-ssd\" is not one of eks-gp3, eks-nvme, kind",
        ),
        (
            "kind = \"logs\"\n[[variant]]\nname = \"a\"\nengine_version = \"25.1\"\n[[variant]]\nname = \"b\"\n"
                .to_string(),
            TargetKind::Embedded,
            "m.toml:4: variant \"a\": engine_version: ",
        ),
        (
            "kind = \"logs\"\n[[variant]]\nname = \"a\"\nsettings = { log_comment = \"x\" }\n[[variant]]\nname = \
             \"b\"\n"
                .to_string(),
            TargetKind::Embedded,
            "m.toml:4: variant \"a\": settings: log_comment is set by the harness",
        ),
        (
            format!("kind = \"logs\"\ntarget = \"url\"\n{two}"),
            TargetKind::Embedded,
            "m.toml:2: target = \"url\", and --target (or CHBENCH_TARGET) says embedded: give the target once",
        ),
    ];
    for (text, target, expected) in cases {
        let said = mistake(&text, target);
        assert!(said.starts_with(expected), "expected {expected:?}, got {said:?} for:\n{text}");
        assert!(!said.contains('\n'), "more than one line: {said:?}");
    }
}

/// What a settings variant runs with: `bench --setting` chooses the process's session
/// settings before a target opens, and every statement sees them: the target's own
/// session, after a statement that set the same setting for itself, and a concurrent
/// client's connection.
#[test]
fn the_runs_session_settings_reach_every_statement_of_the_process() {
    choose_run_settings(Settings::new().with("max_threads", 3)).unwrap();
    assert!(choose_run_settings(Settings::new().with("max_threads", 4)).is_err(), "chosen twice");
    assert_eq!(Settings::session_defaults().get("max_threads"), Some("3"));
    let mut target = open_target_of_kind(TargetKind::Embedded).unwrap();
    target.use_scenario_database("matrix_run_settings").unwrap();
    let current = "SELECT getSetting('max_threads')";
    assert_eq!(target.query_text(current).unwrap().trim(), "3");
    let tag = StatementTag::new("matrix", "run_settings", "own", 1);
    let own = measure(&mut target, current, &tag, &Settings::new().with("max_threads", 1)).unwrap();
    assert_eq!(own.body.trim(), "1", "a statement's own setting applies to it");
    assert_eq!(target.query_text(current).unwrap().trim(), "3", "and the run's comes back after it");
    let outputs = target.run_concurrently(2, 1, current, |_, _| Settings::new(), "TabSeparated").unwrap();
    assert_eq!(outputs.len(), 2);
    assert!(outputs.iter().all(|client| client.output.body.trim() == "3"), "{outputs:?}");
}

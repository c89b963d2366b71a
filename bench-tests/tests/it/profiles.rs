//! `--profile`'s flame graphs: the stacks of a recorded `system.trace_log` lookup
//! (`fixtures/profiles/trace_log_stacks.json`, rows of the lookup `profiling` sends, built
//! from trace_log's documented columns: `trace_type`, and `trace`, the stack's addresses
//! innermost first, here symbolized) folded and drawn; and a target without the profiler
//! giving a reason, not an error. No server runs here: a live profile is the eks and
//! container targets' (not run on these machines).

use chbench::profiles::{StackRow, TraceType, flame_graph_svg, fold};
use chbench::profiling::{ProfiledRuns, gather};
use chbench::target_info::TargetKind;

fn recorded_rows() -> Vec<StackRow> {
    let path = chbench::files::fixtures_root().join("profiles/trace_log_stacks.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The frames of an inferno flame graph: one `<g>` per frame with its `<title>` `name (N
/// samples, P%)`; the root, `all`, included.
fn frame_titles(svg: &str) -> Vec<String> {
    svg.split("<title>").skip(1).filter_map(|rest| rest.split("</title>").next()).map(str::to_string).collect()
}

#[test]
fn recorded_stacks_fold_per_trace_type_outermost_first_and_leave_other_types_out() {
    let rows = recorded_rows();
    let (cpu, cpu_samples, cpu_stacks) = fold(&rows, TraceType::Cpu);
    assert_eq!((cpu_samples, cpu_stacks), (41 + 23 + 9, 3));
    assert!(cpu.lines().all(|line| line.starts_with("clone;start_thread;")), "{cpu}");
    // An address without a symbol is a frame of its own, never dropped.
    assert!(cpu.contains(";DB::MergeTreeRangeReader::read(unsigned long, std::__1::deque<DB::MarkRange, std::__1::allocator<DB::MarkRange>>&);[unknown] 9\n"), "{cpu}");
    let (real, real_samples, _) = fold(&rows, TraceType::Real);
    assert_eq!(real_samples, 88 + 43 + 46);
    assert!(real.contains(";std::__1::mutex::lock();__lll_lock_wait 88\n"), "{real}");
    // The Memory sample is not the profilers'.
    assert!(!cpu.contains("operator new") && !real.contains("operator new"));
}

#[test]
fn a_flame_graph_has_a_frame_per_node_of_the_stacks_with_its_samples_and_is_the_same_twice() {
    let (real, samples, _) = fold(&recorded_rows(), TraceType::Real);
    let svg = flame_graph_svg(&real, "q1 (parts=20000) - Real").unwrap();
    assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"), "not an SVG document");
    assert!(svg.contains("q1 (parts=20000) - Real"));
    let titles = frame_titles(&svg);
    // Every distinct path from the root is a frame: count them from the folded stacks.
    let mut nodes = std::collections::BTreeSet::new();
    for line in real.lines() {
        let stack = line.rsplit_once(' ').unwrap().0;
        let frames: Vec<&str> = stack.split(';').collect();
        for depth in 1..=frames.len() {
            nodes.insert(frames[..depth].join(";"));
        }
    }
    assert_eq!(titles.len(), nodes.len() + 1, "{titles:#?}");
    let root = format!("all ({samples} samples");
    assert!(titles.iter().any(|title| title.starts_with(&root)), "{titles:#?}");
    // The lock wait the "Real" graph exists to show, with its samples.
    assert!(titles.iter().any(|title| title.starts_with("__lll_lock_wait (88 samples")), "{titles:#?}");
    assert_eq!(svg, flame_graph_svg(&real, "q1 (parts=20000) - Real").unwrap(), "two renderings differ");
}

/// On a target that keeps no trace_log (the embedded engine, when it runs the tests) a
/// profile's gathering says why there are none, and the run's measurements stand.
#[test]
fn a_target_without_the_profiler_gives_the_reason_there_are_no_flame_graphs() {
    let kind = chbench::targets::resolve_kind(TargetKind::from_env().unwrap());
    if chbench::targets::spec(kind).capabilities.query_profiler {
        return;
    }
    let mut target = chbench::targets::open_target_of_kind(kind).unwrap();
    let folder = tempfile::tempdir().unwrap();
    let runs = [ProfiledRuns { label: "q1".to_string(), query_ids: vec!["0b7c-1".to_string()] }];
    let since = jiff::Timestamp::now();
    let record = gather(&mut target, &runs, chbench::profiles::ProfileChoice::Both, since, folder.path(), &|_| {});
    // The server's logs could not be flushed (the record's reason), or each query's samples
    // not read (its own): either way no graph, and a reason.
    assert!(record.queries.iter().all(|profile| profile.svg.is_none() && profile.unknown.is_some()), "{record:?}");
    let reasons: Vec<String> = record
        .unknown
        .iter()
        .cloned()
        .chain(record.queries.iter().filter_map(|profile| profile.unknown.clone()))
        .collect();
    assert!(!reasons.is_empty());
    assert!(reasons.iter().all(|why| why.contains("trace_log") || why.contains("flush")), "{reasons:?}");
}

//! Reports: Markdown and SVG charts made from a results bundle alone, never from a live
//! target. The envelope's part (the run, the target, the machine) is rendered here, and
//! the charts ([`charts`]); each benchmark kind renders its own [`Section`]
//! (`benchmarks/<kind>/report.rs`), and `benchmarks::kinds::write_report` puts the two together
//! for the bundle's kind. Reports depend on results types only, never on a runner.

pub mod charts;
pub mod html;

use crate::levels::LevelRound;
use crate::load_generator::LoadFrom;
use crate::machine::LoadAverage;
use crate::markdown::Table;
use crate::profiles::ProfileRecord;
use crate::results::{KindResults, RunBundle, RunStatus};
use crate::units::{human_bytes, number};
use std::fmt::Write as _;

/// The report's file in a bundle folder, beside the charts.
pub const REPORT_FILE: &str = "report.md";

/// A kind's part of a report: its Markdown section and its charts (file name, SVG).
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub markdown: String,
    pub charts: Vec<(&'static str, String)>,
}

/// How a kind names the statement its runner check sends, in the report's words.
#[derive(Debug, Clone, Copy)]
pub struct CheckWords<'a> {
    /// The statement as the report opens on it (`` `SELECT 1` ``, `The INSERT`).
    pub shown: &'a str,
    /// One of them, and a count of them (`statement`, `statements`).
    pub one: &'a str,
    pub many: &'a str,
    /// The unit of their rate (`QPS`, `INSERTs/s`).
    pub rate: &'a str,
}

/// Where a kind's load clients ran, and what that makes of its figures: clickhouse-benchmark
/// in the cluster (`clients` says where), or this tool's loop here, through the target's
/// port-forward (`through_tunnel`) or not. `rate` names the kind's rate (`QPS`,
/// `INSERTs/s`).
pub fn clients_paragraph(load_from: LoadFrom, clients: &str, through_tunnel: bool, rate: &str) -> String {
    match load_from {
        LoadFrom::Cluster => format!(
            "**Clients**: {clients}, a Kubernetes Job per level and round, from the server's own image, next to the \
             server rather than through the port-forward. {rate} is its completed statements over its run's wall \
             time; latency its nearest-rank percentiles of the client's wall time around each statement \
             (`--client-side-time`; over a reservoir sample of 65,536 statements when more completed), printed to \
             the millisecond, with no maximum (it prints up to 99.99 %); a level's percentiles across rounds are \
             the median of each round's. Each level's counts are held against the server's `query_log` (below)."
        ),
        LoadFrom::Local if through_tunnel => format!(
            "**Clients**: this tool's loop on this machine, through the port-forward (`--load-from local`, or a run \
             from before the clients could run in the cluster): {rate} and latency include the tunnel and this \
             machine's network, not the server alone. `--load-from cluster` runs the clients next to the server."
        ),
        LoadFrom::Local => "**Clients**: this tool's loop on this machine.".to_string(),
    }
}

/// `### Load in the cluster`: each level run there (with its A/B variant, when it has
/// one), its Job's pod and node, the generator's counts against the server's, and whether
/// they agree; empty when no level ran there.
pub fn load_section<'a>(rounds: impl IntoIterator<Item = (Option<&'a str>, &'a LevelRound)>) -> String {
    let rounds: Vec<(Option<&str>, &LevelRound)> =
        rounds.into_iter().filter(|(_, round)| round.load.is_some()).collect();
    let with_variants = rounds.iter().any(|(variant, _)| variant.is_some());
    let mut header = vec!["round", "clients", "pod", "node", "generator", "server's query_log", "check"];
    if with_variants {
        header.insert(1, "variant");
    }
    let mut table = Table::new(header);
    for (variant, round) in rounds {
        let Some(load) = &round.load else { continue };
        let server = match (load.server_finished, load.server_failed) {
            (Some(finished), Some(failed)) => format!("{finished} finished, {failed} failed"),
            _ => format!("unknown ({})", load.server_unknown.as_deref().unwrap_or("not read")),
        };
        let check = match (&load.mismatch, load.server_finished) {
            (Some(mismatch), _) => format!("differs: {mismatch}"),
            (None, Some(_)) => "same".to_string(),
            (None, None) => "not made".to_string(),
        };
        let mut cells = vec![
            round.round.to_string(),
            round.clients.to_string(),
            load.pod.clone(),
            load.node.clone().unwrap_or_else(|| "unknown".to_string()),
            format!("{} completed, {} failed", load.report.completed, load.report.errors),
            server,
            check,
        ];
        if with_variants {
            cells.insert(1, variant.unwrap_or("").to_string());
        }
        table.row(cells);
    }
    if table.is_empty() {
        return String::new();
    }
    format!("### Load in the cluster\n\n{table}\n")
}

/// The `### Runner check` section of a kind that runs closed loops: both rates, their
/// ratio against the goal and the runner's own CPU, or why the check did not run.
pub fn runner_check_section(check: Option<&crate::levels::RunnerCheck>, words: CheckWords<'_>) -> String {
    use crate::units::{per_second, times};
    let CheckWords { shown, one, many, rate } = words;
    let Some(check) = check else {
        return "### Runner check\n\nNot run: `--check-statements 0` asked for none, or the run stopped before it.\n\n"
            .to_string();
    };
    let verdict = match check.ratio {
        Some(ratio) if check.goal.is_some_and(|goal| ratio >= goal) => "the runner is not the bottleneck".to_string(),
        Some(_) => format!("below the goal: the runner costs {rate}"),
        None => "unknown".to_string(),
    };
    let cpu = check.runner_cpu_us_per_statement.map_or("unknown".to_string(), |us| format!("{} µs", number(us, 1)));
    format!(
        "### Runner check\n\n{shown} at one client, {} {many} a side in interleaved blocks: {} {rate} through the \
         runner, {} {rate} in a tight loop on the engine, ratio {} (goal {}: {verdict}). The runner's own CPU: {cpu} \
         per {one}.\n\n",
        check.statements_per_side,
        per_second(check.runner_qps),
        per_second(check.direct_qps),
        times(check.ratio),
        times(check.goal),
    )
}

/// The envelope's part: title, whether the run is complete, target, settings, storage
/// baseline, machine. `phase` is how the kind says the phase the bundle stopped in.
pub fn header<Results: KindResults>(bundle: &RunBundle<Results>, phase: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {} benchmark, run {}\n", Results::KIND, bundle.run_id);
    if bundle.status == RunStatus::Incomplete {
        let _ = writeln!(
            out,
            "**Incomplete run**: stopped during `{phase}`{}. Everything below was measured before that.\n",
            bundle.error.as_ref().map(|error| format!(" ({error})")).unwrap_or_default()
        );
    }
    let finished = bundle.finished_at.map_or("not finished".to_string(), |time| format!("finished {time}"));
    let _ = writeln!(
        out,
        "- started {}, {finished}\n- target: {} (ClickHouse {}, {})\n- session settings: {}",
        bundle.started_at,
        bundle.target.kind,
        bundle.target.engine_version,
        bundle.target.endpoint,
        bundle
            .session_settings
            .iter()
            .map(|(name, value)| format!("`{name} = {value}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(volume) = &bundle.target.storage {
        let _ = writeln!(
            out,
            "- storage profile: {} on {} through {}; {}",
            volume.limits, volume.device, volume.cgroup, volume.approximation
        );
        match (&volume.probe, &volume.probe_unknown) {
            (Some(probe), _) => {
                let _ = writeln!(out, "- the volume measured ({}): {}", probe.tool, probe.summary());
                for warning in probe.warnings() {
                    let _ = writeln!(out, "- **warning**: {warning}");
                }
            }
            (None, Some(why)) => {
                let _ = writeln!(out, "- the volume measured: unknown ({why})");
            }
            (None, None) => {}
        }
    }
    let _ = writeln!(out, "- storage baseline (measured on the target's volume): {}", bundle.storage_baseline);
    out.push('\n');
    machine_section(&mut out, bundle);
    out
}

/// The machine the run measured on, with a warning first when it was not quiet.
fn machine_section<Results>(out: &mut String, bundle: &RunBundle<Results>) {
    let Some(machine) = &bundle.machine else { return };
    if !machine.quiet() {
        let _ = writeln!(
            out,
            "> **Warning: the machine was not quiet.** {}; timings may be inflated.\n",
            machine.noise.join("; ")
        );
    }
    let load = |load: &LoadAverage| {
        format!("{} / {} / {}", number(load.one, 2), number(load.five, 2), number(load.fifteen, 2))
    };
    let _ = writeln!(
        out,
        "- machine: {}, {} logical cores, {} memory; load average (1 / 5 / 15 min) {} at the start, {} at the end",
        if machine.cpu_model.is_empty() { "unknown CPU" } else { &machine.cpu_model },
        machine.logical_cores,
        human_bytes(machine.memory_bytes),
        load(&machine.load_average_start),
        machine.load_average_end.as_ref().map_or("unknown".to_string(), load)
    );
    let others = match (machine.others_cpu_cores, &machine.others_cpu_unknown) {
        (Some(cores), _) => format!("{cores:.2} cores on average"),
        (None, Some(reason)) => format!("unknown ({reason})"),
        (None, None) => "unknown (the run did not end)".to_string(),
    };
    let _ = writeln!(out, "- other processes' CPU during the run: {others}\n");
}

/// The flame graphs of a profiled run (`--profile`): per query and trace type, its
/// samples and links to the graph and its folded stacks; or why there are none. Empty for
/// a run that asked for none.
pub fn profiles_section(record: Option<&ProfileRecord>) -> String {
    let Some(record) = record else { return String::new() };
    let mut out = String::from(
        "## Flame graphs

",
    );
    let _ = writeln!(
        out,
        "The query profiler sampled every thread of each measured statement every {} ms (`--profile {}`), \
         into the server's `system.trace_log`. \"CPU\" counts on-CPU samples: where the cores went. \"Real\" \
         counts every thread's samples, waiting included: a frame wide in Real and narrow in CPU is time spent \
         waiting there (a lock, the disk, the network). Each graph opens in a browser (search and zoom built in); \
         the folded stacks are the same samples as text, `outermost;...;innermost count`.\n",
        number(record.period_ns as f64 / 1e6, 0),
        record.choice
    );
    if let Some(why) = &record.unknown {
        let _ = writeln!(out, "No flame graphs: {why}.\n");
        return out;
    }
    let mut table = Table::new(["query", "trace", "statements", "samples", "stacks", "flame graph", "folded stacks"]);
    for profile in &record.queries {
        let link = |path: &Option<String>, text: &str| {
            path.as_ref().map_or("none (no sample)".to_string(), |path| format!("[{text}]({path})"))
        };
        table.row([
            profile.label.clone(),
            profile.trace_type.name().to_string(),
            profile.statements.to_string(),
            profile.samples.to_string(),
            profile.stacks.to_string(),
            link(&profile.svg, "svg"),
            link(&profile.folded, "folded"),
        ]);
    }
    let _ = writeln!(out, "{table}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::{ProfileChoice, QueryProfile, TraceType};

    #[test]
    fn the_flame_graphs_section_links_each_graph_or_says_why_there_is_none() {
        assert_eq!(profiles_section(None), "");
        let profile = |trace_type, svg: Option<&str>| QueryProfile {
            label: "q1 (parts=20000, clients=16)".to_string(),
            trace_type,
            statements: 80,
            samples: if svg.is_some() { 177 } else { 0 },
            stacks: 3,
            folded: svg.map(|svg| svg.replace(".svg", ".folded")),
            svg: svg.map(str::to_string),
            unknown: None,
        };
        let mut record = ProfileRecord {
            choice: ProfileChoice::Both,
            period_ns: 10_000_000,
            queries: vec![
                profile(TraceType::Cpu, None),
                profile(TraceType::Real, Some("profiles/01-q1_parts_20000_clients_16.real.svg")),
            ],
            unknown: None,
        };
        let section = profiles_section(Some(&record));
        assert!(section.contains("every 10 ms (`--profile both`)"), "{section}");
        assert!(section.contains(
            "| q1 (parts=20000, clients=16) | Real | 80 | 177 | 3 | [svg](profiles/01-q1_parts_20000_clients_16.real.svg) \
             | [folded](profiles/01-q1_parts_20000_clients_16.real.folded) |"
        ), "{section}");
        assert!(section.contains("| CPU | 80 | 0 | 3 | none (no sample) | none (no sample) |"), "{section}");
        record.unknown = Some("cannot read the samples of q1 from system.trace_log".to_string());
        record.queries.clear();
        let section = profiles_section(Some(&record));
        assert!(section.contains("No flame graphs: cannot read the samples of q1 from system.trace_log."), "{section}");
        assert!(!section.contains("| query |"), "{section}");
    }
}

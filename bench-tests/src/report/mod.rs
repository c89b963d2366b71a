//! Reports: Markdown and SVG charts made from a results bundle alone, never from a live
//! target. The envelope's part (the run, the target, the machine) is rendered here; each
//! benchmark kind renders its own section (`benchmarks/<kind>/report.rs`), chosen by the
//! bundle's kind. Reports depend on results types only, never on a runner.

pub mod charts;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::benchmarks::logs;
use crate::results::{BenchmarkResults, RunBundle, RunStatus, load_bundle, write_atomically};
use crate::units::{human_bytes, number};

/// Renders `report.md` and the charts into the bundle folder; returns the report path.
/// Each file is written whole, then renamed into place.
pub fn write_report(bundle_dir: &Path) -> Result<PathBuf> {
    let bundle = load_bundle(bundle_dir)?;
    let (section, charts) = match &bundle.benchmark {
        BenchmarkResults::Logs(results) => {
            (logs::report::markdown(results, bundle.storage_baseline.measured()), logs::report::charts(results)?)
        }
    };
    for (name, svg) in &charts {
        write_atomically(&bundle_dir.join(name), svg)?;
    }
    let path = bundle_dir.join("report.md");
    write_atomically(&path, &(header(&bundle) + &section))?;
    Ok(path)
}

/// The envelope's part: title, whether the run is complete, target, settings, storage
/// baseline, machine.
pub fn header(bundle: &RunBundle) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {} benchmark, run {}\n", bundle.benchmark.kind(), bundle.run_id);
    if bundle.status == RunStatus::Incomplete {
        let _ = writeln!(
            out,
            "**Incomplete run**: stopped during `{}`{}. Everything below was measured before that.\n",
            bundle.phase.label(),
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
    let _ = writeln!(out, "- storage baseline (fio on the target's volume): {}", bundle.storage_baseline);
    out.push('\n');
    machine_section(&mut out, bundle);
    out
}

/// The machine the run measured on, with a warning first when it was not quiet.
fn machine_section(out: &mut String, bundle: &RunBundle) {
    let Some(machine) = &bundle.machine else { return };
    if !machine.quiet() {
        let _ = writeln!(
            out,
            "> **Warning: the machine was not quiet.** {}; timings may be inflated.\n",
            machine.noise.join("; ")
        );
    }
    let load = |load: &crate::machine::LoadAverage| {
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

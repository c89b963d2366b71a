//! Whether two sides compare: what they were asked to do differently (refused unless
//! forced), what differs that a comparison is there to show, and what deserves caution.

use std::collections::BTreeSet;
use std::path::Path;

use super::SideOf;
use crate::results::{KindResults, RunStatus};
use crate::settings::Settings;

/// What the two sides were asked to do differently, a line each: the kind's inputs (its
/// dataset), the SQL files' text and the session settings (but the `declared` ones). Two
/// variants of one bundle share all three.
pub(super) fn refusals<Results: KindResults>(
    baseline: &SideOf<'_, Results>,
    candidate: &SideOf<'_, Results>,
    declared: &BTreeSet<String>,
) -> Vec<String> {
    if baseline.shares_bundle_with(candidate) {
        return Vec::new();
    }
    let (a, b) = (baseline.bundle(), candidate.bundle());
    let (inputs_a, inputs_b) = (a.benchmark.compared_inputs(), b.benchmark.compared_inputs());
    let mut lines = named_differences(pairs(&inputs_a), pairs(&inputs_b), "none")
        .into_iter()
        .map(|(name, a, b)| format!("{name}: {a} against {b}"))
        .collect::<Vec<_>>();
    let files: BTreeSet<&String> = a.sql_files.iter().chain(&b.sql_files).collect();
    for file in files {
        match (a.sql_files.contains(file), b.sql_files.contains(file)) {
            (true, false) => lines.push(format!("sql/{file} is in {} only", baseline.label())),
            (false, true) => lines.push(format!("sql/{file} is in {} only", candidate.label())),
            _ => match same_file(&baseline.at.dir, &candidate.at.dir, file) {
                Some(true) => {}
                Some(false) => lines.push(format!("sql/{file} differs")),
                None => {
                    lines.push(format!("sql/{file} is missing from a bundle's folder: its text cannot be compared"))
                }
            },
        }
    }
    let (undeclared_a, undeclared_b) = (without(&a.session_settings, declared), without(&b.session_settings, declared));
    lines.extend(settings_differences("session setting", &undeclared_a, &undeclared_b));
    lines
}

/// `settings` less the names in `left_out`.
fn without(settings: &Settings, left_out: &BTreeSet<String>) -> Settings {
    settings
        .iter()
        .filter(|(name, _)| !left_out.contains(*name))
        .fold(Settings::new(), |kept, (name, value)| kept.with(name, value))
}

/// What differs that a comparison is there to show: engine version, target, machine, a
/// variant's settings, the session settings the sides were `declared` to differ in, and
/// the kind's stated inputs (`KindResults::stated_inputs`).
pub(super) fn differences<Results: KindResults>(
    baseline: &SideOf<'_, Results>,
    candidate: &SideOf<'_, Results>,
    declared: &BTreeSet<String>,
) -> Vec<String> {
    let (a, b) = (baseline.side(&[]), candidate.side(&[]));
    let mut lines = Vec::new();
    if a.engine_version != b.engine_version {
        lines.push(format!("engine version: {} against {}", a.engine_version, b.engine_version));
    }
    if a.target != b.target {
        lines.push(format!("target: {} against {}", a.target, b.target));
    }
    if a.machine != b.machine {
        let machine = |machine: &Option<String>| machine.clone().unwrap_or_else(|| "unknown".to_string());
        lines.push(format!("machine: {} against {}", machine(&a.machine), machine(&b.machine)));
    }
    lines.extend(settings_differences("setting", &a.settings, &b.settings));
    if !declared.is_empty() && !baseline.shares_bundle_with(candidate) {
        let only = |settings: &Settings| {
            settings
                .iter()
                .filter(|(name, _)| declared.contains(*name))
                .fold(Settings::new(), |kept, (name, value)| kept.with(name, value))
        };
        let (a, b) = (baseline.bundle(), candidate.bundle());
        lines.extend(settings_differences("session setting", &only(&a.session_settings), &only(&b.session_settings)));
    }
    if !baseline.shares_bundle_with(candidate) {
        let (a, b) = (baseline.bundle(), candidate.bundle());
        let (stated_a, stated_b) = (a.benchmark.stated_inputs(), b.benchmark.stated_inputs());
        lines.extend(
            named_differences(pairs(&stated_a), pairs(&stated_b), "unknown")
                .into_iter()
                .map(|(name, a, b)| format!("{name}: {a} against {b}")),
        );
    }
    lines
}

/// Why a side's numbers deserve caution, a line each (once for two variants of one bundle).
pub(super) fn warnings<Results: KindResults>(
    baseline: &SideOf<'_, Results>,
    candidate: &SideOf<'_, Results>,
) -> Vec<String> {
    let mut lines = Vec::new();
    let one_bundle = baseline.shares_bundle_with(candidate);
    if !one_bundle && baseline.at.dir != candidate.at.dir {
        lines.push(
            "the sides are separate runs: each ingested its own data in its own process at its own time, so a \
             difference may be the runs' rather than the change's; for a change on one machine, run both in one A/B \
             run (docs/ab-runs.md)"
                .to_string(),
        );
    }
    let sides: &[&SideOf<'_, Results>] = if one_bundle { &[baseline] } else { &[baseline, candidate] };
    for side in sides {
        let bundle = side.bundle();
        let run = side.bundle_name();
        if bundle.status == RunStatus::Incomplete {
            lines.push(format!(
                "run {run} is incomplete: it stopped during `{}`{}; its queries are compared as far as they ran",
                bundle.phase,
                bundle.error.as_ref().map(|error| format!(" ({error})")).unwrap_or_default()
            ));
        }
        match &bundle.machine {
            Some(machine) if !machine.quiet() => {
                lines.push(format!("run {run}'s machine was not quiet: {}", machine.noise.join("; ")))
            }
            Some(_) => {}
            None => lines.push(format!("run {run} records no machine: whether it was quiet is unknown")),
        }
    }
    lines
}

/// Each setting whose value differs, as `what name: a against b` (`default` where a side
/// leaves it to the engine).
fn settings_differences(what: &str, a: &Settings, b: &Settings) -> Vec<String> {
    named_differences(a.iter().collect(), b.iter().collect(), "default")
        .into_iter()
        .map(|(name, a, b)| format!("{what} {name}: {a} against {b}"))
        .collect()
}

/// A kind's inputs as names and values.
fn pairs(inputs: &[(String, String)]) -> Vec<(&str, &str)> {
    inputs.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect()
}

/// The names whose values differ between `a` and `b`, in the order first seen (`a`'s,
/// then those only `b` has), with each side's value or `missing`.
fn named_differences<'a>(
    a: Vec<(&'a str, &'a str)>,
    b: Vec<(&'a str, &'a str)>,
    missing: &'a str,
) -> Vec<(&'a str, &'a str, &'a str)> {
    let value = |side: &[(&'a str, &'a str)], name: &str| {
        side.iter().find(|(other, _)| *other == name).map(|(_, value)| *value)
    };
    let mut names: Vec<&str> = a.iter().map(|(name, _)| *name).collect();
    names.extend(b.iter().map(|(name, _)| *name).filter(|name| value(&a, name).is_none()));
    names
        .into_iter()
        .filter(|name| value(&a, name) != value(&b, name))
        .map(|name| (name, value(&a, name).unwrap_or(missing), value(&b, name).unwrap_or(missing)))
        .collect()
}

/// Whether two bundle folders hold the same text under `sql/relative`; `None` when either
/// lacks the file.
fn same_file(dir: &Path, other: &Path, relative: &str) -> Option<bool> {
    let read = |dir: &Path| std::fs::read(dir.join(crate::results::bundled_sql_path(relative))).ok();
    Some(read(dir)? == read(other)?)
}

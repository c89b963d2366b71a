//! Whether two sides compare: what they were asked to do differently (refused unless
//! forced), what differs that a comparison is there to show, and what deserves caution.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

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
    let bundled = |file: &str| crate::results::bundled_sql_path(file).display().to_string();
    for file in files {
        let (in_a, in_b) = (a.sql_files.contains(file), b.sql_files.contains(file));
        // A file outside fixtures/ (a ClickBench checkout's) is named by where it was: the
        // same checkout in two places is paired by its place in the checkout instead.
        let counterpart = |ours: &[String], theirs: &[String]| {
            counterpart_outside_fixtures(file, ours, theirs).filter(|_| !(in_a && in_b))
        };
        let (file_a, file_b) = match (in_a, in_b) {
            (true, true) => (file.clone(), file.clone()),
            (true, false) => match counterpart(&a.sql_files, &b.sql_files) {
                Some(theirs) => (file.clone(), theirs),
                None => {
                    lines.push(format!("{} is in {} only", bundled(file), baseline.label()));
                    continue;
                }
            },
            _ => {
                if counterpart(&b.sql_files, &a.sql_files).is_none() {
                    lines.push(format!("{} is in {} only", bundled(file), candidate.label()));
                }
                // Paired, it was compared from A's side.
                continue;
            }
        };
        match same_file(&baseline.at.dir, &file_a, &candidate.at.dir, &file_b) {
            Some(true) => {}
            Some(false) => lines.push(format!("{} differs", bundled(&file_a))),
            None => lines
                .push(format!("{} is missing from a bundle's folder: its text cannot be compared", bundled(&file_a))),
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

/// What differs that a comparison is there to show: engine version, target, storage
/// profile, machine, a variant's settings, the session settings the sides were `declared`
/// to differ in, and the kind's stated inputs (`KindResults::stated_inputs`).
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
    // A storage profile's volume (`--storage`), against another or the machine's own disk.
    let (storage_a, storage_b) = (&baseline.bundle().target.storage, &candidate.bundle().target.storage);
    if storage_a.as_ref().map(|volume| &volume.limits) != storage_b.as_ref().map(|volume| &volume.limits) {
        let storage = |volume: &Option<crate::target_info::StorageVolume>| match volume {
            Some(volume) => format!("storage profile {}", volume.limits),
            None => "no storage profile".to_string(),
        };
        lines.push(format!("storage: {} against {}", storage(storage_a), storage(storage_b)));
    }
    // The query profiler (`--profile`) on one side only: its sampling costs a little time,
    // which would read as the change.
    let (profiled_a, profiled_b) = (&baseline.bundle().profiles, &candidate.bundle().profiles);
    if profiled_a.as_ref().map(|record| record.choice) != profiled_b.as_ref().map(|record| record.choice) {
        let profiler = |record: &Option<crate::profiles::ProfileRecord>| match record {
            Some(record) => format!("--profile {}", record.choice),
            None => "not profiled".to_string(),
        };
        lines.push(format!("query profiler: {} against {}", profiler(profiled_a), profiler(profiled_b)));
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
    // One run read twice (its folder named twice, or a copy of it): each of its warnings
    // is said once, after this one.
    let one_run = !one_bundle && same_run(baseline, candidate);
    if one_run {
        lines.push(format!(
            "A and B are the same run ({}): every query is unchanged by definition; compare it with another run, \
             or run the change as an A/B run (docs/ab-runs.md)",
            baseline.bundle_name()
        ));
    } else if !one_bundle && baseline.at.dir != candidate.at.dir {
        lines.push(
            "the sides are separate runs: each ingested its own data in its own process at its own time, so a \
             difference may be the runs' rather than the change's; for a change on one machine, run both in one A/B \
             run (docs/ab-runs.md)"
                .to_string(),
        );
    }
    let sides: &[&SideOf<'_, Results>] = if one_bundle || one_run { &[baseline] } else { &[baseline, candidate] };
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

/// Whether two bundles read are one run: the same folder (however it was named), or a
/// copy of it (the same run id, started at the same instant).
fn same_run<Results: KindResults>(baseline: &SideOf<'_, Results>, candidate: &SideOf<'_, Results>) -> bool {
    let folder =
        |side: &SideOf<'_, Results>| std::fs::canonicalize(&side.at.dir).unwrap_or_else(|_| side.at.dir.clone());
    let (a, b) = (baseline.bundle(), candidate.bundle());
    folder(baseline) == folder(candidate) || (a.run_id == b.run_id && a.started_at == b.started_at)
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
fn same_file(dir: &Path, file: &str, other_dir: &Path, other_file: &str) -> Option<bool> {
    let read = |dir: &Path, file: &str| std::fs::read(dir.join(crate::results::bundled_sql_path(file))).ok();
    Some(read(dir, file)? == read(other_dir, other_file)?)
}

/// For an absolute `file` of one bundle, the file of the other bundle that ends in the
/// same last two components (`clickhouse/queries.sql`), where exactly one does on each
/// side and the other bundle does not hold `file` itself.
fn counterpart_outside_fixtures(file: &str, ours: &[String], theirs: &[String]) -> Option<String> {
    let tail = |path: &str| -> Option<PathBuf> {
        let path = Path::new(path);
        if !path.is_absolute() {
            return None;
        }
        let parts: Vec<_> = path.components().rev().take(2).collect();
        (parts.len() == 2).then(|| parts.iter().rev().collect())
    };
    let wanted = tail(file)?;
    let with_tail = |files: &[String]| -> Vec<String> {
        files.iter().filter(|other| tail(other).as_ref() == Some(&wanted)).cloned().collect()
    };
    match (with_tail(ours).as_slice(), with_tail(theirs).as_slice()) {
        ([_], [other]) if !ours.contains(other) => Some(other.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkout_in_another_place_is_paired_by_its_place_in_the_checkout() {
        let files = |paths: &[&str]| paths.iter().map(|path| path.to_string()).collect::<Vec<_>>();
        let a = files(&["/home/a/ClickBench/clickhouse/queries.sql", "/home/a/ClickBench/clickhouse/create.sql"]);
        let b = files(&["/srv/cb/clickhouse/queries.sql", "/srv/cb/clickhouse/create.sql", "clickbench/load_file.sql"]);
        assert_eq!(counterpart_outside_fixtures(&a[0], &a, &b).as_deref(), Some("/srv/cb/clickhouse/queries.sql"));
        assert_eq!(
            counterpart_outside_fixtures(&b[1], &b, &a).as_deref(),
            Some("/home/a/ClickBench/clickhouse/create.sql")
        );
        // A fixture is named by its path under fixtures/ on both sides: never paired.
        assert_eq!(counterpart_outside_fixtures(&b[2], &b, &a), None);
        // Two candidates on a side: which one is meant is not known.
        let two = files(&["/x/clickhouse/queries.sql", "/y/clickhouse/queries.sql"]);
        assert_eq!(counterpart_outside_fixtures(&a[0], &a, &two), None);
    }
}

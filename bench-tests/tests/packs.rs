//! Every scenario pack under `fixtures/` (a folder with a `claims.toml`) as tests, one per
//! (pack, query, design, scale): `tenants::one_tenant_one_hour::by_day::rows_1000000`.
//! A broken design's case is named `<pack>::<query>::broken::<design>::rows_<N>`, and
//! each pack has `<pack>::generator_is_deterministic`. A pack that fails its checks is
//! one failing test, `<pack>::claims_file`, with the one line that says why.
//!
//! A case passes when every claim that applies holds (on a broken design: when the
//! named claim is violated), and its structure matches
//! `snapshots/clickhouse-<version>/<pack>_<query>_<design>_<rows>.snap`.
//!
//! A case that fails says why in one line each, told apart by how it starts:
//! `claim failed: <claims.toml:line>: ...` (no snapshot is written for it),
//! `new snapshot: ...` (the case holds, and its first snapshot waits for `cargo insta
//! review`), `changed snapshot: ...` (with the lines that changed). No panic and no
//! backtrace: insta's own output is turned off (`INSTA_OUTPUT=none` unless set) and this
//! harness says it. Run as one process (`cargo test -p chbench --test packs`), the summary ends with
//! a line counting each kind apart.
//!
//! `CHBENCH_PACKS_DIR=DIR` runs the packs under DIR instead of `fixtures/`, with their
//! snapshots under `DIR/snapshots/` (how a test tries a pack without touching the tree).
//!
//! The packs are found when the binary starts, so this file uses libtest-mimic rather
//! than the built-in harness, which needs every test written down at compile time.

// Shared with the `it` binary, whose module it is (snapshots name this one file).
#[path = "it/common.rs"]
mod common;

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use chbench::files::shown;
use chbench::packs::{CLAIMS_FILE, Case, PACKS_DIR_ENV, Pack, Structure, discover, discover_in};
use chbench::target_info::TargetKind;
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    if std::env::var_os("INSTA_OUTPUT").is_none() {
        // SAFETY: no other thread runs yet (the trials start below), so nothing reads
        // the environment while it changes.
        unsafe { std::env::set_var("INSTA_OUTPUT", "none") };
    }
    let mut arguments = Arguments::from_args();
    // The embedded engine opens one dataset at a time per process: under plain `cargo
    // test` the cases run one after the other, whatever --test-threads says (nextest
    // gives each its own process anyway).
    arguments.test_threads = Some(1);
    let trials = trials().unwrap_or_else(|error| {
        let message = format!("{error:#}");
        vec![Trial::test("packs::discover", move || Err(message.into()))]
    });
    let conclusion = libtest_mimic::run(&arguments, trials);
    if let Some(line) = tally().summary() {
        println!("{line}");
    }
    conclusion.exit();
}

/// How the failed cases of this process failed, counted apart for the summary.
#[derive(Debug, Default)]
struct Tally {
    new_snapshots: usize,
    changed_snapshots: usize,
    failed_claims: usize,
}

static TALLY: Mutex<Tally> = Mutex::new(Tally { new_snapshots: 0, changed_snapshots: 0, failed_claims: 0 });

fn tally() -> std::sync::MutexGuard<'static, Tally> {
    // A poisoned count is still a count.
    TALLY.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Tally {
    /// `failed cases: 2 new snapshots to review (cargo insta review), 1 whose claims
    /// failed`, when any case failed for one of these reasons.
    fn summary(&self) -> Option<String> {
        let parts: Vec<String> = [
            (self.new_snapshots, "new snapshot", "to review (cargo insta review)"),
            (self.changed_snapshots, "changed snapshot", "to review (cargo insta review)"),
            (self.failed_claims, "case", "whose claims failed"),
        ]
        .into_iter()
        .filter(|(count, _, _)| *count > 0)
        .map(|(count, what, then)| format!("{count} {what}{} {then}", if count == 1 { "" } else { "s" }))
        .collect();
        (!parts.is_empty()).then(|| format!("failed cases: {}", parts.join(", ")))
    }
}

fn trials() -> anyhow::Result<Vec<Trial>> {
    let mut trials = Vec::new();
    let packs = match std::env::var_os(PACKS_DIR_ENV) {
        Some(folder) => discover_in(Path::new(&folder))?,
        None => discover()?,
    };
    for (name, pack) in packs {
        let pack = match pack {
            Ok(pack) => Arc::new(pack),
            Err(error) => {
                let message = format!("{error:#}");
                trials.push(Trial::test(format!("{name}::claims_file"), move || Err(message.into())));
                continue;
            }
        };
        for case in pack.cases() {
            let pack = Arc::clone(&pack);
            trials.push(Trial::test(case.test_name(&pack.name), move || run_case(&pack, &case)));
        }
        trials.push(Trial::test(format!("{name}::generator_is_deterministic"), move || {
            let kind = TargetKind::from_env().map_err(failed)?;
            for line in pack.check_determinism(kind).map_err(failed)? {
                eprintln!("{line}");
            }
            Ok(())
        }));
    }
    Ok(trials)
}

fn run_case(pack: &Pack, case: &Case) -> Result<(), Failed> {
    let kind = TargetKind::from_env().map_err(failed)?;
    // A query that must fail has only its error to check, and nothing to snapshot.
    if pack.query(&case.query).map_err(failed)?.expected_error_on(&case.design).is_some() {
        let outcome = pack.run_error_case(kind, case, &shown(&pack.folder.join(CLAIMS_FILE))).map_err(failed)?;
        return outcome.map(|line| eprintln!("{line}")).map_err(Failed::from);
    }
    let outcome = pack.run_case(kind, case).map_err(failed)?;
    let verdict = outcome.verdict(case, &shown(&pack.folder.join(CLAIMS_FILE)));
    match &verdict {
        Ok(lines) => lines.iter().for_each(|line| eprintln!("{line}")),
        Err(failures) => {
            // The failed claims alone, and no snapshot: a new snapshot's failure would
            // hide them, and one accepted now would record a case that does not hold.
            tally().failed_claims += 1;
            let lines: Vec<String> = failures.lines().map(|line| format!("claim failed: {line}")).collect();
            return Err(lines.join("\n").into());
        }
    }
    // A broken design's numbers are not evidence worth keeping: only its violation is.
    if case.must_violate.is_none() {
        let statement = pack.statement(&case.query, case.rows).map_err(failed)?;
        check_snapshot(&case.snapshot_name(&pack.name), &statement, &outcome.observation.structure())?;
    }
    Ok(())
}

/// The case's structure against its snapshot; a new or changed one is one line saying
/// so and what to do (a changed one with the lines that changed), not insta's panic.
fn check_snapshot(name: &str, statement: &str, structure: &Structure) -> Result<(), Failed> {
    let stored_path = common::snapshot_file(name, &structure.engine_version);
    let pending = stored_path.with_extension("snap.new");
    let stored = common::stored_facts(&stored_path);
    let pending_before = modified(&pending);
    let asserted = quietly(|| common::assert_structure(name, &structure.engine_version, statement, structure));
    let Err(panic) = asserted else { return Ok(()) };
    let message = panic_message(&*panic);
    if !message.starts_with("snapshot assertion for") {
        // Not a mismatch (a snapshot in another version's folder, say): its own words.
        return Err(message.into());
    }
    let written = modified(&pending).is_some_and(|after| Some(after) != pending_before);
    let review = if written {
        format!(
            "written as {}: review it with cargo insta review (cargo insta accept where there is no terminal)",
            shown(&pending)
        )
    } else {
        "none written (INSTA_UPDATE=no, or CI): run the case locally, then cargo insta review".to_string()
    };
    let Some(stored) = stored else {
        tally().new_snapshots += 1;
        return Err(format!("new snapshot: {name}: {review}").into());
    };
    tally().changed_snapshots += 1;
    let measured = serde_json::to_value(structure).map_err(|error| Failed::from(error.to_string()))?;
    let changes = changed_lines(&stored, &measured);
    Err(format!("changed snapshot: {name} differs from {}: {review}\n{changes}", shown(&stored_path)).into())
}

/// The lines of two snapshots' facts that differ, `-` stored and `+` measured.
fn changed_lines(stored: &serde_json::Value, measured: &serde_json::Value) -> String {
    let pretty = |value: &serde_json::Value| serde_json::to_string_pretty(value).unwrap_or_default();
    let (stored, measured) = (pretty(stored), pretty(measured));
    let diff = similar::TextDiff::from_lines(&stored, &measured);
    diff.unified_diff().context_radius(2).to_string().trim_end().to_string()
}

/// Runs `assert` with the panic hook silenced, so that a snapshot mismatch is this
/// harness's one line rather than a panic message and a backtrace.
fn quietly(assert: impl FnOnce()) -> Result<(), Box<dyn Any + Send>> {
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let outcome = panic::catch_unwind(AssertUnwindSafe(assert));
    panic::set_hook(hook);
    outcome
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|message| message.to_string()))
        .unwrap_or_else(|| "the snapshot check panicked".to_string())
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|metadata| metadata.modified()).ok()
}

fn failed(error: anyhow::Error) -> Failed {
    format!("{error:#}").into()
}

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
//! The packs are found when the binary starts, so this file uses libtest-mimic rather
//! than the built-in harness, which needs every test written down at compile time.

// Shared with the `it` binary, whose module it is (snapshots name this one file).
#[path = "it/common.rs"]
mod common;

use std::sync::Arc;

use chbench::files::shown;
use chbench::packs::{CLAIMS_FILE, Case, Pack, discover};
use chbench::target_info::TargetKind;
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let mut arguments = Arguments::from_args();
    // The embedded engine opens one dataset at a time per process: under plain `cargo
    // test` the cases run one after the other, whatever --test-threads says (nextest
    // gives each its own process anyway).
    arguments.test_threads = Some(1);
    let trials = trials().unwrap_or_else(|error| {
        let message = format!("{error:#}");
        vec![Trial::test("packs::discover", move || Err(message.into()))]
    });
    libtest_mimic::run(&arguments, trials).exit();
}

fn trials() -> anyhow::Result<Vec<Trial>> {
    let mut trials = Vec::new();
    for (name, pack) in discover()? {
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
    if pack.query(&case.query).map_err(failed)?.expected_error.is_some() {
        let outcome = pack.run_error_case(kind, case, &shown(&pack.folder.join(CLAIMS_FILE))).map_err(failed)?;
        return outcome.map(|line| eprintln!("{line}")).map_err(Failed::from);
    }
    let outcome = pack.run_case(kind, case).map_err(failed)?;
    let verdict = outcome.verdict(case, &shown(&pack.folder.join(CLAIMS_FILE)));
    let structure = outcome.observation.structure();
    match &verdict {
        Ok(lines) => lines.iter().for_each(|line| eprintln!("{line}")),
        Err(failures) => {
            // The failed claims first, and no snapshot: a new snapshot's failure would
            // hide them, and one accepted now would record a case that does not hold.
            let measured = serde_json::to_string_pretty(&structure).unwrap_or_default();
            eprintln!("measured:\n{measured}");
            return Err(failures.clone().into());
        }
    }
    // A broken design's numbers are not evidence worth keeping: only its violation is.
    if case.must_violate.is_none() {
        let statement = pack.statement(&case.query, case.rows).map_err(failed)?;
        common::assert_structure(&case.snapshot_name(&pack.name), &structure.engine_version, &statement, &structure);
    }
    Ok(())
}

fn failed(error: anyhow::Error) -> Failed {
    format!("{error:#}").into()
}

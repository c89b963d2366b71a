//! `cargo xtask measure`, in two forms told apart by the first argument (see
//! [`names_files`]):
//!
//! - `measure FILE.sql...`: run SQL files on the chosen target; in each file the
//!   statements before the last are set-up, the last one is measured and its statistics
//!   record printed as JSON (`{"file", "answer", "stats"}`, one document per file). Files
//!   take no parameters: a `{name}` left in one is an error naming its line, before the
//!   engine starts.
//! - `measure PACK QUERY [--design D] [--rows N]`: build or reuse a scenario pack's
//!   dataset and measure one of its queries there; one JSON document with the statistics
//!   record and the EXPLAIN index stages. The pack, the query, the design and the row
//!   count are all checked before the engine starts.

use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use chbench::files::fixtures_root;
use chbench::fixtures::{Fixture, Params};
use chbench::measure::measure;
use chbench::packs::{AlsoMeasure, CLAIMS_FILE, Pack, known_packs};
use chbench::settings::Settings;
use chbench::stats::StatementTag;
use chbench::units::parse_count;

use crate::flags::Measure;

impl Measure {
    pub fn run(self) -> Result<()> {
        if names_files(&self.args) { self.run_files() } else { self.run_pack() }
    }

    fn run_files(self) -> Result<()> {
        // The files set everything up themselves: a pack flag here means the user thought
        // of the other form, and silently ignoring it would measure something else.
        let pack_flags: Vec<&str> = [("--design", self.design.is_some()), ("--rows", self.rows.is_some())]
            .into_iter()
            .filter_map(|(flag, given)| given.then_some(flag))
            .collect();
        if !pack_flags.is_empty() {
            bail!(
                "{}: for a pack's query only (cargo xtask measure PACK QUERY), and {} is an SQL file",
                pack_flags.join(" and "),
                self.args[0].display()
            );
        }
        // Every file is read and checked (placeholders, empty files) before the engine starts.
        let mut files = Vec::new();
        for file in &self.args {
            // No parameters here: a `{name}` left in the file is an error at its line.
            let fixture = Fixture::read(file)?;
            let statements = fixture.render(&Params::new())?;
            files.push((file, fixture.name(), statements));
        }
        let mut target = crate::eks::open_target(self.target.target)?;
        for (file, name, mut statements) in files {
            let Some(last) = statements.pop() else { continue };
            for statement in &statements {
                target.execute(statement).with_context(|| statement.location())?;
            }
            let tag = StatementTag::new("measure", "cli", &name, 1);
            let measured = measure(&mut target, &last, &tag, &Settings::new())?;
            // One JSON document per file on stdout, so that it pipes into jq and the like.
            let record = serde_json::json!({
                "file": file.display().to_string(),
                "answer": measured.body,
                "stats": measured.stats.without_raw(),
            });
            println!("{}", serde_json::to_string_pretty(&record)?);
        }
        Ok(())
    }

    fn run_pack(self) -> Result<()> {
        let PackCase { pack, query, design, rows } =
            PackCase::check(&self.args, self.design.as_deref(), self.rows.as_deref())?;
        // No skip-index-free second run: that is for a claim that compares the two, and
        // here nothing is claimed.
        let observation = crate::eks::or_rerun_with_the_eks_feature(
            self.target.target,
            pack.observe(self.target.target, &query, &design, rows, AlsoMeasure::Nothing),
        )?;
        // One JSON document on stdout, as the file form prints, so that it pipes into jq.
        let record = serde_json::json!({
            "pack": pack.name,
            "query": query,
            "design": design,
            "rows": rows,
            "answer": observation.answer,
            "table": observation.table,
            "active_parts": observation.parts.as_ref().map(|parts| parts.active_parts),
            // Already without its raw source (`observe` drops it), as the file form prints.
            "stats": observation.stats,
            "index_stages": observation.pruning,
        });
        println!("{}", serde_json::to_string_pretty(&record)?);
        Ok(())
    }
}

/// The file form when the first argument is a file, or looks like one (a mistyped path
/// should say "cannot read", not "no pack"); else the pack form.
fn names_files(args: &[PathBuf]) -> bool {
    args.first().is_some_and(|first| {
        first.is_file() || first.extension().is_some_and(|extension| extension.eq_ignore_ascii_case("sql"))
    })
}

/// A pack command line, checked: everything the engine will be asked for exists.
#[derive(Debug)]
struct PackCase {
    pack: Pack,
    query: String,
    design: String,
    rows: u64,
}

impl PackCase {
    /// Loads the pack (which starts no engine) and resolves the query, the design and the
    /// row count, with their defaults. Each mistake is one line that names what exists.
    fn check(args: &[PathBuf], design: Option<&str>, rows: Option<&str>) -> Result<PackCase> {
        let pack_arg = args.first().context("measure needs SQL files, or a pack and one of its queries")?;
        // Checked first: a third argument means the user had another form in mind, and
        // nothing about the pack would explain that.
        if args.len() > 2 {
            bail!(
                "measure takes a pack and one query (PACK QUERY), or SQL files, and got {} arguments; {} was read \
                 as a pack since no such file exists and it does not end in .sql",
                args.len(),
                pack_arg.display()
            );
        }
        let pack = load_pack(pack_arg)?;
        let Some(query) = args.get(1) else {
            bail!(
                "measure {} needs a query: cargo xtask measure {} QUERY (its queries: {})",
                pack.name,
                pack.name,
                pack.queries.iter().map(|query| query.name.as_str()).collect::<Vec<_>>().join(", ")
            );
        };
        // A query name is a file stem of lowercase letters, digits and `_`: anything that
        // is not UTF-8 is simply no query of the pack.
        let query = pack.query(&query.to_string_lossy())?;
        let design = match design {
            // Any design of the pack, broken ones included: measuring what a broken design
            // does is how one sees why it is broken.
            Some(name) => pack.design(name)?.name.clone(),
            None => query.designs.first().cloned().with_context(|| {
                format!("query {} of pack {} lists no design; name one with --design", query.name, pack.name)
            })?,
        };
        // A broken design's test runs at the largest scale, a design's at each from the
        // smallest: the default is where a test ran.
        let broken = pack.broken.iter().any(|broken| broken.name == design);
        let rows = match rows {
            Some(text) => parse_count(text).map_err(|reason| anyhow!("--rows {text}: {reason}"))?,
            // The claims file checks that every query has at least one scale.
            None => if broken { query.scales.last() } else { query.scales.first() }.copied().with_context(|| {
                format!("query {} of pack {} lists no scale; give one with --rows", query.name, pack.name)
            })?,
        };
        Ok(PackCase { query: query.name.clone(), design, rows, pack })
    }
}

/// The pack a command-line name means: only a folder name under `fixtures/` (a path
/// would let the name reach any folder with a claims.toml, and the dataset would still be
/// named after its last component).
fn load_pack(name: &Path) -> Result<Pack> {
    let plain = matches!(name.components().collect::<Vec<_>>()[..], [Component::Normal(_)]);
    match name.to_str() {
        Some(text) if plain && fixtures_root().join(text).join(CLAIMS_FILE).is_file() => Pack::named(text),
        _ => {
            // The name was read as a pack because it is no file: say how a file is told
            // apart too, for whoever meant one.
            bail!(
                "{} is neither a pack nor an SQL file (packs here: {}; an SQL file must exist or end in .sql)",
                name.display(),
                known_packs()?
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(args: &[&str]) -> Vec<PathBuf> {
        args.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn the_first_argument_decides_the_form() {
        // Files that do not exist still take the file form when they look like SQL.
        assert!(names_files(&paths(&["no/such/file.sql"])));
        assert!(names_files(&paths(&["SETUP.SQL", "tenants"])));
        let folder = tempfile::tempdir().unwrap();
        let without_extension = folder.path().join("query");
        std::fs::write(&without_extension, "SELECT 1").unwrap();
        assert!(names_files(&[without_extension]));
        assert!(!names_files(&paths(&["tenants", "one_tenant_one_hour"])));
        // A folder is not a file, even the pack's own.
        assert!(!names_files(&[fixtures_root().join("tenants")]));
    }

    #[test]
    fn defaults_are_the_first_design_and_the_smallest_scale() {
        let case = PackCase::check(&paths(&["primary_key", "one_device_one_hour"]), None, None).unwrap();
        assert_eq!((case.pack.name.as_str(), case.query.as_str()), ("primary_key", "one_device_one_hour"));
        assert_eq!((case.design.as_str(), case.rows), ("readings", 250_000));
        let case =
            PackCase::check(&paths(&["tenants", "one_tenant_one_hour"]), Some("time_first"), Some("2M")).unwrap();
        assert_eq!((case.design.as_str(), case.rows), ("time_first", 2_000_000));
        // A broken design: at the largest scale, where its test runs.
        let case = PackCase::check(&paths(&["tenants", "one_tenant_one_hour"]), Some("time_first"), None).unwrap();
        assert_eq!(case.rows, 4_000_000);
    }

    #[test]
    fn a_path_is_not_a_pack_name() {
        for name in ["../fixtures/tenants", "fixtures/tenants", ".", ".."] {
            let error = PackCase::check(&paths(&[name, "one_tenant_one_hour"]), None, None).unwrap_err();
            let line = format!("{error:#}");
            assert!(line.starts_with(&format!("{name} is neither a pack nor an SQL file")), "{line}");
            assert!(line.contains("primary_key") && line.contains("tenants"), "{line}");
        }
    }
}

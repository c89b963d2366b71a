//! The registry of benchmark kinds: every kind, by name, and what chooses one by name
//! (`cargo xtask bench <kind>`, a bundle's report, the comparison of two bundles), and every
//! kind by type for the tests each is held to ([`visit_kinds`]). A new kind is its folder
//! under `benchmarks/` and one line in `registry!`.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{AnyBenchmark, Benchmark, RenderedReport, clickbench, logs, parts, throughput, writes};
use crate::compare::{self, BundleAt, CompareOptions, Compared};
use crate::results::{self, KindResults, bundle_kind, load_bundle};

/// The kinds, each once: [`KINDS`] by name, and [`visit_kinds`] by type.
macro_rules! registry {
    ($($benchmark:ty),* $(,)?) => {
        /// The registry of benchmark kinds: `cargo xtask bench <kind>`, a bundle's report
        /// and a comparison find a kind here by its name. The first is the one `bench` runs
        /// when no kind is named.
        pub const KINDS: &[Kind] = &[$(Kind::of::<$benchmark>()),*];

        /// Calls `visitor` with each kind's type, in [`KINDS`]' order: what must hold of
        /// every kind (its examples documented and read back) is checked over this.
        pub fn visit_kinds(visitor: &mut impl KindVisitor) {
            $(visitor.visit::<$benchmark>();)*
        }
    };
}

// A new kind is one line here.
registry!(
    logs::LogsBenchmark,
    parts::PartsBenchmark,
    clickbench::ClickBenchBenchmark,
    throughput::ThroughputBenchmark,
    writes::WritesBenchmark,
);

/// Something done once per kind, with the kind's type ([`visit_kinds`]).
pub trait KindVisitor {
    fn visit<B: Benchmark>(&mut self);
}

/// A kind as the registry holds it: its name, and what the command line, the report and
/// the comparison call, each made from the kind's [`Benchmark`] implementation.
pub struct Kind {
    pub name: &'static str,
    /// One line for `cargo xtask bench --help`.
    pub about: &'static str,
    /// The kind's flags, added to a command (`bench <name>`, or `bench` with no kind).
    pub flags: fn(clap::Command) -> clap::Command,
    /// The benchmark parsed flags ask for.
    pub benchmark: fn(&clap::ArgMatches) -> Result<Box<dyn AnyBenchmark>>,
    /// Renders a bundle folder's report, to be written.
    pub render_report: fn(&Path) -> Result<RenderedReport>,
    /// Compares one A/B bundle folder's variants, or two bundle folders, of the kind.
    pub compare: fn(&[PathBuf], &CompareOptions) -> Result<Compared>,
}

impl Kind {
    pub const fn of<B: Benchmark>() -> Kind {
        Kind {
            name: B::Results::KIND,
            about: B::ABOUT,
            flags: <B::Flags as clap::Args>::augment_args,
            benchmark: benchmark_of::<B>,
            render_report: super::render_report_of::<B>,
            compare: compare_of::<B>,
        }
    }
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kind").field("name", &self.name).finish_non_exhaustive()
    }
}

/// The kind named `name`, if there is one.
pub fn kind_named(name: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|kind| kind.name == name)
}

/// The kind `cargo xtask bench` runs when none is named.
pub fn default_kind() -> &'static Kind {
    &KINDS[0]
}

/// The kind of the bundle in `dir`, or one line saying it is of no kind this build knows.
fn kind_of_bundle(dir: &Path) -> Result<&'static Kind> {
    let kind = bundle_kind(dir)?;
    kind_named(&kind).with_context(|| {
        format!(
            "{} holds a benchmark of kind {kind:?}, which this chbench does not know (it knows {}); render it \
             with the chbench that wrote it",
            dir.join(results::RESULTS_FILE).display(),
            KINDS.iter().map(|kind| kind.name).collect::<Vec<_>>().join(", ")
        )
    })
}

/// Renders `report.md` and the charts into a bundle folder of any kind; returns the
/// report's path. Each file is written whole, then renamed into place.
pub fn write_report(bundle_dir: &Path) -> Result<PathBuf> {
    render_report(bundle_dir)?.write()
}

/// [`write_report`] without the writing: what `cargo xtask report` renders where a stop
/// request may abandon it.
pub fn render_report(bundle_dir: &Path) -> Result<RenderedReport> {
    (kind_of_bundle(bundle_dir)?.render_report)(bundle_dir)
}

/// The comparison of two bundle folders of one kind (baseline first), or of one A/B
/// bundle folder's variants.
pub fn compare(dirs: &[PathBuf], options: &CompareOptions) -> Result<Compared> {
    let mut kinds = dirs.iter().map(|dir| Ok((dir, kind_of_bundle(dir)?))).collect::<Result<Vec<_>>>()?.into_iter();
    let Some((first, kind)) = kinds.next() else { bail!("no bundle to compare") };
    if let Some((other_dir, other)) = kinds.find(|(_, other)| other.name != kind.name) {
        bail!(
            "{} is a {} benchmark and {} a {} one: only bundles of one kind compare",
            first.display(),
            kind.name,
            other_dir.display(),
            other.name
        );
    }
    (kind.compare)(dirs, options)
}

fn benchmark_of<B: Benchmark>(matches: &clap::ArgMatches) -> Result<Box<dyn AnyBenchmark>> {
    let flags = <B::Flags as clap::FromArgMatches>::from_arg_matches(matches)
        .with_context(|| format!("cannot read the {} benchmark's flags", B::Results::KIND))?;
    Ok(Box::new(B::from_flags(flags)))
}

fn compare_of<B: Benchmark>(dirs: &[PathBuf], options: &CompareOptions) -> Result<Compared> {
    // Read side by side: two large bundles take half the time on two cores.
    let bundles = std::thread::scope(|scope| {
        let readers: Vec<_> = dirs
            .iter()
            .map(|dir| {
                // A comparison reads no sample's raw record: skipped, not built.
                scope.spawn(move || {
                    let bundle = crate::stats::without_raw_records(|| load_bundle::<B::Results>(dir))?;
                    Ok(BundleAt { dir: dir.clone(), bundle })
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|reader| reader.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect::<Result<Vec<_>>>()
    })?;
    let comparison = compare::compare_bundles(&bundles, options)?;
    let sections = B::comparison_sections(&bundles, &comparison, options)?;
    Ok(Compared::new(comparison, sections))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::{fixtures_root, shown};

    /// Every kind, with its flags' defaults, hands every SQL file it runs to the guard (the
    /// engine's parser checks its statements). A kind that runs a file it does not hand
    /// over fails here.
    #[test]
    fn every_kind_guards_every_sql_file_it_runs() {
        for kind in KINDS {
            let matches = (kind.flags)(clap::Command::new("bench")).try_get_matches_from(["bench"]).unwrap();
            let benchmark = (kind.benchmark)(&matches).unwrap();
            let sql = benchmark.guarded_sql().unwrap();
            let files = benchmark.sql_files();
            assert!(!files.is_empty(), "kind {} runs no SQL file", kind.name);
            // A kind may measure no SELECT (writes measures INSERTs, guarded as a dataset's).
            assert!(!sql.dataset.is_empty() || !sql.queries.is_empty(), "kind {} guards no statement", kind.name);
            let guarded: Vec<&str> =
                sql.dataset.iter().chain(&sql.queries).map(|statement| statement.file.as_str()).collect();
            for file in files {
                let shown_file = shown(&fixtures_root().join(&file));
                assert!(
                    guarded.contains(&shown_file.as_str()),
                    "kind {}: {shown_file} runs unguarded: put its statements in guarded_sql",
                    kind.name
                );
            }
        }
    }
}

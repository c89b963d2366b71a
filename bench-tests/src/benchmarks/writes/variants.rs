//! The configurations a writes run's levels run: the run's own (`--durability`), or each
//! A/B variant's (`--variant NAME:durability=D,SETTING=VALUE`), its durability put in force
//! on the table before its turn and its other keys sent as the INSERT's settings.

use anyhow::{Context, Result, bail};

use super::{Durability, WritesBenchmark, WritesRun, WritesTable};
use crate::fixtures::Fixture;
use crate::settings::Settings;

/// The key of a variant that names a durability instead of a setting.
pub const DURABILITY_KEY: &str = "durability";

/// One configuration the levels run: the run's own, or an A/B variant's.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Turn {
    pub(super) variant: Option<String>,
    pub(super) durability: Durability,
    /// The INSERT's settings.
    pub(super) settings: Settings,
}

impl Turn {
    /// `variant durable: ` before what a message says of it, nothing for a run without.
    pub(super) fn prefix(&self) -> String {
        self.variant.as_ref().map_or(String::new(), |name| format!("variant {name}: "))
    }
}

impl WritesBenchmark {
    /// The configurations the levels run: the run's own, or each A/B variant's (its
    /// `durability=` key, or `--durability`; its other keys the INSERT's settings). A
    /// variant that names an engine version, or a durability there is not, is refused.
    pub(super) fn turns(&self) -> Result<Vec<Turn>> {
        let Some(ab) = &self.ab else {
            return Ok(vec![Turn { variant: None, durability: self.durability, settings: self.run_settings() }]);
        };
        ab.variants
            .iter()
            .map(|variant| {
                if variant.engine_version.is_some() {
                    bail!(
                        "--variant {}: a writes run's variants write to one table of one engine, so they cannot \
                         name an engine version; compare two runs instead (`cargo xtask compare A B`)",
                        variant.flag()
                    );
                }
                let mut turn = Turn {
                    variant: Some(variant.name.clone()),
                    durability: self.durability,
                    settings: self.run_settings(),
                };
                for (name, value) in variant.settings.iter() {
                    if name != DURABILITY_KEY {
                        turn.settings = turn.settings.with(name, value);
                        continue;
                    }
                    turn.durability = <Durability as clap::ValueEnum>::from_str(value, false).map_err(|_| {
                        anyhow::anyhow!(
                            "--variant {}: {DURABILITY_KEY}={value} is not a durability; write {DURABILITY_KEY}=none \
                             or {DURABILITY_KEY}=fsync",
                            variant.flag()
                        )
                    })?;
                }
                Ok(turn)
            })
            .collect()
    }

    /// Puts `durability` in force on the table.
    pub(super) fn apply_durability(run: &mut WritesRun<'_>, table: &WritesTable, durability: Durability) -> Result<()> {
        for statement in Fixture::load(durability.fixture())?.render(&table.params())? {
            run.target.execute(&statement).with_context(|| statement.location())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::flags::benchmark_of;
    use super::*;

    use crate::benchmarks::Benchmark;

    /// A run of these variants, one row a batch.
    fn with_variants(variants: &[&str]) -> WritesBenchmark {
        let mut args = vec!["--batch-rows", "1"];
        args.extend(variants.iter().flat_map(|variant| ["--variant", variant]));
        benchmark_of(&args)
    }

    #[test]
    fn a_variant_names_its_durability_and_the_inserts_settings() {
        let benchmark = with_variants(&["durable:durability=fsync,max_insert_threads=2", "relaxed:"]);
        let turns = benchmark.turns().unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!((turns[0].variant.as_deref(), turns[0].durability), (Some("durable"), Durability::Fsync));
        // The durability is the table's, not a setting sent with the INSERT.
        assert_eq!(turns[0].settings, Settings::new().with("max_insert_threads", "2"));
        // Without the key: --durability, no setting.
        assert_eq!((turns[1].durability, turns[1].settings.is_empty()), (Durability::None, true));
        // Both durabilities' files, whichever runs, so both are guarded and copied.
        assert_eq!(
            benchmark.sql_files(),
            ["logs/schema.sql", "writes/durability_none.sql", "writes/durability_fsync.sql", "writes/insert.sql"]
        );
        assert_eq!(benchmark.run_label(), "writes-1-ab");
        let error = |variants: &[&str]| with_variants(variants).check().unwrap_err().to_string();
        assert_eq!(
            error(&["a:durability=sometimes", "b:"]),
            "--variant a:durability=sometimes: durability=sometimes is not a durability; write durability=none or \
             durability=fsync"
        );
        assert!(error(&["a:engine_version=26.5.3", "b:"]).contains("cannot name an engine version"));
        assert!(error(&["a:durability=fsync"]).contains("is the only variant"));
    }
}

//! A/B runs: the variants one run measures in turns on one prepared dataset
//! (`cargo xtask bench logs --variant NAME:SETTING=VALUE,...`), and how the turns were
//! ordered. A bundle of such a run holds every variant's query runs, each tagged with its
//! variant's name ([`crate::query_runs::QueryRuns::ab_variant`]), and each sample with its
//! place in its round ([`crate::query_runs::Sample::round_position`]), so that a
//! comparison of the variants needs this bundle alone.
//!
//! This module owns the `--variant` syntax ([`AbVariant::parse`]), the checks of a list of
//! variants that need no engine ([`check_variants`]), and the order of each round
//! ([`AbRun::round_orders`]): a shuffle by ChaCha8 from the recorded seed, so that the same
//! seed gives the same order (docs/ab-runs.md).

use std::str::FromStr;

use anyhow::{Context, Result, bail};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::settings::{Settings, is_setting_name, refused_setting};

/// The key of a variant that names an engine version instead of a setting.
pub const ENGINE_VERSION_KEY: &str = "engine_version";
/// How `--variant` is written, for messages.
pub const VARIANT_SYNTAX: &str = "NAME:SETTING=VALUE[,SETTING=VALUE...] (NAME: alone runs the session's defaults)";

/// One variant of an A/B run: a name and what it changes against the session's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbVariant {
    /// As `--variant` named it: letters, digits, `_` and `-`.
    pub name: String,
    /// Statement settings its samples run with, on top of the session's.
    pub settings: Settings,
    /// The embedded engine's version it runs on, when it names one; `None`: the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
}

impl AbVariant {
    /// `NAME:SETTING=VALUE[,SETTING=VALUE...]`, or `NAME:` for the session's defaults.
    /// Setting names are identifiers; values are kept as text (ClickHouse checks them).
    /// `engine_version=V` names an engine version instead of a setting. Each mistake is
    /// one line that quotes the flag.
    pub fn parse(text: &str) -> Result<AbVariant> {
        let Some((name, settings_text)) = text.split_once(':') else {
            bail!("--variant {text:?} has no `:` after its name; write {VARIANT_SYNTAX}");
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-')) {
            bail!(
                "--variant {text:?}: {name:?} is not a variant name; use letters, digits, `_` and `-` (it labels the \
                 variant in reports and results.json)"
            );
        }
        let mut variant = AbVariant { name: name.to_string(), settings: Settings::new(), engine_version: None };
        if settings_text.is_empty() {
            return Ok(variant);
        }
        let mut seen: Vec<&str> = Vec::new();
        for pair in settings_text.split(',') {
            let Some((setting, value)) = pair.split_once('=') else {
                bail!("--variant {text:?}: {pair:?} is not SETTING=VALUE; write {VARIANT_SYNTAX}");
            };
            if !is_setting_name(setting) {
                bail!(
                    "--variant {text:?}: {setting:?} is not a setting name (letters, digits and `_`, not starting \
                     with a digit)"
                );
            }
            if value.is_empty() || value.chars().any(char::is_control) {
                bail!("--variant {text:?}: {setting} has no value; write {setting}=VALUE");
            }
            if seen.contains(&setting) {
                bail!("--variant {text:?} sets {setting} twice; give it once");
            }
            if let Some(why) = refused_setting(setting) {
                bail!("--variant {text:?}: {setting} {why}");
            }
            seen.push(setting);
            if setting == ENGINE_VERSION_KEY {
                variant.engine_version = Some(value.to_string());
            } else {
                variant.settings = variant.settings.with(setting, value);
            }
        }
        Ok(variant)
    }

    /// The variant as `--variant` takes it, for messages.
    pub fn flag(&self) -> String {
        let mut pairs: Vec<String> = self.settings.iter().map(|(name, value)| format!("{name}={value}")).collect();
        if let Some(version) = &self.engine_version {
            pairs.push(format!("{ENGINE_VERSION_KEY}={version}"));
        }
        format!("{}:{}", self.name, pairs.join(","))
    }
}

impl FromStr for AbVariant {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> Result<AbVariant> {
        AbVariant::parse(text)
    }
}

/// Refuses a list of variants no A/B run can measure, before the engine starts: none is
/// a run of one configuration (fine); one has nothing to compare with; names must be
/// unique (they label the variants); an engine-version variant needs worker processes,
/// which do not exist yet.
pub fn check_variants(variants: &[AbVariant]) -> Result<()> {
    if variants.len() == 1 {
        bail!(
            "--variant {} is the only variant: an A/B run compares at least two; add another (--variant base: runs \
             the session's defaults), or drop --variant for a run of one configuration",
            variants[0].flag()
        );
    }
    for (index, variant) in variants.iter().enumerate() {
        if variants[..index].iter().any(|earlier| earlier.name == variant.name) {
            bail!("--variant names {} twice; give each variant a name of its own", variant.name);
        }
    }
    for variant in variants {
        if let Some(version) = &variant.engine_version {
            crate::engine::engine_version_named(version).with_context(|| format!("--variant {}", variant.flag()))?;
        }
    }
    Ok(())
}

/// How an A/B run interleaved its variants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbRun {
    /// In the order `--variant` gave them; the first is the comparison's baseline.
    pub variants: Vec<AbVariant>,
    /// The seed of the shuffle that ordered each round (every variant once per round).
    pub seed: u64,
    /// The measured rounds asked for per query, after one warm-up per variant.
    pub rounds: u32,
}

impl AbRun {
    /// The order of every round of one query pass (`pass`: its index in the run, 0 for
    /// the first query), endless: each a permutation of the variants' indexes. The warm-up
    /// round is the first, then the measured rounds. Each pass has its own ChaCha8 stream
    /// of the seed, so a pass's order depends on the seed and the pass alone, not on how
    /// many rounds ran before it.
    pub fn round_orders(&self, pass: u64) -> impl Iterator<Item = Vec<usize>> + use<> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(pass);
        let count = self.variants.len();
        std::iter::repeat_with(move || {
            let mut order: Vec<usize> = (0..count).collect();
            order.shuffle(&mut rng);
            order
        })
    }
}

/// A seed for a run that was given none: random, and recorded in the bundle, so the run's
/// order can be replayed with `--seed`.
pub fn random_seed() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        format!("{:#}", AbVariant::parse(text).unwrap_err())
    }

    #[test]
    fn a_variant_is_a_name_and_its_settings_as_text() {
        let variant = AbVariant::parse("one_thread:max_threads=1,max_block_size=8192").unwrap();
        assert_eq!(variant.name, "one_thread");
        assert_eq!(variant.settings, Settings::new().with("max_threads", 1).with("max_block_size", 8192));
        assert_eq!(variant.engine_version, None);
        assert_eq!(variant.flag(), "one_thread:max_block_size=8192,max_threads=1");
        let defaults = AbVariant::parse("base-1:").unwrap();
        assert!(defaults.settings.is_empty() && defaults.name == "base-1");
        // A value is text: ClickHouse judges it, not the parser.
        let text = AbVariant::parse("b:join_algorithm=grace_hash").unwrap();
        assert_eq!(text.settings.get("join_algorithm"), Some("grace_hash"));
        assert_eq!("a:".parse::<AbVariant>().unwrap().name, "a");
    }

    #[test]
    fn engine_version_is_a_reserved_key_not_a_setting() {
        let variant = AbVariant::parse("old:engine_version=26.5.3,max_threads=2").unwrap();
        assert_eq!(variant.engine_version.as_deref(), Some("26.5.3"));
        assert_eq!(variant.settings, Settings::new().with("max_threads", 2));
        let new = AbVariant::parse("new:").unwrap();
        check_variants(&[new.clone(), variant]).expect("a pinned engine version is a variant");
        let unpinned = AbVariant::parse("old:engine_version=9.9").unwrap();
        let refused = format!("{:#}", check_variants(&[new, unpinned]).unwrap_err());
        assert!(
            refused.contains("--variant old:engine_version=9.9: \"9.9\" is not a pinned engine version"),
            "{refused}"
        );
    }

    #[test]
    fn each_mistake_in_a_variant_is_one_line_quoting_it() {
        assert!(error("max_threads=1").contains("has no `:` after its name"));
        assert!(error(":max_threads=1").contains("\"\" is not a variant name"));
        assert!(error("a b:max_threads=1").contains("\"a b\" is not a variant name"));
        assert!(error("a/b:").contains("is not a variant name"));
        assert!(error("a:max_threads").contains("\"max_threads\" is not SETTING=VALUE"));
        assert!(error("a:max_threads=1,").contains("\"\" is not SETTING=VALUE"));
        assert!(error("a:max-threads=1").contains("\"max-threads\" is not a setting name"));
        assert!(error("a:1x=1").contains("\"1x\" is not a setting name"));
        assert!(error("a:max_threads=").contains("max_threads has no value"));
        assert!(error("a:max_threads=1,max_threads=2").contains("sets max_threads twice"));
        assert!(error("a:log_comment=x").contains("set by the harness"));
        for text in ["max_threads=1", "a:max-threads=1", "a:max_threads="] {
            assert!(!error(text).contains('\n'), "{text}");
        }
    }

    #[test]
    fn a_list_of_variants_needs_two_or_none_with_unique_names() {
        let parse = |texts: &[&str]| texts.iter().map(|text| AbVariant::parse(text).unwrap()).collect::<Vec<_>>();
        assert!(check_variants(&[]).is_ok());
        assert!(check_variants(&parse(&["a:", "b:max_threads=1"])).is_ok());
        // An A/A run: the same settings twice, under two names.
        assert!(check_variants(&parse(&["a:", "b:"])).is_ok());
        let one = check_variants(&parse(&["a:max_threads=1"])).unwrap_err().to_string();
        assert!(one.contains("--variant a:max_threads=1 is the only variant"), "{one}");
        let twice = check_variants(&parse(&["a:", "b:", "a:max_threads=1"])).unwrap_err().to_string();
        assert!(twice.contains("--variant names a twice"), "{twice}");
    }

    #[test]
    fn every_round_is_a_permutation_and_the_seed_replays_it() {
        let run = |seed| AbRun { variants: vec![AbVariant::parse("a:").unwrap(); 3], seed, rounds: 20 };
        let orders = |seed, pass| run(seed).round_orders(pass).take(21).collect::<Vec<_>>();
        for order in orders(7, 0) {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2]);
        }
        assert_eq!(orders(7, 0), orders(7, 0));
        // Another seed, or another pass of the same seed, orders differently (21 rounds of
        // 6 orders each: the same by chance once in 6^21).
        assert_ne!(orders(7, 0), orders(8, 0));
        assert_ne!(orders(7, 0), orders(7, 1));
        // Each variant leads some rounds: the shuffle is not stuck.
        for variant in 0..3 {
            assert!(orders(7, 0).iter().any(|order| order[0] == variant), "{variant} never leads");
        }
    }
}

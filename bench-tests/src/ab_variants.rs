//! A/B runs: the variants one run measures in turns on one prepared dataset
//! (`cargo xtask bench logs --variant NAME:SETTING=VALUE,...`), and how the turns were
//! ordered. A bundle of such a run holds every variant's query runs, each tagged with its
//! variant's name ([`crate::query_runs::QueryRuns::ab_variant`]), and each sample with its
//! place in its round ([`crate::query_runs::Sample::round_position`]), so that a
//! comparison of the variants needs this bundle alone.

use serde::{Deserialize, Serialize};

use crate::settings::Settings;

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

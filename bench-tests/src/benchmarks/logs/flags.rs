//! The logs benchmark's flags, as `cargo xtask bench logs` (or `bench` alone) takes them.

use clap::Args;

use super::LogsBenchmark;
use super::cost::CostFlags;
use crate::ab_variants::{AbRun, AbVariant, random_seed};
use crate::units::parse_count;

/// Warm runs per query of a run of one configuration.
const WARM_RUNS: u32 = 3;
/// Measured rounds per query of an A/B run: the runs per variant at which the comparison's
/// test finds a 10 % change in 97 % of simulated trials (docs/compare.md).
const AB_ROUNDS: u32 = crate::significance::AB_RUNS;

#[derive(Debug, Clone, Args)]
pub struct LogsFlags {
    /// Rows to generate (K, M and G suffixes work: 10M; the source's scale is 100M).
    // allow_negative_numbers: `-5` reaches the parser, which says a count is positive;
    // clap alone would call it an unexpected argument.
    #[arg(long, default_value = "10M", value_parser = parse_count, allow_negative_numbers = true)]
    pub rows: u64,
    /// Warm runs per query after the direct-I/O run (default 3); with --variant, measured
    /// rounds per query, each variant once a round (default 60).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
    /// An A/B run's variant, NAME:SETTING=VALUE[,SETTING=VALUE...] (NAME: alone: the
    /// session's defaults); give two or more. Every query runs each variant in turn, on one
    /// dataset, in an order shuffled each round (docs/ab-runs.md).
    #[arg(long = "variant", value_name = "NAME:SETTING=VALUE,...", value_parser = AbVariant::parse)]
    pub variants: Vec<AbVariant>,
    /// The seed of an A/B run's shuffle (default: random); the bundle records it, and the
    /// same seed gives the same order.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Node price, USD per hour (the source: m5.xlarge, Seoul, 2026-09).
    #[arg(long, default_value_t = 0.236)]
    pub node_usd_per_hour: f64,
    /// Volume price, USD per GB-month (the source: gp3, Seoul, 2026-09).
    #[arg(long, default_value_t = 0.0912)]
    pub volume_usd_per_gb_month: f64,
    /// Provisioned volume size, GiB (billed whatever the data uses).
    #[arg(long, default_value_t = 100.0)]
    pub volume_gib: f64,
    /// Retention projection: rows arriving per day.
    // allow_negative_numbers: `-5` reaches the parser, which says a count is positive;
    // clap alone would call it an unexpected argument.
    #[arg(long, default_value = "100M", value_parser = parse_count, allow_negative_numbers = true)]
    pub rows_per_day: u64,
    /// Retention projection: days kept.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub retention_days: u64,
    /// The volume's read limit in MiB/s, shown beside direct-I/O read rates (gp3 default: 125).
    #[arg(long)]
    pub volume_mib_per_s: Option<f64>,
    #[command(flatten)]
    pub profile: crate::profiles::ProfileFlag,
}

impl LogsFlags {
    /// The benchmark these flags ask for.
    pub fn benchmark(&self) -> LogsBenchmark {
        let ab = (!self.variants.is_empty()).then(|| AbRun {
            variants: self.variants.clone(),
            seed: self.seed.unwrap_or_else(random_seed),
            rounds: self.runs.unwrap_or(AB_ROUNDS),
        });
        LogsBenchmark {
            rows: self.rows,
            warm_runs: ab.as_ref().map_or(self.runs.unwrap_or(WARM_RUNS), |ab| ab.rounds),
            seed_without_variants: self.seed.filter(|_| self.variants.is_empty()),
            ab,
            cost: CostFlags {
                node_usd_per_hour: self.node_usd_per_hour,
                volume_usd_per_gb_month: self.volume_usd_per_gb_month,
                volume_gib: self.volume_gib,
                rows_per_day: self.rows_per_day,
                retention_days: self.retention_days,
            },
            volume_limit_mib_per_s: self.volume_mib_per_s,
            profile: self.profile.profile,
        }
    }
}

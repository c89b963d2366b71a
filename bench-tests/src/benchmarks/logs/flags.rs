//! The logs benchmark's flags, as `cargo xtask bench logs` (or `bench` alone) takes them.

use clap::Args;

use super::LogsBenchmark;
use super::cost::CostInputs;
use crate::units::parse_count;

#[derive(Debug, Clone, Args)]
pub struct LogsFlags {
    /// Rows to generate (K, M and G suffixes work: 10M; the source's scale is 100M).
    #[arg(long, default_value = "10M", value_parser = parse_count)]
    pub rows: u64,
    /// Warm runs per query after the direct-I/O run.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
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
    #[arg(long, default_value = "100M", value_parser = parse_count)]
    pub rows_per_day: u64,
    /// Retention projection: days kept.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub retention_days: u64,
    /// The volume's read limit in MiB/s, shown beside direct-I/O read rates (gp3 default: 125).
    #[arg(long)]
    pub volume_mib_per_s: Option<f64>,
}

impl LogsFlags {
    /// The benchmark these flags ask for.
    pub fn benchmark(&self) -> LogsBenchmark {
        LogsBenchmark {
            rows: self.rows,
            warm_runs: self.runs,
            cost: CostInputs {
                node_usd_per_hour: self.node_usd_per_hour,
                volume_usd_per_gb_month: self.volume_usd_per_gb_month,
                volume_gib: self.volume_gib,
                rows_per_day: self.rows_per_day,
                retention_days: self.retention_days,
            },
            volume_limit_mib_per_s: self.volume_mib_per_s,
        }
    }
}

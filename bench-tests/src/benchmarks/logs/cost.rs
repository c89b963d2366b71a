//! The cost arithmetic of the source: a node's hourly price, a volume's monthly price per
//! GB, and a retention projection. The volume is billed by what is provisioned, not by
//! what is used: the two are kept apart, and the used-bytes figure is labelled as not
//! being a bill (the source insists on this).

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::node_prices::MAX_USD_PER_HOUR;
use crate::numbers::{known, ratio};

/// The dearest volume price taken, USD per GB-month: block storage costs cents (gp3
/// $0.08, io2 $0.125); past this is a typo.
pub const MAX_USD_PER_GB_MONTH: f64 = 1_000.0;

/// The largest volume taken, GiB (1 PiB; an EBS volume holds at most 64 TiB).
pub const MAX_VOLUME_GIB: f64 = 1_048_576.0;

/// Hours in the month the source's arithmetic uses (AWS bills 730).
pub const HOURS_PER_MONTH: f64 = 730.0;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The prices and the retention question as the flags gave them, any number (`NaN`
/// included) until [`CostFlags::check`] accepts them; then [`CostFlags::inputs`], what a
/// bundle records. Defaults are the source's: Seoul, 2026-09-11.
#[derive(Debug, Clone, PartialEq)]
pub struct CostFlags {
    /// m5.xlarge on-demand, Linux, ap-northeast-2.
    pub node_usd_per_hour: f64,
    /// gp3 per GB-month, ap-northeast-2 (AWS's GB here is a GiB).
    pub volume_usd_per_gb_month: f64,
    /// The provisioned volume (the source: 100 GiB).
    pub volume_gib: f64,
    /// Retention projection: rows arriving per day and days kept.
    pub rows_per_day: u64,
    pub retention_days: u64,
}

impl CostFlags {
    /// Prices and sizes must be finite, not negative and within reason, and the volume
    /// must have a size: anything else would put a meaningless bill in the results (a
    /// price near `f64::MAX` overflows every monthly figure to unknown).
    pub fn check(&self) -> Result<()> {
        for (flag, price, most, unit) in [
            ("node-usd-per-hour", self.node_usd_per_hour, MAX_USD_PER_HOUR, "USD per hour"),
            ("volume-usd-per-gb-month", self.volume_usd_per_gb_month, MAX_USD_PER_GB_MONTH, "USD per GB-month"),
        ] {
            if !price.is_finite() || price < 0.0 || price > most {
                bail!("--{flag} {} is not a price: give {unit}, a finite number from 0 to {most}", as_given(price));
            }
        }
        if !self.volume_gib.is_finite() || self.volume_gib <= 0.0 || self.volume_gib > MAX_VOLUME_GIB {
            bail!(
                "--volume-gib {} is not a volume: give the provisioned size in GiB, above 0 and at most {MAX_VOLUME_GIB}",
                as_given(self.volume_gib)
            );
        }
        Ok(())
    }

    /// What a bundle records of them; every number known once [`CostFlags::check`] took them.
    pub fn inputs(&self) -> CostInputs {
        CostInputs {
            node_usd_per_hour: known(self.node_usd_per_hour),
            volume_usd_per_gb_month: known(self.volume_usd_per_gb_month),
            volume_gib: known(self.volume_gib),
            rows_per_day: self.rows_per_day,
            retention_days: self.retention_days,
        }
    }
}

/// A flag's number as the user wrote it, near enough: `1e308`, not its 309 digits; `inf`
/// and `NaN` as such.
fn as_given(value: f64) -> String {
    if value.is_finite() { crate::units::exact(value) } else { value.to_string() }
}

impl Default for CostFlags {
    fn default() -> CostFlags {
        CostFlags {
            node_usd_per_hour: 0.236,
            volume_usd_per_gb_month: 0.0912,
            volume_gib: 100.0,
            rows_per_day: 100_000_000,
            retention_days: 30,
        }
    }
}

/// Prices and the retention question, as a bundle records them ([`CostFlags`] checked);
/// a number is unknown only in a bundle that holds `null` for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostInputs {
    /// USD per hour.
    pub node_usd_per_hour: Option<f64>,
    /// USD per GB-month (AWS's GB here is a GiB).
    pub volume_usd_per_gb_month: Option<f64>,
    /// The provisioned volume, GiB.
    pub volume_gib: Option<f64>,
    /// Retention projection: rows arriving per day and days kept.
    pub rows_per_day: u64,
    pub retention_days: u64,
}

/// The cost figures; each unknown where an input is, or where it overflowed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    pub inputs: CostInputs,
    pub node_usd_per_month: Option<f64>,
    /// What the volume costs: its provisioned size times the price.
    pub provisioned_volume_usd_per_month: Option<f64>,
    /// Bytes the measured table occupies (compressed, LZ4) and what they would cost at
    /// the volume price: NOT a bill, the volume is billed as provisioned.
    pub used_bytes: u64,
    pub used_bytes_usd_per_month_not_billed: Option<f64>,
    /// Retention projection at the measured bytes per row.
    pub bytes_per_row: Option<f64>,
    pub retention_gib: Option<f64>,
    pub retention_usd_per_month: Option<f64>,
    /// Whether the projected data fits the provisioned volume (merges, indexes, replicas
    /// and headroom come on top).
    pub retention_fits_volume: bool,
}

impl CostModel {
    /// From the measured table: `used_bytes` over `rows` rows.
    pub fn new(inputs: CostInputs, used_bytes: u64, rows: u64) -> CostModel {
        // No rows: bytes per row cannot be known.
        let bytes_per_row = ratio(used_bytes as f64, rows as f64);
        let retention_gib = bytes_per_row
            .and_then(|per_row| known(per_row * inputs.rows_per_day as f64 * inputs.retention_days as f64 / GIB));
        let volume_price = inputs.volume_usd_per_gb_month;
        // Unknown where a factor is, or where the product overflows.
        let product = |a: Option<f64>, b: Option<f64>| a.zip(b).and_then(|(a, b)| known(a * b));
        CostModel {
            node_usd_per_month: inputs.node_usd_per_hour.and_then(|price| known(price * HOURS_PER_MONTH)),
            provisioned_volume_usd_per_month: product(inputs.volume_gib, volume_price),
            used_bytes,
            used_bytes_usd_per_month_not_billed: volume_price.and_then(|price| known(used_bytes as f64 / GIB * price)),
            bytes_per_row,
            retention_gib,
            retention_usd_per_month: product(retention_gib, volume_price),
            retention_fits_volume: retention_gib.zip(inputs.volume_gib).is_some_and(|(gib, volume)| gib <= volume),
            inputs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_arithmetic_comes_out() {
        // The source: 7.82 GiB LZ4 for 100 M rows; 30 days of 100 M rows a day is about
        // 235 GiB, about $21.43 a month; the 100 GiB volume costs $9.12 a month.
        let used = (7.82 * GIB) as u64;
        let cost = CostModel::new(CostFlags::default().inputs(), used, 100_000_000);
        assert!((cost.provisioned_volume_usd_per_month.unwrap() - 9.12).abs() < 1e-9);
        assert!((cost.retention_gib.unwrap() - 234.6).abs() < 0.1, "{:?}", cost.retention_gib);
        assert!((cost.retention_usd_per_month.unwrap() - 21.4).abs() < 0.05, "{:?}", cost.retention_usd_per_month);
        assert!(!cost.retention_fits_volume);
        assert!((cost.used_bytes_usd_per_month_not_billed.unwrap() - 0.713).abs() < 0.001);
    }

    #[test]
    fn prices_that_are_not_finite_or_negative_are_refused() {
        assert!(CostFlags::default().check().is_ok());
        assert!(CostFlags { node_usd_per_hour: 0.0, ..CostFlags::default() }.check().is_ok());
        for inputs in [
            CostFlags { node_usd_per_hour: f64::NAN, ..CostFlags::default() },
            CostFlags { node_usd_per_hour: -1.0, ..CostFlags::default() },
            CostFlags { volume_gib: f64::INFINITY, ..CostFlags::default() },
            CostFlags { volume_gib: 0.0, ..CostFlags::default() },
            CostFlags { volume_usd_per_gb_month: f64::NEG_INFINITY, ..CostFlags::default() },
        ] {
            let error = inputs.check().unwrap_err().to_string();
            assert!(error.starts_with("--") && error.contains("give"), "{error}");
        }
    }
}

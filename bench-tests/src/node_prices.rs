//! What a node costs, as a comparison prices a side's runs: on-demand USD per hour of the
//! node types the manifests and the Karpenter NodePool name, with the region and date they
//! hold for, and the one way a side's price is decided ([`price_of`]): a price given for
//! the side, else one given for its node type, else this table's, else unknown with why.
//!
//! The figures are Amazon EC2 On-Demand Linux prices in us-east-1 ("Amazon EC2 On-Demand
//! Pricing", Amazon Web Services, aws.amazon.com/ec2/pricing/on-demand/, as listed in
//! 2026). They could not be read from AWS's live price list on the machine this table was
//! written on, so they are not verified here beyond one cross-check: ClickBench's pull
//! request #154 ("New AWS benchmarks", ClickHouse, Inc.) gives c7g.metal at $2.32 an hour,
//! which is 16 times the c7g.xlarge figure below, as the family's linear pricing makes it.
//! Check them against the price list of your region and give your own with `cargo xtask
//! compare --node-price TYPE=USD` or `--price-a`/`--price-b`.

use std::fmt;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// The region the table's prices are for.
pub const REGION: &str = "us-east-1";
/// When the table's prices were taken.
pub const AS_OF: &str = "2026-12-01";
/// Where they come from, as messages and reports cite it.
pub const SOURCE: &str = "Amazon EC2 On-Demand Pricing (Linux), Amazon Web Services";

/// On-demand USD per hour by instance type: the manifests' default (m5.xlarge), the
/// comparison the issue names (c7g.2xlarge against c6i.2xlarge, with the sizes beside
/// them) and the NVMe variant's node (m6id.xlarge).
pub const NODE_PRICES: &[(&str, f64)] = &[
    ("m5.xlarge", 0.192),
    ("c6i.xlarge", 0.17),
    ("c6i.2xlarge", 0.34),
    ("c6i.4xlarge", 0.68),
    ("c7g.xlarge", 0.145),
    ("c7g.2xlarge", 0.29),
    ("c7g.4xlarge", 0.58),
    ("m6id.xlarge", 0.2373),
];

/// A side's node price and where it came from; unknown with the reason, never 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum NodePrice {
    Known {
        usd_per_hour: f64,
        /// `--price-a`, `--node-price m5.xlarge=...`, or the table with its region and date.
        source: String,
    },
    Unknown {
        reason: String,
    },
}

impl NodePrice {
    pub fn usd_per_hour(&self) -> Option<f64> {
        match self {
            NodePrice::Known { usd_per_hour, .. } => Some(*usd_per_hour),
            NodePrice::Unknown { .. } => None,
        }
    }
}

impl fmt::Display for NodePrice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodePrice::Known { usd_per_hour, source } => write!(f, "${usd_per_hour}/h ({source})"),
            NodePrice::Unknown { reason } => write!(f, "unknown ({reason})"),
        }
    }
}

/// Prices given on the command line: for a side (`--price-a`), or per node type.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceOverrides {
    pub side: Option<f64>,
    pub node_types: Vec<(String, f64)>,
    /// The side's node type where its bundle does not name one but whoever ran it knows it
    /// (a matrix's eks variant declares it).
    pub declared_node_type: Option<String>,
}

/// The price of a side whose node type is `node_type` (unknown on the embedded engine and
/// on a server the bundle does not describe), flag `side_flag` naming its own override.
pub fn price_of(node_type: Option<&str>, overrides: &PriceOverrides, side_flag: &str) -> NodePrice {
    if let Some(usd_per_hour) = overrides.side {
        return NodePrice::Known { usd_per_hour, source: side_flag.to_string() };
    }
    let Some(node_type) = node_type else {
        return NodePrice::Unknown {
            reason: format!(
                "the bundle names no node type (not an eks run, or one without a storage baseline of its node); give \
                 its price with {side_flag} USD_PER_HOUR"
            ),
        };
    };
    if let Some((_, usd_per_hour)) = overrides.node_types.iter().find(|(name, _)| name == node_type) {
        return NodePrice::Known { usd_per_hour: *usd_per_hour, source: format!("--node-price {node_type}=...") };
    }
    match NODE_PRICES.iter().find(|(name, _)| *name == node_type) {
        Some((_, usd_per_hour)) => {
            NodePrice::Known { usd_per_hour: *usd_per_hour, source: format!("on-demand, {REGION}, {AS_OF}: {SOURCE}") }
        }
        None => NodePrice::Unknown {
            reason: format!(
                "{node_type} is not in the price table ({}); give it with --node-price {node_type}=USD_PER_HOUR",
                NODE_PRICES.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
            ),
        },
    }
}

/// USD per 1,000 queries on a node at `usd_per_hour` that answers `qps` queries a second:
/// the cost a throughput run's QPS gives (the serial one is the comparison's
/// `usd_per_1000_queries`); unknown for a QPS that is not above 0.
pub fn usd_per_1000_queries_at_qps(qps: f64, usd_per_hour: f64) -> Option<f64> {
    (qps.is_finite() && qps > 0.0).then(|| 1000.0 / qps * usd_per_hour / 3600.0)
}

/// The dearest node price a flag takes, USD per hour. The largest on-demand instances cost
/// a few hundred; a price past this is a typo, and one near `f64::MAX` would make every
/// cost computed from it overflow to unknown with no reason anyone could see.
pub const MAX_USD_PER_HOUR: f64 = 10_000.0;

/// The cheapest node price a flag takes, USD per hour: a tenth of a cent, below the
/// smallest on-demand instance (about $0.004). A price below it is a typo, and one near 0
/// would make a known cost print as $0.000000 (or a price as hundreds of digits).
pub const MIN_USD_PER_HOUR: f64 = 0.001;

/// A price as a flag gives it: finite, from [`MIN_USD_PER_HOUR`] to [`MAX_USD_PER_HOUR`].
pub fn parse_usd_per_hour(text: &str) -> Result<f64> {
    match text.trim().parse::<f64>() {
        Ok(price) if price.is_finite() && (MIN_USD_PER_HOUR..=MAX_USD_PER_HOUR).contains(&price) => Ok(price),
        _ => {
            bail!("{text:?} is not a price: give USD per hour from {MIN_USD_PER_HOUR} to {MAX_USD_PER_HOUR}, e.g. 0.34")
        }
    }
}

/// `TYPE=USD`, as `--node-price` takes it.
pub fn parse_node_price(text: &str) -> Result<(String, f64)> {
    let Some((node_type, price)) = text.split_once('=') else {
        bail!("--node-price {text:?} is not TYPE=USD_PER_HOUR, e.g. --node-price c7g.2xlarge=0.29");
    };
    if node_type.trim().is_empty() {
        bail!("--node-price {text:?} names no node type: give TYPE=USD_PER_HOUR, e.g. c7g.2xlarge=0.29");
    }
    Ok((node_type.trim().to_string(), parse_usd_per_hour(price)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_is_priced_by_its_flag_then_its_node_type_then_the_table_else_unknown() {
        let none = PriceOverrides::default();
        assert_eq!(price_of(Some("c7g.2xlarge"), &none, "--price-b").usd_per_hour(), Some(0.29));
        let unknown = price_of(None, &none, "--price-a");
        assert!(matches!(&unknown, NodePrice::Unknown { reason } if reason.contains("--price-a")), "{unknown}");
        let odd = price_of(Some("x9.huge"), &none, "--price-a");
        assert!(matches!(&odd, NodePrice::Unknown { reason } if reason.contains("--node-price x9.huge=")), "{odd}");
        let typed = PriceOverrides { node_types: vec![("c7g.2xlarge".to_string(), 0.3)], ..PriceOverrides::default() };
        assert_eq!(price_of(Some("c7g.2xlarge"), &typed, "--price-a").usd_per_hour(), Some(0.3));
        let side = PriceOverrides { side: Some(1.0), ..PriceOverrides::default() };
        assert_eq!(price_of(None, &side, "--price-a").usd_per_hour(), Some(1.0));
        for (name, price) in NODE_PRICES {
            assert!(price.is_finite() && *price > 0.0, "{name}");
        }
    }

    #[test]
    fn prices_on_the_command_line_are_checked() {
        assert_eq!(parse_node_price("m5.xlarge=0.2").unwrap(), ("m5.xlarge".to_string(), 0.2));
        assert!(parse_node_price("m5.xlarge").unwrap_err().to_string().contains("is not TYPE=USD_PER_HOUR"));
        assert!(parse_usd_per_hour("0").unwrap_err().to_string().contains("is not a price"));
        assert!(parse_usd_per_hour("-1").is_err() && parse_usd_per_hour("NaN").is_err());
        assert!(parse_usd_per_hour("1e-9").is_err() && parse_usd_per_hour("1e-320").is_err());
        assert_eq!(parse_usd_per_hour("0.001").unwrap(), MIN_USD_PER_HOUR);
    }
}

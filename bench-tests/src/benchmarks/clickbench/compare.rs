//! What a ClickBench comparison adds to every kind's: ClickBench's relative score of B
//! against A, and what a query-set run costs on each side at its node's price (the C7g
//! against C6i study's price-performance), both from the comparison's queries.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::compare::{Comparison, ComparisonSections, SidePrice, geometric_mean, left_out};
use crate::markdown::Table;
use crate::node_prices::NodePrice;
use crate::units::plural_as;

/// ClickBench's shift in its relative score: a query's time plus 10 ms, so that the
/// fastest queries do not dominate the ratio ("Results Usage And Scoreboards", ClickBench).
pub const RELATIVE_SCORE_SHIFT_MS: f64 = 10.0;

/// A ClickBench comparison's own sections (`clickbench` in `compare.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClickBenchComparison {
    /// ClickBench's relative score of B against A: the geometric mean over queries of
    /// `(10 ms + hot B) / (10 ms + hot A)`, hot being a query's fastest warm run (below 1,
    /// B is faster); over the queries in the totals with both hot times known.
    pub relative_score: Option<f64>,
    /// Queries in the relative score.
    pub relative_score_queries: usize,
    /// What each side's query-set run costs at its node's price.
    pub cost: Cost,
}

/// What each side's runs cost at its node's price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub baseline: SideCost,
    pub candidate: SideCost,
}

/// One side's price-performance, from the serial runs of the compared queries: a full
/// query-set run is the sum of its queries' means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideCost {
    /// The node type its bundle names (the eks target's node), if any.
    pub node_type: Option<String>,
    pub price: NodePrice,
    /// USD for one run of every compared query, one after the other: sum of means x price
    /// / 3600 s; unknown when the price is.
    pub usd_per_query_set_run: Option<f64>,
    /// USD per 1,000 queries at the compared queries' mean time.
    pub usd_per_1000_queries: Option<f64>,
}

impl ClickBenchComparison {
    /// The sections of `comparison`, each side priced at `prices` (A, B).
    pub fn of(comparison: &Comparison, [baseline, candidate]: [SidePrice; 2]) -> ClickBenchComparison {
        let (_, scored) = left_out(&comparison.queries);
        let shifted_ratios: Vec<f64> = scored
            .iter()
            .filter_map(|query| query.baseline.min_ms.zip(query.candidate.min_ms))
            .map(|(a, b)| (RELATIVE_SCORE_SHIFT_MS + b) / (RELATIVE_SCORE_SHIFT_MS + a))
            .filter(|ratio| ratio.is_finite() && *ratio > 0.0)
            .collect();
        let totals = &comparison.totals;
        ClickBenchComparison {
            relative_score: geometric_mean(shifted_ratios.iter().copied()),
            relative_score_queries: shifted_ratios.len(),
            cost: Cost {
                baseline: side_cost(baseline, totals.baseline_sum_of_means_ms, totals.queries),
                candidate: side_cost(candidate, totals.candidate_sum_of_means_ms, totals.queries),
            },
        }
    }
}

/// What a side's query-set run costs at its price.
fn side_cost(SidePrice { node_type, price }: SidePrice, sum_of_means_ms: f64, queries: usize) -> SideCost {
    let usd_per_second = price.usd_per_hour().map(|usd| usd / 3600.0);
    let known = |value: f64| (value.is_finite() && queries > 0).then_some(value);
    SideCost {
        usd_per_query_set_run: usd_per_second.and_then(|usd| known(sum_of_means_ms / 1e3 * usd)),
        usd_per_1000_queries: usd_per_second.and_then(|usd| known(sum_of_means_ms / 1e3 / queries as f64 * 1e3 * usd)),
        node_type,
        price,
    }
}

impl ComparisonSections for ClickBenchComparison {
    fn markdown_after_totals(&self, comparison: &Comparison) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "ClickBench's relative score of B against A (the geometric mean of (10 ms + hot B) / (10 ms + hot A), \
             hot the fastest warm run; below 1, B is faster) over {}: {}.\n",
            plural_as(self.relative_score_queries as u64, "query", "queries"),
            self.relative_score.map_or("unknown".to_string(), |score| format!("{score:.3}"))
        );
        let mut cost = Table::new(["side", "node", "price", "per query-set run", "per 1,000 queries"]);
        let usd = |value: Option<f64>| value.map_or_else(|| "unknown".to_string(), |usd| format!("${usd:.6}"));
        for (letter, side, side_cost) in
            [("A", &comparison.baseline, &self.cost.baseline), ("B", &comparison.candidate, &self.cost.candidate)]
        {
            cost.row([
                format!("{letter}: {}", side.label),
                side_cost.node_type.clone().unwrap_or_else(|| "unknown".to_string()),
                side_cost.price.to_string(),
                usd(side_cost.usd_per_query_set_run),
                usd(side_cost.usd_per_1000_queries),
            ]);
        }
        let _ = writeln!(
            out,
            "## Price-performance\n\nWhat the compared queries cost at each side's node price, run one after another \
             (a query-set run: the sum of the means; per 1,000 queries: at their mean time):\n\n{cost}"
        );
        out
    }

    fn terminal_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(score) = self.relative_score {
            lines.push(format!("ClickBench relative score (B against A, below 1 faster): {score:.3}"));
        }
        for (letter, cost) in [("A", &self.cost.baseline), ("B", &self.cost.candidate)] {
            lines.push(match (cost.price.usd_per_hour(), cost.usd_per_1000_queries) {
                (None, _) => format!("{letter}: cost unknown, price {}", cost.price),
                (Some(_), Some(usd)) => format!("{letter}: ${usd:.6} per 1,000 queries at {}", cost.price),
                (Some(_), None) => {
                    format!("{letter}: cost unknown at {}: no compared query has a known mean time", cost.price)
                }
            });
        }
        lines
    }

    fn priced_node_types(&self) -> Option<[Option<String>; 2]> {
        Some([self.cost.baseline.node_type.clone(), self.cost.candidate.node_type.clone()])
    }
}

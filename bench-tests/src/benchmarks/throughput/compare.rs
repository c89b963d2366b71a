//! What a throughput comparison adds to every kind's: each level's rate (QPS) across its
//! rounds on both sides, tested with the statistics every timing gets, its errors, and its
//! cost per 1,000 statements at each side's node price; and why the shared totals are not a
//! query-set run's (the statements overlap).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::ThroughputResults;
use crate::compare::report::{LEVELS_CHART_FILE, level_curves};
use crate::compare::{Comparison, ComparisonSections, SidePrice};
use crate::levels::{levels_by_verdict, rate_significance, rate_verdict_word};
use crate::markdown::Table;
use crate::significance::{Significance, Thresholds, Verdict};
use crate::units::{number, p_value, per_second, plural, times};

/// Why a throughput run's times are not a query-set run one query after another: the
/// shared totals are latencies under load, and no query-set run has a cost.
pub const NOT_SERIAL: &str = "a throughput run's statements overlap, so its times are latencies under load at each \
                              level, not a query-set run one query after another";

/// A throughput comparison's own sections (`throughput` in `compare.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputComparison {
    /// What the shared totals are of ([`NOT_SERIAL`]).
    pub basis: String,
    /// Each side's node and price, at which each level's cost is.
    pub prices: Prices,
    /// Each level either bundle ran, by client count (none for one A/B bundle's variants).
    pub levels: Vec<LevelComparison>,
}

/// One side of a level, A's or B's.
type SideOfLevel = fn(&LevelComparison) -> &Option<LevelSide>;

/// Each side's node price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    pub baseline: SidePrice,
    pub candidate: SidePrice,
}

impl ThroughputComparison {
    /// The sections of the comparison of `bundles` (its levels when they are two bundles),
    /// each side priced at `prices` (A, B).
    pub fn of(
        bundles: &[&ThroughputResults],
        thresholds: &Thresholds,
        [baseline, candidate]: [SidePrice; 2],
    ) -> ThroughputComparison {
        let levels = match bundles {
            [a, b] => compare_levels(a, b, thresholds, (baseline.price.usd_per_hour(), candidate.price.usd_per_hour())),
            _ => Vec::new(),
        };
        ThroughputComparison { basis: NOT_SERIAL.to_string(), prices: Prices { baseline, candidate }, levels }
    }

    /// The levels whose rate is lower on B, by client count.
    pub fn lower_levels(&self) -> Vec<u32> {
        self.levels
            .iter()
            .filter(|level| level.significance.verdict == Verdict::Slower)
            .map(|level| level.clients)
            .collect()
    }

    /// The rate at each load level, its errors and its cost: the section a throughput
    /// comparison opens with.
    fn levels_section(&self) -> String {
        let mut table = Table::new([
            "clients",
            "A QPS (min–max)",
            "B QPS (min–max)",
            "B / A",
            "p",
            "verdict",
            "A failed",
            "B failed",
            "A per 1,000",
            "B per 1,000",
        ]);
        let qps = |side: &Option<LevelSide>| match side {
            None => "not run".to_string(),
            Some(side) => {
                format!("{} ({}–{})", per_second(side.qps_median), per_second(side.qps_min), per_second(side.qps_max))
            }
        };
        let failed = |side: &Option<LevelSide>| match side {
            None => "not run".to_string(),
            Some(side) => format!("{} of {}", side.errors, side.errors + side.completed),
        };
        let cost = |side: &Option<LevelSide>| match side {
            None => "not run".to_string(),
            Some(side) => side.usd_per_1000_queries.map_or_else(|| "unknown".to_string(), |usd| format!("${usd:.6}")),
        };
        for level in &self.levels {
            let significance = &level.significance;
            let verdict = match &significance.reason {
                Some(reason) => format!("{}: {reason}", level.verdict_word()),
                None => level.verdict_word().to_string(),
            };
            table.row([
                level.clients.to_string(),
                qps(&level.baseline),
                qps(&level.candidate),
                times(level.ratio()),
                p_value(significance.p_value),
                verdict,
                failed(&level.baseline),
                failed(&level.candidate),
                cost(&level.baseline),
                cost(&level.candidate),
            ]);
        }
        format!(
            "## Throughput\n\nStatements completed per second at each level, across its complete rounds (median, and \
             smallest to largest), tested on each round's wall time per completed statement; failed statements count \
             in no rate. The cost per 1,000 statements is at the median QPS and each side's node price (USD per hour \
             / 3,600 / QPS x 1,000); unknown without a price (`--price-a`, `--price-b`, `--node-price`).\n\n{table}"
        )
    }
}

impl ComparisonSections for ThroughputComparison {
    /// `QPS: 1 level higher, 2 unchanged`.
    fn headlines(&self) -> Vec<String> {
        if self.levels.is_empty() {
            return Vec::new();
        }
        vec![format!("QPS: {}", levels_by_verdict(self.levels.iter().map(|level| level.significance.verdict)))]
    }

    fn markdown_before_queries(&self, _comparison: &Comparison) -> String {
        if self.levels.is_empty() {
            String::new()
        } else {
            format!("{}\n![QPS at each level]({LEVELS_CHART_FILE})\n\n", self.levels_section())
        }
    }

    fn charts(&self, comparison: &Comparison) -> anyhow::Result<Vec<(&'static str, String)>> {
        let levels: Vec<_> = self
            .levels
            .iter()
            .map(|level| (level.clients, level.baseline.as_ref(), level.candidate.as_ref()))
            .collect();
        level_curves(comparison, "QPS", &levels, |side| side.qps_median)
    }

    fn markdown_after_totals(&self, comparison: &Comparison) -> String {
        let mut prices = Table::new(["side", "node", "price"]);
        for (letter, side, price) in
            [("A", &comparison.baseline, &self.prices.baseline), ("B", &comparison.candidate, &self.prices.candidate)]
        {
            prices.row([
                format!("{letter}: {}", side.label),
                price.node_type.clone().unwrap_or_else(|| "unknown".to_string()),
                price.price.to_string(),
            ]);
        }
        let mut out = String::new();
        let _ = writeln!(out, "These totals are not a query-set run's, since {}.\n", self.basis);
        let _ = writeln!(
            out,
            "## Price-performance\n\nEach side's node price; the cost per 1,000 statements is each level's, at its \
             median QPS, in the Throughput table:\n\n{prices}"
        );
        out
    }

    fn terminal_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.levels.iter().map(LevelComparison::line).collect();
        let sides: [(&str, &SidePrice, SideOfLevel); 2] = [
            ("A", &self.prices.baseline, |level| &level.baseline),
            ("B", &self.prices.candidate, |level| &level.candidate),
        ];
        for (letter, price, side_of) in sides {
            let at_levels: Vec<String> = self
                .levels
                .iter()
                .filter_map(|level| {
                    let usd = side_of(level).as_ref()?.usd_per_1000_queries?;
                    Some(format!("${usd:.6} at {}", plural(level.clients, "client")))
                })
                .collect();
            lines.push(match price.price.usd_per_hour() {
                None => format!("{letter}: cost unknown, price {}", price.price),
                Some(_) if !at_levels.is_empty() => {
                    format!("{letter}: per 1,000 queries {}; price {}", at_levels.join(", "), price.price)
                }
                Some(_) => format!(
                    "{letter}: cost unknown at {}: {}; the cost per 1,000 queries is each level's, at its QPS",
                    price.price, self.basis
                ),
            });
        }
        lines
    }

    /// A level whose QPS is lower is a slowdown as much as a slower query.
    fn regressions(&self) -> Vec<String> {
        self.lower_levels().iter().map(|clients| format!("QPS at {}", plural(*clients, "client"))).collect()
    }

    fn priced_node_types(&self) -> Option<[Option<String>; 2]> {
        Some([self.prices.baseline.node_type.clone(), self.prices.candidate.node_type.clone()])
    }

    fn sum_of_means_name(&self) -> &'static str {
        "sum of mean latencies under load"
    }
}

/// One load level on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelComparison {
    /// Clients running at once.
    pub clients: u32,
    /// `None` where that side did not run the level.
    pub baseline: Option<LevelSide>,
    pub candidate: Option<LevelSide>,
    /// The test on each complete round's wall milliseconds per completed statement
    /// (`1000 / QPS`), so that `faster` is a higher rate, as for every timing compared.
    pub significance: Significance,
}

/// One side of one level, over its complete rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelSide {
    pub rounds: usize,
    /// Statements per second across the rounds: smallest, median, largest; unknown where
    /// a round completed no statement.
    pub qps_min: Option<f64>,
    pub qps_median: Option<f64>,
    pub qps_max: Option<f64>,
    /// Statements that completed, and those that failed (counted in no rate).
    pub completed: u64,
    pub errors: u64,
    /// USD per 1,000 statements at the median rate and the side's node price; unknown
    /// where either is.
    pub usd_per_1000_queries: Option<f64>,
}

impl LevelComparison {
    /// The verdict in a rate's words: `higher`, `lower`, `unchanged`...
    pub fn verdict_word(&self) -> &'static str {
        rate_verdict_word(self.significance.verdict)
    }

    /// `QPS at 4 clients: 812 -> 790 (B/A 0.97x), unchanged (5 and 5 rounds, p 0.4200)`,
    /// with each side's errors where it had some.
    pub fn line(&self) -> String {
        let qps = |side: &Option<LevelSide>| match side {
            Some(side) => side.qps_median.map_or("unknown".to_string(), |qps| number(qps, 0)),
            None => "not run".to_string(),
        };
        let significance = &self.significance;
        let ratio = self.ratio();
        let p = significance.p_value.map_or(String::new(), |p| format!(", p {}", p_value(Some(p))));
        let reason = significance.reason.as_ref().map_or(String::new(), |reason| format!(": {reason}"));
        let errors: Vec<String> = [("A", &self.baseline), ("B", &self.candidate)]
            .into_iter()
            .filter_map(|(letter, side)| side.as_ref().filter(|side| side.errors > 0).map(|side| (letter, side)))
            .map(|(letter, side)| format!("{letter} {} of {}", side.errors, side.errors + side.completed))
            .collect();
        let errors =
            if errors.is_empty() { String::new() } else { format!("; statements failed: {}", errors.join(", ")) };
        format!(
            "QPS at {}: {} -> {} (B/A {}), {} ({}{p}){reason}{errors}",
            plural(self.clients, "client"),
            qps(&self.baseline),
            qps(&self.candidate),
            times(ratio),
            self.verdict_word(),
            rounds_phrase(significance.baseline_samples, significance.candidate_samples),
        )
    }

    /// B's median rate over A's: above 1, B serves more.
    pub fn ratio(&self) -> Option<f64> {
        let median = |side: &Option<LevelSide>| side.as_ref().and_then(|side| side.qps_median);
        median(&self.baseline).zip(median(&self.candidate)).and_then(|(a, b)| crate::numbers::ratio(b, a))
    }
}

/// `5 and 5 rounds`, `1 and 1 round`.
fn rounds_phrase(baseline: usize, candidate: usize) -> String {
    let noun = if baseline == 1 && candidate == 1 { "round" } else { "rounds" };
    format!("{baseline} and {candidate} {noun}")
}

/// Each level either bundle ran: its QPS across complete rounds, tested with the
/// comparison's statistics ([`rate_significance`]) on the wall time per completed statement,
/// its errors, and its cost per 1,000 statements at the median QPS and each side's price
/// (USD per hour, `None` when unknown).
fn compare_levels(
    baseline: &ThroughputResults,
    candidate: &ThroughputResults,
    thresholds: &Thresholds,
    (baseline_usd, candidate_usd): (Option<f64>, Option<f64>),
) -> Vec<LevelComparison> {
    // Each complete round's rate, unknown where it completed no statement.
    let rates = |results: &ThroughputResults, clients: u32| -> Vec<Option<f64>> {
        results
            .rounds
            .iter()
            .filter(|round| round.clients == clients && round.complete)
            .map(|round| round.qps)
            .collect()
    };
    let side = |results: &ThroughputResults, clients: u32, usd_per_hour: Option<f64>| {
        // A level with no complete round (interrupted, or never reached) was not measured.
        results.levels.iter().find(|level| level.clients == clients && level.rounds > 0).map(|level| LevelSide {
            rounds: level.rounds,
            qps_min: level.qps.min,
            qps_median: level.qps.median,
            qps_max: level.qps.max,
            completed: level.completed,
            errors: level.errors,
            usd_per_1000_queries: level
                .qps
                .median
                .zip(usd_per_hour)
                .and_then(|(qps, usd)| crate::node_prices::usd_per_1000_queries_at_qps(qps, usd)),
        })
    };
    let mut clients: Vec<u32> = baseline.levels.iter().chain(&candidate.levels).map(|level| level.clients).collect();
    clients.sort_unstable();
    clients.dedup();
    clients
        .into_iter()
        .map(|clients| {
            let significance = rate_significance(&rates(baseline, clients), &rates(candidate, clients), thresholds);
            LevelComparison {
                clients,
                baseline: side(baseline, clients, baseline_usd),
                candidate: side(candidate, clients, candidate_usd),
                significance,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::{LevelRound, LevelSummary, Levels, ThroughputBenchmark, level_round};
    use super::*;
    use crate::benchmarks::Benchmark;
    use crate::significance::compare_timings;
    use crate::targets::ClosedLoop;

    fn side(qps: f64, errors: u64) -> LevelSide {
        LevelSide {
            rounds: 5,
            qps_min: Some(qps - 1.0),
            qps_median: Some(qps),
            qps_max: Some(qps + 1.0),
            completed: 100,
            errors,
            usd_per_1000_queries: None,
        }
    }

    #[test]
    fn a_level_line_says_the_rates_the_verdict_and_the_errors_of_each_side() {
        let level = LevelComparison {
            clients: 1,
            baseline: Some(side(100.0, 0)),
            candidate: Some(side(50.0, 3)),
            significance: compare_timings(&[10.0; 5], &[20.0; 5], &Thresholds::default()),
        };
        let line = level.line();
        assert!(line.starts_with("QPS at 1 client: 100 -> 50 (B/A 0.50x), lower (5 and 5 rounds"), "{line}");
        assert!(line.ends_with("; statements failed: B 3 of 103"), "{line}");
    }

    #[test]
    fn a_level_one_side_did_not_run_says_so() {
        let level = LevelComparison {
            clients: 8,
            baseline: Some(side(100.0, 0)),
            candidate: None,
            significance: compare_timings(&[10.0; 5], &[], &Thresholds::default()),
        };
        let line = level.line();
        assert!(
            line.starts_with("QPS at 8 clients: 100 -> not run (B/A unknown), untestable (5 and 0 rounds"),
            "{line}"
        );
    }

    /// Results whose level of 2 clients had these QPS, one complete round each.
    fn results_with_qps(qps: &[f64]) -> ThroughputResults {
        let benchmark = ThroughputBenchmark {
            pack: "logs".to_string(),
            design: None,
            rows: 1000,
            queries: Vec::new(),
            sql_files: Vec::new(),
            levels: Levels::parse("2"),
            duration: None,
            iterations: None,
            rounds: qps.len() as u32,
            seed: 1,
            check_statements: 0,
            load: crate::load_generator::LoadFlags::default(),
        };
        let mut results = benchmark.new_results();
        let looped = ClosedLoop {
            statements: Vec::new(),
            wall: Duration::from_secs(1),
            clients: Vec::new(),
            answers: Vec::new(),
            interrupted: false,
            scheduled: None,
        };
        for (round, &qps) in qps.iter().enumerate() {
            results.rounds.push(LevelRound { qps: Some(qps), ..level_round(round as u32 + 1, 2, &looped, &[]) });
        }
        results.levels = vec![LevelSummary::of(2, &results.rounds)];
        results
    }

    #[test]
    fn a_levels_qps_is_compared_across_rounds_higher_being_better() {
        let thresholds = Thresholds::default();
        let slow = results_with_qps(&[100.0, 101.0, 99.0, 100.5, 99.5]);
        let fast = results_with_qps(&[150.0, 151.0, 149.0, 150.5, 149.5]);
        let [level] = compare_levels(&slow, &fast, &thresholds, (Some(3.6), None)).try_into().unwrap();
        assert_eq!(level.clients, 2);
        let median = |side: &Option<LevelSide>| side.as_ref().and_then(|side| side.qps_median);
        assert_eq!((median(&level.baseline), median(&level.candidate)), (Some(100.0), Some(150.0)));
        // Compared as wall time per completed statement: more QPS is faster.
        assert_eq!(level.significance.verdict, Verdict::Faster);
        assert!(
            level.line().starts_with("QPS at 2 clients: 100 -> 150 (B/A 1.50x), higher (5 and 5 rounds, p "),
            "{}",
            level.line()
        );
        // $3.60 an hour at 100 QPS: 360,000 statements an hour, 1 cent per 1,000.
        let cost = |side: &Option<LevelSide>| side.as_ref().and_then(|side| side.usd_per_1000_queries);
        assert!((cost(&level.baseline).unwrap() - 0.01).abs() < 1e-12);
        assert_eq!(cost(&level.candidate), None, "no price, no cost");
        let [back] = compare_levels(&fast, &slow, &thresholds, (None, None)).try_into().unwrap();
        assert_eq!(back.significance.verdict, Verdict::Slower);
        assert!(back.line().contains(", lower ("), "{}", back.line());
        // Three rounds a side: untestable, said with the counts.
        let few = results_with_qps(&[100.0, 101.0, 99.0]);
        let [level] = compare_levels(&few, &few, &thresholds, (None, None)).try_into().unwrap();
        assert_eq!(level.significance.verdict, Verdict::Untestable);
        assert!(level.line().contains("untestable (3 and 3 rounds): 3 and 3 samples"), "{}", level.line());
        // A level one side ran only is listed, not dropped.
        let mut other = results_with_qps(&[100.0; 5]);
        for round in &mut other.rounds {
            round.clients = 4;
        }
        other.levels = vec![LevelSummary::of(4, &other.rounds)];
        let levels = compare_levels(&slow, &other, &thresholds, (None, None));
        assert_eq!(levels.iter().map(|level| level.clients).collect::<Vec<_>>(), [2, 4]);
        assert!(levels[0].candidate.is_none() && levels[1].baseline.is_none());
        assert!(levels[1].line().starts_with("QPS at 4 clients: not run -> 100"), "{}", levels[1].line());
    }
}

//! A rate compared level by level: for a kind that measures one under load (throughput's
//! QPS at each client count), each level's rate across its rounds on both sides, tested
//! with the statistics every timing gets, its errors, and its cost at each side's price.
//! The kind fills these in ([`super::Comparison::levels`]); this module only holds and
//! words them.

use serde::{Deserialize, Serialize};

use crate::significance::{Significance, Verdict};
use crate::units::{number, p_value, plural, times};

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
        match self.significance.verdict {
            Verdict::Faster => "higher",
            Verdict::Slower => "lower",
            Verdict::Unchanged => "unchanged",
            Verdict::Unstable => "unstable",
            Verdict::Untestable => "untestable",
            // Set on queries from their answers or checks, never by a test on a rate.
            Verdict::AnswersDiffer => "answers differ",
            Verdict::Failed => "failed",
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::significance::{Thresholds, compare_timings};

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
}

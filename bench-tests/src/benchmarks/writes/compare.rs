//! What a writes comparison adds to every kind's: each level's rate of INSERTs across its
//! rounds on both sides, tested with the statistics every timing gets, its rows per
//! second and failures, an INSERT's time split side by side with the part that moved
//! most, the share of the engine's busy threads in I/O wait, and the CPU used against the
//! cores'.

use serde::{Deserialize, Serialize};

use super::{Counted, Decomposition, WritesLevel, WritesResults};
use crate::compare::report::{LEVELS_CHART_FILE, level_curves};
use crate::compare::{Comparison, ComparisonSections};
use crate::levels::{levels_by_verdict, rate_significance, rate_verdict_word};
use crate::markdown::Table;
use crate::significance::{Significance, Thresholds, Verdict};
use crate::units::{number, p_value, per_second, percent, plural, times};

/// A writes comparison's own sections (`writes` in `compare.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WritesComparison {
    /// What the rates count: `INSERTs/s`, or `statements/s` for a mix (the baseline's).
    pub unit: String,
    /// Each level either bundle ran, by client count (none for one A/B bundle's variants).
    pub levels: Vec<WritesLevelComparison>,
}

/// One level on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WritesLevelComparison {
    pub clients: u32,
    /// `None` where that side did not run the level.
    pub baseline: Option<WritesLevel>,
    pub candidate: Option<WritesLevel>,
    /// The test on each complete round's INSERTs per second ([`rate_significance`]).
    pub significance: Significance,
    /// The part of an INSERT's time that changed most from A to B, and by how much (µs,
    /// B less A); unknown where either side's split is.
    pub moved: Option<MovedPart>,
}

/// The part of the time split that moved most.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MovedPart {
    pub part: String,
    pub change_us: f64,
}

impl WritesComparison {
    pub fn of(bundles: &[&WritesResults], thresholds: &Thresholds) -> WritesComparison {
        let levels = match bundles {
            [a, b] => compare_levels(a, b, thresholds),
            _ => Vec::new(),
        };
        let unit = bundles.first().map_or("INSERTs/s", |results| results.workload.mix.rate_unit()).to_string();
        WritesComparison { unit, levels }
    }

    fn rates_section(&self) -> String {
        let mut table = Table::new([
            "clients",
            format!("A {} (min–max)", self.unit).as_str(),
            format!("B {} (min–max)", self.unit).as_str(),
            "B / A",
            "p",
            "verdict",
            "A rows/s",
            "B rows/s",
            "A failed",
            "B failed",
        ]);
        let rate = |side: &Option<WritesLevel>| match side {
            None => "not run".to_string(),
            Some(level) => {
                let qps = &level.closed_loop.qps;
                format!("{} ({}–{})", per_second(qps.median), per_second(qps.min), per_second(qps.max))
            }
        };
        let rows = |side: &Option<WritesLevel>| {
            side.as_ref().map_or("not run".to_string(), |level| per_second(level.rows_per_second.median))
        };
        let failed = |side: &Option<WritesLevel>| match side {
            None => "not run".to_string(),
            Some(level) => {
                format!(
                    "{} of {}",
                    level.closed_loop.errors,
                    level.closed_loop.errors.saturating_add(level.closed_loop.completed)
                )
            }
        };
        for level in &self.levels {
            let verdict = match &level.significance.reason {
                Some(reason) => format!("{}: {reason}", level.verdict_word()),
                None => level.verdict_word().to_string(),
            };
            table.row([
                level.clients.to_string(),
                rate(&level.baseline),
                rate(&level.candidate),
                times(level.ratio()),
                p_value(level.significance.p_value),
                verdict,
                rows(&level.baseline),
                rows(&level.candidate),
                failed(&level.baseline),
                failed(&level.candidate),
            ]);
        }
        format!(
            "## Writes\n\nINSERTs completed per second at each level, across its complete rounds (median, and \
             smallest to largest), tested on each round's wall time per completed INSERT; failed INSERTs count in no \
             rate.\n\n{table}"
        )
    }

    fn split_section(&self) -> String {
        let mut table = Table::new(["clients", "part", "A µs", "B µs", "B − A µs"]);
        for level in &self.levels {
            let (Some(a), Some(b)) = (&level.baseline, &level.candidate) else { continue };
            let parts = a.decomposition.with_totals().into_iter().zip(b.decomposition.with_totals());
            for ((name, a_us), (_, b_us)) in parts {
                let change = a_us.zip(b_us).map(|(a, b)| b - a);
                let moved = level.moved.as_ref().is_some_and(|moved| moved.part == name);
                table.row([
                    level.clients.to_string(),
                    if moved { format!("**{name}**") } else { name.to_string() },
                    number(a_us, 0),
                    number(b_us, 0),
                    number(change, 0),
                ]);
            }
        }
        let mut threads =
            Table::new(["clients", "A in I/O", "B in I/O", "A CPU used / offered", "B CPU used / offered"]);
        let cpu = |level: &WritesLevel| {
            format!("{} s / {} s", number(level.cpu_used_seconds, 1), number(level.cpu_offered_seconds, 1))
        };
        for level in &self.levels {
            let (Some(a), Some(b)) = (&level.baseline, &level.candidate) else { continue };
            threads.row([
                level.clients.to_string(),
                percent(a.io_wait_share.median, "unknown"),
                percent(b.io_wait_share.median, "unknown"),
                cpu(a),
                cpu(b),
            ]);
        }
        // Each side's split is of the INSERTs' own records (a server's query_log) or of the
        // engine's counters over the level; a side says which.
        let counted = |side: fn(&WritesLevelComparison) -> Option<&WritesLevel>| {
            let levels: Vec<&WritesLevel> = self.levels.iter().filter_map(side).collect();
            if !levels.is_empty() && levels.iter().all(|level| level.decomposition.counted == Counted::InsertRecords) {
                "each INSERT's own counters from its query_log record (work beside the INSERTs not counted)"
            } else {
                "the engine's counters over every complete round of the level (the whole engine's: background \
                 merges count in CPU and write)"
            }
        };
        let (a_counted, b_counted) =
            (counted(|level| level.baseline.as_ref()), counted(|level| level.candidate.as_ref()));
        let counted = if a_counted == b_counted {
            format!("Per INSERT, from {a_counted}")
        } else {
            format!("Per INSERT, on A from {a_counted}, on B from {b_counted}, so the parts are not alike")
        };
        format!(
            "## Where an INSERT's time went\n\n{counted}; the part that moved most is in bold. An unknown rest means \
             the parts add up to more than the INSERTs' own time.\n\n{table}\n\n## Threads and CPU\n\nThe median \
             share of the busy threads that were in I/O (on the embedded engine: its own threads in I/O wait, of \
             those running or waiting; on a server: its machine's threads blocked on I/O, of those running or \
             blocked, so a server's run against the embedded engine's compares two different figures), and the \
             CPU-seconds its threads used against those its cores offered, every complete round together.\n\n{threads}"
        )
    }
}

impl ComparisonSections for WritesComparison {
    /// `INSERTs/s: 1 level lower, 2 unchanged`.
    fn headlines(&self) -> Vec<String> {
        if self.levels.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "{}: {}",
            self.unit,
            levels_by_verdict(self.levels.iter().map(|level| level.significance.verdict))
        )]
    }

    fn markdown_before_queries(&self, _comparison: &Comparison) -> String {
        if self.levels.is_empty() {
            return String::new();
        }
        format!(
            "{}\n\n![{} at each level]({LEVELS_CHART_FILE})\n\n{}\n",
            self.rates_section(),
            self.unit,
            self.split_section()
        )
    }

    fn charts(&self, comparison: &Comparison) -> anyhow::Result<Vec<(&'static str, String)>> {
        let levels: Vec<_> = self
            .levels
            .iter()
            .map(|level| (level.clients, level.baseline.as_ref(), level.candidate.as_ref()))
            .collect();
        level_curves(comparison, &self.unit, &levels, |level| level.closed_loop.qps.median)
    }

    fn terminal_lines(&self) -> Vec<String> {
        self.levels.iter().map(|level| level.line(&self.unit)).collect()
    }

    /// A level whose rate of INSERTs is lower is a slowdown as much as a slower query.
    fn regressions(&self) -> Vec<String> {
        self.levels
            .iter()
            .filter(|level| level.significance.verdict == Verdict::Slower)
            .map(|level| format!("{} at {}", self.unit, plural(level.clients, "client")))
            .collect()
    }

    fn sum_of_means_name(&self) -> &'static str {
        "sum of mean INSERT latencies under load"
    }
}

impl WritesLevelComparison {
    pub fn verdict_word(&self) -> &'static str {
        rate_verdict_word(self.significance.verdict)
    }

    /// B's median rate over A's: above 1, B writes more.
    pub fn ratio(&self) -> Option<f64> {
        let median = |side: &Option<WritesLevel>| side.as_ref().and_then(|level| level.closed_loop.qps.median);
        median(&self.baseline).zip(median(&self.candidate)).and_then(|(a, b)| crate::numbers::ratio(b, a))
    }

    /// `INSERTs/s at 4 clients: 812 -> 390 (B/A 0.48x), lower (5 and 5 rounds, p 0.0079);
    /// moved most: fsync +2,100 µs`.
    pub fn line(&self, unit: &str) -> String {
        let rate = |side: &Option<WritesLevel>| match side {
            Some(level) => number(level.closed_loop.qps.median, 0),
            None => "not run".to_string(),
        };
        let significance = &self.significance;
        let p = significance.p_value.map_or(String::new(), |p| format!(", p {}", p_value(Some(p))));
        let reason = significance.reason.as_ref().map_or(String::new(), |reason| format!(": {reason}"));
        let moved = self
            .moved
            .as_ref()
            .map_or(String::new(), |moved| format!("; moved most: {} {:+.0} µs", moved.part, moved.change_us));
        format!(
            "{unit} at {}: {} -> {} (B/A {}), {} ({} and {} rounds{p}){reason}{moved}",
            plural(self.clients, "client"),
            rate(&self.baseline),
            rate(&self.candidate),
            times(self.ratio()),
            self.verdict_word(),
            significance.baseline_samples,
            significance.candidate_samples,
        )
    }
}

/// Each level either bundle ran, compared.
fn compare_levels(
    baseline: &WritesResults,
    candidate: &WritesResults,
    thresholds: &Thresholds,
) -> Vec<WritesLevelComparison> {
    let rates = |results: &WritesResults, clients: u32| -> Vec<Option<f64>> {
        results
            .rounds
            .iter()
            .filter(|round| round.closed_loop.clients == clients && round.closed_loop.complete)
            .map(|round| round.closed_loop.qps)
            .collect()
    };
    // A level with no complete round (interrupted, or never reached) was not measured.
    let side = |results: &WritesResults, clients: u32| {
        results
            .levels
            .iter()
            .find(|level| level.closed_loop.clients == clients && level.closed_loop.rounds > 0)
            .cloned()
    };
    let mut clients: Vec<u32> =
        baseline.levels.iter().chain(&candidate.levels).map(|level| level.closed_loop.clients).collect();
    clients.sort_unstable();
    clients.dedup();
    clients
        .into_iter()
        .map(|clients| {
            let (a, b) = (side(baseline, clients), side(candidate, clients));
            let moved = a.as_ref().zip(b.as_ref()).and_then(|(a, b)| moved_most(&a.decomposition, &b.decomposition));
            WritesLevelComparison {
                clients,
                significance: rate_significance(&rates(baseline, clients), &rates(candidate, clients), thresholds),
                baseline: a,
                candidate: b,
                moved,
            }
        })
        .collect()
}

/// The part of the split (the INSERT's own time and the rest aside) that changed most,
/// either way; none when no known part changed.
fn moved_most(a: &Decomposition, b: &Decomposition) -> Option<MovedPart> {
    a.parts()
        .into_iter()
        .zip(b.parts())
        .filter_map(|((name, a), (_, b))| Some((name, b? - a?)))
        .filter(|(_, change)| *change != 0.0)
        .max_by(|(_, x), (_, y)| x.abs().total_cmp(&y.abs()))
        .map(|(name, change_us)| MovedPart { part: name.to_string(), change_us })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_part_that_moved_most_is_the_largest_change_either_way() {
        let a = Decomposition {
            insert_us: Some(3_500.0),
            cpu_us: Some(2_000.0),
            write_us: Some(60.0),
            fsync_us: Some(0.0),
            lock_wait_us: Some(10.0),
            throttle_us: Some(0.0),
            cpu_wait_us: Some(0.0),
            rest_us: Some(1_430.0),
            ..Decomposition::default()
        };
        let b = Decomposition { insert_us: Some(5_600.0), fsync_us: Some(3_200.0), rest_us: Some(330.0), ..a.clone() };
        let moved = moved_most(&a, &b).unwrap();
        assert_eq!((moved.part.as_str(), moved.change_us), ("fsync", 3_200.0));
        // A part unknown on one side is not compared; none known, nothing moved.
        let unknown = Decomposition { fsync_us: None, ..b.clone() };
        assert_eq!(moved_most(&a, &unknown), None);
        assert_eq!(moved_most(&Decomposition::default(), &b), None);
    }
}

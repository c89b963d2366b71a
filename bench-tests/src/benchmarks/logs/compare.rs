//! What a logs comparison adds to every kind's: each query's direct-I/O run on both sides,
//! each against its own side's storage baseline. The queries' test compares the warm
//! runs, which read the page cache; the one run a side that reads the volume is where two
//! volumes (a storage profile against the machine's disk, gp3 against local NVMe) differ.
//! One run a side: shown, not tested.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::results::{LogsQueryRuns, LogsResults};
use crate::compare::{BundleAt, Comparison, ComparisonSections, runs_label};
use crate::markdown::Table;
use crate::numbers::ratio;
use crate::storage_baseline::ReadVerdict;
use crate::units::{milliseconds, number, times};

/// A logs comparison's own section (`logs` in `compare.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogsComparison {
    /// Per query both sides measured, its direct-I/O run on each; empty for one bundle
    /// (an A/B run has no direct-I/O runs of its variants).
    pub direct_io: Vec<DirectIoPair>,
}

/// One query's direct-I/O run on each side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectIoPair {
    /// As the comparison's queries name it.
    pub query: String,
    pub baseline: DirectIoRun,
    pub candidate: DirectIoRun,
    /// B's time over A's.
    pub ratio: Option<f64>,
}

/// A side's direct-I/O run of one query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectIoRun {
    /// Server-side milliseconds.
    pub ms: Option<f64>,
    /// Bytes read from files over that time, MiB/s.
    pub read_mib_per_s: Option<f64>,
    /// Against the side's own storage baseline: `volume-bound (...)`, `below the volume's
    /// rate (...)`, or unknown with the reason.
    pub against_baseline: String,
}

impl LogsComparison {
    /// The direct-I/O runs of two bundles (A, B), by the names `comparison` gives the
    /// queries; none for one bundle.
    pub fn of(bundles: &[BundleAt<LogsResults>], comparison: &Comparison) -> LogsComparison {
        let [a, b] = bundles else { return LogsComparison { direct_io: Vec::new() } };
        let direct_io = comparison
            .queries
            .iter()
            .filter_map(|compared| {
                let baseline = direct_io_run(a, &compared.query)?;
                let candidate = direct_io_run(b, &compared.query)?;
                let ratio = baseline.ms.zip(candidate.ms).and_then(|(a_ms, b_ms)| ratio(b_ms, a_ms));
                Some(DirectIoPair { query: compared.query.clone(), baseline, candidate, ratio })
            })
            .collect();
        LogsComparison { direct_io }
    }
}

/// The direct-I/O run of the query the comparison calls `name` in `side`'s bundle.
fn direct_io_run(side: &BundleAt<LogsResults>, name: &str) -> Option<DirectIoRun> {
    let runs: &LogsQueryRuns = side.bundle.benchmark.queries.iter().find(|runs| runs_label(runs, false) == name)?;
    let sample = runs.direct_io()?;
    let read_mib_per_s = sample.breakdown.as_ref().and_then(|breakdown| breakdown.read_mib_per_s);
    Some(DirectIoRun {
        ms: Some(sample.stats.server_ms()),
        read_mib_per_s,
        against_baseline: ReadVerdict::of(read_mib_per_s, side.bundle.storage_baseline.measured()).label(),
    })
}

impl ComparisonSections for LogsComparison {
    fn is_empty(&self) -> bool {
        self.direct_io.is_empty()
    }

    fn markdown_after_totals(&self, _comparison: &Comparison) -> String {
        if self.direct_io.is_empty() {
            return String::new();
        }
        let mut table = Table::new([
            "query",
            "A direct I/O",
            "B direct I/O",
            "B / A",
            "A read MiB/s",
            "B read MiB/s",
            "A against its storage baseline",
            "B against its storage baseline",
        ]);
        for pair in &self.direct_io {
            table.row([
                pair.query.clone(),
                milliseconds(pair.baseline.ms),
                milliseconds(pair.candidate.ms),
                times(pair.ratio),
                number(pair.baseline.read_mib_per_s, 1),
                number(pair.candidate.read_mib_per_s, 1),
                pair.baseline.against_baseline.clone(),
                pair.candidate.against_baseline.clone(),
            ]);
        }
        let mut out = String::new();
        let _ = writeln!(
            out,
            "## Direct I/O: the run a side that reads the volume\n\nThe test above is of the warm runs, which read \
             the page cache. Each query's first run drops the caches and reads the volume: where the sides' storage \
             differs, it differs here. One run a side, so shown, not tested.\n\n{table}"
        );
        out
    }

    /// Said beside the queries' verdicts (in the report, the terminal and a matrix's
    /// summary): the warm runs' test cannot see a volume.
    fn headlines(&self) -> Vec<String> {
        let ratios: Vec<String> =
            self.direct_io.iter().map(|pair| format!("{} {}", pair.query, times(pair.ratio))).collect();
        if ratios.is_empty() {
            return Vec::new();
        }
        vec![format!("direct I/O, B / A (one run a side, not tested): {}", ratios.join(", "))]
    }
}

//! What a results bundle records of measured queries: every run of one query in one
//! variant ([`QueryRuns`]), each run ([`Sample`]) with its statistics and time breakdown,
//! and timed statements that are not query runs ([`Step`]). The variants are the
//! benchmark kind's own type: this module knows none of them.

use serde::{Deserialize, Serialize};

use crate::answers::AnswerDigest;
use crate::breakdown::TimeBreakdown;
use crate::numbers::median;
use crate::plan::TableRead;
use crate::settings::Settings;
use crate::stats::QueryStats;

/// A timed statement that is not a query run (DDL, re-insert, materialize).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub seconds: Option<f64>,
    pub stats: Option<QueryStats>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleKind {
    /// After dropping the caches, with `min_bytes_to_use_direct_io = 1`.
    DirectIo,
    Warm,
    /// In an A/B run, the one run of each variant before its rounds: it warms the caches
    /// for the variant's settings and is not counted among the warm runs.
    WarmUp,
}

/// One run of one query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub kind: SampleKind,
    pub attempt: u32,
    /// Statement-level settings of this run (on top of the session's).
    pub settings: Settings,
    pub stats: QueryStats,
    /// Where its time went; `None` when its record has no counters to split it by (several
    /// clients at once on an engine whose counters are the process's).
    pub breakdown: Option<TimeBreakdown>,
    /// In an A/B run, where in its round it ran (0: first); `None` elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_position: Option<u32>,
    /// What this run answered (rows and an order-insensitive checksum), where its kind
    /// checks answers before it counts times; `None` elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerDigest>,
}

/// Every run of one query in one variant (e.g. Q5 `without_index` and `bloom_filter`).
/// `Variant` is the benchmark kind's own list of the forms it measures a query in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryRuns<Variant> {
    pub query: String,
    pub variant: Variant,
    /// In an A/B run, the name of the [`crate::ab_variants::AbVariant`] these runs are of;
    /// `None` elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab_variant: Option<String>,
    pub sql_file: String,
    /// Its plan's pruning (`EXPLAIN indexes = 1`), read once before its runs, where its
    /// kind records it: what a comparison of engine versions shows beside the times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Vec<TableRead>>,
    /// The first run's result, as tab-separated text (cut to 2,000 characters).
    pub answer: String,
    pub samples: Vec<Sample>,
}

impl<Variant> QueryRuns<Variant> {
    pub fn direct_io(&self) -> Option<&Sample> {
        self.samples.iter().find(|sample| sample.kind == SampleKind::DirectIo)
    }

    pub fn warm_samples(&self) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(|sample| sample.kind == SampleKind::Warm)
    }

    /// The warm run at the upper median of server-side durations: the middle one, or the
    /// upper of the middle two for an even count (a run, where [`median`] would average
    /// two).
    pub fn warm_upper_median_sample(&self) -> Option<&Sample> {
        let mut warm: Vec<&Sample> = self.warm_samples().collect();
        warm.sort_by_key(|sample| sample.stats.server_duration_us);
        warm.get(warm.len() / 2).copied()
    }

    /// Server-side durations of the warm runs, in milliseconds, sorted.
    pub fn warm_ms(&self) -> Vec<f64> {
        let mut warm: Vec<f64> = self.warm_samples().map(|sample| sample.stats.server_ms()).collect();
        warm.sort_by(f64::total_cmp);
        warm
    }

    pub fn warm_min_ms(&self) -> Option<f64> {
        self.warm_ms().first().copied()
    }

    pub fn warm_median_ms(&self) -> Option<f64> {
        median(&self.warm_ms())
    }

    /// Median of client-observed minus server-reported time over the warm runs: what
    /// the harness and transport add to a query.
    pub fn harness_overhead_ms(&self) -> Option<f64> {
        let mut overhead: Vec<f64> = self
            .warm_samples()
            .map(|sample| {
                (sample.stats.client_duration_us as f64 - sample.stats.server_duration_us as f64).max(0.0) / 1e3
            })
            .collect();
        overhead.sort_by(f64::total_cmp);
        median(&overhead)
    }
}

//! What the parts benchmark records: its part of a results bundle (`benchmark`, of kind
//! `parts`): the sweep it was asked for, which planning and lock counters the engine has,
//! each point as built (per design: parts, rows, the time it took), every sample of every
//! query at every point and client count, the fitted slopes and the gate's verdict.
//! Reading a sample's planning figures ([`PlanningSample`]) and fitting a line through
//! them ([`fit`](super::fit)) are done here and there, from the bundle alone.

use serde::{Deserialize, Serialize};

use crate::query_runs::{QueryRuns, Sample};
use crate::results::{KindResults, RunBundle};
pub use crate::stats::EngineEvents;
use crate::stats::{QueryStats, StatsSource};

/// The planning counters: what a statement spent before it read a row. Their sum is the
/// planning time the slopes are fitted to.
pub const PLANNING_EVENTS: [&str; 3] =
    ["QueryAnalysisMicroseconds", "QueryPlanBuildMicroseconds", "QueryPlanOptimizeMicroseconds"];
/// The parts-list counters: how often and how long a statement held the lock on the
/// table's parts, exclusive and shared (the upstream fix made it shared).
pub const LOCK_EVENTS: [&str; 6] = [
    "PartsLocks",
    "PartsLockWaitMicroseconds",
    "PartsLockHoldMicroseconds",
    "SharedPartsLocks",
    "SharedPartsLockWaitMicroseconds",
    "SharedPartsLockHoldMicroseconds",
];
/// The other counters a sample's figures read.
pub const OTHER_EVENTS: [&str; 4] =
    ["SelectedParts", "SelectedPartsTotal", "IndexAnalysisRounds", "RealTimeMicroseconds"];

/// Everything the parts benchmark measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartsResults {
    pub sweep: Sweep,
    /// The counters of [`PLANNING_EVENTS`], [`LOCK_EVENTS`] and [`OTHER_EVENTS`] the engine
    /// has (`system.events` with zero values shown), or why that is unknown. A counter it
    /// lacks is unknown in every sample, never 0.
    pub engine_events: EngineEvents,
    /// The limits the sweep was checked against before anything was built.
    pub limits: Option<Limits>,
    /// Each point as built, in the order built.
    pub points: Vec<Point>,
    /// Every run of every query: per design, point and client count.
    pub queries: Vec<QueryRuns<PartsVariant>>,
    /// A line through each query's planning time (and duration) against the table's
    /// active parts, per design, from the one-client samples: written after each point.
    pub fits: Vec<SlopeFit>,
    /// `--max-slope` and what it found, once the sweep ended.
    pub gate: Option<Gate>,
    /// Wall time of each phase that ran (ended or not), then of the clean-up.
    #[serde(default)]
    pub phase_times: Vec<PhaseTime>,
}

/// How long one phase took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseTime {
    /// The phase's name (`prepare`, `sweep`, `gate`), or `clean_up`.
    pub phase: String,
    pub seconds: Option<f64>,
}

/// What the sweep was asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// Active parts of the `(namespace, day)` design at each point, rising.
    pub points: Vec<u64>,
    /// Rows per `(namespace, day)` part (the generator's constant).
    pub rows_per_part: u64,
    /// Namespaces: `(day)` parts hold this many `(namespace, day)` parts each.
    pub namespaces: u64,
    /// The designs, by file name in `fixtures/parts/designs/`; the first sets the points.
    pub designs: Vec<String>,
    /// The queries, by file name in `fixtures/parts/queries/`.
    pub queries: Vec<String>,
    /// Measured runs per query, point, design and client, after one warm-up.
    pub runs: u32,
    /// Client counts, each running every query at once at every point (1 first).
    pub clients: Vec<u32>,
    /// The slope bound of `--max-slope`, µs of planning per 1,000 active parts.
    pub max_slope_us_per_1k_parts: Option<f64>,
}

/// The engine limits a sweep must stay within, read before building.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// MergeTree's `max_parts_in_total`: an INSERT beyond it fails (`TOO_MANY_PARTS`).
    pub max_parts_in_total: Option<u64>,
}

/// One point of the sweep: each design's table grown to it, and how long that took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The `(namespace, day)` design's active parts asked for.
    pub parts: u64,
    pub builds: Vec<PointBuild>,
    /// Wall time of measuring every query on every design at this point, once done.
    pub measure_seconds: Option<f64>,
}

/// One design's table at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointBuild {
    pub design: String,
    /// Rows the generator added to reach the point.
    pub added_rows: u64,
    /// Rows in the table afterwards.
    pub rows: u64,
    /// Active parts afterwards (merges stopped: every part inserted is still there).
    pub active_parts: u64,
    pub partitions: u64,
    /// Bytes of the table's parts on disk afterwards.
    pub bytes_on_disk: u64,
    /// Wall time of the insert and the reads that checked it.
    pub seconds: Option<f64>,
    /// The insert's own record.
    pub insert: QueryStats,
}

/// The form a query was measured in: on which design, at which point, by how many
/// clients at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartsVariant {
    pub design: String,
    /// The point (the `(namespace, day)` design's active parts).
    pub point: u64,
    /// The design's table's active parts when measured.
    pub active_parts: u64,
    pub clients: u32,
}

/// A bundle of the parts benchmark.
pub type PartsBundle = RunBundle<PartsResults>;
/// Every run of one query in one [`PartsVariant`].
pub type PartsQueryRuns = QueryRuns<PartsVariant>;

impl KindResults for PartsResults {
    const KIND: &'static str = "parts";
    type Variant = PartsVariant;

    fn queries(&self) -> &[QueryRuns<PartsVariant>] {
        &self.queries
    }

    fn queries_mut(&mut self) -> &mut Vec<QueryRuns<PartsVariant>> {
        &mut self.queries
    }

    /// The sweep's dataset: its points, the generator's constants and the designs.
    fn compared_inputs(&self) -> Vec<(String, String)> {
        let sweep = &self.sweep;
        let list = |values: &[String]| values.join(",");
        vec![
            ("points".to_string(), sweep.points.iter().map(u64::to_string).collect::<Vec<_>>().join(",")),
            ("rows per part".to_string(), sweep.rows_per_part.to_string()),
            ("namespaces".to_string(), sweep.namespaces.to_string()),
            ("designs".to_string(), list(&sweep.designs)),
        ]
    }
}

/// A sample's figures, each unknown (`None`) where the engine lacks its counter or the
/// sample's record has no counters at all (several clients at once on an engine whose
/// counters are process-wide).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanningSample {
    /// The engine's duration of the statement, µs.
    pub duration_us: f64,
    /// Analysis + plan build + plan optimisation, µs.
    pub planning_us: Option<f64>,
    /// The duration less planning: reading and computing.
    pub execution_us: Option<f64>,
    /// Parts the statement read (`SelectedParts`).
    pub parts_selected: Option<u64>,
    /// Parts index analysis looked at (`SelectedPartsTotal`).
    pub parts_considered: Option<u64>,
    pub real_time_us: Option<u64>,
    pub parts_lock_wait_us: Option<u64>,
    pub shared_parts_lock_wait_us: Option<u64>,
}

impl PlanningSample {
    pub fn of(sample: &Sample, events: &EngineEvents) -> PlanningSample {
        counters_of(&sample.stats, events)
    }
}

/// Reads a statement record's figures: a counter is its value where the engine has it
/// (0 when the statement did not move it: the record keeps non-zero counters only),
/// unknown where the engine lacks it or the record carries no counters.
pub fn counters_of(stats: &QueryStats, events: &EngineEvents) -> PlanningSample {
    let has_events = events_measured(stats);
    let counter = |name: &str| -> Option<u64> {
        if !has_events || events.has(name) != Some(true) {
            return None;
        }
        Some(stats.event(name))
    };
    let planning: Option<u64> = PLANNING_EVENTS.iter().map(|name| counter(name)).sum();
    let duration_us = stats.server_duration_us as f64;
    let planning_us = planning.map(|us| us as f64);
    PlanningSample {
        duration_us,
        planning_us,
        execution_us: planning_us.map(|planning| (duration_us - planning).max(0.0)),
        parts_selected: counter("SelectedParts"),
        parts_considered: counter("SelectedPartsTotal"),
        real_time_us: counter("RealTimeMicroseconds"),
        parts_lock_wait_us: counter("PartsLockWaitMicroseconds"),
        shared_parts_lock_wait_us: counter("SharedPartsLockWaitMicroseconds"),
    }
}

/// What a line is fitted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fitted {
    /// Analysis + plan build + optimisation (the gate's subject).
    Planning,
    /// The engine's duration of the whole statement.
    Duration,
}

/// A least-squares line through one query's samples on one design: y (µs) against the
/// table's active parts, through the median of the one-client samples at each part count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlopeFit {
    pub design: String,
    pub query: String,
    pub fitted: Fitted,
    /// One-client samples it was fitted from, and distinct part counts among them (the
    /// line goes through each one's median).
    pub samples: usize,
    pub part_counts: usize,
    /// µs per 1,000 active parts; unknown when the fit is.
    pub slope_us_per_1k_parts: Option<f64>,
    /// µs at no parts.
    pub intercept_us: Option<f64>,
    /// The share of the medians' variance the line explains (1: every median on it).
    pub r_squared: Option<f64>,
    /// The slope's standard error, µs per 1,000 parts.
    pub slope_stderr_us_per_1k_parts: Option<f64>,
    pub quality: FitQuality,
}

/// How far a slope can be trusted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum FitQuality {
    /// The medians lie on a line (R² at least [`super::fit::GOOD_R_SQUARED`]).
    Linear,
    /// They do not grow: the slope is below [`super::fit::FLAT_SLOPE_US_PER_1K_PARTS`] even
    /// two standard errors up, so a low R² is noise about a level line.
    Flat,
    /// Neither: the slope is not a clean number (the curve bends, or the noise is as large
    /// as the growth).
    Poor,
    /// No line could be fitted.
    Unknown { reason: String },
}

impl FitQuality {
    pub fn label(&self) -> String {
        match self {
            FitQuality::Linear => "linear".to_string(),
            FitQuality::Flat => "flat".to_string(),
            FitQuality::Poor => "poor fit".to_string(),
            FitQuality::Unknown { reason } => format!("unknown ({reason})"),
        }
    }

    /// Whether the slope is a number to state (and hold to a bound).
    pub fn trusted(&self) -> bool {
        matches!(self, FitQuality::Linear | FitQuality::Flat)
    }
}

/// `--max-slope` and the queries that broke it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub max_slope_us_per_1k_parts: Option<f64>,
    /// The design whose planning slopes are held to the bound.
    pub design: String,
    /// One line per query that broke it (or whose slope could not be trusted).
    pub failures: Vec<String>,
}

/// Whether a record carries the statement's own counters: not one from the result's
/// counters alone (several clients at once on an engine whose counters are process-wide).
fn events_measured(stats: &QueryStats) -> bool {
    stats.source != StatsSource::ResultCounters
}

//! What the logs benchmark records: its part of a results bundle (`benchmark`, of kind
//! `logs`), and the forms it measures a query in ([`QueryVariant`]).

use serde::{Deserialize, Serialize};

use super::cost::CostModel;
use crate::numbers::ratio;
use crate::query_runs::{QueryRuns, Step};
use crate::results::{KindResults, RunBundle};
use crate::stats::QueryStats;
use crate::table_bytes::StorageSnapshot;

/// Everything the logs benchmark measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogsResults {
    pub dataset: LogsDataset,
    /// The volume's read limit, when the user gave it (MiB/s).
    pub volume_limit_mib_per_s: Option<f64>,
    pub ingest: Option<Ingest>,
    /// LZ4 as ingested, then the ZSTD(3) copy.
    pub storage: Vec<StorageSnapshot>,
    pub zstd_reinsert: Option<Step>,
    /// Q1-Q5, then Q5 again with the bloom filter.
    pub queries: Vec<QueryRuns<QueryVariant>>,
    pub bloom_filter: Option<BloomFilter>,
    pub cost: Option<CostModel>,
    /// The run's wall time against the engine's time in its statements, as of the last
    /// phase that ended; absent in bundles written before it was recorded.
    #[serde(default)]
    pub run_time: Option<RunTime>,
}

/// Where a run's time went: in statements (the engine's own durations, summed) or around
/// them (the harness, polling, process work).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunTime {
    /// From the bundle's `started_at` to the end of the last phase that ended.
    pub wall_seconds: Option<f64>,
    /// Statements the target ran, the harness's own reads included.
    pub statements: u64,
    /// The engine's durations of those statements, summed.
    pub engine_seconds: Option<f64>,
    /// This process's wall time around each statement, summed.
    pub client_seconds: Option<f64>,
    /// Statements whose engine reported no duration: while any is, `wall_over_engine`
    /// is unknown.
    pub statements_without_engine_time: u64,
}

impl RunTime {
    /// The run's wall time over its engine time: 1.0 would be a run that did nothing
    /// but statements. Unknown when some statement's engine time is.
    pub fn wall_over_engine(&self) -> Option<f64> {
        if self.statements_without_engine_time > 0 {
            return None;
        }
        ratio(self.wall_seconds?, self.engine_seconds?)
    }
}

/// A bundle of the logs benchmark.
pub type LogsBundle = RunBundle<LogsResults>;
/// Every run of one query of the logs benchmark, in one of its variants.
pub type LogsQueryRuns = QueryRuns<QueryVariant>;

impl KindResults for LogsResults {
    const KIND: &'static str = "logs";
    type Variant = QueryVariant;

    fn queries(&self) -> &[QueryRuns<QueryVariant>] {
        &self.queries
    }

    fn queries_mut(&mut self) -> &mut Vec<QueryRuns<QueryVariant>> {
        &mut self.queries
    }

    /// The dataset: the generator is the bundle's SQL file, compared as text.
    fn compared_inputs(&self) -> Vec<(String, String)> {
        vec![("rows".to_string(), self.dataset.rows.to_string())]
    }
}

/// Which form of a query's setting was measured: the same query before and after a
/// change to the table (e.g. Q5 without and with its bloom filter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryVariant {
    /// The query on the table as designed.
    Default,
    /// Before the skip index that serves it exists.
    WithoutIndex,
    /// After a bloom filter skip index was added and materialized.
    BloomFilter,
}

impl QueryVariant {
    pub fn label(self) -> &'static str {
        match self {
            QueryVariant::Default => "default",
            QueryVariant::WithoutIndex => "without index",
            QueryVariant::BloomFilter => "bloom filter",
        }
    }
}

/// How the dataset was generated and measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogsDataset {
    pub rows: u64,
    /// Milliseconds between rows, so that any row count spans the source's ~6.94 days.
    pub step_ms: u64,
    /// Warm runs per query after the direct-I/O run.
    pub warm_runs: u32,
}

/// The generator's `INSERT ... SELECT`: first a calibration on a bounded sample, raw
/// engine and harness alternated after a warm-up, then the full ingest once through the
/// harness. Each is recorded as soon as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ingest {
    /// Rows the generator was asked for.
    pub rows: u64,
    /// Straight on the engine, without the harness's tagging and statistics reads: the
    /// median of the calibration's raw runs, on its sample (`calibration.sample_rows`).
    pub raw_engine: Option<IngestTiming>,
    /// Through the harness (`measure`): the figure the report compares with the source.
    pub harness: Option<HarnessIngest>,
    /// The raw engine against the harness on the sample; absent in bundles written
    /// before it existed (their `raw_engine` ran the full statement first, cold).
    #[serde(default)]
    pub calibration: Option<IngestCalibration>,
}

/// The raw engine and the harness on the same bounded sample of the generator, after a
/// warm-up, in an order that gives neither the first or the last word (R H H R, then
/// H R R H), each into a scratch table dropped after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestCalibration {
    /// Rows of each calibration statement.
    pub sample_rows: u64,
    /// The warm-up (through the harness, not counted).
    pub warm_up: IngestTiming,
    /// Every counted run, in the order run.
    pub runs: Vec<CalibrationRun>,
    /// Harness rows/s over raw rows/s, one per pair of neighbouring runs (R H, H R, ...);
    /// unknown (`null`) where a rate of the pair is.
    pub harness_over_raw: Vec<Option<f64>>,
}

/// One counted calibration run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationRun {
    /// `raw_engine` or `harness`.
    pub path: IngestPath,
    pub timing: IngestTiming,
}

/// How an ingest statement ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IngestPath {
    RawEngine,
    Harness,
}

impl IngestPath {
    pub fn label(self) -> &'static str {
        match self {
            IngestPath::RawEngine => "raw engine",
            IngestPath::Harness => "harness",
        }
    }
}

impl IngestCalibration {
    /// The median of the pairs' ratios, with the smallest and largest: unknown when no
    /// pair gave one.
    pub fn ratio_spread(&self) -> Option<(f64, f64, f64)> {
        let mut ratios: Vec<f64> =
            self.harness_over_raw.iter().flatten().copied().filter(|value| value.is_finite()).collect();
        ratios.sort_by(f64::total_cmp);
        let (first, last) = (*ratios.first()?, *ratios.last()?);
        let middle = ratios.len() / 2;
        let median =
            if ratios.len().is_multiple_of(2) { (ratios[middle - 1] + ratios[middle]) / 2.0 } else { ratios[middle] };
        Some((median, first, last))
    }
}

/// The engine's own duration of an ingest statement, and the rate it gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestTiming {
    pub seconds: Option<f64>,
    /// Unknown (`null`) when the engine reported no duration to divide by.
    pub rows_per_second: Option<f64>,
}

/// The harness's ingest and the table it left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessIngest {
    pub timing: IngestTiming,
    /// Rows in the table afterwards.
    pub rows: u64,
    pub partitions: u64,
    pub active_parts: u64,
    pub stats: QueryStats,
}

impl Ingest {
    /// Harness rows/s over raw-engine rows/s: the calibration's median where there is
    /// one, else (older bundles) the two full statements', when both are known.
    pub fn harness_over_raw(&self) -> Option<f64> {
        if let Some(calibration) = &self.calibration {
            return calibration.ratio_spread().map(|(median, _, _)| median);
        }
        let harness = self.harness.as_ref()?.timing.rows_per_second?;
        ratio(harness, self.raw_engine.as_ref()?.rows_per_second?)
    }
}

/// The bloom filter skip index on `trace_id`: adding it, materializing it, its size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BloomFilter {
    pub add_index: Step,
    /// The `MATERIALIZE INDEX` statement and the mutation it starts, waited for.
    pub materialize: Step,
    pub index_compressed_bytes: u64,
    pub index_uncompressed_bytes: u64,
    /// The table's compressed bytes when the index was measured.
    pub table_compressed_bytes: u64,
}

impl BloomFilter {
    /// The index's compressed bytes over the table's; unknown for an empty table.
    pub fn index_share_of_table(&self) -> Option<f64> {
        ratio(self.index_compressed_bytes as f64, self.table_compressed_bytes as f64)
    }
}

//! The one line each phase ends with on the terminal: what it measured.

use super::{Ingest, LogsQueryRuns, LogsResults, QueryVariant};
use crate::numbers::ratio;
use crate::table_bytes::StorageSnapshot;
use crate::units::{human_bytes, milliseconds, per_second, percent, seconds, times};

pub(super) fn ingest_summary(ingest: &Ingest) -> String {
    let raw = ingest.raw_engine.as_ref().and_then(|raw| raw.rows_per_second);
    match &ingest.harness {
        Some(harness) => format!(
            "ingest: {} rows in {} ({} rows/s; raw engine {} rows/s), {} partitions, {} active parts",
            harness.rows,
            seconds(harness.timing.seconds, 1),
            per_second(harness.timing.rows_per_second),
            per_second(raw),
            harness.partitions,
            harness.active_parts
        ),
        None => format!("ingest: raw engine {} rows/s", per_second(raw)),
    }
}

pub(super) fn storage_summary(lz4: &StorageSnapshot, zstd: &StorageSnapshot) -> String {
    let saving = ratio(zstd.compressed_bytes() as f64, lz4.compressed_bytes() as f64).map_or(
        "ZSTD(3) against LZ4 unknown".to_string(),
        |share| match 100.0 * (1.0 - share) {
            saving if saving >= 0.0 => format!("{saving:.0} % smaller"),
            saving => format!("{:.0} % larger", -saving),
        },
    );
    format!(
        "storage: LZ4 {} ({}), ZSTD(3) {} ({}), {saving}",
        human_bytes(lz4.compressed_bytes()),
        times(lz4.compression_ratio()),
        human_bytes(zstd.compressed_bytes()),
        times(zstd.compression_ratio()),
    )
}

pub(super) fn queries_summary(queries: &[LogsQueryRuns]) -> String {
    if queries.iter().any(|runs| runs.ab_variant.is_some()) {
        let parts: Vec<String> = queries
            .iter()
            .map(|runs| {
                format!(
                    "{} {} {}",
                    runs.query,
                    runs.ab_variant.as_deref().unwrap_or("-"),
                    milliseconds(runs.warm_median_ms())
                )
            })
            .collect();
        return format!(
            "queries (warm median by variant; compare them with cargo xtask compare): {}",
            parts.join(", ")
        );
    }
    let parts: Vec<String> = queries
        .iter()
        .map(|runs| {
            format!(
                "{} {} / {}",
                runs.query,
                milliseconds(runs.direct_io().map(|sample| sample.stats.server_ms())),
                milliseconds(runs.warm_min_ms())
            )
        })
        .collect();
    format!("queries (direct I/O / warm min): {}", parts.join(", "))
}

pub(super) fn bloom_summary(logs: &LogsResults) -> String {
    let find = |variant: QueryVariant| logs.queries.iter().find(|runs| runs.query == "q5" && runs.variant == variant);
    let (Some(before), Some(after), Some(bloom)) =
        (find(QueryVariant::WithoutIndex), find(QueryVariant::BloomFilter), &logs.bloom_filter)
    else {
        return "bloom filter: incomplete".to_string();
    };
    let rows = |runs: &LogsQueryRuns| runs.samples.last().map_or(0, |sample| sample.stats.read_rows);
    let warm = |runs: &LogsQueryRuns| milliseconds(runs.warm_min_ms());
    format!(
        "bloom filter: q5 warm {} -> {}, {} -> {} rows read, index {} ({} of the table), materialize {}",
        warm(before),
        warm(after),
        rows(before),
        rows(after),
        human_bytes(bloom.index_compressed_bytes),
        percent(bloom.index_share_of_table(), "unknown share"),
        seconds(bloom.materialize.seconds, 1)
    )
}

//! The logs benchmark's section of a report, and its charts, made from its results
//! alone. The source's reported numbers stand beside ours, labelled as the source's:
//! their hardware, their version, 100 M rows.

use std::fmt::Write as _;

use anyhow::Result;

use super::results::{LogsQueryRuns, LogsResults, QueryVariant};
use crate::breakdown::{Bottleneck, TimeBreakdown};
use crate::markdown::Table;
use crate::numbers::ratio;
use crate::query_runs::Sample;
use crate::report::charts::{self, Bars};
use crate::storage_baseline::{ABOVE_VOLUME_SHARE, ReadVerdict, StorageBaseline, VOLUME_BOUND_SHARE};
use crate::target_info::StorageVolume;
use crate::units::{exact, human_bytes, milliseconds, number, per_second, percent, times};

/// What the ClickHouse on EKS field benchmark (docs/sources.md) reported: one m5.xlarge (3.5 vCPU limit), gp3 100 GiB at
/// 125 MiB/s, ClickHouse 24.8, 100 M rows. Not comparable in absolute terms to a run
/// elsewhere; shown for the pattern.
pub mod source {
    pub const LABEL: &str = "source (the ClickHouse on EKS field benchmark, docs/sources.md): m5.xlarge \
                             (3.5 vCPU), gp3 125 MiB/s, ClickHouse 24.8, 100 M rows";
    pub const INGEST_SECONDS: f64 = 106.7;
    pub const INGEST_ROWS_PER_SECOND: f64 = 936_800.0;
    pub const PARTITIONS: u64 = 7;
    pub const ACTIVE_PARTS: u64 = 36;
    /// Column, LZ4 compressed, uncompressed, ratio, as the source printed them.
    pub const LZ4_COLUMNS: [(&str, &str, &str, &str); 8] = [
        ("message", "3.97 GiB", "8.75 GiB", "2.2x"),
        ("trace_id", "3.08 GiB", "3.07 GiB", "1.0x"),
        ("timestamp", "404.07 MiB", "762.94 MiB", "1.89x"),
        ("duration_ms", "289.17 MiB", "381.47 MiB", "1.32x"),
        ("level", "45.88 MiB", "95.72 MiB", "2.09x"),
        ("container", "39.27 MiB", "95.72 MiB", "2.44x"),
        ("pod", "9.32 MiB", "2.15 GiB", "236x"),
        ("namespace", "488.63 KiB", "95.72 MiB", "201x"),
    ];
    pub const LZ4_TOTAL: &str = "15.37 GiB -> 7.82 GiB (1.97x)";
    pub const ZSTD_TOTAL: &str = "15.37 GiB -> 4.16 GiB (3.7x), 47 % less than LZ4";
    pub const ZSTD_REINSERT_SECONDS: f64 = 120.0;
    /// The source's gp3 volume, the one a run on `--storage gp3` is held to.
    pub const VOLUME: &str = "a gp3 EBS volume of 3,000 IOPS and 125 MiB/s";
    /// The direct-I/O runs as numbers: query, milliseconds, rows read (the same figures as
    /// [`QUERIES`] prints; a test keeps them so).
    pub const DIRECT_IO: [(&str, f64, u64); 5] = [
        ("q1", 13.0, 16_385),
        ("q2", 570.0, 28_000_000),
        ("q3", 31_500.0, 100_000_000),
        ("q4", 1_340.0, 100_000_000),
        ("q5", 24_300.0, 100_000_000),
    ];
    /// Query, direct-I/O time, warm time (min of 3), read_rows.
    pub const QUERIES: [(&str, &str, &str, &str); 5] = [
        ("q1", "13 ms", "4 ms", "16,385"),
        ("q2", "0.57 s", "0.36 s", "28,000,000"),
        ("q3", "31.5 s", "2.63 s", "100,000,000"),
        ("q4", "1.34 s", "1.03 s", "100,000,000"),
        ("q5", "24.3 s", "1.13 s", "100,000,000"),
    ];
    pub const BLOOM: &str = "warm 1.13 s -> 0.036 s, 100 M -> 1.08 M rows read, 3.82 GiB -> 42.6 MiB read, \
                             index 119.7 MiB (1.5 % of the table), materialize 20 s";
    pub const COST: &str = "volume $9.12/month as provisioned (100 GiB); 100 M rows/day for 30 days is \
                            ~235 GiB, ~$21.43/month of volume";
}

/// The section: dataset, ingest, storage, queries, bloom filter, cost; each part only
/// when it was measured. `baseline` is the bundle's storage baseline, which each query's
/// direct-I/O read rate is compared with; `volume` the storage profile's volume the run
/// was on, whose direct-I/O runs are then set against the source's.
pub fn markdown(logs: &LogsResults, baseline: Option<&StorageBaseline>, volume: Option<&StorageVolume>) -> String {
    let mut out = String::new();
    let variants = ab_variants(logs);
    let runs = if variants.is_empty() {
        format!("{} warm runs per query", logs.dataset.warm_runs)
    } else {
        format!(
            "an A/B run of {}: {} rounds per query, each variant once a round, after a warm-up each",
            variants.join(", "),
            logs.dataset.warm_runs
        )
    };
    let _ = writeln!(
        out,
        "- dataset: {} rows, timestamp step {} ms; {runs}\n- {}\n",
        logs.dataset.rows,
        logs.dataset.step_ms,
        source::LABEL
    );
    ingest(&mut out, logs);
    storage(&mut out, logs);
    if !variants.is_empty() {
        ab_queries(&mut out, logs, &variants);
    }
    queries(&mut out, logs, baseline);
    against_the_sources_volume(&mut out, logs, volume);
    bloom_filter(&mut out, logs);
    cost(&mut out, logs);
    run_time(&mut out, logs);
    out
}

/// On a storage profile's volume: each query's direct-I/O run beside the source's, whose
/// volume was gp3, with the source's time scaled by the rows each read (a scan the volume
/// holds back takes time in proportion to what it reads). Only a run of one
/// configuration: an A/B run's direct-I/O runs are its variants'.
fn against_the_sources_volume(out: &mut String, logs: &LogsResults, volume: Option<&StorageVolume>) {
    let Some(volume) = volume else { return };
    if logs.queries.iter().any(|runs| runs.ab_variant.is_some()) {
        return;
    }
    let _ = writeln!(
        out,
        "## Direct I/O against the source's gp3 volume\n\nThis run's data was on storage profile {} ({}); the \
         source's on {}, at 100 M rows. The source's direct-I/O time is scaled by the rows each query read here \
         against there: a scan the volume holds back takes time in proportion to what it reads. The two volumes \
         have the same limits only when the profile is gp3.\n",
        volume.limits,
        volume.approximation,
        source::VOLUME
    );
    let mut table = Table::new([
        "query",
        "direct I/O",
        "read_rows",
        "read MiB/s",
        "source direct I/O",
        "source read_rows",
        "source, scaled to these rows",
        "this run / scaled source",
    ]);
    for runs in logs.queries.iter().filter(|runs| runs.variant != QueryVariant::BloomFilter) {
        let Some((_, source_ms, source_rows)) = source::DIRECT_IO.iter().find(|(name, ..)| *name == runs.query) else {
            continue;
        };
        let direct = runs.direct_io();
        let direct_ms = direct.map(|sample| sample.stats.server_ms());
        let read_rows = direct.map(|sample| sample.stats.read_rows);
        let scaled_ms = read_rows.map(|rows| source_ms * rows as f64 / *source_rows as f64);
        let read_mib_per_s = direct.and_then(|sample| sample.breakdown.as_ref()?.read_mib_per_s);
        table.row([
            runs.query.clone(),
            milliseconds(direct_ms),
            read_rows.map_or("-".to_string(), |rows| rows.to_string()),
            number(read_mib_per_s, 1),
            milliseconds(Some(*source_ms)),
            source_rows.to_string(),
            milliseconds(scaled_ms),
            times(direct_ms.zip(scaled_ms).and_then(|(ms, scaled)| ratio(ms, scaled))),
        ]);
    }
    let _ = writeln!(out, "{table}");
}

/// The run's wall time against the engine's time in the statements it ran, so that
/// anyone can see what the run spent around its statements.
fn run_time(out: &mut String, logs: &LogsResults) {
    let Some(time) = &logs.run_time else { return };
    let _ = writeln!(
        out,
        "## Run time
"
    );
    let mut table = Table::new(["", "seconds"]);
    table
        .row(["wall time (bundle start to the end of the last phase)".to_string(), number(time.wall_seconds, 1)])
        .row([format!("engine time of the {} statements it ran", time.statements), number(time.engine_seconds, 1)])
        .row(["this process's time around those statements".to_string(), number(time.client_seconds, 1)]);
    let _ = write!(out, "{table}");
    let unknown = if time.statements_without_engine_time > 0 {
        format!(" ({} statements reported no engine time)", time.statements_without_engine_time)
    } else {
        String::new()
    };
    let _ = writeln!(out, "\nWall time over engine time: {}{unknown}.\n", times(time.wall_over_engine()));
}

/// The charts the section shows: file name and SVG.
pub fn charts(logs: &LogsResults) -> Result<Vec<(&'static str, String)>> {
    Ok(vec![
        ("storage.svg", storage_chart(logs)?),
        ("queries.svg", queries_chart(logs)?),
        ("breakdown.svg", breakdown_chart(logs)?),
    ])
}

fn ingest(out: &mut String, logs: &LogsResults) {
    let Some(ingest) = &logs.ingest else { return };
    let raw = ingest.raw_engine.as_ref();
    let harness = ingest.harness.as_ref();
    let _ = writeln!(out, "## Ingest (server-side INSERT ... SELECT)\n");
    let mut table = Table::new(["", "this run", "source"]);
    table
        .row([
            "seconds".to_string(),
            harness.map_or("unknown".to_string(), |harness| number(harness.timing.seconds, 1)),
            source::INGEST_SECONDS.to_string(),
        ])
        .row([
            "rows/s".to_string(),
            per_second(harness.and_then(|harness| harness.timing.rows_per_second)),
            format!("{:.0}", source::INGEST_ROWS_PER_SECOND),
        ])
        .row([
            "partitions".to_string(),
            harness.map_or("unknown".to_string(), |harness| harness.partitions.to_string()),
            source::PARTITIONS.to_string(),
        ])
        .row([
            "active parts after ingest".to_string(),
            harness.map_or("unknown".to_string(), |harness| harness.active_parts.to_string()),
            source::ACTIVE_PARTS.to_string(),
        ]);
    let _ = write!(out, "{table}");
    match &ingest.calibration {
        Some(calibration) => {
            let spread = calibration.ratio_spread();
            let _ = writeln!(
                out,
                "\nHarness overhead on ingest, calibrated on {} rows after a warm-up, the raw engine and the \
                 harness in turn (R H H R H R R H): the raw engine ran at {} rows/s (median); harness over raw \
                 {} (median of {} pairs, from {} to {}).\n",
                calibration.sample_rows,
                per_second(raw.and_then(|raw| raw.rows_per_second)),
                times(spread.map(|(median, _, _)| median)),
                calibration.harness_over_raw.len(),
                times(spread.map(|(_, low, _)| low)),
                times(spread.map(|(_, _, high)| high)),
            );
        }
        // A bundle from before the calibration: both ran the full statement, raw first.
        None => {
            let _ = writeln!(
                out,
                "\nHarness overhead on ingest: the same statement straight on the engine ran at {} rows/s; \
                 through the harness {} rows/s ({}). The statement straight on the engine runs first, and the \
                 first heavy statement of a process runs slower (docs/embedded-engine.md), so at small scales \
                 this ratio flatters the harness.\n",
                per_second(raw.and_then(|raw| raw.rows_per_second)),
                per_second(harness.and_then(|harness| harness.timing.rows_per_second)),
                times(ingest.harness_over_raw())
            );
        }
    }
    if harness.is_none() {
        let _ = writeln!(out, "The run stopped before the ingest through the harness finished.\n");
    }
}

fn storage(out: &mut String, logs: &LogsResults) {
    let Some(first) = logs.storage.first() else { return };
    let _ = writeln!(out, "## Storage by column\n\n![storage](storage.svg)\n");
    // Per-column rows only when the first table has them; what is missing is said below.
    if !first.columns.is_empty() {
        let mut header = vec!["column".to_string()];
        for snapshot in &logs.storage {
            header.extend([format!("{} compressed", snapshot.codec), "ratio".to_string()]);
        }
        header.extend(["uncompressed".to_string(), "source LZ4 (compressed / uncompressed / ratio)".to_string()]);
        let mut table = Table::new(header);
        for column in &first.columns {
            let mut cells = vec![column.column.clone()];
            for snapshot in &logs.storage {
                match snapshot.columns.iter().find(|same| same.column == column.column) {
                    Some(same) => {
                        let column_ratio = ratio(same.uncompressed_bytes as f64, same.compressed_bytes as f64);
                        cells.extend([human_bytes(same.compressed_bytes), times(column_ratio)]);
                    }
                    None => cells.extend(["unknown".to_string(), "unknown".to_string()]),
                }
            }
            let source_column = source::LZ4_COLUMNS
                .iter()
                .find(|(name, ..)| *name == column.column)
                .map(|(_, compressed, uncompressed, ratio)| format!("{compressed} / {uncompressed} / {ratio}"))
                .unwrap_or_default();
            cells.extend([human_bytes(column.uncompressed_bytes), source_column]);
            table.row(cells);
        }
        let _ = write!(out, "{table}");
        out.push('\n');
    }
    for snapshot in &logs.storage {
        let _ = writeln!(
            out,
            "- {} `{}`: {} -> {} ({}), {}",
            snapshot.codec,
            snapshot.table,
            human_bytes(snapshot.uncompressed_bytes()),
            human_bytes(snapshot.compressed_bytes()),
            times(snapshot.compression_ratio()),
            snapshot.label
        );
        if let Some(note) = &snapshot.columns_note {
            let _ = writeln!(out, "- {} per column: {note}", snapshot.codec);
        }
    }
    if let Some(reinsert) = &logs.zstd_reinsert {
        let _ = writeln!(
            out,
            "- ZSTD(3) re-insert: {} (source: {} s)",
            milliseconds(reinsert.seconds.map(|seconds| seconds * 1000.0)),
            source::ZSTD_REINSERT_SECONDS
        );
    }
    let _ = writeln!(out, "- source: LZ4 {}; ZSTD(3) {}", source::LZ4_TOTAL, source::ZSTD_TOTAL);
    let _ = writeln!(
        out,
        "\nA storage figure depends on the engine version and on how many parts had been merged when it was taken (the part counts above).\n"
    );
}

fn queries(out: &mut String, logs: &LogsResults, baseline: Option<&StorageBaseline>) {
    if logs.queries.is_empty() {
        return;
    }
    if logs.queries.iter().any(|runs| runs.ab_variant.is_some()) {
        // The A/B table came first, with the chart; here, every query runs' details.
        let _ = writeln!(out, "### Each variant's query runs\n");
    } else {
        let _ = writeln!(
            out,
            "## Queries: caches dropped, one direct-I/O run, then warm runs\n\n![queries](queries.svg)\n"
        );
    }
    let mut table = Table::new([
        "query",
        "variant",
        "runs",
        "direct I/O",
        "warm min",
        "warm median",
        "read_rows",
        "read_bytes",
        "direct-I/O read MiB/s",
        "against the storage baseline",
        "direct I/O bound",
        "warm bound",
        "harness overhead (median)",
        "source direct / warm / read_rows",
    ]);
    for runs in &logs.queries {
        let direct = runs.direct_io();
        let direct_ms = direct.map(|sample| sample.stats.server_ms());
        let throughput =
            direct.and_then(|sample| sample.breakdown.as_ref()?.read_mib_per_s).map_or("-".to_string(), |rate| {
                match logs.volume_limit_mib_per_s {
                    Some(limit) => format!("{} (volume limit {})", number(rate, 1), number(limit, 0)),
                    None => number(rate, 1),
                }
            });
        // Only the direct-I/O run reads the volume: warm runs read the page cache.
        let against_volume = match direct {
            Some(sample) => {
                ReadVerdict::of(sample.breakdown.as_ref().and_then(|breakdown| breakdown.read_mib_per_s), baseline)
                    .label()
            }
            None => "-".to_string(),
        };
        let warm_bound = runs.warm_upper_median_sample().map_or("-", bottleneck_of);
        let source_query = source::QUERIES
            .iter()
            .find(|(name, ..)| *name == runs.query && runs.variant != QueryVariant::BloomFilter)
            .map(|(_, direct, warm, rows)| format!("{direct} / {warm} / {rows}"))
            .unwrap_or_default();
        table.row([
            runs.query.clone(),
            match &runs.ab_variant {
                Some(name) => format!("{}, {name}", runs.variant.label()),
                None => runs.variant.label().to_string(),
            },
            runs.samples.len().to_string(),
            milliseconds(direct_ms),
            milliseconds(runs.warm_min_ms()),
            milliseconds(runs.warm_median_ms()),
            direct.map_or("-".to_string(), |sample| sample.stats.read_rows.to_string()),
            direct.map_or("-".to_string(), |sample| human_bytes(sample.stats.read_bytes)),
            throughput,
            against_volume,
            direct.map_or("-", bottleneck_of).to_string(),
            warm_bound.to_string(),
            milliseconds(runs.harness_overhead_ms()),
            source_query,
        ]);
    }
    let _ = write!(out, "{table}");
    let _ = writeln!(
        out,
        "\nTimes are server-side. Every sample is in `results.json`. \"Harness overhead\" is the client-observed time minus the server's, over the warm runs. \"Against the storage baseline\": the direct-I/O run's read rate (bytes read from files over the server-side duration) is volume-bound when it reaches {:.0} % of the sequential read rate measured on the volume (fio, or chbench's probe where fio is not installed: docs/storage-baseline.md), above the volume's rate beyond {:.0} % (a scan short enough to fit in the volume's first burst), below the volume's rate otherwise, and unknown without a baseline.",
        VOLUME_BOUND_SHARE * 100.0,
        ABOVE_VOLUME_SHARE * 100.0
    );
    out.push_str(WHERE_THE_TIME_WENT);
}

/// The breakdown chart and how to read it, after the queries of any run.
const WHERE_THE_TIME_WENT: &str = "\n## Where the time went\n\n![time breakdown](breakdown.svg)\n\nShares of thread time from ProfileEvents: CPU (user + system), read wait (`DiskReadElapsedMicroseconds`), the rest. The rest includes threads idling while they wait for work. A query is read-bound when its read wait is at least 1.5 times its CPU time, CPU-bound the other way round, and mixed in between.\n\n";

/// The names of an A/B run's variants, in the order its query runs give them (the
/// baseline first); none for a run of one configuration.
fn ab_variants(logs: &LogsResults) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for name in logs.queries.iter().filter_map(|runs| runs.ab_variant.as_deref()) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// An A/B run's queries: each variant's warm median and range side by side, per query and
/// form. Whether they differ is the comparison's to say, from the same bundle.
fn ab_queries(out: &mut String, logs: &LogsResults, variants: &[&str]) {
    let _ = writeln!(
        out,
        "## Queries, A/B: caches dropped, a warm-up per variant, then rounds in shuffled turns\n\n![queries](queries.svg)\n"
    );
    let mut header = vec!["query".to_string(), "form".to_string(), "rounds".to_string()];
    header.extend(variants.iter().map(|name| format!("{name}: warm median (min-max)")));
    header.push("read_rows".to_string());
    let mut table = Table::new(header);
    let mut forms: Vec<(&str, QueryVariant)> = Vec::new();
    for runs in &logs.queries {
        if !forms.contains(&(runs.query.as_str(), runs.variant)) {
            forms.push((runs.query.as_str(), runs.variant));
        }
    }
    for (query, form) in forms {
        let of = |name: &str| {
            logs.queries
                .iter()
                .find(|runs| runs.query == query && runs.variant == form && runs.ab_variant.as_deref() == Some(name))
        };
        let rounds: Vec<usize> = variants.iter().map(|name| of(name).map_or(0, |runs| runs.warm_ms().len())).collect();
        let mut cells = vec![query.to_string(), form.label().to_string(), rounds_cell(&rounds)];
        for name in variants {
            cells.push(of(name).map_or("-".to_string(), |runs| {
                let warm = runs.warm_ms();
                format!(
                    "{} ({}-{})",
                    milliseconds(runs.warm_median_ms()),
                    milliseconds(warm.first().copied()),
                    milliseconds(warm.last().copied())
                )
            }));
        }
        let read_rows = of(variants[0])
            .and_then(|runs| runs.warm_samples().next())
            .map_or("-".to_string(), |sample| sample.stats.read_rows.to_string());
        cells.push(read_rows);
        table.row(cells);
    }
    let _ = write!(out, "{table}");
    let _ = writeln!(
        out,
        "\nTimes are server-side, over the measured rounds (the warm-ups are not counted). Each round ran every variant once, in an order shuffled from the run's seed (`ab_run.seed`), on the same dataset in the same process: see docs/ab-runs.md. Whether two variants differ is for `cargo xtask compare` on this bundle to say; medians side by side are not a verdict. Every sample is in `results.json`.\n"
    );
}

/// Rounds measured: one number when every variant has the same, else each variant's (a
/// stopped run's last round may be partial).
fn rounds_cell(rounds: &[usize]) -> String {
    match rounds {
        [first, rest @ ..] if rest.iter().all(|count| count == first) => first.to_string(),
        _ => rounds.iter().map(usize::to_string).collect::<Vec<_>>().join(" / "),
    }
}

fn bloom_filter(out: &mut String, logs: &LogsResults) {
    let Some(bloom) = &logs.bloom_filter else { return };
    let find = |variant: QueryVariant| logs.queries.iter().find(|runs| runs.query == "q5" && runs.variant == variant);
    let _ = writeln!(out, "## Bloom filter on trace_id (Q5)\n");
    let cell =
        |runs: Option<&LogsQueryRuns>, value: &dyn Fn(&LogsQueryRuns) -> String| runs.map_or("-".to_string(), value);
    let (before, after) = (find(QueryVariant::WithoutIndex), find(QueryVariant::BloomFilter));
    let warm = |runs: &LogsQueryRuns| milliseconds(runs.warm_min_ms());
    let rows =
        |runs: &LogsQueryRuns| runs.samples.last().map_or("-".to_string(), |sample| sample.stats.read_rows.to_string());
    let bytes = |runs: &LogsQueryRuns| {
        runs.samples.last().map_or("-".to_string(), |sample| human_bytes(sample.stats.read_bytes))
    };
    let mut table = Table::new(["", "without index", "bloom_filter(0.01) GRANULARITY 4"]);
    table
        .row(["warm (min)".to_string(), cell(before, &warm), cell(after, &warm)])
        .row(["rows read".to_string(), cell(before, &rows), cell(after, &rows)])
        .row(["bytes read".to_string(), cell(before, &bytes), cell(after, &bytes)])
        .row([
            "index size".to_string(),
            "-".to_string(),
            format!(
                "{} ({} of the table's compressed bytes)",
                human_bytes(bloom.index_compressed_bytes),
                percent(bloom.index_share_of_table(), "unknown share")
            ),
        ])
        .row([
            "materialize".to_string(),
            "-".to_string(),
            milliseconds(bloom.materialize.seconds.map(|seconds| seconds * 1000.0)),
        ]);
    let _ = write!(out, "{table}");
    if let Some(name) = before.or(after).and_then(|runs| runs.ab_variant.as_deref()) {
        let _ = writeln!(out, "\nTimes and reads of variant `{name}`; the A/B table above has every variant's.");
    }
    let _ = writeln!(out, "\nSource: {}\n", source::BLOOM);
}

fn cost(out: &mut String, logs: &LogsResults) {
    let Some(cost) = &logs.cost else { return };
    let inputs = &cost.inputs;
    let _ = writeln!(out, "## Cost\n");
    let _ = writeln!(
        out,
        "Inputs: node ${}/h, volume ${}/GB-month, {} GiB provisioned; retention {} rows/day for {} days.\n",
        exact(inputs.node_usd_per_hour),
        exact(inputs.volume_usd_per_gb_month),
        exact(inputs.volume_gib),
        inputs.rows_per_day,
        inputs.retention_days
    );
    let _ = writeln!(out, "- node: ${}/month", number(cost.node_usd_per_month, 2));
    let _ = writeln!(
        out,
        "- volume as provisioned (what is billed): ${}/month",
        number(cost.provisioned_volume_usd_per_month, 2)
    );
    let _ = writeln!(
        out,
        "- bytes the table uses: {} (${}/month at the volume price; NOT the bill, which follows the provisioned size)",
        human_bytes(cost.used_bytes),
        number(cost.used_bytes_usd_per_month_not_billed, 2)
    );
    let _ = writeln!(
        out,
        "- retention at {} bytes/row: {} GiB, ${}/month of volume{}; merges, indexes, replicas and headroom come on top",
        number(cost.bytes_per_row, 1),
        number(cost.retention_gib, 1),
        number(cost.retention_usd_per_month, 2),
        if cost.retention_fits_volume { "" } else { ", more than the provisioned volume" }
    );
    if logs.dataset.rows < 1_000_000 {
        let _ = writeln!(
            out,
            "- the bytes per row come from {} rows: small tables compress worse, so the projection overstates",
            logs.dataset.rows
        );
    }
    let _ = writeln!(out, "- source: {}\n", source::COST);
}

fn storage_chart(logs: &LogsResults) -> Result<String> {
    let Some(first) = logs.storage.first() else { return Ok(charts::empty("no storage measured")) };
    if first.columns.is_empty() {
        return Ok(charts::empty("per-column sizes unknown (see the report)"));
    }
    let groups: Vec<Bars> = first
        .columns
        .iter()
        .map(|column| Bars {
            category: column.column.clone(),
            values: logs
                .storage
                .iter()
                .map(|snapshot| {
                    snapshot
                        .columns
                        .iter()
                        .find(|same| same.column == column.column)
                        .map(|same| same.compressed_bytes as f64 / 1048576.0)
                })
                .collect(),
        })
        .collect();
    let codecs: Vec<&str> = logs.storage.iter().map(|snapshot| snapshot.codec.as_str()).collect();
    charts::log_bars("Compressed bytes per column", "MiB", &codecs, &groups)
}

fn queries_chart(logs: &LogsResults) -> Result<String> {
    let variants = ab_variants(logs);
    if !variants.is_empty() {
        return ab_queries_chart(logs, &variants);
    }
    let groups: Vec<Bars> = logs
        .queries
        .iter()
        .map(|runs| Bars {
            category: chart_category(runs),
            values: vec![runs.direct_io().map(|sample| sample.stats.server_ms()), runs.warm_min_ms()],
        })
        .collect();
    charts::log_bars("Direct I/O vs warm (min), server-side", "ms", &["direct I/O", "warm min"], &groups)
}

/// An A/B run's queries: each variant's warm median, side by side, per query and form (an
/// A/B run has no direct-I/O runs).
fn ab_queries_chart(logs: &LogsResults, variants: &[&str]) -> Result<String> {
    let mut groups: Vec<Bars> = Vec::new();
    for runs in &logs.queries {
        let category = format!("{} {}", runs.query, runs.variant.label());
        if groups.iter().any(|group| group.category == category) {
            continue;
        }
        let values = variants
            .iter()
            .map(|name| {
                logs.queries
                    .iter()
                    .find(|other| {
                        other.query == runs.query
                            && other.variant == runs.variant
                            && other.ab_variant.as_deref() == Some(*name)
                    })
                    .and_then(LogsQueryRuns::warm_median_ms)
            })
            .collect();
        groups.push(Bars { category, values });
    }
    charts::log_bars("Warm median by variant, server-side", "ms", variants, &groups)
}

/// A query runs' label in charts: the query and its form, and an A/B run's variant.
fn chart_category(runs: &LogsQueryRuns) -> String {
    match &runs.ab_variant {
        Some(name) => format!("{} {} {name}", runs.query, runs.variant.label()),
        None => format!("{} {}", runs.query, runs.variant.label()),
    }
}

/// A sample's bottleneck as reports say it, `unknown` for one without a breakdown.
fn bottleneck_of(sample: &Sample) -> &'static str {
    sample.breakdown.as_ref().map_or(Bottleneck::Unknown.label(), |breakdown| breakdown.bottleneck.label())
}

/// A sample's shares of thread time (CPU, read wait, other); unknown (no bar) without a
/// breakdown.
fn shares_of(sample: &Sample) -> [Option<f64>; 3] {
    sample
        .breakdown
        .as_ref()
        .map(TimeBreakdown::shares)
        .map_or([None; 3], |(cpu, read, other)| [cpu, read, other].map(Some))
}

/// Shares of thread time for each query's direct-I/O run and warm median run.
fn breakdown_chart(logs: &LogsResults) -> Result<String> {
    let mut rows = Vec::new();
    for runs in &logs.queries {
        let name = chart_category(runs);
        if let Some(sample) = runs.direct_io() {
            rows.push((format!("{name} direct I/O"), shares_of(sample)));
        }
        if let Some(sample) = runs.warm_upper_median_sample() {
            rows.push((format!("{name} warm"), shares_of(sample)));
        }
    }
    charts::shares("Share of thread time", ["CPU", "read wait", "other"], &rows)
}

#[cfg(test)]
mod tests {
    use super::source;

    /// The numbers the gp3 table scales are the figures the source printed.
    #[test]
    fn the_sources_direct_io_numbers_are_the_ones_it_printed() {
        assert_eq!(source::DIRECT_IO.len(), source::QUERIES.len());
        for ((name, ms, rows), (printed_name, direct, _, printed_rows)) in source::DIRECT_IO.iter().zip(source::QUERIES)
        {
            assert_eq!(*name, printed_name);
            let printed_ms = match direct.split_once(' ') {
                Some((value, "ms")) => value.parse::<f64>().unwrap(),
                Some((value, "s")) => value.parse::<f64>().unwrap() * 1e3,
                _ => panic!("{direct}"),
            };
            assert!((printed_ms - ms).abs() < 1e-6, "{name}: {direct} against {ms} ms");
            assert_eq!(printed_rows.replace(',', "").parse::<u64>().unwrap(), *rows, "{name}");
        }
    }
}

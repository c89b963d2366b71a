//! The report of a run: Markdown and SVG charts made from a results bundle alone (never
//! from a live target), with the source's reported numbers beside ours where the
//! source has them, labelled as the source's: their hardware, their version, 100 M rows.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use crate::results::{QueryRuns, RunBundle, RunStatus, load_bundle, ratio};
use crate::units::{compact, exact, human_bytes, milliseconds, number, per_second, times};

/// What the ClickHouse on EKS field benchmark (docs/sources.md) reported: one m5.xlarge (3.5 vCPU limit), gp3 100 GiB at
/// 125 MiB/s, ClickHouse 24.8, 100 M rows. Not comparable in absolute terms to a run
/// elsewhere; shown for the pattern.
pub mod source {
    pub const LABEL: &str = "source: m5.xlarge (3.5 vCPU), gp3 125 MiB/s, ClickHouse 24.8, 100 M rows";
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

/// Renders `report.md` and the charts into the bundle folder; returns the report path.
pub fn write_report(bundle_dir: &Path) -> Result<std::path::PathBuf> {
    let bundle = load_bundle(bundle_dir)?;
    let charts = [
        ("storage.svg", storage_chart(&bundle)),
        ("queries.svg", queries_chart(&bundle)),
        ("breakdown.svg", breakdown_chart(&bundle)),
    ];
    for (name, svg) in &charts {
        let path = bundle_dir.join(name);
        fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let path = bundle_dir.join("report.md");
    fs::write(&path, markdown(&bundle)).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// The Markdown report.
pub fn markdown(bundle: &RunBundle) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# logs benchmark, run {}\n", bundle.run_id);
    if bundle.status == RunStatus::Incomplete {
        let _ = writeln!(
            out,
            "**Incomplete run**: stopped during `{}`{}. Everything below was measured before that.\n",
            bundle.phase,
            bundle.error.as_ref().map(|error| format!(" ({error})")).unwrap_or_default()
        );
    }
    let _ = writeln!(
        out,
        "- target: {} (ClickHouse {}, {})\n- dataset: {} rows, timestamp step {} ms; {} warm runs per query\n- session settings: {}\n- {}\n",
        bundle.target.kind,
        bundle.target.engine_version,
        bundle.target.endpoint,
        bundle.dataset.rows,
        bundle.dataset.step_ms,
        bundle.dataset.warm_runs,
        bundle
            .session_settings
            .iter()
            .map(|(name, value)| format!("`{name} = {value}`"))
            .collect::<Vec<_>>()
            .join(", "),
        source::LABEL
    );
    machine_section(&mut out, bundle);

    if let Some(ingest) = &bundle.ingest {
        let _ = writeln!(out, "## Ingest (server-side INSERT ... SELECT)\n");
        let _ = writeln!(out, "| | this run | source |\n| --- | --- | --- |");
        let _ = writeln!(out, "| seconds | {} | {} |", number(ingest.seconds, 1), source::INGEST_SECONDS);
        let _ = writeln!(
            out,
            "| rows/s | {} | {:.0} |",
            per_second(ingest.rows_per_second),
            source::INGEST_ROWS_PER_SECOND
        );
        let _ = writeln!(out, "| partitions | {} | {} |", ingest.partitions, source::PARTITIONS);
        let _ = writeln!(out, "| active parts after ingest | {} | {} |", ingest.active_parts, source::ACTIVE_PARTS);
        let against_raw =
            ingest.rows_per_second.zip(ingest.raw_engine_rows_per_second).and_then(|(ours, raw)| ratio(ours, raw));
        let _ = writeln!(
            out,
            "\nHarness overhead on ingest: the same statement straight on the engine ran at {} rows/s; \
             through the harness {} rows/s ({}). The statement straight on the engine runs first, \
             and the first heavy statement of a process runs slower (docs/embedded-engine.md), so at \
             small scales this ratio flatters the harness.\n",
            per_second(ingest.raw_engine_rows_per_second),
            per_second(ingest.rows_per_second),
            against_raw.map_or("unknown".to_string(), |ratio| format!("{ratio:.3}x"))
        );
        if ingest.rows_per_second.is_none() {
            let _ = writeln!(out, "Rows/s are unknown: the engine reported no duration for the statement.\n");
        }
    }

    if !bundle.storage.is_empty() {
        let _ = writeln!(out, "## Storage by column\n\n![storage](storage.svg)\n");
        // Per-column rows only when the first table has them; the reason follows below.
        if !bundle.storage[0].columns.is_empty() {
            let _ = write!(out, "| column |");
            for snapshot in &bundle.storage {
                let _ = write!(out, " {} compressed | ratio |", snapshot.codec);
            }
            let _ = writeln!(out, " uncompressed | source LZ4 (compressed / uncompressed / ratio) |");
            let _ = writeln!(out, "|{}", " --- |".repeat(3 + 2 * bundle.storage.len()));
            for (index, column) in bundle.storage[0].columns.iter().enumerate() {
                let _ = write!(out, "| {} |", column.column);
                for snapshot in &bundle.storage {
                    match snapshot.columns.get(index) {
                        Some(same) => {
                            let column_ratio = ratio(same.uncompressed_bytes as f64, same.compressed_bytes as f64);
                            let _ = write!(out, " {} | {} |", human_bytes(same.compressed_bytes), times(column_ratio));
                        }
                        None => {
                            let _ = write!(out, " unknown | unknown |");
                        }
                    }
                }
                let source_column = source::LZ4_COLUMNS
                    .iter()
                    .find(|(name, ..)| *name == column.column)
                    .map(|(_, compressed, uncompressed, ratio)| format!("{compressed} / {uncompressed} / {ratio}"))
                    .unwrap_or_default();
                let _ = writeln!(out, " {} | {source_column} |", human_bytes(column.uncompressed_bytes));
            }
        }
        out.push('\n');
        for snapshot in &bundle.storage {
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
        if let Some(reinsert) = &bundle.zstd_reinsert {
            let _ = writeln!(
                out,
                "- ZSTD(3) re-insert: {} s (source: {} s)",
                number(reinsert.seconds, 1),
                source::ZSTD_REINSERT_SECONDS
            );
        }
        let _ = writeln!(out, "- source: LZ4 {}; ZSTD(3) {}", source::LZ4_TOTAL, source::ZSTD_TOTAL);
        let _ = writeln!(
            out,
            "\nA storage figure depends on the engine version and on how many parts had been merged when it was taken (the part counts above).\n"
        );
    }

    if !bundle.queries.is_empty() {
        let _ = writeln!(
            out,
            "## Queries: caches dropped, one direct-I/O run, then warm runs\n\n![queries](queries.svg)\n"
        );
        let _ = writeln!(
            out,
            "| query | variant | direct I/O | warm min | warm median | read_rows | read_bytes | direct-I/O read MiB/s | direct I/O bound | warm bound | harness overhead (median) | source direct / warm / read_rows |"
        );
        let _ = writeln!(out, "|{}", " --- |".repeat(12));
        for runs in &bundle.queries {
            let direct = runs.direct_io();
            let direct_ms = direct.map(|sample| sample.stats.server_duration_us as f64 / 1e3);
            let throughput =
                direct.and_then(|sample| sample.breakdown.read_mib_per_s).map_or("-".to_string(), |rate| match bundle
                    .volume_limit_mib_per_s
                {
                    Some(limit) => format!("{} (volume limit {})", number(rate, 0), number(limit, 0)),
                    None => number(rate, 0),
                });
            let warm_bound = runs.warm_median_sample().map_or("-", |sample| sample.breakdown.bottleneck.label());
            let source_query = source::QUERIES
                .iter()
                .find(|(name, ..)| *name == runs.query && runs.variant != "bloom filter")
                .map(|(_, direct, warm, rows)| format!("{direct} / {warm} / {rows}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                runs.query,
                runs.variant,
                milliseconds(direct_ms),
                milliseconds(runs.warm_min_ms()),
                milliseconds(runs.warm_median_ms()),
                direct.map_or("-".to_string(), |sample| sample.stats.read_rows.to_string()),
                direct.map_or("-".to_string(), |sample| human_bytes(sample.stats.read_bytes)),
                throughput,
                direct.map_or("-", |sample| sample.breakdown.bottleneck.label()),
                warm_bound,
                milliseconds(runs.harness_overhead_ms()),
                source_query
            );
        }
        let _ = writeln!(
            out,
            "\nTimes are server-side. Every sample is in `results.json`. \"Harness overhead\" is the client-observed time minus the server's, over the warm runs.\n\n## Where the time went\n\n![time breakdown](breakdown.svg)\n\nShares of thread time from ProfileEvents: CPU (user + system), read wait (`DiskReadElapsedMicroseconds`), the rest. The rest includes threads idling while they wait for work. A query is read-bound when its read wait is at least 1.5 times its CPU time, CPU-bound the other way round, and mixed in between.\n"
        );
    }

    if let Some(bloom) = &bundle.bloom_filter {
        let find = |variant: &str| bundle.queries.iter().find(|runs| runs.query == "q5" && runs.variant == variant);
        let _ = writeln!(out, "## Bloom filter on trace_id (Q5)\n");
        let _ = writeln!(out, "| | without index | bloom_filter(0.01) GRANULARITY 4 |\n| --- | --- | --- |");
        let cell = |runs: Option<&QueryRuns>, value: &dyn Fn(&QueryRuns) -> String| runs.map_or("-".to_string(), value);
        let (before, after) = (find("without index"), find("bloom filter"));
        let warm = |runs: &QueryRuns| milliseconds(runs.warm_min_ms());
        let rows =
            |runs: &QueryRuns| runs.samples.last().map_or("-".to_string(), |sample| sample.stats.read_rows.to_string());
        let bytes = |runs: &QueryRuns| {
            runs.samples.last().map_or("-".to_string(), |sample| human_bytes(sample.stats.read_bytes))
        };
        let _ = writeln!(out, "| warm (min) | {} | {} |", cell(before, &warm), cell(after, &warm));
        let _ = writeln!(out, "| rows read | {} | {} |", cell(before, &rows), cell(after, &rows));
        let _ = writeln!(out, "| bytes read | {} | {} |", cell(before, &bytes), cell(after, &bytes));
        let _ = writeln!(
            out,
            "| index size | - | {} ({} of the table's compressed bytes) |",
            human_bytes(bloom.index_compressed_bytes),
            bloom.index_share_of_table().map_or("unknown share".to_string(), |share| format!("{:.2} %", 100.0 * share))
        );
        let _ = writeln!(out, "| materialize | - | {} s |", number(bloom.materialize.seconds, 1));
        let _ = writeln!(out, "\nSource: {}\n", source::BLOOM);
    }

    if let Some(cost) = &bundle.cost {
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
        let _ = writeln!(out, "- source: {}\n", source::COST);
    }
    out
}

/// The machine the run measured on, with a warning first when it was not quiet.
fn machine_section(out: &mut String, bundle: &RunBundle) {
    let Some(machine) = &bundle.machine else { return };
    if !machine.quiet() {
        let _ = writeln!(
            out,
            "> **Warning: the machine was not quiet.** {}; timings may be inflated.\n",
            machine.noise.join("; ")
        );
    }
    let load = |load: &crate::machine::LoadAverage| {
        format!("{} / {} / {}", number(load.one, 2), number(load.five, 2), number(load.fifteen, 2))
    };
    let _ = writeln!(
        out,
        "- machine: {}, {} logical cores, {} memory; load average (1 / 5 / 15 min) {} at the start, {} at the end",
        if machine.cpu_model.is_empty() { "unknown CPU" } else { &machine.cpu_model },
        machine.logical_cores,
        human_bytes(machine.memory_bytes),
        load(&machine.load_average_start),
        machine.load_average_end.as_ref().map_or("unknown".to_string(), load)
    );
    let others = match (machine.others_cpu_cores, &machine.others_cpu_unknown) {
        (Some(cores), _) => format!("{cores:.2} cores on average"),
        (None, Some(reason)) => format!("unknown ({reason})"),
        (None, None) => "unknown (the run did not end)".to_string(),
    };
    let _ = writeln!(out, "- other processes' CPU during the run: {others}\n");
}

// ---- SVG ----------------------------------------------------------------------------

const WIDTH: f64 = 760.0;
const LEFT: f64 = 150.0;
const ROW: f64 = 22.0;
const COLORS: [&str; 3] = ["#4e79a7", "#f28e2b", "#76b7b2"];

/// Horizontal grouped bars, one group per category, on a log or linear scale.
fn bar_chart(title: &str, unit: &str, categories: &[String], series: &[(&str, Vec<f64>)], log_scale: bool) -> String {
    let bars = categories.len() * series.len();
    let height = 60.0 + bars as f64 * ROW + categories.len() as f64 * 8.0 + 30.0;
    let max = series.iter().flat_map(|(_, values)| values.iter().copied()).fold(0.0_f64, f64::max).max(1e-9);
    let min_positive = series
        .iter()
        .flat_map(|(_, values)| values.iter().copied())
        .filter(|value| *value > 0.0)
        .fold(f64::INFINITY, f64::min)
        .min(max);
    let floor = if log_scale { (min_positive / 2.0).log10().floor() } else { 0.0 };
    let scale = |value: f64| -> f64 {
        let span = WIDTH - LEFT - 120.0;
        if !value.is_finite() || value <= 0.0 {
            0.0
        } else if log_scale {
            ((value.log10() - floor) / (max.log10() - floor).max(1e-9)).clamp(0.0, 1.0) * span
        } else {
            value / max * span
        }
    };
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" font-size=\"15\">{}</text>\n",
        escape(title)
    );
    for (index, (name, _)) in series.iter().enumerate() {
        let x = LEFT + index as f64 * 150.0;
        let _ = writeln!(
            svg,
            "<rect x=\"{x}\" y=\"32\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"43\">{}</text>",
            COLORS[index % COLORS.len()],
            x + 16.0,
            escape(name)
        );
    }
    let mut y = 56.0;
    for (category_index, category) in categories.iter().enumerate() {
        let _ = writeln!(svg, "<text x=\"10\" y=\"{}\">{}</text>", y + 15.0, escape(category));
        for (series_index, (_, values)) in series.iter().enumerate() {
            // A value not measured (NaN) draws no bar and says so.
            let value = values.get(category_index).copied().unwrap_or(f64::NAN);
            let label = if value.is_finite() { format!("{} {unit}", compact(value)) } else { "unknown".to_string() };
            let _ = writeln!(
                svg,
                "<rect x=\"{LEFT}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{}\">{}</text>",
                scale(value),
                ROW - 4.0,
                COLORS[series_index % COLORS.len()],
                LEFT + scale(value) + 4.0,
                y + 13.0,
                escape(&label)
            );
            y += ROW;
        }
        y += 8.0;
    }
    if log_scale {
        let _ = writeln!(svg, "<text x=\"10\" y=\"{}\" fill=\"#666\">log scale</text>", height - 10.0);
    }
    svg.push_str("</svg>\n");
    svg
}

fn storage_chart(bundle: &RunBundle) -> String {
    let Some(first) = bundle.storage.first() else { return empty_chart("no storage measured") };
    if first.columns.is_empty() {
        return empty_chart("per-column sizes unknown (see the report)");
    }
    let categories: Vec<String> = first.columns.iter().map(|column| column.column.clone()).collect();
    let series: Vec<(&str, Vec<f64>)> = bundle
        .storage
        .iter()
        .map(|snapshot| {
            let values = snapshot.columns.iter().map(|column| column.compressed_bytes as f64 / 1048576.0).collect();
            (snapshot.codec.as_str(), values)
        })
        .collect();
    bar_chart("Compressed bytes per column", "MiB", &categories, &series, true)
}

fn queries_chart(bundle: &RunBundle) -> String {
    if bundle.queries.is_empty() {
        return empty_chart("no queries measured");
    }
    let categories: Vec<String> =
        bundle.queries.iter().map(|runs| format!("{} {}", runs.query, runs.variant)).collect();
    let direct: Vec<f64> = bundle
        .queries
        .iter()
        .map(|runs| runs.direct_io().map_or(f64::NAN, |sample| sample.stats.server_duration_us as f64 / 1e3))
        .collect();
    let warm: Vec<f64> = bundle.queries.iter().map(|runs| runs.warm_min_ms().unwrap_or(f64::NAN)).collect();
    bar_chart(
        "Direct I/O vs warm (min), server-side",
        "ms",
        &categories,
        &[("direct I/O", direct), ("warm min", warm)],
        true,
    )
}

/// Stacked shares of thread time for each query's direct-I/O run and warm median run.
fn breakdown_chart(bundle: &RunBundle) -> String {
    let mut rows = Vec::new();
    for runs in &bundle.queries {
        if let Some(sample) = runs.direct_io() {
            rows.push((format!("{} {} direct I/O", runs.query, runs.variant), sample.breakdown.shares()));
        }
        if let Some(sample) = runs.warm_median_sample() {
            rows.push((format!("{} {} warm", runs.query, runs.variant), sample.breakdown.shares()));
        }
    }
    if rows.is_empty() {
        return empty_chart("no queries measured");
    }
    let left = 230.0;
    let span = WIDTH - left - 20.0;
    let height = 60.0 + rows.len() as f64 * ROW + 20.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" font-size=\"15\">Share of thread time</text>\n"
    );
    for (index, name) in ["CPU", "read wait", "other"].iter().enumerate() {
        let x = left + index as f64 * 120.0;
        let _ = writeln!(
            svg,
            "<rect x=\"{x}\" y=\"32\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"43\">{name}</text>",
            COLORS[index],
            x + 16.0
        );
    }
    let mut y = 56.0;
    for (label, (cpu, read, other)) in rows {
        let _ = writeln!(svg, "<text x=\"10\" y=\"{}\">{}</text>", y + 13.0, escape(&label));
        let mut x = left;
        for (index, share) in [cpu, read, other].into_iter().enumerate() {
            let width = share * span;
            let _ = writeln!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{width:.1}\" height=\"{}\" fill=\"{}\"/>",
                ROW - 4.0,
                COLORS[index]
            );
            x += width;
        }
        y += ROW;
    }
    svg.push_str("</svg>\n");
    svg
}

fn empty_chart(text: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"40\" font-family=\"sans-serif\"><text x=\"10\" y=\"25\">{}</text></svg>\n",
        escape(text)
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_on_a_log_scale_keep_small_values_visible() {
        let svg = bar_chart("t", "ms", &["q1".into(), "q3".into()], &[("warm", vec![4.0, 2630.0])], true);
        assert!(svg.starts_with("<svg") && svg.contains("log scale"));
        assert!(svg.contains(">4.0 ms<") && svg.contains(">2630 ms<"));
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a<b&c"), "a&lt;b&amp;c");
    }
}

//! A [`Compared`] as Markdown (`compare.md`), as a page (`compare.html`), and charts: the
//! medians side by side (`medians.svg`), every sample of both sides (`samples.svg`), and
//! the kind's own (its levels as curves); made from the comparison alone: the sections
//! every kind's comparison has, with its kind's own where they go
//! ([`super::ComparisonSections`]).

use std::fmt::Write as _;

use anyhow::Result;

use super::why::short_ratio;
use super::{Compared, Comparison, PlanChange, QueryComparison, Side};
use crate::files::write_atomically;
use crate::markdown::Table;
use crate::report::charts::{Bars, Line, Strip, log_bars, log_log_lines, strips};
use crate::report::html::{self, SampleTable};
use crate::significance::Verdict;
use crate::units::{milliseconds, number, p_value, percent, plural_as, times};

/// The report's file in a comparison's folder.
pub const COMPARE_FILE: &str = "compare.md";
/// The chart of the medians the report shows.
pub const CHART_FILE: &str = "medians.svg";
/// The chart of every sample compared.
pub const SAMPLES_CHART_FILE: &str = "samples.svg";
/// The chart of a kind's levels on both sides (its rate against the clients).
pub const LEVELS_CHART_FILE: &str = "levels.svg";
/// The comparison's page, beside the report.
pub const COMPARE_HTML: &str = "compare.html";
/// The comparison as JSON, beside the report.
pub const JSON_FILE: &str = "compare.json";

/// Writes the comparison's files into the folder `out`, which exists: compare.json, the
/// charts, compare.html and compare.md, each whole, then renamed into place.
pub fn write_files(compared: &Compared, out: &std::path::Path) -> Result<()> {
    write_atomically(&out.join(JSON_FILE), &compared.json()?)?;
    let comparison = &compared.comparison;
    let mut charts = vec![(CHART_FILE, chart(comparison)?), (SAMPLES_CHART_FILE, samples_chart(comparison)?)];
    charts.extend(compared.sections().charts(comparison)?);
    for (name, svg) in &charts {
        write_atomically(&out.join(name), svg)?;
    }
    let markdown = markdown(compared);
    let title =
        format!("{} benchmark: {} against {}", comparison.kind, comparison.candidate.label, comparison.baseline.label);
    write_atomically(&out.join(COMPARE_HTML), &html::page(&title, &markdown, &charts, &samples_lists(comparison)))?;
    write_atomically(&out.join(COMPARE_FILE), &markdown)
}

/// A kind's levels as two curves, A's and B's, in [`LEVELS_CHART_FILE`]: `rate` (its
/// unit, `QPS`) at each client count of `levels` (clients, A's level, B's level), as
/// `rate_of` reads it from a side's level, with a gap where a side did not run the level
/// or its rate is unknown; no chart without levels.
pub fn level_curves<Level>(
    comparison: &Comparison,
    rate: &str,
    levels: &[(u32, Option<&Level>, Option<&Level>)],
    rate_of: fn(&Level) -> Option<f64>,
) -> Result<Vec<(&'static str, String)>> {
    if levels.is_empty() {
        return Ok(Vec::new());
    }
    let line = |name: String, side: usize| Line {
        name,
        points: levels.iter().map(|&(clients, a, b)| (f64::from(clients), [a, b][side].and_then(rate_of))).collect(),
    };
    let chart = log_log_lines(
        &format!("{rate} at each level, median across rounds"),
        "clients",
        rate,
        &[line(format!("A: {}", comparison.baseline.label), 0), line(format!("B: {}", comparison.candidate.label), 1)],
    )?;
    Ok(vec![(LEVELS_CHART_FILE, chart)])
}

/// The most dots a side of a query gets on the samples' chart, and the most rows a query's
/// list of samples gets on the page: a throughput level's statements can be tens of
/// thousands, which would make a page of many megabytes. Beyond them, samples at evenly
/// spaced ranks stand for the rest (the bundles hold every one).
const MOST_DOTS: usize = 100;
const MOST_LISTED: usize = 1000;

/// At most `most` of `samples`, at evenly spaced ranks (the fastest and the slowest among
/// them), sorted; all of them, sorted, when they are no more.
fn by_rank(samples: &[f64], most: usize) -> Vec<f64> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.len() <= most || most < 2 {
        return sorted;
    }
    let last = sorted.len() - 1;
    (0..most).map(|index| sorted[index * last / (most - 1)]).collect()
}

/// Every query's samples compared, both sides on one axis, each side's median marked.
pub fn samples_chart(comparison: &Comparison) -> Result<String> {
    let thinned = comparison
        .queries
        .iter()
        .any(|query| query.baseline.samples_ms.len().max(query.candidate.samples_ms.len()) > MOST_DOTS);
    let rows: Vec<Strip> = comparison
        .queries
        .iter()
        .map(|query| Strip {
            category: query.query.clone(),
            samples: vec![
                by_rank(&query.baseline.samples_ms, MOST_DOTS),
                by_rank(&query.candidate.samples_ms, MOST_DOTS),
            ],
        })
        .collect();
    let title = if thinned {
        format!("Samples compared, median marked; at most {MOST_DOTS} a side, at evenly spaced ranks")
    } else {
        "Every sample compared, median marked".to_string()
    };
    strips(
        &title,
        "ms",
        // A and B alone: the report names the runs, and each dot's title repeats its side.
        &["A", "B"],
        &rows,
    )
}

/// The samples each query's verdict was reached on, for the page: linked from the
/// queries' table.
fn samples_lists(comparison: &Comparison) -> Vec<SampleTable> {
    comparison
        .queries
        .iter()
        .map(|query| {
            let (a, b) = (&query.baseline.samples_ms, &query.candidate.samples_ms);
            let thinned = a.len() + b.len() > MOST_LISTED;
            let side_rows = |letter: &'static str, samples: &[f64]| -> Vec<Vec<String>> {
                if thinned {
                    // Ranks, not the order they ran in, once only some are listed.
                    let listed = by_rank(samples, MOST_LISTED / 2);
                    let last = listed.len().saturating_sub(1).max(1);
                    listed
                        .iter()
                        .enumerate()
                        .map(|(index, ms)| {
                            let rank = 1 + index * (samples.len().saturating_sub(1)) / last;
                            vec![letter.to_string(), format!("rank {rank} of {}", samples.len()), ms.to_string()]
                        })
                        .collect()
                } else {
                    samples
                        .iter()
                        .enumerate()
                        .map(|(index, ms)| vec![letter.to_string(), (index + 1).to_string(), ms.to_string()])
                        .collect()
                }
            };
            let mut rows = side_rows("A", a);
            rows.extend(side_rows("B", b));
            let title = if thinned {
                format!(
                    "{}: {} of A's {} and B's {} samples, at evenly spaced ranks (the bundles hold every one)",
                    query.query,
                    rows.len(),
                    a.len(),
                    b.len()
                )
            } else {
                query.query.clone()
            };
            SampleTable {
                linked_from: "query".to_string(),
                key: query.query.clone(),
                title,
                columns: ["side", "sample", "server, ms"].map(str::to_string).to_vec(),
                rows,
            }
        })
        .collect()
}

/// The medians of every query compared, on both sides.
pub fn chart(comparison: &Comparison) -> Result<String> {
    let groups: Vec<Bars> = comparison
        .queries
        .iter()
        .map(|query| Bars {
            category: query.query.clone(),
            values: vec![query.baseline.median_ms, query.candidate.median_ms],
        })
        .collect();
    // A and B alone, as on the samples' chart: a run id beside each query would leave no
    // room for the query's name.
    log_bars("Median warm time per query", "ms", &["A", "B"], &groups)
}

pub fn markdown(compared: &Compared) -> String {
    let (comparison, sections) = (&compared.comparison, compared.sections());
    let (a, b) = (&comparison.baseline, &comparison.candidate);
    let mut out = String::new();
    let _ = writeln!(out, "# {} benchmark: {} against {}\n", comparison.kind, b.label, a.label);
    for warning in &comparison.warnings {
        let _ = writeln!(out, "**Warning**: {warning}.\n");
    }
    if !comparison.forced_differences.is_empty() {
        let _ = writeln!(
            out,
            "**Compared with --force**: the runs were asked to do different things, so a difference below may be \
             theirs rather than a change:\n"
        );
        for line in &comparison.forced_differences {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "**{}** (B against A).\n", comparison.summary.line());
    for headline in sections.headlines() {
        let _ = writeln!(out, "**{headline}** (B against A).\n");
    }
    let _ = writeln!(out, "- A (baseline): {}", side_line(a));
    let _ = writeln!(out, "- B (candidate): {}", side_line(b));
    if comparison.differences.is_empty() && comparison.forced_differences.is_empty() {
        let same = if comparison.baseline.dir == comparison.candidate.dir { " (an A/A comparison)" } else { "" };
        let _ = writeln!(out, "- what differs: nothing the bundles record{same}");
    } else if comparison.differences.is_empty() {
        let _ = writeln!(out, "- what differs: what --force compared anyway, above");
    } else {
        let _ = writeln!(out, "- what differs: {}", comparison.differences.join("; "));
    }
    out.push('\n');

    out.push_str(&sections.markdown_before_queries(comparison));
    let mut table = Table::new(["query", "A median", "B median", "B / A", "noise (p99)", "p", "verdict"]);
    for query in &comparison.queries {
        let significance = &query.significance;
        table.row([
            query.query.clone(),
            milliseconds(query.baseline.median_ms),
            milliseconds(query.candidate.median_ms),
            times(significance.ratio),
            percent(significance.noise, "unknown"),
            p_value(significance.p_value),
            verdict_cell(query),
        ]);
    }
    let _ = writeln!(out, "## Queries\n\n![medians]({CHART_FILE})\n\n![every sample]({SAMPLES_CHART_FILE})\n\n{table}");
    let totals = &comparison.totals;
    let _ = writeln!(
        out,
        "Totals over the {} on both sides: sum of means {} (A) against {} (B), B {} ({}); \
         geometric mean of the per-query ratios B / A: {}.\n",
        plural_as(totals.queries as u64, "query", "queries"),
        milliseconds(Some(totals.baseline_sum_of_means_ms)),
        milliseconds(Some(totals.candidate_sum_of_means_ms)),
        totals.gain.map_or("unknown".to_string(), |gain| format!("{:+.2} %", -100.0 * gain + 0.0)),
        // A negative gain is a loss, said as one.
        match totals.gain {
            Some(gain) if gain < 0.0 => format!("a loss of {}", percent(Some(-gain), "unknown")),
            gain => format!("a gain of {}", percent(gain, "unknown")),
        },
        times(totals.geometric_mean_ratio)
    );
    if !totals.left_out.is_empty() {
        let _ = writeln!(
            out,
            "Left out of every total (failed, or their answers differ): {}.\n",
            totals.left_out.join(", ")
        );
    }
    out.push_str(&sections.markdown_after_totals(comparison));
    for (side, only) in [(a, &comparison.only_in_baseline), (b, &comparison.only_in_candidate)] {
        if !only.is_empty() {
            let _ = writeln!(out, "Measured in {} only, not compared: {}.\n", side.label, only.join(", "));
        }
    }

    let changed: Vec<&QueryComparison> = comparison.queries.iter().filter(|query| query.why.is_some()).collect();
    if !changed.is_empty() {
        let _ = writeln!(out, "## Why it changed\n");
        for query in changed {
            let Some(why) = &query.why else { continue };
            let _ = writeln!(out, "- **{}**: {}", query.query, why.summary);
            for (letter, names) in [("A", &why.counted_on_one_side.baseline), ("B", &why.counted_on_one_side.candidate)]
            {
                if !names.is_empty() {
                    let _ = writeln!(
                        out,
                        "  - counted by {letter} only (work the other side did not do, or a counter its engine lacks): {}",
                        names.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
                    );
                }
            }
            if let Some(unknown) = &why.events_unknown {
                let _ = writeln!(out, "  - ProfileEvents unknown: {unknown}");
            }
            for event in &why.moved_events {
                let per_row = |value: Option<f64>| value.map_or("unknown".to_string(), |value| format!("{value:.3e}"));
                let _ = writeln!(
                    out,
                    "  - `{}`: {} -> {} per query, {} -> {} per row read ({})",
                    event.event,
                    number(event.baseline_per_query, 0),
                    number(event.candidate_per_query, 0),
                    per_row(event.baseline_per_row),
                    per_row(event.candidate_per_row),
                    match event.ratio {
                        Some(ratio) if ratio > 0.0 => format!("x{}", short_ratio(ratio)),
                        Some(_) => "gone".to_string(),
                        None => "new".to_string(),
                    }
                );
            }
        }
        out.push('\n');
    }

    let changed_plans: Vec<(&str, &Vec<String>)> = comparison
        .queries
        .iter()
        .filter_map(|query| match &query.plan {
            PlanChange::Changed { lines } => Some((query.query.as_str(), lines)),
            _ => None,
        })
        .collect();
    let unknown_plans =
        comparison.queries.iter().filter(|query| matches!(query.plan, PlanChange::Unknown { .. })).count();
    let _ = writeln!(out, "## Plans\n");
    if changed_plans.is_empty() && unknown_plans == comparison.queries.len() {
        let _ = writeln!(out, "Unknown: the bundles did not record the queries' plans.\n");
    } else if changed_plans.is_empty() {
        let unknown =
            if unknown_plans > 0 { format!(" ({unknown_plans} queries' plans are unknown)") } else { String::new() };
        let _ = writeln!(
            out,
            "The pruning of every query's plan (`EXPLAIN indexes = 1`) is the same on both sides{unknown}.\n"
        );
    } else {
        for (query, lines) in changed_plans {
            let _ = writeln!(out, "- **{query}**: {}", lines.join("; "));
        }
        out.push('\n');
    }

    // Bundles whose samples carry no counters at all (every statement measured while other
    // clients ran, on a target whose counters are process-wide) have no figure for either
    // table: one sentence says so instead of two tables of unknowns.
    let without_counters = |side: &Side| side.cpu.samples_without_counters > 0 && side.cpu.cpu_seconds == 0.0;
    if without_counters(a)
        && without_counters(b)
        && comparison
            .queries
            .iter()
            .all(|query| query.baseline.breakdown.is_none() && query.candidate.breakdown.is_none())
    {
        let _ = writeln!(
            out,
            "## Where the time went\n\nUnknown for these bundles: none of their {} and {} samples carries the \
             engine's counters (each was measured while other clients ran, on a target whose counters are the whole \
             engine's). A kind that splits a level's time from the engine's counters says so in its own section \
             above.\n",
            a.cpu.samples_without_counters, b.cpu.samples_without_counters
        );
        return method_section(out, comparison);
    }
    let mut breakdown = Table::new(["query", "A CPU", "A read wait", "A other", "B CPU", "B read wait", "B other"]);
    for query in &comparison.queries {
        let cells = |side: &super::QuerySide| match &side.breakdown {
            Some(parts) => vec![
                milliseconds(Some(parts.cpu_ms)),
                milliseconds(Some(parts.read_wait_ms)),
                milliseconds(Some(parts.other_ms)),
            ],
            None => vec!["unknown".to_string(); 3],
        };
        let mut row = vec![query.query.clone()];
        row.extend(cells(&query.baseline));
        row.extend(cells(&query.candidate));
        breakdown.row(row);
    }
    let _ = writeln!(
        out,
        "## Where the time went\n\nMedians of the warm runs' thread time, split into CPU, read wait and the rest \
         (compute against waiting for storage):\n\n{breakdown}"
    );
    let mut cpu = Table::new(["side", "CPU used", "query time", "cores", "share of the cores"]);
    for (letter, side) in [("A", a), ("B", b)] {
        // Samples without counters (several clients on the embedded engine) are in neither
        // figure: with none counted, both are unknown, not 0.
        let seconds = |value: f64| match side.cpu.samples_without_counters {
            0 => format!("{value:.2} s"),
            without if value == 0.0 => format!("unknown ({without} samples without counters)"),
            without => format!("{value:.2} s ({without} samples without counters left out)"),
        };
        cpu.row([
            format!("{letter}: {}", side.label),
            seconds(side.cpu.cpu_seconds),
            seconds(side.cpu.query_seconds),
            side.cpu.cores.map_or("unknown".to_string(), |cores| cores.to_string()),
            percent(side.cpu.share_of_cores, "unknown"),
        ]);
    }
    let _ = writeln!(
        out,
        "CPU-seconds the warm runs used against the cores x the time they ran (what the node offered):\n\n{cpu}"
    );
    method_section(out, comparison)
}

/// The comparison's closing section: how the verdicts were reached.
fn method_section(mut out: String, comparison: &Comparison) -> String {
    let method = &comparison.method;
    let _ = writeln!(
        out,
        "## Method\n\n{} ({}). Faster or slower: p < {} and the medians differ by more than {}; unstable: not \
         changed and the noise (the 99th percentile of the change of medians over {} random relabellings, seed \
         {}) above {}; untestable: too few samples a side. See docs/compare.md.",
        method.test,
        method.samples,
        method.alpha,
        percent(Some(method.min_change), ""),
        method.resamples,
        method.seed,
        percent(Some(method.unstable_noise), "")
    );
    out
}

fn side_line(side: &Side) -> String {
    let mut line = format!("{}, ClickHouse {} on {}", side.label, side.engine_version, side.target);
    if !side.settings.is_empty() {
        let settings: Vec<String> = side.settings.iter().map(|(name, value)| format!("`{name} = {value}`")).collect();
        let _ = write!(line, ", {}", settings.join(", "));
    }
    if let Some(machine) = &side.machine {
        let _ = write!(line, "; {machine}");
    }
    line
}

/// A query's verdict as the report words it, with its reason: what `history` says of a run
/// against the one before.
pub fn verdict_cell(query: &QueryComparison) -> String {
    let significance = &query.significance;
    let word = match significance.verdict {
        Verdict::Faster => "**faster**",
        Verdict::Slower => "**slower**",
        Verdict::Unchanged => "unchanged",
        Verdict::Unstable => "unstable",
        Verdict::Untestable => "untestable",
        Verdict::AnswersDiffer => "**answers differ**",
        Verdict::Failed => "**failed**",
    };
    match &significance.reason {
        Some(reason) => format!("{word} ({reason})"),
        None => word.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_samples_are_thinned_to_evenly_spaced_ranks_with_both_ends() {
        let samples: Vec<f64> = (0..10_001).rev().map(f64::from).collect();
        assert_eq!(by_rank(&samples, 5), vec![0.0, 2500.0, 5000.0, 7500.0, 10000.0]);
        assert_eq!(by_rank(&[3.0, 1.0, 2.0], 5), vec![1.0, 2.0, 3.0]);
    }
}

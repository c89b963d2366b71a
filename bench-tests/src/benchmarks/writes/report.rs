//! The writes benchmark's report section, from its bundle alone: the workload, each
//! level's rates, latency and failures across rounds, an INSERT's time split, the
//! engine's threads and CPU, the table's parts, every round, and the runner check; its
//! charts, INSERTs per second and latency against writers; and the lines the terminal says.

use std::fmt::Write as _;

use anyhow::Result;

use super::decomposition::{Counted, Decomposition, EventsDelta};
use super::results::{CodeErrors, ThreadsSampled, WritesLevel, WritesResults, WritesRound};
use super::server::GaugeMeans;
use crate::ab_variants::AbRun;
use crate::levels::LevelBound;
use crate::load_generator::LoadFrom;
use crate::markdown::Table;
use crate::report::charts::{self, Line};
use crate::report::{CheckWords, clients_paragraph, load_section, runner_check_section};
use crate::target_info::TargetInfo;
use crate::units::{exact, number, per_second, percent, plural};

fn ms(value: Option<f64>) -> String {
    value.map_or("unknown".to_string(), |ms| format!("{} ms", number(ms, 2)))
}

fn us(value: Option<f64>) -> String {
    value.map_or("unknown".to_string(), |us| format!("{} µs", number(us, 0)))
}

/// A level as the tables name it: its clients, after its A/B variant in an A/B run
/// (`durable: 4`).
fn level_label(variant: &Option<String>, clients: u32) -> String {
    match variant {
        Some(name) => format!("{name}: {clients}"),
        None => clients.to_string(),
    }
}

/// `2 TOO_MANY_PARTS (252)`, each code of a level's failures.
fn codes(errors: &[CodeErrors]) -> String {
    if errors.is_empty() {
        return "none".to_string();
    }
    let each: Vec<String> = errors
        .iter()
        .map(|errors| {
            let name = errors.name.as_deref().unwrap_or("no name");
            let code = errors.code.map_or(String::new(), |code| format!(" ({code})"));
            format!("{} {name}{code}", errors.count)
        })
        .collect();
    each.join(", ")
}

pub fn markdown(results: &WritesResults, target: &TargetInfo, ab_run: Option<&AbRun>) -> String {
    let workload = &results.workload;
    let unit = workload.mix.rate_unit();
    let mut out = String::new();
    let _ = writeln!(out, "## Writes\n");
    let bound = match workload.bound {
        LevelBound::Duration { seconds } => format!("{} s per level", exact(seconds)),
        LevelBound::Iterations { statements } => format!("{statements} INSERTs per level"),
    };
    let pacing = match workload.rate {
        Some(rate) => format!(
            "An open loop of writers at {} INSERTs/s over all clients: every INSERT is scheduled in advance, a \
             client on a connection of its own sends the next one due, and its latency is measured from its \
             scheduled start (a late start counts in it, as its schedule lag)",
            number(rate, 1)
        ),
        None => "A closed loop of writers: each client, on a connection of its own, sends the next INSERT as soon \
                 as its last one returned"
            .to_string(),
    };
    let mix = if workload.mix.is_inserts_only() {
        String::new()
    } else {
        format!(
            " The clients send a mix, `{}`: each its own shuffled order of it, so the rate counts every statement, \
             and rows/s the INSERTs' rows.",
            workload.mix
        )
    };
    // An A/B run's variants each put their own durability in force (`--durability` where
    // they name none).
    let durability = match ab_run {
        Some(ab) => {
            let each: Vec<String> = ab
                .variants
                .iter()
                .map(|variant| {
                    let durability = variant.settings.get(super::DURABILITY_KEY).unwrap_or(workload.durability.name());
                    format!("`{durability}` for {}", variant.name)
                })
                .collect();
            each.join(", ")
        }
        None => format!("`{}`", workload.durability.name()),
    };
    let sent = if workload.async_insert { "; rows sent inline, as asynchronous inserts" } else { "" };
    let levels: Vec<String> = workload.levels_run.iter().map(u32::to_string).collect();
    let _ = writeln!(
        out,
        "{pacing}. INSERTs of {} into table `{}` (`{}`){sent}; durability {durability}; clients at once per \
         level: {}; {bound}; {} (every level once a round).{mix}\n",
        plural(workload.batch_rows, "row"),
        workload.table,
        workload.schema_file,
        levels.join(", "),
        plural(workload.rounds, "round"),
    );
    let _ = writeln!(
        out,
        "{unit} is the completed statements over the level's wall time, rows/s the rows the INSERTs wrote over \
         it. Latency is the client's wall time around each completed statement (nearest-rank percentiles). A \
         failed statement is counted apart, by the engine's error code.\n"
    );
    let through_tunnel = crate::targets::spec(target.kind).capabilities.in_cluster_load;
    let _ = writeln!(
        out,
        "{}\n",
        clients_paragraph(workload.load_from, &workload.clients_description(), through_tunnel, unit)
    );
    if let Some(variants) = variants_line(results) {
        let _ = writeln!(out, "{variants}\n");
    }
    for note in &results.notes {
        let _ = writeln!(out, "**Note**: {note}.\n");
    }

    let _ = writeln!(out, "### Levels\n\n![INSERTs per second](inserts.svg)\n\n![Latency](latency.svg)\n");
    let mut table = Table::new([
        "clients",
        "rounds",
        format!("{unit} median (min to max)").as_str(),
        "rows/s median (min to max)",
        "p50",
        "p90",
        "p99",
        "max",
        "completed",
        "failed",
        "active parts (max)",
    ]);
    for level in &results.levels {
        let summary = &level.closed_loop;
        table.row([
            level_label(&level.variant, summary.clients),
            summary.rounds.to_string(),
            summary.qps.rate_cell(),
            level.rows_per_second.rate_cell(),
            ms(summary.latency.p50_ms),
            ms(summary.latency.p90_ms),
            ms(summary.latency.p99_ms),
            ms(summary.latency.max_ms),
            summary.completed.to_string(),
            codes(&level.errors_by_code),
            level.active_parts_max.map_or("unknown".to_string(), |parts| parts.to_string()),
        ]);
    }
    if table.is_empty() {
        let _ = writeln!(out, "No level completed a round.\n");
    } else {
        let _ = writeln!(out, "{table}");
    }

    let mut statements =
        Table::new(["clients", "statement", "per second (min to max)", "p50", "p99", "completed", "failed"]);
    for level in &results.levels {
        for figures in &level.by_statement {
            statements.row([
                level_label(&level.variant, level.closed_loop.clients),
                figures.statement.clone(),
                figures.per_second.rate_cell(),
                ms(figures.latency.p50_ms),
                ms(figures.latency.p99_ms),
                figures.completed.to_string(),
                figures.errors.to_string(),
            ]);
        }
    }
    if !statements.is_empty() {
        let _ = writeln!(out, "### Each statement of the mix\n\n{statements}");
    }

    if let Some(rate) = workload.rate {
        let _ = writeln!(
            out,
            "### Rate\n\nThe rate asked for and the rate held (completed INSERTs over the level's wall time, median \
             across rounds); a level kept the rate when every round held at least {} of it. The schedule lag is how \
             late each INSERT was sent against its schedule: it grows through the level when the engine cannot keep \
             up, and the INSERTs still unsent when the level ends are skipped (sent of due).\n",
            percent(Some(super::RATE_KEPT), "")
        );
        let mut rates =
            Table::new(["clients", "asked", "held", "kept", "sent of due", "lag p50", "lag p99", "lag max"]);
        for level in &results.levels {
            let lag = level.schedule_lag.unwrap_or_default();
            // Due INSERTs a level did not send by its end were skipped: the backlog it left.
            let rounds = results.rounds.iter().filter(|round| {
                round.variant == level.variant
                    && round.closed_loop.clients == level.closed_loop.clients
                    && round.closed_loop.complete
            });
            let (sent, due) = rounds.fold((0u64, Some(0u64)), |(sent, due), round| {
                let looped = &round.closed_loop;
                let sent = sent.saturating_add(looped.completed).saturating_add(looped.errors);
                (sent, due.zip(looped.scheduled).map(|(sum, due)| sum.saturating_add(due)))
            });
            rates.row([
                level_label(&level.variant, level.closed_loop.clients),
                per_second(Some(rate)),
                per_second(level.closed_loop.qps.median),
                match level.rate_kept {
                    Some(true) => "yes".to_string(),
                    Some(false) => "**no**".to_string(),
                    None => "unknown".to_string(),
                },
                format!("{sent} of {}", due.map_or("unknown".to_string(), |due| due.to_string())),
                ms(lag.p50_ms),
                ms(lag.p99_ms),
                ms(lag.max_ms),
            ]);
        }
        if !rates.is_empty() {
            let _ = writeln!(out, "{rates}");
        }
    }

    let _ = writeln!(out, "### Where an INSERT's time went\n\n{}\n", split_intro(results));
    let mut split = Table::new([
        "clients",
        "INSERT's own time",
        "CPU",
        "write",
        "fsync",
        "lock waits",
        "throttling",
        "CPU wait",
        "rest",
        "fsyncs (files + dirs)",
        "I/O wait (OS)",
    ]);
    for level in &results.levels {
        split.row(split_cells(level_label(&level.variant, level.closed_loop.clients), &level.decomposition));
    }
    if !split.is_empty() {
        let _ = writeln!(out, "{split}");
    }
    let some_from_records = results.levels.iter().any(|level| level.decomposition.counted == Counted::InsertRecords);
    let unknown: Vec<String> = results
        .levels
        .iter()
        .flat_map(|level| {
            let variant = level.variant.as_ref().map_or(String::new(), |name| format!("variant {name}, "));
            let clients = plural(level.closed_loop.clients, "client");
            // Beside levels split from their INSERTs' own records, one that is not says so.
            let counters = (some_from_records && level.decomposition.counted == Counted::EngineCounters).then(|| {
                format!("- {variant}{clients}: from the engine's counters over the level, not the INSERTs' own")
            });
            let why = level.decomposition.unknown.as_ref().map(|why| format!("- {variant}{clients}: {why}"));
            counters.into_iter().chain(why)
        })
        .collect();
    if !unknown.is_empty() {
        let _ = writeln!(out, "Unknown parts:\n\n{}\n", unknown.join("\n"));
    }
    let uncounted: Vec<String> = results
        .rounds
        .iter()
        .filter_map(|round| {
            let why = round.inserts_unknown.as_ref()?;
            let variant = round.variant.as_ref().map_or(String::new(), |name| format!("{name}, "));
            Some(format!(
                "- round {}, {variant}{}: {why}",
                round.closed_loop.round,
                plural(round.closed_loop.clients, "client")
            ))
        })
        .collect();
    if !uncounted.is_empty() {
        let _ = writeln!(out, "INSERTs and rows written unknown:\n\n{}\n", uncounted.join("\n"));
    }

    let gauges = results.rounds.iter().any(|round| matches!(round.threads, ThreadsSampled::Gauges { .. }));
    let threads_intro = if workload.load_from == LoadFrom::Cluster {
        "The clients ran in the cluster: the engine's threads, its gauges and the CPU it used over a level are \
         unknown, since this process sees the Job's start (scheduling, the image, the first `SELECT 1`) and end \
         around the level and cannot tell them from it. The CPU its cores offered is theirs over the level."
    } else if gauges {
        "The engine's threads are not this process's: in place of their states, its gauges, read every 200 ms \
         through each level. \"in I/O\" is the share of its machine's busy threads (running or blocked on I/O, \
         `OSProcessesRunning` and `OSProcessesBlocked`: every process of the machine, not the engine's alone) that \
         were blocked on I/O, over every look (median across rounds). The engine's own gauges (`system.metrics`), \
         every complete round's looks together: threads of its global pool running a task, threads inside a read or \
         write system call (an fsync is not one), threads waiting for a table's read-write lock, and queries \
         running (the look's own excluded). CPU is the CPU-seconds the engine's threads used (`system.events`, \
         background merges and every other query on it included) against those its cores offered (a server's cgroup \
         CPU limit, or its machine's CPUs, x wall time)."
    } else {
        "The share of the engine's busy threads (running or in I/O wait, state `D`) that were in I/O wait, looked \
         at every few milliseconds through each level (median across rounds), and the CPU-seconds the engine's \
         threads used against those its cores offered (cores x wall time), every complete round together."
    };
    let _ = writeln!(out, "### Threads and CPU\n\n{threads_intro}\n");
    let mut header = vec!["clients", "in I/O (min to max)", "CPU used", "CPU offered", "used / offered"];
    if gauges {
        header.extend([
            "active threads (mean)",
            "in a read or write (mean)",
            "waiting for a lock (mean)",
            "queries (mean)",
        ]);
    }
    let mut threads = Table::new(header);
    for level in &results.levels {
        let mut cells = threads_cells(level).to_vec();
        if gauges {
            cells.extend(gauge_cells(results, level));
        }
        threads.row(cells);
    }
    if !threads.is_empty() {
        let _ = writeln!(out, "{threads}");
    }
    let cores_unknown: Vec<&str> =
        results.rounds.iter().filter_map(|round| round.cpu.cores_unknown.as_deref()).collect();
    if let Some(first) = cores_unknown.first() {
        let _ = writeln!(out, "The cores are unknown in {} of the rounds: {first}\n", cores_unknown.len());
    }

    let _ = writeln!(out, "### Rounds\n");
    let mut rounds = Table::new([
        "round",
        "clients",
        "wall",
        "completed",
        "failed",
        unit,
        "rows/s",
        "p50",
        "p99",
        "in I/O",
        "active parts (first to last, max)",
        "merges (max)",
    ]);
    for round in &results.rounds {
        rounds.row(round_cells(round));
    }
    if !rounds.is_empty() {
        let _ = writeln!(out, "{rounds}");
    }
    out.push_str(&load_section(results.rounds.iter().map(|round| (round.variant.as_deref(), &round.closed_loop))));

    let words = CheckWords { shown: "The INSERT", one: "INSERT", many: "INSERTs", rate: "INSERTs/s" };
    out.push_str(&runner_check_section(results.runner_check.as_ref(), words));
    out
}

/// An A/B run's variants, as the report opens with them; `None` for a run of one
/// configuration.
fn variants_line(results: &WritesResults) -> Option<String> {
    let mut names: Vec<&str> = results.levels.iter().filter_map(|level| level.variant.as_deref()).collect();
    names.dedup();
    (!names.is_empty()).then(|| {
        format!(
            "An A/B run: every level of every round ran each variant in turn on the one table ({}), in an order \
             shuffled each round; a level is named `variant: clients` below, and `cargo xtask compare` on this bundle \
             compares the variants.",
            names.join(", ")
        )
    })
}

fn split_cells(level: String, split: &Decomposition) -> [String; 11] {
    let syncs = match (split.file_syncs, split.directory_syncs) {
        (Some(files), Some(directories)) => format!("{} + {}", number(files, 1), number(directories, 1)),
        _ => "unknown".to_string(),
    };
    [
        level,
        us(split.insert_us),
        us(split.cpu_us),
        us(split.write_us),
        us(split.fsync_us),
        us(split.lock_wait_us),
        us(split.throttle_us),
        us(split.cpu_wait_us),
        us(split.rest_us),
        syncs,
        us(split.os_io_wait_us),
    ]
}

fn threads_cells(level: &WritesLevel) -> [String; 5] {
    let share = &level.io_wait_share;
    let in_io_wait = match share.median {
        Some(_) => format!(
            "{} ({} to {})",
            percent(share.median, "unknown"),
            percent(share.min, "unknown"),
            percent(share.max, "unknown")
        ),
        None => "unknown".to_string(),
    };
    let seconds = |value: Option<f64>| value.map_or("unknown".to_string(), |s| format!("{} s", number(s, 2)));
    [
        level_label(&level.variant, level.closed_loop.clients),
        in_io_wait,
        seconds(level.cpu_used_seconds),
        seconds(level.cpu_offered_seconds),
        percent(
            level
                .cpu_used_seconds
                .zip(level.cpu_offered_seconds)
                .and_then(|(used, offered)| crate::numbers::ratio(used, offered)),
            "unknown",
        ),
    ]
}

/// What a level's rounds' server gauges averaged: every complete round's looks together.
fn gauge_cells(results: &WritesResults, level: &WritesLevel) -> [String; 4] {
    let means: Vec<&GaugeMeans> = results
        .rounds
        .iter()
        .filter(|round| {
            round.closed_loop.complete
                && round.closed_loop.clients == level.closed_loop.clients
                && round.variant == level.variant
        })
        .filter_map(|round| match &round.threads {
            ThreadsSampled::Gauges { means, .. } => Some(means),
            _ => None,
        })
        .collect();
    let looks: u64 = means.iter().map(|means| means.looks).sum();
    // Weighted by each round's looks: every look together. Unknown when a round's is.
    let mean = |gauge: fn(&GaugeMeans) -> Option<f64>| {
        let total: Option<f64> = means.iter().map(|means| gauge(means).map(|mean| mean * means.looks as f64)).sum();
        total
            .and_then(|total| crate::numbers::ratio(total, looks as f64))
            .map_or("unknown".to_string(), |mean| number(mean, 1))
    };
    [
        mean(|means| means.active_threads),
        mean(|means| means.in_io),
        mean(|means| means.lock_waiting),
        mean(|means| means.queries),
    ]
}

/// How the time split was counted, as the report introduces it: from the INSERTs' own
/// records when every level was, from the engine's counters otherwise (with why not their
/// records, when a round says).
fn split_intro(results: &WritesResults) -> String {
    let parts = "Lock waits are the parts lock and the table's read-write lock; throttling is the engine delaying \
                 INSERTs for too many parts; CPU wait is the engine's threads ready to run with every core busy.";
    let levels = &results.levels;
    if !levels.is_empty() && levels.iter().all(|level| level.decomposition.counted == Counted::InsertRecords) {
        return format!(
            "Per INSERT, averaged over every complete round of the level: each INSERT's own counters, from its record \
             in the server's `system.query_log` (found by the level's `log_comment`), summed and divided by the \
             INSERTs logged. Work beside the INSERTs (background merges, other queries) does not count in them; an \
             INSERT's threads work in parallel, so its CPU can exceed its own time. {parts}"
        );
    }
    // The first complete round's reason: a stopped level's says only that it stopped.
    let why_not_records =
        results.rounds.iter().filter(|round| round.closed_loop.complete).find_map(|round| match &round.inserts_own {
            unknown if *unknown == EventsDelta::not_recorded() => None,
            EventsDelta::Unknown { reason } => Some(reason.as_str()),
            EventsDelta::Known { .. } => None,
        });
    let beside = if results.workload.mix.is_inserts_only() {
        "background merges count in CPU and write"
    } else {
        "background merges, and the mix's UPDATEs, DELETEs and reads, count in CPU, write and fsync"
    };
    let why = why_not_records.map_or(String::new(), |why| format!(" Not from each INSERT's own record: {why}."));
    format!(
        "Per INSERT, averaged over every complete round of the level: the engine's counters' rise over the level \
         divided by the INSERTs it counted. These are not per-statement figures: the counters are the whole \
         engine's, so {beside}.{why} {parts}"
    )
}

fn round_cells(round: &WritesRound) -> [String; 12] {
    let looped = &round.closed_loop;
    let rate = match looped.qps {
        Some(qps) => per_second(Some(qps)),
        None => format!("unknown ({})", looped.unknown.as_deref().unwrap_or("no INSERT completed")),
    };
    let label = if looped.complete { looped.round.to_string() } else { format!("{} (interrupted)", looped.round) };
    let count = |value: Option<u64>| value.map_or("unknown".to_string(), |value| value.to_string());
    let parts = &round.parts;
    let parts_cell = match &parts.unknown {
        Some(why) => format!("unknown ({why})"),
        None => format!(
            "{} to {}, {}",
            count(parts.active_parts_first),
            count(parts.active_parts_last),
            count(parts.active_parts_max)
        ),
    };
    [
        label,
        level_label(&round.variant, looped.clients),
        format!("{} s", number(looped.wall_seconds, 3)),
        looped.completed.to_string(),
        codes(&round.errors_by_code),
        rate,
        per_second(round.rows_per_second),
        ms(looped.latency.p50_ms),
        ms(looped.latency.p99_ms),
        percent(round.threads.io_wait_share(), "unknown"),
        parts_cell,
        count(parts.merges_max),
    ]
}

/// `inserts.svg` (each level's median INSERTs/s across rounds, with the lowest and highest
/// round's) and `latency.svg` (p50 and p99 of its completed INSERTs), against clients.
pub fn charts(results: &WritesResults) -> Result<Vec<(&'static str, String)>> {
    if results.levels.is_empty() {
        let nothing = charts::empty("no level completed a round");
        return Ok(vec![("inserts.svg", nothing.clone()), ("latency.svg", nothing)]);
    }
    // Beyond what any run measures, a value is not drawn (a log axis over hundreds of
    // decades would take the chart forever): as unknown.
    let drawable = |value: Option<f64>| value.filter(|value| (1e-9..1e15).contains(value));
    let line = |name: &str, value: &dyn Fn(&WritesLevel) -> Option<f64>| Line {
        name: name.to_string(),
        points: results
            .levels
            .iter()
            .map(|level| (f64::from(level.closed_loop.clients), drawable(value(level))))
            .collect(),
    };
    let unit = results.workload.mix.rate_unit();
    let inserts = charts::log_log_lines(
        &format!("{unit} across rounds"),
        "clients",
        unit,
        &[
            line("median", &|level| level.closed_loop.qps.median),
            line("lowest round", &|level| level.closed_loop.qps.min),
            line("highest round", &|level| level.closed_loop.qps.max),
        ],
    )?;
    let latency = charts::log_log_lines(
        "Latency of completed INSERTs",
        "clients",
        "ms",
        &[
            line("p50", &|level| level.closed_loop.latency.p50_ms),
            line("p99", &|level| level.closed_loop.latency.p99_ms),
        ],
    )?;
    Ok(vec![("inserts.svg", inserts), ("latency.svg", latency)])
}

/// One level of a round, as progress says it: `4 clients: 812 INSERTs/s, 812,000 rows/s,
/// p50 4.21 ms, 1,624 completed, 0 failed, 31 % of busy threads in I/O`.
pub(super) fn round_line(round: &WritesRound, unit: &str) -> String {
    let looped = &round.closed_loop;
    let rate = match looped.qps {
        Some(qps) => format!("{} {unit}", number(qps, 0)),
        None => format!("{unit} unknown: {}", looped.unknown.as_deref().unwrap_or("none completed")),
    };
    format!(
        "{}: {rate}, {} rows/s, p50 {}, {} completed, {} failed, {} of busy threads in I/O{}",
        plural(looped.clients, "client"),
        per_second(round.rows_per_second),
        ms(looped.latency.p50_ms),
        looped.completed,
        looped.errors,
        percent(round.threads.io_wait_share(), "unknown"),
        if looped.complete { "" } else { " (interrupted)" }
    )
}

/// One level across its rounds, as the run's last lines say it.
pub(super) fn summary_line(level: &WritesLevel, unit: &str) -> String {
    let summary = &level.closed_loop;
    let rate = |value: Option<f64>| value.map_or("unknown".to_string(), |rate| number(rate, 0));
    let split = &level.decomposition;
    let lag = match (level.rate_kept, level.schedule_lag) {
        (Some(kept), Some(lag)) => {
            format!(", rate {}, schedule lag p99 {}", if kept { "kept" } else { "NOT kept" }, ms(lag.p99_ms))
        }
        _ => String::new(),
    };
    format!(
        "{}: {} {unit} ({}–{} across {}){lag}, {} rows/s, p50 {}, p99 {}, {} completed, {} failed; per INSERT: \
         CPU {}, write {}, fsync {}, lock waits {}, throttling {}, CPU wait {} ({})",
        plural(summary.clients, "client"),
        rate(summary.qps.median),
        rate(summary.qps.min),
        rate(summary.qps.max),
        plural(summary.rounds as u64, "complete round"),
        rate(level.rows_per_second.median),
        ms(summary.latency.p50_ms),
        ms(summary.latency.p99_ms),
        summary.completed,
        summary.errors,
        us(split.cpu_us),
        us(split.write_us),
        us(split.fsync_us),
        us(split.lock_wait_us),
        us(split.throttle_us),
        us(split.cpu_wait_us),
        match split.counted {
            Counted::InsertRecords => "each INSERT's own record",
            Counted::EngineCounters => "the engine's counters over the level, not per statement",
        },
    )
}

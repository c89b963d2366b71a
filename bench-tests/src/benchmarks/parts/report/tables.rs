//! The report's tables, a section each: durations against active parts, the fitted slopes
//! and the gate, concurrent clients, the parts-lock counters, and the builds' and phases'
//! times.

use super::*;

pub(super) fn durations(out: &mut String, results: &PartsResults, layout: &Layout) {
    let _ = writeln!(
        out,
        "## Query duration against total parts\n\nThe source's chart, measured: the median of each query's runs \
         from one client against its design's active parts.\n\n![duration](duration.svg)\n\n\
         ![planning](planning.svg)\n\n![planning against execution](planning_share.svg)\n"
    );
    for design in &layout.designs {
        let points = points_of(results, design);
        if points.is_empty() {
            continue;
        }
        let mut header = vec!["point".to_string(), "active parts".to_string()];
        for query in &layout.queries {
            header.extend([
                format!("`{query}` duration, ms: median (min-max)"),
                format!("`{query}` planning, ms (share)"),
                format!("`{query}` parts selected"),
            ]);
        }
        let mut table = Table::new(header);
        let mut changed = Vec::new();
        let mut previous_parts: Vec<Option<Option<f64>>> = vec![None; layout.queries.len()];
        for (point, active_parts) in points {
            let mut cells = vec![point.to_string(), active_parts.to_string()];
            for (index, query) in layout.queries.iter().enumerate() {
                let Some(runs) = runs_of(results, design, query, point, 1) else {
                    cells.extend(["not measured".to_string(), "-".to_string(), "-".to_string()]);
                    continue;
                };
                let figures = figures(runs, &results.engine_events);
                let mut durations: Vec<f64> = figures.iter().map(|sample| sample.duration_us).collect();
                durations.sort_by(f64::total_cmp);
                let duration = match (median(&durations), durations.first(), durations.last()) {
                    (Some(mid), Some(low), Some(high)) => {
                        format!("{} ({}-{})", ms(Some(mid)), ms(Some(*low)), ms(Some(*high)))
                    }
                    _ => "unknown (no runs)".to_string(),
                };
                let planning = median_of_all(figures.iter().map(|sample| sample.planning_us));
                let share = percent(planning_share(&figures), "unknown share");
                let parts = median_of_all(figures.iter().map(|sample| sample.parts_selected.map(|parts| parts as f64)));
                // The claim: a query reads the same parts at every point.
                let flag = match previous_parts[index] {
                    Some(before) if before != parts && parts.is_some() && before.is_some() => {
                        let name = format!("`{query}`");
                        if !changed.contains(&name) {
                            changed.push(name);
                        }
                        " (pruning changed)"
                    }
                    _ => "",
                };
                previous_parts[index] = Some(parts);
                cells.extend([
                    duration,
                    if planning.is_some() { format!("{} ({share})", ms(planning)) } else { "unknown".to_string() },
                    format!("{}{flag}", number(parts, 0)),
                ]);
            }
            table.row(cells);
        }
        let _ = writeln!(out, "### `{design}`\n\n{table}");
        if !changed.is_empty() {
            let _ = writeln!(
                out,
                "Parts selected changed between points for {}: that query's pruning is not the same at every \
                 part count, so its duration there is not planning against a constant read.\n",
                changed.join(", ")
            );
        }
    }
    let _ = writeln!(
        out,
        "Times are the engine's. Planning is analysis + plan build + plan optimisation \
         (`QueryAnalysisMicroseconds`, `QueryPlanBuildMicroseconds`, `QueryPlanOptimizeMicroseconds`); its share is \
         the median of each run's planning over its duration, the rest being execution. Parts selected is the \
         median of `SelectedParts`, marked \"pruning changed\" where it differs from the point before.\n"
    );
    if let Some(note) = engine_note(results) {
        let _ = writeln!(out, "{note}\n");
    }
}

pub(super) fn slopes(out: &mut String, results: &PartsResults) {
    let _ = writeln!(out, "## Slopes\n");
    if results.fits.is_empty() {
        let _ = writeln!(out, "No slope fitted yet.\n");
    } else {
        let mut table = Table::new([
            "design",
            "query",
            "fitted",
            "slope ± stderr, µs per 1,000 parts",
            "intercept, µs",
            "R²",
            "samples (part counts)",
            "verdict",
        ]);
        for fit in &results.fits {
            let (slope, intercept) = match (fit.quality.trusted(), fit.slope_us_per_1k_parts) {
                (true, Some(slope)) => (slope_text(slope, fit), number(fit.intercept_us, 0)),
                (true, None) => ("unknown".to_string(), "unknown".to_string()),
                (false, Some(_)) => ("not a clean slope".to_string(), "not stated".to_string()),
                (false, None) => ("unknown".to_string(), "unknown".to_string()),
            };
            table.row([
                format!("`{}`", fit.design),
                format!("`{}`", fit.query),
                fitted_label(fit.fitted).to_string(),
                slope,
                intercept,
                fit.r_squared.map_or("unknown".to_string(), |r| number(r, 2)),
                format!("{} ({})", fit.samples, fit.part_counts),
                fit.quality.label(),
            ]);
        }
        let _ = writeln!(
            out,
            "{table}\nA least-squares line through the median of each part count's one-client runs against the \
             design's active parts (medians, so that one run that met a hiccup does not bend it). Linear: R² at \
             least {}; flat: the slope is below {} µs per 1,000 parts even two standard errors up, so a low R² \
             is noise about a level line; a poor fit (the curve bends, or the noise is as large as the growth, \
             as on a sweep too small to tell) has no slope to state, and its fitted numbers stay in \
             `results.json` only.\n",
            number(super::super::fit::GOOD_R_SQUARED, 2),
            number(super::super::fit::FLAT_SLOPE_US_PER_1K_PARTS, 0)
        );
    }
    if let Some(gate) = &results.gate {
        let _ = writeln!(
            out,
            "Gate (`--max-slope`): planning slopes on `{}` at most {} µs per 1,000 active parts: {}\n",
            gate.design,
            number(gate.max_slope_us_per_1k_parts, 1),
            if gate.failures.is_empty() {
                "every query within the bound.".to_string()
            } else {
                "broken by".to_string()
            }
        );
        for failure in &gate.failures {
            let _ = writeln!(out, "- {failure}");
        }
        if !gate.failures.is_empty() {
            out.push('\n');
        }
    }
}

/// The name a bundle gives a statistics source, as docs/results.md lists it.
fn source_name(runs: &PartsQueryRuns) -> BTreeSet<String> {
    runs.samples
        .iter()
        .map(|sample| match serde_json::to_value(sample.stats.source) {
            Ok(serde_json::Value::String(name)) => name,
            _ => format!("{:?}", sample.stats.source),
        })
        .collect()
}

pub(super) fn concurrency(out: &mut String, results: &PartsResults, layout: &Layout) {
    let several: Vec<u32> = layout.clients.iter().copied().filter(|clients| *clients > 1).collect();
    let _ = writeln!(out, "## Concurrency\n");
    if several.is_empty() {
        let _ = writeln!(out, "One client only: nothing ran at once.\n");
        return;
    }
    let _ = writeln!(
        out,
        "The same query from several clients at once, at each point: the median duration of every client's \
         runs, its ratio to one client's, and the median planning, so that waiting on a shared lock shows as \
         a ratio growing with parts.\n"
    );
    // Runs with several clients whose records carry no counters, and those records' sources.
    let (mut unknown_samples, mut samples) = (0usize, 0usize);
    let mut unknown_sources = BTreeSet::new();
    for design in &layout.designs {
        let points = points_of(results, design);
        if points.is_empty() {
            continue;
        }
        let mut header = vec!["query".to_string(), "active parts".to_string(), "1 client, ms".to_string()];
        for clients in &several {
            header.extend([format!("{clients} clients, ms (against 1)"), format!("{clients} clients: planning, ms")]);
        }
        let mut table = Table::new(header);
        for query in &layout.queries {
            for (point, active_parts) in &points {
                let median_duration = |runs: &PartsQueryRuns| {
                    median_of_all(figures(runs, &results.engine_events).iter().map(|sample| Some(sample.duration_us)))
                };
                let one_client = runs_of(results, design, query, *point, 1);
                let one = one_client.and_then(median_duration);
                let one_cell = if one_client.is_some() { ms(one) } else { "not measured".to_string() };
                let mut cells = vec![format!("`{query}`"), active_parts.to_string(), one_cell];
                for clients in &several {
                    let Some(runs) = runs_of(results, design, query, *point, *clients) else {
                        cells.extend(["not measured".to_string(), "-".to_string()]);
                        continue;
                    };
                    let figures = figures(runs, &results.engine_events);
                    // Only records without counters: an engine that lacks one is said once above.
                    let unknown =
                        runs.warm_samples().filter(|sample| sample.stats.source == StatsSource::ResultCounters).count();
                    samples += figures.len();
                    unknown_samples += unknown;
                    if unknown > 0 {
                        unknown_sources.extend(source_name(runs));
                    }
                    let duration = median_duration(runs);
                    cells.extend([
                        format!("{} ({})", ms(duration), times(duration.zip(one).and_then(|(k, one)| ratio(k, one)))),
                        ms(median_of_all(figures.iter().map(|sample| sample.planning_us))),
                    ]);
                }
                table.row(cells);
            }
        }
        let _ = writeln!(out, "### `{design}`\n\n{table}");
    }
    if unknown_samples == 0 {
        let _ = writeln!(out, "Every run with several clients has its own counters.\n");
    } else {
        let sources: Vec<String> = unknown_sources.iter().map(|source| format!("`{source}`")).collect();
        let _ = writeln!(
            out,
            "Unknown under concurrency: planning, parts selected and the lock counters of {unknown_samples} of the \
             {samples} runs with several clients (`unknown` above). Their records (`stats.source` {}, docs/results.md) carry no \
             ProfileEvents of their own: where the engine counts events per process rather than per statement \
             (the embedded engine's `system.events`), a statement's counters cannot be told from the other \
             clients' while they run. Their durations are each statement's own.\n",
            sources.join(", ")
        );
    }
}

pub(super) fn locks(out: &mut String, results: &PartsResults, layout: &Layout) {
    let _ = writeln!(
        out,
        "## Lock counters\n\nThe median wait for the table's parts lock per run, exclusive \
         (`PartsLockWaitMicroseconds`) / shared (`SharedPartsLockWaitMicroseconds`, the lock the upstream fix \
         made shared), in µs.\n"
    );
    let availability = |name: &str| match results.engine_events.has(name) {
        Some(true) => None,
        Some(false) => Some("not in this engine"),
        None => Some("unknown"),
    };
    let (exclusive, shared) =
        (availability("PartsLockWaitMicroseconds"), availability("SharedPartsLockWaitMicroseconds"));
    for design in &layout.designs {
        let points = points_of(results, design);
        if points.is_empty() {
            continue;
        }
        let mut header = vec!["query".to_string(), "active parts".to_string()];
        header
            .extend(layout.clients.iter().map(|clients| format!("{}: wait / shared wait", plural(*clients, "client"))));
        let mut table = Table::new(header);
        // Whether any run waited at all: a table of nothing but zeros and unknowns is said
        // in one line.
        let (mut waited, mut measured) = (false, false);
        for query in &layout.queries {
            for (point, active_parts) in &points {
                let mut cells = vec![format!("`{query}`"), active_parts.to_string()];
                for clients in &layout.clients {
                    let Some(runs) = runs_of(results, design, query, *point, *clients) else {
                        cells.push("not measured".to_string());
                        continue;
                    };
                    for sample in figures(runs, &results.engine_events) {
                        let waits = [sample.parts_lock_wait_us, sample.shared_parts_lock_wait_us];
                        measured |= waits.iter().any(Option::is_some);
                        waited |= waits.iter().any(|wait| wait.is_some_and(|us| us > 0));
                    }
                    let figures = figures(runs, &results.engine_events);
                    let wait = |missing: Option<&str>, value: fn(&PlanningSample) -> Option<u64>| match missing {
                        Some(missing) => missing.to_string(),
                        None => {
                            number(median_of_all(figures.iter().map(|sample| value(sample).map(|us| us as f64))), 0)
                        }
                    };
                    cells.push(format!(
                        "{} / {}",
                        wait(exclusive, |sample| sample.parts_lock_wait_us),
                        wait(shared, |sample| sample.shared_parts_lock_wait_us)
                    ));
                }
                table.row(cells);
            }
        }
        if waited || !measured {
            let _ = writeln!(out, "### `{design}`\n\n{table}");
        } else {
            let _ = writeln!(
                out,
                "### `{design}`\n\nNo run waited for the parts lock: every wait measured was 0 µs (with several \
                 clients at once, where the records have no counters, the waits are unknown: see \
                 \"Concurrency\").\n"
            );
        }
    }
}

pub(super) fn builds(out: &mut String, results: &PartsResults) {
    let _ = writeln!(out, "## Build\n\nEach point as built, per design, and the time it took to measure the point.\n");
    if results.points.is_empty() {
        let _ = writeln!(out, "No point built yet.\n");
        return;
    }
    let mut table = Table::new([
        "point",
        "design",
        "added rows",
        "rows",
        "active parts",
        "partitions",
        "bytes on disk",
        "build, s",
    ]);
    let (mut added_rows, mut build_seconds, mut builds_unknown) = (0u64, 0.0, 0usize);
    for point in &results.points {
        for build in &point.builds {
            added_rows += build.added_rows;
            match build.seconds {
                Some(seconds) => build_seconds += seconds,
                None => builds_unknown += 1,
            }
            table.row([
                point.parts.to_string(),
                format!("`{}`", build.design),
                build.added_rows.to_string(),
                build.rows.to_string(),
                build.active_parts.to_string(),
                build.partitions.to_string(),
                human_bytes(build.bytes_on_disk),
                number(build.seconds, 1),
            ]);
        }
    }
    table.row([
        "total".to_string(),
        String::new(),
        added_rows.to_string(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        total_seconds(build_seconds, builds_unknown),
    ]);
    let _ = writeln!(out, "{table}");
    let mut measure = Table::new(["point", "measure, s (every query, design and client count)"]);
    let (mut measure_seconds, mut measures_unknown) = (0.0, 0usize);
    for point in &results.points {
        let seconds = match point.measure_seconds.filter(|seconds| seconds.is_finite()) {
            Some(seconds) => {
                measure_seconds += seconds;
                number(seconds, 1)
            }
            None => {
                measures_unknown += 1;
                "unknown (its measuring did not finish)".to_string()
            }
        };
        measure.row([point.parts.to_string(), seconds]);
    }
    measure.row(["total".to_string(), total_seconds(measure_seconds, measures_unknown)]);
    let _ = writeln!(out, "{measure}");
    if !results.phase_times.is_empty() {
        let mut phases = Table::new(["phase", "seconds"]);
        for time in &results.phase_times {
            phases.row([time.phase.replace('_', " "), number(time.seconds, 1)]);
        }
        let _ = writeln!(out, "Each phase's wall time (a phase that stopped, until it stopped):\n\n{phases}");
    }
}

/// A sum of seconds, saying how many were unknown rather than counting them as none.
fn total_seconds(sum: f64, unknown: usize) -> String {
    match unknown {
        0 => number(sum, 1),
        unknown => format!("at least {} ({unknown} unknown)", number(sum, 1)),
    }
}

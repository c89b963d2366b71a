//! The parts benchmark's section of a report, and its charts, made from its results
//! alone: the sweep and the headline slopes, query duration against the table's active
//! parts with planning's share of it, every fitted slope and the gate, concurrent clients,
//! the parts-lock counters, and what each build and each point's measuring took.
//!
//! The source is the Cloudflare account of Ready-Analytics (docs/sources.md): planning
//! walked the whole parts list, so a query that read a few parts planned more slowly as
//! the table's parts grew. The report says where that holds here: per point, and as a
//! slope that is printed as a number only when its fit is trusted.

mod tables;

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::Result;

use self::tables::{builds, concurrency, durations, locks, slopes};
use super::results::{EngineEvents, Fitted, PLANNING_EVENTS, PartsQueryRuns, PartsResults, PlanningSample, SlopeFit};
use crate::markdown::Table;
use crate::numbers::{median, median_of_all, ratio};
use crate::report::charts::{self, Line};
use crate::stats::StatsSource;
use crate::units::{human_bytes, number, percent, plural, times};

/// How the report cites the source: by its name in docs/sources.md.
const SOURCE: &str = "Cloudflare's account of Ready-Analytics, \"Cloudflare: query planning and part counts in \
                      Ready-Analytics\" in docs/sources.md";

/// The section's Markdown, from the results alone.
/// `engine_version` is the target's (the bundle's envelope), which says whether the engine
/// has the upstream fix.
pub fn markdown(results: &PartsResults, engine_version: &str) -> String {
    let mut out = String::new();
    let layout = Layout::of(results);
    sweep(&mut out, results, &layout);
    designs_and_engine(&mut out, results, &layout, engine_version);
    if results.points.is_empty() && results.queries.is_empty() {
        let _ = writeln!(out, "Nothing measured yet: the run stopped before the first point was built.\n");
        return out;
    }
    durations(&mut out, results, &layout);
    slopes(&mut out, results);
    concurrency(&mut out, results, &layout);
    locks(&mut out, results, &layout);
    builds(&mut out, results);
    out
}

/// The charts, as (file name, SVG): the median duration and the median planning time
/// against the table's active parts (one line per query and design, one client), and
/// planning's share of the duration at every point.
pub fn charts(results: &PartsResults) -> Result<Vec<(&'static str, String)>> {
    let layout = Layout::of(results);
    let lines = |figure: fn(&PlanningSample) -> Option<f64>| -> Vec<Line> {
        let mut lines = Vec::new();
        for design in &layout.designs {
            for query in &layout.queries {
                let points: Vec<(f64, Option<f64>)> = points_of(results, design)
                    .into_iter()
                    .filter_map(|(point, active_parts)| {
                        let runs = runs_of(results, design, query, point, 1)?;
                        let ms =
                            median_of_all(figures(runs, &results.engine_events).iter().map(figure)).map(|us| us / 1e3);
                        Some((active_parts as f64, ms))
                    })
                    .collect();
                if !points.is_empty() {
                    lines.push(Line { name: format!("{query} · {design}"), points });
                }
            }
        }
        lines
    };
    let duration = lines(|sample| Some(sample.duration_us));
    let planning = lines(|sample| sample.planning_us);
    let nothing = |svg: Result<String>| -> Result<String> {
        if results.queries.is_empty() { Ok(charts::empty("nothing measured yet")) } else { svg }
    };
    Ok(vec![
        (
            "duration.svg",
            nothing(charts::log_log_lines("Median query duration, one client", "active parts", "ms", &duration))?,
        ),
        (
            "planning.svg",
            nothing(charts::log_log_lines("Median planning time, one client", "active parts", "ms", &planning))?,
        ),
        ("planning_share.svg", nothing(share_chart(results, &layout))?),
    ])
}

/// Planning against execution, as shares of each point's median duration; a point whose
/// planning is unknown is drawn whole as `unknown`, never as all execution.
fn share_chart(results: &PartsResults, layout: &Layout) -> Result<String> {
    let mut rows = Vec::new();
    for design in &layout.designs {
        for query in &layout.queries {
            for (point, active_parts) in points_of(results, design) {
                let Some(runs) = runs_of(results, design, query, point, 1) else { continue };
                let share = planning_share(&figures(runs, &results.engine_events));
                let values = share.map_or([0.0, 0.0, 1.0], |share| [share, 1.0 - share.min(1.0), 0.0]).map(Some);
                rows.push((format!("{query} · {design} · {active_parts}"), values));
            }
        }
    }
    charts::shares(
        "Planning against execution, one client (query · design · active parts)",
        ["planning", "execution", "unknown"],
        &rows,
    )
}

/// The designs, queries and client counts to show, in the sweep's order, with any the
/// runs hold that the sweep does not name after them (a bundle is shown whole).
struct Layout {
    designs: Vec<String>,
    queries: Vec<String>,
    clients: Vec<u32>,
}

impl Layout {
    fn of(results: &PartsResults) -> Layout {
        fn in_order<T: Ord + Clone>(named: &[T], found: impl Iterator<Item = T>) -> Vec<T> {
            let mut all = named.to_vec();
            let named: BTreeSet<T> = named.iter().cloned().collect();
            let found: BTreeSet<T> = found.filter(|item| !named.contains(item)).collect();
            all.extend(found);
            all
        }
        Layout {
            designs: in_order(&results.sweep.designs, results.queries.iter().map(|runs| runs.variant.design.clone())),
            queries: in_order(&results.sweep.queries, results.queries.iter().map(|runs| runs.query.clone())),
            clients: in_order(&results.sweep.clients, results.queries.iter().map(|runs| runs.variant.clients)),
        }
    }
}

/// The points measured on `design`, rising, each with the design's active parts then
/// (as one client's runs saw them: those are what the slopes are fitted to).
fn points_of(results: &PartsResults, design: &str) -> Vec<(u64, u64)> {
    let mut points: Vec<(u64, u64)> = Vec::new();
    let mut runs: Vec<&PartsQueryRuns> = results.queries.iter().filter(|runs| runs.variant.design == design).collect();
    runs.sort_by_key(|runs| (runs.variant.point, runs.variant.clients != 1));
    for runs in runs {
        if points.last().map(|(point, _)| *point) != Some(runs.variant.point) {
            points.push((runs.variant.point, runs.variant.active_parts));
        }
    }
    points
}

/// The runs of `query` on `design` at `point` with `clients` at once.
fn runs_of<'a>(
    results: &'a PartsResults,
    design: &str,
    query: &str,
    point: u64,
    clients: u32,
) -> Option<&'a PartsQueryRuns> {
    results.queries.iter().find(|runs| {
        runs.query == query
            && runs.variant.design == design
            && runs.variant.point == point
            && runs.variant.clients == clients
    })
}

/// The figures of each measured (warm) run. A record that carries no counters at all
/// (the result's counters alone, while other clients ran) reads unknown for every
/// counter here, so that no figure nobody measured is printed as 0.
fn figures(runs: &PartsQueryRuns, events: &EngineEvents) -> Vec<PlanningSample> {
    runs.warm_samples().map(|sample| PlanningSample::of(sample, events)).collect()
}

/// Planning's share of the duration: the median over the runs of each run's share.
fn planning_share(figures: &[PlanningSample]) -> Option<f64> {
    median_of_all(figures.iter().map(|sample| sample.planning_us.and_then(|us| ratio(us, sample.duration_us))))
}

fn ms(us: Option<f64>) -> String {
    number(us.map(|us| us / 1e3), 2)
}

fn list<T: ToString>(items: &[T]) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// What was swept, and the headline: each query's planning slope on the first design.
fn sweep(out: &mut String, results: &PartsResults, layout: &Layout) {
    let sweep = &results.sweep;
    let bound = sweep
        .max_slope_us_per_1k_parts
        .map_or(String::new(), |bound| format!(", planning slopes held to {} µs per 1,000 parts", number(bound, 1)));
    let _ = write!(
        out,
        "Swept {} ({} active parts of the `(namespace, day)` design) on the designs {}, {} rows per \
         `(namespace, day)` part over {} namespaces, {} per query at each point and client count after a \
         warm-up, {} at once{bound}; {} of the {} points measured. The source ({SOURCE}) found that planning \
         walked the table's whole parts list, so a query reading a few parts planned more slowly as parts \
         grew (fixed upstream in ClickHouse 25.11).",
        plural(u32::try_from(sweep.points.len()).unwrap_or(u32::MAX), "point"),
        list(&sweep.points),
        sweep.designs.iter().map(|design| format!("`{design}`")).collect::<Vec<_>>().join(", "),
        sweep.rows_per_part,
        sweep.namespaces,
        plural(sweep.runs, "run"),
        sweep.clients.iter().map(|clients| plural(*clients, "client")).collect::<Vec<_>>().join(", "),
        results.points.iter().filter(|point| point.measure_seconds.is_some()).count(),
        sweep.points.len(),
    );
    match layout.designs.first() {
        Some(design) => {
            let slopes: Vec<String> = layout
                .queries
                .iter()
                .map(|query| {
                    let fit = results
                        .fits
                        .iter()
                        .find(|fit| &fit.design == design && &fit.query == query && fit.fitted == Fitted::Planning);
                    format!("`{query}` {}", fit.map_or("no fit yet".to_string(), headline))
                })
                .collect();
            let _ = writeln!(
                out,
                " Planning slope on `{design}`, µs of planning per 1,000 active parts: {}.\n",
                if slopes.is_empty() { "no query measured yet".to_string() } else { slopes.join("; ") }
            );
        }
        None => out.push_str("\n\n"),
    }
}

/// The partition key's part in it, at the largest point measured on both designs, and
/// which side of the upstream fix the engine is on.
fn designs_and_engine(out: &mut String, results: &PartsResults, layout: &Layout, engine_version: &str) {
    if let [first, second, ..] = layout.designs.as_slice() {
        let planning_at = |design: &str, query: &str, point: u64| {
            let runs = runs_of(results, design, query, point, 1)?;
            median_of_all(figures(runs, &results.engine_events).iter().map(|sample| sample.planning_us))
                .map(|us| (runs.variant.active_parts, us))
        };
        let compared: Vec<String> = layout
            .queries
            .iter()
            .filter_map(|query| {
                let point = results.points.iter().rev().map(|point| point.parts).find(|&point| {
                    planning_at(first, query, point).is_some() && planning_at(second, query, point).is_some()
                })?;
                let ((parts_here, here), (parts_there, there)) =
                    (planning_at(first, query, point)?, planning_at(second, query, point)?);
                Some(format!(
                    "`{query}` {} ms at {parts_here} parts against {} ms at {parts_there}",
                    ms(Some(here)),
                    ms(Some(there))
                ))
            })
            .collect();
        if !compared.is_empty() {
            let _ = writeln!(
                out,
                "The partition key's part, at the largest point measured on both designs (the same rows): median \
                 planning on `{first}` against `{second}`: {}.\n",
                compared.join("; ")
            );
        }
    }
    // The release as the bundle records it (year.month...), read here: a report depends on
    // the bundle alone, not on the targets that wrote it.
    let release: Option<(u32, u32)> = {
        let mut numbers = engine_version.split('.').map(str::parse::<u32>);
        match (numbers.next(), numbers.next()) {
            (Some(Ok(year)), Some(Ok(month))) => Some((year, month)),
            _ => None,
        }
    };
    let side = match release {
        Some(release) if release >= (25, 11) => {
            "after the upstream fix (25.11): the slope is what planning still costs per part"
        }
        Some(_) => "before the upstream fix (25.11): compare with a run on 25.11 or later (docs/parts.md)",
        None => "of a release this report cannot tell from the fix's",
    };
    let _ = writeln!(out, "The engine measured is ClickHouse {engine_version}, {side}.\n");
}

/// A fit as the headline says it: a number only when the fit is trusted.
fn headline(fit: &SlopeFit) -> String {
    let r_squared = fit.r_squared.map_or("unknown".to_string(), |r| number(r, 2));
    match (fit.quality.trusted(), fit.slope_us_per_1k_parts) {
        (true, Some(slope)) => format!("{} (R² {r_squared}, {})", slope_text(slope, fit), fit.quality.label()),
        (true, None) => "unknown (the fit has no slope)".to_string(),
        (false, _) if fit.r_squared.is_some() => {
            format!("{} (R² {r_squared}): not a clean slope", fit.quality.label())
        }
        (false, _) => fit.quality.label(),
    }
}

fn slope_text(slope: f64, fit: &SlopeFit) -> String {
    let stderr = fit.slope_stderr_us_per_1k_parts.map_or("unknown".to_string(), |stderr| number(stderr, 1));
    format!("{} ± {stderr}", number(slope, 1))
}

fn fitted_label(fitted: Fitted) -> &'static str {
    match fitted {
        Fitted::Planning => "planning",
        Fitted::Duration => "duration",
    }
}

/// Why planning figures are unknown in every sample, when the engine says so: said once.
fn engine_note(results: &PartsResults) -> Option<String> {
    match &results.engine_events {
        EngineEvents::Unknown { reason } => Some(format!(
            "Which counters the engine has is unknown ({reason}), so every planning, parts and lock figure is unknown."
        )),
        EngineEvents::Known { .. } => {
            let missing: Vec<String> = PLANNING_EVENTS
                .iter()
                .filter(|name| results.engine_events.has(name) == Some(false))
                .map(|name| format!("`{name}`"))
                .collect();
            (!missing.is_empty())
                .then(|| format!("This engine has no {}: planning, and its share, are unknown.", missing.join(", ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::parts::fit::fit_line;
    use crate::benchmarks::parts::results::{
        FitQuality, Gate, LOCK_EVENTS, OTHER_EVENTS, PartsVariant, Point, PointBuild, Sweep,
    };
    use crate::breakdown::TimeBreakdown;
    use crate::query_runs::{QueryRuns, Sample, SampleKind};
    use crate::settings::Settings;
    use crate::stats::{QueryStats, StatsSource};

    const DESIGN: &str = "by_namespace_day";

    fn stats(duration_us: u64, events: &[(&str, u64)]) -> QueryStats {
        QueryStats {
            log_comment: "r/parts/q/1".to_string(),
            source: StatsSource::ResultAndEventsDelta,
            read_rows: 100,
            read_bytes: 800,
            result_rows: 1,
            server_duration_us: duration_us,
            client_duration_us: duration_us + 100,
            memory_usage: None,
            profile_events: events.iter().map(|(name, value)| (name.to_string(), *value)).collect(),
            raw: serde_json::Value::Null,
        }
    }

    /// A record of a statement run while others ran, on an engine whose counters are the
    /// process's: the result's counters alone.
    fn at_once(duration_us: u64) -> QueryStats {
        QueryStats { source: StatsSource::ResultCounters, ..stats(duration_us, &[]) }
    }

    fn runs(query: &str, point: u64, clients: u32, samples: Vec<QueryStats>) -> PartsQueryRuns {
        QueryRuns {
            query: query.to_string(),
            variant: PartsVariant { design: DESIGN.to_string(), point, active_parts: point + 1, clients },
            ab_variant: None,
            plan: None,
            sql_file: format!("sql/{query}.sql"),
            answer: "1".to_string(),
            samples: samples
                .into_iter()
                .enumerate()
                .map(|(attempt, stats)| Sample {
                    kind: SampleKind::Warm,
                    attempt: attempt as u32,
                    settings: Settings::new(),
                    breakdown: TimeBreakdown::of_record(&stats),
                    stats,
                    round_position: None,
                    answer: None,
                })
                .collect(),
        }
    }

    /// One client's run: `planning` µs of it in analysis, `parts` selected, a lock wait.
    fn one_client(duration_us: u64, planning: u64, parts: u64) -> QueryStats {
        stats(
            duration_us,
            &[
                ("QueryAnalysisMicroseconds", planning),
                ("SelectedParts", parts),
                ("PartsLockWaitMicroseconds", 7),
                ("RealTimeMicroseconds", duration_us),
            ],
        )
    }

    fn sweep() -> Sweep {
        Sweep {
            points: vec![200, 2_000],
            rows_per_part: 100,
            namespaces: 10,
            designs: vec![DESIGN.to_string()],
            queries: vec!["day_by_date".to_string(), "select_one".to_string()],
            runs: 2,
            clients: vec![1, 4],
            max_slope_us_per_1k_parts: Some(50.0),
        }
    }

    /// An engine with the planning and parts counters, and the exclusive lock's but not
    /// the shared lock's (as before the upstream fix).
    fn engine_events() -> EngineEvents {
        let names = PLANNING_EVENTS.iter().chain(&OTHER_EVENTS).chain(&LOCK_EVENTS[..3]);
        EngineEvents::Known { names: names.map(|name| name.to_string()).collect() }
    }

    fn empty_results() -> PartsResults {
        PartsResults {
            sweep: sweep(),
            engine_events: engine_events(),
            limits: None,
            points: Vec::new(),
            queries: Vec::new(),
            fits: Vec::new(),
            gate: None,
            phase_times: vec![crate::benchmarks::parts::PhaseTime {
                phase: "clean_up".to_string(),
                seconds: Some(2.5),
            }],
        }
    }

    fn build(point: u64) -> PointBuild {
        PointBuild {
            design: DESIGN.to_string(),
            added_rows: point * 100,
            rows: point * 100,
            active_parts: point + 1,
            partitions: point,
            bytes_on_disk: point * 4_096,
            seconds: Some(1.5),
            insert: stats(1_000, &[]),
        }
    }

    /// Two points; `day_by_date` from one client and four, `select_one` from one. The
    /// four clients' records carry no counters (the process-wide events cannot be split).
    fn measured() -> PartsResults {
        let day_by_date = |point: u64, duration: u64, planning: u64, parts: u64| {
            runs(
                "day_by_date",
                point,
                1,
                vec![one_client(duration, planning, parts), one_client(duration + 200, planning, parts)],
            )
        };
        let queries = vec![
            day_by_date(200, 1_000, 400, 1),
            day_by_date(2_000, 3_000, 2_400, 2),
            runs("day_by_date", 200, 4, vec![at_once(2_000), at_once(2_400)]),
            runs("day_by_date", 2_000, 4, vec![at_once(9_000), at_once(9_400)]),
            runs("select_one", 200, 1, vec![one_client(500, 100, 0), one_client(500, 100, 0)]),
            runs("select_one", 2_000, 1, vec![one_client(500, 100, 0), one_client(520, 100, 0)]),
        ];
        let fits = vec![
            fit_line(
                DESIGN,
                "day_by_date",
                Fitted::Planning,
                &[(201, Some(400.0)), (201, Some(400.0)), (2_001, Some(2_400.0)), (2_001, Some(2_400.0))],
            ),
            fit_line(DESIGN, "select_one", Fitted::Planning, &[(201, Some(100.0)), (2_001, Some(100.0))]),
        ];
        PartsResults {
            points: vec![
                Point { parts: 200, builds: vec![build(200)], measure_seconds: Some(4.0) },
                Point { parts: 2_000, builds: vec![build(2_000)], measure_seconds: None },
            ],
            queries,
            fits,
            gate: Some(Gate {
                max_slope_us_per_1k_parts: Some(50.0),
                design: DESIGN.to_string(),
                failures: vec!["day_by_date: planning slope 1111.1 µs per 1,000 parts, above 50.0".to_string()],
            }),
            ..empty_results()
        }
    }

    #[test]
    fn a_run_stopped_before_the_first_point_renders_nothing_measured_yet() {
        let results = empty_results();
        let markdown = markdown(&results, "26.7.2.1");
        assert!(markdown.contains("Nothing measured yet"), "{markdown}");
        assert!(markdown.contains("0 of the 2 points measured"), "{markdown}");
        let charts = charts(&results).unwrap();
        let names: Vec<&str> = charts.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["duration.svg", "planning.svg", "planning_share.svg"]);
        assert!(charts.iter().all(|(_, svg)| svg.contains("nothing measured yet")));
    }

    #[test]
    fn a_poor_fit_never_prints_as_a_clean_slope() {
        let poor = SlopeFit {
            design: DESIGN.to_string(),
            query: "day_by_date".to_string(),
            fitted: Fitted::Planning,
            samples: 6,
            part_counts: 3,
            slope_us_per_1k_parts: Some(123.456),
            intercept_us: Some(9_876.5),
            r_squared: Some(0.42),
            slope_stderr_us_per_1k_parts: Some(98.7),
            quality: FitQuality::Poor,
        };
        let linear = SlopeFit {
            query: "select_one".to_string(),
            slope_us_per_1k_parts: Some(7.89),
            intercept_us: Some(100.0),
            r_squared: Some(0.97),
            slope_stderr_us_per_1k_parts: Some(0.5),
            quality: FitQuality::Linear,
            ..poor.clone()
        };
        let duration = SlopeFit { fitted: Fitted::Duration, ..poor.clone() };
        let results = PartsResults { fits: vec![poor, linear, duration], ..measured() };
        let markdown = markdown(&results, "26.7.2.1");
        assert!(markdown.contains("`day_by_date` poor fit (R² 0.42): not a clean slope"), "{markdown}");
        assert!(markdown.contains("`select_one` 7.9 ± 0.5 (R² 0.97, linear)"), "{markdown}");
        for number in ["123", "98.7", "9876"] {
            assert!(!markdown.contains(number), "the poor fit's {number} is printed:\n{markdown}");
        }
        assert_eq!(markdown.matches("| not a clean slope | not stated | 0.42 |").count(), 2, "{markdown}");
    }

    #[test]
    fn each_point_shows_planning_share_concurrency_and_what_is_unknown_said_once() {
        let results = measured();
        let markdown = markdown(&results, "26.7.2.1");
        // Median of 1,000 and 1,200 µs, planning 400 µs: 36.67 %, the median of 40 % and 33.3 %.
        assert!(markdown.contains("| 200 | 201 | 1.10 (1.00-1.20) | 0.40 (36.67 %) | 1 |"), "{markdown}");
        assert!(
            markdown.contains("| 2000 | 2001 | 3.10 (3.00-3.20) | 2.40 (77.50 %) | 2 (pruning changed) |"),
            "{markdown}"
        );
        assert!(markdown.contains("Parts selected changed between points for `day_by_date`:"), "{markdown}");
        // Four clients: 2.2 ms against 1.1 ms, planning unknown; said why once.
        assert!(markdown.contains("| `day_by_date` | 201 | 1.10 | 2.20 (2.00x) | unknown |"), "{markdown}");
        assert!(markdown.contains("| `select_one` | 201 | 0.50 | not measured | - |"), "{markdown}");
        assert_eq!(markdown.matches("Unknown under concurrency").count(), 1, "{markdown}");
        assert!(markdown.contains("4 of the 4 runs with several clients"), "{markdown}");
        assert!(markdown.contains("`stats.source` `result_counters`"), "{markdown}");
        // Locks: the exclusive wait measured, the shared one not in this engine, unknown under concurrency.
        assert!(
            markdown.contains("| `day_by_date` | 201 | 7 / not in this engine | unknown / not in this engine |"),
            "{markdown}"
        );
        assert!(!markdown.contains("every query within the bound"), "{markdown}");
        assert!(markdown.contains("- day_by_date: planning slope 1111.1"), "{markdown}");
        // Builds, and a point whose measuring did not finish.
        assert!(markdown.contains("| total |  | 220000 |  |  |  |  | 3.0 |"), "{markdown}");
        assert!(markdown.contains("| total | at least 4.0 (1 unknown) |"), "{markdown}");
        let charts = charts(&results).unwrap();
        let duration = &charts[0].1;
        assert!(
            duration.contains("day_by_date · by_namespace_day") && duration.contains("select_one · by_namespace_day")
        );
        // Four measured points, each drawn and named on hover by a twin.
        assert_eq!(duration.matches("<circle").count(), 8, "{duration}");
        assert_eq!(duration.matches("<title>").count(), 4, "{duration}");
    }

    #[test]
    fn lock_waits_that_are_all_zero_are_said_in_one_line() {
        let mut results = measured();
        for runs in &mut results.queries {
            for sample in &mut runs.samples {
                sample.stats.profile_events.retain(|name, _| !name.contains("LockWait"));
            }
        }
        let markdown = markdown(&results, "26.7.2.1");
        assert!(markdown.contains("No run waited for the parts lock: every wait measured was 0 µs"), "{markdown}");
        assert!(!markdown.contains("wait / shared wait"), "{markdown}");
    }

    #[test]
    fn counters_of_an_engine_whose_list_is_unknown_read_unknown_never_0() {
        let results = PartsResults {
            engine_events: EngineEvents::Unknown { reason: "system.events could not be read".to_string() },
            ..measured()
        };
        let markdown = markdown(&results, "26.7.2.1");
        assert!(markdown.contains("| 200 | 201 | 1.10 (1.00-1.20) | unknown | unknown |"), "{markdown}");
        assert!(markdown.contains("| `day_by_date` | 201 | unknown / unknown | unknown / unknown |"), "{markdown}");
        assert!(markdown.contains("Which counters the engine has is unknown (system.events could not be read)"));
    }
}

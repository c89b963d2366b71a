//! One level of one round as measured: the clients' loop (closed, or open at `--rate`) with
//! an observer beside it (the engine's threads every 20 ms when they are this process's;
//! the table's parts and merges, and a server's thread gauges, every 200 ms) and the
//! engine's counters read before and after, and on a server the INSERTs' own records
//! after; its record ([`WritesRound`]), failures by the engine's error code, and each
//! completed statement a sample of its query runs.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};

use super::decomposition::{EVENTS, SYSTEM_TIME, USER_TIME};
use super::server::{self, GaugeLook, GaugeMeans};
use super::variants::Turn;
use super::{
    CodeErrors, CpuUse, EventsDelta, FORMAT, MIX_SEED, MixStatement, PartsSampled, ThreadsSampled, WritesBenchmark,
    WritesRound, WritesRun, WritesVariant,
};
use crate::closed_loop::{
    InClusterLevel, NamedQuery, client_orders, in_cluster_level, level_query_id_prefix, level_round,
};
use crate::engine_threads::{TaskStates, ThreadStateMeans, own_task_states};
use crate::fixtures::Statement;
use crate::levels::LevelRound;
use crate::load_generator::LoadFrom;
use crate::measure::closed_loop_stats;
use crate::numbers::ratio;
use crate::query_runs::{QueryRuns, Sample, SampleKind};
use crate::settings::Settings;
use crate::sql::sql_string;
use crate::stats::{StatementTag, StatsSource};
use crate::targets::{ClosedLoop, EventsSnapshot, ObserverConnection};

impl WritesBenchmark {
    /// One level of one round: the loop, with the observer and the counters around it.
    pub(super) fn level(
        &self,
        run: &mut WritesRun<'_>,
        statements: &[(MixStatement, Statement)],
        table: &str,
        turn: &Turn,
        round: u32,
        clients: u32,
    ) -> Result<MeasuredLevel> {
        let capabilities = *run.target.capabilities();
        let in_process = capabilities.engine_in_process;
        // Where the target keeps a record of each statement while others run (a server's
        // query_log), the level's statements carry a tag of their own that finds the
        // INSERTs' records after it. An asynchronous INSERT's record holds its wait for the
        // queue, not the flush that writes its part, so those are not read.
        let keeps_records = capabilities.concurrent_stats_source() == StatsSource::QueryLog;
        // The tag names the level for people; a nonce makes it the level's alone, whatever
        // else the server logged under the same run id.
        let level_tag = (keeps_records && !self.async_insert).then(|| {
            let variant = turn.variant.as_ref().map_or(String::new(), |name| format!("{name}_"));
            let tag = StatementTag::new(&run.run_id(), "writes", &format!("{variant}c{clients}_r{round}"), 1);
            format!("{tag}/{}", uuid::Uuid::new_v4().simple())
        });
        let settings = match &level_tag {
            Some(tag) => turn.settings.merged(&Settings::new().with("log_comment", tag)),
            None => turn.settings.clone(),
        };
        let before = run.target.read_events();
        let observer = run.target.observe(THREADS_EVERY, look(in_process, table.to_string()))?;
        // One pass of the mix, each client in its own seeded order of it.
        let pass = self.mix()?.pass();
        let sql_of =
            |kind: MixStatement| statements.iter().find(|(statement, _)| *statement == kind).map(|(_, sql)| sql);
        let pass_sql: Vec<&str> = pass.iter().filter_map(|&kind| sql_of(kind)).map(|sql| sql.sql.as_str()).collect();
        let names: Vec<String> = pass.iter().map(|kind| kind.name().to_string()).collect();
        let ran = if run.results().workload.load_from == LoadFrom::Cluster {
            let named: Vec<NamedQuery<'_>> =
                pass.iter().zip(&pass_sql).map(|(kind, sql)| NamedQuery { name: kind.name(), sql }).collect();
            // Each configuration of an A/B run's level its own statements: a nonce, as the
            // level's log_comment has (two variants' names may differ only in case or `_`).
            let nonce = uuid::Uuid::new_v4().simple().to_string();
            let prefix = format!("{}-{}", level_query_id_prefix(&run.database(), round, clients), &nonce[..8]);
            let progress = run.progress;
            in_cluster_level(
                run.target,
                round,
                clients,
                &named,
                self.bound().into(),
                &settings,
                &self.load.placement(),
                &prefix,
                &mut |line| progress.note(&format!("{}{line}", turn.prefix())),
                &mut |warning| progress.warn(&format!("{}{warning}", turn.prefix())),
            )
            .and_then(|ran| LevelRan::in_cluster(ran, &pass, sql_of(MixStatement::Insert).map(|sql| sql.sql.as_str())))
        } else {
            let orders = client_orders(MIX_SEED, clients, pass.len());
            let looped = match self.rate {
                Some(rate) => run.target.run_open_loop(
                    clients as usize,
                    &pass_sql,
                    &orders,
                    self.bound(),
                    rate,
                    &settings,
                    FORMAT,
                ),
                None => {
                    run.target.run_closed_loop(clients as usize, &pass_sql, &orders, self.bound(), &settings, FORMAT)
                }
            };
            looped.map(|looped| LevelRan::here(looped, &pass, round, clients, &names))
        };
        // The observer stops whatever the loop did.
        let observed = observer.finish();
        let LevelRan { closed_loop, looped, inserts, errors_by_code, interrupted } = ran?;
        let in_cluster = closed_loop.load.is_some();
        // The Job's start (scheduling, the image, the first SELECT 1) and end around the
        // level are in the window these span, and cannot be told from it.
        let window = || {
            "the level ran in a Kubernetes Job, whose start and end around it the engine's counters and gauges \
             cannot be told from"
                .to_string()
        };
        let after = run.target.read_events();
        let events = match (before, after) {
            _ if in_cluster => EventsDelta::Unknown { reason: window() },
            (Ok(before), Ok(after)) => EventsDelta::Known {
                engine_wide: true,
                rises: EVENTS
                    .iter()
                    .map(|&name| {
                        let value = |snapshot: &EventsSnapshot| snapshot.values.get(name).copied().unwrap_or(0);
                        (name.to_string(), value(&after).saturating_sub(value(&before)))
                    })
                    .collect(),
            },
            (Err(error), _) | (_, Err(error)) => EventsDelta::Unknown { reason: format!("{error:#}") },
        };
        let wall_seconds = closed_loop.wall_seconds;
        let rows_written = inserts.as_ref().ok().map(|(_, completed)| completed.saturating_mul(self.batch_rows));
        let (threads, parts) = match observed {
            Ok(observed) if in_cluster => (
                ThreadsSampled::Unknown { reason: window() },
                sampled(&observed.looks, observed.without_connection, in_process).1,
            ),
            Ok(observed) => sampled(&observed.looks, observed.without_connection, in_process),
            Err(error) => (
                ThreadsSampled::Unknown { reason: format!("{error:#}") },
                PartsSampled { unknown: Some(format!("{error:#}")), ..PartsSampled::empty() },
            ),
        };
        // A stopped level is not summarised: nothing more is asked of the engine for it.
        let stopped = || EventsDelta::Unknown { reason: "the level was stopped".to_string() };
        let inserts_own = match (&level_tag, &inserts) {
            (Some(_), _) if interrupted => stopped(),
            (Some(_), Err(why)) => EventsDelta::Unknown { reason: why.clone() },
            (Some(tag), Ok((sent, completed))) => server::inserts_own(run.target, tag, *completed, *sent),
            (None, _) if keeps_records => EventsDelta::Unknown {
                reason: "with --async-insert an INSERT's own record holds its wait for the queue, not the flush \
                         that writes its part"
                    .to_string(),
            },
            (None, _) => EventsDelta::Unknown {
                reason: "the target keeps no record of each statement while others run (the embedded engine has no \
                         query_log)"
                    .to_string(),
            },
        };
        let cores = if in_process {
            std::thread::available_parallelism()
                .map(|cores| cores.get() as f64)
                .map_err(|error| format!("this process's available parallelism is unknown: {error}"))
        } else if interrupted {
            Err("the level was stopped".to_string())
        } else {
            server::server_cores(run.target)
        };
        let cpu = cpu_use(&events, cores, wall_seconds);
        let round = WritesRound {
            variant: turn.variant.clone(),
            rows_per_second: rows_written
                .filter(|rows| *rows > 0)
                .zip(wall_seconds)
                .and_then(|(rows, wall)| ratio(rows as f64, wall)),
            rows_written,
            inserts_unknown: inserts.err(),
            errors_by_code,
            events,
            inserts_own,
            threads,
            cpu,
            parts,
            closed_loop,
        };
        Ok(MeasuredLevel { round, looped, pass })
    }

    /// Each completed statement a sample of its (statement, level) query runs, for the
    /// comparison of latency every kind has.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record_samples(
        &self,
        run: &mut WritesRun<'_>,
        run_id: &str,
        statements: &[(MixStatement, Statement)],
        (turn_index, turn): (usize, &Turn),
        clients: u32,
        level: &MeasuredLevel,
        runs_of: &mut BTreeMap<(usize, usize, u32), usize>,
    ) -> Result<()> {
        // A level run in the cluster keeps no statement of its own.
        let Some(looped) = &level.looped else { return Ok(()) };
        for statement in &looped.statements {
            let Ok(counters) = &statement.outcome else { continue };
            let Some(&kind) = level.pass.get(statement.query as usize) else { continue };
            let Some((kind_index, (_, sql))) =
                statements.iter().enumerate().find(|(_, (candidate, _))| *candidate == kind)
            else {
                continue;
            };
            let index = match runs_of.get(&(turn_index, kind_index, clients)) {
                Some(&index) => index,
                None => {
                    let index = run.writer.start_query(QueryRuns {
                        query: kind.name().to_string(),
                        variant: WritesVariant { clients },
                        ab_variant: turn.variant.clone(),
                        plan: None,
                        sql_file: kind.fixture().to_string(),
                        answer: String::new(),
                        samples: Vec::new(),
                    })?;
                    runs_of.insert((turn_index, kind_index, clients), index);
                    index
                }
            };
            let attempt = run.results().queries[index].samples.len() as u32 + 1;
            let variant = turn.variant.as_ref().map_or(String::new(), |name| format!(".{name}"));
            let name = format!("{}{variant}_c{clients}_{}", kind.name(), statement.client);
            let tag = StatementTag::new(run_id, "writes", &name, attempt);
            let stats = closed_loop_stats(tag.to_string(), counters, statement.latency, &sql.sql)?;
            // Into the bundle directly, as throughput's are: the level is saved whole.
            run.results().queries[index].samples.push(Sample {
                kind: SampleKind::Warm,
                attempt,
                settings: turn.settings.clone(),
                stats,
                breakdown: None,
                round_position: None,
                answer: None,
            });
        }
        Ok(())
    }
}

/// What a level's clients did, from this tool's loop or from the generator in the cluster:
/// its record as every closed loop's, the loop itself (here only), its INSERTs sent and
/// completed among its mix, its failures by error code, and whether a stop ended it.
struct LevelRan {
    closed_loop: LevelRound,
    looped: Option<ClosedLoop>,
    /// INSERTs sent and completed, or why they cannot be counted.
    inserts: Result<(u64, u64), String>,
    errors_by_code: Vec<CodeErrors>,
    interrupted: bool,
}

impl LevelRan {
    fn here(looped: ClosedLoop, pass: &[MixStatement], round: u32, clients: u32, names: &[String]) -> LevelRan {
        let inserts: Vec<_> = looped
            .statements
            .iter()
            .filter(|statement| pass.get(statement.query as usize) == Some(&MixStatement::Insert))
            .collect();
        LevelRan {
            closed_loop: level_round(round, clients, &looped, names),
            inserts: Ok((
                inserts.len() as u64,
                inserts.iter().filter(|statement| statement.outcome.is_ok()).count() as u64,
            )),
            errors_by_code: errors_by_code(&looped),
            interrupted: looped.interrupted,
            looped: Some(looped),
        }
    }

    /// From the generator's report and the server's log. A mix of INSERTs alone is the
    /// generator's counts. Another mix's INSERTs are the log's statements of the INSERT's
    /// text, when the log holds every statement the generator finished and failed; when it
    /// holds fewer (`log_queries` off, a sampled or thresholded log) or cannot be read,
    /// they are unknown with why, never a count of what the log happened to keep. The
    /// failures by error code are the log's, and those it does not hold the generator's.
    fn in_cluster(ran: InClusterLevel, pass: &[MixStatement], insert_sql: Option<&str>) -> Result<LevelRan> {
        let InClusterLevel { level, logged } = ran;
        let inserts_only = pass.iter().all(|&kind| kind == MixStatement::Insert);
        let load = level.load.as_ref().context("a level run in the cluster without its load")?;
        let generator_error = load.report.first_error.clone();
        let rows = logged.unwrap_or_default();
        let logged_failures: u64 = rows.iter().map(|row| row.failed).sum();
        let mut errors_by_code: Vec<CodeErrors> = Vec::new();
        for row in rows.iter().filter(|row| row.failed > 0) {
            let code = u32::try_from(row.code).ok().filter(|code| *code > 0);
            let name = error_code(&row.first_error).1;
            match errors_by_code.iter_mut().find(|errors| errors.code == code && errors.name == name) {
                Some(errors) => errors.count += row.failed,
                None => {
                    errors_by_code.push(CodeErrors { code, name, count: row.failed, first: row.first_error.clone() })
                }
            }
        }
        let unlogged = level.errors.saturating_sub(logged_failures);
        if unlogged > 0 {
            errors_by_code.push(unlogged_by_code(generator_error.as_deref(), unlogged));
        }
        let inserts = if inserts_only {
            Ok((level.completed + level.errors, level.completed))
        } else if let Some(unknown) = &load.server_unknown {
            Err(format!(
                "the server's query_log could not be read ({unknown}), and without it the mix's INSERTs cannot be told \
                 from its other statements"
            ))
        } else if load.server_finished != Some(level.completed) {
            Err(format!(
                "the server's query_log holds {} finished statements of the generator's {}: the mix's INSERTs cannot \
                 be counted from it",
                load.server_finished.unwrap_or_default(),
                level.completed
            ))
        } else {
            // Every finished statement is in the log, so its INSERTs' are exact. The failures
            // the log lacks (a refused connection) may have been INSERTs: counted as sent,
            // the most the level can have sent.
            let is_insert = |query: &str| insert_sql.is_some_and(|insert| insert.trim() == query.trim());
            let completed: u64 = rows.iter().filter(|row| is_insert(&row.query)).map(|row| row.finished).sum();
            let failed: u64 = rows.iter().filter(|row| is_insert(&row.query)).map(|row| row.failed).sum();
            if completed + failed == 0 && level.completed + logged_failures > 0 {
                Err(format!(
                    "none of the {} statements the server's query_log holds of the level is the INSERT as it was sent: \
                     the mix's INSERTs cannot be told apart",
                    level.completed + logged_failures
                ))
            } else {
                Ok((completed + failed + unlogged, completed))
            }
        };
        Ok(LevelRan { closed_loop: level, looped: None, inserts, errors_by_code, interrupted: false })
    }
}

/// Failures the server's log does not hold, under the generator's first message.
fn unlogged_by_code(first: Option<&str>, count: u64) -> CodeErrors {
    let first = first.unwrap_or("the generator said no message").to_string();
    let (code, name) = error_code(&first);
    CodeErrors { code, name, count, first }
}

/// How often the observer looks at the engine's threads.
const THREADS_EVERY: Duration = Duration::from_millis(20);
/// Every how many looks it also reads the table's parts and merges (a query on the
/// engine, so rarer: every 200 ms).
const PARTS_EVERY_LOOKS: u64 = 10;
/// A level as measured: its record, and the loop its samples come from with the list of
/// statements it ran.
pub(super) struct MeasuredLevel {
    pub(super) round: WritesRound,
    /// `None` for a level run in the cluster, which keeps no statement of its own.
    pub(super) looped: Option<ClosedLoop>,
    /// The statements of the loop's list, by index: one pass of the mix.
    pub(super) pass: Vec<MixStatement>,
}

/// One look of the observer: the engine's threads (when they are this process's), and
/// every [`PARTS_EVERY_LOOKS`] looks the table's active parts and running merges, and a
/// server's thread gauges (when its threads are not).
#[derive(Debug, Clone, Default)]
struct Look {
    threads: Option<TaskStates>,
    parts: Option<Result<(u64, u64), String>>,
    gauges: Option<Result<GaugeLook, String>>,
}

/// What the observer does at each look.
fn look(in_process: bool, table: String) -> impl FnMut(Option<&mut ObserverConnection>) -> Look + Send + 'static {
    let mut looks = 0u64;
    move |mut connection: Option<&mut ObserverConnection>| {
        let threads = in_process.then(own_task_states).and_then(Result::ok);
        let rarer = looks.is_multiple_of(PARTS_EVERY_LOOKS);
        let parts = rarer.then(|| connection.as_deref_mut().map(|connection| parts_and_merges(connection, &table)));
        let gauges = (rarer && !in_process).then(|| connection.map(server::look_at_gauges));
        looks += 1;
        Look { threads, parts: parts.flatten(), gauges: gauges.flatten() }
    }
}

/// The table's active parts and the merges running on it, in one query.
fn parts_and_merges(connection: &mut ObserverConnection, table: &str) -> Result<(u64, u64), String> {
    let table = sql_string(table);
    let sql = format!(
        "SELECT (SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = {table} AND active), \
         (SELECT count() FROM system.merges WHERE database = currentDatabase() AND table = {table})"
    );
    let text = connection.query_text(&sql).map_err(|error| format!("{error:#}"))?;
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(parts)), Some(Ok(merges))) => Ok((parts, merges)),
        _ => Err(format!("unexpected answer {text:?} to the parts and merges query")),
    }
}

/// The threads' and parts' figures of a level from its looks.
fn sampled(looks: &[Look], without_connection: Option<String>, in_process: bool) -> (ThreadsSampled, PartsSampled) {
    let states: Vec<TaskStates> = looks.iter().filter_map(|look| look.threads).collect();
    let gauges: Vec<GaugeLook> = looks.iter().filter_map(|look| look.gauges.clone()?.ok()).collect();
    let threads = if !in_process {
        match (gauges.is_empty(), &without_connection, looks.iter().find_map(|look| look.gauges.clone()?.err())) {
            (false, _, _) => ThreadsSampled::Gauges {
                every_ms: (THREADS_EVERY * PARTS_EVERY_LOOKS as u32).as_millis() as u64,
                means: GaugeMeans::of(&gauges),
            },
            (true, Some(why), _) => ThreadsSampled::Unknown {
                reason: format!(
                    "the engine's threads are not this process's, and the observer had no connection to the engine \
                     for its thread gauges ({why})"
                ),
            },
            (true, None, Some(error)) => {
                ThreadsSampled::Unknown { reason: format!("the engine's thread gauges could not be read: {error}") }
            }
            (true, None, None) => {
                ThreadsSampled::Unknown { reason: "the level ended before the first look at the gauges".to_string() }
            }
        }
    } else if states.is_empty() {
        ThreadsSampled::Unknown { reason: "no look at /proc/self/task succeeded".to_string() }
    } else {
        ThreadsSampled::Known { every_ms: THREADS_EVERY.as_millis() as u64, means: ThreadStateMeans::of(&states) }
    };
    let read: Vec<(u64, u64)> = looks.iter().filter_map(|look| look.parts.clone()?.ok()).collect();
    let first_error = looks.iter().find_map(|look| look.parts.clone()?.err());
    let unknown = match (read.is_empty(), without_connection, first_error) {
        (false, _, _) => None,
        (true, Some(why), _) => Some(format!("the observer had no connection to the engine ({why})")),
        (true, None, Some(error)) => Some(error),
        (true, None, None) => Some("the level ended before the first look at the parts".to_string()),
    };
    let parts = PartsSampled {
        looks: read.len() as u64,
        active_parts_first: read.first().map(|(parts, _)| *parts),
        active_parts_last: read.last().map(|(parts, _)| *parts),
        active_parts_max: read.iter().map(|(parts, _)| *parts).max(),
        merges_max: read.iter().map(|(_, merges)| *merges).max(),
        unknown,
    };
    (threads, parts)
}

impl PartsSampled {
    fn empty() -> PartsSampled {
        PartsSampled {
            looks: 0,
            active_parts_first: None,
            active_parts_last: None,
            active_parts_max: None,
            merges_max: None,
            unknown: None,
        }
    }
}

/// The CPU the engine's threads used over a level against what `cores` offered in it.
fn cpu_use(events: &EventsDelta, cores: Result<f64, String>, wall_seconds: Option<f64>) -> CpuUse {
    let used_seconds = match events {
        EventsDelta::Known { rises, .. } => {
            let us = rises.get(USER_TIME).zip(rises.get(SYSTEM_TIME)).map(|(user, system)| user + system);
            us.map(|us| us as f64 / 1e6)
        }
        EventsDelta::Unknown { .. } => None,
    };
    let offered_seconds = cores.as_ref().ok().zip(wall_seconds).map(|(cores, wall)| cores * wall);
    CpuUse {
        used_seconds,
        cores: cores.as_ref().ok().copied(),
        cores_unknown: cores.err(),
        offered_seconds,
        share: used_seconds.zip(offered_seconds).and_then(|(used, offered)| ratio(used, offered)),
    }
}

/// The failed statements of a loop by error code, in the order first seen.
fn errors_by_code(looped: &ClosedLoop) -> Vec<CodeErrors> {
    let mut by_code: Vec<CodeErrors> = Vec::new();
    for statement in &looped.statements {
        let Err(message) = &statement.outcome else { continue };
        let (code, name) = error_code(message);
        match by_code.iter_mut().find(|errors| errors.code == code && errors.name == name) {
            Some(errors) => errors.count += 1,
            None => by_code.push(CodeErrors { code, name, count: 1, first: message.clone() }),
        }
    }
    by_code
}

/// The engine's code and name of an error message: `Code: 252. DB::Exception: Too many
/// parts (300). (TOO_MANY_PARTS)` is 252 and `TOO_MANY_PARTS`.
fn error_code(message: &str) -> (Option<u32>, Option<String>) {
    let code = message.split("Code: ").nth(1).and_then(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    });
    let name = message.rmatch_indices('(').find_map(|(start, _)| {
        let inside = message[start + 1..].split(')').next()?;
        (inside.len() > 2 && inside.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()))
            .then(|| inside.to_string())
    });
    // A long message is shortened before its name at the end: the codes a write path meets
    // are named from the code.
    let name = name.or_else(|| {
        let code = code?;
        WRITE_PATH_CODES.iter().find(|(known, _)| *known == code).map(|(_, name)| name.to_string())
    });
    (code, name)
}

/// The engine's error codes an INSERT under load meets, by name (ClickHouse's
/// `src/Common/ErrorCodes.cpp`).
const WRITE_PATH_CODES: [(u32, &str); 6] = [
    (159, "TIMEOUT_EXCEEDED"),
    (202, "TOO_MANY_SIMULTANEOUS_QUERIES"),
    (241, "MEMORY_LIMIT_EXCEEDED"),
    (243, "NOT_ENOUGH_SPACE"),
    (252, "TOO_MANY_PARTS"),
    (394, "QUERY_WAS_CANCELLED"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_message_gives_its_code_and_name() {
        assert_eq!(
            error_code("Code: 252. DB::Exception: Too many parts (300). Merges are slower. (TOO_MANY_PARTS)"),
            (Some(252), Some("TOO_MANY_PARTS".to_string()))
        );
        assert_eq!(
            error_code(
                "Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE) (version 26.7)"
            ),
            (Some(243), Some("NOT_ENOUGH_SPACE".to_string()))
        );
        assert_eq!(error_code("connection reset"), (None, None));
        // Shortened before its name: named from the code.
        assert_eq!(
            error_code("Code: 252. DB::Exception: Too many parts (3 with average size of 12.17 KiB) in table ..."),
            (Some(252), Some("TOO_MANY_PARTS".to_string()))
        );
        assert_eq!(error_code("Code: x (ab)"), (None, None));
    }

    /// A level run in the cluster: a report of 10 completed and 3 failed statements.
    fn in_cluster(logged: Option<Vec<crate::closed_loop::LoggedQuery>>, mismatch: bool) -> InClusterLevel {
        let mut text =
            "Loaded 2 queries.\nCode: 210. DB::NetException: Connection refused\n\nQueries executed: 13.\n\n\
                        h:9000, queries: 10, errors: 3, QPS: 5.000, RPS: 50.000.\n\n"
                .to_string();
        for percent in crate::load_generator::PRINTED_PERCENTILES {
            text.push_str(&format!("{percent}%\t\t0.010 sec.\t\n"));
        }
        let load = crate::load_generator::InClusterLoad {
            generator: "clickhouse-benchmark".to_string(),
            pod: "chbench-load-x".to_string(),
            node: None,
            placement: crate::load_generator::ClientPlacement::BesideServer,
            query_id_prefix: "p".to_string(),
            report: crate::load_generator::LoadReport::parse(&text).unwrap(),
            server_finished: logged.as_ref().map(|rows| rows.iter().map(|row| row.finished).sum()),
            server_failed: None,
            server_unknown: logged.is_none().then(|| "cannot read system.query_log".to_string()),
            mismatch: mismatch.then(|| "clickhouse-benchmark counted 10 completed, the server 9".to_string()),
        };
        let level = LevelRound {
            round: 1,
            clients: 2,
            complete: true,
            wall_seconds: Some(2.0),
            completed: 10,
            errors: 3,
            qps: Some(5.0),
            rows_per_second: Some(50.0),
            latency: crate::levels::Latency::default(),
            unknown: None,
            runner_cpu_us_per_statement: None,
            errors_by_query: Vec::new(),
            schedule_lag: None,
            scheduled: None,
            statements: Vec::new(),
            load: Some(load),
        };
        InClusterLevel { level, logged }
    }

    fn row(query: &str, code: i32, finished: u64, failed: u64) -> crate::closed_loop::LoggedQuery {
        let first_error = match code {
            0 => String::new(),
            code => format!("Code: {code}. DB::Exception: Too many parts (300). (TOO_MANY_PARTS)"),
        };
        crate::closed_loop::LoggedQuery { query: query.to_string(), code, finished, failed, first_error }
    }

    #[test]
    fn a_level_in_the_cluster_counts_its_inserts_and_failures_from_the_servers_log() {
        let inserts = [MixStatement::Insert];
        let logged = vec![row("INSERT 1", 0, 10, 0), row("INSERT 1", 252, 0, 2)];
        let ran = LevelRan::in_cluster(in_cluster(Some(logged), false), &inserts, Some("INSERT 1")).unwrap();
        // INSERTs alone: the generator's 10 completed and 3 failed, 2 of them logged with
        // their code, 1 the server never saw (a refused connection).
        assert_eq!((ran.inserts, ran.interrupted), (Ok((13, 10)), false));
        assert!(ran.looped.is_none());
        let codes: Vec<(Option<u32>, u64)> =
            ran.errors_by_code.iter().map(|errors| (errors.code, errors.count)).collect();
        assert_eq!(codes, [(Some(252), 2), (Some(210), 1)]);
        assert_eq!(ran.errors_by_code[0].name.as_deref(), Some("TOO_MANY_PARTS"));
        assert_eq!(ran.errors_by_code[1].first, "Code: 210. DB::NetException: Connection refused");

        // A mix whose every finished statement the log holds: the INSERT's rows are its
        // INSERTs, and the failure the log lacks may have been one (counted as sent).
        let mix = [MixStatement::Insert, MixStatement::Read];
        let logged = vec![row("INSERT 1", 0, 6, 0), row("SELECT 1", 0, 4, 0), row("INSERT 1", 252, 0, 2)];
        let ran = LevelRan::in_cluster(in_cluster(Some(logged), true), &mix, Some("INSERT 1")).unwrap();
        assert_eq!(ran.inserts, Ok((9, 6)));
        // A log that holds fewer finished, or none: unknown with why, never its partial count.
        let logged = vec![row("INSERT 1", 0, 5, 0), row("SELECT 1", 0, 4, 0), row("INSERT 1", 252, 0, 3)];
        let ran = LevelRan::in_cluster(in_cluster(Some(logged), true), &mix, Some("INSERT 1")).unwrap();
        assert!(ran.inserts.unwrap_err().contains("holds 9 finished statements of the generator's 10"));
        // A log whose statements are none of them the INSERT as sent: unknown, never 0.
        let logged = vec![row("INSERT 2", 0, 6, 0), row("SELECT 1", 0, 4, 0)];
        let ran = LevelRan::in_cluster(in_cluster(Some(logged), true), &mix, Some("INSERT 1")).unwrap();
        assert!(ran.inserts.unwrap_err().contains("is the INSERT as it was sent"));
        let ran = LevelRan::in_cluster(in_cluster(None, false), &mix, Some("INSERT 1")).unwrap();
        assert!(ran.inserts.unwrap_err().starts_with("the server's query_log could not be read (cannot read"));
        // Without the log, INSERTs alone are still the generator's counts.
        let ran = LevelRan::in_cluster(in_cluster(None, false), &inserts, Some("INSERT 1")).unwrap();
        assert_eq!(ran.inserts, Ok((13, 10)));
        assert_eq!(ran.errors_by_code.len(), 1);
        assert_eq!((ran.errors_by_code[0].code, ran.errors_by_code[0].count), (Some(210), 3));
    }
}

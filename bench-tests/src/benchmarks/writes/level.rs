//! One level of one round as measured: the clients' loop (closed, or open at `--rate`) with
//! an observer beside it (the engine's threads every 20 ms when they are this process's;
//! the table's parts and merges, and a server's thread gauges, every 200 ms) and the
//! engine's counters read before and after, and on a server the INSERTs' own records
//! after; its record ([`WritesRound`]), failures by the engine's error code, and each
//! completed statement a sample of its query runs.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;

use super::decomposition::{EVENTS, SYSTEM_TIME, USER_TIME};
use super::server::{self, GaugeLook, GaugeMeans};
use super::variants::Turn;
use super::{
    CodeErrors, CpuUse, EventsDelta, FORMAT, MIX_SEED, MixStatement, PartsSampled, ThreadsSampled, WritesBenchmark,
    WritesRound, WritesRun, WritesVariant,
};
use crate::closed_loop::{client_orders, level_round};
use crate::engine_threads::{TaskStates, ThreadStateMeans, own_task_states};
use crate::fixtures::Statement;
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
        let orders = client_orders(MIX_SEED, clients, pass.len());
        let looped = match self.rate {
            Some(rate) => {
                run.target.run_open_loop(clients as usize, &pass_sql, &orders, self.bound(), rate, &settings, FORMAT)
            }
            None => run.target.run_closed_loop(clients as usize, &pass_sql, &orders, self.bound(), &settings, FORMAT),
        };
        // The observer stops whatever the loop did.
        let observed = observer.finish();
        let looped = looped?;
        let after = run.target.read_events();
        let events = match (before, after) {
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
        let wall_seconds = looped.wall.as_secs_f64();
        let closed_loop = level_round(round, clients, &looped, &names);
        let inserts: Vec<_> = looped
            .statements
            .iter()
            .filter(|statement| pass.get(statement.query as usize) == Some(&MixStatement::Insert))
            .collect();
        let inserts_sent = inserts.len() as u64;
        let inserts_completed = inserts.iter().filter(|statement| statement.outcome.is_ok()).count() as u64;
        let rows_written = inserts_completed.saturating_mul(self.batch_rows);
        let (threads, parts) = match observed {
            Ok(observed) => sampled(&observed.looks, observed.without_connection, in_process),
            Err(error) => (
                ThreadsSampled::Unknown { reason: format!("{error:#}") },
                PartsSampled { unknown: Some(format!("{error:#}")), ..PartsSampled::empty() },
            ),
        };
        // A stopped level is not summarised: nothing more is asked of the engine for it.
        let stopped = || EventsDelta::Unknown { reason: "the level was stopped".to_string() };
        let inserts_own = match &level_tag {
            Some(_) if looped.interrupted => stopped(),
            Some(tag) => server::inserts_own(run.target, tag, inserts_completed, inserts_sent),
            None if keeps_records => EventsDelta::Unknown {
                reason: "with --async-insert an INSERT's own record holds its wait for the queue, not the flush \
                         that writes its part"
                    .to_string(),
            },
            None => EventsDelta::Unknown {
                reason: "the target keeps no record of each statement while others run (the embedded engine has no \
                         query_log)"
                    .to_string(),
            },
        };
        let cores = if in_process {
            std::thread::available_parallelism()
                .map(|cores| cores.get() as f64)
                .map_err(|error| format!("this process's available parallelism is unknown: {error}"))
        } else if looped.interrupted {
            Err("the level was stopped".to_string())
        } else {
            server::server_cores(run.target)
        };
        let cpu = cpu_use(&events, cores, wall_seconds);
        let round = WritesRound {
            variant: turn.variant.clone(),
            rows_per_second: (inserts_completed > 0).then(|| ratio(rows_written as f64, wall_seconds)).flatten(),
            rows_written,
            errors_by_code: errors_by_code(&looped),
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
        for statement in &level.looped.statements {
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

/// How often the observer looks at the engine's threads.
const THREADS_EVERY: Duration = Duration::from_millis(20);
/// Every how many looks it also reads the table's parts and merges (a query on the
/// engine, so rarer: every 200 ms).
const PARTS_EVERY_LOOKS: u64 = 10;
/// A level as measured: its record, and the loop its samples come from with the list of
/// statements it ran.
pub(super) struct MeasuredLevel {
    pub(super) round: WritesRound,
    pub(super) looped: ClosedLoop,
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
fn cpu_use(events: &EventsDelta, cores: Result<f64, String>, wall_seconds: f64) -> CpuUse {
    let used_seconds = match events {
        EventsDelta::Known { rises, .. } => {
            let us = rises.get(USER_TIME).zip(rises.get(SYSTEM_TIME)).map(|(user, system)| user + system);
            us.map(|us| us as f64 / 1e6)
        }
        EventsDelta::Unknown { .. } => None,
    };
    let offered_seconds = cores.as_ref().ok().map(|cores| cores * wall_seconds);
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
}

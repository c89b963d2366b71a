//! The measurement core: one function runs a measured statement ([`measure`]) and
//! yields one [`QueryStats`] record, the same type on every target; plus cache control.
//!
//! Protocol (docs/targets.md, "What a measurement is"; docs/embedded-engine.md): every measured
//! statement carries a
//! `log_comment` ([`StatementTag`]) and is timed on the client as well. On servers the
//! record comes from the statement's `system.query_log` row; on the embedded engine,
//! which has no query_log, from the result's storage counters and the `system.events`
//! delta around the statement, less the cost of reading `system.events` itself. Which
//! one is the target's declared [`StatsSource`], never its name.
//!
//! [`measure_concurrently`] runs one statement from several clients at once: on servers
//! each statement still has its own query_log row (found by its own query id, with one
//! flush and one lookup after all clients end); on the embedded engine, whose
//! `system.events` is process-wide, each record holds the result's counters alone
//! ([`StatsSource::ResultCounters`]), as [`Capabilities::concurrent_stats_source`] says.
//!
//! [`Capabilities::concurrent_stats_source`]: crate::targets::Capabilities::concurrent_stats_source

use std::collections::{BTreeMap, HashMap};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::settings::Settings;
use crate::sql::{Sql, one_line, sql_string};
use crate::stats::{EngineEvents, QueryStats, StatementTag, StatsSource};
use crate::targets::{ClickHouseVersion, ClientOutput, Output, Target};

/// A measured statement's result and its statistics.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The result as tab-separated text (check the answer before trusting the numbers).
    pub body: String,
    pub stats: QueryStats,
}

/// Runs `statement` once as a measured statement with statement-level `settings`. An
/// error names the statement's file and line when it came from a fixture.
pub fn measure<S: Sql + ?Sized>(
    target: &mut Target,
    statement: &S,
    tag: &StatementTag,
    settings: &Settings,
) -> Result<Measured> {
    // Ctrl-C stops before a measurement, never inside one: the reads that complete it
    // (events, query_log) run after the statement whatever happens.
    crate::interrupt::check()?;
    let sql = statement.sql();
    let log_comment = tag.to_string();
    let settings = settings.merged(&Settings::new().with("log_comment", &log_comment));
    let measured = match target.stats_source() {
        StatsSource::ResultAndEventsDelta => measure_with_events_delta(target, sql, log_comment, &settings),
        StatsSource::QueryLog => measure_with_query_log(target, sql, log_comment, &settings),
        StatsSource::ResultCounters => {
            let output = target.run(sql, &settings, "TabSeparated")?;
            stats_from_result_counters(log_comment, &output, sql).map(|stats| Measured { body: output.body, stats })
        }
    };
    let measured = match statement.location() {
        Some(location) => measured.context(location)?,
        None => measured?,
    };
    // A stop that came while the statement ran: its answer is not used, as a cancelled
    // statement's is not (the caller would go on to digest or print it, for as long as
    // its size takes: half a minute for 20 million rows).
    crate::interrupt::check()?;
    Ok(measured)
}

fn measure_with_events_delta(
    target: &mut Target,
    sql: &str,
    log_comment: String,
    settings: &Settings,
) -> Result<Measured> {
    // The settings go in (SET) before the window and come out after it, so the window
    // holds the statement and the reads of system.events only.
    let (before, output, after, mut overhead) = target.with_session_settings(settings, |target| {
        let calibration = events_read_overhead(target)?;
        let before = target.read_events()?;
        let output = target.run(sql, &Settings::new(), "TabSeparated")?;
        let after = target.read_events()?;
        Ok((before, output, after, calibration))
    })?;
    // The snapshot `before` shows does not include its own read, which lands in the
    // window; its rows and bytes are known exactly, the rest is the calibration's.
    overhead.insert("SelectedRows".to_string(), before.read_counters.read_rows.unwrap_or(0));
    overhead.insert("SelectedBytes".to_string(), before.read_counters.read_bytes.unwrap_or(0));
    let profile_events = events_delta(&before.values, &after.values, &overhead);
    let counters = output.counters;
    let stats = QueryStats {
        log_comment,
        source: StatsSource::ResultAndEventsDelta,
        read_rows: counters.read_rows.unwrap_or(0),
        read_bytes: counters.read_bytes.unwrap_or(0),
        result_rows: counters.result_rows.unwrap_or(0),
        server_duration_us: counters
            .elapsed_us
            .with_context(|| format!("the engine reported no duration for: {}", one_line(sql)))?,
        client_duration_us: micros(output.client_elapsed),
        memory_usage: counters.memory_usage,
        raw: serde_json::json!({
            "result_counters": counters,
            "events_before": before,
            "events_after": after,
            "events_read_overhead": overhead,
        }),
        profile_events,
    };
    Ok(Measured { body: output.body, stats })
}

/// What one read of `system.events` adds to the counters, from two reads back to back.
/// Measured each time (cheap) because the number of non-zero events grows as a
/// process runs, and with it the rows the read selects. Counts come out exact; duration
/// counters (`...Microseconds`) keep the noise of one such read (about a millisecond of
/// thread time), so they mean little for statements much shorter than that.
fn events_read_overhead(target: &mut Target) -> Result<BTreeMap<String, u64>> {
    let first = target.read_events()?;
    let second = target.read_events()?;
    Ok(events_delta(&first.values, &second.values, &BTreeMap::new()))
}

/// `after - before - overhead` per counter, saturating at zero; zeros are dropped.
pub fn events_delta(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    overhead: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(name, value)| {
            let delta = value
                .saturating_sub(before.get(name).copied().unwrap_or(0))
                .saturating_sub(overhead.get(name).copied().unwrap_or(0));
            (delta > 0).then(|| (name.clone(), delta))
        })
        .collect()
}

/// A `system.query_log` row, as much of it as the record needs.
#[derive(Debug, Deserialize)]
struct QueryLogRow {
    read_rows: u64,
    read_bytes: u64,
    result_rows: u64,
    query_duration_ms: u64,
    memory_usage: u64,
    #[serde(rename = "ProfileEvents")]
    profile_events: BTreeMap<String, u64>,
}

fn measure_with_query_log(
    target: &mut Target,
    sql: &str,
    log_comment: String,
    settings: &Settings,
) -> Result<Measured> {
    // The tag names the statement for people; the query id finds its row, which another
    // process on the same server running the same tag (a test, say) cannot share.
    let query_id = uuid::Uuid::new_v4().to_string();
    let settings = settings.merged(&Settings::new().with("query_id", &query_id));
    let output = target.run(sql, &settings, "TabSeparated")?;
    target.execute("SYSTEM FLUSH LOGS").context("cannot flush the query log")?;
    let lookup = format!(
        "SELECT * FROM system.query_log WHERE type = 'QueryFinish' AND query_id = {} AND log_comment = {} \
         ORDER BY event_time_microseconds DESC LIMIT 1",
        sql_string(&query_id),
        sql_string(&log_comment)
    );
    let mut rows: Vec<serde_json::Value> = target.query_rows(&lookup)?;
    let Some(raw) = rows.pop() else {
        bail!("no system.query_log row with log_comment {log_comment:?} for: {}", one_line(sql));
    };
    let stats = stats_from_query_log_row(raw, log_comment, &output)?;
    Ok(Measured { body: output.body, stats })
}

/// The record of a statement from its query_log row `raw` and its `output`.
fn stats_from_query_log_row(raw: serde_json::Value, log_comment: String, output: &Output) -> Result<QueryStats> {
    let row: QueryLogRow = serde_json::from_value(raw.clone())
        .with_context(|| format!("unexpected system.query_log row for {log_comment:?}"))?;
    let counters = &output.counters;
    Ok(QueryStats {
        log_comment,
        source: StatsSource::QueryLog,
        read_rows: row.read_rows,
        read_bytes: row.read_bytes,
        result_rows: row.result_rows,
        // query_log has milliseconds; the response summary has the same figure finer.
        server_duration_us: counters.elapsed_us.unwrap_or(row.query_duration_ms * 1000),
        client_duration_us: micros(output.client_elapsed),
        memory_usage: Some(row.memory_usage),
        profile_events: row.profile_events.into_iter().filter(|(_, value)| *value > 0).collect(),
        raw,
    })
}

/// The record of a statement from its result's counters alone
/// ([`StatsSource::ResultCounters`]): no ProfileEvents, which are then unknown.
fn stats_from_result_counters(log_comment: String, output: &Output, sql: &str) -> Result<QueryStats> {
    let counters = &output.counters;
    let known = |value: Option<u64>, what: &str| {
        value.with_context(|| format!("the engine reported no {what} for: {}", one_line(sql)))
    };
    Ok(QueryStats {
        log_comment,
        source: StatsSource::ResultCounters,
        read_rows: known(counters.read_rows, "rows read")?,
        read_bytes: known(counters.read_bytes, "bytes read")?,
        result_rows: known(counters.result_rows, "result rows")?,
        server_duration_us: known(counters.elapsed_us, "duration")?,
        client_duration_us: micros(output.client_elapsed),
        memory_usage: counters.memory_usage,
        profile_events: BTreeMap::new(),
        raw: serde_json::json!({ "result_counters": counters }),
    })
}

/// The record of one completed statement of a closed loop
/// ([`Target::run_closed_loop`](crate::targets::Target::run_closed_loop)): its result's
/// counters and the wall time around it, with no ProfileEvents
/// ([`StatsSource::ResultCounters`]) on every target: a throughput run's statements carry
/// no tag or query id (that would add a `SET` per statement on the embedded engine, and a
/// query_log lookup per statement on a server), so `log_comment` is the statement's name
/// in the bundle, not sent to the engine. A counter the engine did not give is an error.
pub fn closed_loop_stats(
    log_comment: String,
    counters: &crate::targets::ResultCounters,
    latency: std::time::Duration,
    sql: &str,
) -> Result<QueryStats> {
    let output = Output { body: String::new(), client_elapsed: latency, counters: counters.clone() };
    stats_from_result_counters(log_comment, &output, sql)
}

/// One measured statement of [`measure_concurrently`]: the client that ran it, its place
/// in that client's series, and the measurement.
#[derive(Debug, Clone)]
pub struct ClientMeasured {
    /// The client, from 0.
    pub client: usize,
    /// The client's run, from 0.
    pub run: u32,
    pub measured: Measured,
}

/// Runs `statement` from `clients` clients at once, each `runs_per_client` times in a row
/// ([`Target::run_concurrently`]), as measured statements tagged `tag_of(client, run)` with
/// statement-level `settings`; one record per statement, ordered by client, then run. The
/// records' source is [`Capabilities::concurrent_stats_source`]: each statement's own
/// query_log row on servers, the result's counters alone on the embedded engine (no
/// ProfileEvents). One client is [`measure`], run after run. A target that runs one
/// statement at a time refuses more than one client; a stop requested during the run
/// returns [`crate::interrupt::Interrupted`].
///
/// [`Capabilities::concurrent_stats_source`]: crate::targets::Capabilities::concurrent_stats_source
pub fn measure_concurrently<S: Sql + ?Sized>(
    target: &mut Target,
    statement: &S,
    tag_of: impl Fn(usize, u32) -> StatementTag + Sync,
    settings: &Settings,
    clients: usize,
    runs_per_client: u32,
) -> Result<Vec<ClientMeasured>> {
    crate::interrupt::check()?;
    target.capabilities().concurrent_queries.check_clients(target.info().kind, clients, runs_per_client)?;
    if clients == 1 {
        return (0..runs_per_client)
            .map(|run| {
                let measured = measure(target, statement, &tag_of(0, run), settings)?;
                Ok(ClientMeasured { client: 0, run, measured })
            })
            .collect();
    }
    let sql = statement.sql();
    // Every statement's tag, and on servers its own query id, decided before the start.
    let statements: Vec<Vec<(String, String)>> = (0..clients)
        .map(|client| {
            (0..runs_per_client)
                .map(|run| (tag_of(client, run).to_string(), uuid::Uuid::new_v4().to_string()))
                .collect()
        })
        .collect();
    let tagged = |client: usize, run: u32| &statements[client][run as usize];
    let measured = match target.capabilities().concurrent_stats_source() {
        StatsSource::QueryLog => {
            let outputs = target.run_concurrently(
                clients,
                runs_per_client,
                sql,
                |client, run| {
                    let (log_comment, query_id) = tagged(client, run);
                    settings.merged(&Settings::new().with("log_comment", log_comment).with("query_id", query_id))
                },
                "TabSeparated",
            )?;
            measured_from_query_log(target, outputs, &tagged, sql)
        }
        StatsSource::ResultCounters => {
            let outputs = target.run_concurrently(
                clients,
                runs_per_client,
                sql,
                |client, run| settings.merged(&Settings::new().with("log_comment", &tagged(client, run).0)),
                "TabSeparated",
            )?;
            outputs
                .into_iter()
                .map(|ClientOutput { client, run, output }| {
                    let stats = stats_from_result_counters(tagged(client, run).0.clone(), &output, sql)?;
                    Ok(ClientMeasured { client, run, measured: Measured { body: output.body, stats } })
                })
                .collect()
        }
        StatsSource::ResultAndEventsDelta => bail!(
            "target {} declares that each statement's events are its own while others run, but measures them as a \
             process-wide events delta, which holds every statement's: declare events_per_statement false",
            target.info().kind
        ),
    };
    match statement.location() {
        Some(location) => measured.context(location),
        None => measured,
    }
}

/// The records of a concurrent run's statements from their query_log rows: one flush and
/// one lookup by the list of their query ids, after every client ended.
fn measured_from_query_log<'a>(
    target: &mut Target,
    outputs: Vec<ClientOutput>,
    tagged: &impl Fn(usize, u32) -> &'a (String, String),
    sql: &str,
) -> Result<Vec<ClientMeasured>> {
    target.execute("SYSTEM FLUSH LOGS").context("cannot flush the query log")?;
    let query_ids: Vec<&str> = outputs.iter().map(|output| tagged(output.client, output.run).1.as_str()).collect();
    let rows: Vec<serde_json::Value> = target.query_rows(&query_log_lookup(&query_ids))?;
    let mut by_query_id: HashMap<String, serde_json::Value> =
        rows.into_iter().filter_map(|row| Some((row.get("query_id")?.as_str()?.to_string(), row))).collect();
    outputs
        .into_iter()
        .map(|ClientOutput { client, run, output }| {
            let (log_comment, query_id) = tagged(client, run);
            let raw = by_query_id
                .remove(query_id)
                .filter(|row| row.get("log_comment").and_then(serde_json::Value::as_str) == Some(log_comment.as_str()));
            let Some(raw) = raw else {
                bail!(
                    "no system.query_log row with query id {query_id} and log_comment {log_comment:?} (client \
                     {client}, run {run}) for: {}",
                    one_line(sql)
                );
            };
            let stats = stats_from_query_log_row(raw, log_comment.clone(), &output)?;
            Ok(ClientMeasured { client, run, measured: Measured { body: output.body, stats } })
        })
        .collect()
}

/// The lookup of the finished statements `query_ids` in `system.query_log`, one row each.
fn query_log_lookup(query_ids: &[&str]) -> String {
    let ids: Vec<String> = query_ids.iter().map(|id| sql_string(id)).collect();
    format!("SELECT * FROM system.query_log WHERE type = 'QueryFinish' AND query_id IN ({})", ids.join(", "))
}

fn micros(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// Caches a cold run must not find warm, each with the release (year, month) that brought
/// it: a server older than that has no such cache, so there is nothing to drop (the
/// statement would be a syntax error there). Releases from `system.settings_changes` of
/// the cache's setting: the page cache 24.3, the query condition cache 25.3. The page
/// cache of the OS is not among them: a cold run bypasses it with [`Settings::direct_io`].
pub const CACHE_DROPS: [(&str, (u32, u32)); 6] = [
    ("SYSTEM DROP MARK CACHE", (0, 0)),
    ("SYSTEM DROP UNCOMPRESSED CACHE", (0, 0)),
    ("SYSTEM DROP QUERY CACHE", (23, 5)),
    ("SYSTEM DROP QUERY CONDITION CACHE", (25, 3)),
    ("SYSTEM DROP PAGE CACHE", (24, 3)),
    ("SYSTEM DROP FILESYSTEM CACHE", (0, 0)),
];

/// The statements of [`CACHE_DROPS`] for the caches a server of `version` has.
fn cache_drops_on(version: &ClickHouseVersion) -> Vec<&'static str> {
    CACHE_DROPS.iter().filter(|(_, since)| version.is_at_least(*since)).map(|(statement, _)| *statement).collect()
}

/// Drops the engine's caches before a cold run; a target that cannot
/// ([`Capabilities::caches_droppable`](crate::targets::Capabilities::caches_droppable))
/// is refused rather than measured warm.
pub fn drop_caches(target: &mut Target) -> Result<()> {
    if !target.capabilities().caches_droppable {
        bail!("target {} cannot drop its caches, so it cannot run a cold (direct-I/O) run", target.info().kind);
    }
    let version = ClickHouseVersion::parse(&target.info().engine_version)
        .with_context(|| format!("cannot tell the engine's release from {:?}", target.info().engine_version))?;
    for statement in cache_drops_on(&version) {
        target.execute(statement).with_context(|| format!("cannot drop caches before a cold run ({statement})"))?;
    }
    Ok(())
}

/// Which of the counters `names` the engine has, from `system.events` with zero values
/// shown (a counter at zero is listed, one the engine lacks is not); unknown, with why,
/// when that cannot be read.
pub fn engine_events<'a>(target: &mut Target, names: impl IntoIterator<Item = &'a str>) -> EngineEvents {
    let names: Vec<String> = names.into_iter().map(sql_string).collect();
    let sql = format!(
        "SELECT name FROM system.events WHERE name IN ({}) SETTINGS system_events_show_zero_values = 1",
        names.join(", ")
    );
    match target.query_text(&sql) {
        Ok(text) => EngineEvents::Known { names: text.lines().map(str::to_string).collect() },
        Err(error) => EngineEvents::Unknown { reason: format!("{error:#}") },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(name, value)| (name.to_string(), *value)).collect()
    }

    #[test]
    fn a_server_without_a_cache_is_not_asked_to_drop_it() {
        let drops = |version: &str| cache_drops_on(&ClickHouseVersion::parse(version).unwrap());
        assert_eq!(drops("26.7.2.1").len(), CACHE_DROPS.len());
        let on_24_8 = drops("24.8.14.10459.altinitystable");
        assert!(!on_24_8.contains(&"SYSTEM DROP QUERY CONDITION CACHE"), "{on_24_8:?}");
        assert!(on_24_8.contains(&"SYSTEM DROP PAGE CACHE"), "{on_24_8:?}");
        assert_eq!(drops("25.3.1.1").len(), CACHE_DROPS.len());
    }

    #[test]
    fn a_concurrent_runs_query_log_rows_are_found_by_their_query_ids_in_one_lookup() {
        assert_eq!(
            query_log_lookup(&["0b7c-1", "it's"]),
            "SELECT * FROM system.query_log WHERE type = 'QueryFinish' AND query_id IN ('0b7c-1', 'it\\'s')"
        );
    }

    #[test]
    fn a_record_from_the_result_counters_alone_has_no_profile_events() {
        let counters = crate::targets::ResultCounters {
            read_rows: Some(8192),
            read_bytes: Some(65536),
            result_rows: Some(1),
            elapsed_us: Some(1500),
            memory_usage: None,
        };
        let output = Output {
            body: "1\n".to_string(),
            client_elapsed: std::time::Duration::from_micros(1700),
            counters: counters.clone(),
        };
        let stats = stats_from_result_counters("r/s/q/0".to_string(), &output, "SELECT 1").unwrap();
        assert_eq!(stats.source, StatsSource::ResultCounters);
        assert_eq!((stats.read_rows, stats.read_bytes, stats.result_rows), (8192, 65536, 1));
        assert_eq!((stats.server_duration_us, stats.client_duration_us), (1500, 1700));
        assert!(stats.profile_events.is_empty());
        assert_eq!(stats.raw, serde_json::json!({ "result_counters": counters }));
        // A counter the engine did not give is an error, never a 0.
        let output = Output { counters: crate::targets::ResultCounters { elapsed_us: None, ..counters }, ..output };
        let error = stats_from_result_counters("r/s/q/0".to_string(), &output, "SELECT 1").unwrap_err();
        assert_eq!(error.to_string(), "the engine reported no duration for: SELECT 1");
    }

    #[test]
    fn events_delta_subtracts_the_read_overhead_and_drops_zeros() {
        let before = events(&[("Query", 10), ("SelectedRows", 1000)]);
        let after = events(&[("Query", 12), ("SelectedRows", 9292), ("SelectedMarks", 1)]);
        let overhead = events(&[("Query", 1), ("SelectedRows", 100)]);
        assert_eq!(
            events_delta(&before, &after, &overhead),
            events(&[("Query", 1), ("SelectedMarks", 1), ("SelectedRows", 8192)])
        );
    }
}

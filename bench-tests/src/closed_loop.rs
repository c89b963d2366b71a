//! K clients at once in a closed loop, as a kind measures load levels with it (the
//! throughput and writes benchmarks): the concurrency list, a level's duration and
//! statement count read and checked, each client's seeded order of the statements, a
//! level's figures from its loop (`Target::run_closed_loop`) into the records of `levels`
//! (QPS over the loop's wall time, never over its latencies, failures apart), a level run
//! beside the engine instead ([`in_cluster_level`]: clickhouse-benchmark in the cluster,
//! its report held against the server's `query_log`), and the check that the runner is
//! not the bottleneck.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::interrupt::Interrupted;
use crate::levels::{CheckBlock, CheckPath, Latency, LevelRound, QueryErrors, RunnerCheck, StatementRecord};
use crate::load_generator::{
    ClientPlacement, InClusterLoad, LoadBound, LoadFlags, LoadFrom, LoadLevel, LoadReport, OLDEST_WITH_QUERY_ID_PREFIX,
    log_tail,
};
use crate::numbers::ratio;
use crate::settings::Settings;
use crate::sql::sql_string;
use crate::targets::{ClosedLoop, LoopBound, Target};

/// The most clients a level starts (a thread and a connection each).
pub const MAX_CLIENTS: u32 = 256;

/// Passes of the queries in each client's order before it repeats: each pass a shuffle.
const ORDER_PASSES: usize = 16;

/// The runner check's order of blocks: each pair's first and second swap in the second
/// half, so that whatever favours a place in the order falls on both (as the logs ingest's
/// calibration orders its runs).
const CHECK_ORDER: [CheckPath; 8] = {
    use CheckPath::{Direct as D, Runner as R};
    [D, R, R, D, R, D, D, R]
};
/// Times the check runs [`CHECK_ORDER`]: short blocks, many of them, so that a burst of
/// another process's work falls on both sides rather than on one block.
const CHECK_PASSES: usize = 4;
/// Blocks the runner check runs, for a progress bar.
pub const CHECK_BLOCKS: u64 = (CHECK_ORDER.len() * CHECK_PASSES) as u64;

/// The concurrency list as given, read when checked (so that a bad list is the
/// benchmark's one line, not the flag parser's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Levels {
    text: String,
}

impl Levels {
    pub fn parse(text: &str) -> Levels {
        Levels { text: text.to_string() }
    }

    /// The client counts, or one line saying what is wrong with them.
    pub fn list(&self) -> Result<Vec<u32>> {
        let items: Vec<&str> = self.text.split(',').map(str::trim).filter(|item| !item.is_empty()).collect();
        if items.is_empty() {
            bail!("--concurrency lists no level: give client counts, e.g. --concurrency 1,2,4");
        }
        let mut levels = Vec::new();
        for item in items {
            let Ok(clients) = item.parse::<u64>() else {
                bail!("--concurrency {item} is not a number of clients: give client counts, e.g. --concurrency 1,2,4");
            };
            if clients == 0 {
                bail!("--concurrency 0: a level needs at least one client");
            }
            if clients > u64::from(MAX_CLIENTS) {
                bail!(
                    "--concurrency {clients} is more clients than this runner starts ({MAX_CLIENTS}, a thread and a \
                     connection each): ask for at most {MAX_CLIENTS}"
                );
            }
            let clients = clients as u32;
            if levels.contains(&clients) {
                bail!("--concurrency lists {clients} twice: give each level once");
            }
            levels.push(clients);
        }
        Ok(levels)
    }
}

/// Each client's order of the `queries` query indexes: [`ORDER_PASSES`] passes, each a
/// shuffle from the seed's ChaCha8 stream of the client, so that a seed gives every client
/// the same order in every run and two clients different ones (as ClickBench's concurrent
/// runs derive a connection's order from a seed).
pub fn client_orders(seed: u64, clients: u32, queries: usize) -> Vec<Vec<usize>> {
    (0..clients)
        .map(|client| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(u64::from(client));
            let mut order = Vec::with_capacity(queries * ORDER_PASSES);
            for _ in 0..ORDER_PASSES {
                let mut pass: Vec<usize> = (0..queries).collect();
                pass.shuffle(&mut rng);
                order.extend(pass);
            }
            order
        })
        .collect()
}

/// One level of one round from its closed loop: every statement (named by
/// `query_names`), and its figures. QPS is the completed statements over the loop's wall
/// time (start line to the last client's end), never over the sum of their latencies;
/// a failed statement is counted apart and adds to neither QPS nor the percentiles; with
/// none completed, QPS and latency are unknown, with why.
pub fn level_round(round: u32, clients: u32, looped: &ClosedLoop, query_names: &[String]) -> LevelRound {
    let wall_seconds = looped.wall.as_secs_f64();
    let mut records = Vec::with_capacity(looped.statements.len());
    let mut errors_by_query: Vec<QueryErrors> = Vec::new();
    let (mut completed, mut errors, mut rows_read) = (0u64, 0u64, 0u64);
    let mut latencies = Vec::with_capacity(looped.statements.len());
    for statement in &looped.statements {
        let query =
            query_names.get(statement.query as usize).cloned().unwrap_or_else(|| format!("#{}", statement.query));
        let latency_us = u64::try_from(statement.latency.as_micros()).unwrap_or(u64::MAX);
        let (read_rows, error) = match &statement.outcome {
            Ok(counters) => {
                completed += 1;
                rows_read += counters.read_rows.unwrap_or(0);
                latencies.push(latency_us as f64 / 1e3);
                (counters.read_rows, None)
            }
            Err(error) => {
                errors += 1;
                match errors_by_query.iter_mut().find(|errors| errors.query == query) {
                    Some(errors) => errors.count += 1,
                    None => errors_by_query.push(QueryErrors { query: query.clone(), count: 1, first: error.clone() }),
                }
                (None, Some(error.clone()))
            }
        };
        records.push(StatementRecord {
            client: statement.client,
            query,
            start_offset_us: u64::try_from(statement.start_offset.as_micros()).unwrap_or(u64::MAX),
            latency_us,
            read_rows,
            error,
            schedule_lag_us: statement.schedule_lag.map(|lag| u64::try_from(lag.as_micros()).unwrap_or(u64::MAX)),
        });
    }
    let statements_run: u64 = looped.clients.iter().map(|client| client.statements).sum();
    let runner_cpu: Option<Duration> = looped.clients.iter().map(|client| client.runner_cpu).sum();
    let (qps, rows_per_second, unknown) = if completed == 0 {
        (None, None, Some(format!("no statement completed ({errors} failed)")))
    } else {
        (ratio(completed as f64, wall_seconds), ratio(rows_read as f64, wall_seconds), None)
    };
    LevelRound {
        round,
        clients,
        complete: !looped.interrupted,
        wall_seconds: Some(wall_seconds),
        completed,
        errors,
        qps,
        rows_per_second,
        latency: Latency::of(latencies),
        unknown,
        runner_cpu_us_per_statement: runner_cpu.and_then(|cpu| ratio(cpu.as_secs_f64() * 1e6, statements_run as f64)),
        errors_by_query,
        scheduled: looped.scheduled,
        schedule_lag: looped.statements.iter().any(|statement| statement.schedule_lag.is_some()).then(|| {
            Latency::of(
                looped
                    .statements
                    .iter()
                    .filter_map(|statement| statement.schedule_lag)
                    .map(|lag| lag.as_secs_f64() * 1e3)
                    .collect(),
            )
        }),
        statements: records,
        load: None,
    }
}

/// The errors of a level run in the cluster that the server's log does not hold, under the
/// name a query would have.
pub const NOT_IN_THE_SERVERS_LOG: &str = "(statements the server's log does not hold)";

fn unlogged_errors(report: &LoadReport, count: u64) -> QueryErrors {
    QueryErrors {
        query: NOT_IN_THE_SERVERS_LOG.to_string(),
        count,
        first: report.first_error.clone().unwrap_or_else(|| "the generator said no message".to_string()),
    }
}

/// A level's queries, named, for [`in_cluster_level`].
pub struct NamedQuery<'a> {
    pub name: &'a str,
    pub sql: &'a str,
}

/// One level of one round run beside the engine ([`Target::run_load_level`]):
/// `clients` clients of clickhouse-benchmark in the cluster, on `placement`, over
/// `queries` in turn until `bound`, in the target's database with `settings` (the target
/// adds its session's). Its
/// figures are the generator's report ([`load_round`]); the server's `query_log` is then
/// asked how many of the level's statements (by their query id's `query_id_prefix`) it
/// finished and failed, and a count that differs is said to `warn`, as is a log that
/// cannot be read (the level keeps the reason). Both `progress` and `warn` hear lines
/// that name the round and level. The generator's errors are grouped by
/// query from that log.
#[allow(clippy::too_many_arguments)]
pub fn in_cluster_level(
    target: &mut Target,
    round: u32,
    clients: u32,
    queries: &[NamedQuery<'_>],
    bound: LoadBound,
    settings: &Settings,
    placement: &ClientPlacement,
    query_id_prefix: &str,
    progress: &mut dyn FnMut(&str),
    warn: &mut dyn FnMut(&str),
) -> Result<InClusterLevel> {
    let level = LoadLevel {
        clients,
        bound,
        queries: queries.iter().map(|query| query.sql.to_string()).collect(),
        database: target.database().to_string(),
        query_id_prefix: query_id_prefix.to_string(),
        settings: settings.clone(),
        placement: placement.clone(),
    };
    let at = format!("round {round}, {}", crate::units::plural(clients, "client"));
    let ran = target.run_load_level(&level, &mut |line| progress(&format!("{at}: {line}")))?;
    let report = LoadReport::parse(&ran.log).with_context(|| {
        format!(
            "the log of the load's pod {} (gone now) is not clickhouse-benchmark's whole report, so the level has no \
             figures; run it again, or with --load-from local; the log ended:\n{}",
            ran.pod,
            log_tail(&ran.log, 10)
        )
    })?;
    if let Some(loaded) = report.loaded
        && loaded != queries.len() as u64
    {
        bail!(
            "the load's pod {} read {loaded} queries of the level's {}: its queries file was not read as written; \
             run the level with --load-from local",
            ran.pod,
            queries.len()
        );
    }
    let load = InClusterLoad {
        generator: ran.generator,
        pod: ran.pod,
        node: ran.node,
        placement: placement.clone(),
        query_id_prefix: query_id_prefix.to_string(),
        report,
        server_finished: None,
        server_failed: None,
        server_unknown: None,
        mismatch: None,
    };
    let logged = crate::interrupt::check().and_then(|()| server_counts(target, query_id_prefix));
    if crate::interrupt::requested() {
        return Err(Interrupted.into());
    }
    let logged_rows = logged.as_ref().ok().cloned();
    let level = load_round(round, clients, load, queries, logged);
    if let Some(load) = &level.load {
        if let Some(mismatch) = &load.mismatch {
            warn(&format!("{at}: {mismatch}"));
        }
        if let Some(unknown) = &load.server_unknown {
            warn(&format!("{at}: the server's count is unknown: {unknown}"));
        }
    }
    Ok(InClusterLevel { level, logged: logged_rows })
}

/// A level run in the cluster: its record, and what the server's log held of its
/// statements, for a kind that splits them further (the writes kind's INSERTs among its
/// mix, its failures by error code); `None` when the log could not be read (the level's
/// `load.server_unknown` says why).
#[derive(Debug, Clone)]
pub struct InClusterLevel {
    pub level: LevelRound,
    pub logged: Option<Vec<LoggedQuery>>,
}

/// The query id prefix of a level's statements run in the cluster: the run's database
/// (its id and this process's, so that two runs of one id at once differ) in letters,
/// digits and `-`, the round and the level, so that the server's log finds exactly that
/// level's.
pub fn level_query_id_prefix(database: &str, round: u32, clients: u32) -> String {
    let run: String =
        database.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    format!("{run}-r{round}-c{clients}")
}

/// Why a kind skips its runner check when its clients are in the cluster, as its notes
/// and progress say it.
pub const NO_RUNNER_CHECK_IN_CLUSTER: &str =
    "no runner check: it measures this tool's loop, and the clients are clickhouse-benchmark in the cluster";

/// With `load`'s clients in `target`'s cluster, refuses a server whose image's
/// clickhouse-benchmark cannot tag a level's statements ([`check_generator_version`]).
pub fn check_generator_on(load: &LoadFlags, target: &Target) -> Result<()> {
    if load.load_from(target.capabilities().in_cluster_load) == LoadFrom::Cluster {
        check_generator_version(&target.info().engine_version)?;
    }
    Ok(())
}

/// Refuses a server whose image's clickhouse-benchmark cannot tag a level's statements for
/// the server's count ([`OLDEST_WITH_QUERY_ID_PREFIX`]), in one line with the way out.
pub fn check_generator_version(engine_version: &str) -> Result<()> {
    let (year, month) = OLDEST_WITH_QUERY_ID_PREFIX;
    let version = crate::targets::ClickHouseVersion::parse(engine_version);
    if !version.is_some_and(|version| version.is_at_least((year, month))) {
        bail!(
            "the clients in the cluster are clickhouse-benchmark of the server's image, ClickHouse {engine_version}, \
             which has no --query_id_prefix (from {year}.{month}): give --load-from local, or deploy a newer image"
        );
    }
    Ok(())
}

/// The server's record of a level's statements, by query text and error code (0 for the
/// finished): finished, failed, and the first failure's message.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct LoggedQuery {
    pub query: String,
    pub code: i32,
    pub finished: u64,
    pub failed: u64,
    pub first_error: String,
}

/// What `system.query_log` holds of the statements whose query id starts with
/// `query_id_prefix` and `_`, after flushing it.
fn server_counts(target: &mut Target, query_id_prefix: &str) -> Result<Vec<LoggedQuery>> {
    target.execute("SYSTEM FLUSH LOGS").context("cannot flush the server's logs")?;
    let sql = format!(
        "SELECT query, exception_code AS code, countIf(type = 'QueryFinish') AS finished, \
         countIf(type IN ('ExceptionBeforeStart', 'ExceptionWhileProcessing')) AS failed, \
         anyIf(exception, type != 'QueryFinish') AS first_error \
         FROM system.query_log WHERE event_date >= today() - 1 AND startsWith(query_id, {}) \
         AND type != 'QueryStart' GROUP BY query, exception_code ORDER BY query, exception_code",
        sql_string(&format!("{query_id_prefix}_"))
    );
    target.query_rows(&sql).context("cannot read system.query_log")
}

/// A level run beside the engine as the bundle keeps it: the generator's figures (QPS
/// over its run's wall time, completed statements only; its percentiles, to the
/// millisecond; no maximum, which it does not print), its errors grouped by query from
/// the server's log (`logged`), and that log's counts held against the generator's.
pub fn load_round(
    round: u32,
    clients: u32,
    mut load: InClusterLoad,
    queries: &[NamedQuery<'_>],
    logged: Result<Vec<LoggedQuery>>,
) -> LevelRound {
    let report = load.report.clone();
    let mut errors_by_query = Vec::new();
    match logged {
        Ok(rows) => {
            load.cross_check(rows.iter().map(|row| row.finished).sum(), rows.iter().map(|row| row.failed).sum());
            // By query: a query's rows of every error code together, its first message first.
            for row in rows.iter().filter(|row| row.failed > 0) {
                let query = queries.iter().find(|query| query.sql.trim() == row.query.trim()).map_or_else(
                    || format!("a statement not of the level: {}", crate::sql::one_line(&row.query)),
                    |query| query.name.to_string(),
                );
                match errors_by_query.iter_mut().find(|errors: &&mut QueryErrors| errors.query == query) {
                    Some(errors) => errors.count += row.failed,
                    None => {
                        errors_by_query.push(QueryErrors { query, count: row.failed, first: row.first_error.clone() })
                    }
                }
            }
            // Failures the server never logged (a refused connection, a timeout): the
            // generator's count and its first message.
            let logged_failures: u64 = rows.iter().map(|row| row.failed).sum();
            if report.errors > logged_failures {
                errors_by_query.push(unlogged_errors(&report, report.errors - logged_failures));
            }
        }
        Err(error) => {
            load.server_unknown = Some(format!("{error:#}"));
            if report.errors > 0 {
                errors_by_query.push(unlogged_errors(&report, report.errors));
            }
        }
    }
    let unknown = (report.completed == 0).then(|| format!("no statement completed ({} failed)", report.errors));
    LevelRound {
        round,
        clients,
        complete: true,
        // The generator's QPS is its completed statements over its run's wall time.
        wall_seconds: report.qps.filter(|qps| *qps > 0.0).map(|qps| report.completed as f64 / qps),
        completed: report.completed,
        errors: report.errors,
        qps: report.qps,
        rows_per_second: report.rows_per_second,
        latency: Latency {
            p50_ms: report.percentile(50.0),
            p90_ms: report.percentile(90.0),
            p99_ms: report.percentile(99.0),
            max_ms: None,
        },
        unknown,
        runner_cpu_us_per_statement: None,
        errors_by_query,
        schedule_lag: None,
        scheduled: None,
        statements: Vec::new(),
        load: Some(load),
    }
}

/// Checks that the runner is not the bottleneck (ARCHITECTURE.md, "Throughput runs"):
/// `sql` at one client through the runner's closed loop and through a tight loop on the
/// engine ([`Target::run_direct_loop`]), in interleaved blocks of `statements` each after a
/// warm-up of each path, with `on_block` told of each block as it ends. Both rates, their
/// ratio against `goal`, and the runner's own CPU per statement. A statement that fails
/// is the error: the check's statement must run.
pub fn runner_check(
    target: &mut Target,
    sql: &str,
    statements: u64,
    goal: f64,
    format: &str,
    mut on_block: impl FnMut(&CheckBlock),
) -> Result<RunnerCheck> {
    let runner_block = |target: &mut Target, statements: u64| -> Result<ClosedLoop> {
        let looped = target.run_closed_loop(
            1,
            &[sql],
            &[vec![0]],
            LoopBound::Statements(statements),
            &Settings::new(),
            format,
        )?;
        if looped.interrupted {
            return Err(Interrupted.into());
        }
        if let Some(Err(error)) = looped.statements.iter().map(|statement| &statement.outcome).find(|o| o.is_err()) {
            bail!("the runner check's statement failed: {error}");
        }
        Ok(looped)
    };
    // A warm-up of each path, not counted.
    target.run_direct_loop(sql, statements / 10 + 1, format)?;
    runner_block(target, statements / 10 + 1)?;
    let mut blocks = Vec::new();
    let mut runner_cpu = Some(Duration::ZERO);
    for &path in CHECK_ORDER.iter().cycle().take(CHECK_BLOCKS as usize) {
        let (done, wall) = match path {
            CheckPath::Direct => {
                let direct = target.run_direct_loop(sql, statements, format)?;
                (direct.statements, direct.wall)
            }
            CheckPath::Runner => {
                let looped = runner_block(target, statements)?;
                let cpu = looped.clients.iter().map(|client| client.runner_cpu).sum::<Option<Duration>>();
                runner_cpu = runner_cpu.zip(cpu).map(|(sum, cpu)| sum + cpu);
                (looped.statements.len() as u64, looped.wall)
            }
        };
        let block = CheckBlock { path, statements: done, seconds: Some(wall.as_secs_f64()) };
        on_block(&block);
        blocks.push(block);
    }
    // A side's statements over its seconds: unknown when a block's time is.
    let side = |path: CheckPath| -> (u64, Option<f64>) {
        let of_path = blocks.iter().filter(|block| block.path == path);
        let statements: u64 = of_path.clone().map(|block| block.statements).sum();
        let seconds: Option<f64> = of_path.map(|block| block.seconds).sum();
        (statements, seconds.and_then(|seconds| ratio(statements as f64, seconds)))
    };
    let (runner_statements, runner_qps) = side(CheckPath::Runner);
    let (direct_statements, direct_qps) = side(CheckPath::Direct);
    Ok(RunnerCheck {
        query: sql.to_string(),
        statements_per_side: direct_statements,
        ratio: runner_qps.zip(direct_qps).and_then(|(runner, direct)| ratio(runner, direct)),
        runner_qps,
        direct_qps,
        goal: Some(goal),
        runner_cpu_us_per_statement: runner_cpu
            .and_then(|cpu| ratio(cpu.as_secs_f64() * 1e6, runner_statements as f64)),
        blocks,
    })
}

/// `500ms`, `2s`, `1.5s`, `1m`: a level's duration, above 0 and up to 24 hours.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit_seconds) = if let Some(number) = text.strip_suffix("ms") {
        (number, 1e-3)
    } else if let Some(number) = text.strip_suffix('s') {
        (number, 1.0)
    } else if let Some(number) = text.strip_suffix('m') {
        (number, 60.0)
    } else {
        return Err(not_a_duration(text));
    };
    let value: f64 = number.trim().parse().map_err(|_| not_a_duration(text))?;
    let seconds = value * unit_seconds;
    if !(seconds.is_finite() && (0.0..=86_400.0).contains(&seconds)) {
        return Err(format!("{text:?} is not a duration above 0 and up to 24 hours"));
    }
    // Below a nanosecond is no time either: a level must have some to run in.
    let duration = Duration::from_secs_f64(seconds);
    if duration.is_zero() {
        return Err(format!("{text:?}: a level needs time to run; give a duration above 0, e.g. 2s"));
    }
    Ok(duration)
}

fn not_a_duration(text: &str) -> String {
    format!("{text:?} is not a duration: write a number and its unit, ms, s or m (500ms, 5s, 1m)")
}

/// A level's statement count: 1 or more.
pub fn parse_iterations(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("a level needs at least one statement: give 1 or more".to_string()),
        Ok(statements) => Ok(statements),
        Err(_) => Err(format!("{text:?} is not a statement count: give a whole number, 1 or more")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_with_their_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        // The message and the rule agree: 0 is refused, and the message says above 0.
        for zero in ["0s", "0ms", "0.0000000001s"] {
            assert_eq!(
                parse_duration(zero),
                Err(format!("{zero:?}: a level needs time to run; give a duration above 0, e.g. 2s"))
            );
        }
        assert_eq!(parse_duration("25h"), Err(not_a_duration("25h")));
        assert_eq!(parse_duration("1441m"), Err("\"1441m\" is not a duration above 0 and up to 24 hours".to_string()));
        for bad in ["5", "five s", "-1s", "1h", "NaNs"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
    use crate::levels::LevelSummary;

    #[test]
    fn the_concurrency_list_is_refused_in_one_line_when_meaningless() {
        let error = |text: &str| Levels::parse(text).list().unwrap_err().to_string();
        assert_eq!(Levels::parse("1,2,4").list().unwrap(), [1, 2, 4]);
        assert_eq!(Levels::parse(" 8 , 1 ").list().unwrap(), [8, 1]);
        assert_eq!(Levels::parse("256").list().unwrap(), [256]);
        assert!(error("").starts_with("--concurrency lists no level"));
        assert!(error(",").starts_with("--concurrency lists no level"));
        assert_eq!(error("0"), "--concurrency 0: a level needs at least one client");
        assert!(error("1,257").starts_with("--concurrency 257 is more clients than this runner starts (256"));
        assert!(error("99999999999999999999").contains("is not a number of clients"));
        assert!(error("two").starts_with("--concurrency two is not a number of clients"));
        assert!(error("2,2").contains("lists 2 twice"));
    }

    #[test]
    fn every_client_has_its_own_order_and_a_seed_replays_it() {
        let orders = client_orders(7, 3, 4);
        assert_eq!(orders.len(), 3);
        for order in &orders {
            assert_eq!(order.len(), 4 * ORDER_PASSES);
            // Every pass holds every query once.
            for pass in order.chunks(4) {
                let mut sorted = pass.to_vec();
                sorted.sort_unstable();
                assert_eq!(sorted, [0, 1, 2, 3]);
            }
        }
        assert_ne!(orders[0], orders[1]);
        assert_eq!(client_orders(7, 3, 4), orders);
        assert_ne!(client_orders(8, 3, 4), orders);
        // A client's order does not depend on how many clients there are.
        assert_eq!(client_orders(7, 1, 4)[0], orders[0]);
    }

    /// A level worked out by hand: two clients over 2 s of wall time, five completed
    /// statements (1.8 s of latency in all) and one failed one of 1 ms.

    #[test]
    fn a_levels_figures_are_completed_statements_over_its_wall_time() {
        use crate::targets::{ClientCost, LoopStatement, ResultCounters};
        let ms = Duration::from_millis;
        let ok = |client: u32, query: u32, start: u64, latency: u64| LoopStatement {
            client,
            query,
            start_offset: ms(start),
            latency: ms(latency),
            schedule_lag: None,
            outcome: Ok(ResultCounters { read_rows: Some(10), ..ResultCounters::default() }),
        };
        let statements = vec![
            ok(0, 0, 0, 100),
            ok(0, 1, 100, 200),
            LoopStatement { outcome: Err("Code: 60. Unknown table".to_string()), ..ok(0, 1, 300, 1) },
            ok(0, 0, 301, 300),
            ok(1, 1, 0, 500),
            ok(1, 0, 500, 700),
        ];
        let looped = ClosedLoop {
            statements,
            wall: Duration::from_secs(2),
            clients: vec![
                ClientCost { client: 0, statements: 4, runner_cpu: Some(Duration::from_micros(40)) },
                ClientCost { client: 1, statements: 2, runner_cpu: Some(Duration::from_micros(20)) },
            ],
            answers: vec![None, None],
            interrupted: false,
            scheduled: None,
        };
        let level = level_round(3, 2, &looped, &["a".to_string(), "b".to_string()]);
        assert_eq!((level.round, level.clients, level.completed, level.errors), (3, 2, 5, 1));
        // 5 / 2 s, not 5 / 1.8 s (the latencies' sum) nor 6 / 2 s (the failure counted).
        assert_eq!(level.qps, Some(2.5));
        assert_eq!(level.rows_per_second, Some(25.0));
        // Nearest rank of 100, 200, 300, 500, 700: the failure's 1 ms is not among them.
        assert_eq!(
            (level.latency.p50_ms, level.latency.p90_ms, level.latency.p99_ms, level.latency.max_ms),
            (Some(300.0), Some(700.0), Some(700.0), Some(700.0))
        );
        assert_eq!(level.runner_cpu_us_per_statement, Some(10.0));
        assert_eq!(level.statements.len(), 6);
        assert_eq!(level.statements[2].error.as_deref(), Some("Code: 60. Unknown table"));
        assert_eq!((level.statements[2].read_rows, level.statements[4].read_rows), (None, Some(10)));
        assert_eq!(
            level.errors_by_query,
            [QueryErrors { query: "b".to_string(), count: 1, first: "Code: 60. Unknown table".to_string() }]
        );
        assert!(level.complete && level.unknown.is_none());
        // Nothing completed: QPS and latency unknown, with why, never 0.
        let failed = ClosedLoop {
            statements: vec![LoopStatement { outcome: Err("boom".to_string()), ..ok(0, 0, 0, 5) }],
            wall: ms(5),
            clients: vec![ClientCost { client: 0, statements: 1, runner_cpu: None }],
            answers: vec![None],
            interrupted: false,
            scheduled: None,
        };
        let level = level_round(1, 1, &failed, &["a".to_string()]);
        assert_eq!((level.qps, level.rows_per_second, level.latency), (None, None, Latency::default()));
        assert_eq!(level.unknown.as_deref(), Some("no statement completed (1 failed)"));
        assert_eq!(level.runner_cpu_us_per_statement, None);
        // The summary across rounds takes the complete rounds only.
        let rounds = vec![
            LevelRound { qps: Some(2.0), ..level_round(1, 2, &looped, &["a".to_string(), "b".to_string()]) },
            level_round(2, 2, &looped, &["a".to_string(), "b".to_string()]),
            LevelRound {
                complete: false,
                qps: Some(100.0),
                ..level_round(3, 2, &looped, &["a".to_string(), "b".to_string()])
            },
        ];
        let summary = LevelSummary::of(2, &rounds);
        assert_eq!(summary.rounds, 2);
        assert_eq!((summary.qps.min, summary.qps.median, summary.qps.max), (Some(2.0), Some(2.25), Some(2.5)));
        assert_eq!((summary.completed, summary.errors), (10, 2));
        assert_eq!(summary.runner_cpu_us_per_statement, Some(10.0));
    }

    fn in_cluster(report: &str) -> InClusterLoad {
        InClusterLoad {
            generator: "clickhouse-benchmark (clickhouse/clickhouse-server:26.3.33.24)".to_string(),
            pod: "chbench-load-q8m4z".to_string(),
            node: None,
            placement: ClientPlacement::BesideServer,
            query_id_prefix: "chbench-run-r1-c4".to_string(),
            report: LoadReport::parse(report).unwrap(),
            server_finished: None,
            server_failed: None,
            server_unknown: None,
            mismatch: None,
        }
    }

    /// A report of 10 completed and 2 failed statements: p50 148 ms, p90 150, p99 152.
    fn report_text() -> String {
        let mut text = "Loaded 2 queries.\nCode: 60. DB::Exception: Unknown table\n\nQueries executed: 12.\n\n\
                        10.0.1.7:9000, queries: 10, errors: 2, QPS: 5.000, RPS: 50.000, MiB/s: 0.001, result RPS: \
                        5.000, result MiB/s: 0.000.\n\n"
            .to_string();
        for percent in crate::load_generator::PRINTED_PERCENTILES {
            let seconds = match percent {
                p if p < 90.0 => 0.148,
                p if p < 99.0 => 0.150,
                _ => 0.152,
            };
            text.push_str(&format!("{percent}%\t\t{seconds:.3} sec.\t\n"));
        }
        text
    }

    fn logged(query: &str, finished: u64, failed: u64) -> LoggedQuery {
        LoggedQuery {
            query: query.to_string(),
            code: if failed > 0 { 60 } else { 0 },
            finished,
            failed,
            first_error: if failed > 0 { "Code: 60".to_string() } else { String::new() },
        }
    }

    #[test]
    fn a_level_in_the_cluster_is_the_generators_figures_held_against_the_servers_log() {
        let queries = [NamedQuery { name: "a", sql: "SELECT 1" }, NamedQuery { name: "b", sql: "SELECT x\nFROM t" }];
        let rows = vec![logged("SELECT 1", 10, 0), logged("SELECT x\nFROM t", 0, 2)];
        let level = load_round(1, 4, in_cluster(&report_text()), &queries, Ok(rows));
        assert_eq!((level.completed, level.errors, level.qps, level.rows_per_second), (10, 2, Some(5.0), Some(50.0)));
        // Its wall time is what its QPS was taken over: 10 statements at 5 a second.
        assert_eq!(level.wall_seconds, Some(2.0));
        assert_eq!(
            level.latency,
            Latency { p50_ms: Some(148.0), p90_ms: Some(150.0), p99_ms: Some(152.0), max_ms: None }
        );
        assert!(level.statements.is_empty() && level.runner_cpu_us_per_statement.is_none() && level.complete);
        // The failures by query come from the server's log, named as the level names them.
        assert_eq!(
            level.errors_by_query,
            [QueryErrors { query: "b".to_string(), count: 2, first: "Code: 60".to_string() }]
        );
        let load = level.load.unwrap();
        assert_eq!((load.server_finished, load.server_failed, load.mismatch), (Some(10), Some(2), None));

        // The server saw one fewer finish than the generator counted: said, kept.
        let rows = vec![logged("SELECT 1", 9, 0), logged("SELECT x\nFROM t", 0, 2)];
        let level = load_round(1, 4, in_cluster(&report_text()), &queries, Ok(rows));
        assert_eq!(
            level.load.unwrap().mismatch.as_deref(),
            Some(
                "clickhouse-benchmark counted 10 completed and 2 failed, the server's query_log 9 finished and 2 failed"
            )
        );
        // A log that cannot be read leaves the server's count unknown with the reason, never 0.
        let level = load_round(
            1,
            4,
            in_cluster(&report_text()),
            &queries,
            Err(anyhow::anyhow!("cannot read system.query_log")),
        );
        let load = level.load.unwrap();
        assert_eq!((load.server_finished, load.mismatch), (None, None));
        assert_eq!(load.server_unknown.as_deref(), Some("cannot read system.query_log"));
        // Its failures are still counted, under the generator's first message.
        let unlogged = QueryErrors {
            query: NOT_IN_THE_SERVERS_LOG.to_string(),
            count: 2,
            first: "Code: 60. DB::Exception: Unknown table".to_string(),
        };
        assert_eq!(level.errors_by_query, std::slice::from_ref(&unlogged));
        // Failures the server never logged (a refused connection) are the generator's.
        let rows = vec![logged("SELECT 1", 10, 0)];
        let level = load_round(1, 4, in_cluster(&report_text()), &queries, Ok(rows));
        assert_eq!(level.errors_by_query, [unlogged]);
        assert!(level.load.unwrap().mismatch.unwrap().contains("10 finished and 0 failed"));
    }

    #[test]
    fn a_server_too_old_for_the_generators_query_id_prefix_is_refused_with_the_way_out() {
        for fine in ["24.5.1.1", "26.3.33.24"] {
            assert!(check_generator_version(fine).is_ok(), "{fine}");
        }
        for old in ["24.3.18.7", "23.8.1.1", "not a version"] {
            let error = check_generator_version(old).unwrap_err().to_string();
            assert!(error.contains("no --query_id_prefix (from 24.5): give --load-from local"), "{error}");
        }
    }

    #[test]
    fn a_level_in_the_cluster_that_completed_nothing_has_unknown_figures() {
        let report = "Loaded 1 queries.\n\nQueries executed: 3.\n\n";
        let queries = [NamedQuery { name: "a", sql: "SELECT nope" }];
        let level = load_round(2, 1, in_cluster(report), &queries, Ok(vec![logged("SELECT nope", 0, 3)]));
        assert_eq!((level.qps, level.wall_seconds, level.latency), (None, None, Latency::default()));
        assert_eq!(level.unknown.as_deref(), Some("no statement completed (3 failed)"));
        // A statement the level did not send is named by its text, not taken for one of its queries.
        let level = load_round(2, 1, in_cluster(report), &queries, Ok(vec![logged("SELECT other", 0, 3)]));
        assert_eq!(level.errors_by_query[0].query, "a statement not of the level: SELECT other");
    }

    #[test]
    fn levels_in_the_cluster_are_summed_up_by_each_percentiles_median_across_rounds() {
        let queries = [NamedQuery { name: "a", sql: "SELECT 1" }];
        let report = report_text();
        let rounds: Vec<LevelRound> =
            [report.clone(), report.replace("0.148", "0.100"), report.replace("0.148", "0.200")]
                .iter()
                .enumerate()
                .map(|(at, report)| load_round(at as u32 + 1, 4, in_cluster(report), &queries, Ok(Vec::new())))
                .collect();
        let summary = LevelSummary::of(4, &rounds);
        assert_eq!(summary.latency.p50_ms, Some(148.0));
        assert_eq!(summary.latency.p99_ms, Some(152.0));
        assert_eq!(summary.latency.max_ms, None);
        assert_eq!((summary.completed, summary.errors, summary.qps.median), (30, 6, Some(5.0)));
    }
}

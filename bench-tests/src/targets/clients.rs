//! Driving several clients of one target at once: one statement from many connections
//! ([`Target::run_concurrently`]), the closed loop a throughput level runs
//! ([`Target::run_closed_loop`]), the open loop that keeps a rate
//! ([`Target::run_open_loop`]), the tight loop a runner is held to
//! ([`Target::run_direct_loop`]), and the start line that lets clients go together.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use super::{Backend, ClientOutput, Output, ResultCounters, Target};
use crate::interrupt::Interrupted;
use crate::load_generator::LoadBound;
use crate::settings::Settings;
use crate::sql::one_line;

impl Target {
    /// Runs `sql` from `clients` clients at once, each `runs_per_client` times in a row,
    /// with statement-level `settings_of(client, run)` and the output in `format`; returns
    /// every statement's output, ordered by client, then run. Each client has a connection
    /// of its own, opened in its own thread, in this target's database with the session
    /// defaults in force; they start together once all are connected. One client runs on
    /// this target's own connection. Every statement counts in [`Target::statement_time`].
    ///
    /// A target that runs one statement at a time ([`Concurrency::Serial`]) refuses more
    /// than one client. When a statement fails, the other clients stop at their next run
    /// and the first failure (by client) is the error. A stop requested meanwhile
    /// ([`crate::interrupt`]) cancels the statements running (the targets' own hooks reach
    /// every connection) and the call returns [`Interrupted`].
    pub fn run_concurrently(
        &mut self,
        clients: usize,
        runs_per_client: u32,
        sql: &str,
        settings_of: impl Fn(usize, u32) -> Settings + Sync,
        format: &str,
    ) -> Result<Vec<ClientOutput>> {
        self.capabilities.concurrent_queries.check_clients(self.info.kind, clients, runs_per_client)?;
        if clients == 1 {
            let mut outputs = Vec::new();
            for run in 0..runs_per_client {
                crate::interrupt::check()?;
                let output = self.run(sql, &settings_of(0, run), format)?;
                outputs.push(ClientOutput { client: 0, run, output });
            }
            return Ok(outputs);
        }
        let failed = AtomicBool::new(false);
        let outcomes = self.on_client_connections(clients, |client, backend| {
            ClientRun { client, runs_per_client, sql, format, failed: &failed }.run(backend, &settings_of)
        })?;
        let mut outputs = Vec::new();
        let mut first_error = None;
        for outcome in outcomes {
            match outcome {
                // A client whose start another abandoned ran nothing.
                Ok(client_outputs) => outputs.extend(client_outputs.unwrap_or_default()),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        for output in &outputs {
            self.count_statement(&output.output);
        }
        if let Some(error) = first_error {
            // Statements cancelled by a stop fail each in its own words: the stop is the fact.
            if crate::interrupt::requested() {
                return Err(Interrupted.into());
            }
            return Err(error);
        }
        Ok(outputs)
    }

    /// Runs a closed loop (ARCHITECTURE.md, "Throughput runs"): `clients` clients at once,
    /// each looping over `statements` in its own order (`orders[client]`, cycled) until
    /// `bound`, each statement started as soon as the client's previous one ended. Each
    /// client has a connection of its own, opened in its own thread, in this target's
    /// database (one client runs on this target's own connection, in this thread); all
    /// start together. Unlike [`Target::run_concurrently`], a failed statement is recorded
    /// and its client goes on. A stop requested meanwhile ([`crate::interrupt`]) ends every
    /// client before its next statement; what ran is returned, marked interrupted. Every
    /// completed statement counts in [`Target::statement_time`]. A client that cannot
    /// connect is the error, and nothing runs.
    pub fn run_closed_loop(
        &mut self,
        clients: usize,
        statements: &[&str],
        orders: &[Vec<usize>],
        bound: LoopBound,
        settings: &Settings,
        format: &str,
    ) -> Result<ClosedLoop> {
        self.run_loop(clients, statements, orders, bound, None, settings, format)
    }

    /// Runs an open loop: as [`Target::run_closed_loop`], but every statement has its
    /// start scheduled in advance, `rate` a second over all clients (statement `n` at `n /
    /// rate` seconds from the start line), and a client takes the next slot, waits for its
    /// time, and sends it. A statement's latency is measured from its scheduled start, not
    /// from when it was sent, and its schedule lag (sent less scheduled) is recorded: when
    /// the engine cannot keep the rate, the lag grows and counts in the latency, instead of
    /// the schedule slowing down with the engine (no coordinated omission, as pgbench
    /// `--rate` measures). The bound ends the schedule: no slot after the duration, or
    /// after that many statements; with a duration, a slot still unsent when it ends is
    /// skipped ([`ClosedLoop::scheduled`] less the statements run), so a rate the engine
    /// cannot keep ends the level on time. `rate` must be above 0 and finite.
    #[allow(clippy::too_many_arguments)]
    pub fn run_open_loop(
        &mut self,
        clients: usize,
        statements: &[&str],
        orders: &[Vec<usize>],
        bound: LoopBound,
        rate: f64,
        settings: &Settings,
        format: &str,
    ) -> Result<ClosedLoop> {
        if !(rate.is_finite() && rate > 0.0) {
            bail!("an open loop needs a rate above 0 statements per second, not {rate}");
        }
        self.run_loop(clients, statements, orders, bound, Some(rate), settings, format)
    }

    /// The closed loop, or the open one at `rate` statements per second.
    #[allow(clippy::too_many_arguments)]
    fn run_loop(
        &mut self,
        clients: usize,
        statements: &[&str],
        orders: &[Vec<usize>],
        bound: LoopBound,
        rate: Option<f64>,
        settings: &Settings,
        format: &str,
    ) -> Result<ClosedLoop> {
        self.capabilities.concurrent_queries.check_clients(self.info.kind, clients, 1)?;
        if orders.len() != clients
            || orders.iter().any(|order| order.is_empty() || order.iter().any(|&i| i >= statements.len()))
        {
            bail!("a closed loop needs one non-empty order of the {} statements per client", statements.len());
        }
        let taken = AtomicU64::new(0);
        // A nanosecond at least: a rate above a billion a second would otherwise put every slot
        // at the start line.
        let schedule = rate.map(|rate| Schedule {
            interval: Duration::from_secs_f64(1.0 / rate).max(Duration::from_nanos(1)),
            origin: OnceLock::new(),
        });
        let client_of = |client: usize| LoopClient {
            client: u32::try_from(client).unwrap_or(u32::MAX),
            statements,
            order: &orders[client],
            bound,
            taken: &taken,
            schedule: schedule.as_ref(),
            settings,
            format,
        };
        let records: Vec<ClientRecord> = if clients == 1 {
            vec![client_of(0).run(self.backend.as_mut(), Instant::now())]
        } else {
            let outcomes = self
                .on_client_connections(clients, |client, backend| Ok(client_of(client).run(backend, Instant::now())))?;
            let mut records = Vec::with_capacity(clients);
            let mut first_error = None;
            for outcome in outcomes {
                match outcome {
                    Ok(Some(record)) => records.push(record),
                    Ok(None) => {}
                    Err(error) => {
                        first_error.get_or_insert(error);
                    }
                }
            }
            if let Some(error) = first_error {
                return Err(error);
            }
            if records.len() != clients {
                bail!("only {} of {clients} clients started", records.len());
            }
            records
        };
        let mut looped = self.closed_loop_of(records, statements.len());
        looped.scheduled = schedule.map(|schedule| match bound {
            LoopBound::Duration(duration) => {
                // Slots n with n x interval before the end, counted in whole nanoseconds.
                u64::try_from(duration.as_nanos().div_ceil(schedule.interval.as_nanos())).unwrap_or(u64::MAX)
            }
            LoopBound::Statements(total) => total,
        });
        Ok(looped)
    }

    /// Runs `work(client, connection)` in `clients` threads of their own, each on a
    /// connection of its own ([`Backend::client_opener`]) opened in its thread, in this
    /// target's database, and released together once every client has connected; the
    /// connection closes in the thread that opened it. Per client, in order: what `work`
    /// returned, `None` when another client abandoned the start (it could not connect, or
    /// its thread did not start), or the error (it could not connect, or it panicked).
    fn on_client_connections<T: Send>(
        &self,
        clients: usize,
        work: impl Fn(usize, &mut dyn Backend) -> Result<T> + Sync,
    ) -> Result<Vec<Result<Option<T>>>> {
        let opener = self.backend.client_opener().context("cannot open connections for concurrent clients")?;
        let start = StartLine::new(clients);
        let database = self.database.as_str();
        Ok(std::thread::scope(|scope| {
            let mut handles = Vec::with_capacity(clients);
            for client in 0..clients {
                let (opener, start, work) = (&opener, &start, &work);
                let spawned =
                    std::thread::Builder::new().name(format!("client-{client}")).spawn_scoped(scope, move || {
                        let arrival = Arrival { start, arrived: false };
                        let connection = opener().and_then(|mut backend| {
                            backend
                                .use_database(database)
                                .with_context(|| format!("cannot use database {database}"))?;
                            Ok(backend)
                        });
                        // On an error, dropping the arrival releases the others, who then stop.
                        let mut backend = connection.with_context(|| format!("client {client} cannot connect"))?;
                        if !arrival.wait_for_all() {
                            return Ok(None);
                        }
                        work(client, backend.as_mut()).map(Some)
                    });
                match spawned {
                    Ok(handle) => handles.push(Ok(handle)),
                    Err(error) => {
                        // The clients started so far must not wait for this one.
                        start.abandon();
                        handles.push(Err(anyhow!("cannot start the thread of client {client}: {error}")));
                        break;
                    }
                }
            }
            handles
                .into_iter()
                .enumerate()
                .map(|(client, handle)| {
                    handle?.join().unwrap_or_else(|_| Err(anyhow!("the thread of client {client} panicked")))
                })
                .collect()
        }))
    }

    /// The loop's record from its clients': offsets from the first client's start, the
    /// wall time to the last one's end, the first answers, and each completed statement
    /// counted in [`Target::statement_time`].
    fn closed_loop_of(&mut self, records: Vec<ClientRecord>, statements: usize) -> ClosedLoop {
        let origin = records.iter().map(|record| record.started).min().unwrap_or_else(Instant::now);
        let end = records.iter().map(|record| record.ended).max().unwrap_or(origin);
        let mut answers: Vec<Option<String>> = vec![None; statements];
        let mut looped = ClosedLoop {
            statements: Vec::with_capacity(records.iter().map(|record| record.statements.len()).sum()),
            wall: end.duration_since(origin),
            clients: Vec::with_capacity(records.len()),
            answers: Vec::new(),
            interrupted: records.iter().any(|record| record.interrupted),
            scheduled: None,
        };
        for record in records {
            for (answer, own) in answers.iter_mut().zip(record.answers) {
                if answer.is_none() {
                    *answer = own;
                }
            }
            looped.clients.push(record.cost);
            for (started, mut statement) in record.statements {
                statement.start_offset = started.duration_since(origin);
                if let Ok(counters) = &statement.outcome {
                    self.count(counters, statement.latency);
                }
                looped.statements.push(statement);
            }
        }
        looped.answers = answers;
        looped
    }

    /// Runs `sql` `statements` times in a row on this target's own connection through its
    /// backend alone, nothing else in the loop: what the engine gives one client, the figure
    /// a runner's own loop is held to. Any failure, or a stop, ends it with the error.
    pub fn run_direct_loop(&mut self, sql: &str, statements: u64, format: &str) -> Result<DirectLoop> {
        crate::interrupt::check()?;
        let settings = Settings::new();
        let (mut engine_us, mut without_engine_time) = (0, 0);
        let started = Instant::now();
        for _ in 0..statements {
            let (_, counters) = self
                .backend
                .run(sql, &settings, format)
                .with_context(|| format!("statement failed: {}", one_line(sql)))?;
            match counters.elapsed_us {
                Some(us) => engine_us += us,
                None => without_engine_time += 1,
            }
        }
        let wall = started.elapsed();
        let time = &mut self.statement_time;
        time.statements += statements;
        time.client_us += u64::try_from(wall.as_micros()).unwrap_or(u64::MAX);
        time.engine_us += engine_us;
        time.without_engine_time += without_engine_time;
        Ok(DirectLoop { statements, wall })
    }
}

/// One client of [`Target::run_concurrently`], run in a thread of its own.
struct ClientRun<'a> {
    client: usize,
    runs_per_client: u32,
    sql: &'a str,
    format: &'a str,
    /// Set when a client's statement fails, so that the others stop at their next run.
    failed: &'a AtomicBool,
}

impl ClientRun<'_> {
    /// Runs the statement in a row on the client's connection, once every client has
    /// connected ([`Target::on_client_connections`]).
    fn run(
        self,
        backend: &mut dyn Backend,
        settings_of: &(impl Fn(usize, u32) -> Settings + Sync),
    ) -> Result<Vec<ClientOutput>> {
        let ClientRun { client, runs_per_client, sql, format, failed } = self;
        let mut outputs = Vec::new();
        for run in 0..runs_per_client {
            if failed.load(Ordering::SeqCst) {
                break;
            }
            crate::interrupt::check()?;
            let started = Instant::now();
            match backend.run(sql, &settings_of(client, run), format) {
                Ok((body, counters)) => outputs.push(ClientOutput {
                    client,
                    run,
                    output: Output { body, client_elapsed: started.elapsed(), counters },
                }),
                Err(error) => {
                    failed.store(true, Ordering::SeqCst);
                    return Err(
                        error.context(format!("client {client}, run {run}: statement failed: {}", one_line(sql)))
                    );
                }
            }
        }
        Ok(outputs)
    }
}

/// What ends each client's loop in [`Target::run_closed_loop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopBound {
    /// No statement starts after this long from the start line; one in flight then is
    /// finished and counted. Every client runs at least one statement, however short.
    Duration(Duration),
    /// This many statements in all, taken by the clients from one shared count, as
    /// `clickhouse-benchmark --iterations` takes them.
    Statements(u64),
}

/// The same bound for a level the load generator runs beside the engine.
impl From<LoopBound> for LoadBound {
    fn from(bound: LoopBound) -> LoadBound {
        match bound {
            LoopBound::Duration(duration) => LoadBound::Seconds(duration.as_secs_f64()),
            LoopBound::Statements(statements) => LoadBound::Statements(statements),
        }
    }
}

/// One statement of a closed loop: who ran it, which, when, how long, and how it ended.
#[derive(Debug, Clone)]
pub struct LoopStatement {
    /// The client, from 0.
    pub client: u32,
    /// The index of the statement in the loop's list.
    pub query: u32,
    /// When it started, from the loop's start (the first client released from the start line).
    pub start_offset: Duration,
    /// Wall time around the call, in this process; in an open loop, from the statement's
    /// scheduled start to its end.
    pub latency: Duration,
    /// In an open loop, how late it was sent against its schedule; `None` in a closed loop.
    pub schedule_lag: Option<Duration>,
    /// The result's counters, or the error in one line.
    pub outcome: std::result::Result<ResultCounters, String>,
}

/// What one client of a closed loop cost this process, besides its statements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientCost {
    pub client: u32,
    /// Statements it ran (completed or failed).
    pub statements: u64,
    /// Its thread's CPU time outside the engine calls (`CLOCK_THREAD_CPUTIME_ID` around the
    /// loop, less the same clock around each call): the runner's own work, the clock reads
    /// included. `None` where the clock cannot be read.
    pub runner_cpu: Option<Duration>,
}

/// Everything a closed loop ran: every statement (by client, then in its order), the
/// loop's wall time, what each client cost, and the first answer of each statement.
#[derive(Debug, Clone)]
pub struct ClosedLoop {
    pub statements: Vec<LoopStatement>,
    /// From the first client's release at the start line to the last client's end.
    pub wall: Duration,
    pub clients: Vec<ClientCost>,
    /// The first completed result of each statement of the list, in the requested format.
    pub answers: Vec<Option<String>>,
    /// Whether a stop was requested during the loop: the clients stopped before their next
    /// statement, and a statement cancelled by the stop is not among `statements`.
    pub interrupted: bool,
    /// An open loop's statements due within its bound (those not in `statements` were
    /// skipped, unsent when it ended); `None` for a closed loop.
    pub scheduled: Option<u64>,
}

/// A tight loop of one statement on a target's own connection, with nothing around the
/// calls ([`Target::run_direct_loop`]): the ceiling a runner is held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DirectLoop {
    pub statements: u64,
    pub wall: Duration,
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), or `None` where it cannot be read.
pub fn thread_cpu_time() -> Option<Duration> {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec for the call to fill.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    (status == 0)
        .then(|| Duration::new(u64::try_from(now.tv_sec).unwrap_or(0), u32::try_from(now.tv_nsec).unwrap_or(0)))
}

/// What one client of a closed loop needs besides its connection.
struct LoopClient<'a> {
    client: u32,
    statements: &'a [&'a str],
    /// The client's order of statement indexes, cycled.
    order: &'a [usize],
    bound: LoopBound,
    /// Statements taken so far, for [`LoopBound::Statements`], and an open loop's slots.
    taken: &'a AtomicU64,
    /// An open loop's schedule; `None` for a closed loop.
    schedule: Option<&'a Schedule>,
    settings: &'a Settings,
    format: &'a str,
}

/// An open loop's schedule: slot `n` starts `n x interval` after the origin, the moment
/// the first client left the start line.
struct Schedule {
    interval: Duration,
    origin: OnceLock<Instant>,
}

/// How long a client waiting for its slot sleeps at most between looks at a stop.
const STOP_LOOK: Duration = Duration::from_millis(50);

/// What a client's loop returns: its statements (with their start instants), its first
/// answers, its cost, and when it started and ended.
struct ClientRecord {
    statements: Vec<(Instant, LoopStatement)>,
    answers: Vec<Option<String>>,
    cost: ClientCost,
    started: Instant,
    ended: Instant,
    interrupted: bool,
}

impl LoopClient<'_> {
    /// Runs the client's statements in its order until the bound, on `backend`: the hot
    /// path of a throughput run, so it only reads clocks, calls the engine and appends to a
    /// vector (no tag, no settings, no parsing per statement).
    fn run(&self, backend: &mut dyn Backend, started: Instant) -> ClientRecord {
        let cpu_at_start = thread_cpu_time();
        let mut engine_cpu = Some(Duration::ZERO);
        let mut statements = Vec::with_capacity(1024);
        let mut answers: Vec<Option<String>> = vec![None; self.statements.len()];
        let mut interrupted = false;
        let deadline = match self.bound {
            LoopBound::Duration(duration) => Some(started + duration),
            LoopBound::Statements(_) => None,
        };
        let origin = self.schedule.map(|schedule| *schedule.origin.get_or_init(|| started));
        for (n, &query) in self.order.iter().cycle().enumerate() {
            if crate::interrupt::requested() {
                interrupted = true;
                break;
            }
            // An open loop's slot: when this statement is due.
            let scheduled = match (self.schedule, origin) {
                (Some(schedule), Some(origin)) => {
                    let slot = self.taken.fetch_add(1, Ordering::Relaxed);
                    let due = u32::try_from(slot).ok().and_then(|slot| schedule.interval.checked_mul(slot));
                    let Some(due) = due.and_then(|due| origin.checked_add(due)) else { break };
                    let past_bound = match self.bound {
                        // Due after the level, or due in it and still unsent at its end.
                        LoopBound::Duration(duration) => {
                            due >= origin + duration || Instant::now() >= origin + duration
                        }
                        LoopBound::Statements(total) => slot >= total,
                    };
                    if past_bound {
                        break;
                    }
                    if !wait_until(due) {
                        interrupted = true;
                        break;
                    }
                    Some(due)
                }
                _ => {
                    match (self.bound, deadline) {
                        (LoopBound::Duration(_), Some(deadline)) if n > 0 && Instant::now() >= deadline => break,
                        (LoopBound::Statements(total), _) if self.taken.fetch_add(1, Ordering::Relaxed) >= total => {
                            break;
                        }
                        _ => {}
                    }
                    None
                }
            };
            let cpu_before = thread_cpu_time();
            let start = Instant::now();
            let result = backend.run(self.statements[query], self.settings, self.format);
            // From the scheduled start in an open loop, so that the wait for a late slot counts.
            let latency = scheduled.map_or_else(|| start.elapsed(), |due| due.elapsed());
            let schedule_lag = scheduled.map(|due| start.saturating_duration_since(due));
            let cpu_after = thread_cpu_time();
            engine_cpu = engine_cpu
                .zip(cpu_before.zip(cpu_after))
                .map(|(sum, (before, after))| sum + after.saturating_sub(before));
            let outcome = match result {
                Ok((body, counters)) => {
                    if answers[query].is_none() {
                        answers[query] = Some(body);
                    }
                    Ok(counters)
                }
                // Cancelled by the stop: not a failure of the statement.
                Err(_) if crate::interrupt::requested() => {
                    interrupted = true;
                    break;
                }
                Err(error) => Err(one_line(&format!("{error:#}"))),
            };
            let query = u32::try_from(query).unwrap_or(u32::MAX);
            let statement = LoopStatement {
                client: self.client,
                query,
                start_offset: Duration::ZERO,
                latency,
                schedule_lag,
                outcome,
            };
            statements.push((start, statement));
        }
        let ended = Instant::now();
        let runner_cpu = thread_cpu_time()
            .zip(cpu_at_start)
            .zip(engine_cpu)
            .map(|((end, begin), engine)| end.saturating_sub(begin).saturating_sub(engine));
        let cost = ClientCost { client: self.client, statements: statements.len() as u64, runner_cpu };
        ClientRecord { statements, answers, cost, started, ended, interrupted }
    }
}

/// Sleeps until `due`, looking for a stop every [`STOP_LOOK`]; false when one came.
fn wait_until(due: Instant) -> bool {
    loop {
        if crate::interrupt::requested() {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(STOP_LOOK));
    }
}

/// Where the clients of [`Target::run_concurrently`] wait until all are connected: a
/// barrier that can be abandoned, so that a client that cannot connect (or a thread that
/// cannot start) releases the others instead of leaving them waiting.
struct StartLine {
    clients: usize,
    /// Clients arrived, and whether the start was abandoned.
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl StartLine {
    fn new(clients: usize) -> StartLine {
        StartLine { clients, state: Mutex::new((0, false)), changed: Condvar::new() }
    }

    /// Releases every client waiting and every later one: the run will not start.
    fn abandon(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.1 = true;
        }
        self.changed.notify_all();
    }
}

/// A client's place at the [`StartLine`]: dropped before it arrived (its connection
/// failed, or it panicked), it abandons the start.
struct Arrival<'a> {
    start: &'a StartLine,
    arrived: bool,
}

impl Arrival<'_> {
    /// Waits until every client has arrived (true) or the start was abandoned (false).
    fn wait_for_all(mut self) -> bool {
        self.arrived = true;
        let Ok(mut state) = self.start.state.lock() else { return false };
        state.0 += 1;
        self.start.changed.notify_all();
        while state.0 < self.start.clients && !state.1 {
            match self.start.changed.wait(state) {
                Ok(next) => state = next,
                Err(_) => return false,
            }
        }
        !state.1
    }
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        if !self.arrived {
            self.start.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_start_together_or_not_at_all() {
        // Every client arrives: all start.
        let start = StartLine::new(3);
        let started: Vec<bool> = std::thread::scope(|scope| {
            let handles: Vec<_> =
                (0..3).map(|_| scope.spawn(|| Arrival { start: &start, arrived: false }.wait_for_all())).collect();
            handles.into_iter().map(|handle| handle.join().unwrap()).collect()
        });
        assert_eq!(started, [true, true, true]);
        // One never arrives (its connection failed): the others are released, not started.
        let start = StartLine::new(3);
        let started: Vec<bool> = std::thread::scope(|scope| {
            let handles: Vec<_> =
                (0..2).map(|_| scope.spawn(|| Arrival { start: &start, arrived: false }.wait_for_all())).collect();
            drop(Arrival { start: &start, arrived: false });
            handles.into_iter().map(|handle| handle.join().unwrap()).collect()
        });
        assert_eq!(started, [false, false]);
    }
}

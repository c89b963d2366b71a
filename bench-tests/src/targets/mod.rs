//! Targets: the ClickHouse engines a scenario runs on, what each can do, and the one
//! place that names them.
//!
//! Every target is a [`Backend`] (run a statement, change database, keep settings for a
//! session) wrapped in a [`Target`], which offers the same few operations everywhere
//! ([`Target::run`], [`Target::execute`], [`Target::query_text`], and one statement from
//! several clients at once, [`Target::run_concurrently`]). What a scenario or the
//! measurement core may depend on is declared per kind in [`Capabilities`] (how statements
//! are measured, how datasets are provided, ...); callers branch on those, never on the
//! target's name. [`spec`] is the only code that maps a kind to its file.
//!
//! The API is blocking: the embedded engine is a synchronous C library, and the server
//! targets drive their async HTTP client on a private single-threaded runtime
//! ([`blocking_runtime`], which the Kubernetes client uses too).

pub mod chdb;
pub mod container;
pub mod eks;
pub mod embedded;
pub mod server;
pub mod worker;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use crate::interrupt::Interrupted;
use crate::settings::Settings;
use crate::sql::{one_line, statement_line};
use crate::stats::StatsSource;
use crate::storage_baseline::StorageBaseline;
use crate::target_info::{KubernetesDeployment, TargetInfo, TargetKind};

/// What the code needs to know about one kind of target: what it can do and how to open it.
#[derive(Clone, Copy)]
pub struct TargetSpec {
    pub capabilities: Capabilities,
    /// Connects to the engine with the session defaults in force. `storage` is where an
    /// in-process engine keeps its data; a server keeps its own and ignores it.
    pub open: fn(&Storage) -> Result<Box<dyn Backend>>,
    /// The cargo feature this build lacks for the kind (its opener's error), if any: a
    /// command line that can build itself again with it does so before any work.
    pub missing_feature: Option<MissingFeature>,
}

/// The one place kinds are named: each kind's capabilities and opener, declared in
/// its own file. A new target is a new file, a variant above and a line here.
pub fn spec(kind: TargetKind) -> TargetSpec {
    match kind {
        TargetKind::Embedded => {
            TargetSpec { capabilities: embedded::CAPABILITIES, open: embedded::open, missing_feature: None }
        }
        TargetKind::Container => {
            TargetSpec { capabilities: container::CAPABILITIES, open: container::open, missing_feature: None }
        }
        TargetKind::Url => TargetSpec { capabilities: server::CAPABILITIES, open: server::open, missing_feature: None },
        TargetKind::Eks => {
            TargetSpec { capabilities: eks::CAPABILITIES, open: eks::open, missing_feature: eks::MISSING_FEATURE }
        }
        // Not an engine: the spec of the kind it resolves to (asking Docker).
        TargetKind::Auto => spec(resolve_kind(kind)),
    }
}

/// A target this build was compiled without (its cargo feature off): the opener's error,
/// one line saying how to build with it. A command line that can build itself again with
/// `feature` on (`cargo xtask bench`) looks for it with `anyhow::Error::downcast_ref`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissingFeature {
    /// The chbench cargo feature the target needs (xtask has one of the same name).
    pub feature: &'static str,
    pub message: &'static str,
}

impl fmt::Display for MissingFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message)
    }
}

impl std::error::Error for MissingFeature {}

/// What a kind of target can do, declared by its file rather than inferred from its name.
/// Scenarios and the measurement core branch on these fields only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// How a measured statement's record is obtained. `measure` branches on it.
    pub stats_source: StatsSource,
    /// Whether settings put in force by `SET` stay for the following statements, so that
    /// a measurement window can hold the statement alone (settings applied before it,
    /// restored after). [`Target::with_session_settings`] refuses targets without it;
    /// they take settings per statement instead.
    pub session_settings_persist: bool,
    /// How a prepared dataset reaches a process. `dataset` branches on it.
    pub datasets: DatasetProvision,
    /// Whether the engine's caches can be dropped (`SYSTEM DROP ... CACHE`), which a cold
    /// (direct-I/O) run needs. [`crate::measure::drop_caches`] refuses targets without it.
    pub caches_droppable: bool,
    /// Whether the engine does its work in this process, so that this process's CPU time
    /// is the engine's rather than a server's elsewhere. The machine check branches on it.
    pub engine_in_process: bool,
    /// Whether statements from several clients run at once, and what a statement's record
    /// holds then. [`Target::run_concurrently`] and `measure_concurrently` branch on it.
    pub concurrent_queries: Concurrency,
    /// Whether chbench deploys the engine itself (`cargo xtask eks up` and `down`), so that a
    /// matrix brings a deployment up for each variant and `collect` gathers the runs made
    /// on one; a target that is there already (a library, a container, a URL) is not.
    pub deployed_by_chbench: bool,
}

impl Capabilities {
    /// How a statement's record is obtained while other clients' statements run at once:
    /// the target's own [`StatsSource`] when each statement's ProfileEvents are its own,
    /// the result's counters alone ([`StatsSource::ResultCounters`]) when they are not.
    /// A [`Concurrency::Serial`] target runs one client only, measured as always.
    pub fn concurrent_stats_source(&self) -> StatsSource {
        match self.concurrent_queries {
            Concurrency::Parallel { events_per_statement: false } => StatsSource::ResultCounters,
            Concurrency::Serial | Concurrency::Parallel { events_per_statement: true } => self.stats_source,
        }
    }
}

/// Whether statements from several clients run at once on a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Concurrency {
    /// One statement at a time (a client per connection would queue).
    Serial,
    /// Clients on connections of their own run at once. `events_per_statement`: whether each
    /// statement's ProfileEvents are its own while others run (servers: its query_log row; the
    /// embedded engine: no, `system.events` is process-wide).
    Parallel { events_per_statement: bool },
}

impl Concurrency {
    /// Refuses, in one line, what a concurrent run on a target of `kind` cannot be: no
    /// client or no run, or several clients on a target that runs one statement at a time.
    pub fn check_clients(self, kind: TargetKind, clients: usize, runs_per_client: u32) -> Result<()> {
        if clients == 0 || runs_per_client == 0 {
            bail!(
                "a concurrent run needs at least one client and one run per client ({clients} clients, \
                 {runs_per_client} runs asked for)"
            );
        }
        if self == Concurrency::Serial && clients > 1 {
            bail!(
                "target {kind} runs one statement at a time, so {clients} clients cannot run at once on it: use 1 \
                 client, or a target that runs statements in parallel"
            );
        }
        Ok(())
    }
}

/// How a prepared dataset is provided to the processes that use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetProvision {
    /// Built once in a folder of its own ([`Storage::Build`]); each process opens a
    /// hard-linked copy ([`Storage::CopyOf`]) and may change it freely.
    HardLinkedCopy,
    /// Built once into a keyed database on the server, shared read-only by every process.
    SharedDatabase,
}

/// Where an in-process engine keeps its data. Servers keep their own and ignore it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// This process's folder, empty when first opened.
    Scratch,
    /// This process's folder as a hard-linked copy of a prepared dataset folder.
    CopyOf(PathBuf),
    /// A folder of its own, kept after the target closes (building a dataset).
    Build(PathBuf),
}

/// One connected engine: what every kind of target implements (in its own file).
pub trait Backend {
    /// Runs one statement with statement-level `settings` (in force for it alone),
    /// returning its output in `format` and the counters the engine reported with it.
    fn run(&mut self, sql: &str, settings: &Settings, format: &str) -> Result<(String, ResultCounters)>;

    /// The folder of this machine an in-process engine keeps the target's data in; `None`
    /// for an engine elsewhere (a server).
    fn storage_folder(&self) -> Option<PathBuf> {
        None
    }

    /// Makes an existing database the current one for the following statements.
    fn use_database(&mut self, name: &str) -> Result<()>;

    /// Puts `settings` in force for the following statements. Only for targets whose
    /// [`Capabilities::session_settings_persist`] is true.
    fn apply_session_settings(&mut self, _settings: &Settings) -> Result<()> {
        bail!("this target does not keep settings between statements; pass them with each statement")
    }

    /// Puts the session's values of `settings` back in force after
    /// [`Backend::apply_session_settings`].
    fn restore_session_settings(&mut self, _settings: &Settings) -> Result<()> {
        bail!("this target does not keep settings between statements; pass them with each statement")
    }

    /// Where the engine is, for output and results: a library path, an image, or a URL
    /// without credentials.
    fn endpoint(&self) -> String;

    /// What fio measured on the volume the engine keeps its data on
    /// ([`crate::storage_baseline`]): `Ok(None)` for a target that measures none (the
    /// default); an error says why one the target should have cannot be read.
    fn storage_baseline(&mut self) -> Result<Option<StorageBaseline>> {
        Ok(None)
    }

    /// The Kubernetes deployment the engine runs in, for results: `None` for a target
    /// that is not one (the default).
    fn deployment(&self) -> Option<KubernetesDeployment> {
        None
    }

    /// How a concurrent client gets a connection of its own to the same engine, with the
    /// session defaults in force (its database is set by the caller). Only for targets whose
    /// [`Capabilities::concurrent_queries`] is [`Concurrency::Parallel`].
    fn client_opener(&self) -> Result<ClientOpener> {
        bail!("this target cannot open a connection for another client")
    }
}

/// Opens another connection to a target's engine, from the thread of the client that
/// uses it (a backend need not be `Send`: the embedded engine's connection is a raw
/// handle, a server's client runs on a runtime of its own thread).
pub type ClientOpener = Box<dyn Fn() -> Result<Box<dyn Backend>> + Send + Sync>;

/// One statement that one client of [`Target::run_concurrently`] ran.
#[derive(Debug, Clone)]
pub struct ClientOutput {
    /// The client, from 0.
    pub client: usize,
    /// The client's run, from 0: the statement's place in its client's series.
    pub run: u32,
    pub output: Output,
}

/// What one statement returned.
#[derive(Debug, Clone)]
pub struct Output {
    /// The result in the requested format (empty for DDL and INSERT).
    pub body: String,
    /// Wall time seen by this process around the call.
    pub client_elapsed: Duration,
    /// Counters the engine reported with the result.
    pub counters: ResultCounters,
}

/// Counters that come back with a result: the engine's own for the embedded target,
/// the `X-ClickHouse-Summary` header for servers. Missing values are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultCounters {
    pub read_rows: Option<u64>,
    pub read_bytes: Option<u64>,
    pub result_rows: Option<u64>,
    pub elapsed_us: Option<u64>,
    pub memory_usage: Option<u64>,
}

/// The statements a target ran, summed: the engine's own durations and this process's
/// wall time around them, so that a run can tell its time in statements from the time
/// it spends around them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatementTime {
    /// Statements that completed.
    pub statements: u64,
    /// The engine's durations of those that reported one.
    pub engine_us: u64,
    /// Wall time around each call, in this process.
    pub client_us: u64,
    /// Statements whose engine reported no duration (their client time is in `client_us`).
    pub without_engine_time: u64,
}

/// A connected target, working in one database.
pub struct Target {
    backend: Box<dyn Backend>,
    capabilities: Capabilities,
    info: TargetInfo,
    database: String,
    statement_time: StatementTime,
    /// Scenario databases this process made on a shared server, dropped with the target.
    scenario_databases: Vec<String>,
}

impl Target {
    /// Wraps an opened backend, checking that it is ClickHouse and reading its version.
    fn from_backend(kind: TargetKind, capabilities: Capabilities, backend: Box<dyn Backend>) -> Result<Target> {
        let endpoint = backend.endpoint();
        let deployment = backend.deployment();
        let mut target = Target {
            backend,
            capabilities,
            info: TargetInfo { kind, engine_version: String::new(), endpoint, deployment },
            database: "default".to_string(),
            statement_time: StatementTime::default(),
            scenario_databases: Vec::new(),
        };
        let version = target.query_text("SELECT version()").context("cannot read the engine version")?;
        target.info.engine_version = supported_version(&target.info.endpoint, &version)?.text;
        Ok(target)
    }

    pub fn info(&self) -> &TargetInfo {
        &self.info
    }

    /// The embedded engine of version `engine` in a worker process of its own, on a
    /// hard-linked copy of this target's folder, with this target's database current: the
    /// second engine an A/B run of engine versions measures beside the first
    /// (ARCHITECTURE.md, "Engine versions"). The worker is this process's executable
    /// (`cargo xtask engine-worker`). Refused for a target whose engine keeps no folder on
    /// this machine. The copy is taken as the worker opens; nothing may write to the folder
    /// meanwhile (stop merges first).
    pub fn engine_beside(&self, engine: &'static crate::engine::EngineVersion) -> Result<Target> {
        let Some(folder) = self.backend.storage_folder() else {
            bail!(
                "target {} keeps its data on another machine: a second engine version beside it needs the embedded \
                target",
                self.info.kind
            );
        };
        let command = worker::WorkerCommand::this_executable(&["engine-worker"])?;
        let mut worker = open_worker(&command, engine, &Storage::CopyOf(folder))?;
        worker.use_database(&self.database)?;
        Ok(worker)
    }

    /// What this target can do, as its kind declares.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// [`Capabilities::stats_source`], the measurement core's branch point.
    pub fn stats_source(&self) -> StatsSource {
        self.capabilities.stats_source
    }

    /// [`Capabilities::engine_in_process`], the machine check's branch point.
    pub fn engine_in_process(&self) -> bool {
        self.capabilities.engine_in_process
    }

    /// The storage baseline of the target's volume, as [`Backend::storage_baseline`]
    /// says: a results bundle records it, or why it is unknown.
    pub fn storage_baseline(&mut self) -> Result<Option<StorageBaseline>> {
        self.backend.storage_baseline().context("cannot read the storage baseline")
    }

    /// The database unqualified table names refer to.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// Makes an empty database `name` (dropped first if it exists) the current one. On a
    /// server other processes use, `name` must be this process's alone (a scenario's is
    /// [`Target::use_scenario_database`]'s).
    pub fn use_fresh_database(&mut self, name: &str) -> Result<()> {
        if !crate::sql::is_identifier(name) {
            bail!("{name:?} is not a usable database name (a letter or _, then letters, digits and _)");
        }
        self.execute(&format!("DROP DATABASE IF EXISTS {name} SYNC"))?;
        self.execute(&format!("CREATE DATABASE {name}"))?;
        self.use_database(name)
    }

    /// Makes an empty database for `scenario` the current one, named by
    /// [`scenario_database_name`]: after the scenario where the engine's storage is this
    /// process's own, after the scenario and this process on a server that processes share
    /// (two processes running one scenario at once must not drop each other's tables). On
    /// such a server it is dropped when the target is; elsewhere it goes with the process's
    /// storage.
    pub fn use_scenario_database(&mut self, scenario: &str) -> Result<()> {
        let name = scenario_database_name(scenario, self.capabilities.datasets, &DatabaseOwner::current()?);
        self.use_fresh_database(&name)?;
        if self.capabilities.datasets == DatasetProvision::SharedDatabase && !self.scenario_databases.contains(&name) {
            self.scenario_databases.push(name);
        }
        Ok(())
    }

    /// Makes an existing database the current one.
    pub fn use_database(&mut self, name: &str) -> Result<()> {
        self.backend.use_database(name).with_context(|| format!("cannot use database {name}"))?;
        self.database = name.to_string();
        Ok(())
    }

    /// Runs one statement with statement-level `settings`, returning its output in
    /// `format`. Session defaults (see [`Settings::session_defaults`]) stay in force
    /// unless `settings` overrides them, and are back in force afterwards.
    pub fn run(&mut self, sql: &str, settings: &Settings, format: &str) -> Result<Output> {
        let started = Instant::now();
        let (body, counters) = self
            .backend
            .run(sql, settings, format)
            .with_context(|| format!("statement failed: {}", statement_line(sql)))?;
        let output = Output { body, client_elapsed: started.elapsed(), counters };
        self.count_statement(&output);
        Ok(output)
    }

    /// Adds a completed statement to [`Target::statement_time`].
    fn count_statement(&mut self, output: &Output) {
        self.count(&output.counters, output.client_elapsed);
    }

    /// Adds a completed statement, by its counters and its wall time, to
    /// [`Target::statement_time`].
    fn count(&mut self, counters: &ResultCounters, client_elapsed: Duration) {
        let time = &mut self.statement_time;
        time.statements += 1;
        time.client_us += u64::try_from(client_elapsed.as_micros()).unwrap_or(u64::MAX);
        match counters.elapsed_us {
            Some(us) => time.engine_us += us,
            None => time.without_engine_time += 1,
        }
    }

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
        self.capabilities.concurrent_queries.check_clients(self.info.kind, clients, 1)?;
        if orders.len() != clients
            || orders.iter().any(|order| order.is_empty() || order.iter().any(|&i| i >= statements.len()))
        {
            bail!("a closed loop needs one non-empty order of the {} statements per client", statements.len());
        }
        let taken = AtomicU64::new(0);
        let client_of = |client: usize| LoopClient {
            client: u32::try_from(client).unwrap_or(u32::MAX),
            statements,
            order: &orders[client],
            bound,
            taken: &taken,
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
        Ok(self.closed_loop_of(records, statements.len()))
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

    /// Every statement this target ran so far, summed.
    pub fn statement_time(&self) -> StatementTime {
        self.statement_time
    }

    /// Runs a statement whose result is not needed (DDL, INSERT, SYSTEM).
    pub fn execute(&mut self, sql: &str) -> Result<()> {
        self.run(sql, &Settings::new(), "TabSeparated").map(|_| ())
    }

    /// Runs a query and returns its result as raw tab-separated text.
    pub fn query_text(&mut self, sql: &str) -> Result<String> {
        Ok(self.run(sql, &Settings::new(), "TabSeparatedRaw")?.body)
    }

    /// Runs a query and parses each line of its `JSONEachRow` output into `T`.
    pub fn query_rows<T: serde::de::DeserializeOwned>(&mut self, sql: &str) -> Result<Vec<T>> {
        Ok(self.query_rows_with_counters(sql)?.0)
    }

    /// [`Target::query_rows`], with the counters the engine reported for the query.
    fn query_rows_with_counters<T: serde::de::DeserializeOwned>(
        &mut self,
        sql: &str,
    ) -> Result<(Vec<T>, ResultCounters)> {
        // Unquoted 64-bit integers, so that they parse as numbers.
        let settings = Settings::new().with("output_format_json_quote_64bit_integers", 0);
        let output = self.run(sql, &settings, "JSONEachRow")?;
        let rows = output
            .body
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| {
                serde_json::from_str(line).with_context(|| format!("unexpected row {line:?} from: {}", one_line(sql)))
            })
            .collect::<Result<_>>()?;
        Ok((rows, output.counters))
    }

    /// Reads `system.events`: the embedded engine's ProfileEvents source. The read's own
    /// storage counters come with it, since reading the table adds to `SelectedRows`.
    pub fn read_events(&mut self) -> Result<EventsSnapshot> {
        #[derive(Deserialize)]
        struct Event {
            name: String,
            value: u64,
        }
        let (events, read_counters) =
            self.query_rows_with_counters::<Event>("SELECT name, value FROM system.events")?;
        let values = events.into_iter().map(|event| (event.name, event.value)).collect();
        Ok(EventsSnapshot { values, read_counters })
    }

    /// Runs `measured` with `settings` in force for every statement it runs, then
    /// restores the session. Only targets whose settings persist between statements
    /// ([`Capabilities::session_settings_persist`]) can; the others take settings per
    /// statement: pass them to [`Target::run`] instead.
    pub fn with_session_settings<T>(
        &mut self,
        settings: &Settings,
        measured: impl FnOnce(&mut Target) -> Result<T>,
    ) -> Result<T> {
        if !self.capabilities.session_settings_persist {
            bail!("target {} does not keep settings between statements; pass them with each statement", self.info.kind);
        }
        self.backend.apply_session_settings(settings)?;
        let outcome = measured(self);
        let restored = self.backend.restore_session_settings(settings);
        // The measured work's own error first; a failed restore matters when it ran.
        let value = outcome?;
        restored?;
        Ok(value)
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

/// One statement of a closed loop: who ran it, which, when, how long, and how it ended.
#[derive(Debug, Clone)]
pub struct LoopStatement {
    /// The client, from 0.
    pub client: u32,
    /// The index of the statement in the loop's list.
    pub query: u32,
    /// When it started, from the loop's start (the first client released from the start line).
    pub start_offset: Duration,
    /// Wall time around the call, in this process.
    pub latency: Duration,
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
    /// Statements taken so far, for [`LoopBound::Statements`].
    taken: &'a AtomicU64,
    settings: &'a Settings,
    format: &'a str,
}

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
        for (n, &query) in self.order.iter().cycle().enumerate() {
            if crate::interrupt::requested() {
                interrupted = true;
                break;
            }
            match (self.bound, deadline) {
                (LoopBound::Duration(_), Some(deadline)) if n > 0 && Instant::now() >= deadline => break,
                (LoopBound::Statements(total), _) if self.taken.fetch_add(1, Ordering::Relaxed) >= total => break,
                _ => {}
            }
            let cpu_before = thread_cpu_time();
            let start = Instant::now();
            let result = backend.run(self.statements[query], self.settings, self.format);
            let latency = start.elapsed();
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
            let statement =
                LoopStatement { client: self.client, query, start_offset: Duration::ZERO, latency, outcome };
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

impl Drop for Target {
    /// Drops the scenario databases this process made on a shared server, where nothing
    /// else would (their names are this process's).
    fn drop(&mut self) {
        for database in std::mem::take(&mut self.scenario_databases) {
            if let Err(error) = self.execute(&format!("DROP DATABASE IF EXISTS {database} SYNC")) {
                crate::say!("chbench: cannot drop the scenario database {database}: {error:#}");
            }
        }
    }
}

/// The database a scenario works in: `scenario` where the engine's storage is this
/// process's own (datasets as hard-linked copies), `<scenario>__run<run>_p<pid>` on a
/// server that processes share (datasets as shared databases), `owner` saying which run
/// and process (see [`DatabaseOwner`]).
pub fn scenario_database_name(scenario: &str, datasets: DatasetProvision, owner: &DatabaseOwner) -> String {
    match datasets {
        DatasetProvision::HardLinkedCopy => scenario.to_string(),
        DatasetProvision::SharedDatabase => format!("{scenario}{}", owner.suffix()),
    }
}

/// Whose a scenario database on a shared server is: the end of its name,
/// `__run<run>_p<pid>`. The run is the first [`RUN_DIGITS`] hex digits of nextest's run
/// id (every test process of a `cargo nextest run` has the same; 48 random bits, so two
/// runs on one server do not meet), or outside nextest random digits of the process's
/// own. A run's test processes all run on its runner's machine, so within the run the pid
/// says whether the owner still runs; across runs it says nothing (another machine may
/// share a `url` or `eks` server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseOwner {
    /// [`RUN_DIGITS`] lowercase hex digits.
    pub run: String,
    pub pid: u32,
}

/// How many hex digits of a run id a scenario database's name carries.
pub const RUN_DIGITS: usize = 12;
const RUN_MARK: &str = "__run";

impl DatabaseOwner {
    /// This process: its nextest run's and its pid, the same for the whole process.
    pub fn current() -> Result<DatabaseOwner> {
        static OWN_RUN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        let run = match container::nextest_run_id()? {
            Some(run_id) => run_id.simple().to_string()[..RUN_DIGITS].to_string(),
            // A run of its own: no other process shares it.
            None => OWN_RUN.get_or_init(|| uuid::Uuid::new_v4().simple().to_string()[..RUN_DIGITS].to_string()).clone(),
        };
        Ok(DatabaseOwner { run, pid: std::process::id() })
    }

    /// `__run<run>_p<pid>`, what scenario databases' names end with.
    fn suffix(&self) -> String {
        format!("{RUN_MARK}{}_p{}", self.run, self.pid)
    }

    /// The owner a scenario database's name names; `None` for a name not of the pattern
    /// (or not an identifier, which no scenario database is).
    pub fn of_database(name: &str) -> Option<DatabaseOwner> {
        let at = name.rfind(RUN_MARK).filter(|&at| at > 0 && crate::sql::is_identifier(name))?;
        let (run, pid) = name[at + RUN_MARK.len()..].split_once("_p")?;
        let is_hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
        if run.len() != RUN_DIGITS || !run.chars().all(is_hex) || pid.starts_with('0') {
            return None;
        }
        // Digits alone: `parse` would take a sign.
        let pid = pid.chars().all(|c| c.is_ascii_digit()).then(|| pid.parse().ok()).flatten()?;
        Some(DatabaseOwner { run: run.to_string(), pid })
    }
}

/// Whether the database `name` is a scenario database left by a process of `current`'s
/// run that has ended (a killed test), which no process can still use: of the pattern, of
/// this run, not this process, and its pid running nowhere on this machine
/// (`pid_runs`). Another run's is never judged left behind: its processes may run on
/// another machine.
pub fn is_left_behind(name: &str, current: &DatabaseOwner, pid_runs: impl Fn(u32) -> bool) -> bool {
    DatabaseOwner::of_database(name)
        .is_some_and(|owner| owner.run == current.run && owner.pid != current.pid && !pid_runs(owner.pid))
}

/// Drops the scenario databases [`is_left_behind`] judges left behind on this target's
/// server, once per process. Best effort: what it cannot list or drop is said on stderr
/// and left for a later open.
fn drop_left_behind_databases(target: &mut Target) {
    static SWEPT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if SWEPT.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let swept = DatabaseOwner::current().and_then(|current| {
        let names =
            target.query_text(&format!("SELECT name FROM system.databases WHERE position(name, '{RUN_MARK}') > 0"))?;
        for name in names.lines().filter(|name| is_left_behind(name, &current, container::pid_runs)) {
            target.execute(&format!("DROP DATABASE IF EXISTS {name} SYNC"))?;
            crate::say!("chbench: dropped database {name}: the test process of this run that made it has ended");
        }
        Ok(())
    });
    if let Err(error) = swept {
        crate::say!("chbench: cannot drop scenario databases left by ended processes: {error:#}");
    }
}

/// The oldest ClickHouse release (year, month) this tool supports: 24.3, the first with
/// the userspace page cache, which every cold run drops (`SYSTEM DROP PAGE CACHE` in
/// [`crate::measure::CACHE_DROPS`]); a cold run on an older server would read a warm
/// cache. What is newer is left out where the server lacks it, since that changes no
/// measurement: the query condition cache (25.3; nothing to drop or turn off) and
/// `use_skip_indexes_on_data_read` (25.9; without it skip indexes apply while planning,
/// the mode the session pins). The rest it relies on is older (README "Choosing a
/// target" lists it): `log_comment` and its `system.query_log` column,
/// `EXPLAIN indexes = 1, json = 1`, the `ProfileEvents` map column, the query cache.
pub const OLDEST_SUPPORTED: (u32, u32) = (24, 3);

/// Why [`OLDEST_SUPPORTED`] is the floor, as the refusal says it.
const FLOOR_REASON: &str = "a cold run drops the userspace page cache, which came in 24.3";

/// A ClickHouse version as `SELECT version()` answers it: `26.7.2.1`, or a vendor's
/// `24.8.14.10459.altinitystable` (numbers first, then a tag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClickHouseVersion {
    /// As the engine printed it, trimmed.
    pub text: String,
    /// The leading numeric parts, at least two (year and month).
    pub numbers: Vec<u32>,
}

impl ClickHouseVersion {
    /// `None` when `answer` is not a version (some other HTTP server answered).
    pub fn parse(answer: &str) -> Option<ClickHouseVersion> {
        let text = answer.trim();
        if text.lines().count() != 1 {
            return None;
        }
        let numbers: Vec<u32> = text
            .split('.')
            .map_while(|part| part.chars().all(|c| c.is_ascii_digit()).then(|| part.parse().ok()).flatten())
            .collect();
        (numbers.len() >= 2).then(|| ClickHouseVersion { text: text.to_string(), numbers })
    }

    /// Whether it is [`OLDEST_SUPPORTED`] or newer.
    pub fn is_supported(&self) -> bool {
        self.is_at_least(OLDEST_SUPPORTED)
    }

    /// Whether it is the release `(year, month)` or newer.
    pub fn is_at_least(&self, (year, month): (u32, u32)) -> bool {
        (self.numbers[0], self.numbers[1]) >= (year, month)
    }
}

/// The version in `answer` (to `SELECT version()` at `endpoint`), refusing in one line
/// an answer that is no version and a release older than [`OLDEST_SUPPORTED`].
pub fn supported_version(endpoint: &str, answer: &str) -> Result<ClickHouseVersion> {
    let Some(version) = ClickHouseVersion::parse(answer) else {
        bail!(
            "{endpoint} is not ClickHouse: it answered `SELECT version()` with {:?}, not a ClickHouse version; is \
             it a ClickHouse HTTP port (8123 by default)?",
            one_line(answer).chars().take(60).collect::<String>()
        );
    };
    if !version.is_supported() {
        let (year, month) = OLDEST_SUPPORTED;
        bail!(
            "ClickHouse {} at {endpoint} is older than the oldest this tool supports ({year}.{month}): \
             {FLOOR_REASON}; upgrade the server to {year}.{month} or newer, or choose another target with \
             CHBENCH_TARGET",
            version.text
        );
    }
    Ok(version)
}

/// `system.events` at one moment, and what reading it cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventsSnapshot {
    pub values: BTreeMap<String, u64>,
    pub read_counters: ResultCounters,
}

/// Opens the target chosen by `CHBENCH_TARGET` and prints which one it is.
pub fn open_target() -> Result<Target> {
    open_target_of_kind(TargetKind::from_env()?)
}

/// The kind to use: `auto` becomes `container` or `embedded` by asking Docker.
pub fn resolve_kind(kind: TargetKind) -> TargetKind {
    match kind {
        TargetKind::Auto => kind.resolve(container::docker_answers()),
        chosen => chosen,
    }
}

/// Opens a target of the given kind (`auto` asks Docker first) on this process's scratch
/// storage and prints which one it is.
pub fn open_target_of_kind(kind: TargetKind) -> Result<Target> {
    open_target_on(kind, &Storage::Scratch)
}

/// Opens a target of the given kind (`auto` asks Docker first) with `storage` for an
/// in-process engine's data, and prints which one it is.
pub fn open_target_on(kind: TargetKind, storage: &Storage) -> Result<Target> {
    let target = open_unannounced(kind, storage)?;
    announce(target.info());
    Ok(target)
}

/// The targets this process has named on stderr.
static ANNOUNCED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Names `info`'s target on stderr, once a process: a dataset built on one engine and
/// opened as a copy on the same engine is one target to the user, not two.
fn announce(info: &TargetInfo) {
    let line = info.to_string();
    let first = ANNOUNCED.lock().map_or(true, |mut named| {
        let first = !named.contains(&line);
        if first {
            named.push(line.clone());
        }
        first
    });
    if first {
        crate::say!("chbench: {line}");
    }
}

/// [`open_target_on`] without the line it prints.
fn open_unannounced(kind: TargetKind, storage: &Storage) -> Result<Target> {
    let kind = resolve_kind(kind);
    open_backend(kind, (spec(kind).open)(storage)?)
}

/// The one way an opened backend becomes a [`Target`]: checked to be ClickHouse, its
/// version read, and, on a server that processes share, the scenario databases killed
/// processes of this run left behind dropped. Every opener ends here; a kind's own
/// opener with arguments of its own (the eks target for a given namespace) calls it
/// directly.
pub fn open_backend(kind: TargetKind, backend: Box<dyn Backend>) -> Result<Target> {
    let capabilities = spec(kind).capabilities;
    let mut target = Target::from_backend(kind, capabilities, backend)?;
    if capabilities.datasets == DatasetProvision::SharedDatabase {
        drop_left_behind_databases(&mut target);
    }
    Ok(target)
}

/// A target on a worker process that loads `engine` on `storage` ([`worker::WorkerBackend`]),
/// started by `command`: the embedded engine in another process, with the worker's
/// capabilities, checked to report `engine`'s version. How a process that has one engine
/// version loaded runs statements on another.
pub fn open_worker(
    command: &worker::WorkerCommand,
    engine: &'static crate::engine::EngineVersion,
    storage: &Storage,
) -> Result<Target> {
    let progress = |line: &str| crate::say!("chbench: {line}");
    let backend = worker::WorkerBackend::spawn(command, engine, storage, &progress)?;
    let target = Target::from_backend(TargetKind::Embedded, worker::CAPABILITIES, Box::new(backend))?;
    if target.info.engine_version != engine.clickhouse_version {
        bail!(
            "the engine worker for engine {} reports ClickHouse {}, not the pinned {} ({})",
            engine.npm_version,
            target.info.engine_version,
            engine.clickhouse_version,
            target.info.endpoint
        );
    }
    announce(target.info());
    Ok(target)
}

/// The engine version of `kind`, from a target opened on scratch storage and closed at
/// once (so that an in-process engine can open a dataset's folder next), without the
/// line [`open_target_on`] prints.
pub fn engine_version_of(kind: TargetKind) -> Result<String> {
    Ok(open_unannounced(kind, &Storage::Scratch)?.info().engine_version.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the feature the kind still parses (CHBENCH_TARGET=eks is no typo), and
    /// opening it says how to build with it.
    #[cfg(not(feature = "eks"))]
    #[test]
    fn without_the_eks_feature_the_eks_target_says_how_to_build_with_it() {
        let error = open_target_of_kind(TargetKind::Eks).err().expect("opened without the feature");
        let missing = error.downcast_ref::<MissingFeature>().expect("not a MissingFeature");
        assert_eq!(missing.feature, "eks");
        assert_eq!(
            error.to_string(),
            "target eks needs chbench's eks feature: run the tests with `cargo nextest run --features chbench/eks` \
             (`cargo xtask bench --target eks` turns it on itself)"
        );
    }

    #[test]
    fn each_kind_declares_the_capabilities_the_docs_describe() {
        let embedded = spec(TargetKind::Embedded).capabilities;
        assert_eq!(
            embedded,
            Capabilities {
                stats_source: StatsSource::ResultAndEventsDelta,
                session_settings_persist: true,
                datasets: DatasetProvision::HardLinkedCopy,
                caches_droppable: true,
                engine_in_process: true,
                // Connections on the process's one folder run at once, but system.events
                // is process-wide: a statement's events delta would hold the others'.
                concurrent_queries: Concurrency::Parallel { events_per_statement: false },
                deployed_by_chbench: false,
            }
        );
        assert_eq!(embedded.concurrent_stats_source(), StatsSource::ResultCounters);
        let url = spec(TargetKind::Url).capabilities;
        assert_eq!(
            url,
            Capabilities {
                stats_source: StatsSource::QueryLog,
                session_settings_persist: false,
                datasets: DatasetProvision::SharedDatabase,
                caches_droppable: true,
                engine_in_process: false,
                concurrent_queries: Concurrency::Parallel { events_per_statement: true },
                deployed_by_chbench: false,
            }
        );
        assert_eq!(url.concurrent_stats_source(), StatsSource::QueryLog);
        // The container and the eks pod are measured as any server is; the pod is one
        // chbench deploys.
        assert_eq!(spec(TargetKind::Container).capabilities, url);
        assert_eq!(spec(TargetKind::Eks).capabilities, Capabilities { deployed_by_chbench: true, ..url });
        // An events delta cannot tell apart statements that run at once.
        for kind in [TargetKind::Embedded, TargetKind::Url, TargetKind::Container, TargetKind::Eks] {
            assert_ne!(spec(kind).capabilities.concurrent_stats_source(), StatsSource::ResultAndEventsDelta, "{kind}");
        }
    }

    #[test]
    fn a_serial_target_refuses_several_clients_in_one_line() {
        let error = Concurrency::Serial.check_clients(TargetKind::Url, 4, 3).unwrap_err().to_string();
        assert_eq!(
            error,
            "target url runs one statement at a time, so 4 clients cannot run at once on it: use 1 client, or a \
             target that runs statements in parallel"
        );
        assert!(Concurrency::Serial.check_clients(TargetKind::Url, 1, 3).is_ok());
        let parallel = Concurrency::Parallel { events_per_statement: false };
        assert!(parallel.check_clients(TargetKind::Embedded, 16, 1).is_ok());
        for (clients, runs) in [(0, 1), (4, 0)] {
            let error = parallel.check_clients(TargetKind::Embedded, clients, runs).unwrap_err().to_string();
            assert!(error.starts_with("a concurrent run needs at least one client and one run per client"), "{error}");
        }
    }

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

    #[test]
    fn only_a_version_counts_as_a_clickhouse_answer() {
        let text = |answer: &str| ClickHouseVersion::parse(answer).map(|version| version.text);
        assert_eq!(text("26.7.2.1\n").as_deref(), Some("26.7.2.1"));
        assert_eq!(text("18.16.1").as_deref(), Some("18.16.1"));
        let vendor = ClickHouseVersion::parse("24.8.14.10459.altinitystable").unwrap();
        assert_eq!(vendor.numbers, [24, 8, 14, 10459]);
        for answer in ["<html><body>It works</body></html>", "", "26", "26..1", "v26.7", "26.7\n26.8", "99999999999.1"]
        {
            assert_eq!(text(answer), None, "{answer}");
        }
    }

    #[test]
    fn versions_compare_by_year_then_month() {
        let supported = |answer: &str| ClickHouseVersion::parse(answer).unwrap().is_supported();
        assert_eq!(OLDEST_SUPPORTED, (24, 3));
        for answer in ["24.3.1.1", "24.3", "24.8.14.10459.altinitystable", "24.10.1.1", "26.7.2.1", "100.1"] {
            assert!(supported(answer), "{answer}");
        }
        // 24.10 is newer than 24.3: numbers, not text, are compared.
        for answer in ["24.2.9.99", "23.12.1.1", "18.16.1", "3.99"] {
            assert!(!supported(answer), "{answer}");
        }
    }

    #[test]
    fn an_old_server_is_named_with_its_version_the_endpoint_and_the_floor() {
        let error = supported_version("http://127.0.0.1:8123", "18.16.1\n").unwrap_err().to_string();
        assert!(
            error.starts_with(
                "ClickHouse 18.16.1 at http://127.0.0.1:8123 is older than the oldest this tool supports (24.3): "
            ),
            "{error}"
        );
        assert!(error.contains("upgrade the server to 24.3 or newer"), "{error}");
        let error = supported_version("http://127.0.0.1:8123", "<!DOCTYPE HTML>").unwrap_err().to_string();
        assert!(error.starts_with("http://127.0.0.1:8123 is not ClickHouse: "), "{error}");
    }

    #[test]
    fn scenario_databases_are_this_processs_own_on_a_shared_server() {
        let owner = DatabaseOwner::current().unwrap();
        assert_eq!(owner, DatabaseOwner::current().unwrap(), "one owner for the whole process");
        assert_eq!(owner.pid, std::process::id());
        assert_eq!(owner.run.len(), RUN_DIGITS);
        match container::nextest_run_id().unwrap() {
            // Every test process of this run names the same run.
            Some(run_id) => assert!(run_id.simple().to_string().starts_with(&owner.run), "{owner:?}"),
            None => assert!(owner.run.chars().all(|c| c.is_ascii_hexdigit()), "{owner:?}"),
        }
        // The engine's storage is this process's own: the scenario's name as it is.
        assert_eq!(
            scenario_database_name("measure_agreement", DatasetProvision::HardLinkedCopy, &owner),
            "measure_agreement"
        );
        // Two processes running one scenario on one server: two databases.
        let here = scenario_database_name("measure_agreement", DatasetProvision::SharedDatabase, &owner);
        let other = DatabaseOwner { run: "1f79aa0d4ec8".to_string(), pid: 7 };
        let there = scenario_database_name("measure_agreement", DatasetProvision::SharedDatabase, &other);
        assert_eq!(here, format!("measure_agreement__run{}_p{}", owner.run, owner.pid));
        assert_eq!(there, "measure_agreement__run1f79aa0d4ec8_p7");
        assert_ne!(here, there);
        assert!(crate::sql::is_identifier(&here), "{here}");
        // The name says whose it is.
        assert_eq!(DatabaseOwner::of_database(&here), Some(owner));
        assert_eq!(DatabaseOwner::of_database(&there), Some(other.clone()));
        assert_eq!(DatabaseOwner::of_database("a__run_p__run1f79aa0d4ec8_p7"), Some(other));
        // Every kind of server target shares its datasets, so every one gets the suffix.
        for kind in [TargetKind::Url, TargetKind::Container, TargetKind::Eks] {
            assert_eq!(spec(kind).capabilities.datasets, DatasetProvision::SharedDatabase);
        }
    }

    #[test]
    fn only_names_of_the_pattern_name_an_owner() {
        for name in [
            "measure_agreement",
            "measure_agreement_p7_0badcafe",
            "__run1f79aa0d4ec8_p7",
            "logs__run1f79aa0d4ec8_p",
            "logs__run1f79aa0d4ec8_p07",
            "logs__run1f79aa0d4ec8_p+7",
            "logs__run1f79aa0d4ec8_p7x",
            "logs__run1f79aa0d4ec_p7",
            "logs__run1F79AA0D4EC8_p7",
            "logs__run1f79aa0d4ec8_p99999999999",
            "logs-x__run1f79aa0d4ec8_p7",
            "logs__run1f79aa0d4ec8_p7__run",
        ] {
            assert_eq!(DatabaseOwner::of_database(name), None, "{name}");
        }
    }

    #[test]
    fn only_an_ended_process_of_this_run_leaves_a_database_behind() {
        let current = DatabaseOwner { run: "1f79aa0d4ec8".to_string(), pid: 100 };
        let ended = "logs__run1f79aa0d4ec8_p7";
        assert!(is_left_behind(ended, &current, |_| false), "an ended test process of this run");
        assert!(!is_left_behind(ended, &current, |_| true), "its pid still runs (maybe a later process)");
        assert!(!is_left_behind("logs__run1f79aa0d4ec8_p100", &current, |_| false), "this process's own");
        // Another run's process may run on another machine sharing the server.
        assert!(!is_left_behind("logs__runcc815783d2cb_p7", &current, |_| false), "another run's");
        assert!(!is_left_behind("logs_p7_0badcafe", &current, |_| false), "not of the pattern");
        assert!(!is_left_behind("logs", &current, |_| false), "a dataset or a user's database");
        // The decision asks about the pid the name holds.
        assert!(is_left_behind(ended, &current, |pid| pid != 7));
    }
}

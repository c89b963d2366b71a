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
mod clients;
pub mod container;
mod databases;
pub mod eks;
pub mod embedded;
mod observer;
pub mod server;
mod versions;
pub mod volume;
pub mod worker;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

pub use self::clients::{ClientCost, ClosedLoop, DirectLoop, LoopBound, LoopStatement, thread_cpu_time};
use self::databases::drop_left_behind_databases;
pub use self::databases::{DatabaseOwner, RUN_DIGITS, is_left_behind, scenario_database_name};
pub use self::observer::{Observed, Observer, ObserverConnection};
pub use self::versions::{ClickHouseVersion, OLDEST_SUPPORTED, supported_version};
use crate::cluster::last_up::{self, LastUp};
use crate::load_generator::{LoadLevel, LoadRun};
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
        TargetKind::Container => TargetSpec {
            capabilities: container::CAPABILITIES,
            open: container::open,
            missing_feature: container::MISSING_FEATURE,
        },
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
#[derive(Debug, Clone, Copy)]
pub struct MissingFeature {
    /// The chbench cargo feature the target needs (xtask has one of the same name).
    pub feature: &'static str,
    /// What the feature compiles, as the line said before building it names it.
    pub builds: &'static str,
    /// What must hold before the build is worth its minutes (a Docker daemon that looks to
    /// be there, say): its error is the command's, and nothing is built.
    pub check_before_building: fn() -> anyhow::Result<()>,
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
    /// Whether the engine samples a statement's stacks into `system.trace_log` and can
    /// symbolize them (`addressToSymbol`), so that `--profile` can draw its flame graphs.
    /// [`crate::profiling`] is only chosen on a target that has it.
    pub query_profiler: bool,
    /// Whether a load level's clients can run beside the engine rather than on this
    /// machine: as a Kubernetes Job with clickhouse-benchmark from the server's image
    /// ([`Target::run_load_level`]). A target that has it is reached from this machine
    /// through a port-forward, so that the clients of a local loop measure that tunnel
    /// too; the throughput kind runs its levels beside the engine on it by default.
    pub in_cluster_load: bool,
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

    /// What fio (or the probe) measured on the volume the engine keeps its data on
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

    /// The storage profile's volume the engine keeps its data on (`--storage`): `None` on
    /// the machine's own disk, and for a target whose data is elsewhere (the default).
    fn storage_volume(&self) -> Option<volume::StorageVolume> {
        None
    }

    /// How a concurrent client gets a connection of its own to the same engine, with the
    /// session defaults in force (its database is set by the caller). Only for targets whose
    /// [`Capabilities::concurrent_queries`] is [`Concurrency::Parallel`].
    fn client_opener(&self) -> Result<ClientOpener> {
        bail!("this target cannot open a connection for another client")
    }

    /// Runs one load level beside the engine, with the session settings this backend sends
    /// with every statement on top of the level's own, and returns what the load generator
    /// printed and where it ran, saying its progress to `progress`. Only for targets whose
    /// [`Capabilities::in_cluster_load`] is true.
    fn run_load_level(&mut self, _level: &LoadLevel, _progress: &mut dyn FnMut(&str)) -> Result<LoadRun> {
        bail!("this target runs no load generator beside its engine")
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
        let storage = backend.storage_volume();
        let mut target = Target {
            backend,
            capabilities,
            info: TargetInfo { kind, engine_version: String::new(), endpoint, deployment, storage },
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

    /// Runs one load level beside the engine ([`Capabilities::in_cluster_load`]); a target
    /// without it refuses in one line.
    pub fn run_load_level(&mut self, level: &LoadLevel, progress: &mut dyn FnMut(&str)) -> Result<LoadRun> {
        if !self.capabilities.in_cluster_load {
            bail!(
                "target {} runs no load beside its engine: its clients run on this machine (--load-from local)",
                self.info.kind
            );
        }
        self.backend.run_load_level(level, progress)
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
        // The bundle's record says "cannot read the target's storage baseline" itself.
        self.backend.storage_baseline()
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

/// The kind to use: `auto` becomes `eks` while a deployment `eks up` brought up is
/// remembered (said once a process, first), else `container` or `embedded` by asking
/// Docker.
pub fn resolve_kind(kind: TargetKind) -> TargetKind {
    let resolved = kind.resolve(last_up::is_recorded, container::docker_answers);
    if kind == TargetKind::Auto && resolved == TargetKind::Eks {
        say_the_deployment_chosen();
    }
    resolved
}

/// The kind a matrix runs on: as [`resolve_kind`], except that `auto` never chooses the
/// deployment the last `eks up` brought up. A matrix on eks brings up (and takes down) a
/// deployment per variant, in the namespace of its `[eks]` table: choosing eks for want of
/// a target would remake, then delete, the deployment the user brought up.
pub fn resolve_matrix_kind(kind: TargetKind) -> TargetKind {
    kind.resolve(|| false, container::docker_answers)
}

/// Says, once a process, which deployment `auto` chose: the last `up`'s, or the one in
/// `CHBENCH_NAMESPACE` when that names another. A record (or a namespace) that cannot be
/// read says nothing here: the eks target's opener refuses it in one line.
fn say_the_deployment_chosen() {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| match eks::namespace_from_env() {
        Ok((_, Some(record))) => crate::say!("chbench: {}", record.chosen_line()),
        // The namespace given, not the record's: the record is read for its namespace alone.
        Ok((namespace, None)) => {
            if let Ok(Some(record)) = LastUp::recall() {
                crate::say!(
                    "chbench: no target given: target eks, as `cargo xtask eks up` brought up a deployment (in \
                     namespace {}), in namespace {namespace} ({}) (--target or CHBENCH_TARGET chooses another)",
                    record.namespace,
                    eks::NAMESPACE_ENV
                );
            }
        }
        Err(_) => {}
    });
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
                // A stripped library, and no trace_log.
                query_profiler: false,
                in_cluster_load: false,
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
                query_profiler: true,
                in_cluster_load: false,
            }
        );
        assert_eq!(url.concurrent_stats_source(), StatsSource::QueryLog);
        // The container and the eks pod are measured as any server is; the pod is one
        // chbench deploys.
        assert_eq!(spec(TargetKind::Container).capabilities, url);
        assert_eq!(
            spec(TargetKind::Eks).capabilities,
            Capabilities { deployed_by_chbench: true, in_cluster_load: true, ..url }
        );
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
}

//! Targets: the ClickHouse engines a scenario runs on, and the one place that chooses one.
//!
//! Every target offers the same few operations ([`Target::run`], [`Target::execute`],
//! [`Target::query_text`]) and declares how its statements are measured
//! ([`StatsSource`]); the measurement core branches on that capability, never on the
//! target's name. [`open_target`] reads `CHBENCH_TARGET` and is the only code that maps
//! a name to an implementation.
//!
//! The API is blocking: the embedded engine is a synchronous C library, and the server
//! targets drive their async HTTP client on a private single-threaded runtime.

pub mod chdb;
pub mod container;
pub mod embedded;
pub mod server;

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::settings::Settings;
use crate::sql::one_line;

/// The environment variable that chooses the target.
pub const TARGET_ENV: &str = "CHBENCH_TARGET";

/// Which engine to run on, as named in `CHBENCH_TARGET`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// `container` when a Docker daemon answers, else `embedded`.
    Auto,
    /// The real ClickHouse engine in-process (libchdb).
    Embedded,
    /// `clickhouse/clickhouse-server` started by testcontainers.
    Container,
    /// Any running server given by `CHBENCH_URL`, `CHBENCH_USER`, `CHBENCH_PASSWORD`.
    Url,
}

impl TargetKind {
    pub const NAMES: &'static str = "auto, embedded, container, url";

    /// Parses a target name strictly: an unknown name is an error that lists the known ones.
    pub fn parse(name: &str) -> Result<TargetKind> {
        match name.trim() {
            "" | "auto" => Ok(TargetKind::Auto),
            "embedded" => Ok(TargetKind::Embedded),
            "container" => Ok(TargetKind::Container),
            "url" => Ok(TargetKind::Url),
            "eks" => bail!("{TARGET_ENV}=eks is not available yet; choose one of {}", TargetKind::NAMES),
            other => bail!("{TARGET_ENV}={other:?} is not a target; choose one of {}", TargetKind::NAMES),
        }
    }

    /// The kind named by `CHBENCH_TARGET` (unset means `auto`).
    pub fn from_env() -> Result<TargetKind> {
        match std::env::var(TARGET_ENV) {
            Ok(name) => TargetKind::parse(&name),
            Err(std::env::VarError::NotPresent) => Ok(TargetKind::Auto),
            Err(std::env::VarError::NotUnicode(_)) => bail!("{TARGET_ENV} is not valid UTF-8"),
        }
    }

    /// Resolves `auto` from whether a Docker daemon answered; other kinds stay as they are.
    pub fn resolve(self, docker_answers: bool) -> TargetKind {
        match self {
            TargetKind::Auto if docker_answers => TargetKind::Container,
            TargetKind::Auto => TargetKind::Embedded,
            chosen => chosen,
        }
    }
}

impl fmt::Display for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            TargetKind::Auto => "auto",
            TargetKind::Embedded => "embedded",
            TargetKind::Container => "container",
            TargetKind::Url => "url",
        };
        f.write_str(name)
    }
}

/// How a target's statements are measured: the measurement core's one branch point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatsSource {
    /// The statement's `system.query_log` row, found by its `log_comment` (servers).
    QueryLog,
    /// The result's storage counters and the `system.events` delta around the statement
    /// (the embedded engine, which has no query_log).
    ResultAndEventsDelta,
}

/// What a run records about the target it measured. Never holds a credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub kind: TargetKind,
    /// `SELECT version()` on the target.
    pub engine_version: String,
    /// Where the engine is: a library path, an image, or a URL without credentials.
    pub endpoint: String,
}

impl fmt::Display for TargetInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "target {} (ClickHouse {}, {})", self.kind, self.engine_version, self.endpoint)
    }
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

enum Backend {
    Embedded(embedded::EmbeddedTarget),
    // Boxed: they hold an HTTP client and a runtime, far larger than the engine handle.
    Server(Box<server::ServerTarget>),
    Container(Box<container::ContainerTarget>),
}

/// A connected target, working in one database.
pub struct Target {
    backend: Backend,
    info: TargetInfo,
    database: String,
}

impl Target {
    fn from_backend(kind: TargetKind, backend: Backend, endpoint: String) -> Result<Target> {
        let mut target = Target {
            backend,
            info: TargetInfo { kind, engine_version: String::new(), endpoint },
            database: "default".to_string(),
        };
        let version = target.query_text("SELECT version()").context("cannot read the engine version")?;
        target.info.engine_version = clickhouse_version(&version).with_context(|| {
            format!(
                "{} answered `SELECT version()` with {:?}, not a ClickHouse version: is it a ClickHouse HTTP \
                 port (8123 by default)?",
                target.info.endpoint,
                one_line(&version).chars().take(60).collect::<String>()
            )
        })?;
        Ok(target)
    }

    pub fn info(&self) -> &TargetInfo {
        &self.info
    }

    pub fn stats_source(&self) -> StatsSource {
        match self.backend {
            Backend::Embedded(_) => StatsSource::ResultAndEventsDelta,
            Backend::Server(_) | Backend::Container(_) => StatsSource::QueryLog,
        }
    }

    /// Whether the engine does its work in this process, so that this process's CPU
    /// time is the engine's (the embedded engine) rather than a server's elsewhere.
    pub fn engine_in_process(&self) -> bool {
        match self.backend {
            Backend::Embedded(_) => true,
            Backend::Server(_) | Backend::Container(_) => false,
        }
    }

    /// The database unqualified table names refer to.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// Creates `name` if needed and makes it the current database. Each scenario works
    /// in a database named after itself, left behind for inspection and recreated
    /// (dropped first) on the next run.
    pub fn use_fresh_database(&mut self, name: &str) -> Result<()> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            bail!("{name:?} is not a usable database name (letters, digits and _ only)");
        }
        self.execute(&format!("DROP DATABASE IF EXISTS {name} SYNC"))?;
        self.execute(&format!("CREATE DATABASE {name}"))?;
        self.use_database(name)
    }

    /// Makes an existing database the current one.
    pub fn use_database(&mut self, name: &str) -> Result<()> {
        match &mut self.backend {
            Backend::Embedded(engine) => engine.use_database(name)?,
            Backend::Server(server) => server.use_database(name),
            Backend::Container(container) => container.server().use_database(name),
        }
        self.database = name.to_string();
        Ok(())
    }

    /// Runs one statement with statement-level `settings`, returning its output in
    /// `format`. Session defaults (see [`Settings::session_defaults`]) stay in force
    /// unless `settings` overrides them, and are back in force afterwards.
    pub fn run(&mut self, sql: &str, settings: &Settings, format: &str) -> Result<Output> {
        crate::interrupt::check()?;
        let started = Instant::now();
        let outcome = match &mut self.backend {
            Backend::Embedded(engine) => engine.run(sql, settings, format),
            Backend::Server(server) => server.run(sql, settings, format),
            Backend::Container(container) => container.server().run(sql, settings, format),
        };
        let (body, counters) = outcome.with_context(|| format!("statement failed: {}", one_line(sql)))?;
        Ok(Output { body, client_elapsed: started.elapsed(), counters })
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
    /// restores the session. Only the embedded engine keeps settings between statements
    /// (servers take them per request: pass them to [`Target::run`] instead).
    pub fn with_session_settings<T>(
        &mut self,
        settings: &Settings,
        measured: impl FnOnce(&mut Target) -> Result<T>,
    ) -> Result<T> {
        match &mut self.backend {
            Backend::Embedded(engine) => engine.apply_settings(settings)?,
            Backend::Server(_) | Backend::Container(_) => {
                bail!("session settings need the embedded engine; servers take settings per statement")
            }
        }
        let outcome = measured(self);
        if let Backend::Embedded(engine) = &mut self.backend {
            engine.restore_settings(settings)?;
        }
        outcome
    }
}

/// `26.7.2.1` from the answer to `SELECT version()`; `None` when it is not a version
/// (some other HTTP server answered).
fn clickhouse_version(answer: &str) -> Option<String> {
    let version = answer.trim();
    let parts: Vec<&str> = version.split('.').collect();
    let numeric = parts.iter().all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()));
    (parts.len() >= 2 && numeric).then(|| version.to_string())
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

/// Opens a target of the given kind (`auto` asks Docker first) and prints which one it is.
pub fn open_target_of_kind(kind: TargetKind) -> Result<Target> {
    let target = match resolve_kind(kind) {
        TargetKind::Embedded => return open_embedded(embedded::Storage::Scratch),
        TargetKind::Url => {
            let config = server::ServerConfig::from_env()?;
            let endpoint = config.display_url();
            let server = server::ServerTarget::connect(config)?;
            Target::from_backend(TargetKind::Url, Backend::Server(Box::new(server)), endpoint)?
        }
        TargetKind::Container => {
            let container = container::ContainerTarget::start()?;
            let endpoint = container.describe();
            Target::from_backend(TargetKind::Container, Backend::Container(Box::new(container)), endpoint)?
        }
        TargetKind::Auto => unreachable!("resolve_kind never returns auto"),
    };
    eprintln!("chbench: {}", target.info());
    Ok(target)
}

/// Opens the embedded engine on the given storage and prints which target it is.
pub fn open_embedded(storage: embedded::Storage) -> Result<Target> {
    let engine = embedded::EmbeddedTarget::open(storage)?;
    let endpoint = format!("libchdb at {}", engine.library_path().display());
    let target = Target::from_backend(TargetKind::Embedded, Backend::Embedded(engine), endpoint)?;
    eprintln!("chbench: {}", target.info());
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names_parse_strictly() {
        assert_eq!(TargetKind::parse("embedded").unwrap(), TargetKind::Embedded);
        assert_eq!(TargetKind::parse("container").unwrap(), TargetKind::Container);
        assert_eq!(TargetKind::parse("url").unwrap(), TargetKind::Url);
        assert_eq!(TargetKind::parse("").unwrap(), TargetKind::Auto);
        assert_eq!(TargetKind::parse("auto").unwrap(), TargetKind::Auto);
        let error = TargetKind::parse("Embeded").unwrap_err().to_string();
        assert!(error.contains("\"Embeded\" is not a target"), "{error}");
        assert!(error.contains("embedded, container, url"), "{error}");
    }

    #[test]
    fn only_a_version_counts_as_a_clickhouse_answer() {
        assert_eq!(clickhouse_version("26.7.2.1\n").as_deref(), Some("26.7.2.1"));
        assert_eq!(clickhouse_version("18.16.1").as_deref(), Some("18.16.1"));
        for answer in ["<html><body>It works</body></html>", "", "26", "26..1", "v26.7"] {
            assert_eq!(clickhouse_version(answer), None, "{answer}");
        }
    }

    #[test]
    fn auto_means_container_only_when_docker_answers() {
        assert_eq!(TargetKind::Auto.resolve(true), TargetKind::Container);
        assert_eq!(TargetKind::Auto.resolve(false), TargetKind::Embedded);
        assert_eq!(TargetKind::Url.resolve(true), TargetKind::Url);
        assert_eq!(TargetKind::Embedded.resolve(true), TargetKind::Embedded);
    }
}

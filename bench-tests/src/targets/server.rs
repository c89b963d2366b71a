//! Server targets: any ClickHouse server reached over HTTP with the `clickhouse` crate.
//!
//! The `url` target (its capabilities and opener are here), and the client underneath the
//! `container` target. Statement settings travel with each request; nothing persists
//! between statements but the session defaults and the database. Credentials
//! come from `CHBENCH_USER` and `CHBENCH_PASSWORD` only, and travel in request headers,
//! never in a URL: a URL with credentials in it is refused, so no string that the
//! client library or this module formats (an error, an endpoint) can hold the password,
//! and nothing needs to be hidden after the fact. Plain `http://` is the only scheme, so
//! a URL must name this machine (loopback, or a port-forward or tunnel listening on it):
//! anywhere else the password would cross a network in clear. A user or password that a
//! header would change (spaces at either end, which HTTP strips) or refuse (control
//! characters) is refused before anything is sent.
//!
//! Opening a server reads `SELECT version()` with no session setting (an old server
//! refuses unknown ones), refuses what is not ClickHouse or older than
//! [`super::OLDEST_SUPPORTED`], then leaves out the session defaults the server does not
//! know only where that changes no measurement ([`Settings::unknown_changes_nothing`]).
//! A concurrent client ([`Backend::client_opener`]) is a client of its own, with its own
//! runtime and HTTP connections, made in its thread from the same configuration and the
//! session defaults that check kept; the server is not asked again.
//!
//! No request waits forever ([`Timeouts`]): connecting has a limit, and a request the
//! server has not answered within the response timeout is checked on a second
//! connection (is the statement in `system.processes`?). A server that answers that is
//! busy, so a statement may run for hours; one that answers neither is not responding,
//! and the error names it and the limit. ClickHouse sends nothing before a statement's
//! first result block (an `OPTIMIZE` or an `INSERT ... SELECT` sends nothing until it
//! ends), and progress headers (`send_progress_in_http_headers`) would come only while
//! rows are read, each one a header line that the HTTP client caps at 100: silence on
//! the connection alone cannot tell a long statement from a hung server, which is why
//! the check asks. While a request waits, Ctrl-C, SIGTERM or SIGHUP ends it at once
//! ([`crate::interrupt::requested`]) and asks the server to kill it.

use std::fmt;
use std::future::Future;
use std::pin::{Pin, pin};
use std::time::Duration;

use anyhow::{Result, anyhow, bail};

use super::{Backend, Capabilities, ClientOpener, Concurrency, DatasetProvision, ResultCounters, StatsSource, Storage};
use crate::env::{seconds, seconds_env};
use crate::interrupt::Interrupted;
use crate::settings::Settings;
use crate::sql::sql_string;

/// What a running server that someone else owns (the `url` target) can do.
pub const CAPABILITIES: Capabilities = Capabilities {
    stats_source: StatsSource::QueryLog,
    // Each HTTP request is its own session here (no `session_id`).
    session_settings_persist: false,
    datasets: DatasetProvision::SharedDatabase,
    caches_droppable: true,
    engine_in_process: false,
    // Each client is an HTTP client of its own, and each statement's query_log row holds
    // its own ProfileEvents.
    concurrent_queries: Concurrency::Parallel { events_per_statement: true },
    deployed_by_chbench: false,
    // The server's query profiler, its trace_log and its symbols.
    query_profiler: true,
    // A server reached directly: its clients are this machine's.
    in_cluster_load: false,
};

/// Connects to the server given by `CHBENCH_URL` (the `url` kind's opener for
/// `targets::spec`). A server keeps its own data: `storage` does not apply.
pub fn open(_storage: &Storage) -> Result<Box<dyn Backend>> {
    Ok(Box::new(ServerTarget::connect(ServerConfig::from_env()?)?))
}

/// The user the harness logs in as on the servers it sets up (the container's, and the
/// manifests' `CLICKHOUSE_USER`); the official image creates it with the given password.
pub const BENCH_USER: &str = "bench";

pub const URL_ENV: &str = "CHBENCH_URL";
pub const USER_ENV: &str = "CHBENCH_USER";
pub const PASSWORD_ENV: &str = "CHBENCH_PASSWORD";
pub const CONNECT_TIMEOUT_ENV: &str = "CHBENCH_CONNECT_TIMEOUT";
pub const RESPONSE_TIMEOUT_ENV: &str = "CHBENCH_RESPONSE_TIMEOUT";

/// How long connecting to a server may take. The URL is on this machine (loopback or a
/// port-forward's listener), where a connection is made or refused at once; a port-forward
/// through the Kubernetes API takes a second or two.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request waits for its answer before asking on a second connection whether
/// the server still runs it, and how long that check waits. A server answers a read of
/// `system.processes` in milliseconds even when busy.
const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a waiting request looks whether Ctrl-C came: "at once" to a person.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);
/// How long an interrupted statement's `KILL QUERY` may take (at most the response
/// timeout): the process is stopping, and a healthy server answers `ASYNC` in
/// milliseconds; a silent one must not hold up the stop.
const KILL_WAIT: Duration = Duration::from_secs(1);

/// The limits on waiting for a server, from `CHBENCH_CONNECT_TIMEOUT` and
/// `CHBENCH_RESPONSE_TIMEOUT` (seconds) or the defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub connect: Duration,
    pub response: Duration,
}

impl Timeouts {
    pub fn from_env() -> Result<Timeouts> {
        Ok(Timeouts {
            connect: seconds_env(CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT)?,
            response: seconds_env(RESPONSE_TIMEOUT_ENV, DEFAULT_RESPONSE_TIMEOUT)?,
        })
    }
}

/// Where a server is and who to log in as.
#[derive(Clone)]
pub struct ServerConfig {
    pub url: String,
    /// What output and results show of `url`.
    display: String,
    pub user: String,
    pub password: String,
    pub timeouts: Timeouts,
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("url", &self.display_url())
            .field("user", &self.user)
            .field("password", &"<hidden>")
            .finish()
    }
}

impl ServerConfig {
    /// Reads `CHBENCH_URL` (required), `CHBENCH_USER` (default `default`) and
    /// `CHBENCH_PASSWORD` (default empty).
    pub fn from_env() -> Result<ServerConfig> {
        let url = std::env::var(URL_ENV)
            .map_err(|_| anyhow!("the url target needs {URL_ENV} (e.g. http://127.0.0.1:8123)"))?;
        let user = crate::env::optional(USER_ENV)?.unwrap_or_else(|| "default".to_string());
        let password = crate::env::optional(PASSWORD_ENV)?.unwrap_or_default();
        check_header_value(USER_ENV, &user)?;
        check_header_value(PASSWORD_ENV, &password)?;
        ServerConfig::new(&url, &user, &password)
    }

    /// Checks the URL: plain `http://` to this machine, with no credentials in it; the
    /// timeouts come from the environment ([`Timeouts::from_env`]). Error messages never
    /// repeat the URL, which may hold a secret the user pasted into it.
    pub fn new(url: &str, user: &str, password: &str) -> Result<ServerConfig> {
        let parsed = url::Url::parse(url.trim())
            .map_err(|error| anyhow!("{URL_ENV} is not a URL ({error}); give one like http://127.0.0.1:8123"))?;
        // ClickHouse also takes `?user=` and `?password=` in the URL.
        let credential_parameter =
            parsed.query_pairs().any(|(name, _)| matches!(name.to_ascii_lowercase().as_str(), "user" | "password"));
        if !parsed.username().is_empty() || parsed.password().is_some() || credential_parameter {
            bail!(
                "{URL_ENV} holds credentials; give the URL without them (e.g. http://127.0.0.1:8123), the user \
                 in {USER_ENV} and the password in {PASSWORD_ENV}"
            );
        }
        match parsed.scheme() {
            "http" => {}
            "https" => bail!("https URLs are not supported yet (reach the server through a port-forward or loopback)"),
            _ => bail!("{URL_ENV} must be an http:// URL (e.g. http://127.0.0.1:8123)"),
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            bail!("{URL_ENV} has no host; give one like http://127.0.0.1:8123");
        }
        if !is_loopback(&parsed) {
            bail!(
                "{URL_ENV} names a host that is not this machine ({}): over plain http:// the password would cross \
                 the network in clear; reach the server through a port-forward or an SSH tunnel (`ssh -L \
                 8123:127.0.0.1:8123 <host>`) and give http://127.0.0.1:8123",
                parsed.host_str().unwrap_or_default()
            );
        }
        let url = parsed.as_str().trim_end_matches('/').to_string();
        // Shown without its query and fragment: settings there (a quota key, say) may be
        // secret too.
        let mut shown = parsed;
        shown.set_query(None);
        shown.set_fragment(None);
        let display = shown.as_str().trim_end_matches('/').to_string();
        let timeouts = Timeouts::from_env()?;
        Ok(ServerConfig { url, display, user: user.to_string(), password: password.to_string(), timeouts })
    }

    /// This configuration with other limits on waiting (a test's short ones, say).
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> ServerConfig {
        self.timeouts = timeouts;
        self
    }

    /// The URL as it may appear in output and results: no credentials, query or fragment.
    pub fn display_url(&self) -> String {
        self.display.clone()
    }
}

pub struct ServerTarget {
    config: ServerConfig,
    /// The session defaults the server knows, which every request carries.
    session: Settings,
    client: clickhouse::Client,
    runtime: tokio::runtime::Runtime,
    /// Why the server counts as not responding, once a request found it so: later
    /// requests (clean-up on the way out) fail at once instead of waiting again.
    silent: Option<String>,
}

/// How a request to the server ended when it did not end with its own outcome.
enum Ended {
    /// The client's error (the server's exception, a network failure).
    Client(clickhouse::error::Error),
    /// Ctrl-C, SIGTERM or SIGHUP while it waited.
    Interrupted,
    /// No answer within the response timeout, and none to the check either.
    Silent,
    /// The server answers, but twice in a row did not list the statement as running,
    /// and its answer never came.
    Lost,
}

/// How a bounded wait ended without the awaited outcome.
enum Cut {
    TimedOut,
    Interrupted,
}

/// Awaits `work` for at most `limit`, ending early with [`Cut::Interrupted`] once a stop
/// is requested if `interruptible`.
async fn bounded<F: Future>(mut work: Pin<&mut F>, limit: Duration, interruptible: bool) -> Result<F::Output, Cut> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if interruptible && crate::interrupt::requested() {
            return Err(Cut::Interrupted);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(Cut::TimedOut);
        }
        if let Ok(output) = tokio::time::timeout(INTERRUPT_POLL.min(deadline - now), work.as_mut()).await {
            return Ok(output);
        }
    }
}

/// The connector the `clickhouse` crate's own HTTP client has, plus a connect timeout.
fn connector(timeouts: &Timeouts) -> hyper_util::client::legacy::connect::HttpConnector {
    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
    connector.set_connect_timeout(Some(timeouts.connect));
    // The crate's own value.
    connector.set_keepalive(Some(Duration::from_secs(60)));
    connector
}

impl ServerTarget {
    /// Connects: reads the version with no session setting in force, refuses what is not
    /// ClickHouse or too old, then builds the client with the session defaults the
    /// server knows (see the module docs).
    pub fn connect(config: ServerConfig) -> Result<ServerTarget> {
        let mut target = ServerTarget::unchecked(config, Settings::new())?;
        let answer = target.opening_query("SELECT version()")?;
        super::supported_version(&target.config.display_url(), &answer)?;
        let defaults = Settings::session_defaults();
        let names: Vec<String> = defaults.iter().map(|(name, _)| sql_string(name)).collect();
        let known =
            target.opening_query(&format!("SELECT name FROM system.settings WHERE name IN ({})", names.join(", ")))?;
        let mut session = Settings::new();
        for (name, value) in defaults.iter() {
            if known.lines().any(|line| line == name) {
                session = session.with(name, value);
            } else if crate::settings::run_settings().get(name).is_some() {
                bail!(
                    "ClickHouse at {} has no setting {name}, which --setting gives: drop it, or use a server that has it",
                    target.config.display_url()
                );
            } else if !Settings::unknown_changes_nothing(name) {
                bail!(
                    "ClickHouse at {} has no setting {name}, which every session sets: use a server of the supported \
                     versions (docs/targets.md, \"Server versions\")",
                    target.config.display_url()
                );
            }
        }
        for (name, value) in session.iter() {
            target.client = target.client.clone().with_setting(name, value);
        }
        target.session = session;
        Ok(target)
    }

    /// A client of the server `config` names, with `session` sent with every request,
    /// on a runtime of its own; nothing is sent yet (the server was checked by
    /// [`ServerTarget::connect`], or is being).
    fn unchecked(config: ServerConfig, session: Settings) -> Result<ServerTarget> {
        let runtime = crate::runtime::blocking_runtime("the HTTP client")?;
        // The crate's own client but for the connector; idle connections are kept 2 s, as
        // the crate does (the server closes them after 3).
        let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(2))
            .build(connector(&config.timeouts));
        let mut client = clickhouse::Client::with_http_client(http)
            .with_url(&config.url)
            .with_user(&config.user)
            .with_password(&config.password);
        for (name, value) in session.iter() {
            client = client.with_setting(name, value);
        }
        Ok(ServerTarget { config, session, client, runtime, silent: None })
    }

    /// The settings sent with every statement: the session defaults this server knows,
    /// and the run's own.
    pub fn session(&self) -> &Settings {
        &self.session
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// A query of the opening, where an HTTP error that is not ClickHouse's (a web
    /// server's page, a proxy's) means the URL is not a ClickHouse HTTP port.
    fn opening_query(&mut self, sql: &str) -> Result<String> {
        let url = self.config.display_url();
        match self.request(sql, &Settings::new(), "TabSeparatedRaw") {
            Err(Ended::Client(clickhouse::error::Error::BadResponse(text))) if !is_clickhouse_error(&text) => {
                let shown: String = crate::sql::one_line(&text).chars().take(60).collect();
                bail!(
                    "{url} is not ClickHouse: it answered `{sql}` with an HTTP error that is not ClickHouse's \
                     ({shown:?}); is it a ClickHouse HTTP port (8123 by default)?"
                )
            }
            outcome => outcome.map(|(body, _)| body).map_err(|ended| self.explain(ended)),
        }
    }

    /// Sends one statement and waits for its answer as the module docs say.
    fn request(&mut self, sql: &str, settings: &Settings, format: &str) -> Result<(String, ResultCounters), Ended> {
        // Every request has a query id, by which the check and a kill find it.
        let query_id = settings.get("query_id").map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_string);
        let mut query = self.client.query_raw(sql).with_setting("query_id", &query_id);
        for (name, value) in settings.iter().filter(|(name, _)| *name != "query_id") {
            query = query.with_setting(name, value);
        }
        let answer = async {
            let mut cursor = query.fetch_bytes(format)?;
            let body = cursor.collect().await?;
            let counters = cursor
                .summary()
                .map(|summary| ResultCounters {
                    read_rows: summary.read_rows(),
                    read_bytes: summary.read_bytes(),
                    result_rows: summary.result_rows(),
                    elapsed_us: summary.elapsed_ns().map(|ns| ns / 1000),
                    memory_usage: summary.memory_usage(),
                })
                .unwrap_or_default();
            Ok::<_, clickhouse::error::Error>((String::from_utf8_lossy(&body).into_owned(), counters))
        };
        self.runtime.block_on(self.watched(answer, &query_id))
    }

    /// Awaits `answer`, checking on a second connection each time it has been silent for
    /// the response timeout; a stop requested while it waits ends it and kills it on the
    /// server. A request sent after the stop (clean-up on the way out) is not cut short.
    async fn watched<T>(
        &self,
        answer: impl Future<Output = Result<T, clickhouse::error::Error>>,
        query_id: &str,
    ) -> Result<T, Ended> {
        let limit = self.config.timeouts.response;
        let interruptible = !crate::interrupt::requested();
        let mut answer = pin!(answer);
        let mut unlisted = 0;
        loop {
            match bounded(answer.as_mut(), limit, interruptible).await {
                Ok(outcome) => return outcome.map_err(Ended::Client),
                Err(Cut::Interrupted) => return Err(self.kill(query_id).await),
                Err(Cut::TimedOut) => {}
            }
            let check = self
                .client
                .query_raw(&format!("SELECT count() FROM system.processes WHERE query_id = {}", sql_string(query_id)))
                .fetch_bytes("TabSeparatedRaw");
            let listed = async { check?.collect().await };
            match bounded(pin!(listed), limit, interruptible).await {
                Ok(Ok(count)) if count.trim_ascii() == b"0" => unlisted += 1,
                // Running, or an error the server sent: either way it answers.
                Ok(Ok(_)) | Ok(Err(clickhouse::error::Error::BadResponse(_))) => unlisted = 0,
                Ok(Err(error)) => return Err(Ended::Client(error)),
                Err(Cut::Interrupted) => return Err(self.kill(query_id).await),
                Err(Cut::TimedOut) => return Err(Ended::Silent),
            }
            if unlisted >= 2 {
                return Err(Ended::Lost);
            }
        }
    }

    /// Asks the server to kill the interrupted statement `query_id` (dropping the
    /// connection does not stop a statement that writes); what cannot be asked is said
    /// on stderr, since the statement may go on there.
    async fn kill(&self, query_id: &str) -> Ended {
        let kill =
            self.client.query_raw(&format!("KILL QUERY WHERE query_id = {} ASYNC", sql_string(query_id))).execute();
        let url = self.config.display_url();
        match bounded(pin!(kill), KILL_WAIT.min(self.config.timeouts.response), false).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => crate::say!(
                "chbench: cannot ask ClickHouse at {url} to kill the interrupted statement {query_id} ({}); it may \
                 still run there",
                first_line(&error.to_string())
            ),
            Err(_) => crate::say!(
                "chbench: ClickHouse at {url} did not answer the request to kill the interrupted statement \
                 {query_id}; it may still run there"
            ),
        }
        Ended::Interrupted
    }

    /// One line for a request that ended without its answer.
    fn explain(&self, ended: Ended) -> anyhow::Error {
        let url = self.config.display_url();
        let limit = seconds(self.config.timeouts.response);
        match ended {
            Ended::Client(error) => self.explain_error(error),
            Ended::Interrupted => Interrupted.into(),
            Ended::Silent => anyhow!(
                "ClickHouse at {url} is not responding: no answer within {limit}, and none within {limit} on a \
                 second connection to the question whether it runs the statement; check the server (or the \
                 port-forward), or give {RESPONSE_TIMEOUT_ENV} more seconds"
            ),
            Ended::Lost => anyhow!(
                "ClickHouse at {url} answers but is not running the statement, whose answer has not come \
                 (checked twice, {limit} apart): a proxy or port-forward may have lost it"
            ),
        }
    }

    /// One line naming the server and what went wrong. The password cannot be in it:
    /// it travels in a header, which the client library's errors do not print.
    fn explain_error(&self, error: clickhouse::error::Error) -> anyhow::Error {
        let url = self.config.display_url();
        let text = error.to_string();
        match error {
            clickhouse::error::Error::Network(source) if timed_out(source.as_ref()) => anyhow!(
                "cannot connect to ClickHouse at {url} within {} (the connect timeout, {CONNECT_TIMEOUT_ENV}): is \
                 the server or the port-forward up?",
                seconds(self.config.timeouts.connect)
            ),
            clickhouse::error::Error::Network(source) => match network_failure(source.as_ref()) {
                Some(NetworkFailure::Refused) => anyhow!(
                    "nothing listens at {url} (the connection was refused): is the server, or the port-forward to \
                     it, up?"
                ),
                Some(NetworkFailure::Closed) => anyhow!(
                    "ClickHouse at {url}: the server closed the connection before answering; did it crash or \
                     restart (its log says why)?"
                ),
                Some(NetworkFailure::NotHttp) => anyhow!(
                    "{url} answered, but the answer is not HTTP: is it a ClickHouse HTTP port (8123 by default; 9000 \
                     is the native protocol's)?"
                ),
                None => anyhow!("cannot reach ClickHouse at {url}: {text}"),
            },
            _ if is_unknown_user(&text) => {
                let user = &self.config.user;
                let what_to_do = if user.is_empty() {
                    format!("{USER_ENV} is empty: unset it to log in as default, or name a user the server has")
                } else {
                    format!("set {USER_ENV} to a user the server has (unset, it is default)")
                };
                anyhow!(
                    "ClickHouse at {url} refused user {user:?}: the user {USER_ENV} names is unknown to the server \
                     (UNKNOWN_USER); {what_to_do}"
                )
            }
            _ if is_authentication_failure(&text) => {
                anyhow!("ClickHouse at {url} refused user {:?}: {}", self.config.user, first_line(&text))
            }
            _ => anyhow!("ClickHouse at {url}: {}", first_line(&text)),
        }
    }
}

impl Backend for ServerTarget {
    fn use_database(&mut self, name: &str) -> Result<()> {
        // Sent with every following request; the server checks it then.
        self.client = self.client.clone().with_database(name);
        Ok(())
    }

    /// Runs one statement; statement-level settings travel as URL parameters.
    fn run(&mut self, sql: &str, settings: &Settings, format: &str) -> Result<(String, ResultCounters)> {
        if let Some(silent) = &self.silent {
            bail!("not sent: {silent}");
        }
        match self.request(sql, settings, format) {
            Ok(answer) => Ok(answer),
            Err(ended) => {
                let remember = matches!(ended, Ended::Silent);
                let error = self.explain(ended);
                if remember {
                    self.silent = Some(error.to_string());
                }
                Err(error)
            }
        }
    }

    fn endpoint(&self) -> String {
        self.config.display_url()
    }

    /// A client of its own (HTTP connections and runtime) for the same server, user and
    /// session defaults: the credentials go from this configuration to the new client's
    /// headers, as they came here, never into a message.
    fn client_opener(&self) -> Result<ClientOpener> {
        let (config, session) = (self.config.clone(), self.session.clone());
        Ok(Box::new(
            move || Ok(Box::new(ServerTarget::unchecked(config.clone(), session.clone())?) as Box<dyn Backend>),
        ))
    }
}

/// Whether a host is this machine: `localhost`, 127.0.0.0/8 or ::1.
fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(address)) => address.is_loopback(),
        Some(url::Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    }
}

/// Refuses a user or password that the header it travels in would change (HTTP strips
/// spaces and tabs at either end of a value) or refuse (control characters). The message
/// names the variable and the rule, never anything of the value, so it is the same for
/// every bad value.
fn check_header_value(variable: &str, value: &str) -> Result<()> {
    let trimmed = value.trim_matches([' ', '\t']).len() != value.len();
    if trimmed || value.chars().any(char::is_control) {
        bail!(
            "{variable} starts or ends with a space, or holds a control character (a newline, say): the HTTP header \
             it travels in would change or refuse it; set {variable} without them"
        );
    }
    Ok(())
}

/// Whether an HTTP error's text is ClickHouse's: its exceptions read `Code: 516. DB::Exception: ...`
/// (older releases `Code: 193, e.displayText() = DB::Exception: ...`).
fn is_clickhouse_error(text: &str) -> bool {
    text.starts_with("Code: ") || text.contains("DB::Exception")
}

/// Whether a network error is a timeout (the connect timeout), anywhere in its chain.
fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(error) = source {
        if error.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut) {
            return true;
        }
        source = error.source();
    }
    false
}

/// What the HTTP client's "client error" was, where it is one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NetworkFailure {
    /// Nothing listens at the address.
    Refused,
    /// The peer took the request and closed the connection before a whole answer.
    Closed,
    /// The peer answered with bytes that are not an HTTP response.
    NotHttp,
}

/// Which [`NetworkFailure`] a network error is, from hyper's error and the I/O error
/// under it, anywhere in its chain.
fn network_failure(error: &(dyn std::error::Error + 'static)) -> Option<NetworkFailure> {
    let mut source = Some(error);
    while let Some(error) = source {
        if let Some(hyper) = error.downcast_ref::<hyper::Error>() {
            if hyper.is_parse() {
                return Some(NetworkFailure::NotHttp);
            }
            if hyper.is_incomplete_message() || hyper.is_canceled() {
                return Some(NetworkFailure::Closed);
            }
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind;
            match io.kind() {
                ErrorKind::ConnectionRefused => return Some(NetworkFailure::Refused),
                ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe => {
                    return Some(NetworkFailure::Closed);
                }
                _ => {}
            }
        }
        source = error.source();
    }
    None
}

/// ClickHouse's ways of saying "wrong user or password" across versions:
/// 516 AUTHENTICATION_FAILED (current), 194 REQUIRED_PASSWORD, 193 WRONG_PASSWORD (old).
fn is_authentication_failure(text: &str) -> bool {
    ["Code: 516", "Code: 194", "Code: 193", "AUTHENTICATION_FAILED", "Wrong password"]
        .iter()
        .any(|marker| text.contains(marker))
}

/// ClickHouse's "no such user" (192 UNKNOWN_USER): what a login as a user the server does
/// not have, or as the empty user, gets where the server does not fold it into 516.
fn is_unknown_user(text: &str) -> bool {
    ["Code: 192.", "Code: 192,", "UNKNOWN_USER"].iter().any(|marker| text.contains(marker))
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authentication_failures_are_recognised_across_versions() {
        // As printed by 18.16 (the Debian package) and by 25.x servers.
        assert!(is_authentication_failure(
            "bad response: Code: 193, e.displayText() = DB::Exception: Wrong password for user default"
        ));
        assert!(is_authentication_failure(
            "bad response: Code: 516. DB::Exception: bench: Authentication failed. (AUTHENTICATION_FAILED)"
        ));
        assert!(!is_authentication_failure("bad response: Code: 62. DB::Exception: Syntax error"));
    }

    #[test]
    fn urls_with_credentials_are_refused_without_echoing_them() {
        for url in [
            "http://bench:s3cret@127.0.0.1:8123/x",
            "http://s3cret@127.0.0.1:8123",
            "http://:s3cret@h:1",
            "http://127.0.0.1:1/?password=s3cret",
            "http://127.0.0.1:1/?database=x&User=s3cret",
        ] {
            let error = ServerConfig::new(url, "u", "").unwrap_err().to_string();
            assert!(error.contains("holds credentials") && !error.contains("s3cret"), "{error}");
        }
        assert_eq!(
            ServerConfig::new("http://127.0.0.1:8123/", "u", "").unwrap().display_url(),
            "http://127.0.0.1:8123"
        );
        let with_settings = ServerConfig::new("http://127.0.0.1:8123/?quota_key=s3cret#s3cret", "u", "").unwrap();
        assert_eq!(with_settings.display_url(), "http://127.0.0.1:8123");
        assert!(!format!("{with_settings:?}").contains("s3cret"));
    }

    #[test]
    fn config_debug_hides_the_password() {
        let config = ServerConfig::new("http://127.0.0.1:8123", "u", "s3cret").unwrap();
        let shown = format!("{config:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn only_urls_to_this_machine_are_taken() {
        for url in [
            "http://127.0.0.1:8123",
            "http://127.1.2.3:1",
            "http://localhost:8123",
            "http://LocalHost",
            "http://[::1]:8123",
        ] {
            assert!(ServerConfig::new(url, "u", "").is_ok(), "{url}");
        }
        for url in
            ["http://10.0.0.1:8123", "http://clickhouse.example.com:8123", "http://[::2]:1", "http://0.0.0.0:8123"]
        {
            let error = ServerConfig::new(url, "u", "").unwrap_err().to_string();
            assert!(error.contains("is not this machine") && error.contains("in clear"), "{error}");
            assert!(error.contains("port-forward or an SSH tunnel"), "{error}");
        }
    }

    #[test]
    fn values_a_header_would_change_are_refused_in_one_message() {
        let message = |value: &str| check_header_value(PASSWORD_ENV, value).err().map(|error| error.to_string());
        for fine in ["", "a", "e", "pass word", "päss", "a-long-password-0123456789"] {
            assert_eq!(message(fine), None, "{fine:?}");
        }
        let bad = [" a", "a ", "\ta", "a\t", "a\nb", "a\r", "\n", " ", "x\u{7f}y", "long-password-with-a-newline\n"];
        let first = message(bad[0]).expect("refused");
        assert!(first.starts_with("CHBENCH_PASSWORD starts or ends with a space"), "{first}");
        for value in bad {
            // The same words whatever the value, its length or where the bad character is.
            assert_eq!(message(value).as_deref(), Some(first.as_str()), "{value:?}");
        }
    }

    #[test]
    fn only_clickhouse_exceptions_count_as_clickhouse_errors() {
        assert!(is_clickhouse_error("Code: 516. DB::Exception: bench: Authentication failed"));
        assert!(is_clickhouse_error("Code: 193, e.displayText() = DB::Exception: Wrong password for user default"));
        assert!(!is_clickhouse_error("<!DOCTYPE HTML>\n<html><head><title>Error response</title>"));
        assert!(!is_clickhouse_error("501 Not Implemented"));
    }

    #[test]
    fn non_http_urls_are_refused_without_echoing_them() {
        for url in ["tcp://host:9000/s3cret", "https://host/s3cret", "not a url s3cret", "http://"] {
            let error = ServerConfig::new(url, "u", "").unwrap_err().to_string();
            assert!(!error.contains("s3cret"), "{error}");
        }
    }
}

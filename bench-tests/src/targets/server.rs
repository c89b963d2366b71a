//! Server targets: any ClickHouse server reached over HTTP with the `clickhouse` crate.
//!
//! The `url` target (its capabilities and opener are here), and the client underneath the
//! `container` target. Statement settings travel with each request; nothing persists
//! between statements but the session defaults and the database. Credentials
//! come from `CHBENCH_USER` and `CHBENCH_PASSWORD` only, and travel in request headers,
//! never in a URL: a URL with credentials in it is refused, so no string that the
//! client library or this module formats (an error, an endpoint) can hold the password,
//! and nothing needs to be hidden after the fact.

use std::fmt;

use anyhow::{Result, anyhow, bail};

use super::{Backend, Capabilities, DatasetProvision, ResultCounters, StatsSource, Storage};
use crate::settings::Settings;

/// What a running server that someone else owns (the `url` target) can do.
pub const CAPABILITIES: Capabilities = Capabilities {
    stats_source: StatsSource::QueryLog,
    // Each HTTP request is its own session here (no `session_id`).
    session_settings_persist: false,
    datasets: DatasetProvision::SharedDatabase,
    caches_droppable: true,
    engine_in_process: false,
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

/// Where a server is and who to log in as.
#[derive(Clone)]
pub struct ServerConfig {
    pub url: String,
    /// What output and results show of `url`.
    display: String,
    pub user: String,
    pub password: String,
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
        let user = optional_env(USER_ENV)?.unwrap_or_else(|| "default".to_string());
        ServerConfig::new(&url, &user, &optional_env(PASSWORD_ENV)?.unwrap_or_default())
    }

    /// Checks the URL: plain `http://` with a host and no credentials in it. Error
    /// messages never repeat the URL, which may hold a secret the user pasted into it.
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
        let url = parsed.as_str().trim_end_matches('/').to_string();
        // Shown without its query and fragment: settings there (a quota key, say) may be
        // secret too.
        let mut shown = parsed;
        shown.set_query(None);
        shown.set_fragment(None);
        let display = shown.as_str().trim_end_matches('/').to_string();
        Ok(ServerConfig { url, display, user: user.to_string(), password: password.to_string() })
    }

    /// The URL as it may appear in output and results: no credentials, query or fragment.
    pub fn display_url(&self) -> String {
        self.display.clone()
    }
}

pub struct ServerTarget {
    config: ServerConfig,
    client: clickhouse::Client,
    runtime: tokio::runtime::Runtime,
}

impl ServerTarget {
    /// Builds a client with the session defaults and checks that the server answers.
    pub fn connect(config: ServerConfig) -> Result<ServerTarget> {
        let runtime = crate::runtime::blocking_runtime("the HTTP client")?;
        let mut client =
            clickhouse::Client::default().with_url(&config.url).with_user(&config.user).with_password(&config.password);
        for (name, value) in Settings::session_defaults().iter() {
            client = client.with_setting(name, value);
        }
        let mut target = ServerTarget { config, client, runtime };
        target.run("SELECT 1", &Settings::new(), "TabSeparated")?;
        Ok(target)
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// One line naming the server and what went wrong. The password cannot be in it:
    /// it travels in a header, which the client library's errors do not print.
    fn explain_error(&self, error: clickhouse::error::Error) -> anyhow::Error {
        let url = self.config.display_url();
        let text = error.to_string();
        match error {
            clickhouse::error::Error::Network(_) => {
                anyhow!("cannot reach ClickHouse at {url}: {text}")
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
        let mut query = self.client.query_raw(sql);
        for (name, value) in settings.iter() {
            query = query.with_setting(name, value);
        }
        let outcome = self.runtime.block_on(async {
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
        });
        outcome.map_err(|error| self.explain_error(error))
    }

    fn endpoint(&self) -> String {
        self.config.display_url()
    }
}

/// A variable that may be unset; set but not UTF-8 is an error (never a silent default,
/// and the message does not show the value).
fn optional_env(name: &str) -> Result<Option<String>> {
    match std::env::var(name) {
        Ok(value) => Ok(Some(value)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => bail!("{name} is not valid UTF-8; set it to UTF-8 text"),
    }
}

/// ClickHouse's ways of saying "wrong user or password" across versions:
/// 516 AUTHENTICATION_FAILED (current), 194 REQUIRED_PASSWORD, 193 WRONG_PASSWORD (old).
fn is_authentication_failure(text: &str) -> bool {
    ["Code: 516", "Code: 194", "Code: 193", "AUTHENTICATION_FAILED", "Wrong password"]
        .iter()
        .any(|marker| text.contains(marker))
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
    fn non_http_urls_are_refused_without_echoing_them() {
        for url in ["tcp://host:9000/s3cret", "https://host/s3cret", "not a url s3cret", "http://"] {
            let error = ServerConfig::new(url, "u", "").unwrap_err().to_string();
            assert!(!error.contains("s3cret"), "{error}");
        }
    }
}

//! ClickHouse settings for a session or one statement, the defaults every measured
//! session runs with, and the run's own session settings (`bench --setting NAME=VALUE`),
//! which join those defaults for every session this process opens.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// Settings the harness sets on every measured statement itself: a value given for the
/// run or a variant would be overwritten (`log_comment` tags the statement) or would break
/// finding its record (`query_id`).
pub const HARNESS_SETTINGS: [&str; 2] = ["log_comment", "query_id"];

/// Why `name` cannot be given as a run's or a variant's setting, when it cannot: the
/// harness sets it on every measured statement, or (`readonly`) the tool's session must
/// set its own settings (and make its tables), which a read-only session refuses.
pub fn refused_setting(name: &str) -> Option<&'static str> {
    if HARNESS_SETTINGS.contains(&name) {
        return Some("is set by the harness on every measured statement; leave it out");
    }
    if name == "readonly" {
        return Some(
            "cannot be set for a run: the tool's session needs to set its own settings (and create its tables), which a \
             read-only session refuses; leave it out",
        );
    }
    None
}

/// The run's own session settings, chosen once before a target opens.
static RUN_SETTINGS: OnceLock<Settings> = OnceLock::new();

/// Ordered `name = value` settings. Values are kept as text, as ClickHouse's HTTP
/// interface takes them; [`Settings::set_statements`] quotes them for `SET`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings(BTreeMap<String, String>);

impl Settings {
    pub fn new() -> Settings {
        Settings::default()
    }

    /// What every session starts with: no query cache and no query condition cache
    /// (both would make a repeated "warm" run measure a cache, not the scan; the
    /// condition cache is on by default in 26.x). A scenario about caches overrides them.
    ///
    /// Skip indexes are applied while planning (`use_skip_indexes_on_data_read = 0`, as on
    /// the engines before 25.x and in ClickHouse's own tests): with the 26.x default of
    /// applying them while reading, the `SelectedParts` event counts parts before skip
    /// indexes and disagrees with EXPLAIN's skip stage (docs/embedded-engine.md).
    ///
    /// The run's own settings ([`choose_run_settings`]) come on top, so that every session
    /// of the process (the target's, each concurrent client's) runs with them and the
    /// bundle's `session_settings` records them.
    pub fn session_defaults() -> Settings {
        let defaults = Settings::new()
            .with("use_query_cache", 0)
            .with("use_query_condition_cache", 0)
            .with("use_skip_indexes_on_data_read", 0);
        match RUN_SETTINGS.get() {
            Some(run) => defaults.merged(run),
            None => defaults,
        }
    }

    /// Whether the session default `name` may be left out on a server that does not know
    /// it, because leaving it out measures the same: the settings that turn a cache off (a
    /// server without the setting has no such cache), and `use_skip_indexes_on_data_read`
    /// (new in 25.9: a server without it applies skip indexes while planning, which is
    /// what the session's 0 asks for). Any other unknown setting is refused on open.
    pub fn unknown_changes_nothing(name: &str) -> bool {
        matches!(name, "use_query_cache" | "use_query_condition_cache" | "use_skip_indexes_on_data_read")
    }

    /// Bypasses the page cache for reads (the source's "direct I/O" run).
    pub fn direct_io() -> Settings {
        Settings::new().with("min_bytes_to_use_direct_io", 1)
    }

    pub fn with(mut self, name: &str, value: impl fmt::Display) -> Settings {
        self.0.insert(name.to_string(), value.to_string());
        self
    }

    /// These settings with `other`'s on top.
    pub fn merged(&self, other: &Settings) -> Settings {
        let mut merged = self.clone();
        merged.0.extend(other.0.iter().map(|(name, value)| (name.clone(), value.clone())));
        merged
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(name, value)| (name.as_str(), value.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One `SET name = value` statement per setting, values quoted as SQL literals
    /// unless they are numbers or booleans.
    pub fn set_statements(&self) -> Vec<String> {
        self.iter().map(|(name, value)| format!("SET {name} = {}", sql_literal(value))).collect()
    }
}

/// Puts `settings` in every session this process opens from now on (on top of the
/// defaults), once, before the first target opens: `bench --setting`. A second call with
/// other settings is refused, since sessions already open would keep the first.
pub fn choose_run_settings(settings: Settings) -> Result<()> {
    let chosen = RUN_SETTINGS.get_or_init(|| settings.clone());
    if *chosen != settings {
        bail!("this process's session settings were chosen already; a run chooses them once, before it opens a target");
    }
    Ok(())
}

/// The run's own session settings, as [`choose_run_settings`] chose them (none yet: empty).
pub fn run_settings() -> Settings {
    RUN_SETTINGS.get().cloned().unwrap_or_default()
}

/// `NAME=VALUE` as `--setting` takes it: a setting name (an identifier), a value without
/// control characters, and not a setting the harness sets itself. Each mistake is one line
/// quoting the flag.
pub fn parse_setting(text: &str) -> Result<(String, String)> {
    let Some((name, value)) = text.split_once('=') else {
        bail!("--setting {text:?} is not NAME=VALUE; write e.g. --setting max_threads=1");
    };
    if !is_setting_name(name) {
        bail!(
            "--setting {text:?}: {name:?} is not a setting name (letters, digits and `_`, not starting with a digit)"
        );
    }
    if value.is_empty() || value.chars().any(char::is_control) {
        bail!("--setting {text:?}: {name} has no value; write {name}=VALUE");
    }
    if let Some(why) = refused_setting(name) {
        bail!("--setting {text:?}: {name} {why}");
    }
    Ok((name.to_string(), value.to_string()))
}

/// A setting name as ClickHouse spells them: ASCII letters, digits and `_`, not starting
/// with a digit.
pub fn is_setting_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A setting value as an SQL literal: numbers, booleans and `DEFAULT` bare, the rest quoted.
pub fn sql_literal(value: &str) -> String {
    let bare = value.parse::<f64>().is_ok() || matches!(value, "true" | "false" | "DEFAULT");
    if bare { value.to_string() } else { crate::sql::sql_string(value) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_statements_quote_only_text() {
        let settings = Settings::new().with("max_threads", 2).with("log_comment", "run/it's");
        assert_eq!(settings.set_statements(), vec!["SET log_comment = 'run/it\\'s'", "SET max_threads = 2"]);
    }

    #[test]
    fn a_setting_flag_is_a_name_and_a_value_and_not_the_harnesss() {
        assert_eq!(parse_setting("max_threads=1").unwrap(), ("max_threads".to_string(), "1".to_string()));
        assert_eq!(parse_setting("x=a=b").unwrap().1, "a=b");
        for (wrong, said) in [
            ("max_threads", "is not NAME=VALUE"),
            ("1x=2", "is not a setting name"),
            ("max threads=2", "is not a setting name"),
            ("max_threads=", "has no value"),
            ("log_comment=x", "is set by the harness"),
            ("readonly=1", "readonly cannot be set for a run: the tool's session needs to set its own settings"),
        ] {
            let error = parse_setting(wrong).unwrap_err().to_string();
            assert!(error.starts_with(&format!("--setting {wrong:?}")) && error.contains(said), "{error}");
        }
    }

    #[test]
    fn merged_settings_take_the_override() {
        let merged = Settings::session_defaults().merged(&Settings::new().with("use_query_cache", 1));
        assert_eq!(merged.get("use_query_cache"), Some("1"));
        assert_eq!(merged.get("use_query_condition_cache"), Some("0"));
    }
}

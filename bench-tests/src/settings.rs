//! ClickHouse settings for a session or one statement, and the defaults every
//! measured session runs with.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

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
    pub fn session_defaults() -> Settings {
        Settings::new()
            .with("use_query_cache", 0)
            .with("use_query_condition_cache", 0)
            .with("use_skip_indexes_on_data_read", 0)
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
    fn merged_settings_take_the_override() {
        let merged = Settings::session_defaults().merged(&Settings::new().with("use_query_cache", 1));
        assert_eq!(merged.get("use_query_cache"), Some("1"));
        assert_eq!(merged.get("use_query_condition_cache"), Some("0"));
    }
}

//! The engine versions this tool supports: the oldest, and an answer to `SELECT version()`
//! read and checked against it.

use anyhow::{Result, bail};

use crate::sql::one_line;

/// The oldest ClickHouse release (year, month) this tool supports: 24.3, the first with
/// the userspace page cache, which every cold run drops (`SYSTEM DROP PAGE CACHE` in
/// [`crate::measure::CACHE_DROPS`]); a cold run on an older server would read a warm
/// cache. What is newer is left out where the server lacks it, since that changes no
/// measurement: the query condition cache (25.3; nothing to drop or turn off) and
/// `use_skip_indexes_on_data_read` (25.9; without it skip indexes apply while planning,
/// the mode the session pins). The rest it relies on is older (docs/targets.md,
/// "Server versions", lists it): `log_comment` and its `system.query_log` column,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

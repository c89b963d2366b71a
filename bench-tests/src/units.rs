//! Numbers as people read and write them: byte sizes, durations, rates, ratios and row
//! counts (`10M`). A value that
//! was not measured (`None`, or NaN and infinities out of arithmetic) reads
//! `unknown`, never 0.

use humansize::{BINARY, FormatSizeOptions, format_size};

/// Bytes in binary units with two decimals, as ClickHouse's `formatReadableSize` prints
/// them: `500.00 B`, `488.62 KiB`, `7.82 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    format_size(bytes, FormatSizeOptions::from(BINARY).decimal_places(2).decimal_zeroes(2))
}

/// A number with `decimals` places (in scientific notation when it is too large or too
/// small for that to be readable), or `unknown` when it is `None` or not finite.
pub fn number(value: impl Into<Option<f64>>, decimals: usize) -> String {
    match value.into().filter(|value| value.is_finite()) {
        None => "unknown".to_string(),
        Some(value) if readable_as_decimal(value) => format!("{value:.decimals$}"),
        Some(value) => format!("{value:.decimals$e}"),
    }
}

/// A number as given (all its digits, or scientific notation when there are too many),
/// or `unknown` when it is `None` or not finite.
pub fn exact(value: impl Into<Option<f64>>) -> String {
    match value.into().filter(|value| value.is_finite()) {
        None => "unknown".to_string(),
        Some(value) if readable_as_decimal(value) => value.to_string(),
        Some(value) => format!("{value:e}"),
    }
}

/// A number with exactly `decimals` places whatever its size (`2.63`, `0.00`), or
/// `unknown` when it is `None` or not finite.
pub fn seconds(value: impl Into<Option<f64>>, decimals: usize) -> String {
    value
        .into()
        .filter(|value| value.is_finite())
        .map_or("unknown".to_string(), |value| format!("{value:.decimals$} s"))
}

/// Whether `value` prints as a decimal of reasonable length.
fn readable_as_decimal(value: f64) -> bool {
    value == 0.0 || (1e-4..1e15).contains(&value.abs())
}

/// Milliseconds as `4.0 ms` or, from a second on, `2.63 s`.
pub fn milliseconds(value: Option<f64>) -> String {
    match value.filter(|ms| ms.is_finite()) {
        None => "unknown".to_string(),
        Some(ms) if ms >= 1000.0 => format!("{:.2} s", ms / 1000.0),
        Some(ms) => format!("{ms:.1} ms"),
    }
}

/// A count with its thousands grouped: `2,048`, `1,000,000`. By hand: the grouping is a
/// loop, and a crate for it would add a dependency for nothing else.
pub fn thousands(count: u64) -> String {
    let digits = count.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// A rate per second, whole.
pub fn per_second(rate: Option<f64>) -> String {
    number(rate, 0)
}

/// A share as `1.44 %`, or `unknown` (said as the caller's words) when it is not known; one
/// too large to print as a decimal (from a corrupt figure) in scientific notation.
pub fn percent(share: Option<f64>, unknown: &str) -> String {
    match share.map(|share| 100.0 * share).filter(|percent| percent.is_finite()) {
        None => unknown.to_string(),
        Some(percent) if percent.abs() < 1e15 => format!("{percent:.2} %"),
        Some(percent) => format!("{percent:.2e} %"),
    }
}

/// `1 client`, `4 clients`: a count and its noun, whose plural takes an s.
pub fn plural(count: impl Into<u64>, one: &str) -> String {
    match count.into() {
        1 => format!("1 {one}"),
        count => format!("{count} {one}s"),
    }
}

/// `1 query`, `2 queries`: [`plural`] for a noun whose plural is not its `s` form.
pub fn plural_as(count: impl Into<u64>, one: &str, many: &str) -> String {
    match count.into() {
        1 => format!("1 {one}"),
        count => format!("{count} {many}"),
    }
}

/// A test's p value to four places (`0.0079`, `< 0.0001`): never rounded up to a
/// threshold it is below; `unknown` without one.
pub fn p_value(p: Option<f64>) -> String {
    match p.filter(|p| p.is_finite()) {
        None => "unknown".to_string(),
        Some(p) if p < 1e-4 => "< 0.0001".to_string(),
        Some(p) => format!("{p:.4}"),
    }
}

/// A ratio as `2.00x`.
pub fn times(value: Option<f64>) -> String {
    value.filter(|value| value.is_finite()).map_or("unknown".to_string(), |value| format!("{value:.2}x"))
}

/// A chart label: three significant-looking digits whatever the size.
pub fn compact(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 1.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    }
}

/// `10M`, `250K`, `1234`: a count as [`parse_count`] reads it, for run ids.
pub fn short_count(count: u64) -> String {
    match count {
        count if count >= 1_000_000 && count % 1_000_000 == 0 => format!("{}M", count / 1_000_000),
        count if count >= 1_000 && count % 1_000 == 0 => format!("{}K", count / 1_000),
        count => count.to_string(),
    }
}

/// What a row count of 0, or below, is told.
const ROWS_MUST_BE_POSITIVE: &str = "the row count must be a positive number like 10M";

/// `10M` is 10,000,000; plain numbers and `_` separators work too.
pub fn parse_count(text: &str) -> Result<u64, String> {
    match parse_amount(text, "row count", "1000000 or 10M")? {
        0 => Err(ROWS_MUST_BE_POSITIVE.to_string()),
        rows => Ok(rows),
    }
}

/// A count of parts as [`parse_count`] reads rows, 0 included: what a count of 0 means is
/// for the caller to say.
pub fn parse_part_count(text: &str) -> Result<u64, String> {
    parse_amount(text, "part count", "1000 or 5K")
}

/// `text` as a count of `noun`s (`example` of which says how to write one): K, M and G
/// suffixes and `_` separators work.
fn parse_amount(text: &str, noun: &str, example: &str) -> Result<u64, String> {
    let cleaned = text.trim().replace('_', "");
    // A minus sign is a count below zero, not a typo of the digits: say what a count is.
    if cleaned.starts_with('-') {
        return Err(format!("{text:?}: a {noun} must be a positive number like {example}"));
    }
    let (digits, multiplier) = match cleaned.chars().last() {
        Some('k' | 'K') => (&cleaned[..cleaned.len() - 1], 1_000),
        Some('m' | 'M') => (&cleaned[..cleaned.len() - 1], 1_000_000),
        Some('g' | 'G') => (&cleaned[..cleaned.len() - 1], 1_000_000_000),
        _ => (cleaned.as_str(), 1),
    };
    let count: u64 = digits.parse().map_err(|_| format!("{text:?} is not a {noun} (e.g. {example})"))?;
    count.checked_mul(multiplier).ok_or_else(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_formatreadablesize_prints_them() {
        assert_eq!(human_bytes(500), "500.00 B");
        assert_eq!(human_bytes(500_346), "488.62 KiB");
        assert_eq!(human_bytes(8_396_852_756), "7.82 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.00 EiB");
    }

    #[test]
    fn what_was_not_measured_reads_unknown() {
        assert_eq!(milliseconds(None), "unknown");
        assert_eq!(milliseconds(Some(f64::NAN)), "unknown");
        assert_eq!(milliseconds(Some(2630.0)), "2.63 s");
        assert_eq!(per_second(Some(f64::INFINITY)), "unknown");
        assert_eq!(times(Some(1.971)), "1.97x");
        assert_eq!(percent(Some(0.01437), "unknown share"), "1.44 %");
        assert_eq!(percent(None, "unknown share"), "unknown share");
        assert_eq!(number(f64::NEG_INFINITY, 1), "unknown");
        assert_eq!(number(None, 1), "unknown");
        assert_eq!(exact(None), "unknown");
        assert_eq!(seconds(Some(1e-6), 2), "0.00 s");
        assert_eq!(seconds(None, 2), "unknown");
        assert_eq!(number(1e300, 2), "1.00e300");
        assert_eq!(exact(1e-300), "1e-300");
        assert_eq!(exact(0.0912), "0.0912");
    }

    #[test]
    fn row_counts_read_short_in_run_ids() {
        assert_eq!(short_count(10_000_000), "10M");
        assert_eq!(short_count(250_000), "250K");
        assert_eq!(short_count(1234), "1234");
    }

    #[test]
    fn row_counts_take_suffixes() {
        assert_eq!(parse_count("10M"), Ok(10_000_000));
        assert_eq!(parse_count("100m"), Ok(100_000_000));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert_eq!(parse_count("2k"), Ok(2000));
        assert!(parse_count("ten").unwrap_err().contains("not a row count"));
        assert_eq!(parse_count("0"), Err("the row count must be a positive number like 10M".to_string()));
        assert_eq!(
            parse_count("-5"),
            Err("\"-5\": a row count must be a positive number like 1000000 or 10M".to_string())
        );
        assert!(parse_part_count("-1K").unwrap_err().contains("a part count must be a positive number"));
    }
}

//! Numbers that may be unknown: ratios over nothing, medians of nothing, and `null` in a
//! bundle read back as NaN. A number the tool cannot measure is unknown, never 0.

use serde::{Deserialize, Deserializer};

/// `numerator / denominator` when both are finite and the denominator is positive:
/// a rate or ratio over nothing is unknown, never zero or infinite.
pub fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    let value = numerator / denominator;
    (denominator > 0.0 && value.is_finite()).then_some(value)
}

/// The median of sorted values (the mean of the middle two for an even count); unknown
/// for no values.
pub fn median(sorted: &[f64]) -> Option<f64> {
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The median of values in any order; unknown for no values.
pub fn median_unsorted(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    median(&values)
}

/// The median of values that must all be known: one unknown makes it unknown, since a
/// median of the ones that happen to be known would describe other runs.
pub fn median_of_all(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    median_unsorted(values.into_iter().collect::<Option<Vec<f64>>>()?)
}

/// Reads a number that may have been written as `null` (not finite: JSON has no NaN)
/// as NaN, so that nothing the writer produces is refused; reports show it as unknown.
pub fn nan_if_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, 2.0, 9.0]), Some(2.0));
        assert_eq!(median(&[1.0, 2.0, 4.0, 9.0]), Some(3.0));
    }

    #[test]
    fn a_ratio_over_nothing_is_unknown() {
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(ratio(f64::NAN, 1.0), None);
        assert_eq!(ratio(3.0, 2.0), Some(1.5));
    }
}

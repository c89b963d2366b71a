//! Numbers that may be unknown: ratios over nothing, medians of nothing, figures that
//! overflowed. A number the tool cannot measure is unknown (`None`), never 0 or NaN: NaN
//! lives only inside arithmetic, and [`known`] makes a result `None` before it is kept.

/// `value` when it is finite: a figure kept in a record or shown is unknown rather than
/// NaN or infinite (a bundle's JSON has no such numbers; it writes `null`).
pub fn known(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

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

    #[test]
    fn a_figure_that_is_not_finite_is_unknown() {
        assert_eq!(known(f64::NAN), None);
        assert_eq!(known(f64::INFINITY), None);
        assert_eq!(known(-0.5), Some(-0.5));
    }
}

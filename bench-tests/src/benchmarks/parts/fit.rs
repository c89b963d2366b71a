//! The slope of planning time against active parts: a least-squares line through each
//! part count's median (of every one-client sample of a query on a design there), with
//! its R² and the slope's standard error, and a verdict on whether the slope is a number
//! to state. Medians, so that one sample that met a hiccup of the machine does not bend
//! the line; the samples themselves stay in the bundle.
//!
//! Written out rather than taken from a crate: the one fit needed is a straight line in
//! one variable (four sums), and the crates that fit lines (linregress, statrs) bring a
//! linear-algebra stack the default build does not otherwise compile.

use super::results::{FitQuality, Fitted, SlopeFit};
use crate::numbers::{known, median_unsorted};

/// R² from which a line is a clean description of the medians.
pub const GOOD_R_SQUARED: f64 = 0.9;
/// The slope, µs per 1,000 parts, below which a query is flat even two standard errors
/// up: 0.1 µs a part, a fortieth of what planning costs a part on ClickHouse 26.7.
pub const FLAT_SLOPE_US_PER_1K_PARTS: f64 = 100.0;

/// Fits `y = intercept + slope * parts` through the median of `samples` (active parts,
/// µs) at each part count, slope given per 1,000 parts. A sample whose y is unknown makes
/// the fit unknown: a line through the samples that happen to be known would be a
/// different sweep.
pub fn fit_line(design: &str, query: &str, fitted: Fitted, samples: &[(u64, Option<f64>)]) -> SlopeFit {
    let mut distinct: Vec<u64> = samples.iter().map(|(parts, _)| *parts).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let unknown = |reason: &str| SlopeFit {
        design: design.to_string(),
        query: query.to_string(),
        fitted,
        samples: samples.len(),
        part_counts: distinct.len(),
        slope_us_per_1k_parts: None,
        intercept_us: None,
        r_squared: None,
        slope_stderr_us_per_1k_parts: None,
        quality: FitQuality::Unknown { reason: reason.to_string() },
    };
    if distinct.len() < 2 {
        return unknown("one part count: a slope needs two");
    }
    if samples.iter().any(|(_, y)| !y.is_some_and(f64::is_finite)) {
        return unknown("a sample's figure is unknown (the engine lacks a counter it needs)");
    }
    if distinct.len() < 3 {
        return unknown("two part counts: a line through two medians has no fit to judge; give a third point");
    }
    let points: Vec<(f64, f64)> = distinct
        .iter()
        .map(|&parts| {
            let at: Vec<f64> = samples.iter().filter(|(x, _)| *x == parts).filter_map(|(_, y)| *y).collect();
            (parts as f64, median_unsorted(at).unwrap_or(f64::NAN))
        })
        .collect();
    let n = points.len() as f64;
    let mean_x = points.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = points.iter().map(|(_, y)| y).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    let syy: f64 = points.iter().map(|(_, y)| (y - mean_y).powi(2)).sum();
    let slope = sxy / sxx * 1000.0;
    let intercept = mean_y - slope / 1000.0 * mean_x;
    let residual: f64 = points.iter().map(|(x, y)| (y - intercept - slope / 1000.0 * x).powi(2)).sum();
    // Every median equal: the line is exact and level.
    let r_squared = if syy > 0.0 { 1.0 - residual / syy } else { 1.0 };
    let stderr = (residual / (n - 2.0) / sxx).sqrt() * 1000.0;
    let quality = if r_squared >= GOOD_R_SQUARED && syy > 0.0 && slope.abs() > FLAT_SLOPE_US_PER_1K_PARTS {
        FitQuality::Linear
    } else if slope.abs() + 2.0 * stderr <= FLAT_SLOPE_US_PER_1K_PARTS {
        // Level even at the edge of what the noise allows: never a noisy growth.
        FitQuality::Flat
    } else if r_squared >= GOOD_R_SQUARED && syy > 0.0 {
        FitQuality::Linear
    } else {
        FitQuality::Poor
    };
    SlopeFit {
        slope_us_per_1k_parts: known(slope),
        intercept_us: known(intercept),
        r_squared: known(r_squared),
        slope_stderr_us_per_1k_parts: known(stderr),
        quality,
        ..unknown("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(points: &[(u64, f64)]) -> Vec<(u64, Option<f64>)> {
        points.iter().map(|(x, y)| (*x, Some(*y))).collect()
    }

    #[test]
    fn a_line_through_its_points_is_linear_with_its_slope() {
        let fit =
            fit_line("d", "q", Fitted::Planning, &samples(&[(100, 1_500.0), (1_000, 6_000.0), (5_000, 26_000.0)]));
        assert_eq!(fit.quality, FitQuality::Linear);
        assert!((fit.slope_us_per_1k_parts.unwrap() - 5_000.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.intercept_us.unwrap() - 1_000.0).abs() < 1e-6);
        assert!((fit.r_squared.unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn one_sample_that_met_a_hiccup_does_not_bend_the_line() {
        let mut points = Vec::new();
        for parts in [100, 1_000, 5_000, 20_000] {
            points.extend([(parts, 200.0), (parts, 210.0), (parts, 190.0)]);
        }
        // SELECT 1 at 1,000 parts, once 30 times slower than the rest.
        points.push((1_000, 6_183.0));
        let select_one = fit_line("d", "select_one", Fitted::Planning, &samples(&points));
        assert_eq!(select_one.quality, FitQuality::Flat, "{select_one:?}");
        assert_eq!((select_one.samples, select_one.part_counts), (13, 4));
    }

    #[test]
    fn noise_about_a_level_line_is_flat_a_bend_or_a_small_sweep_is_poor() {
        let flat = fit_line(
            "d",
            "q",
            Fitted::Duration,
            &samples(&[(100, 50_000.0), (5_000, 50_100.0), (20_000, 49_990.0), (20_000, 50_010.0)]),
        );
        assert_eq!(flat.quality, FitQuality::Flat, "{flat:?}");
        // Rises steeply and falls back: no line describes it.
        let bend = fit_line(
            "d",
            "q",
            Fitted::Duration,
            &samples(&[(100, 100.0), (1_000, 100_000.0), (5_000, 100_000.0), (20_000, 100.0)]),
        );
        assert_eq!(bend.quality, FitQuality::Poor, "{bend:?}");
        // Growth over a sweep too small to tell from noise is poor, never flat.
        let small = fit_line("d", "q", Fitted::Planning, &samples(&[(10, 1_500.0), (50, 1_300.0), (100, 1_900.0)]));
        assert_eq!(small.quality, FitQuality::Poor, "{small:?}");
    }

    #[test]
    fn too_few_part_counts_or_an_unknown_sample_is_no_slope() {
        let reason = |fit: &SlopeFit| match &fit.quality {
            FitQuality::Unknown { reason } if fit.slope_us_per_1k_parts.is_none() => reason.clone(),
            quality => panic!("a slope from {fit:?}: {quality:?}"),
        };
        let one = fit_line("d", "q", Fitted::Planning, &samples(&[(100, 1.0), (100, 2.0)]));
        assert!(reason(&one).starts_with("one part count"));
        let two = fit_line("d", "q", Fitted::Planning, &samples(&[(100, 1.0), (100, 3.0), (1_000, 50.0)]));
        assert!(reason(&two).starts_with("two part counts"));
        let unknown = fit_line("d", "q", Fitted::Planning, &[(100, Some(1.0)), (1_000, None), (5_000, Some(2.0))]);
        assert!(reason(&unknown).contains("unknown"));
    }
}

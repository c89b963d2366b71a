//! The slope of planning time against active parts: a least-squares line through every
//! one-client sample of a query on a design, with its R² and the slope's standard error,
//! and a verdict on whether the slope is a number to state.
//!
//! Written out rather than taken from a crate: the one fit needed is a straight line in
//! one variable (four sums), and the crates that fit lines (linregress, statrs) bring a
//! linear-algebra stack the default build does not otherwise compile.

use super::results::{FitQuality, Fitted, SlopeFit};

/// R² from which a line is a clean description of the samples.
pub const GOOD_R_SQUARED: f64 = 0.9;
/// Growth over the sweep (two standard errors up), as a share of the samples' mean, below
/// which a query is flat (its low R² is noise about a level line).
pub const FLAT_GROWTH: f64 = 0.1;
/// Growth over the whole sweep below which a query is flat whatever its mean: a
/// millisecond, about the noise of one events read in a duration counter.
pub const FLAT_FLOOR_US: f64 = 1000.0;

/// Fits `y = intercept + slope * parts` through `samples` (active parts, µs), slope given
/// per 1,000 parts. A sample whose y is unknown makes the fit unknown: a line through the
/// samples that happen to be known would be a different sweep.
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
    let Some(points): Option<Vec<(f64, f64)>> =
        samples.iter().map(|(parts, y)| y.filter(|y| y.is_finite()).map(|y| (*parts as f64, y))).collect()
    else {
        return unknown("a sample's figure is unknown (the engine lacks a counter it needs)");
    };
    if points.len() < 3 {
        return unknown(
            "two samples: a line through two says nothing of how well it fits; give --runs 2 or a third point",
        );
    }
    let n = points.len() as f64;
    let mean_x = points.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = points.iter().map(|(_, y)| y).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    let syy: f64 = points.iter().map(|(_, y)| (y - mean_y).powi(2)).sum();
    let slope = sxy / sxx;
    let intercept = mean_y - slope * mean_x;
    let residual: f64 = points.iter().map(|(x, y)| (y - intercept - slope * x).powi(2)).sum();
    // Every sample equal: the line is exact and flat.
    let r_squared = if syy > 0.0 { 1.0 - residual / syy } else { 1.0 };
    let stderr = Some((residual / (n - 2.0) / sxx).sqrt() * 1000.0);
    let (low, high) = (distinct[0] as f64, distinct[distinct.len() - 1] as f64);
    let growth = slope * (high - low);
    // The most the line may rise over the sweep, two standard errors up: flat only when
    // even that is small, so that noise as large as the growth is never called flat.
    let most_growth = stderr.map_or(f64::INFINITY, |stderr| growth.abs() + 2.0 * stderr / 1000.0 * (high - low));
    let quality = if r_squared >= GOOD_R_SQUARED && syy > 0.0 {
        FitQuality::Linear
    } else if most_growth <= (FLAT_GROWTH * mean_y.abs()).max(FLAT_FLOOR_US) {
        FitQuality::Flat
    } else {
        FitQuality::Poor
    };
    SlopeFit {
        slope_us_per_1k_parts: Some(slope * 1000.0),
        intercept_us: Some(intercept),
        r_squared: Some(r_squared),
        slope_stderr_us_per_1k_parts: stderr,
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
    fn noise_about_a_level_line_is_flat_and_a_bend_is_poor() {
        let flat = fit_line(
            "d",
            "q",
            Fitted::Duration,
            &samples(&[(100, 50_000.0), (100, 52_000.0), (20_000, 50_500.0), (20_000, 49_000.0)]),
        );
        assert_eq!(flat.quality, FitQuality::Flat, "{flat:?}");
        // Rises steeply and falls back: no line describes it.
        let bend = fit_line(
            "d",
            "q",
            Fitted::Duration,
            &samples(&[(100, 100.0), (1_000, 100_000.0), (5_000, 100_000.0), (20_000, 100.0), (20_000, 150_000.0)]),
        );
        assert_eq!(bend.quality, FitQuality::Poor, "{bend:?}");
    }

    #[test]
    fn a_query_that_stays_below_a_millisecond_is_flat() {
        let select_one =
            fit_line("d", "q", Fitted::Planning, &samples(&[(10, 90.0), (10, 140.0), (1_000, 120.0), (1_000, 95.0)]));
        assert_eq!(select_one.quality, FitQuality::Flat, "{select_one:?}");
    }

    #[test]
    fn one_part_count_or_an_unknown_sample_is_no_slope() {
        let one = fit_line("d", "q", Fitted::Planning, &samples(&[(100, 1.0), (100, 2.0)]));
        assert!(matches!(one.quality, FitQuality::Unknown { .. }) && one.slope_us_per_1k_parts.is_none());
        let unknown = fit_line("d", "q", Fitted::Planning, &[(100, Some(1.0)), (1_000, None), (1_000, Some(2.0))]);
        assert!(matches!(unknown.quality, FitQuality::Unknown { .. }));
        let two = fit_line("d", "q", Fitted::Planning, &samples(&[(100, 1.0), (1_000, 50.0)]));
        assert!(matches!(&two.quality, FitQuality::Unknown { reason } if reason.starts_with("two samples")), "{two:?}");
    }
}

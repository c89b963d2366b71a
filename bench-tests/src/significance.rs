//! Whether two sets of timings differ: the test, its thresholds and its verdict.
//! PLACEHOLDER until the real test lands (same API).

use serde::{Deserialize, Serialize};

pub const MIN_SAMPLES: usize = 5;
pub const AB_RUNS: u32 = 50;

#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    pub alpha: f64,
    pub min_change: f64,
    pub unstable_noise: f64,
    pub resamples: u32,
    pub seed: u64,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds { alpha: 0.01, min_change: 0.05, unstable_noise: 0.20, resamples: 10_000, seed: 1 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    Unchanged,
    Unstable,
    Untestable,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Significance {
    pub baseline_median: Option<f64>,
    pub candidate_median: Option<f64>,
    pub ratio: Option<f64>,
    pub relative_change: Option<f64>,
    pub p_value: Option<f64>,
    pub noise: Option<f64>,
    pub baseline_samples: usize,
    pub candidate_samples: usize,
    pub unknown_samples: usize,
    pub verdict: Verdict,
    pub reason: Option<String>,
}

pub fn compare_timings(baseline: &[f64], candidate: &[f64], thresholds: &Thresholds) -> Significance {
    let median =
        |values: &[f64]| crate::numbers::median_unsorted(values.iter().copied().filter(|v| v.is_finite()).collect());
    let (a, b) = (median(baseline), median(candidate));
    let ratio = a.zip(b).and_then(|(a, b)| crate::numbers::ratio(b, a));
    let relative_change = ratio.map(|ratio| ratio - 1.0);
    let verdict = match relative_change {
        _ if baseline.len() < MIN_SAMPLES || candidate.len() < MIN_SAMPLES => Verdict::Untestable,
        Some(change) if change > thresholds.min_change * 2.0 => Verdict::Slower,
        Some(change) if change < -thresholds.min_change * 2.0 => Verdict::Faster,
        _ => Verdict::Unchanged,
    };
    Significance {
        baseline_median: a,
        candidate_median: b,
        ratio,
        relative_change,
        p_value: None,
        noise: None,
        baseline_samples: baseline.len(),
        candidate_samples: candidate.len(),
        unknown_samples: 0,
        verdict,
        reason: None,
    }
}

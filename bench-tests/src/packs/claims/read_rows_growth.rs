//! `read_rows_growth_at_most = K` and `read_rows_growth_at_least = K`: at the largest of
//! the query's scales it read at most (at least) K times the rows it read at the smallest.
//! Checked in the largest scale's case, against the same design observed at the smallest.

use anyhow::{Result, bail};
use serde::Deserialize;
use toml::Spanned;

use super::{Bound, ClaimKey, Observations, Rule, SectionClaims};
use crate::invariant::{Check, claim};
use crate::packs::{Case, Query};

/// `read_rows_growth_at_most = K` (K = 1: read_rows does not grow with N).
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub(super) struct ReadRowsGrowthAtMost(Spanned<f64>);

impl ClaimKey for ReadRowsGrowthAtMost {
    const KEY: &'static str = "read_rows_growth_at_most";

    fn state(&self, claims: &mut SectionClaims) -> Result<()> {
        let factor = *self.0.get_ref();
        if !(factor.is_finite() && factor >= 1.0) {
            bail!("{}: {} must be a number of at least 1, not {factor}", claims.line(self.0.span()), Self::KEY);
        }
        claims.push(Self::KEY, self.0.span(), Growth { bound: Bound::AtMost, factor });
        Ok(())
    }
}

/// `read_rows_growth_at_least = K`: the read grows with the table (K = the ratio of the
/// scales: a full scan).
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub(super) struct ReadRowsGrowthAtLeast(Spanned<f64>);

impl ClaimKey for ReadRowsGrowthAtLeast {
    const KEY: &'static str = "read_rows_growth_at_least";

    fn state(&self, claims: &mut SectionClaims) -> Result<()> {
        let factor = *self.0.get_ref();
        if !(factor.is_finite() && factor > 0.0) {
            bail!("{}: {} must be a positive number, not {factor}", claims.line(self.0.span()), Self::KEY);
        }
        claims.push(Self::KEY, self.0.span(), Growth { bound: Bound::AtLeast, factor });
        Ok(())
    }
}

#[derive(Debug)]
struct Growth {
    bound: Bound,
    factor: f64,
}

impl Rule for Growth {
    fn refusal(&self, query: &Query) -> Option<&'static str> {
        (query.scales.len() < 2).then_some("compares scales, and the query runs at one")
    }

    fn compared_with(&self, case: &Case, query: &Query) -> Vec<(String, u64)> {
        smallest_if_largest(case, query).map(|smallest| (case.design.clone(), smallest)).into_iter().collect()
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let smallest = smallest_if_largest(observed.case, observed.query)?;
        let (factor, largest) = (self.factor, observed.own);
        Some(observed.of(name, &observed.case.design, smallest).and_then(|at_smallest| {
            claim(
                name,
                self.bound.holds(largest.read_rows as f64, factor * at_smallest.read_rows as f64),
                format!(
                    "{} rows read at {} rows, {} at {}",
                    largest.read_rows, largest.rows, at_smallest.read_rows, at_smallest.rows
                ),
                format!("{} times as many at the largest scale as at the smallest", self.bound.text(factor)),
            )
        }))
    }
}

/// The smallest scale, when the case is at the largest of several (where growth is
/// checked).
fn smallest_if_largest(case: &Case, query: &Query) -> Option<u64> {
    let smallest = *query.scales.first()?;
    (query.scales.last() == Some(&case.rows) && smallest < case.rows).then_some(smallest)
}

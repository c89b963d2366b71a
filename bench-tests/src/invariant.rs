//! Invariants: named claims about a measurement, checked to a [`Violation`] that says
//! what was measured and what was expected. Scenarios assert that a good design holds
//! every claim and that a deliberately broken design violates the one it should: that
//! pairing is what makes a scenario a useful PR gate.

use std::fmt;

/// A claim that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The claim's name, e.g. `q1_reads_at_most_two_granules`.
    pub invariant: String,
    pub measured: String,
    pub expected: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invariant {} violated: measured {}, expected {}", self.invariant, self.measured, self.expected)
    }
}

impl std::error::Error for Violation {}

/// A claim that held, with what was measured: a report that says "holds" shows the value
/// too, so that a claim about to fail (0.991 against at least 0.99) is seen before it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub invariant: String,
    pub measured: String,
    pub expected: String,
}

impl fmt::Display for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invariant {} holds: measured {}, expected {}", self.invariant, self.measured, self.expected)
    }
}

/// The outcome of checking one claim.
pub type Check = Result<Held, Violation>;

/// Holds when `holds` is true; otherwise a violation with the measured and expected text.
pub fn claim(invariant: &str, holds: bool, measured: impl fmt::Display, expected: impl fmt::Display) -> Check {
    if holds {
        Ok(Held { invariant: invariant.to_string(), measured: measured.to_string(), expected: expected.to_string() })
    } else {
        Err(Violation {
            invariant: invariant.to_string(),
            measured: measured.to_string(),
            expected: expected.to_string(),
        })
    }
}

/// Panics with the violation's message unless the claim held; prints what held.
#[track_caller]
pub fn assert_holds(check: Check) {
    match check {
        Ok(held) => crate::say!("{held}"),
        Err(violation) => panic!("{violation}"),
    }
}

/// Panics unless the claim was violated, and violated as `invariant`: a broken design
/// that passes means the scenario no longer guards what it claims to.
#[track_caller]
pub fn assert_violates(check: Check, invariant: &str) -> Violation {
    match check {
        Ok(held) => panic!("the broken design was expected to violate {invariant}, but the claim held ({held})"),
        Err(violation) if violation.invariant == invariant => violation,
        Err(other) => panic!("expected a violation of {invariant}, got: {other}"),
    }
}

/// Rounds to `digits` significant digits (for snapshots of sizes and ratios that may
/// move by a few bytes between builds).
pub fn significant(value: f64, digits: i32) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let shift = digits - 1 - value.abs().log10().floor() as i32;
    // Divide by a whole power of ten rather than multiply by a fraction, which is inexact.
    if shift >= 0 {
        let scale = 10f64.powi(shift);
        (value * scale).round() / scale
    } else {
        let scale = 10f64.powi(-shift);
        (value / scale).round() * scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_violation_names_the_claim_and_both_values() {
        let violation = claim("q1_reads_at_most_two_granules", false, "3 granules", "at most 2").unwrap_err();
        assert_eq!(
            violation.to_string(),
            "invariant q1_reads_at_most_two_granules violated: measured 3 granules, expected at most 2"
        );
        assert_eq!(assert_violates(Err(violation.clone()), "q1_reads_at_most_two_granules"), violation);
    }

    #[test]
    fn a_claim_that_holds_says_what_was_measured() {
        let held = claim("q1_reads_at_most_two_granules", true, "1 granule", "at most 2").unwrap();
        assert_eq!(
            held.to_string(),
            "invariant q1_reads_at_most_two_granules holds: measured 1 granule, expected at most 2"
        );
    }

    #[test]
    fn significant_digits_round_sizes_and_ratios() {
        assert_eq!(significant(46_107_559.0, 3), 46_100_000.0);
        assert_eq!(significant(1.2437, 3), 1.24);
        assert_eq!(significant(0.0, 3), 0.0);
    }
}

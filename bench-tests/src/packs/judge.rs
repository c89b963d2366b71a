//! Judging a case: the claims that apply to it, the observations they need (the case's own,
//! then those of the designs and scales they compare with, each observed once, one dataset
//! open at a time), each claim's outcome, and the verdict (on a broken design: that the
//! named claim was violated).

use std::collections::BTreeMap;

use anyhow::Result;

use super::claims::{Claim, Rule, Stage};
use super::observe::first_difference;
use super::{AlsoMeasure, Case, CaseOutcome, ClaimCheck, Observation, Pack, Query, VARYING_ANSWER};
use crate::explain::IndexStage;
use crate::invariant::{Check, Violation, claim};
use crate::parts::ColumnSizes;
use crate::targets::TargetKind;

impl Pack {
    /// Runs one case: observes it, then whatever its claims compare with (other designs
    /// at the same scale, the same design at the smallest scale), one dataset open at a
    /// time, and checks every claim that applies to it.
    pub fn run_case(&self, kind: TargetKind, case: &Case) -> Result<CaseOutcome> {
        let query = self.query(&case.query)?;
        let claims: Vec<&Claim> = query
            .claims
            .iter()
            .filter(|claim| claim.only_on.as_ref().is_none_or(|design| *design == case.design))
            .collect();
        let also = claims
            .iter()
            .find_map(|claim| match &claim.rule {
                Rule::RowsDroppedShareAtLeast { skip_index, .. } => {
                    Some(AlsoMeasure::WithoutSkipIndex(skip_index.as_deref()))
                }
                _ => None,
            })
            .unwrap_or(AlsoMeasure::Nothing);
        let mut observed = self.observe(kind, &case.query, &case.design, case.rows, also)?;
        if query.answer_varies {
            // No claim reads it (same_answer_on_every_design is refused on load), and a
            // snapshot of it would fail at random.
            observed.answer = VARYING_ANSWER.to_string();
        }
        let comparing = Comparing { case, query, observed: &observed };
        let mut others: BTreeMap<(String, u64), Observation> = BTreeMap::new();
        for claim in &claims {
            for (design, rows) in comparing.compared_with(&claim.rule) {
                if !others.contains_key(&(design.clone(), rows)) {
                    let other = self.observe(kind, &case.query, &design, rows, AlsoMeasure::Nothing)?;
                    others.insert((design, rows), other);
                }
            }
        }
        let checks = claims
            .into_iter()
            .map(|claim| ClaimCheck { claim: claim.clone(), check: comparing.check(claim, &others) })
            .collect();
        Ok(CaseOutcome { observation: observed, checks })
    }
}

/// A case's own observation, and what it takes to compare it with others.
struct Comparing<'a> {
    case: &'a Case,
    query: &'a Query,
    observed: &'a Observation,
}

impl Comparing<'_> {
    /// The smallest scale, when this case is at the largest of several (where growth
    /// claims are checked).
    fn smallest_if_largest(&self) -> Option<u64> {
        let smallest = *self.query.scales.first()?;
        (self.query.scales.last() == Some(&self.case.rows) && smallest < self.case.rows).then_some(smallest)
    }

    /// The (design, rows) a rule compares this case with, this case left out.
    fn compared_with(&self, rule: &Rule) -> Vec<(String, u64)> {
        let rows = self.case.rows;
        let wanted: Vec<(String, u64)> = match rule {
            Rule::SameAnswerOnEveryDesign => self.query.designs.iter().map(|design| (design.clone(), rows)).collect(),
            Rule::ReadRowsGrowthAtMost(_) => {
                self.smallest_if_largest().map(|smallest| (self.case.design.clone(), smallest)).into_iter().collect()
            }
            rule => rule.other_designs().into_iter().map(|design| (design.to_string(), rows)).collect(),
        };
        wanted
            .into_iter()
            .filter(|(design, other_rows)| !(*design == self.case.design && *other_rows == rows))
            .collect()
    }

    /// The claim's outcome (`None`: it does not apply at this case's scale).
    fn check(&self, claim: &Claim, others: &BTreeMap<(String, u64), Observation>) -> Option<Check> {
        let observed = self.observed;
        let find = |design: &str, rows: u64| -> Result<&Observation, Violation> {
            if design == self.case.design && rows == self.case.rows {
                return Ok(observed);
            }
            others.get(&(design.to_string(), rows)).ok_or_else(|| Violation {
                invariant: claim.name.clone(),
                measured: format!("unknown (design {design} at {rows} rows was not measured)"),
                expected: "a measurement to compare with".to_string(),
            })
        };
        match &claim.rule {
            Rule::SameAnswerOnEveryDesign => {
                let mut check = Ok(());
                for (design, rows) in self.compared_with(&claim.rule) {
                    check = check.and_then(|()| same_answer(&claim.name, observed, find(&design, rows)?));
                }
                Some(check)
            }
            Rule::ReadRowsGrowthAtMost(factor) => self
                .smallest_if_largest()
                .map(|smallest| read_rows_growth(&claim.name, *factor, find(&self.case.design, smallest)?, observed)),
            // Bytes or parts against the design the case runs on: no comparison to make.
            rule if rule.other_designs().contains(&self.case.design.as_str()) => None,
            rule => {
                let compared = match rule.other_designs().first() {
                    Some(design) => match find(design, self.case.rows) {
                        Ok(compared) => Some(compared),
                        Err(violation) => return Some(Err(violation)),
                    },
                    None => None,
                };
                Some(check_one(&claim.name, rule, observed, compared))
            }
        }
    }
}

impl CaseOutcome {
    /// `Ok` with a line per claim when the case holds what it must: every claim on a
    /// design, the named violation on a broken design. Else the reason, one line each.
    pub fn verdict(&self, case: &Case, claims_file: &str) -> Result<Vec<String>, String> {
        let mut report = Vec::new();
        let mut failures = Vec::new();
        for ClaimCheck { claim, check } in &self.checks {
            let location = format!("{claims_file}:{}", claim.line);
            match check {
                None => report.push(format!(
                    "{location}: {} does not apply here (checked at the largest scale, or on the other designs)",
                    claim.name
                )),
                Some(Ok(())) => report.push(format!("{location}: {} holds", claim.name)),
                Some(Err(violation)) if case.must_violate.as_deref() == Some(claim.name.as_str()) => {
                    report.push(format!("{location}: {violation} (as this broken design must)"))
                }
                Some(Err(violation)) if case.must_violate.is_some() => {
                    report.push(format!("{location}: {violation} (also broken here)"))
                }
                Some(Err(violation)) => failures.push(format!("{location}: {violation}")),
            }
        }
        failures.extend(self.broken_design_uncaught(case, claims_file));
        report.extend(self.empty_answer_note());
        if failures.is_empty() { Ok(report) } else { Err(failures.join("\n")) }
    }

    /// On a broken design whose named claim held: why that fails the case.
    fn broken_design_uncaught(&self, case: &Case, claims_file: &str) -> Option<String> {
        let must = case.must_violate.as_ref()?;
        let named = self.checks.iter().find(|check| check.claim.name == *must);
        if named.is_some_and(|check| matches!(check.check, Some(Err(_)))) {
            return None;
        }
        let location = named.map(|check| format!("{claims_file}:{}: ", check.claim.line)).unwrap_or_default();
        let observed = &self.observation;
        let granules = observed.granules_read.map_or("unknown".to_string(), |granules| granules.to_string());
        Some(format!(
            "{location}broken design {} at {} rows was expected to violate {must}, but the claim held ({} rows \
             and {granules} granules read): this claim does not catch the design at this scale",
            case.design, case.rows, observed.read_rows
        ))
    }

    /// A query that returned nothing satisfies claims about what it reads too easily.
    fn empty_answer_note(&self) -> Option<String> {
        self.observation.answer.is_empty().then(|| {
            "note: the query returned no rows here, so claims about what it reads hold easily; check its filter \
             against the generator's data"
                .to_string()
        })
    }
}

fn check_one(name: &str, rule: &Rule, observed: &Observation, compared: Option<&Observation>) -> Check {
    match rule {
        Rule::ReadRowsAtMost(bound) => claim(
            name,
            observed.read_rows <= *bound,
            format!("{} rows read", observed.read_rows),
            format!("at most {bound}"),
        ),
        Rule::GranulesReadAtMost(bound) => match observed.granules_read {
            Some(granules) => claim(
                name,
                granules <= *bound,
                format!("{granules} granules read ({} rows)", observed.read_rows),
                format!("at most {bound}"),
            ),
            None => {
                claim(name, false, "unknown (the statistics record has no ProfileEvents)", format!("at most {bound}"))
            }
        },
        Rule::PartsSelected { stage, skip_index, exactly, bound } => {
            let expected = bound_text(*exactly, *bound, "parts");
            match find_stage(observed, *stage, skip_index.as_deref()) {
                Err(missing) => claim(name, false, missing, expected),
                Ok(found) => claim(
                    name,
                    within(found.selected_parts, *exactly, *bound),
                    format!("{} of {} parts selected", found.selected_parts, found.initial_parts),
                    expected,
                ),
            }
        }
        Rule::GranulesSelected { stage, skip_index, exactly, bound } => {
            let expected = bound_text(*exactly, *bound, "granules");
            match find_stage(observed, *stage, skip_index.as_deref()) {
                Err(missing) => claim(name, false, missing, expected),
                Ok(found) => claim(
                    name,
                    within(found.selected_granules, *exactly, *bound),
                    format!("{} of {} granules selected", found.selected_granules, found.initial_granules),
                    expected,
                ),
            }
        }
        Rule::GranulesDroppedShareAtLeast { stage, skip_index, share } => {
            let expected = format!("at least {share} of the granules dropped");
            match find_stage(observed, *stage, skip_index.as_deref()) {
                Err(missing) => claim(name, false, missing, expected),
                Ok(found) if found.initial_granules == 0 => {
                    claim(name, false, "unknown (the stage was given no granules)", expected)
                }
                Ok(found) => {
                    let dropped = 1.0 - found.selected_granules as f64 / found.initial_granules as f64;
                    claim(
                        name,
                        no_less(dropped, *share),
                        format!(
                            "{dropped:.4} dropped ({} of {} granules kept)",
                            found.selected_granules, found.initial_granules
                        ),
                        expected,
                    )
                }
            }
        }
        Rule::RowsDroppedShareAtLeast { skip_index, share } => {
            let index = match skip_index {
                Some(name) => format!("skip index {name}"),
                None => "skip indexes".to_string(),
            };
            let expected = format!("at least {share} of the rows dropped by the {index}");
            if let Err(missing) = find_stage(observed, Stage::Skip, skip_index.as_deref()) {
                return claim(name, false, missing, expected);
            }
            match observed.read_rows_without_skip_index {
                Some(without) if without > 0 => {
                    let dropped = 1.0 - observed.read_rows as f64 / without as f64;
                    claim(
                        name,
                        no_less(dropped, *share),
                        format!(
                            "{dropped:.4} dropped ({} rows read, {without} without the {index})",
                            observed.read_rows
                        ),
                        expected,
                    )
                }
                _ => claim(name, false, format!("unknown (the query read no rows without the {index})"), expected),
            }
        }
        Rule::CompressedBytesBelow { column, design } => {
            let expected = format!("fewer compressed bytes than on design {design}");
            let Some(compared) = compared else { return claim(name, false, "unknown (nothing to compare)", expected) };
            match (compressed_bytes(observed, column.as_deref()), compressed_bytes(compared, column.as_deref())) {
                (Ok(here), Ok(there)) => {
                    claim(name, here < there, format!("{here} bytes here, {there} on {design}"), expected)
                }
                (Err(reason), _) | (_, Err(reason)) => claim(name, false, format!("unknown ({reason})"), expected),
            }
        }
        Rule::CompressionRatioAtLeast { column, ratio } => {
            let expected = format!("a compression ratio of at least {ratio}");
            match compression_ratio(observed, column.as_deref()) {
                Ok(measured) => claim(name, no_less(measured, *ratio), format!("{measured:.3}"), expected),
                Err(reason) => claim(name, false, format!("unknown ({reason})"), expected),
            }
        }
        Rule::ActivePartsAtMost(bound) => match &observed.parts {
            Some(parts) => claim(
                name,
                parts.active_parts <= *bound,
                format!("{} active parts", parts.active_parts),
                format!("at most {bound}"),
            ),
            None => claim(name, false, "unknown (the query reads no MergeTree table)", format!("at most {bound}")),
        },
        Rule::ActivePartsAtMostShareOf { design, share } => {
            let expected = format!("at most {share} of design {design}'s active parts");
            match (&observed.parts, compared.and_then(|compared| compared.parts.as_ref())) {
                (Some(here), Some(there)) => claim(
                    name,
                    no_more(here.active_parts as f64, share * there.active_parts as f64),
                    format!("{} active parts here, {} on {design}", here.active_parts, there.active_parts),
                    expected,
                ),
                _ => claim(name, false, "unknown (the query reads no MergeTree table)", expected),
            }
        }
        // Compared with other measurements, by `Comparing::check`.
        Rule::ReadRowsGrowthAtMost(_) | Rule::SameAnswerOnEveryDesign => {
            claim(name, false, "unknown (this claim compares measurements)", "a comparison")
        }
    }
}

fn same_answer(name: &str, observed: &Observation, other: &Observation) -> Check {
    match first_difference(&observed.answer, &other.answer) {
        None => Ok(()),
        Some(difference) => claim(
            name,
            false,
            format!("designs {} and {} differ: {difference}", observed.design, other.design),
            "the same answer on every design",
        ),
    }
}

/// Bounds on shares and ratios, with room for floating-point rounding: 4 of 5 granules
/// kept computes as 0.19999999999999996 dropped, which a claim of 0.2 must accept.
fn no_less(measured: f64, bound: f64) -> bool {
    measured >= bound - ROUNDING * bound.abs().max(1.0)
}

fn no_more(measured: f64, bound: f64) -> bool {
    measured <= bound + ROUNDING * bound.abs().max(1.0)
}

const ROUNDING: f64 = 1e-9;

fn read_rows_growth(name: &str, factor: f64, smallest: &Observation, largest: &Observation) -> Check {
    claim(
        name,
        no_more(largest.read_rows as f64, factor * smallest.read_rows as f64),
        format!(
            "{} rows read at {} rows, {} at {}",
            largest.read_rows, largest.rows, smallest.read_rows, smallest.rows
        ),
        format!("at most {factor} times as many at the largest scale as at the smallest"),
    )
}

fn within(measured: u64, exactly: bool, bound: u64) -> bool {
    if exactly { measured == bound } else { measured <= bound }
}

fn bound_text(exactly: bool, bound: u64, what: &str) -> String {
    if exactly { format!("exactly {bound} {what} selected") } else { format!("at most {bound} {what} selected") }
}

/// The stage of the first MergeTree read, or what was there instead.
fn find_stage<'a>(observed: &'a Observation, stage: Stage, skip_index: Option<&str>) -> Result<&'a IndexStage, String> {
    let Some(read) = observed.pruning.first() else {
        return Err("no MergeTree read in the plan".to_string());
    };
    let found = read.stages.iter().find(|found| {
        found.kind == stage.engine_name() && skip_index.is_none_or(|name| found.name.as_deref() == Some(name))
    });
    found.ok_or_else(|| {
        let present: Vec<String> = read
            .stages
            .iter()
            .map(|found| match &found.name {
                Some(name) => format!("{} {name}", found.kind),
                None => found.kind.clone(),
            })
            .collect();
        let wanted = match skip_index {
            Some(name) => format!("Skip {name}"),
            None => stage.engine_name().to_string(),
        };
        format!("no {wanted} stage in the read of {} (stages: {})", read.table, present.join(", "))
    })
}

fn compressed_bytes(observed: &Observation, column: Option<&str>) -> Result<u64, String> {
    match column {
        None => observed.parts.as_ref().map(|parts| parts.data_compressed_bytes).ok_or_else(no_table),
        Some(column) => column_of(observed, column).map(|bytes| bytes.compressed_bytes),
    }
}

fn compression_ratio(observed: &Observation, column: Option<&str>) -> Result<f64, String> {
    let (uncompressed, compressed) = match column {
        None => {
            let parts = observed.parts.as_ref().ok_or_else(no_table)?;
            (parts.data_uncompressed_bytes, parts.data_compressed_bytes)
        }
        Some(column) => {
            let bytes = column_of(observed, column)?;
            (bytes.uncompressed_bytes, bytes.compressed_bytes)
        }
    };
    if compressed == 0 {
        return Err("no compressed bytes".to_string());
    }
    Ok(uncompressed as f64 / compressed as f64)
}

fn column_of(observed: &Observation, column: &str) -> Result<crate::parts::ColumnBytes, String> {
    let columns = match observed.columns.as_ref().ok_or_else(no_table)? {
        ColumnSizes::Known(columns) => columns,
        ColumnSizes::WideOnly { note, .. } | ColumnSizes::Unknown { reason: note } => return Err(note.clone()),
    };
    columns
        .iter()
        .find(|bytes| bytes.column == column)
        .cloned()
        .ok_or_else(|| format!("table {} has no column {column}", observed.table.as_deref().unwrap_or("?")))
}

fn no_table() -> String {
    "the query reads no MergeTree table".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_ratios_on_the_bound_hold_despite_rounding() {
        // 4 of 5 granules kept: 1 - 4/5 computes as 0.19999999999999996.
        assert!(no_less(1.0 - 4.0 / 5.0, 0.2));
        assert!(!no_less(0.199, 0.2));
        // 29 parts against 100 with a share of 0.29: 0.29 * 100 computes as 28.999999999999996.
        assert!(no_more(29.0, 0.29 * 100.0));
        assert!(!no_more(30.0, 0.29 * 100.0));
    }
}

//! Judging a case: the claims that apply to it, the observations they need (the case's own,
//! then those of the designs and scales they compare with, each observed once, one dataset
//! open at a time), each claim's outcome by its rule, and the verdict (on a broken design:
//! that the named claim was violated; on any case, an answer with rows unless the query
//! says `answer_may_be_empty = true`).

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use super::claims::{Claim, Observations};
use super::{AlsoMeasure, Case, CaseOutcome, ClaimCheck, Observation, Pack, Query, VARYING_ANSWER};
use crate::files::shown;
use crate::target_info::TargetKind;

impl Pack {
    /// Runs one case: observes it, then whatever its claims compare with (other designs
    /// at the same scale, the same design at the smallest scale), one dataset open at a
    /// time, and checks every claim that applies to it.
    pub fn run_case(&self, kind: TargetKind, case: &Case) -> Result<CaseOutcome> {
        let query = self.query(&case.query)?;
        let claims = claims_on(query, &case.design);
        let observation = self.observe_case(kind, case, query, &claims)?;
        let others = self.observe_compared(kind, case, query, &claims)?;
        let observations = Observations { case, query, own: &observation, others: &others };
        let checks = claims
            .into_iter()
            .map(|claim| ClaimCheck { claim: claim.clone(), check: claim.rule.check(&claim.name, &observations) })
            .collect();
        Ok(CaseOutcome {
            observation,
            checks,
            query_file: query.file.clone(),
            answer_may_be_empty: query.answer_may_be_empty,
        })
    }

    /// The case's own observation, measured a second time without a skip index when a
    /// claim is about what the index drops.
    fn observe_case(&self, kind: TargetKind, case: &Case, query: &Query, claims: &[&Claim]) -> Result<Observation> {
        let also = claims
            .iter()
            .map(|claim| claim.rule.also_measure())
            .find(|also| *also != AlsoMeasure::Nothing)
            .unwrap_or(AlsoMeasure::Nothing);
        let mut observed = self.observe(kind, &case.query, &case.design, case.rows, also)?;
        if query.answer_varies {
            // No claim reads it (same_answer_on_every_design is refused on load), and a
            // snapshot of it would fail at random.
            observed.answer = VARYING_ANSWER.to_string();
        }
        Ok(observed)
    }

    /// What the claims compare the case with, by (design, rows), each observed once, the
    /// case itself left out.
    fn observe_compared(
        &self,
        kind: TargetKind,
        case: &Case,
        query: &Query,
        claims: &[&Claim],
    ) -> Result<BTreeMap<(String, u64), Observation>> {
        let mut others = BTreeMap::new();
        for claim in claims {
            for (design, rows) in claim.rule.compared_with(case, query) {
                let own = design == case.design && rows == case.rows;
                if !own && !others.contains_key(&(design.clone(), rows)) {
                    let other = self.observe(kind, &case.query, &design, rows, AlsoMeasure::Nothing)?;
                    others.insert((design, rows), other);
                }
            }
        }
        Ok(others)
    }
}

impl Pack {
    /// A case of a query that must fail (`error = "CODE"` in its section): its statement
    /// run on the case's dataset. `Ok(Ok(line))` when it failed with that code, `Ok(Err(why))`
    /// when it answered or failed otherwise; nothing else is measured, since a failed
    /// statement has no statistics to claim about.
    pub fn run_error_case(&self, kind: TargetKind, case: &Case, claims_file: &str) -> Result<Result<String, String>> {
        let query = self.query(&case.query)?;
        let Some(expected) = query.expected_error_on(&case.design) else {
            anyhow::bail!(
                "query {} of pack {} expects no error (no error = \"...\" in its section)",
                query.name,
                self.name
            );
        };
        let (code, location) = (&expected.code, format!("{claims_file}:{}", expected.line));
        let statement = self.statement(&case.query, case.rows)?;
        let (mut target, _) =
            self.dataset(&case.design, case.rows)?.open_on(kind).context("cannot open the dataset")?;
        Ok(match target.query_text(&statement.sql) {
            Ok(answer) => Err(format!(
                "{location}: {} was expected to fail with {code}, but it answered {:?}",
                statement.location(),
                crate::sql::one_line(&answer)
            )),
            // The engine ends its message with the code's name in parentheses.
            Err(error) if format!("{error:#}").contains(&format!("({code})")) => {
                Ok(format!("{location}: {} failed with {code}, as it must", statement.location()))
            }
            Err(error) => Err(format!(
                "{location}: {} was expected to fail with {code}, but failed otherwise: {}",
                statement.location(),
                crate::sql::one_line(&format!("{error:#}"))
            )),
        })
    }
}

/// The claims of `query` that apply on `design`: all but those limited to another design.
fn claims_on<'a>(query: &'a Query, design: &str) -> Vec<&'a Claim> {
    query.claims.iter().filter(|claim| claim.only_on.as_ref().is_none_or(|only_on| only_on == design)).collect()
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
                Some(Ok(held)) => report.push(format!("{location}: {held}")),
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
        match self.empty_answer(case) {
            Some(problem) if self.answer_may_be_empty => {
                report.push(format!("{problem}, as answer_may_be_empty = true allows"))
            }
            Some(problem) => failures.push(format!(
                "{problem}, so claims about what it reads hold for nothing: check its filter against the \
                 generator's data, or write answer_may_be_empty = true in [queries.{}] of {claims_file} if no rows \
                 is the answer meant",
                case.query
            )),
            None => {}
        }
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

    /// `<query file>: the query returned no rows on design D at N rows` when its answer has
    /// no rows (a single row of zeros, `count()` of nothing, is an answer).
    fn empty_answer(&self, case: &Case) -> Option<String> {
        (self.observation.answer_rows == 0).then(|| {
            format!(
                "{}: the query returned no rows on design {} at {} rows",
                shown(&self.query_file),
                case.design,
                case.rows
            )
        })
    }
}

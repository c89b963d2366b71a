//! `same_answer_on_every_design = true`: each design answers the query as every other
//! design of the query does, at the same scale (answers compared as sorted lines).

use anyhow::Result;
use serde::Deserialize;
use toml::Spanned;

use super::{ClaimKey, Observations, Rule, SectionClaims};
use crate::invariant::{Check, Violation, claim};
use crate::packs::observe::first_difference;
use crate::packs::{Case, Observation, Query};

#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub(super) struct SameAnswerOnEveryDesign(Spanned<bool>);

impl ClaimKey for SameAnswerOnEveryDesign {
    const KEY: &'static str = "same_answer_on_every_design";

    fn state(&self, claims: &mut SectionClaims) -> Result<()> {
        // `= false` claims nothing.
        if *self.0.get_ref() {
            claims.push(Self::KEY, self.0.span(), self.clone());
        }
        Ok(())
    }
}

impl Rule for SameAnswerOnEveryDesign {
    fn refusal(&self, query: &Query) -> Option<&'static str> {
        if query.designs.len() < 2 {
            Some("compares designs, and the query runs on one")
        } else if query.answer_varies {
            Some("compares answers, and this query's answer varies")
        } else {
            None
        }
    }

    fn compared_with(&self, case: &Case, query: &Query) -> Vec<(String, u64)> {
        query.designs.iter().map(|design| (design.clone(), case.rows)).collect()
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let (case, own) = (observed.case, observed.own);
        let others: Vec<&String> = observed.query.designs.iter().filter(|design| **design != case.design).collect();
        let compared = || -> Check {
            for design in &others {
                same_answer(name, own, observed.of(name, design, case.rows)?)?;
            }
            let names: Vec<&str> = others.iter().map(|design| design.as_str()).collect();
            let lines = own.answer.lines().count();
            claim(
                name,
                true,
                format!("the same {lines} lines as design {}", names.join(", ")),
                "the same answer on every design",
            )
        };
        Some(compared())
    }
}

fn same_answer(name: &str, observed: &Observation, other: &Observation) -> Result<(), Violation> {
    match first_difference(&observed.answer, &other.answer) {
        None => Ok(()),
        Some(difference) => claim(
            name,
            false,
            format!("designs {} and {} differ: {difference}", observed.design, other.design),
            "the same answer on every design",
        )
        .map(|_| ()),
    }
}

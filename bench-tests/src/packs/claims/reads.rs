//! `read_rows_at_most` and `granules_read_at_most`: bounds on what the query read, from its
//! own statistics record. The smallest claims, each one type that is both the key's value
//! as written and the rule it states.

use anyhow::Result;
use serde::Deserialize;
use toml::Spanned;

use super::{ClaimKey, Observations, Rule, SectionClaims};
use crate::invariant::{Check, claim};

/// `read_rows_at_most = N`: the query read at most N rows.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub(super) struct ReadRowsAtMost(Spanned<u64>);

impl ClaimKey for ReadRowsAtMost {
    const KEY: &'static str = "read_rows_at_most";

    fn state(&self, claims: &mut SectionClaims) -> Result<()> {
        claims.push(Self::KEY, self.0.span(), self.clone());
        Ok(())
    }
}

impl Rule for ReadRowsAtMost {
    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let (read_rows, bound) = (observed.own.read_rows, *self.0.get_ref());
        Some(claim(name, read_rows <= bound, format!("{read_rows} rows read"), format!("at most {bound}")))
    }
}

/// `granules_read_at_most = N`: the query read at most N granules (marks: the
/// `SelectedMarks` event).
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub(super) struct GranulesReadAtMost(Spanned<u64>);

impl ClaimKey for GranulesReadAtMost {
    const KEY: &'static str = "granules_read_at_most";

    fn state(&self, claims: &mut SectionClaims) -> Result<()> {
        claims.push(Self::KEY, self.0.span(), self.clone());
        Ok(())
    }
}

impl Rule for GranulesReadAtMost {
    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let bound = *self.0.get_ref();
        Some(match observed.own.granules_read {
            Some(granules) => claim(
                name,
                granules <= bound,
                format!("{granules} granules read ({} rows)", observed.own.read_rows),
                format!("at most {bound}"),
            ),
            None => {
                claim(name, false, "unknown (the statistics record has no ProfileEvents)", format!("at most {bound}"))
            }
        })
    }
}

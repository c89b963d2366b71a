//! `read_rows_at_most`, `granules_read_at_most`, `read_rows_share_at_most` and their
//! `_at_least` twins: bounds on what the query read, from its own statistics record (and,
//! for the share, the rows of the table it reads). The smallest claims: each key is one
//! type, the value as written, stating one `ReadBound`.

use anyhow::Result;
use serde::Deserialize;
use toml::Spanned;

use super::{Bound, ClaimKey, Observations, Rule, SectionClaims, share_value};
use crate::invariant::{Check, claim};

/// What a bound on the read counts.
#[derive(Debug, Clone, Copy)]
enum Read {
    Rows,
    /// Granules (marks): the `SelectedMarks` event.
    Granules,
    /// read_rows over the rows of the table the query reads.
    RowsShare,
}

/// A key whose value is a count of rows or granules read.
macro_rules! count_key {
    ($(#[$doc:meta])* $name:ident, $key:literal, $read:expr, $bound:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Deserialize)]
        #[serde(transparent)]
        pub(super) struct $name(Spanned<u64>);

        impl ClaimKey for $name {
            const KEY: &'static str = $key;

            fn state(&self, claims: &mut SectionClaims) -> Result<()> {
                let rule = ReadBound { read: $read, bound: $bound, value: *self.0.get_ref() as f64 };
                claims.push(Self::KEY, self.0.span(), rule);
                Ok(())
            }
        }
    };
}

/// A key whose value is a share (0 to 1) of the table's rows.
macro_rules! share_key {
    ($(#[$doc:meta])* $name:ident, $key:literal, $bound:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Deserialize)]
        #[serde(transparent)]
        pub(super) struct $name(Spanned<f64>);

        impl ClaimKey for $name {
            const KEY: &'static str = $key;

            fn state(&self, claims: &mut SectionClaims) -> Result<()> {
                let value = share_value(&self.0, Self::KEY, claims)?;
                claims.push(Self::KEY, self.0.span(), ReadBound { read: Read::RowsShare, bound: $bound, value });
                Ok(())
            }
        }
    };
}

count_key!(
    /// `read_rows_at_most = N`: the query read at most N rows.
    ReadRowsAtMost, "read_rows_at_most", Read::Rows, Bound::AtMost
);
count_key!(
    /// `read_rows_at_least = N`: the query read at least N rows.
    ReadRowsAtLeast, "read_rows_at_least", Read::Rows, Bound::AtLeast
);
count_key!(
    /// `granules_read_at_most = N`.
    GranulesReadAtMost, "granules_read_at_most", Read::Granules, Bound::AtMost
);
count_key!(
    /// `granules_read_at_least = N`.
    GranulesReadAtLeast, "granules_read_at_least", Read::Granules, Bound::AtLeast
);
share_key!(
    /// `read_rows_share_at_most = S`: the query read at most the share S of the table's rows.
    ReadRowsShareAtMost, "read_rows_share_at_most", Bound::AtMost
);
share_key!(
    /// `read_rows_share_at_least = S`: at least the share S (1: every row, a full scan).
    ReadRowsShareAtLeast, "read_rows_share_at_least", Bound::AtLeast
);

/// A bound on what the query read.
#[derive(Debug)]
struct ReadBound {
    read: Read,
    bound: Bound,
    value: f64,
}

impl Rule for ReadBound {
    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let own = observed.own;
        let expected = self.bound.text(self.value);
        Some(match self.read {
            Read::Rows => claim(
                name,
                self.bound.holds(own.read_rows as f64, self.value),
                format!("{} rows read", own.read_rows),
                expected,
            ),
            Read::Granules => match own.granules_read {
                Some(granules) => claim(
                    name,
                    self.bound.holds(granules as f64, self.value),
                    format!("{granules} granules read ({} rows)", own.read_rows),
                    expected,
                ),
                None => claim(name, false, "unknown (the statistics record has no ProfileEvents)", expected),
            },
            Read::RowsShare => {
                let expected = format!("{expected} of the table's rows read");
                match own.parts.as_ref().map(|parts| parts.rows) {
                    Some(rows) if rows > 0 => {
                        let share = own.read_rows as f64 / rows as f64;
                        claim(
                            name,
                            self.bound.holds(share, self.value),
                            format!("{share:.4} of the table's rows read ({} of {rows})", own.read_rows),
                            expected,
                        )
                    }
                    Some(_) => claim(name, false, "unknown (the table holds no rows)", expected),
                    None => claim(name, false, "unknown (the query reads no MergeTree table)", expected),
                }
            }
        })
    }
}

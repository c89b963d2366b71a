//! What a query answered, as a results bundle records it: its row count and a checksum of
//! its rows ([`AnswerDigest`]), so that runs, variants, bundles and a reference can be
//! checked against one another before any time is counted, without keeping the rows.
//!
//! The checksum is order-insensitive: the wrapping sum of a 64-bit hash of each row. A
//! query whose order is not fully determined (`ORDER BY c DESC LIMIT 10` over equal
//! counts, or a `GROUP BY` without `ORDER BY`) may return the same rows in another order
//! from run to run, and that is the same answer; a sum rather than an exclusive or, so
//! that a row returned twice is not the same as one returned never. A different set of
//! rows (a tie at the cut resolved otherwise, a wrong result) gives another digest.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A query's answer, digested: rows and a checksum of them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AnswerDigest {
    /// Rows in the answer.
    pub rows: u64,
    /// The wrapping sum of the first 8 bytes of each row's SHA-256 (its tab-separated
    /// text), as 16 hex digits: the same for the same rows in any order.
    pub checksum: String,
}

impl AnswerDigest {
    /// The digest of a result in `TabSeparated` (one row a line; values escape their
    /// newlines, so a line is a row).
    pub fn of_tab_separated(body: &str) -> AnswerDigest {
        let mut rows = 0u64;
        let mut sum = 0u64;
        for line in body.lines() {
            rows += 1;
            let hash = Sha256::digest(line.as_bytes());
            let mut first = [0u8; 8];
            first.copy_from_slice(&hash[..8]);
            sum = sum.wrapping_add(u64::from_be_bytes(first));
        }
        AnswerDigest { rows, checksum: format!("{sum:016x}") }
    }
}

impl fmt::Display for AnswerDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows = if self.rows == 1 { "row" } else { "rows" };
        write!(f, "{} {rows}, checksum {}", self.rows, self.checksum)
    }
}

/// The distinct digests among `digests`, each with how many gave it, most frequent first.
pub fn tally<'a>(digests: impl IntoIterator<Item = &'a AnswerDigest>) -> Vec<(AnswerDigest, usize)> {
    let mut counts: BTreeMap<&AnswerDigest, usize> = BTreeMap::new();
    for digest in digests {
        *counts.entry(digest).or_default() += 1;
    }
    let mut tally: Vec<(AnswerDigest, usize)> =
        counts.into_iter().map(|(digest, count)| (digest.clone(), count)).collect();
    tally.sort_by(|(a, count_a), (b, count_b)| count_b.cmp(count_a).then(a.cmp(b)));
    tally
}

/// `2 different answers (9 runs: 3 rows, checksum ...; 2 runs: ...)`, for messages.
pub fn describe_tally(tally: &[(AnswerDigest, usize)]) -> String {
    let each: Vec<String> = tally
        .iter()
        .map(|(digest, count)| format!("{count} {}: {digest}", if *count == 1 { "run" } else { "runs" }))
        .collect();
    format!("{} different answers ({})", tally.len(), each.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_rows_in_another_order_are_the_same_answer_and_other_rows_are_not() {
        let a = AnswerDigest::of_tab_separated("x\t1\ny\t2\nz\t3\n");
        let b = AnswerDigest::of_tab_separated("z\t3\nx\t1\ny\t2\n");
        assert_eq!(a, b);
        assert_eq!(a.rows, 3);
        assert_eq!(a.checksum.len(), 16);
        assert_ne!(a, AnswerDigest::of_tab_separated("x\t1\ny\t2\nw\t3\n"));
        // A row twice is not that row and another one cancelling out.
        assert_ne!(AnswerDigest::of_tab_separated("x\nx\n"), AnswerDigest::of_tab_separated(""));
        assert_eq!(AnswerDigest::of_tab_separated("").rows, 0);
    }

    #[test]
    fn a_tally_counts_each_answer_most_frequent_first() {
        let one = AnswerDigest::of_tab_separated("1\n");
        let two = AnswerDigest::of_tab_separated("2\n");
        let tally = tally([&two, &one, &one]);
        assert_eq!(tally, vec![(one.clone(), 2), (two, 1)]);
        assert!(describe_tally(&tally).starts_with("2 different answers (2 runs: 1 row, checksum "));
    }
}

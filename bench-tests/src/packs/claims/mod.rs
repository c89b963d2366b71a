//! A pack's claims file (`claims.toml`) and its claims vocabulary: the file parsed with the
//! line of every key kept, each query section flattened into named [`Claim`]s, and the
//! rule each claim checks against a case's observations.
//!
//! Each claim key of a query section is one file here, which owns all of it: how its value
//! is written (a serde type with spans), the claims it states and the values it refuses,
//! where each claim can be checked, what the case must measure for it and its outcome on
//! a case. The registry, `claim_keys!` below, lists them:
//!
//! - `reads.rs`: `read_rows_at_most`, `granules_read_at_most`, `read_rows_share_at_most`
//!   and their `_at_least` twins;
//! - `read_rows_growth.rs`: `read_rows_growth_at_most`, `_at_least` (compares scales);
//! - `same_answer.rs`: `same_answer_on_every_design` (compares designs);
//! - `index.rs`: `index.<stage>.*` and `index.skip_index.<name>.*`, the index stages of
//!   `EXPLAIN indexes = 1`.
//!
//! Claims about the table rather than a query are the file's `[table]` section
//! (`storage.rs`: `table.*` and `columns.<column>.*`, from `system.parts`), stated once
//! and checked in every query's cases. Every bound comes in both directions (`_at_most`
//! and `_at_least`, `_below` and `_above`), so that "this index cannot help this query"
//! is a claim as much as "it drops 0.9".
//!
//! Adding a claim:
//!
//! 1. Under a new key (`read_bytes_at_most = N`): a new file here with a type that is the
//!    key's value as serde reads it and implements `ClaimKey` (its key, the claims it
//!    states, the values it refuses) and a `Rule` per claim (its outcome on a case, and
//!    where it can be checked if not everywhere). `reads.rs` is the smallest example.
//!    Then its two lines in this file: `mod <file>;` and the type in `claim_keys!`.
//!    Under a key that exists (`index.<stage>.<claim>`, `table.<claim>`): the same, in
//!    that key's file (a field of its serde type, a line of its `state`, a `Rule`).
//! 2. Its row in `docs/packs.md`, the vocabulary for users: `tests/it/pack_checks.rs` fails
//!    while a key is missing there (a key holding a table of keys of its own adds that
//!    level to the test's list).
//!
//! A rule reads what an [`Observation`] holds (the statistics record with its
//! ProfileEvents, the index stages of the plan, the table's parts and column sizes); a
//! claim that needs another measurement also extends `Observation` and `Pack::observe`
//! (`observe.rs`), as `index.skip.rows_dropped_share_at_least` does with `AlsoMeasure`.

mod index;
mod read_rows_growth;
mod reads;
mod same_answer;
mod schema;
mod storage;

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use anyhow::{Result, bail};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;

use super::{AlsoMeasure, Case, Observation, Query};
use crate::invariant::{Check, Violation};

/// The claim keys of a query section, each the type in its file that reads it, in the
/// order an error for an unknown key lists them (after the keys that say where the query
/// runs). Claims on one line, and the mistakes of one section, come in this order too.
macro_rules! claim_keys {
    ($($key:ty),* $(,)?) => {
        /// Every key of a query section: where the query runs, then its claim keys.
        const SECTION_KEYS: &[&str] =
            &["designs", "scales", "answer_varies", "answer_may_be_empty", "error", "broken", "on", $(<$key as ClaimKey>::KEY),*];

        /// Reads the value of the claim key `key` (`None`: `key` is no claim key).
        fn read_claim_key<'de, A: MapAccess<'de>>(
            key: &str,
            map: &mut A,
        ) -> Result<Option<Box<dyn WrittenClaims>>, A::Error> {
            $(
                if key == <$key as ClaimKey>::KEY {
                    return Ok(Some(Box::new(map.next_value::<$key>()?)));
                }
            )*
            Ok(None)
        }
    };
}

claim_keys! {
    reads::ReadRowsAtMost,
    reads::ReadRowsAtLeast,
    reads::GranulesReadAtMost,
    reads::GranulesReadAtLeast,
    reads::ReadRowsShareAtMost,
    reads::ReadRowsShareAtLeast,
    read_rows_growth::ReadRowsGrowthAtMost,
    read_rows_growth::ReadRowsGrowthAtLeast,
    same_answer::SameAnswerOnEveryDesign,
    index::IndexSection,
}

pub use schema::{DeclaredTable, declared_table};
pub use storage::TableSection;

/// A claim key of a query section: its name in `claims.toml`, the type its value is read
/// as (with the span of every value, so that each claim knows its line) and the claims
/// that value states.
pub(crate) trait ClaimKey: DeserializeOwned + fmt::Debug {
    const KEY: &'static str;

    /// Adds the claims the value states to `claims`; a value out of range is an error
    /// starting with its line (`4: ...`, see `SectionClaims::line`).
    fn state(&self, claims: &mut SectionClaims) -> Result<()>;
}

/// A claim key's value as written, whatever its key: what a [`QuerySection`] keeps.
trait WrittenClaims: fmt::Debug {
    fn state(&self, claims: &mut SectionClaims) -> Result<()>;
}

impl<K: ClaimKey> WrittenClaims for K {
    fn state(&self, claims: &mut SectionClaims) -> Result<()> {
        ClaimKey::state(self, claims)
    }
}

/// What one claim bounds: where it can be checked (on load), what a case measures for it,
/// and its outcome on a case.
pub(crate) trait Rule: fmt::Debug + Send + Sync {
    /// Why the claim cannot be checked on `query`, read after its name ("compares scales,
    /// and the query runs at one"); `None` when it can. Checked on load.
    fn refusal(&self, _query: &Query) -> Option<&'static str> {
        None
    }

    /// The designs the claim names to compare with; on load, each must be one of the
    /// pack's.
    fn designs_named(&self) -> Vec<&str> {
        Vec::new()
    }

    /// The (design, rows) whose observations the claim reads besides the case's own: by
    /// default the designs it names, at the case's scale.
    fn compared_with(&self, case: &Case, _query: &Query) -> Vec<(String, u64)> {
        self.designs_named().into_iter().map(|design| (design.to_string(), case.rows)).collect()
    }

    /// What the case measures besides the query as written.
    fn also_measure(&self) -> AlsoMeasure<'_> {
        AlsoMeasure::Nothing
    }

    /// The columns the claim names: on load, each must be in the designs' CREATE TABLE.
    fn columns_named(&self) -> Vec<&str> {
        Vec::new()
    }

    /// The skip indexes the claim names: on load, each must be in the designs' CREATE TABLE.
    fn skip_indexes_named(&self) -> Vec<&str> {
        Vec::new()
    }

    /// The claim's outcome on the case, `name` being the claim's name; `None` when it does
    /// not apply to this case (a growth claim below the largest scale).
    fn check(&self, name: &str, observed: &Observations) -> Option<Check>;
}

/// The file as written. Unknown keys are errors, so a misspelt claim never passes
/// silently.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsFile {
    /// Row counts (`{rows}` in the generator) every query runs at unless it says otherwise.
    pub scales: Spanned<Vec<u64>>,
    /// The designs queries run on unless they say otherwise (default: every file in
    /// `designs/`, in name order).
    pub designs: Option<Spanned<Vec<Spanned<String>>>>,
    /// The files that fill a design's table, run in order after its schema (default:
    /// `["generator.sql"]`), paths inside the pack folder. More than one when the pack
    /// shares its generator with something that must run it alone (`cargo xtask bench`
    /// times `fixtures/logs/generator.sql` without the `OPTIMIZE` that settles the pack).
    pub generator: Option<Spanned<Vec<Spanned<String>>>>,
    /// `[table]`: claims about the designs' table rather than a query.
    pub table: Option<Spanned<TableSection>>,
    #[serde(default)]
    pub queries: BTreeMap<Spanned<String>, QuerySection>,
}

/// `[queries.<name>]`: which cases a query runs in, and its claims. The same type holds
/// the claims of `on.<design>` (which may not name cases again; checked by [`flatten`]).
/// Read by hand rather than derived, because its claim keys are the registry's; unknown
/// keys are refused as serde refuses them.
#[derive(Debug, Default)]
pub struct QuerySection {
    pub designs: Option<Spanned<Vec<Spanned<String>>>>,
    pub scales: Option<Spanned<Vec<u64>>>,
    /// The answer differs from run to run (a sampling aggregate such as `quantiles`, whose
    /// reservoir depends on how threads split the rows): snapshots record no answer and
    /// the determinism check does not compare it. Not a claim.
    pub answer_varies: Option<Spanned<bool>>,
    /// The query may return no rows and its case still pass (a filter that finds nothing
    /// on purpose); without it an empty answer fails the case. Not a claim.
    pub answer_may_be_empty: Option<Spanned<bool>>,
    /// `error = "TOO_MANY_ROWS"`: the query must fail with this error code (a limit in its
    /// own SETTINGS, say); its cases check that and measure nothing. Not a claim.
    pub error: Option<Spanned<String>>,
    /// A broken design (a file in `broken/`) and the claim it must violate.
    pub broken: BTreeMap<Spanned<String>, Spanned<String>>,
    /// Claims that hold on one design only.
    pub on: BTreeMap<Spanned<String>, Spanned<QuerySection>>,
    /// The claim keys written, each with its place in `SECTION_KEYS`, in that order.
    claim_keys: Vec<(usize, Box<dyn WrittenClaims>)>,
}

impl<'de> Deserialize<'de> for QuerySection {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct("QuerySection", SECTION_KEYS, SectionVisitor)
    }
}

struct SectionVisitor;

impl<'de> Visitor<'de> for SectionVisitor {
    type Value = QuerySection;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("struct QuerySection")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<QuerySection, A::Error> {
        let mut section = QuerySection::default();
        while let Some(place) = map.next_key_seed(SectionKey)? {
            match SECTION_KEYS[place] {
                "designs" => section.designs = map.next_value()?,
                "scales" => section.scales = map.next_value()?,
                "answer_varies" => section.answer_varies = map.next_value()?,
                "answer_may_be_empty" => section.answer_may_be_empty = map.next_value()?,
                "error" => section.error = map.next_value()?,
                "broken" => section.broken = map.next_value()?,
                "on" => section.on = map.next_value()?,
                key => {
                    if let Some(written) = read_claim_key(key, &mut map)? {
                        section.claim_keys.push((place, written));
                    }
                }
            }
        }
        section.claim_keys.sort_by_key(|(place, _)| *place);
        Ok(section)
    }
}

/// A key of a query section, as its place in `SECTION_KEYS`. Any other key is refused
/// while the key is read, so that toml gives the error the key's line.
struct SectionKey;

impl<'de> DeserializeSeed<'de> for SectionKey {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for SectionKey {
    type Value = usize;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("field identifier")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<usize, E> {
        SECTION_KEYS.iter().position(|known| *known == key).ok_or_else(|| E::unknown_field(key, SECTION_KEYS))
    }
}

/// One claim of a query: its name (its key in the file, without `on.<design>.`), the
/// line it is written on, the one design it is limited to, if any, and its rule.
#[derive(Debug, Clone)]
pub struct Claim {
    pub name: String,
    pub line: usize,
    pub only_on: Option<String>,
    pub(crate) rule: Arc<dyn Rule>,
}

/// The claims a query section states, as its claim keys add them.
pub(crate) struct SectionClaims<'a> {
    line: &'a dyn Fn(Range<usize>) -> usize,
    only_on: Option<String>,
    claims: Vec<Claim>,
}

impl SectionClaims<'_> {
    /// The line of a span of the claims file: what an error about a value starts with.
    pub(crate) fn line(&self, span: Range<usize>) -> usize {
        (self.line)(span)
    }

    /// Adds the claim `name`, written at `span`, checking `rule`.
    pub(crate) fn push(&mut self, name: impl Into<String>, span: Range<usize>, rule: impl Rule + 'static) {
        let line = self.line(span);
        self.claims.push(Claim { name: name.into(), line, only_on: self.only_on.clone(), rule: Arc::new(rule) });
    }
}

/// What a claim is checked against: the case, its query, the case's own observation and
/// those of the designs and scales its claims compare with.
pub(crate) struct Observations<'a> {
    pub case: &'a Case,
    pub query: &'a Query,
    pub own: &'a Observation,
    pub others: &'a BTreeMap<(String, u64), Observation>,
}

impl Observations<'_> {
    /// `design` at `rows`: the case's own observation, or one measured to compare with; a
    /// violation of the claim `claim` when it was not measured.
    pub(crate) fn of(&self, claim: &str, design: &str, rows: u64) -> Result<&Observation, Violation> {
        if design == self.case.design && rows == self.case.rows {
            return Ok(self.own);
        }
        self.others.get(&(design.to_string(), rows)).ok_or_else(|| Violation {
            invariant: claim.to_string(),
            measured: format!("unknown (design {design} at {rows} rows was not measured)"),
            expected: "a measurement to compare with".to_string(),
        })
    }

    /// `design` at the case's scale, to compare the case with; `None` when it is the
    /// case's own design, where there is nothing to compare.
    pub(crate) fn other_design(&self, claim: &str, design: &str) -> Option<Result<&Observation, Violation>> {
        (design != self.case.design).then(|| self.of(claim, design, self.case.rows))
    }
}

/// Parses `text` (the contents of `file`); an error is one line, `file:line: ...`.
pub fn parse(file: &str, text: &str) -> Result<ClaimsFile> {
    toml::from_str(text).map_err(|error| {
        let line = error.span().map(|span| line_of(text, span.start)).unwrap_or(1);
        // The message may run over several lines (a list of expected keys): keep one.
        let message = error.message().split_whitespace().collect::<Vec<_>>().join(" ");
        anyhow::anyhow!("{file}:{line}: {message}{}", hint(error.message()))
    })
}

/// What to do about the commonest mistakes.
fn hint(message: &str) -> &'static str {
    if message.contains("unknown field `table`") || message.contains("unknown field `columns`") {
        // Where table claims were written before the [table] section existed.
        " (claims about the table go in the [table] section, without `table.`: [table] then \
         active_parts_at_most = 1, columns.<column>.<claim>, on.<design>.<claim>; see docs/packs.md)"
    } else if message.contains("unknown field") && message.contains("`queries`") {
        // At the top of the file: a claim written before any [queries.<query>] header.
        " (claims go in a [queries.<query>] section; the claims vocabulary is in docs/packs.md)"
    } else if message.contains("unknown field") {
        " (the claims vocabulary is in docs/packs.md)"
    } else {
        ""
    }
}

/// 1-based line of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The claims of one query section, flattened; `line` maps spans to lines. Rejects
/// values out of range (a share above 1, a ratio that is not positive): the error starts
/// with the line (`4: ...`), for the caller to put the file before it.
pub fn flatten(section: &QuerySection, line: &dyn Fn(Range<usize>) -> usize) -> Result<Vec<Claim>> {
    let mut claims = SectionClaims { line, only_on: None, claims: Vec::new() };
    section.state(&mut claims)?;
    for (design, on) in &section.on {
        let on_section = on.get_ref();
        if on_section.designs.is_some()
            || on_section.scales.is_some()
            || on_section.answer_varies.is_some()
            || on_section.answer_may_be_empty.is_some()
            || !on_section.broken.is_empty()
            || !on_section.on.is_empty()
        {
            bail!(
                "{}: on.{} may hold claims and error only (designs, scales, answer_varies, answer_may_be_empty, \
                 broken and on belong to the query)",
                line(on.span()),
                design.get_ref()
            );
        }
        claims.only_on = Some(design.get_ref().clone());
        on_section.state(&mut claims)?;
    }
    let mut claims = claims.claims;
    // In the file's order, so reports read like the file.
    claims.sort_by_key(|claim| claim.line);
    Ok(claims)
}

/// The claims of the file's `[table]` section (none without one), in the file's order;
/// errors as [`flatten`]'s.
pub fn flatten_table(file: &ClaimsFile, line: &dyn Fn(Range<usize>) -> usize) -> Result<Vec<Claim>> {
    let mut claims = SectionClaims { line, only_on: None, claims: Vec::new() };
    if let Some(table) = &file.table {
        storage::state_table(table.get_ref(), &mut claims)?;
    }
    let mut claims = claims.claims;
    claims.sort_by_key(|claim| claim.line);
    Ok(claims)
}

impl QuerySection {
    /// The claims of this section's own claim keys (not those of `on`), in registry order.
    fn state(&self, claims: &mut SectionClaims) -> Result<()> {
        self.claim_keys.iter().try_for_each(|(_, written)| written.state(claims))
    }
}

/// Which way a claim bounds what it measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    Exactly,
    AtMost,
    AtLeast,
}

impl Bound {
    /// Whether `measured` is within the bound `value` (shares and ratios with room for
    /// rounding, see [`no_less`]).
    pub(crate) fn holds(self, measured: f64, value: f64) -> bool {
        match self {
            Bound::Exactly => measured == value,
            Bound::AtMost => no_more(measured, value),
            Bound::AtLeast => no_less(measured, value),
        }
    }

    /// `at most 2`, as a claim's expected value reads.
    pub(crate) fn text(self, value: f64) -> String {
        let words = match self {
            Bound::Exactly => "exactly",
            Bound::AtMost => "at most",
            Bound::AtLeast => "at least",
        };
        format!("{words} {value}")
    }

    /// The end of a key: `at_most`, `at_least` (`Exactly` has none).
    pub(crate) fn key(self) -> &'static str {
        match self {
            Bound::Exactly => "",
            Bound::AtMost => "at_most",
            Bound::AtLeast => "at_least",
        }
    }
}

/// A share's value, refused unless within 0 and 1 (the error starts with its line).
pub(crate) fn share_value(share: &Spanned<f64>, name: &str, claims: &SectionClaims) -> Result<f64> {
    let value = *share.get_ref();
    if !(0.0..=1.0).contains(&value) {
        bail!("{}: {name} must be a share within 0 and 1, not {value}", claims.line(share.span()));
    }
    Ok(value)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn claims_of(text: &str) -> Result<Vec<Claim>> {
        let file = parse("claims.toml", text)?;
        let (_, section) = file.queries.into_iter().next().unwrap();
        flatten(&section, &|span| line_of(text, span.start))
    }

    #[test]
    fn every_claim_is_named_by_its_key_and_line() {
        let text = "scales = [1000]\n\
                    [queries.q]\n\
                    granules_read_at_most = 2\n\
                    index.partition.parts_selected = 1\n\
                    index.skip.name = \"bf\"\n\
                    index.skip.rows_dropped_share_at_least = 0.9\n\
                    index.skip_index.set.initial_granules_at_least = 4\n\
                    read_rows_share_at_least = 1\n";
        let claims = claims_of(text).unwrap();
        let named: Vec<(&str, usize, Option<&str>)> =
            claims.iter().map(|claim| (claim.name.as_str(), claim.line, claim.only_on.as_deref())).collect();
        assert_eq!(
            named,
            [
                ("granules_read_at_most", 3, None),
                ("index.partition.parts_selected", 4, None),
                ("index.skip.rows_dropped_share_at_least", 6, None),
                ("index.skip_index.set.initial_granules_at_least", 7, None),
                ("read_rows_share_at_least", 8, None),
            ]
        );
        assert_eq!(
            format!("{:?}", claims[2].rule),
            "RowsDroppedShare { skip_index: Some(\"bf\"), bound: AtLeast, share: 0.9 }"
        );
    }

    #[test]
    fn table_claims_are_named_as_under_a_query_before() {
        let text = "scales = [1000]\n\
                    [table]\n\
                    active_parts_at_least = 1\n\
                    columns.message.compressed_bytes_below = \"lz4\"\n\
                    on.by_day.active_parts_at_most_share_of = { design = \"by_tenant_day\", share = 0.02 }\n\
                    on.by_day.columns.ts.compression_ratio_at_most = 3\n";
        let file = parse("claims.toml", text).unwrap();
        let claims = flatten_table(&file, &|span| line_of(text, span.start)).unwrap();
        let named: Vec<(&str, usize, Option<&str>)> =
            claims.iter().map(|claim| (claim.name.as_str(), claim.line, claim.only_on.as_deref())).collect();
        assert_eq!(
            named,
            [
                ("table.active_parts_at_least", 3, None),
                ("columns.message.compressed_bytes_below", 4, None),
                ("table.active_parts_at_most_share_of", 5, Some("by_day")),
                ("columns.ts.compression_ratio_at_most", 6, Some("by_day")),
            ]
        );
        let error = parse("c.toml", "scales = [1]\n[queries.q]\n\non.d.table.active_parts_at_most = 1\n").unwrap_err();
        assert!(error.to_string().starts_with("c.toml:4: unknown field `table`"), "{error}");
        assert!(error.to_string().contains("go in the [table] section"), "{error}");
    }

    #[test]
    fn an_unknown_claim_is_one_line_at_its_line() {
        let error = parse("p/claims.toml", "scales = [1]\n[queries.q]\ngranules_red_at_most = 2\n").unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("p/claims.toml:3: unknown field `granules_red_at_most`"), "{message}");
        assert!(
            message.ends_with("(the claims vocabulary is in docs/packs.md)") && !message.contains('\n'),
            "{message}"
        );
    }

    #[test]
    fn values_out_of_range_are_refused_at_their_line() {
        let error = claims_of("scales = [1]\n[queries.q]\n\nindex.skip.granules_dropped_share_at_least = 1.5\n");
        assert_eq!(
            error.unwrap_err().to_string(),
            "4: index.skip.granules_dropped_share_at_least must be a share within 0 and 1, not 1.5"
        );
        let error = claims_of("scales = [1]\n[queries.q]\nindex.primary_key.rows_dropped_share_at_least = 0.5\n");
        assert!(error.unwrap_err().to_string().starts_with("3: index.primary_key.rows_dropped_share_at_least"));
        let error = parse("c.toml", "scales = [1]\n[queries.q]\nread_rows_at_most = -1\n").unwrap_err();
        assert!(error.to_string().starts_with("c.toml:3: invalid value: integer `-1`"), "{error}");
    }

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

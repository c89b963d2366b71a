//! The `[table]` section (`table.*` and `columns.<column>.*` claims): storage of the table
//! each case's query reads (the plan's first MergeTree read), from `system.parts` and
//! `system.parts_columns`: compressed bytes against the same table on another design,
//! compression ratios and active parts, each bounded both ways. A size
//! the engine does not keep (per-column bytes of compact parts) is unknown, and a claim
//! about it is violated with the reason.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::Deserialize;
use toml::Spanned;

use super::{Bound, Observations, Rule, SectionClaims};
use crate::invariant::{Check, claim};
use crate::packs::Observation;
use crate::table_bytes::ColumnBytes;
use crate::table_parts::ColumnSizes;

/// `[table]`, and each `columns.<column>` and `on.<design>` in it: claims about the
/// designs' table, whatever the query (checked in every case, on the table its query
/// reads). One type for the three levels; what belongs to one level only is refused at
/// the others by [`state_table`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSection {
    /// A design whose same table (or column) must take more compressed bytes.
    compressed_bytes_below: Option<Spanned<String>>,
    /// A design whose same table (or column) must take fewer compressed bytes.
    compressed_bytes_above: Option<Spanned<String>>,
    compression_ratio_at_least: Option<Spanned<f64>>,
    compression_ratio_at_most: Option<Spanned<f64>>,
    /// The table only, not a column.
    active_parts_at_most: Option<Spanned<u64>>,
    active_parts_at_least: Option<Spanned<u64>>,
    active_parts_at_most_share_of: Option<Spanned<ShareOf>>,
    active_parts_at_least_share_of: Option<Spanned<ShareOf>>,
    /// `columns.<column>.*`: the same claims about one column.
    #[serde(default)]
    columns: BTreeMap<Spanned<String>, Spanned<TableSection>>,
    /// `on.<design>.*`: claims that hold on that design only.
    #[serde(default)]
    on: BTreeMap<Spanned<String>, Spanned<TableSection>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShareOf {
    design: String,
    share: f64,
}

/// The claims of a `[table]` section, `on.<design>` ones limited to their design.
pub(super) fn state_table(section: &TableSection, claims: &mut SectionClaims) -> Result<()> {
    state_level(section, claims)?;
    for (design, on) in &section.on {
        if !on.get_ref().on.is_empty() {
            bail!("{}: on.{} may not hold another on", claims.line(on.span()), design.get_ref());
        }
        claims.only_on = Some(design.get_ref().clone());
        state_level(on.get_ref(), claims)?;
    }
    claims.only_on = None;
    Ok(())
}

/// The table's claims at one level (the section or an `on.<design>`), then its columns'.
fn state_level(section: &TableSection, claims: &mut SectionClaims) -> Result<()> {
    state_storage(None, section, claims)?;
    for (column, of_column) in &section.columns {
        let inner = of_column.get_ref();
        if !inner.columns.is_empty() || !inner.on.is_empty() {
            bail!(
                "{}: columns.{} may hold claims only (on.<design> goes before columns: on.<design>.columns.<column>.<claim>)",
                claims.line(of_column.span()),
                column.get_ref()
            );
        }
        state_storage(Some(column.get_ref().clone()), inner, claims)?;
    }
    Ok(())
}

/// The claims of `table` (`column` is `None`) or of `columns.<column>`, named as before
/// the `[table]` section existed: `table.<claim>`, `columns.<column>.<claim>`.
fn state_storage(column: Option<String>, section: &TableSection, claims: &mut SectionClaims) -> Result<()> {
    let prefix = match &column {
        Some(column) => format!("columns.{column}"),
        None => "table".to_string(),
    };
    let compared =
        [(&section.compressed_bytes_below, true, "below"), (&section.compressed_bytes_above, false, "above")];
    for (design, below, key) in compared {
        let Some(design) = design else { continue };
        let rule = CompressedBytes { column: column.clone(), design: design.get_ref().clone(), below };
        claims.push(format!("{prefix}.compressed_bytes_{key}"), design.span(), rule);
    }
    let ratios = [
        (&section.compression_ratio_at_least, Bound::AtLeast, "at_least"),
        (&section.compression_ratio_at_most, Bound::AtMost, "at_most"),
    ];
    for (ratio, bound, key) in ratios {
        let Some(ratio) = ratio else { continue };
        let value = *ratio.get_ref();
        if !(value.is_finite() && value > 0.0) {
            bail!("{}: {prefix}.compression_ratio_{key} must be a positive number", claims.line(ratio.span()));
        }
        let rule = CompressionRatio { column: column.clone(), bound, ratio: value };
        claims.push(format!("{prefix}.compression_ratio_{key}"), ratio.span(), rule);
    }
    let table_only = [
        ("active_parts_at_most", section.active_parts_at_most.as_ref().map(|bound| bound.span())),
        ("active_parts_at_least", section.active_parts_at_least.as_ref().map(|bound| bound.span())),
        ("active_parts_at_most_share_of", section.active_parts_at_most_share_of.as_ref().map(|of| of.span())),
        ("active_parts_at_least_share_of", section.active_parts_at_least_share_of.as_ref().map(|of| of.span())),
    ];
    if column.is_some()
        && let Some((key, Some(span))) = table_only.iter().find(|(_, span)| span.is_some())
    {
        bail!("{}: {prefix}.{key}: parts belong to the table, not to a column", claims.line(span.clone()));
    }
    let parts = [(&section.active_parts_at_most, Bound::AtMost), (&section.active_parts_at_least, Bound::AtLeast)];
    for (value, bound) in parts {
        let Some(value) = value else { continue };
        let key = format!("{prefix}.active_parts_{}", bound.key());
        claims.push(key, value.span(), ActiveParts { bound, value: *value.get_ref() });
    }
    let shares = [
        (&section.active_parts_at_most_share_of, Bound::AtMost),
        (&section.active_parts_at_least_share_of, Bound::AtLeast),
    ];
    for (of, bound) in shares {
        let Some(of) = of else { continue };
        let key = format!("{prefix}.active_parts_{}_share_of", bound.key());
        let ShareOf { design, share } = of.get_ref().clone();
        if !(0.0..=1.0).contains(&share) {
            bail!("{}: {key}: share must be within 0 and 1", claims.line(of.span()));
        }
        claims.push(key, of.span(), ActivePartsShareOf { design, bound, share });
    }
    Ok(())
}

/// `<table or column>.compressed_bytes_below = "design"` (or `_above`): fewer (more)
/// compressed bytes than the same table (or column) on that design, at the same scale.
#[derive(Debug)]
struct CompressedBytes {
    column: Option<String>,
    design: String,
    below: bool,
}

impl Rule for CompressedBytes {
    fn designs_named(&self) -> Vec<&str> {
        vec![self.design.as_str()]
    }

    fn columns_named(&self) -> Vec<&str> {
        self.column.as_deref().into_iter().collect()
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let (column, design) = (self.column.as_deref(), &self.design);
        Some(observed.other_design(name, design)?.and_then(|other| {
            let fewer = if self.below { "fewer" } else { "more" };
            let expected = format!("{fewer} compressed bytes than on design {design}");
            match (compressed_bytes(observed.own, column), compressed_bytes(other, column)) {
                (Ok(here), Ok(there)) => claim(
                    name,
                    if self.below { here < there } else { here > there },
                    format!("{here} bytes here, {there} on {design}"),
                    expected,
                ),
                (Err(reason), _) | (_, Err(reason)) => claim(name, false, format!("unknown ({reason})"), expected),
            }
        }))
    }
}

/// `<table or column>.compression_ratio_at_{least,most} = R`: uncompressed over
/// compressed bytes is at least (at most) R.
#[derive(Debug)]
struct CompressionRatio {
    column: Option<String>,
    bound: Bound,
    ratio: f64,
}

impl Rule for CompressionRatio {
    fn columns_named(&self) -> Vec<&str> {
        self.column.as_deref().into_iter().collect()
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let expected = format!("a compression ratio of {}", self.bound.text(self.ratio));
        Some(match compression_ratio(observed.own, self.column.as_deref()) {
            Ok(measured) => claim(name, self.bound.holds(measured, self.ratio), format!("{measured:.3}"), expected),
            Err(reason) => claim(name, false, format!("unknown ({reason})"), expected),
        })
    }
}

/// `table.active_parts_at_{most,least} = N`.
#[derive(Debug)]
struct ActiveParts {
    bound: Bound,
    value: u64,
}

impl Rule for ActiveParts {
    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let expected = self.bound.text(self.value as f64);
        Some(match &observed.own.parts {
            Some(parts) => claim(
                name,
                self.bound.holds(parts.active_parts as f64, self.value as f64),
                format!("{} active parts", parts.active_parts),
                expected,
            ),
            None => claim(name, false, "unknown (the query reads no MergeTree table)", expected),
        })
    }
}

/// `table.active_parts_at_{most,least}_share_of = { design = "d", share = S }`: at most
/// (at least) S times the active parts of the same table on design d.
#[derive(Debug)]
struct ActivePartsShareOf {
    design: String,
    bound: Bound,
    share: f64,
}

impl Rule for ActivePartsShareOf {
    fn designs_named(&self) -> Vec<&str> {
        vec![self.design.as_str()]
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let (design, share) = (&self.design, self.share);
        Some(observed.other_design(name, design)?.and_then(|other| {
            let expected = format!("{} of design {design}'s active parts", self.bound.text(share));
            match (&observed.own.parts, &other.parts) {
                (Some(here), Some(there)) => claim(
                    name,
                    self.bound.holds(here.active_parts as f64, share * there.active_parts as f64),
                    format!("{} active parts here, {} on {design}", here.active_parts, there.active_parts),
                    expected,
                ),
                _ => claim(name, false, "unknown (the query reads no MergeTree table)", expected),
            }
        }))
    }
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

fn column_of(observed: &Observation, column: &str) -> Result<ColumnBytes, String> {
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

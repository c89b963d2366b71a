//! `table.*` and `columns.<column>.*`: storage of the table the query reads (the plan's first
//! MergeTree read), from `system.parts` and `system.parts_columns`: compressed bytes
//! against the same table on another design, compression ratios and active parts. A size
//! the engine does not keep (per-column bytes of compact parts) is unknown, and a claim
//! about it is violated with the reason.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::Deserialize;
use toml::Spanned;

use super::{ClaimKey, Observations, Rule, SectionClaims, no_less, no_more};
use crate::invariant::{Check, claim};
use crate::packs::Observation;
use crate::parts::ColumnSizes;
use crate::table_bytes::ColumnBytes;

/// `table.*`.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub(super) struct Table(StorageSection);

impl ClaimKey for Table {
    const KEY: &'static str = "table";

    fn state(&self, claims: &mut SectionClaims) -> Result<()> {
        state_storage(None, &self.0, claims)
    }
}

/// `columns.<column>.*`.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub(super) struct Columns(BTreeMap<Spanned<String>, StorageSection>);

impl ClaimKey for Columns {
    const KEY: &'static str = "columns";

    fn state(&self, claims: &mut SectionClaims) -> Result<()> {
        for (column, section) in &self.0 {
            state_storage(Some(column.get_ref().clone()), section, claims)?;
        }
        Ok(())
    }
}

/// `table` or `columns.<column>`: storage of the table the query reads.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StorageSection {
    /// A design whose same table (or column) must take more compressed bytes.
    compressed_bytes_below: Option<Spanned<String>>,
    compression_ratio_at_least: Option<Spanned<f64>>,
    /// `table` only.
    active_parts_at_most: Option<Spanned<u64>>,
    /// `table` only.
    active_parts_at_most_share_of: Option<Spanned<ShareOf>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShareOf {
    design: String,
    share: f64,
}

/// The claims of `table` (`column` is `None`) or of `columns.<column>`.
fn state_storage(column: Option<String>, section: &StorageSection, claims: &mut SectionClaims) -> Result<()> {
    let prefix = match &column {
        Some(column) => format!("columns.{column}"),
        None => "table".to_string(),
    };
    if let Some(design) = &section.compressed_bytes_below {
        let rule = CompressedBytesBelow { column: column.clone(), design: design.get_ref().clone() };
        claims.push(format!("{prefix}.compressed_bytes_below"), design.span(), rule);
    }
    if let Some(ratio) = &section.compression_ratio_at_least {
        let value = *ratio.get_ref();
        if !(value.is_finite() && value > 0.0) {
            bail!("{}: {prefix}.compression_ratio_at_least must be a positive number", claims.line(ratio.span()));
        }
        let rule = CompressionRatioAtLeast { column: column.clone(), ratio: value };
        claims.push(format!("{prefix}.compression_ratio_at_least"), ratio.span(), rule);
    }
    let table_only = [
        ("active_parts_at_most", section.active_parts_at_most.as_ref().map(|bound| bound.span())),
        ("active_parts_at_most_share_of", section.active_parts_at_most_share_of.as_ref().map(|of| of.span())),
    ];
    if column.is_some()
        && let Some((key, Some(span))) = table_only.iter().find(|(_, span)| span.is_some())
    {
        bail!("{}: {prefix}.{key}: parts belong to the table, not to a column", claims.line(span.clone()));
    }
    if let Some(bound) = &section.active_parts_at_most {
        claims.push(format!("{prefix}.active_parts_at_most"), bound.span(), ActivePartsAtMost(*bound.get_ref()));
    }
    if let Some(of) = &section.active_parts_at_most_share_of {
        let ShareOf { design, share } = of.get_ref().clone();
        if !(0.0..=1.0).contains(&share) {
            bail!("{}: {prefix}.active_parts_at_most_share_of: share must be within 0 and 1", claims.line(of.span()));
        }
        let rule = ActivePartsAtMostShareOf { design, share };
        claims.push(format!("{prefix}.active_parts_at_most_share_of"), of.span(), rule);
    }
    Ok(())
}

/// `<table or column>.compressed_bytes_below = "design"`: fewer compressed bytes than the
/// same table (or column) on that design, at the same scale.
#[derive(Debug)]
struct CompressedBytesBelow {
    column: Option<String>,
    design: String,
}

impl Rule for CompressedBytesBelow {
    fn designs_named(&self) -> Vec<&str> {
        vec![self.design.as_str()]
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let (column, design) = (self.column.as_deref(), &self.design);
        Some(observed.other_design(name, design)?.and_then(|other| {
            let expected = format!("fewer compressed bytes than on design {design}");
            match (compressed_bytes(observed.own, column), compressed_bytes(other, column)) {
                (Ok(here), Ok(there)) => {
                    claim(name, here < there, format!("{here} bytes here, {there} on {design}"), expected)
                }
                (Err(reason), _) | (_, Err(reason)) => claim(name, false, format!("unknown ({reason})"), expected),
            }
        }))
    }
}

/// `<table or column>.compression_ratio_at_least = R`: uncompressed over compressed bytes
/// is at least R.
#[derive(Debug)]
struct CompressionRatioAtLeast {
    column: Option<String>,
    ratio: f64,
}

impl Rule for CompressionRatioAtLeast {
    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let expected = format!("a compression ratio of at least {}", self.ratio);
        Some(match compression_ratio(observed.own, self.column.as_deref()) {
            Ok(measured) => claim(name, no_less(measured, self.ratio), format!("{measured:.3}"), expected),
            Err(reason) => claim(name, false, format!("unknown ({reason})"), expected),
        })
    }
}

/// `table.active_parts_at_most = N`.
#[derive(Debug)]
struct ActivePartsAtMost(u64);

impl Rule for ActivePartsAtMost {
    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let bound = self.0;
        Some(match &observed.own.parts {
            Some(parts) => claim(
                name,
                parts.active_parts <= bound,
                format!("{} active parts", parts.active_parts),
                format!("at most {bound}"),
            ),
            None => claim(name, false, "unknown (the query reads no MergeTree table)", format!("at most {bound}")),
        })
    }
}

/// `table.active_parts_at_most_share_of = { design = "d", share = S }`: at most S times
/// the active parts of the same table on design d.
#[derive(Debug)]
struct ActivePartsAtMostShareOf {
    design: String,
    share: f64,
}

impl Rule for ActivePartsAtMostShareOf {
    fn designs_named(&self) -> Vec<&str> {
        vec![self.design.as_str()]
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let (design, share) = (&self.design, self.share);
        Some(observed.other_design(name, design)?.and_then(|other| {
            let expected = format!("at most {share} of design {design}'s active parts");
            match (&observed.own.parts, &other.parts) {
                (Some(here), Some(there)) => claim(
                    name,
                    no_more(here.active_parts as f64, share * there.active_parts as f64),
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

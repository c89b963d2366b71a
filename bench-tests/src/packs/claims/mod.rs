//! A pack's claims file (`claims.toml`): the vocabulary as Rust types, parsed with the
//! line of every key kept, and flattened into a list of named [`Claim`]s.
//!
//! The vocabulary is documented for users in `docs/packs.md`; a field added here must be
//! added there (a test compares the two).

use std::collections::BTreeMap;
use std::ops::Range;

use anyhow::{Result, bail};
use serde::Deserialize;
use toml::Spanned;

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
    #[serde(default)]
    pub queries: BTreeMap<Spanned<String>, QuerySection>,
}

/// `[queries.<name>]`: which cases a query runs in, and its claims. The same type holds
/// the claims of `on.<design>` (which may not name cases again; checked on load).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuerySection {
    pub designs: Option<Spanned<Vec<Spanned<String>>>>,
    pub scales: Option<Spanned<Vec<u64>>>,
    /// The answer differs from run to run (a sampling aggregate such as `quantiles`, whose
    /// reservoir depends on how threads split the rows): snapshots record no answer and
    /// the determinism check does not compare it. Not a claim.
    pub answer_varies: Option<Spanned<bool>>,
    /// A broken design (a file in `broken/`) and the claim it must violate.
    #[serde(default)]
    pub broken: BTreeMap<Spanned<String>, Spanned<String>>,
    /// Claims that hold on one design only.
    #[serde(default)]
    pub on: BTreeMap<Spanned<String>, Spanned<QuerySection>>,
    pub read_rows_at_most: Option<Spanned<u64>>,
    pub granules_read_at_most: Option<Spanned<u64>>,
    pub read_rows_growth_at_most: Option<Spanned<f64>>,
    pub same_answer_on_every_design: Option<Spanned<bool>>,
    pub index: Option<IndexSection>,
    pub table: Option<StorageSection>,
    #[serde(default)]
    pub columns: BTreeMap<Spanned<String>, StorageSection>,
}

/// `index.<stage>`: the index stages of `EXPLAIN indexes = 1`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexSection {
    pub min_max: Option<StageSection>,
    pub partition: Option<StageSection>,
    pub primary_key: Option<StageSection>,
    pub skip: Option<StageSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSection {
    /// The skip index's name (`skip` only; default: the first skip index of the read).
    pub name: Option<Spanned<String>>,
    pub parts_selected: Option<Spanned<u64>>,
    pub parts_selected_at_most: Option<Spanned<u64>>,
    pub granules_selected: Option<Spanned<u64>>,
    pub granules_selected_at_most: Option<Spanned<u64>>,
    pub granules_dropped_share_at_least: Option<Spanned<f64>>,
    /// `skip` only: read_rows with skip indexes against without.
    pub rows_dropped_share_at_least: Option<Spanned<f64>>,
}

/// `table` or `columns.<column>`: storage of the table the query reads.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSection {
    /// A design whose same table (or column) must take more compressed bytes.
    pub compressed_bytes_below: Option<Spanned<String>>,
    pub compression_ratio_at_least: Option<Spanned<f64>>,
    /// `table` only.
    pub active_parts_at_most: Option<Spanned<u64>>,
    /// `table` only.
    pub active_parts_at_most_share_of: Option<Spanned<ShareOf>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShareOf {
    pub design: String,
    pub share: f64,
}

/// The index stages a claim may name, with the engine's names for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    MinMax,
    Partition,
    PrimaryKey,
    Skip,
}

impl Stage {
    /// The stage's `Type` in `EXPLAIN indexes = 1, json = 1`.
    pub fn engine_name(self) -> &'static str {
        match self {
            Stage::MinMax => "Min-Max",
            Stage::Partition => "Partition",
            Stage::PrimaryKey => "PrimaryKey",
            Stage::Skip => "Skip",
        }
    }

    /// The stage's key in a claims file.
    pub fn key(self) -> &'static str {
        match self {
            Stage::MinMax => "min_max",
            Stage::Partition => "partition",
            Stage::PrimaryKey => "primary_key",
            Stage::Skip => "skip",
        }
    }
}

/// What one claim bounds.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    ReadRowsAtMost(u64),
    GranulesReadAtMost(u64),
    /// At the largest scale, read_rows at most this many times that at the smallest.
    ReadRowsGrowthAtMost(f64),
    SameAnswerOnEveryDesign,
    PartsSelected {
        stage: Stage,
        skip_index: Option<String>,
        exactly: bool,
        bound: u64,
    },
    GranulesSelected {
        stage: Stage,
        skip_index: Option<String>,
        exactly: bool,
        bound: u64,
    },
    GranulesDroppedShareAtLeast {
        stage: Stage,
        skip_index: Option<String>,
        share: f64,
    },
    RowsDroppedShareAtLeast {
        skip_index: Option<String>,
        share: f64,
    },
    /// Compressed bytes of the table (or of `column`) below those on another design.
    CompressedBytesBelow {
        column: Option<String>,
        design: String,
    },
    CompressionRatioAtLeast {
        column: Option<String>,
        ratio: f64,
    },
    ActivePartsAtMost(u64),
    ActivePartsAtMostShareOf {
        design: String,
        share: f64,
    },
}

impl Rule {
    /// The designs (other than the case's own) whose measurements the rule compares with.
    pub fn other_designs(&self) -> Vec<&str> {
        match self {
            Rule::CompressedBytesBelow { design, .. } | Rule::ActivePartsAtMostShareOf { design, .. } => {
                vec![design.as_str()]
            }
            _ => Vec::new(),
        }
    }
}

/// One claim of a query: its name (its key in the file, without `on.<design>.`), the
/// line it is written on, and the one design it is limited to, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub name: String,
    pub line: usize,
    pub only_on: Option<String>,
    pub rule: Rule,
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
    if message.contains("unknown field") && message.contains("`queries`") {
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
    let mut claims = Vec::new();
    collect(section, None, line, &mut claims)?;
    for (design, on) in &section.on {
        let on_section = on.get_ref();
        if on_section.designs.is_some()
            || on_section.scales.is_some()
            || on_section.answer_varies.is_some()
            || !on_section.broken.is_empty()
            || !on_section.on.is_empty()
        {
            bail!(
                "{}: on.{} may hold claims only (designs, scales, answer_varies, broken and on belong to the \
                 query)",
                line(on.span()),
                design.get_ref()
            );
        }
        collect(on_section, Some(design.get_ref().clone()), line, &mut claims)?;
    }
    // In the file's order, so reports read like the file.
    claims.sort_by_key(|claim| claim.line);
    Ok(claims)
}

fn collect(
    section: &QuerySection,
    only_on: Option<String>,
    line: &dyn Fn(Range<usize>) -> usize,
    claims: &mut Vec<Claim>,
) -> Result<()> {
    let mut push = |name: String, span: Range<usize>, rule: Rule| {
        claims.push(Claim { name, line: line(span), only_on: only_on.clone(), rule });
    };
    if let Some(bound) = &section.read_rows_at_most {
        push("read_rows_at_most".into(), bound.span(), Rule::ReadRowsAtMost(*bound.get_ref()));
    }
    if let Some(bound) = &section.granules_read_at_most {
        push("granules_read_at_most".into(), bound.span(), Rule::GranulesReadAtMost(*bound.get_ref()));
    }
    if let Some(factor) = &section.read_rows_growth_at_most {
        let value = *factor.get_ref();
        if !(value.is_finite() && value >= 1.0) {
            bail!("{}: read_rows_growth_at_most must be a number of at least 1, not {value}", line(factor.span()));
        }
        push("read_rows_growth_at_most".into(), factor.span(), Rule::ReadRowsGrowthAtMost(value));
    }
    if let Some(same) = &section.same_answer_on_every_design
        && *same.get_ref()
    {
        push("same_answer_on_every_design".into(), same.span(), Rule::SameAnswerOnEveryDesign);
    }
    if let Some(index) = &section.index {
        let stages = [
            (Stage::MinMax, &index.min_max),
            (Stage::Partition, &index.partition),
            (Stage::PrimaryKey, &index.primary_key),
            (Stage::Skip, &index.skip),
        ];
        for (stage, claims_of_stage) in stages {
            let Some(stage_section) = claims_of_stage else { continue };
            let prefix = format!("index.{}", stage.key());
            let skip_index = stage_section.name.as_ref().map(|name| name.get_ref().clone());
            if let Some(name) = &stage_section.name
                && stage != Stage::Skip
            {
                bail!("{}: {prefix}.name: only a skip index has a name", line(name.span()));
            }
            let counts = [
                ("parts_selected", &stage_section.parts_selected, true, true),
                ("parts_selected_at_most", &stage_section.parts_selected_at_most, true, false),
                ("granules_selected", &stage_section.granules_selected, false, true),
                ("granules_selected_at_most", &stage_section.granules_selected_at_most, false, false),
            ];
            for (key, bound, parts, exactly) in counts {
                let Some(bound) = bound else { continue };
                let skip_index = skip_index.clone();
                let bound_value = *bound.get_ref();
                let rule = if parts {
                    Rule::PartsSelected { stage, skip_index, exactly, bound: bound_value }
                } else {
                    Rule::GranulesSelected { stage, skip_index, exactly, bound: bound_value }
                };
                push(format!("{prefix}.{key}"), bound.span(), rule);
            }
            if let Some(share) = &stage_section.granules_dropped_share_at_least {
                let value = share_value(share, &format!("{prefix}.granules_dropped_share_at_least"), line)?;
                let rule = Rule::GranulesDroppedShareAtLeast { stage, skip_index: skip_index.clone(), share: value };
                push(format!("{prefix}.granules_dropped_share_at_least"), share.span(), rule);
            }
            if let Some(share) = &stage_section.rows_dropped_share_at_least {
                let name = format!("{prefix}.rows_dropped_share_at_least");
                if stage != Stage::Skip {
                    bail!("{}: {name}: rows dropped are measured for skip indexes only", line(share.span()));
                }
                let value = share_value(share, &name, line)?;
                push(
                    name,
                    share.span(),
                    Rule::RowsDroppedShareAtLeast { skip_index: skip_index.clone(), share: value },
                );
            }
        }
    }
    let storage = section.table.iter().map(|table| (None, table)).chain(
        section.columns.iter().map(|(column, claims_of_column)| (Some(column.get_ref().clone()), claims_of_column)),
    );
    for (column, storage_section) in storage {
        let prefix = match &column {
            Some(column) => format!("columns.{column}"),
            None => "table".to_string(),
        };
        if let Some(design) = &storage_section.compressed_bytes_below {
            let rule = Rule::CompressedBytesBelow { column: column.clone(), design: design.get_ref().clone() };
            push(format!("{prefix}.compressed_bytes_below"), design.span(), rule);
        }
        if let Some(ratio) = &storage_section.compression_ratio_at_least {
            let value = *ratio.get_ref();
            if !(value.is_finite() && value > 0.0) {
                bail!("{}: {prefix}.compression_ratio_at_least must be a positive number", line(ratio.span()));
            }
            let rule = Rule::CompressionRatioAtLeast { column: column.clone(), ratio: value };
            push(format!("{prefix}.compression_ratio_at_least"), ratio.span(), rule);
        }
        let table_only = [
            ("active_parts_at_most", storage_section.active_parts_at_most.as_ref().map(|bound| bound.span())),
            (
                "active_parts_at_most_share_of",
                storage_section.active_parts_at_most_share_of.as_ref().map(|of| of.span()),
            ),
        ];
        if column.is_some()
            && let Some((key, Some(span))) = table_only.iter().find(|(_, span)| span.is_some())
        {
            bail!("{}: {prefix}.{key}: parts belong to the table, not to a column", line(span.clone()));
        }
        if let Some(bound) = &storage_section.active_parts_at_most {
            push(format!("{prefix}.active_parts_at_most"), bound.span(), Rule::ActivePartsAtMost(*bound.get_ref()));
        }
        if let Some(of) = &storage_section.active_parts_at_most_share_of {
            let ShareOf { design, share } = of.get_ref().clone();
            if !(0.0..=1.0).contains(&share) {
                bail!("{}: {prefix}.active_parts_at_most_share_of: share must be within 0 and 1", line(of.span()));
            }
            push(
                format!("{prefix}.active_parts_at_most_share_of"),
                of.span(),
                Rule::ActivePartsAtMostShareOf { design, share },
            );
        }
    }
    Ok(())
}

fn share_value(share: &Spanned<f64>, name: &str, line: &dyn Fn(Range<usize>) -> usize) -> Result<f64> {
    let value = *share.get_ref();
    if !(0.0..=1.0).contains(&value) {
        bail!("{}: {name} must be a share within 0 and 1, not {value}", line(share.span()));
    }
    Ok(value)
}

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
                    columns.message.compressed_bytes_below = \"lz4\"\n\
                    on.by_day.table.active_parts_at_most_share_of = { design = \"by_tenant_day\", share = 0.02 }\n";
        let claims = claims_of(text).unwrap();
        let named: Vec<(&str, usize, Option<&str>)> =
            claims.iter().map(|claim| (claim.name.as_str(), claim.line, claim.only_on.as_deref())).collect();
        assert_eq!(
            named,
            [
                ("granules_read_at_most", 3, None),
                ("index.partition.parts_selected", 4, None),
                ("index.skip.rows_dropped_share_at_least", 6, None),
                ("columns.message.compressed_bytes_below", 7, None),
                ("table.active_parts_at_most_share_of", 8, Some("by_day")),
            ]
        );
        assert_eq!(claims[2].rule, Rule::RowsDroppedShareAtLeast { skip_index: Some("bf".into()), share: 0.9 });
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
}

//! `index.<stage>.*` and `index.skip_index.<name>.*`: what an index stage of `EXPLAIN
//! indexes = 1` started with and kept, in the plan's first MergeTree read (parts and
//! granules, the share of granules dropped), each bounded exactly, from above or from
//! below; and `rows_dropped_share_*` of a skip index, which measures the query again
//! without it. A stage missing from the plan violates every claim about it; a skip
//! index's claims name the index they measured. What a skip stage left to the read
//! (`applied_on_data_read`) kept is what the read kept: its granules read, its parts
//! unknown.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::Deserialize;
use toml::Spanned;

use super::{Bound, ClaimKey, Observations, Rule, SectionClaims, share_value};
use crate::explain::IndexStage;
use crate::invariant::{Check, claim};
use crate::packs::{AlsoMeasure, Observation};

/// `index.<stage>`: the index stages a claim may name, and `skip_index.<name>`: one skip
/// index by name, so that a query with several has claims about each.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IndexSection {
    min_max: Option<StageSection>,
    partition: Option<StageSection>,
    primary_key: Option<StageSection>,
    skip: Option<StageSection>,
    #[serde(default)]
    skip_index: BTreeMap<Spanned<String>, StageSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StageSection {
    /// The skip index's name (`skip` only; default: the first skip index of the read).
    name: Option<Spanned<String>>,
    parts_selected: Option<Spanned<u64>>,
    parts_selected_at_most: Option<Spanned<u64>>,
    parts_selected_at_least: Option<Spanned<u64>>,
    granules_selected: Option<Spanned<u64>>,
    granules_selected_at_most: Option<Spanned<u64>>,
    granules_selected_at_least: Option<Spanned<u64>>,
    initial_parts: Option<Spanned<u64>>,
    initial_parts_at_most: Option<Spanned<u64>>,
    initial_parts_at_least: Option<Spanned<u64>>,
    initial_granules: Option<Spanned<u64>>,
    initial_granules_at_most: Option<Spanned<u64>>,
    initial_granules_at_least: Option<Spanned<u64>>,
    granules_dropped_share_at_least: Option<Spanned<f64>>,
    granules_dropped_share_at_most: Option<Spanned<f64>>,
    /// Skip indexes only: read_rows with the index against without.
    rows_dropped_share_at_least: Option<Spanned<f64>>,
    rows_dropped_share_at_most: Option<Spanned<f64>>,
    /// Whether the plan has the stage at all: `used = false` says the index does not
    /// apply to this query.
    used: Option<Spanned<bool>>,
}

impl ClaimKey for IndexSection {
    const KEY: &'static str = "index";

    fn state(&self, claims: &mut SectionClaims) -> Result<()> {
        let stages = [
            (Stage::MinMax, &self.min_max),
            (Stage::Partition, &self.partition),
            (Stage::PrimaryKey, &self.primary_key),
            (Stage::Skip, &self.skip),
        ];
        for (stage, section) in stages {
            if let Some(section) = section {
                let skip_index = section.name.as_ref().map(|name| name.get_ref().clone());
                if let Some(name) = &section.name
                    && stage != Stage::Skip
                {
                    bail!("{}: index.{}.name: only a skip index has a name", claims.line(name.span()), stage.key());
                }
                state_stage(&format!("index.{}", stage.key()), stage, skip_index, section, claims)?;
            }
        }
        for (index, section) in &self.skip_index {
            let prefix = format!("index.skip_index.{}", index.get_ref());
            if let Some(name) = &section.name {
                bail!("{}: {prefix}.name: the index is named by its key already", claims.line(name.span()));
            }
            state_stage(&prefix, Stage::Skip, Some(index.get_ref().clone()), section, claims)?;
        }
        Ok(())
    }
}

/// The claims of one stage's section, named `<prefix>.<key>`.
fn state_stage(
    prefix: &str,
    stage: Stage,
    skip_index: Option<String>,
    section: &StageSection,
    claims: &mut SectionClaims,
) -> Result<()> {
    use {Bound::*, Count::*};
    let counts = [
        ("parts_selected", &section.parts_selected, SelectedParts, Exactly),
        ("parts_selected_at_most", &section.parts_selected_at_most, SelectedParts, AtMost),
        ("parts_selected_at_least", &section.parts_selected_at_least, SelectedParts, AtLeast),
        ("granules_selected", &section.granules_selected, SelectedGranules, Exactly),
        ("granules_selected_at_most", &section.granules_selected_at_most, SelectedGranules, AtMost),
        ("granules_selected_at_least", &section.granules_selected_at_least, SelectedGranules, AtLeast),
        ("initial_parts", &section.initial_parts, InitialParts, Exactly),
        ("initial_parts_at_most", &section.initial_parts_at_most, InitialParts, AtMost),
        ("initial_parts_at_least", &section.initial_parts_at_least, InitialParts, AtLeast),
        ("initial_granules", &section.initial_granules, InitialGranules, Exactly),
        ("initial_granules_at_most", &section.initial_granules_at_most, InitialGranules, AtMost),
        ("initial_granules_at_least", &section.initial_granules_at_least, InitialGranules, AtLeast),
    ];
    for (key, value, count, bound) in counts {
        let Some(value) = value else { continue };
        let rule = StageCount { stage, skip_index: skip_index.clone(), count, bound, value: *value.get_ref() };
        claims.push(format!("{prefix}.{key}"), value.span(), rule);
    }
    if let Some(used) = &section.used {
        let rule = StageUsed { stage, skip_index: skip_index.clone(), used: *used.get_ref() };
        claims.push(format!("{prefix}.used"), used.span(), rule);
    }
    let granule_shares = [
        ("granules_dropped_share_at_least", &section.granules_dropped_share_at_least, AtLeast),
        ("granules_dropped_share_at_most", &section.granules_dropped_share_at_most, AtMost),
    ];
    for (key, share, bound) in granule_shares {
        let Some(share) = share else { continue };
        let name = format!("{prefix}.{key}");
        let value = share_value(share, &name, claims)?;
        let rule = GranulesDroppedShare { stage, skip_index: skip_index.clone(), bound, share: value };
        claims.push(name, share.span(), rule);
    }
    let row_shares = [
        ("rows_dropped_share_at_least", &section.rows_dropped_share_at_least, AtLeast),
        ("rows_dropped_share_at_most", &section.rows_dropped_share_at_most, AtMost),
    ];
    for (key, share, bound) in row_shares {
        let Some(share) = share else { continue };
        let name = format!("{prefix}.{key}");
        if stage != Stage::Skip {
            bail!("{}: {name}: rows dropped are measured for skip indexes only", claims.line(share.span()));
        }
        let value = share_value(share, &name, claims)?;
        claims.push(name, share.span(), RowsDroppedShare { skip_index: skip_index.clone(), bound, share: value });
    }
    Ok(())
}

/// The index stages a claim may name, with the engine's names for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    MinMax,
    Partition,
    PrimaryKey,
    Skip,
}

impl Stage {
    /// The stage's `Type` in `EXPLAIN indexes = 1, json = 1`.
    fn engine_name(self) -> &'static str {
        match self {
            Stage::MinMax => "Min-Max",
            Stage::Partition => "Partition",
            Stage::PrimaryKey => "PrimaryKey",
            Stage::Skip => "Skip",
        }
    }

    /// The stage's key in a claims file.
    fn key(self) -> &'static str {
        match self {
            Stage::MinMax => "min_max",
            Stage::Partition => "partition",
            Stage::PrimaryKey => "primary_key",
            Stage::Skip => "skip",
        }
    }
}

/// Which count of a stage a claim bounds: what it started with (EXPLAIN's Initial
/// Parts and Granules) or what it kept (Selected).
#[derive(Debug, Clone, Copy)]
enum Count {
    InitialParts,
    InitialGranules,
    SelectedParts,
    SelectedGranules,
}

/// `index.<stage>.{initial,selected} {parts,granules}`, bounded.
#[derive(Debug)]
struct StageCount {
    stage: Stage,
    skip_index: Option<String>,
    count: Count,
    bound: Bound,
    value: u64,
}

impl Rule for StageCount {
    fn skip_indexes_named(&self) -> Vec<&str> {
        self.skip_index.as_deref().into_iter().collect()
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let (what, kept_count) = match self.count {
            Count::InitialParts => ("parts", false),
            Count::InitialGranules => ("granules", false),
            Count::SelectedParts => ("parts", true),
            Count::SelectedGranules => ("granules", true),
        };
        let verb = if kept_count { "selected" } else { "to start with" };
        let expected = format!("{} {what} {verb}", self.bound.text(self.value as f64));
        Some(match find_stage(observed.own, self.stage, self.skip_index.as_deref()) {
            Err(missing) => claim(name, false, missing, expected),
            Ok(found) => {
                let label = stage_label(found);
                let (kept, initial) = match self.count {
                    Count::InitialParts | Count::SelectedParts => {
                        (found.parts_kept().ok_or(PARTS_UNKNOWN), found.initial_parts)
                    }
                    Count::InitialGranules | Count::SelectedGranules => {
                        (kept_granules(found, observed.own), found.initial_granules)
                    }
                };
                let measured_count = if kept_count { kept } else { Ok(initial) };
                match measured_count {
                    Err(reason) => claim(name, false, format!("unknown ({label}{reason})"), expected),
                    Ok(count) => {
                        // What a stage started with is the plan's, known even where what it
                        // kept is not.
                        let measured = match kept {
                            Ok(kept) => format!("{label}{kept} of {initial} {what} selected{}", read_note(found)),
                            Err(_) => format!("{label}{initial} {what} to start with"),
                        };
                        claim(name, self.bound.holds(count as f64, self.value as f64), measured, expected)
                    }
                }
            }
        })
    }
}

/// `index.<stage>.used = true|false`: the plan's first MergeTree read has the stage (the
/// named skip index) or has not; `false` says an index does not apply to the query.
#[derive(Debug)]
struct StageUsed {
    stage: Stage,
    skip_index: Option<String>,
    used: bool,
}

impl Rule for StageUsed {
    fn skip_indexes_named(&self) -> Vec<&str> {
        self.skip_index.as_deref().into_iter().collect()
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let what = match &self.skip_index {
            Some(index) => format!("skip index {index}"),
            None => format!("the {} stage", self.stage.engine_name()),
        };
        let expected = format!("{what} {}", if self.used { "used" } else { "not used" });
        Some(match find_stage(observed.own, self.stage, self.skip_index.as_deref()) {
            Ok(found) => claim(
                name,
                self.used,
                format!("{what} used: {} of {} granules kept", found.selected_granules, found.initial_granules),
                expected,
            ),
            Err(missing) => claim(name, !self.used, missing, expected),
        })
    }
}

/// `index.<stage>.granules_dropped_share_at_{least,most} = S`: the stage dropped at
/// least (at most) the share S of the granules it was given.
#[derive(Debug)]
struct GranulesDroppedShare {
    stage: Stage,
    skip_index: Option<String>,
    bound: Bound,
    share: f64,
}

impl Rule for GranulesDroppedShare {
    fn skip_indexes_named(&self) -> Vec<&str> {
        self.skip_index.as_deref().into_iter().collect()
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let expected = format!("{} of the granules dropped", self.bound.text(self.share));
        Some(match find_stage(observed.own, self.stage, self.skip_index.as_deref()) {
            Err(missing) => claim(name, false, missing, expected),
            Ok(found) if found.initial_granules == 0 => {
                claim(name, false, format!("unknown ({}the stage was given no granules)", stage_label(found)), expected)
            }
            Ok(found) => match kept_granules(found, observed.own) {
                Err(reason) => claim(name, false, format!("unknown ({}{reason})", stage_label(found)), expected),
                Ok(kept) => {
                    let dropped = 1.0 - kept as f64 / found.initial_granules as f64;
                    claim(
                        name,
                        self.bound.holds(dropped, self.share),
                        format!(
                            "{}{kept} of {} granules kept, {dropped:.4} dropped{}",
                            stage_label(found),
                            found.initial_granules,
                            read_note(found)
                        ),
                        expected,
                    )
                }
            },
        })
    }
}

/// `rows_dropped_share_at_{least,most} = S` of a skip index: with it the query read at
/// most (at least) (1 - S) of the rows it reads without it, measured in the same case.
#[derive(Debug)]
struct RowsDroppedShare {
    skip_index: Option<String>,
    bound: Bound,
    share: f64,
}

impl Rule for RowsDroppedShare {
    fn skip_indexes_named(&self) -> Vec<&str> {
        self.skip_index.as_deref().into_iter().collect()
    }

    fn also_measure(&self) -> AlsoMeasure<'_> {
        AlsoMeasure::WithoutSkipIndex(self.skip_index.as_deref())
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let own = observed.own;
        let found = find_stage(own, Stage::Skip, self.skip_index.as_deref());
        // The index the claim measured: named, or the read's first.
        let index = match (&self.skip_index, &found) {
            (Some(name), _) => format!("skip index {name}"),
            (None, Ok(IndexStage { name: Some(name), .. })) => format!("skip indexes (the first: {name})"),
            (None, _) => "skip indexes".to_string(),
        };
        let expected = format!("{} of the rows dropped by the {index}", self.bound.text(self.share));
        if let Err(missing) = found {
            return Some(claim(name, false, missing, expected));
        }
        Some(match own.read_rows_without_skip_index {
            Some(without) if without > 0 => {
                let dropped = 1.0 - own.read_rows as f64 / without as f64;
                claim(
                    name,
                    self.bound.holds(dropped, self.share),
                    format!("{dropped:.4} dropped ({} rows read, {without} without the {index})", own.read_rows),
                    expected,
                )
            }
            _ => claim(name, false, format!("unknown (the query read no rows without the {index})"), expected),
        })
    }
}

/// Why the parts a skip stage applied while reading kept are unknown.
const PARTS_UNKNOWN: &str = "the statement applies skip indexes while reading \
     (use_skip_indexes_on_data_read = 1), so SelectedParts counts parts before them and the \
     plan's count is not what the read kept: claim granules instead";

/// The granules a stage kept as the read did ([`IndexStage::granules_kept`]), or why
/// that is unknown.
fn kept_granules(found: &IndexStage, observed: &Observation) -> Result<u64, &'static str> {
    found.granules_kept(observed.granules_read).ok_or(
        "the statement applies skip indexes while reading and the statistics record has no \
         SelectedMarks event, so what the read kept is unknown",
    )
}

/// Where a kept count came from when it is not the plan's: the read's granules, after
/// every skip index of the statement together.
fn read_note(found: &IndexStage) -> &'static str {
    if found.applied_on_data_read {
        " (as the read selected them: skip indexes applied while reading, all together)"
    } else {
        ""
    }
}

/// `skip index trace_bf: ` for a skip stage, so that every skip claim names its index;
/// nothing for the other stages, which the claim's name says.
fn stage_label(found: &IndexStage) -> String {
    match &found.name {
        Some(name) if found.kind == Stage::Skip.engine_name() => format!("skip index {name}: "),
        _ => String::new(),
    }
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

//! `index.<stage>.*`: what an index stage of `EXPLAIN indexes = 1` kept, in the plan's first
//! MergeTree read (parts and granules selected, the share of granules dropped), and
//! `index.skip.rows_dropped_share_at_least`, which measures the query again without its
//! skip index. A stage missing from the plan violates every claim about it.

use anyhow::{Result, bail};
use serde::Deserialize;
use toml::Spanned;

use super::{ClaimKey, Observations, Rule, SectionClaims, no_less};
use crate::explain::IndexStage;
use crate::invariant::{Check, claim};
use crate::packs::{AlsoMeasure, Observation};

/// `index.<stage>`: the index stages a claim may name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IndexSection {
    min_max: Option<StageSection>,
    partition: Option<StageSection>,
    primary_key: Option<StageSection>,
    skip: Option<StageSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StageSection {
    /// The skip index's name (`skip` only; default: the first skip index of the read).
    name: Option<Spanned<String>>,
    parts_selected: Option<Spanned<u64>>,
    parts_selected_at_most: Option<Spanned<u64>>,
    granules_selected: Option<Spanned<u64>>,
    granules_selected_at_most: Option<Spanned<u64>>,
    granules_dropped_share_at_least: Option<Spanned<f64>>,
    /// `skip` only: read_rows with skip indexes against without.
    rows_dropped_share_at_least: Option<Spanned<f64>>,
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
                state_stage(stage, section, claims)?;
            }
        }
        Ok(())
    }
}

/// The claims of `index.<stage>`.
fn state_stage(stage: Stage, section: &StageSection, claims: &mut SectionClaims) -> Result<()> {
    let prefix = format!("index.{}", stage.key());
    let skip_index = section.name.as_ref().map(|name| name.get_ref().clone());
    if let Some(name) = &section.name
        && stage != Stage::Skip
    {
        bail!("{}: {prefix}.name: only a skip index has a name", claims.line(name.span()));
    }
    let counts = [
        ("parts_selected", &section.parts_selected, Kept::Parts, true),
        ("parts_selected_at_most", &section.parts_selected_at_most, Kept::Parts, false),
        ("granules_selected", &section.granules_selected, Kept::Granules, true),
        ("granules_selected_at_most", &section.granules_selected_at_most, Kept::Granules, false),
    ];
    for (key, bound, kept, exactly) in counts {
        let Some(bound) = bound else { continue };
        let rule = Selected { stage, skip_index: skip_index.clone(), kept, exactly, bound: *bound.get_ref() };
        claims.push(format!("{prefix}.{key}"), bound.span(), rule);
    }
    if let Some(share) = &section.granules_dropped_share_at_least {
        let name = format!("{prefix}.granules_dropped_share_at_least");
        let at_least = share_value(share, &name, claims)?;
        let rule = GranulesDroppedShareAtLeast { stage, skip_index: skip_index.clone(), share: at_least };
        claims.push(name, share.span(), rule);
    }
    if let Some(share) = &section.rows_dropped_share_at_least {
        let name = format!("{prefix}.rows_dropped_share_at_least");
        if stage != Stage::Skip {
            bail!("{}: {name}: rows dropped are measured for skip indexes only", claims.line(share.span()));
        }
        let at_least = share_value(share, &name, claims)?;
        claims.push(name, share.span(), RowsDroppedShareAtLeast { skip_index, share: at_least });
    }
    Ok(())
}

fn share_value(share: &Spanned<f64>, name: &str, claims: &SectionClaims) -> Result<f64> {
    let value = *share.get_ref();
    if !(0.0..=1.0).contains(&value) {
        bail!("{}: {name} must be a share within 0 and 1, not {value}", claims.line(share.span()));
    }
    Ok(value)
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

/// What a count of a stage counts.
#[derive(Debug, Clone, Copy)]
enum Kept {
    Parts,
    Granules,
}

/// `index.<stage>.{parts,granules}_selected[_at_most]`: the stage kept exactly (or at
/// most) `bound` parts or granules.
#[derive(Debug)]
struct Selected {
    stage: Stage,
    skip_index: Option<String>,
    kept: Kept,
    exactly: bool,
    bound: u64,
}

impl Rule for Selected {
    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let what = match self.kept {
            Kept::Parts => "parts",
            Kept::Granules => "granules",
        };
        let bound = self.bound;
        let expected = if self.exactly {
            format!("exactly {bound} {what} selected")
        } else {
            format!("at most {bound} {what} selected")
        };
        Some(match find_stage(observed.own, self.stage, self.skip_index.as_deref()) {
            Err(missing) => claim(name, false, missing, expected),
            Ok(found) => {
                let (selected, initial) = match self.kept {
                    Kept::Parts => (found.selected_parts, found.initial_parts),
                    Kept::Granules => (found.selected_granules, found.initial_granules),
                };
                let within = if self.exactly { selected == bound } else { selected <= bound };
                claim(name, within, format!("{selected} of {initial} {what} selected"), expected)
            }
        })
    }
}

/// `index.<stage>.granules_dropped_share_at_least = S`: the stage dropped at least the
/// share S of the granules it was given.
#[derive(Debug)]
struct GranulesDroppedShareAtLeast {
    stage: Stage,
    skip_index: Option<String>,
    share: f64,
}

impl Rule for GranulesDroppedShareAtLeast {
    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let expected = format!("at least {} of the granules dropped", self.share);
        Some(match find_stage(observed.own, self.stage, self.skip_index.as_deref()) {
            Err(missing) => claim(name, false, missing, expected),
            Ok(found) if found.initial_granules == 0 => {
                claim(name, false, "unknown (the stage was given no granules)", expected)
            }
            Ok(found) => {
                let dropped = 1.0 - found.selected_granules as f64 / found.initial_granules as f64;
                claim(
                    name,
                    no_less(dropped, self.share),
                    format!(
                        "{dropped:.4} dropped ({} of {} granules kept)",
                        found.selected_granules, found.initial_granules
                    ),
                    expected,
                )
            }
        })
    }
}

/// `index.skip.rows_dropped_share_at_least = S`: with its skip index the query read at
/// most (1 - S) of the rows it reads without it, measured in the same case.
#[derive(Debug)]
struct RowsDroppedShareAtLeast {
    skip_index: Option<String>,
    share: f64,
}

impl Rule for RowsDroppedShareAtLeast {
    fn also_measure(&self) -> AlsoMeasure<'_> {
        AlsoMeasure::WithoutSkipIndex(self.skip_index.as_deref())
    }

    fn check(&self, name: &str, observed: &Observations) -> Option<Check> {
        let own = observed.own;
        let index = match &self.skip_index {
            Some(name) => format!("skip index {name}"),
            None => "skip indexes".to_string(),
        };
        let expected = format!("at least {} of the rows dropped by the {index}", self.share);
        if let Err(missing) = find_stage(own, Stage::Skip, self.skip_index.as_deref()) {
            return Some(claim(name, false, missing, expected));
        }
        Some(match own.read_rows_without_skip_index {
            Some(without) if without > 0 => {
                let dropped = 1.0 - own.read_rows as f64 / without as f64;
                claim(
                    name,
                    no_less(dropped, self.share),
                    format!("{dropped:.4} dropped ({} rows read, {without} without the {index})", own.read_rows),
                    expected,
                )
            }
            _ => claim(name, false, format!("unknown (the query read no rows without the {index})"), expected),
        })
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

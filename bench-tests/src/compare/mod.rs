//! The comparison of runs: two bundles of one kind (A, the baseline, and B, the
//! candidate), or the variants of one A/B bundle (`ab_run`), query by query.
//!
//! For each query measured on both sides: the medians of the warm samples, their ratio and
//! the verdict of [`crate::significance`] (faster, slower, unchanged, unstable, or
//! untestable, with why); for a query flagged faster or slower, why ([`why`]): the time
//! breakdown side by side and the ProfileEvents that moved most per row read. Totals as
//! the published comparisons give them (the sum of means and its gain, the geometric mean
//! of the per-query ratios), and each side's CPU use against what its cores offered.
//!
//! Whether two bundles may be compared at all is [`checks`]'s: bundles asked to do
//! different things (dataset, SQL text, session settings) are refused unless forced, and
//! what is meant to differ (engine version, target, machine) is said. This module knows
//! no kind: a kind's inputs come from [`KindResults::compared_inputs`] and a query's form
//! from its variant's JSON; what a kind adds (ClickBench's relative score, throughput's
//! levels) is its own [`ComparisonSections`], made from this comparison and each side's
//! node price ([`side_prices`]). [`report`] renders a [`Compared`] as Markdown and a chart.

mod checks;
pub mod report;
mod sections;
mod why;

use std::path::PathBuf;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

pub use self::sections::{Compared, ComparisonSections, NoSections};
pub use self::why::{BreakdownMedians, MovedEvent, OneSided, Why};
use crate::answers::{AnswerDigest, describe_tally, tally};
use crate::node_prices::{NodePrice, PriceOverrides, price_of};
use crate::numbers::{median_unsorted, ratio};
use crate::query_runs::QueryRuns;
use crate::results::{KindResults, RunBundle, RunStatus};
use crate::settings::Settings;
use crate::significance::{Significance, Thresholds, Verdict, compare_timings};

/// What `cargo xtask compare` was asked.
#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    /// Compare bundles that were asked to do different things; the report opens with
    /// what differs.
    pub force: bool,
    pub thresholds: Thresholds,
    /// In one A/B bundle, the variants to compare (baseline, candidate); the first two
    /// when not given.
    pub variants: Option<(String, String)>,
    /// Session settings the sides were declared to differ in (a matrix's variants): said
    /// as differences, not refused.
    pub declared_session_settings: std::collections::BTreeSet<String>,
    /// Node prices given on the command line, for the baseline and the candidate.
    pub prices: (PriceOverrides, PriceOverrides),
}

/// A bundle read for a comparison, with the folder it came from.
pub struct BundleAt<Results> {
    pub dir: PathBuf,
    pub bundle: RunBundle<Results>,
}

/// Everything a comparison found: what `--json` prints and the report renders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The benchmark kind of both sides.
    pub kind: String,
    pub baseline: Side,
    pub candidate: Side,
    /// What the bundles were asked to do differently, each a line: empty unless forced.
    pub forced_differences: Vec<String>,
    /// What differs between the sides that a comparison is there to show (engine
    /// version, target, machine, a variant's settings).
    pub differences: Vec<String>,
    /// Why a side's numbers deserve caution: an incomplete run, a machine that was not quiet.
    pub warnings: Vec<String>,
    /// How the verdicts were decided.
    pub method: Method,
    /// Every query measured on both sides, in the baseline's order.
    pub queries: Vec<QueryComparison>,
    /// Queries measured on one side only, by label: listed apart, never compared.
    pub only_in_baseline: Vec<String>,
    pub only_in_candidate: Vec<String>,
    pub summary: Summary,
    pub totals: Totals,
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// How the report names it: the run id, and the variant in an A/B bundle.
    pub label: String,
    pub run_id: String,
    pub dir: PathBuf,
    /// The A/B variant it is, in an A/B bundle.
    pub ab_variant: Option<String>,
    /// The variant's statement settings (empty for a whole bundle).
    pub settings: Settings,
    pub engine_version: String,
    pub target: String,
    pub status: RunStatus,
    /// CPU, cores and memory, as `MachineInfo` records them; `None` before the first phase.
    pub machine: Option<String>,
    /// The CPU its measured queries used against what the machine's cores offered while
    /// they ran.
    pub cpu: CpuUse,
}

/// The CPU-seconds a side's measured queries used against the cores x time they ran:
/// the "CPU used against CPU paid for" of the storage comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    /// `UserTimeMicroseconds + SystemTimeMicroseconds` over the warm samples, in seconds.
    pub cpu_seconds: f64,
    /// The engine's duration of those samples, in seconds.
    pub query_seconds: f64,
    pub cores: Option<usize>,
    /// `cpu_seconds / (cores x query_seconds)`; `None` when a part is unknown.
    pub share_of_cores: Option<f64>,
    /// Warm samples whose record holds no counters (several clients on the embedded
    /// engine): not in `cpu_seconds`.
    pub samples_without_counters: usize,
}

/// The rules the verdicts followed, as numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Method {
    pub test: String,
    pub alpha: f64,
    pub min_change: f64,
    pub unstable_noise: f64,
    pub resamples: u32,
    pub seed: u64,
    /// The samples compared: warm runs, by their engine-side duration.
    pub samples: String,
}

/// One query on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryComparison {
    /// The query and, where its kind measures it in several forms, the form.
    pub query: String,
    pub sql_file: String,
    pub baseline: QuerySide,
    pub candidate: QuerySide,
    pub significance: Significance,
    /// Why it changed, for a query flagged faster or slower.
    pub why: Option<Why>,
    /// How its plan's pruning differs: empty when it is the same on both sides.
    pub plan: PlanChange,
    /// Whether both sides gave the same answers, where their bundles digest them.
    pub answers: AnswerComparison,
}

/// A query's answers on both sides, from its samples' digests (`Sample::answer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum AnswerComparison {
    /// Every run on both sides gave this answer.
    Same { answer: AnswerDigest },
    /// The runs gave more than one answer (on one side, or between the sides), each with
    /// how many runs of a side gave it: the verdict is `answers_differ`.
    Differ { baseline: Vec<(AnswerDigest, usize)>, candidate: Vec<(AnswerDigest, usize)> },
    /// A side's samples hold no digests (its kind does not check answers).
    Unchecked,
}

/// A query's plan on both sides (`QueryRuns::plan`), as far as both bundles recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum PlanChange {
    Same,
    /// Each stage whose parts or granules differ, a line.
    Changed {
        lines: Vec<String>,
    },
    Unknown {
        reason: String,
    },
}

/// One side of one query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuerySide {
    pub samples: usize,
    pub median_ms: Option<f64>,
    pub mean_ms: Option<f64>,
    /// The fastest warm sample (ClickBench's hot time).
    #[serde(default)]
    pub min_ms: Option<f64>,
    /// The median of the warm samples' rows read.
    pub read_rows: Option<f64>,
    /// Medians of the warm samples' time breakdown; `None` when no sample has one.
    pub breakdown: Option<BreakdownMedians>,
    /// The timings compared, in ms, in the order they ran: what the comparison's page
    /// plots. Not in `compare.json`, whose bundles hold every sample.
    #[serde(skip)]
    pub samples_ms: Vec<f64>,
}

/// How many queries got each verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub faster: usize,
    pub slower: usize,
    pub unchanged: usize,
    pub unstable: usize,
    pub untestable: usize,
    #[serde(default)]
    pub answers_differ: usize,
    /// Queries a side's own check failed.
    #[serde(default)]
    pub failed: usize,
}

impl Summary {
    fn count(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Faster => self.faster += 1,
            Verdict::Slower => self.slower += 1,
            Verdict::Unchanged => self.unchanged += 1,
            Verdict::Unstable => self.unstable += 1,
            Verdict::Untestable => self.untestable += 1,
            Verdict::AnswersDiffer => self.answers_differ += 1,
            Verdict::Failed => self.failed += 1,
        }
    }

    /// "1 slower, 4 unchanged", as ClickHouse's performance comparison words its status.
    pub fn line(&self) -> String {
        let counts = [
            (self.faster, "faster"),
            (self.slower, "slower"),
            (self.unstable, "unstable"),
            (self.unchanged, "unchanged"),
            (self.untestable, "untestable"),
            (self.answers_differ, "answers differ"),
            (self.failed, "failed"),
        ];
        let parts: Vec<String> =
            counts.iter().filter(|(count, _)| *count > 0).map(|(count, word)| format!("{count} {word}")).collect();
        if parts.is_empty() { "no query measured on both sides".to_string() } else { parts.join(", ") }
    }
}

/// The totals the published comparisons give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Queries in the totals: measured on both sides with a known mean.
    pub queries: usize,
    /// The sum over queries of the mean warm time, in ms (the C7g against C6i study's total).
    pub baseline_sum_of_means_ms: f64,
    pub candidate_sum_of_means_ms: f64,
    /// `1 - candidate / baseline` of those sums: above 0, the candidate is faster.
    pub gain: Option<f64>,
    /// The geometric mean of the per-query ratios of medians (candidate / baseline; below 1,
    /// faster), over queries whose ratio is known.
    pub geometric_mean_ratio: Option<f64>,
    /// Queries left out of every total: failed, or their answers differ.
    #[serde(default)]
    pub left_out: Vec<String>,
}

/// A side's node and its price: what a kind that prices its runs prices them at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SidePrice {
    /// The node type its bundle names (the eks target's node), or the one declared for it.
    pub node_type: Option<String>,
    pub price: NodePrice,
}

/// Each side's node price (A, B) in the comparison of `bundles` (two bundles, or one A/B
/// bundle's variants, which ran on one node), from `options`' prices and each bundle's node.
pub fn side_prices<Results: KindResults>(
    bundles: &[BundleAt<Results>],
    options: &CompareOptions,
) -> Result<[SidePrice; 2]> {
    let (baseline, candidate) = match bundles {
        [one] => (one, one),
        [baseline, candidate] => (baseline, candidate),
        _ => bail!("compare takes one A/B bundle or two bundles, not {}", bundles.len()),
    };
    Ok([
        side_price(&baseline.bundle, &options.prices.0, "--price-a"),
        side_price(&candidate.bundle, &options.prices.1, "--price-b"),
    ])
}

/// The comparison of `bundles`: two bundles (baseline first), or one A/B bundle's variants.
pub fn compare_bundles<Results: KindResults>(
    bundles: &[BundleAt<Results>],
    options: &CompareOptions,
) -> Result<Comparison> {
    let (baseline, candidate) = match bundles {
        [one] => variants_of(one, options)?,
        [baseline, candidate] => {
            if options.variants.is_some() {
                bail!("--variants chooses two variants of one A/B bundle; with two bundles, each is a side");
            }
            (SideOf::whole(baseline), SideOf::whole(candidate))
        }
        _ => bail!("compare takes one A/B bundle or two bundles, not {}", bundles.len()),
    };
    let forced_differences = checks::refusals(&baseline, &candidate, &options.declared_session_settings);
    if !forced_differences.is_empty() && !options.force {
        bail!(
            "{} and {} were asked to do different things, so their times do not compare: {}; compare them anyway \
             with --force",
            baseline.label(),
            candidate.label(),
            forced_differences.join("; ")
        );
    }
    let differences = checks::differences(&baseline, &candidate, &options.declared_session_settings);
    let mut warnings = checks::warnings(&baseline, &candidate);

    // Two variants of one A/B bundle are paired by round.
    let same_bundle = baseline.shares_bundle_with(&candidate);
    let baseline_runs = first_of_each(baseline.runs(), &baseline.label(), &mut warnings);
    let candidate_runs = first_of_each(candidate.runs(), &candidate.label(), &mut warnings);
    // Each warning once: one run read twice says its own once.
    let mut said = std::collections::BTreeSet::new();
    warnings.retain(|warning| said.insert(warning.clone()));
    let mut queries = Vec::new();
    let mut summary = Summary::default();
    let mut only_in_baseline = Vec::new();
    let (baseline_failed, candidate_failed) =
        (baseline.bundle().benchmark.failed_queries(), candidate.bundle().benchmark.failed_queries());
    for (label, runs) in &baseline_runs {
        let Some(other) = candidate_runs.iter().find(|(other, _)| other == label).map(|(_, runs)| runs) else {
            only_in_baseline.push(label.clone());
            continue;
        };
        let mut query = compare_query(label, runs, other, same_bundle, &options.thresholds);
        // By query (every form of it), or by its label (one form: a level of a throughput run).
        let failed_on = |failed: &[(String, String)], side: &str| {
            failed
                .iter()
                .find(|(name, _)| *name == runs.query || name == label)
                .map(|(_, why)| format!("{side}: {}", why.strip_prefix("failed: ").unwrap_or(why)))
        };
        let failures: Vec<String> =
            [failed_on(&baseline_failed, "A"), failed_on(&candidate_failed, "B")].into_iter().flatten().collect();
        if !failures.is_empty() {
            query.significance.verdict = Verdict::Failed;
            query.significance.reason = Some(format!("the run's own check failed it on {}", failures.join("; ")));
            query.why = None;
        }
        summary.count(query.significance.verdict);
        queries.push(query);
    }
    let only_in_candidate = candidate_runs
        .iter()
        .filter(|(label, _)| !baseline_runs.iter().any(|(other, _)| other == label))
        .map(|(label, _)| label.clone())
        .collect();
    if queries.is_empty() {
        let ab = |side: &SideOf<'_, Results>| side.bundle().ab_run.is_some() && side.variant.is_none();
        let hint = if ab(&baseline) != ab(&candidate) {
            "; an A/B bundle's queries are its variants' (`q1 [a]`): compare its variants alone (`cargo xtask \
             compare <A/B run>`), or with another A/B bundle of the same variants"
        } else {
            ""
        };
        bail!(
            "{} and {} measured no query in common ({} against {}){hint}",
            baseline.label(),
            candidate.label(),
            list_or_none(baseline_runs.iter().map(|(label, _)| label.as_str())),
            list_or_none(candidate_runs.iter().map(|(label, _)| label.as_str()))
        );
    }
    let totals = totals(&queries);
    let thresholds = &options.thresholds;
    Ok(Comparison {
        kind: Results::KIND.to_string(),
        baseline: baseline.side(&baseline_runs),
        candidate: candidate.side(&candidate_runs),
        forced_differences,
        differences,
        warnings,
        method: Method {
            test: "Mann-Whitney U (two-sided) on the warm samples, with a floor on the change of medians, and the \
                   permutation threshold of medians as the noise"
                .to_string(),
            alpha: thresholds.alpha,
            min_change: thresholds.min_change,
            unstable_noise: thresholds.unstable_noise,
            resamples: thresholds.resamples,
            seed: thresholds.seed,
            samples: "warm runs, by the engine's duration (server_duration_us)".to_string(),
        },
        queries,
        only_in_baseline,
        only_in_candidate,
        summary,
        totals,
    })
}

/// A side's node type and its price, `flag` naming its own price override.
fn side_price<Results>(bundle: &RunBundle<Results>, overrides: &PriceOverrides, flag: &str) -> SidePrice {
    let deployment = bundle.target.deployment.as_ref();
    let node_type = deployment
        .and_then(|deployment| deployment.instance_type.clone())
        // The eks target's node, as the storage baseline measured on it named it.
        .or_else(|| match &bundle.storage_baseline {
            crate::storage_baseline::StorageBaselineRecord::Measured(baseline)
                if deployment.is_some_and(|deployment| deployment.node == baseline.device.node) =>
            {
                baseline.device.instance_type.clone()
            }
            _ => None,
        })
        .or_else(|| overrides.declared_node_type.clone());
    let price = price_of(node_type.as_deref(), overrides, flag);
    SidePrice { node_type, price }
}

/// `runs` with only the first entry of each label: a bundle edited or joined by hand may
/// hold a query twice, and the later entries, which nothing would pair, are said in
/// `warnings` (once per label, naming the side) rather than dropped silently.
fn first_of_each<'a, Variant>(
    runs: Vec<(String, &'a QueryRuns<Variant>)>,
    side: &str,
    warnings: &mut Vec<String>,
) -> Vec<(String, &'a QueryRuns<Variant>)> {
    let mut kept: Vec<(String, &'a QueryRuns<Variant>)> = Vec::new();
    let mut repeated: Vec<(String, usize)> = Vec::new();
    for (label, query_runs) in runs {
        if !kept.iter().any(|(other, _)| *other == label) {
            kept.push((label, query_runs));
        } else if let Some((_, count)) = repeated.iter_mut().find(|(other, _)| *other == label) {
            *count += 1;
        } else {
            repeated.push((label, 2));
        }
    }
    for (label, count) in repeated {
        warnings.push(format!(
            "{side} holds query {label} {count} times: its first entry is compared, the other {} left out",
            if count == 2 { "one is".to_string() } else { format!("{} are", count - 1) }
        ));
    }
    kept
}

/// `a, b, c`, or `none`.
fn list_or_none<'a>(labels: impl Iterator<Item = &'a str>) -> String {
    let labels: Vec<&str> = labels.collect();
    if labels.is_empty() { "none".to_string() } else { labels.join(", ") }
}

/// A side being compared: a bundle, or one variant of an A/B bundle.
struct SideOf<'a, Results> {
    at: &'a BundleAt<Results>,
    /// The A/B variant, with its settings and engine version.
    variant: Option<&'a crate::ab_variants::AbVariant>,
}

impl<'a, Results: KindResults> SideOf<'a, Results> {
    fn whole(at: &'a BundleAt<Results>) -> SideOf<'a, Results> {
        SideOf { at, variant: None }
    }

    fn bundle(&self) -> &'a RunBundle<Results> {
        &self.at.bundle
    }

    /// Whether both sides are variants of the one bundle read (not the same folder read
    /// twice): they share its dataset, SQL, settings, machine and warnings.
    fn shares_bundle_with(&self, other: &SideOf<'_, Results>) -> bool {
        std::ptr::eq(self.bundle(), other.bundle())
    }

    /// The bundle as the user named it: its folder's name, which is its run id unless the
    /// folder was copied or renamed.
    fn bundle_name(&self) -> String {
        self.at
            .dir
            .file_name()
            .map_or_else(|| self.at.bundle.run_id.clone(), |name| name.to_string_lossy().into_owned())
    }

    fn label(&self) -> String {
        match self.variant {
            Some(variant) => format!("{} ({})", variant.name, self.bundle_name()),
            None => self.bundle_name(),
        }
    }

    /// Its query runs by label, in order: those of its variant in an A/B bundle.
    fn runs(&self) -> Vec<(String, &'a QueryRuns<Results::Variant>)> {
        let variant = self.variant.map(|variant| variant.name.as_str());
        self.bundle()
            .benchmark
            .queries()
            .iter()
            .filter(|runs| variant.is_none() || runs.ab_variant.as_deref() == variant)
            .map(|runs| (runs_label(runs, variant.is_none()), runs))
            .collect()
    }

    fn side(&self, runs: &[(String, &QueryRuns<Results::Variant>)]) -> Side {
        let bundle = self.bundle();
        Side {
            label: self.label(),
            run_id: bundle.run_id.clone(),
            dir: self.at.dir.clone(),
            ab_variant: self.variant.map(|variant| variant.name.clone()),
            settings: self.variant.map(|variant| variant.settings.clone()).unwrap_or_default(),
            engine_version: match self.variant.and_then(|variant| variant.engine_version.as_deref()) {
                // The version the pinned engine reports, as the bundle's target records it.
                Some(npm_version) => crate::engine::engine_version_named(npm_version).map_or_else(
                    |_| npm_version.to_string(),
                    |engine| format!("{} (engine {npm_version})", engine.clickhouse_version),
                ),
                None => bundle.target.engine_version.clone(),
            },
            target: bundle.target.kind.to_string(),
            status: bundle.status,
            machine: bundle.machine.as_ref().map(|machine| {
                format!(
                    "{}, {} logical cores, {}",
                    machine.cpu_model,
                    machine.logical_cores,
                    crate::units::human_bytes(machine.memory_bytes)
                )
            }),
            cpu: cpu_use(runs.iter().map(|(_, runs)| *runs), bundle.machine.as_ref().map(|m| m.logical_cores)),
        }
    }
}

/// The two variants of one A/B bundle to compare: those asked for, or its first two.
fn variants_of<'a, Results: KindResults>(
    at: &'a BundleAt<Results>,
    options: &CompareOptions,
) -> Result<(SideOf<'a, Results>, SideOf<'a, Results>)> {
    let Some(ab_run) = &at.bundle.ab_run else {
        bail!(
            "{} is a run of one configuration: compare it with another bundle (`cargo xtask compare A B`), or run \
             the variants in turns in one run (`--variant NAME:SETTING=VALUE`)",
            at.dir.display()
        );
    };
    let named = |name: &str| {
        ab_run.variants.iter().find(|variant| variant.name == name).ok_or_else(|| {
            anyhow::anyhow!(
                "{} has no variant {name:?}; its variants: {}",
                at.dir.display(),
                ab_run.variants.iter().map(|variant| variant.name.as_str()).collect::<Vec<_>>().join(", ")
            )
        })
    };
    let (baseline, candidate) = match &options.variants {
        Some((baseline, candidate)) if baseline == candidate => {
            bail!("--variants names {baseline:?} twice: name the baseline, then another variant")
        }
        Some((baseline, candidate)) => (named(baseline)?, named(candidate)?),
        None => match ab_run.variants.as_slice() {
            [baseline, candidate, ..] => (baseline, candidate),
            _ => bail!("{} holds fewer than two variants: nothing to compare", at.dir.display()),
        },
    };
    Ok((SideOf { at, variant: Some(baseline) }, SideOf { at, variant: Some(candidate) }))
}

/// A query runs' label: the query, then its form when its kind has several (a variant
/// that serialises to an object is written `key=value, ...`), then its A/B variant when
/// the bundle's variants are not the sides.
pub fn runs_label<Variant: Serialize>(runs: &QueryRuns<Variant>, with_ab_variant: bool) -> String {
    let form = match serde_json::to_value(&runs.variant) {
        Ok(serde_json::Value::String(form)) if form == "default" => None,
        Ok(serde_json::Value::String(form)) => Some(form),
        Ok(serde_json::Value::Object(fields)) => Some(
            fields
                .iter()
                .map(|(name, value)| match value {
                    serde_json::Value::String(text) => format!("{name}={text}"),
                    other => format!("{name}={other}"),
                })
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Ok(other) => Some(other.to_string()),
        Err(_) => None,
    };
    let mut label = runs.query.clone();
    if let Some(form) = form {
        label.push_str(&format!(" ({form})"));
    }
    if with_ab_variant && let Some(variant) = &runs.ab_variant {
        label.push_str(&format!(" [{variant}]"));
    }
    label
}

/// One query on both sides. `by_round`: the sides are variants of one A/B run, whose
/// rounds every variant completed are compared (a stopped run's last round may hold one
/// variant's sample and not the other's).
fn compare_query<Variant>(
    label: &str,
    baseline: &QueryRuns<Variant>,
    candidate: &QueryRuns<Variant>,
    by_round: bool,
    thresholds: &Thresholds,
) -> QueryComparison {
    let timings = |runs: &QueryRuns<Variant>, other: &QueryRuns<Variant>| {
        runs.warm_samples()
            .filter(|sample| !by_round || other.warm_samples().any(|theirs| theirs.attempt == sample.attempt))
            .map(|sample| sample.stats.server_ms())
            .collect()
    };
    let (baseline_ms, candidate_ms): (Vec<f64>, Vec<f64>) =
        (timings(baseline, candidate), timings(candidate, baseline));
    let mut significance = compare_timings(&baseline_ms, &candidate_ms, thresholds);
    // The same samples on both sides (a bundle against itself) are A/A by definition,
    // however few or spread: no test is needed to say that nothing changed (the noise is
    // still shown).
    if significance.verdict != Verdict::Unchanged && !baseline_ms.is_empty() && baseline_ms == candidate_ms {
        significance.verdict = Verdict::Unchanged;
        significance.reason = Some("the same samples on both sides: unchanged by definition".to_string());
    }
    let (baseline_side, candidate_side) = (
        query_side(baseline, &baseline_ms, significance.baseline_median),
        query_side(candidate, &candidate_ms, significance.candidate_median),
    );
    let answers = compare_answers(baseline, candidate);
    if let AnswerComparison::Differ { baseline, candidate } = &answers {
        significance.verdict = Verdict::AnswersDiffer;
        significance.reason =
            Some(format!("A gave {}, B {}: not one query's times", answer_list(baseline), answer_list(candidate)));
    }
    let why = matches!(significance.verdict, Verdict::Faster | Verdict::Slower)
        .then(|| why::why(significance.verdict, baseline, candidate, &baseline_side, &candidate_side));
    QueryComparison {
        query: label.to_string(),
        sql_file: baseline.sql_file.clone(),
        baseline: baseline_side,
        candidate: candidate_side,
        significance,
        why,
        plan: why::plan_change(baseline.plan.as_deref(), candidate.plan.as_deref()),
        answers,
    }
}

/// Whether every sample of both sides gave one answer; unchecked when a side has none.
fn compare_answers<Variant>(baseline: &QueryRuns<Variant>, candidate: &QueryRuns<Variant>) -> AnswerComparison {
    let digests = |runs: &QueryRuns<Variant>| -> Option<Vec<(AnswerDigest, usize)>> {
        let answers: Vec<&AnswerDigest> = runs.samples.iter().filter_map(|sample| sample.answer.as_ref()).collect();
        (!answers.is_empty()).then(|| tally(answers))
    };
    match (digests(baseline), digests(candidate)) {
        (Some(a), Some(b)) => match (a.as_slice(), b.as_slice()) {
            ([(one, _)], [(other, _)]) if one == other => AnswerComparison::Same { answer: one.clone() },
            _ => AnswerComparison::Differ { baseline: a, candidate: b },
        },
        _ => AnswerComparison::Unchecked,
    }
}

/// `10 rows, checksum ...`, or the tally of several answers.
fn answer_list(tally: &[(AnswerDigest, usize)]) -> String {
    match tally {
        [(answer, _)] => answer.to_string(),
        several => describe_tally(several),
    }
}

/// One side of a query: `median_ms` is the one its verdict used.
fn query_side<Variant>(runs: &QueryRuns<Variant>, timings: &[f64], median_ms: Option<f64>) -> QuerySide {
    let known: Vec<f64> = timings.iter().copied().filter(|ms| ms.is_finite()).collect();
    let mean_ms = (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64);
    QuerySide {
        samples: timings.len(),
        median_ms,
        mean_ms,
        min_ms: known.iter().copied().reduce(f64::min),
        read_rows: median_unsorted(runs.warm_samples().map(|sample| sample.stats.read_rows as f64).collect()),
        breakdown: why::breakdown_medians(runs),
        samples_ms: timings.to_vec(),
    }
}

fn cpu_use<'a, Variant: 'a>(runs: impl Iterator<Item = &'a QueryRuns<Variant>>, cores: Option<usize>) -> CpuUse {
    let (mut cpu_us, mut duration_us, mut without) = (0u64, 0u64, 0usize);
    for sample in runs.flat_map(|runs| runs.warm_samples()) {
        match &sample.breakdown {
            Some(breakdown) => {
                cpu_us += breakdown.cpu_us;
                duration_us += sample.stats.server_duration_us;
            }
            None => without += 1,
        }
    }
    let (cpu_seconds, query_seconds) = (cpu_us as f64 / 1e6, duration_us as f64 / 1e6);
    CpuUse {
        cpu_seconds,
        query_seconds,
        cores,
        share_of_cores: cores.and_then(|cores| ratio(cpu_seconds, cores as f64 * query_seconds)),
        samples_without_counters: without,
    }
}

/// The totals of `queries`.
fn totals(queries: &[QueryComparison]) -> Totals {
    // A query whose answers differ, or that a side's check failed, is in no total: its
    // times are not of one query.
    let (left_out, queries) = left_out(queries);
    let with_means: Vec<(f64, f64)> =
        queries.iter().filter_map(|query| query.baseline.mean_ms.zip(query.candidate.mean_ms)).collect();
    // `+ 0.0`: a sum over no query is 0, not the -0 an empty f64 sum starts from.
    let baseline_sum_of_means_ms = with_means.iter().map(|(baseline, _)| baseline).sum::<f64>() + 0.0;
    let candidate_sum_of_means_ms = with_means.iter().map(|(_, candidate)| candidate).sum::<f64>() + 0.0;
    let gain = ratio(candidate_sum_of_means_ms, baseline_sum_of_means_ms).map(|share| 1.0 - share);
    let ratios = queries.iter().filter_map(|query| query.significance.ratio);
    Totals {
        queries: with_means.len(),
        baseline_sum_of_means_ms,
        candidate_sum_of_means_ms,
        gain,
        geometric_mean_ratio: geometric_mean(ratios),
        left_out: left_out.iter().map(|query| query.query.clone()).collect(),
    }
}

/// `queries` split into those left out of every total (their answers differ, or a side's
/// check failed them: their times are not of one query) and those in the totals.
pub fn left_out(queries: &[QueryComparison]) -> (Vec<&QueryComparison>, Vec<&QueryComparison>) {
    queries.iter().partition(|query| matches!(query.significance.verdict, Verdict::AnswersDiffer | Verdict::Failed))
}

/// The geometric mean of the finite ratios above 0 in `ratios`; `None` without one.
pub fn geometric_mean(ratios: impl Iterator<Item = f64>) -> Option<f64> {
    let logs: Vec<f64> = ratios.filter(|ratio| ratio.is_finite() && *ratio > 0.0).map(f64::ln).collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

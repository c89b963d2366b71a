//! A matrix file (TOML, docs/matrix.md): the benchmark kind and its flags, shared by every
//! variant, then the variants, each a name and what differs. Read and checked whole before
//! anything runs; each mistake is one line naming the file, the line and the key.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use clap::ValueEnum;
use serde::Deserialize;
use toml::Spanned;

use super::{EksShared, Matrix, MatrixVariant, VariantDeployment};
use crate::benchmarks::kinds::{self, Kind};
use crate::cluster::checks::{check_values, vcpus_of};
use crate::cluster::{Values, Variant};
use crate::settings::{Settings, is_setting_name, refused_setting};
use crate::target_info::TargetKind;

/// The flags every bench takes that the matrix sets for each variant itself.
const MATRIX_FLAGS: [&str; 5] = ["--target", "--results-dir", "--run-id", "--engine-version", "--setting"];
/// The longest variant name: with the matrix id it makes a run id of at most 100.
pub const MAX_VARIANT_NAME: usize = 40;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixToml {
    kind: Spanned<String>,
    flags: Option<Spanned<Vec<String>>>,
    target: Option<Spanned<String>>,
    eks: Option<Spanned<EksToml>>,
    variant: Option<Spanned<Vec<Spanned<VariantToml>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EksToml {
    namespace: Option<String>,
    image: Option<String>,
    volume_gib: Option<u32>,
    timeout_seconds: Option<u64>,
    no_baseline: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantToml {
    name: Spanned<String>,
    #[serde(default)]
    settings: BTreeMap<String, Spanned<toml::Value>>,
    engine_version: Option<Spanned<String>>,
    storage: Option<Spanned<String>>,
    node_type: Option<Spanned<String>>,
    volume_gib: Option<Spanned<u32>>,
    iops: Option<Spanned<u32>>,
    throughput_mibps: Option<Spanned<u32>>,
    max_threads: Option<Spanned<u32>>,
}

/// Where a key is, for messages: `file:line`.
struct Places<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Places<'_> {
    fn at(&self, span: Range<usize>) -> String {
        let line = self.text[..span.start.min(self.text.len())].matches('\n').count() + 1;
        format!("{}:{line}", self.file.display())
    }

    fn error(&self, span: Range<usize>, message: impl std::fmt::Display) -> anyhow::Error {
        anyhow!("{}: {message}", self.at(span))
    }
}

/// Reads and checks the matrix file at `file`. `target` is the command line's (`--target`
/// or `CHBENCH_TARGET`, resolved); the file's `target` key, when present, chooses it
/// instead, and must agree with a `--target` that names one.
pub fn read_matrix(file: &Path, command_line_target: TargetKind) -> Result<Matrix> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the matrix file {}: give --matrix a TOML file", file.display()))?;
    parse_matrix(file, &text, command_line_target)
}

/// [`read_matrix`] on `text`, the contents of `file`.
pub fn parse_matrix(file: &Path, text: &str, command_line_target: TargetKind) -> Result<Matrix> {
    let places = Places { file, text };
    let parsed: MatrixToml = toml::from_str(text).map_err(|error| {
        let message = error.message().trim_end().to_string();
        match error.span() {
            Some(span) => places.error(span, message),
            None => anyhow!("{}: {message}", file.display()),
        }
    })?;
    let kind = kinds::kind_named(parsed.kind.get_ref()).ok_or_else(|| {
        let known: Vec<&str> = kinds::KINDS.iter().map(|kind| kind.name).collect();
        places.error(
            parsed.kind.span(),
            format!("kind {:?} is not a benchmark kind; the kinds: {}", parsed.kind.get_ref(), known.join(", ")),
        )
    })?;
    let target = match &parsed.target {
        Some(named) => {
            let kind = TargetKind::parse(named.get_ref()).map_err(|error| places.error(named.span(), error))?;
            let kind = crate::targets::resolve_matrix_kind(kind);
            if command_line_target != TargetKind::Auto
                && crate::targets::resolve_matrix_kind(command_line_target) != kind
            {
                bail!(
                    "{}: target = {:?}, and --target (or CHBENCH_TARGET) says {command_line_target}: give the target \
                     once",
                    places.at(named.span()),
                    named.get_ref()
                );
            }
            kind
        }
        None => crate::targets::resolve_matrix_kind(command_line_target),
    };
    let flags = parsed.flags.unwrap_or_else(|| Spanned::new(0..0, Vec::new()));
    check_flags(&places, kind, &flags, target)?;
    let on_eks = crate::targets::spec(target).capabilities.deployed_by_chbench;
    let eks = match (&parsed.eks, on_eks) {
        (Some(table), false) => {
            return Err(places.error(
                table.span(),
                format!(
                    "[eks] is for the eks target, and the matrix runs on {target}: drop it, or set target = \"eks\""
                ),
            ));
        }
        (table, true) => {
            let table = table.as_ref().map(Spanned::get_ref);
            let defaults = Values::defaults(Variant::EksGp3);
            Some(EksShared {
                namespace: table
                    .and_then(|table| table.namespace.clone())
                    .unwrap_or_else(|| crate::cluster::DEFAULT_NAMESPACE.to_string()),
                image: table.and_then(|table| table.image.clone()).unwrap_or(defaults.image),
                volume_gib: table.and_then(|table| table.volume_gib),
                timeout_seconds: table.and_then(|table| table.timeout_seconds).unwrap_or(600),
                baseline: !table.and_then(|table| table.no_baseline).unwrap_or(false),
            })
        }
        (None, false) => None,
    };
    if eks.as_ref().is_some_and(|eks| eks.timeout_seconds == 0) {
        bail!("{}: [eks] timeout_seconds must be at least 1", file.display());
    }
    let variant_list = parsed.variant.unwrap_or_else(|| Spanned::new(0..0, Vec::new()));
    let listed = variant_list.get_ref();
    if listed.len() < 2 {
        return Err(places.error(
            variant_list.span(),
            format!(
                "a matrix compares at least two variants and this one has {}: add [[variant]] tables, each with a \
                 name",
                listed.len()
            ),
        ));
    }
    let mut variants: Vec<MatrixVariant> = Vec::new();
    for spanned in listed {
        let variant = check_variant(&places, spanned, target, eks.as_ref())?;
        if variants.iter().any(|earlier| earlier.name == variant.name) {
            let name = spanned.get_ref().name.span();
            return Err(places.error(
                name,
                format!("variant name {:?} is given twice; give each variant a name of its own", variant.name),
            ));
        }
        variants.push(variant);
    }
    Ok(Matrix { file: PathBuf::from(file), kind, flags: flags.into_inner(), target, eks, variants })
}

/// The kind's flags: none of the ones the matrix sets per variant, and what the kind
/// itself accepts and checks.
fn check_flags(places: &Places<'_>, kind: &Kind, flags: &Spanned<Vec<String>>, target: TargetKind) -> Result<()> {
    let at = || places.at(flags.span());
    if let Some(flag) = flags
        .get_ref()
        .iter()
        .find(|flag| MATRIX_FLAGS.iter().any(|taken| flag.as_str() == *taken || flag.starts_with(&format!("{taken}="))))
    {
        bail!(
            "{}: flags: {flag} is the matrix's to set for each variant (run id, results folder, target, settings, \
             engine version): drop it, and say what differs in a [[variant]]",
            at()
        );
    }
    let command = (kind.flags)(clap::Command::new(kind.name).no_binary_name(true));
    let matches = command.try_get_matches_from(flags.get_ref()).map_err(|error| {
        let said = error.to_string();
        let first = said.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
        anyhow!(
            "{}: flags: {first} (the {} benchmark's flags: cargo xtask bench {} --help)",
            at(),
            kind.name,
            kind.name
        )
    })?;
    let benchmark = (kind.benchmark)(&matches).with_context(|| format!("{}: flags", at()))?;
    if let Some(choice) = benchmark.profile() {
        crate::profiling::check_target(choice, target).with_context(|| format!("{}: flags", at()))?;
    }
    benchmark.check().with_context(|| format!("{}: flags", at()))?;
    benchmark.check_target_kind(target).with_context(|| format!("{}: flags", at()))
}

/// One `[[variant]]`: its name, and what it changes, checked against the target.
fn check_variant(
    places: &Places<'_>,
    spanned: &Spanned<VariantToml>,
    target: TargetKind,
    eks: Option<&EksShared>,
) -> Result<MatrixVariant> {
    let variant = spanned.get_ref();
    let name = variant.name.get_ref().clone();
    let in_variant = |span: Range<usize>, message: String| places.error(span, format!("variant {name:?}: {message}"));
    let usable = !name.is_empty()
        && name.len() <= MAX_VARIANT_NAME
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        && !name.starts_with('-');
    if !usable {
        return Err(places.error(
            variant.name.span(),
            format!(
                "variant name {name:?}: use 1 to {MAX_VARIANT_NAME} letters, digits, `_` and `-`, not starting with \
                 `-` (it ends the variant's run id)"
            ),
        ));
    }
    let mut settings = Settings::new();
    for (setting, value) in &variant.settings {
        let span = value.span();
        if !is_setting_name(setting) {
            return Err(in_variant(span, format!("settings: {setting:?} is not a setting name")));
        }
        if let Some(why) = refused_setting(setting) {
            return Err(in_variant(span, format!("settings: {setting} {why}")));
        }
        let text = match value.get_ref() {
            toml::Value::String(text) => text.clone(),
            toml::Value::Integer(number) => number.to_string(),
            toml::Value::Float(number) => number.to_string(),
            toml::Value::Boolean(flag) => u8::from(*flag).to_string(),
            _ => return Err(in_variant(span, format!("settings: {setting} must be a string, a number or a boolean"))),
        };
        if text.is_empty() || text.chars().any(char::is_control) {
            return Err(in_variant(span, format!("settings: {setting} has no usable value")));
        }
        settings = settings.with(setting, text);
    }
    let engine_in_process = crate::targets::spec(target).capabilities.engine_in_process;
    let engine_version = match &variant.engine_version {
        None => None,
        Some(version) if !engine_in_process => {
            return Err(in_variant(
                version.span(),
                format!(
                    "engine_version chooses the embedded engine's version, and the matrix runs on {target}, a server \
                     with a version of its own: drop it, or run the matrix on target = \"embedded\""
                ),
            ));
        }
        Some(version) => Some(
            crate::engine::engine_version_named(version.get_ref())
                .map_err(|error| in_variant(version.span(), format!("engine_version: {error}")))?,
        ),
    };
    let eks_keys: [(&str, Option<Range<usize>>); 6] = [
        ("storage", variant.storage.as_ref().map(Spanned::span)),
        ("node_type", variant.node_type.as_ref().map(Spanned::span)),
        ("volume_gib", variant.volume_gib.as_ref().map(Spanned::span)),
        ("iops", variant.iops.as_ref().map(Spanned::span)),
        ("throughput_mibps", variant.throughput_mibps.as_ref().map(Spanned::span)),
        ("max_threads", variant.max_threads.as_ref().map(Spanned::span)),
    ];
    let Some(eks) = eks else {
        // On an engine in this process, `storage` is a storage profile.
        let storage_profile = match &variant.storage {
            Some(profile) if engine_in_process => {
                crate::targets::volume::parse_profile(profile.get_ref())
                    .map_err(|error| in_variant(profile.span(), format!("storage {:?}: {error}", profile.get_ref())))?;
                Some(profile.get_ref().trim().to_string())
            }
            _ => None,
        };
        let eks_keys = eks_keys.into_iter().filter(|(key, _)| !(engine_in_process && *key == "storage"));
        if let Some((key, Some(span))) = eks_keys.into_iter().find(|(_, span)| span.is_some()) {
            return Err(in_variant(
                span,
                match key {
                    "storage" => format!(
                        "storage is an eks deployment's storage or, on the embedded target, a storage profile, and \
                         the matrix runs on {target}, whose data is on a machine of its own: drop it, or set target \
                         = \"eks\" or \"embedded\""
                    ),
                    _ => format!(
                        "{key} is a deployment's, for the eks target, and the matrix runs on {target}: drop it, or \
                         set target = \"eks\" (on {target} a variant is settings or an engine version)"
                    ),
                },
            ));
        }
        return Ok(MatrixVariant { name, settings, engine_version, storage_profile, deployment: None });
    };
    let storage = match &variant.storage {
        Some(storage) => Variant::from_str(storage.get_ref(), false).map_err(|_| {
            in_variant(storage.span(), format!("storage {:?} is not one of eks-gp3, eks-nvme, kind", storage.get_ref()))
        })?,
        None => Variant::EksGp3,
    };
    let defaults = Values::defaults(storage);
    for (key, given) in [("iops", &variant.iops), ("throughput_mibps", &variant.throughput_mibps)] {
        if let Some(given) = given
            && storage != Variant::EksGp3
        {
            return Err(in_variant(
                given.span(),
                format!(
                    "{key}: {storage} has no gp3 volume, so {key} would do nothing; drop it, or use storage = \"eks-gp3\""
                ),
            ));
        }
    }
    if let Some(node_type) = &variant.node_type
        && storage == Variant::Kind
    {
        return Err(in_variant(
            node_type.span(),
            "node_type: kind chooses no node (its pod goes wherever the cluster puts it); drop it".to_string(),
        ));
    }
    let values = Values {
        namespace: eks.namespace.clone(),
        image: eks.image.clone(),
        node_type: variant.node_type.as_ref().map_or(defaults.node_type, |node_type| node_type.get_ref().clone()),
        volume_gib: variant
            .volume_gib
            .as_ref()
            .map(|gib| *gib.get_ref())
            .or(eks.volume_gib)
            .unwrap_or(defaults.volume_gib),
        iops: variant.iops.as_ref().map_or(defaults.iops, |iops| *iops.get_ref()),
        throughput_mibps: variant.throughput_mibps.as_ref().map_or(defaults.throughput_mibps, |mibps| *mibps.get_ref()),
    };
    let where_values = variant.node_type.as_ref().map_or(spanned.span(), Spanned::span);
    check_values(storage, &values).map_err(|error| in_variant(where_values.clone(), format!("{error:#}")))?;
    if let Some(given) = variant.settings.get("max_threads") {
        return Err(in_variant(
            given.span(),
            "settings: max_threads is the variant's max_threads key on eks (default: the node's vCPUs); give it there"
                .to_string(),
        ));
    }
    let max_threads = match (&variant.max_threads, vcpus_of(&values.node_type)) {
        (Some(given), _) if *given.get_ref() == 0 => {
            return Err(in_variant(given.span(), "max_threads must be at least 1".to_string()));
        }
        (Some(given), _) => Some(*given.get_ref()),
        (None, Some(vcpus)) => Some(vcpus),
        (None, None) if storage == Variant::Kind => None,
        (None, None) => {
            let known: Vec<String> =
                crate::cluster::checks::VCPUS.iter().map(|(name, vcpus)| format!("{name} {vcpus}")).collect();
            return Err(in_variant(
                where_values,
                format!(
                    "node type {} is not in the table of vCPUs ({}): give max_threads = its vCPU count",
                    values.node_type,
                    known.join(", ")
                ),
            ));
        }
    };
    if let Some(threads) = max_threads {
        settings = settings.with("max_threads", threads);
    }
    Ok(MatrixVariant {
        name,
        settings,
        engine_version,
        storage_profile: None,
        deployment: Some(VariantDeployment { storage, values, max_threads }),
    })
}

//! Reading a bundle folder: `results.json` of this schema, of the kind asked for, with
//! the samples journal folded in; and which kind a bundle is, before it is read whole.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::journal::fold_journal;
use super::{KindResults, RESULTS_FILE, RunBundle, SCHEMA_VERSION};

/// Reads a bundle folder of `Results`'s kind: `results.json`, refusing other schema
/// versions and other kinds, with the samples journal folded in.
pub fn load_bundle<Results: KindResults>(dir: &Path) -> Result<RunBundle<Results>> {
    let size = fs::metadata(dir.join(RESULTS_FILE)).map_or(0, |metadata| metadata.len());
    if let Some(line) = large_bundle_line(&dir.join(RESULTS_FILE), size) {
        crate::say!("chbench: {line}");
    }
    let (path, text, _) = read_results(dir)?;
    let mut bundle: RunBundle<Results> = serde_json::from_str(&text)
        .with_context(|| format!("{} does not match results schema {SCHEMA_VERSION}", path.display()))?;
    fold_journal(dir, &mut bundle)?;
    Ok(bundle)
}

/// The kind of benchmark a bundle folder holds (`benchmark.kind`), so that the kind can
/// read it; other schema versions are refused as [`load_bundle`] refuses them.
pub fn bundle_kind(dir: &Path) -> Result<String> {
    let (path, _, head) = read_results(dir)?;
    match head.benchmark.and_then(|benchmark| benchmark.kind) {
        Some(serde_json::Value::String(kind)) => Ok(kind),
        _ => bail!("{} does not match results schema {SCHEMA_VERSION}: it names no benchmark kind", path.display()),
    }
}

/// Whether a bundle folder's run ended with everything measured (`status`), read as
/// [`bundle_kind`] reads the kind: a run that then failed its own check (a query that
/// failed) is complete, and compares.
pub fn bundle_is_complete(dir: &Path) -> Result<bool> {
    let (_, _, head) = read_results(dir)?;
    Ok(head.status == Some(super::RunStatus::Complete))
}

/// From this size on, reading a bundle is said before it starts: it takes long enough
/// (a 237 MB `results.json` took 16 s and 1 GB here) that silence looks like a hang.
const LARGE_BUNDLE_BYTES: u64 = 256 << 20;

/// The line said before reading a `results.json` of `size` bytes, if it is large: what
/// it will take, as measured here: about a minute a GiB (94 s for 1.7 GB; 16 s for 237 MB)
/// and a memory peak of about 4.3 times the file's size (4.5 said, to round up).
fn large_bundle_line(path: &Path, size: u64) -> Option<String> {
    (size >= LARGE_BUNDLE_BYTES).then(|| {
        format!(
            "reading {} ({}): a bundle this large takes about a minute a GiB, and about {} of memory",
            path.display(),
            crate::units::human_bytes(size),
            crate::units::human_bytes(size.saturating_mul(9) / 2)
        )
    })
}

/// What is read of `results.json` before the whole: its schema version, kind and status.
/// The rest is skipped, not built (a bundle may hold 10 MB of samples).
#[derive(Deserialize)]
struct Head {
    schema_version: Option<serde_json::Value>,
    #[serde(default)]
    status: Option<super::RunStatus>,
    benchmark: Option<HeadBenchmark>,
}

#[derive(Deserialize)]
struct HeadBenchmark {
    kind: Option<serde_json::Value>,
}

/// `results.json`'s path, text and head, once its schema version is this one.
fn read_results(dir: &Path) -> Result<(PathBuf, String, Head)> {
    let path = dir.join(RESULTS_FILE);
    let text = fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    // The writer replaces the file whole, so an empty or cut file was damaged after it:
    // by a copy cut short or a full disk.
    const WHAT_TO_DO: &str = "copy the bundle again from where it was written, or run the benchmark again";
    if text.trim().is_empty() {
        bail!("{} is empty: {WHAT_TO_DO}", path.display());
    }
    // serde reads a struct from an array too (`[1, 2, 3]` as its fields in order): a
    // bundle is an object, so anything else is said to be JSON of another shape.
    let shape = json_shape(&text);
    let head: Option<Head> = match shape {
        "an object" => match serde_json::from_str(&text) {
            Ok(head) => Some(head),
            Err(error) if error.is_eof() => bail!(
                "{} is truncated: it ends at line {}, column {}, before its JSON does; {WHAT_TO_DO}",
                path.display(),
                error.line(),
                error.column()
            ),
            // An object whose fields are of other types.
            Err(error) if error.is_data() => None,
            Err(error) => bail!("{} is not JSON: {error}; {WHAT_TO_DO}", path.display()),
        },
        _ => match serde_json::from_str::<serde::de::IgnoredAny>(&text) {
            Ok(_) => bail!(
                "{} is JSON but not a results bundle: it holds {shape}, and a bundle is an object with a \
                 schema_version; give the folder of a bundle `cargo xtask bench` wrote",
                path.display()
            ),
            Err(error) => bail!("{} is not JSON: {error}; {WHAT_TO_DO}", path.display()),
        },
    };
    let Some(head) = head else {
        bail!("{} is JSON but not a results bundle: it has no schema_version", path.display());
    };
    match head.schema_version.as_ref().and_then(serde_json::Value::as_u64) {
        None => bail!("{} is JSON but not a results bundle: it has no schema_version", path.display()),
        Some(1) => bail!(
            "{} has results schema 1, written by an earlier chbench; this one reads schema {SCHEMA_VERSION}: run \
             the benchmark again (`cargo xtask bench`), or render it with the chbench that wrote it",
            path.display()
        ),
        Some(found) if found != u64::from(SCHEMA_VERSION) => {
            bail!("{} has results schema {found}; this version reads schema {SCHEMA_VERSION}", path.display())
        }
        Some(_) => Ok((path, text, head)),
    }
}

/// What kind of JSON value `text` starts with, by its first character, as a message
/// names it.
fn json_shape(text: &str) -> &'static str {
    match text.trim_start().chars().next() {
        Some('{') => "an object",
        Some('[') => "an array",
        Some('"') => "a string",
        Some('t' | 'f') => "a boolean",
        Some('n') => "null",
        _ => "a number",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_bundle_is_said_before_it_is_read_with_what_it_takes() {
        let path = Path::new("results/big/results.json");
        assert_eq!(large_bundle_line(path, LARGE_BUNDLE_BYTES - 1), None);
        assert_eq!(
            large_bundle_line(path, 1_700_000_000).as_deref(),
            Some(
                "reading results/big/results.json (1.58 GiB): a bundle this large takes about a minute a GiB, and \
                 about 7.12 GiB of memory"
            )
        );
    }
}

//! `cargo xtask compare A [B]`: two bundles of one kind, or one A/B bundle's variants,
//! compared query by query; the comparison written as Markdown, a chart and JSON.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chbench::benchmarks::kinds;
use chbench::compare::report::{CHART_FILE, COMPARE_FILE, JSON_FILE, chart, markdown};
use chbench::compare::{CompareOptions, Comparison};
use chbench::files::write_atomically;
use chbench::results::prepare_results_folder;

use crate::flags::Compare;
use crate::report::bundle_dir;

impl Compare {
    pub fn run(self) -> Result<()> {
        let dirs = self
            .bundles
            .iter()
            .map(|bundle| bundle_dir(bundle, &self.results_dir))
            .collect::<Result<Vec<PathBuf>>>()?;
        let variants = self.variants.as_deref().map(variants_pair).transpose()?;
        let options = CompareOptions { force: self.force, variants, ..CompareOptions::default() };
        let comparison = kinds::compare(&dirs, &options)?;
        let out = match &self.out {
            Some(out) => out.clone(),
            None => self.results_dir.join(default_folder(&comparison)),
        };
        write_comparison(&comparison, &out)?;
        if self.json {
            println!("{}", serde_json::to_string_pretty(&comparison).context("cannot serialise the comparison")?);
        } else {
            print_summary(&comparison, &out);
        }
        if let Some(allowed) = self.fail_on_slower
            && comparison.summary.slower > allowed
        {
            let slower: Vec<&str> = comparison
                .queries
                .iter()
                .filter(|query| query.significance.verdict == chbench::significance::Verdict::Slower)
                .map(|query| query.query.as_str())
                .collect();
            bail!(
                "{} queries are slower ({}), more than --fail-on-slower {allowed} allows; see {}",
                slower.len(),
                slower.join(", "),
                out.join(COMPARE_FILE).display()
            );
        }
        Ok(())
    }
}

/// `A,B` as two variant names.
fn variants_pair(text: &str) -> Result<(String, String)> {
    match text.split(',').map(str::trim).collect::<Vec<_>>().as_slice() {
        [baseline, candidate] if !baseline.is_empty() && !candidate.is_empty() => {
            Ok((baseline.to_string(), candidate.to_string()))
        }
        _ => bail!(
            "--variants {text:?} is not two variant names: give the baseline and the candidate, e.g. --variants a,b"
        ),
    }
}

/// `compare-<A>-vs-<B>`, the sides by run id (and variant, in an A/B bundle): safe names
/// both, so the folder is one.
fn default_folder(comparison: &Comparison) -> String {
    let name = |side: &chbench::compare::Side| match &side.variant {
        Some(variant) if comparison.baseline.run_id == comparison.candidate.run_id => variant.clone(),
        Some(variant) => format!("{}-{variant}", side.run_id),
        None => side.run_id.clone(),
    };
    let folder = format!("compare-{}-vs-{}", name(&comparison.baseline), name(&comparison.candidate));
    if comparison.baseline.run_id == comparison.candidate.run_id {
        format!("{}-{folder}", comparison.baseline.run_id)
    } else {
        folder
    }
}

fn write_comparison(comparison: &Comparison, out: &Path) -> Result<()> {
    prepare_results_folder(out)?;
    let json = serde_json::to_string_pretty(comparison).context("cannot serialise the comparison")?;
    write_atomically(&out.join(JSON_FILE), &json)?;
    write_atomically(&out.join(CHART_FILE), &chart(comparison)?)?;
    write_atomically(&out.join(COMPARE_FILE), &markdown(comparison))
}

fn print_summary(comparison: &Comparison, out: &Path) {
    println!("{} against {}: {}", comparison.candidate.label, comparison.baseline.label, comparison.summary.line());
    for warning in &comparison.warnings {
        println!("warning: {warning}");
    }
    for query in &comparison.queries {
        if let Some(why) = &query.why {
            println!("  {}: {}", query.query, why.summary);
        }
    }
    if let Some(gain) = comparison.totals.gain {
        println!(
            "sum of means: {:.1} ms against {:.1} ms ({:+.1} %)",
            comparison.totals.baseline_sum_of_means_ms,
            comparison.totals.candidate_sum_of_means_ms,
            -100.0 * gain
        );
    }
    println!("report: {}", out.join(COMPARE_FILE).display());
}

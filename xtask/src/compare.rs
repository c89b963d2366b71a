//! `cargo xtask compare A [B]`: two bundles of one kind, or one A/B bundle's variants,
//! compared query by query; the comparison written as Markdown, a chart and JSON.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chbench::benchmarks::kinds;
use chbench::compare::report::{COMPARE_FILE, write_files};
use chbench::compare::{CompareOptions, Comparison, Side};
use chbench::node_prices::PriceOverrides;
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
        let prices =
            |side: Option<f64>| PriceOverrides { side, node_types: self.node_price.clone(), declared_node_type: None };
        let options = CompareOptions {
            force: self.force,
            variants,
            prices: (prices(self.price_a), prices(self.price_b)),
            ..CompareOptions::default()
        };
        let comparison = kinds::compare(&dirs, &options)?;
        let out = match &self.out {
            Some(out) => out.clone(),
            None => self.results_dir.join(default_folder(&comparison)),
        };
        write_comparison(&comparison, &out)?;
        if self.json {
            let json = serde_json::to_string_pretty(&comparison).context("cannot serialise the comparison")?;
            print_ignoring_a_closed_pipe(&(json + "\n"));
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

/// `compare-<A>-vs-<B>`, the sides by their folders' names (run ids, unless copied), or
/// `compare-<run>-<a>-vs-<b>` for two variants of one A/B bundle: safe names all, so the
/// folder is one.
fn default_folder(comparison: &Comparison) -> String {
    let bundle = |side: &Side| {
        side.dir.file_name().map_or_else(|| side.run_id.clone(), |name| name.to_string_lossy().into_owned())
    };
    let (a, b) = (&comparison.baseline, &comparison.candidate);
    match (&a.ab_variant, &b.ab_variant) {
        (Some(x), Some(y)) if a.dir == b.dir => format!("compare-{}-{x}-vs-{y}", bundle(a)),
        _ => format!("compare-{}-vs-{}", bundle(a), bundle(b)),
    }
}

fn write_comparison(comparison: &Comparison, out: &Path) -> Result<()> {
    prepare_results_folder(out)?;
    write_files(comparison, out)
}

/// The summary on stdout; a reader that stopped reading (`| head`) is not an error.
fn print_summary(comparison: &Comparison, out: &Path) {
    let mut text = format!(
        "{} against {}: {}\n",
        comparison.candidate.label,
        comparison.baseline.label,
        comparison.summary.line()
    );
    for warning in &comparison.warnings {
        text.push_str(&format!("warning: {warning}\n"));
    }
    for query in &comparison.queries {
        if let Some(why) = &query.why {
            text.push_str(&format!("  {}: {}\n", query.query, why.summary));
        }
    }
    let totals = &comparison.totals;
    if let Some(gain) = totals.gain {
        // B against A, as the line above; `+ 0.0` so that no change reads 0.0, not -0.0.
        text.push_str(&format!(
            "sum of means: {:.1} ms against {:.1} ms ({:+.1} %)\n",
            totals.candidate_sum_of_means_ms,
            totals.baseline_sum_of_means_ms,
            -100.0 * gain + 0.0
        ));
    }
    if let Some(score) = totals.relative_score {
        text.push_str(&format!("ClickBench relative score (B against A, below 1 faster): {score:.3}\n"));
    }
    for (letter, cost) in [("A", &comparison.cost.baseline), ("B", &comparison.cost.candidate)] {
        if let Some(usd) = cost.usd_per_1000_queries {
            text.push_str(&format!("{letter}: ${usd:.6} per 1,000 queries at {}\n", cost.price));
        }
    }
    text.push_str(&format!("report: {}\n", out.join(COMPARE_FILE).display()));
    print_ignoring_a_closed_pipe(&text);
}

fn print_ignoring_a_closed_pipe(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stdout().write_all(text.as_bytes());
}

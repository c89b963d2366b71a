//! `cargo xtask compare A [B]`: two bundles of one kind, or one A/B bundle's variants,
//! compared query by query; the comparison written as Markdown, a chart and JSON. A stop
//! request (Ctrl-C, SIGTERM, SIGHUP) ends it at once, with nothing written.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chbench::benchmarks::kinds;
use chbench::compare::report::{COMPARE_FILE, write_files};
use chbench::compare::{CompareOptions, Comparison, Side};
use chbench::interrupt;
use chbench::node_prices::PriceOverrides;
use chbench::results::{prepare_folder_of_flag, refuse_a_file_for_a_folder};
use chbench::significance::Verdict;
use chbench::units::plural;

use crate::flags::Compare;
use crate::report::bundle_dir;

impl Compare {
    pub fn run(self) -> Result<()> {
        // A folder given by hand is checked before the comparison, which can take minutes
        // (and made only when there is something to write in it).
        if let Some(out) = &self.out {
            refuse_a_file_for_a_folder(out, "--out")?;
        }
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
        // Reading two large bundles and testing every query takes seconds to minutes.
        let comparison = interrupt::until_stopped(move || kinds::compare(&dirs, &options))?;
        check_node_prices_apply(&self.node_price, (self.price_a.is_some(), self.price_b.is_some()), &comparison)?;
        let (out, flag) = match &self.out {
            Some(out) => (out.clone(), "--out"),
            None => (self.results_dir.join(default_folder(&comparison)), "--results-dir"),
        };
        write_comparison(&comparison, &out, flag)?;
        if self.json {
            let json = serde_json::to_string_pretty(&comparison).context("cannot serialise the comparison")?;
            print_ignoring_a_closed_pipe(&(json + "\n"));
        } else {
            print_summary(&comparison, &out);
        }
        if let Some(allowed) = self.fail_on_slower {
            // A level whose QPS is lower is a slowdown as much as a slower query, and a query
            // that failed or answered differently is worse than slow.
            let slower: Vec<String> = comparison
                .queries
                .iter()
                .filter_map(|query| match query.significance.verdict {
                    Verdict::Slower => Some(query.query.clone()),
                    Verdict::Failed => Some(format!("{} (failed)", query.query)),
                    Verdict::AnswersDiffer => Some(format!("{} (answers differ)", query.query)),
                    _ => None,
                })
                .chain(comparison.lower_levels().iter().map(|clients| format!("QPS at {}", plural(*clients, "client"))))
                .collect();
            if slower.len() > allowed {
                bail!(
                    "slower or failed on B: {}; that is {}, more than --fail-on-slower {allowed} allows; see {}",
                    slower.join(", "),
                    slower.len(),
                    out.join(COMPARE_FILE).display()
                );
            }
        }
        Ok(())
    }
}

/// A `--node-price` for a node type neither side ran on priced nothing: a mistyped type,
/// or bundles that do not name their node; refused rather than silently unused, as is one
/// whose sides are priced by `--price-a`/`--price-b` (`side_prices`) instead.
fn check_node_prices_apply(
    node_prices: &[(String, f64)],
    side_prices: (bool, bool),
    comparison: &Comparison,
) -> Result<()> {
    let types = [&comparison.cost.baseline.node_type, &comparison.cost.candidate.node_type];
    let priced_by_type = [!side_prices.0, !side_prices.1];
    for (node_type, _) in node_prices {
        let on = |at: usize| types[at].as_deref() == Some(node_type.as_str());
        if (on(0) || on(1)) && !((on(0) && priced_by_type[0]) || (on(1) && priced_by_type[1])) {
            bail!(
                "--node-price {node_type}=...: the sides on {node_type} are priced by --price-a/--price-b instead; \
                 give one of them"
            );
        }
        if !(on(0) || on(1)) {
            let named = |side: &Option<String>| side.clone().unwrap_or_else(|| "not recorded".to_string());
            bail!(
                "--node-price {node_type}=...: neither side ran on {node_type} (A's node: {}, B's: {}); give the type \
                 a bundle names, or price a side with --price-a/--price-b",
                named(types[0]),
                named(types[1])
            );
        }
    }
    Ok(())
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

/// Writes the files into `out`, which `flag` chose (a mistake names it).
fn write_comparison(comparison: &Comparison, out: &Path, flag: &str) -> Result<()> {
    prepare_folder_of_flag(out, flag)?;
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
    if let Some(levels) = comparison.levels_line() {
        text.push_str(&format!("{levels}\n"));
    }
    if !comparison.forced_differences.is_empty() {
        // What --force let through, row by row, as the report opens with it.
        text.push_str(&format!(
            "compared with --force, though the runs were asked to do different things: {}\n",
            comparison.forced_differences.join("; ")
        ));
    }
    for warning in &comparison.warnings {
        text.push_str(&format!("warning: {warning}\n"));
    }
    for query in &comparison.queries {
        match (&query.why, query.significance.verdict) {
            (Some(why), _) => text.push_str(&format!("  {}: {}\n", query.query, why.summary)),
            // Failed and differing queries are named, as their verdicts count them.
            (None, Verdict::Failed | Verdict::AnswersDiffer) => text.push_str(&format!(
                "  {}: {} ({})\n",
                query.query,
                if query.significance.verdict == Verdict::Failed { "failed" } else { "answers differ" },
                query.significance.reason.as_deref().unwrap_or("no reason recorded")
            )),
            (None, _) => {}
        }
    }
    for (side, only) in
        [(&comparison.baseline, &comparison.only_in_baseline), (&comparison.candidate, &comparison.only_in_candidate)]
    {
        if !only.is_empty() {
            text.push_str(&format!("measured in {} only, not compared: {}\n", side.label, only.join(", ")));
        }
    }
    let totals = &comparison.totals;
    if let Some(gain) = totals.gain {
        // A then B, as the report gives them; `+ 0.0` so that no change reads 0.0, not -0.0.
        let what = if totals.basis.is_some() { "sum of mean latencies under load" } else { "sum of means" };
        text.push_str(&format!(
            "{what}: A {:.1} ms, B {:.1} ms (B {:+.1} %)\n",
            totals.baseline_sum_of_means_ms,
            totals.candidate_sum_of_means_ms,
            -100.0 * gain + 0.0
        ));
    }
    if let Some(score) = totals.relative_score {
        text.push_str(&format!("ClickBench relative score (B against A, below 1 faster): {score:.3}\n"));
    }
    for level in &comparison.levels {
        text.push_str(&format!("{}\n", level.line()));
    }
    for (letter, cost, levels) in [
        ("A", &comparison.cost.baseline, comparison.levels.iter().map(|level| &level.baseline).collect::<Vec<_>>()),
        ("B", &comparison.cost.candidate, comparison.levels.iter().map(|level| &level.candidate).collect()),
    ] {
        let at_levels: Vec<String> = comparison
            .levels
            .iter()
            .zip(levels)
            .filter_map(|(level, side)| {
                let usd = side.as_ref()?.usd_per_1000_queries?;
                Some(format!("${usd:.6} at {}", plural(level.clients, "client")))
            })
            .collect();
        match (cost.price.usd_per_hour(), cost.usd_per_1000_queries) {
            (None, _) => text.push_str(&format!("{letter}: cost unknown, price {}\n", cost.price)),
            (Some(_), Some(usd)) => {
                text.push_str(&format!("{letter}: ${usd:.6} per 1,000 queries at {}\n", cost.price));
            }
            (Some(_), None) if !at_levels.is_empty() => {
                text.push_str(&format!("{letter}: per 1,000 queries {}; price {}\n", at_levels.join(", "), cost.price))
            }
            (Some(_), None) => text.push_str(&format!(
                "{letter}: cost unknown at {}: {}\n",
                cost.price,
                cost.why_unknown.as_deref().unwrap_or("no compared query has a known mean time")
            )),
        }
    }
    text.push_str(&format!("report: {}\n", out.join(COMPARE_FILE).display()));
    print_ignoring_a_closed_pipe(&text);
}

fn print_ignoring_a_closed_pipe(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stdout().write_all(text.as_bytes());
}

//! `cargo xtask compare A [B]`: two bundles of one kind, or one A/B bundle's variants,
//! compared query by query; the comparison written as Markdown, a chart and JSON. A stop
//! request (Ctrl-C, SIGTERM, SIGHUP) ends it at once, with nothing written.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use chbench::benchmarks::kinds;
use chbench::compare::report::{COMPARE_FILE, COMPARE_HTML, write_files};
use chbench::compare::{CompareOptions, Compared, Side};
use chbench::interrupt;
use chbench::node_prices::PriceOverrides;
use chbench::results::{prepare_folder_of_flag, refuse_a_file_for_a_folder};
use chbench::significance::Verdict;

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
        // One price a type: a second would be dropped without a word.
        let given_twice = self.node_price.iter().enumerate().find_map(|(at, (node_type, _))| {
            self.node_price[..at].iter().any(|(earlier, _)| earlier == node_type).then_some(node_type)
        });
        if let Some(node_type) = given_twice {
            bail!("--node-price {node_type}=... is given twice: give each node type one price");
        }
        let prices =
            |side: Option<f64>| PriceOverrides { side, node_types: self.node_price.clone(), declared_node_type: None };
        let options = CompareOptions {
            force: self.force,
            variants,
            prices: (prices(self.price_a), prices(self.price_b)),
            ..CompareOptions::default()
        };
        // Reading two large bundles and testing every query takes seconds to minutes.
        let compared = interrupt::until_stopped(move || kinds::compare(&dirs, &options))?;
        self.check_prices_apply(&compared)?;
        let (out, flag) = match &self.out {
            Some(out) => (out.clone(), "--out"),
            None => {
                let out = self.results_dir.join(default_folder(&compared));
                if out.exists() && !out.is_dir() {
                    bail!(
                        "{} is a file where the comparison's folder goes: remove it, or give --out a folder",
                        out.display()
                    );
                }
                (out, "--results-dir")
            }
        };
        write_comparison(&compared, &out, flag)?;
        if self.json {
            print_ignoring_a_closed_pipe(&(compared.json()? + "\n"));
        } else {
            print_summary(&compared, &out);
        }
        if let Some(allowed) = self.fail_on_slower {
            // What the kind finds worse (a level whose QPS is lower) is a slowdown as much as
            // a slower query, and a query that failed or answered differently is worse than
            // slow.
            let slower: Vec<String> = compared
                .comparison
                .queries
                .iter()
                .filter_map(|query| match query.significance.verdict {
                    Verdict::Slower => Some(query.query.clone()),
                    Verdict::Failed => Some(format!("{} (failed)", query.query)),
                    Verdict::AnswersDiffer => Some(format!("{} (answers differ)", query.query)),
                    _ => None,
                })
                .chain(compared.sections().regressions())
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

    /// A price given for a comparison whose kind prices nothing, or a `--node-price` for a
    /// node type neither side ran on (a mistyped type, or bundles that do not name their
    /// node), priced nothing; refused rather than silently unused, as is a `--node-price`
    /// whose sides are priced by `--price-a`/`--price-b` instead.
    fn check_prices_apply(&self, compared: &Compared) -> Result<()> {
        let Some(types) = compared.sections().priced_node_types() else {
            let given = [
                self.price_a.map(|_| "--price-a".to_string()),
                self.price_b.map(|_| "--price-b".to_string()),
                self.node_price.first().map(|(node_type, _)| format!("--node-price {node_type}=...")),
            ];
            if let Some(flag) = given.into_iter().flatten().next() {
                bail!(
                    "{flag}: a {} comparison prices nothing (its kind's comparison has no price-performance); drop \
                     the price",
                    compared.comparison.kind
                );
            }
            return Ok(());
        };
        check_node_prices_apply(&self.node_price, (self.price_a.is_some(), self.price_b.is_some()), &types)
    }
}

/// A `--node-price` for a node type neither side ran on, or for one whose sides are priced
/// by `--price-a`/`--price-b` (`side_prices`): refused. `types`: each side's node type.
fn check_node_prices_apply(
    node_prices: &[(String, f64)],
    side_prices: (bool, bool),
    types: &[Option<String>; 2],
) -> Result<()> {
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
                named(&types[0]),
                named(&types[1])
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
fn default_folder(compared: &Compared) -> String {
    let bundle = |side: &Side| {
        side.dir.file_name().map_or_else(|| side.run_id.clone(), |name| name.to_string_lossy().into_owned())
    };
    let (a, b) = (&compared.comparison.baseline, &compared.comparison.candidate);
    match (&a.ab_variant, &b.ab_variant) {
        (Some(x), Some(y)) if a.dir == b.dir => format!("compare-{}-{x}-vs-{y}", bundle(a)),
        _ => format!("compare-{}-vs-{}", bundle(a), bundle(b)),
    }
}

/// Writes the files into `out`, which `flag` chose (a mistake names it).
fn write_comparison(compared: &Compared, out: &Path, flag: &str) -> Result<()> {
    prepare_folder_of_flag(out, flag)?;
    write_files(compared, out)
}

/// The summary on stdout; a reader that stopped reading (`| head`) is not an error.
fn print_summary(compared: &Compared, out: &Path) {
    let (comparison, sections) = (&compared.comparison, compared.sections());
    let mut text = format!(
        "{} against {}: {}\n",
        comparison.candidate.label,
        comparison.baseline.label,
        comparison.summary.line()
    );
    for headline in sections.headlines() {
        text.push_str(&format!("{headline}\n"));
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
        text.push_str(&format!(
            "{}: A {:.1} ms, B {:.1} ms (B {:+.1} %)\n",
            sections.sum_of_means_name(),
            totals.baseline_sum_of_means_ms,
            totals.candidate_sum_of_means_ms,
            -100.0 * gain + 0.0
        ));
    }
    for line in sections.terminal_lines() {
        text.push_str(&format!("{line}\n"));
    }
    text.push_str(&format!("report: {}\n", out.join(COMPARE_FILE).display()));
    text.push_str(&format!("page: {}\n", out.join(COMPARE_HTML).display()));
    print_ignoring_a_closed_pipe(&text);
}

fn print_ignoring_a_closed_pipe(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stdout().write_all(text.as_bytes());
}

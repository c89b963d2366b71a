//! The HTML pages in a real browser: every kind's example bundles' `report.html`, and
//! their comparisons' `compare.html`, opened from disk in headless Chromium, load with no
//! console error, no failed request and no request at all beyond the page itself; their
//! charts, tables and raw samples are in the page in the numbers the bundle gives; a table
//! sorts on a click and a figure's link opens its samples.
//!
//! Ignored in a laptop's `cargo nextest run`, which may have no Chromium; `.ci/run`
//! installs Debian's and runs them (`--run-ignored only -E 'test(/^pages::/)'`).
//! `CHBENCH_PAGE_SCREENSHOTS=<folder>` keeps a screenshot of each page there.

mod browser;

use std::path::Path;

use chbench::benchmarks::Benchmark;
use chbench::benchmarks::kinds::{self, KindVisitor, visit_kinds, write_report};
use chbench::compare::CompareOptions;
use chbench::compare::report::{COMPARE_FILE, COMPARE_HTML, LEVELS_CHART_FILE, SAMPLES_CHART_FILE, write_files};
use chbench::report::html::REPORT_HTML;
use chbench::results::{BundleWriter, ExistingFolder, KindResults, RunBundle};
use serde_json::Value;

use self::browser::Page;

/// What the page shows, read from its DOM.
const SHOWN: &str = r##"(() => {
    const figures = Array.from(document.querySelectorAll(".chart[data-chart]")).map(figure => ({
        chart: figure.dataset.chart,
        values: figure.querySelectorAll("svg .values > *").length,
        titled: figure.querySelectorAll("svg .values > * > title").length,
    }));
    const samples = Array.from(document.querySelectorAll("#raw-samples details")).map(details => ({
        id: details.id,
        rows: details.querySelectorAll("tbody tr").length,
    }));
    const links = Array.from(document.querySelectorAll("a.samples")).map(link => link.getAttribute("href"));
    return {
        figures,
        samples,
        links,
        tables: document.querySelectorAll("table").length,
        images: document.querySelectorAll("img").length,
        sortable: document.querySelectorAll("thead th.sortable").length,
        headers: Array.from(document.querySelectorAll("thead th")).filter(th => th.textContent.trim() !== "").length,
    };
})()"##;

#[test]
#[ignore = "needs Chromium (Debian's chromium, or CHBENCH_CHROMIUM): .ci/run installs it"]
fn every_kinds_report_page_opens_clean_and_shows_what_its_bundle_holds() {
    struct Pages;
    impl KindVisitor for Pages {
        fn visit<B: Benchmark>(&mut self) {
            for (index, example) in B::examples(1.5, 7).into_iter().enumerate() {
                let kind = <B::Results as KindResults>::KIND;
                check_report_page::<B>(&format!("{kind}-{}", index + 1), example);
            }
        }
    }
    visit_kinds(&mut Pages);
}

fn check_report_page<B: Benchmark>(name: &str, example: RunBundle<B::Results>) {
    let root = tempfile::tempdir().unwrap();
    // The SQL files an example names need not exist here (a checkout's).
    let bundle = RunBundle { sql_files: Vec::new(), ..example };
    let writer = BundleWriter::create(root.path(), bundle.clone(), ExistingFolder::Refuse).unwrap();
    let dir = writer.dir().to_path_buf();
    let markdown = std::fs::read_to_string(write_report(&dir).unwrap()).unwrap();
    let expected = B::raw_samples(&bundle);
    let mut page = Page::open(&dir.join(REPORT_HTML));
    check_page(name, &mut page, &dir, &markdown, &expected.iter().map(|table| table.rows.len()).collect::<Vec<_>>());

    // The same bundle against itself: the comparison's page, with every sample compared
    // on its chart, and a kind's levels as curves.
    let compared = kinds::compare(&[dir.clone(), dir.clone()], &CompareOptions::default()).unwrap();
    let out = root.path().join("compared");
    std::fs::create_dir(&out).unwrap();
    write_files(&compared, &out).unwrap();
    let markdown = std::fs::read_to_string(out.join(COMPARE_FILE)).unwrap();
    let queries = &compared.comparison.queries;
    let lists: Vec<usize> =
        queries.iter().map(|query| query.baseline.samples_ms.len() + query.candidate.samples_ms.len()).collect();
    let mut page = Page::open(&out.join(COMPARE_HTML));
    let shown = check_page(&format!("{name}-compare"), &mut page, &out, &markdown, &lists);
    let figure =
        |chart: &str| shown["figures"].as_array().unwrap().iter().find(|figure| figure["chart"] == chart).cloned();
    let samples = figure(SAMPLES_CHART_FILE).expect("the samples' chart");
    let positive = queries
        .iter()
        .flat_map(|query| query.baseline.samples_ms.iter().chain(&query.candidate.samples_ms))
        .filter(|ms| ms.is_finite() && **ms > 0.0)
        .count() as u64;
    assert_eq!(samples["values"].as_u64(), Some(positive), "{name}: every positive sample a dot");
    if let Some(levels) = figure(LEVELS_CHART_FILE) {
        assert_ne!(levels["values"], 0, "{name}: levels drawn as curves");
    }
}

/// Checks a page opened from `dir`, where `markdown` is the report it shows and
/// `sample_rows` the rows of each of its lists of samples; returns what it shows.
fn check_page(name: &str, page: &mut Page, dir: &Path, markdown: &str, sample_rows: &[usize]) -> Value {
    let shown = page.evaluate(SHOWN);
    keep_screenshot(page, name);

    // The charts: each image of the report is drawn inline, its every measured mark named
    // on hover, as many as its SVG file has.
    let charts: Vec<&str> =
        markdown.lines().filter_map(|line| line.strip_prefix("![")?.split_once("](")?.1.strip_suffix(')')).collect();
    let figures = shown["figures"].as_array().unwrap();
    assert_eq!(figures.len(), charts.len(), "{name}: charts {charts:?}, page {figures:?}");
    for (figure, chart) in figures.iter().zip(&charts) {
        assert_eq!(figure["chart"], *chart, "{name}");
        let svg = std::fs::read_to_string(dir.join(chart)).unwrap();
        let marks = svg.matches("<title>").count() as u64;
        assert_eq!(figure["values"].as_u64(), Some(marks), "{name}: {chart}");
        assert_eq!(figure["titled"].as_u64(), Some(marks), "{name}: {chart}");
    }
    assert_eq!(shown["images"], 0, "{name}: an image the page would ask for");

    // The raw samples: a list per figure, as many rows as the bundle has samples.
    let samples = shown["samples"].as_array().unwrap();
    assert_eq!(samples.len(), sample_rows.len(), "{name}");
    for (index, (list, rows)) in samples.iter().zip(sample_rows).enumerate() {
        assert_eq!(list["rows"].as_u64(), Some(*rows as u64), "{name}: list {index}");
    }
    // Every table of the report and every list of samples, each header sortable.
    let report_tables = markdown.lines().filter(|line| line.starts_with("| ---")).count();
    assert_eq!(shown["tables"].as_u64(), Some((report_tables + sample_rows.len()) as u64), "{name}");
    assert_eq!(shown["sortable"], shown["headers"], "{name}");

    // A figure's link names a list that exists, and opens it.
    let links: Vec<&str> = shown["links"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let ids: Vec<String> = samples.iter().map(|list| format!("#{}", list["id"].as_str().unwrap())).collect();
    for link in &links {
        assert!(ids.iter().any(|id| id == link), "{name}: {link} names no list of samples");
    }
    assert!(sample_rows.is_empty() || !links.is_empty(), "{name}: no figure links to its samples");
    assert!(figures.iter().any(|figure| figure["values"] != 0) || charts.is_empty(), "{name}: {figures:?}");
    if let Some(first) = links.first() {
        let opened = page.evaluate(&format!(
            "document.querySelector('a.samples[href=\"{first}\"]').click(); document.querySelector('{first}').open"
        ));
        assert_eq!(opened, true, "{name}: {first} did not open its list");
    }

    // A click on a header sorts its table (unknowns last), and a second reverses it.
    let sorted = page.evaluate(
        r#"(() => {
        const table = Array.from(document.querySelectorAll("table")).find(table => table.tBodies[0].rows.length > 1);
        if (!table) return "no table of two rows";
        const header = Array.from(table.tHead.rows[0].cells).find(cell => cell.classList.contains("sortable"));
        const before = table.tBodies[0].rows.length;
        header.click();
        const first = header.getAttribute("aria-sort");
        header.click();
        return [first, header.getAttribute("aria-sort"), table.tBodies[0].rows.length === before];
    })()"#,
    );
    if sorted != "no table of two rows" {
        assert_eq!(sorted, serde_json::json!(["ascending", "descending", true]), "{name}");
    }
    assert!(page.problems.is_empty(), "{name}: {:#?}", page.problems);
    shown
}

/// Keeps a screenshot of the page where `CHBENCH_PAGE_SCREENSHOTS` says, to be looked at.
fn keep_screenshot(page: &mut Page, name: &str) {
    if let Some(folder) = std::env::var_os("CHBENCH_PAGE_SCREENSHOTS") {
        std::fs::create_dir_all(&folder).unwrap();
        page.screenshot(&Path::new(&folder).join(format!("{name}.png")));
    }
}

/// A page with an error in its script, a missing image and a request to the network is
/// caught: the test above would see them.
#[test]
#[ignore = "needs Chromium (Debian's chromium, or CHBENCH_CHROMIUM): .ci/run installs it"]
fn a_page_with_a_script_error_or_a_request_is_caught() {
    let root = tempfile::tempdir().unwrap();
    let html = root.path().join("broken.html");
    std::fs::write(
        &html,
        "<!DOCTYPE html><html><body><img src=\"missing.svg\"><script>console.error('seen'); undefinedCall();</script>\
         </body></html>",
    )
    .unwrap();
    let page = Page::open(&html);
    let problems = page.problems.join("\n");
    for expected in ["console \"error\"", "exception", "missing.svg"] {
        assert!(problems.contains(expected), "{expected} not caught in:\n{problems}");
    }
}

/// A click on a header sorts its rows by their figures, units scaled, unknowns last in
/// both directions; text sorts with its numbers in order.
#[test]
#[ignore = "needs Chromium (Debian's chromium, or CHBENCH_CHROMIUM): .ci/run installs it"]
fn a_table_sorts_by_its_figures_units_scaled_and_unknowns_last() {
    let markdown = "| query | time | started |\n| --- | --- | --- |\n| q10 | 1.2 s | 2026-12-07 02:00:16 UTC |\n\
                    | q9 | unknown | 2026-12-06 23:59:59 UTC |\n| q2 | 900 ms | 2026-12-07 10:00:00 UTC |\n\
                    | q1 | 35 µs | 2026-12-07 02:00:17 UTC |\n| q3 | none | 2026-12-07 02:00:15 UTC |\n\
                    | q4 | 2,500 ms | 2026-12-07 03:00:00 UTC |\n";
    let root = tempfile::tempdir().unwrap();
    let html = root.path().join("sort.html");
    std::fs::write(&html, chbench::report::html::page("sort", markdown, &[], &[])).unwrap();
    let mut page = Page::open(&html);
    let order = |page: &mut Page, column: usize| {
        page.evaluate(&format!(
            "document.querySelectorAll('thead th')[{column}].click(); \
             Array.from(document.querySelectorAll('tbody tr')).map(row => row.cells[0].textContent)"
        ))
    };
    assert_eq!(order(&mut page, 1), serde_json::json!(["q1", "q2", "q10", "q4", "q9", "q3"]));
    assert_eq!(order(&mut page, 1), serde_json::json!(["q4", "q10", "q2", "q1", "q9", "q3"]));
    assert_eq!(order(&mut page, 0), serde_json::json!(["q1", "q2", "q3", "q4", "q9", "q10"]));
    // Dates (and run ids) that start with digits sort as text, in time order.
    assert_eq!(order(&mut page, 2), serde_json::json!(["q9", "q3", "q10", "q1", "q4", "q2"]));
    assert!(page.problems.is_empty(), "{:#?}", page.problems);
}

/// A history of three logs bundles, the third of other rows (a break): its page loads clean,
/// with a point a query a run and a row a query a run.
#[test]
#[ignore = "needs Chromium (Debian's chromium, or CHBENCH_CHROMIUM): .ci/run installs it"]
fn a_history_page_opens_clean_with_a_point_a_query_a_run() {
    use chbench::benchmarks::logs::LogsBenchmark;
    use chbench::history::{HISTORY_CHART, HISTORY_HTML, history};

    let root = tempfile::tempdir().unwrap();
    let example = LogsBenchmark::examples(1.5, 7).remove(0);
    let mut dirs = Vec::new();
    for (index, rows) in [1_000u64, 1_000, 2_000].into_iter().enumerate() {
        let mut bundle = RunBundle { sql_files: Vec::new(), ..example.clone() };
        bundle.run_id = format!("run-{}", index + 1);
        bundle.started_at += jiff::SignedDuration::from_hours(index as i64);
        bundle.benchmark.dataset.rows = rows;
        dirs.push(BundleWriter::create(root.path(), bundle, ExistingFolder::Refuse).unwrap().dir().to_path_buf());
    }
    let history = history(&dirs).unwrap();
    let out = root.path().join("history");
    std::fs::create_dir(&out).unwrap();
    let markdown = std::fs::read_to_string(history.write(&out).unwrap()).unwrap();
    let mut page = Page::open(&out.join(HISTORY_HTML));
    let shown = check_page("history", &mut page, &out, &markdown, &[]);
    let chart = shown["figures"].as_array().unwrap().iter().find(|figure| figure["chart"] == HISTORY_CHART).cloned();
    let queries = history.queries().len() as u64;
    assert_eq!(chart.expect("the history's chart")["values"].as_u64(), Some(3 * queries));
    assert!(markdown.contains("break"), "{markdown}");
}

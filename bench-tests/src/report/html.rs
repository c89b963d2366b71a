//! A report as one HTML page (`report.html`, and a comparison's `compare.html`): the
//! report's Markdown with its charts inline, every table sortable by a click on its
//! header, and every measured figure one click from its raw samples, listed at the end of
//! the page. The page is self-contained (its style and script are in it; it asks for no
//! file, font or network), so that it opens from disk, and it is made from its inputs
//! alone, so that rendering it twice gives the same bytes.
//!
//! Written by hand around pulldown-cmark rather than with a template engine: the page is
//! one fixed frame around the Markdown's HTML, and the only changes to that HTML (a chart
//! put inline for its image, a table's first cell linked to its samples) are made on the
//! parser's events.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::ops::Range;

use pulldown_cmark::{DefaultBrokenLinkCallback, Event, OffsetIter, Options, Parser, Tag, TagEnd};
use pulldown_cmark_escape::{escape_html, escape_html_body_text};

use crate::units::plural;

/// A run's page in its bundle folder, beside `report.md`.
pub const REPORT_HTML: &str = "report.html";

/// The page's style: readable text, tables that scroll sideways when wide, and a sort
/// marker on table headers.
const STYLE: &str = include_str!("page.css");
/// Sorting tables by a header's click, and opening a sample list its link points to.
const SCRIPT: &str = include_str!("page.js");

/// The raw samples behind one figure of the report, listed at the page's end: a query's
/// runs, a level's rounds. A report table's row links here when its first column's header
/// is `linked_from` and its first cell reads `key`.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleTable {
    /// The header of the first column of the tables whose rows link here (`query`,
    /// `clients`).
    pub linked_from: String,
    /// The first cell's text in those rows (`q1`, `4`).
    pub key: String,
    /// The list's heading (`q1`, `4 clients`).
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The page of a report: `title`, the report's `markdown` with every image whose address
/// names one of `charts` (file name, SVG) drawn inline, then `samples`.
pub fn page(title: &str, markdown: &str, charts: &[(&str, String)], samples: &[SampleTable]) -> String {
    let anchors: BTreeMap<(&str, &str), String> = samples
        .iter()
        .enumerate()
        .map(|(index, table)| ((table.linked_from.as_str(), table.key.as_str()), format!("samples-{}", index + 1)))
        .collect();
    let mut body = String::new();
    pulldown_cmark::html::push_html(&mut body, Rewriter::new(markdown, charts, &anchors));
    if !samples.is_empty() {
        body.push_str(&samples_section(samples, &anchors));
    }
    let mut page = String::with_capacity(body.len() + STYLE.len() + SCRIPT.len() + 512);
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
    escape_text(&mut page, title);
    let _ = write!(page, "</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n");
    let _ = write!(page, "<script>\n{SCRIPT}</script>\n</body>\n</html>\n");
    page
}

/// The Markdown parser's events, with a chart inline for its image, a row's first cell
/// linked to its samples, and raw HTML shown as text: a report's text comes from outside
/// (query names, answers, error messages), and none of it is markup.
struct Rewriter<'a, 'm> {
    markdown: &'m str,
    parser: OffsetIter<'m, DefaultBrokenLinkCallback>,
    charts: &'a [(&'a str, String)],
    anchors: &'a BTreeMap<(&'a str, &'a str), String>,
    /// Events made and not yet handed out.
    ready: VecDeque<Event<'m>>,
    /// The header of the current table's first column.
    header: Option<String>,
    /// The current table, counted from 1.
    table: usize,
    /// The table each list is linked from: only the first table whose rows name a list
    /// links to it (the one its samples are behind, not a later table of the same
    /// queries, a comparison's direct-I/O runs say).
    linked_from: BTreeMap<String, usize>,
    in_head: bool,
    /// The cell of the current row (0: the first).
    cell: usize,
}

impl<'a, 'm> Rewriter<'a, 'm> {
    fn new(
        markdown: &'m str,
        charts: &'a [(&'a str, String)],
        anchors: &'a BTreeMap<(&'a str, &'a str), String>,
    ) -> Self {
        Rewriter {
            markdown,
            parser: Parser::new_ext(markdown, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH)
                .into_offset_iter(),
            charts,
            anchors,
            ready: VecDeque::new(),
            header: None,
            table: 0,
            linked_from: BTreeMap::new(),
            in_head: false,
            cell: 0,
        }
    }

    /// The parser's next event, raw HTML made text, and where it is in the Markdown.
    fn next_parsed(&mut self) -> Option<(Event<'m>, Range<usize>)> {
        let (event, range) = self.parser.next()?;
        let event = match event {
            Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
            other => other,
        };
        Some((event, range))
    }

    /// The events up to `end`, the end itself included.
    fn until(&mut self, end: TagEnd) -> Vec<Event<'m>> {
        let mut events = Vec::new();
        while let Some((event, _)) = self.next_parsed() {
            let done = event == Event::End(end);
            events.push(event);
            if done {
                break;
            }
        }
        events
    }
}

/// The text of events, as a reader sees it.
fn plain_text(events: &[Event<'_>]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Text(text) | Event::Code(text) => Some(text.as_ref()),
            _ => None,
        })
        .collect()
}

/// A table cell's text as the Markdown writes it (`markdown::Table` escapes only `|`):
/// what a samples list's key is matched against, code spans and all.
fn cell_source(markdown: &str, range: Range<usize>) -> String {
    markdown.get(range).unwrap_or_default().trim().trim_matches('|').trim().replace("\\|", "|")
}

impl<'m> Iterator for Rewriter<'_, 'm> {
    type Item = Event<'m>;

    fn next(&mut self) -> Option<Event<'m>> {
        if let Some(event) = self.ready.pop_front() {
            return Some(event);
        }
        let (event, range) = self.next_parsed()?;
        match &event {
            Event::Start(Tag::Image { dest_url, .. }) => {
                let Some((name, svg)) = self.charts.iter().find(|(name, _)| *name == dest_url.as_ref()) else {
                    return Some(event);
                };
                let alt = plain_text(&self.until(TagEnd::Image));
                // Spans, not a figure: the image sits in a paragraph, which holds no figure.
                let mut chart = format!("<span class=\"chart\" data-chart=\"{}\">", attribute(name));
                chart.push_str(svg_without_prolog(svg));
                chart.push_str("<span class=\"caption\">");
                escape_text(&mut chart, &alt);
                chart.push_str("</span></span>");
                Some(Event::InlineHtml(chart.into()))
            }
            Event::Start(Tag::Table(_)) => {
                self.table += 1;
                self.header = None;
                Some(event)
            }
            Event::Start(Tag::TableHead) => {
                self.in_head = true;
                self.cell = 0;
                Some(event)
            }
            Event::End(TagEnd::TableHead) => {
                self.in_head = false;
                Some(event)
            }
            Event::Start(Tag::TableRow) => {
                self.cell = 0;
                Some(event)
            }
            Event::Start(Tag::TableCell) => {
                let cell = self.cell;
                self.cell += 1;
                if cell != 0 {
                    return Some(event);
                }
                let source = cell_source(self.markdown, range);
                let mut inner = self.until(TagEnd::TableCell);
                let anchor = self.header.as_deref().and_then(|header| {
                    // As written (a name holding a code span or a pipe), or as read (a
                    // name the report puts in backticks).
                    let read = plain_text(&inner);
                    [source.as_str(), read.as_str()]
                        .into_iter()
                        .find_map(|key| self.anchors.get(&(header, key)).cloned())
                });
                let table = self.table;
                let anchor = anchor.filter(|anchor| *self.linked_from.entry(anchor.clone()).or_insert(table) == table);
                if self.in_head {
                    self.header = Some(plain_text(&inner));
                } else if let Some(anchor) = anchor {
                    let end = inner.pop();
                    let link = format!("<a class=\"samples\" href=\"#{anchor}\" title=\"its raw samples\">");
                    self.ready.push_back(Event::InlineHtml(link.into()));
                    self.ready.extend(inner);
                    self.ready.push_back(Event::InlineHtml("</a>".into()));
                    self.ready.extend(end);
                    return Some(event);
                }
                self.ready.extend(inner);
                Some(event)
            }
            _ => Some(event),
        }
    }
}

/// `## Raw samples`: one closed list per figure, opened by its link.
fn samples_section(samples: &[SampleTable], anchors: &BTreeMap<(&str, &str), String>) -> String {
    let mut html = String::from(
        "<section id=\"raw-samples\">\n<h2>Raw samples</h2>\n<p>Every sample behind the figures above, as its \
         bundle's <code>results.json</code> holds it; a figure's link opens its list.</p>\n",
    );
    for table in samples {
        // Every list has its anchor (`page` made one per list).
        let Some(anchor) = anchors.get(&(table.linked_from.as_str(), table.key.as_str())) else { continue };
        let _ = write!(html, "<details id=\"{anchor}\">\n<summary>");
        escape_text(&mut html, &table.title);
        let _ = write!(html, " ({})</summary>\n<table>\n<thead><tr>", plural(table.rows.len() as u64, "sample"));
        for column in &table.columns {
            html.push_str("<th>");
            escape_text(&mut html, column);
            html.push_str("</th>");
        }
        html.push_str("</tr></thead>\n<tbody>\n");
        for row in &table.rows {
            html.push_str("<tr>");
            for cell in row {
                html.push_str("<td>");
                escape_text(&mut html, cell);
                html.push_str("</td>");
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</tbody>\n</table>\n</details>\n");
    }
    html.push_str("</section>\n");
    html
}

/// An SVG document as an element: without the XML declaration a file starts with.
fn svg_without_prolog(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |start| &svg[start..])
}

fn escape_text(html: &mut String, text: &str) {
    // Writing into a String cannot fail.
    let _ = escape_html_body_text(html, text);
}

fn attribute(text: &str) -> String {
    let mut escaped = String::new();
    let _ = escape_html(&mut escaped, text);
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<SampleTable> {
        vec![SampleTable {
            linked_from: "query".to_string(),
            key: "q1".to_string(),
            title: "q1 <all forms>".to_string(),
            columns: vec!["run".to_string(), "server ms".to_string()],
            rows: vec![vec!["warm 1".to_string(), "2.5".to_string()], vec!["warm 2".to_string(), "2.7".to_string()]],
        }]
    }

    const MARKDOWN: &str = "# logs benchmark, run r1\n\n![queries](queries.svg)\n\n| query | warm |\n| --- | --- |\n\
                            | q1 | 2.5 ms |\n| q2 | 3 ms |\n\n| round | query |\n| --- | --- |\n| q1 | q1 |\n";

    #[test]
    fn a_chart_is_inline_and_a_query_row_links_to_its_samples() {
        let charts = [("queries.svg", "<?xml version=\"1.0\"?>\n<svg width=\"10\"><rect/></svg>".to_string())];
        let page = page("logs <r1>", MARKDOWN, &charts, &samples());
        assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<title>logs &lt;r1&gt;</title>"), "{page}");
        assert!(page.contains("<span class=\"chart\" data-chart=\"queries.svg\"><svg width=\"10\">"), "{page}");
        assert!(!page.contains("<img") && !page.contains("<?xml"), "{page}");
        // The row of q1 under a `query` header links to its list; q2 has none, and a
        // table whose first column is another (`round`) links nothing.
        assert_eq!(page.matches("href=\"#samples-1\"").count(), 1, "{page}");
        assert!(page.contains("<td><a class=\"samples\" href=\"#samples-1\" title=\"its raw samples\">q1</a></td>"));
        assert!(page.contains("<details id=\"samples-1\">\n<summary>q1 &lt;all forms&gt; (2 samples)</summary>"));
        assert!(page.contains("<tr><td>warm 2</td><td>2.7</td></tr>"), "{page}");
    }

    #[test]
    fn an_image_that_is_no_chart_is_left_as_it_is_and_a_page_renders_the_same_twice() {
        let page_once = page("t", "![flame](profiles/q1.svg)\n", &[], &[]);
        assert!(page_once.contains("<img src=\"profiles/q1.svg\" alt=\"flame\""), "{page_once}");
        assert!(!page_once.contains("Raw samples"), "{page_once}");
        assert_eq!(page_once, page("t", "![flame](profiles/q1.svg)\n", &[], &[]));
    }

    #[test]
    fn markup_in_a_report_is_shown_as_text_and_a_name_with_code_or_a_pipe_still_links() {
        let markdown = "Error: x <script>alert(1)</script> and a<b AND c>d\n\n<img src=x onerror=alert(2)>\n\n\
                        | query | warm |\n| --- | --- |\n| q3 `tick` | 1 ms |\n| a\\|b | 2 ms |\n";
        let samples: Vec<SampleTable> = ["q3 `tick`", "a|b"]
            .into_iter()
            .map(|key| SampleTable { key: key.to_string(), title: key.to_string(), ..samples().remove(0) })
            .collect();
        let page = page("t", markdown, &[], &samples);
        let body = &page[page.find("<main>").unwrap()..page.find("</main>").unwrap()];
        assert!(!body.contains("<script") && !body.contains("<img"), "{body}");
        assert!(body.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && body.contains("a&lt;b AND c&gt;d"), "{body}");
        assert!(body.contains("&lt;img src=x onerror=alert(2)&gt;"), "{body}");
        assert!(body.contains("href=\"#samples-1\"") && body.contains("href=\"#samples-2\""), "{body}");
    }

    #[test]
    fn only_the_first_table_with_the_header_links_to_the_samples() {
        let markdown =
            "| query | warm |\n| --- | --- |\n| q1 | 1 ms |\n\n| query | direct I/O |\n| --- | --- |\n| q1 | 9 ms |\n";
        let page = page("t", markdown, &[], &samples());
        assert_eq!(page.matches("href=\"#samples-1\"").count(), 1, "{page}");
    }

    #[test]
    fn the_page_asks_for_nothing_outside_itself() {
        let page = page("t", MARKDOWN, &[], &samples());
        for external in ["<script src", "<link", "@import", "url(", "http://", "https://"] {
            assert!(!page.contains(external), "{external} in the page");
        }
    }
}

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

use std::collections::BTreeMap;
use std::fmt::Write as _;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
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

/// The Markdown parser's events, with a chart inline for its image and a table row's
/// first cell linked to its samples.
struct Rewriter<'a, 'm> {
    parser: Parser<'m>,
    charts: &'a [(&'a str, String)],
    anchors: &'a BTreeMap<(&'a str, &'a str), String>,
    /// Events made and not yet handed out.
    ready: std::collections::VecDeque<Event<'m>>,
    /// The header of the current table's first column, once read.
    first_header: Option<String>,
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
            parser: Parser::new_ext(markdown, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH),
            charts,
            anchors,
            ready: Default::default(),
            first_header: None,
            in_head: false,
            cell: 0,
        }
    }

    /// The events up to `end`, the end itself included.
    fn until(&mut self, end: TagEnd) -> Vec<Event<'m>> {
        let mut events = Vec::new();
        for event in self.parser.by_ref() {
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

impl<'m> Iterator for Rewriter<'_, 'm> {
    type Item = Event<'m>;

    fn next(&mut self) -> Option<Event<'m>> {
        if let Some(event) = self.ready.pop_front() {
            return Some(event);
        }
        let event = self.parser.next()?;
        match &event {
            Event::Start(Tag::Image { dest_url, .. }) => {
                let Some((name, svg)) = self.charts.iter().find(|(name, _)| *name == dest_url.as_ref()) else {
                    return Some(event);
                };
                let alt = plain_text(&self.until(TagEnd::Image));
                let mut figure = format!("<figure class=\"chart\" data-chart=\"{}\">", attribute(name));
                figure.push_str(svg_without_prolog(svg));
                figure.push_str("<figcaption>");
                escape_text(&mut figure, &alt);
                figure.push_str("</figcaption></figure>");
                Some(Event::InlineHtml(figure.into()))
            }
            Event::Start(Tag::Table(_)) => {
                self.first_header = None;
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
                let mut inner = self.until(TagEnd::TableCell);
                let text = plain_text(&inner);
                if self.in_head {
                    self.first_header = Some(text);
                } else if let Some(anchor) =
                    self.first_header.as_deref().and_then(|header| self.anchors.get(&(header, text.as_str())))
                {
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
        let anchor = &anchors[&(table.linked_from.as_str(), table.key.as_str())];
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
        assert!(page.contains("<figure class=\"chart\" data-chart=\"queries.svg\"><svg width=\"10\">"), "{page}");
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
    fn the_page_asks_for_nothing_outside_itself() {
        let page = page("t", MARKDOWN, &[], &samples());
        for external in ["<script src", "<link", "@import", "url(", "http://", "https://"] {
            assert!(!page.contains(external), "{external} in the page");
        }
    }
}

//! Tables: a header and rows of the same width, rendered for reports in GitHub's plain
//! Markdown form (`| a | b |` over `| --- | --- |`), or as aligned columns of text for a
//! terminal ([`Table::aligned`]). Written here rather than with a table crate: the crates
//! pad a Markdown table's cells to align its columns, which would change every report's
//! text for no reader's gain, and the whole job is a join.

use std::fmt;

/// A table being filled row by row; `Display` renders it, header first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<Cell: Into<String>>(header: impl IntoIterator<Item = Cell>) -> Table {
        Table { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Adds a row. One with fewer cells than the header is filled with `-` (nothing
    /// measured); the header decides the width, so the two cannot drift apart.
    pub fn row<Cell: Into<String>>(&mut self, cells: impl IntoIterator<Item = Cell>) -> &mut Table {
        let mut cells: Vec<String> = cells.into_iter().map(Into::into).collect();
        debug_assert!(cells.len() <= self.header.len(), "a row wider than its header: {cells:?}");
        cells.resize(self.header.len().max(cells.len()), "-".to_string());
        self.rows.push(cells);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as columns of text aligned for a terminal, the header first, each line
    /// after `indent` and without trailing spaces.
    pub fn aligned(&self, indent: &str) -> String {
        let lines = || std::iter::once(&self.header).chain(&self.rows);
        let mut widths = vec![0; self.header.len()];
        for cells in lines() {
            for (width, cell) in widths.iter_mut().zip(cells) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut text = String::new();
        for cells in lines() {
            let line: Vec<String> = widths.iter().zip(cells).map(|(width, cell)| format!("{cell:<width$}")).collect();
            text.push_str(format!("{indent}{}", line.join(" ")).trim_end());
            text.push('\n');
        }
        text
    }
}

/// `| a | b |`. An empty header cell is `| |` and an empty row cell `|  |`, as the
/// reports wrote them before this helper, so that a report's text stays the same.
fn write_row(f: &mut fmt::Formatter<'_>, cells: &[String], header: bool) -> fmt::Result {
    f.write_str("|")?;
    for cell in cells {
        if header && cell.is_empty() {
            f.write_str(" |")?;
        } else {
            write!(f, " {} |", cell.replace('|', "\\|"))?;
        }
    }
    f.write_str("\n")
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_row(f, &self.header, true)?;
        writeln!(f, "|{}", " --- |".repeat(self.header.len()))?;
        for row in &self.rows {
            write_row(f, row, false)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_renders_its_header_rule_and_rows_at_one_width() {
        let mut table = Table::new(["", "this run", "source"]);
        table.row(["seconds", "1.5", "106.7"]).row(["parts"]).row(["q5", "", "x"]);
        assert_eq!(
            table.to_string(),
            "| | this run | source |\n| --- | --- | --- |\n| seconds | 1.5 | 106.7 |\n| parts | - | - |\n| q5 |  | x |\n"
        );
    }

    #[test]
    fn an_aligned_table_pads_each_column_to_its_widest_cell() {
        let mut table = Table::new(["column", "ratio"]);
        table.row(["message", "4.31x"]).row(["ts", ""]);
        assert_eq!(table.aligned("  "), "  column  ratio\n  message 4.31x\n  ts\n");
    }

    #[test]
    fn a_pipe_in_a_cell_does_not_split_it() {
        let mut table = Table::new(["query"]);
        table.row(["a | b"]);
        assert!(table.to_string().ends_with("| a \\| b |\n"), "{table}");
    }
}

//! SQL fixtures: the files under `fixtures/<dataset>/` that scenarios run verbatim.
//!
//! A fixture file holds one or more statements separated by `;`. Parameters are written
//! `{name}` and filled in by [`Fixture::render`]; a parameter left unfilled is an error
//! naming the file and line, so a typo never reaches the engine as SQL. Each rendered
//! [`Statement`] knows the file and line it starts on, and errors about it (the engine
//! refusing it, in a test or a benchmark) name them.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use crate::targets::Target;

/// The `fixtures/` folder of this workspace.
pub fn fixtures_root() -> PathBuf {
    crate::engine::workspace_root().join("fixtures")
}

/// One SQL file, read from disk.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub path: PathBuf,
    pub text: String,
}

impl Fixture {
    /// Reads `fixtures/<relative>`.
    pub fn load(relative: impl AsRef<Path>) -> Result<Fixture> {
        Fixture::read(&fixtures_root().join(relative))
    }

    /// Reads an SQL file anywhere.
    pub fn read(path: &Path) -> Result<Fixture> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", shown(path)))?;
        Ok(Fixture { path: path.to_path_buf(), text })
    }

    /// The file's name without `.sql`: a query's case and snapshot name.
    pub fn name(&self) -> String {
        self.path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// The statements with every `{name}` replaced by its value.
    pub fn render(&self, params: &Params) -> Result<Vec<Statement>> {
        let file = shown(&self.path);
        let mut statements = Vec::new();
        for piece in split_statements_at_lines(&self.text) {
            let sql = params.fill(&piece.text).map_err(|(offset, problem)| {
                let line = piece.first_line + piece.text[..offset].matches('\n').count();
                anyhow!("{file}:{line}: {problem}")
            })?;
            statements.push(Statement { sql, file: file.clone(), line: piece.code_line });
        }
        if statements.is_empty() {
            bail!("{file} has no statement; a fixture holds SQL statements separated by `;`");
        }
        Ok(statements)
    }

    /// The single statement of a query file.
    pub fn render_one(&self, params: &Params) -> Result<Statement> {
        let mut statements = self.render(params)?;
        if statements.len() != 1 {
            bail!(
                "{} should hold one statement, it has {} (starting at lines {}); put each query in a file of its own",
                shown(&self.path),
                statements.len(),
                statements.iter().map(|statement| statement.line.to_string()).collect::<Vec<_>>().join(", ")
            );
        }
        Ok(statements.remove(0))
    }

    /// Runs every statement in order; an error names the file, the line and the statement.
    pub fn apply(&self, target: &mut Target, params: &Params) -> Result<()> {
        for statement in self.render(params)? {
            target.execute(&statement).with_context(|| statement.location())?;
        }
        Ok(())
    }
}

/// A path as errors show it: relative to the workspace when it is inside it.
fn shown(path: &Path) -> String {
    let root = crate::engine::workspace_root();
    path.strip_prefix(&root).unwrap_or(path).display().to_string()
}

/// One statement of a fixture file, rendered, with the file and line it starts on.
/// It reads as its SQL text (`&statement` is a `&str`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub sql: String,
    /// The file as errors show it (relative to the workspace when inside it).
    pub file: String,
    /// 1-based line of the statement's first character.
    pub line: usize,
}

impl Statement {
    /// `fixtures/logs/queries/q1.sql:3`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

impl Deref for Statement {
    type Target = str;

    fn deref(&self) -> &str {
        &self.sql
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sql)
    }
}

/// SQL to run, and where it came from when it came from a file: what the measurement
/// core and EXPLAIN take, so that their errors can name the file and line.
pub trait Sql {
    fn sql(&self) -> &str;
    /// `file:line`, when the SQL came from a file.
    fn location(&self) -> Option<String> {
        None
    }
}

impl Sql for str {
    fn sql(&self) -> &str {
        self
    }
}

impl Sql for String {
    fn sql(&self) -> &str {
        self
    }
}

impl Sql for Statement {
    fn sql(&self) -> &str {
        &self.sql
    }

    fn location(&self) -> Option<String> {
        Some(Statement::location(self))
    }
}

/// Values for `{name}` placeholders.
#[derive(Debug, Clone, Default)]
pub struct Params(BTreeMap<String, String>);

impl Params {
    pub fn new() -> Params {
        Params::default()
    }

    pub fn with(mut self, name: &str, value: impl fmt::Display) -> Params {
        self.0.insert(name.to_string(), value.to_string());
        self
    }

    /// Replaces `{name}` outside string literals and comments. A `{` that opens no
    /// known identifier is an error, so unfilled parameters never reach the engine; the
    /// error comes with its byte offset in `text` and says what to do.
    fn fill(&self, text: &str) -> Result<String, (usize, String)> {
        let mut filled = String::with_capacity(text.len());
        let mut rest = text;
        let mut scanner = Scanner::default();
        while let Some(character) = rest.chars().next() {
            if character == '{' && scanner.in_code() {
                let offset = text.len() - rest.len();
                let Some(close) = rest.find('}') else {
                    return Err((offset, "a `{` without `}`; parameters are written {name}".to_string()));
                };
                let name = &rest[1..close];
                let Some(value) = self.0.get(name) else {
                    let known: Vec<&str> = self.0.keys().map(String::as_str).collect();
                    return Err((
                        offset,
                        format!(
                            "parameter {{{name}}} has no value (known here: {}); give it one \
                             (`Params::with(\"{name}\", ...)` in Rust) or write the value in the file",
                            if known.is_empty() { "none".to_string() } else { known.join(", ") }
                        ),
                    ));
                };
                filled.push_str(value);
                rest = &rest[close + 1..];
                continue;
            }
            scanner.step(rest);
            filled.push(character);
            rest = &rest[character.len_utf8()..];
        }
        Ok(filled)
    }
}

/// `text` as a single-quoted SQL string literal, backslashes and quotes escaped.
pub fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Splits SQL text into statements at `;` outside quotes and comments; drops empty ones
/// and statements that are only comments.
pub fn split_statements(text: &str) -> Vec<String> {
    split_statements_at_lines(text).into_iter().map(|piece| piece.text).collect()
}

/// One statement of a file, trimmed, with the lines it starts on.
struct Piece {
    text: String,
    /// The line of its first character (a comment before the code counts).
    first_line: usize,
    /// The line its code starts on: what errors about the statement name.
    code_line: usize,
}

/// [`split_statements`], with the 1-based lines each statement starts on.
fn split_statements_at_lines(text: &str) -> Vec<Piece> {
    let mut statements = Vec::new();
    let mut current = String::new();
    let mut first_line = None;
    let mut current_line = None;
    let mut line = 1;
    let mut scanner = Scanner::default();
    let mut rest = text;
    while let Some(character) = rest.chars().next() {
        let in_code = scanner.in_code();
        let at_boundary = character == ';' && in_code;
        let starts_code = in_code && !character.is_whitespace() && !rest.starts_with("--") && !rest.starts_with("/*");
        scanner.step(rest);
        if at_boundary {
            let code_line = current_line.take().unwrap_or(line);
            let first_line = first_line.take().unwrap_or(code_line);
            statements.push(Piece { text: std::mem::take(&mut current), first_line, code_line });
        } else {
            if starts_code && current_line.is_none() {
                current_line = Some(line);
            }
            if !character.is_whitespace() && first_line.is_none() {
                first_line = Some(line);
            }
            current.push(character);
        }
        if character == '\n' {
            line += 1;
        }
        rest = &rest[character.len_utf8()..];
    }
    let code_line = current_line.unwrap_or(line);
    statements.push(Piece { text: current, first_line: first_line.unwrap_or(code_line), code_line });
    statements
        .into_iter()
        .map(|piece| Piece { text: piece.text.trim().to_string(), ..piece })
        .filter(|piece| has_code(&piece.text))
        .collect()
}

/// Whether a statement has anything but whitespace and comments.
fn has_code(statement: &str) -> bool {
    let mut scanner = Scanner::default();
    let mut rest = statement;
    while let Some(character) = rest.chars().next() {
        let code = scanner.in_code() && !rest.starts_with("--") && !rest.starts_with("/*");
        if code && !character.is_whitespace() {
            return true;
        }
        scanner.step(rest);
        rest = &rest[character.len_utf8()..];
    }
    false
}

/// Tracks whether the scan is inside a string, a quoted identifier or a comment.
#[derive(Debug, Default)]
struct Scanner {
    state: ScanState,
    /// Set after a backslash inside a quote: the next character is escaped.
    escaped: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ScanState {
    #[default]
    Code,
    Quoted(char),
    LineComment,
    BlockComment,
    /// On the `/` that closes a block comment.
    BlockCommentEnd,
}

impl Scanner {
    fn in_code(&self) -> bool {
        self.state == ScanState::Code
    }

    /// Advances over the first character of `rest`.
    fn step(&mut self, rest: &str) {
        let Some(character) = rest.chars().next() else { return };
        self.state = match self.state {
            ScanState::Code if rest.starts_with("--") => ScanState::LineComment,
            ScanState::Code if rest.starts_with("/*") => ScanState::BlockComment,
            ScanState::Code if matches!(character, '\'' | '"' | '`') => ScanState::Quoted(character),
            ScanState::Quoted(quote) if self.escaped => {
                self.escaped = false;
                ScanState::Quoted(quote)
            }
            ScanState::Quoted(quote) if character == '\\' => {
                self.escaped = true;
                ScanState::Quoted(quote)
            }
            ScanState::Quoted(quote) if character == quote => ScanState::Code,
            ScanState::LineComment if character == '\n' => ScanState::Code,
            ScanState::BlockComment if rest.starts_with("*/") => ScanState::BlockCommentEnd,
            ScanState::BlockCommentEnd => ScanState::Code,
            state => state,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_of_comments_only_is_dropped() {
        assert_eq!(split_statements("SELECT 1; /* done */ -- really\n"), vec!["SELECT 1"]);
    }

    #[test]
    fn statements_split_outside_quotes_and_comments() {
        let text = "CREATE TABLE t (s String DEFAULT 'a;b');\n-- a comment; still a comment\nINSERT INTO t VALUES ('x\\';y'); /* c;d */ SELECT 1;\n-- trailing\n";
        assert_eq!(
            split_statements(text),
            vec![
                "CREATE TABLE t (s String DEFAULT 'a;b')",
                "-- a comment; still a comment\nINSERT INTO t VALUES ('x\\';y')",
                "/* c;d */ SELECT 1",
            ]
        );
    }

    #[test]
    fn string_literals_escape_quotes_and_backslashes() {
        assert_eq!(sql_string(r"it's a\b"), r"'it\'s a\\b'");
    }

    #[test]
    fn parameters_fill_code_but_not_strings() {
        let params = Params::new().with("rows", 1000);
        assert_eq!(params.fill("SELECT '{x}' FROM numbers({rows})").unwrap(), "SELECT '{x}' FROM numbers(1000)");
    }

    #[test]
    fn an_unfilled_parameter_is_an_error_naming_it_and_its_offset() {
        let (offset, error) = Params::new().with("rows", 1).fill("SELECT {rowz}").unwrap_err();
        assert_eq!(offset, 7);
        assert!(error.contains("{rowz} has no value (known here: rows)"), "{error}");
        assert!(error.contains("Params::with(\"rowz\""), "{error}");
    }

    #[test]
    fn statements_know_their_first_line() {
        let text = "-- header\n\nCREATE TABLE t (k UInt8);\n\n  INSERT INTO t\n  VALUES (1);\n-- tail\n";
        let lines: Vec<(usize, usize)> =
            split_statements_at_lines(text).iter().map(|piece| (piece.first_line, piece.code_line)).collect();
        // Errors name where the code starts, after comments and blank lines.
        assert_eq!(lines, [(1, 3), (5, 5)]);
    }

    #[test]
    fn a_missing_parameter_is_reported_at_its_line() {
        let fixture = Fixture {
            path: PathBuf::from("/tmp/q.sql"),
            text: "SELECT 1;\n-- a comment\nSELECT *\nFROM numbers({rowz})".to_string(),
        };
        let error = fixture.render(&Params::new()).unwrap_err().to_string();
        assert!(error.starts_with("/tmp/q.sql:4: parameter {rowz} has no value"), "{error}");
    }
}

//! SQL fixtures: the files under `fixtures/<dataset>/` that scenarios run verbatim.
//!
//! A fixture file holds one or more statements separated by `;`. Parameters are written
//! `{name}` and filled in by [`Fixture::render`]; a parameter left unfilled is an error
//! naming the file, so a typo never reaches the engine as SQL.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::target::Target;

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
        let path = fixtures_root().join(relative);
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read fixture {}", path.display()))?;
        Ok(Fixture { path, text })
    }

    /// The file's name without `.sql`: a query's case and snapshot name.
    pub fn name(&self) -> String {
        self.path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// The statements with every `{name}` replaced by its value.
    pub fn render(&self, params: &Params) -> Result<Vec<String>> {
        let text = params.fill(&self.text).with_context(|| format!("in fixture {}", self.path.display()))?;
        let statements = split_statements(&text);
        if statements.is_empty() {
            bail!("fixture {} has no statement", self.path.display());
        }
        Ok(statements)
    }

    /// The single statement of a query file.
    pub fn render_one(&self, params: &Params) -> Result<String> {
        let mut statements = self.render(params)?;
        if statements.len() != 1 {
            bail!("fixture {} should hold one statement, it has {}", self.path.display(), statements.len());
        }
        Ok(statements.remove(0))
    }

    /// Runs every statement in order; an error names the file and the statement.
    pub fn apply(&self, target: &mut Target, params: &Params) -> Result<()> {
        for statement in self.render(params)? {
            target.execute(&statement).with_context(|| format!("fixture {} failed", self.path.display()))?;
        }
        Ok(())
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
    /// known identifier is an error, so unfilled parameters never reach the engine.
    fn fill(&self, text: &str) -> Result<String> {
        let mut filled = String::with_capacity(text.len());
        let mut rest = text;
        let mut scanner = Scanner::default();
        while let Some(character) = rest.chars().next() {
            if character == '{' && scanner.in_code() {
                let close = rest.find('}').with_context(|| "a `{` without `}`")?;
                let name = &rest[1..close];
                let value = self.0.get(name).with_context(|| format!("parameter {{{name}}} has no value"))?;
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
    let mut statements = Vec::new();
    let mut current = String::new();
    let mut scanner = Scanner::default();
    let mut rest = text;
    while let Some(character) = rest.chars().next() {
        let at_boundary = character == ';' && scanner.in_code();
        scanner.step(rest);
        if at_boundary {
            statements.push(std::mem::take(&mut current));
        } else {
            current.push(character);
        }
        rest = &rest[character.len_utf8()..];
    }
    statements.push(current);
    statements
        .into_iter()
        .map(|statement| statement.trim().to_string())
        .filter(|statement| has_code(statement))
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
    fn an_unfilled_parameter_is_an_error_naming_it() {
        let error = Params::new().fill("SELECT {rowz}").unwrap_err().to_string();
        assert!(error.contains("{rowz}"), "{error}");
    }
}

//! SQL text: quoting a string literal, splitting a file into statements (outside quotes
//! and comments, with the line each starts on), shortening a statement to one line for
//! messages, the words of a statement's code, and [`Sql`], what the measurement core
//! takes. (What a pack's SQL may do is decided by the engine's parser: `guard`.)

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

/// `text` as a single-quoted SQL string literal, backslashes and quotes escaped.
pub fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// One statement of a file, trimmed, with the lines it starts on.
pub(crate) struct Piece {
    pub(crate) text: String,
    /// The line of its first character (a comment before the code counts).
    pub(crate) first_line: usize,
    /// The line its code starts on: what errors about the statement name.
    pub(crate) code_line: usize,
}

/// Splits SQL text into statements at `;` outside quotes and comments, with the 1-based
/// lines each starts on; drops empty ones and statements that are only comments.
pub(crate) fn split_statements_at_lines(text: &str) -> Vec<Piece> {
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
pub(crate) struct Scanner {
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
    pub(crate) fn in_code(&self) -> bool {
        self.state == ScanState::Code
    }

    /// Advances over the first character of `rest`.
    pub(crate) fn step(&mut self, rest: &str) {
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

/// A statement as a message quotes it: [`one_line`], past the comment lines that open it
/// (a fixture's description is not the statement).
pub fn statement_line(sql: &str) -> String {
    let code: Vec<&str> = sql
        .lines()
        .skip_while(|line| {
            let line = line.trim_start();
            line.is_empty() || line.starts_with("--")
        })
        .collect();
    if code.is_empty() { one_line(sql) } else { one_line(&code.join("\n")) }
}

/// A statement (or any text) shortened to one line for messages.
pub fn one_line(sql: &str) -> String {
    let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 160 {
        let cut: String = flat.chars().take(157).collect();
        format!("{cut}...")
    } else {
        flat
    }
}

/// The first word of a statement's code, upper-cased (`SELECT`, `WITH`, `INSERT`), past
/// comments and opening parentheses; empty when there is none.
pub fn first_keyword(sql: &str) -> String {
    let mut scanner = Scanner::default();
    let mut rest = sql;
    while let Some(character) = rest.chars().next() {
        let opens_comment = rest.starts_with("--") || rest.starts_with("/*");
        if scanner.in_code() && !opens_comment && character.is_alphabetic() {
            let word: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            return word.to_ascii_uppercase();
        }
        scanner.step(rest);
        rest = &rest[character.len_utf8()..];
    }
    String::new()
}

/// A word of a statement's code (outside strings, quoted names and comments): where it
/// starts, the character after it past whitespace, and how many parentheses are open
/// around it.
pub(crate) struct CodeWord<'a> {
    pub(crate) text: &'a str,
    pub(crate) offset: usize,
    pub(crate) next: Option<char>,
    pub(crate) depth: usize,
}

pub(crate) fn code_words(sql: &str) -> Vec<CodeWord<'_>> {
    let mut words: Vec<CodeWord> = Vec::new();
    let mut depth: usize = 0;
    let mut scanner = Scanner::default();
    let mut offset = 0;
    while let Some(character) = sql[offset..].chars().next() {
        let rest = &sql[offset..];
        let opens_comment = rest.starts_with("--") || rest.starts_with("/*");
        let in_code = scanner.in_code() && !opens_comment;
        if in_code && (character.is_alphabetic() || character == '_') {
            let length = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let next = rest[length..].chars().find(|c| !c.is_whitespace());
            words.push(CodeWord { text: &rest[..length], offset, next, depth });
            offset += length;
            continue;
        }
        if in_code && character == '(' {
            depth += 1;
        } else if in_code && character == ')' {
            depth = depth.saturating_sub(1);
        }
        scanner.step(rest);
        offset += character.len_utf8();
    }
    words
}

/// A name usable unquoted in SQL and as a `{placeholder}`: a letter or `_`, then
/// letters, digits or `_` (`rows`, `tenants_by_day_1000000`).
pub fn is_identifier(name: &str) -> bool {
    let mut characters = name.chars();
    characters.next().is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|rest| rest.is_ascii_alphanumeric() || rest == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_statements(text: &str) -> Vec<String> {
        split_statements_at_lines(text).into_iter().map(|piece| piece.text).collect()
    }

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
    fn statements_know_their_first_line() {
        let text = "-- header\n\nCREATE TABLE t (k UInt8);\n\n  INSERT INTO t\n  VALUES (1);\n-- tail\n";
        let lines: Vec<(usize, usize)> =
            split_statements_at_lines(text).iter().map(|piece| (piece.first_line, piece.code_line)).collect();
        // Errors name where the code starts, after comments and blank lines.
        assert_eq!(lines, [(1, 3), (5, 5)]);
    }

    #[test]
    fn long_statements_are_shortened_to_one_line() {
        assert_eq!(one_line("SELECT 1\n  FROM t"), "SELECT 1 FROM t");
        assert_eq!(
            statement_line("-- Loads the data.\n--\n\nINSERT INTO hits\n  SELECT 1"),
            "INSERT INTO hits SELECT 1"
        );
        assert_eq!(statement_line("-- only a comment"), "-- only a comment");
        // Other text keeps its first line, whatever it starts with.
        assert_eq!(one_line("--hits-file x: bad\nmore"), "--hits-file x: bad more");
        let long = "x ".repeat(200);
        assert!(one_line(&long).ends_with("...") && one_line(&long).chars().count() == 160);
    }
}

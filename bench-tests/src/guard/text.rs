//! What the guard reads from a statement's text rather than its tree: the names of its
//! code and of the settings it sets, a string literal of the tree dump unquoted, and the
//! line a name stands on (for a refusal's file and line).

use crate::sql::{Scanner, code_words};

/// A string literal as the tree dump writes it (`'it\'s'`), unquoted; `None` for any
/// other literal (a number, a tuple).
pub(super) fn unquoted_literal(text: &str) -> Option<String> {
    let mut characters = text.strip_prefix('\'')?.chars();
    let mut value = String::new();
    while let Some(character) = characters.next() {
        match character {
            '\'' => return Some(value),
            '\\' => match characters.next()? {
                'n' => value.push('\n'),
                't' => value.push('\t'),
                'r' => value.push('\r'),
                '0' => value.push('\0'),
                'b' => value.push('\u{8}'),
                'f' => value.push('\u{c}'),
                'x' => {
                    let hex: String = characters.by_ref().take(2).collect();
                    value.push(char::from(u8::from_str_radix(&hex, 16).ok()?));
                }
                other => value.push(other),
            },
            other => value.push(other),
        }
    }
    None
}

/// The names of a canonical statement's code, unquoted, with the character right after
/// each: its words and its `\`quoted\`` or `"quoted"` names.
pub(super) fn names_of(canonical: &str) -> Vec<(String, Option<char>)> {
    let mut names = Vec::new();
    let mut scanner = Scanner::default();
    let mut offset = 0;
    while let Some(character) = canonical[offset..].chars().next() {
        let rest = &canonical[offset..];
        if scanner.in_code() {
            let name = match character {
                '`' | '"' => rest[1..].find(character).map(|end| (rest[1..=end].to_string(), end + 2)),
                c if c.is_alphabetic() || c == '_' => {
                    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
                    Some((rest[..end].to_string(), end))
                }
                _ => None,
            };
            if let Some((name, length)) = name {
                names.push((name, rest[length..].chars().next()));
                offset += length;
                continue;
            }
        }
        scanner.step(rest);
        offset += character.len_utf8();
    }
    names
}

/// The names of the settings a canonical statement sets: each `name =` that follows
/// `SETTINGS` (or opens a `SET` statement) at the same level of parentheses, up to the
/// next part of the query.
pub(super) fn setting_names(canonical: &str) -> Vec<String> {
    let words = code_words(canonical);
    let mut names = Vec::new();
    let mut list_depth: Option<usize> = match words.first() {
        Some(first) if first.text == "SET" => Some(first.depth),
        _ => None,
    };
    for word in &words {
        // `SETTINGS a = 1`, `MODIFY SETTING a = 1`, a column's `SETTINGS (a = 1)`.
        if word.text == "SETTINGS" || word.text == "SETTING" {
            list_depth = Some(word.depth + usize::from(word.next == Some('(')));
            continue;
        }
        let Some(depth) = list_depth else { continue };
        let next_clause = matches!(word.text, "UNION" | "EXCEPT" | "INTERSECT" | "FORMAT" | "INTO" | "SELECT");
        if word.depth < depth || (word.depth == depth && next_clause) {
            list_depth = None;
        } else if word.depth == depth && word.next == Some('=') {
            names.push(word.text.to_string());
        }
    }
    names
}

/// Lines between a statement's first line of code and the first place `name` stands in
/// it, as a word of code or a quoted name (preferring one followed by `(`, a call); 0 when
/// it is not found.
pub(super) fn lines_into_code(sql: &str, name: &str) -> usize {
    let mut places: Vec<(usize, bool)> = Vec::new();
    let mut scanner = Scanner::default();
    let mut code_start = None;
    let mut offset = 0;
    while let Some(character) = sql[offset..].chars().next() {
        let rest = &sql[offset..];
        let opens_comment = rest.starts_with("--") || rest.starts_with("/*");
        if scanner.in_code() && !opens_comment {
            if code_start.is_none() && !character.is_whitespace() {
                code_start = Some(offset);
            }
            let candidate = match character {
                '`' | '"' => rest[1..].find(character).map(|end| (&rest[1..=end], end + 2)),
                c if c.is_alphabetic() || c == '_' => {
                    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
                    Some((&rest[..end], end))
                }
                _ => None,
            };
            if let Some((word, length)) = candidate {
                if word.eq_ignore_ascii_case(name) {
                    let after = skip_space_and_comments(&rest[length..]);
                    places.push((offset, after.starts_with('(')));
                }
                if !matches!(character, '`' | '"') {
                    offset += length;
                    continue;
                }
            }
        }
        scanner.step(rest);
        offset += character.len_utf8();
    }
    let place = places.iter().find(|(_, call)| *call).or(places.first()).map(|(place, _)| *place);
    match (place, code_start) {
        (Some(place), Some(start)) if place >= start => sql[start..place].matches('\n').count(),
        _ => 0,
    }
}

/// `text` past leading whitespace and comments.
pub(super) fn skip_space_and_comments(mut text: &str) -> &str {
    loop {
        let trimmed = text.trim_start();
        if let Some(comment) = trimmed.strip_prefix("--") {
            text = comment.split_once('\n').map_or("", |(_, rest)| rest);
        } else if let Some(comment) = trimmed.strip_prefix("/*") {
            text = comment.split_once("*/").map_or("", |(_, rest)| rest);
        } else {
            return trimmed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_literal_of_the_dump_is_unquoted() {
        assert_eq!(
            unquoted_literal(r"'x String, y String ALIAS file(\'/tmp/a\\b\')'").as_deref(),
            Some(r"x String, y String ALIAS file('/tmp/a\b')")
        );
        assert_eq!(unquoted_literal("'a\\nb' (alias c)").as_deref(), Some("a\nb"));
        assert_eq!(unquoted_literal("UInt64_1"), None);
    }

    #[test]
    fn settings_are_read_at_their_own_level() {
        assert_eq!(
            setting_names(
                "CREATE TABLE t (`x` Int8) ENGINE = MergeTree ORDER BY x SETTINGS disk = disk(type = local, path = \
                 '/tmp/x/'), index_granularity = 8"
            ),
            ["disk", "index_granularity"]
        );
        assert_eq!(setting_names("SELECT count() FROM t WHERE disk = 1 SETTINGS max_threads = 1"), ["max_threads"]);
        assert_eq!(setting_names("SET use_query_cache = 1, max_threads = 2"), ["use_query_cache", "max_threads"]);
    }

    #[test]
    fn a_name_is_found_at_its_line_past_comments_and_quotes() {
        let sql = "SELECT file\nFROM t\nWHERE x IN (SELECT 1 FROM `file` /* c */\n ('/etc/passwd'))";
        assert_eq!(lines_into_code(sql, "file"), 2);
        assert_eq!(lines_into_code("-- file(\nSELECT 1\nINTO OUTFILE 'x'", "outfile"), 1);
        assert_eq!(lines_into_code("SELECT 1", "nowhere"), 0);
    }
}

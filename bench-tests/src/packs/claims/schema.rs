//! The names a design's `CREATE TABLE` declares (its table, columns and skip indexes),
//! read from the SQL text without an engine, so that a claim naming a column or an index
//! the design does not have is refused on load, at its line, with the names there are.

/// What one design's `CREATE TABLE` declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredTable {
    pub table: String,
    pub columns: Vec<String>,
    pub skip_indexes: Vec<String>,
}

/// The first `CREATE TABLE` of `statements` with a column list; `None` when there is
/// none (`CREATE TABLE t AS other`, or no CREATE TABLE), where names cannot be checked.
pub fn declared_table<'a>(statements: impl IntoIterator<Item = &'a str>) -> Option<DeclaredTable> {
    statements.into_iter().find_map(parse_create_table)
}

fn parse_create_table(sql: &str) -> Option<DeclaredTable> {
    let code = code_only(sql);
    if !code.split_whitespace().next()?.eq_ignore_ascii_case("CREATE") {
        return None;
    }
    let open = code.find('(')?;
    let head: Vec<&str> = code[..open].split_whitespace().collect();
    // CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name (: with anything else before the
    // first parenthesis (AS other, ENGINE = ... AS SELECT) it opens no column list.
    let table_at = head.iter().position(|word| word.eq_ignore_ascii_case("TABLE"))?;
    let after: Vec<String> = head[table_at + 1..].iter().map(|word| word.to_ascii_uppercase()).collect();
    let name = match after.as_slice() {
        [_] => head[table_at + 1],
        [if_, not, exists, _] if (if_.as_str(), not.as_str(), exists.as_str()) == ("IF", "NOT", "EXISTS") => {
            head[table_at + 4]
        }
        _ => return None,
    };
    let table = unquoted(name);
    let table = table.rsplit('.').next().unwrap_or(&table).to_string();
    let close = matching_close(&code, open)?;
    let mut declared = DeclaredTable { table, columns: Vec::new(), skip_indexes: Vec::new() };
    for element in split_top_level(&code[open + 1..close]) {
        let mut words = element.split_whitespace();
        let Some(first) = words.next() else { continue };
        match first.to_ascii_uppercase().as_str() {
            // `INDEX jx(j) TYPE minmax`: the name ends at its expression's parenthesis too.
            "INDEX" => declared.skip_indexes.extend(words.next().map(|name| unquoted(index_name(name)))),
            "PROJECTION" | "CONSTRAINT" | "PRIMARY" => {}
            _ => declared.columns.push(unquoted(first)),
        }
    }
    Some(declared)
}

/// `sql` with comments and the text of string literals blanked, so that parentheses,
/// commas and words are those of the code; quoted identifiers keep their text and quotes.
fn code_only(sql: &str) -> String {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        Quoted(char),
        LineComment,
        BlockComment,
    }
    let mut state = State::Code;
    let mut code = String::with_capacity(sql.len());
    let mut characters = sql.chars().peekable();
    while let Some(character) = characters.next() {
        let next = characters.peek().copied();
        let (shown, after) = match (state, character) {
            (State::Code, '-') if next == Some('-') => (' ', State::LineComment),
            (State::Code, '/') if next == Some('*') => (' ', State::BlockComment),
            (State::Code, '\'' | '`' | '"') => (character, State::Quoted(character)),
            (State::Code, _) => (character, State::Code),
            (State::Quoted(quote), '\\') => {
                // An escaped character stays inside the quotes.
                characters.next();
                (if quote == '\'' { ' ' } else { character }, state)
            }
            (State::Quoted(quote), _) if character == quote => (character, State::Code),
            (State::Quoted('\''), _) => (' ', state),
            (State::Quoted(_), _) => (character, state),
            (State::LineComment, '\n') => ('\n', State::Code),
            (State::BlockComment, '*') if next == Some('/') => {
                characters.next();
                (' ', State::Code)
            }
            (State::LineComment | State::BlockComment, _) => (' ', state),
        };
        code.push(shown);
        state = after;
    }
    code
}

/// The index of the `)` that closes the `(` at `open`.
fn matching_close(code: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote = None;
    for (index, character) in code[open..].char_indices() {
        match (quote, character) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '`' | '"') => quote = Some(character),
            (None, '(') => depth += 1,
            (None, ')') => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + index);
                }
            }
            _ => {}
        }
    }
    None
}

/// The elements of a column list: split at commas outside parentheses and quotes.
fn split_top_level(list: &str) -> Vec<&str> {
    let (mut elements, mut depth, mut start, mut quote) = (Vec::new(), 0i32, 0, None);
    for (index, character) in list.char_indices() {
        match (quote, character) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '`' | '"') => quote = Some(character),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, ',') if depth == 0 => {
                elements.push(list[start..index].trim());
                start = index + 1;
            }
            _ => {}
        }
    }
    elements.push(list[start..].trim());
    elements.into_iter().filter(|element| !element.is_empty()).collect()
}

/// The name in the word after `INDEX`: up to the parenthesis of its expression when no
/// space stands between them (`jx(j)`), a quoted name whole.
fn index_name(word: &str) -> &str {
    match word.chars().next() {
        Some(quote @ ('`' | '"')) => word[1..].find(quote).map_or(word, |end| &word[..end + 2]),
        _ => word.split('(').next().unwrap_or(word),
    }
}

/// A name without its quotes: `` `Body` `` and `"Body"` are `Body`.
fn unquoted(name: &str) -> String {
    name.trim_matches(|c| c == '`' || c == '"').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_skip_indexes_of_a_create_table() {
        let sql = "-- the source's table\nCREATE TABLE IF NOT EXISTS db.logs\n(\n  timestamp DateTime64(3), -- ms, (sic)\n  \
                   `Body` String DEFAULT 'a, (b',\n  m Map(String, UInt8),\n  \
                   INDEX trace_bf trace_id TYPE bloom_filter(0.01) GRANULARITY 4,\n  \
                   INDEX jx(m) TYPE minmax, INDEX `qx`(m) TYPE set(0),\n  \
                   PROJECTION p (SELECT count() GROUP BY m),\n  CONSTRAINT c CHECK timestamp > 0\n)\n\
                   ENGINE = MergeTree ORDER BY (timestamp)";
        assert_eq!(
            declared_table([sql]),
            Some(DeclaredTable {
                table: "logs".into(),
                columns: vec!["timestamp".into(), "Body".into(), "m".into()],
                skip_indexes: vec!["trace_bf".into(), "jx".into(), "qx".into()],
            })
        );
        assert_eq!(declared_table(["CREATE TABLE t AS other", "INSERT INTO t SELECT 1"]), None);
        assert_eq!(declared_table(["CREATE TABLE t ENGINE = MergeTree ORDER BY tuple() AS SELECT 1 AS x"]), None);
    }
}

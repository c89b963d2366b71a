//! SQL fixtures: the files under `fixtures/<dataset>/` that scenarios run verbatim.
//!
//! A fixture file holds one or more statements separated by `;`. Parameters are written
//! `{name}` and filled in by [`Fixture::render`]; a parameter left unfilled is an error
//! naming the file and line, so a typo never reaches the engine as SQL. Each rendered
//! [`Statement`] knows the file and line it starts on, and errors about it (the engine
//! refusing it, in a test or a benchmark) name them.
//!
//! A dataset's statements must give the same rows every time they run (every design of a
//! pack, every rebuild): [`Fixture::render_dataset`] refuses a call that draws random
//! values or reads the clock ([`NON_DETERMINISTIC`]), naming its file and line.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use crate::files::{fixtures_root, not_own_plain_file, shown};
use crate::sql::{Scanner, Sql, is_identifier, split_statements_at_lines};
use crate::targets::Target;

/// One SQL file, read from disk.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub path: PathBuf,
    pub text: String,
}

impl Fixture {
    /// Reads `fixtures/<relative>`: a plain file of `fixtures/`, not a link (a pull request
    /// may change these files as it may a pack's, and a link could point at any file of the
    /// host, which the run would copy into its bundle and quote in its errors).
    pub fn load(relative: impl AsRef<Path>) -> Result<Fixture> {
        let path = fixtures_root().join(relative);
        if let Some(problem) = not_own_plain_file(&fixtures_root(), &path) {
            bail!("{} {problem}; the SQL files a benchmark runs are plain files of fixtures/", shown(&path));
        }
        Fixture::read(&path)
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

    /// [`Fixture::render`] for the statements that build a dataset (a schema, a
    /// generator): a call to a function of [`NON_DETERMINISTIC`], or `generateRandom`
    /// without its seed, is an error naming its file and line and what to write instead.
    pub fn render_dataset(&self, params: &Params) -> Result<Vec<Statement>> {
        let file = shown(&self.path);
        for piece in split_statements_at_lines(&self.text) {
            if let Some((offset, call)) = non_deterministic_call(&piece.text) {
                let line = piece.first_line + piece.text[..offset].matches('\n').count();
                bail!(
                    "{file}:{line}: {call} gives other values on every run, so every design and every rebuild of \
                     the dataset gets other rows; derive the value from `number` instead (e.g. `cityHash64(number) \
                     % 100`, or generateRandom with a seed): see docs/packs.md, \"Generators must be deterministic\""
                );
            }
        }
        self.render(params)
    }

    /// The single statement of a query file.
    pub fn render_one(&self, params: &Params) -> Result<Statement> {
        if split_statements_at_lines(&self.text).is_empty() {
            bail!("{} holds no statement; put one query in it", shown(&self.path));
        }
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
            crate::interrupt::check()?;
            target.execute(&statement).with_context(|| statement.location())?;
        }
        Ok(())
    }
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
pub struct Params {
    values: BTreeMap<String, String>,
    /// The command that renders files with no values at all (`cargo xtask measure`), for
    /// the error: its user writes SQL, not the code that gives values.
    filled_by_none: Option<String>,
}

impl Params {
    pub fn new() -> Params {
        Params::default()
    }

    /// No values, for the files of `command`, which fills no placeholders: one left in a
    /// file is an error that says so, and to write the value instead.
    pub fn none_for(command: &str) -> Params {
        Params { values: BTreeMap::new(), filled_by_none: Some(command.to_string()) }
    }

    pub fn with(mut self, name: &str, value: impl fmt::Display) -> Params {
        self.values.insert(name.to_string(), value.to_string());
        self
    }

    /// The value of `{name}`, if it has one.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Replaces `{name}` outside string literals and comments. A `{` that opens no
    /// known identifier is an error, so unfilled parameters never reach the engine; the
    /// error comes with its byte offset in `text` and says what to do.
    fn fill(&self, text: &str) -> Result<String, (usize, String)> {
        let mut filled = String::with_capacity(text.len());
        let mut rest = text;
        let mut scanner = Scanner::default();
        while let Some(character) = rest.chars().next() {
            // Only `{identifier}` is a placeholder: ClickHouse's own braces (map literals
            // `{'k': 1}`, query parameters `{name:Type}`) stay as written.
            let placeholder = (character == '{' && scanner.in_code())
                .then(|| rest.find('}').map(|close| (close, &rest[1..close])))
                .flatten()
                .filter(|(_, name)| is_identifier(name));
            if let Some((close, name)) = placeholder {
                let offset = text.len() - rest.len();
                let Some(value) = self.values.get(name) else {
                    if let Some(command) = &self.filled_by_none {
                        return Err((
                            offset,
                            format!(
                                "parameter {{{name}}} has no value: {command} fills no placeholders; write the value \
                                 in the file"
                            ),
                        ));
                    }
                    let known: Vec<&str> = self.values.keys().map(String::as_str).collect();
                    // A typo of a known name is the likeliest cause: say which.
                    let close = known.iter().find(|known| strsim::damerau_levenshtein(known, name) <= 2);
                    let suggestion = close.map(|known| format!("; did you mean {{{known}}}?")).unwrap_or_default();
                    return Err((
                        offset,
                        format!(
                            "parameter {{{name}}} has no value (known here: {}{suggestion}); write the value in the \
                             file, or give it one from Rust with `Params::with(\"{name}\", ...)`",
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

/// Functions whose value differs from one run of a statement to the next: random
/// draws, shuffles, generated ids, the clock (with their aliases). Matched whatever the
/// case, as a call (`name(`) outside strings and comments.
pub const NON_DETERMINISTIC: &[&str] = &[
    "rand",
    "rand32",
    "rand64",
    "randCanonical",
    "randConstant",
    "randUniform",
    "randNormal",
    "randLogNormal",
    "randExponential",
    "randChiSquared",
    "randStudentT",
    "randFisherF",
    "randBernoulli",
    "randBinomial",
    "randNegativeBinomial",
    "randPoisson",
    "randomString",
    "randomFixedString",
    "randomPrintableASCII",
    "randomStringUTF8",
    "fuzzBits",
    "arrayShuffle",
    "arrayPartialShuffle",
    "arrayRandomSample",
    "generateRandomStructure",
    "generateUUIDv4",
    "generateUUIDv7",
    "generateSnowflakeID",
    "generateSerialID",
    "now",
    "now64",
    "nowInBlock",
    "nowInBlock64",
    "today",
    "yesterday",
    "UTCTimestamp",
    "UTC_timestamp",
    "current_timestamp",
    "localtimestamp",
    "localtime",
    "curdate",
    "current_date",
];

/// The first call in `text` whose value differs between runs, with its byte offset and
/// how a message names it (`rand()`, `generateRandom without a seed`). Words are read as
/// `sql::code_words` reads them (outside strings, quoted names and comments); a name
/// after a `.` is a member, not a function, and one right after a digit is no name.
fn non_deterministic_call(text: &str) -> Option<(usize, String)> {
    for word in crate::sql::code_words(text) {
        if word.next != Some('(') || text[..word.offset].ends_with(|c: char| c == '.' || c.is_alphanumeric()) {
            continue;
        }
        if NON_DETERMINISTIC.iter().any(|name| name.eq_ignore_ascii_case(word.text)) {
            return Some((word.offset, format!("{}()", word.text)));
        }
        // The table function draws from a random seed unless given one (its second argument).
        let after = text[word.offset + word.text.len()..].trim_start();
        if word.text.eq_ignore_ascii_case("generateRandom")
            && after.strip_prefix('(').is_some_and(|arguments| top_level_arguments(arguments) < 2)
        {
            return Some((word.offset, format!("{} without a seed", word.text)));
        }
    }
    None
}

/// How many arguments a call has, `text` starting after its `(`: commas outside nested
/// parentheses, brackets, strings and comments, up to the closing `)`.
fn top_level_arguments(text: &str) -> usize {
    let mut scanner = Scanner::default();
    let (mut depth, mut commas, mut any) = (0usize, 0, false);
    for (offset, character) in text.char_indices() {
        if scanner.in_code() && !text[offset..].starts_with("--") && !text[offset..].starts_with("/*") {
            match character {
                '(' | '[' => depth += 1,
                ')' | ']' if depth == 0 => break,
                ')' | ']' => depth -= 1,
                ',' if depth == 0 => commas += 1,
                _ => {}
            }
            any |= !character.is_whitespace();
        }
        scanner.step(&text[offset..]);
    }
    if any { commas + 1 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A benchmark's SQL is a plain file of fixtures/: a link there (to a host file, which
    /// the run would copy into its bundle and quote in its errors) and a path that leaves
    /// fixtures/ are refused before anything is read.
    #[test]
    fn a_fixture_is_a_plain_file_of_fixtures() {
        let refused = |relative: &str| format!("{:#}", Fixture::load(relative).unwrap_err());
        let outside = refused("../Cargo.toml");
        assert!(
            outside.ends_with(
                "Cargo.toml lies outside its folder; the SQL files a benchmark runs are plain files of fixtures/"
            ),
            "{outside}"
        );
        assert!(refused("logs/queries").contains("is not a plain file"));
        // A link made for this test alone, removed when it ends however it ends.
        struct Removed(PathBuf);
        impl Drop for Removed {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
        let name = format!(".link-test-{}.sql", std::process::id());
        let link = Removed(fixtures_root().join(&name));
        std::os::unix::fs::symlink(fixtures_root().join("logs/queries/q1.sql"), &link.0).unwrap();
        let linked = refused(&name);
        assert!(linked.contains("is a symbolic link"), "{linked}");
        assert!(!linked.contains("SELECT"), "the link's target is never quoted: {linked}");
        assert!(Fixture::load("logs/queries/q1.sql").is_ok());
    }

    #[test]
    fn a_dataset_statement_that_draws_random_values_is_refused_at_its_line() {
        let fixture = Fixture {
            path: PathBuf::from("/tmp/generator.sql"),
            text: "-- rows\nCREATE TABLE t (k UInt64) ENGINE = Memory;\n\nINSERT INTO t\nSELECT number,\n  \
                   rand64() % 10\nFROM numbers({rows})"
                .to_string(),
        };
        let params = Params::new().with("rows", 10);
        let error = fixture.render_dataset(&params).unwrap_err().to_string();
        assert!(error.starts_with("/tmp/generator.sql:6: rand64() gives other values on every run"), "{error}");
        assert!(error.contains("derive the value from `number`"), "{error}");
        // The same file as a query's is not a dataset's: no check.
        assert_eq!(fixture.render(&params).unwrap().len(), 2);
    }

    #[test]
    fn only_calls_in_code_of_functions_that_vary_are_caught() {
        let caught = |text: &str| non_deterministic_call(text).map(|(_, call)| call);
        assert_eq!(caught("SELECT NOW()"), Some("NOW()".to_string()));
        assert_eq!(caught("SELECT toDate(today ())"), Some("today()".to_string()));
        assert_eq!(caught("SELECT generateUUIDv4() AS id"), Some("generateUUIDv4()".to_string()));
        assert_eq!(caught("SELECT * FROM generateRandom('a UInt8')"), Some("generateRandom without a seed".into()));
        assert_eq!(
            caught("INSERT INTO t SELECT * FROM generateRandom()"),
            Some("generateRandom without a seed".into())
        );
        for deterministic in [
            "SELECT * FROM generateRandom('a UInt8, b Array(UInt8)', 42) LIMIT 10",
            "SELECT cityHash64(number) % 10, operand, now_ms FROM numbers(10)",
            "SELECT 'rand()' -- now()\n/* rand64() */",
            "SELECT t.now(), randomness(1), my_rand(2) FROM t",
            "SELECT today FROM t",
        ] {
            assert_eq!(caught(deterministic), None, "{deterministic}");
        }
    }

    #[test]
    fn clickhouse_braces_are_not_placeholders() {
        let params = Params::new().with("rows", 10);
        let text = "SELECT {'k': 1}, {x:UInt32}, '{' FROM numbers({rows}) WHERE { 1 }";
        assert_eq!(params.fill(text).unwrap(), "SELECT {'k': 1}, {x:UInt32}, '{' FROM numbers(10) WHERE { 1 }");
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
        assert!(error.contains("{rowz} has no value (known here: rows; did you mean {rows}?)"), "{error}");
        assert!(error.contains("Params::with(\"rowz\""), "{error}");
    }

    #[test]
    fn a_missing_parameter_is_reported_at_its_line() {
        let fixture = Fixture {
            path: PathBuf::from("/tmp/q.sql"),
            text: "SELECT 1;\n-- a comment\nSELECT *\nFROM numbers({rowz})".to_string(),
        };
        let error = fixture.render(&Params::new()).unwrap_err().to_string();
        assert!(error.starts_with("/tmp/q.sql:4: parameter {rowz} has no value"), "{error}");
        // A command that fills none says so, and what to do, rather than how code gives one.
        let error = fixture.render(&Params::none_for("cargo xtask measure")).unwrap_err().to_string();
        assert_eq!(
            error,
            "/tmp/q.sql:4: parameter {rowz} has no value: cargo xtask measure fills no placeholders; write the value \
             in the file"
        );
    }
}

//! The pack guard: what a scenario pack's SQL may do, decided by the engine's own parser
//! before any of it runs.
//!
//! A pack is SQL from outside the tool (a pull request's pack is as untrusted as its
//! queries), and the engine's `readonly` mode is no guard: the embedded engine with
//! `readonly = 2` still writes `INTO OUTFILE` and `INSERT INTO FUNCTION file(...)` and
//! reads `file(...)`. So every statement of a pack is parsed by the target's engine first,
//! in two steps that run nothing:
//!
//! 1. `formatQuerySingleLine('<statement>')`: the statement goes in as a string literal,
//!    so no text of it can close the literal; the engine parses it as exactly one query
//!    (a syntax error or a second statement fails here) and prints it back canonically
//!    (comments gone, quoting and keywords normalised);
//! 2. `EXPLAIN AST <canonical>`: the engine's syntax tree. `EXPLAIN AST` parses its query
//!    with the full query parser, which takes every output clause of a query that parsed
//!    whole on its own, so nothing is left over for the `EXPLAIN` itself (an `INTO
//!    OUTFILE` shows in the tree as a literal under the query; it is not written).
//!
//! The tree decides: the statement's kind, every function call and where it stands (a
//! table function, a table engine, a scalar), `INTO OUTFILE` and `FROM INFILE`, inline
//! `VALUES` data (which the parser leaves unparsed, so it is refused), each `ALTER`
//! command. What the tree dump leaves out (the names in a `SETTINGS` list, a `SYSTEM`
//! statement's action) is read from the engine's canonical text in step 1. A refusal is
//! one line at the statement's file and line (the line of the name at fault where it can
//! be found in the text, else the statement's first line of code).
//!
//! Here the checks; [`tree`] parses, [`refusals`] decides, [`text`] reads the names and
//! lines the tree does not give.

mod refusals;
mod text;
mod tree;

use anyhow::{Context, Result, bail};

use self::refusals::{computed_structure_refusal, identifier_refusal, refusal, structures};
use self::text::lines_into_code;
use self::tree::Parsed;
use crate::fixtures::Statement;
use crate::sql::sql_string;
use crate::targets::Target;

/// What a pack's statement is for, which decides what it may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A query a case measures: one SELECT that reads.
    Query,
    /// A design's or a generator's statement: builds and fills the pack's tables.
    Dataset,
}

/// Database engines whose tables are the engine's own; a database of another engine
/// (libchdb's `default` is an `Overlay` over the host's files: `default.\`/etc/hostname\``
/// reads that file) may not be named.
const LOCAL_DATABASE_ENGINES: &[&str] = &["Atomic", "Ordinary", "Memory", "Lazy", "Replicated"];

/// Databases the engine has of its own before anything runs: libchdb's `default` (an
/// `Overlay` over the host's files, where an unqualified name such as `Cargo.toml` is a
/// file of the working folder) and the catalogues. A pack's tables never go in one: its
/// name is refused (`packs`), and so is a guarded dataset's database ([`check_database`]).
pub const ENGINE_DATABASES: &[&str] = &["default", "system", "information_schema", "INFORMATION_SCHEMA"];

/// Refuses `database` as the one a guarded dataset's statements and queries run in when
/// it is one of the engine's own, or exists with an engine that is not a local one, in one
/// line naming it and `dataset`.
pub fn check_database(target: &mut Target, database: &str, dataset: &str) -> Result<()> {
    #[derive(serde::Deserialize)]
    struct Engine {
        engine: String,
    }
    let existing = target
        .query_rows::<Engine>(&format!("SELECT engine FROM system.databases WHERE name = {}", sql_string(database)))
        .context("cannot list the engine's databases for the pack guard")?;
    let outside = existing.iter().find(|found| !LOCAL_DATABASE_ENGINES.contains(&found.engine.as_str()));
    if ENGINE_DATABASES.contains(&database) || outside.is_some() {
        let engine = outside.map(|found| format!(", engine {}", found.engine)).unwrap_or_default();
        bail!(
            "dataset {dataset}: its statements would run in database `{database}`, the engine's own{engine}, where an \
             unqualified name may reach the host's files or the engine's catalogue; a pack's tables go in a \
             database of their own: rename the pack"
        );
    }
    Ok(())
}

/// Checks every statement in order, each by the engine's parser: those that build and fill
/// the tables (`dataset`: a design's, a generator's), then those measured (`queries`, one
/// SELECT each); the first refused is the error, one line at its file and line. Nothing
/// but the two parsing statements runs.
pub fn check_statements(target: &mut Target, dataset: &[Statement], queries: &[Statement]) -> Result<()> {
    if dataset.is_empty() && queries.is_empty() {
        return Ok(());
    }
    #[derive(serde::Deserialize)]
    struct Database {
        name: String,
    }
    let engines = LOCAL_DATABASE_ENGINES.iter().map(|engine| sql_string(engine)).collect::<Vec<_>>().join(", ");
    let outside_databases: Vec<String> = target
        .query_rows::<Database>(&format!("SELECT name FROM system.databases WHERE engine NOT IN ({engines})"))
        .context("cannot list the engine's databases for the pack guard")?
        .into_iter()
        .map(|database| database.name)
        .collect();
    let roles = dataset.iter().map(|statement| (statement, Role::Dataset));
    for (statement, role) in roles.chain(queries.iter().map(|statement| (statement, Role::Query))) {
        check(target, statement, role, &outside_databases)?;
    }
    Ok(())
}

/// Checks one statement by the engine's parser (see the module's docs);
/// `outside_databases` are the databases of engines not the engine's own.
fn check(target: &mut Target, statement: &Statement, role: Role, outside_databases: &[String]) -> Result<()> {
    let parsed = Parsed::of(target, statement)?;
    let refused = refusal(&parsed, role).or_else(|| identifier_refusal(&parsed, outside_databases));
    if let Some(refusal) = refused {
        let line = statement.line + refusal.at.as_deref().map_or(0, |name| lines_into_code(&statement.sql, name));
        bail!("{}:{line}: {}", statement.file, refusal.problem);
    }
    // A structure given as text (`values('x String, y String ALIAS file(...)', ...)`,
    // generateRandom's, null's) is a column list the engine parses later, with
    // expressions the tree shows as one literal: each is checked as the column list of
    // a table of its own. Text that is no column list is no structure, and carries none.
    if let Some(refusal) = computed_structure_refusal(&parsed) {
        let line = statement.line + refusal.at.as_deref().map_or(0, |name| lines_into_code(&statement.sql, name));
        bail!("{}:{line}: {}", statement.file, refusal.problem);
    }
    for structure in structures(&parsed) {
        let columns =
            Statement { sql: format!("CREATE TABLE structure ({structure}) ENGINE = Memory"), ..statement.clone() };
        let Ok(parsed) = Parsed::of(target, &columns) else { continue };
        if let Some(refusal) =
            refusal(&parsed, Role::Dataset).or_else(|| identifier_refusal(&parsed, outside_databases))
        {
            let line = statement.line + refusal.at.as_deref().map_or(0, |name| lines_into_code(&statement.sql, name));
            bail!("{}:{line}: in the structure of a table function: {}", statement.file, refusal.problem);
        }
    }
    Ok(())
}

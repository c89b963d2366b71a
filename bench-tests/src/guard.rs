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

use anyhow::{Context, Result, anyhow, bail};

use crate::fixtures::Statement;
use crate::settings::Settings;
use crate::sql::{Scanner, code_words, sql_string, statement_line};
use crate::targets::Target;

/// What a pack's statement is for, which decides what it may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A query a case measures: one SELECT that reads.
    Query,
    /// A design's or a generator's statement: builds and fills the pack's tables.
    Dataset,
}

/// Functions that reach the host's files, the network, another server or a program,
/// wherever they stand (`file('/etc/passwd')` reads the host even as a scalar). Lower case.
const OUTSIDE_FUNCTIONS: &[&str] = &[
    "file",
    "filecluster",
    "url",
    "urlcluster",
    "s3",
    "s3cluster",
    "gcs",
    "oss",
    "cosn",
    "hdfs",
    "hdfscluster",
    "remote",
    "remotesecure",
    "cluster",
    "clusterallreplicas",
    "mysql",
    "postgresql",
    "sqlite",
    "mongodb",
    "redis",
    "jdbc",
    "odbc",
    "executable",
    "executablepool",
    "input",
    "arrowflight",
    "ytsaurus",
    "kafka",
    "nats",
    "rabbitmq",
    "catboostevaluate",
    "dictionary",
    "hascolumnintable",
    "showcertificate",
    "getserversetting",
];

/// Prefixes of the functions that read a dictionary or a table named in a string
/// (`dictGet('db.d', ...)`, `joinGet('db.t', ...)`), which the tree shows as a literal, and
/// of the AI functions (`aiGenerate`, `aiEmbed`), which call a model's endpoint, and the
/// classifiers that load a model the server names (`naiveBayesClassifier`, and its
/// `...WithProb`). Lower case.
const NAMED_TABLE_PREFIXES: &[&str] = &["dict", "joinget", "ai", "naivebayesclassifier"];

/// The table functions a pack may read from: they make rows from their arguments alone.
/// Lower case.
const GENERATING_TABLE_FUNCTIONS: &[&str] = &[
    "numbers",
    "numbers_mt",
    "primes",
    "zeros",
    "zeros_mt",
    "generate_series",
    "generateseries",
    "generaterandom",
    "values",
    "null",
    "view",
];

/// The table engines a pack's tables may use besides the MergeTree family: they keep
/// their rows in the engine's own storage.
const LOCAL_ENGINES: &[&str] = &["Memory", "Log", "TinyLog", "StripeLog", "Null", "Set", "Join"];

/// The `ALTER` commands a design or generator may run (as the engine's tree names them):
/// columns, indexes, projections, statistics, TTL, settings, sorting and mutations of
/// the table itself; never one that fetches, moves, freezes or attaches parts from
/// elsewhere.
const ALTER_COMMANDS: &[&str] = &[
    "ADD_COLUMN",
    "DROP_COLUMN",
    "MODIFY_COLUMN",
    "COMMENT_COLUMN",
    "RENAME_COLUMN",
    "MATERIALIZE_COLUMN",
    "CLEAR_COLUMN",
    "ADD_INDEX",
    "DROP_INDEX",
    "MATERIALIZE_INDEX",
    "CLEAR_INDEX",
    "ADD_PROJECTION",
    "DROP_PROJECTION",
    "MATERIALIZE_PROJECTION",
    "CLEAR_PROJECTION",
    "ADD_STATISTICS",
    "DROP_STATISTICS",
    "MODIFY_STATISTICS",
    "MATERIALIZE_STATISTICS",
    "CLEAR_STATISTICS",
    "MODIFY_TTL",
    "REMOVE_TTL",
    "MATERIALIZE_TTL",
    "MODIFY_SETTING",
    "RESET_SETTING",
    "MODIFY_ORDER_BY",
    "MODIFY_SAMPLE_BY",
    "REMOVE_SAMPLE_BY",
    "MODIFY_COMMENT",
    "DELETE",
    "UPDATE",
    "APPLY_DELETED_MASK",
    "DROP_PARTITION",
];

/// Settings that keep state past a query (the query cache, the query condition cache) or
/// change what the measurement records (the query log, the statement's tag) or what the run
/// prints (the engine's log lines sent with each answer). Lower case.
const STATE_SETTINGS: &[&str] = &[
    "use_query_cache",
    "enable_writes_to_query_cache",
    "enable_reads_from_query_cache",
    "use_query_condition_cache",
    "log_queries",
    "log_comment",
    "log_profile_events",
    "log_query_settings",
    "send_logs_level",
];

/// Settings that change how later statements are parsed or where a table without an
/// engine keeps its rows: what the guard read would no longer be what runs. Lower case.
const PARSING_SETTINGS: &[&str] =
    &["dialect", "polyglot_dialect", "default_table_engine", "default_temporary_table_engine"];

/// The settings of text (`String`) a pack may set: index, projection and codec names, an
/// implementation's name. Every other text or map setting is refused: such values are
/// paths (`format_schema`, `output_format_schema`, `format_template_row`, `disk`), SQL
/// (`additional_table_filters`, `additional_result_filter`), URLs or credentials, which
/// the tree does not show. Lower case.
const TEXT_SETTINGS: &[&str] = &[
    "ignore_data_skipping_indices",
    "force_data_skipping_indices",
    "exclude_materialize_skip_indexes_on_insert",
    "exclude_materialize_skip_indexes_on_merge",
    "force_optimize_projection_name",
    "preferred_optimize_projection_name",
    "count_distinct_implementation",
    "compatibility",
    "insert_deduplication_token",
    "marks_compression_codec",
    "primary_key_compression_codec",
    "default_compression_codec",
    "auto_statistics_types",
    "columns_to_prewarm_mark_cache",
];

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

/// The table functions whose first argument may be a structure given as text. Lower case.
const STRUCTURE_FUNCTIONS: &[&str] = &["values", "generaterandom", "null"];

/// The text of every literal that is the first argument of a [`STRUCTURE_FUNCTIONS`]
/// call, unquoted.
fn structures(parsed: &Parsed) -> Vec<String> {
    first_arguments_of_structure_functions(parsed)
        .filter(|(_, argument)| argument.kind == "Literal")
        .filter_map(|(_, argument)| unquoted_literal(&argument.text))
        .collect()
}

/// Each [`STRUCTURE_FUNCTIONS`] call with its first argument, if it has one.
fn first_arguments_of_structure_functions(parsed: &Parsed) -> impl Iterator<Item = (&Node, &Node)> {
    parsed.tree.iter().enumerate().filter_map(|(index, node)| {
        if node.kind != "Function" || !STRUCTURE_FUNCTIONS.contains(&node.name.to_ascii_lowercase().as_str()) {
            return None;
        }
        // Function -> ExpressionList -> its first argument, each the first child.
        let (arguments, first) = (index + 1, index + 2);
        let is_first_argument = parsed.tree.get(arguments).is_some_and(|list| list.parent == Some(index))
            && parsed.tree.get(first).is_some_and(|argument| argument.parent == Some(arguments));
        is_first_argument.then(|| (node, &parsed.tree[first]))
    })
}

/// The first argument of a [`STRUCTURE_FUNCTIONS`] call that is computed (`concat(...)`,
/// `unhex(...)`, a scalar subquery) rather than written: the engine would take the text it
/// makes as a structure, with `ALIAS` and `DEFAULT` expressions no tree shows. `values`'s
/// first argument may also be a row (a tuple, an array, a negative number), which is no
/// structure.
fn computed_structure_refusal(parsed: &Parsed) -> Option<Refusal> {
    for (node, argument) in first_arguments_of_structure_functions(parsed) {
        let a_row = node.name.eq_ignore_ascii_case("values")
            && argument.kind == "Function"
            && ["tuple", "array", "negate"].contains(&argument.name.as_str());
        if argument.kind != "Literal" && !a_row {
            return Some(Refusal::new(
                Some(&node.name),
                format!(
                    "{}(...)'s first argument is computed, not written: the engine would read the text it makes as \
                     a structure, whose ALIAS and DEFAULT expressions run unseen; write the structure as a string \
                     ('k UInt64, s String')",
                    node.name
                ),
            ));
        }
    }
    None
}

/// A string literal as the tree dump writes it (`'it\'s'`), unquoted; `None` for any
/// other literal (a number, a tuple).
fn unquoted_literal(text: &str) -> Option<String> {
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

/// A statement as the engine parsed it.
#[derive(Debug)]
struct Parsed {
    /// `formatQuerySingleLine`'s text.
    canonical: String,
    /// `EXPLAIN AST`'s lines, the root first.
    tree: Vec<Node>,
    /// The settings the statement sets, each with its type as the engine declares it
    /// (`system.settings`, else `system.merge_tree_settings`); `None` for a name it
    /// does not know.
    settings: Vec<(String, Option<String>)>,
}

/// One line of `EXPLAIN AST`: `Function file (alias f) (children 1)` at some depth.
#[derive(Debug, Clone)]
struct Node {
    /// The children its label declares (`(children 2)`): what a complete dump shows.
    declared_children: usize,
    /// The label's first word: `Function`, `TableExpression`, `SelectWithUnionQuery`.
    kind: String,
    /// The label's second word, where it has one: a function's or command's name.
    name: String,
    /// The label past its first word: a literal's text (`'x String'`).
    text: String,
    parent: Option<usize>,
}

impl Parsed {
    fn of(target: &mut Target, statement: &Statement) -> Result<Parsed> {
        let location = statement.location();
        let canonical = target
            .run(&format!("SELECT formatQuerySingleLine({})", sql_string(&statement.sql)), &Settings::new(), "TSVRaw")
            .map_err(|error| {
                anyhow!(
                    "{location}: the engine cannot parse this statement ({}): {}",
                    engine_message(&error),
                    statement_line(&statement.sql)
                )
            })?
            .body
            .trim_end_matches('\n')
            .to_string();
        let tree = target
            .run(&format!("EXPLAIN AST {canonical}"), &Settings::new(), "TSVRaw")
            .map_err(|error| {
                anyhow!("{location}: the engine cannot explain this statement: {}", engine_message(&error))
            })?
            .body;
        let tree = parse_tree(&tree);
        // Every node with the children it declares: a dump cut short (a result limit of the
        // statement's own, say) would hide what comes after.
        let complete = !tree.is_empty()
            && tree.iter().enumerate().all(|(index, node)| {
                tree.iter().filter(|child| child.parent == Some(index)).count() == node.declared_children
            });
        if !complete {
            bail!("{location}: the engine's syntax tree of this statement came back incomplete, so it is refused");
        }
        let settings = if tree.iter().any(|node| node.kind == "Set") {
            setting_types(target, &setting_names(&canonical))
                .with_context(|| format!("{location}: cannot read the types of the statement's settings"))?
        } else {
            Vec::new()
        };
        Ok(Parsed { canonical, tree, settings })
    }

    fn root(&self) -> Option<&Node> {
        self.tree.first()
    }

    fn children(&self, index: usize) -> impl Iterator<Item = &Node> {
        self.tree.iter().filter(move |node| node.parent == Some(index))
    }

    /// The canonical text's first `count` words (`CREATE MATERIALIZED VIEW`).
    fn leading_words(&self, count: usize) -> String {
        self.canonical.split_whitespace().take(count).collect::<Vec<_>>().join(" ")
    }
}

/// The engine's error, past the statement the target's error quotes: its own words.
fn engine_message(error: &anyhow::Error) -> String {
    let text = format!("{error:#}");
    let message = text.rsplit_once("DB::Exception: ").map_or(text.as_str(), |(_, message)| message);
    crate::sql::one_line(message)
}

/// `EXPLAIN AST`'s text as nodes with their parents (one space of indent a level).
fn parse_tree(text: &str) -> Vec<Node> {
    let mut nodes: Vec<Node> = Vec::new();
    // The index of the last node seen at each depth.
    let mut open: Vec<usize> = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let depth = line.len() - line.trim_start_matches(' ').len();
        let label = line.trim();
        let (label, declared_children) = match label.rsplit_once(" (children ") {
            Some((head, count)) => (head, count.trim_end_matches(')').parse().unwrap_or(usize::MAX)),
            None => (label, 0),
        };
        let mut words = label.split_whitespace();
        let kind = words.next().unwrap_or_default().to_string();
        let name = words.next().unwrap_or_default().to_string();
        let text = label.split_once(' ').map_or("", |(_, text)| text).to_string();
        open.truncate(depth);
        let parent = depth.checked_sub(1).and_then(|level| open.get(level).copied());
        open.push(nodes.len());
        nodes.push(Node { declared_children, kind, name, text, parent });
    }
    nodes
}

/// Why a statement is refused, and the name to find its line by.
struct Refusal {
    at: Option<String>,
    problem: String,
}

impl Refusal {
    fn new(at: Option<&str>, problem: String) -> Refusal {
        Refusal { at: at.map(str::to_string), problem }
    }
}

fn refusal(parsed: &Parsed, role: Role) -> Option<Refusal> {
    let root = parsed.root()?;
    if let Some(refusal) = kind_refusal(parsed, root, role) {
        return Some(refusal);
    }
    if let Some(refusal) = clause_refusal(parsed, root) {
        return Some(refusal);
    }
    // The tree shows a refresh schedule as no node of its own; the canonical text does.
    let refreshes = root.kind == "CreateQuery" && names_of(&parsed.canonical).iter().any(|(word, _)| word == "REFRESH");
    if refreshes {
        return Some(Refusal::new(
            Some("REFRESH"),
            "a refreshable materialized view changes the pack's tables in the background after the build, so what \
             is measured would depend on when; a pack's dataset is built once (a materialized view without REFRESH \
             fills on insert)"
                .to_string(),
        ));
    }
    for (index, node) in parsed.tree.iter().enumerate() {
        let refusal = match node.kind.as_str() {
            "Function" => function_refusal(parsed, index, node),
            "AlterCommand" if !ALTER_COMMANDS.contains(&node.name.as_str()) => Some(Refusal::new(
                None,
                format!(
                    "ALTER ... {} is not a change a pack may make to its table (it reaches other tables, folders or \
                     servers); a design alters its own table's columns, indexes, projections, settings and rows",
                    node.name.replace('_', " ")
                ),
            )),
            _ => None,
        };
        if refusal.is_some() {
            return refusal;
        }
    }
    if parsed.tree.iter().any(|node| node.kind == "Set") {
        return settings_refusal(parsed);
    }
    None
}

/// The statement's kind: a query is one SELECT; a design or generator creates tables and
/// views, inserts, alters, optimizes, and stops or starts a table's merges.
fn kind_refusal(parsed: &Parsed, root: &Node, role: Role) -> Option<Refusal> {
    let allowed = match role {
        Role::Query => root.kind == "SelectWithUnionQuery",
        Role::Dataset => match root.kind.as_str() {
            "SelectWithUnionQuery" | "InsertQuery" | "AlterQuery" | "OptimizeQuery" | "DeleteQuery" | "Set" => true,
            "CreateQuery" => {
                let words = parsed.leading_words(4).replace("OR REPLACE ", "");
                ["CREATE TABLE", "CREATE VIEW", "CREATE MATERIALIZED VIEW"].iter().any(|kind| words.starts_with(kind))
            }
            // The tree does not name a SYSTEM statement's action; its canonical text does.
            // A table of its own: merges stopped server-wide would stop other runs' too.
            "SYSTEM" => {
                let words = parsed.leading_words(3);
                (words == "SYSTEM STOP MERGES" || words == "SYSTEM START MERGES") && parsed.tree.len() > 1
            }
            _ => false,
        },
    };
    if allowed {
        return None;
    }
    let statement = parsed.leading_words(3);
    Some(Refusal::new(
        None,
        match role {
            Role::Query => format!(
                "a pack's query is one SELECT (or WITH ... SELECT), not {statement} ...; put set-up in the design or \
                 the generator"
            ),
            Role::Dataset => format!(
                "{statement} ... is not a statement a pack's design or generator may run: they create tables and \
                 views (CREATE TABLE, CREATE VIEW, CREATE MATERIALIZED VIEW), INSERT, ALTER TABLE, DELETE, \
                 OPTIMIZE, SET, and SYSTEM STOP MERGES or START MERGES of a table"
            ),
        },
    ))
}

/// The clauses that read or write the host's files (`INTO OUTFILE`, `FROM INFILE`), and
/// inline data, which the parser leaves unparsed.
fn clause_refusal(parsed: &Parsed, root: &Node) -> Option<Refusal> {
    // A query's children are its list of SELECTs, then its output clauses: the file of
    // `INTO OUTFILE` is a literal among them.
    let literal_child = parsed.children(0).any(|child| child.kind == "Literal");
    // After the list of SELECTs, a name is the FORMAT clause's.
    let format_child = parsed.children(0).skip(1).any(|child| child.kind == "Identifier");
    match root.kind.as_str() {
        "SelectWithUnionQuery" if literal_child => Some(Refusal::new(
            Some("OUTFILE"),
            "INTO OUTFILE writes the answer to a file on the host, and a pack only reads it; remove the clause (a \
             case records the answer)"
                .to_string(),
        )),
        "SelectWithUnionQuery" if format_child => Some(Refusal::new(
            Some("FORMAT"),
            "FORMAT chooses how the answer comes back, which the tool chooses (and formats such as Template \
             read files of the host); remove the clause"
                .to_string(),
        )),
        "InsertQuery" if literal_child => Some(Refusal::new(
            Some("INFILE"),
            "INSERT ... FROM INFILE reads a file on the host; a pack's rows come from its generator's SELECT (a file \
             of the pack cannot be read)"
                .to_string(),
        )),
        "InsertQuery" if !parsed.children(0).any(|child| child.kind == "SelectWithUnionQuery") => Some(Refusal::new(
            None,
            "INSERT ... VALUES (or FORMAT) carries data the engine's parser does not check (VALUES may call \
             functions); write INSERT INTO t SELECT * FROM values('k UInt64, s String', (1, 'a'), (2, 'b'))"
                .to_string(),
        )),
        _ => None,
    }
}

/// A function call by where it stands: a table function must generate rows, a table's
/// engine must keep them locally, and nothing may reach the host, the network or another
/// server.
fn function_refusal(parsed: &Parsed, index: usize, node: &Node) -> Option<Refusal> {
    let name = node.name.as_str();
    let lower = name.to_ascii_lowercase();
    let parent_kind = node.parent.map_or("", |parent| parsed.tree[parent].kind.as_str());
    // `Storage definition`'s first child is the engine (`CREATE TABLE ... ENGINE = X`); its
    // later ones are the PARTITION BY, ORDER BY ... expressions.
    // (When the statement names none, there is no engine node: its canonical text, which
    // writes every ENGINE clause, says so.)
    let engine = parent_kind == "Storage"
        && node.parent.is_some_and(|parent| parent + 1 == index)
        && names_of(&parsed.canonical).iter().any(|(word, _)| word == "ENGINE");
    if OUTSIDE_FUNCTIONS.contains(&lower.as_str())
        || NAMED_TABLE_PREFIXES.iter().any(|prefix| lower.starts_with(prefix))
    {
        let what = if engine { format!("ENGINE = {name}") } else { format!("{name}(...)") };
        return Some(Refusal::new(
            Some(name),
            format!(
                "{what} reaches outside the pack's tables (the host's files, the network, another server or \
                 program); a pack reads its own tables and the tables and table functions that generate rows \
                 (numbers, zeros, generateSeries, generateRandom, values, null, view)"
            ),
        ));
    }
    if engine {
        let local = name.ends_with("MergeTree") && !name.starts_with("Replicated") && !name.starts_with("Shared")
            || LOCAL_ENGINES.contains(&name);
        if !local {
            return Some(Refusal::new(
                Some(name),
                format!(
                    "{name} is not a table engine a pack may use: its tables keep their rows in the engine's own \
                     storage (ENGINE = MergeTree and its non-replicated family, Memory, Log, TinyLog, StripeLog, \
                     Null, Set, Join)"
                ),
            ));
        }
    }
    let table_function = matches!(parent_kind, "TableExpression" | "InsertQuery" | "CreateQuery");
    if table_function && !GENERATING_TABLE_FUNCTIONS.contains(&lower.as_str()) {
        return Some(Refusal::new(
            Some(name),
            format!(
                "{name}(...) reads outside the pack's tables (another table, database, server or file); a pack reads \
                 its own tables and the tables and table functions that generate rows (numbers, zeros, \
                 generateSeries, generateRandom, values, null, view)"
            ),
        ));
    }
    None
}

/// Each setting's type as the engine declares it.
fn setting_types(target: &mut Target, names: &[String]) -> Result<Vec<(String, Option<String>)>> {
    #[derive(serde::Deserialize)]
    struct Declared {
        name: String,
        r#type: String,
    }
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let list = names.iter().map(|name| sql_string(name)).collect::<Vec<_>>().join(", ");
    let declared: Vec<Declared> = target.query_rows(&format!(
        "SELECT name, type FROM system.settings WHERE name IN ({list}) \
         UNION ALL SELECT name, type FROM system.merge_tree_settings WHERE name IN ({list})"
    ))?;
    Ok(names
        .iter()
        .map(|name| {
            let r#type =
                declared.iter().find(|declared| declared.name == *name).map(|declared| declared.r#type.clone());
            (name.clone(), r#type)
        })
        .collect())
}

/// Settings, which the tree shows only as `Set`: their names from the canonical text,
/// their types from the engine. A pack sets numbers, switches and choices, and text only
/// from [`TEXT_SETTINGS`].
fn settings_refusal(parsed: &Parsed) -> Option<Refusal> {
    for (name, declared) in &parsed.settings {
        let lower = name.to_ascii_lowercase();
        // A design's or generator's too: on a server the session that builds the dataset
        // is the one that then measures.
        let problem = if STATE_SETTINGS.contains(&lower.as_str()) {
            format!(
                "setting {name} keeps state past the query or changes what is measured; leave it out (the query \
                 cache and the condition cache are off for every case, and each statement is tagged for you)"
            )
        } else if PARSING_SETTINGS.contains(&lower.as_str()) {
            format!("setting {name} changes how later statements are read or stored; a pack leaves it as it is")
        } else {
            match declared.as_deref() {
                None => {
                    format!("setting {name} is not one the engine knows (system.settings, system.merge_tree_settings)")
                }
                Some(text)
                    if (text.contains("String") || text.starts_with("Map") || text.starts_with("URI"))
                        && !TEXT_SETTINGS.contains(&lower.as_str()) =>
                {
                    format!(
                        "setting {name} takes text ({text}) that can name a file, a folder, a server or SQL the guard \
                         does not see; a pack sets numbers, switches and choices, and of the text settings only {}",
                        TEXT_SETTINGS.join(", ")
                    )
                }
                Some(_) => continue,
            }
        };
        return Some(Refusal::new(Some(name), problem));
    }
    None
}

/// Names in the canonical text that reach outside the engine's own tables: a name with
/// a `/` (a path), or one qualified by a database whose engine is not the engine's own.
/// From the text, since the tree leaves some names out (a materialized view's `TO`, a
/// `CREATE TABLE ... AS` table).
/// The engine's catalogues: their tables show the host's paths and, on a shared server,
/// other databases and users. A pack names its own tables unqualified (the run chooses
/// their database), and of these reads only [`SYSTEM_GENERATORS`].
const READABLE_DATABASES: &[&str] = &["system", "information_schema", "INFORMATION_SCHEMA"];

/// The system tables that generate rows and show nothing of the engine or the host.
const SYSTEM_GENERATORS: &[&str] = &["one", "numbers", "numbers_mt", "zeros", "zeros_mt"];

/// The functions whose second argument may be a table (`x IN db.t`), which the tree shows
/// as an identifier, not as a table.
const IN_FUNCTIONS: &[&str] =
    &["in", "notIn", "globalIn", "globalNotIn", "nullIn", "notNullIn", "globalNullIn", "globalNotNullIn"];

/// A table named in a database other than the catalogues: on a shared server, another
/// run's or another user's data. The tree shows such a table as `TableIdentifier db.t`, or
/// after `IN` as `Identifier db.t`; `CREATE TABLE t AS db.t` (the structure of another
/// table) only in the canonical text.
fn other_database_refusal(parsed: &Parsed, names: &[(String, Option<char>)]) -> Option<Refusal> {
    let mut tables: Vec<(&str, &str)> = Vec::new();
    for (index, node) in parsed.tree.iter().enumerate() {
        // The whole label past its kind: a quoted name may hold a space (`other db.t`).
        let label = node.text.split(" (alias ").next().unwrap_or_default();
        let Some(qualified) = label.split_once('.') else { continue };
        let after_in = node.kind == "Identifier"
            && node.parent.is_some_and(|list| {
                list + 1 != index
                    && parsed.tree[list].parent.is_some_and(|function| {
                        let function = &parsed.tree[function];
                        function.kind == "Function" && IN_FUNCTIONS.contains(&function.name.as_str())
                    })
            });
        if node.kind == "TableIdentifier" || after_in {
            tables.push(qualified);
        }
    }
    let creates = parsed.root().is_some_and(|root| root.kind == "CreateQuery");
    let structure_of = names
        .windows(3)
        .filter(|run| creates && run[0].0 == "AS" && run[1].1 == Some('.'))
        .map(|run| (run[1].0.as_str(), run[2].0.as_str()));
    tables.extend(structure_of);
    let (database, table) =
        tables.into_iter().find(|(database, table)| !(*database == "system" && SYSTEM_GENERATORS.contains(table)))?;
    let why = if READABLE_DATABASES.contains(&database) {
        format!(
            "table {database}.{table} is the engine's catalogue, which shows the host's paths and, on a shared \
             server, other databases' tables, queries and users"
        )
    } else {
        format!(
            "database {database} is not the pack's own (on a shared server another database is another run's or \
             another user's)"
        )
    };
    Some(Refusal::new(
        Some(database),
        format!(
            "{why}; a pack names its own tables unqualified (the run chooses their database), and of the system \
             tables reads only those that generate rows ({})",
            SYSTEM_GENERATORS.iter().map(|table| format!("system.{table}")).collect::<Vec<_>>().join(", ")
        ),
    ))
}

fn identifier_refusal(parsed: &Parsed, outside_databases: &[String]) -> Option<Refusal> {
    let names = names_of(&parsed.canonical);
    // The table a design's or generator's statement writes is the pack's own, in the
    // database the run gives it: the first name past the statement's keywords.
    let writes = matches!(
        parsed.root().map(|root| root.kind.as_str()),
        Some("CreateQuery" | "InsertQuery" | "AlterQuery" | "OptimizeQuery" | "DeleteQuery" | "SYSTEM")
    );
    let target = names.iter().find(|(name, _)| !STATEMENT_KEYWORDS.contains(&name.as_str()));
    if let Some((database, Some('.'))) = target.filter(|_| writes) {
        return Some(Refusal::new(
            Some(database),
            format!(
                "the statement writes to database {database}; a pack's design and generator create and fill \
                 tables of the pack's own database: leave the name unqualified"
            ),
        ));
    }
    // A materialized view's `TO` table, which the tree leaves out, is the pack's own too;
    // a TTL's `TO DISK` or `TO VOLUME` moves parts to a disk of the server's configuration.
    let after_to = names.windows(2).filter(|pair| pair[0].0 == "TO" && pair[0].1 == Some(' ')).map(|pair| &pair[1]);
    for (name, next) in after_to {
        if writes && (name == "DISK" || name == "VOLUME") {
            return Some(Refusal::new(
                Some(name),
                format!(
                    "TTL ... TO {name} moves parts to a disk of the server's configuration, which may be a folder of \
                     the host or the network; a pack's tables keep their parts in the default storage"
                ),
            ));
        }
        if writes && *next == Some('.') {
            return Some(Refusal::new(
                Some(name),
                format!(
                    "the statement writes to database {name}; a pack's design and generator create and fill tables \
                     of the pack's own database: leave the name unqualified"
                ),
            ));
        }
    }
    if let Some(refusal) = other_database_refusal(parsed, &names) {
        return Some(refusal);
    }
    for (name, next) in names {
        if name.contains('/') {
            return Some(Refusal::new(
                Some(&name),
                format!("name {name:?} is a path; a pack's tables and columns have plain names"),
            ));
        }
        if next == Some('.') && outside_databases.contains(&name) {
            return Some(Refusal::new(
                Some(&name),
                format!(
                    "database {name} is not the engine's own storage (its engine reaches the host's files or \
                     another server); a pack reads its own tables and the system tables that generate rows"
                ),
            ));
        }
    }
    None
}

/// The keywords before the name of the table a statement writes, as the canonical text
/// writes them.
const STATEMENT_KEYWORDS: &[&str] = &[
    "CREATE",
    "OR",
    "REPLACE",
    "TABLE",
    "VIEW",
    "MATERIALIZED",
    "IF",
    "NOT",
    "EXISTS",
    "INSERT",
    "INTO",
    "ALTER",
    "OPTIMIZE",
    "DELETE",
    "FROM",
    "SYSTEM",
    "STOP",
    "START",
    "MERGES",
];

/// The names of a canonical statement's code, unquoted, with the character right after
/// each: its words and its `\`quoted\`` or `"quoted"` names.
fn names_of(canonical: &str) -> Vec<(String, Option<char>)> {
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
fn setting_names(canonical: &str) -> Vec<String> {
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
fn lines_into_code(sql: &str, name: &str) -> usize {
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
fn skip_space_and_comments(mut text: &str) -> &str {
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
    fn the_tree_dump_is_read_with_parents() {
        let tree = parse_tree(
            "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 2)\n   \
             TablesInSelectQuery (children 1)\n    TableExpression (children 1)\n     Function file (alias f) \
             (children 1)\n      ExpressionList (children 1)\n   Set\n",
        );
        let function = tree.iter().position(|node| node.kind == "Function").unwrap();
        assert_eq!(tree[function].name, "file");
        assert_eq!(tree[tree[function].parent.unwrap()].kind, "TableExpression");
        let set = tree.iter().position(|node| node.kind == "Set").unwrap();
        assert_eq!(tree[tree[set].parent.unwrap()].kind, "SelectQuery");
    }

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

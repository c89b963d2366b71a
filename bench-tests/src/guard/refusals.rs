//! What the guard refuses, read from a parsed statement: its kind for its role, the clauses
//! that read or write the host's files, each function by where it stands, each `ALTER`
//! command, the settings it sets by their declared types, tables of other databases, and
//! the structures given as text to table functions; with the lists each rule keeps.

use super::Role;
use super::text::{names_of, unquoted_literal};
use super::tree::{Node, Parsed};

/// Functions that reach the host's files, the network, another server or a program,
/// wherever they stand (`file('/etc/passwd')` reads the host even as a scalar). Lower case.
pub(super) const OUTSIDE_FUNCTIONS: &[&str] = &[
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
pub(super) const NAMED_TABLE_PREFIXES: &[&str] = &["dict", "joinget", "ai", "naivebayesclassifier"];

/// The table functions a pack may read from: they make rows from their arguments alone.
/// Lower case.
pub(super) const GENERATING_TABLE_FUNCTIONS: &[&str] = &[
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
pub(super) const LOCAL_ENGINES: &[&str] = &["Memory", "Log", "TinyLog", "StripeLog", "Null", "Set", "Join"];

/// The `ALTER` commands a design or generator may run (as the engine's tree names them):
/// columns, indexes, projections, statistics, TTL, settings, sorting and mutations of
/// the table itself; never one that fetches, moves, freezes or attaches parts from
/// elsewhere.
pub(super) const ALTER_COMMANDS: &[&str] = &[
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
pub(super) const STATE_SETTINGS: &[&str] = &[
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
pub(super) const PARSING_SETTINGS: &[&str] =
    &["dialect", "polyglot_dialect", "default_table_engine", "default_temporary_table_engine"];

/// The settings of text (`String`) a pack may set: index, projection and codec names, an
/// implementation's name. Every other text or map setting is refused: such values are
/// paths (`format_schema`, `output_format_schema`, `format_template_row`, `disk`), SQL
/// (`additional_table_filters`, `additional_result_filter`), URLs or credentials, which
/// the tree does not show. Lower case.
pub(super) const TEXT_SETTINGS: &[&str] = &[
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

/// The table functions whose first argument may be a structure given as text. Lower case.
pub(super) const STRUCTURE_FUNCTIONS: &[&str] = &["values", "generaterandom", "null"];

/// The text of every literal that is the first argument of a [`STRUCTURE_FUNCTIONS`]
/// call, unquoted.
pub(super) fn structures(parsed: &Parsed) -> Vec<String> {
    first_arguments_of_structure_functions(parsed)
        .filter(|(_, argument)| argument.kind == "Literal")
        .filter_map(|(_, argument)| unquoted_literal(&argument.text))
        .collect()
}

/// Each [`STRUCTURE_FUNCTIONS`] call with its first argument, if it has one.
pub(super) fn first_arguments_of_structure_functions(parsed: &Parsed) -> impl Iterator<Item = (&Node, &Node)> {
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
pub(super) fn computed_structure_refusal(parsed: &Parsed) -> Option<Refusal> {
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

/// Why a statement is refused, and the name to find its line by.
pub(super) struct Refusal {
    pub(super) at: Option<String>,
    pub(super) problem: String,
}

impl Refusal {
    fn new(at: Option<&str>, problem: String) -> Refusal {
        Refusal { at: at.map(str::to_string), problem }
    }
}

pub(super) fn refusal(parsed: &Parsed, role: Role) -> Option<Refusal> {
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
pub(super) fn kind_refusal(parsed: &Parsed, root: &Node, role: Role) -> Option<Refusal> {
    let allowed = match role {
        Role::Query => root.kind == "SelectWithUnionQuery",
        Role::Dataset => match root.kind.as_str() {
            "SelectWithUnionQuery"
            | "InsertQuery"
            | "AlterQuery"
            | "OptimizeQuery"
            | "DeleteQuery"
            | "UpdateQuery"
            | "Set" => true,
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
                 UPDATE, OPTIMIZE, SET, and SYSTEM STOP MERGES or START MERGES of a table"
            ),
        },
    ))
}

/// The clauses that read or write the host's files (`INTO OUTFILE`, `FROM INFILE`), and
/// inline data, which the parser leaves unparsed.
pub(super) fn clause_refusal(parsed: &Parsed, root: &Node) -> Option<Refusal> {
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
pub(super) fn function_refusal(parsed: &Parsed, index: usize, node: &Node) -> Option<Refusal> {
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

/// Settings, which the tree shows only as `Set`: their names from the canonical text,
/// their types from the engine. A pack sets numbers, switches and choices, and text only
/// from [`TEXT_SETTINGS`].
pub(super) fn settings_refusal(parsed: &Parsed) -> Option<Refusal> {
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
pub(super) const READABLE_DATABASES: &[&str] = &["system", "information_schema", "INFORMATION_SCHEMA"];

/// The system tables that generate rows and show nothing of the engine or the host.
pub(super) const SYSTEM_GENERATORS: &[&str] = &["one", "numbers", "numbers_mt", "zeros", "zeros_mt"];

/// The functions whose second argument may be a table (`x IN db.t`), which the tree shows
/// as an identifier, not as a table.
pub(super) const IN_FUNCTIONS: &[&str] =
    &["in", "notIn", "globalIn", "globalNotIn", "nullIn", "notNullIn", "globalNullIn", "globalNotNullIn"];

/// A table named in a database other than the catalogues: on a shared server, another
/// run's or another user's data. The tree shows such a table as `TableIdentifier db.t`, or
/// after `IN` as `Identifier db.t`; `CREATE TABLE t AS db.t` (the structure of another
/// table) only in the canonical text.
pub(super) fn other_database_refusal(parsed: &Parsed, names: &[(String, Option<char>)]) -> Option<Refusal> {
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

pub(super) fn identifier_refusal(parsed: &Parsed, outside_databases: &[String]) -> Option<Refusal> {
    let names = names_of(&parsed.canonical);
    // The table a design's or generator's statement writes is the pack's own, in the
    // database the run gives it: the first name past the statement's keywords.
    let writes = matches!(
        parsed.root().map(|root| root.kind.as_str()),
        Some("CreateQuery" | "InsertQuery" | "AlterQuery" | "OptimizeQuery" | "DeleteQuery" | "UpdateQuery" | "SYSTEM")
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
pub(super) const STATEMENT_KEYWORDS: &[&str] = &[
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
    "UPDATE",
    "FROM",
    "SYSTEM",
    "STOP",
    "START",
    "MERGES",
];

//! The table a writes run fills and the INSERT its clients send: the logs table and the
//! batch of `fixtures/writes/insert.sql` by default, or a scenario pack's design and an
//! INSERT of the pack's own (`--pack`, `--design`, `--insert`, its `insert.sql` unless
//! told otherwise) that takes the batch's rows as `{batch}`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::files::{fixture_relative, not_own_plain_file, shown};
use crate::fixtures::{Fixture, Params, Statement};
use crate::packs::{CLAIMS_FILE, Pack, packs_root};
use crate::sql::{code_words, first_keyword, sql_string, statement_line};
use crate::targets::Target;

/// The logs table's schema, relative to `fixtures/`.
pub const SCHEMA_FILE: &str = "logs/schema.sql";
/// The logs table's INSERT, with its `{batch}` placeholder.
pub const INSERT_FILE: &str = "writes/insert.sql";
/// A pack's INSERT when `--insert` names none: this file of the pack's folder.
pub const PACK_INSERT_FILE: &str = "insert.sql";

/// `--pack` and what goes with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackTable {
    pub pack: String,
    /// `None`: the pack's first design.
    pub design: Option<String>,
    /// `None`: the pack's `insert.sql`.
    pub insert: Option<PathBuf>,
}

/// The table and its INSERT, loaded and rendered.
#[derive(Debug, Clone)]
pub struct WritesTable {
    /// The statements that make it, in order.
    pub schema: Vec<Statement>,
    /// Where they come from, as the bundle names it: relative to `fixtures/`, or as shown.
    pub schema_file: String,
    /// The INSERT every client sends, `{batch}` filled.
    pub insert: Statement,
    pub insert_file: String,
    /// The table the INSERT writes to.
    pub name: String,
    /// The pack and design, in pack mode.
    pub pack: Option<(String, String)>,
}

impl WritesTable {
    /// The logs table, or `pack`'s, with INSERTs of `batch_rows` rows.
    pub fn load(pack: Option<&PackTable>, batch_rows: u64) -> Result<WritesTable> {
        let batch = Params::new().with("batch", batch_rows);
        let Some(chosen) = pack else {
            return Ok(WritesTable {
                schema: Fixture::load(SCHEMA_FILE)?.render(&Params::new())?,
                schema_file: SCHEMA_FILE.to_string(),
                insert: Fixture::load(INSERT_FILE)?.render_one(&batch)?,
                insert_file: INSERT_FILE.to_string(),
                name: "logs".to_string(),
                pack: None,
            });
        };
        // Under CHBENCH_PACKS_DIR when it is set (a pack tried out of the tree), as the
        // packs harness and `measure` find one; else in fixtures/.
        let folder = packs_root().join(&chosen.pack);
        let pack = match folder.join(CLAIMS_FILE).is_file() {
            true => Pack::load(&folder)?,
            false => Pack::named(&chosen.pack)?,
        };
        let design = pack.chosen_design(chosen.design.as_deref())?;
        // The table starts empty, as the logs table does: the design alone, no generator.
        let schema = Fixture::read(&design.path)?.render_dataset(&Params::new())?;
        let insert_path = match &chosen.insert {
            Some(path) => path.clone(),
            None => {
                let path = pack.folder.join(PACK_INSERT_FILE);
                if !path.exists() {
                    bail!(
                        "pack {} has no {PACK_INSERT_FILE}: give its INSERT with --insert FILE (one INSERT that \
                         takes the batch's rows as {{batch}}, e.g. FROM numbers({{batch}}))",
                        pack.name
                    );
                }
                // A pack's own file, as every file of a pack is read (no link out of it).
                if let Some(problem) = not_own_plain_file(&pack.folder, &path) {
                    bail!("{} {problem}; a pack's files are its own", shown(&path));
                }
                path
            }
        };
        let insert = insert_of(&insert_path, &batch)?;
        let name = written_table(&insert.sql)
            .with_context(|| format!("{}: cannot tell which table the INSERT writes to", insert.location()))?;
        Ok(WritesTable {
            schema,
            schema_file: fixture_relative(&design.path).unwrap_or_else(|| shown(&design.path)),
            insert,
            insert_file: fixture_relative(&insert_path).unwrap_or_else(|| shown(&insert_path)),
            name,
            pack: Some((pack.name.clone(), design.name.clone())),
        })
    }

    /// The files of `fixtures/` it reads, for the bundle to copy (a file elsewhere, an
    /// `--insert` of the user's, is in the bundle's workload as its statement instead).
    pub fn fixture_files(&self) -> Vec<String> {
        [&self.schema_file, &self.insert_file]
            .into_iter()
            .filter(|file| Path::new(file.as_str()).is_relative() && crate::files::fixtures_root().join(file).exists())
            .cloned()
            .collect()
    }

    /// Refuses, in one line, a table the write path cannot measure: one that is not a
    /// MergeTree (it measures parts, merges and fsync), or one the schema does not make;
    /// then runs `trial` on the table made (the run's INSERTs as they will be sent). The
    /// schema is made in a scratch database of this process and dropped, and the target is
    /// back in its database after.
    pub fn check_on(&self, target: &mut Target, trial: impl FnOnce(&mut Target) -> Result<()>) -> Result<()> {
        let previous = target.database().to_string();
        let scratch = format!("chbench_table_check_p{}", std::process::id());
        target.use_fresh_database(&scratch)?;
        let outcome =
            self.engine_made(target).and_then(|engine| self.check_engine(&engine)).and_then(|()| trial(target));
        let dropped = target.execute(&format!("DROP DATABASE IF EXISTS {scratch} SYNC"));
        target.use_database(&previous)?;
        outcome?;
        dropped.with_context(|| format!("database {scratch} may be left: drop it with DROP DATABASE {scratch} SYNC"))
    }

    /// `engine` is the table's, read after its schema ran: refused unless a MergeTree.
    fn check_engine(&self, engine: &str) -> Result<()> {
        let of = match &self.pack {
            Some((pack, design)) => format!("pack {pack}'s design {design}"),
            None => self.schema_file.clone(),
        };
        match engine.trim() {
            "" => bail!(
                "the INSERT ({}) writes to table {}, which {of} does not make; write to the design's table",
                self.insert_file,
                self.name
            ),
            engine if !engine.ends_with("MergeTree") => bail!(
                "table {} of {of} is a {engine} table: the write path measures MergeTree's parts, merges and fsync; \
                 give a design whose table is a MergeTree",
                self.name
            ),
            _ => Ok(()),
        }
    }

    /// The schema run in the current database, and the engine of the table the INSERT
    /// writes to (empty when there is no such table).
    fn engine_made(&self, target: &mut Target) -> Result<String> {
        for statement in &self.schema {
            target.execute(statement).with_context(|| statement.location())?;
        }
        let sql = format!(
            "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = {}",
            sql_string(&self.name)
        );
        target.query_text(&sql).with_context(|| format!("cannot read table {}'s engine", self.name))
    }

    /// Its INSERT writing to `other` instead of its table (the same rows, to render them).
    pub fn insert_into(&self, other: &str) -> Result<Statement> {
        let sql = &self.insert.sql;
        let into = code_words(sql)
            .into_iter()
            .find(|word| word.text.eq_ignore_ascii_case("INTO"))
            .with_context(|| format!("{}: the INSERT has no INTO", self.insert.location()))?;
        let after = into.offset + into.text.len();
        let at = sql[after..]
            .find(self.name.as_str())
            .map(|at| after + at)
            .with_context(|| format!("{}: cannot find table {} after INTO", self.insert.location(), self.name))?;
        let sql = format!("{}{other}{}", &sql[..at], &sql[at + self.name.len()..]);
        Ok(Statement { sql, ..self.insert.clone() })
    }

    /// The INSERT as its rows sent inline (`INSERT INTO t FORMAT Values (...), ...`), as an
    /// application sends a batch and as asynchronous inserts need (an `INSERT ... SELECT`
    /// is run at once, whatever `async_insert` says): the rows of one batch made by the
    /// engine from the INSERT into a scratch table, read back as `Values`, which every
    /// INSERT then sends. `sent_as` describes it for the bundle (the text is large).
    pub fn inline_insert(&self, target: &mut Target) -> Result<InlineInsert> {
        let scratch = "chbench_inline_batch";
        target.execute(&format!("DROP TABLE IF EXISTS {scratch}"))?;
        target
            .execute(&format!("CREATE TABLE {scratch} AS {} ENGINE = Memory", self.name))
            .with_context(|| format!("cannot make a table like {} to render the batch in", self.name))?;
        let rendered = self.insert_into(scratch).and_then(|insert| {
            target.execute(&insert).with_context(|| insert.location())?;
            Ok(target.run(&format!("SELECT * FROM {scratch}"), &crate::settings::Settings::new(), "Values")?.body)
        });
        target.execute(&format!("DROP TABLE IF EXISTS {scratch}"))?;
        let rows = rendered?;
        let sql = format!("INSERT INTO {} FORMAT Values {rows}", self.name);
        let sent_as = format!(
            "INSERT INTO {} FORMAT Values with one batch's rows inline ({} bytes), made by {}",
            self.name,
            sql.len(),
            self.insert_file
        );
        Ok(InlineInsert { statement: Statement { sql, ..self.insert.clone() }, sent_as })
    }

    /// The parameters its table's fixtures take (`{table}`).
    pub fn params(&self) -> Params {
        Params::new().with("table", &self.name)
    }
}

/// An INSERT with its batch's rows inline ([`WritesTable::inline_insert`]).
#[derive(Debug, Clone)]
pub struct InlineInsert {
    pub statement: Statement,
    /// What the bundle says of it, on one line.
    pub sent_as: String,
}

/// The INSERT of `path`: one statement, an INSERT, taking the batch's rows as `{batch}`.
fn insert_of(path: &Path, batch: &Params) -> Result<Statement> {
    let fixture = Fixture::read(path)?;
    // One statement first (an empty or comment-only file says so), then its placeholder.
    let insert = fixture.render_one(batch)?;
    if !fixture.text.contains("{batch}") {
        bail!(
            "{} has no {{batch}}: the rows of each INSERT are --batch-rows, put in its place (e.g. FROM \
             numbers({{batch}}))",
            shown(path)
        );
    }
    if first_keyword(&insert.sql) != "INSERT" {
        bail!(
            "{}: {} is not an INSERT; the write path sends one INSERT",
            insert.location(),
            statement_line(&insert.sql)
        );
    }
    Ok(insert)
}

/// The table `INSERT INTO [TABLE] name ...` writes to, its quotes taken off; `None` for
/// `INSERT INTO FUNCTION` or no INSERT.
fn written_table(sql: &str) -> Option<String> {
    // Past `INTO` (a word of the code, not of a comment or a string), as written.
    let into = code_words(sql).into_iter().find(|word| word.text.eq_ignore_ascii_case("INTO"))?;
    let mut rest = sql[into.offset + into.text.len()..].trim_start();
    let keyword = |rest: &str, word: &str| {
        rest.get(..word.len()).is_some_and(|start| start.eq_ignore_ascii_case(word))
            && rest[word.len()..].starts_with(char::is_whitespace)
    };
    if keyword(rest, "FUNCTION") {
        return None;
    }
    if keyword(rest, "TABLE") {
        rest = rest["TABLE".len()..].trim_start();
    }
    let name: String = match rest.chars().next()? {
        quote @ ('`' | '"') => rest[1..].chars().take_while(|&c| c != quote).collect(),
        _ => rest.chars().take_while(|&c| c.is_alphanumeric() || c == '_' || c == '.').collect(),
    };
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_an_insert_writes_to_is_the_word_after_into() {
        assert_eq!(written_table("-- a batch\nINSERT INTO events (k) SELECT 1").as_deref(), Some("events"));
        assert_eq!(written_table("insert into table `t2` select 1").as_deref(), Some("t2"));
        assert_eq!(written_table("INSERT INTO FUNCTION null('k UInt8') SELECT 1"), None);
        assert_eq!(written_table("SELECT 1"), None);
    }

    #[test]
    fn the_logs_table_is_the_default_and_a_packs_insert_must_take_the_batch() {
        let logs = WritesTable::load(None, 7).unwrap();
        assert_eq!((logs.name.as_str(), logs.schema_file.as_str()), ("logs", SCHEMA_FILE));
        assert!(logs.insert.sql.contains("numbers(7)"), "{}", logs.insert.sql);
        assert_eq!(logs.fixture_files(), [SCHEMA_FILE, INSERT_FILE]);
        // The same INSERT into another table: only the name after INTO changes, not the word
        // `logs` in the file's comments before it.
        let elsewhere = logs.insert_into("chbench_scratch").unwrap();
        assert!(elsewhere.sql.contains("INSERT INTO chbench_scratch (timestamp,"), "{}", elsewhere.sql);
        assert_eq!(elsewhere.sql.replacen("chbench_scratch", "logs", 1), logs.insert.sql);
        let folder = tempfile::tempdir().unwrap();
        let write = |text: &str| {
            let path = folder.path().join("insert.sql");
            std::fs::write(&path, text).unwrap();
            path
        };
        let error = |text: &str| format!("{:#}", insert_of(&write(text), &Params::new().with("batch", 3)).unwrap_err());
        assert!(error("INSERT INTO t SELECT 1").contains("has no {batch}"));
        assert!(error("SELECT {batch}").contains("is not an INSERT"));
        assert!(
            error("INSERT INTO t SELECT * FROM numbers({batch}); INSERT INTO t SELECT 1").contains("one statement")
        );
        let insert = insert_of(&write("INSERT INTO t SELECT * FROM numbers({batch})"), &Params::new().with("batch", 3));
        assert_eq!(insert.unwrap().sql, "INSERT INTO t SELECT * FROM numbers(3)");
    }
}

//! `cargo xtask measure`, in two forms told apart by the first argument (see
//! [`names_files`]):
//!
//! - `measure FILE.sql...`: run SQL files on the chosen target; in each file the
//!   statements before the last are set-up, the last one is measured. Files take no
//!   parameters: a `{name}` left in one is an error naming its line, before the engine
//!   starts. When the last statement is an `EXPLAIN`, the index stages of the query it
//!   explains are read as the pack form reads them, and its read_rows are said to be the
//!   plan's lines.
//! - `measure PACK QUERY [--design D] [--rows N]`: build or reuse a scenario pack's
//!   dataset and measure one of its queries there, with the EXPLAIN index stages, the
//!   table's parts and its column sizes. The pack, the query, the design and the row
//!   count are all checked before the engine starts.
//!
//! Both print a short summary by default ([`FileSummary`], [`PackSummary`]) and the full
//! record with `--json` (`{"file", "answer", "stats"}` per file; one document for a pack),
//! whose keys stay as they were; `index_stages` and `notes` are added only where they
//! apply (an EXPLAIN statement, an answer without rows).

use std::fmt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use chbench::explain::{Explained, TableRead, applies_skip_indexes_on_data_read, explain_indexes, explained};
use chbench::files::shown;
use chbench::fixtures::{Fixture, Params, Statement};
use chbench::markdown::Table;
use chbench::measure::measure;
use chbench::packs::{AlsoMeasure, CLAIMS_FILE, Observation, PACKS_DIR_ENV, Pack, known_packs_in, packs_root};
use chbench::settings::Settings;
use chbench::stats::{QueryStats, StatementTag};
use chbench::table_parts::{ColumnSizes, PartsSummary};
use chbench::units::{human_bytes, parse_count, thousands};

use crate::flags::Measure;

impl Measure {
    pub fn run(mut self) -> Result<()> {
        // Resolved once, first: `auto` says which deployment it chose before anything else,
        // and one brought up or down meanwhile changes nothing of this run.
        self.target.target = chbench::targets::resolve_kind(self.target.target);
        self.engine.choose_for(self.target.target)?;
        if names_files(&self.args) { self.run_files() } else { self.run_pack() }
    }

    /// The storage profile's volume, made after the inputs are checked and before the
    /// target opens (the guard is dropped after it closes: the engine's folder is on it).
    /// A pack's rows have no estimate of their bytes: the volume takes a share of the free
    /// space. No fio: measure records no storage baseline.
    fn volume(&self) -> Result<Option<chbench::targets::volume::VolumeGuard>> {
        self.storage.activate_for(self.target.target, None, false)
    }

    fn run_files(self) -> Result<()> {
        // The files set everything up themselves: a pack flag here means the user thought
        // of the other form, and silently ignoring it would measure something else.
        let pack_flags: Vec<&str> = [("--design", self.design.is_some()), ("--rows", self.rows.is_some())]
            .into_iter()
            .filter_map(|(flag, given)| given.then_some(flag))
            .collect();
        if !pack_flags.is_empty() {
            bail!(
                "{}: for a pack's query only (cargo xtask measure PACK QUERY), and {} is an SQL file",
                pack_flags.join(" and "),
                self.args[0].display()
            );
        }
        // Every file is read and checked (placeholders, empty files) before the engine starts.
        let mut files = Vec::new();
        for file in &self.args {
            // No parameters here: a `{name}` left in the file is an error at its line.
            let fixture = Fixture::read(file)?;
            let statements = fixture.render(&Params::none_for("cargo xtask measure"))?;
            files.push((file, fixture.name(), statements));
        }
        let _volume = self.volume()?;
        let mut target = crate::features::open_target(self.target.target)?;
        for (file, name, mut statements) in files {
            let Some(last) = statements.pop() else { continue };
            let setup_statements = statements.len();
            for statement in &statements {
                target.execute(statement).with_context(|| statement.location())?;
            }
            let tag = StatementTag::new("measure", "cli", &name, 1);
            let measured = measure(&mut target, &last, &tag, &Settings::new())?;
            // Unknown when the engine cannot say (a statement that is not a query).
            let skip_indexes_on_data_read = applies_skip_indexes_on_data_read(&mut target, &last).ok();
            let explain = match explained(&last) {
                None => None,
                Some(Explained::Other { kind }) => Some(ExplainStages::None { kind }),
                Some(Explained::Plan { query }) => {
                    // The explained query keeps the statement's file and line for errors.
                    let query = Statement { sql: query.to_string(), ..last.clone() };
                    Some(ExplainStages::Plan(explain_indexes(&mut target, &query)?))
                }
            };
            let summary = FileSummary {
                file: file.display().to_string(),
                location: last.location(),
                setup_statements,
                skip_indexes_on_data_read,
                answer: measured.body,
                stats: measured.stats.without_raw(),
                explain,
            };
            // One summary or JSON document per file.
            print_summary(self.json, summary)?;
        }
        Ok(())
    }

    fn run_pack(self) -> Result<()> {
        let PackCase { pack, query, design, rows } =
            PackCase::check(&self.args, self.design.as_deref(), self.rows.as_deref())?;
        let _volume = self.volume()?;
        // No skip-index-free second run: that is for a claim that compares the two, and
        // here nothing is claimed.
        let observation = crate::features::or_rerun_with_the_feature(
            self.target.target,
            pack.observe(self.target.target, &query, &design, rows, AlsoMeasure::Nothing),
        )?;
        let summary = PackSummary { pack: pack.name, query, design, rows, observation };
        print_summary(self.json, summary)?;
        Ok(())
    }
}

/// What `measure` prints of a file's statement or a pack's query: the summary, or its
/// record as JSON.
trait Summary: fmt::Display + Send + 'static {
    fn record(&self) -> serde_json::Value;
}

impl Summary for FileSummary {
    fn record(&self) -> serde_json::Value {
        FileSummary::record(self)
    }
}

impl Summary for PackSummary {
    fn record(&self) -> serde_json::Value {
        PackSummary::record(self)
    }
}

/// Prints `summary` (`--json`: its record, one JSON document, so that it pipes into jq),
/// made on a thread a stop abandons at once: sorting and writing out a large answer takes
/// long (20 s for 20 million rows).
fn print_summary(json: bool, summary: impl Summary) -> Result<()> {
    let text = chbench::interrupt::until_stopped(move || match json {
        true => Ok(format!("{}\n", serde_json::to_string_pretty(&summary.record())?)),
        false => Ok(summary.to_string()),
    })?;
    print!("{text}");
    Ok(())
}

/// The index stages of an `EXPLAIN` statement's query, read as a pack's query's are.
#[derive(Debug)]
enum ExplainStages {
    Plan(Vec<TableRead>),
    /// An EXPLAIN of another kind (`PIPELINE`, `AST`...), which has none.
    None {
        kind: String,
    },
}

/// The last statement of one SQL file, measured.
#[derive(Debug)]
struct FileSummary {
    file: String,
    location: String,
    setup_statements: usize,
    /// Whether the statement applies skip indexes while reading; `None`: unknown.
    skip_indexes_on_data_read: Option<bool>,
    answer: String,
    stats: QueryStats,
    explain: Option<ExplainStages>,
}

impl FileSummary {
    /// The full record (`--json`): today's keys, and `index_stages` and `notes` only
    /// where they apply, so that scripts reading the record see it unchanged.
    fn record(&self) -> serde_json::Value {
        let mut record = serde_json::json!({
            "file": self.file,
            "answer": self.answer,
            "stats": self.stats,
        });
        if let Some(ExplainStages::Plan(reads)) = &self.explain {
            record["index_stages"] = serde_json::json!(reads);
        }
        let notes = self.notes();
        if !notes.is_empty() {
            record["notes"] = serde_json::json!(notes);
        }
        record
    }

    /// What the numbers alone would let a reader get wrong.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if answer_lines(&self.answer) == 0 {
            notes.push(NO_ROWS.to_string());
        }
        if self.explain.is_some() {
            let read_rows = self.stats.read_rows;
            // The embedded engine counts the plan's lines as rows read; say what they are.
            notes.push(if read_rows == answer_lines(&self.answer) as u64 {
                format!("this is an EXPLAIN: it reads no table, and its read_rows ({read_rows}) are the lines of the plan it printed")
            } else {
                format!("this is an EXPLAIN: it reads no table, and its read_rows ({read_rows}) are not rows of a table")
            });
        }
        notes
    }
}

/// The note for an answer without rows.
const NO_ROWS: &str = "the query returned no rows";

impl fmt::Display for FileSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let setup = match self.setup_statements {
            0 => "no set-up".to_string(),
            1 => "after 1 set-up statement".to_string(),
            n => format!("after {n} set-up statements"),
        };
        writeln!(f, "{} ({setup})", self.location)?;
        match &self.explain {
            // A plan as TabSeparated text is escaped JSON or one line of a tree a row:
            // the index stages below are its readable part.
            Some(_) => writeln!(f, "  answer: a plan of {} lines (--json prints it)", answer_lines(&self.answer))?,
            None => write_answer(f, &self.answer)?,
        }
        // An EXPLAIN reads no table: its counts are the plan's lines (said in a note).
        if self.explain.is_none() {
            write_reads(f, &self.stats, self.skip_indexes_on_data_read)?;
        }
        write_times(f, &self.stats)?;
        match &self.explain {
            Some(ExplainStages::Plan(reads)) => write_stages(f, reads, None)?,
            Some(ExplainStages::None { kind }) => writeln!(f, "  index stages: none (EXPLAIN {kind} shows none)")?,
            None => {}
        }
        for note in self.notes() {
            writeln!(f, "  note: {note}")?;
        }
        writeln!(f)
    }
}

/// A pack's query, measured on its dataset.
#[derive(Debug)]
struct PackSummary {
    pack: String,
    query: String,
    design: String,
    rows: u64,
    observation: Observation,
}

impl PackSummary {
    /// The full record (`--json`), as it has always been, with `notes` when it has any.
    fn record(&self) -> serde_json::Value {
        let observation = &self.observation;
        let mut record = serde_json::json!({
            "pack": self.pack,
            "query": self.query,
            "design": self.design,
            "rows": self.rows,
            "answer": observation.answer,
            "table": observation.table,
            "active_parts": observation.parts.as_ref().map(|parts| parts.active_parts),
            // Already without its raw source (`observe` drops it), as the file form prints.
            "stats": observation.stats,
            "index_stages": observation.pruning,
        });
        if answer_lines(&observation.answer) == 0 {
            record["notes"] = serde_json::json!([NO_ROWS]);
        }
        record
    }
}

impl fmt::Display for PackSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let observation = &self.observation;
        writeln!(
            f,
            "pack {}, query {}, design {}, {} rows (ClickHouse {})",
            self.pack,
            self.query,
            self.design,
            thousands(self.rows),
            observation.engine_version
        )?;
        write_answer(f, &observation.answer)?;
        let on_data_read =
            observation.pruning.iter().flat_map(|read| &read.stages).any(|stage| stage.applied_on_data_read);
        write_reads(f, &observation.stats, Some(on_data_read))?;
        write_times(f, &observation.stats)?;
        write_stages(f, &observation.pruning, observation.granules_read)?;
        match (&observation.table, &observation.parts) {
            (Some(table), Some(parts)) => write_parts(f, table, parts)?,
            _ => writeln!(f, "  table: none (the plan reads no MergeTree table)")?,
        }
        if let Some(columns) = &observation.columns {
            write_columns(f, columns)?;
        }
        if answer_lines(&observation.answer) == 0 {
            writeln!(f, "  note: {NO_ROWS}")?;
        }
        writeln!(f)
    }
}

/// Lines of an answer (TabSeparated: one row a line).
fn answer_lines(answer: &str) -> usize {
    answer.lines().count()
}

/// How many lines of an answer the summary shows.
const ANSWER_LINES_SHOWN: usize = 10;

fn write_answer(f: &mut fmt::Formatter<'_>, answer: &str) -> fmt::Result {
    let lines = answer_lines(answer);
    match lines {
        0 => return writeln!(f, "  answer: no rows"),
        n => writeln!(f, "  answer ({}):", rows(n as u64))?,
    }
    for line in answer.lines().take(ANSWER_LINES_SHOWN) {
        writeln!(f, "    {line}")?;
    }
    if lines > ANSWER_LINES_SHOWN {
        writeln!(f, "    ... {} more (--json prints them all)", thousands((lines - ANSWER_LINES_SHOWN) as u64))?;
    }
    Ok(())
}

/// Rows, bytes, granules and parts read. The events exist only where the record has
/// ProfileEvents: otherwise they are unknown, never 0. `on_data_read`: whether the
/// statement applies skip indexes while reading (`None`: unknown), when `SelectedParts`
/// counts parts before them.
fn write_reads(f: &mut fmt::Formatter<'_>, stats: &QueryStats, on_data_read: Option<bool>) -> fmt::Result {
    writeln!(f, "  read: {}, {}", rows(stats.read_rows), human_bytes(stats.read_bytes))?;
    if stats.profile_events.is_empty() {
        return writeln!(f, "  granules and parts read: unknown (the statistics record has no ProfileEvents)");
    }
    writeln!(f, "  granules read: {} (SelectedMarks)", thousands(stats.event("SelectedMarks")))?;
    let when = match on_data_read {
        Some(false) => "after every index",
        Some(true) => {
            "before skip indexes: the statement applies them while reading (use_skip_indexes_on_data_read = 1)"
        }
        None => {
            "before or after skip indexes: unknown, the engine could not say whether the statement applies them while reading"
        }
    };
    writeln!(f, "  parts read: {} (SelectedParts, {when})", thousands(stats.event("SelectedParts")))
}

fn write_times(f: &mut fmt::Formatter<'_>, stats: &QueryStats) -> fmt::Result {
    let ms = |us: u64| chbench::units::milliseconds(Some(us as f64 / 1000.0));
    writeln!(
        f,
        "  result: {}; {} on the engine, {} on the client",
        rows(stats.result_rows),
        ms(stats.server_duration_us),
        ms(stats.client_duration_us)
    )
}

/// The index stages of each MergeTree read, as a table.
fn write_stages(f: &mut fmt::Formatter<'_>, reads: &[TableRead], granules_read: Option<u64>) -> fmt::Result {
    if reads.is_empty() {
        return writeln!(f, "  index stages: none (the plan reads no MergeTree table)");
    }
    for read in reads {
        if read.stages.is_empty() {
            writeln!(f, "  index stages of {}: none (no index applies)", read.table)?;
            continue;
        }
        writeln!(f, "  index stages of {} (EXPLAIN indexes = 1):", read.table)?;
        let mut table = Table::new(["stage", "index", "parts", "granules"]);
        for stage in &read.stages {
            let (parts, granules) = if stage.applied_on_data_read {
                let granules = granules_read.map_or("unknown".to_string(), thousands);
                (
                    format!("{} -> unknown", thousands(stage.initial_parts)),
                    format!("{} -> {granules} (on data read)", thousands(stage.initial_granules)),
                )
            } else {
                (
                    format!("{} -> {}", thousands(stage.initial_parts), thousands(stage.selected_parts)),
                    format!("{} -> {}", thousands(stage.initial_granules), thousands(stage.selected_granules)),
                )
            };
            table.row([stage.kind.clone(), stage.name.clone().unwrap_or_default(), parts, granules]);
        }
        f.write_str(&table.aligned(TABLE_INDENT))?;
    }
    Ok(())
}

fn write_parts(f: &mut fmt::Formatter<'_>, table: &str, parts: &PartsSummary) -> fmt::Result {
    writeln!(
        f,
        "  table {table}: {} rows in {} active parts ({} compact) of {} partitions, {} on disk",
        thousands(parts.rows),
        thousands(parts.active_parts),
        thousands(parts.compact_parts),
        thousands(parts.partitions),
        human_bytes(parts.bytes_on_disk)
    )
}

fn write_columns(f: &mut fmt::Formatter<'_>, columns: &ColumnSizes) -> fmt::Result {
    let (columns, note) = match columns {
        ColumnSizes::Known(columns) => (columns, None),
        ColumnSizes::WideOnly { columns, note } => (columns, Some(note)),
        ColumnSizes::Unknown { reason } => return writeln!(f, "  column sizes: unknown ({reason})"),
    };
    writeln!(f, "  column sizes:")?;
    let mut table = Table::new(["column", "compressed", "uncompressed", "ratio"]);
    for column in columns {
        table.row([
            column.column.clone(),
            human_bytes(column.compressed_bytes),
            human_bytes(column.uncompressed_bytes),
            match column.compressed_bytes {
                0 => "unknown".to_string(),
                _ => format!("{:.2}x", column.compression_ratio()),
            },
        ]);
    }
    f.write_str(&table.aligned(TABLE_INDENT))?;
    if let Some(note) = note {
        writeln!(f, "  note: {note}")?;
    }
    Ok(())
}

/// A table's indent: under its heading's, which is two spaces.
const TABLE_INDENT: &str = "    ";

/// `1 row`, `2,048 rows`.
fn rows(count: u64) -> String {
    if count == 1 { "1 row".to_string() } else { format!("{} rows", thousands(count)) }
}

/// The file form when the first argument is a file, or looks like one (a mistyped path
/// should say "cannot read", not "no pack"); else the pack form.
fn names_files(args: &[PathBuf]) -> bool {
    args.first().is_some_and(|first| {
        first.is_file() || first.extension().is_some_and(|extension| extension.eq_ignore_ascii_case("sql"))
    })
}

/// A pack command line, checked: everything the engine will be asked for exists.
#[derive(Debug)]
struct PackCase {
    pack: Pack,
    query: String,
    design: String,
    rows: u64,
}

impl PackCase {
    /// Loads the pack (which starts no engine) and resolves the query, the design and the
    /// row count, with their defaults. Each mistake is one line that names what exists.
    fn check(args: &[PathBuf], design: Option<&str>, rows: Option<&str>) -> Result<PackCase> {
        let pack_arg = args.first().context("measure needs SQL files, or a pack and one of its queries")?;
        // Checked first: a third argument means the user had another form in mind, and
        // nothing about the pack would explain that.
        if args.len() > 2 {
            bail!(
                "measure takes a pack and one query (PACK QUERY), or SQL files, and got {} arguments; {} was read \
                 as a pack since no such file exists and it does not end in .sql",
                args.len(),
                pack_arg.display()
            );
        }
        let pack = load_pack(pack_arg)?;
        let Some(query) = args.get(1) else {
            bail!(
                "measure {} needs a query: cargo xtask measure {} QUERY (its queries: {})",
                pack.name,
                pack.name,
                pack.queries.iter().map(|query| query.name.as_str()).collect::<Vec<_>>().join(", ")
            );
        };
        // A query name is a file stem of lowercase letters, digits and `_`: anything that
        // is not UTF-8 is simply no query of the pack.
        let query = pack.query(&query.to_string_lossy())?;
        let design = match design {
            // Any design of the pack, broken ones included: measuring what a broken design
            // does is how one sees why it is broken.
            Some(name) => pack.design(name)?.name.clone(),
            None => query.designs.first().cloned().with_context(|| {
                format!("query {} of pack {} lists no design; name one with --design", query.name, pack.name)
            })?,
        };
        // A broken design's test runs at the largest scale, a design's at each from the
        // smallest: the default is where a test ran.
        let broken = pack.broken.iter().any(|broken| broken.name == design);
        let rows = match rows {
            Some(text) => parse_count(text).map_err(|reason| anyhow!("--rows {text}: {reason}"))?,
            // The claims file checks that every query has at least one scale.
            None => if broken { query.scales.last() } else { query.scales.first() }.copied().with_context(|| {
                format!("query {} of pack {} lists no scale; give one with --rows", query.name, pack.name)
            })?,
        };
        Ok(PackCase { query: query.name.clone(), design, rows, pack })
    }
}

/// The pack a command-line name means: only a folder name under `fixtures/`, or under
/// `CHBENCH_PACKS_DIR` when it is set, as the packs harness finds packs (a path would let
/// the name reach any folder with a claims.toml, and the dataset would still be named
/// after its last component).
fn load_pack(name: &Path) -> Result<Pack> {
    let root = packs_root();
    let plain = matches!(name.components().collect::<Vec<_>>()[..], [Component::Normal(_)]);
    match name.to_str() {
        Some(text) if plain && root.join(text).join(CLAIMS_FILE).is_file() => Pack::load(&root.join(text)),
        _ => {
            // The name was read as a pack because it is no file: say how a file is told
            // apart too, for whoever meant one, and where packs were looked for.
            let place = match std::env::var_os(PACKS_DIR_ENV) {
                Some(folder) if !folder.is_empty() => format!("packs in {PACKS_DIR_ENV}={}", shown(&root)),
                _ => "packs here".to_string(),
            };
            bail!(
                "{} is neither a pack nor an SQL file ({place}: {}; an SQL file must exist or end in .sql)",
                name.display(),
                known_packs_in(&root)?
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use chbench::files::fixtures_root;

    use super::*;

    #[test]
    fn counts_read_with_thousands_separators() {
        let cases = [(0, "0"), (999, "999"), (1000, "1,000"), (250_000, "250,000"), (1_234_567, "1,234,567")];
        for (count, text) in cases {
            assert_eq!(thousands(count), text);
        }
        assert_eq!((rows(1), rows(2048)), ("1 row".to_string(), "2,048 rows".to_string()));
    }

    fn paths(args: &[&str]) -> Vec<PathBuf> {
        args.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn the_first_argument_decides_the_form() {
        // Files that do not exist still take the file form when they look like SQL.
        assert!(names_files(&paths(&["no/such/file.sql"])));
        assert!(names_files(&paths(&["SETUP.SQL", "tenants"])));
        let folder = tempfile::tempdir().unwrap();
        let without_extension = folder.path().join("query");
        std::fs::write(&without_extension, "SELECT 1").unwrap();
        assert!(names_files(&[without_extension]));
        assert!(!names_files(&paths(&["tenants", "one_tenant_one_hour"])));
        // A folder is not a file, even the pack's own.
        assert!(!names_files(&[fixtures_root().join("tenants")]));
    }

    #[test]
    fn defaults_are_the_first_design_and_the_smallest_scale() {
        let case = PackCase::check(&paths(&["primary_key", "one_device_one_hour"]), None, None).unwrap();
        assert_eq!((case.pack.name.as_str(), case.query.as_str()), ("primary_key", "one_device_one_hour"));
        assert_eq!((case.design.as_str(), case.rows), ("readings", 250_000));
        let case =
            PackCase::check(&paths(&["tenants", "one_tenant_one_hour"]), Some("time_first"), Some("2M")).unwrap();
        assert_eq!((case.design.as_str(), case.rows), ("time_first", 2_000_000));
        // A broken design: at the largest scale, where its test runs.
        let case = PackCase::check(&paths(&["tenants", "one_tenant_one_hour"]), Some("time_first"), None).unwrap();
        assert_eq!(case.rows, 4_000_000);
    }

    #[test]
    fn a_path_is_not_a_pack_name() {
        for name in ["../fixtures/tenants", "fixtures/tenants", ".", ".."] {
            let error = PackCase::check(&paths(&[name, "one_tenant_one_hour"]), None, None).unwrap_err();
            let line = format!("{error:#}");
            assert!(line.starts_with(&format!("{name} is neither a pack nor an SQL file")), "{line}");
            assert!(line.contains("primary_key") && line.contains("tenants"), "{line}");
        }
    }
}

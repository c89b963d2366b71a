//! A ClickBench checkout and the official data, read and checked before the engine
//! starts: `clickhouse/create.sql` (the table), `clickhouse/queries.sql` or the top-level
//! `queries.sql` (one query per line, as ClickBench keeps them), and the hits file (its
//! format from its extension). Each mistake is one line naming the file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::files::shown;
use crate::fixtures::{Fixture, Params, Statement};
use crate::packs::claims::declared_table;
use crate::sql::split_statements_at_lines;

/// One query of the set: its name in the bundle (`q<line>`, ClickBench's numbering), the
/// file as the bundle records it, and the statement.
#[derive(Debug, Clone)]
pub struct SetQuery {
    pub name: String,
    pub sql_file: String,
    pub statement: Statement,
}

/// A checkout's files, found and read.
#[derive(Debug, Clone)]
pub struct Checkout {
    pub dir: PathBuf,
    pub create_sql: PathBuf,
    pub queries_sql: PathBuf,
    /// The columns `create.sql` declares, in order.
    pub columns: Vec<String>,
}

/// Finds and checks a checkout's files.
pub fn read_checkout(dir: &Path) -> Result<Checkout> {
    if !dir.is_dir() {
        bail!(
            "--clickbench-dir {}: no such folder; give a checkout of github.com/ClickHouse/ClickBench (git clone \
             https://github.com/ClickHouse/ClickBench)",
            shown(dir)
        );
    }
    let dir = dir.canonicalize().with_context(|| format!("cannot resolve {}", shown(dir)))?;
    let create_sql = dir.join("clickhouse/create.sql");
    if !create_sql.is_file() {
        bail!(
            "{}: no such file; --clickbench-dir must be a ClickBench checkout, whose clickhouse/create.sql creates hits",
            shown(&create_sql)
        );
    }
    let queries_sql = [dir.join("clickhouse/queries.sql"), dir.join("queries.sql")]
        .into_iter()
        .find(|path| path.is_file())
        .with_context(|| {
            format!(
                "{}: no such file (nor {}); --clickbench-dir must be a ClickBench checkout with its queries",
                shown(&dir.join("clickhouse/queries.sql")),
                shown(&dir.join("queries.sql"))
            )
        })?;
    // A checkout comes from a repository: a link in it could point at any file of the host,
    // which the run would quote in its errors and copy into its bundle.
    for file in [&create_sql, &queries_sql] {
        if let Some(problem) = crate::files::not_own_plain_file(&dir, file) {
            bail!("{} {problem}; a ClickBench checkout's SQL files are plain files of the checkout", shown(file));
        }
    }
    let create = Fixture::read(&create_sql)?;
    let statements = create.render(&Params::new())?;
    let Some(table) = declared_table(statements.iter().map(|statement| statement.sql.as_str())) else {
        bail!("{}: no CREATE TABLE with a column list; ClickBench's creates hits (...)", shown(&create_sql));
    };
    if table.table != "hits" {
        bail!("{}: it creates table {}, not hits, which the queries read", shown(&create_sql), table.table);
    }
    let checkout = Checkout { dir, create_sql, queries_sql, columns: table.columns };
    read_queries(&checkout.queries_sql)?;
    Ok(checkout)
}

/// The queries of a ClickBench `queries.sql`: one per line, each ending with `;`. A file
/// with none, or a line that is not one whole query, is one line naming the file and line.
pub fn read_queries(path: &Path) -> Result<Vec<SetQuery>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", shown(path)))?;
    let file = shown(path);
    let mut queries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let sql = line.trim();
        if sql.is_empty() {
            continue;
        }
        let pieces = split_statements_at_lines(sql);
        if !sql.ends_with(';') || pieces.len() != 1 {
            bail!(
                "{file}:{number}: not one query on one line ending with `;` (found {}); ClickBench's queries.sql holds \
                 one query per line",
                if pieces.len() > 1 { format!("{} statements", pieces.len()) } else { "a query cut short".to_string() }
            );
        }
        queries.push(SetQuery {
            name: format!("q{}", queries.len() + 1),
            sql_file: path.to_string_lossy().into_owned(),
            statement: Statement {
                sql: sql.trim_end_matches(';').trim_end().to_string(),
                file: file.clone(),
                line: number,
            },
        });
    }
    if queries.is_empty() {
        bail!("{file} holds no query; ClickBench's queries.sql holds one query per line");
    }
    Ok(queries)
}

/// The format ClickHouse reads a hits file in, from its extension.
pub fn hits_format(path: &Path) -> Result<&'static str> {
    let extension = path.extension().map(|extension| extension.to_string_lossy().to_ascii_lowercase());
    match extension.as_deref() {
        Some("parquet") => Ok("Parquet"),
        Some("tsv") => Ok("TabSeparated"),
        _ => bail!(
            "--hits-file {}: its extension says neither Parquet nor TSV; give ClickBench's hits.parquet or hits.tsv \
             (the format is read from the extension)",
            shown(path)
        ),
    }
}

/// Refuses a hits file that is missing or of an unknown format. A file name with `*` or
/// `?` is a pattern, as ClickBench's own load reads its partitioned data
/// (`hits_*.parquet`) and as ClickHouse's `file()` takes it: at least one file in its
/// folder must match. Returns the path with its folder resolved.
pub fn check_hits_file(path: &Path) -> Result<PathBuf> {
    hits_format(path)?;
    let download = "download it from ClickBench's README (datasets.clickhouse.com/hits_compatible/: hits.parquet, or \
                    athena_partitioned/hits_*.parquet)";
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    if !name.contains(['*', '?']) {
        if !path.is_file() {
            bail!("--hits-file {}: no such file; {download}", shown(path));
        }
        return path.canonicalize().with_context(|| format!("cannot resolve {}", shown(path)));
    }
    let pattern = glob::Pattern::new(&name)
        .with_context(|| format!("--hits-file {}: {name:?} is not a file name pattern", shown(path)))?;
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let entries =
        std::fs::read_dir(folder).with_context(|| format!("--hits-file {}: cannot read its folder", shown(path)))?;
    let matching = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().is_file() && pattern.matches(&entry.file_name().to_string_lossy()))
        .count();
    if matching == 0 {
        bail!("--hits-file {}: no file in {} matches {name}; {download}", shown(path), shown(folder));
    }
    let folder = folder.canonicalize().with_context(|| format!("cannot resolve {}", shown(folder)))?;
    Ok(folder.join(name))
}

/// The first difference between the columns a file has (`file_columns`, as `DESCRIBE
/// file(...)` gives them) and those `create.sql` declares, as one line naming the file; for
/// a TSV, which names no columns, only their number is compared.
pub fn schema_mismatch(hits_file: &str, format: &str, file_columns: &[String], declared: &[String]) -> Option<String> {
    if format == "TabSeparated" {
        return (file_columns.len() != declared.len()).then(|| {
            format!(
                "--hits-file {hits_file}: {} columns a row, and create.sql declares {} ({}...); give the hits file that \
                 matches the checkout's create.sql",
                file_columns.len(),
                declared.len(),
                declared.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
            )
        });
    }
    for (position, declared_name) in declared.iter().enumerate() {
        match file_columns.get(position) {
            Some(name) if name == declared_name => {}
            Some(name) => {
                return Some(format!(
                    "--hits-file {hits_file}: column {} is {name}, where create.sql declares {declared_name}; give the \
                     hits file that matches the checkout's create.sql",
                    position + 1
                ));
            }
            None => {
                return Some(format!(
                    "--hits-file {hits_file}: it has {} columns and lacks {declared_name} (column {} of create.sql)",
                    file_columns.len(),
                    position + 1
                ));
            }
        }
    }
    file_columns.get(declared.len()).map(|extra| {
        format!(
            "--hits-file {hits_file}: column {} is {extra}, which create.sql does not declare (it has {} columns)",
            declared.len() + 1,
            declared.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkout's SQL files are its own plain files: a link (to a host file, which the
    /// run would quote in its errors and copy into its bundle) is refused before reading.
    #[test]
    fn a_checkout_file_that_links_elsewhere_is_refused_unread() {
        let root = tempfile::tempdir().unwrap();
        let checkout = root.path().join("cb");
        std::fs::create_dir_all(checkout.join("clickhouse")).unwrap();
        std::fs::write(
            checkout.join("clickhouse/create.sql"),
            "CREATE TABLE hits (URL String) ENGINE = MergeTree ORDER BY URL;\n",
        )
        .unwrap();
        let secret = root.path().join("secret.sql");
        std::fs::write(&secret, "SELECT 'the host file';\n").unwrap();
        std::os::unix::fs::symlink("../../secret.sql", checkout.join("clickhouse/queries.sql")).unwrap();
        let error = format!("{:#}", read_checkout(&checkout).unwrap_err());
        assert!(error.ends_with("clickhouse/queries.sql is a symbolic link; a ClickBench checkout's SQL files are plain files of the checkout"), "{error}");
        assert!(!error.contains("the host file"), "{error}");
        std::fs::remove_file(checkout.join("clickhouse/queries.sql")).unwrap();
        std::fs::write(checkout.join("clickhouse/queries.sql"), "SELECT count() FROM hits;\n").unwrap();
        assert!(read_checkout(&checkout).is_ok());
    }

    fn columns(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn a_queries_file_is_one_query_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("queries.sql");
        std::fs::write(&path, "SELECT COUNT(*) FROM hits;\n\nSELECT 1 FROM hits;\n").unwrap();
        let queries = read_queries(&path).unwrap();
        assert_eq!(queries.len(), 2);
        assert_eq!((queries[1].name.as_str(), queries[1].statement.line), ("q2", 3));
        assert_eq!(queries[0].statement.sql, "SELECT COUNT(*) FROM hits");
        std::fs::write(&path, "\n\n").unwrap();
        assert!(
            read_queries(&path)
                .unwrap_err()
                .to_string()
                .ends_with("holds no query; ClickBench's queries.sql holds one query per line")
        );
        std::fs::write(&path, "SELECT 1\nFROM hits;\n").unwrap();
        let error = read_queries(&path).unwrap_err().to_string();
        assert!(error.contains("queries.sql:1: not one query on one line"), "{error}");
        std::fs::write(&path, "SELECT 1; SELECT 2;\n").unwrap();
        assert!(read_queries(&path).unwrap_err().to_string().contains("found 2 statements"));
    }

    #[test]
    fn the_first_column_that_differs_is_named() {
        let declared = columns(&["WatchID", "JavaEnable", "Title"]);
        assert_eq!(schema_mismatch("h.parquet", "Parquet", &declared, &declared), None);
        let renamed =
            schema_mismatch("h.parquet", "Parquet", &columns(&["WatchID", "Java", "Title"]), &declared).unwrap();
        assert!(
            renamed.starts_with("--hits-file h.parquet: column 2 is Java, where create.sql declares JavaEnable"),
            "{renamed}"
        );
        let short = schema_mismatch("h.parquet", "Parquet", &columns(&["WatchID"]), &declared).unwrap();
        assert!(short.contains("lacks JavaEnable (column 2"), "{short}");
        let long =
            schema_mismatch("h.parquet", "Parquet", &columns(&["WatchID", "JavaEnable", "Title", "X"]), &declared);
        assert!(long.unwrap().contains("column 4 is X"));
        let tsv = schema_mismatch("h.tsv", "TabSeparated", &columns(&["c1", "c2"]), &declared).unwrap();
        assert!(tsv.contains("2 columns a row, and create.sql declares 3"), "{tsv}");
    }

    #[test]
    fn the_format_comes_from_the_extension() {
        assert_eq!(hits_format(Path::new("hits.parquet")).unwrap(), "Parquet");
        assert_eq!(hits_format(Path::new("hits.TSV")).unwrap(), "TabSeparated");
        assert!(hits_format(Path::new("hits.csv")).unwrap_err().to_string().contains("neither Parquet nor TSV"));
        assert_eq!(hits_format(Path::new("/data/hits_*.parquet")).unwrap(), "Parquet");
    }

    #[test]
    fn a_hits_file_pattern_needs_one_file_in_its_folder_to_match() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["hits_0.parquet", "hits_1.parquet", "other.parquet"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let resolved = check_hits_file(&dir.path().join("hits_*.parquet")).unwrap();
        assert_eq!(resolved, dir.path().canonicalize().unwrap().join("hits_*.parquet"));
        let none = check_hits_file(&dir.path().join("part_*.parquet")).unwrap_err().to_string();
        assert!(none.contains("no file in") && none.contains("matches part_*.parquet"), "{none}");
        let missing = check_hits_file(&dir.path().join("hits.parquet")).unwrap_err().to_string();
        assert!(missing.contains("hits.parquet: no such file"), "{missing}");
    }
}

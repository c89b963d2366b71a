//! Observing a case: the dataset of a design at a scale, the query's statement, and
//! measuring it there into an [`Observation`] (its statistics record, the index stages of
//! `EXPLAIN indexes = 1`, the parts and column sizes of the table it reads); what a
//! snapshot keeps of one; answers as they are compared (sorted lines).

use std::path::Path;

use anyhow::{Context, Result};

use super::{AlsoMeasure, Observation, Pack, Structure};
use crate::dataset::Dataset;
use crate::explain::{TableRead, explain_indexes};
use crate::files::fixtures_root;
use crate::fixtures::{Fixture, Params, Statement};
use crate::measure::measure;
use crate::settings::Settings;
use crate::stats::StatementTag;
use crate::table_parts::{ColumnSizes, PartsSummary, column_sizes_of, parts_summary};
use crate::target_info::TargetKind;

impl Pack {
    /// The dataset of a design at a scale: the schema, then the generator's files, in a
    /// database named after the pack; built once and shared (see [`Dataset`]). Guarded:
    /// its statements and every query of the pack are checked by the engine's parser
    /// before any of them runs ([`crate::guard`]).
    pub fn dataset(&self, design: &str, rows: u64) -> Result<Dataset> {
        let design = self.design(design)?;
        let files: Vec<String> =
            std::iter::once(&design.path).chain(&self.generator).map(|path| fixture_path(path)).collect();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        let queries = self.queries.iter().map(|query| self.statement(&query.name, rows)).collect::<Result<_>>()?;
        Ok(Dataset::new(
            &format!("{}_{}_{rows}", self.name, design.name),
            &self.name,
            &files,
            Params::new().with("rows", rows),
        )
        .guarded(queries))
    }

    /// A query's statement at a scale.
    pub fn statement(&self, query: &str, rows: u64) -> Result<Statement> {
        Fixture::read(&self.query(query)?.file)?.render_one(&Params::new().with("rows", rows))
    }

    /// Measures `query` on `design` at `rows` (building the dataset if needed) and reads
    /// what claims are checked against; `also` says whether to measure it a second time
    /// without a skip index.
    pub fn observe(
        &self,
        kind: TargetKind,
        query: &str,
        design: &str,
        rows: u64,
        also: AlsoMeasure,
    ) -> Result<Observation> {
        // Every error, from whichever step, names the pack, query, design and scale.
        let observed = || -> Result<Observation> {
            let statement = self.statement(query, rows)?;
            let (mut target, manifest) =
                self.dataset(design, rows)?.open_on(kind).context("cannot open the dataset")?;
            // The process in the tag, so that on a shared server a lookup by tag finds this
            // run's statement, not another's.
            let run = format!("pack-{}", std::process::id());
            let scenario = format!("{}.{design}.{rows}", self.name);
            let tag = |attempt| StatementTag::new(&run, &scenario, query, attempt);
            let measured = measure(&mut target, &statement, &tag(1), &Settings::new())?;
            let pruning = explain_indexes(&mut target, &statement)?;
            let table = pruning.first().map(|read| unqualified(&read.table).to_string());
            let (parts, columns) = match &table {
                Some(table) => table_storage(&mut target, table)?,
                None => (None, None),
            };
            let read_rows_without_skip_index = read_rows_without_skip_index(&mut target, &statement, &tag(2), also)?;
            // No ProfileEvents at all is a source that keeps none, not a read of 0 granules.
            let granules_read =
                (!measured.stats.profile_events.is_empty()).then(|| measured.stats.event("SelectedMarks"));
            Ok(Observation {
                engine_version: manifest.engine_version,
                design: design.to_string(),
                rows,
                answer_rows: measured.body.lines().count(),
                answer: sorted_lines(measured.body)?,
                read_rows: measured.stats.read_rows,
                granules_read,
                pruning,
                table,
                parts,
                columns,
                read_rows_without_skip_index,
                stats: measured.stats.without_raw(),
            })
        };
        observed().with_context(|| format!("pack {}: query {query} on design {design} at {rows} rows", self.name))
    }
}

/// The parts and column sizes of `table`, the table the query reads.
fn table_storage(
    target: &mut crate::targets::Target,
    table: &str,
) -> Result<(Option<PartsSummary>, Option<ColumnSizes>)> {
    let parts = parts_summary(target, table)?;
    let columns = column_sizes_of(target, table, &parts)?;
    Ok((Some(parts), Some(columns)))
}

/// The rows the statement reads without the skip index `also` names, when it names one.
fn read_rows_without_skip_index(
    target: &mut crate::targets::Target,
    statement: &Statement,
    tag: &StatementTag,
    also: AlsoMeasure,
) -> Result<Option<u64>> {
    let settings = match also {
        AlsoMeasure::Nothing => return Ok(None),
        AlsoMeasure::WithoutSkipIndex(Some(name)) => Settings::new().with("ignore_data_skipping_indices", name),
        AlsoMeasure::WithoutSkipIndex(None) => Settings::new().with("use_skip_indexes", 0),
    };
    Ok(Some(measure(target, statement, tag, &settings)?.stats.read_rows))
}

impl Observation {
    pub fn structure(&self) -> Structure {
        Structure {
            engine_version: self.engine_version.clone(),
            rows_in_table: self.parts.as_ref().map(|parts| parts.rows),
            answer: self.answer.clone(),
            read_rows: self.read_rows,
            granules_read: self.granules_read,
            active_parts: self.parts.as_ref().map(|parts| parts.active_parts),
            // Without the database: on a server it is named after the dataset's key, which
            // changes with the engine version.
            pruning: self
                .pruning
                .iter()
                .map(|read| TableRead { table: unqualified(&read.table).to_string(), ..read.clone() })
                .collect(),
        }
    }
}

/// An answer as it is compared: its lines sorted, since a query without ORDER BY may
/// return rows in any order. On a thread a stop abandons at once: sorting a large answer
/// takes long (20 s for 20 million rows), and a stop must not wait for it.
pub(crate) fn sorted_lines(body: String) -> Result<String> {
    crate::interrupt::until_stopped(move || {
        let mut lines: Vec<&str> = body.lines().collect();
        lines.sort_unstable();
        Ok(lines.join("\n"))
    })
}

/// Where two answers (their sorted lines) first differ, or `None` when they do not.
pub(crate) fn first_difference(first: &str, second: &str) -> Option<String> {
    if first == second {
        return None;
    }
    let (first, second): (Vec<&str>, Vec<&str>) = (first.lines().collect(), second.lines().collect());
    let index = first.iter().zip(&second).position(|(a, b)| a != b).unwrap_or(first.len().min(second.len()));
    let line = |lines: &[&str]| match lines.get(index) {
        Some(line) => format!("{:?}", crate::sql::one_line(line)),
        None => "nothing".to_string(),
    };
    Some(format!(
        "line {} of the sorted answer is {} then {} ({} and {} lines)",
        index + 1,
        line(&first),
        line(&second),
        first.len(),
        second.len()
    ))
}

/// `tenants.events` → `events`.
fn unqualified(table: &str) -> &str {
    table.rsplit('.').next().unwrap_or(table)
}

/// A path as a dataset names its fixture: relative to `fixtures/` when inside it.
fn fixture_path(path: &Path) -> String {
    path.strip_prefix(fixtures_root()).unwrap_or(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_of_answers_names_the_first_line_that_differs() {
        assert_eq!(first_difference("a\nb", "a\nb"), None);
        assert_eq!(
            first_difference("a\tb\nc", "a\tb\nd").unwrap(),
            "line 2 of the sorted answer is \"c\" then \"d\" (2 and 2 lines)"
        );
        assert_eq!(
            first_difference("a", "a\nb").unwrap(),
            "line 2 of the sorted answer is nothing then \"b\" (1 and 2 lines)"
        );
    }
}

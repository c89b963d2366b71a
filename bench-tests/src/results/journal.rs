//! The samples journal, `samples.jsonl`: one line per sample, appended as it is
//! measured, folded back into the bundle's query runs when the bundle is read. Any kind's
//! query runs: the journal knows them by their index only.

use std::fs;
use std::io;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{KindResults, RunBundle, SAMPLES_FILE};
use crate::query_runs::{QueryRuns, Sample};

/// One line of the samples journal.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct JournalRecord {
    /// Which of the bundle's `queries` the sample belongs to.
    query_index: usize,
    answer: Option<String>,
    sample: Sample,
}

impl JournalRecord {
    pub(super) fn new(query_index: usize, answer: Option<String>, sample: Sample) -> JournalRecord {
        JournalRecord { query_index, answer, sample }
    }

    /// Adds the sample to its query unless the query has it already (`results.json`
    /// may have been saved after the sample was journaled); `false` when there is no
    /// such query (the journal does not belong to this `results.json`).
    pub(super) fn fold_into<Variant>(self, queries: &mut [QueryRuns<Variant>]) -> bool {
        let Some(runs) = queries.get_mut(self.query_index) else { return false };
        if let Some(answer) = self.answer
            && runs.answer.is_empty()
        {
            runs.answer = answer;
        }
        let known =
            runs.samples.iter().any(|sample| sample.kind == self.sample.kind && sample.attempt == self.sample.attempt);
        if !known {
            runs.samples.push(self.sample);
        }
        true
    }
}

/// Folds the samples journal, if any, into `bundle`. A last line without its newline
/// was cut short by a kill and is dropped. Any other line that is not a sample record (a
/// disk error, an edit by hand) is skipped, and said once on stderr with the first such
/// line and why: one bad line never costs the samples measured around it. A sample of a
/// query the bundle lacks is an error: the journal is another run's.
pub(super) fn fold_journal<Results: KindResults>(dir: &Path, bundle: &mut RunBundle<Results>) -> Result<()> {
    let path = dir.join(SAMPLES_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
    };
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    let mut skipped: Vec<(usize, String)> = Vec::new();
    let mut folded = 0usize;
    for (index, line) in complete.lines().enumerate() {
        let record: JournalRecord = match serde_json::from_str(line) {
            Ok(record) => record,
            Err(error) => {
                skipped.push((index + 1, without_position(&error)));
                continue;
            }
        };
        let query_index = record.query_index;
        if !record.fold_into(bundle.benchmark.queries_mut()) {
            bail!(
                "{}:{} is a sample of query {query_index}, which results.json does not have: the journal belongs \
                 to another run",
                path.display(),
                index + 1
            );
        }
        folded += 1;
    }
    if let Some(line) = skipped_line(&path, &skipped, folded) {
        crate::say!("chbench: {line}");
    }
    Ok(())
}

/// The one line that says which journal lines were skipped and why, if any were.
fn skipped_line(path: &Path, skipped: &[(usize, String)], folded: usize) -> Option<String> {
    let ((first, why), others) = skipped.split_first()?;
    let more = match others.len() {
        0 => String::new(),
        1 => format!(" (and 1 more line, {})", others[0].0),
        more => format!(" (and {more} more lines, the last {})", others[more - 1].0),
    };
    Some(format!(
        "{}:{first} is not a sample record ({why}){more}: skipped; the bundle is read with the other {}",
        path.display(),
        crate::units::plural(folded as u64, "sample")
    ))
}

/// A JSON error without the `at line 1 column 5` serde_json appends: the line is the
/// journal's, which the message gives itself.
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&position) {
        Some(message) => format!("{message}, at column {}", error.column()),
        None => text,
    }
}

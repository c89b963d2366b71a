//! Scenario packs: claims about a schema written as files, no Rust.
//!
//! A pack is a folder under `fixtures/` holding a `claims.toml`:
//!
//! ```text
//! fixtures/<pack>/
//!   designs/<design>.sql   one file per design of the table (its CREATE TABLE)
//!   broken/<design>.sql    designs that must violate a named claim (optional)
//!   generator.sql          fills the table with {rows} rows, the same on every design
//!                          (or the files the claims file lists as `generator = [...]`)
//!   queries/<query>.sql    one SELECT each
//!   claims.toml            per query: designs, scales (row counts) and claims
//! ```
//!
//! [`Pack::load`] reads and checks everything (the claims file, the files it names, the
//! placeholders of every SQL file) before any engine starts, so a mistake is one line
//! naming its file and line. [`Pack::cases`] lists one case per (query, design, scale);
//! [`Pack::run_case`] builds or reuses the case's dataset, measures the query there and
//! checks its claims, measuring other designs or scales a claim compares with.
//!
//! This file holds the public types; the work is in one file per step:
//!
//! - `load.rs`: finding packs and loading one ([`Pack::load`]: the claims file, the
//!   folder's SQL files, each query's designs, scales, claims and broken designs, every SQL
//!   file rendered);
//! - `cases.rs`: a pack's cases and their test and snapshot names, its queries and designs
//!   by name;
//! - `observe.rs`: a case's dataset and statement, and measuring it into an
//!   [`Observation`] ([`Pack::observe`]), and what a snapshot keeps of one;
//! - `judge.rs`: running a case ([`Pack::run_case`]: the claims that apply, the
//!   observations they compare with, their outcomes) and its verdict;
//! - `determinism.rs`: building each design twice ([`Pack::check_determinism`]);
//! - [`claims`]: the claims file and the vocabulary, a file per claim key, each with its
//!   parsing and its evaluation. For users, the vocabulary is `docs/packs.md`.

mod cases;
pub mod claims;
mod determinism;
mod judge;
mod load;
mod observe;

pub use load::{check_name, discover, discover_in, known_packs, known_packs_in, pack_names, packs_root};

use std::path::PathBuf;

use serde::Serialize;

use crate::explain::TableRead;
use crate::invariant::Check;
use crate::table_parts::{ColumnSizes, PartsSummary};
use claims::Claim;

/// The most rows the determinism check builds: random values show at any scale, and it
/// builds every design twice.
pub const DETERMINISM_ROWS: u64 = 100_000;

/// Where the packs harness (`tests/packs.rs`) finds its packs instead of `fixtures/`,
/// keeping their snapshots in its `snapshots/`: a pack tried out of the tree.
pub const PACKS_DIR_ENV: &str = "CHBENCH_PACKS_DIR";

/// The file that makes a folder a pack.
pub const CLAIMS_FILE: &str = "claims.toml";

/// What a case records as the answer of a query whose claims say `answer_varies = true`.
pub const VARYING_ANSWER: &str = "(not recorded: answer_varies = true in claims.toml)";

/// A pack, loaded and checked.
#[derive(Debug, Clone)]
pub struct Pack {
    /// The folder's name (letters, digits, `_`): the prefix of its tests and snapshots.
    pub name: String,
    pub folder: PathBuf,
    /// `designs/*.sql`, in the order the claims file lists them (else by name).
    pub designs: Vec<SqlFile>,
    /// `broken/*.sql`.
    pub broken: Vec<SqlFile>,
    /// The files that fill a design's table, in the order they run after its schema.
    pub generator: Vec<PathBuf>,
    pub queries: Vec<Query>,
}

/// A named SQL file of a pack: a design's schema (`designs/by_day.sql` is design
/// `by_day`) or a query.
#[derive(Debug, Clone)]
pub struct SqlFile {
    pub name: String,
    pub path: PathBuf,
}

/// One query of a pack, with where it runs and what it claims.
#[derive(Debug, Clone)]
pub struct Query {
    pub name: String,
    pub file: PathBuf,
    pub designs: Vec<String>,
    /// Ascending.
    pub scales: Vec<u64>,
    pub claims: Vec<Claim>,
    /// Broken designs and the claim each must violate.
    pub broken: Vec<(String, String)>,
    /// `answer_varies = true`: the answer is not compared between builds, nor snapshotted.
    pub answer_varies: bool,
    /// `answer_may_be_empty = true`: a case whose answer has no rows may pass; otherwise
    /// it fails, since claims on what a query reads hold trivially for a filter that
    /// matches nothing.
    pub answer_may_be_empty: bool,
    /// `error = "CODE"`: the query must fail with that error on every design; nothing
    /// else is measured.
    pub expected_error: Option<ExpectedError>,
    /// `on.<design>.error = "CODE"`: it must fail so on that design (a projection or an
    /// index that avoids the error on the others); its other designs measure as usual.
    pub expected_errors_on: Vec<ExpectedError>,
}

impl Query {
    /// The error the query must fail with on `design`, if it must.
    pub fn expected_error_on(&self, design: &str) -> Option<&ExpectedError> {
        self.expected_errors_on
            .iter()
            .find(|expected| expected.design.as_deref() == Some(design))
            .or(self.expected_error.as_ref())
    }
}

/// The error code a query must fail with, the claims file's line that says so, and the
/// design it is limited to, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedError {
    pub code: String,
    pub line: usize,
    pub design: Option<String>,
}

/// One test: a query on a design at a scale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub query: String,
    pub design: String,
    pub rows: u64,
    /// On a broken design: the claim that must be violated.
    pub must_violate: Option<String>,
}

/// What [`Pack::observe`] measures besides the query as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlsoMeasure<'a> {
    Nothing,
    /// The query again with this skip index ignored (`ignore_data_skipping_indices`), or
    /// with every skip index off when `None`: what a skip index drops.
    WithoutSkipIndex(Option<&'a str>),
}

/// What one case measured.
#[derive(Debug, Clone, Serialize)]
pub struct Observation {
    pub engine_version: String,
    pub design: String,
    /// The scale: `{rows}` given to the generator.
    pub rows: u64,
    /// The answer's lines, sorted: a query without ORDER BY may return them in any order.
    /// In a case of a query whose answer varies, [`VARYING_ANSWER`].
    pub answer: String,
    /// Rows in the answer (its lines: one a row in TabSeparated), counted before any
    /// placeholder replaces it. A `count()` of nothing is one row, `0`.
    pub answer_rows: usize,
    pub read_rows: u64,
    /// Granules (marks) the read selected (the `SelectedMarks` event); `None` where the
    /// statistics record has no ProfileEvents.
    pub granules_read: Option<u64>,
    pub pruning: Vec<TableRead>,
    /// The table of the plan's first MergeTree read: what `table` and `columns` claims
    /// are about.
    pub table: Option<String>,
    pub parts: Option<PartsSummary>,
    #[serde(skip)]
    pub columns: Option<ColumnSizes>,
    /// With the claimed skip index ignored (or every one, when the claim names none).
    pub read_rows_without_skip_index: Option<u64>,
    pub stats: crate::stats::QueryStats,
}

/// What a snapshot keeps of an observation: structure only (counts, never a time or a
/// compressed size, which moves between builds).
#[derive(Debug, Clone, Serialize)]
pub struct Structure {
    pub engine_version: String,
    /// Rows the table holds (`system.parts`), not the scale asked for: a generator that
    /// writes another count shows here.
    pub rows_in_table: Option<u64>,
    pub answer: String,
    pub read_rows: u64,
    pub granules_read: Option<u64>,
    pub active_parts: Option<u64>,
    pub pruning: Vec<TableRead>,
}

/// A claim and its outcome on a case (`None`: it does not apply at this scale).
#[derive(Debug, Clone)]
pub struct ClaimCheck {
    pub claim: Claim,
    pub check: Option<Check>,
}

#[derive(Debug, Clone)]
pub struct CaseOutcome {
    pub observation: Observation,
    pub checks: Vec<ClaimCheck>,
    /// The query's file, which a failure about its answer names.
    pub query_file: PathBuf,
    /// The query says `answer_may_be_empty = true`.
    pub answer_may_be_empty: bool,
}

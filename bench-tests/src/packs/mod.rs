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
//! The vocabulary is in [`claims`] and, for users, `docs/packs.md`.

pub mod claims;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::dataset::Dataset;
use crate::explain::{IndexStage, TableRead, explain_indexes};
use crate::files::{fixtures_root, shown};
use crate::fixtures::{Fixture, Params, Statement};
use crate::invariant::{Check, Violation, claim};
use crate::measure::measure;
use crate::parts::{ColumnSizes, PartsSummary, column_sizes_of, parts_summary};
use crate::settings::Settings;
use crate::stats::StatementTag;
use crate::target_info::TargetKind;
use claims::{Claim, Rule, Stage};
use toml::Spanned;

/// The most rows the determinism check builds: random values show at any scale, and it
/// builds every design twice.
pub const DETERMINISM_ROWS: u64 = 100_000;

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

impl Case {
    /// `<pack>::<query>::<design>::rows_<N>`, with `broken::` before a broken design:
    /// nextest filters select by any part (`-E 'test(/::by_day::/)'`).
    pub fn test_name(&self, pack: &str) -> String {
        let broken = if self.must_violate.is_some() { "broken::" } else { "" };
        format!("{pack}::{}::{broken}{}::rows_{}", self.query, self.design, self.rows)
    }

    /// `<pack>_<query>_<design>_<N>`: the snapshot of a good design's structure.
    pub fn snapshot_name(&self, pack: &str) -> String {
        format!("{pack}_{}_{}_{}", self.query, self.design, self.rows)
    }
}

/// Every pack under `fixtures/`, loaded: each folder with a `claims.toml`, by name. A pack
/// that fails its checks is returned as its error, so the others still run.
pub fn discover() -> Result<Vec<(String, Result<Pack>)>> {
    let root = fixtures_root();
    Ok(pack_names()?.into_iter().map(|name| (name.clone(), Pack::load(&root.join(&name)))).collect())
}

/// The names of the packs under `fixtures/` (folders with a `claims.toml`), sorted;
/// nothing is loaded.
pub fn pack_names() -> Result<Vec<String>> {
    let root = fixtures_root();
    let mut names = Vec::new();
    for entry in fs::read_dir(&root).with_context(|| format!("cannot list {}", shown(&root)))? {
        let folder = entry.with_context(|| format!("cannot list {}", shown(&root)))?.path();
        if folder.join(CLAIMS_FILE).is_file() {
            names.push(folder.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default());
        }
    }
    names.sort();
    Ok(names)
}

/// The pack names for an error message: `logs, tenants`, or `none`.
pub fn known_packs() -> Result<String> {
    let names = pack_names()?;
    Ok(if names.is_empty() { "none".to_string() } else { names.join(", ") })
}

impl Pack {
    /// `fixtures/<name>/`.
    pub fn named(name: &str) -> Result<Pack> {
        let folder = fixtures_root().join(name);
        if !folder.join(CLAIMS_FILE).is_file() {
            bail!("no pack {name}: {} has no {CLAIMS_FILE} (packs here: {})", shown(&folder), known_packs()?);
        }
        Pack::load(&folder)
    }

    /// Reads and checks a pack folder; nothing runs. Every error is one line naming the
    /// file (and line) at fault.
    pub fn load(folder: &Path) -> Result<Pack> {
        let name = folder.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        check_name(&name, &format!("the pack folder {}", shown(folder)))?;
        let claims_path = folder.join(CLAIMS_FILE);
        let claims_file = shown(&claims_path);
        let text = fs::read_to_string(&claims_path).with_context(|| format!("cannot read {claims_file}"))?;
        let parsed = claims::parse(&claims_file, &text)?;
        let line = |span: std::ops::Range<usize>| claims::line_of(&text, span.start);
        let at = |span: std::ops::Range<usize>| format!("{claims_file}:{}", line(span));

        let designs_found = sql_files(&folder.join("designs"))?;
        let broken = sql_files(&folder.join("broken"))?;
        let queries_found = sql_files(&folder.join("queries"))?;
        if designs_found.is_empty() {
            bail!("{} holds no design: put each CREATE TABLE in designs/<design>.sql", shown(folder));
        }
        if queries_found.is_empty() {
            bail!("{} holds no query: put each SELECT in queries/<query>.sql", shown(folder));
        }
        // A case names its design alone: one name in both folders would run the good
        // schema where the broken one was meant.
        if let Some(both) = broken.iter().find(|design| designs_found.iter().any(|found| found.name == design.name)) {
            bail!(
                "{}: design {} is in both designs/ and broken/; give the broken one another name",
                shown(folder),
                both.name
            );
        }
        let generator = generator_files(folder, parsed.generator.as_ref(), &at)?;
        for design in designs_found.iter().chain(&broken) {
            check_name(&design.name, &shown(&design.path))?;
        }
        for query in &queries_found {
            check_name(&query.name, &shown(&query.path))?;
        }

        let designs = match &parsed.designs {
            None => designs_found.clone(),
            Some(listed) => {
                let listed = checked_design_list(listed, &at)?;
                let mut designs = Vec::new();
                for design in listed {
                    let found = designs_found.iter().find(|found| found.name == *design.get_ref());
                    let found = found.with_context(|| {
                        format!(
                            "{}: design {} has no file designs/{}.sql",
                            at(design.span()),
                            design.get_ref(),
                            design.get_ref()
                        )
                    })?;
                    designs.push(found.clone());
                }
                designs
            }
        };
        let design_names: Vec<String> = designs.iter().map(|design| design.name.clone()).collect();
        let pack_scales = check_scales(parsed.scales.get_ref(), &at(parsed.scales.span()))?;

        let mut queries = Vec::new();
        for query_file in &queries_found {
            let section = parsed.queries.iter().find(|(name, _)| *name.get_ref() == query_file.name);
            let Some((_, section)) = section else {
                queries.push(Query {
                    name: query_file.name.clone(),
                    file: query_file.path.clone(),
                    designs: design_names.clone(),
                    scales: pack_scales.clone(),
                    claims: Vec::new(),
                    broken: Vec::new(),
                    answer_varies: false,
                });
                continue;
            };
            let query_designs = match &section.designs {
                None => design_names.clone(),
                Some(listed) => {
                    let listed = checked_design_list(listed, &at)?;
                    for design in listed {
                        known_design(&design_names, "the pack's designs", design.get_ref(), || at(design.span()))?;
                    }
                    listed.iter().map(|design| design.get_ref().clone()).collect()
                }
            };
            let scales = match &section.scales {
                None => pack_scales.clone(),
                Some(scales) => check_scales(scales.get_ref(), &at(scales.span()))?,
            };
            let claims = claims::flatten(section, &line).map_err(|error| anyhow::anyhow!("{claims_file}:{error}"))?;
            let answer_varies = section.answer_varies.as_ref().is_some_and(|varies| *varies.get_ref());
            for claim in &claims {
                let location = || format!("{claims_file}:{}", claim.line);
                if let Some(design) = &claim.only_on {
                    known_design(&query_designs, "this query's designs", design, location)?;
                }
                for design in claim.rule.other_designs() {
                    known_design(&design_names, "the pack's designs", design, location)?;
                }
                match claim.rule {
                    Rule::ReadRowsGrowthAtMost(_) if scales.len() < 2 => {
                        bail!("{}: {} compares scales, and the query runs at one", location(), claim.name)
                    }
                    Rule::SameAnswerOnEveryDesign if query_designs.len() < 2 => {
                        bail!("{}: {} compares designs, and the query runs on one", location(), claim.name)
                    }
                    Rule::SameAnswerOnEveryDesign if answer_varies => {
                        bail!("{}: {} compares answers, and this query's answer varies", location(), claim.name)
                    }
                    _ => {}
                }
            }
            let mut broken_designs = Vec::new();
            for (design, violated) in &section.broken {
                if !broken.iter().any(|found| found.name == *design.get_ref()) {
                    bail!(
                        "{}: broken design {} has no file broken/{}.sql",
                        at(design.span()),
                        design.get_ref(),
                        design.get_ref()
                    );
                }
                if !claims.iter().any(|claim| claim.name == *violated.get_ref() && claim.only_on.is_none()) {
                    let names: Vec<&str> =
                        claims.iter().filter(|c| c.only_on.is_none()).map(|c| c.name.as_str()).collect();
                    bail!(
                        "{}: {} is not a claim of query {} (its claims: {})",
                        at(violated.span()),
                        violated.get_ref(),
                        query_file.name,
                        if names.is_empty() { "none".to_string() } else { names.join(", ") }
                    );
                }
                broken_designs.push((design.get_ref().clone(), violated.get_ref().clone()));
            }
            queries.push(Query {
                name: query_file.name.clone(),
                file: query_file.path.clone(),
                designs: query_designs,
                scales,
                claims,
                broken: broken_designs,
                answer_varies,
            });
        }
        for name in parsed.queries.keys() {
            if !queries_found.iter().any(|query| query.name == *name.get_ref()) {
                bail!("{}: query {} has no file queries/{}.sql", at(name.span()), name.get_ref(), name.get_ref());
            }
        }

        let pack = Pack { name, folder: folder.to_path_buf(), designs, broken, generator, queries };
        // Every SQL file renders with the one parameter a pack gives ({rows}), and each
        // query is one statement: checked here, before any dataset is built.
        let params = Params::new().with("rows", 1);
        for design in pack.designs.iter().chain(&pack.broken) {
            Fixture::read(&design.path)?.render(&params)?;
        }
        for file in &pack.generator {
            Fixture::read(file)?.render(&params)?;
        }
        for query in &pack.queries {
            let statement = Fixture::read(&query.file)?.render_one(&params)?;
            // Queries only read: on a server the dataset is shared, and a query that wrote
            // to it would change every later case's data.
            if !reads_only(&statement) {
                bail!(
                    "{}: a pack's query is one SELECT (or WITH ... SELECT); put set-up in the design or the generator",
                    statement.location()
                );
            }
        }
        Ok(pack)
    }

    pub fn query(&self, name: &str) -> Result<&Query> {
        self.queries.iter().find(|query| query.name == name).with_context(|| {
            let names: Vec<&str> = self.queries.iter().map(|query| query.name.as_str()).collect();
            format!("pack {} has no query {name} (its queries: {})", self.name, names.join(", "))
        })
    }

    /// A design or broken design by name.
    pub fn design(&self, name: &str) -> Result<&SqlFile> {
        self.designs.iter().chain(&self.broken).find(|design| design.name == name).with_context(|| {
            let names: Vec<&str> = self.designs.iter().chain(&self.broken).map(|design| design.name.as_str()).collect();
            format!("pack {} has no design {name} (its designs: {})", self.name, names.join(", "))
        })
    }

    /// One case per (query, design, scale), then each broken design at the query's
    /// largest scale.
    pub fn cases(&self) -> Vec<Case> {
        let mut cases = Vec::new();
        for query in &self.queries {
            for design in &query.designs {
                for &rows in &query.scales {
                    cases.push(Case { query: query.name.clone(), design: design.clone(), rows, must_violate: None });
                }
            }
            let largest = query.scales.last().copied().unwrap_or(1);
            for (design, violated) in &query.broken {
                let must_violate = Some(violated.clone());
                cases.push(Case { query: query.name.clone(), design: design.clone(), rows: largest, must_violate });
            }
        }
        cases
    }

    /// The dataset of a design at a scale: the schema, then the generator's files, in a
    /// database named after the pack; built once and shared (see [`Dataset`]).
    pub fn dataset(&self, design: &str, rows: u64) -> Result<Dataset> {
        let design = self.design(design)?;
        let files: Vec<String> =
            std::iter::once(&design.path).chain(&self.generator).map(|path| fixture_path(path)).collect();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        Ok(Dataset::new(
            &format!("{}_{}_{rows}", self.name, design.name),
            &self.name,
            &files,
            Params::new().with("rows", rows),
        ))
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
        self.observe_unnamed(kind, query, design, rows, also)
            .with_context(|| format!("pack {}: query {query} on design {design} at {rows} rows", self.name))
    }

    fn observe_unnamed(
        &self,
        kind: TargetKind,
        query: &str,
        design: &str,
        rows: u64,
        also: AlsoMeasure,
    ) -> Result<Observation> {
        let statement = self.statement(query, rows)?;
        let (mut target, manifest) = self.dataset(design, rows)?.open_on(kind).context("cannot open the dataset")?;
        // The process in the tag, so that on a shared server a lookup by tag finds this
        // run's statement, not another's.
        let run = format!("pack-{}", std::process::id());
        let scenario = format!("{}.{design}.{rows}", self.name);
        let measured =
            measure(&mut target, &statement, &StatementTag::new(&run, &scenario, query, 1), &Settings::new())?;
        let pruning = explain_indexes(&mut target, &statement)?;
        let table = pruning.first().map(|read| unqualified(&read.table).to_string());
        let (parts, columns) = match &table {
            Some(table) => {
                let parts = parts_summary(&mut target, table)?;
                let columns = column_sizes_of(&mut target, table, &parts)?;
                (Some(parts), Some(columns))
            }
            None => (None, None),
        };
        let read_rows_without_skip_index = match also {
            AlsoMeasure::Nothing => None,
            AlsoMeasure::WithoutSkipIndex(skip_index) => {
                let settings = match skip_index {
                    Some(name) => Settings::new().with("ignore_data_skipping_indices", name),
                    None => Settings::new().with("use_skip_indexes", 0),
                };
                let tag = StatementTag::new(&run, &scenario, query, 2);
                Some(measure(&mut target, &statement, &tag, &settings)?.stats.read_rows)
            }
        };
        // No ProfileEvents at all is a source that keeps none, not a read of 0 granules.
        let granules_read = (!measured.stats.profile_events.is_empty()).then(|| measured.stats.event("SelectedMarks"));
        Ok(Observation {
            engine_version: manifest.engine_version,
            design: design.to_string(),
            rows,
            answer: sorted_lines(&measured.body),
            read_rows: measured.stats.read_rows,
            granules_read,
            pruning,
            table,
            parts,
            columns,
            read_rows_without_skip_index,
            stats: measured.stats.without_raw(),
        })
    }

    /// Runs one case: observes it, then whatever its claims compare with (other designs
    /// at the same scale, the same design at the smallest scale), one dataset open at a
    /// time, and checks every claim that applies to it.
    pub fn run_case(&self, kind: TargetKind, case: &Case) -> Result<CaseOutcome> {
        let query = self.query(&case.query)?;
        let claims: Vec<&Claim> = query
            .claims
            .iter()
            .filter(|claim| claim.only_on.as_ref().is_none_or(|design| *design == case.design))
            .collect();
        let also = claims
            .iter()
            .find_map(|claim| match &claim.rule {
                Rule::RowsDroppedShareAtLeast { skip_index, .. } => {
                    Some(AlsoMeasure::WithoutSkipIndex(skip_index.as_deref()))
                }
                _ => None,
            })
            .unwrap_or(AlsoMeasure::Nothing);
        let mut observed = self.observe(kind, &case.query, &case.design, case.rows, also)?;
        if query.answer_varies {
            // No claim reads it (same_answer_on_every_design is refused on load), and a
            // snapshot of it would fail at random.
            observed.answer = VARYING_ANSWER.to_string();
        }
        let comparing = Comparing { case, query, observed: &observed };
        let mut others: BTreeMap<(String, u64), Observation> = BTreeMap::new();
        for claim in &claims {
            for (design, rows) in comparing.compared_with(&claim.rule) {
                if !others.contains_key(&(design.clone(), rows)) {
                    let other = self.observe(kind, &case.query, &design, rows, AlsoMeasure::Nothing)?;
                    others.insert((design, rows), other);
                }
            }
        }
        let checks = claims
            .into_iter()
            .map(|claim| ClaimCheck { claim: claim.clone(), check: comparing.check(claim, &others) })
            .collect();
        Ok(CaseOutcome { observation: observed, checks })
    }
}

/// A case's own observation, and what it takes to compare it with others.
struct Comparing<'a> {
    case: &'a Case,
    query: &'a Query,
    observed: &'a Observation,
}

impl Comparing<'_> {
    /// The smallest scale, when this case is at the largest of several (where growth
    /// claims are checked).
    fn smallest_if_largest(&self) -> Option<u64> {
        let smallest = *self.query.scales.first()?;
        (self.query.scales.last() == Some(&self.case.rows) && smallest < self.case.rows).then_some(smallest)
    }

    /// The (design, rows) a rule compares this case with, this case left out.
    fn compared_with(&self, rule: &Rule) -> Vec<(String, u64)> {
        let rows = self.case.rows;
        let wanted: Vec<(String, u64)> = match rule {
            Rule::SameAnswerOnEveryDesign => self.query.designs.iter().map(|design| (design.clone(), rows)).collect(),
            Rule::ReadRowsGrowthAtMost(_) => {
                self.smallest_if_largest().map(|smallest| (self.case.design.clone(), smallest)).into_iter().collect()
            }
            rule => rule.other_designs().into_iter().map(|design| (design.to_string(), rows)).collect(),
        };
        wanted
            .into_iter()
            .filter(|(design, other_rows)| !(*design == self.case.design && *other_rows == rows))
            .collect()
    }

    /// The claim's outcome (`None`: it does not apply at this case's scale).
    fn check(&self, claim: &Claim, others: &BTreeMap<(String, u64), Observation>) -> Option<Check> {
        let observed = self.observed;
        let find = |design: &str, rows: u64| -> Result<&Observation, Violation> {
            if design == self.case.design && rows == self.case.rows {
                return Ok(observed);
            }
            others.get(&(design.to_string(), rows)).ok_or_else(|| Violation {
                invariant: claim.name.clone(),
                measured: format!("unknown (design {design} at {rows} rows was not measured)"),
                expected: "a measurement to compare with".to_string(),
            })
        };
        match &claim.rule {
            Rule::SameAnswerOnEveryDesign => {
                let mut check = Ok(());
                for (design, rows) in self.compared_with(&claim.rule) {
                    check = check.and_then(|()| same_answer(&claim.name, observed, find(&design, rows)?));
                }
                Some(check)
            }
            Rule::ReadRowsGrowthAtMost(factor) => self
                .smallest_if_largest()
                .map(|smallest| read_rows_growth(&claim.name, *factor, find(&self.case.design, smallest)?, observed)),
            // Bytes or parts against the design the case runs on: no comparison to make.
            rule if rule.other_designs().contains(&self.case.design.as_str()) => None,
            rule => {
                let compared = match rule.other_designs().first() {
                    Some(design) => match find(design, self.case.rows) {
                        Ok(compared) => Some(compared),
                        Err(violation) => return Some(Err(violation)),
                    },
                    None => None,
                };
                Some(check_one(&claim.name, rule, observed, compared))
            }
        }
    }
}

impl Pack {
    /// Builds each design's dataset twice, from scratch, at the pack's smallest scale (at
    /// most [`DETERMINISM_ROWS`]), and compares every query's answers (except where the
    /// answer varies): a generator (or a schema's DEFAULT) that draws random values gives
    /// each build, and so each design, different data. The error names the design, the
    /// query and both answers.
    pub fn check_determinism(&self, kind: TargetKind) -> Result<Vec<String>> {
        let smallest = self.queries.iter().filter_map(|query| query.scales.first()).min().copied();
        let rows = smallest.unwrap_or(1).min(DETERMINISM_ROWS);
        let target = crate::targets::open_target_of_kind(kind)?;
        // A database of its own: on a shared server, another run's check of the same pack
        // must not drop it mid-build. Dropped when the check ends, whatever the outcome.
        let database = format!("{}_determinism_{}", self.name, uuid::Uuid::new_v4().simple());
        let mut scratch = ScratchDatabase { target, database: database.clone() };
        let mut report = Vec::new();
        for design in &self.designs {
            // The queries that run on this design and give the same answer each time.
            let compared: Vec<&Query> = self
                .queries
                .iter()
                .filter(|query| !query.answer_varies && query.designs.contains(&design.name))
                .collect();
            let dataset = Dataset { database: database.clone(), ..self.dataset(&design.name, rows)? };
            let mut builds: Vec<Vec<(String, String)>> = Vec::new();
            for attempt in 1..=2 {
                let built = format!("build {attempt} of design {} at {rows} rows", design.name);
                dataset.build(&mut scratch.target, "determinism").with_context(|| built.clone())?;
                let mut answers = Vec::new();
                for query in &compared {
                    let statement = self.statement(&query.name, rows)?;
                    let answer = scratch
                        .target
                        .query_text(&statement)
                        .with_context(|| format!("{}: on {built}", statement.location()))?;
                    answers.push((format!("answer query {}", query.name), sorted_lines(&answer)));
                }
                // Every table's contents too: a random value in a column no query reads
                // still makes designs compare different data (sizes, say).
                answers.extend(table_checksums(&mut scratch.target).with_context(|| built.clone())?);
                builds.push(answers);
            }
            for ((what, first), (_, second)) in builds[0].iter().zip(&builds[1]) {
                if let Some(difference) = first_difference(first, second) {
                    bail!(
                        "the generator is not deterministic: two builds of design {} at {rows} rows {what} \
                         differently ({difference}); derive every value from `number` (cityHash64(number), \
                         number % k) instead of rand() or now(), see docs/packs.md",
                        design.name,
                    );
                }
            }
            let skipped = self.queries.len() - compared.len();
            report.push(format!(
                "design {}: two builds at {rows} rows, the same answers to {} queries{}",
                design.name,
                compared.len(),
                if skipped > 0 {
                    format!(" ({skipped} not compared: not on this design, or answer varies)")
                } else {
                    String::new()
                }
            ));
        }
        Ok(report)
    }
}

/// `hold table <t> as` and its row count and a checksum of every row, for each MergeTree
/// table of the current database.
fn table_checksums(target: &mut crate::targets::Target) -> Result<Vec<(String, String)>> {
    #[derive(serde::Deserialize)]
    struct TableName {
        name: String,
    }
    let tables: Vec<TableName> = target.query_rows(
        "SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' ORDER BY name",
    )?;
    let mut checksums = Vec::new();
    for TableName { name } in tables {
        // A sum of row hashes: the same rows give the same sum whatever their order.
        let checksum = target
            .query_text(&format!("SELECT count(), sum(cityHash64(*)) FROM {name}"))
            .with_context(|| format!("cannot checksum table {name}"))?;
        checksums.push((format!("hold table {name} as"), checksum.trim().replace('\t', " rows, checksum ")));
    }
    Ok(checksums)
}

/// The determinism check's database, dropped when the check ends (on a server it would
/// otherwise stay; the embedded engine's scratch folder goes with the process anyway).
struct ScratchDatabase {
    target: crate::targets::Target,
    database: String,
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        if let Err(error) = self.target.execute(&format!("DROP DATABASE IF EXISTS {}", self.database)) {
            eprintln!("chbench: cannot drop the determinism check's database {}: {error:#}", self.database);
        }
    }
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
}

impl CaseOutcome {
    /// `Ok` with a line per claim when the case holds what it must: every claim on a
    /// design, the named violation on a broken design. Else the reason, one line each.
    pub fn verdict(&self, case: &Case, claims_file: &str) -> Result<Vec<String>, String> {
        let mut report = Vec::new();
        let mut failures = Vec::new();
        for ClaimCheck { claim, check } in &self.checks {
            let location = format!("{claims_file}:{}", claim.line);
            match check {
                None => report.push(format!(
                    "{location}: {} does not apply here (checked at the largest scale, or on the other designs)",
                    claim.name
                )),
                Some(Ok(())) => report.push(format!("{location}: {} holds", claim.name)),
                Some(Err(violation)) if case.must_violate.as_deref() == Some(claim.name.as_str()) => {
                    report.push(format!("{location}: {violation} (as this broken design must)"))
                }
                Some(Err(violation)) if case.must_violate.is_some() => {
                    report.push(format!("{location}: {violation} (also broken here)"))
                }
                Some(Err(violation)) => failures.push(format!("{location}: {violation}")),
            }
        }
        if let Some(must) = &case.must_violate {
            let named = self.checks.iter().find(|check| check.claim.name == *must);
            if !named.is_some_and(|check| matches!(check.check, Some(Err(_)))) {
                let location = named.map(|check| format!("{claims_file}:{}: ", check.claim.line)).unwrap_or_default();
                let observed = &self.observation;
                let granules = observed.granules_read.map_or("unknown".to_string(), |granules| granules.to_string());
                failures.push(format!(
                    "{location}broken design {} at {} rows was expected to violate {must}, but the claim held ({} rows \
                     and {granules} granules read): this claim does not catch the design at this scale",
                    case.design, case.rows, observed.read_rows
                ));
            }
        }
        if self.observation.answer.is_empty() {
            report.push(
                "note: the query returned no rows here, so claims about what it reads hold easily; check its filter \
                 against the generator's data"
                    .to_string(),
            );
        }
        if failures.is_empty() { Ok(report) } else { Err(failures.join("\n")) }
    }
}

fn check_one(name: &str, rule: &Rule, observed: &Observation, compared: Option<&Observation>) -> Check {
    match rule {
        Rule::ReadRowsAtMost(bound) => claim(
            name,
            observed.read_rows <= *bound,
            format!("{} rows read", observed.read_rows),
            format!("at most {bound}"),
        ),
        Rule::GranulesReadAtMost(bound) => match observed.granules_read {
            Some(granules) => claim(
                name,
                granules <= *bound,
                format!("{granules} granules read ({} rows)", observed.read_rows),
                format!("at most {bound}"),
            ),
            None => {
                claim(name, false, "unknown (the statistics record has no ProfileEvents)", format!("at most {bound}"))
            }
        },
        Rule::PartsSelected { stage, skip_index, exactly, bound } => {
            let expected = bound_text(*exactly, *bound, "parts");
            match find_stage(observed, *stage, skip_index.as_deref()) {
                Err(missing) => claim(name, false, missing, expected),
                Ok(found) => claim(
                    name,
                    within(found.selected_parts, *exactly, *bound),
                    format!("{} of {} parts selected", found.selected_parts, found.initial_parts),
                    expected,
                ),
            }
        }
        Rule::GranulesSelected { stage, skip_index, exactly, bound } => {
            let expected = bound_text(*exactly, *bound, "granules");
            match find_stage(observed, *stage, skip_index.as_deref()) {
                Err(missing) => claim(name, false, missing, expected),
                Ok(found) => claim(
                    name,
                    within(found.selected_granules, *exactly, *bound),
                    format!("{} of {} granules selected", found.selected_granules, found.initial_granules),
                    expected,
                ),
            }
        }
        Rule::GranulesDroppedShareAtLeast { stage, skip_index, share } => {
            let expected = format!("at least {share} of the granules dropped");
            match find_stage(observed, *stage, skip_index.as_deref()) {
                Err(missing) => claim(name, false, missing, expected),
                Ok(found) if found.initial_granules == 0 => {
                    claim(name, false, "unknown (the stage was given no granules)", expected)
                }
                Ok(found) => {
                    let dropped = 1.0 - found.selected_granules as f64 / found.initial_granules as f64;
                    claim(
                        name,
                        no_less(dropped, *share),
                        format!(
                            "{dropped:.4} dropped ({} of {} granules kept)",
                            found.selected_granules, found.initial_granules
                        ),
                        expected,
                    )
                }
            }
        }
        Rule::RowsDroppedShareAtLeast { skip_index, share } => {
            let index = match skip_index {
                Some(name) => format!("skip index {name}"),
                None => "skip indexes".to_string(),
            };
            let expected = format!("at least {share} of the rows dropped by the {index}");
            if let Err(missing) = find_stage(observed, Stage::Skip, skip_index.as_deref()) {
                return claim(name, false, missing, expected);
            }
            match observed.read_rows_without_skip_index {
                Some(without) if without > 0 => {
                    let dropped = 1.0 - observed.read_rows as f64 / without as f64;
                    claim(
                        name,
                        no_less(dropped, *share),
                        format!(
                            "{dropped:.4} dropped ({} rows read, {without} without the {index})",
                            observed.read_rows
                        ),
                        expected,
                    )
                }
                _ => claim(name, false, format!("unknown (the query read no rows without the {index})"), expected),
            }
        }
        Rule::CompressedBytesBelow { column, design } => {
            let expected = format!("fewer compressed bytes than on design {design}");
            let Some(compared) = compared else { return claim(name, false, "unknown (nothing to compare)", expected) };
            match (compressed_bytes(observed, column.as_deref()), compressed_bytes(compared, column.as_deref())) {
                (Ok(here), Ok(there)) => {
                    claim(name, here < there, format!("{here} bytes here, {there} on {design}"), expected)
                }
                (Err(reason), _) | (_, Err(reason)) => claim(name, false, format!("unknown ({reason})"), expected),
            }
        }
        Rule::CompressionRatioAtLeast { column, ratio } => {
            let expected = format!("a compression ratio of at least {ratio}");
            match compression_ratio(observed, column.as_deref()) {
                Ok(measured) => claim(name, no_less(measured, *ratio), format!("{measured:.3}"), expected),
                Err(reason) => claim(name, false, format!("unknown ({reason})"), expected),
            }
        }
        Rule::ActivePartsAtMost(bound) => match &observed.parts {
            Some(parts) => claim(
                name,
                parts.active_parts <= *bound,
                format!("{} active parts", parts.active_parts),
                format!("at most {bound}"),
            ),
            None => claim(name, false, "unknown (the query reads no MergeTree table)", format!("at most {bound}")),
        },
        Rule::ActivePartsAtMostShareOf { design, share } => {
            let expected = format!("at most {share} of design {design}'s active parts");
            match (&observed.parts, compared.and_then(|compared| compared.parts.as_ref())) {
                (Some(here), Some(there)) => claim(
                    name,
                    no_more(here.active_parts as f64, share * there.active_parts as f64),
                    format!("{} active parts here, {} on {design}", here.active_parts, there.active_parts),
                    expected,
                ),
                _ => claim(name, false, "unknown (the query reads no MergeTree table)", expected),
            }
        }
        // Compared with other measurements, by `Comparing::check`.
        Rule::ReadRowsGrowthAtMost(_) | Rule::SameAnswerOnEveryDesign => {
            claim(name, false, "unknown (this claim compares measurements)", "a comparison")
        }
    }
}

fn same_answer(name: &str, observed: &Observation, other: &Observation) -> Check {
    match first_difference(&observed.answer, &other.answer) {
        None => Ok(()),
        Some(difference) => claim(
            name,
            false,
            format!("designs {} and {} differ: {difference}", observed.design, other.design),
            "the same answer on every design",
        ),
    }
}

/// Where two answers (their sorted lines) first differ, or `None` when they do not.
fn first_difference(first: &str, second: &str) -> Option<String> {
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

/// Bounds on shares and ratios, with room for floating-point rounding: 4 of 5 granules
/// kept computes as 0.19999999999999996 dropped, which a claim of 0.2 must accept.
fn no_less(measured: f64, bound: f64) -> bool {
    measured >= bound - ROUNDING * bound.abs().max(1.0)
}

fn no_more(measured: f64, bound: f64) -> bool {
    measured <= bound + ROUNDING * bound.abs().max(1.0)
}

const ROUNDING: f64 = 1e-9;

fn read_rows_growth(name: &str, factor: f64, smallest: &Observation, largest: &Observation) -> Check {
    claim(
        name,
        no_more(largest.read_rows as f64, factor * smallest.read_rows as f64),
        format!(
            "{} rows read at {} rows, {} at {}",
            largest.read_rows, largest.rows, smallest.read_rows, smallest.rows
        ),
        format!("at most {factor} times as many at the largest scale as at the smallest"),
    )
}

fn within(measured: u64, exactly: bool, bound: u64) -> bool {
    if exactly { measured == bound } else { measured <= bound }
}

fn bound_text(exactly: bool, bound: u64, what: &str) -> String {
    if exactly { format!("exactly {bound} {what} selected") } else { format!("at most {bound} {what} selected") }
}

/// The stage of the first MergeTree read, or what was there instead.
fn find_stage<'a>(observed: &'a Observation, stage: Stage, skip_index: Option<&str>) -> Result<&'a IndexStage, String> {
    let Some(read) = observed.pruning.first() else {
        return Err("no MergeTree read in the plan".to_string());
    };
    let found = read.stages.iter().find(|found| {
        found.kind == stage.engine_name() && skip_index.is_none_or(|name| found.name.as_deref() == Some(name))
    });
    found.ok_or_else(|| {
        let present: Vec<String> = read
            .stages
            .iter()
            .map(|found| match &found.name {
                Some(name) => format!("{} {name}", found.kind),
                None => found.kind.clone(),
            })
            .collect();
        let wanted = match skip_index {
            Some(name) => format!("Skip {name}"),
            None => stage.engine_name().to_string(),
        };
        format!("no {wanted} stage in the read of {} (stages: {})", read.table, present.join(", "))
    })
}

fn compressed_bytes(observed: &Observation, column: Option<&str>) -> Result<u64, String> {
    match column {
        None => observed.parts.as_ref().map(|parts| parts.data_compressed_bytes).ok_or_else(no_table),
        Some(column) => column_of(observed, column).map(|bytes| bytes.compressed_bytes),
    }
}

fn compression_ratio(observed: &Observation, column: Option<&str>) -> Result<f64, String> {
    let (uncompressed, compressed) = match column {
        None => {
            let parts = observed.parts.as_ref().ok_or_else(no_table)?;
            (parts.data_uncompressed_bytes, parts.data_compressed_bytes)
        }
        Some(column) => {
            let bytes = column_of(observed, column)?;
            (bytes.uncompressed_bytes, bytes.compressed_bytes)
        }
    };
    if compressed == 0 {
        return Err("no compressed bytes".to_string());
    }
    Ok(uncompressed as f64 / compressed as f64)
}

fn column_of(observed: &Observation, column: &str) -> Result<crate::table_bytes::ColumnBytes, String> {
    let columns = match observed.columns.as_ref().ok_or_else(no_table)? {
        ColumnSizes::Known(columns) => columns,
        ColumnSizes::WideOnly { note, .. } | ColumnSizes::Unknown { reason: note } => return Err(note.clone()),
    };
    columns
        .iter()
        .find(|bytes| bytes.column == column)
        .cloned()
        .ok_or_else(|| format!("table {} has no column {column}", observed.table.as_deref().unwrap_or("?")))
}

fn no_table() -> String {
    "the query reads no MergeTree table".to_string()
}

/// `tenants.events` → `events`.
fn unqualified(table: &str) -> &str {
    table.rsplit('.').next().unwrap_or(table)
}

fn sorted_lines(body: &str) -> String {
    let mut lines: Vec<&str> = body.lines().collect();
    lines.sort_unstable();
    lines.join("\n")
}

/// The files a pack's `generator` key lists (each inside the pack folder and present), or
/// by default its `generator.sql`; `at` turns a span of the claims file into `file:line`.
fn generator_files(
    folder: &Path,
    listed: Option<&toml::Spanned<Vec<toml::Spanned<String>>>>,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<Vec<PathBuf>> {
    let files = match listed {
        None => {
            let generator = folder.join("generator.sql");
            if !generator.is_file() {
                bail!("{} has no generator.sql (the statements that fill the table with {{rows}} rows)", shown(folder));
            }
            vec![generator]
        }
        Some(listed) => {
            if listed.get_ref().is_empty() {
                bail!(
                    "{}: generator lists no file; list the files that fill the table with {{rows}} rows, \
                     e.g. generator = [\"generator.sql\"]",
                    at(listed.span())
                );
            }
            let mut files = Vec::new();
            for file in listed.get_ref() {
                let relative = Path::new(file.get_ref());
                // A pack is its folder: copied elsewhere, it must still find its files.
                let inside =
                    relative.components().all(|component| matches!(component, std::path::Component::Normal(_)));
                if !inside {
                    bail!(
                        "{}: generator file {} must be a path inside the pack folder",
                        at(file.span()),
                        file.get_ref()
                    );
                }
                let path = folder.join(relative);
                if !path.is_file() {
                    bail!("{}: generator file {} does not exist", at(file.span()), file.get_ref());
                }
                files.push(path);
            }
            files
        }
    };
    Ok(files)
}

/// A name used in test names, dataset names and snapshot files.
fn check_name(name: &str, what: &str) -> Result<()> {
    // Lowercase too: a name is a file on disk and a test name, and case would tell two
    // apart on one file system and not on another.
    let valid = crate::sql::is_identifier(name)
        && name.starts_with(|first: char| first.is_ascii_lowercase())
        && !name.chars().any(|c| c.is_ascii_uppercase());
    if !valid {
        bail!("{what}: name {name:?} must be lowercase letters, digits and _, starting with a letter");
    }
    Ok(())
}

/// `list` says which designs `designs` are ("this query's designs").
fn known_design(designs: &[String], list: &str, design: &str, location: impl Fn() -> String) -> Result<()> {
    if !designs.iter().any(|known| known == design) {
        bail!("{}: design {design} is not one of {list} ({})", location(), designs.join(", "));
    }
    Ok(())
}

/// A `designs` list with at least one design, each once: an empty list would run no
/// case (and check no claim), a design listed twice would make two tests of one name.
fn checked_design_list<'a>(
    listed: &'a Spanned<Vec<Spanned<String>>>,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<&'a [Spanned<String>]> {
    let designs = listed.get_ref();
    if designs.is_empty() {
        bail!("{}: designs lists no design; leave it out to run on every design", at(listed.span()));
    }
    for (index, design) in designs.iter().enumerate() {
        if designs[..index].iter().any(|earlier| earlier.get_ref() == design.get_ref()) {
            bail!("{}: design {} is listed twice", at(design.span()), design.get_ref());
        }
    }
    Ok(designs)
}

fn check_scales(scales: &[u64], location: &str) -> Result<Vec<u64>> {
    if scales.is_empty() || scales.contains(&0) {
        bail!("{location}: scales must list row counts of at least 1, e.g. scales = [1_000_000]");
    }
    let mut sorted = scales.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    Ok(sorted)
}

/// Whether a statement is a query: its first word, after comments, is SELECT or WITH.
fn reads_only(statement: &Statement) -> bool {
    matches!(crate::sql::first_keyword(&statement.sql).as_str(), "SELECT" | "WITH")
}

/// The `*.sql` files of a folder by name (none when the folder is missing).
fn sql_files(folder: &Path) -> Result<Vec<SqlFile>> {
    let entries = match fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error).with_context(|| format!("cannot list {}", shown(folder))),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.with_context(|| format!("cannot list {}", shown(folder)))?.path();
        if path.extension().is_some_and(|extension| extension == "sql") {
            let name = path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
            files.push(SqlFile { name, path });
        }
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// A path as a dataset names its fixture: relative to `fixtures/` when inside it.
fn fixture_path(path: &Path) -> String {
    path.strip_prefix(fixtures_root()).unwrap_or(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_ratios_on_the_bound_hold_despite_rounding() {
        // 4 of 5 granules kept: 1 - 4/5 computes as 0.19999999999999996.
        assert!(no_less(1.0 - 4.0 / 5.0, 0.2));
        assert!(!no_less(0.199, 0.2));
        // 29 parts against 100 with a share of 0.29: 0.29 * 100 computes as 28.999999999999996.
        assert!(no_more(29.0, 0.29 * 100.0));
        assert!(!no_more(30.0, 0.29 * 100.0));
    }

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

    #[test]
    fn only_selects_are_queries() {
        let statement = |sql: &str| Statement { sql: sql.to_string(), file: "q.sql".into(), line: 1 };
        assert!(reads_only(&statement("-- one hour\nSELECT 1")));
        assert!(reads_only(&statement("with 1 AS x SELECT x")));
        assert!(reads_only(&statement("(SELECT 1) UNION ALL (SELECT 2)")));
        assert!(reads_only(&statement("/* INSERT? no */ SELECT 1")));
        assert!(!reads_only(&statement("INSERT INTO t SELECT 1")));
        assert!(!reads_only(&statement("OPTIMIZE TABLE t FINAL")));
    }
}

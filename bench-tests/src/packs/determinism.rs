//! The determinism check: each design's dataset built twice from scratch, in a database of
//! its own, and every query's answers and every table's checksum compared between the two
//! builds, so that a generator drawing random values is caught before designs are
//! compared on different data.

use anyhow::{Context, Result, bail};

use super::observe::{first_difference, sorted_lines};
use super::{DETERMINISM_ROWS, Pack, Query, SqlFile};
use crate::dataset::Dataset;
use crate::target_info::TargetKind;

/// What one build showed: (`answer query <q>` or `hold table <t> as`, what it was).
type BuildReadings = Vec<(String, String)>;

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
        let mut scratch = ScratchDatabase { target, database };
        self.designs.iter().map(|design| self.check_design(&mut scratch, design, rows)).collect()
    }

    /// Builds `design` twice and compares the builds; the line that reports it.
    fn check_design(&self, scratch: &mut ScratchDatabase, design: &SqlFile, rows: u64) -> Result<String> {
        // The queries that run on this design and give the same answer each time.
        let compared: Vec<&Query> = self
            .queries
            .iter()
            .filter(|query| {
                !query.answer_varies
                    && query.expected_error_on(&design.name).is_none()
                    && query.designs.contains(&design.name)
            })
            .collect();
        let dataset = Dataset { database: scratch.database.clone(), ..self.dataset(&design.name, rows)? };
        let first = self.build_and_read(scratch, &dataset, &compared, &design.name, rows, 1)?;
        let second = self.build_and_read(scratch, &dataset, &compared, &design.name, rows, 2)?;
        for ((what, first), (_, second)) in first.iter().zip(&second) {
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
        Ok(format!(
            "design {}: two builds at {rows} rows, the same answers to {} queries{}",
            design.name,
            compared.len(),
            if skipped > 0 {
                format!(" ({skipped} not compared: not on this design, or answer varies)")
            } else {
                String::new()
            }
        ))
    }

    /// Build number `attempt` of `dataset`, and what it shows: the answers of `compared`,
    /// then every table's checksum.
    fn build_and_read(
        &self,
        scratch: &mut ScratchDatabase,
        dataset: &Dataset,
        compared: &[&Query],
        design: &str,
        rows: u64,
        attempt: u32,
    ) -> Result<BuildReadings> {
        let built = format!("build {attempt} of design {design} at {rows} rows");
        dataset.build(&mut scratch.target, "determinism").with_context(|| built.clone())?;
        let mut readings = Vec::new();
        for query in compared {
            let statement = self.statement(&query.name, rows)?;
            let answer = scratch
                .target
                .query_text(&statement)
                .with_context(|| format!("{}: on {built}", statement.location()))?;
            readings.push((format!("answer query {}", query.name), sorted_lines(answer)?));
        }
        // Every table's contents too: a random value in a column no query reads still
        // makes designs compare different data (sizes, say).
        readings.extend(table_checksums(&mut scratch.target).with_context(|| built.clone())?);
        Ok(readings)
    }
}

/// `hold table <t> as` and its row count and a checksum of every row, for each MergeTree
/// table of the current database.
fn table_checksums(target: &mut crate::targets::Target) -> Result<BuildReadings> {
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
            crate::say!("chbench: cannot drop the determinism check's database {}: {error:#}", self.database);
        }
    }
}

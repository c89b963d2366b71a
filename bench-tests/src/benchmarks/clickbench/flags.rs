//! The clickbench benchmark's flags, as `cargo xtask bench clickbench` takes them.

use std::path::PathBuf;

use clap::Args;

use super::{ClickBenchBenchmark, Source};
use crate::units::parse_count;

#[derive(Debug, Clone, Args)]
pub struct ClickBenchFlags {
    /// Rows of the shipped hits-like table (K and M suffixes work: 5M); not with
    /// --clickbench-dir, whose data is the hits file's
    // allow_negative_numbers: `-5` reaches the parser, which says a count is positive;
    // clap alone would call it an unexpected argument.
    #[arg(long, value_parser = parse_count, allow_negative_numbers = true)]
    pub rows: Option<u64>,
    /// Counted runs of each query, after the warm-ups (the source: 10)
    #[arg(long, default_value_t = 10)]
    pub runs: u32,
    /// Runs of each query before the counted ones, not counted (the source: 1)
    #[arg(long, default_value_t = 1)]
    pub warm_ups: u32,
    /// max_threads for every query (the source sets the node's vCPU count); without it, the
    /// engine's default, read from system.settings and recorded
    #[arg(long, value_name = "N")]
    pub max_threads: Option<u32>,
    /// A ClickBench checkout: its clickhouse/create.sql and clickhouse/queries.sql (or
    /// queries.sql at the top), one query per line; needs --hits-file
    #[arg(long, value_name = "CHECKOUT")]
    pub clickbench_dir: Option<PathBuf>,
    /// The official data, a .parquet or .tsv file, or a pattern of its parts ('hits_*.parquet',
    /// quoted), loaded with INSERT INTO hits SELECT * FROM file(...) (read by the engine: on a
    /// server target, a path the server can read)
    #[arg(long, value_name = "FILE")]
    pub hits_file: Option<PathBuf>,
    /// Check every query's answer against this file (a run's answers.json), not only across
    /// its runs: a query that answers otherwise is failed
    #[arg(long, value_name = "ANSWERS_JSON")]
    pub reference_answers: Option<PathBuf>,
    #[command(flatten)]
    pub profile: crate::profiles::ProfileFlag,
}

impl ClickBenchFlags {
    pub fn benchmark(&self) -> ClickBenchBenchmark {
        let source = match (&self.clickbench_dir, &self.hits_file) {
            (None, None) => Source::Shipped { rows: self.rows.unwrap_or(super::DEFAULT_ROWS) },
            (checkout, hits_file) => Source::Checkout { checkout: checkout.clone(), hits_file: hits_file.clone() },
        };
        ClickBenchBenchmark {
            source,
            rows_with_checkout: self.rows.filter(|_| self.clickbench_dir.is_some() || self.hits_file.is_some()),
            runs: self.runs,
            warm_ups: self.warm_ups,
            max_threads: self.max_threads,
            reference_answers: self.reference_answers.clone(),
            profile: self.profile.profile,
        }
    }
}

//! The throughput benchmark's flags, as `cargo xtask bench throughput` takes them.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{DEFAULT_ROUNDS, Levels, ThroughputBenchmark};
use crate::closed_loop::{parse_duration, parse_iterations};
use crate::load_generator::LoadFlags;
use crate::units::parse_count;

#[derive(Debug, Clone, Args)]
pub struct ThroughputFlags {
    /// The scenario pack whose dataset the queries run on (a folder of fixtures/), and whose
    /// queries run unless --sql is given
    #[arg(long, default_value = "logs")]
    pub pack: String,
    /// The pack's design (table) to build (default: its first)
    #[arg(long)]
    pub design: Option<String>,
    /// Rows of the pack's dataset (K, M and G suffixes work)
    // allow_negative_numbers: `-5` reaches the parser, which says a count is positive;
    // clap alone would call it an unexpected argument.
    #[arg(long, default_value = "1M", value_parser = parse_count, allow_negative_numbers = true)]
    pub rows: u64,
    /// The pack's queries to run, comma-separated (default: every query of the design)
    #[arg(long, value_delimiter = ',', conflicts_with = "sql")]
    pub query: Vec<String>,
    /// SQL files to run instead of the pack's queries, on the pack's dataset: each file's
    /// last statement is the query, the statements before it set up once (CREATE, INSERT)
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub sql: Vec<PathBuf>,
    /// Clients at once at each level, comma-separated (1 to 256)
    #[arg(long, default_value = "1,2,4")]
    pub concurrency: String,
    /// How long each level runs in each round (500ms, 2s, 1m); a statement running at the end
    /// is finished and counted [default: 2s, unless --iterations]
    #[arg(long, value_parser = parse_duration, conflicts_with = "iterations")]
    pub duration: Option<Duration>,
    /// Statements per level in each round, in all clients together, instead of --duration
    #[arg(long, value_parser = parse_iterations)]
    pub iterations: Option<u64>,
    /// Rounds: every level once per round; the spread of QPS across rounds is reported, and
    /// 5 or more a side let two bundles' QPS be tested
    #[arg(long, default_value_t = DEFAULT_ROUNDS, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// The seed of each client's order of the queries (recorded in the bundle)
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Statements per block of the runner check (SELECT 1 through the runner against a
    /// tight loop on the engine, in interleaved blocks); 0 skips the check, as do clients in
    /// the cluster (there is no loop of this tool's to check)
    #[arg(long, default_value_t = super::CHECK_BLOCK_STATEMENTS)]
    pub check_statements: u64,
    #[command(flatten)]
    pub load: LoadFlags,
}

impl ThroughputFlags {
    pub fn benchmark(&self) -> ThroughputBenchmark {
        ThroughputBenchmark {
            pack: self.pack.clone(),
            design: self.design.clone(),
            rows: self.rows,
            queries: self.query.clone(),
            sql_files: self.sql.clone(),
            levels: Levels::parse(&self.concurrency),
            duration: self.duration,
            iterations: self.iterations,
            rounds: self.rounds,
            seed: self.seed,
            check_statements: self.check_statements,
            load: self.load.clone(),
        }
    }
}

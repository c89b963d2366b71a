//! The writes benchmark's flags, as `cargo xtask bench writes` takes them.

use std::time::Duration;

use clap::Args;

use super::results::Durability;
use super::{DEFAULT_BATCH_ROWS, DEFAULT_CONCURRENCY, DEFAULT_ROUNDS, Levels, WritesBenchmark};
use crate::ab_variants::{AbRun, AbVariant, random_seed};
use crate::closed_loop::{parse_duration, parse_iterations};
use crate::units::parse_count;

#[derive(Debug, Clone, Args)]
pub struct WritesFlags {
    /// Writer clients at once at each level, comma-separated (1 to 256), each on its own
    /// connection
    #[arg(long, default_value = DEFAULT_CONCURRENCY)]
    pub concurrency: String,
    /// Rows per INSERT (K, M and G suffixes work)
    // allow_negative_numbers: `-5` reaches the parser, which says a count is positive.
    #[arg(long, default_value_t = DEFAULT_BATCH_ROWS, value_parser = parse_count, allow_negative_numbers = true)]
    pub batch_rows: u64,
    /// Whether an INSERT returns before its part is on stable storage (none, MergeTree's
    /// default) or after its files and directory are fsynced (fsync)
    #[arg(long, value_enum, default_value_t = Durability::None)]
    pub durability: Durability,
    /// How long each level runs in each round (500ms, 2s, 1m); an INSERT running at the end
    /// is finished and counted [default: 2s, unless --iterations]
    // allow_hyphen_values: `-1s` reaches the parser, which says a duration is positive,
    // rather than clap taking it for a flag.
    #[arg(long, value_parser = parse_duration, conflicts_with = "iterations", allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// An open loop instead of a closed one: INSERTs per second over all clients, each
    /// scheduled in advance and its latency measured from its scheduled start; the run says
    /// when the engine could not keep the rate, and the rate it held (on eks, with
    /// --load-from local: clickhouse-benchmark in the cluster keeps no rate)
    #[arg(long, allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// The statements the clients send, at these shares: INSERT batches, lightweight UPDATEs
    /// and DELETEs by key (the rows of one namespace written in the last seconds), and point
    /// reads (one namespace, the last second), e.g. inserts=8,updates=1,deletes=1,reads=2
    #[arg(long, default_value = "inserts=1")]
    pub mix: String,
    /// A scenario pack (a folder of fixtures/) whose design's table the INSERTs fill instead
    /// of the logs table, with the pack's INSERT (its insert.sql, or --insert)
    #[arg(long)]
    pub pack: Option<String>,
    /// The pack's design (default: its first)
    #[arg(long, requires = "pack")]
    pub design: Option<String>,
    /// The pack's INSERT: one INSERT that takes the batch's rows as {batch} (default: the
    /// pack's insert.sql)
    #[arg(long, requires = "pack", value_name = "FILE")]
    pub insert: Option<std::path::PathBuf>,
    /// INSERTs per level in each round, in all clients together, instead of --duration
    #[arg(long, value_parser = parse_iterations, allow_negative_numbers = true)]
    pub iterations: Option<u64>,
    /// Rounds: every level once per round; the spread of the rates across rounds is
    /// reported, and 5 or more a side let two bundles' rates be tested
    #[arg(long, default_value_t = DEFAULT_ROUNDS, value_parser = clap::value_parser!(u32).range(1..), allow_negative_numbers = true)]
    pub rounds: u32,
    /// INSERTs per block of the runner check (the INSERT through the runner against a tight
    /// loop on the engine, in interleaved blocks); 0 skips the check, as do clients in the
    /// cluster (there is no loop of this tool's to check)
    #[arg(long, default_value_t = super::CHECK_BLOCK_STATEMENTS, allow_negative_numbers = true)]
    pub check_statements: u64,
    /// Send each INSERT's rows inline (INSERT ... FORMAT Values, one batch the engine made
    /// from the INSERT) with async_insert = 1, wait_for_async_insert = 1: the engine buffers
    /// them and writes parts in the background; at most 100,000 rows a batch (on eks, with
    /// --load-from local)
    #[arg(long)]
    pub async_insert: bool,
    /// Stop the run after a level in which an INSERT failed (the levels done are kept);
    /// without it, failures are counted by error code and the run goes on
    #[arg(long)]
    pub stop_on_error: bool,
    /// An A/B run's variant, NAME:durability=none|fsync[,SETTING=VALUE...] (the INSERT's
    /// settings; NAME: alone runs --durability and no setting); give two or more. Every level
    /// of every round runs each variant in turn on the one table, in an order shuffled each
    /// round (docs/ab-runs.md)
    #[arg(long = "variant", value_name = "NAME:durability=D,SETTING=VALUE,...", value_parser = AbVariant::parse)]
    pub variants: Vec<AbVariant>,
    /// The seed of an A/B run's shuffle (default: random); the bundle records it
    #[arg(long, requires = "variants")]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub load: crate::load_generator::LoadFlags,
}

impl WritesFlags {
    pub fn benchmark(&self) -> WritesBenchmark {
        WritesBenchmark {
            load: self.load.clone(),
            levels: Levels::parse(&self.concurrency),
            batch_rows: self.batch_rows,
            durability: self.durability,
            duration: self.duration,
            iterations: self.iterations,
            rounds: self.rounds,
            check_statements: self.check_statements,
            stop_on_error: self.stop_on_error,
            rate: self.rate,
            mix: self.mix.clone(),
            async_insert: self.async_insert,
            inline: std::sync::OnceLock::new(),
            pack: self.pack.as_ref().map(|pack| super::PackTable {
                pack: pack.clone(),
                design: self.design.clone(),
                insert: self.insert.clone(),
            }),
            ab: (!self.variants.is_empty()).then(|| AbRun {
                variants: self.variants.clone(),
                seed: self.seed.unwrap_or_else(random_seed),
                rounds: self.rounds,
            }),
        }
    }
}

/// The benchmark `cargo xtask bench writes ARGS` asks for, its flags read as the command
/// line reads them (the defaults where ARGS gives none).
#[cfg(test)]
pub(super) fn benchmark_of(args: &[&str]) -> WritesBenchmark {
    use clap::FromArgMatches;
    let command = <WritesFlags as clap::Args>::augment_args(clap::Command::new("writes"));
    let matches = command.try_get_matches_from(std::iter::once("writes").chain(args.iter().copied())).unwrap();
    WritesFlags::from_arg_matches(&matches).unwrap().benchmark()
}

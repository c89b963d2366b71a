//! The throughput benchmark's flags, as `cargo xtask bench throughput` takes them.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{DEFAULT_ROUNDS, Levels, ThroughputBenchmark};
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
    /// tight loop on the engine, in interleaved blocks); 0 skips the check
    #[arg(long, default_value_t = super::CHECK_BLOCK_STATEMENTS)]
    pub check_statements: u64,
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
        }
    }
}

/// `500ms`, `2s`, `1.5s`, `1m`: a level's duration, above 0 and up to 24 hours.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit_seconds) = if let Some(number) = text.strip_suffix("ms") {
        (number, 1e-3)
    } else if let Some(number) = text.strip_suffix('s') {
        (number, 1.0)
    } else if let Some(number) = text.strip_suffix('m') {
        (number, 60.0)
    } else {
        return Err(not_a_duration(text));
    };
    let value: f64 = number.trim().parse().map_err(|_| not_a_duration(text))?;
    let seconds = value * unit_seconds;
    if !(seconds.is_finite() && (0.0..=86_400.0).contains(&seconds)) {
        return Err(format!("{text:?} is not a duration above 0 and up to 24 hours"));
    }
    // Below a nanosecond is no time either: a level must have some to run in.
    let duration = Duration::from_secs_f64(seconds);
    if duration.is_zero() {
        return Err(format!("{text:?}: a level needs time to run; give a duration above 0, e.g. 2s"));
    }
    Ok(duration)
}

fn not_a_duration(text: &str) -> String {
    format!("{text:?} is not a duration: write a number and its unit, ms, s or m (500ms, 5s, 1m)")
}

/// A level's statement count: 1 or more.
pub fn parse_iterations(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("a level needs at least one statement: give 1 or more".to_string()),
        Ok(statements) => Ok(statements),
        Err(_) => Err(format!("{text:?} is not a statement count: give a whole number, 1 or more")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_with_their_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        // The message and the rule agree: 0 is refused, and the message says above 0.
        for zero in ["0s", "0ms", "0.0000000001s"] {
            assert_eq!(
                parse_duration(zero),
                Err(format!("{zero:?}: a level needs time to run; give a duration above 0, e.g. 2s"))
            );
        }
        assert_eq!(parse_duration("25h"), Err(not_a_duration("25h")));
        assert_eq!(parse_duration("1441m"), Err("\"1441m\" is not a duration above 0 and up to 24 hours".to_string()));
        for bad in ["5", "five s", "-1s", "1h", "NaNs"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}

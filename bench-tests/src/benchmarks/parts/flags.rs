//! The parts benchmark's flags, as `cargo xtask bench parts` takes them.

use clap::Args;

use super::PartsBenchmark;
use crate::units::parse_part_count;

#[derive(Debug, Clone, Args)]
pub struct PartsFlags {
    /// Active parts of the (namespace, day) design at each point of the sweep, rising,
    /// comma-separated (K suffix works: 1K,5K,20K); each point adds parts to the last
    // allow_negative_numbers: `-5` reaches the parser, which says a count is positive;
    // clap alone would call it an unexpected argument.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "100,1000,5000,20000",
        value_parser = parse_part_count,
        allow_negative_numbers = true
    )]
    pub parts: Vec<u64>,
    /// Measured runs of each query at each point, design and client count, after one warm-up
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Clients running each query at once at every point, comma-separated (1 is always run
    /// first: the slopes are fitted to it)
    #[arg(long, value_delimiter = ',', default_value = "1,4,16", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub clients: Vec<u32>,
    /// Fail the run when a query's planning slope on the (namespace, day) design exceeds this
    /// many microseconds per 1,000 active parts (or cannot be trusted), after the bundle and
    /// report are written
    #[arg(long, value_name = "US_PER_1K_PARTS", allow_negative_numbers = true)]
    pub max_slope: Option<f64>,
    #[command(flatten)]
    pub profile: crate::profiles::ProfileFlag,
}

impl PartsFlags {
    /// The benchmark, with the client counts as given: a count given twice is for its
    /// check to refuse, as `--parts` refuses a point given twice.
    pub fn benchmark(&self) -> PartsBenchmark {
        PartsBenchmark {
            points: self.parts.clone(),
            runs: self.runs,
            clients_given: self.clients.clone(),
            max_slope: self.max_slope,
            profile: self.profile.profile,
        }
    }
}

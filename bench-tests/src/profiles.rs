//! What `--profile` records: the query profiler's stacks of each measured query, folded,
//! and their flame graphs. A server samples every thread of a statement that runs with
//! `query_profiler_cpu_time_period_ns` (on-CPU time: "CPU") or
//! `query_profiler_real_time_period_ns` (wall time, waiting included: "Real") into
//! `system.trace_log`, one row per sample with the stack as addresses; symbolized with
//! `addressToSymbol` and `demangle`, grouped by stack and folded (`frame;frame;frame N`,
//! outermost first), the stacks are what `inferno` draws. "CPU" shows where the cores
//! went; "Real" also where the threads waited (a lock, the disk): the part-count source
//! found half of each planning query waiting on the parts list's mutex in its "Real"
//! graph, which the "CPU" one cannot show.
//!
//! The gathering, on a target, is `crate::profiling`'s; here the record, the folding
//! and the drawing, which need no engine.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::settings::Settings;

/// The sampling period of either profiler: 10 ms, 100 samples a second of each thread.
/// The server's default (1 s) gives a 100 ms query no sample at all.
pub const PERIOD_NS: u64 = 10_000_000;

/// What `--profile` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
#[value(rename_all = "lowercase")]
pub enum ProfileChoice {
    /// On-CPU samples: where the cores went.
    Cpu,
    /// Every thread, waiting included: where the time went.
    Real,
    /// Both, a flame graph each.
    Both,
}

impl ProfileChoice {
    /// The trace types it samples, CPU first.
    pub fn trace_types(self) -> Vec<TraceType> {
        match self {
            ProfileChoice::Cpu => vec![TraceType::Cpu],
            ProfileChoice::Real => vec![TraceType::Real],
            ProfileChoice::Both => vec![TraceType::Cpu, TraceType::Real],
        }
    }

    /// The settings each measured statement runs with: the chosen profilers at
    /// [`PERIOD_NS`], the other one off (so that its samples do not mix in).
    pub fn statement_settings(self) -> Settings {
        let period = |trace_type| if self.trace_types().contains(&trace_type) { PERIOD_NS } else { 0 };
        Settings::new()
            .with("query_profiler_cpu_time_period_ns", period(TraceType::Cpu))
            .with("query_profiler_real_time_period_ns", period(TraceType::Real))
    }
}

/// Its name as `--profile` takes it (clap's, as `TargetKind`'s).
impl fmt::Display for ProfileChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match clap::ValueEnum::to_possible_value(self) {
            Some(value) => f.write_str(value.get_name()),
            None => write!(f, "{self:?}"),
        }
    }
}

// `--profile`, on the kinds that take it (logs, parts, clickbench). A plain comment: clap
// would take a doc comment here for the description of every command that flattens it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::Args)]
pub struct ProfileFlag {
    /// Server targets: sample each measured statement's stacks with the query profiler
    /// (cpu: on-CPU time; real: every thread, waiting included; both) and write a flame
    /// graph per query into the bundle (docs/flame-graphs.md)
    #[arg(long, value_enum, value_name = "cpu|real|both")]
    pub profile: Option<ProfileChoice>,
}

/// A `trace_type` of `system.trace_log` that `--profile` samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TraceType {
    /// `'CPU'`
    #[serde(rename = "CPU")]
    Cpu,
    /// `'Real'`
    Real,
}

impl TraceType {
    /// Its name in `system.trace_log`, and in file names lower-cased.
    pub fn name(self) -> &'static str {
        match self {
            TraceType::Cpu => "CPU",
            TraceType::Real => "Real",
        }
    }
}

/// The profiles of a run: what was asked, and each measured query's flame graphs, or why
/// there are none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileRecord {
    pub choice: ProfileChoice,
    /// The profilers' sampling period, in nanoseconds.
    pub period_ns: u64,
    /// Each profiled query and trace type, in the order of the run's queries.
    pub queries: Vec<QueryProfile>,
    /// Why the run has no profiles (stopped before its statements' samples were read, the
    /// server's trace_log unreadable); `None` when it has them.
    pub unknown: Option<String>,
}

impl ProfileRecord {
    /// How many flame graphs it drew.
    pub fn drawn(&self) -> usize {
        self.queries.iter().filter(|profile| profile.svg.is_some()).count()
    }
}

/// One query's samples of one trace type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryProfile {
    /// The query and its form, as a comparison labels it (`q1 (parts=1000)`).
    pub label: String,
    pub trace_type: TraceType,
    /// The measured statements whose samples these are.
    pub statements: usize,
    /// Their samples, every thread's.
    pub samples: u64,
    /// Distinct stacks among them.
    pub stacks: usize,
    /// The folded stacks and the flame graph, relative to the bundle's folder; `None` when
    /// the statements left no sample (shorter than the period).
    pub folded: Option<String>,
    pub svg: Option<String>,
    /// Why this query has no flame graph although it was profiled (its samples could not
    /// be read, or the graph not written); `None` when it has one, or had no sample.
    #[serde(default)]
    pub unknown: Option<String>,
}

impl QueryProfile {
    /// `label`'s profile of `trace_type` over `statements` before anything is read.
    pub fn without_samples(label: &str, trace_type: TraceType, statements: usize) -> QueryProfile {
        QueryProfile {
            label: label.to_string(),
            trace_type,
            statements,
            samples: 0,
            stacks: 0,
            folded: None,
            svg: None,
            unknown: None,
        }
    }
}

/// One row of the lookup: the samples of one stack (addresses symbolized, innermost
/// first, as trace_log keeps them) of one trace type.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct StackRow {
    pub trace_type: String,
    pub symbols: Vec<String>,
    pub samples: u64,
}

/// The folded stacks of `rows` of `trace_type`: one line per distinct stack,
/// `outermost;...;innermost count`, sorted, with the number of samples. An address
/// without a symbol is `[unknown]`; a `;` in a name (none in C++ names, but a frame must
/// stay one frame) becomes `:`.
pub fn fold(rows: &[StackRow], trace_type: TraceType) -> (String, u64, usize) {
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    for row in rows.iter().filter(|row| row.trace_type == trace_type.name()) {
        let frames: Vec<String> = row
            .symbols
            .iter()
            .rev()
            .map(|symbol| match symbol.trim() {
                "" => "[unknown]".to_string(),
                name => name.replace(';', ":"),
            })
            .collect();
        if frames.is_empty() {
            continue;
        }
        *stacks.entry(frames.join(";")).or_default() += row.samples;
    }
    let samples = stacks.values().sum();
    let folded = stacks.iter().map(|(stack, count)| format!("{stack} {count}\n")).collect();
    (folded, samples, stacks.len())
}

/// The flame graph of `folded` stacks as a self-contained SVG (its search and zoom are
/// inline JavaScript), colours chosen from the frames' names so that two renderings are
/// the same file.
pub fn flame_graph_svg(folded: &str, title: &str) -> Result<String> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = "samples".to_string();
    options.hash = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut svg)
        .with_context(|| format!("cannot draw the flame graph {title:?}"))?;
    String::from_utf8(svg).context("the flame graph is not UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(trace_type: &str, innermost_first: &[&str], samples: u64) -> StackRow {
        StackRow {
            trace_type: trace_type.to_string(),
            symbols: innermost_first.iter().map(|frame| frame.to_string()).collect(),
            samples,
        }
    }

    #[test]
    fn the_choice_sets_its_profilers_and_turns_the_other_off() {
        let cpu = ProfileChoice::Cpu.statement_settings();
        assert_eq!(cpu.get("query_profiler_cpu_time_period_ns"), Some("10000000"));
        assert_eq!(cpu.get("query_profiler_real_time_period_ns"), Some("0"));
        let both = ProfileChoice::Both.statement_settings();
        assert_eq!(both.get("query_profiler_real_time_period_ns"), Some("10000000"));
        assert_eq!(ProfileChoice::Both.trace_types(), [TraceType::Cpu, TraceType::Real]);
    }

    #[test]
    fn stacks_fold_outermost_first_one_line_each_of_their_type_only() {
        let rows = [
            row("CPU", &["memcpy", "DB::ReadBuffer::next", "main"], 3),
            row("CPU", &["", "main"], 1),
            row("CPU", &["memcpy", "DB::ReadBuffer::next", "main"], 2),
            row("Real", &["__lll_lock_wait", "main"], 7),
        ];
        let (folded, samples, stacks) = fold(&rows, TraceType::Cpu);
        assert_eq!(folded, "main;DB::ReadBuffer::next;memcpy 5\nmain;[unknown] 1\n");
        assert_eq!((samples, stacks), (6, 2));
        let (folded, samples, _) = fold(&rows, TraceType::Real);
        assert_eq!((folded.as_str(), samples), ("main;__lll_lock_wait 7\n", 7));
        assert_eq!(fold(&[], TraceType::Real), (String::new(), 0, 0));
    }
}

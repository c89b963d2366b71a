//! Where a query's time went, from its ProfileEvents: CPU (user + system), waiting for
//! reads, and the rest (scheduling, locks, waiting on other threads), and which of them
//! bound it. This is the reasoning the source does by hand for Q3 and Q5.
//!
//! The counters are summed over the query's threads, so the three parts are shares of
//! thread time (`RealTimeMicroseconds`), not of the wall-clock duration; "the rest"
//! includes threads idling while they wait for work. The bottleneck compares the two
//! kinds of work: reads bound a query when they take half as long again as the CPU
//! work, and the CPU binds it the other way round.

use serde::{Deserialize, Serialize};

use crate::stats::{QueryStats, StatsSource};

/// One kind of work must exceed the other by this factor to name the bottleneck.
const BOUND_FACTOR: f64 = 1.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bottleneck {
    CpuBound,
    ReadBound,
    Mixed,
    /// Too little thread time was recorded to say.
    Unknown,
}

impl Bottleneck {
    pub fn label(self) -> &'static str {
        match self {
            Bottleneck::CpuBound => "CPU-bound",
            Bottleneck::ReadBound => "read-bound",
            Bottleneck::Mixed => "mixed",
            Bottleneck::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeBreakdown {
    /// Thread time: `RealTimeMicroseconds`.
    pub thread_us: u64,
    /// `UserTimeMicroseconds + SystemTimeMicroseconds`.
    pub cpu_us: u64,
    /// Time in read calls: `DiskReadElapsedMicroseconds`, or `OSIOWaitMicroseconds` when larger.
    pub read_wait_us: u64,
    /// Thread time that is neither.
    pub other_us: u64,
    pub bottleneck: Bottleneck,
    /// Bytes read from files over the server-side duration, in MiB/s.
    pub read_mib_per_s: Option<f64>,
}

impl TimeBreakdown {
    /// The breakdown of a statement whose record has its counters; `None` for one that
    /// has none to split its time by (`StatsSource::ResultCounters`), rather than zeros.
    pub fn of_record(stats: &QueryStats) -> Option<TimeBreakdown> {
        (stats.source != StatsSource::ResultCounters).then(|| TimeBreakdown::from_stats(stats))
    }

    pub fn from_stats(stats: &QueryStats) -> TimeBreakdown {
        let thread_us = stats.event("RealTimeMicroseconds");
        let cpu_us = stats.event("UserTimeMicroseconds").saturating_add(stats.event("SystemTimeMicroseconds"));
        let read_wait_us = stats.event("DiskReadElapsedMicroseconds").max(stats.event("OSIOWaitMicroseconds"));
        let other_us = thread_us.saturating_sub(cpu_us.saturating_add(read_wait_us));
        let (cpu, read) = (cpu_us as f64, read_wait_us as f64);
        let bottleneck = if cpu_us == 0 && read_wait_us == 0 {
            Bottleneck::Unknown
        } else if read >= BOUND_FACTOR * cpu {
            Bottleneck::ReadBound
        } else if cpu >= BOUND_FACTOR * read {
            Bottleneck::CpuBound
        } else {
            Bottleneck::Mixed
        };
        let file_bytes = stats.event("ReadBufferFromFileDescriptorReadBytes");
        let read_mib_per_s = (stats.server_duration_us > 0 && file_bytes > 0)
            .then(|| file_bytes as f64 / (1024.0 * 1024.0) / (stats.server_duration_us as f64 / 1e6));
        TimeBreakdown { thread_us, cpu_us, read_wait_us, other_us, bottleneck, read_mib_per_s }
    }

    /// The three parts as shares of thread time (zeros when none was recorded). They sum
    /// to at most 1: for statements of a few milliseconds the counters are noisy enough
    /// that CPU and read wait can exceed the thread time, and then they are shares of
    /// their own sum.
    pub fn shares(&self) -> (f64, f64, f64) {
        let total = self.thread_us.max(self.cpu_us.saturating_add(self.read_wait_us));
        if total == 0 {
            return (0.0, 0.0, 0.0);
        }
        let total = total as f64;
        (self.cpu_us as f64 / total, self.read_wait_us as f64 / total, self.other_us as f64 / total)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::stats::StatsSource;

    fn stats(events: &[(&str, u64)], server_duration_us: u64) -> QueryStats {
        QueryStats {
            log_comment: String::new(),
            source: StatsSource::ResultAndEventsDelta,
            read_rows: 0,
            read_bytes: 0,
            result_rows: 0,
            server_duration_us,
            client_duration_us: server_duration_us,
            memory_usage: None,
            profile_events: events.iter().map(|(name, value)| (name.to_string(), *value)).collect::<BTreeMap<_, _>>(),
            raw: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_scan_waiting_on_reads_is_read_bound() {
        let breakdown = TimeBreakdown::from_stats(&stats(
            &[
                ("RealTimeMicroseconds", 1_000_000),
                ("UserTimeMicroseconds", 200_000),
                ("DiskReadElapsedMicroseconds", 700_000),
                ("ReadBufferFromFileDescriptorReadBytes", 128 * 1024 * 1024),
            ],
            1_000_000,
        ));
        assert_eq!(breakdown.bottleneck, Bottleneck::ReadBound);
        assert_eq!(breakdown.other_us, 100_000);
        assert_eq!(breakdown.read_mib_per_s, Some(128.0));
    }

    #[test]
    fn a_scan_from_the_page_cache_is_cpu_bound() {
        let breakdown = TimeBreakdown::from_stats(&stats(
            &[
                ("RealTimeMicroseconds", 1_000_000),
                ("UserTimeMicroseconds", 850_000),
                ("SystemTimeMicroseconds", 50_000),
            ],
            500_000,
        ));
        assert_eq!(breakdown.bottleneck, Bottleneck::CpuBound);
        assert_eq!(breakdown.shares().0, 0.9);
        assert_eq!(TimeBreakdown::from_stats(&stats(&[], 10)).bottleneck, Bottleneck::Unknown);
    }

    #[test]
    fn comparable_cpu_and_read_work_is_mixed() {
        // Measured here: Q4 with direct I/O, 22.9 ms CPU and 21.9 ms reading.
        let breakdown = TimeBreakdown::from_stats(&stats(
            &[
                ("RealTimeMicroseconds", 157_132),
                ("UserTimeMicroseconds", 22_901),
                ("DiskReadElapsedMicroseconds", 21_923),
            ],
            29_293,
        ));
        assert_eq!(breakdown.bottleneck, Bottleneck::Mixed);
    }

    #[test]
    fn shares_never_sum_to_more_than_the_whole() {
        // Measured here: Q1 with direct I/O, 3.6 ms of CPU and 0.9 ms of reads in 2.7 ms of
        // thread time (the events delta of a few-millisecond statement is noisy).
        let breakdown = TimeBreakdown::from_stats(&stats(
            &[("RealTimeMicroseconds", 2675), ("UserTimeMicroseconds", 3620), ("DiskReadElapsedMicroseconds", 861)],
            2000,
        ));
        let (cpu, read, other) = breakdown.shares();
        assert!((cpu + read + other - 1.0).abs() < 1e-9 && other == 0.0, "{cpu} {read} {other}");
    }
}

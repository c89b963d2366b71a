//! Where a query's time went, from its ProfileEvents: CPU (user + system), waiting for
//! reads, and the rest (scheduling, locks, waiting on other threads), and which of them
//! bound it. This is the reasoning the source does by hand for Q3 and Q5.
//!
//! The counters are summed over the query's threads, so the three parts are shares of
//! thread time (`RealTimeMicroseconds`), not of the wall-clock duration.

use serde::{Deserialize, Serialize};

use crate::measure::QueryStats;

/// A share at or above this names the bottleneck.
const BOUND_SHARE: f64 = 0.5;

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
    pub fn from_stats(stats: &QueryStats) -> TimeBreakdown {
        let thread_us = stats.event("RealTimeMicroseconds");
        let cpu_us = stats.event("UserTimeMicroseconds") + stats.event("SystemTimeMicroseconds");
        let read_wait_us = stats.event("DiskReadElapsedMicroseconds").max(stats.event("OSIOWaitMicroseconds"));
        let other_us = thread_us.saturating_sub(cpu_us + read_wait_us);
        let bottleneck = if thread_us == 0 {
            Bottleneck::Unknown
        } else if read_wait_us as f64 / thread_us as f64 >= BOUND_SHARE {
            Bottleneck::ReadBound
        } else if cpu_us as f64 / thread_us as f64 >= BOUND_SHARE {
            Bottleneck::CpuBound
        } else {
            Bottleneck::Mixed
        };
        let file_bytes = stats.event("ReadBufferFromFileDescriptorReadBytes");
        let read_mib_per_s = (stats.server_duration_us > 0 && file_bytes > 0)
            .then(|| file_bytes as f64 / (1024.0 * 1024.0) / (stats.server_duration_us as f64 / 1e6));
        TimeBreakdown { thread_us, cpu_us, read_wait_us, other_us, bottleneck, read_mib_per_s }
    }

    /// The three parts as shares of thread time (zeros when none was recorded).
    pub fn shares(&self) -> (f64, f64, f64) {
        if self.thread_us == 0 {
            return (0.0, 0.0, 0.0);
        }
        let total = self.thread_us as f64;
        (self.cpu_us as f64 / total, self.read_wait_us as f64 / total, self.other_us as f64 / total)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::target::StatsSource;

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
}

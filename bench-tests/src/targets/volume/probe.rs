//! The volume measured before the benchmark: what a profile's limits gave, so that a
//! throttle that did not hold is said rather than trusted. Four passes of direct I/O
//! (`O_DIRECT`: the kernel's throttle sees every request, the page cache none) on a file
//! of the volume, each about [`PASS_TIME`] with as many requests in flight as the storage
//! baseline's fio job keeps (`manifests/<variant>/fio.yaml`): sequential reads of 1 MiB
//! blocks, 16 in flight (bandwidth), random reads of 4 KiB blocks, 64 in flight
//! (operations, and their latency), and the same two as writes. Where fio is not
//! installed, the two read passes are the volume's storage baseline
//! ([`ProbeMeasurement::baseline`]).
//!
//! Written by hand: fio is not on every machine (not on these), and the four passes need
//! nothing but aligned reads and writes from a few threads.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use statrs::statistics::{Data, OrderStatistics as _};

use crate::storage_baseline::{Device, Latency, RandRead, SeqRead, StorageBaseline};
use crate::target_info::{Limits, ProbedRate, VolumeProbe};

/// How long each pass measures.
const PASS_TIME: Duration = Duration::from_millis(1500);
/// How long each pass runs before it measures: the kernel's throttle lets a burst through
/// at the start (a slice's budget), which would read as a limit not held.
const WARM_UP: Duration = Duration::from_millis(300);
/// The probe file's size: large enough that random reads rarely meet, small enough to
/// write at once (before the throttle) on any volume.
pub const FILE_BYTES: u64 = 64 << 20;
const SEQUENTIAL_BLOCK: usize = 1 << 20;
const RANDOM_BLOCK: usize = 4 << 10;
/// Requests in flight: the fio job's `iodepth` for each pattern, fewer under low limits
/// ([`in_flight`]).
const SEQUENTIAL_IN_FLIGHT: u32 = 16;
const RANDOM_IN_FLIGHT: u32 = 64;
/// How long the requests in flight may take to complete at the limits: a pass ends only
/// when they have, and a stop waits for them.
const DRAIN: f64 = 0.5;
/// Direct I/O's alignment (the largest logical block size in use).
const ALIGN: usize = 4 << 10;
/// How far off its limit a rate may be before the run says the throttle did not hold.
pub const HELD_WITHIN: f64 = 0.10;
/// What the probe calls itself in a bundle.
pub const TOOL: &str = "chbench's probe";

/// A buffer aligned for direct I/O. Written by hand: the standard library gives no aligned
/// `Vec`, and one allocation per thread and pass needs no crate.
struct Aligned {
    pointer: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(size: usize) -> Result<Aligned> {
        let layout = std::alloc::Layout::from_size_align(size, ALIGN).context("bad probe buffer layout")?;
        // SAFETY: the layout has a non-zero size.
        let pointer = unsafe { std::alloc::alloc_zeroed(layout) };
        if pointer.is_null() {
            bail!("cannot allocate the probe's buffer");
        }
        Ok(Aligned { pointer, layout })
    }

    fn slice(&mut self) -> &mut [u8] {
        // SAFETY: the pointer owns `layout.size()` initialised bytes for as long as self lives.
        unsafe { std::slice::from_raw_parts_mut(self.pointer, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated above with this layout, freed once.
        unsafe { std::alloc::dealloc(self.pointer, self.layout) };
    }
}

/// Writes the probe file in `folder`, before the throttle (so that making it costs no
/// limit), flushed to the disk.
pub fn prepare(folder: &Path) -> Result<std::path::PathBuf> {
    let path = folder.join("chbench-probe");
    let mut buffer = Aligned::new(SEQUENTIAL_BLOCK)?;
    buffer.slice().iter_mut().enumerate().for_each(|(index, byte)| *byte = (index % 251) as u8);
    let file = open_direct(&path, true)?;
    for block in 0..FILE_BYTES / SEQUENTIAL_BLOCK as u64 {
        file.write_all_at(buffer.slice(), block * SEQUENTIAL_BLOCK as u64)
            .with_context(|| format!("cannot write the probe file {}", path.display()))?;
    }
    file.sync_all().with_context(|| format!("cannot flush the probe file {}", path.display()))?;
    Ok(path)
}

fn open_direct(path: &Path, create: bool) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .custom_flags(libc::O_DIRECT | libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("cannot open {} for direct I/O", path.display()))
}

/// How requests are laid on the file.
#[derive(Clone, Copy)]
enum Pattern {
    /// The file's blocks in order, over again: the request's number is its block.
    Sequential,
    /// Blocks at random, the same sequence every run.
    Random,
}

/// What one pass measured: the requests completed within its [`PASS_TIME`] and the latency
/// of each that also began within it.
struct Pass {
    requests: u64,
    latencies_us: Vec<f64>,
}

/// One pass: `in_flight` threads, each one request at a time, `block`-byte requests laid
/// out by `pattern`, for [`WARM_UP`] and then, counted, for [`PASS_TIME`].
fn pass(file: &File, block: usize, write: bool, pattern: Pattern, in_flight: u32) -> Result<Pass> {
    let blocks = FILE_BYTES / block as u64;
    let offset = |number: u64| {
        let block_number = match pattern {
            Pattern::Sequential => number % blocks,
            // splitmix64's finaliser: a number to a well-spread one, no state to share.
            Pattern::Random => {
                let mut mixed = number.wrapping_add(0x9e37_79b9_7f4a_7c15);
                mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                (mixed ^ (mixed >> 31)) % blocks
            }
        };
        block_number * block as u64
    };
    let next = AtomicU64::new(0);
    let start = Instant::now();
    let (counted_from, end) = (start + WARM_UP, start + WARM_UP + PASS_TIME);
    let measured: Mutex<(u64, Vec<f64>)> = Mutex::new((0, Vec::new()));
    std::thread::scope(|scope| -> Result<()> {
        let threads: Vec<_> = (0..in_flight)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let mut buffer = Aligned::new(block)?;
                    let (mut requests, mut latencies_us) = (0u64, Vec::new());
                    loop {
                        let began = Instant::now();
                        if began >= end || crate::interrupt::requested() {
                            break;
                        }
                        let at = offset(next.fetch_add(1, Ordering::Relaxed));
                        let done =
                            if write { file.write_at(buffer.slice(), at) } else { file.read_at(buffer.slice(), at) };
                        done.context("a probe request failed")?;
                        let finished = Instant::now();
                        if finished >= counted_from && finished < end {
                            requests += 1;
                            if began >= counted_from {
                                latencies_us.push((finished - began).as_secs_f64() * 1e6);
                            }
                        }
                    }
                    let mut measured = measured.lock().map_err(|_| anyhow::anyhow!("a probe thread panicked"))?;
                    measured.0 += requests;
                    measured.1.extend(latencies_us);
                    Ok(())
                })
            })
            .collect();
        for thread in threads {
            thread.join().map_err(|_| anyhow::anyhow!("a probe thread panicked"))??;
        }
        Ok(())
    })?;
    crate::interrupt::check()?;
    let (requests, latencies_us) = measured.into_inner().map_err(|_| anyhow::anyhow!("a probe thread panicked"))?;
    Ok(Pass { requests, latencies_us })
}

/// Requests in flight for a pattern of `block`-byte requests in one direction, held to
/// `iops` and `bytes` a second: `depth`, or as many as those limits complete in [`DRAIN`]
/// (at least one), so that a pass under low limits still ends about on time.
fn in_flight(depth: u32, block: usize, iops: Option<u64>, bytes: Option<u64>) -> u32 {
    let by_bytes = bytes.map(|bytes| bytes as f64 / block as f64);
    let per_second = match (iops.map(|iops| iops as f64), by_bytes) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    per_second.map_or(depth, |rate| ((rate * DRAIN).floor() as u32).clamp(1, depth))
}

/// Fewer completed requests than this in a pass give a rate too coarse to hold against a
/// limit within [`HELD_WITHIN`] (at 3 a second, 4 or 5 requests in 1.5 s are 11 % apart).
const FEWEST_REQUESTS: u64 = 20;

/// What the probe measured: the rates against the limits, and the read passes as they are.
pub struct ProbeMeasurement {
    pub probe: VolumeProbe,
    sequential_read: Pass,
    random_read: Pass,
    measured_at: jiff::Timestamp,
}

/// The four passes on the probe file (the throttle in force), each against its limit.
pub fn run(path: &Path, limits: &Limits) -> Result<ProbeMeasurement> {
    let file = open_direct(path, false)?;
    let measured_at = jiff::Timestamp::now();
    let rate = |pass: &Pass, bytes: Option<usize>, limit: Option<u64>| {
        let seconds = PASS_TIME.as_secs_f64();
        let measured = match bytes {
            Some(block) => pass.requests as f64 * block as f64 / seconds,
            None => pass.requests as f64 / seconds,
        };
        ProbedRate::of(measured, pass.requests, limit)
    };
    let (read_iops, read_bytes) = (limits.read_iops, limits.read_bytes_per_second);
    let (write_iops, write_bytes) = (limits.write_iops, limits.write_bytes_per_second);
    // The read passes keep as many requests in flight as the read limits allow (they are
    // the baseline, at fio's depths where they can be), the write passes as the write ones.
    let sequential_in_flight = in_flight(SEQUENTIAL_IN_FLIGHT, SEQUENTIAL_BLOCK, read_iops, read_bytes);
    let random_in_flight = in_flight(RANDOM_IN_FLIGHT, RANDOM_BLOCK, read_iops, read_bytes);
    let sequential_read = pass(&file, SEQUENTIAL_BLOCK, false, Pattern::Sequential, sequential_in_flight)?;
    let random_read = pass(&file, RANDOM_BLOCK, false, Pattern::Random, random_in_flight)?;
    let sequential_write = pass(
        &file,
        SEQUENTIAL_BLOCK,
        true,
        Pattern::Sequential,
        in_flight(SEQUENTIAL_IN_FLIGHT, SEQUENTIAL_BLOCK, write_iops, write_bytes),
    )?;
    let random_write = pass(
        &file,
        RANDOM_BLOCK,
        true,
        Pattern::Random,
        in_flight(RANDOM_IN_FLIGHT, RANDOM_BLOCK, write_iops, write_bytes),
    )?;
    let probe = VolumeProbe {
        tool: TOOL.to_string(),
        ms_per_pass: PASS_TIME.as_millis() as u64,
        sequential_in_flight,
        random_in_flight,
        sequential_read_bytes_per_second: rate(&sequential_read, Some(SEQUENTIAL_BLOCK), limits.read_bytes_per_second),
        random_read_iops: rate(&random_read, None, limits.read_iops),
        sequential_write_bytes_per_second: rate(
            &sequential_write,
            Some(SEQUENTIAL_BLOCK),
            limits.write_bytes_per_second,
        ),
        random_write_iops: rate(&random_write, None, limits.write_iops),
    };
    Ok(ProbeMeasurement { probe, sequential_read, random_read, measured_at })
}

impl ProbeMeasurement {
    /// The read passes as the volume's storage baseline, in the fields fio's job fills:
    /// what a scan's read rate is held against where fio is not installed.
    pub fn baseline(&self, device: Device) -> StorageBaseline {
        let (sequential, random) = (&self.sequential_read, &self.random_read);
        let (seconds, runtime_ms) = (PASS_TIME.as_secs_f64(), PASS_TIME.as_millis() as u64);
        let sequential_bytes = sequential.requests * SEQUENTIAL_BLOCK as u64;
        let latencies = &random.latencies_us;
        let mean = (!latencies.is_empty()).then(|| latencies.iter().sum::<f64>() / latencies.len() as f64);
        let mut ordered = Data::new(latencies.clone());
        let mut percentile = |at: usize| (!latencies.is_empty()).then(|| ordered.percentile(at));
        StorageBaseline {
            tool: TOOL.to_string(),
            measured_at: self.measured_at,
            device,
            direct: true,
            file_size_bytes: FILE_BYTES,
            seq_read: SeqRead {
                block_size_bytes: SEQUENTIAL_BLOCK as u64,
                iodepth: self.probe.sequential_in_flight,
                runtime_ms,
                bytes: sequential_bytes,
                mib_per_s: Some(sequential_bytes as f64 / 1_048_576.0 / seconds),
            },
            rand_read: RandRead {
                block_size_bytes: RANDOM_BLOCK as u64,
                iodepth: self.probe.random_in_flight,
                runtime_ms,
                ios: random.requests,
                iops: Some(random.requests as f64 / seconds),
                latency_us: Latency { mean, p50: percentile(50), p99: percentile(99) },
            },
        }
    }
}

impl ProbedRate {
    /// A rate measured from `requests` completed requests against its limit: held when
    /// within [`HELD_WITHIN`] of it, above when the throttle let more through, below when
    /// it does not bind (another of the profile's limits binds first, as for 1 MiB requests
    /// under an IOPS limit, or the disk under the volume cannot reach it), and unknown from
    /// fewer than [`FEWEST_REQUESTS`].
    pub fn of(measured: f64, requests: u64, limit: Option<u64>) -> ProbedRate {
        let verdict = match limit {
            None => "no limit",
            Some(_) if requests < FEWEST_REQUESTS => {
                return ProbedRate {
                    measured: Some(measured),
                    limit,
                    verdict: format!("unknown: {requests} requests in the pass are too few to hold against the limit"),
                };
            }
            Some(limit) if measured > limit as f64 * (1.0 + HELD_WITHIN) => {
                "above the limit: the throttle did not hold"
            }
            Some(limit) if measured < limit as f64 * (1.0 - HELD_WITHIN) => {
                "below the limit: another of the profile's limits binds first, or the disk under the volume does not \
                 reach it"
            }
            Some(_) => "held",
        };
        ProbedRate { measured: Some(measured), limit, verdict: verdict.to_string() }
    }

    /// Whether the throttle let more through than the limit.
    pub fn did_not_hold(&self) -> bool {
        self.verdict.starts_with("above")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_holds_within_ten_per_cent_of_its_limit_and_says_which_way_it_is_off() {
        assert_eq!(ProbedRate::of(3_100.0, 4_650, Some(3_000)).verdict, "held");
        assert_eq!(ProbedRate::of(2_750.0, 4_125, Some(3_000)).verdict, "held");
        let above = ProbedRate::of(3_400.0, 5_100, Some(3_000));
        assert!(above.did_not_hold() && above.verdict.contains("throttle did not hold"), "{above:?}");
        let below = ProbedRate::of(1_000.0, 1_500, Some(3_000));
        assert!(!below.did_not_hold() && below.verdict.starts_with("below"), "{below:?}");
        assert_eq!(ProbedRate::of(9e9, 1, None).verdict, "no limit");
        // 5 requests at 3 a second: 11 % apart from 4, too coarse for any verdict.
        let coarse = ProbedRate::of(3.33, 5, Some(3));
        assert_eq!(coarse.verdict, "unknown: 5 requests in the pass are too few to hold against the limit");
        assert!(!coarse.did_not_hold());
    }

    #[test]
    fn fewer_requests_are_in_flight_under_low_limits_so_that_a_pass_ends_on_time() {
        let both = |iops: Option<u64>, mibps: Option<u64>| {
            let bytes = mibps.map(|mibps| mibps << 20);
            (in_flight(16, 1 << 20, iops, bytes), in_flight(64, 4096, iops, bytes))
        };
        assert_eq!(both(Some(3_000), Some(125)), (16, 64));
        assert_eq!(both(Some(200), Some(10)), (5, 64));
        assert_eq!(both(Some(2), Some(1)), (1, 1));
        assert_eq!(both(None, None), (16, 64));
    }

    #[test]
    fn the_probe_measures_a_folder_and_its_read_passes_make_a_baseline() {
        let folder = tempfile::tempdir_in(crate::files::chbench_dir()).unwrap();
        let file = match prepare(folder.path()) {
            Ok(file) => file,
            // A file system without direct I/O (tmpfs) has nothing to measure this way.
            Err(error) if format!("{error:#}").contains("direct I/O") => return,
            Err(error) => panic!("{error:#}"),
        };
        let limits = Limits {
            name: "custom".to_string(),
            read_iops: None,
            write_iops: None,
            read_bytes_per_second: None,
            write_bytes_per_second: None,
        };
        let measured = run(&file, &limits).unwrap();
        let device = Device {
            variant: "storage profile custom".to_string(),
            description: "a test folder".to_string(),
            node: "here".to_string(),
            instance_type: None,
        };
        let baseline = measured.baseline(device);
        assert_eq!((baseline.seq_read.iodepth, baseline.rand_read.iodepth), (16, 64));
        assert_eq!(baseline.seq_read.bytes % (1 << 20), 0);
        assert!(baseline.seq_read.bytes > 0 && baseline.rand_read.ios > 0, "{baseline:?}");
        let latency = &baseline.rand_read.latency_us;
        assert!(latency.p50 <= latency.p99 && latency.mean.is_some_and(|mean| mean > 0.0), "{latency:?}");
        assert_eq!(measured.probe.random_read_iops.verdict, "no limit");
    }
}

//! The volume measured before the benchmark: what a profile's limits gave, so that a
//! throttle that did not hold is said rather than trusted. Four passes of direct I/O
//! (`O_DIRECT`: the kernel's throttle sees every request, the page cache none) on a file
//! of the volume, one client each, each about [`PASS_TIME`]: sequential reads of 1 MiB
//! blocks (bandwidth), random reads of 4 KiB blocks (operations), and the same two as
//! writes. At one request in flight a pass measures the lower of the limit and what one
//! request at a time can do on the disk under the volume; the report says which bound.
//!
//! Written by hand: fio, the tool the eks target's baseline runs, is not on every machine
//! (not on these), and the four passes need nothing but aligned reads and writes.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::target_info::{Limits, ProbedRate, VolumeProbe};

/// How long each pass measures.
const PASS_TIME: Duration = Duration::from_millis(1500);
/// How long each pass runs before it measures: the kernel's throttle lets a burst through
/// at the start (a slice's budget), which would read as a limit not held.
const WARM_UP: Duration = Duration::from_millis(300);
/// The probe file's size: large enough that random reads rarely meet, small enough to
/// write at once (before the throttle) on any volume.
const FILE_BYTES: u64 = 64 << 20;
const SEQUENTIAL_BLOCK: usize = 1 << 20;
const RANDOM_BLOCK: usize = 4 << 10;
/// Direct I/O's alignment (the largest logical block size in use).
const ALIGN: usize = 4 << 10;
/// How far off its limit a rate may be before the run says the throttle did not hold.
pub const HELD_WITHIN: f64 = 0.10;

/// A buffer aligned for direct I/O. Written by hand: the standard library gives no aligned
/// `Vec`, and one allocation per pass needs no crate.
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

/// One pass: `block`-byte requests at the offsets `next` gives, for [`WARM_UP`] and then,
/// counted, for [`PASS_TIME`].
fn pass(file: &File, block: usize, write: bool, mut next: impl FnMut(u64) -> u64) -> Result<(u64, Duration)> {
    let mut buffer = Aligned::new(block)?;
    let mut request = |sent: u64| {
        let offset = next(sent);
        let done = if write { file.write_at(buffer.slice(), offset) } else { file.read_at(buffer.slice(), offset) };
        done.map(|_| ()).context("a probe request failed")
    };
    let warm_up = Instant::now();
    let mut sent = 0u64;
    while warm_up.elapsed() < WARM_UP {
        request(sent)?;
        sent += 1;
    }
    let start = Instant::now();
    let mut requests = 0u64;
    while start.elapsed() < PASS_TIME {
        request(sent)?;
        sent += 1;
        requests += 1;
    }
    Ok((requests, start.elapsed()))
}

/// The four passes on the probe file (the throttle in force), each against its limit.
pub fn run(path: &Path, limits: &Limits) -> Result<VolumeProbe> {
    let file = open_direct(path, false)?;
    let blocks = |block: usize| FILE_BYTES / block as u64;
    // A fixed sequence (a linear congruential step): the same offsets every run.
    let random = |block: usize| {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        move |_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % blocks(block) * block as u64
        }
    };
    // The file's blocks in order, over again: the request's count is its block.
    let sequential = |sent: u64| sent % blocks(SEQUENTIAL_BLOCK) * SEQUENTIAL_BLOCK as u64;
    let rate = |(requests, elapsed): (u64, Duration), bytes: Option<usize>, limit: Option<u64>| {
        let seconds = elapsed.as_secs_f64();
        let measured = match bytes {
            Some(block) => requests as f64 * block as f64 / seconds,
            None => requests as f64 / seconds,
        };
        ProbedRate::of(measured, limit)
    };
    Ok(VolumeProbe {
        tool: "chbench's probe: one request at a time, direct I/O".to_string(),
        ms_per_pass: PASS_TIME.as_millis() as u64,
        sequential_read_bytes_per_second: rate(
            pass(&file, SEQUENTIAL_BLOCK, false, sequential)?,
            Some(SEQUENTIAL_BLOCK),
            limits.read_bytes_per_second,
        ),
        random_read_iops: rate(pass(&file, RANDOM_BLOCK, false, random(RANDOM_BLOCK))?, None, limits.read_iops),
        sequential_write_bytes_per_second: rate(
            pass(&file, SEQUENTIAL_BLOCK, true, sequential)?,
            Some(SEQUENTIAL_BLOCK),
            limits.write_bytes_per_second,
        ),
        random_write_iops: rate(pass(&file, RANDOM_BLOCK, true, random(RANDOM_BLOCK))?, None, limits.write_iops),
    })
}

impl ProbedRate {
    /// A measured rate against its limit: held when within [`HELD_WITHIN`] of it, above
    /// when the throttle let more through, below when one request at a time on the disk
    /// under the volume cannot reach it (the limit does not bind there).
    pub fn of(measured: f64, limit: Option<u64>) -> ProbedRate {
        let verdict = match limit {
            None => "no limit",
            Some(limit) if measured > limit as f64 * (1.0 + HELD_WITHIN) => {
                "above the limit: the throttle did not hold"
            }
            Some(limit) if measured < limit as f64 * (1.0 - HELD_WITHIN) => {
                "below the limit: one request at a time does not reach it here"
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
        assert_eq!(ProbedRate::of(3_100.0, Some(3_000)).verdict, "held");
        assert_eq!(ProbedRate::of(2_750.0, Some(3_000)).verdict, "held");
        let above = ProbedRate::of(3_400.0, Some(3_000));
        assert!(above.did_not_hold() && above.verdict.contains("throttle did not hold"), "{above:?}");
        let below = ProbedRate::of(1_000.0, Some(3_000));
        assert!(!below.did_not_hold() && below.verdict.starts_with("below"), "{below:?}");
        assert_eq!(ProbedRate::of(9e9, None).verdict, "no limit");
    }
}

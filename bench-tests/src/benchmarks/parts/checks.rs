//! What a sweep is refused for before anything is built: points that are not rising
//! counts of parts, a client count given twice, tables that would not fit the disk or its
//! files, more parts than the engine's `max_parts_in_total`; and a full disk's advice in
//! the sweep's terms.

use anyhow::{Result, bail};

use super::{DISK_BYTES_PER_PART, FILES_PER_PART, Limits, MAX_PARTS, NAMESPACES};
use crate::targets::chdb::DiskFull;
use crate::units::human_bytes;

/// Points must be counts of parts, rising, within [`MAX_PARTS`]: each is built by adding
/// parts to the one before.
pub(super) fn check_points(points: &[u64]) -> Result<()> {
    if points.is_empty() {
        bail!("--parts lists no point: give part counts, e.g. --parts 100,1000,5000");
    }
    for (index, &parts) in points.iter().enumerate() {
        if parts == 0 {
            bail!("--parts 0: a point needs at least one part");
        }
        if parts > MAX_PARTS {
            bail!(
                "--parts {parts} is more than this benchmark builds ({MAX_PARTS}, within ClickHouse's default \
                 max_parts_in_total): ask for at most {MAX_PARTS}"
            );
        }
        if let Some(&before) = index.checked_sub(1).and_then(|before| points.get(before))
            && parts <= before
        {
            let said = if parts == before { "twice" } else { "after a larger one" };
            bail!(
                "--parts lists {parts} {said} ({before} before it): each point adds parts to the last, so give \
                 the counts rising, e.g. --parts 100,1000,5000"
            );
        }
    }
    Ok(())
}

/// What makes a sweep smaller when the disk fills: it has no `--rows`, its size is its
/// points.
const SMALLER_SWEEP: &str = "give fewer or smaller --parts points";

/// `error` with a full disk's advice in the sweep's terms, when the disk filled.
pub(super) fn with_the_sweeps_size(mut error: anyhow::Error) -> anyhow::Error {
    if let Some(full) = error.downcast_mut::<DiskFull>() {
        full.smaller = SMALLER_SWEEP.to_string();
    }
    error
}

/// Client counts given once each: a repeated one would measure the same level twice
/// under one label.
pub(super) fn check_clients(clients: &[u32]) -> Result<()> {
    for (index, count) in clients.iter().enumerate() {
        if clients[..index].contains(count) {
            bail!("--clients lists {count} twice: give each client count once, e.g. --clients 1,4,16");
        }
    }
    Ok(())
}

/// What a folder's file system has room for.
pub(super) struct FreeSpace {
    pub(super) bytes: u64,
    /// `None` where the file system does not count files.
    pub(super) files: Option<u64>,
}

/// Refuses a sweep to `parts` whose tables would not fit in `free` (in `folder`, as
/// messages name it), before the engine starts.
pub(super) fn check_parts_fit(parts: u64, free: &FreeSpace, folder: &str) -> Result<()> {
    // The second design holds the same rows in a twentieth of the parts.
    let all_parts = parts + parts.div_ceil(NAMESPACES);
    let needed = all_parts * DISK_BYTES_PER_PART;
    if needed > free.bytes {
        bail!(
            "--parts {parts} needs about {} in {folder} ({all_parts} parts of about {} each) and {} is free there; \
             ask for fewer parts or free some space",
            human_bytes(needed),
            human_bytes(DISK_BYTES_PER_PART),
            human_bytes(free.bytes)
        );
    }
    if let Some(free_files) = free.files
        && all_parts * FILES_PER_PART > free_files
    {
        bail!(
            "--parts {parts} needs about {} files in {folder} ({FILES_PER_PART} a part) and the file system has room \
             for {free_files} more; ask for fewer parts or free some files",
            all_parts * FILES_PER_PART
        );
    }
    Ok(())
}

/// Refuses a sweep beyond the engine's `max_parts_in_total`, before anything is built.
pub(super) fn check_parts_limit(largest: u64, limits: &Limits) -> Result<()> {
    if let Some(limit) = limits.max_parts_in_total
        && largest > limit
    {
        bail!(
            "--parts {largest} is above the engine's max_parts_in_total ({limit}): an INSERT past it fails with \
             TOO_MANY_PARTS; ask for at most {limit} parts, or raise the setting on the server"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::PartsBenchmark;
    use super::*;
    use crate::benchmarks::Benchmark;

    #[test]
    fn points_must_be_rising_counts_of_parts() {
        let error = |points: &[u64]| check_points(points).unwrap_err().to_string();
        assert!(check_points(&[1]).is_ok());
        assert!(check_points(&[100, 1_000, 5_000, 20_000]).is_ok());
        assert!(error(&[]).contains("lists no point"));
        assert!(error(&[0, 100]).starts_with("--parts 0: a point needs at least one part"));
        assert!(error(&[100, 100]).contains("lists 100 twice"), "{}", error(&[100, 100]));
        assert!(error(&[1_000, 100]).contains("after a larger one"));
        assert!(error(&[MAX_PARTS + 1]).contains("more than this benchmark builds"));
    }

    #[test]
    fn a_client_count_given_twice_is_refused_as_a_point_given_twice_is() {
        assert!(check_clients(&[1, 4, 16]).is_ok());
        assert!(check_clients(&[4]).is_ok());
        let error = check_clients(&[1, 1]).unwrap_err().to_string();
        assert_eq!(error, "--clients lists 1 twice: give each client count once, e.g. --clients 1,4,16");
        // What runs: rising, 1 first, whether given or not.
        let benchmark = |clients: &[u32]| PartsBenchmark {
            points: vec![10],
            runs: 1,
            clients_given: clients.to_vec(),
            max_slope: None,
            profile: None,
        };
        assert_eq!(benchmark(&[16, 4]).clients(), [1, 4, 16]);
        assert!(Benchmark::check(&benchmark(&[4, 4])).unwrap_err().to_string().contains("lists 4 twice"));
    }

    #[test]
    fn a_full_disk_in_a_sweep_says_to_give_fewer_or_smaller_points_not_rows() {
        let full = DiskFull {
            folder: "target/chbench/embedded/1".to_string(),
            free: "0 B free".to_string(),
            smaller: "give fewer rows".to_string(),
            engine: "Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE)"
                .to_string(),
        };
        let error = anyhow::Error::new(full).context("fixtures/parts/generator.sql:3: statement failed: INSERT ...");
        let line = format!("{:#}", with_the_sweeps_size(error));
        assert!(
            line.starts_with("fixtures/parts/generator.sql:3: statement failed: INSERT ...: the disk of"),
            "{line}"
        );
        assert!(
            line.contains("is full (0 B free): free space there, or give fewer or smaller --parts points ("),
            "{line}"
        );
        assert!(!line.contains("rows"), "{line}");
        // Any other error is left as it was.
        let other = format!("{:#}", with_the_sweeps_size(anyhow::anyhow!("give fewer rows")));
        assert_eq!(other, "give fewer rows");
    }

    #[test]
    fn a_sweep_beyond_the_disk_its_files_or_the_engine_limit_is_refused_naming_it() {
        let roomy = FreeSpace { bytes: 100 << 30, files: Some(10_000_000) };
        assert!(check_parts_fit(20_000, &roomy, "target/chbench").is_ok());
        let small = FreeSpace { bytes: 100 << 20, files: None };
        let error = check_parts_fit(20_000, &small, "target/chbench").unwrap_err().to_string();
        assert!(error.starts_with("--parts 20000 needs about 1.28 GiB in target/chbench (21000 parts"), "{error}");
        assert!(error.contains("100.00 MiB is free there"), "{error}");
        let few_files = FreeSpace { bytes: 100 << 30, files: Some(1_000) };
        let error = check_parts_fit(20_000, &few_files, "target/chbench").unwrap_err().to_string();
        assert!(error.contains("needs about 336000 files") && error.contains("room for 1000 more"), "{error}");
        let limits = Limits { max_parts_in_total: Some(10_000) };
        let error = check_parts_limit(20_000, &limits).unwrap_err().to_string();
        assert!(error.starts_with("--parts 20000 is above the engine's max_parts_in_total (10000)"), "{error}");
        assert!(check_parts_limit(20_000, &Limits { max_parts_in_total: None }).is_ok());
    }
}

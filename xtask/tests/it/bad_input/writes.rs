//! `bench writes` flags out of range, levels that cannot run with the bound given, a
//! durability that is not one, a batch past the free disk: one line each, before the
//! engine is reached, with no bundle folder made.

use super::*;

/// `bench writes` with an engine file that does not exist: reaching the engine would be
/// its error, not the flag's.
fn writes_without_an_engine(results: &Path, flags: &[&str]) -> Output {
    let mut args = vec!["bench", "writes", "--target", "embedded", "--results-dir", results.to_str().unwrap()];
    args.extend(flags);
    xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")])
}

/// `bench writes` flags out of range, or levels that cannot run with the bound given, are
/// one line each, before the engine is reached and with no bundle folder made.
#[test]
fn flags_out_of_range_are_refused_before_anything_runs() {
    let results = tempfile::tempdir().unwrap();
    // The kind's own checks: a failure's exit code 1.
    for (flags, said) in [
        (
            &["--batch-rows", "100G"][..],
            "error: --batch-rows 100000000000 is more than chbench generates into one table (100000000000 rows; at \
             most 10000000000",
        ),
        // A batch the engine's disk could not hold once, at the largest level's first INSERTs.
        (&["--batch-rows", "5G", "--concurrency", "1"], "error: --batch-rows 5000000000 at 1 client needs about "),
        (&["--concurrency", "257"], "error: --concurrency 257 is more clients than this runner starts (256"),
        (&["--concurrency", "0"], "error: --concurrency 0: a level needs at least one client"),
        (&["--concurrency", "1,1"], "error: --concurrency lists 1 twice"),
        (
            &["--iterations", "1", "--concurrency", "1,4"],
            "error: --iterations 1 is fewer than the 4 clients of level 4: each client needs an INSERT",
        ),
        // An open loop's rate: above 0, finite, and one that schedules more than the first INSERT.
        (&["--rate", "0"], "error: --rate 0: an open loop needs a rate above 0 INSERTs per second"),
        (&["--rate", "-3"], "error: --rate -3: an open loop needs a rate above 0 INSERTs per second"),
        (&["--rate", "NaN"], "error: --rate NaN: an open loop needs a rate above 0 INSERTs per second"),
        (&["--rate", "inf"], "error: --rate inf: an open loop needs a rate above 0 INSERTs per second"),
        (
            &["--rate", "0.1", "--duration", "2s"],
            "error: --rate 0.1 schedules no INSERT after the first in a level of 2 s",
        ),
        // A mix: its keys, and INSERTs to find rows for its other statements.
        (&["--mix", "writes=3"], "error: --mix \"writes=3\": \"writes\" is not a statement of the mix"),
        (
            &["--mix", "updates=1"],
            "error: --mix updates=1: the mix's UPDATEs, DELETEs and reads find the rows its INSERTs write",
        ),
        (
            &["--async-insert", "--batch-rows", "200K"],
            "error: --async-insert with --batch-rows 200000: a batch sent inline",
        ),
    ] {
        let output = writes_without_an_engine(results.path(), flags);
        let line = error_line(&output);
        assert!(line.starts_with(said), "{flags:?}: {line}");
        assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "{flags:?}: the engine started");
        assert!(output.stdout.is_empty(), "{flags:?}: {}", String::from_utf8_lossy(&output.stdout));
    }
    // Values the flags' parsers refuse: a command line's exit code 2, one line naming the flag.
    for (flags, said) in [
        (&["--batch-rows", "0"][..], "'--batch-rows <BATCH_ROWS>': the row count must be a positive number"),
        (&["--batch-rows", "-5"], "'--batch-rows <BATCH_ROWS>': \"-5\": a row count must be a positive number"),
        (&["--duration", "0s"], "'--duration <DURATION>': \"0s\": a level needs time to run"),
        (&["--iterations", "0"], "'--iterations <ITERATIONS>': a level needs at least one statement"),
        (&["--rounds", "0"], "'--rounds <ROUNDS>'"),
    ] {
        let mut args =
            vec!["bench", "writes", "--target", "embedded", "--results-dir", results.path().to_str().unwrap()];
        args.extend(flags);
        let line = super::flags::usage_error(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
        assert!(line.starts_with("error: invalid value ") && line.contains(said), "{flags:?}: {line}");
    }
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle folder was made");
}

/// A durability that is not one is refused as every other bad value of a flag is: one
/// line, which names the values there are.
#[test]
fn an_unknown_durability_is_one_line_naming_the_durabilities() {
    let results = tempfile::tempdir().unwrap();
    let output = writes_without_an_engine(results.path(), &["--durability", "sometimes"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let line = error_lines(&output).concat();
    assert_eq!(line, "error: --durability \"sometimes\" is not one of its values: none, fsync");
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle folder was made");
}

/// The line for a batch past the free disk at one client says "1 client", as every other
/// count of this tool is said.
#[test]
fn a_batch_past_the_free_disk_at_one_client_is_said_in_good_grammar() {
    let results = tempfile::tempdir().unwrap();
    let output = writes_without_an_engine(results.path(), &["--batch-rows", "5G", "--concurrency", "1"]);
    let line = error_line(&output);
    assert!(line.contains("(the first INSERT of 1 client at once"), "{line}");
}

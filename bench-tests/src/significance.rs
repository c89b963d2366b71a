//! Whether two sets of timings differ: the test, its thresholds and its verdict.

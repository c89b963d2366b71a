//! The xtask crate's integration tests, one binary with a module for each area, so that a
//! change links one test binary instead of one per file (each links all of chbench). A
//! test's nextest name is its module's path: `eks::no_cluster_is_one_line_...` in binary
//! `it`.

mod ab_runs;
mod bad_input;
mod bench_bundle;
mod clickbench;
mod common;
mod compare;
// It needs the Kubernetes client: `cargo nextest run -p xtask --features eks`.
#[cfg(feature = "eks")]
mod eks;
mod eks_build;
mod engine_fetch;
mod engine_version;
mod engine_worker;
mod history;
// Only an xtask built without the `eks` feature runs itself again to get it.
#[cfg(not(feature = "eks"))]
mod eks_rerun;
mod matrix;
mod measure_pack;
mod new_pack;
mod parts_sweep;
mod stops;
mod storage_profiles;
mod throughput;
mod workflows;
mod writes;

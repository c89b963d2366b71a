//! The library's integration tests, one binary (each former test file a module), so that
//! a change links one test binary instead of a dozen. `packs.rs` stays a binary of its
//! own: its harness lists the tests from the packs when it starts.
//!
//! The test contract is the library's (`bench-tests/src/lib.rs`): `CHBENCH_TARGET`
//! chooses the engine, each scenario works in a database of its own, and no test asserts
//! a wall-clock time. The Kubernetes tests (`cluster`, `manifests`) need the `eks`
//! feature; they talk to a mocked API server, never a cluster.

mod common;

mod clickbench;
#[cfg(feature = "eks")]
mod cluster;
mod compare;
mod concurrency;
mod docs;
mod embedded_engine;
mod engine_versions;
mod history;
mod layers;
mod leftovers;
mod logs;
#[cfg(feature = "eks")]
mod manifests;
mod matrix;
mod measurement;
mod pack_checks;
mod pack_claims;
mod pack_guard;
mod pack_runs;
mod pages;
mod profiles;
mod results_bundle;
mod server;
mod storage_baseline;
mod throughput;
mod writes;

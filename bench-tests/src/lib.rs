//! The ClickHouse proving ground: targets, datasets, measurement and results.
//!
//! # Test contract
//!
//! - `CHBENCH_TARGET` chooses the engine every scenario runs on: `embedded` (the real
//!   ClickHouse engine in-process, libchdb), `container` (`clickhouse/clickhouse-server`
//!   in Docker, one container per nextest run, through testcontainers; needs the
//!   `container` feature), `url` (a running server: `CHBENCH_URL`, `CHBENCH_USER`,
//!   `CHBENCH_PASSWORD`), `eks` (the pod `cargo xtask eks up` deployed, through a
//!   port-forward; needs the `eks` feature) or `auto`, the default: `container` in a
//!   build with it when a Docker daemon answers, else `embedded`. In the library
//!   [`target_info::TargetKind::from_env`] is the only code that reads it; `xtask` reads it
//!   through clap, as `--target`'s default.
//! - The embedded engine is fetched on first use ([`engine`]); `CHBENCH_LIBCHDB` points
//!   at an existing `libchdb.so` instead.
//! - Each scenario works in a database of its own, dropped and recreated at its start
//!   ([`targets::Target::use_scenario_database`]). On the embedded engine it is named
//!   after the scenario and goes with the process's folder; on a server that processes
//!   share it is `<scenario>__run<run>_p<pid>`, this process's alone, dropped when the
//!   target closes (one a killed test left, by a later process of the same run).
//! - Tests assert structural facts (rows read, granules selected, bytes per column,
//!   parts) or ratios measured in the same run, never a wall-clock time. Snapshots live
//!   in the workspace's `snapshots/clickhouse-<version>/` under explicit names and
//!   record the engine version.
//! - SQL comes from `fixtures/`, never from Rust strings, except the system-table
//!   queries the measurement core itself runs.

// The layers, bottom up (ARCHITECTURE.md, "Layers"; tests/it/layers.rs keeps them).
// Text, numbers, files and the engine library:
pub mod engine;
pub mod env;
pub mod files;
pub mod interrupt;
pub mod invariant;
pub mod markdown;
pub mod numbers;
pub mod runtime;
pub mod significance;
pub mod sql;
pub mod terminal;
pub mod units;
// What a results bundle records:
pub mod ab_variants;
pub mod answers;
pub mod breakdown;
pub mod engine_threads;
pub mod levels;
pub mod load_generator;
pub mod machine;
pub mod node_prices;
pub mod plan;
pub mod profiles;
pub mod query_runs;
pub mod settings;
pub mod stats;
pub mod storage_baseline;
pub mod table_bytes;
pub mod table_parts;
pub mod target_info;
// The bundle, its report and the comparison of bundles:
pub mod compare;
pub mod report;
pub mod results;
// Kubernetes deployments:
pub mod cluster;
// Targets:
pub mod targets;
// Measurement on a target:
pub mod closed_loop;
pub mod explain;
pub mod fixtures;
pub mod guard;
pub mod measure;
pub mod profiling;
// Prepared datasets:
pub mod dataset;
// Scenario packs, benchmarks, and what a run on a deployment leaves:
pub mod benchmarks;
#[cfg(feature = "eks")]
pub mod collect;
pub mod packs;
// Matrix runs: a kind by name, run once per variant (above the registry), and the
// history of a kind's runs:
pub mod history;
pub mod matrix;

//! The runtime a blocking API drives one async client on (the HTTP client, Docker's, the
//! Kubernetes client): the target API is blocking, its clients are async.

use anyhow::{Context, Result};

/// A current-thread runtime with I/O and timers, running only inside its `block_on`.
/// `what` names the client for the error: "the HTTP client".
pub fn blocking_runtime(what: &str) -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .with_context(|| format!("cannot start {what}'s runtime"))
}

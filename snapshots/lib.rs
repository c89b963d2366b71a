//! No code: this package exists so that cargo-insta finds the snapshots in this folder
//! (see `Cargo.toml` here).

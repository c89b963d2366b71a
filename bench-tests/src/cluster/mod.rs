//! Kubernetes deployments of ClickHouse for the `eks` target: the manifests under
//! `manifests/`, rendered from flags and checked before anything is applied
//! ([`manifests`]), then applied and waited for ([`deploy`]).
//!
//! Built with the `eks` cargo feature only (it brings the Kubernetes API types), so that
//! a laptop that never touches a cluster does not compile them.

pub mod deploy;
pub mod manifests;

//! `cargo xtask clean-containers`: remove the `container` target's containers whose owner
//! (a nextest run's runner, or a process) has ended. A container in use stays. Without a
//! Docker daemon there is none to remove, which is no error. An xtask built without the
//! container target (its Docker client) runs itself again built with it, where Docker is.

use anyhow::Result;
use chbench::targets::container::{MISSING_FEATURE, SCOPE_LABEL, clean_containers, docker_answers, docker_socket_seen};

use crate::flags::CleanContainers;

const NO_DOCKER: &str = "no Docker daemon answers (DOCKER_HOST, or /var/run/docker.sock, rootless Docker's or Docker Desktop's socket): no \
     container to remove";

impl CleanContainers {
    pub fn run(self) -> Result<()> {
        if let Some(missing) = MISSING_FEATURE {
            if docker_socket_seen().is_none() {
                println!("{NO_DOCKER}");
                return Ok(());
            }
            return crate::features::rerun_with_the_feature(&missing, "cargo xtask clean-containers", None)
                .map(|never| match never {});
        }
        if !docker_answers() {
            println!("{NO_DOCKER}");
            return Ok(());
        }
        let cleanup = clean_containers()?;
        for name in &cleanup.removed {
            println!("removed {name}");
        }
        if cleanup.removed.is_empty() {
            println!("no container to remove");
        }
        // Containers of runs still going, or of another machine sharing the daemon, stay.
        println!("to remove every one, in use or not: docker rm -f $(docker ps -aq --filter label={SCOPE_LABEL})");
        Ok(())
    }
}

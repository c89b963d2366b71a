//! `cargo xtask clean-containers`: remove the `container` target's containers whose owner
//! (a nextest run's runner, or a process) has ended. A container in use stays. Without a
//! Docker daemon there is none to remove, which is no error.

use anyhow::Result;
use chbench::targets::container::{SCOPE_LABEL, clean_containers, docker_answers};

use crate::flags::CleanContainers;

impl CleanContainers {
    pub fn run(self) -> Result<()> {
        if !docker_answers() {
            println!("no Docker daemon answers (DOCKER_HOST, or /var/run/docker.sock): no container to remove");
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

//! `cargo xtask engine-worker` (hidden): the embedded engine of one version in a process of
//! its own, answering another chbench process over its stdin and stdout
//! (`chbench::targets::worker`). A subcommand of xtask rather than a binary of the chbench
//! crate: `cargo xtask` builds xtask alone, so its own executable is the one program a run
//! knows is there.

use anyhow::Result;
use chbench::target_info::TargetKind;
use chbench::targets::Storage;

use crate::flags::EngineWorker;

impl EngineWorker {
    pub fn run(self) -> Result<()> {
        self.engine.choose_for(TargetKind::Embedded)?;
        if let Some(mount) = &self.volume {
            chbench::targets::volume::join_parents_volume(mount)?;
        }
        let settings = crate::bench::run_settings(&self.settings)?;
        if !settings.is_empty() {
            chbench::settings::choose_run_settings(settings)?;
        }
        let storage = match (self.copy_of, self.build) {
            (Some(folder), _) => Storage::CopyOf(folder),
            (None, Some(folder)) => Storage::Build(folder),
            (None, None) => Storage::Scratch,
        };
        chbench::targets::worker::serve(&storage)
    }
}

//! `cargo xtask setup`: fetch the pinned engine (`--engine-version`: another pinned one),
//! check that it loads and answers.

use anyhow::Result;
use chbench::engine;
use chbench::target_info::TargetKind;
use chbench::targets::open_target_of_kind;

use crate::flags::Setup;

impl Setup {
    pub fn run(self) -> Result<()> {
        self.engine.choose_for(TargetKind::Embedded)?;
        let progress = |line: &str| chbench::say!("setup: {line}");
        let library = engine::library(&progress)?;
        // Printed once the library has loaded and answered, so a bad one prints only its error.
        let target = open_target_of_kind(TargetKind::Embedded)?;
        println!("engine library: {}", library.path.display());
        println!("ClickHouse version: {}", target.info().engine_version);
        Ok(())
    }
}

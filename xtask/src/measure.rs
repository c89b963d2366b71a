//! `cargo xtask measure FILE...`: run SQL files on the chosen target; in each file the
//! statements before the last are set-up, the last one is measured and its statistics
//! record printed as JSON.

use anyhow::{Context, Result};
use bench_tests::fixtures::split_statements;
use bench_tests::measure::{StatementTag, measure};
use bench_tests::settings::Settings;
use bench_tests::target::{TargetKind, open_target_of_kind};

use crate::flags::Measure;

impl Measure {
    pub fn run(self) -> Result<()> {
        let mut target = open_target_of_kind(TargetKind::parse(&self.target.target)?)?;
        for file in &self.files {
            let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
            let mut statements = split_statements(&text);
            let last = statements.pop().with_context(|| format!("{} has no statement", file.display()))?;
            for statement in &statements {
                target.execute(statement).with_context(|| format!("{} failed", file.display()))?;
            }
            let name = file.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
            let tag = StatementTag::new("measure", "cli", &name, 1);
            let measured = measure(&mut target, &last, &tag, &Settings::new())
                .with_context(|| format!("{} failed", file.display()))?;
            print!("{}", measured.body);
            println!("{}", serde_json::to_string_pretty(&measured.stats.without_raw())?);
        }
        Ok(())
    }
}

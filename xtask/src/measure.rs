//! `cargo xtask measure FILE...`: run SQL files on the chosen target; in each file the
//! statements before the last are set-up, the last one is measured and its statistics
//! record printed as JSON (`{"file", "answer", "stats"}`, one document per file). Files take no parameters: a `{name}` left in one is an error
//! naming its line, before the engine starts.

use anyhow::{Context, Result};
use chbench::fixtures::{Fixture, Params};
use chbench::measure::{StatementTag, measure};
use chbench::settings::Settings;
use chbench::targets::open_target_of_kind;

use crate::flags::Measure;

impl Measure {
    pub fn run(self) -> Result<()> {
        // Every file is read and checked (placeholders, empty files) before the engine starts.
        let mut files = Vec::new();
        for file in &self.files {
            // No parameters here: a `{name}` left in the file is an error at its line.
            let fixture = Fixture::read(file)?;
            let statements = fixture.render(&Params::new())?;
            files.push((file, fixture.name(), statements));
        }
        let mut target = open_target_of_kind(self.target.target)?;
        for (file, name, mut statements) in files {
            let Some(last) = statements.pop() else { continue };
            for statement in &statements {
                target.execute(statement).with_context(|| statement.location())?;
            }
            let tag = StatementTag::new("measure", "cli", &name, 1);
            let measured = measure(&mut target, &last, &tag, &Settings::new())?;
            // One JSON document per file on stdout, so that it pipes into jq and the like.
            let record = serde_json::json!({
                "file": file.display().to_string(),
                "answer": measured.body,
                "stats": measured.stats.without_raw(),
            });
            println!("{}", serde_json::to_string_pretty(&record)?);
        }
        Ok(())
    }
}

//! `cargo xtask new-pack NAME`: a minimal scenario pack written to `fixtures/NAME/` (or
//! `--dir`), every file commented, whose claims hold as written. It is loaded and checked
//! like any pack before the command says it is done; a name or a folder that cannot be
//! used is refused before anything is written.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chbench::files::{fixtures_root, shown};
use chbench::packs::{CLAIMS_FILE, PACKS_DIR_ENV, Pack, check_name};

use crate::flags::NewPack;

/// The design's file: one table, sorted by the key the query filters on.
const DESIGN: &str = "\
-- One design of the table: its CREATE TABLE, nothing else. Add a file per design to
-- compare (designs/<design>.sql); a design that must fail a claim goes in broken/.
-- index_granularity = 1024 gives 100 K rows about 98 granules, so a claim on granules
-- read is sharp.
CREATE TABLE events
(
    key   UInt64,
    ts    DateTime('UTC'),
    value UInt32
)
ENGINE = MergeTree
ORDER BY key
SETTINGS index_granularity = 1024;
";

/// The generator: `{rows}` rows, every value from `number`.
const GENERATOR: &str = "\
-- Fills the table with {rows} rows, the same on every design and every build: every
-- value derives from `number` (never rand() or now(), see docs/packs.md).
INSERT INTO events
SELECT
    number,
    toDateTime('2026-01-01 00:00:00', 'UTC') + intDiv(number * 86400, {rows}),
    cityHash64(number) % 1000
FROM numbers({rows});

-- One part, so that parts and granules do not depend on when merges ran.
OPTIMIZE TABLE events FINAL SETTINGS optimize_throw_if_noop = 1;
";

/// The query: a range of the sorting key.
const QUERY: &str = "\
-- One range of the sorting key: 500 consecutive keys, at most 2 granules of 1024 rows.
SELECT count(), sum(value)
FROM events
WHERE key >= 2000 AND key < 2500
";

/// The claims, with what each line means.
const CLAIMS: &str = "\
# What must hold for this pack; every key is in docs/packs.md.

# The row counts {rows} takes: every query runs at each (and its snapshot is kept per
# scale). Add a larger one to see whether a claim holds as the table grows.
scales = [100_000]

# queries/one_key_range.sql
[queries.one_key_range]
# The primary key prunes the read to the granules that hold the range.
granules_read_at_most = 2
read_rows_at_most = 2048
# The same, as the primary key's index stage of EXPLAIN indexes = 1 reports it.
index.primary_key.granules_selected_at_most = 2
";

/// The pack's files, by path inside its folder.
const FILES: &[(&str, &str)] = &[
    (CLAIMS_FILE, CLAIMS),
    ("designs/by_key.sql", DESIGN),
    ("generator.sql", GENERATOR),
    ("queries/one_key_range.sql", QUERY),
];

impl NewPack {
    pub fn run(self) -> Result<()> {
        let in_fixtures = self.dir.is_none();
        let dir = self.dir.unwrap_or_else(fixtures_root);
        check_name(&self.name, "cargo xtask new-pack")?;
        if !dir.is_dir() {
            bail!("{} is not a folder; create it, or leave out --dir to write into fixtures/", shown(&dir));
        }
        let folder = dir.join(&self.name);
        // create_dir, not create_dir_all: an existing pack (or anything else there) is
        // never written over.
        fs::create_dir(&folder).map_err(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => {
                anyhow::anyhow!("{} already exists; choose another name, or remove that folder first", shown(&folder))
            }
            _ => anyhow::Error::from(error).context(format!("cannot create {}", shown(&folder))),
        })?;
        if let Err(error) = write_pack(&folder) {
            // Half a pack would be found by the tests and fail there: leave none.
            let _ = fs::remove_dir_all(&folder);
            return Err(error);
        }
        println!("wrote {}/: {}", shown(&folder), FILES.iter().map(|(path, _)| *path).collect::<Vec<_>>().join(", "));
        let environment = if in_fixtures { String::new() } else { format!("{PACKS_DIR_ENV}={} ", shown(&dir)) };
        println!("run it: {environment}cargo nextest run -E 'test(/^{}::/)'", self.name);
        println!(
            "its first run fails on new snapshots only; accept them with cargo insta review (cargo insta accept \
             where there is no terminal), and it passes"
        );
        Ok(())
    }
}

/// Writes every file, then loads the pack as the tests will: what this writes must be a
/// pack that loads.
fn write_pack(folder: &Path) -> Result<()> {
    for (relative, text) in FILES {
        let path: PathBuf = folder.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).with_context(|| format!("cannot create {}", shown(parent)))?;
        }
        fs::write(&path, text).with_context(|| format!("cannot write {}", shown(&path)))?;
    }
    Pack::load(folder).map(drop).context("the new pack does not load (a bug in cargo xtask new-pack)")
}

//! `cargo xtask bench`: build the `sensors` dataset on the chosen target, then run each
//! of its queries cold (caches dropped, direct I/O) and warm, and print what was measured.

use anyhow::{Context, Result};
use bench_tests::fixtures::{Fixture, Params, fixtures_root};
use bench_tests::measure::{QueryStats, StatementTag, drop_caches, measure};
use bench_tests::parts::parts_summary;
use bench_tests::settings::Settings;
use bench_tests::target::{TargetKind, open_target_of_kind};

use crate::flags::Bench;

const DATASET: &str = "sensors";

impl Bench {
    pub fn run(self) -> Result<()> {
        let mut target = open_target_of_kind(TargetKind::parse(&self.target.target)?)?;
        let run_id = format!("bench-{}", run_stamp());
        println!("run {run_id}: dataset {DATASET}, {} rows, {}", self.rows, target.info());
        target.use_fresh_database("bench_sensors")?;
        let params = Params::new().with("rows", self.rows);

        Fixture::load(format!("{DATASET}/schema.sql"))?.apply(&mut target, &params)?;
        let generator = Fixture::load(format!("{DATASET}/generator.sql"))?;
        for (index, statement) in generator.render(&params)?.iter().enumerate() {
            let tag = StatementTag::new(&run_id, DATASET, &format!("generator-{}", index + 1), 1);
            let measured = measure(&mut target, statement, &tag, &Settings::new())
                .with_context(|| format!("fixture {} failed", generator.path.display()))?;
            let seconds = measured.stats.server_duration_us as f64 / 1e6;
            let rows = measured.stats.read_rows;
            println!(
                "  {:<12} {seconds:>8.2} s  {rows:>12} rows read  {:>10.0} rows/s",
                tag.query,
                rows as f64 / seconds.max(1e-9)
            );
        }
        let table = parts_summary(&mut target, "readings")?;
        println!(
            "  table: {} rows in {} active parts, {} partitions",
            table.rows, table.active_parts, table.partitions
        );

        for query in query_fixtures()? {
            let select = query.render_one(&params)?;
            let name = query.name();
            drop_caches(&mut target)?;
            let cold =
                measure(&mut target, &select, &StatementTag::new(&run_id, DATASET, &name, 0), &Settings::direct_io())
                    .with_context(|| format!("query {} failed", query.path.display()))?;
            let mut warm = Vec::new();
            for attempt in 1..=self.runs {
                let tag = StatementTag::new(&run_id, DATASET, &name, attempt);
                warm.push(measure(&mut target, &select, &tag, &Settings::new())?.stats);
            }
            print_query(&name, &cold.stats, &warm);
        }
        Ok(())
    }
}

/// The dataset's query files, by name.
fn query_fixtures() -> Result<Vec<Fixture>> {
    let folder = fixtures_root().join(DATASET).join("queries");
    let mut names: Vec<_> = std::fs::read_dir(&folder)
        .with_context(|| format!("cannot list {}", folder.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "sql"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|path| {
            Fixture::load(format!("{DATASET}/queries/{}", path.file_name().unwrap_or_default().to_string_lossy()))
        })
        .collect()
}

fn print_query(name: &str, cold: &QueryStats, warm: &[QueryStats]) {
    let mut warm_ms: Vec<f64> = warm.iter().map(|stats| stats.server_duration_us as f64 / 1e3).collect();
    warm_ms.sort_by(f64::total_cmp);
    let median = warm_ms[warm_ms.len() / 2];
    println!(
        "  {name}: cold (direct I/O) {:.1} ms, warm min {:.1} ms, median {median:.1} ms of {} runs; read_rows {}, read_bytes {}",
        cold.server_duration_us as f64 / 1e3,
        warm_ms[0],
        warm_ms.len(),
        cold.read_rows,
        cold.read_bytes
    );
}

/// A sortable, unique-enough run id: seconds since the epoch and the process id.
fn run_stamp() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0);
    format!("{seconds}-{}", std::process::id())
}

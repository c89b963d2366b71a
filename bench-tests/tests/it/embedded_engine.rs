//! The embedded engine's facts (docs/embedded-engine.md), checked on the real
//! libchdb whatever `CHBENCH_TARGET` says: these are facts about this one target.

use chbench::settings::Settings;
use chbench::target_info::TargetKind;
use chbench::targets::chdb::Connection;
use chbench::targets::open_target_of_kind;

fn embedded() -> chbench::targets::Target {
    open_target_of_kind(TargetKind::Embedded).expect("cannot open the embedded engine")
}

#[test]
fn the_engine_reports_its_version() {
    let target = embedded();
    let version = &target.info().engine_version;
    assert!(version.split('.').count() == 4 && version.starts_with("26."), "unexpected version {version:?}");
}

#[test]
fn an_empty_result_is_empty_text() {
    let mut target = embedded();
    assert_eq!(target.query_text("SELECT 1 WHERE 0").unwrap(), "");
    target.use_fresh_database("engine_empty_result").unwrap();
    let ddl = target.run("CREATE TABLE t (k UInt8) ENGINE = Memory", &Settings::new(), "TabSeparated").unwrap();
    assert_eq!(ddl.body, "");
}

#[test]
fn an_sql_error_names_the_statement_and_the_engine_code() {
    let mut target = embedded();
    let error = format!("{:#}", target.execute("SELEC 1").unwrap_err());
    assert!(error.contains("statement failed: SELEC 1"), "{error}");
    assert!(error.contains("Code: 62") && error.contains("SYNTAX_ERROR"), "{error}");
    // The connection is still usable after an error.
    assert_eq!(target.query_text("SELECT 2").unwrap(), "2\n");
}

#[test]
fn a_second_connection_shares_the_storage_and_closing_it_leaves_the_first_working() {
    let mut first = embedded();
    first.use_fresh_database("engine_second_connection").unwrap();
    first.execute("CREATE TABLE t (k UInt64) ENGINE = MergeTree ORDER BY k").unwrap();
    first.execute("INSERT INTO t SELECT number FROM numbers(10)").unwrap();
    {
        let mut second = embedded();
        assert_eq!(second.query_text("SELECT count() FROM engine_second_connection.t").unwrap(), "10\n");
    }
    assert_eq!(first.query_text("SELECT count() FROM t").unwrap(), "10\n");
}

#[test]
fn a_second_storage_folder_in_one_process_is_refused_clearly() {
    let _first = embedded();
    let elsewhere = tempfile::tempdir().unwrap();
    let error = Connection::open(elsewhere.path()).err().expect("a second folder must be refused").to_string();
    assert!(error.contains("opens one storage folder at a time"), "{error}");
}

#[test]
fn another_folder_opens_once_every_connection_is_closed() {
    let first_folder = tempfile::tempdir().unwrap();
    let second_folder = tempfile::tempdir().unwrap();
    {
        let first = Connection::open(first_folder.path()).unwrap();
        first.query("CREATE TABLE default.t (k UInt8) ENGINE = MergeTree ORDER BY k", "TabSeparated").unwrap();
    }
    let second = Connection::open(second_folder.path()).expect("a new folder after closing");
    let tables = second.query("SELECT count() FROM system.tables WHERE database = 'default'", "TabSeparated");
    assert_eq!(tables.unwrap().body, "0\n");
}

#[test]
fn statement_settings_apply_to_that_statement_only() {
    let mut target = embedded();
    let one_thread = Settings::new().with("max_threads", 1).with("use_query_condition_cache", 1);
    let during = target
        .run("SELECT getSetting('max_threads'), getSetting('use_query_condition_cache')", &one_thread, "TabSeparated")
        .unwrap();
    assert_eq!(during.body, "1\ttrue\n");
    let after =
        target.query_text("SELECT getSetting('max_threads') = 1, getSetting('use_query_condition_cache')").unwrap();
    // max_threads is back to the engine default, the condition cache back to the session's "off".
    assert_eq!(after, "0\tfalse\n");
}

#[test]
fn the_embedded_engine_has_no_query_log_so_measurement_uses_the_events_delta() {
    // libchdb's C API builds ignore --config-file, so there is no query_log.
    // If this fails, a newer engine has one: switch the embedded target's StatsSource.
    let mut target = embedded();
    let exists =
        target.query_text("SELECT count() FROM system.tables WHERE database = 'system' AND name = 'query_log'");
    assert_eq!(exists.unwrap(), "0\n");
    assert_eq!(target.stats_source(), chbench::stats::StatsSource::ResultAndEventsDelta);
}

/// Merges leave the parts they replaced on disk for minutes; a dataset build removes
/// them, so a copy of the dataset carries (and loads, and removes) active parts only.
/// The tenants pack's generator ends with OPTIMIZE FINAL, which replaces every part.
#[test]
fn a_built_dataset_holds_active_parts_only() {
    let pack = chbench::packs::Pack::named("tenants").unwrap();
    let (mut target, manifest) =
        pack.dataset("by_tenant_day", 1_000_000).unwrap().open_on(TargetKind::Embedded).unwrap();
    let active: u64 = target
        .query_text("SELECT count() FROM system.parts WHERE active AND database = currentDatabase()")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let folder = chbench::dataset::datasets_root().join(format!("{}-{}", manifest.name, manifest.key));
    let part_folders = walk(&folder).filter(|path| path.ends_with("checksums.txt")).count() as u64;
    assert_eq!(active, 140, "20 tenants x 7 days");
    assert_eq!(part_folders, active, "{} holds {part_folders} parts", folder.display());
}

/// Every file under `folder`, not following links (`data/<db>/<table>` links to `store/`).
fn walk(folder: &std::path::Path) -> Box<dyn Iterator<Item = std::path::PathBuf>> {
    let entries = std::fs::read_dir(folder).unwrap().map(|entry| entry.unwrap().path());
    Box::new(entries.flat_map(|path| {
        if path.symlink_metadata().unwrap().is_dir() { walk(&path) } else { Box::new(std::iter::once(path)) }
    }))
}

/// A stop requested while a statement runs cancels it: the ingest of a trillion rows
/// (hours) returns `Interrupted`, not a failure, and the engine answers the next
/// statement. On an engine that cannot cancel, this test runs until nextest's
/// slow-timeout ends it.
#[test]
fn a_stop_request_cancels_the_running_ingest_and_the_engine_answers_after() {
    let mut target = embedded();
    target.use_fresh_database("engine_cancel").unwrap();
    target.execute("CREATE TABLE t (k UInt64) ENGINE = MergeTree ORDER BY k").unwrap();
    let requester = stop_once_a_statement_runs();
    let error = target.execute("INSERT INTO t SELECT number FROM numbers_mt(1000000000000)").unwrap_err();
    requester.join().unwrap();
    assert!(error.is::<chbench::interrupt::Interrupted>(), "{error:#}");
    assert!(format!("{error:#}").ends_with("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"), "{error:#}");
    // The engine still answers, on the same connection; the ingest stopped short.
    assert_eq!(target.query_text("SELECT 1").unwrap(), "1\n");
    let rows: u64 = target.query_text("SELECT count() FROM t").unwrap().trim().parse().unwrap();
    assert!(rows < 1_000_000_000_000, "{rows} rows: the ingest ran to its end");
}

/// A thread that requests a stop, as Ctrl-C does, as soon as a statement is on its way
/// (one not yet in the engine's process list when the first KILL comes is killed by a
/// later one).
fn stop_once_a_statement_runs() -> std::thread::JoinHandle<()> {
    std::thread::spawn(|| {
        while chbench::targets::chdb::running_statements() == 0 {
            std::thread::yield_now();
        }
        chbench::interrupt::request_stop();
    })
}

/// A statement running when a stop is requested ends `Interrupted` even when the engine
/// lets it run to its end (`sleep` does not look for a cancel), and the connection
/// answers the next statement. (What this guards, a killed statement answered without an
/// error and with only some rows, the engine does now and then: a `system.parts` summary
/// came back with no row, and a run failed on that rather than stopping.)
#[test]
fn a_statement_answered_after_a_stop_request_is_interrupted_not_its_answer() {
    let mut target = embedded();
    let requester = stop_once_a_statement_runs();
    let error = target.query_text("SELECT sleep(1)").unwrap_err();
    requester.join().unwrap();
    assert!(error.is::<chbench::interrupt::Interrupted>(), "{error:#}");
    assert_eq!(target.query_text("SELECT 1").unwrap(), "1\n");
}

/// A full disk during an ingest is one line naming the fixture's file and line and the
/// engine's folder. The engine's folder is on a 20 MiB tmpfs, which needs root to mount:
/// elsewhere the test says so and checks the message on the engine's own text only.
#[test]
fn a_full_disk_at_ingest_names_the_fixture_line_and_the_folder() {
    use chbench::fixtures::{Fixture, Params};
    use chbench::targets::{Storage, open_target_on};
    // The engine's text for a full disk (measured on such a tmpfs), said with the folder.
    let folder = tempfile::tempdir().unwrap();
    let engine = "Code: 243. DB::Exception: Cannot reserve 50.90 MiB, not enough space. (NOT_ENOUGH_SPACE)";
    let line = chbench::targets::chdb::disk_full(engine, folder.path()).expect("a full disk").to_string();
    assert!(line.starts_with(&format!("the disk of the engine's folder {} is full (", folder.path().display())));
    assert!(line.ends_with(&format!("free): free space there, or give fewer rows ({engine})")), "{line}");
    assert_eq!(chbench::targets::chdb::disk_full("Code: 62. SYNTAX_ERROR", folder.path()), None);

    let Some(tiny) = TinyDisk::mount(folder.path()) else { return };
    let storage = tiny.path.join("engine");
    let mut target = open_target_on(TargetKind::Embedded, &Storage::Build(storage.clone())).unwrap();
    target.use_fresh_database("engine_full_disk").unwrap();
    let params = Params::new().with("rows", 1_000_000);
    Fixture::load("logs/schema.sql").unwrap().apply(&mut target, &params).unwrap();
    let error = Fixture::load("logs/generator.sql").unwrap().apply(&mut target, &params).unwrap_err();
    let error = format!("{error:#}");
    assert!(!error.contains('\n'), "{error}");
    assert!(error.starts_with("fixtures/logs/generator.sql:8: "), "{error}");
    let storage = storage.canonicalize().unwrap();
    assert!(error.contains(&format!("the disk of the engine's folder {} is full", storage.display())), "{error}");
    // The engine answers after it.
    assert_eq!(target.query_text("SELECT 1").unwrap(), "1\n");
}

/// A 20 MiB tmpfs, unmounted when dropped (after the engine using it is closed).
struct TinyDisk {
    path: std::path::PathBuf,
}

impl TinyDisk {
    fn mount(under: &std::path::Path) -> Option<TinyDisk> {
        let path = under.join("tiny");
        std::fs::create_dir_all(&path).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=20m", "tmpfs"])
            .arg(&path)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !mounted {
            eprintln!("skipped the full-disk ingest: mounting a tmpfs needs root (the message check ran)");
            return None;
        }
        Some(TinyDisk { path })
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.path).status();
    }
}

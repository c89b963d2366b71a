//! The pack guard on the real engine: every form of a statement that reaches the host's
//! files, the network or another server, in a query, a design or a generator, is refused
//! by the engine's parser in one line at its file and line, before anything of the pack
//! runs (no dataset is built, no file is written).

use std::fs;
use std::path::Path;

use chbench::packs::Pack;
use chbench::target_info::TargetKind;

const SCHEMA: &str = "CREATE TABLE t (k UInt64, v UInt64) ENGINE = MergeTree ORDER BY k;\n";
const GENERATOR: &str = "INSERT INTO t SELECT number, cityHash64(number) % 1000 FROM numbers({rows});\n";
const QUERY: &str = "SELECT count(), sum(v) FROM t WHERE k = 42\n";

/// Pack `name` under `root`, its design, generator and query as given. Each test has a
/// name of its own: a dataset of one name built from other SQL replaces the others', so
/// two tests running at once must not share one.
fn write_pack(root: &Path, name: &str, design: &str, generator: &str, query: &str) {
    let folder = root.join(name);
    for (path, text) in [
        ("designs/plain.sql", design),
        ("generator.sql", generator),
        ("queries/q.sql", query),
        ("claims.toml", "scales = [2000]\n"),
    ] {
        let path = folder.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

/// The pack's one case run on the embedded engine: its error's own line, the folder
/// shortened, or `ran` when it ran.
fn outcome(root: &Path, name: &str, design: &str, generator: &str, query: &str) -> String {
    write_pack(root, name, design, generator, query);
    let folder = root.join(name);
    let pack = Pack::load(&folder).unwrap();
    let case = pack.cases().remove(0);
    match pack.run_case(TargetKind::Embedded, &case) {
        Ok(_) => "ran".to_string(),
        Err(error) => {
            let line = format!("{error:#}");
            assert!(!line.contains('\n'), "one line: {line}");
            error.root_cause().to_string().replace(&format!("{}/", folder.display()), "")
        }
    }
}

#[test]
fn a_query_that_reaches_outside_is_refused_in_every_form() {
    let root = tempfile::tempdir().unwrap();
    let outfile = root.path().join("answer.tsv");
    let outside = |query: &str| outcome(root.path(), "guarded_queries", SCHEMA, GENERATOR, query);
    for (query, expected) in [
        ("SELECT * FROM file /* c */ ('/etc/passwd', 'LineAsString')", "queries/q.sql:1: file(...) reaches outside"),
        ("SELECT * FROM `file`('/etc/passwd', 'LineAsString')", "queries/q.sql:1: file(...) reaches outside"),
        ("SELECT * FROM \"file\"('/etc/passwd', 'LineAsString')", "queries/q.sql:1: file(...) reaches outside"),
        (
            "SELECT count()\nFROM t\nWHERE v IN (SELECT toUInt64(line) FROM\n  FILE -- the host\n  ('/etc/hostname', 'LineAsString'))",
            "queries/q.sql:4: FILE(...) reaches outside",
        ),
        ("SELECT length(file('/etc/hostname'))", "queries/q.sql:1: file(...) reaches outside"),
        ("SELECT * FROM `url`('http://127.0.0.1:9/x', 'TSV')", "queries/q.sql:1: url(...) reaches outside"),
        (
            "SELECT * FROM view(SELECT * FROM\nview(SELECT * FROM remote('127.0.0.1', system.one)))",
            "queries/q.sql:2: remote(...) reaches outside",
        ),
        ("select * from S3('http://127.0.0.1:9/b/k', 'TSV')", "queries/q.sql:1: S3(...) reaches outside"),
        ("SELECT * FROM merge('.*')", "queries/q.sql:1: merge(...) reads outside the pack's tables"),
        ("SELECT count() FROM t SETTINGS use_query_cache = 1", "queries/q.sql:1: setting use_query_cache keeps state"),
        (
            "SELECT count() FROM t SETTINGS send_logs_level = 'trace'",
            "queries/q.sql:1: setting send_logs_level keeps state",
        ),
        (
            "SELECT count() FROM t SETTINGS format_avro_schema_registry_url = 'http://127.0.0.1:9/x'",
            "queries/q.sql:1: setting format_avro_schema_registry_url takes text (URI)",
        ),
        (
            "-- tidy up first\nALTER TABLE t DELETE WHERE k = 1",
            "queries/q.sql:2: a pack's query is one SELECT (or WITH ... SELECT), not ALTER TABLE t ...",
        ),
        ("SELECT FROM WHERE", "queries/q.sql:1: the engine cannot parse this statement (Syntax error"),
        // libchdb's `default` database is an Overlay over the host's files.
        ("SELECT * FROM default.`/etc/hostname`", "queries/q.sql:1: database default is not"),
        ("SELECT * FROM `/etc/hostname`", "queries/q.sql:1: name \"/etc/hostname\" is a path"),
        ("SELECT * FROM default.`hostname`", "queries/q.sql:1: database default is not the pack's own"),
        // Another database, whatever its engine: on a shared server, another run's or user's.
        (
            "SELECT count() FROM prod_customers.accounts",
            "queries/q.sql:1: database prod_customers is not the pack's own",
        ),
        // The catalogues show the host's paths, and on a server other databases and users.
        ("SELECT path FROM system.disks", "queries/q.sql:1: table system.disks is the engine's catalogue"),
        // A structure computed rather than written: the engine would run its ALIAS unseen.
        (
            "SELECT a FROM null(concat('s String, a UInt64 ALIAS toUInt64(file(', '\\'/etc/hostname\\'))'))",
            "queries/q.sql:1: null(...)'s first argument is computed, not written",
        ),
        (
            "SELECT a FROM generateRandom(unhex('6120537472696e67'), 1) LIMIT 1",
            "queries/q.sql:1: generateRandom(...)'s first argument is computed",
        ),
        ("SELECT * FROM values((SELECT 'a UInt64'), 1)", "queries/q.sql:1: values(...)'s first argument is computed"),
        (
            "SELECT count() FROM t WHERE toString(k) IN (SELECT name FROM INFORMATION_SCHEMA.TABLES)",
            "queries/q.sql:1: table INFORMATION_SCHEMA.TABLES is the engine's catalogue",
        ),
        (
            "SELECT count() FROM t WHERE v IN (SELECT a FROM otherdb.secrets AS s)",
            "queries/q.sql:1: database otherdb is not the pack's own",
        ),
        ("SELECT count() FROM t WHERE k GLOBAL NOT IN otherdb.t2", "queries/q.sql:1: database otherdb is not"),
        ("SELECT count() FROM t AS a JOIN `other db`.t AS b ON a.k = b.k", "queries/q.sql:1: database other db is not"),
        ("SELECT count() FROM t WHERE k IN default.\"hosts\"", "queries/q.sql:1: database default is not"),
        ("SELECT dictGet('default.d', 'v', 1)", "queries/q.sql:1: dictGet(...) reaches outside"),
        ("SELECT joinGet('default.j', 'v', 1)", "queries/q.sql:1: joinGet(...) reaches outside"),
        (
            "SELECT aiGenerate('hi') SETTINGS allow_experimental_ai_functions = 1",
            "queries/q.sql:1: aiGenerate(...) reaches outside",
        ),
        ("SELECT showCertificate()", "queries/q.sql:1: showCertificate(...) reaches outside"),
        // A structure given as text is a column list with expressions of its own.
        (
            "SELECT y FROM values('x String, y String ALIAS file(''/etc/hostname'')', ('a'))",
            "queries/q.sql:1: in the structure of a table function: file(...) reaches outside",
        ),
        (
            "SELECT y FROM generateRandom('x UInt8, y String DEFAULT getServerSetting(''path'')', 1) LIMIT 1",
            "queries/q.sql:1: in the structure of a table function: getServerSetting(...) reaches outside",
        ),
        // Settings whose text is SQL, a path or a server.
        (
            "SELECT count() FROM t SETTINGS additional_table_filters = {'t': 'k IN (SELECT 1 FROM url(\\'http://127.0.0.1:9/\\'))'}",
            "queries/q.sql:1: setting additional_table_filters takes text (Map",
        ),
        (
            "SELECT count() FROM t\nSETTINGS additional_result_filter = 'length(file(\\'/etc/hostname\\')) > 0'",
            "queries/q.sql:2: setting additional_result_filter takes text (String)",
        ),
        (
            "SELECT 1 AS x SETTINGS output_format_schema = '/tmp/x.proto'",
            "queries/q.sql:1: setting output_format_schema takes text",
        ),
        ("SELECT count() FROM t FORMAT Template", "queries/q.sql:1: FORMAT chooses how the answer comes back"),
        (
            "SELECT count() FROM t SETTINGS no_such_setting = 1",
            "queries/q.sql:1: the engine cannot explain this statement: Unknown setting 'no_such_setting'",
        ),
    ] {
        let told = outside(query);
        assert!(told.starts_with(expected), "{query}:\n{told}");
    }
    let query = format!("-- every key\nSELECT k\nFROM t\nINTO OUTFILE '{}'", outfile.display());
    let told = outside(&query);
    assert!(told.starts_with("queries/q.sql:4: INTO OUTFILE writes the answer to a file on the host"), "{told}");
    assert!(!outfile.exists(), "nothing may be written");
    // Names that are columns or strings are not calls; numbers, switches and choices
    // are settings a pack may set, and text from a short list.
    let reads = "SELECT 'INTO OUTFILE file(x)', k AS file, v AS `url` FROM t WHERE k = 42 SETTINGS max_threads = 1, \
                 join_algorithm = 'hash', optimize_read_in_order = 0, count_distinct_implementation = 'uniqExact'";
    assert_eq!(outside(reads), "ran");
    assert_eq!(outside("SELECT icebergBucket(16, k), count() FROM t WHERE k = 42 GROUP BY 1"), "ran");
    assert_eq!(outside("SELECT count() FROM primes(10) WHERE prime IN (SELECT k FROM t)"), "ran");
    assert_eq!(outside("SELECT a FROM generateRandom('a UInt8, b Array(Nullable(String))', 1) LIMIT 3"), "ran");
    assert_eq!(outside("SELECT * FROM values('a', 'b')"), "ran");
    assert_eq!(outside("SELECT * FROM values((1, 'a'), (2, 'b'))"), "ran");
    assert_eq!(outside("SELECT * FROM values(-1, 2)"), "ran");
    assert_eq!(outside("WITH 10 AS n\nSELECT count() FROM t WHERE k < n"), "ran");
    // Columns qualified by a table's alias, and the catalogues, are no other database.
    assert_eq!(outside("SELECT a.k FROM t AS a WHERE a.k IN (1, 2) AND a.v IN (SELECT t.v FROM t)"), "ran");
    assert_eq!(outside("SELECT count() FROM system.one WHERE dummy IN system.one"), "ran");
}

#[test]
fn a_design_or_generator_that_reaches_outside_is_refused_before_it_runs() {
    let root = tempfile::tempdir().unwrap();
    let written = root.path().join("written");
    let dataset = |design: &str, generator: &str| outcome(root.path(), "guarded_datasets", design, generator, QUERY);
    let path = written.display();
    for (design, generator, expected) in [
        (
            format!("CREATE TABLE t (k UInt64, v UInt64)\nENGINE = File(TSV, '{path}')"),
            GENERATOR.to_string(),
            "designs/plain.sql:2: ENGINE = File reaches outside",
        ),
        (
            "CREATE TABLE t (k UInt64, v UInt64) ENGINE = Distributed(default, db, t)".to_string(),
            GENERATOR.to_string(),
            "designs/plain.sql:1: Distributed is not a table engine a pack may use",
        ),
        (
            format!(
                "CREATE TABLE t (k UInt64, v UInt64) ENGINE = MergeTree ORDER BY k\nSETTINGS `disk` = disk(type = local, path = '{path}/')"
            ),
            GENERATOR.to_string(),
            "designs/plain.sql:2: setting disk takes text",
        ),
        (
            format!("{SCHEMA}\nCREATE VIEW v AS SELECT * FROM `url`('http://127.0.0.1:9/', 'TSV')"),
            GENERATOR.to_string(),
            "designs/plain.sql:3: url(...) reaches outside",
        ),
        (
            "CREATE TABLE t AS file('/etc/passwd', 'LineAsString')".to_string(),
            GENERATOR.to_string(),
            "designs/plain.sql:1: file(...) reaches outside",
        ),
        (
            SCHEMA.to_string(),
            format!("{GENERATOR}INSERT INTO FUNCTION file('{path}', 'TSV') SELECT 1"),
            "generator.sql:2: file(...) reaches outside",
        ),
        (
            SCHEMA.to_string(),
            format!("{GENERATOR}{}", "INSERT INTO t SELECT * FROM file('/etc/hostname', 'TSV', 'k UInt64, v UInt64')"),
            "generator.sql:2: file(...) reaches outside",
        ),
        (
            SCHEMA.to_string(),
            format!("{GENERATOR}{}", "INSERT INTO t FROM INFILE '/etc/hostname' FORMAT TSV"),
            "generator.sql:2: INSERT ... FROM INFILE reads a file on the host",
        ),
        (
            SCHEMA.to_string(),
            format!("{GENERATOR}{}", "INSERT INTO t VALUES (1, length(file('/etc/hostname')))"),
            "generator.sql:2: INSERT ... VALUES (or FORMAT) carries data the engine's parser does not check",
        ),
        (
            SCHEMA.to_string(),
            format!("{GENERATOR}SYSTEM SHUTDOWN"),
            "generator.sql:2: SYSTEM SHUTDOWN ... is not a statement a pack's design or generator may run",
        ),
        (
            format!("{SCHEMA}ALTER TABLE t FREEZE"),
            GENERATOR.to_string(),
            "designs/plain.sql:2: ALTER ... FREEZE ALL is not a change a pack may make",
        ),
        (
            format!("{SCHEMA}ALTER TABLE t MODIFY SETTING disk = disk(type = local, path = '{path}/')"),
            GENERATOR.to_string(),
            "designs/plain.sql:2: setting disk takes text",
        ),
        (
            "CREATE TABLE t (k UInt64, v UInt64 SETTINGS (max_compress_block_size = 1, min_compress_block_size = 1)) ENGINE = MergeTree ORDER BY k SETTINGS storage_policy = 'default'".to_string(),
            GENERATOR.to_string(),
            "designs/plain.sql:1: setting storage_policy takes text",
        ),
        (
            format!("{SCHEMA}CREATE MATERIALIZED VIEW mv REFRESH EVERY 1 SECOND APPEND TO t AS SELECT 1 AS k, 2 AS v"),
            GENERATOR.to_string(),
            "designs/plain.sql:2: a refreshable materialized view changes the pack's tables in the background",
        ),
        (
            format!("{SCHEMA}CREATE TABLE t2 AS otherdb.accounts ENGINE = Memory"),
            GENERATOR.to_string(),
            "designs/plain.sql:2: database otherdb is not the pack's own",
        ),
        (
            format!("{SCHEMA}CREATE MATERIALIZED VIEW mv TO default.`written` AS SELECT k FROM t"),
            GENERATOR.to_string(),
            "designs/plain.sql:2: the statement writes to database default",
        ),
        (
            format!("{SCHEMA}CREATE TABLE system.zz (k UInt64) ENGINE = Memory"),
            GENERATOR.to_string(),
            "designs/plain.sql:2: the statement writes to database system",
        ),
        (
            format!("{SCHEMA}CREATE TABLE side AS generateRandom('x UInt8, y String ALIAS file(''/etc/hostname'')', 1)"),
            GENERATOR.to_string(),
            "designs/plain.sql:2: in the structure of a table function: file(...) reaches outside",
        ),
        (
            SCHEMA.to_string(),
            "INSERT INTO t SELECT x, 1 FROM generateRandom('x UInt64, y String ALIAS file(''/etc/hostname'')', 1) LIMIT {rows}".to_string(),
            "generator.sql:1: in the structure of a table function: file(...) reaches outside",
        ),
        (
            format!("{SCHEMA}CREATE MATERIALIZED VIEW mv TO system.zz AS SELECT k FROM t"),
            GENERATOR.to_string(),
            "designs/plain.sql:2: the statement writes to database system",
        ),
        (
            "CREATE TABLE t (k UInt64, v UInt64, d Date DEFAULT toDate(k)) ENGINE = MergeTree ORDER BY k TTL d + INTERVAL 1 DAY TO DISK 'default'".to_string(),
            GENERATOR.to_string(),
            "designs/plain.sql:1: TTL ... TO DISK moves parts",
        ),
        (
            SCHEMA.to_string(),
            format!("{GENERATOR}INSERT INTO information_schema.t SELECT 1"),
            "generator.sql:2: the statement writes to database information_schema",
        ),
        (
            SCHEMA.to_string(),
            format!("{GENERATOR}UPDATE system.users SET name = 'x' WHERE 1"),
            "generator.sql:2: the statement writes to database system",
        ),
        (
            SCHEMA.to_string(),
            format!("{GENERATOR}SET dialect = 'kusto'"),
            "generator.sql:2: setting dialect changes how later statements are read",
        ),
        (
            format!(
                "{SCHEMA}CREATE DICTIONARY d (k UInt64, v String) PRIMARY KEY k SOURCE(FILE(path '/etc/passwd' format 'TSV')) LAYOUT(FLAT()) LIFETIME(0)"
            ),
            GENERATOR.to_string(),
            "designs/plain.sql:2: CREATE DICTIONARY d ... is not a statement",
        ),
    ] {
        let told = dataset(&design, &generator);
        assert!(told.starts_with(expected), "{design}\n{generator}:\n{told}");
    }
    assert!(!written.exists(), "nothing may be written");
    // What a pack's dataset does: tables, views, inserts from generating functions,
    // ALTER of its own table, merges of its table stopped.
    let design = "CREATE TABLE t (k UInt64, v UInt64, INDEX vx(v) TYPE minmax GRANULARITY 1) ENGINE = MergeTree ORDER BY k \
                  SETTINGS index_granularity = 256, marks_compression_codec = 'ZSTD(3)', enable_block_number_column = 1, \
                  enable_block_offset_column = 1;\nCREATE VIEW w AS SELECT k FROM t;\n";
    let generator = "INSERT INTO t SELECT number, 7 FROM numbers({rows});\nINSERT INTO t SELECT * FROM values('k UInt64, v UInt64', (42, 1));\nALTER TABLE t MATERIALIZE INDEX vx;\nDELETE FROM t WHERE k = 1;\nUPDATE t SET v = 8 WHERE k = 2 SETTINGS enable_lightweight_update = 1;\nALTER TABLE t APPLY DELETED MASK;\nOPTIMIZE TABLE t FINAL;\nSYSTEM STOP MERGES t;\n";
    assert_eq!(dataset(design, generator), "ran");
    // A table whose engine is left out takes the default; its PARTITION BY is no engine.
    let design = "CREATE TABLE t (k UInt64, v UInt64) PARTITION BY k % 2 ORDER BY k;\n";
    assert_eq!(dataset(design, GENERATOR), "ran");
}

#[test]
fn a_pack_file_that_links_elsewhere_is_refused_on_load() {
    let root = tempfile::tempdir().unwrap();
    write_pack(root.path(), "guarded_links", SCHEMA, GENERATOR, QUERY);
    let secret = root.path().join("secret.txt");
    fs::write(&secret, "SELECT 'the host file'\n").unwrap();
    let query = root.path().join("guarded_links/queries/q.sql");
    fs::remove_file(&query).unwrap();
    std::os::unix::fs::symlink(&secret, &query).unwrap();
    let error = format!("{:#}", Pack::load(&root.path().join("guarded_links")).unwrap_err());
    assert!(error.ends_with("queries/q.sql is a symbolic link or lies outside the pack; a pack's files are its own (copy the file into the pack)"), "{error}");
    assert!(!error.contains("the host file"), "{error}");

    // The claims file too, before it is read: its target would be quoted in a TOML error.
    fs::remove_file(&query).unwrap();
    fs::write(&query, QUERY).unwrap();
    let claims = root.path().join("guarded_links/claims.toml");
    fs::write(&secret, "scales = \"the host file\"\n").unwrap();
    fs::remove_file(&claims).unwrap();
    std::os::unix::fs::symlink(&secret, &claims).unwrap();
    let error = format!("{:#}", Pack::load(&root.path().join("guarded_links")).unwrap_err());
    assert!(error.ends_with("claims.toml is a symbolic link or lies outside the pack; a pack's files are its own (copy the file into the pack)"), "{error}");
    assert!(!error.contains("the host file"), "{error}");

    // A FIFO in place of a file would block the read for good: refused before it.
    fs::remove_file(&claims).unwrap();
    fs::write(&claims, "scales = [2000]\n").unwrap();
    fs::remove_file(&query).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&query).status().unwrap();
    assert!(made.success());
    let error = format!("{:#}", Pack::load(&root.path().join("guarded_links")).unwrap_err());
    assert!(error.ends_with("queries/q.sql is not a plain file (a FIFO, a device or a folder); a pack's SQL files and claims.toml are plain files"), "{error}");
    fs::remove_file(&query).unwrap();
    fs::write(&query, QUERY).unwrap();

    // And the pack folder itself.
    let linked = root.path().join("linked");
    std::os::unix::fs::symlink(root.path().join("guarded_links"), &linked).unwrap();
    let error = format!("{:#}", Pack::load(&linked).unwrap_err());
    assert!(error.contains("is a symbolic link; a pack is a folder of its own files"), "{error}");
}

/// A pack's tables go in a database named after it: a pack named after a database the
/// engine has of its own is refused at load, before anything runs (libchdb's `default` is
/// an `Overlay` over the host's files, where `` SELECT * FROM `Cargo.toml` `` reads the
/// working folder's file); and a guarded dataset whose database is such a one is refused
/// by the guard on the engine, whatever made it.
#[test]
fn a_pack_never_runs_in_a_database_of_the_engines_own() {
    let root = tempfile::tempdir().unwrap();
    for name in ["default", "system", "information_schema"] {
        write_pack(root.path(), name, SCHEMA, GENERATOR, "SELECT * FROM `Cargo.toml` LIMIT 3\n");
        let error = format!("{:#}", Pack::load(&root.path().join(name)).unwrap_err());
        assert!(!error.contains('\n'), "one line: {error}");
        assert!(error.ends_with(&format!("{name:?} is a database the engine has of its own (default, system, information_schema, INFORMATION_SCHEMA), and a pack's tables go in a database named after the pack: name the pack otherwise")), "{error}");
    }
    write_pack(root.path(), "guarded_database", SCHEMA, GENERATOR, QUERY);
    let design = root.path().join("guarded_database/designs/plain.sql");
    let query = chbench::fixtures::Fixture::read(&root.path().join("guarded_database/queries/q.sql"))
        .unwrap()
        .render_one(&chbench::fixtures::Params::new())
        .unwrap();
    let dataset = chbench::dataset::Dataset::new(
        "guarded_database_default",
        "default",
        &[design.to_str().unwrap()],
        chbench::fixtures::Params::new(),
    )
    .guarded(vec![query]);
    let error = format!("{:#}", dataset.open_on(TargetKind::Embedded).err().unwrap());
    assert!(!error.contains('\n'), "one line: {error}");
    assert!(
        error.contains(
            "dataset guarded_database_default: its statements would run in database `default`, the engine's own, \
             engine Overlay,"
        ),
        "{error}"
    );
}

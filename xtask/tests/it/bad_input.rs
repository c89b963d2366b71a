//! Bad input gets one clear line naming what failed and a non-zero exit. These run the
//! real `xtask` binary, each in its own process, as a user would.

use std::io::Read;
use std::path::Path;
use std::process::Output;

use crate::common::{self, error_line, error_lines, loopback_peer};

/// Runs xtask with `env` on top of the caller's, without the engine the caller chose.
fn xtask(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = common::xtask();
    command.args(args).env_remove("CHBENCH_LIBCHDB");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("cannot run xtask")
}

#[test]
fn a_missing_engine_file_is_named_with_what_to_do() {
    let output = xtask(&["setup"], &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
    let line = error_line(&output);
    assert!(line.contains("CHBENCH_LIBCHDB=/nonexistent/libchdb.so is not a file"), "{line}");
}

/// The advice for a file the user chose: theirs, so never "delete it".
const CHOSEN_FILE_ADVICE: &str = "point it at a complete libchdb.so, or unset CHBENCH_LIBCHDB to use the pinned engine";

/// Runs `cargo xtask setup` with `CHBENCH_LIBCHDB` set to `library`; returns its error line.
fn setup_with_library(library: &Path) -> String {
    let line = error_line(&xtask(&["setup"], &[("CHBENCH_LIBCHDB", library.to_str().unwrap())]));
    assert!(line.contains(&format!("CHBENCH_LIBCHDB={} ", library.display())), "{line}");
    assert!(line.ends_with(CHOSEN_FILE_ADVICE) && !line.contains("delete"), "{line}");
    line
}

#[test]
fn a_text_file_as_the_engine_is_named_with_what_to_do() {
    let folder = tempfile::tempdir().unwrap();
    let text = folder.path().join("libchdb.so");
    std::fs::write(&text, b"not a shared library").unwrap();
    let line = setup_with_library(&text);
    assert!(line.contains("is not a libchdb.so (it is not an ELF file)"), "{line}");
}

#[test]
fn an_empty_engine_file_is_named_with_what_to_do() {
    let folder = tempfile::tempdir().unwrap();
    let empty = folder.path().join("libchdb.so");
    std::fs::write(&empty, b"").unwrap();
    let line = setup_with_library(&empty);
    assert!(line.contains("is not a complete libchdb.so (the file is empty)"), "{line}");
}

#[test]
fn a_truncated_engine_is_refused_before_it_is_loaded() {
    // Loading it would map segments past the end of the file: a bus error, no message.
    chbench::engine::provision(&|_| {}).expect("cannot provision the engine");
    let cached = std::fs::File::open(chbench::engine::cache_dir().join("libchdb.so")).unwrap();
    let mut head = Vec::new();
    cached.take(1_000_000).read_to_end(&mut head).unwrap();
    let folder = tempfile::tempdir().unwrap();
    let truncated = folder.path().join("libchdb.so");
    std::fs::write(&truncated, &head).unwrap();
    let line = setup_with_library(&truncated);
    assert!(line.contains("is not a complete libchdb.so (segment "), "{line}");
    assert!(line.contains("the file has 1000000 bytes)"), "{line}");
}

#[test]
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
fn a_library_that_is_not_libchdb_is_named_with_what_to_do() {
    let libm = Path::new("/lib/x86_64-linux-gnu/libm.so.6");
    assert!(libm.is_file(), "this test needs {}", libm.display());
    let line = setup_with_library(libm);
    assert!(line.contains("is not a libchdb.so (it has no symbol chdb_"), "{line}");
}

#[test]
fn credentials_in_the_url_are_refused_without_repeating_them() {
    let output = xtask(
        &["bench", "--target", "url", "--rows", "1000"],
        &[("CHBENCH_URL", "http://bench:s3cret-pw@127.0.0.1:1")],
    );
    let line = error_line(&output);
    assert!(line.contains("CHBENCH_URL holds credentials"), "{line}");
    assert!(line.contains("CHBENCH_USER") && line.contains("CHBENCH_PASSWORD"), "{line}");
    let everything = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!everything.contains("s3cret-pw"), "{everything}");
}

/// Passwords that redaction by substitution got wrong: empty, one common letter, and a
/// long one. Nothing printed or written may depend on which one was set.
const PASSWORDS: [&str; 4] = ["", "a", "e", "a-long-password-with-every-letter-0123456789-xyz"];

/// Runs `bench` against `url` once per password and checks that the outputs are the
/// same, that the run failed with one line, and that it wrote no file.
fn assert_output_independent_of_the_password(url: &str) -> String {
    let mut outputs = Vec::new();
    for password in PASSWORDS {
        let results = tempfile::tempdir().unwrap();
        let output = xtask(
            &["bench", "--target", "url", "--rows", "1000", "--results-dir", results.path().to_str().unwrap()],
            &[("CHBENCH_URL", url), ("CHBENCH_PASSWORD", password)],
        );
        error_line(&output);
        assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a failed login wrote results");
        outputs.push(format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)));
    }
    for (password, output) in PASSWORDS.iter().zip(&outputs) {
        assert_eq!(output, &outputs[0], "the output changes with the password {password:?}");
    }
    outputs.remove(0)
}

#[test]
fn an_unreachable_server_says_nothing_about_the_password() {
    let output = assert_output_independent_of_the_password("http://127.0.0.1:1");
    assert!(output.contains("nothing listens at http://127.0.0.1:1 (the connection was refused)"), "{output}");
    assert!(!output.contains("<hidden>"), "{output}");
}

/// A loopback peer that refuses every login the way ClickHouse's HTTP interface does
/// (status 403, code 516 in the body). It answers nothing else: it is for the error
/// path only.
fn refusing_peer() -> String {
    let message = "Code: 516. DB::Exception: default: Authentication failed: password is incorrect, or there \
                   is no user with such name. (AUTHENTICATION_FAILED) (version 26.3.33.24)\n";
    loopback_peer("403 Forbidden\r\nX-ClickHouse-Exception-Code: 516", message)
}

#[test]
fn a_refused_login_says_nothing_about_the_password() {
    let url = refusing_peer();
    let output = assert_output_independent_of_the_password(&url);
    assert!(output.contains(&format!("ClickHouse at {url} refused user \"default\"")), "{output}");
}

/// An unknown user (or the empty one) is said as a refused login is, naming the variable
/// and never the password: the same output whatever the password.
#[test]
fn an_unknown_or_empty_user_is_said_as_a_refused_login() {
    let message = "Code: 192. DB::Exception: There is no user `nobody` in user directories. (UNKNOWN_USER) \
                   (version 26.3.33.24)\n";
    let url = loopback_peer("403 Forbidden\r\nX-ClickHouse-Exception-Code: 192", message);
    let (_folder, sql) = select_one();
    for (user, what_to_do) in [
        ("nobody", "set CHBENCH_USER to a user the server has (unset, it is default)"),
        ("", "CHBENCH_USER is empty: unset it to log in as default, or name a user the server has"),
    ] {
        let outputs: Vec<Output> = PASSWORDS
            .iter()
            .map(|password| {
                xtask(
                    &["measure", "--target", "url", &sql],
                    &[("CHBENCH_URL", &url), ("CHBENCH_USER", user), ("CHBENCH_PASSWORD", password)],
                )
            })
            .collect();
        let line = error_line(&outputs[0]);
        assert_eq!(
            line,
            format!(
                "error: ClickHouse at {url} refused user {user:?}: the user CHBENCH_USER names is unknown to the \
                 server (UNKNOWN_USER); {what_to_do}"
            )
        );
        assert_eq!(outputs[0].status.code(), Some(1));
        for output in &outputs {
            assert_eq!(output.stderr, outputs[0].stderr, "the output changes with the password");
        }
    }
}

#[test]
fn a_server_that_is_not_clickhouse_is_named_before_any_bundle_is_made() {
    let url = loopback_peer("200 OK", "<html><body>It works</body></html>");
    let results = tempfile::tempdir().unwrap();
    let output = xtask(
        &["bench", "--target", "url", "--rows", "1K", "--results-dir", results.path().to_str().unwrap()],
        &[("CHBENCH_URL", &url)],
    );
    let line = error_line(&output);
    assert!(line.contains(&format!("{url} is not ClickHouse: it answered `SELECT version()` with")), "{line}");
    assert!(line.contains("not a ClickHouse version"), "{line}");
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
}

/// A folder holding `one.sql` (`SELECT 1`), and that file's path: what `measure` runs
/// against a server (it reads its files before it opens the target).
fn select_one() -> (tempfile::TempDir, String) {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("one.sql");
    std::fs::write(&file, "SELECT 1;\n").unwrap();
    let path = file.to_str().unwrap().to_string();
    (folder, path)
}

#[test]
fn a_web_server_that_refuses_the_request_is_named_as_not_clickhouse() {
    // What Python's http.server answers a POST with.
    let page = "<!DOCTYPE HTML>\n<html lang=\"en\"><head><title>Error response</title></head><body>\
                <h1>Error response</h1><p>Error code: 501</p></body></html>\n";
    let url = loopback_peer("501 Unsupported method ('POST')", page);
    let (_folder, sql) = select_one();
    let output = xtask(&["measure", "--target", "url", &sql], &[("CHBENCH_URL", &url)]);
    let line = error_line(&output);
    assert!(
        line.contains(&format!("{url} is not ClickHouse: it answered `SELECT version()` with an HTTP error")),
        "{line}"
    );
    assert!(line.contains("is it a ClickHouse HTTP port"), "{line}");
}

#[test]
fn a_server_that_never_answers_is_named_with_the_endpoint_and_the_timeout() {
    let (url, _connections) = common::silent_peer();
    let (_folder, sql) = select_one();
    let output =
        xtask(&["measure", "--target", "url", &sql], &[("CHBENCH_URL", &url), ("CHBENCH_RESPONSE_TIMEOUT", "0.5")]);
    let line = error_line(&output);
    assert!(line.contains(&format!("ClickHouse at {url} is not responding: no answer within 0.5 s")), "{line}");
    assert!(line.contains("CHBENCH_RESPONSE_TIMEOUT"), "{line}");
}

/// The old client waited on such a peer forever, SIGTERM or not (nextest ends this test
/// as hung there); the default response timeout is far longer than the wait here takes.
#[test]
fn sigterm_ends_a_command_waiting_on_a_server_that_never_answers() {
    let (url, connections) = common::silent_peer();
    let (_folder, sql) = select_one();
    let mut command = common::xtask();
    command
        .args(["measure", "--target", "url", &sql])
        .env_remove("CHBENCH_LIBCHDB")
        .env_remove("CHBENCH_RESPONSE_TIMEOUT")
        .env("CHBENCH_URL", &url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().expect("cannot run xtask");
    connections.recv().expect("xtask never connected");
    let sent = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", String::from_utf8_lossy(&output.stderr));
    let errors = error_lines(&output);
    assert_eq!(
        errors,
        ["error: interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP)"],
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_url_to_another_machine_is_refused_before_the_password_is_sent() {
    let (url, connections) = common::silent_peer();
    let (_folder, sql) = select_one();
    // The documentation address block (RFC 5737): nothing answers there.
    let output = xtask(&["measure", "--target", "url", &sql], &[("CHBENCH_URL", "http://192.0.2.1:8123")]);
    let line = error_line(&output);
    assert!(line.contains("CHBENCH_URL names a host that is not this machine (192.0.2.1)"), "{line}");
    assert!(line.contains("in clear") && line.contains("SSH tunnel"), "{line}");
    // The loopback one is still taken (and reached).
    let _ = xtask(&["measure", "--target", "url", &sql], &[("CHBENCH_URL", &url), ("CHBENCH_RESPONSE_TIMEOUT", "0.1")]);
    assert!(connections.try_recv().is_ok(), "the loopback URL was not reached");
}

/// Values that HTTP would change (spaces at either end) or refuse (control characters) in
/// the header they travel in: each refused with the same line, naming the variable.
const UNSENDABLE: [&str; 6] = [" pw", "pw ", "p\nw", "pw\r\n", "\t", "a-long-password-with-a-tab-at-the-end\t"];

#[test]
fn a_password_or_user_the_transport_would_change_is_refused_the_same_way() {
    let url = refusing_peer();
    let (_folder, sql) = select_one();
    for variable in ["CHBENCH_PASSWORD", "CHBENCH_USER"] {
        let outputs: Vec<String> = UNSENDABLE
            .iter()
            .map(|value| {
                let output = xtask(&["measure", "--target", "url", &sql], &[("CHBENCH_URL", &url), (variable, value)]);
                let line = error_line(&output);
                assert!(line.starts_with(&format!("error: {variable} starts or ends with a space")), "{line}");
                assert!(!line.contains("refused user") && !line.contains("header value"), "{line}");
                format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
            })
            .collect();
        for (value, output) in UNSENDABLE.iter().zip(&outputs) {
            assert_eq!(output, &outputs[0], "the output changes with {variable}={value:?}");
        }
    }
}

#[test]
fn credentials_in_url_parameters_are_refused_without_repeating_them() {
    let output = xtask(
        &["bench", "--target", "url", "--rows", "1000"],
        &[("CHBENCH_URL", "http://127.0.0.1:1/?password=zz-pw")],
    );
    let line = error_line(&output);
    assert!(line.contains("CHBENCH_URL holds credentials") && !line.contains("zz-pw"), "{line}");
}

#[test]
fn prices_and_sizes_that_are_not_finite_or_negative_are_refused_before_anything_runs() {
    for (flag, value) in [
        ("--volume-gib", "inf"),
        ("--node-usd-per-hour", "NaN"),
        ("--node-usd-per-hour", "-1"),
        ("--volume-usd-per-gb-month", "-0.5"),
        ("--volume-gib", "0"),
        ("--volume-mib-per-s", "-125"),
    ] {
        let results = tempfile::tempdir().unwrap();
        let output = xtask(
            &[
                "bench",
                "--target",
                "embedded",
                "--results-dir",
                results.path().to_str().unwrap(),
                &format!("{flag}={value}"),
            ],
            &[],
        );
        let line = error_line(&output);
        assert!(line.starts_with(&format!("error: {flag} ")) && line.contains("give"), "{line}");
        assert_eq!(output.status.code(), Some(1), "{line}");
        // Refused before the engine started or any bundle was made.
        assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "{line}");
        assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0);
    }
}

#[test]
fn a_results_folder_that_is_a_file_is_named_with_its_flag_before_anything_runs() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("README.md");
    std::fs::write(&file, "not a folder").unwrap();
    let output = xtask(&["bench", "--target", "embedded", "--results-dir", file.to_str().unwrap()], &[]);
    let line = error_line(&output);
    assert!(line.contains(&format!("the results folder {} is not a folder", file.display())), "{line}");
    assert!(line.ends_with("give --results-dir a folder"), "{line}");
    assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
    // compare's --out names --out, not --results-dir, and is checked before the bundles are
    // read (these need not exist); the file is left as it was.
    let line = error_line(&xtask(&["compare", "a", "b", "--out", file.to_str().unwrap()], &[]));
    assert_eq!(line, format!("error: the results folder {} is not a folder; give --out a folder", file.display()));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder");
}

#[test]
fn run_ids_that_could_name_a_path_elsewhere_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let results = outside.path().join("results");
    let absolute = outside.path().join("absolute");
    for run_id in ["../escaped", absolute.to_str().unwrap(), "a/b", ".", ".."] {
        for command in [&["bench", "--target", "embedded", "--run-id", run_id][..], &["report", run_id][..]] {
            let mut args = command.to_vec();
            args.extend(["--results-dir", results.to_str().unwrap()]);
            let line = error_line(&xtask(&args, &[]));
            // `report` also takes a bundle's folder, and says when a path holds none.
            let refused = line.contains("is not a usable run id") || line.contains("no results bundle at");
            assert!(refused, "{run_id}: {line}");
        }
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "something was written");
}

/// Runs a command line clap refuses and returns its one error line.
fn usage_error(args: &[&str], env: &[(&str, &str)]) -> String {
    let output = xtask(args, env);
    // clap refuses it before anything runs, with its own usage-error code.
    assert_eq!(output.status.code(), Some(2), "{args:?}: {:?}", output.status);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors = error_lines(&output);
    assert_eq!(errors.len(), 1, "expected one error line in:\n{stderr}");
    errors[0].clone()
}

#[test]
fn an_unknown_target_lists_the_known_ones() {
    let choose = format!("is not a target; choose one of {}", chbench::target_info::TargetKind::names());
    let line = usage_error(&["bench", "--target", "kubernetes"], &[]);
    assert!(line.contains("'kubernetes'") && line.contains("--target") && line.contains(&choose), "{line}");
    // From the variable, the line names the variable: no --target was given.
    for args in [&["bench"][..], &["measure", "q.sql"]] {
        let line = usage_error(args, &[("CHBENCH_TARGET", "kubernetes")]);
        assert!(line.starts_with("error: CHBENCH_TARGET=\"kubernetes\": \"kubernetes\" is not a target"), "{line}");
        assert!(line.contains(&choose) && line.ends_with("set CHBENCH_TARGET to one of them, or unset it"), "{line}");
        assert!(!line.contains("--target"), "{line}");
    }
    // Both given: the flag is what clap read, and what the line names.
    let line = usage_error(&["bench", "--target=kubernetes"], &[("CHBENCH_TARGET", "embedded")]);
    assert!(line.contains("'kubernetes'") && line.contains("--target"), "{line}");
}

#[test]
fn an_unknown_benchmark_kind_lists_the_kinds() {
    let kinds: Vec<&str> = chbench::benchmarks::kinds::KINDS.iter().map(|kind| kind.name).collect();
    for name in ["nope", "log"] {
        let line = usage_error(&["bench", name], &[]);
        assert_eq!(
            line,
            format!(
                "error: {name:?} is not a benchmark kind; the kinds: {} (`cargo xtask bench KIND --help` lists a \
                 kind's flags)",
                kinds.join(", ")
            )
        );
    }
}

#[test]
fn a_negative_row_count_says_what_a_row_count_is() {
    for args in
        [&["bench", "--rows", "-5"][..], &["bench", "logs", "--rows", "-5"], &["bench", "throughput", "--rows", "-5"]]
    {
        let line = usage_error(args, &[]);
        assert!(line.contains("--rows") && !line.contains("unexpected argument"), "{args:?}: {line}");
        assert!(line.contains("\"-5\": a row count must be a positive number like 1000000 or 10M"), "{line}");
    }
}

#[test]
fn a_flag_of_another_kind_names_the_kind_that_takes_it() {
    let line = usage_error(&["bench", "logs", "--parts", "10"], &[]);
    assert_eq!(
        line,
        "error: --parts is not a flag of bench logs but of bench parts: cargo xtask bench parts --parts ..."
    );
    // The default kind's, without a kind named.
    let line = usage_error(&["bench", "--clients=1,4"], &[]);
    assert_eq!(
        line,
        "error: --clients is not a flag of bench logs but of bench parts: cargo xtask bench parts --clients ..."
    );
    // Several kinds take --rows: each is named.
    let line = usage_error(&["bench", "parts", "--rows", "1M"], &[]);
    assert!(line.starts_with("error: --rows is not a flag of bench parts but of bench logs, bench "), "{line}");
    // No kind takes it: the kind's own flags are listed.
    let line = usage_error(&["bench", "parts", "--no-such-flag"], &[]);
    assert!(line.starts_with("error: --no-such-flag is not a flag of bench parts; its flags: "), "{line}");
    assert!(line.contains("--parts") && line.contains("--clients") && line.contains("--target"), "{line}");
}

#[test]
fn a_client_count_given_twice_is_refused_as_a_part_count_given_twice_is() {
    let results = tempfile::tempdir().unwrap();
    for (flag, value, said) in [
        ("--clients", "1,1", "error: --clients lists 1 twice: give each client count once, e.g. --clients 1,4,16"),
        ("--parts", "10,10", "error: --parts lists 10 twice (10 before it)"),
    ] {
        let args =
            ["bench", "parts", "--target", "embedded", flag, value, "--results-dir", results.path().to_str().unwrap()];
        let output = xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
        let line = error_line(&output);
        assert!(line.starts_with(said), "{line}");
        assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
    }
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
}

#[test]
fn readonly_as_a_run_setting_is_refused_saying_why() {
    let results = tempfile::tempdir().unwrap();
    let args =
        ["bench", "--target", "embedded", "--setting", "readonly=1", "--results-dir", results.path().to_str().unwrap()];
    let output = xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
    let line = error_line(&output);
    assert_eq!(
        line,
        "error: --setting \"readonly=1\": readonly cannot be set for a run: the tool's session needs to set its own \
         settings (and create its tables), which a read-only session refuses; leave it out"
    );
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
}

#[test]
fn a_reference_answers_file_that_is_not_one_is_named_in_good_grammar() {
    let folder = tempfile::tempdir().unwrap();
    let answers = folder.path().join("answers.json");
    std::fs::write(&answers, "not json").unwrap();
    let args = ["bench", "clickbench", "--target", "embedded", "--reference-answers", answers.to_str().unwrap()];
    let line = error_line(&xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]));
    assert!(
        line.starts_with(&format!(
            "error: --reference-answers {}: not an answers.json as a clickbench run writes it",
            answers.display()
        )),
        "{line}"
    );
}

#[test]
fn an_absurd_price_is_refused_in_one_line_rather_than_an_unknown_cost() {
    let results = tempfile::tempdir().unwrap();
    for (flag, said) in [
        (
            "--node-usd-per-hour",
            "error: --node-usd-per-hour 1e308 is not a price: give USD per hour, a finite number from 0 to 10000",
        ),
        ("--volume-usd-per-gb-month", "error: --volume-usd-per-gb-month 1e308 is not a price: give USD per GB-month"),
        (
            "--volume-gib",
            "error: --volume-gib 1e308 is not a volume: give the provisioned size in GiB, above 0 and at most",
        ),
    ] {
        let args = ["bench", "--target", "embedded", flag, "1e308", "--results-dir", results.path().to_str().unwrap()];
        let line = error_line(&xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]));
        assert!(line.starts_with(said), "{line}");
    }
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
    // A comparison's price too.
    let line = usage_error(&["compare", "a", "b", "--price-a", "1e308"], &[]);
    assert!(line.contains("\"1e308\" is not a price: give USD per hour above 0 and at most 10000"), "{line}");
}

#[test]
fn a_pack_name_too_long_for_a_file_name_is_one_line_naming_the_limit() {
    let packs = tempfile::tempdir().unwrap();
    let name = "p".repeat(300);
    let output = xtask(&["new-pack", &name, "--dir", packs.path().to_str().unwrap()], &[]);
    let line = error_line(&output);
    assert!(
        line.starts_with(
            "error: cargo xtask new-pack: name pppppppppppppppppppp... has 300 characters, and a name has \
             at most 64"
        ),
        "{line}"
    );
    assert!(!line.contains("os error"), "{line}");
    assert_eq!(std::fs::read_dir(packs.path()).unwrap().count(), 0, "something was written");
}

#[test]
fn a_kinds_flags_before_its_name_say_to_put_the_kind_first() {
    let line = usage_error(&["bench", "--rows", "10", "logs"], &[]);
    assert_eq!(line, "error: a kind's flags follow its name: cargo xtask bench logs --rows 10");
    let line = usage_error(&["bench", "--runs", "2", "logs", "--rows", "1K"], &[]);
    assert_eq!(line, "error: a kind's flags follow its name: cargo xtask bench logs --runs 2 --rows 1K");
}

#[test]
fn an_sql_error_names_the_file_and_the_statement() {
    let folder = tempfile::tempdir().unwrap();
    let fixture = folder.path().join("typo.sql");
    std::fs::write(&fixture, "SELECT 1;\nSELEC count() FROM numbers(10);\n").unwrap();
    // The engine runs here: the caller's, if chosen, so that the suite never fetches the
    // pinned one behind CHBENCH_LIBCHDB's back.
    let chosen = std::env::var("CHBENCH_LIBCHDB").ok();
    let engine: Vec<(&str, &str)> = chosen.iter().map(|path| ("CHBENCH_LIBCHDB", path.as_str())).collect();
    let line = error_line(&xtask(&["measure", "--target", "embedded", fixture.to_str().unwrap()], &engine));
    assert!(
        line.contains(&format!("{}:2: statement failed: SELEC count() FROM numbers(10)", fixture.display())),
        "{line}"
    );
    assert!(line.contains("SYNTAX_ERROR"), "{line}");
}

#[test]
fn a_placeholder_without_a_value_names_the_file_and_line_before_the_engine_starts() {
    let folder = tempfile::tempdir().unwrap();
    // measure fills no placeholder, not even the packs' {rows}: each says so, and what to do.
    for (name, text, line_of, placeholder) in [
        ("scaled.sql", "-- one day of rows\nSELECT count()\nFROM numbers({rows})\n", 3, "rows"),
        ("x.sql", "SELECT {x}\n", 1, "x"),
    ] {
        let fixture = folder.path().join(name);
        std::fs::write(&fixture, text).unwrap();
        let output = xtask(&["measure", "--target", "embedded", fixture.to_str().unwrap()], &[]);
        let line = error_line(&output);
        assert_eq!(
            line,
            format!(
                "error: {}:{line_of}: parameter {{{placeholder}}} has no value: cargo xtask measure fills no \
                 placeholders; write the value in the file",
                fixture.display()
            )
        );
        assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
    }
}

#[test]
fn a_missing_sql_file_is_named() {
    let line = error_line(&xtask(&["measure", "--target", "embedded", "no/such/file.sql"], &[]));
    assert!(line.contains("cannot read no/such/file.sql"), "{line}");
    assert!(!Path::new("no/such/file.sql").exists());
}

/// Needs a running server: `CHBENCH_URL` (and `CHBENCH_USER`); run with
/// `cargo nextest run --run-ignored only`. Checked against a real server on loopback.
#[test]
#[ignore = "needs a ClickHouse server at CHBENCH_URL"]
fn a_wrong_password_is_refused_and_never_echoed() {
    let url = std::env::var("CHBENCH_URL").expect("CHBENCH_URL");
    let user = std::env::var("CHBENCH_USER").unwrap_or_else(|_| "default".to_string());
    let output = xtask(
        &["bench", "--target", "url", "--rows", "1000"],
        &[("CHBENCH_URL", &url), ("CHBENCH_USER", &user), ("CHBENCH_PASSWORD", "surely-wrong-pw")],
    );
    let line = error_line(&output);
    assert!(line.contains(&format!("refused user {user:?}")), "{line}");
    let everything = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!everything.contains("surely-wrong-pw"), "the password leaked:\n{everything}");
}

#[test]
fn a_missing_npm_says_what_to_do() {
    // An empty cache (a fresh target dir) and no npm on the PATH.
    let fresh_target = tempfile::tempdir().unwrap();
    let output =
        xtask(&["setup"], &[("CARGO_TARGET_DIR", fresh_target.path().to_str().unwrap()), ("PATH", "/nonexistent")]);
    let line = error_line(&output);
    assert!(line.contains("`npm` is required to fetch the embedded engine"), "{line}");
    assert!(line.contains("CHBENCH_LIBCHDB"), "{line}");
}

/// Runs `measure` on the embedded target with an engine file that does not exist, and
/// returns its error line: a mistake that shows instead of the engine's error was found
/// before the engine was touched.
fn measure_without_an_engine(args: &[&str]) -> String {
    let mut command_line = vec!["measure", "--target", "embedded"];
    command_line.extend(args);
    let output = xtask(&command_line, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
    let line = error_line(&output);
    assert!(!line.contains("CHBENCH_LIBCHDB"), "the engine was reached: {line}");
    assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
    assert!(output.stdout.is_empty(), "{}", String::from_utf8_lossy(&output.stdout));
    line
}

#[test]
fn an_unknown_pack_lists_the_packs_before_the_engine_starts() {
    let line = measure_without_an_engine(&["no_such_pack", "one_tenant_one_hour"]);
    assert!(line.starts_with("error: no_such_pack is neither a pack nor an SQL file (packs here: "), "{line}");
    assert!(line.contains("primary_key") && line.contains("tenants"), "{line}");
    assert!(line.contains("an SQL file must exist or end in .sql"), "{line}");
    // A path never reaches a pack outside fixtures/, even one that exists.
    let line = measure_without_an_engine(&["../fixtures/tenants", "one_tenant_one_hour"]);
    assert!(line.starts_with("error: ../fixtures/tenants is neither a pack nor an SQL file"), "{line}");
}

#[test]
fn an_unknown_query_lists_the_queries_before_the_engine_starts() {
    let line = measure_without_an_engine(&["tenants", "no_such_query"]);
    assert_eq!(line, "error: pack tenants has no query no_such_query (its queries: one_tenant_one_hour)");
}

#[test]
fn an_unknown_design_lists_the_designs_before_the_engine_starts() {
    let line = measure_without_an_engine(&["tenants", "one_tenant_one_hour", "--design", "by_month"]);
    assert_eq!(line, "error: pack tenants has no design by_month (its designs: by_day, by_tenant_day, time_first)");
}

#[test]
fn a_row_count_that_is_zero_or_not_a_count_is_refused_before_the_engine_starts() {
    let line = measure_without_an_engine(&["primary_key", "one_device_one_hour", "--rows", "0"]);
    assert_eq!(line, "error: --rows 0: the row count must be a positive number like 10M");
    // A count below zero is a count, not an unknown flag.
    let line = measure_without_an_engine(&["primary_key", "one_device_one_hour", "--rows", "-5"]);
    assert_eq!(line, "error: --rows -5: \"-5\": a row count must be a positive number like 1000000 or 10M");
    let line = measure_without_an_engine(&["primary_key", "one_device_one_hour", "--rows", "ten"]);
    assert!(line.starts_with("error: --rows ten: \"ten\" is not a row count"), "{line}");
}

#[test]
fn a_pack_without_a_query_or_with_extra_arguments_is_refused_before_the_engine_starts() {
    let line = measure_without_an_engine(&["tenants"]);
    assert_eq!(
        line,
        "error: measure tenants needs a query: cargo xtask measure tenants QUERY (its queries: one_tenant_one_hour)"
    );
    let line = measure_without_an_engine(&["tenants", "one_tenant_one_hour", "by_day"]);
    assert!(
        line.starts_with("error: measure takes a pack and one query (PACK QUERY), or SQL files, and got 3 arguments"),
        "{line}"
    );
    assert!(
        line.contains("tenants was read as a pack since no such file exists and it does not end in .sql"),
        "{line}"
    );
}

#[test]
fn pack_flags_on_sql_files_are_refused_before_the_engine_starts() {
    let line = measure_without_an_engine(&["setup.sql", "--design", "by_day", "--rows", "1M"]);
    assert_eq!(
        line,
        "error: --design and --rows: for a pack's query only (cargo xtask measure PACK QUERY), and setup.sql is an SQL file"
    );
}

/// The other side of the tests above: a good pack command line passes every check (a
/// broken design and a row count with a suffix included) and gets as far as the engine.
#[test]
fn a_good_pack_command_line_gets_as_far_as_the_engine() {
    let output = xtask(
        &[
            "measure",
            "--target",
            "embedded",
            "tenants",
            "one_tenant_one_hour",
            "--design",
            "time_first",
            "--rows",
            "250K",
        ],
        &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")],
    );
    let line = error_line(&output);
    assert!(line.contains("CHBENCH_LIBCHDB=/nonexistent/libchdb.so is not a file"), "{line}");
}

/// `--rows` beyond what the engine's disk holds (by the run's measured peak per row), or
/// beyond any sane scale, is one line with the estimate and the free space, before the
/// engine is touched or a bundle made.
#[test]
fn rows_beyond_the_free_disk_or_a_sane_bound_are_refused_before_anything_runs() {
    let results = tempfile::tempdir().unwrap();
    let bench = |rows: &str| {
        let args = ["bench", "--target", "embedded", "--rows", rows, "--results-dir", results.path().to_str().unwrap()];
        let output = xtask(&args, &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
        assert_eq!(output.status.code(), Some(1));
        assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
        error_line(&output)
    };
    // 2.23 TiB: more than this machine has free.
    let line = bench("10G");
    assert!(
        line.starts_with(
            "error: --rows 10000000000 needs about 2.23 TiB in target/chbench (196 bytes/row measured at a run's \
             peak at 100 M rows, plus 25 %), which has "
        ),
        "{line}"
    );
    assert!(line.ends_with(" free; give fewer rows or free space"), "{line}");
    let line = bench("11G");
    assert!(line.starts_with("error: --rows 11000000000 is more than chbench generates into one table"), "{line}");
    assert!(line.ends_with("give fewer rows"), "{line}");
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0, "a bundle was made");
    // A pack's scale too, before its dataset is built.
    let line = measure_without_an_engine(&["primary_key", "one_device_one_hour", "--rows", "11G"]);
    assert!(line.contains("dataset primary_key_readings_11000000000 (11000000000 rows) is more than"), "{line}");
}

#[test]
fn an_empty_truncated_or_other_results_file_is_named_with_what_to_do() {
    let bundle = tempfile::tempdir().unwrap();
    let results = bundle.path().join("results.json");
    let report = |text: &str| {
        std::fs::write(&results, text).unwrap();
        error_line(&xtask(&["report", bundle.path().to_str().unwrap()], &[]))
    };
    let what_to_do = "copy the bundle again from where it was written, or run the benchmark again";
    for empty in ["", "\n"] {
        assert_eq!(report(empty), format!("error: {} is empty: {what_to_do}", results.display()));
    }
    let line = report("{\n  \"schema_version\": 2,\n  \"run_id\": \"20261130T152128Z-embedded-logs-10M\",\n");
    assert_eq!(
        line,
        format!(
            "error: {} is truncated: it ends at line 4, column 0, before its JSON does; {what_to_do}",
            results.display()
        )
    );
    // JSON, but not a bundle, is told from text that is not JSON.
    for (text, shape) in [("[1,2,3]", "an array"), ("\"a\"", "a string"), ("42", "a number"), ("null", "null")] {
        assert_eq!(
            report(text),
            format!(
                "error: {} is JSON but not a results bundle: it holds {shape}, and a bundle is an object with a \
                 schema_version; give the folder of a bundle `cargo xtask bench` wrote",
                results.display()
            )
        );
    }
    assert_eq!(
        report("{\"run_id\": 1}"),
        format!("error: {} is JSON but not a results bundle: it has no schema_version", results.display())
    );
    let line = report("results: none");
    assert!(line.starts_with(&format!("error: {} is not JSON: ", results.display())), "{line}");
}

#[test]
fn a_matrix_folder_given_as_a_bundle_points_at_its_variants_and_its_summary() {
    let results = tempfile::tempdir().unwrap();
    let matrix = results.path().join("m1");
    std::fs::create_dir_all(matrix.join("m1-b")).unwrap();
    std::fs::create_dir_all(matrix.join("m1-a")).unwrap();
    std::fs::write(matrix.join("m1-a/results.json"), "{}").unwrap();
    std::fs::write(matrix.join("matrix.json"), "{}").unwrap();
    std::fs::write(matrix.join("matrix.md"), "").unwrap();
    let expected = format!(
        "error: {} is a matrix folder, not a results bundle: give one of its variants' bundles (e.g. {}), or read {}",
        matrix.display(),
        matrix.join("m1-a").display(),
        matrix.join("matrix.md").display()
    );
    // By its path, or by its id under --results-dir; compare says the same.
    let by_path = xtask(&["report", matrix.to_str().unwrap()], &[]);
    assert_eq!(by_path.status.code(), Some(1));
    assert_eq!(error_line(&by_path), expected);
    let by_id = xtask(&["report", "m1", "--results-dir", results.path().to_str().unwrap()], &[]);
    assert_eq!(error_line(&by_id), expected);
    let compared = xtask(&["compare", matrix.to_str().unwrap(), matrix.to_str().unwrap()], &[]);
    assert_eq!(error_line(&compared), expected);
}

#[test]
fn a_run_id_already_taken_is_refused_before_the_engine_starts() {
    let results = tempfile::tempdir().unwrap();
    let taken = results.path().join("yesterday");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("results.json"), "{}").unwrap();
    // An engine that does not exist: reaching it would be its error, not this one.
    let output = xtask(
        &["bench", "--target", "embedded", "--run-id", "yesterday", "--results-dir", results.path().to_str().unwrap()],
        &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")],
    );
    let line = error_line(&output);
    assert_eq!(line, format!("error: the results folder {} already exists; choose another run id", taken.display()));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("chbench: target"), "the engine started");
    assert_eq!(std::fs::read_to_string(taken.join("results.json")).unwrap(), "{}");
}

#[test]
fn clean_containers_without_docker_has_nothing_to_clean() {
    // A socket that does not exist: no daemon answers, as on a machine without Docker.
    let output = xtask(&["clean-containers"], &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("no Docker daemon answers") && stdout.contains("no container to remove"), "{stdout}");
    assert!(error_lines(&output).is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// `eks up` flags that no cluster would take, or that the variant would ignore, each
/// refused in one line before anything is built or sent: a cargo that does not exist
/// would be the error of a rebuild with the Kubernetes client.
#[test]
fn eks_up_flags_are_refused_before_the_kubernetes_client_is_built() {
    let eks_up = |flags: &[&str]| {
        let mut args = vec!["eks", "up"];
        args.extend(flags);
        error_line(&xtask(&args, &[("CARGO", "/nonexistent/cargo"), ("KUBECONFIG", "/nonexistent/kubeconfig")]))
    };
    assert_eq!(
        eks_up(&["--volume-gib", "65537"]),
        "error: --volume-gib 65537: a gp3 volume holds at most 65536 GiB (64 TiB); give --volume-gib 65536 or less"
    );
    assert_eq!(
        eks_up(&["--iops", "100"]),
        "error: --iops 100: gp3 takes 3000 to 80000 IOPS; give --iops in that range"
    );
    assert_eq!(
        eks_up(&["--throughput-mibps", "3000", "--iops", "16000"]),
        "error: --throughput-mibps 3000: gp3 takes 125 to 2000 MiB/s; give --throughput-mibps in that range"
    );
    let line = eks_up(&["--node-type", "xlarge"]);
    assert!(line.starts_with("error: --node-type \"xlarge\" is not an instance type: give FAMILY.SIZE"), "{line}");
    let line = eks_up(&["--variant", "eks-nvme", "--node-type", "m5.xlarge"]);
    assert!(line.starts_with("error: --node-type m5.xlarge has no local NVMe"), "{line}");
    for (variant, flag, value, store) in [
        ("kind", "--iops", "4000", "the cluster's default storage class"),
        ("kind", "--throughput-mibps", "250", "the cluster's default storage class"),
        ("eks-nvme", "--iops", "3000", "the node's instance store"),
        ("eks-nvme", "--throughput-mibps", "125", "the node's instance store"),
    ] {
        assert_eq!(
            eks_up(&["--variant", variant, flag, value]),
            format!(
                "error: {flag}: {variant} has no gp3 volume (its data is on {store}), so {flag} would do nothing; \
                 drop it, or use --variant eks-gp3"
            )
        );
    }
    assert_eq!(
        eks_up(&["--variant", "kind", "--node-type", "m5.xlarge"]),
        "error: --node-type: kind chooses no node (its pod goes wherever the cluster puts it), so --node-type would \
         do nothing; drop it, or use --variant eks-gp3 or eks-nvme"
    );
}

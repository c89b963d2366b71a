//! Bad input gets one clear line naming what failed and a non-zero exit. These run the
//! real `xtask` binary, each in its own process, as a user would: a file a subject.

mod engine;
mod files;
mod flags;
mod server;
mod writes;

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

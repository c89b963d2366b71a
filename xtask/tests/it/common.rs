//! What the modules share: the xtask binary and the cargo that built it, the workspace,
//! the error lines a failed command prints, peers on loopback that misbehave, and the
//! warnings a run said.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The xtask binary built for these tests.
pub const XTASK: &str = env!("CARGO_BIN_EXE_xtask");

/// The xtask binary as a command, without the caller's `CHBENCH_TARGET`, which would
/// choose the target of what it runs.
pub fn xtask() -> Command {
    let mut command = Command::new(XTASK);
    command.env_remove("CHBENCH_TARGET");
    // A deployment the developer brought up (`cargo xtask eks up`) is what `auto` chooses
    // until its `down`: these tests of the command line keep to what `auto` chose before,
    // rather than run on (and bill) the cluster.
    if chbench::cluster::last_up::is_recorded() {
        let kind = chbench::targets::resolve_matrix_kind(chbench::target_info::TargetKind::Auto);
        command.env("CHBENCH_TARGET", kind.to_string());
    }
    command
}

/// The cargo running these tests, as nextest and cargo say; else the one on PATH.
pub fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from)
}

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The lines of the command's stderr that start with `error: `.
pub fn error_lines(output: &Output) -> Vec<String> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr.lines().filter(|line| line.starts_with("error: ")).map(str::to_string).collect()
}

/// The error line, after checking that the run failed normally (exit code 1, not a
/// signal) and printed exactly one.
pub fn error_line(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(1), "expected a failure with exit code 1, got {:?}", output.status);
    let errors = error_lines(output);
    assert_eq!(errors.len(), 1, "expected one error line in:\n{}", String::from_utf8_lossy(&output.stderr));
    errors[0].clone()
}

/// A loopback peer that accepts every connection and never answers (a ClickHouse server,
/// a Kubernetes API server); reports each one.
pub fn silent_peer() -> (String, std::sync::mpsc::Receiver<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (accepted, connections) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().flatten() {
            open.push(stream);
            let _ = accepted.send(());
        }
    });
    (url, connections)
}

/// A loopback HTTP peer that gives every request the same answer (a ClickHouse server
/// refusing a login, a web server, a Kubernetes API server refusing a user).
pub fn loopback_peer(status_and_headers: &'static str, body: &'static str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut content_length = 0;
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    content_length = value.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut request_body = vec![0; content_length];
            let _ = reader.read_exact(&mut request_body);
            let response = format!(
                "HTTP/1.1 {status_and_headers}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = reader.get_mut().write_all(response.as_bytes());
        }
    });
    url
}

/// The warnings a run said, for a test to read.
#[derive(Default)]
pub struct Said(pub std::sync::Mutex<Vec<String>>);

impl chbench::benchmarks::Progress for Said {
    fn start(&self, _: &str, _: Option<u64>) {}
    fn advance(&self, _: &str) {}
    fn finish(&self, _: &str) {}
    fn warn(&self, line: &str) {
        self.0.lock().unwrap().push(line.to_string());
    }
    fn note(&self, _: &str) {}
}

//! Headless Chromium driven over the DevTools protocol, on the pipe Chromium offers
//! (`--remote-debugging-pipe`: it reads commands on fd 3 and writes answers and events on
//! fd 4, each a JSON message ended by a NUL). Written by hand: the crates for the protocol
//! either fetch its definition from GitHub while they build (headless_chrome) or bring an
//! async WebSocket stack (chromiumoxide), and a test needs five commands.
//!
//! Chromium is Debian's `chromium` (`.ci/run` installs it), or the program
//! `CHBENCH_CHROMIUM` names.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// Long enough for any page of these tests, from the browser's start to the last answer;
/// longer is a hang, not a slow page.
const HANG: Duration = Duration::from_secs(60);

pub fn chromium() -> PathBuf {
    std::env::var_os("CHBENCH_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// A page opened from disk in its own browser, and every problem the browser reported
/// while it loaded and since: a console error, an uncaught exception, an error logged, a
/// request that failed, and any request at all but the page's own file.
pub struct Page {
    browser: Child,
    commands: std::io::PipeWriter,
    messages: Receiver<Value>,
    session: String,
    next_id: u64,
    url: String,
    deadline: Instant,
    pub problems: Vec<String>,
    _profile: tempfile::TempDir,
}

impl Page {
    /// Opens `file` at a desktop width and waits for its load event.
    pub fn open(file: &Path) -> Page {
        let chromium = chromium();
        assert!(
            chromium.is_file(),
            "no Chromium at {} (Debian: apt-get install chromium; or set CHBENCH_CHROMIUM)",
            chromium.display()
        );
        // The address as the browser gives it back (a space or `#` in the path encoded):
        // the one request the page may make.
        let url = url::Url::from_file_path(file.canonicalize().unwrap()).unwrap().to_string();
        let profile = tempfile::tempdir().unwrap();
        let (to_browser_read, to_browser) = std::io::pipe().unwrap();
        let (from_browser, from_browser_write) = std::io::pipe().unwrap();
        let (read_fd, write_fd) = (to_browser_read.as_raw_fd(), from_browser_write.as_raw_fd());
        let mut command = Command::new(&chromium);
        // As the machine's probe started it: no sandbox as root, no GPU, and none of the
        // background connections a closed network refuses.
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-pipe",
                "--window-size=1280,900",
                "about:blank",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: fcntl and dup2 are async-signal-safe. They put the pipe's ends where
        // Chromium reads and writes the protocol: first above 4 (either end may be fd 3 or
        // 4 itself, which the other's dup2 would close), then on 3 and 4, where dup2 leaves
        // them open across exec.
        unsafe {
            command.pre_exec(move || {
                let read = libc::fcntl(read_fd, libc::F_DUPFD_CLOEXEC, 5);
                let write = libc::fcntl(write_fd, libc::F_DUPFD_CLOEXEC, 5);
                if read < 0 || write < 0 || libc::dup2(read, 3) < 0 || libc::dup2(write, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let browser = command.spawn().unwrap_or_else(|error| panic!("cannot start {}: {error}", chromium.display()));
        drop((to_browser_read, from_browser_write));
        let (sender, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from_browser);
            loop {
                let mut message = Vec::new();
                match reader.read_until(0, &mut message) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                message.pop();
                let Ok(message) = serde_json::from_slice::<Value>(&message) else { continue };
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        let mut page = Page {
            browser,
            commands: to_browser,
            messages,
            session: String::new(),
            next_id: 0,
            url: url.clone(),
            deadline: Instant::now() + HANG,
            problems: Vec::new(),
            _profile: profile,
        };
        let target = page.browser_command("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().unwrap().to_string();
        let attached = page.browser_command("Target.attachToTarget", json!({"targetId": target_id, "flatten": true}));
        page.session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Page", "Runtime", "Log", "Network"] {
            page.command(&format!("{domain}.enable"), json!({}));
        }
        page.command("Page.navigate", json!({"url": url}));
        page.wait_for_event("Page.loadEventFired");
        page
    }

    /// The value of a JavaScript expression in the page (JSON).
    pub fn evaluate(&mut self, expression: &str) -> Value {
        let result = self.command(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression} threw: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// A PNG of the page's whole length, at its width.
    pub fn screenshot(&mut self, path: &Path) {
        let shot = self.command("Page.captureScreenshot", json!({"format": "png", "captureBeyondViewport": true}));
        let data = shot["data"].as_str().unwrap();
        std::fs::write(path, base64::engine::general_purpose::STANDARD.decode(data).unwrap()).unwrap();
    }

    fn browser_command(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    fn command(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(session))
    }

    fn send(&mut self, method: &str, params: Value, session: Option<String>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = Value::String(session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.commands.write_all(&bytes).unwrap();
        loop {
            let message = self.next_message(method);
            if message["id"].as_u64() == Some(id) {
                if let Some(error) = message.get("error") {
                    panic!("{method}: {error}");
                }
                return message["result"].clone();
            }
            self.note(&message);
        }
    }

    fn wait_for_event(&mut self, method: &str) {
        loop {
            let message = self.next_message(method);
            self.note(&message);
            if message["method"] == method {
                return;
            }
        }
    }

    fn next_message(&mut self, waiting_for: &str) -> Value {
        match self.messages.recv_timeout(self.deadline.saturating_duration_since(Instant::now())) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => {
                panic!("Chromium sent nothing for {HANG:?} while waiting for {waiting_for}")
            }
            Err(RecvTimeoutError::Disconnected) => panic!("Chromium ended while waiting for {waiting_for}"),
        }
    }

    /// Keeps what an event says went wrong.
    fn note(&mut self, message: &Value) {
        let params = &message["params"];
        match message["method"].as_str().unwrap_or("") {
            "Runtime.consoleAPICalled" if matches!(params["type"].as_str(), Some("error" | "assert" | "warning")) => {
                self.problems.push(format!("console {}: {}", params["type"], params["args"]))
            }
            "Runtime.exceptionThrown" => self.problems.push(format!("exception: {}", params["exceptionDetails"])),
            "Log.entryAdded" if params["entry"]["level"] == "error" => {
                self.problems.push(format!("logged: {}", params["entry"]["text"]))
            }
            "Network.loadingFailed" => self.problems.push(format!("request failed: {params}")),
            "Network.requestWillBeSent" if params["request"]["url"].as_str() != Some(self.url.as_str()) => {
                self.problems.push(format!("a request: {}", params["request"]["url"]))
            }
            _ => {}
        }
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        let _ = self.browser.kill();
        let _ = self.browser.wait();
    }
}

//! The server connection (the `url` target's client, which `container` and `eks` share)
//! against peers on 127.0.0.1 that misbehave: one that accepts and never answers, and a
//! real old ClickHouse when one can be started here. No wall-clock assertion: what is
//! checked is how each call ends.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use chbench::interrupt::Interrupted;
use chbench::targets::server::{ServerConfig, ServerTarget, Timeouts};

/// A peer on 127.0.0.1 that accepts every connection and never sends a byte; each
/// accepted connection is reported on the channel (and kept open, so the client waits).
/// A Kubernetes API server that never answers, too (`cluster::unanswered`).
pub(crate) fn silent_peer() -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (accepted, connections) = mpsc::channel();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().flatten() {
            open.push(stream);
            let _ = accepted.send(());
        }
    });
    (url, connections)
}

#[test]
fn a_server_that_never_answers_is_named_with_the_endpoint_and_the_timeout() {
    let (url, _connections) = silent_peer();
    let timeouts = Timeouts { connect: Duration::from_secs(10), response: Duration::from_millis(300) };
    let config = ServerConfig::new(&url, "default", "").unwrap().with_timeouts(timeouts);
    let error = ServerTarget::connect(config).err().expect("a silent peer was taken for a server");
    let line = format!("{error:#}");
    assert!(line.starts_with(&format!("ClickHouse at {url} is not responding: no answer within 0.3 s")), "{line}");
    assert!(line.contains("CHBENCH_RESPONSE_TIMEOUT"), "{line}");
    assert!(!line.contains('\n'), "{line}");
}

/// On the old client this call waits forever (nextest ends the test as hung): the
/// response timeout here is an hour, so only the interrupt can end it.
#[test]
fn an_interrupt_ends_a_request_that_waits_on_the_server() {
    let (url, connections) = silent_peer();
    let timeouts = Timeouts { connect: Duration::from_secs(10), response: Duration::from_secs(3600) };
    let config = ServerConfig::new(&url, "default", "").unwrap().with_timeouts(timeouts);
    std::thread::spawn(move || {
        // The request is on its way once the peer has its connection.
        connections.recv().unwrap();
        chbench::interrupt::request_stop();
    });
    let error = ServerTarget::connect(config).err().expect("a silent peer was taken for a server");
    assert!(error.is::<Interrupted>(), "{error:#}");
}

/// A real ClickHouse older than the floor gets one line naming its version, the endpoint
/// and the floor. It runs against `CHBENCH_OLD_SERVER_URL` if set, else against a
/// `clickhouse-server` from PATH started here on free loopback ports (Debian's package is
/// 18.16.1: `apt-get install clickhouse-server`); with neither it says so and passes.
#[test]
fn an_old_server_is_refused_in_one_line_naming_its_version_and_the_floor() {
    let started;
    let url = match std::env::var("CHBENCH_OLD_SERVER_URL") {
        Ok(url) => url,
        Err(_) => match OldServer::start() {
            Some(server) => {
                started = server;
                started.url.clone()
            }
            None => {
                eprintln!("skipped: no CHBENCH_OLD_SERVER_URL and no clickhouse-server on PATH");
                return;
            }
        },
    };
    let config = ServerConfig::new(&url, "default", "").unwrap();
    match ServerTarget::connect(config) {
        Ok(_) => eprintln!("the server at {url} is of a supported version: nothing to refuse"),
        Err(error) => {
            let line = format!("{error:#}");
            let (version, rest) = line
                .strip_prefix("ClickHouse ")
                .and_then(|rest| rest.split_once(' '))
                .unwrap_or_else(|| panic!("no version first: {line}"));
            assert!(version.split('.').all(|part| part.parse::<u32>().is_ok()), "{line}");
            assert!(
                rest.starts_with(&format!("at {url} is older than the oldest this tool supports (24.3): ")),
                "{line}"
            );
            assert!(line.contains("upgrade the server to 24.3 or newer"), "{line}");
            assert!(!line.contains("Unknown setting"), "a session setting went before the version check: {line}");
            eprintln!("refused, as it should be: {line}");
        }
    }
}

/// A `clickhouse-server` from PATH, on free loopback ports with a configuration of its
/// own in a temporary folder; killed when dropped.
struct OldServer {
    url: String,
    child: Child,
    _folder: tempfile::TempDir,
}

impl OldServer {
    fn start() -> Option<OldServer> {
        let binary = std::env::var_os("PATH")?
            .to_str()?
            .split(':')
            .map(|dir| Path::new(dir).join("clickhouse-server"))
            .find(|path| path.is_file())?;
        let folder = tempfile::tempdir().unwrap();
        let free_port = || TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (http, tcp) = (free_port(), free_port());
        let root = folder.path().display();
        std::fs::write(
            folder.path().join("users.xml"),
            "<yandex><profiles><default/></profiles><quotas><default/></quotas><users><default><password/>\
             <networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota>\
             </default></users></yandex>",
        )
        .unwrap();
        let config = folder.path().join("config.xml");
        std::fs::write(
            &config,
            format!(
                "<yandex><logger><level>warning</level><console>1</console></logger><listen_host>127.0.0.1</listen_host>\
                 <http_port>{http}</http_port><tcp_port>{tcp}</tcp_port><path>{root}/data/</path>\
                 <tmp_path>{root}/tmp/</tmp_path><users_config>{root}/users.xml</users_config>\
                 <default_profile>default</default_profile><default_database>default</default_database>\
                 <mark_cache_size>1073741824</mark_cache_size></yandex>"
            ),
        )
        .unwrap();
        let child = Command::new(binary)
            .arg(format!("--config-file={}", config.display()))
            .current_dir(folder.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let server = OldServer { url: format!("http://127.0.0.1:{http}"), child, _folder: folder };
        // Ready when it answers its ping (`GET /ping` is "Ok." on every release).
        for _ in 0..300 {
            if ping(http) {
                return Some(server);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("clickhouse-server from PATH did not answer on 127.0.0.1:{http}");
    }
}

impl Drop for OldServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    if stream.write_all(b"GET /ping HTTP/1.0\r\n\r\n").is_err() {
        return false;
    }
    let mut status = String::new();
    BufReader::new(stream).read_line(&mut status).is_ok() && status.contains("200")
}

/// A peer on 127.0.0.1 that reads each request's head, then does `then` with the
/// connection: what a server that crashed mid-request, or a port of another protocol, does.
fn misbehaving_peer(then: fn(&mut TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                line.clear();
            }
            then(reader.get_mut());
        }
    });
    url
}

/// The one line `connect` ends with on the server at `url`.
fn connect_error(url: &str) -> String {
    let timeouts = Timeouts { connect: Duration::from_secs(10), response: Duration::from_secs(30) };
    let config = ServerConfig::new(url, "default", "s3cret-pw").unwrap().with_timeouts(timeouts);
    let line = format!("{:#}", ServerTarget::connect(config).err().expect("the peer was taken for a server"));
    assert!(!line.contains('\n') && !line.contains("s3cret-pw"), "{line}");
    assert!(!line.contains("client error"), "the client's words, not what happened: {line}");
    line
}

#[test]
fn a_refused_port_a_closed_connection_and_an_answer_that_is_not_http_are_told_apart() {
    let free = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    // Nothing listens there once the listener is dropped.
    let refused = format!("http://{free}");
    assert_eq!(
        connect_error(&refused),
        format!(
            "nothing listens at {refused} (the connection was refused): is the server, or the port-forward to it, up?"
        )
    );
    let closed = misbehaving_peer(|stream| {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    });
    assert!(
        connect_error(&closed)
            .starts_with(&format!("ClickHouse at {closed}: the server closed the connection before answering")),
        "{closed}"
    );
    let garbage = misbehaving_peer(|stream| {
        let _ = stream.write_all(b"\x00\x01garbage that is not HTTP\r\n\r\n");
    });
    assert_eq!(
        connect_error(&garbage),
        format!(
            "{garbage} answered, but the answer is not HTTP: is it a ClickHouse HTTP port (8123 by default; 9000 is \
             the native protocol's)?"
        )
    );
}

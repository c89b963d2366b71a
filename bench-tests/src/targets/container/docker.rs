//! The Docker daemon, before any client: whether this machine looks like it has one (for a
//! build without the container target to say so), and why one `DOCKER_HOST` names cannot
//! be used (TLS, another scheme, a socket that is not there) or rootless Docker's socket
//! needs naming. Finding and talking to it is testcontainers' (the `container` feature).

use std::path::{Path, PathBuf};

/// The system's Docker socket, where a daemon usually listens.
const SYSTEM_DOCKER_SOCKET: &str = "/var/run/docker.sock";

/// Where this machine's Docker daemon looks to be, when it looks to have one: `DOCKER_HOST`,
/// else the first socket that exists of the places testcontainers looks.
pub fn docker_socket_seen() -> Option<String> {
    let host = std::env::var("DOCKER_HOST").ok();
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    docker_socket(host.as_deref(), runtime_dir.as_deref(), home.as_deref(), Path::exists)
}

/// `docker_host` (`DOCKER_HOST`) when set (a `unix://` one only if its socket exists),
/// else the first socket that `exists` of the system's, rootless Docker's (`$XDG_RUNTIME_DIR`)
/// and Docker Desktop's (`~/.docker/run`, `~/.docker/desktop`); `None` when there is
/// none. testcontainers looks in the same places but the first rootless one
/// ([`rootless_socket_unseen`] says what to set for it).
pub fn docker_socket(
    docker_host: Option<&str>,
    runtime_dir: Option<&Path>,
    home: Option<&Path>,
    exists: impl Fn(&Path) -> bool,
) -> Option<String> {
    if let Some(host) = docker_host.map(str::trim).filter(|host| !host.is_empty()) {
        // A socket that is not there is no daemon; a network address may be one.
        let socket_missing = host.strip_prefix("unix://").is_some_and(|socket| !exists(Path::new(socket)));
        return (!socket_missing).then(|| host.to_string());
    }
    let mut sockets = vec![PathBuf::from(SYSTEM_DOCKER_SOCKET)];
    if let Some(runtime_dir) = runtime_dir {
        sockets.extend([runtime_dir.join("docker.sock"), runtime_dir.join(".docker/run/docker.sock")]);
    }
    if let Some(home) = home {
        sockets.extend([home.join(".docker/run/docker.sock"), home.join(".docker/desktop/docker.sock")]);
    }
    sockets.into_iter().find(|socket| exists(socket)).map(|socket| format!("unix://{}", socket.display()))
}

/// What to set when the only daemon here is rootless Docker's at its default socket,
/// `$XDG_RUNTIME_DIR/docker.sock`, where testcontainers does not look: `DOCKER_HOST`
/// naming it. `None` when `DOCKER_HOST` is set, the system's socket `exists`, or that one
/// does not.
pub fn rootless_socket_unseen(
    docker_host: Option<&str>,
    runtime_dir: Option<&Path>,
    exists: impl Fn(&Path) -> bool,
) -> Option<String> {
    if docker_host.is_some_and(|host| !host.trim().is_empty()) || exists(Path::new(SYSTEM_DOCKER_SOCKET)) {
        return None;
    }
    let socket = runtime_dir?.join("docker.sock");
    exists(&socket).then(|| {
        format!(
            "rootless Docker's socket is {}, where testcontainers does not look: set DOCKER_HOST=unix://{}",
            socket.display(),
            socket.display()
        )
    })
}

/// Why chbench's Docker client cannot use the daemon `DOCKER_HOST` names, when it cannot:
/// one behind TLS ([`docker_tls_refusal`]), a value testcontainers would read otherwise
/// than written (spaces around it), a scheme it does not speak, or a `unix://` socket that
/// does not `exists`. Only the scheme is shown: the value may hold a user and password.
pub fn docker_host_refusal(
    host: Option<&str>,
    tls_verify: Option<&str>,
    exists: impl Fn(&Path) -> bool,
) -> Option<String> {
    if let Some(refusal) = docker_tls_refusal(host, tls_verify) {
        return Some(refusal);
    }
    let host = host?;
    if host.trim().is_empty() {
        return None; // as unset
    }
    if host.trim() != host {
        return Some("DOCKER_HOST starts or ends with a space, which testcontainers keeps: remove it".to_string());
    }
    let Some((scheme, rest)) = host.split_once("://") else {
        return Some("DOCKER_HOST has no scheme: give unix:///path/to/docker.sock or tcp://127.0.0.1:2375".to_string());
    };
    match scheme.to_ascii_lowercase().as_str() {
        "unix" if !exists(Path::new(rest)) => {
            Some(format!("DOCKER_HOST names the socket {rest}, which does not exist: is a Docker daemon running?"))
        }
        "unix" | "tcp" | "http" => None,
        _ => Some(format!(
            "DOCKER_HOST is a {scheme}:// address, which chbench's Docker client does not speak: give unix:// or \
             tcp://"
        )),
    }
}

/// Why the Docker daemon that `DOCKER_HOST` and `DOCKER_TLS_VERIFY` name cannot be
/// reached, when they ask for TLS: testcontainers is built without its TLS features
/// (`ring`, `aws-lc-rs`), so its Docker client speaks to a local socket or plain `tcp://`
/// (with them, a TLS daemon without `DOCKER_CERT_PATH` panics in its client). A remote
/// daemon would not do anyway: the container's port is published on the daemon's own
/// 127.0.0.1. Only the address's scheme is shown.
pub fn docker_tls_refusal(host: Option<&str>, tls_verify: Option<&str>) -> Option<String> {
    let https = host.is_some_and(|host| host.trim().to_ascii_lowercase().starts_with("https://"));
    let verify = tls_verify.is_some_and(|value| value.trim() == "1");
    let asked = match (https, verify) {
        (true, _) => "DOCKER_HOST is an https:// address",
        (false, true) => "DOCKER_TLS_VERIFY=1 is set",
        (false, false) => return None,
    };
    Some(format!(
        "{asked}, but chbench talks to Docker without TLS: unset DOCKER_HOST and DOCKER_TLS_VERIFY to use this \
         machine's socket (the container's port is published on the daemon's 127.0.0.1, out of reach from another \
         machine); for a server elsewhere, use --target url through an SSH tunnel"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_docker_daemon_behind_tls_is_refused_in_one_line_that_says_what_to_do() {
        assert_eq!(docker_tls_refusal(None, None), None);
        assert_eq!(docker_tls_refusal(Some("unix:///var/run/docker.sock"), None), None);
        assert_eq!(docker_tls_refusal(Some("tcp://127.0.0.1:2375"), Some("0")), None);
        assert_eq!(docker_tls_refusal(Some("tcp://127.0.0.1:2375"), Some("")), None);
        let https = docker_tls_refusal(Some("HTTPS://docker.example:2376"), None).unwrap();
        assert!(https.starts_with("DOCKER_HOST is an https:// address"), "{https}");
        assert!(!https.contains("docker.example") && !https.contains('\n'), "only the scheme is shown: {https}");
        let verify = docker_tls_refusal(Some("tcp://docker.example:2376"), Some("1")).unwrap();
        assert!(verify.starts_with("DOCKER_TLS_VERIFY=1 is set") && verify.contains("unset DOCKER_HOST"), "{verify}");
    }

    #[test]
    fn a_docker_host_the_client_cannot_use_is_refused_showing_its_scheme_alone() {
        let refusal = |host: &str| docker_host_refusal(Some(host), None, |path| path == Path::new("/run/d.sock"));
        assert_eq!(refusal("unix:///run/d.sock"), None);
        assert_eq!(refusal("tcp://127.0.0.1:2375"), None);
        assert_eq!(refusal(""), None);
        assert_eq!(docker_host_refusal(None, None, |_| false), None);
        let ssh = refusal("ssh://me:hunter2pw@example.invalid").unwrap();
        assert!(ssh.starts_with("DOCKER_HOST is a ssh:// address") && !ssh.contains("hunter2pw"), "{ssh}");
        assert!(refusal("/run/d.sock").unwrap().starts_with("DOCKER_HOST has no scheme"));
        assert!(refusal("unix:///run/d.sock ").unwrap().contains("space"));
        let gone = refusal("unix:///nonexistent.sock").unwrap();
        assert!(gone.contains("the socket /nonexistent.sock, which does not exist"), "{gone}");
        assert!(refusal("https://u:pw@example.invalid").unwrap().starts_with("DOCKER_HOST is an https:// address"));
    }

    #[test]
    fn rootless_dockers_default_socket_is_named_for_docker_host() {
        let runtime = Path::new("/run/user/1000");
        let only = |socket: &'static str| move |path: &Path| path == Path::new(socket);
        let line = rootless_socket_unseen(None, Some(runtime), only("/run/user/1000/docker.sock")).unwrap();
        assert!(line.ends_with("set DOCKER_HOST=unix:///run/user/1000/docker.sock"), "{line}");
        assert_eq!(rootless_socket_unseen(Some("unix:///run/user/1000/docker.sock"), Some(runtime), |_| true), None);
        assert_eq!(rootless_socket_unseen(None, Some(runtime), |_| true), None, "the system's socket is found first");
        assert_eq!(rootless_socket_unseen(None, Some(runtime), |_| false), None);
        assert_eq!(rootless_socket_unseen(None, None, |_| true), None);
    }

    #[test]
    fn the_docker_socket_is_docker_host_else_the_first_that_exists() {
        let runtime = Path::new("/run/user/1000");
        let home = Path::new("/home/me");
        let only = |socket: &'static str| move |path: &Path| path == Path::new(socket);
        let host = |set: Option<&str>, exists: &dyn Fn(&Path) -> bool| {
            docker_socket(set, Some(runtime), Some(home), exists).unwrap_or_default()
        };
        assert_eq!(host(Some("tcp://127.0.0.1:2375"), &|_| false), "tcp://127.0.0.1:2375");
        assert_eq!(host(Some("unix:///run/d.sock"), &only("/run/d.sock")), "unix:///run/d.sock");
        let all_but = |missing: &'static str| move |path: &Path| path != Path::new(missing);
        let gone =
            docker_socket(Some("unix:///nonexistent/docker.sock"), None, None, all_but("/nonexistent/docker.sock"));
        assert_eq!(gone, None, "a DOCKER_HOST socket that is not there is no daemon");
        assert_eq!(host(Some(" "), &only("/var/run/docker.sock")), "unix:///var/run/docker.sock");
        assert_eq!(host(None, &|_| true), "unix:///var/run/docker.sock", "the system's comes first");
        assert_eq!(host(None, &only("/run/user/1000/docker.sock")), "unix:///run/user/1000/docker.sock");
        assert_eq!(
            host(None, &only("/home/me/.docker/desktop/docker.sock")),
            "unix:///home/me/.docker/desktop/docker.sock"
        );
        assert_eq!(docker_socket(None, Some(runtime), Some(home), |_| false), None, "no Docker here");
        assert_eq!(docker_socket(None, None, None, |_| false), None);
    }
}

//! The Docker daemon: where it listens (`DOCKER_HOST`, else the usual sockets), whether it
//! answers, a client for it, and why one behind TLS is refused.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use bollard::Docker;

/// Whether a Docker daemon answers a ping (used to resolve `auto`).
pub fn docker_answers() -> bool {
    let Ok(runtime) = crate::runtime::blocking_runtime("the container client") else { return false };
    runtime.block_on(async {
        match connect_docker() {
            Ok(docker) => {
                tokio::time::timeout(Duration::from_secs(3), docker.ping()).await.is_ok_and(|ping| ping.is_ok())
            }
            Err(_) => false,
        }
    })
}

/// The system's Docker socket, where a daemon usually listens.
const SYSTEM_DOCKER_SOCKET: &str = "/var/run/docker.sock";

/// Where the Docker daemon listens: `docker_host` (`DOCKER_HOST`) when set, else the first
/// socket that `exists` of the system's, rootless Docker's (`$XDG_RUNTIME_DIR/docker.sock`)
/// and Docker Desktop's (`~/.docker/run`, `~/.docker/desktop`); testcontainers looks in
/// the same places. None there: the system's, which the error then names.
pub fn docker_host(
    docker_host: Option<&str>,
    runtime_dir: Option<&Path>,
    home: Option<&Path>,
    exists: impl Fn(&Path) -> bool,
) -> String {
    if let Some(host) = docker_host.map(str::trim).filter(|host| !host.is_empty()) {
        return host.to_string();
    }
    let mut sockets = vec![PathBuf::from(SYSTEM_DOCKER_SOCKET)];
    if let Some(runtime_dir) = runtime_dir {
        sockets.extend([runtime_dir.join("docker.sock"), runtime_dir.join(".docker/run/docker.sock")]);
    }
    if let Some(home) = home {
        sockets.extend([home.join(".docker/run/docker.sock"), home.join(".docker/desktop/docker.sock")]);
    }
    let socket = sockets.into_iter().find(|socket| exists(socket));
    format!("unix://{}", socket.as_deref().unwrap_or(Path::new(SYSTEM_DOCKER_SOCKET)).display())
}

/// A Docker client for this machine's daemon ([`docker_host`]); nothing is sent yet.
fn connect_docker() -> Result<Docker> {
    let host = std::env::var("DOCKER_HOST").ok();
    if let Some(refusal) = docker_tls_refusal(host.as_deref(), std::env::var("DOCKER_TLS_VERIFY").ok().as_deref()) {
        bail!("cannot reach Docker: {refusal}");
    }
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let host = docker_host(host.as_deref(), runtime_dir.as_deref(), home.as_deref(), Path::exists);
    Docker::connect_with_host(&host)
        .map_err(|error| anyhow!("cannot reach Docker at {host} (is a Docker daemon running?): {error}"))
}

/// Why the Docker daemon that `DOCKER_HOST` and `DOCKER_TLS_VERIFY` name cannot be
/// reached, when they ask for TLS: the client is built without a TLS stack (which would
/// put ring or aws-lc in every build), so it speaks to a local socket or plain `tcp://`.
/// Only the address's scheme is shown.
pub fn docker_tls_refusal(host: Option<&str>, tls_verify: Option<&str>) -> Option<String> {
    let https = host.is_some_and(|host| host.trim().to_ascii_lowercase().starts_with("https://"));
    let verify = tls_verify.is_some_and(|value| value.trim() == "1");
    let asked = match (https, verify) {
        (true, _) => "DOCKER_HOST is an https:// address",
        (false, true) => "DOCKER_TLS_VERIFY=1 is set",
        (false, false) => return None,
    };
    Some(format!(
        "{asked}, but chbench talks to Docker without TLS: unset DOCKER_HOST and DOCKER_TLS_VERIFY to use the local \
         socket, or forward the remote daemon's socket (`ssh -NL 2375:/var/run/docker.sock <host>`) and set \
         DOCKER_HOST=tcp://127.0.0.1:2375"
    ))
}

/// A Docker client ([`connect_docker`]), once the daemon has answered.
pub(super) async fn docker_client() -> Result<Docker> {
    let unreachable =
        |error: &dyn std::fmt::Display| anyhow!("cannot reach Docker (is a Docker daemon running?): {error}");
    let docker = connect_docker()?;
    docker.ping().await.map_err(|error| unreachable(&error))?;
    Ok(docker)
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
    fn the_docker_socket_is_docker_host_else_the_first_that_exists() {
        let runtime = Path::new("/run/user/1000");
        let home = Path::new("/home/me");
        let only = |socket: &'static str| move |path: &Path| path == Path::new(socket);
        let host =
            |set: Option<&str>, exists: &dyn Fn(&Path) -> bool| docker_host(set, Some(runtime), Some(home), exists);
        assert_eq!(host(Some("tcp://127.0.0.1:2375"), &|_| true), "tcp://127.0.0.1:2375");
        assert_eq!(host(Some(" "), &only("/var/run/docker.sock")), "unix:///var/run/docker.sock");
        assert_eq!(host(None, &|_| true), "unix:///var/run/docker.sock", "the system's comes first");
        assert_eq!(host(None, &only("/run/user/1000/docker.sock")), "unix:///run/user/1000/docker.sock");
        assert_eq!(
            host(None, &only("/home/me/.docker/desktop/docker.sock")),
            "unix:///home/me/.docker/desktop/docker.sock"
        );
        assert_eq!(host(None, &|_| false), "unix:///var/run/docker.sock", "none exists: the error names the system's");
        assert_eq!(docker_host(None, None, None, |_| false), "unix:///var/run/docker.sock");
    }
}

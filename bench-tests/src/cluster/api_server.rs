//! The API server a command talks to ([`Cluster`]): the kubeconfig's cluster ([`connect`]),
//! a client whose every request is bounded, and what a stop request does to them.
//!
//! The bounds ([`Bounds`]): connecting (TCP and TLS) may take `CHBENCH_KUBE_CONNECT_TIMEOUT`
//! seconds (default 10), and each answer `CHBENCH_KUBE_REQUEST_TIMEOUT` seconds (default
//! 30) of silence, from the request's last write to its answer and between the answer's
//! reads, so that a server that takes the connection and then says nothing (a hung API
//! server, a `kubectl proxy` whose upstream is gone) fails the request with one line
//! naming it and what was asked.
//! None of chbench's requests is a watch or a followed log; the one long-lived stream is
//! the port-forward's, whose client ([`Cluster::forward_client`]) has no bound on reading
//! (a query through it may say nothing for minutes), only on connecting and on the API
//! server's answer to opening it.
//!
//! The stop (Ctrl-C, SIGTERM, whatever [`crate::interrupt`] takes as one): every request of
//! the client gets at most [`STOP_GRACE`] after the stop, so that what the work still does
//! on its way out (an interrupted baseline deleting its Job) is tried, and the command ends
//! within two seconds whether the server answers or not. A request cut so makes the work's
//! outcome [`Interrupted`], naming the API server and the request ([`Cluster::run`]).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use anyhow::{Result, anyhow};
use http::{Method, Request, Response};
use kube::Client;
use kube::client::{Body, ClientBuilder};
use tower::{BoxError, Layer, Service};

use crate::env::{seconds, seconds_env};
use crate::interrupt::Interrupted;

pub const CONNECT_TIMEOUT_ENV: &str = "CHBENCH_KUBE_CONNECT_TIMEOUT";
pub const REQUEST_TIMEOUT_ENV: &str = "CHBENCH_KUBE_REQUEST_TIMEOUT";

/// How long connecting to the API server may take: a TCP connection and a TLS handshake,
/// which take well under a second to a reachable cluster (kube's own default is 30 s).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long each answer may take: the API server answers a read or a write of one object
/// in milliseconds, a list of a namespace's objects in well under a second.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// After a stop request, how long the requests of the work in progress may still take:
/// enough for a cluster that answers to take a clean-up (a few deletes), short enough
/// that a command ends within two seconds of the stop when it does not.
pub const STOP_GRACE: Duration = Duration::from_secs(1);
/// How often a wait looks whether a stop came: the signal's thread only sets a flag.
const STOP_POLL: Duration = Duration::from_millis(50);

/// The bounds on each request to the API server, from `CHBENCH_KUBE_CONNECT_TIMEOUT` and
/// `CHBENCH_KUBE_REQUEST_TIMEOUT` (seconds) or the defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub connect: Duration,
    /// How long each answer may stay silent: from the request's last write to the
    /// answer's first byte, and between its reads.
    pub answer: Duration,
}

impl Bounds {
    pub fn from_env() -> Result<Bounds> {
        Ok(Bounds {
            connect: seconds_env(CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT)?,
            answer: seconds_env(REQUEST_TIMEOUT_ENV, DEFAULT_REQUEST_TIMEOUT)?,
        })
    }
}

/// The client for the cluster the kubeconfig names (or the one this process runs in),
/// bounded by [`Bounds::from_env`]. kube's own error is not shown: for a kubeconfig that
/// does not parse it quotes the lines around the fault, which hold tokens and keys. What
/// is said instead comes from the files alone: missing, empty, or not readable as a
/// kubeconfig.
pub async fn connect() -> Result<Cluster> {
    // First: a bad value is its own line, whatever the kubeconfig.
    let bounds = Bounds::from_env()?;
    let config = kube::Config::infer().await.map_err(|_| unusable())?;
    Cluster::new(config, bounds)
}

/// The API server the kubeconfig names now, as messages show it (scheme, host and port):
/// what the record of the last `up` holds to tell its cluster from another. Blocking.
pub fn kubeconfig_cluster() -> Result<String> {
    let runtime = crate::runtime::blocking_runtime("the Kubernetes client")?;
    runtime.block_on(async {
        let config = kube::Config::infer().await.map_err(|_| unusable())?;
        Ok(shown_url(&config.cluster_url))
    })
}

fn unusable() -> anyhow::Error {
    anyhow!(
        "cannot reach a cluster: kube reads KUBECONFIG or ~/.kube/config (for EKS: aws eks update-kubeconfig): {}",
        kubeconfig_problem(std::env::var_os("KUBECONFIG"), std::env::var_os("HOME"))
    )
}

/// A client of one API server, and the server's address as the kubeconfig gave it (for
/// messages: scheme, host and port, nothing else). No `Debug`: its configuration holds
/// the kubeconfig's credentials.
pub struct Cluster {
    pub client: Client,
    pub url: String,
    bounds: Bounds,
    /// Kept to make the port-forward's client ([`Cluster::forward_client`]).
    config: kube::Config,
    /// The first request of `client` that a stop cut, in words.
    cut: Arc<Mutex<Option<String>>>,
}

impl Cluster {
    /// A client of the API server `config` names, each request bounded by `bounds` and
    /// held to [`STOP_GRACE`] after a stop request.
    pub fn new(mut config: kube::Config, bounds: Bounds) -> Result<Cluster> {
        let url = shown_url(&config.cluster_url);
        config.connect_timeout = Some(bounds.connect);
        config.read_timeout = Some(bounds.answer);
        // Counted from the request, not from when its pooled connection went idle.
        config.reset_reader_on_write = true;
        let cut = Arc::new(Mutex::new(None));
        let client = ClientBuilder::try_from(config.clone())
            .map_err(|_| unusable())?
            .with_layer(&UntilStopGrace { cut: Arc::clone(&cut) })
            .build();
        Ok(Cluster { client, url, bounds, config, cut })
    }

    /// A client for port-forwards: bounded on connecting, but not on reading, since a
    /// forwarded connection may carry nothing for as long as a query runs; opening a
    /// forward is bounded by its caller ([`Cluster::bounds`]). Not held by a stop either:
    /// the forward carries ClickHouse's own way out (its statement killed, the run's
    /// database dropped), which has bounds of its own.
    pub fn forward_client(&self) -> Result<Client> {
        let mut config = self.config.clone();
        config.read_timeout = None;
        Client::try_from(config).map_err(|_| unusable())
    }

    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// Runs `work` with the client; its outcome is [`Interrupted`] when a stop cut one of
    /// its requests (whatever the work made of that: a part read as absent, say), naming
    /// the API server and that request; otherwise its error, explained
    /// ([`Cluster::explain`]).
    pub async fn run<T, Work>(&self, work: impl FnOnce(Client) -> Work) -> Result<T>
    where
        Work: Future<Output = Result<T>>,
    {
        // The layer holds each request to the grace, but not its answer's body, which kube
        // reads after the headers: a server that keeps sending (a byte a second) would hold
        // the work past any stop. So the work as a whole ends soon after the grace, which
        // leaves what it does on its way out the grace to try.
        let outcome = tokio::select! {
            outcome = work(self.client.clone()) => outcome,
            () = async {
                stop_grace_over().await;
                tokio::time::sleep(STOP_GRACE / 2).await;
            } => {
                if let Ok(mut cut) = self.cut.lock() {
                    cut.get_or_insert_with(|| "an answer still arriving".to_string());
                }
                Err(Interrupted.into())
            }
        };
        let cut = self.cut.lock().ok().and_then(|cut| cut.clone());
        match cut {
            Some(doing) => Err(anyhow::Error::new(Interrupted)
                .context(format!("stopped waiting for the API server at {} ({doing})", self.url))),
            None => outcome.map_err(|error| self.explain(error)),
        }
    }

    /// `error` of work on this cluster, in one line that names the API server when it did
    /// not answer: a request that ran out of time says which bound and its variable,
    /// after what was being done (kube's own words add nothing to that); one that was
    /// refused or broke gets the server's address first, since kube's words ("ServiceError:
    /// ... Connection refused") name neither it nor the kubeconfig. A stopped wait says
    /// which server it was asking.
    pub fn explain(&self, error: anyhow::Error) -> anyhow::Error {
        if error.is::<Interrupted>() {
            return error.context(format!("API server {}", self.url));
        }
        let bound = match timed_out(&error) {
            Some(TimedOut::Connecting) => format!(
                "the API server at {} took no connection within {} ({CONNECT_TIMEOUT_ENV})",
                self.url,
                seconds(self.bounds.connect)
            ),
            Some(TimedOut::Answering) => format!(
                "the API server at {} gave no answer within {} ({REQUEST_TIMEOUT_ENV})",
                self.url,
                seconds(self.bounds.answer)
            ),
            None => return explain_unanswered(&self.url, said_once(&self.url, error)),
        };
        // What was being done: the contexts above kube's error.
        let mut said: Vec<String> = error
            .chain()
            .take_while(|cause| cause.downcast_ref::<kube::Error>().is_none())
            .map(ToString::to_string)
            .collect();
        said.push(bound);
        anyhow!(said.join(": "))
    }
}

/// Scheme, host and port only: a URL may carry a user and password before its host.
fn shown_url(uri: &http::Uri) -> String {
    match (uri.scheme_str(), uri.host(), uri.port_u16()) {
        (Some(scheme), Some(host), Some(port)) => format!("{scheme}://{host}:{port}"),
        (Some(scheme), Some(host), None) => format!("{scheme}://{host}"),
        _ => "(the kubeconfig's server)".to_string(),
    }
}

/// Which bound a request ran out of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimedOut {
    Connecting,
    Answering,
}

/// Whether `error` is a request that ran out of one of the client's bounds: kube's
/// connector says so with an I/O error of kind `TimedOut`, under hyper's error, which
/// tells a connection that was never made from an answer that never came.
fn timed_out(error: &anyhow::Error) -> Option<TimedOut> {
    let timed_out = error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
    });
    if !timed_out {
        return None;
    }
    let connecting = error.chain().any(|cause| {
        cause
            .downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some_and(hyper_util::client::legacy::Error::is_connect)
    });
    Some(if connecting { TimedOut::Connecting } else { TimedOut::Answering })
}

/// `error` in one line where the API server answered with a failure (kube's
/// `Error::Api`): kube writes the server's message three times (its own words, the
/// status's `Debug` and the status as the error's source); here it is once, after what
/// was being done, with the server's address, code and reason. Other errors are left
/// alone.
pub fn said_once(url: &str, error: anyhow::Error) -> anyhow::Error {
    let answered = error.chain().find_map(|cause| match cause.downcast_ref::<kube::Error>() {
        Some(kube::Error::Api(status)) => Some(status.clone()),
        _ => None,
    });
    let Some(status) = answered else { return error };
    // What was being done: the contexts above kube's error.
    let mut said: Vec<String> = error
        .chain()
        .take_while(|cause| cause.downcast_ref::<kube::Error>().is_none())
        .map(ToString::to_string)
        .collect();
    let reason = if status.reason.is_empty() { String::new() } else { format!(" {}", status.reason) };
    said.push(format!("the API server at {url} answered {}{reason}: {}", status.code, status.message));
    anyhow!(said.join(": "))
}

/// `error` with the API server's address first when the server did not answer at all.
pub fn explain_unanswered(url: &str, error: anyhow::Error) -> anyhow::Error {
    let unanswered = error.chain().any(|cause| {
        matches!(cause.downcast_ref::<kube::Error>(), Some(kube::Error::Service(_) | kube::Error::HyperError(_)))
    });
    if unanswered {
        error.context(format!(
            "the API server at {url} does not answer: is the kubeconfig's current context the cluster you mean?"
        ))
    } else {
        error
    }
}

/// Why no client could be made, from the kubeconfig files kube reads (`KUBECONFIG`, a
/// `:`-separated list, else `~/.kube/config`), never from their contents.
pub fn kubeconfig_problem(kubeconfig: Option<std::ffi::OsString>, home: Option<std::ffi::OsString>) -> String {
    let paths: Vec<std::path::PathBuf> = match (&kubeconfig, home) {
        (Some(list), _) if !list.is_empty() => std::env::split_paths(list).collect(),
        (_, Some(home)) => vec![std::path::Path::new(&home).join(".kube/config")],
        (_, None) => return "KUBECONFIG is not set and there is no HOME to find ~/.kube/config in".to_string(),
    };
    let problems: Vec<String> = paths
        .iter()
        .map(|path| match std::fs::metadata(path) {
            Err(_) => format!("{} does not exist", path.display()),
            Ok(meta) if !meta.is_file() => format!("{} is not a file", path.display()),
            Ok(meta) if meta.len() == 0 => format!("{} is empty", path.display()),
            // Not shown: its contents are credentials.
            Ok(_) => format!(
                "{} is not a usable kubeconfig (it does not parse, names no current context, or its certificates \
                 do not load; what it holds is not shown: credentials)",
                path.display()
            ),
        })
        .collect();
    problems.join("; ")
}

/// Returns once a stop was requested.
pub async fn stop_requested() {
    while !crate::interrupt::requested() {
        tokio::time::sleep(STOP_POLL).await;
    }
}

/// When this process first saw the stop request: the grace counts from there.
static STOP_SEEN: OnceLock<std::time::Instant> = OnceLock::new();

/// Returns once [`STOP_GRACE`] has passed since the stop request (at once for a request
/// made after that).
async fn stop_grace_over() {
    stop_requested().await;
    let seen = *STOP_SEEN.get_or_init(std::time::Instant::now);
    tokio::time::sleep_until(tokio::time::Instant::from_std(seen + STOP_GRACE)).await;
}

/// The layer that holds each request of a client to [`STOP_GRACE`] after a stop request,
/// recording the first it cut.
struct UntilStopGrace {
    cut: Arc<Mutex<Option<String>>>,
}

impl<S> Layer<S> for UntilStopGrace {
    type Service = HeldUntilStopGrace<S>;

    fn layer(&self, inner: S) -> Self::Service {
        HeldUntilStopGrace { inner, cut: Arc::clone(&self.cut) }
    }
}

#[derive(Clone)]
struct HeldUntilStopGrace<S> {
    inner: S,
    cut: Arc<Mutex<Option<String>>>,
}

impl<S, B> Service<Request<Body>> for HeldUntilStopGrace<S>
where
    S: Service<Request<Body>, Response = Response<B>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<B>, BoxError>> + Send>>;

    fn poll_ready(&mut self, context: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let doing = describe(request.method(), request.uri().path());
        let answer = self.inner.call(request);
        let cut = Arc::clone(&self.cut);
        Box::pin(async move {
            tokio::select! {
                answered = answer => answered,
                () = stop_grace_over() => {
                    if let Ok(mut cut) = cut.lock() {
                        cut.get_or_insert_with(|| doing.clone());
                    }
                    Err(Box::new(CutByStop { doing }) as BoxError)
                }
            }
        })
    }
}

/// A request the stop request's grace ended.
#[derive(Debug)]
struct CutByStop {
    doing: String,
}

impl fmt::Display for CutByStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} got no answer before the stop request's grace ended", self.doing)
    }
}

impl std::error::Error for CutByStop {}

/// What a request to the API server does, in words, from its method and path: "reading
/// namespace chbench", "listing pods in chbench", "deleting job chbench/fio".
pub fn describe(method: &Method, path: &str) -> String {
    let segments: Vec<&str> = path.split('/').filter(|segment| !segment.is_empty()).collect();
    // `/api/v1/...` (the core group) or `/apis/<group>/<version>/...`.
    let rest = match segments.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return format!("{method} {path}"),
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, rest @ ..] if !rest.is_empty() => (Some(*namespace), rest),
        rest => (None, rest),
    };
    let object = |kind: &str, name: &str| match namespace {
        Some(namespace) => format!("{} {namespace}/{name}", singular(kind)),
        None => format!("{} {name}", singular(kind)),
    };
    let within = namespace.map(|namespace| format!(" in {namespace}")).unwrap_or_default();
    match (rest, method.as_str()) {
        ([kind], "GET") => format!("listing {kind}{within}"),
        ([kind], "POST") => format!("creating a {}{within}", singular(kind)),
        ([kind, name], "GET") => format!("reading {}", object(kind, name)),
        ([kind, name], "PATCH" | "PUT") => format!("writing {}", object(kind, name)),
        ([kind, name], "DELETE") => format!("deleting {}", object(kind, name)),
        ([kind, name, "log"], _) => format!("reading the log of {}", object(kind, name)),
        ([kind, name, "portforward"], _) => format!("opening a port-forward to {}", object(kind, name)),
        _ => format!("{method} {path}"),
    }
}

/// A resource's plural as the API names it, made singular: `storageclasses` →
/// `storageclass`, `networkpolicies` → `networkpolicy`, `pods` → `pod`.
fn singular(plural: &str) -> String {
    if let Some(stem) = plural.strip_suffix("ies") {
        format!("{stem}y")
    } else if let Some(stem) = plural.strip_suffix("sses") {
        format!("{stem}ss")
    } else {
        plural.strip_suffix('s').unwrap_or(plural).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_server_that_does_not_answer_is_named_and_other_errors_are_left_alone() {
        let refused = anyhow::Error::new(kube::Error::Service("tcp connect error: Connection refused".into()))
            .context("cannot read namespace chbench");
        let said = format!("{:#}", explain_unanswered("https://10.0.0.1:443", refused));
        assert!(said.starts_with("the API server at https://10.0.0.1:443 does not answer"), "{said}");
        assert!(said.contains("does not answer: is the kubeconfig's current context the cluster you mean?: cannot read namespace chbench: ServiceError"), "{said}");
        let refusal = anyhow::anyhow!("run r1 in namespace chbench is not collected");
        assert_eq!(
            format!("{:#}", explain_unanswered("https://10.0.0.1:443", refusal)),
            "run r1 in namespace chbench is not collected"
        );
    }

    #[test]
    fn a_failure_the_api_server_answers_is_said_once() {
        let status =
            kube::core::Status::failure("namespaces \"chbench\" is forbidden: User \"x\" cannot get", "Forbidden")
                .with_code(403);
        let forbidden = anyhow::Error::new(kube::Error::Api(status.boxed())).context("cannot read namespace chbench");
        let said = format!("{:#}", said_once("https://10.0.0.1:443", forbidden));
        assert_eq!(
            said,
            "cannot read namespace chbench: the API server at https://10.0.0.1:443 answered 403 Forbidden: namespaces \
             \"chbench\" is forbidden: User \"x\" cannot get"
        );
        let refusal = anyhow::anyhow!("run r1 in namespace chbench is not collected");
        assert_eq!(
            format!("{:#}", said_once("https://10.0.0.1:443", refusal)),
            "run r1 in namespace chbench is not collected"
        );
    }

    #[test]
    fn a_kubeconfig_problem_names_the_file_and_never_its_contents() {
        let folder = tempfile::tempdir().unwrap();
        let empty = folder.path().join("empty");
        std::fs::write(&empty, "").unwrap();
        let broken = folder.path().join("broken");
        std::fs::write(&broken, "users:\n- user:\n    token: s3cr3t-token\n  name: [unclosed\n").unwrap();
        let missing = folder.path().join("missing");
        let list = std::env::join_paths([&missing, &empty, &broken]).unwrap();
        let said = kubeconfig_problem(Some(list), None);
        assert!(said.contains(&format!("{} does not exist", missing.display())), "{said}");
        assert!(said.contains(&format!("{} is empty", empty.display())), "{said}");
        assert!(said.contains(&format!("{} is not a usable kubeconfig", broken.display())), "{said}");
        assert!(!said.contains("s3cr3t"), "{said}");
        let said = kubeconfig_problem(None, Some(folder.path().into()));
        assert_eq!(said, format!("{} does not exist", folder.path().join(".kube/config").display()));
    }

    #[test]
    fn requests_are_described_by_what_they_do_to_which_object() {
        let cases = [
            (Method::GET, "/api/v1/namespaces/chbench", "reading namespace chbench"),
            (Method::GET, "/api/v1/namespaces/chbench/pods/clickhouse", "reading pod chbench/clickhouse"),
            (Method::GET, "/api/v1/namespaces/chbench/pods", "listing pods in chbench"),
            (Method::GET, "/apis/storage.k8s.io/v1/storageclasses", "listing storageclasses"),
            (Method::PATCH, "/apis/storage.k8s.io/v1/storageclasses/chbench-gp3", "writing storageclass chbench-gp3"),
            (
                Method::PATCH,
                "/apis/networking.k8s.io/v1/namespaces/chbench/networkpolicies/default-deny-ingress",
                "writing networkpolicy chbench/default-deny-ingress",
            ),
            (Method::POST, "/api/v1/namespaces/chbench/secrets", "creating a secret in chbench"),
            (Method::DELETE, "/apis/batch/v1/namespaces/chbench/jobs/fio", "deleting job chbench/fio"),
            (Method::GET, "/api/v1/nodes/ip-10-0-1-23", "reading node ip-10-0-1-23"),
            (Method::GET, "/api/v1/namespaces/chbench/pods/fio-x/log", "reading the log of pod chbench/fio-x"),
            (
                Method::GET,
                "/api/v1/namespaces/chbench/pods/clickhouse/portforward",
                "opening a port-forward to pod chbench/clickhouse",
            ),
            (Method::GET, "/version", "GET /version"),
        ];
        for (method, path, said) in cases {
            assert_eq!(describe(&method, path), said, "{method} {path}");
        }
    }
}

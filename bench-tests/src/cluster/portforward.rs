//! A port-forward to a pod through the Kubernetes API (kube's own, no `kubectl`): a
//! listener on loopback whose every connection becomes a stream to the pod's port, so
//! that ClickHouse is reached without being exposed beyond this machine.
//!
//! The accept loop runs on a thread of its own, on a runtime of its own, so that it
//! serves connections whatever the caller does (a blocking HTTP client included). kube's
//! `Client` sends its requests through a task on the runtime it was made on: make it on
//! [`client_runtime`], which runs that task without anyone blocking on it.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::env::seconds;

/// A runtime for a kube `Client` that a [`PortForward`] will use: its worker thread runs
/// the client's request task (and its connections) while the caller blocks elsewhere, on
/// an HTTP client or on nothing at all. A current-thread runtime would run them only
/// inside its `block_on`.
pub fn client_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("chbench-kube")
        .enable_all()
        .build()
        .context("cannot start the Kubernetes client's runtime")
}

/// A running port-forward from `127.0.0.1:<local_port>` to a pod's port. Dropping it
/// stops the accept loop and ends its connections.
pub struct PortForward {
    local: SocketAddr,
    /// `namespace/pod`, for messages.
    pod: String,
    remote_port: u16,
    failures: Arc<Mutex<Failures>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl PortForward {
    /// Listens on an ephemeral port of 127.0.0.1 (never another address) and forwards each
    /// connection to `remote_port` of `pod` in `namespace`, each forward opened within
    /// `open_within` or not at all. `client` must have been made on a runtime that keeps
    /// running, such as [`client_runtime`]'s, and must not bound its reads (a forwarded
    /// connection may carry nothing while a query runs).
    pub fn start(
        client: kube::Client,
        namespace: &str,
        pod: &str,
        remote_port: u16,
        open_within: Duration,
    ) -> Result<PortForward> {
        let shown = format!("{namespace}/{pod}");
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .with_context(|| format!("cannot listen on 127.0.0.1 for a port-forward to pod {shown}"))?;
        listener.set_nonblocking(true).context("cannot make the port-forward's listener non-blocking")?;
        let local = listener.local_addr().context("the port-forward's listener has no address")?;
        let runtime = crate::runtime::blocking_runtime("the port-forward")?;
        let listener = {
            // Registered with the runtime that will accept on it.
            let _entered = runtime.enter();
            TcpListener::from_std(listener).context("cannot hand the port-forward's listener to its runtime")?
        };
        let (stop, stopped) = oneshot::channel();
        let failures = Arc::new(Mutex::new(Failures::default()));
        let forwarding = Forwarding {
            pods: Api::namespaced(client, namespace),
            pod: pod.to_string(),
            shown: shown.clone(),
            remote_port,
            open_within,
            failures: Arc::clone(&failures),
        };
        let thread = std::thread::Builder::new()
            .name(format!("port-forward {shown}"))
            .spawn(move || runtime.block_on(forwarding.accept_until(listener, stopped)))
            .context("cannot start the port-forward's thread")?;
        Ok(PortForward { local, pod: shown, remote_port, failures, stop: Some(stop), thread: Some(thread) })
    }

    /// The loopback port connections are accepted on.
    pub fn local_port(&self) -> u16 {
        self.local.port()
    }

    /// The address connections are accepted on: 127.0.0.1, an ephemeral port.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// `http://127.0.0.1:<local_port>`.
    pub fn url(&self) -> String {
        format!("http://{}:{}", self.local.ip(), self.local.port())
    }

    /// `namespace/pod port N`, for messages and endpoints.
    pub fn describe(&self) -> String {
        format!("pod {} port {}", self.pod, self.remote_port)
    }

    /// The latest failure of a forwarded connection (it was also said on stderr), if any:
    /// what to add to a client's "connection closed" error.
    pub fn failure(&self) -> Option<String> {
        self.failures.lock().ok().and_then(|failures| failures.latest.clone())
    }

    /// `error` (a client's, through this forward) with the forward's latest failure as
    /// its context when there is one: it says more than "connection closed".
    pub fn explain(&self, error: anyhow::Error) -> anyhow::Error {
        match self.failure() {
            Some(failure) => error.context(failure),
            None => error,
        }
    }
}

impl Drop for PortForward {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            // The loop may have ended already; then there is nobody to tell.
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // Its runtime ends the connections still open when the thread returns.
            let _ = thread.join();
        }
    }
}

/// The forward's failures: the latest, for errors, and every one said on stderr.
#[derive(Default)]
struct Failures {
    latest: Option<String>,
    said: BTreeSet<String>,
}

/// What the accept loop and each connection's task need.
#[derive(Clone)]
struct Forwarding {
    pods: Api<Pod>,
    pod: String,
    shown: String,
    remote_port: u16,
    /// How long the API server may take to open a forward.
    open_within: Duration,
    failures: Arc<Mutex<Failures>>,
}

impl Forwarding {
    async fn accept_until(self, listener: TcpListener, mut stopped: oneshot::Receiver<()>) {
        loop {
            tokio::select! {
                _ = &mut stopped => return,
                accepted = listener.accept() => match accepted {
                    Ok((mut connection, _)) => {
                        let forwarding = self.clone();
                        tokio::spawn(async move {
                            if let Err(error) = forwarding.forward(&mut connection).await {
                                forwarding.report(&error);
                            }
                            // Closed after the report: a client that sees it closed finds
                            // the failure recorded.
                            drop(connection);
                        });
                    }
                    Err(error) => {
                        self.report(&anyhow!(error).context("cannot accept a connection"));
                        // Out of file descriptors, say: give the others time to close.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
            }
        }
    }

    /// One connection: its own port-forward stream to the pod, copied both ways until
    /// either side closes or the pod's side reports an error.
    async fn forward(&self, connection: &mut TcpStream) -> Result<()> {
        let port = self.remote_port;
        let mut forwarder = tokio::time::timeout(self.open_within, self.pods.portforward(&self.pod, &[port]))
            .await
            .map_err(|_| anyhow!("the API server did not open it within {}", seconds(self.open_within)))?
            .context("the API server refused it")?;
        let mut stream = forwarder.take_stream(port).context("kube gave no stream for the port")?;
        let pod_error = forwarder.take_error(port).context("kube gave no error channel for the port")?;
        tokio::select! {
            copied = tokio::io::copy_bidirectional(connection, &mut stream) => {
                copied.context("the connection broke")?;
            }
            // `None` is the error channel closing without an error: the copy decides.
            Some(message) = pod_error => return Err(anyhow!("the pod's side said: {message}")),
        }
        drop(stream);
        forwarder.join().await.context("the forward ended with an error")
    }

    /// Says each distinct failure once on stderr (every connection of a broken forward
    /// fails alike) and keeps the latest for [`PortForward::failure`]: a forward that
    /// failed once, recovered and broke again must not be explained by its first failure.
    fn report(&self, error: &anyhow::Error) {
        let line = format!("port-forward to pod {} port {} failed: {error:#}", self.shown, self.remote_port);
        let Ok(mut failures) = self.failures.lock() else { return };
        if failures.said.insert(line.clone()) {
            crate::say!("chbench: {line}");
        }
        failures.latest = Some(line);
    }
}

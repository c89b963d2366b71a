//! An API server that takes the connection and never answers, as a hung one or a
//! `kubectl proxy` whose upstream is gone does: on plain http and after a completed TLS
//! handshake. Each request is bounded, and a stop request ends the wait; both say which
//! server and what was asked. Real loopback listeners and kubeconfigs, not the mock: the
//! bounds live in the client's connector.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};

use crate::server::silent_peer;

use chbench::cluster::api_server::{Bounds, Cluster};
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::*;

/// A listener on loopback that completes a TLS handshake (an ephemeral key, and no
/// certificate worth the name: the kubeconfig skips verifying), then never says a
/// word; each completed handshake is told on the receiver. Its `https://` URL.
fn silent_after_tls() -> (String, Receiver<()>) {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let algorithm = &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING;
    let key = aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(algorithm, &rng).unwrap();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(key.as_ref().to_vec());
    let signing = provider.key_provider.load_private_key(key.into()).unwrap();
    let certificate = rustls::pki_types::CertificateDer::from(b"not verified".to_vec());
    let resolver = AlwaysThisKey(Arc::new(rustls::sign::CertifiedKey::new(vec![certificate], signing)));
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(resolver)),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let (accepted, connections) = channel();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for mut stream in listener.incoming().flatten() {
            let mut tls = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            while tls.is_handshaking() {
                if tls.complete_io(&mut stream).is_err() {
                    break;
                }
            }
            open.push((tls, stream));
            let _ = accepted.send(());
        }
    });
    (url, connections)
}

/// The one key a [`silent_after_tls`] listener shows.
#[derive(Debug)]
struct AlwaysThisKey(Arc<rustls::sign::CertifiedKey>);

impl rustls::server::ResolvesServerCert for AlwaysThisKey {
    fn resolve(&self, _hello: rustls::server::ClientHello<'_>) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(Arc::clone(&self.0))
    }
}

/// The kubeconfig of the API server at `url`, as a user's would name it.
fn config(url: &str) -> kube::Config {
    let yaml = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: silent\nclusters:\n- name: silent\n  cluster:\n    \
         server: {url}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: silent\n  context:\n    \
         cluster: silent\n    user: silent\nusers:\n- name: silent\n  user: {{}}\n"
    );
    let kubeconfig = Kubeconfig::from_yaml(&yaml).unwrap();
    runtime().block_on(kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())).unwrap()
}

/// `status` of namespace chbench through a client of `url` bounded by `bounds`.
fn status_of(url: &str, bounds: Bounds) -> anyhow::Error {
    let config = config(url);
    runtime()
        .block_on(async {
            let cluster = Cluster::new(config, bounds)?;
            cluster.run(|client| async move { status(&client, "chbench").await }).await
        })
        .unwrap_err()
}

const SHORT: Duration = Duration::from_millis(200);
/// Far longer than any test waits: what a stop must end.
const LONG: Duration = Duration::from_secs(600);

#[test]
fn a_request_unanswered_after_tls_or_on_plain_http_fails_at_its_bound_naming_the_server_and_the_request() {
    for (url, _connections) in [silent_after_tls(), silent_peer()] {
        let error = status_of(&url, Bounds { connect: LONG, answer: SHORT });
        assert_eq!(
            format!("{error:#}"),
            format!(
                "cannot read namespace chbench: the API server at {url} gave no answer within 0.2 s \
                 (CHBENCH_KUBE_REQUEST_TIMEOUT)"
            )
        );
    }
}

/// A listener that takes the TCP connection and never starts TLS: the connection is
/// what times out.
#[test]
fn a_tls_handshake_that_never_completes_fails_at_the_connect_bound() {
    let (url, _connections) = silent_peer();
    let url = url.replacen("http://", "https://", 1);
    let error = status_of(&url, Bounds { connect: SHORT, answer: LONG });
    assert_eq!(
        format!("{error:#}"),
        format!(
            "cannot read namespace chbench: the API server at {url} took no connection within 0.2 s \
             (CHBENCH_KUBE_CONNECT_TIMEOUT)"
        )
    );
}

/// A stop request while the request waits (nextest runs each test in a process of its
/// own, so the stop stays in this test) ends it with [`Interrupted`], naming the
/// server and the request, long before its bound.
fn a_stop_ends_the_wait(url: &str, connections: Receiver<()>) {
    let stopper = std::thread::spawn(move || {
        connections.recv().expect("the client never connected");
        chbench::interrupt::request_stop();
    });
    let error = status_of(url, Bounds { connect: LONG, answer: LONG });
    stopper.join().unwrap();
    assert!(error.is::<Interrupted>(), "{error:#}");
    let said = format!("{error:#}");
    let expected = format!("stopped waiting for the API server at {url} (reading namespace chbench): ");
    assert!(said.starts_with(&expected), "{said}");
}

#[test]
fn a_stop_ends_a_wait_for_an_answer_after_tls() {
    let (url, connections) = silent_after_tls();
    a_stop_ends_the_wait(&url, connections);
}

#[test]
fn a_stop_ends_a_wait_for_an_answer_on_plain_http() {
    let (url, connections) = silent_peer();
    a_stop_ends_the_wait(&url, connections);
}

/// A peer that answers at once with headers, then sends its body a byte at a time,
/// forever: never silent, so no bound of silence ends it; each answer begun is told on
/// the receiver.
fn dripping_peer() -> (String, Receiver<()>) {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (begun, answers) = channel();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let begun = begun.clone();
            std::thread::spawn(move || {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let headers = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
                if stream.write_all(headers.as_bytes()).is_err() {
                    return;
                }
                let _ = begun.send(());
                while stream.write_all(b"1\r\n \r\n").is_ok() {
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
    });
    (url, answers)
}

/// A stop while an answer's body is still arriving ends the work too: the grace of
/// each request covers its headers, the work's covers the rest.
#[test]
fn a_stop_ends_an_answer_that_keeps_arriving() {
    let (url, answers) = dripping_peer();
    let stopper = std::thread::spawn(move || {
        answers.recv().expect("the server never began an answer");
        chbench::interrupt::request_stop();
    });
    let error = status_of(&url, Bounds { connect: LONG, answer: SHORT });
    stopper.join().unwrap();
    assert!(error.is::<Interrupted>(), "{error:#}");
    let said = format!("{error:#}");
    assert!(said.starts_with(&format!("stopped waiting for the API server at {url} (")), "{said}");
}

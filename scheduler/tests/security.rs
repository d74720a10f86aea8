//! The security layer over real TLS on loopback: certificates made by
//! rcgen for `localhost`, a tokens file with two tenant principals and an admin, and a small
//! job router behind [`secure`] whose resolver names the tenant a request touches (a
//! submit's body, the owner of a job a `GET` names).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use fleetsim_scheduler::security::serve::{prepare, serve, ListenOptions};
use fleetsim_scheduler::security::{secure, Access, Principal};

const TOKENS: &str = r#"
[[token]]
token = "tenant-a-token-0001"
principal = "a-ci"
tenants = ["team-a"]

[[token]]
token = "tenant-b-token-0002"
principal = "b-ci"
tenants = ["team-b"]

[[token]]
token = "slow-token-00000003"
principal = "slow"
tenants = ["team-a"]
rate_per_second = 0.001
burst = 3

[[token]]
token = "admin-token-0000004"
principal = "ops"
admin = true
"#;

type Jobs = Arc<Mutex<BTreeMap<String, String>>>;

#[derive(serde::Deserialize)]
struct Submit {
    id: String,
    tenant: String,
}

fn app(jobs: Jobs) -> Router {
    async fn submit(
        State(j): State<Jobs>,
        Extension(p): Extension<Principal>,
        Json(s): Json<Submit>,
    ) -> String {
        j.lock().unwrap().insert(s.id.clone(), s.tenant);
        format!("{} submitted {}", p.name, s.id)
    }
    async fn read(State(j): State<Jobs>, Path(id): Path<String>) -> Result<String, StatusCode> {
        j.lock()
            .unwrap()
            .get(&id)
            .cloned()
            .ok_or(StatusCode::NOT_FOUND)
    }
    Router::new()
        .route("/jobs", post(submit))
        .route("/jobs/{id}", get(read))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(jobs)
}

fn resolver(jobs: Jobs) -> fleetsim_scheduler::security::AccessResolver {
    Arc::new(move |m: &Method, path: &str, body: &[u8]| {
        if m == Method::POST && path == "/jobs" {
            return match serde_json::from_slice::<Submit>(body) {
                Ok(s) => Access::Tenant(s.tenant),
                Err(_) => Access::Admin,
            };
        }
        if let Some(id) = path.strip_prefix("/jobs/") {
            return match jobs.lock().unwrap().get(id) {
                Some(t) => Access::Tenant(t.clone()),
                None => Access::Open,
            };
        }
        Access::Admin
    })
}

struct Server {
    addr: SocketAddr,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// Binds `listen` and serves `router` behind it (HTTPS with `tls`) until the test ends;
/// returns the bound address.
async fn spawn(
    listen: SocketAddr,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, router, tls, std::future::pending::<()>()));
    addr
}

/// A client that trusts only `root_pem` and reaches `localhost` at `addr`.
fn https_client(root_pem: &str, addr: SocketAddr) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(root_pem.as_bytes()).unwrap())
        .resolve("localhost", addr)
}

async fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_pem = ck.cert.pem();
    let p = |n: &str| -> PathBuf { dir.path().join(n) };
    std::fs::write(p("cert.pem"), &cert_pem).unwrap();
    std::fs::write(p("key.pem"), ck.key_pair.serialize_pem()).unwrap();
    std::fs::write(p("tokens.toml"), TOKENS).unwrap();
    let mut prepared = prepare(&ListenOptions {
        listen: Some("127.0.0.1:0".parse().unwrap()),
        tls_cert: Some(p("cert.pem")),
        tls_key: Some(p("key.pem")),
        tokens: Some(p("tokens.toml")),
        max_body_bytes: Some(256),
        rate_per_second: None,
        client_ca: None,
        limits: Default::default(),
    })
    .unwrap();
    let jobs: Jobs = Arc::default();
    prepared.security.resolver = resolver(jobs.clone());
    let router = secure(app(jobs), prepared.security);
    let addr = spawn(prepared.listen, router, prepared.tls).await;
    let client = https_client(&cert_pem, addr).build().unwrap();
    Server {
        addr,
        client,
        _dir: dir,
    }
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }
    async fn submit(&self, token: Option<&str>, body: String) -> (StatusCode, String) {
        let mut r = self
            .client
            .post(self.url("/jobs"))
            .header("content-type", "application/json")
            .body(body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        let resp = r.send().await.unwrap();
        (resp.status(), resp.text().await.unwrap())
    }
    async fn get(&self, token: &str, path: &str) -> (StatusCode, String) {
        let resp = self
            .client
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        (resp.status(), resp.text().await.unwrap())
    }
}

fn job(id: &str, tenant: &str) -> String {
    format!(r#"{{"id":"{id}","tenant":"{tenant}"}}"#)
}

#[tokio::test]
async fn tokens_tenants_and_limits_over_tls() {
    let s = start().await;
    const A: &str = "tenant-a-token-0001";
    const B: &str = "tenant-b-token-0002";

    // health needs no token
    let h = s.client.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(h.status(), StatusCode::OK);

    // no token, a wrong token → 401 with WWW-Authenticate
    let (code, body) = s.submit(None, job("j1", "team-a")).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED, "{body}");
    let (code, _) = s
        .submit(Some("tenant-a-token-0009"), job("j1", "team-a"))
        .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);

    // own tenant → 200, the handler sees the principal
    assert_eq!(
        s.submit(Some(A), job("j1", "team-a")).await,
        (StatusCode::OK, "a-ci submitted j1".to_string())
    );
    // submitting as another tenant → 403
    let (code, body) = s.submit(Some(A), job("j2", "team-b")).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert!(
        body.contains("principal `a-ci` may not act for tenant `team-b`"),
        "{body}"
    );
    // reading another tenant's job → 403; its own and the admin → 200
    assert_eq!(s.get(B, "/jobs/j1").await.0, StatusCode::FORBIDDEN);
    assert_eq!(
        s.get(A, "/jobs/j1").await,
        (StatusCode::OK, "team-a".into())
    );
    assert_eq!(
        s.get("admin-token-0000004", "/jobs/j1").await,
        (StatusCode::OK, "team-a".into())
    );
    // a cluster-wide call (the resolver says Admin) → 403 for a tenant
    assert_eq!(s.get(A, "/nodes").await.0, StatusCode::FORBIDDEN);

    // body over 256 bytes → 413 (declared length and chunked body alike)
    let big = job(&"x".repeat(300), "team-a");
    let (code, body) = s.submit(Some(A), big.clone()).await;
    assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    let chunks: Vec<Result<String, std::io::Error>> =
        vec![Ok(big[..150].into()), Ok(big[150..].into())];
    let resp = s
        .client
        .post(s.url("/jobs"))
        .bearer_auth(A)
        .body(reqwest::Body::wrap_stream(futures_stream(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);

    // burst 3 at 0.001/s: three pass, the fourth → 429 with Retry-After
    for i in 0..3 {
        let (code, _) = s
            .submit(Some("slow-token-00000003"), job(&format!("s{i}"), "team-a"))
            .await;
        assert_eq!(code, StatusCode::OK);
    }
    let resp = s
        .client
        .post(s.url("/jobs"))
        .bearer_auth("slow-token-00000003")
        .body(job("s3", "team-a"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    // one request refills in 1/0.001 s = 1000 s
    assert_eq!(resp.headers()["retry-after"], "1000");
    // other principals are not slowed by it
    assert_eq!(s.get(A, "/jobs/s0").await.0, StatusCode::OK);
}

#[tokio::test]
async fn plain_http_to_the_tls_port_gets_no_answer() {
    let s = start().await;
    let plain = reqwest::Client::new();
    let r = plain
        .get(format!("http://127.0.0.1:{}/healthz", s.addr.port()))
        .send()
        .await;
    assert!(r.is_err(), "{r:?}");
}

#[test]
fn non_loopback_without_tls_or_tokens_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    std::fs::write(&tokens, TOKENS).unwrap();
    let opts = ListenOptions {
        listen: Some("0.0.0.0:7400".parse().unwrap()),
        tokens: Some(tokens),
        ..ListenOptions::default()
    };
    let e = prepare(&opts).err().unwrap();
    assert_eq!(e, "refusing to listen on 0.0.0.0:7400: it is not a loopback address, so TLS is required (give --tls-cert and --tls-key)");
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.path().join("c.pem"), ck.cert.pem()).unwrap();
    std::fs::write(dir.path().join("k.pem"), ck.key_pair.serialize_pem()).unwrap();
    let e = prepare(&ListenOptions {
        tokens: None,
        tls_cert: Some(dir.path().join("c.pem")),
        tls_key: Some(dir.path().join("k.pem")),
        ..opts.clone()
    })
    .err()
    .unwrap();
    assert!(
        e.contains("so bearer tokens or client certificates are required"),
        "{e}"
    );
    // loopback with neither is allowed
    assert!(prepare(&ListenOptions::default()).is_ok());
}

fn futures_stream(
    items: Vec<Result<String, std::io::Error>>,
) -> impl futures_core::Stream<Item = Result<String, std::io::Error>> + Send + 'static {
    struct S(std::vec::IntoIter<Result<String, std::io::Error>>);
    impl futures_core::Stream for S {
        type Item = Result<String, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(self.0.next())
        }
    }
    S(items.into_iter())
}

// ---------- mutual TLS ----------

/// A CA and a client certificate it signs (ClientAuth), as PEM: (CA cert, client cert +
/// key).
fn client_ca_and_identity(name: &str) -> (String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, format!("{name} CA"));
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut leaf = rcgen::CertificateParams::new(vec![format!("{name}-client")]).unwrap();
    leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = leaf.signed_by(&key, &ca_cert, &ca_key).unwrap();
    (
        ca_cert.pem(),
        format!("{}{}", cert.pem(), key.serialize_pem()),
    )
}

/// With `--client-ca`, a connection without a client certificate, or with one another CA
/// signed, gets no answer; one the CA signed is served. TLS plus a client CA (no tokens)
/// satisfies the exposure rule for a non-loopback address; a client CA without TLS, or a CA
/// file that holds no certificate, is refused naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_serves_only_clients_the_ca_signed() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| -> PathBuf { dir.path().join(n) };
    let server = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let server_pem = server.cert.pem();
    std::fs::write(p("cert.pem"), &server_pem).unwrap();
    std::fs::write(p("key.pem"), server.key_pair.serialize_pem()).unwrap();
    let (ca_pem, identity) = client_ca_and_identity("ours");
    let (_, stranger) = client_ca_and_identity("other");
    std::fs::write(p("ca.pem"), &ca_pem).unwrap();
    let opts = ListenOptions {
        listen: Some("127.0.0.1:0".parse().unwrap()),
        tls_cert: Some(p("cert.pem")),
        tls_key: Some(p("key.pem")),
        client_ca: Some(p("ca.pem")),
        ..ListenOptions::default()
    };
    let prepared = prepare(&opts).unwrap();
    let router = secure(
        Router::new().route("/hello", get(|| async { "hello" })),
        prepared.security,
    );
    let addr = spawn(prepared.listen, router, prepared.tls).await;
    let client = |identity: Option<&str>| {
        let mut b = https_client(&server_pem, addr);
        if let Some(pem) = identity {
            b = b.identity(reqwest::Identity::from_pem(pem.as_bytes()).unwrap());
        }
        b.build().unwrap()
    };
    let url = format!("https://localhost:{}/hello", addr.port());
    let r = client(Some(&identity)).get(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.text().await.unwrap(), "hello");
    for (who, c) in [
        ("no certificate", client(None)),
        ("another CA's", client(Some(&stranger))),
    ] {
        let r = c.get(&url).send().await;
        assert!(r.is_err(), "{who}: {r:?}");
    }
    // The exposure rule: TLS and a client CA are enough off loopback.
    let lan = ListenOptions {
        listen: Some("0.0.0.0:7400".parse().unwrap()),
        ..opts.clone()
    };
    assert!(prepare(&lan).is_ok());
    let e = prepare(&ListenOptions {
        tls_cert: None,
        tls_key: None,
        ..opts.clone()
    })
    .err()
    .unwrap();
    assert_eq!(
        e,
        "--client-ca needs TLS: give --tls-cert and --tls-key too"
    );
    std::fs::write(p("empty.pem"), "not a certificate\n").unwrap();
    let e = prepare(&ListenOptions {
        client_ca: Some(p("empty.pem")),
        ..opts
    })
    .err()
    .unwrap();
    assert!(
        e.contains("empty.pem") && e.contains("no CERTIFICATE block in the CA PEM"),
        "{e}"
    );
}

//! Who may use the REST API, and how it is reached: a bearer token for
//! every request that changes state (and for reads too, if asked), JSON
//! bodies only on writes (so a web page cannot post a form or `text/plain`
//! to it), the `Host` header checked against the names the API answers to
//! (so a web page under another name that resolves to this machine, DNS
//! rebinding, is refused), CORS off unless origins are named, and TLS when
//! a certificate is given. Checked in that order; the answers are JSON
//! `{"error": ...}` with 421 (foreign Host), 403 (an origin not allowed
//! asking for CORS), 401 (no or wrong token), 415 (a body that is not JSON).

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;

/// Who may use the API and how it is reached.
#[derive(Clone, Debug)]
pub struct Access {
    /// The bearer token writes need (`Authorization: Bearer TOKEN`).
    pub token: String,
    /// Reads without the token (the default); false: every request needs it.
    pub open_reads: bool,
    /// Names the API may be reached by (`Host`), besides its own address,
    /// IP literals with its port, and `localhost` when it is on loopback.
    pub hosts: Vec<String>,
    /// Origins a browser may call it from (CORS); none by default.
    pub cors: Vec<String>,
    /// Serve HTTPS with this configuration instead of HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Access {
    /// Writes need `token`; reads are open; no other name, no CORS, no TLS.
    pub fn with_token(token: String) -> Access {
        Access {
            token,
            open_reads: true,
            hosts: Vec::new(),
            cors: Vec::new(),
            tls: None,
        }
    }
}

/// A new token: 32 random bytes from the kernel, in hex.
pub fn new_token() -> std::io::Result<String> {
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Why a REST token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("REST token file {}: {source}", path.display())]
    Unreadable {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("REST token file {}: the token must be at least 16 characters on its first line", .0.display())]
    Short(std::path::PathBuf),
}

/// A token read from a file (its first line, trimmed); one line of error.
pub fn token_from_file(path: &std::path::Path) -> Result<String, TokenError> {
    let text = std::fs::read_to_string(path).map_err(|source| TokenError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.len() < 16 {
        return Err(TokenError::Short(path.to_path_buf()));
    }
    Ok(token)
}

/// The access rules with the address the API is bound to.
pub(crate) struct Guard {
    pub access: Access,
    pub local: SocketAddr,
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, Json(json!({ "error": why }))).into_response()
}

/// Equal in constant time (the token is compared without telling, by its
/// timing, how much of it matched).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Guard {
    /// Whether `host` (a Host header) names this API.
    fn host_ok(&self, host: &str) -> bool {
        let port = self.local.port();
        // The name without its port (IPv6 literals keep their brackets).
        let (name, given_port) = match host.rsplit_once(':') {
            Some((n, p)) if !n.is_empty() && (n.ends_with(']') || !n.contains(':')) => (n, p.parse::<u16>().ok()),
            _ => (host, None),
        };
        if given_port.is_some_and(|p| p != port) {
            return false;
        }
        let literal = name.trim_start_matches('[').trim_end_matches(']');
        if literal.parse::<std::net::IpAddr>().is_ok() {
            // An IP literal cannot be rebound to another machine.
            return true;
        }
        if name.eq_ignore_ascii_case("localhost") {
            return self.local.ip().is_loopback() || self.local.ip().is_unspecified();
        }
        self.access.hosts.iter().any(|h| {
            let h = h
                .rsplit_once(':')
                .filter(|(_, p)| p.parse::<u16>().is_ok())
                .map_or(h.as_str(), |(n, _)| n);
            h.eq_ignore_ascii_case(name)
        })
    }
}

/// The middleware: every request goes through it before its handler.
pub(crate) async fn guard(State(g): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !g.host_ok(host) {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            &format!("Host '{host}' does not name this API (its address, or a name given with --rest-host)"),
        );
    }
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .map(str::to_string);
    let allowed_origin = origin
        .as_ref()
        .filter(|o| g.access.cors.iter().any(|c| c == *o))
        .cloned();
    if req.method() == Method::OPTIONS {
        // A CORS preflight: answered only for an origin that is allowed.
        return match allowed_origin {
            Some(o) => {
                let mut r = StatusCode::NO_CONTENT.into_response();
                let h = r.headers_mut();
                if let Ok(v) = HeaderValue::from_str(&o) {
                    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
                }
                h.insert(
                    header::ACCESS_CONTROL_ALLOW_METHODS,
                    HeaderValue::from_static("GET, POST, DELETE"),
                );
                h.insert(
                    header::ACCESS_CONTROL_ALLOW_HEADERS,
                    HeaderValue::from_static("authorization, content-type"),
                );
                h.insert(header::VARY, HeaderValue::from_static("origin"));
                r
            }
            None => refuse(
                StatusCode::FORBIDDEN,
                "cross-origin requests are not allowed (--rest-cors ORIGIN)",
            ),
        };
    }
    let writes = !matches!(*req.method(), Method::GET | Method::HEAD);
    if writes || !g.access.open_reads {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|a| a.to_str().ok())
            .and_then(|a| a.strip_prefix("Bearer "))
            .unwrap_or("");
        if !same(given.trim().as_bytes(), g.access.token.as_bytes()) {
            let mut r = refuse(
                StatusCode::UNAUTHORIZED,
                "this request needs the API's token: Authorization: Bearer TOKEN (printed at start, or --rest-token-file)",
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"sdnlab\""),
            );
            return r;
        }
    }
    if writes {
        let has_body = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|l| l.to_str().ok())
            .and_then(|l| l.parse::<u64>().ok())
            .is_some_and(|l| l > 0)
            || headers.contains_key(header::TRANSFER_ENCODING);
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .and_then(|c| c.split(';').next())
            .is_some_and(|c| c.trim().eq_ignore_ascii_case("application/json"));
        if (has_body || *req.method() != Method::DELETE) && !json {
            return refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "a write's body must be JSON: Content-Type: application/json",
            );
        }
    }
    let mut r = next.run(req).await;
    if let Some(o) = allowed_origin {
        if let Ok(v) = HeaderValue::from_str(&o) {
            r.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
            r.headers_mut().insert(header::VARY, HeaderValue::from_static("origin"));
        }
    }
    r
}

/// A listener that does the TLS handshake before handing a connection to
/// axum (a connection whose handshake fails is dropped). Connections are taken on a task of their own and each one's TLS
/// handshake runs on a task of its own too, at most `HANDSHAKES` at once
/// and each within `HANDSHAKE_DEADLINE`: a client that connects and says
/// nothing holds its own slot, never the next client's request. Beyond
/// that many handshakes under way, a new connection is closed at once.
pub(crate) struct TlsListener {
    ready: tokio::sync::mpsc::Receiver<(tokio_rustls::server::TlsStream<tokio::net::TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

const HANDSHAKES: usize = 256;
const HANDSHAKE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

impl TlsListener {
    /// Starts taking connections on `tcp` (call on the API's runtime).
    pub(crate) fn start(
        tcp: tokio::net::TcpListener,
        acceptor: tokio_rustls::TlsAcceptor,
    ) -> std::io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let (tx, ready) = tokio::sync::mpsc::channel(64);
        let slots = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES));
        tokio::spawn(async move {
            loop {
                let Ok((s, peer)) = tcp.accept().await else {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                };
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    continue;
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let _slot = slot;
                    if let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_DEADLINE, acceptor.accept(s)).await {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        });
        Ok(TlsListener { ready, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accepting task is gone (it never ends on its own).
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(local: &str, hosts: &[&str]) -> Guard {
        let mut access = Access::with_token("t".repeat(32));
        access.hosts = hosts.iter().map(|h| h.to_string()).collect();
        Guard {
            access,
            local: local.parse().unwrap(),
        }
    }

    /// DNS rebinding: a page under another name that resolves here is
    /// refused; the address, IP literals, localhost on loopback and the
    /// names given are taken, on the API's port only.
    #[test]
    fn the_host_header_must_name_the_api() {
        let g = guard("127.0.0.1:8080", &["ctl.lab"]);
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "localhost",
            "[::1]:8080",
            "ctl.lab",
            "ctl.lab:8080",
        ] {
            assert!(g.host_ok(ok), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "evil.example",
            "",
            "127.0.0.1:9090",
            "ctl.lab:9090",
            "localhost.evil",
        ] {
            assert!(!g.host_ok(bad), "{bad}");
        }
        let wide = guard("0.0.0.0:8080", &[]);
        assert!(wide.host_ok("10.0.0.5:8080") && !wide.host_ok("lab.example:8080"));
        let remote = guard("10.0.0.5:8080", &[]);
        assert!(
            !remote.host_ok("localhost:8080"),
            "localhost is another machine's name there"
        );
    }

    #[test]
    fn tokens_are_random_and_compared_whole() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(same(a.as_bytes(), a.clone().as_bytes()));
        assert!(!same(a.as_bytes(), &a.as_bytes()[..63]) && !same(a.as_bytes(), b.as_bytes()));
    }
}

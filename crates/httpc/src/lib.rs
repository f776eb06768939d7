//! The lab's one HTTP/1.1 client, for the small JSON APIs it reads and
//! writes: a controller's REST API (sdnlab's, os-ken's), etcd's /health,
//! the console's `rest` command. One request per connection
//! (`Connection: close`), the whole answer read to its end, and a deadline
//! on the whole exchange. Async (tokio) for the callers that are, and a
//! blocking twin for the ones that poll from a plain thread; both build the
//! request and read the answer with the same two functions.
//!
//! Hand-written rather than a crate such as reqwest or ureq: these are
//! local, plain-text, tiny exchanges, and a full client would add a TLS
//! stack and some forty crates to every build for them.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A request: its method, path, JSON body and bearer token.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// Sent as `application/json`.
    pub body: Option<&'a str>,
    /// Sent as `Authorization: Bearer ...`.
    pub token: Option<&'a str>,
}

impl<'a> Request<'a> {
    /// GET `path`.
    pub fn get(path: &'a str) -> Request<'a> {
        Request {
            method: "GET",
            path,
            body: None,
            token: None,
        }
    }

    fn bytes(&self, addr: SocketAddr) -> Vec<u8> {
        let mut req = format!(
            "{} {} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n",
            self.method, self.path
        );
        if let Some(t) = self.token {
            req.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        match self.body {
            Some(b) => req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
                b.len()
            )),
            None => req.push_str("\r\n"),
        }
        req.into_bytes()
    }
}

/// An answer: its status and its body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

/// Why a request got no answer; each names the request.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{method} {addr}{path}: no answer within {seconds} s")]
    Timeout {
        method: String,
        addr: SocketAddr,
        path: String,
        seconds: f64,
    },
    #[error("{method} {addr}{path}: {source}")]
    Io {
        method: String,
        addr: SocketAddr,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{method} {addr}{path}: not an HTTP answer")]
    NotHttp {
        method: String,
        addr: SocketAddr,
        path: String,
    },
}

/// The status line's code and the body after the headers.
fn parse(text: &str) -> Option<Response> {
    if !text.starts_with("HTTP/1.") {
        return None;
    }
    let status = text.get(9..12)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some(Response { status, body })
}

/// What a failed exchange becomes, named for its request.
fn failed(req: &Request, addr: SocketAddr, kind: Failure) -> HttpError {
    let (method, path) = (req.method.to_string(), req.path.to_string());
    match kind {
        Failure::Timeout(within) => HttpError::Timeout {
            method,
            addr,
            path,
            seconds: within.as_secs_f64(),
        },
        Failure::Io(source) => HttpError::Io {
            method,
            addr,
            path,
            source,
        },
        Failure::NotHttp => HttpError::NotHttp { method, addr, path },
    }
}

enum Failure {
    Timeout(Duration),
    Io(std::io::Error),
    NotHttp,
}

/// Sends `req` to `addr` and reads the whole answer, all within `within`.
pub async fn request(addr: SocketAddr, req: Request<'_>, within: Duration) -> Result<Response, HttpError> {
    let io = async {
        let mut s = tokio::net::TcpStream::connect(addr).await?;
        s.write_all(&req.bytes(addr)).await?;
        let mut text = String::new();
        s.read_to_string(&mut text).await?;
        Ok::<_, std::io::Error>(text)
    };
    let text = tokio::time::timeout(within, io)
        .await
        .map_err(|_| failed(&req, addr, Failure::Timeout(within)))?
        .map_err(|e| failed(&req, addr, Failure::Io(e)))?;
    parse(&text).ok_or_else(|| failed(&req, addr, Failure::NotHttp))
}

/// [`request`] from a plain thread: blocks until the answer is read or
/// `within` has passed.
pub fn request_blocking(addr: SocketAddr, req: Request<'_>, within: Duration) -> Result<Response, HttpError> {
    let deadline = Instant::now() + within;
    let left = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    let io = || {
        let mut s = std::net::TcpStream::connect_timeout(&addr, left())?;
        s.set_write_timeout(Some(left()))?;
        s.write_all(&req.bytes(addr))?;
        let mut text = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            s.set_read_timeout(Some(left()))?;
            match s.read(&mut buf)? {
                0 => break,
                n => text.extend_from_slice(&buf[..n]),
            }
            if Instant::now() >= deadline {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
        }
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&text).into_owned())
    };
    let text = io().map_err(|e| match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => failed(&req, addr, Failure::Timeout(within)),
        _ => failed(&req, addr, Failure::Io(e)),
    })?;
    parse(&text).ok_or_else(|| failed(&req, addr, Failure::NotHttp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server on loopback that answers one connection with `answer`
    /// (after reading the request up to its blank line), or never answers;
    /// what it read comes back through the handle.
    fn serve_once(answer: Option<&'static str>) -> (SocketAddr, std::thread::JoinHandle<String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut got = Vec::new();
            let mut b = [0u8; 1024];
            while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
                let n = s.read(&mut b).unwrap();
                got.extend_from_slice(&b[..n]);
            }
            match answer {
                Some(a) => s.write_all(a.as_bytes()).unwrap(),
                None => std::thread::sleep(Duration::from_millis(600)),
            }
            String::from_utf8_lossy(&got).into_owned()
        });
        (addr, t)
    }

    #[test]
    fn a_request_is_sent_whole_and_its_answer_read() {
        let (addr, server) = serve_once(Some("HTTP/1.1 201 Created\r\nContent-Length: 7\r\n\r\n{\"a\":1}"));
        let req = Request {
            method: "POST",
            path: "/paths",
            body: Some("{\"x\":2}"),
            token: Some("t0k"),
        };
        let r = request_blocking(addr, req, Duration::from_secs(2)).unwrap();
        assert_eq!(
            r,
            Response {
                status: 201,
                body: "{\"a\":1}".into()
            }
        );
        let sent = server.join().unwrap();
        assert!(sent.starts_with("POST /paths HTTP/1.1\r\n"), "{sent}");
        assert!(sent.contains("Authorization: Bearer t0k\r\n"), "{sent}");
        assert!(sent.contains("Content-Length: 7\r\n"), "{sent}");
        assert!(sent.contains("Connection: close\r\n"), "{sent}");
    }

    #[tokio::test]
    async fn the_async_twin_reads_the_same() {
        let (addr, server) = serve_once(Some("HTTP/1.0 200 OK\r\n\r\n{\"health\":\"true\"}"));
        let r = request(addr, Request::get("/health"), Duration::from_secs(2))
            .await
            .unwrap();
        assert_eq!((r.status, r.body.as_str()), (200, "{\"health\":\"true\"}"));
        assert!(server.join().unwrap().starts_with("GET /health HTTP/1.1\r\n"));
    }

    #[test]
    fn silence_past_the_deadline_and_a_non_http_answer_are_errors_naming_the_request() {
        let (addr, server) = serve_once(None);
        let e = request_blocking(addr, Request::get("/slow"), Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, HttpError::Timeout { .. }), "{e}");
        assert_eq!(e.to_string(), format!("GET {addr}/slow: no answer within 0.2 s"));
        server.join().unwrap();
        let (addr, server) = serve_once(Some("SSH-2.0-OpenSSH\r\n\r\n"));
        let e = request_blocking(addr, Request::get("/"), Duration::from_secs(2)).unwrap_err();
        assert_eq!(e.to_string(), format!("GET {addr}/: not an HTTP answer"));
        server.join().unwrap();
    }
}

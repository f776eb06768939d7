//! An OVSDB connection (RFC 7047 JSON-RPC over a Unix or TCP stream):
//! requests matched to replies by id, the server's `echo` answered, and
//! notifications (`update`, `locked`) handed on in order. JSON texts on the
//! stream are not framed; serde_json's stream deserializer finds where each
//! ends, and a stream that is not JSON closes the connection.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}: {1}")]
    Connect(String, std::io::Error),
    #[error("{0:?} is not an OVSDB address; give unix:PATH or tcp:HOST:PORT")]
    Address(String),
    #[error("the database connection closed")]
    Closed,
    #[error("{method}: the server answered {error}")]
    Server { method: String, error: Value },
}

/// Where the database is: unix:PATH or tcp:HOST:PORT.
#[derive(Debug, Clone, PartialEq)]
pub enum Remote {
    Unix(std::path::PathBuf),
    Tcp(String),
}

impl Remote {
    pub fn parse(s: &str) -> Result<Remote, ClientError> {
        if let Some(p) = s.strip_prefix("unix:").filter(|p| !p.is_empty()) {
            return Ok(Remote::Unix(p.into()));
        }
        if let Some(hp) = s.strip_prefix("tcp:") {
            if hp
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
            {
                return Ok(Remote::Tcp(hp.into()));
            }
        }
        Err(ClientError::Address(s.into()))
    }
}

impl std::fmt::Display for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Remote::Unix(p) => write!(f, "unix:{}", p.display()),
            Remote::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

/// Replies awaited, by id; None once the connection has closed.
type Pending = Arc<Mutex<Option<HashMap<u64, oneshot::Sender<Result<Value, Value>>>>>>;

/// A connection; dropping it closes it.
pub struct Client {
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    next_id: AtomicU64,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Client {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// A notification from the server: its method and params.
pub type Notification = (String, Value);

impl Client {
    /// Connects; notifications arrive on the returned receiver, which
    /// ends when the connection does.
    pub async fn connect(remote: &Remote) -> Result<(Client, mpsc::UnboundedReceiver<Notification>), ClientError> {
        let err = |e| ClientError::Connect(remote.to_string(), e);
        match remote {
            Remote::Unix(p) => {
                let (r, w) = tokio::net::UnixStream::connect(p).await.map_err(err)?.into_split();
                Ok(Client::over(r, w))
            }
            Remote::Tcp(a) => {
                let s = tokio::net::TcpStream::connect(a).await.map_err(err)?;
                let _ = s.set_nodelay(true);
                let (r, w) = s.into_split();
                Ok(Client::over(r, w))
            }
        }
    }

    fn over(
        mut rd: impl AsyncRead + Unpin + Send + 'static,
        mut wr: impl AsyncWrite + Unpin + Send + 'static,
    ) -> (Client, mpsc::UnboundedReceiver<Notification>) {
        let (out, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let (note_tx, note_rx) = mpsc::unbounded_channel();
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        let writer = tokio::spawn(async move {
            while let Some(b) = out_rx.recv().await {
                if wr.write_all(&b).await.is_err() {
                    break;
                }
            }
        });
        let reader = {
            let (pending, out) = (pending.clone(), out.clone());
            tokio::spawn(async move {
                let mut buf: Vec<u8> = Vec::new();
                let mut chunk = vec![0u8; 64 * 1024];
                'read: loop {
                    let n = match rd.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    let mut used = 0;
                    {
                        let mut it = serde_json::Deserializer::from_slice(&buf).into_iter::<Value>();
                        loop {
                            match it.next() {
                                Some(Ok(v)) => {
                                    used = it.byte_offset();
                                    handle(v, &pending, &out, &note_tx);
                                }
                                Some(Err(e)) if e.is_eof() => break,
                                Some(Err(_)) => break 'read,
                                None => {
                                    used = it.byte_offset();
                                    break;
                                }
                            }
                        }
                    }
                    buf.drain(..used);
                    if buf.len() > 64 << 20 {
                        break;
                    }
                }
                // Whoever waits for a reply hears that none will come.
                pending.lock().unwrap_or_else(|e| e.into_inner()).take();
            })
        };
        (
            Client {
                out,
                pending,
                next_id: AtomicU64::new(1),
                tasks: vec![writer, reader],
            },
            note_rx,
        )
    }

    /// Sends a request and waits for its reply's result.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.next_id.fetch_add(1, Relaxed);
        let (tx, rx) = oneshot::channel();
        match self.pending.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(p) => p.insert(id, tx),
            None => return Err(ClientError::Closed),
        };
        let msg = json!({"method": method, "params": params, "id": id});
        self.out
            .send(serde_json::to_vec(&msg).unwrap_or_default())
            .map_err(|_| ClientError::Closed)?;
        match rx.await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(error)) => Err(ClientError::Server {
                method: method.into(),
                error,
            }),
            Err(_) => Err(ClientError::Closed),
        }
    }

    /// A `transact` on Open_vSwitch; an operation's error is an error.
    pub async fn transact(&self, ops: Vec<Value>) -> Result<Value, ClientError> {
        let mut params = vec![json!("Open_vSwitch")];
        params.extend(ops);
        let r = self.call("transact", Value::Array(params)).await?;
        if let Some(e) = r.as_array().and_then(|a| a.iter().find(|o| o.get("error").is_some())) {
            return Err(ClientError::Server {
                method: "transact".into(),
                error: e.clone(),
            });
        }
        Ok(r)
    }
}

/// One JSON text from the server.
fn handle(
    v: Value,
    pending: &Pending,
    out: &mpsc::UnboundedSender<Vec<u8>>,
    notes: &mpsc::UnboundedSender<Notification>,
) {
    let method = v.get("method").and_then(Value::as_str);
    let id = v.get("id").cloned().unwrap_or(Value::Null);
    match method {
        // The server's keep-alive: answered with its own params.
        Some("echo") => {
            let reply = json!({"result": v.get("params").cloned().unwrap_or(json!([])), "error": null, "id": id});
            let _ = out.send(serde_json::to_vec(&reply).unwrap_or_default());
        }
        Some(m) if id.is_null() => {
            let _ = notes.send((m.to_string(), v.get("params").cloned().unwrap_or(Value::Null)));
        }
        // A request the switch does not serve.
        Some(m) => {
            let reply = json!({"result": null, "error": format!("{m} is not served here"), "id": id});
            let _ = out.send(serde_json::to_vec(&reply).unwrap_or_default());
        }
        None => {
            let Some(id) = id.as_u64() else { return };
            let Some(tx) = pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
                .and_then(|p| p.remove(&id))
            else {
                return;
            };
            let r = match v.get("error") {
                Some(e) if !e.is_null() => Err(e.clone()),
                _ => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = tx.send(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes() {
        assert_eq!(
            Remote::parse("unix:/run/db.sock").unwrap(),
            Remote::Unix("/run/db.sock".into())
        );
        assert_eq!(
            Remote::parse("tcp:127.0.0.1:6640").unwrap(),
            Remote::Tcp("127.0.0.1:6640".into())
        );
        for bad in ["unix:", "tcp:6640", "tcp:host:x", "db.sock", "ssl:1.2.3.4:6640"] {
            assert!(Remote::parse(bad).is_err(), "{bad}");
        }
    }

    /// Replies matched by id whatever their order, echo answered, JSON
    /// texts split anywhere across reads, and a stream that is not JSON
    /// ends the connection.
    #[tokio::test]
    async fn requests_replies_echo_and_garbage() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (r, w) = tokio::io::split(ours);
        let (client, mut notes) = Client::over(r, w);
        let (mut tr, mut tw) = tokio::io::split(theirs);
        let a = tokio::spawn(async move {
            let c = client;
            let (x, y) = tokio::join!(c.call("list_dbs", json!([])), c.call("get_schema", json!(["x"])));
            (x.unwrap(), y.unwrap_err().to_string(), c)
        });
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        while got.iter().filter(|&&b| b == b'}').count() < 2 {
            let n = tr.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8(got).unwrap();
        let (id_list, id_schema) = if text.find("list_dbs") < text.find("get_schema") {
            (1, 2)
        } else {
            (2, 1)
        };
        let replies = format!(
            "{{\"id\":{id_schema},\"result\":null,\"error\":\"unknown database\"}}{{\"method\":\"echo\",\"params\":[\"hi\"],\"id\":\"e\"}}{{\"id\":{id_list},\"result\":[\"Open_vSwitch\"],\"error\":null}}{{\"method\":\"update\",\"params\":[null,{{}}],\"id\":null}}"
        );
        for piece in replies.as_bytes().chunks(7) {
            tw.write_all(piece).await.unwrap();
            tw.flush().await.unwrap();
        }
        let (list, err, client) = a.await.unwrap();
        assert_eq!(list, json!(["Open_vSwitch"]));
        assert!(err.contains("unknown database"), "{err}");
        let (m, p) = notes.recv().await.unwrap();
        assert_eq!((m.as_str(), p), ("update", json!([null, {}])));
        // The echo's answer.
        let mut got = Vec::new();
        while !String::from_utf8_lossy(&got).contains("\"e\"") {
            let n = tr.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        let echo: Value = serde_json::from_slice(&got).unwrap();
        assert_eq!(echo["result"], json!(["hi"]));
        tw.write_all(b"{]").await.unwrap();
        assert!(notes.recv().await.is_none(), "garbage must close the connection");
        assert!(matches!(client.call("x", json!([])).await, Err(ClientError::Closed)));
    }
}

//! Northbound adapters: how a topology test reads what the controller
//! believes (its view of the links) through the controller's own API.
//! `Sdnlab` reads sdnlab's REST API (GET /topology); `None` has nothing to
//! read, and tests that need a view say so in their result instead of
//! guessing. (os-ken's rest_topology comes with the topology tests.)

use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Clone, Debug)]
pub enum Northbound {
    /// sdnlab's REST API at this address.
    Sdnlab(SocketAddr),
    /// No northbound view.
    None,
}

/// One HTTP/1.1 GET; returns the status and the body.
pub async fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let io = async {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
            .await?;
        let mut text = String::new();
        s.read_to_string(&mut text).await?;
        Ok::<_, std::io::Error>(text)
    };
    let text = tokio::time::timeout(Duration::from_secs(5), io)
        .await
        .map_err(|_| format!("{addr}{path}: no answer within 5 s"))?
        .map_err(|e| format!("{addr}{path}: {e}"))?;
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{addr}{path}: not an HTTP answer"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

impl Northbound {
    pub fn name(&self) -> &'static str {
        match self {
            Northbound::Sdnlab(_) => "sdnlab REST",
            Northbound::None => "none",
        }
    }

    /// Directed links the controller knows of; Ok(None) when this adapter cannot tell.
    pub async fn links(&self) -> Result<Option<usize>, String> {
        match self {
            Northbound::None => Ok(None),
            Northbound::Sdnlab(addr) => {
                let (status, body) = http_get(*addr, "/topology").await?;
                if status != 200 {
                    return Err(format!("GET /topology answered {status}: {body}"));
                }
                let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| format!("GET /topology: {e}"))?;
                Ok(v["links"].as_array().map(|l| l.len()))
            }
        }
    }
}

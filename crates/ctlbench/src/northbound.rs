//! Northbound adapters: how a topology test reads what the controller
//! believes (its links, its flows) and asks it for paths, through the
//! controller's own API.
//!
//! - `Sdnlab`: sdnlab's REST API (GET /topology, GET /switches/{dpid}/flows,
//!   POST /paths).
//! - `OsKen`: os-ken's (and Ryu's) REST apps: `rest_topology`
//!   (GET /v1.0/topology/links, one entry per direction) and `ofctl_rest`
//!   (GET /stats/flow/{dpid}, POST /stats/flowentry/add). ofctl_rest has no
//!   notion of a path, so a path request is the tester's: the shortest path
//!   over the links the controller reports, one flow per hop, as an os-ken
//!   user would write it.
//! - `None`: nothing to read; tests that need a view say so in their
//!   result instead of guessing.

use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;

/// What went wrong reading or writing a controller's northbound API.
#[derive(Debug, thiserror::Error)]
pub enum NorthboundError {
    /// An adapter written wrongly (the caller's mistake).
    #[error("--northbound '{0}': write sdnlab:HOST:PORT, osken:HOST:PORT or none")]
    BadAdapter(String),
    /// No answer, or not an HTTP one.
    #[error(transparent)]
    Http(#[from] httpc::HttpError),
    /// An answer, but not the one asked for.
    #[error("{method} {path} answered {status}: {body}")]
    Status {
        method: String,
        path: String,
        status: u16,
        body: String,
    },
    #[error("GET {path}: {source}")]
    Json { path: String, source: serde_json::Error },
    #[error("the links are not a JSON list")]
    LinksNotAList,
    #[error("a link the controller reported has no dpid/port: {0}")]
    LinkWithoutEnds(Value),
    #[error("the controller's view has no path from switch {from:#x} to {to:#x}")]
    NoPath { from: u64, to: u64 },
}

#[derive(Clone, Debug)]
pub enum Northbound {
    /// sdnlab's REST API at this address, and the token its writes need
    /// (`SDNLAB_REST_TOKEN` for one given as `sdnlab:HOST:PORT`).
    Sdnlab(SocketAddr, Option<String>),
    /// os-ken's rest_topology and ofctl_rest at this address.
    OsKen(SocketAddr),
    /// No northbound view.
    None,
}

/// A directed link as the controller reports it: (dpid, port) -> (dpid, port).
pub type Link = ((u64, u32), (u64, u32));

/// Priority and cookie of the flows the tester installs through ofctl_rest.
pub const OFCTL_PATH_PRIORITY: u16 = 200;
pub const OFCTL_PATH_COOKIE: u64 = 0x5d1a_0a77;

/// One HTTP/1.1 request through the lab's client (5 s at most), with a
/// bearer token when given; the status and the body.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
    token: Option<&str>,
) -> Result<(u16, String), NorthboundError> {
    let req = httpc::Request {
        method,
        path,
        body,
        token,
    };
    let r = httpc::request(addr, req, Duration::from_secs(5)).await?;
    Ok((r.status, r.body))
}

/// One HTTP/1.1 GET; returns the status and the body.
pub async fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String), NorthboundError> {
    http(addr, "GET", path, None, None).await
}

/// GET `path` (with a bearer token when given), expecting 200 and JSON.
pub async fn get_json(addr: SocketAddr, path: &str, token: Option<&str>) -> Result<Value, NorthboundError> {
    let (status, body) = http(addr, "GET", path, None, token).await?;
    if status != 200 {
        return Err(NorthboundError::Status {
            method: "GET".into(),
            path: path.to_string(),
            status,
            body: body.trim().to_string(),
        });
    }
    serde_json::from_str(&body).map_err(|source| NorthboundError::Json {
        path: path.to_string(),
        source,
    })
}

/// POST `body` to `path` (with the API's token if it has one), expecting a 2xx.
async fn post_json(addr: SocketAddr, path: &str, body: &Value, token: Option<&str>) -> Result<String, NorthboundError> {
    let (status, text) = http(addr, "POST", path, Some(&body.to_string()), token).await?;
    if !(200..300).contains(&status) {
        return Err(NorthboundError::Status {
            method: "POST".into(),
            path: path.to_string(),
            status,
            body: text.trim().to_string(),
        });
    }
    Ok(text)
}

fn hex_u64(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| u64::from_str_radix(v.as_str()?, 16).ok())
}

fn mac_text(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// The shortest path from switch `from` to the host port `to`, as
/// (dpid, out port) per hop, over `links`; None when unreachable.
pub fn shortest_path(links: &[Link], from: u64, to: (u64, u32)) -> Option<Vec<(u64, u32)>> {
    let mut prev: HashMap<u64, Option<(u64, u32)>> = HashMap::from([(from, None)]);
    let mut queue = VecDeque::from([from]);
    while let Some(here) = queue.pop_front() {
        if here == to.0 {
            break;
        }
        for &((a, port), (b, _)) in links {
            if a == here && !prev.contains_key(&b) {
                prev.insert(b, Some((a, port)));
                queue.push_back(b);
            }
        }
    }
    prev.get(&to.0)?;
    let mut hops = vec![to];
    let mut at = to.0;
    while let Some(Some(p)) = prev.get(&at) {
        hops.push(*p);
        at = p.0;
    }
    hops.reverse();
    Some(hops)
}

impl Northbound {
    pub fn name(&self) -> &'static str {
        match self {
            Northbound::Sdnlab(..) => "sdnlab REST",
            Northbound::OsKen(_) => "os-ken rest_topology + ofctl_rest",
            Northbound::None => "none",
        }
    }

    /// Parses `sdnlab:HOST:PORT`, `osken:HOST:PORT` or `none` (sdnlab's
    /// token, for its writes, from the environment: `SDNLAB_REST_TOKEN`).
    pub fn parse(s: &str) -> Result<Northbound, NorthboundError> {
        let bad = || NorthboundError::BadAdapter(s.to_string());
        if s == "none" {
            return Ok(Northbound::None);
        }
        let (kind, addr) = s.split_once(':').ok_or_else(bad)?;
        let addr: SocketAddr = addr.parse().map_err(|_| bad())?;
        match kind {
            "sdnlab" => Ok(Northbound::Sdnlab(addr, std::env::var("SDNLAB_REST_TOKEN").ok())),
            "osken" | "os-ken" | "ryu" => Ok(Northbound::OsKen(addr)),
            _ => Err(bad()),
        }
    }

    /// The directed links the controller knows of; Ok(None) when this adapter cannot tell.
    pub async fn link_list(&self) -> Result<Option<Vec<Link>>, NorthboundError> {
        let (list, src, dst, dpid, port): (Value, &str, &str, &str, &str) = match self {
            Northbound::None => return Ok(None),
            Northbound::Sdnlab(addr, _) => {
                let v = get_json(*addr, "/topology", None).await?;
                (v["links"].clone(), "src", "dst", "dpid", "port")
            }
            Northbound::OsKen(addr) => (
                get_json(*addr, "/v1.0/topology/links", None).await?,
                "src",
                "dst",
                "dpid",
                "port_no",
            ),
        };
        let items = list.as_array().ok_or(NorthboundError::LinksNotAList)?;
        let mut links = Vec::with_capacity(items.len());
        for l in items {
            let end = |e: &Value| Some((hex_u64(&e[dpid])?, hex_u64(&e[port])? as u32));
            match (end(&l[src]), end(&l[dst])) {
                (Some(a), Some(b)) => links.push((a, b)),
                _ => return Err(NorthboundError::LinkWithoutEnds(l.clone())),
            }
        }
        Ok(Some(links))
    }

    /// How many directed links the controller knows of; Ok(None) when this adapter cannot tell.
    pub async fn links(&self) -> Result<Option<usize>, NorthboundError> {
        Ok(self.link_list().await?.map(|l| l.len()))
    }

    /// Asks for a path both ways between the hosts with MACs `a` (at
    /// `a_at`) and `b` (at `b_at`). Ok(false) when this adapter cannot.
    pub async fn provision(
        &self,
        a: [u8; 6],
        a_at: (u64, u32),
        b: [u8; 6],
        b_at: (u64, u32),
    ) -> Result<bool, NorthboundError> {
        match self {
            Northbound::None => Ok(false),
            Northbound::Sdnlab(addr, token) => {
                let body = json!({"src": mac_text(a), "dst": mac_text(b)});
                post_json(*addr, "/paths", &body, token.as_deref()).await?;
                Ok(true)
            }
            Northbound::OsKen(addr) => {
                let links = self.link_list().await?.unwrap_or_default();
                for (to_mac, from, to) in [(b, a_at, b_at), (a, b_at, a_at)] {
                    let hops =
                        shortest_path(&links, from.0, to).ok_or(NorthboundError::NoPath { from: from.0, to: to.0 })?;
                    for (dpid, port) in hops.into_iter().rev() {
                        let flow = json!({
                            "dpid": dpid, "cookie": OFCTL_PATH_COOKIE, "priority": OFCTL_PATH_PRIORITY,
                            "match": {"dl_dst": mac_text(to_mac)},
                            "actions": [{"type": "OUTPUT", "port": port}],
                        });
                        post_json(*addr, "/stats/flowentry/add", &flow, None).await?;
                    }
                }
                Ok(true)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_path_takes_the_fewest_hops_and_ends_at_the_host_port() {
        // 1 - 2 - 3 in a line, and a shortcut 1 - 3.
        let links = vec![
            ((1, 1), (2, 1)),
            ((2, 1), (1, 1)),
            ((2, 2), (3, 1)),
            ((3, 1), (2, 2)),
            ((1, 2), (3, 2)),
            ((3, 2), (1, 2)),
        ];
        assert_eq!(shortest_path(&links, 1, (3, 9)), Some(vec![(1, 2), (3, 9)]));
        assert_eq!(shortest_path(&links, 2, (2, 7)), Some(vec![(2, 7)]));
        assert_eq!(shortest_path(&links, 1, (4, 1)), None);
    }

    #[test]
    fn adapters_parse_or_say_how_to_write_them() {
        assert!(matches!(Northbound::parse("none"), Ok(Northbound::None)));
        assert!(matches!(
            Northbound::parse("osken:127.0.0.1:8080"),
            Ok(Northbound::OsKen(_))
        ));
        assert!(matches!(
            Northbound::parse("sdnlab:127.0.0.1:8080"),
            Ok(Northbound::Sdnlab(..))
        ));
        let e = Northbound::parse("odl:1.2.3.4:1").unwrap_err().to_string();
        assert!(e.contains("sdnlab:HOST:PORT, osken:HOST:PORT or none"), "{e}");
    }
}

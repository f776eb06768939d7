//! Cluster mode's shared state: what the northbound API asks for and the
//! hosts the `paths` app learns live in etcd (`cluster::Handle`'s
//! `state/` keys), so any member answers the API and a new master knows
//! them at once. The OpenFlow hot path never waits on it: a PACKET_IN is
//! answered from the member's own caches; what changes here is written by
//! a thread of its own.
//!
//! - An **intent** (`state/intents/ID`) is the FLOW_MODs one request needs,
//!   per switch, encoded as they go on the wire. Whichever member got the
//!   request writes it; the master of each switch it names sends that
//!   switch its messages and a barrier, and acknowledges under
//!   `state/acks/ID/DPID` (the intent's revision, and the switch's error if
//!   it refused). The member that wrote it answers the request once every
//!   switch has acknowledged. A durable intent (a flow without timeouts, a
//!   path) stays: every new master of one of its switches sends it again,
//!   so what the API installed survives any member. A flow with a timeout
//!   is meant to go away and a delete is done once, so those are removed
//!   once acknowledged.
//! - A **host** (`state/hosts/MAC`) is written by the master of the switch
//!   where it was learnt, and fed into every member's `paths` app.
//! - A **link** (`state/links/DPID-PORT`, where its packets leave), when
//!   the members leave each switch's PACKET_INs to its master: written by
//!   the master of the switch its probes arrive at (the only member that
//!   hears them), removed by it when it loses the link, and fed into every
//!   member's `topology`, so that all of them see the same network, build
//!   the same spanning tree and the same paths.

use crate::flows::{FlowFilter, FlowSpec};
use crate::paths::{Host, Paths, ProvisionedPath};
use crate::shared::Wait;
use crate::topology::{End, Link, Topology};
use crate::worker::Core;
use ofwire::{Body, Message};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a request waits for the switches' masters to acknowledge.
pub const ACK_WAIT: Duration = Duration::from_secs(10);

/// One request of the northbound API, as kept in etcd.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Intent {
    /// "flow", "path" or "delete".
    pub kind: String,
    /// Sent again by every new master of its switches (false: removed once
    /// acknowledged).
    pub durable: bool,
    /// What was asked: the flow, the path or the filter.
    pub request: Value,
    pub mods: Vec<SwitchMods>,
}

/// The messages of an intent for one switch, hex-encoded as on the wire.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SwitchMods {
    pub dpid: u64,
    pub messages: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Ack {
    revision: i64,
    member: String,
    error: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("the cluster's shared state: {0}")]
    Etcd(#[from] cluster::Error),
    #[error("switch {dpid:#x} refused it: {error}")]
    Refused { dpid: u64, error: String },
    #[error("the master of switch {0:#x} did not apply it within {1} s (GET /cluster shows who masters it)")]
    NotApplied(u64, u64),
    #[error(transparent)]
    Bad(#[from] crate::flows::FlowError),
    /// A message of a path that does not encode (a bug of ours).
    #[error("a path's message: {0}")]
    Encode(ofwire::EncodeError),
}

/// The sharing thread's inbox.
pub(crate) type Events = tokio::sync::mpsc::UnboundedReceiver<Event>;
pub(crate) type Feed = tokio::sync::mpsc::UnboundedSender<Event>;

/// What the sharing thread is told.
pub(crate) enum Event {
    /// A key of the shared state changed (`cluster::Notice::State`).
    Changed(String, Option<Value>, i64),
    /// This member became the switch's master.
    Master(u64),
    /// The `paths` app learnt (or moved) a host here.
    Learnt(Host),
    /// `topology` found (true) or lost (false) a link here.
    Link(End, End, bool),
}

/// A cluster member's side of the shared state.
pub struct SharedState {
    member: Arc<cluster::Handle>,
}

/// FNV-1a: a name for a flow that is the same in every member's process.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn host_key(mac: &str) -> String {
    format!("hosts/{mac}")
}

fn link_key(src: End) -> String {
    format!("links/{:016x}-{}", src.dpid, src.port)
}

/// What the apps share: the `paths` app's hosts, and the links `topology`
/// finds when each member hears only its own switches.
pub(crate) struct Apps {
    pub paths: Option<Arc<Paths>>,
    pub topology: Option<Arc<Topology>>,
    /// Whether links are shared (and floods go hop by hop).
    pub share_links: bool,
}

impl SharedState {
    /// Starts sharing: the thread that applies intents and writes hosts,
    /// fed through `events`; `paths` (if running) learns the shared hosts.
    pub(crate) fn start(
        ctl: Arc<Core>,
        member: Arc<cluster::Handle>,
        apps: Apps,
        events: Events,
        feed: Feed,
    ) -> std::io::Result<Arc<SharedState>> {
        if let Some(p) = &apps.paths {
            let feed = feed.clone();
            p.on_learnt(Box::new(move |h| {
                let _ = feed.send(Event::Learnt(h));
            }));
            if apps.share_links {
                p.set_hop_by_hop();
            }
        }
        let topology = apps.topology.filter(|_| apps.share_links);
        if let Some(t) = &topology {
            let feed = feed.clone();
            t.on_link(Box::new(move |src, dst, up| {
                let _ = feed.send(Event::Link(src, dst, up));
            }));
        }
        let paths = apps.paths;
        // What was shared before this member could listen.
        for (k, (v, rev)) in member.state("") {
            let _ = feed.send(Event::Changed(k, Some(v), rev));
        }
        let m = member.clone();
        std::thread::Builder::new()
            .name("ctl-shared".into())
            .spawn(move || run(ctl, m, paths, topology, events))?;
        Ok(Arc::new(SharedState { member }))
    }

    /// POST /switches/DPID/flows: the flow as an intent, answered once
    /// the switch's master has it in the switch.
    pub async fn add_flow(&self, dpid: u64, version: u8, spec: &FlowSpec) -> Result<(), StateError> {
        let body = spec.add(version).map_err(StateError::Bad)?;
        let request = serde_json::to_value(spec).unwrap_or(Value::Null);
        let id = format!("flow-{dpid:016x}-{:016x}", fnv(&request.to_string()));
        let durable = spec.idle_timeout == 0 && spec.hard_timeout == 0;
        self.run_intent(&id, "flow", durable, request, vec![(dpid, body)]).await
    }

    /// DELETE /switches/DPID/flows: the flows the filter covers are no
    /// longer kept, and the switch's master sends the delete.
    pub async fn delete_flows(&self, dpid: u64, version: u8, filter: &FlowFilter) -> Result<(), StateError> {
        let body = filter.delete(version).map_err(StateError::Bad)?;
        for (key, (v, _)) in self.member.state(&format!("intents/flow-{dpid:016x}-")) {
            let covered = serde_json::from_value::<Intent>(v)
                .ok()
                .and_then(|i| serde_json::from_value::<FlowSpec>(i.request).ok())
                .is_some_and(|s| filter.covers(&s));
            if covered {
                self.forget(key.trim_start_matches("intents/")).await?;
            }
        }
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let id = format!("del-{dpid:016x}-{nonce:x}-{}", std::process::id());
        let request = serde_json::to_value(filter).unwrap_or(Value::Null);
        self.run_intent(&id, "delete", false, request, vec![(dpid, body)]).await
    }

    /// POST /paths: the path both ways, each switch's hops installed by
    /// its master.
    pub async fn add_path(&self, path: &ProvisionedPath, mods: Vec<(u64, Body)>) -> Result<(), StateError> {
        let id = format!("path-{}-{}", path.src.mac, path.dst.mac);
        let request = serde_json::to_value(path).unwrap_or(Value::Null);
        self.run_intent(&id, "path", true, request, mods).await
    }

    /// GET /paths: every path kept in the cluster.
    pub fn paths(&self) -> Vec<Value> {
        self.member
            .state("intents/path-")
            .into_values()
            .filter_map(|(v, _)| serde_json::from_value::<Intent>(v).ok())
            .map(|i| i.request)
            .collect()
    }

    async fn forget(&self, id: &str) -> Result<(), StateError> {
        self.member.delete_state(&format!("intents/{id}"), false).await?;
        self.member.delete_state(&format!("acks/{id}/"), true).await?;
        Ok(())
    }

    /// Writes the intent, waits for every switch's acknowledgement.
    async fn run_intent(
        &self,
        id: &str,
        kind: &str,
        durable: bool,
        request: Value,
        bodies: Vec<(u64, Body)>,
    ) -> Result<(), StateError> {
        let mut mods: Vec<SwitchMods> = Vec::new();
        for (dpid, body) in bodies {
            let mut bytes = Vec::new();
            let version = match &body {
                Body::V10(_) => ofwire::OFP10_VERSION,
                _ => ofwire::OFP13_VERSION,
            };
            Message::new(version, 0, body)
                .encode(&mut bytes)
                .map_err(StateError::Encode)?;
            match mods.iter_mut().find(|m| m.dpid == dpid) {
                Some(m) => m.messages.push(ofwire::types::to_hex(&bytes)),
                None => mods.push(SwitchMods {
                    dpid,
                    messages: vec![ofwire::types::to_hex(&bytes)],
                }),
            }
        }
        let dpids: Vec<u64> = mods.iter().map(|m| m.dpid).collect();
        let intent = Intent {
            kind: kind.into(),
            durable,
            request,
            mods,
        };
        // Acknowledgements of an earlier version of this intent are stale.
        let acks = format!("acks/{id}/");
        if !self.member.state(&acks).is_empty() {
            self.member.delete_state(&acks, true).await?;
        }
        let rev = self
            .member
            .put_state(
                &format!("intents/{id}"),
                &serde_json::to_value(&intent).unwrap_or(Value::Null),
            )
            .await?;
        let outcome = self.acknowledged(id, rev, &dpids).await;
        if !durable || outcome.is_err() {
            // Done once (or refused): not to be sent again.
            self.forget(id).await?;
        }
        outcome
    }

    async fn acknowledged(&self, id: &str, rev: i64, dpids: &[u64]) -> Result<(), StateError> {
        let start = Instant::now();
        for &dpid in dpids {
            let key = format!("acks/{id}/{dpid:016x}");
            loop {
                let ack = self
                    .member
                    .state_get(&key)
                    .and_then(|(v, _)| serde_json::from_value::<Ack>(v).ok())
                    .filter(|a| a.revision >= rev);
                if let Some(a) = ack {
                    if let Some(error) = a.error {
                        return Err(StateError::Refused { dpid, error });
                    }
                    break;
                }
                if start.elapsed() > ACK_WAIT {
                    return Err(StateError::NotApplied(dpid, ACK_WAIT.as_secs()));
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        Ok(())
    }
}

/// The sharing thread: applies the intents whose switches this member
/// masters, and writes the hosts learnt at them. Each intent is applied by
/// a task of its own, so that many requests at once (a path per host
/// pair) wait on their barriers and etcd's answers together.
fn run(
    ctl: Arc<Core>,
    member: Arc<cluster::Handle>,
    paths: Option<Arc<Paths>>,
    topology: Option<Arc<Topology>>,
    mut events: Events,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        tracing::info!("controller: the cluster's shared state: no runtime for its thread");
        return;
    };
    let me = member.name();
    let masters = {
        let member = member.clone();
        move |dpid: u64| member.master_of(dpid).is_some_and(|m| m == me)
    };
    rt.block_on(async move {
        let mut check = tokio::time::interval(Duration::from_millis(200));
        loop {
            let ev = tokio::select! {
                ev = events.recv() => match ev {
                    Some(ev) => ev,
                    None => return,
                },
                _ = check.tick() => {
                    if ctl.stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return;
                    }
                    continue;
                }
            };
            match ev {
                Event::Changed(key, Some(v), rev) => {
                    if let Some(id) = key.strip_prefix("intents/") {
                        if let Ok(intent) = serde_json::from_value::<Intent>(v) {
                            let mine: Vec<u64> = intent.mods.iter().map(|m| m.dpid).filter(|&d| masters(d)).collect();
                            if !mine.is_empty() {
                                tokio::spawn(apply(ctl.clone(), member.clone(), id.to_string(), intent, rev, mine));
                            }
                        }
                    } else if key.starts_with("hosts/") {
                        if let (Some(p), Ok(h)) = (&paths, serde_json::from_value::<Host>(v)) {
                            p.learn_shared(&h);
                        }
                    } else if key.starts_with("links/") {
                        if let (Some(t), Ok(l)) = (&topology, serde_json::from_value::<Link>(v)) {
                            t.learn_shared(l.src, l.dst);
                        }
                    }
                }
                Event::Changed(key, None, _) => {
                    if let (Some(t), Some(src)) = (&topology, key.strip_prefix("links/").and_then(parse_link_key)) {
                        t.forget_shared(src);
                    }
                }
                // Written by the master of the switch the link arrives at
                // (the one member that hears its probes).
                Event::Link(src, dst, up) => {
                    if !masters(dst.dpid) {
                        continue;
                    }
                    let key = link_key(src);
                    let known = member
                        .state_get(&key)
                        .and_then(|(v, _)| serde_json::from_value::<Link>(v).ok());
                    let member = member.clone();
                    if up && known != Some(Link { src, dst }) {
                        tokio::spawn(async move {
                            let v = serde_json::to_value(Link { src, dst }).unwrap_or(Value::Null);
                            if let Err(e) = member.put_state(&key, &v).await {
                                tracing::warn!("controller: sharing link {key}: {e}");
                            }
                        });
                    } else if !up && known.is_some_and(|k| k.dst == dst) {
                        tokio::spawn(async move {
                            if let Err(e) = member.delete_state(&key, false).await {
                                tracing::warn!("controller: forgetting link {key}: {e}");
                            }
                        });
                    }
                }
                // Told it masters the switch (the view may not say so yet):
                // every intent that names it, sent again.
                Event::Master(dpid) => {
                    for (key, (v, rev)) in member.state("intents/") {
                        let Ok(intent) = serde_json::from_value::<Intent>(v) else {
                            continue;
                        };
                        if intent.mods.iter().any(|m| m.dpid == dpid) {
                            let id = key.trim_start_matches("intents/").to_string();
                            tokio::spawn(apply(ctl.clone(), member.clone(), id, intent, rev, vec![dpid]));
                        }
                    }
                }
                Event::Learnt(h) => {
                    let key = host_key(&h.mac);
                    let known = member
                        .state_get(&key)
                        .and_then(|(v, _)| serde_json::from_value::<Host>(v).ok());
                    let same = known.is_some_and(|k| k.dpid == h.dpid && k.port == h.port && k.ipv4 == h.ipv4);
                    if masters(h.dpid) && !same {
                        let member = member.clone();
                        tokio::spawn(async move {
                            let v = serde_json::to_value(&h).unwrap_or(Value::Null);
                            if let Err(e) = member.put_state(&key, &v).await {
                                tracing::info!("controller: sharing host {}: {e}", h.mac);
                            }
                        });
                    }
                }
            }
        }
    });
}

/// Sends `intent`'s messages to the switches `dpids` (which this member
/// masters), each followed by a barrier, and acknowledges.
async fn apply(ctl: Arc<Core>, member: Arc<cluster::Handle>, id: String, intent: Intent, rev: i64, dpids: Vec<u64>) {
    for m in intent.mods.iter().filter(|m| dpids.contains(&m.dpid)) {
        let mut error = None;
        for (i, text) in m.messages.iter().enumerate() {
            let body = match ofwire::types::from_hex(text).map(|b| ofwire::decode(&b)) {
                Ok(Ok(msg)) => msg.body,
                _ => {
                    error = Some(format!("message {} of intent {id} does not decode", i + 1));
                    break;
                }
            };
            // A barrier after each: the switch's refusal of any one is
            // the answer to it.
            if let Err(e) = ctl.env.ctx.request(m.dpid, body, Wait::Barrier).await {
                error = Some(e.to_string());
                break;
            }
        }
        let ack = Ack {
            revision: rev,
            member: member.name(),
            error,
        };
        let key = format!("acks/{id}/{:016x}", m.dpid);
        if let Err(e) = member
            .put_state(&key, &serde_json::to_value(&ack).unwrap_or(Value::Null))
            .await
        {
            tracing::info!("controller: acknowledging {id} at switch {:#x}: {e}", m.dpid);
        }
    }
}

/// The source end a link key names (`DPID-PORT`, hex and decimal).
fn parse_link_key(k: &str) -> Option<End> {
    let (d, p) = k.split_once('-')?;
    Some(End {
        dpid: u64::from_str_radix(d, 16).ok()?,
        port: p.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_key_names_its_source_end() {
        let e = End {
            dpid: 0xab,
            port: 4294967294,
        };
        let k = link_key(e);
        assert_eq!(k, "links/00000000000000ab-4294967294");
        assert_eq!(parse_link_key(k.strip_prefix("links/").unwrap()), Some(e));
        assert_eq!(parse_link_key("zz-1"), None);
    }
}

//! The northbound REST API: JSON over HTTP/1.1 (axum), on a thread of its
//! own so it never competes with the switch workers' event loops. Reads go
//! to the switches themselves (flows through flow stats, ports through the
//! port description) and to the `topology` and `paths` views; writes are
//! FLOW_MODs followed by a barrier, so a 2xx answer means the switch has
//! the change. Errors are JSON `{"error": "..."}` with 400 (bad request
//! body), 404 (no such switch/host), 409 (the app it needs is not
//! running, or this controller may not change the switch: a standby, a
//! cluster member that is not its master), 502 (the switch refused or did
//! not answer).
//!
//!   GET    /switches                      handshake facts of every switch
//!   GET    /switches/{dpid}               one switch, with its live counters
//!   GET    /switches/{dpid}/ports         live port list
//!   GET    /switches/{dpid}/flows         live flow table(s)
//!   POST   /switches/{dpid}/flows         add a flow (flows::FlowSpec)
//!   DELETE /switches/{dpid}/flows         delete flows (flows::FlowFilter; no body: all)
//!   GET    /topology                      switches and links (`topology` app)
//!   GET    /hosts                         hosts and where they attach (`paths` app)
//!   GET    /paths                         provisioned paths
//!   POST   /paths {"src": H, "dst": H}    provision a path both ways (H: MAC or IPv4)
//!   GET    /stats                         controller and per-switch counters
//!
//! In a cluster (`cluster_state`), writes go through etcd: any member
//! takes them, each switch's master applies them (a slave answers once the
//! master has), and a new master sends them again; 503 when etcd cannot be
//! reached, 504 when a switch's master did not apply a write in time.
//!
//! Every request first passes `rest_access`: writes need the API's bearer
//! token and a JSON body, the Host header must name the API, CORS is off
//! unless origins are named, HTTPS when a certificate is given.

use crate::catalog::AppSet;
use crate::flows::{FlowFilter, FlowSpec};
pub use crate::rest_access::{new_token, token_from_file, Access};
use crate::rest_access::{Guard, TlsListener};
use crate::runtime::Handle;
use crate::shared::{RequestError, Wait};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use ofwire::{v10, v13, Body, Message};
use serde::Deserialize;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;

#[derive(Clone)]
struct Api {
    ctl: Handle,
    apps: AppSet,
}

struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

type Reply = Result<Response, ApiError>;

fn ok(v: Value) -> Reply {
    Ok(Json(v).into_response())
}

/// A datapath id in a URL: decimal, 0x-prefixed hex, or 16 hex digits (as OVS prints it).
fn parse_dpid(s: &str) -> Result<u64, ApiError> {
    let bad = || {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!("'{s}' is not a datapath id (decimal, 0x1f, or 16 hex digits)"),
        )
    };
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).map_err(|_| bad())
    } else if s.len() == 16 {
        u64::from_str_radix(s, 16).map_err(|_| bad())
    } else {
        s.parse().map_err(|_| bad())
    }
}

impl Api {
    fn switch(&self, s: &str) -> Result<ofconn::SwitchInfo, ApiError> {
        let d = parse_dpid(s)?;
        self.ctl
            .switch_infos()
            .into_iter()
            .find(|i| i.datapath_id == d)
            .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no switch {d:#x} is connected")))
    }

    async fn ask(&self, dpid: u64, body: Body, wait: Wait) -> Result<Vec<Message>, ApiError> {
        self.ctl.request(dpid, body, wait).await.map_err(|e| {
            // A standby, or a cluster member that is not the switch's
            // master, refuses to change it: the caller should ask
            // another controller, not retry this one.
            let code = match e {
                RequestError::NotMaster | RequestError::Standby => StatusCode::CONFLICT,
                _ => StatusCode::BAD_GATEWAY,
            };
            ApiError(code, e.to_string())
        })
    }
}

fn switch_json(i: &ofconn::SwitchInfo) -> Value {
    json!({
        "dpid": i.datapath_id,
        "dpid_hex": format!("{:016x}", i.datapath_id),
        "openflow": if i.version == ofwire::OFP10_VERSION { "1.0" } else { "1.3" },
        "n_tables": i.n_tables,
        "n_buffers": i.n_buffers,
        "ports": i.ports.iter().map(|p| json!({
            "port_no": p.port_no, "name": p.name, "hw_addr": p.hw_addr.to_string(), "up": p.link_up,
        })).collect::<Vec<_>>(),
    })
}

fn counters_json(c: &ofconn::Counters) -> Value {
    json!({
        "messages_in": c.rx_messages,
        "messages_out": c.tx_messages,
        "errors_sent": c.rx_errors_sent,
        "echoes_sent": c.echoes_sent,
    })
}

async fn switches(State(api): State<Api>) -> Reply {
    ok(Value::Array(api.ctl.switch_infos().iter().map(switch_json).collect()))
}

async fn one_switch(State(api): State<Api>, Path(dpid): Path<String>) -> Reply {
    let info = api.switch(&dpid)?;
    let mut v = switch_json(&info);
    if let Some(c) = api.ctl.switch_counters(info.datapath_id).await {
        v["counters"] = counters_json(&c);
    }
    ok(v)
}

async fn ports(State(api): State<Api>, Path(dpid): Path<String>) -> Reply {
    let info = api.switch(&dpid)?;
    let (body, v10) = if info.version == ofwire::OFP10_VERSION {
        (Body::V10(v10::Body::FeaturesRequest), true)
    } else {
        let r = v13::MultipartRequest {
            flags: 0,
            body: v13::MultipartRequestBody::PortDesc,
        };
        (Body::V13(v13::Body::MultipartRequest(r)), false)
    };
    let mut out = Vec::new();
    for m in api.ask(info.datapath_id, body, Wait::Reply).await? {
        match m.body {
            Body::V10(v10::Body::FeaturesReply(f)) if v10 => out.extend(f.ports.iter().map(|p| {
                json!({"port_no": p.port_no, "name": p.name, "hw_addr": p.hw_addr.to_string(),
                           "up": p.state & 1 == 0, "admin_down": p.config & 1 != 0})
            })),
            Body::V13(v13::Body::MultipartReply(r)) => {
                if let v13::MultipartReplyBody::PortDesc(ps) = r.body {
                    out.extend(ps.iter().map(|p| {
                        json!({"port_no": p.port_no, "name": p.name, "hw_addr": p.hw_addr.to_string(),
                               "up": p.state & 1 == 0, "admin_down": p.config & 1 != 0,
                               "curr_speed_kbps": p.curr_speed})
                    }))
                }
            }
            _ => {}
        }
    }
    ok(Value::Array(out))
}

async fn flows(State(api): State<Api>, Path(dpid): Path<String>) -> Reply {
    let info = api.switch(&dpid)?;
    let body = if info.version == ofwire::OFP10_VERSION {
        Body::V10(v10::Body::StatsRequest(v10::StatsRequest {
            flags: 0,
            body: v10::StatsRequestBody::Flow(v10::FlowStatsRequest {
                match_: v10::Match::all(),
                table_id: 0xff,
                out_port: v10::port::NONE,
            }),
        }))
    } else {
        Body::V13(v13::Body::MultipartRequest(v13::MultipartRequest {
            flags: 0,
            body: v13::MultipartRequestBody::Flow(v13::FlowStatsRequest::all()),
        }))
    };
    let mut out = Vec::new();
    for m in api.ask(info.datapath_id, body, Wait::Reply).await? {
        match m.body {
            Body::V10(v10::Body::StatsReply(r)) => {
                if let v10::StatsReplyBody::Flow(fs) = r.body {
                    out.extend(fs.iter().map(|f| serde_json::to_value(f).unwrap_or(Value::Null)));
                }
            }
            Body::V13(v13::Body::MultipartReply(r)) => {
                if let v13::MultipartReplyBody::Flow(fs) = r.body {
                    out.extend(fs.iter().map(|f| serde_json::to_value(f).unwrap_or(Value::Null)));
                }
            }
            _ => {}
        }
    }
    ok(Value::Array(out))
}

fn parse_body<T: serde::de::DeserializeOwned + Default>(text: &str, what: &str) -> Result<T, ApiError> {
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    serde_json::from_str(text).map_err(|e| ApiError(StatusCode::BAD_REQUEST, format!("bad {what}: {e}")))
}

async fn add_flow(State(api): State<Api>, Path(dpid): Path<String>, text: String) -> Reply {
    let info = api.switch(&dpid)?;
    if text.trim().is_empty() {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "a flow is needed: {\"match\": {...}, \"actions\": [...]}".into(),
        ));
    }
    let spec: FlowSpec =
        serde_json::from_str(&text).map_err(|e| ApiError(StatusCode::BAD_REQUEST, format!("bad flow: {e}")))?;
    if let Some(shared) = api.ctl.shared_state() {
        shared
            .add_flow(info.datapath_id, info.version, &spec)
            .await
            .map_err(state_error)?;
        return Ok((StatusCode::CREATED, Json(json!({"installed": spec}))).into_response());
    }
    let body = spec
        .add(info.version)
        .map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
    api.ask(info.datapath_id, body, Wait::Barrier).await?;
    Ok((StatusCode::CREATED, Json(json!({"installed": spec}))).into_response())
}

async fn delete_flows(State(api): State<Api>, Path(dpid): Path<String>, text: String) -> Reply {
    let info = api.switch(&dpid)?;
    let filter: FlowFilter = parse_body(&text, "flow filter")?;
    if let Some(shared) = api.ctl.shared_state() {
        shared
            .delete_flows(info.datapath_id, info.version, &filter)
            .await
            .map_err(state_error)?;
        return ok(json!({"deleted": filter}));
    }
    let body = filter
        .delete(info.version)
        .map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
    api.ask(info.datapath_id, body, Wait::Barrier).await?;
    ok(json!({"deleted": filter}))
}

async fn topology(State(api): State<Api>) -> Reply {
    let Some(t) = &api.apps.topology else {
        return Err(ApiError(
            StatusCode::CONFLICT,
            "link discovery is off: run the controller with --app topology (or paths)".into(),
        ));
    };
    ok(serde_json::to_value(t.snapshot()).unwrap_or(Value::Null))
}

fn need_paths(api: &Api) -> Result<&std::sync::Arc<crate::paths::Paths>, ApiError> {
    api.apps.paths.as_ref().ok_or_else(|| {
        ApiError(
            StatusCode::CONFLICT,
            "hosts and paths need the paths app: run the controller with --app paths".into(),
        )
    })
}

async fn hosts(State(api): State<Api>) -> Reply {
    ok(serde_json::to_value(need_paths(&api)?.hosts()).unwrap_or(Value::Null))
}

async fn list_paths(State(api): State<Api>) -> Reply {
    let paths = need_paths(&api)?;
    if let Some(shared) = api.ctl.shared_state() {
        return ok(Value::Array(shared.paths()));
    }
    ok(serde_json::to_value(paths.provisioned()).unwrap_or(Value::Null))
}

fn state_error(e: crate::cluster_state::StateError) -> ApiError {
    use crate::cluster_state::StateError as E;
    let code = match &e {
        E::Etcd(_) => StatusCode::SERVICE_UNAVAILABLE,
        E::Refused { .. } => StatusCode::BAD_GATEWAY,
        E::NotApplied(..) => StatusCode::GATEWAY_TIMEOUT,
        E::Bad(_) | E::Encode(_) => StatusCode::BAD_REQUEST,
    };
    ApiError(code, e.to_string())
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PathRequest {
    src: String,
    dst: String,
}

async fn add_path(State(api): State<Api>, text: String) -> Reply {
    let paths = need_paths(&api)?.clone();
    let req: PathRequest = serde_json::from_str(&text).map_err(|e| {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!("bad path request ({e}): send {{\"src\": \"MAC or IPv4\", \"dst\": \"MAC or IPv4\"}}"),
        )
    })?;
    let (path, mods) = paths.provision(&req.src, &req.dst).map_err(|e| {
        let code = match e {
            crate::paths::PathError::UnknownHost(_) => StatusCode::NOT_FOUND,
            _ => StatusCode::CONFLICT,
        };
        ApiError(code, e.to_string())
    })?;
    if let Some(shared) = api.ctl.shared_state() {
        shared.add_path(&path, mods).await.map_err(state_error)?;
    } else {
        for (dpid, body) in mods {
            api.ask(dpid, body, Wait::Barrier).await?;
        }
    }
    paths.record(path.clone());
    Ok((
        StatusCode::CREATED,
        Json(serde_json::to_value(path).unwrap_or(Value::Null)),
    )
        .into_response())
}

async fn stats(State(api): State<Api>) -> Reply {
    let s = &api.ctl.stats;
    let (mut m_in, mut m_out, mut errs) = (
        s.messages_in.load(Relaxed),
        s.messages_out.load(Relaxed),
        s.errors_sent.load(Relaxed),
    );
    let mut per_switch = Vec::new();
    for dpid in api.ctl.switches() {
        if let Some(c) = api.ctl.switch_counters(dpid).await {
            m_in += c.rx_messages;
            m_out += c.tx_messages;
            errs += c.rx_errors_sent;
            let mut v = counters_json(&c);
            v["dpid"] = json!(dpid);
            per_switch.push(v);
        }
    }
    ok(json!({
        "sessions_active": s.sessions_active.load(Relaxed),
        "sessions_total": s.sessions_total.load(Relaxed),
        "switches_up": s.switches_up.load(Relaxed),
        "refused": s.refused.load(Relaxed),
        "replaced_duplicates": s.replaced_duplicates.load(Relaxed),
        "messages_in": m_in,
        "messages_out": m_out,
        "errors_sent": errs,
        "role": match api.ctl.ha() {
            None if api.ctl.mastership().is_some() => "cluster member (see /cluster)".to_string(),
            None => "active".to_string(),
            Some(h) if h.is_standby() => "standby".to_string(),
            Some(h) => format!("active (took over, generation {})", h.generation.load(Relaxed)),
        },
        "standby_held_back": s.standby_held_back.load(Relaxed),
        "switches": per_switch,
        "topology": api.apps.topology.as_ref().map(|t| t.snapshot().events),
        "paths": api.apps.paths.as_ref().map(|p| p.counters()),
    }))
}

/// Cluster mode: the members and who masters which switch (generation
/// ids included), as this member sees them; 404 when not in a cluster.
async fn cluster(State(api): State<Api>) -> Reply {
    let Some(m) = api.ctl.mastership() else {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            "this controller is not a cluster member (sdnlab controller --cluster ETCD --member NAME)".into(),
        ));
    };
    let masters: serde_json::Map<String, Value> = m
        .masters
        .iter()
        .map(|(d, (name, generation))| {
            let connected: Vec<&String> = m.connected.get(d).into_iter().flatten().collect();
            (
                format!("{d:016x}"),
                json!({"master": name, "generation_id": generation, "connected": connected}),
            )
        })
        .collect();
    ok(json!({
        "member": m.member,
        "members": m.members.keys().collect::<Vec<_>>(),
        "etcd_reachable": m.etcd_reachable,
        "masters": masters,
    }))
}

async fn not_found() -> ApiError {
    ApiError(
        StatusCode::NOT_FOUND,
        "no such resource: see /switches, /topology, /hosts, /paths, /stats, /cluster".into(),
    )
}

/// Serves the API on `addr` from a thread of its own, to whoever `access`
/// lets in (`rest_access`); returns the bound address.
pub fn serve(addr: SocketAddr, ctl: Handle, apps: AppSet, access: Access) -> std::io::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| std::io::Error::new(e.kind(), format!("REST API on {addr}: {e}")))?;
    // In a cluster, writes go through the shared state.
    ctl.share_state(&apps)?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let tls = access.tls.clone();
    let guard = std::sync::Arc::new(Guard { access, local });
    let app = Router::new()
        .route("/switches", get(switches))
        .route("/switches/{dpid}", get(one_switch))
        .route("/switches/{dpid}/ports", get(ports))
        .route("/switches/{dpid}/flows", get(flows).post(add_flow).delete(delete_flows))
        .route("/topology", get(topology))
        .route("/hosts", get(hosts))
        .route("/paths", get(list_paths).post(add_path))
        .route("/stats", get(stats))
        .route("/cluster", get(cluster))
        .fallback(not_found)
        .with_state(Api { ctl, apps })
        .layer(axum::middleware::from_fn_with_state(guard, crate::rest_access::guard));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new().name("ctl-rest".into()).spawn(move || {
        rt.block_on(async move {
            match (tokio::net::TcpListener::from_std(listener), tls) {
                (Ok(l), None) => {
                    if let Err(e) = axum::serve(l, app).await {
                        tracing::warn!("controller: REST API stopped: {e}");
                    }
                }
                (Ok(tcp), Some(cfg)) => match TlsListener::start(tcp, tokio_rustls::TlsAcceptor::from(cfg)) {
                    Ok(l) => {
                        if let Err(e) = axum::serve(l, app).await {
                            tracing::warn!("controller: REST API stopped: {e}");
                        }
                    }
                    Err(e) => tracing::info!("controller: REST API: {e}"),
                },
                (Err(e), _) => tracing::info!("controller: REST API: {e}"),
            }
        })
    })?;
    Ok(local)
}

//! What is checked on a running network: pings between every pair of
//! hosts, and iperf3's TCP and UDP runs (its server, its client, its
//! figures read from its JSON).

use super::*;

/// One ping result.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PingResult {
    pub from: String,
    pub to: String,
    pub sent: u32,
    pub received: u32,
    pub rtt_avg_ms: Option<f64>,
}

/// Pings every ordered pair of hosts (`count` pings each, 32 at a time,
/// each reply waited for at most a second).
pub async fn ping_all(st: &State, count: u32) -> Vec<PingResult> {
    ping_all_waiting(st, count, 1).await
}

/// [`ping_all`] waiting up to `wait_s` seconds for each reply: a first
/// packet that a busy switch or a reactive controller answers late still
/// counts, as with Mininet's `pingall` (whose ping waits up to 10 s). The
/// pairs are pinged side by side, so a pair that never answers costs one
/// wait, not one per pair.
pub async fn ping_all_waiting(st: &State, count: u32, wait_s: u32) -> Vec<PingResult> {
    let targets: Vec<(String, std::net::Ipv4Addr)> = st.hosts.iter().map(|h| (h.name.clone(), h.ip)).collect();
    ping_from(st, &targets, count, wait_s).await
}

/// Pings each of `targets` (name and address, here or on another machine
/// of a spread topology) from every host of this run but itself (`count`
/// pings each, 32 at a time, each reply waited for at most `wait_s` seconds).
pub async fn ping_from(
    st: &State,
    targets: &[(String, std::net::Ipv4Addr)],
    count: u32,
    wait_s: u32,
) -> Vec<PingResult> {
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(32));
    // Dropped (the call cancelled), the set aborts its tasks and each
    // task's ping is killed with it: none outlives its caller.
    let mut jobs = tokio::task::JoinSet::new();
    for a in &st.hosts {
        for (to, ip) in targets {
            if a.name == *to {
                continue;
            }
            let i = jobs.len();
            let (ns, from, to, ip, sem) = (a.netns.clone(), a.name.clone(), to.clone(), ip.to_string(), sem.clone());
            jobs.spawn(async move {
                let _permit = sem.acquire().await.expect("semaphore open");
                let mut ping = match nsexec::command(&ns, "ping") {
                    Ok(c) => tokio::process::Command::from(c),
                    // (The namespace gone: said as the pair's failure, no ping text.)
                    Err(_) => return (i, parse_ping(from, to, count, "")),
                };
                let out = ping
                    .args([
                        "-n",
                        "-q",
                        "-c",
                        &count.to_string(),
                        "-i",
                        "0.2",
                        "-W",
                        &wait_s.to_string(),
                        &ip,
                    ])
                    .kill_on_drop(true)
                    .output()
                    .await;
                let text = out
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default();
                (i, parse_ping(from, to, count, &text))
            });
        }
    }
    let mut out = Vec::new();
    while let Some(r) = jobs.join_next().await {
        if let Ok(r) = r {
            out.push(r);
        }
    }
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

pub(super) fn parse_ping(from: String, to: String, sent: u32, text: &str) -> PingResult {
    let received = text
        .lines()
        .find(|l| l.contains("received"))
        .and_then(|l| l.split(',').nth(1))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let rtt_avg_ms = text
        .lines()
        .find(|l| l.starts_with("rtt"))
        .and_then(|l| l.split('=').nth(1))
        .and_then(|v| v.trim().split('/').nth(1))
        .and_then(|v| v.parse().ok());
    PingResult {
        from,
        to,
        sent,
        received,
        rtt_avg_ms,
    }
}

/// What one iperf3 run measured.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct IperfResult {
    /// What the receiver got, bits per second.
    pub received_bps: f64,
    /// What the sender sent (TCP: acknowledged; UDP: offered), bits per second.
    pub sent_bps: f64,
    /// TCP retransmissions.
    pub retransmits: u64,
    /// UDP datagrams lost, as a share of those sent (0 to 1).
    pub lost: Option<f64>,
}

/// Runs iperf3 from host `client` to host `server` for `seconds`: TCP, or
/// UDP at `udp_rate` (iperf3's `-b`, e.g. `10M`).
/// `started` hears of each iperf3 process as it starts ("iperf3 server",
/// "iperf3 client" and their pids), for whoever watches the host.
pub async fn iperf(
    st: &State,
    client: &str,
    server: &str,
    seconds: u32,
    udp_rate: Option<&str>,
    started: &(dyn Fn(&str, u32) + Sync),
) -> Result<IperfResult, NetError> {
    let srv = st
        .hosts
        .iter()
        .find(|h| h.name == server)
        .ok_or_else(|| NetError::NotFound(format!("no host '{server}'")))?;
    let mut server_proc = iperf_server(st, server).await?;
    if let Some(pid) = server_proc.id() {
        started("iperf3 server", pid);
    }
    let out = iperf_client(st, client, srv.ip, seconds, udp_rate, started).await;
    let _ = server_proc.kill().await;
    out.map_err(|e| NetError::Tool {
        what: format!("iperf3 {client} -> {server}"),
        detail: e.to_string(),
    })
}

/// Starts a one-test iperf3 server (port 5201) on host `server` and gives
/// it the moment it takes to listen; it is killed when the handle is
/// dropped.
pub async fn iperf_server(st: &State, server: &str) -> Result<tokio::process::Child, NetError> {
    crate::install::need(&[crate::install::IPERF3])?;
    let child = tokio::process::Command::from(command_in(st, server, &["iperf3", "-s", "-1", "-p", "5201"])?)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(NetError::io("iperf3"))?;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    Ok(child)
}

/// Runs iperf3's client on host `client` against a server at `server_ip`
/// (on this machine or another) and reads its report.
pub async fn iperf_client(
    st: &State,
    client: &str,
    server_ip: std::net::Ipv4Addr,
    seconds: u32,
    udp_rate: Option<&str>,
    started: &(dyn Fn(&str, u32) + Sync),
) -> Result<IperfResult, NetError> {
    crate::install::need(&[crate::install::IPERF3])?;
    let ip = server_ip.to_string();
    let secs = seconds.to_string();
    let mut argv = vec!["iperf3", "-c", &ip, "-p", "5201", "-t", &secs, "-J"];
    if let Some(r) = udp_rate {
        argv.extend(["-u", "-b", r]);
    }
    let c = tokio::process::Command::from(command_in(st, client, &argv)?)
        .kill_on_drop(true)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(NetError::io("iperf3"))?;
    if let Some(pid) = c.id() {
        started("iperf3 client", pid);
    }
    let out = c.wait_with_output().await.map_err(NetError::io("iperf3"))?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|_| NetError::Tool {
        what: "iperf3".into(),
        detail: format!("failed: {}", String::from_utf8_lossy(&out.stderr).trim()),
    })?;
    iperf_figures(&v, udp_rate.is_some())
}

/// iperf3's JSON report (`-J`) read: TCP, or UDP (`udp`). Its own error,
/// or a report without the receiver's rate, is an error.
pub fn iperf_figures(v: &serde_json::Value, udp: bool) -> Result<IperfResult, NetError> {
    if let Some(e) = v["error"].as_str() {
        return Err(NetError::Tool {
            what: "iperf3".into(),
            detail: e.to_string(),
        });
    }
    let end = &v["end"];
    Ok(if udp {
        // iperf3 3.12 reports the receiver's view under "sum" for UDP;
        // newer ones also under "sum_received".
        let rx = if end["sum_received"].is_object() {
            &end["sum_received"]
        } else {
            &end["sum"]
        };
        IperfResult {
            received_bps: rx["bits_per_second"].as_f64().ok_or_else(|| NetError::Tool {
                what: "iperf3".into(),
                detail: "gave no UDP rate".into(),
            })?,
            sent_bps: end["sum_sent"]["bits_per_second"]
                .as_f64()
                .or(end["sum"]["bits_per_second"].as_f64())
                .unwrap_or(0.0),
            retransmits: 0,
            lost: end["sum"]["lost_percent"].as_f64().map(|p| p / 100.0),
        }
    } else {
        IperfResult {
            received_bps: end["sum_received"]["bits_per_second"]
                .as_f64()
                .ok_or_else(|| NetError::Tool {
                    what: "iperf3".into(),
                    detail: "gave no TCP rate".into(),
                })?,
            sent_bps: end["sum_sent"]["bits_per_second"].as_f64().unwrap_or(0.0),
            retransmits: end["sum_sent"]["retransmits"].as_u64().unwrap_or(0),
            lost: None,
        }
    })
}

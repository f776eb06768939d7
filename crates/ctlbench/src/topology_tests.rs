//! RFC 8456 tests that need a topology, on an emulated fabric
//! (`fabric`), read and driven through a northbound adapter (`northbound`).
//! Every test ends by itself: what did not happen within Td is reported as
//! such (a `None` figure and a note), never waited for.
//!
//! - Network Topology Discovery Time: from the first switch's connection
//!   to the moment the controller's view holds every link (both
//!   directions), polled every 10 ms.
//! - Reactive Path Provisioning Time and Rate: per destination, from the
//!   first frame sent to its arrival at the other host (the path set up
//!   on the way); the rate is destinations reached per second when every
//!   host sends to every other host's addresses at once.
//! - Proactive Path Provisioning Time and Rate: traffic already flowing
//!   (and dropped: the controller runs proactive-only), from the path
//!   request on the northbound API to the first frame's arrival; the rate
//!   is paths requested all at once over the time until every one carries
//!   traffic both ways.
//! - Network Topology Change Detection Time: a link (PORT_STATUS from both
//!   ends) or a switch (connection closed, neighbours' ports down) fails;
//!   time until the controller's view has dropped its links, and (the
//!   RFC's southbound definition) until the controller's next LLDP probe.
//! - Network Re-Provisioning Time: sequence-numbered traffic both ways
//!   between hosts on different leaves, the link the traffic uses fails;
//!   per direction the longest gap between arrivals and the frames lost.
//! - Forwarding Table Capacity (reactive): one host sends to ever more
//!   destinations; the flows its switch holds, until they stop growing.
//!
//! Hosts: emulated host `h` owns the MACs `host_mac(h, k)`; before the path
//! tests every host announces its MACs with a broadcast (`prepare`).

use crate::fabric::{Attach, Fabric, Spec};
use crate::northbound::Northbound;
use serde::Serialize;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize)]
pub struct Discovery {
    pub switches: usize,
    pub links_expected: usize,
    pub links_seen: usize,
    /// Seconds to a complete view; None when it did not converge within `td`.
    pub seconds: Option<f64>,
    pub connected: u64,
    pub adapter: &'static str,
    pub note: String,
}

/// Runs one discovery trial.
pub async fn discovery_time(spec: Spec, target: SocketAddr, version: u8, nb: &Northbound, td: Duration) -> Discovery {
    let opts = crate::fabric::Options {
        targets: vec![target],
        version,
        timeout: td,
        malformed_per_mille: 0,
        shard: None,
        reconnect: None,
    };
    discovery_time_with(spec, opts, nb, td).await
}

/// `discovery_time` with every fabric option.
pub async fn discovery_time_with(spec: Spec, opts: crate::fabric::Options, nb: &Northbound, td: Duration) -> Discovery {
    let start = Instant::now();
    let fabric = Fabric::start_with(spec, opts).await;
    let d = discovery_on(&fabric, start, nb, td).await;
    fabric.stop();
    d
}

/// Discovery on a fabric started at `start` (which the caller stops, after
/// reading what else it wants of the controller).
pub async fn discovery_on(fabric: &Fabric, start: Instant, nb: &Northbound, td: Duration) -> Discovery {
    let links_expected = fabric.spec.links.len() * 2;
    let connected = fabric.stats.connected.load(std::sync::atomic::Ordering::Relaxed);
    let (links_seen, seconds, note) = view_complete(nb, links_expected, start, td).await;
    Discovery {
        switches: fabric.spec.switches.len(),
        links_expected,
        links_seen,
        seconds,
        connected,
        adapter: nb.name(),
        note,
    }
}

/// Polls the controller's view every 10 ms until it holds `expected`
/// links or `td` has passed since `start`: the links it last held, the
/// seconds from `start` to a complete view (None: not within `td`), and
/// why not.
pub async fn view_complete(
    nb: &Northbound,
    expected: usize,
    start: Instant,
    td: Duration,
) -> (usize, Option<f64>, String) {
    let mut seen = 0;
    let mut last_error = String::new();
    let mut seconds = None;
    let mut blind = false;
    while start.elapsed() < td {
        match nb.links().await {
            Ok(Some(n)) => {
                seen = n;
                if n >= expected {
                    seconds = Some(start.elapsed().as_secs_f64());
                    break;
                }
            }
            Ok(None) => {
                blind = true;
                break;
            }
            Err(e) => last_error = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let note = if blind {
        "the northbound adapter cannot read the controller's view".to_string()
    } else if seconds.is_none() {
        let why = if last_error.is_empty() {
            String::new()
        } else {
            format!("; last error: {last_error}")
        };
        format!(
            "did not converge within {:.1} s ({seen} of {expected} links){why}",
            td.as_secs_f64()
        )
    } else {
        String::new()
    };
    (seen, seconds, note)
}

/// Reactive Path Provisioning Time (RFC 8456): the controller already knows
/// the fabric and the hosts; from the moment TP1 sends its first frame to a
/// destination to the moment that frame arrives at TP2 (the path being set
/// up on the way), per host pair.
#[derive(Clone, Debug, Serialize)]
pub struct Provisioning {
    pub pairs: usize,
    /// Per pair: seconds from send to arrival; None when it never arrived within `td`.
    pub seconds: Vec<Option<f64>>,
    pub note: String,
}

/// Address `k` of emulated host `h` (0-based): 02:5d:KK:KK:HH:HH with h + 1
/// (apart from the addresses cbench-style load and floods use, 02:00:...).
pub fn host_mac(h: usize, k: u16) -> [u8; 6] {
    let h = h as u16 + 1;
    [0x02, 0x5d, (k >> 8) as u8, k as u8, (h >> 8) as u8, h as u8]
}

/// An IPv4/UDP frame from `src` to `dst` carrying sequence number `seq`
/// (10.x.y.z addresses from the MACs' last three bytes).
pub fn frame(src: [u8; 6], dst: [u8; 6], seq: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(46);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 32, 0, 0, 0, 0, 64, 17, 0, 0, 10]);
    f.extend_from_slice(&src[3..6]);
    f.push(10);
    f.extend_from_slice(&dst[3..6]);
    f.extend_from_slice(&[0, 1, 0, 2, 0, 12, 0, 0]);
    f.extend_from_slice(&seq.to_be_bytes());
    f
}

fn mac_text(m: &[u8]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// The sequence number `frame` put in.
pub fn seq_of(f: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(f.get(42..46)?.try_into().ok()?))
}

/// A frame from host `from` (1-based, its first address) to `to`.
pub fn host_frame(from: u8, to: [u8; 6]) -> Vec<u8> {
    frame(host_mac(from as usize - 1, 0), to, 0)
}

/// Measures each ordered pair (host 0 -> host k) on a running fabric whose
/// hosts have announced themselves.
pub async fn reactive_provisioning(fabric: &Fabric, td: Duration) -> Provisioning {
    let n = fabric.spec.hosts.len();
    let mut seconds = Vec::new();
    for to in 1..n {
        for h in 0..n {
            fabric.take_received(h);
        }
        let sent = Instant::now();
        fabric.send_from_host(0, frame(host_mac(0, 0), host_mac(to, 0), 0));
        let mut got = None;
        while sent.elapsed() < td {
            if let Some((at, _)) = fabric.take_received(to).first() {
                got = Some(at.duration_since(sent).as_secs_f64());
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        seconds.push(got);
    }
    let missing = seconds.iter().filter(|s| s.is_none()).count();
    Provisioning {
        pairs: seconds.len(),
        note: if missing > 0 {
            format!(
                "{missing} first frame(s) did not arrive within {:.1} s",
                td.as_secs_f64()
            )
        } else {
            String::new()
        },
        seconds,
    }
}

/// Waits until the controller's view holds every link of the fabric (with
/// no northbound view: until an LLDP probe has come back from every link
/// end); returns the seconds it took.
pub async fn wait_for_view(fabric: &Fabric, nb: &Northbound, td: Duration) -> Result<f64, NotConverged> {
    let expected = fabric.spec.links.len() * 2;
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < td {
        match nb.links().await {
            Ok(Some(n)) if n >= expected => return Ok(start.elapsed().as_secs_f64()),
            Ok(Some(n)) => last = format!("{n} of {expected} links"),
            Ok(None) => {
                let probes = fabric.stats.lldp_packet_ins.load(std::sync::atomic::Ordering::Relaxed);
                if probes as usize >= expected {
                    return Ok(start.elapsed().as_secs_f64());
                }
                last = format!("{probes} of {expected} link ends probed (no northbound view)");
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(NotConverged {
        td_s: td.as_secs_f64(),
        last,
    })
}

/// The controller's view did not hold every link of the fabric within Td;
/// what it held last.
#[derive(Debug, thiserror::Error)]
#[error("the controller's view did not converge within {td_s:.1} s ({last})")]
pub struct NotConverged {
    pub td_s: f64,
    pub last: String,
}

/// Gets a fabric ready for the path tests: the view complete, edge ports
/// settled (controllers wait a probe interval before trusting unlinked
/// ports), and every host's `macs` addresses announced by a broadcast each.
pub async fn prepare(fabric: &Fabric, nb: &Northbound, td: Duration, macs: u16) -> Result<(), NotConverged> {
    wait_for_view(fabric, nb, td).await?;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    announce(fabric, 0..macs).await;
    Ok(())
}

/// Every host announces its addresses `ks` (a broadcast each), then what
/// the hosts received is discarded.
pub async fn announce(fabric: &Fabric, ks: std::ops::Range<u16>) {
    let n = fabric.spec.hosts.len();
    for k in ks.clone() {
        for h in 0..n {
            fabric.send_from_host(h, frame(host_mac(h, k), [0xff; 6], 0));
        }
        if k % 64 == 63 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(300 + ks.len() as u64 * n as u64 / 20)).await;
    for h in 0..n {
        fabric.take_received(h);
    }
}

/// A provisioning rate: how many paths, how many carried traffic, in how long.
#[derive(Clone, Debug, Serialize)]
pub struct Rate {
    pub paths: usize,
    pub reached: usize,
    /// From the start to the last path carrying traffic.
    pub seconds: f64,
    pub per_second: f64,
    pub note: String,
}

impl Rate {
    fn new(paths: usize, reached: usize, seconds: f64, td: Duration) -> Rate {
        let note = if reached < paths {
            format!(
                "{} of {paths} paths carried no traffic within {:.1} s",
                paths - reached,
                td.as_secs_f64()
            )
        } else {
            String::new()
        };
        Rate {
            paths,
            reached,
            seconds,
            per_second: if seconds > 0.0 { reached as f64 / seconds } else { 0.0 },
            note,
        }
    }
}

/// Reactive Path Provisioning Rate: every host sends one frame to each of
/// the other hosts' `macs` addresses at once; destinations reached per
/// second, up to the last arrival.
pub async fn reactive_rate(fabric: &Fabric, macs: u16, td: Duration) -> Rate {
    let n = fabric.spec.hosts.len();
    let mut wanted = std::collections::HashSet::new();
    let start = Instant::now();
    for k in 0..macs {
        for from in 0..n {
            for to in (0..n).filter(|&t| t != from) {
                fabric.send_from_host(from, frame(host_mac(from, 0), host_mac(to, k), 0));
                wanted.insert((from, to, k));
            }
        }
    }
    let paths = wanted.len();
    let mut last = start;
    while !wanted.is_empty() && start.elapsed() < td {
        tokio::time::sleep(Duration::from_millis(1)).await;
        for to in 0..n {
            for (at, f) in fabric.take_received(to) {
                let k = u16::from_be_bytes([f[2], f[3]]);
                let from = u16::from_be_bytes([f[10], f[11]]) as usize;
                if from >= 1 && wanted.remove(&(from - 1, to, k)) {
                    last = last.max(at);
                }
            }
        }
    }
    Rate::new(
        paths,
        paths - wanted.len(),
        last.duration_since(start).as_secs_f64(),
        td,
    )
}

/// Proactive Path Provisioning Time: for each host k > 0, host 0 already
/// sends to it every millisecond (dropped: no path yet); from the path
/// request (both ways) to the first frame's arrival at host k.
pub async fn proactive_provisioning(fabric: &Fabric, nb: &Northbound, td: Duration) -> Provisioning {
    let n = fabric.spec.hosts.len();
    let mut seconds = Vec::new();
    let mut notes = Vec::new();
    for to in 1..n {
        let (a, b) = (host_mac(0, 0), host_mac(to, 0));
        let stream = || frame(a, b, 0);
        for _ in 0..20 {
            fabric.send_from_host(0, stream());
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if let Some((_, f)) = fabric.take_received(to).first() {
            notes.push(format!(
                "host {} got traffic before its path was requested (a frame from {} to {}): the controller \
                 forwards reactively (run it proactive-only)",
                to + 1,
                mac_text(&f[6..12]),
                mac_text(&f[0..6])
            ));
            seconds.push(None);
            continue;
        }
        let asked = Instant::now();
        match nb.provision(a, fabric.spec.hosts[0], b, fabric.spec.hosts[to]).await {
            Ok(true) => {}
            Ok(false) => {
                notes.push(format!("the northbound adapter ({}) cannot request paths", nb.name()));
                seconds.push(None);
                break;
            }
            Err(e) => {
                notes.push(format!("path to host {}: {e}", to + 1));
                seconds.push(None);
                continue;
            }
        }
        let mut got = None;
        while got.is_none() && asked.elapsed() < td {
            fabric.send_from_host(0, stream());
            tokio::time::sleep(Duration::from_millis(1)).await;
            got = fabric
                .take_received(to)
                .first()
                .map(|(at, _)| at.duration_since(asked).as_secs_f64());
        }
        if got.is_none() {
            notes.push(format!(
                "host {}: no frame within {:.1} s of the request",
                to + 1,
                td.as_secs_f64()
            ));
        }
        seconds.push(got);
    }
    Provisioning {
        pairs: seconds.len(),
        seconds,
        note: notes.join("; "),
    }
}

/// Proactive Path Provisioning Rate: paths between host 0's and every other
/// host's addresses k < `macs`, all requested at once (up to 16 requests in
/// flight); per second, up to the moment the last one carried a frame each way.
pub async fn proactive_rate(fabric: &Fabric, nb: &Northbound, macs: u16, td: Duration) -> Rate {
    use std::sync::Arc;
    let n = fabric.spec.hosts.len();
    let pairs: Vec<(usize, u16)> = (1..n).flat_map(|to| (0..macs).map(move |k| (to, k))).collect();
    let start = Instant::now();
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let answered = Arc::new(std::sync::Mutex::new(Vec::<(usize, u16)>::new()));
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut requests = Vec::new();
    for _ in 0..16 {
        let (nb, pairs, next, failures, answered) = (
            nb.clone(),
            pairs.clone(),
            next.clone(),
            failures.clone(),
            answered.clone(),
        );
        let (at0, hosts) = (fabric.spec.hosts[0], fabric.spec.hosts.clone());
        requests.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(to, k)) = pairs.get(i) else { break };
                match nb.provision(host_mac(0, k), at0, host_mac(to, k), hosts[to]).await {
                    Ok(true) => answered.lock().unwrap().push((to, k)),
                    Ok(false) => {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("{} cannot request paths", nb.name()));
                        break;
                    }
                    Err(e) => failures.lock().unwrap().push(e.to_string()),
                }
            }
        }));
    }
    // Both directions of every answered pair, probed every 10 ms until each has arrived
    // (probing only answered pairs keeps the controller's PACKET_IN load small).
    let mut wanted: std::collections::HashSet<(usize, usize, u16)> =
        pairs.iter().flat_map(|&(to, k)| [(0, to, k), (to, 0, k)]).collect();
    let mut probing = std::collections::HashSet::new();
    let mut last = start;
    while !wanted.is_empty() && start.elapsed() < td {
        for (to, k) in answered.lock().unwrap().drain(..) {
            probing.insert((0, to, k));
            probing.insert((to, 0, k));
        }
        probing.retain(|p| wanted.contains(p));
        if probing.is_empty() && requests.iter().all(|r| r.is_finished()) && answered.lock().unwrap().is_empty() {
            break;
        }
        for &(from, to, k) in &probing {
            fabric.send_from_host(from, frame(host_mac(from, k), host_mac(to, k), 0));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        for to in 0..n {
            for (at, f) in fabric.take_received(to) {
                let k = u16::from_be_bytes([f[8], f[9]]);
                let from = u16::from_be_bytes([f[10], f[11]]) as usize;
                if from >= 1 && wanted.remove(&(from - 1, to, k)) {
                    last = last.max(at);
                }
            }
        }
    }
    for r in requests {
        let _ = r.await;
    }
    let reached = pairs
        .iter()
        .filter(|&&(to, k)| !wanted.contains(&(0, to, k)) && !wanted.contains(&(to, 0, k)))
        .count();
    let mut rate = Rate::new(pairs.len(), reached, last.duration_since(start).as_secs_f64(), td);
    let failures = failures.lock().unwrap();
    if let Some(first) = failures.first() {
        rate.note = format!(
            "{} request(s) failed, the first: {first}. {}",
            failures.len(),
            rate.note
        );
    }
    rate
}

/// What fails in a topology change test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Failure {
    /// The first link of the fabric (PORT_STATUS down from both ends).
    Link,
    /// The first switch (a spine in a leaf-spine): connection closed, neighbours' ports down.
    Switch,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChangeDetection {
    pub failure: Failure,
    pub links_before: usize,
    pub links_after: usize,
    /// Until the controller's view lost the failed links; None if it did not within Td.
    pub view_s: Option<f64>,
    /// Until the controller's next LLDP probe left a switch (the RFC's southbound mark).
    pub first_probe_s: Option<f64>,
    pub note: String,
}

/// What the change-detection test does to a fabric, wherever its switches
/// run: on this machine ([`Fabric`]) or in parts on several.
#[allow(async_fn_in_trait)] // (used with concrete types only, never as dyn)
pub trait Failures {
    /// Why a failure could not be made or read (a fabric spread over
    /// workers loses one; a fabric in this process cannot fail to).
    type Error: std::fmt::Display;
    fn spec(&self) -> &Spec;
    /// Takes the link at `a` down on both ends (PORT_STATUS from both switches).
    async fn link_down(&self, a: Attach) -> Result<(), Self::Error>;
    /// Switch `dpid` fails as if powered off: its OpenFlow connection
    /// closes and its neighbours' ports go down.
    async fn switch_off(&self, dpid: u64) -> Result<(), Self::Error>;
    /// When the latest LLDP frame left any switch's port, unix ns on this
    /// machine's clock (0: none yet).
    async fn last_probe_ns(&self) -> Result<u64, Self::Error>;
}

impl Failures for Fabric {
    type Error = std::convert::Infallible;
    fn spec(&self) -> &Spec {
        &self.spec
    }
    async fn link_down(&self, a: Attach) -> Result<(), Self::Error> {
        self.set_link(a, false);
        Ok(())
    }
    async fn switch_off(&self, dpid: u64) -> Result<(), Self::Error> {
        self.disconnect(dpid);
        Ok(())
    }
    async fn last_probe_ns(&self) -> Result<u64, Self::Error> {
        Ok(self.stats.last_lldp_out_ns.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// Network Topology Change Detection Time on a fabric whose view is complete.
pub async fn change_detection(
    fabric: &impl Failures,
    nb: &Northbound,
    failure: Failure,
    td: Duration,
) -> ChangeDetection {
    let spec = fabric.spec();
    let before = spec.links.len() * 2;
    let lost = match failure {
        Failure::Link => 2,
        Failure::Switch => {
            let dpid = spec.switches[0].0;
            2 * spec.links.iter().filter(|(a, b)| a.0 == dpid || b.0 == dpid).count()
        }
    };
    let mut result = ChangeDetection {
        failure,
        links_before: before,
        links_after: before,
        view_s: None,
        first_probe_s: None,
        note: String::new(),
    };
    let at_ns = crate::fabric::unix_ns();
    let at = Instant::now();
    let failed = match failure {
        Failure::Link => fabric.link_down(spec.links[0].0).await,
        Failure::Switch => fabric.switch_off(spec.switches[0].0).await,
    };
    if let Err(e) = failed {
        result.note = format!("the failure could not be made: {e}");
        return result;
    }
    let mut last_error = String::new();
    while at.elapsed() < td && (result.view_s.is_none() || result.first_probe_s.is_none()) {
        if result.first_probe_s.is_none() {
            match fabric.last_probe_ns().await {
                Ok(probe) if probe > at_ns => result.first_probe_s = Some((probe - at_ns) as f64 / 1e9),
                Ok(_) => {}
                Err(e) => last_error = e.to_string(),
            }
        }
        if result.view_s.is_none() {
            match nb.links().await {
                Ok(Some(n)) => {
                    result.links_after = n;
                    if n + lost <= before {
                        result.view_s = Some(at.elapsed().as_secs_f64());
                    }
                }
                Ok(None) => result.note = "no northbound view: only the southbound mark is measured".into(),
                Err(e) => last_error = e.to_string(),
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if result.view_s.is_none() && result.note.is_empty() {
        result.note = format!(
            "the view still held {} of the {before} links ({lost} should have gone) after {:.1} s{}",
            result.links_after,
            td.as_secs_f64(),
            if last_error.is_empty() {
                String::new()
            } else {
                format!("; last error: {last_error}")
            }
        );
    }
    result
}

/// One direction of the re-provisioning test.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Direction {
    pub sent: u32,
    pub received: u32,
    pub lost: u32,
    /// Longest time between two arrivals, seconds.
    pub gap_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Reprovisioning {
    /// The link that failed (the one host 0's traffic left its switch by).
    pub failed: Attach,
    pub forward: Direction,
    pub reverse: Direction,
    pub note: String,
}

/// Network Re-Provisioning Time: host 0 and the last host (on different
/// switches, with redundant paths between them) exchange sequence-numbered
/// frames every `interval` for `duration`; after 40 % of it the link host
/// 0's frames leave its switch by fails. Counts are read after the traffic
/// has stopped and a further 200 ms.
pub async fn reprovisioning(fabric: &Fabric, interval: Duration, duration: Duration) -> Reprovisioning {
    let n = fabric.spec.hosts.len();
    let (a, b) = (0, n - 1);
    let (ma, mb) = (host_mac(a, 0), host_mac(b, 0));
    for h in 0..n {
        fabric.take_received(h);
    }
    let start = Instant::now();
    let fail_at = duration.mul_f64(0.4);
    let mut failed = None;
    let mut seq = 0u32;
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    while start.elapsed() < duration {
        tick.tick().await;
        fabric.send_from_host(a, frame(ma, mb, seq));
        fabric.send_from_host(b, frame(mb, ma, seq));
        seq += 1;
        if failed.is_none() && start.elapsed() >= fail_at {
            let sw = fabric.spec.hosts[a].0;
            let busiest = fabric
                .spec
                .links
                .iter()
                .flat_map(|&(x, y)| [x, y])
                .filter(|e| e.0 == sw)
                .max_by_key(|&e| fabric.stats.frames_out_of(e));
            if let Some(e) = busiest {
                fabric.set_link(e, false);
            }
            failed = Some(busiest);
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let direction = |got: Vec<(Instant, Vec<u8>)>| {
        let mut seen = std::collections::HashSet::new();
        let mut gap = Duration::ZERO;
        for w in got.windows(2) {
            gap = gap.max(w[1].0.duration_since(w[0].0));
        }
        for (_, f) in &got {
            if let Some(s) = seq_of(f) {
                seen.insert(s);
            }
        }
        Direction {
            sent: seq,
            received: seen.len() as u32,
            lost: seq.saturating_sub(seen.len() as u32),
            gap_s: gap.as_secs_f64(),
        }
    };
    let forward = direction(fabric.take_received(b));
    let reverse = direction(fabric.take_received(a));
    let failed = failed.flatten();
    let note = match failed {
        None => "host 0's switch has no link to fail".to_string(),
        Some(_) if forward.received == 0 || reverse.received == 0 => {
            "no traffic arrived in one direction at all: the path was never provisioned".to_string()
        }
        Some(_) => String::new(),
    };
    Reprovisioning {
        failed: failed.unwrap_or((0, 0)),
        forward,
        reverse,
        note,
    }
}

/// Switch `sw`'s flow count once it has settled after a step: steady for
/// three reads 100 ms apart after it first grew past `before`, or 5 s
/// without growing at all (slow controllers start late), or Td from `start`.
async fn settled_flows(fabric: &Fabric, sw: u64, before: u64, start: Instant, td: Duration) -> u64 {
    let step_start = Instant::now();
    let mut now = fabric.stats.flows_of(sw);
    let mut steady = 0;
    while start.elapsed() < td {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let f = fabric.stats.flows_of(sw);
        steady = if f == now { steady + 1 } else { 0 };
        now = f;
        let grew = now > before;
        if (grew && steady >= 3) || (!grew && step_start.elapsed() > Duration::from_secs(5)) {
            break;
        }
    }
    now
}

#[derive(Clone, Debug, Serialize)]
pub struct TableCapacity {
    /// Destinations host 0 sent to.
    pub destinations: usize,
    /// The most flows host 0's switch held.
    pub flows: u64,
    pub note: String,
}

/// Grows host 0's switch's table `step` destinations (the last host's
/// addresses) at a time: each step announces them, then `fill` makes the
/// controller install flows for them (an error ends the test); once the
/// flow count has settled it is recorded. Stops when a step adds less than
/// a tenth of `step` flows (the controller stopped installing), at Td, or
/// at `max`.
async fn grow_table(
    fabric: &Fabric,
    step: u16,
    max: u16,
    td: Duration,
    mut fill: impl AsyncFnMut(std::ops::Range<u16>) -> Option<String>,
) -> TableCapacity {
    let n = fabric.spec.hosts.len();
    let sw = fabric.spec.hosts[0].0;
    let start = Instant::now();
    let mut growth = crate::method::TableGrowth::new(step.into(), max.into(), td, fabric.stats.flows_of(sw));
    while let Some(batch) = growth.next_step() {
        // Within u16: `max` is.
        let batch = batch.start as u16..batch.end as u16;
        // The controller must know the addresses before it can route to them.
        announce(fabric, batch.clone()).await;
        let failure = fill(batch).await;
        let now = settled_flows(fabric, sw, growth.flows(), start, td).await;
        growth.record(now, failure, start.elapsed());
    }
    for h in 0..n {
        fabric.take_received(h);
    }
    TableCapacity {
        destinations: growth.destinations() as usize,
        flows: growth.flows(),
        note: growth.note(),
    }
}

/// Forwarding Table Capacity (reactive): host 0 sends a frame to each new
/// destination (`grow_table`).
pub async fn table_capacity(fabric: &Fabric, step: u16, max: u16, td: Duration) -> TableCapacity {
    let b = fabric.spec.hosts.len() - 1;
    grow_table(fabric, step, max, td, async |ks: std::ops::Range<u16>| {
        for k in ks {
            fabric.send_from_host(0, frame(host_mac(0, 0), host_mac(b, k), 0));
            if k % 64 == 63 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        None
    })
    .await
}

/// Forwarding Table Capacity (proactive): a path from host 0 to each new
/// destination is requested on the northbound API, 16 requests in flight
/// (`grow_table`); failed requests end the test.
pub async fn table_capacity_proactive(
    fabric: &Fabric,
    nb: &Northbound,
    step: u16,
    max: u16,
    td: Duration,
) -> TableCapacity {
    let b = fabric.spec.hosts.len() - 1;
    let (at_a, at_b) = (fabric.spec.hosts[0], fabric.spec.hosts[b]);
    grow_table(fabric, step, max, td, async |ks: std::ops::Range<u16>| {
        let upto = ks.end;
        let next = std::sync::Arc::new(std::sync::atomic::AtomicU16::new(ks.start));
        let mut requests = Vec::new();
        for _ in 0..16 {
            let (nb, next) = (nb.clone(), next.clone());
            requests.push(tokio::spawn(async move {
                let mut first_error = None;
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if k >= upto {
                        break;
                    }
                    match nb.provision(host_mac(0, k), at_a, host_mac(b, k), at_b).await {
                        Ok(true) => {}
                        Ok(false) => return Some(format!("{} cannot request paths", nb.name())),
                        Err(e) => {
                            first_error.get_or_insert(e.to_string());
                        }
                    }
                }
                first_error
            }));
        }
        let mut failure = None;
        for r in requests {
            if let Ok(Some(e)) = r.await {
                failure.get_or_insert(e);
            }
        }
        failure
    })
    .await
}

#[derive(Clone, Debug, Serialize)]
pub struct Failover {
    pub sent: u32,
    pub received: u32,
    /// Frames that never arrived (each needed a controller).
    pub lost: u32,
    /// Frames that arrived more than once (both controllers acting at once).
    pub duplicates: u32,
    /// Longest time between two arrivals around the failure, seconds; None
    /// when nothing arrived after it.
    pub gap_s: Option<f64>,
    /// From the kill to the first frame after it, seconds.
    pub takeover_s: Option<f64>,
    pub note: String,
}

/// A destination no host owns: a frame to it is delivered only by the
/// controller flooding it (a PACKET_IN and PACKET_OUTs per frame).
fn unknown_mac(seq: u32) -> [u8; 6] {
    let b = seq.to_be_bytes();
    [0x02, 0xfe, b[0], b[1], b[2], b[3]]
}

/// Controller Failover Time (RFC 8456, cluster mode): host 0 sends a frame
/// every `interval` for `duration`, each to a new address no host owns, so
/// every frame needs the active controller to reach the last host (by
/// flooding); after 40 % of `duration`, `kill` ends the active controller.
/// The gap is the longest time between arrivals at the last host; the
/// takeover time runs from the kill to the first arrival of a frame sent
/// after it.
pub async fn failover(
    fabric: &Fabric,
    kill: Box<dyn FnOnce() + Send>,
    interval: Duration,
    duration: Duration,
) -> Failover {
    let n = fabric.spec.hosts.len();
    let last = n - 1;
    for h in 0..n {
        fabric.take_received(h);
    }
    let start = Instant::now();
    let kill_at = duration.mul_f64(0.4);
    let mut kill = Some(kill);
    let mut killed_at = None;
    let mut killed_seq = u32::MAX;
    let mut seq = 0u32;
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    while start.elapsed() < duration {
        tick.tick().await;
        fabric.send_from_host(0, frame(host_mac(0, 0), unknown_mac(seq), seq));
        seq += 1;
        if killed_at.is_none() && start.elapsed() >= kill_at {
            if let Some(k) = kill.take() {
                // The kill may block (it waits for the process): off the runtime's threads.
                let _ = tokio::task::spawn_blocking(k).await;
            }
            killed_at = Some(Instant::now());
            killed_seq = seq;
        }
    }
    let test_frame = |f: &[u8]| f.get(0..2) == Some(&[0x02, 0xfe][..]);
    let all_in = |got: &[(Instant, Vec<u8>)]| {
        let seen: std::collections::HashSet<u32> = got
            .iter()
            .filter(|g| test_frame(&g.1))
            .filter_map(|g| seq_of(&g.1))
            .collect();
        seen.len() as u32 >= seq
    };
    let got: Vec<(Instant, u32)> = fabric
        .take_received_settled(last, all_in, Duration::from_millis(300), Duration::from_secs(2))
        .await
        .into_iter()
        .filter(|(_, f)| test_frame(f))
        .filter_map(|(at, f)| Some((at, seq_of(&f)?)))
        .collect();
    let seen: std::collections::HashSet<u32> = got.iter().map(|g| g.1).collect();
    let killed_at = killed_at.unwrap_or(start);
    // Only a frame sent after the kill shows a controller took over: one the
    // dead controller sent on its way just before may still arrive after it.
    let first_after = got.iter().filter(|g| g.1 >= killed_seq).map(|g| g.0).min();
    let mut gap = Duration::ZERO;
    for w in got.windows(2) {
        gap = gap.max(w[1].0.duration_since(w[0].0));
    }
    let before = got.iter().filter(|g| g.0 <= killed_at).count();
    let note = if before == 0 {
        "nothing arrived before the failure: the active controller never flooded the test frames".to_string()
    } else if first_after.is_none() {
        format!(
            "nothing arrived in the {:.1} s after the active controller was killed: no standby took over",
            (duration - kill_at).as_secs_f64()
        )
    } else {
        String::new()
    };
    Failover {
        sent: seq,
        received: seen.len() as u32,
        lost: seq.saturating_sub(seen.len() as u32),
        duplicates: (got.len() - seen.len()) as u32,
        gap_s: first_after.map(|_| gap.as_secs_f64()),
        takeover_s: first_after.map(|at| at.duration_since(killed_at).as_secs_f64()),
        note,
    }
}

//! A load switch's way in: its TCP connection to each controller member,
//! its handshake, and its hand-over to an event loop.

use super::*;

/// Connects switch `idx` to every controller (`Config::addresses`) and
/// completes each handshake (on the caller's runtime; role requests that
/// come during one are answered by the switch's roles), then gives it to
/// its event loop. A switch that cannot connect to each, finish each
/// handshake or reach its loop counts as lost.
pub(crate) async fn connect(
    idx: usize,
    cfg: Arc<Config>,
    counters: Arc<SwitchCounters>,
    shared: Arc<Shared>,
    door: Option<Door>,
) {
    let lost = || {
        shared.lost.fetch_add(1, Ordering::Relaxed);
    };
    let id = switch::Identity {
        datapath_id: cfg.first_dpid.wrapping_add(idx as u64),
        ports: cfg.ports,
    };
    let mut roles = (cfg.version != OFP10_VERSION).then(|| Roles::new(0));
    let mut sessions = Vec::new();
    for (k, addr) in cfg.addresses().into_iter().enumerate() {
        let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
            return lost();
        };
        let _ = s.set_nodelay(true);
        let mut framer = Framer::default();
        if let Some(r) = roles.as_mut() {
            r.add_connection();
        }
        let answered = handshake_with(&mut s, &mut framer, cfg.version, |m| {
            if let Some(r) = roles.as_mut() {
                match r.on_message(k, m) {
                    Verdict::Answer(a) => return vec![a],
                    Verdict::Taken => return Vec::new(),
                    Verdict::Pass => {}
                }
            }
            switch::replies(id, m)
        })
        .await;
        if answered.is_err() {
            return lost();
        }
        // Still non-blocking, as the event loop wants it.
        let Ok(stream) = s.into_std() else {
            return lost();
        };
        sessions.push((stream, framer));
    }
    counters.established.store(true, Ordering::Relaxed);
    let Some(door) = door else {
        return lost();
    };
    let given = door.add(Established {
        idx,
        sessions,
        roles,
        counters,
    });
    if given.is_err() {
        lost();
    }
}

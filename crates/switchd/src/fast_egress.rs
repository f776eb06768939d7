//! Keeps the fast path's DEVMAP to the ports that can take frames
//! redirected into them right now. A veth can only while its peer has GRO
//! on or an XDP program, which the peer's owner may change at any time;
//! a redirect into one that cannot is dropped by the kernel without a
//! trace the switch could tell apart from overload. So the control thread
//! asks the kernel (`packetio::netdev`) whenever the kernel announces a
//! change to one of the ports, and again now and then in case an
//! announcement was missed, and takes a port that cannot out of the
//! DEVMAP: the program then hands its held flows' frames to user space,
//! which forwards them through the port's socket.

use packetio::fastpath::FastPath;
use packetio::netdev::{Heard, NetdevQuery, NetdevWatch, XDP_ACT_NDO_XMIT};

struct Egress {
    port_no: u32,
    ifindex: u32,
    name: String,
    /// In the DEVMAP now (None: not decided yet).
    in_devmap: Option<bool>,
}

pub struct FastEgress {
    /// None: the kernel cannot tell (before 6.3); every port is taken to
    /// be able, as the switch did before it could ask.
    query: Option<NetdevQuery>,
    /// The kernel's change announcements, until the control loop takes it.
    watch: Option<NetdevWatch>,
    ports: Vec<Egress>,
}

impl FastEgress {
    /// The fast path's ports as (port number, interface index, name).
    pub fn new(ports: Vec<(u32, u32, String)>) -> FastEgress {
        let query = match NetdevQuery::open() {
            Ok(q) => Some(q),
            Err(e) => {
                tracing::warn!(
                    "sdnlab switch: cannot ask the kernel which ports take redirected XDP frames ({e}); \
                     the fast path sends to every AF_XDP port, and a veth whose peer has neither GRO \
                     nor an XDP program drops what it gets"
                );
                None
            }
        };
        let watch = query.as_ref().and_then(|q| match q.watch() {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(
                    "sdnlab switch: cannot hear the kernel's interface announcements ({e}); the fast \
                     path's ports are checked on every recheck only"
                );
                None
            }
        });
        FastEgress {
            query,
            watch,
            ports: ports
                .into_iter()
                .map(|(port_no, ifindex, name)| Egress {
                    port_no,
                    ifindex,
                    name,
                    in_devmap: None,
                })
                .collect(),
        }
    }

    /// The socket the kernel announces interface changes on, for the
    /// caller to wait on (then `heard`).
    pub fn take_watch(&mut self) -> Option<NetdevWatch> {
        self.watch.take()
    }

    /// The watch heard `heard`: refreshes if it concerns a port.
    pub fn heard(&mut self, fp: &FastPath, heard: &Heard) {
        if heard.lost || self.ports.iter().any(|p| heard.ifindexes.contains(&p.ifindex)) {
            self.refresh(fp);
        }
    }

    /// Puts each port that can take redirected frames in the DEVMAP and
    /// takes out each that cannot; says so when a port changes.
    pub fn refresh(&mut self, fp: &FastPath) {
        for p in &mut self.ports {
            let able = match &mut self.query {
                None => true,
                Some(q) => match q.xdp_features(p.ifindex) {
                    Ok(f) => f & XDP_ACT_NDO_XMIT != 0,
                    // Gone or unreadable for now: leave it as it is (a
                    // port not yet decided goes in, as before).
                    Err(_) => p.in_devmap.unwrap_or(true),
                },
            };
            if p.in_devmap == Some(able) {
                continue;
            }
            let done = if able {
                fp.set_port(p.port_no, p.ifindex)
            } else {
                fp.clear_port(p.port_no)
            };
            if let Err(e) = done {
                tracing::info!("sdnlab switch: port {} ({}): fast path: {e}", p.port_no, p.name);
                continue;
            }
            match (p.in_devmap, able) {
                (_, false) => tracing::warn!(
                    "sdnlab switch: port {} ({}) cannot take frames redirected into it (a veth needs \
                     GRO on or an XDP program at its peer); the fast path leaves flows out of it to \
                     user space until it can",
                    p.port_no,
                    p.name
                ),
                (Some(false), true) => tracing::info!(
                    "sdnlab switch: port {} ({}) takes redirected frames again; back in the fast path",
                    p.port_no,
                    p.name
                ),
                _ => {}
            }
            p.in_devmap = Some(able);
        }
    }
}

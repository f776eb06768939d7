//! Admission of the connections a listener accepts (the switch's, the
//! controller's), without I/O (but for reading the open-file limit):
//! how many it holds at once, in all and from one source address. A
//! connection that has not finished its handshake is the first to go: when
//! a limit is reached, the newcomer takes the place of the oldest such
//! connection (of the same source when that source is over its own limit),
//! so a flood of half-open connections cannot lock out `ovs-ofctl` or a
//! controller; when every connection held has finished its handshake, the
//! newcomer is refused. A connection is only evicted once it has been in
//! its handshake for `EVICTABLE_AFTER`: one whose handshake is under way
//! (its last answer in flight) is not cut off for a newcomer, while a
//! flood's silent connections soon age past it. Connections a switch makes
//! to its controllers are not counted: they are configured, not offered.

use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How long a connection must have been in its handshake before a newcomer
/// may take its place: longer than a handshake's few round trips take on
/// any sane network, much shorter than a flood's connections wait.
pub const EVICTABLE_AFTER: Duration = Duration::from_millis(250);

/// How many connections the listeners hold at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub total: usize,
    pub per_source: usize,
}

impl Limits {
    /// File descriptors left for everything else (ports, controllers,
    /// files, the REST API) when the limit comes from the process's
    /// open-file limit: an eighth of it, between 16 and 128.
    pub fn reserve(nofile: u64) -> usize {
        (nofile as usize / 8).clamp(16, 128)
    }

    /// From the open-file limit (`RLIMIT_NOFILE`'s soft value): all but
    /// the reserve in all, a quarter of them from one source.
    pub fn for_open_files(nofile: u64) -> Limits {
        let total = (nofile as usize)
            .saturating_sub(Self::reserve(nofile))
            .clamp(16, 1 << 20);
        Limits {
            total,
            per_source: (total / 4).max(8),
        }
    }
}

/// The process's open-file limit (the soft one), or 1024 if it cannot be read.
pub fn open_file_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
        // rlim_t is 32 bits on 32-bit targets (armv7 routers).
        #[allow(clippy::useless_conversion)]
        u64::from(r.rlim_cur)
    } else {
        1024
    }
}

/// What to do with a new connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit<H> {
    /// Hold it as `id`, after closing the connection whose handle is
    /// `evict`, if given.
    Accept { id: u64, evict: Option<H> },
    /// Close it: every connection held has finished its handshake.
    Refuse,
}

#[derive(Debug)]
struct Conn<H> {
    id: u64,
    source: IpAddr,
    since: Instant,
    /// What closes it early (the caller's: a notification, a channel).
    handle: H,
    /// Its handshake is done.
    established: bool,
    /// When it last did something besides keeping alive (established
    /// connections; see [`Admission::evict_idle`]).
    active: Instant,
}

/// The connections held, each with the handle that closes it early (`H`).
#[derive(Debug)]
pub struct Admission<H> {
    limits: Limits,
    next: u64,
    conns: Vec<Conn<H>>,
    idle_after: Option<Duration>,
}

impl<H> Admission<H> {
    pub fn new(limits: Limits) -> Admission<H> {
        Admission {
            limits,
            next: 0,
            conns: Vec::new(),
            idle_after: None,
        }
    }

    /// When the listener is full of established connections, a newcomer
    /// takes the place of the one idle longest (at least `after`: nothing
    /// but echoes), of its own source if that source is over its limit,
    /// else of the source holding the most: a crowd of idle sessions
    /// cannot keep an operator's tool out. Off by default (a controller's
    /// switches may be quiet for long and are not to be cut off).
    pub fn evict_idle(mut self, after: Duration) -> Admission<H> {
        self.idle_after = Some(after);
        self
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Connections held now.
    pub fn held(&self) -> usize {
        self.conns.len()
    }

    /// A connection from `source` arrives, with the handle that closes it
    /// early; an evicted connection's handle comes back to be used.
    pub fn admit(&mut self, source: IpAddr, now: Instant, handle: H) -> Admit<H> {
        let from_source = self.conns.iter().filter(|c| c.source == source).count();
        let source_full = from_source >= self.limits.per_source;
        let full = self.conns.len() >= self.limits.total;
        let evict = if source_full || full {
            // The oldest connection still in its handshake (and long
            // enough), of this source if it is the one over its limit.
            let victim = self
                .conns
                .iter()
                .enumerate()
                .filter(|(_, c)| {
                    !c.established
                        && now.saturating_duration_since(c.since) >= EVICTABLE_AFTER
                        && (!source_full || c.source == source)
                })
                .min_by_key(|(_, c)| c.since)
                .map(|(i, _)| i)
                .or_else(|| self.idle_victim(source, source_full, now));
            match victim {
                Some(i) => Some(self.conns.swap_remove(i).handle),
                None => return Admit::Refuse,
            }
        } else {
            None
        };
        let id = self.next;
        self.next += 1;
        self.conns.push(Conn {
            id,
            source,
            since: now,
            handle,
            established: false,
            active: now,
        });
        Admit::Accept { id, evict }
    }

    /// The established connection idle longest (past `idle_after`), of
    /// `source` if it is over its limit, else of the source holding most.
    fn idle_victim(&self, source: IpAddr, source_full: bool, now: Instant) -> Option<usize> {
        let after = self.idle_after?;
        let scope = if source_full {
            source
        } else {
            let mut counts: std::collections::HashMap<IpAddr, usize> = std::collections::HashMap::new();
            for c in &self.conns {
                *counts.entry(c.source).or_default() += 1;
            }
            counts.into_iter().max_by_key(|&(_, n)| n)?.0
        };
        self.conns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.established && c.source == scope && now.saturating_duration_since(c.active) >= after)
            .min_by_key(|(_, c)| c.active)
            .map(|(i, _)| i)
    }

    /// The connection finished its handshake: it is no longer the first to
    /// go (and, for idle eviction, active `now`). False if it was evicted
    /// meanwhile (it must close).
    pub fn established(&mut self, id: u64, now: Instant) -> bool {
        match self.conns.iter_mut().find(|c| c.id == id) {
            Some(c) => {
                c.established = true;
                c.active = now;
                true
            }
            None => false,
        }
    }

    /// The connection did something besides keeping alive.
    pub fn active(&mut self, id: u64, now: Instant) {
        if let Some(c) = self.conns.iter_mut().find(|c| c.id == id) {
            c.active = now;
        }
    }

    /// The connection is gone.
    pub fn closed(&mut self, id: u64) {
        self.conns.retain(|c| c.id != id);
    }
}

/// One warning line when a daemon listens in plain text beyond loopback:
/// `what` on each of `addrs` that is not a loopback address (an unspecified
/// address, [::] or 0.0.0.0, is every address), and how to avoid it.
pub fn warn_plain_listeners(who: &str, addrs: &[(&str, std::net::SocketAddr)], fix: &str) {
    let open: Vec<String> = addrs
        .iter()
        .filter(|(_, a)| !a.ip().is_loopback())
        .map(|(what, a)| format!("{what} on {a}"))
        .collect();
    if !open.is_empty() {
        tracing::warn!(
            "{who}: warning: plain text, reachable beyond this machine: {} (anyone who reaches it can use it; {fix})",
            open.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn limits_leave_a_reserve_of_descriptors() {
        assert_eq!(
            Limits::for_open_files(1024),
            Limits {
                total: 896,
                per_source: 224
            }
        );
        assert_eq!(Limits::for_open_files(300).total, 263, "an eighth kept back");
        assert_eq!(Limits::for_open_files(10).total, 16, "never below 16");
    }

    /// Half-open connections from one source fill its share; a newcomer
    /// from there replaces the oldest of them (whose handle comes back), a
    /// newcomer from elsewhere is taken as is; established sessions are
    /// never evicted, and once every connection held is one, newcomers are
    /// refused.
    #[test]
    fn half_open_connections_go_first() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut a = Admission::new(Limits {
            total: 4,
            per_source: 2,
        });
        let Admit::Accept { id: first, evict: None } = a.admit(ip(1), at(0), "first") else {
            panic!()
        };
        let Admit::Accept {
            id: second,
            evict: None,
        } = a.admit(ip(1), at(1), "second")
        else {
            panic!()
        };
        // Source 1 is full: its oldest half-open connection makes room.
        let Admit::Accept { id: third, evict } = a.admit(ip(1), at(2), "third") else {
            panic!()
        };
        assert_eq!(evict, Some("first"));
        assert_eq!(a.held(), 2);
        // Another source is not held back by source 1.
        assert!(matches!(
            a.admit(ip(2), at(3), "fourth"),
            Admit::Accept { evict: None, .. }
        ));
        assert!(a.established(second, at(3)) && a.established(third, at(3)));
        assert!(!a.established(first, at(3)), "evicted: it must close");
        // Source 1's share is all sessions: refused.
        assert_eq!(a.admit(ip(1), at(4), "fifth"), Admit::Refuse);
        assert!(matches!(
            a.admit(ip(3), at(5), "sixth"),
            Admit::Accept { evict: None, .. }
        ));
        // Full: the oldest half-open of any source goes (source 2's).
        let Admit::Accept { evict, .. } = a.admit(ip(4), at(6), "seventh") else {
            panic!()
        };
        assert_eq!(evict, Some("fourth"));
        a.closed(second);
        assert_eq!(a.held(), 3);
    }

    /// A connection whose handshake is under way is not cut off for a
    /// newcomer: at the limit, the newcomer is refused until the half-open
    /// one has waited `EVICTABLE_AFTER`.
    #[test]
    fn a_handshake_under_way_is_not_cut_off() {
        let t0 = Instant::now();
        let mut a = Admission::new(Limits {
            total: 2,
            per_source: 2,
        });
        let Admit::Accept { id: done, .. } = a.admit(ip(1), t0, "done") else {
            panic!()
        };
        assert!(a.established(done, t0));
        assert!(matches!(
            a.admit(ip(1), t0, "under way"),
            Admit::Accept { evict: None, .. }
        ));
        let soon = t0 + EVICTABLE_AFTER - Duration::from_millis(1);
        assert_eq!(a.admit(ip(1), soon, "newcomer"), Admit::Refuse);
        let Admit::Accept { evict, .. } = a.admit(ip(1), t0 + EVICTABLE_AFTER, "later") else {
            panic!()
        };
        assert_eq!(evict, Some("under way"));
    }

    /// With idle eviction (the switch's listener): full of established
    /// sessions that only keep alive, a newcomer takes the place of the
    /// one idle longest, of the source holding most; an active one stays,
    /// and without idle eviction (the controller's) the newcomer is refused.
    #[test]
    fn idle_sessions_make_room_for_a_newcomer_when_asked() {
        let t0 = Instant::now();
        let limits = Limits {
            total: 3,
            per_source: 3,
        };
        let fill = |a: &mut Admission<&'static str>| {
            let mut ids = Vec::new();
            for (who, name) in [(1, "crowd-a"), (1, "crowd-b"), (2, "controller")] {
                let Admit::Accept { id, .. } = a.admit(ip(who), t0, name) else {
                    panic!()
                };
                assert!(a.established(id, t0));
                ids.push(id);
            }
            ids
        };
        let later = t0 + Duration::from_secs(10);
        let mut plain = Admission::new(limits);
        fill(&mut plain);
        assert_eq!(plain.admit(ip(3), later, "tool"), Admit::Refuse);

        let mut a = Admission::new(limits).evict_idle(Duration::from_secs(2));
        let ids = fill(&mut a);
        // Too soon: nothing has been idle long enough.
        assert_eq!(a.admit(ip(3), t0 + Duration::from_secs(1), "tool"), Admit::Refuse);
        // crowd-a was active lately; crowd-b was not: it goes, from the
        // source holding most (the controller's source holds one).
        a.active(ids[0], later - Duration::from_secs(1));
        let Admit::Accept { evict, .. } = a.admit(ip(3), later, "tool") else {
            panic!()
        };
        assert_eq!(evict, Some("crowd-b"));
    }
}

//! The replica agent and its client. The agent runs in a replica's network
//! namespace and answers, over UDP on the management network, what the
//! `txbytes` and `cpuq-load` policies ask on every new flow: its NIC's
//! transmitted bytes, the CPU its service used lately, and the established
//! connections on the service port. One datagram each way, so a question
//! costs one round trip.
//!
//! Wire format (big-endian): the question is `SDLB` + u32 sequence + u32
//! flags (bit 0: count the connections, which costs the agent a walk of
//! the kernel's socket table, a millisecond or more on a busy machine);
//! the answer is `SDLB` + the same sequence + u64 tx_bytes + u64 rx_bytes
//! and u32 CPU in thousandths of a core + u32 connections (all ones when
//! not asked): 32 bytes.

use crate::policy::ServerReport;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

const MAGIC: &[u8; 4] = b"SDLB";
pub const QUESTION_LEN: usize = 12;
/// Question flag: count the established connections on the service port.
pub const WANT_CONNECTIONS: u32 = 1;
/// `connections` of an answer to a question that did not ask for them.
pub const NOT_COUNTED: u32 = u32::MAX;
pub const ANSWER_LEN: usize = 32;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    pub seq: u32,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    pub cpu_milli: u32,
    pub connections: u32,
}

impl Answer {
    pub fn encode(&self) -> [u8; ANSWER_LEN] {
        let mut b = [0u8; ANSWER_LEN];
        b[0..4].copy_from_slice(MAGIC);
        b[4..8].copy_from_slice(&self.seq.to_be_bytes());
        b[8..16].copy_from_slice(&self.tx_bytes.to_be_bytes());
        b[16..24].copy_from_slice(&self.rx_bytes.to_be_bytes());
        b[24..28].copy_from_slice(&self.cpu_milli.to_be_bytes());
        b[28..32].copy_from_slice(&self.connections.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<Answer> {
        if b.len() != ANSWER_LEN || &b[0..4] != MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Some(Answer {
            seq: u32_at(4),
            tx_bytes: u64_at(8),
            rx_bytes: u64_at(16),
            cpu_milli: u32_at(24),
            connections: u32_at(28),
        })
    }

    pub fn report(&self) -> ServerReport {
        ServerReport {
            tx_bytes: self.tx_bytes,
            cpu: self.cpu_milli as f64 / 1000.0,
            connections: self.connections,
        }
    }
}

pub fn question(seq: u32, flags: u32) -> [u8; QUESTION_LEN] {
    let mut b = [0u8; QUESTION_LEN];
    b[0..4].copy_from_slice(MAGIC);
    b[4..8].copy_from_slice(&seq.to_be_bytes());
    b[8..12].copy_from_slice(&flags.to_be_bytes());
    b
}

/// A question's sequence and flags.
fn read_question(b: &[u8]) -> Option<(u32, u32)> {
    (b.len() == QUESTION_LEN && &b[0..4] == MAGIC).then(|| {
        (
            u32::from_be_bytes(b[4..8].try_into().expect("4 bytes")),
            u32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
        )
    })
}

/// Asks several agents at once and waits for their answers.
pub struct Client {
    sock: UdpSocket,
    seq: u32,
}

impl Client {
    pub fn new() -> std::io::Result<Client> {
        Ok(Client {
            sock: UdpSocket::bind("0.0.0.0:0")?,
            seq: 0,
        })
    }

    /// One question to each agent given; their answers in the same order
    /// (None for no agent, or no answer within `timeout`). Late answers to
    /// earlier questions are recognised by their sequence and skipped.
    pub fn ask(&mut self, agents: &[Option<SocketAddr>], timeout: Duration, connections: bool) -> Vec<Option<Answer>> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let q = question(seq, if connections { WANT_CONNECTIONS } else { 0 });
        let mut out = vec![None; agents.len()];
        let mut waiting = 0;
        for a in agents.iter().flatten() {
            if self.sock.send_to(&q, a).is_ok() {
                waiting += 1;
            }
        }
        let deadline = Instant::now() + timeout;
        let mut buf = [0u8; 64];
        while waiting > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.sock.set_read_timeout(Some(left)).is_err() {
                break;
            }
            let Ok((n, from)) = self.sock.recv_from(&mut buf) else {
                break;
            };
            let Some(ans) = Answer::decode(&buf[..n]).filter(|a| a.seq == seq) else {
                continue;
            };
            if let Some(i) = agents.iter().position(|a| *a == Some(from)) {
                if out[i].is_none() {
                    out[i] = Some(ans);
                    waiting -= 1;
                }
            }
        }
        out
    }
}

/// What the agent measures, apart from its socket.
#[derive(Debug)]
pub struct Probe {
    /// `/sys/class/net/<if>/statistics/`.
    stats_dir: std::path::PathBuf,
    service_port: u16,
    /// The network namespace whose processes count as the service's.
    netns: Option<std::path::PathBuf>,
    cpu_milli: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

impl Probe {
    pub fn new(interface: &str, service_port: u16) -> Result<Probe, crate::LbError> {
        let stats_dir = std::path::PathBuf::from(format!("/sys/class/net/{interface}/statistics"));
        if !stats_dir.join("tx_bytes").exists() {
            return Err(crate::LbError::NoInterface(interface.to_string()));
        }
        Ok(Probe {
            stats_dir,
            service_port,
            netns: std::fs::read_link("/proc/self/ns/net").ok(),
            cpu_milli: Default::default(),
        })
    }

    fn counter(&self, name: &str) -> u64 {
        std::fs::read_to_string(self.stats_dir.join(name))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Established TCP connections whose local port is the service port:
    /// asked of the kernel over sock_diag (reading /proc/net/tcp costs
    /// milliseconds once the machine holds many sockets, since the kernel
    /// walks its whole table again for every chunk read), falling back to
    /// /proc when netlink is refused.
    pub fn connections(&self) -> u32 {
        match (
            diag_established(libc::AF_INET as u8, self.service_port),
            diag_established(libc::AF_INET6 as u8, self.service_port),
        ) {
            (Ok(a), Ok(b)) => a + b,
            _ => ["/proc/self/net/tcp", "/proc/self/net/tcp6"]
                .iter()
                .filter_map(|p| std::fs::read_to_string(p).ok())
                .map(|t| count_established(&t, self.service_port))
                .sum(),
        }
    }

    pub fn answer(&self, seq: u32, flags: u32) -> Answer {
        Answer {
            seq,
            tx_bytes: self.counter("tx_bytes"),
            rx_bytes: self.counter("rx_bytes"),
            cpu_milli: self.cpu_milli.load(std::sync::atomic::Ordering::Relaxed),
            connections: if flags & WANT_CONNECTIONS != 0 {
                self.connections()
            } else {
                NOT_COUNTED
            },
        }
    }

    /// Samples, every `period`, the CPU time of every process in this
    /// network namespace but the agent itself (the replica's service:
    /// namespaces share the machine's /proc/stat, so it cannot tell them
    /// apart).
    pub fn start_cpu_sampler(&self, period: Duration) {
        let netns = self.netns.clone();
        let out = self.cpu_milli.clone();
        let me = std::process::id();
        let tick = clock_ticks();
        std::thread::spawn(move || {
            // The namespace's processes are looked for once a second; in
            // between only their own stat files are read. A process that
            // appears counts from its first sample on.
            let mut pids = namespace_pids(netns.as_deref(), me);
            let mut last: std::collections::HashMap<u32, u64> = pids.iter().map(|&p| (p, pid_cpu_ticks(p))).collect();
            let mut at = Instant::now();
            let mut rounds = 0u32;
            loop {
                std::thread::sleep(period);
                rounds += 1;
                if Duration::from_secs(1) <= period * rounds {
                    pids = namespace_pids(netns.as_deref(), me);
                    rounds = 0;
                }
                let now = Instant::now();
                let mut used = 0u64;
                let mut next = std::collections::HashMap::with_capacity(pids.len());
                for &p in &pids {
                    let t = pid_cpu_ticks(p);
                    if let Some(before) = last.get(&p) {
                        used += t.saturating_sub(*before);
                    }
                    next.insert(p, t);
                }
                let cores = used as f64 / tick / (now - at).as_secs_f64();
                out.store((cores * 1000.0).round() as u32, std::sync::atomic::Ordering::Relaxed);
                last = next;
                at = now;
            }
        });
    }
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The processes in the network namespace `netns` (all when None), the
/// agent excepted.
fn namespace_pids(netns: Option<&std::path::Path>, me: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|&pid| pid != me)
        .filter(|pid| match netns {
            Some(ns) => std::fs::read_link(format!("/proc/{pid}/ns/net")).is_ok_and(|l| l == ns),
            None => true,
        })
        .collect()
}

fn pid_cpu_ticks(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(0, |s| stat_cpu_ticks(&s))
}

/// utime + stime from a `/proc/PID/stat` line (fields 14 and 15, counted
/// after the command name, which may hold spaces and parentheses).
fn stat_cpu_ticks(stat: &str) -> u64 {
    let Some(close) = stat.rfind(')') else { return 0 };
    let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    // fields[0] is the state (field 3); utime is field 14.
    let get = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    get(11) + get(12)
}

/// Established TCP sockets of `family` in this network namespace whose
/// local port is `port`, by a sock_diag dump (NETLINK_SOCK_DIAG,
/// SOCK_DIAG_BY_FAMILY with inet_diag_req_v2, states = ESTABLISHED).
fn diag_established(family: u8, port: u16) -> std::io::Result<u32> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const NLMSG_DONE: u16 = 3;
    const NLMSG_ERROR: u16 = 2;
    const TCP_ESTABLISHED: u32 = 1;
    // SAFETY: plain syscall, checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor we just opened and own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // nlmsghdr (16) + inet_diag_req_v2 (56).
    let mut req = [0u8; 72];
    req[0..4].copy_from_slice(&72u32.to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req[6..8].copy_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
    req[16] = family;
    req[17] = libc::IPPROTO_TCP as u8;
    req[20..24].copy_from_slice(&(1u32 << TCP_ESTABLISHED).to_ne_bytes());
    // SAFETY: sends the buffer above, of its length.
    if unsafe { libc::send(fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut count = 0;
    loop {
        // SAFETY: receives into the buffer, of its length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut at = 0usize;
        let n = n as usize;
        while at + 16 <= n {
            let len = u32::from_ne_bytes(buf[at..at + 4].try_into().expect("4 bytes")) as usize;
            let ty = u16::from_ne_bytes(buf[at + 4..at + 6].try_into().expect("2 bytes"));
            match ty {
                NLMSG_DONE => return Ok(count),
                NLMSG_ERROR => return Err(std::io::Error::other("sock_diag refused the dump")),
                _ => {
                    // inet_diag_msg: family, state, timer, retrans, then the
                    // socket id whose first field is the source port (big-endian).
                    let msg = &buf[at + 16..(at + len).min(n)];
                    if msg.len() >= 6 && u16::from_be_bytes([msg[4], msg[5]]) == port {
                        count += 1;
                    }
                }
            }
            if len < 16 {
                return Err(std::io::Error::other("a malformed sock_diag message"));
            }
            at += (len + 3) & !3;
        }
    }
}

/// Lines of `/proc/net/tcp{,6}` in state 01 (ESTABLISHED) whose local port
/// is `port`.
fn count_established(table: &str, port: u16) -> u32 {
    let want = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let mut f = l.split_whitespace();
            let local = f.nth(1).unwrap_or("");
            let state = f.nth(1).unwrap_or("");
            local.ends_with(&want) && state == "01"
        })
        .count() as u32
}

/// Answers questions on `sock` for ever.
pub fn serve(sock: &UdpSocket, probe: &Probe) -> std::io::Result<()> {
    let mut buf = [0u8; 64];
    loop {
        let (n, from) = sock.recv_from(&mut buf)?;
        if let Some((seq, flags)) = read_question(&buf[..n]) {
            let _ = sock.send_to(&probe.answer(seq, flags).encode(), from);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_round_trip_and_junk_is_refused() {
        let a = Answer {
            seq: 7,
            tx_bytes: 1 << 40,
            rx_bytes: 3,
            cpu_milli: 1500,
            connections: 12,
        };
        assert_eq!(Answer::decode(&a.encode()), Some(a));
        assert_eq!(a.report().cpu, 1.5);
        assert_eq!(Answer::decode(&a.encode()[..31]), None);
        let mut bad = a.encode();
        bad[0] = b'X';
        assert_eq!(Answer::decode(&bad), None);
        assert_eq!(read_question(&question(9, WANT_CONNECTIONS)), Some((9, 1)));
        assert_eq!(read_question(b"SDLB\0\0\0\0\0\0\0"), None);
    }

    #[test]
    fn established_connections_on_the_service_port_are_counted() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0
   1: 0B00000A:0050 0100000A:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0
   2: 0B00000A:0050 0100000A:9C41 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0
   3: 0B00000A:0050 0100000A:9C42 06 00000000:00000000 00:00000000 00000000     0        0 4 1 0
   4: 0B00000A:9C40 0100000A:0050 01 00000000:00000000 00:00000000 00000000     0        0 5 1 0";
        assert_eq!(
            count_established(table, 80),
            2,
            "the listener, TIME_WAIT and outgoing ones are not"
        );
    }

    #[test]
    fn sock_diag_counts_what_proc_net_tcp_lists() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let clients: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        let served: Vec<_> = (0..3).map(|_| l.accept().unwrap().0).collect();
        let by_diag = diag_established(libc::AF_INET as u8, port).unwrap();
        let by_proc = count_established(&std::fs::read_to_string("/proc/self/net/tcp").unwrap(), port);
        assert_eq!(by_diag, 3, "the three accepted ends, not the clients' nor the listener");
        assert_eq!(by_diag, by_proc);
        drop((clients, served));
    }

    #[test]
    fn the_cpu_of_the_namespaces_processes_is_sampled() {
        let mut busy = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let probe = Probe::new("lo", 80).unwrap();
        probe.start_cpu_sampler(Duration::from_millis(100));
        std::thread::sleep(Duration::from_millis(500));
        let seen = probe.answer(1, 0).cpu_milli;
        let _ = busy.kill();
        let _ = busy.wait();
        assert!(seen >= 500, "a busy process shows as at least half a core: {seen}");
    }

    #[test]
    fn cpu_ticks_are_read_after_the_command_name() {
        let stat = "42 (nginx: worker (x)) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 100 0 0";
        assert_eq!(stat_cpu_ticks(stat), 325);
    }

    #[test]
    fn the_client_gets_each_agents_answer_and_waits_no_longer_than_told() {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = sock.local_addr().unwrap();
        let lo = std::fs::read_dir("/sys/class/net")
            .unwrap()
            .flatten()
            .any(|e| e.file_name() == "lo");
        assert!(lo);
        let probe = Probe::new("lo", 80).unwrap();
        std::thread::spawn(move || serve(&sock, &probe));
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut c = Client::new().unwrap();
        let t = Instant::now();
        let got = c.ask(
            &[Some(addr), None, Some(silent.local_addr().unwrap())],
            Duration::from_millis(100),
            false,
        );
        assert!(t.elapsed() >= Duration::from_millis(100) && t.elapsed() < Duration::from_secs(2));
        let a = got[0].expect("the live agent answered");
        // The question itself crossed lo before the counters were read.
        assert!(a.tx_bytes > 0 && a.rx_bytes > 0, "{a:?}");
        assert_eq!((got[1], got[2]), (None, None));
        assert_eq!(a.connections, NOT_COUNTED, "not asked, not counted");
        let counted = c.ask(&[Some(addr)], Duration::from_secs(1), true)[0].unwrap();
        assert_ne!(counted.connections, NOT_COUNTED);
        assert!(Probe::new("no-such-if0", 80)
            .unwrap_err()
            .to_string()
            .contains("--interface"));
    }
}

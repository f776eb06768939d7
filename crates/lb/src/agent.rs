//! The replica agent and its client. The agent runs in a replica's network
//! namespace and answers, over UDP on the management network, what the
//! `txbytes` and `cpuq-load` policies ask on every new flow: its NIC's
//! transmitted bytes, the CPU its service used lately, and the established
//! connections on the service port. One datagram each way, so a question
//! costs one round trip.
//!
//! Wire format (big-endian): the question is `SDLB` + u32 sequence; the
//! answer is `SDLB` + the same sequence + u64 tx_bytes + u64 rx_bytes +
//! u32 CPU in thousandths of a core + u32 connections (32 bytes).

use crate::policy::ServerReport;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

const MAGIC: &[u8; 4] = b"SDLB";
pub const QUESTION_LEN: usize = 8;
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

pub fn question(seq: u32) -> [u8; QUESTION_LEN] {
    let mut b = [0u8; QUESTION_LEN];
    b[0..4].copy_from_slice(MAGIC);
    b[4..8].copy_from_slice(&seq.to_be_bytes());
    b
}

fn question_seq(b: &[u8]) -> Option<u32> {
    (b.len() == QUESTION_LEN && &b[0..4] == MAGIC).then(|| u32::from_be_bytes(b[4..8].try_into().expect("4 bytes")))
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
    pub fn ask(&mut self, agents: &[Option<SocketAddr>], timeout: Duration) -> Vec<Option<Answer>> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let q = question(seq);
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
    pub fn new(interface: &str, service_port: u16) -> Result<Probe, String> {
        let stats_dir = std::path::PathBuf::from(format!("/sys/class/net/{interface}/statistics"));
        if !stats_dir.join("tx_bytes").exists() {
            return Err(format!(
                "no interface '{interface}' in this network namespace (give the replica's data interface with --interface)"
            ));
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

    /// Established TCP connections whose local port is the service port.
    pub fn connections(&self) -> u32 {
        ["/proc/self/net/tcp", "/proc/self/net/tcp6"]
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .map(|t| count_established(&t, self.service_port))
            .sum()
    }

    pub fn answer(&self, seq: u32) -> Answer {
        Answer {
            seq,
            tx_bytes: self.counter("tx_bytes"),
            rx_bytes: self.counter("rx_bytes"),
            cpu_milli: self.cpu_milli.load(std::sync::atomic::Ordering::Relaxed),
            connections: self.connections(),
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
            let mut last = (Instant::now(), namespace_cpu_ticks(netns.as_deref(), me));
            loop {
                std::thread::sleep(period);
                let now = (Instant::now(), namespace_cpu_ticks(netns.as_deref(), me));
                let cores = now.1.saturating_sub(last.1) as f64 / tick / (now.0 - last.0).as_secs_f64();
                out.store((cores * 1000.0).round() as u32, std::sync::atomic::Ordering::Relaxed);
                last = now;
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

/// utime + stime of the processes in the namespace `netns` (all of them
/// when None), the agent excepted.
fn namespace_cpu_ticks(netns: Option<&std::path::Path>, me: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    let mut total = 0;
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Some(ns) = netns {
            match std::fs::read_link(format!("/proc/{pid}/ns/net")) {
                Ok(l) if l == ns => {}
                _ => continue,
            }
        }
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            total += stat_cpu_ticks(&stat);
        }
    }
    total
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
        if let Some(seq) = question_seq(&buf[..n]) {
            let _ = sock.send_to(&probe.answer(seq).encode(), from);
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
        assert_eq!(question_seq(&question(9)), Some(9));
        assert_eq!(question_seq(b"SDLB\0\0\0"), None);
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
        );
        assert!(t.elapsed() >= Duration::from_millis(100) && t.elapsed() < Duration::from_secs(2));
        let a = got[0].expect("the live agent answered");
        // The question itself crossed lo before the counters were read.
        assert!(a.tx_bytes > 0 && a.rx_bytes > 0, "{a:?}");
        assert_eq!((got[1], got[2]), (None, None));
        assert!(Probe::new("no-such-if0", 80).unwrap_err().contains("--interface"));
    }
}

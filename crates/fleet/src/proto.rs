//! The coordinator–worker protocol: one JSON object per line over the TLS
//! stream, each way. The coordinator sends [`Request`]s, each with an id;
//! the worker answers each with [`Response`]s carrying the same id (the
//! last one [`Reply::is_final`]), in any order between requests (calls run
//! side by side). Heartbeats have
//! no answer: they only keep the lease.

use netlab::run::{IperfResult, PingResult, SwitchKind};
use netlab::state::Part;
use netlab::topo::Topology;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// The protocol's version; a worker refuses a coordinator of another.
pub const VERSION: u32 = 2;

/// The longest line either side accepts (a topology of thousands of nodes
/// fits many times over).
pub const MAX_LINE: usize = 16 << 20;

/// The name every worker certificate carries and the coordinator checks:
/// the lab's CA vouches that the peer is one of its workers.
pub const WORKER_NAME: &str = "sdnlab-worker";
/// The name in the coordinator's certificate.
pub const COORDINATOR_NAME: &str = "sdnlab-coordinator";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    #[serde(flatten)]
    pub call: Call,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "kebab-case")]
pub enum Call {
    /// The first call: the protocol version, and how long the worker keeps
    /// what it made once it hears nothing (a heartbeat or any call).
    Hello { version: u32, lease_ms: u64 },
    /// Keeps the lease; no answer.
    Heartbeat,
    /// The worker's clock now (`Reply::Clock`).
    Clock,
    /// The network experiment's calls: this worker's part of a network, and the checks run on it (pings, iperf3, test-frame flows, HTTP loads).
    Net(NetCall),
    /// The controller benchmark's calls: its load shards and ceilings, the session capacity test, and sdnlab's cluster run on the workers.
    Ctl(CtlCall),
    /// `bench dp`'s calls for an external switch whose ports are on the workers: its ports, and test frames sent and counted there.
    Tester(TesterCall),
    /// The topology tests' calls: this worker's part of an emulated fabric of switches.
    Fabric(FabricCall),
    /// Removes everything this worker made for the coordinator (`Reply::Done`).
    Down,
}

/// The network experiment's calls: this worker's part of a network, and the checks run on it (pings, iperf3, test-frame flows, HTTP loads). Answered by the worker's `net` module.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum NetCall {
    /// Brings up this worker's part of `topology` (`Reply::NetUp`).
    Up {
        topology: Topology,
        part: Part,
        kind: SwitchKind,
        controller: Option<String>,
    },
    /// Pings `targets` from every host of this worker (`Reply::Ping`).
    Ping {
        targets: Vec<(String, Ipv4Addr)>,
        count: u32,
    },
    /// Starts a one-test iperf3 server on `host` (`Reply::Done` once listening).
    IperfServer { host: String },
    /// iperf3 from `client` to a server at `server_ip` (`Reply::Iperf`).
    Iperf {
        client: String,
        server_ip: Ipv4Addr,
        seconds: u32,
    },
    /// Counts `flow`'s frames on its receiving host here: says
    /// `Reply::FlowListening` once its socket is open, sends what each
    /// `interval_ms` counted as it is counted (`Reply::FlowInterval`),
    /// and, once this machine's clock has passed `until_unix_ns` and the
    /// frames have stopped, the whole (`Reply::FlowReceived`).
    /// `clock_ahead_ns` (this worker's clock minus the sender's) comes
    /// off every latency.
    FlowReceive {
        flow: traffic::flow::Flow,
        clock_ahead_ns: i64,
        until_unix_ns: u64,
        interval_ms: u32,
    },
    /// Sends `flow` from its sending host here, starting at
    /// `start_unix_ns` on this worker's clock (`Reply::FlowSent`).
    FlowSend {
        flow: traffic::flow::Flow,
        start_unix_ns: u64,
    },
    /// Starts nginx on `host` here, serving on port 80 (`Reply::Done` once
    /// it accepts connections); it stops when the network comes down.
    HttpServer { host: String },
    /// Open-loop HTTP load from `client` here to the server at
    /// `server_ip`: `rate` requests a second for `seconds`, each on a new
    /// connection; the requests done in each `interval_ms` as they end
    /// (`Reply::HttpRequests`, the last ones included), then `Reply::Done`.
    HttpLoad {
        client: String,
        server_ip: Ipv4Addr,
        rate: f64,
        seconds: f64,
        interval_ms: u32,
    },
}

/// The controller benchmark's calls: its load shards and ceilings, the session capacity test, and sdnlab's cluster run on the workers. Answered by the worker's `ctl` module.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum CtlCall {
    /// A shard of the control session capacity test: opens `config`'s
    /// sessions (its own datapath ids) until the controller fails, the
    /// shard's count is reached, or `SessionsStop` says stop; streams the
    /// count held at each check (`Reply::SessionsProgress`), says how it
    /// ended while still holding them (`Reply::SessionsEnded`), holds them
    /// until `SessionsStop { release: true }`, then `Reply::Done`.
    Sessions { config: ctlbench::capacity::CapacityConfig },
    /// Stops the capacity shard opening sessions (`release` false) or
    /// lets it close them (true) (`Reply::Done`).
    SessionsStop { release: bool },
    /// Runs a shard of the controller benchmark: `config`'s switches
    /// against its target, starting at `start_unix_ns` on the worker's
    /// clock (so the shards' loops line up); each loop as it is measured
    /// (`Reply::CtlLoop`), then the whole (`Reply::Ctl`).
    Shard {
        config: ctlbench::Config,
        start_unix_ns: u64,
    },
    /// The driver's own ceiling on this worker for `config`'s load: the
    /// same switches against the reference null responder here
    /// (`Reply::Ceiling`).
    Ceiling { config: ctlbench::Config },
    /// Starts a private etcd of `members` members on this worker's
    /// session address, for a cluster of sdnlab's controller
    /// (`Reply::EtcdUp`); stopped by `ClusterDown` or `Down`.
    EtcdUp { members: usize },
    /// Starts member `member` of sdnlab's controller cluster `cluster`
    /// (etcd at `endpoints`) running `app`, on this worker's session
    /// address (`Reply::MemberUp`).
    MemberUp {
        endpoints: Vec<String>,
        cluster: String,
        member: String,
        app: String,
        /// Whether its slaves ask the switches for every PACKET_IN.
        slave_packet_ins: bool,
    },
    /// The members here leave their cluster and stop, then the etcd here
    /// stops (`Reply::Done`).
    ClusterDown,
}

/// `bench dp`'s calls for an external switch whose ports are on the workers: its ports, and test frames sent and counted there. Answered by the worker's `tester` module.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum TesterCall {
    /// The interfaces here that lead to a switch under test (`bench dp`'s
    /// external switch), as they are (`Reply::TesterPorts`); an error
    /// names one that is missing or down.
    Ports { ifaces: Vec<String> },
    /// Starts counting the test frames that arrive on `iface` here, taken
    /// as `method` says (`Reply::Done` once it counts); `clock_ahead_ns`
    /// (this worker's clock minus the generator's) comes off every latency.
    Listen {
        iface: String,
        method: traffic::run::RecvMethod,
        clock_ahead_ns: i64,
    },
    /// Sends `spec`'s frames from its interface here, at once, in this
    /// worker's namespace, on a core of the scheduler's choosing
    /// (`Reply::FlowSent` when done).
    Send { spec: traffic::run::GenSpec },
    /// Ends the count on `iface` once no test frame has come for
    /// `quiet_ms` (at most `at_most_ms` from now): `Reply::TesterReceived`.
    Finish {
        iface: String,
        quiet_ms: u32,
        at_most_ms: u32,
    },
}

/// The topology tests' calls: this worker's part of an emulated fabric of switches. Answered by the worker's `fabric` module.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum FabricCall {
    /// Opens the UDP socket this worker's part of an emulated fabric takes
    /// frames from the other parts on, on the session's address
    /// (`Reply::FabricBound`).
    Bind,
    /// Runs this worker's part of the emulated fabric `spec` (the switches
    /// `here`; frames to a switch of `elsewhere` go to that part's socket),
    /// each switch connected to `targets`; answers once every switch here
    /// has completed its handshake or `timeout_ms` passed
    /// (`Reply::FabricUp`), and runs until `FabricStop` or the session ends.
    Start {
        spec: ctlbench::fabric::Spec,
        here: Vec<u64>,
        elsewhere: Vec<(u64, std::net::SocketAddr)>,
        targets: Vec<std::net::SocketAddr>,
        version: u8,
        timeout_ms: u64,
        malformed_per_mille: u32,
    },
    /// Stops this worker's part of the fabric (`Reply::FabricUp`: what it
    /// counted).
    Stop,
    /// What this worker's part of the fabric counted so far (`Reply::FabricUp`).
    Count,
    /// Port `at` of a switch here goes down or up (`Reply::Done`).
    Port { at: (u64, u32), up: bool },
    /// Switch `dpid` here fails as if powered off: its session closes, its
    /// neighbours here see their ports go down (`Reply::Done`).
    SwitchOff { dpid: u64 },
}

/// What a worker's part of an emulated fabric counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FabricCounts {
    /// Its switches connected to the controller, and those whose session was lost.
    pub connected: u64,
    pub lost: u64,
    pub lldp_packet_ins: u64,
    /// Frames its switches sent to other parts' switches, and took from them.
    pub frames_to_other_parts: u64,
    pub frames_from_other_parts: u64,
    /// Datagrams it refused (not from another part).
    pub refused_datagrams: u64,
    /// When the latest LLDP frame left one of its switches, unix ns on its
    /// worker's clock (0: none).
    pub last_lldp_out_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Response {
    pub id: u64,
    #[serde(flatten)]
    pub reply: Reply,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "kebab-case")]
pub enum Reply {
    Hello {
        version: u32,
        /// The worker's host name.
        host: String,
        /// Where the worker answers clock probes for this session (UDP on
        /// the session's address), and the token a probe must carry
        /// ([`crate::clock::ProbeServer`]).
        #[serde(default)]
        clock_port: Option<u16>,
        #[serde(default)]
        clock_token: Option<crate::clock::Token>,
    },
    Clock {
        unix_ns: u64,
    },
    NetUp {
        /// netlab's run id on the worker.
        run: String,
        /// The kernel objects made: namespaces and root-namespace interfaces.
        namespaces: Vec<String>,
        interfaces: Vec<String>,
    },
    Ping {
        results: Vec<PingResult>,
    },
    Iperf {
        result: IperfResult,
    },
    /// One loop of a controller benchmark shard, as measured (more follow).
    CtlLoop {
        result: ctlbench::LoopResult,
    },
    Ctl {
        report: Box<ctlbench::Report>,
        /// Every round trip the shard recorded: an HdrHistogram of
        /// nanoseconds, V2 serialised with deflate, in base64 (so shards
        /// merge exactly).
        rtt_histogram: String,
    },
    /// HTTP requests done (more follow).
    HttpRequests {
        requests: Vec<lb::load::Request>,
    },
    /// A capacity shard's sessions held so far (more follow).
    SessionsProgress {
        held: usize,
        seconds: f64,
    },
    /// A capacity shard stopped opening sessions and holds what it has
    /// (more follow).
    SessionsEnded {
        result: Box<ctlbench::capacity::CapacityResult>,
    },
    /// A flow's receiver is counting (more follow).
    FlowListening,
    /// What a flow's receiver counted in one interval (more follow).
    FlowInterval {
        interval: traffic::run::Interval,
    },
    FlowReceived {
        report: Box<traffic::run::RecvReport>,
    },
    FlowSent {
        report: traffic::run::GenReport,
    },
    TesterPorts {
        ports: Vec<netlab::kernel::PortInfo>,
    },
    /// What a tester port counted. Its index of the frames that arrived
    /// travels packed (`crate::shard::pack_words`): one bit a frame.
    TesterReceived {
        report: Box<traffic::run::RecvReport>,
        seen: String,
        blocks: String,
    },
    FabricBound {
        port: u16,
    },
    /// A fabric part's switches and what crossed it so far.
    FabricUp {
        counts: FabricCounts,
    },
    /// A private etcd started here: its members' client URLs.
    EtcdUp {
        endpoints: Vec<String>,
        version: String,
    },
    /// A cluster member started here: its OpenFlow and REST addresses.
    MemberUp {
        openflow: std::net::SocketAddr,
        rest: std::net::SocketAddr,
    },
    /// None: the load's answers cannot be matched by the reference responder.
    Ceiling {
        ceiling: Option<ctlbench::ceiling::Ceiling>,
    },
    Done,
    /// The call failed; nothing else follows for its id.
    Error {
        message: String,
    },
}

impl Reply {
    /// Whether this is the last response to its call.
    pub fn is_final(&self) -> bool {
        !matches!(
            self,
            Reply::CtlLoop { .. }
                | Reply::FlowListening
                | Reply::FlowInterval { .. }
                | Reply::HttpRequests { .. }
                | Reply::SessionsProgress { .. }
                | Reply::SessionsEnded { .. }
        )
    }
}

/// A line of JSON for `v`, with its newline.
pub fn line<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).expect("protocol messages serialise");
    out.push(b'\n');
    out
}

/// Writes each message `rx` gives as a line to `w`, until the channel
/// closes or a write fails; then closes `w`. The writing half of either
/// side of a session.
pub async fn write_lines<T: Serialize, W: tokio::io::AsyncWrite + Unpin>(
    mut w: W,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<T>,
) {
    use tokio::io::AsyncWriteExt;
    while let Some(m) = rx.recv().await {
        if w.write_all(&line(&m)).await.is_err() || w.flush().await.is_err() {
            break;
        }
    }
    let _ = w.shutdown().await;
}

/// Reads one line (without its newline) from `r`; None at the end of the
/// stream; an error for a line longer than [`MAX_LINE`].
pub async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<Option<Vec<u8>>> {
    use tokio::io::AsyncBufReadExt;
    let mut out = Vec::new();
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(if out.is_empty() { None } else { Some(out) });
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                out.extend_from_slice(&buf[..i]);
                r.consume(i + 1);
                return Ok(Some(out));
            }
            None => {
                let n = buf.len();
                out.extend_from_slice(buf);
                r.consume(n);
            }
        }
        if out.len() > MAX_LINE {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line longer than {MAX_LINE} bytes"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_read_back_as_written() {
        let r = Request {
            id: 7,
            call: Call::Net(NetCall::Iperf {
                client: "h1".into(),
                server_ip: Ipv4Addr::new(10, 0, 0, 6),
                seconds: 2,
            }),
        };
        let text = line(&r);
        assert!(text.ends_with(b"\n"));
        let s = std::str::from_utf8(&text).unwrap();
        // The family, then the call within it.
        assert!(s.contains("\"call\":\"net\"") && s.contains("\"op\":\"iperf\""), "{s}");
        let back: Request = serde_json::from_slice(&text).unwrap();
        assert_eq!(back.id, 7);
        assert!(matches!(back.call, Call::Net(NetCall::Iperf { seconds: 2, .. })));
        let e: Response = serde_json::from_str(r#"{"id":3,"reply":"error","message":"no"}"#).unwrap();
        assert!(matches!(e.reply, Reply::Error { ref message } if message == "no"));
    }

    /// Every family's calls, with fields and without, and the session's
    /// own, read back as the call they were.
    #[test]
    fn each_familys_calls_read_back_as_written() {
        let calls = [
            Call::Hello {
                version: VERSION,
                lease_ms: 10,
            },
            Call::Heartbeat,
            Call::Down,
            Call::Net(NetCall::HttpServer { host: "h2".into() }),
            Call::Ctl(CtlCall::SessionsStop { release: true }),
            Call::Ctl(CtlCall::ClusterDown),
            Call::Tester(TesterCall::Finish {
                iface: "eth1".into(),
                quiet_ms: 5,
                at_most_ms: 50,
            }),
            Call::Fabric(FabricCall::Bind),
            Call::Fabric(FabricCall::SwitchOff { dpid: 9 }),
        ];
        for (id, call) in calls.into_iter().enumerate() {
            let sent = serde_json::to_string(&Request { id: id as u64, call }).unwrap();
            let back: Request = serde_json::from_str(&sent).unwrap_or_else(|e| panic!("{sent}: {e}"));
            assert_eq!(serde_json::to_string(&back).unwrap(), sent);
        }
        // A call of no family is refused, not taken for another.
        assert!(serde_json::from_str::<Request>(r#"{"id":1,"call":"net","op":"nonesuch"}"#).is_err());
    }

    #[tokio::test]
    async fn a_line_too_long_is_an_error_not_a_buffer_without_end() {
        let long = vec![b'x'; MAX_LINE + 10];
        let mut r = tokio::io::BufReader::new(&long[..]);
        assert!(read_line(&mut r).await.is_err());
        let mut r = tokio::io::BufReader::new(&b"one\ntwo"[..]);
        assert_eq!(read_line(&mut r).await.unwrap().unwrap(), b"one");
        assert_eq!(read_line(&mut r).await.unwrap().unwrap(), b"two");
        assert!(read_line(&mut r).await.unwrap().is_none());
    }
}

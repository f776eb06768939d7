//! A blocking controller-side OpenFlow client over one TCP connection: the
//! `Session` state machine driven by a std socket, for the tests and the
//! benchmarks (installing rules, reading statistics, waiting for a
//! message). The controller's own sessions run in its runtime; this one
//! serves whoever needs to talk to a switch from plain sequential code.
//!
//! The session does the handshake, answers the switch's echoes and sends
//! the OFPT_ERROR replies; every other message is handed to the caller
//! (PACKET_INs included, decoded).

use crate::{CloseReason, Config, Event, Session, SwitchInfo};
use ofwire::{v13, Body, Message};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Why a request to the switch failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{addr}: {source}")]
    Connect { addr: SocketAddr, source: std::io::Error },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the session ended: {0:?}")]
    Closed(CloseReason),
    #[error("the switch refused the request: {0}")]
    Refused(String),
    #[error("no {0} from the switch in time")]
    Timeout(&'static str),
    #[error("{0}")]
    Encode(#[from] ofwire::EncodeError),
}

pub type Result<T> = std::result::Result<T, ClientError>;

/// What a batch of FLOW_MODs cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Installed {
    /// From the first FLOW_MOD written to the BARRIER_REPLY read.
    pub seconds: f64,
    /// OFPT_ERRORs the switch sent back meanwhile.
    pub errors: u64,
}

/// The connection under a [`Client`]: TCP, or a Unix socket (Open
/// vSwitch's management socket, `ovs-ofctl`'s `unix:PATH`).
enum Stream {
    Tcp(TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s) => s.write_all(buf),
        }
    }
}

/// One session with a switch, after its handshake.
pub struct Client {
    stream: Stream,
    session: Session,
    info: Option<SwitchInfo>,
    inbox: VecDeque<Message>,
    rd: Vec<u8>,
    /// How long one request may wait for its answer.
    pub patience: Duration,
}

/// Writes this much at a time when pipelining many messages.
const BATCH: usize = 1 << 20;

impl Client {
    /// Connects to a switch's OpenFlow listener at `addr` (retrying for up
    /// to 10 s while it starts) and runs the OpenFlow 1.3 handshake. Its
    /// SET_CONFIG asks for 128 bytes of each table-miss packet, the
    /// switch's own default (OpenFlow 1.3 section 7.3.2), so the switch
    /// behaves as it would had nobody told it.
    pub fn connect(addr: SocketAddr) -> Result<Client> {
        let cfg = Config {
            versions: vec![ofwire::OFP13_VERSION],
            miss_send_len: 128,
            ..Config::default()
        };
        Client::connect_with(addr, cfg, Duration::from_secs(10))
    }

    /// The same with the session's settings and the connection's patience
    /// given.
    pub fn connect_with(addr: SocketAddr, cfg: Config, patience: Duration) -> Result<Client> {
        let t = Instant::now();
        let stream = loop {
            match TcpStream::connect(addr) {
                Ok(s) => break s,
                Err(e) if t.elapsed() > patience => return Err(ClientError::Connect { addr, source: e }),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        stream.set_nodelay(true)?;
        Client::handshake(Stream::Tcp(stream), cfg, patience)
    }

    /// Connects to a switch's OpenFlow listener on a Unix socket (Open
    /// vSwitch's `BRIDGE.mgmt`) and runs the OpenFlow 1.3 handshake.
    pub fn connect_unix(path: &std::path::Path, patience: Duration) -> Result<Client> {
        let stream = std::os::unix::net::UnixStream::connect(path)
            .map_err(|e| ClientError::Io(std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))))?;
        let cfg = Config {
            versions: vec![ofwire::OFP13_VERSION],
            miss_send_len: 128,
            ..Config::default()
        };
        Client::handshake(Stream::Unix(stream), cfg, patience)
    }

    fn handshake(stream: Stream, cfg: Config, patience: Duration) -> Result<Client> {
        let cfg = Config {
            packet_ins_as_events: true,
            ..cfg
        };
        let mut c = Client {
            stream,
            session: Session::new(cfg, Instant::now()),
            info: None,
            inbox: VecDeque::new(),
            rd: vec![0; 1 << 16],
            patience: Duration::from_secs(120),
        };
        c.flush()?;
        let deadline = Instant::now() + patience;
        while c.info.is_none() {
            c.pump(deadline, "handshake")?;
        }
        Ok(c)
    }

    /// What the handshake learnt: datapath id, tables, ports.
    pub fn info(&self) -> &SwitchInfo {
        self.info.as_ref().expect("connect returns after the handshake")
    }

    /// A fresh transaction id.
    pub fn xid(&mut self) -> u32 {
        self.session.xid()
    }

    /// Sends an OpenFlow 1.3 message; its xid.
    pub fn send(&mut self, body: v13::Body) -> Result<u32> {
        let xid = self.session.send13(body);
        self.flush()?;
        Ok(xid)
    }

    /// Sends an OpenFlow 1.3 message with the caller's xid.
    pub fn send_xid(&mut self, xid: u32, body: v13::Body) -> Result<()> {
        Message::v13(xid, body).encode(self.session.transmit())?;
        self.flush()
    }

    /// Sends bytes as they are (malformed input, other versions).
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.session.transmit().extend_from_slice(bytes);
        self.flush()
    }

    /// The next message the session passes on, within `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Result<Message> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(m) = self.inbox.pop_front() {
                return Ok(m);
            }
            self.pump(deadline, "message")?;
        }
    }

    /// The first message for which `pick` says something, within
    /// `timeout`; the messages before it are dropped.
    pub fn wait<T>(&mut self, timeout: Duration, mut pick: impl FnMut(&Message) -> Option<T>) -> Result<T> {
        let deadline = Instant::now() + timeout;
        loop {
            while let Some(m) = self.inbox.pop_front() {
                if let Some(v) = pick(&m) {
                    return Ok(v);
                }
            }
            self.pump(deadline, "matching message")?;
        }
    }

    /// A BARRIER_REQUEST and its reply: everything sent before is done.
    pub fn barrier(&mut self) -> Result<()> {
        let xid = self.send(v13::Body::BarrierRequest)?;
        let patience = self.patience;
        self.wait(patience, |m| {
            (m.xid == xid && matches!(m.body, Body::V13(v13::Body::BarrierReply))).then_some(())
        })
    }

    /// Pipelines `mods`, then a barrier; how long the switch took and how
    /// many it refused.
    pub fn install(&mut self, mods: &[v13::FlowMod]) -> Result<Installed> {
        let t0 = Instant::now();
        for fm in mods {
            let xid = self.session.xid();
            Message::v13(xid, v13::Body::FlowMod(fm.clone())).encode(self.session.transmit())?;
            if self.session.transmit().len() >= BATCH {
                self.flush()?;
            }
        }
        let barrier = self.send(v13::Body::BarrierRequest)?;
        let deadline = Instant::now() + self.patience;
        let mut errors = 0;
        loop {
            while let Some(m) = self.inbox.pop_front() {
                match m.body {
                    Body::V13(v13::Body::BarrierReply) if m.xid == barrier => {
                        return Ok(Installed {
                            seconds: t0.elapsed().as_secs_f64(),
                            errors,
                        })
                    }
                    Body::V13(v13::Body::Error(_)) => errors += 1,
                    _ => {}
                }
            }
            self.pump(deadline, "barrier reply")?;
        }
    }

    /// One multipart request; the reply bodies (several when the switch
    /// splits its answer).
    pub fn multipart(&mut self, body: v13::MultipartRequestBody) -> Result<Vec<v13::MultipartReplyBody>> {
        let xid = self.send(v13::Body::MultipartRequest(v13::MultipartRequest { flags: 0, body }))?;
        let deadline = Instant::now() + self.patience;
        let mut parts = Vec::new();
        loop {
            while let Some(m) = self.inbox.pop_front() {
                if m.xid != xid {
                    continue;
                }
                match m.body {
                    Body::V13(v13::Body::MultipartReply(r)) => {
                        parts.push(r.body);
                        if r.flags & v13::MULTIPART_MORE == 0 {
                            return Ok(parts);
                        }
                    }
                    Body::V13(v13::Body::Error(e)) => return Err(ClientError::Refused(format!("{e:?}"))),
                    _ => {}
                }
            }
            self.pump(deadline, "multipart reply")?;
        }
    }

    /// The switch's port statistics.
    pub fn port_stats(&mut self) -> Result<Vec<v13::PortStats>> {
        let parts = self.multipart(v13::MultipartRequestBody::PortStats {
            port_no: v13::port::ANY,
        })?;
        Ok(parts
            .into_iter()
            .flat_map(|b| match b {
                v13::MultipartReplyBody::PortStats(v) => v,
                _ => Vec::new(),
            })
            .collect())
    }

    /// Every flow entry of every table.
    pub fn flows(&mut self) -> Result<Vec<v13::FlowStats>> {
        let parts = self.multipart(v13::MultipartRequestBody::Flow(v13::FlowStatsRequest::all()))?;
        Ok(parts
            .into_iter()
            .flat_map(|b| match b {
                v13::MultipartReplyBody::Flow(v) => v,
                _ => Vec::new(),
            })
            .collect())
    }

    /// The switch's own description: maker / hardware / software.
    pub fn describe(&mut self) -> Result<String> {
        for part in self.multipart(v13::MultipartRequestBody::Desc)? {
            if let v13::MultipartReplyBody::Desc(d) = part {
                return Ok(format!("{} / {} / {}", d.mfr_desc, d.hw_desc, d.sw_desc));
            }
        }
        Err(ClientError::Refused("no description in the reply".into()))
    }

    /// Rules in the switch's tables, by its table statistics.
    pub fn active_rules(&mut self) -> Result<u64> {
        let parts = self.multipart(v13::MultipartRequestBody::Table)?;
        Ok(parts
            .iter()
            .map(|b| match b {
                v13::MultipartReplyBody::Table(v) => v.iter().map(|t| t.active_count as u64).sum(),
                _ => 0,
            })
            .sum())
    }

    /// Writes what the session has queued.
    fn flush(&mut self) -> Result<()> {
        let out = self.session.take_transmit();
        let wrote = self.stream.write_all(&out);
        self.session.give_back(out);
        Ok(wrote?)
    }

    /// Reads once (until `deadline` at most), feeds the session, and moves
    /// its events to the inbox.
    fn pump(&mut self, deadline: Instant, what: &'static str) -> Result<()> {
        let now = Instant::now();
        if now >= deadline {
            return Err(ClientError::Timeout(what));
        }
        self.stream
            .set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))))?;
        match self.stream.read(&mut self.rd) {
            Ok(0) => self.session.on_eof(),
            Ok(n) => {
                let (session, rd) = (&mut self.session, &self.rd);
                session.on_bytes(&rd[..n], Instant::now(), &mut |_, _| {});
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(e.into()),
        }
        while let Some(ev) = self.session.poll_event() {
            match ev {
                Event::Up(info) => self.info = Some(info),
                Event::Message(m) => self.inbox.push_back(m),
                Event::Malformed(_) => {}
                Event::Closed(r) => {
                    self.flush().ok();
                    return Err(ClientError::Closed(r));
                }
            }
            if self.session.held() {
                self.session.resume(Instant::now(), &mut |_, _| {});
            }
        }
        self.flush()
    }
}

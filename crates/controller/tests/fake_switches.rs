//! The controller against emulated switches written here: the malformed
//! input cases (each answered with the right OFPT_ERROR or a close, while
//! another switch keeps being served), duplicate datapath ids, and session
//! capacity (thousands of handshakes).

use controller::runtime::{self, Config};
use ofwire::error::{BadRequestCode, HelloFailedCode};
use ofwire::{v10, v13, Body, ErrorCode, Framer, Hello, Message, OFP10_VERSION, OFP13_VERSION};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn start(handshake_timeout: Duration) -> runtime::Handle {
    runtime::start(Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        workers: 2,
        apps: vec![controller::catalog::by_name("l2-learning").unwrap()],
        session: ofconn::Config {
            handshake_timeout,
            ..Default::default()
        },
        verbose: std::env::var_os("CTL_VERBOSE").is_some(),
        ..Default::default()
    })
    .unwrap()
}

struct Fake {
    s: TcpStream,
    framer: Framer,
    version: u8,
    xid: u32,
}

impl Fake {
    async fn raw(addr: SocketAddr) -> Fake {
        Fake {
            s: TcpStream::connect(addr).await.unwrap(),
            framer: Framer::default(),
            version: OFP10_VERSION,
            xid: 1000,
        }
    }

    /// Connects and completes the handshake as a switch.
    async fn connect(addr: SocketAddr, version: u8, dpid: u64) -> Fake {
        let mut f = Fake::raw(addr).await;
        f.version = version;
        f.send(&Message::new(version, 1, Body::Hello(Hello::with_versions(&[version]))))
            .await;
        loop {
            let m = f.recv().await.expect("controller closed during handshake");
            match m.body {
                Body::V10(v10::Body::FeaturesRequest) => {
                    let fr = v10::FeaturesReply::bare(dpid);
                    f.send(&Message::v10(m.xid, v10::Body::FeaturesReply(fr))).await;
                }
                Body::V13(v13::Body::FeaturesRequest) => {
                    let fr = v13::FeaturesReply {
                        datapath_id: dpid,
                        n_buffers: 0,
                        n_tables: 1,
                        auxiliary_id: 0,
                        capabilities: 0,
                        reserved: 0,
                    };
                    f.send(&Message::v13(m.xid, v13::Body::FeaturesReply(fr))).await;
                }
                Body::V13(v13::Body::MultipartRequest(_)) => {
                    let r = v13::MultipartReply {
                        flags: 0,
                        body: v13::MultipartReplyBody::PortDesc(vec![]),
                    };
                    f.send(&Message::v13(m.xid, v13::Body::MultipartReply(r))).await;
                }
                Body::V10(v10::Body::SetConfig(_)) | Body::V13(v13::Body::SetConfig(_)) => return f,
                _ => {}
            }
        }
    }

    async fn send(&mut self, m: &Message) {
        self.send_raw(&m.to_bytes().unwrap()).await;
    }

    async fn send_raw(&mut self, b: &[u8]) {
        let _ = self.s.write_all(b).await;
    }

    /// The next message, or None on close or after 5 s of silence.
    async fn recv(&mut self) -> Option<Message> {
        let mut buf = [0u8; 4096];
        loop {
            if let Some(m) = self.framer.next_message().unwrap() {
                return Some(ofwire::decode(m).unwrap());
            }
            match tokio::time::timeout(Duration::from_secs(5), self.s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return None,
                Ok(Ok(n)) => self.framer.push(&buf[..n]),
            }
        }
    }

    /// Sends an ECHO_REQUEST and returns what came before its reply.
    async fn echo(&mut self) -> Result<Vec<Message>, String> {
        self.xid += 1;
        let xid = self.xid;
        let req = if self.version == OFP10_VERSION {
            Message::v10(xid, v10::Body::EchoRequest(Default::default()))
        } else {
            Message::v13(xid, v13::Body::EchoRequest(Default::default()))
        };
        self.send(&req).await;
        let mut before = Vec::new();
        loop {
            match self.recv().await {
                None => return Err(format!("no ECHO_REPLY; got {before:?}")),
                Some(m) if m.xid == xid && m.type_name() == "ECHO_REPLY" => return Ok(before),
                Some(m) => before.push(m),
            }
        }
    }

    async fn expect_error(&mut self, xid: u32, code: ErrorCode) {
        loop {
            let m = self
                .recv()
                .await
                .unwrap_or_else(|| panic!("closed before the error {code}"));
            let got = match &m.body {
                Body::V10(v10::Body::Error(e)) | Body::V13(v13::Body::Error(e)) => e.code,
                _ => continue,
            };
            assert_eq!((m.xid, got), (xid, code));
            return;
        }
    }

    async fn expect_close(&mut self) -> Vec<Message> {
        let mut got = Vec::new();
        while let Some(m) = self.recv().await {
            got.push(m);
        }
        got
    }
}

fn packet_in10(xid: u32, frame: Vec<u8>) -> Message {
    Message::v10(
        xid,
        v10::Body::PacketIn(v10::PacketIn {
            buffer_id: 7,
            total_len: frame.len() as u16,
            in_port: 1,
            reason: ofwire::PacketInReason::NoMatch,
            data: ofwire::Bytes(frame),
        }),
    )
}

fn arp_frame(body_is_ipv4: bool) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06]);
    if body_is_ipv4 {
        f.extend_from_slice(&[
            0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0, 53, 0, 53, 0, 8, 0, 0,
        ]);
    } else {
        f.extend_from_slice(&[
            0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2,
        ]);
    }
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_input_gets_the_right_answer_and_other_switches_keep_working() {
    let ctl = start(Duration::from_secs(1));
    let addr = ctl.local_addrs[0];
    let mut healthy = Fake::connect(addr, OFP13_VERSION, 0x100).await;

    // 1. A length field below the header: the stream cannot be trusted, closed.
    let mut sw = Fake::connect(addr, OFP10_VERSION, 1).await;
    sw.send_raw(&[1, 2, 0, 4, 0, 0, 0, 9]).await;
    sw.expect_close().await;
    healthy.echo().await.unwrap();

    // 2. A version the session did not negotiate.
    let mut sw = Fake::connect(addr, OFP10_VERSION, 2).await;
    sw.send(&Message::v13(0x21, v13::Body::BarrierReply)).await;
    sw.expect_error(0x21, ErrorCode::BadRequest(BadRequestCode::BadVersion))
        .await;
    sw.echo().await.unwrap();

    // 3. A header type that does not match the body (BARRIER_REPLY with a body).
    sw.send_raw(&[1, 19, 0, 12, 0, 0, 0, 0x22, 9, 9, 9, 9]).await;
    sw.expect_error(0x22, ErrorCode::BadRequest(BadRequestCode::BadLen))
        .await;

    // 4. ARP ethertype carrying IPv4: dropped, nothing installed; a real ARP is flooded.
    sw.send(&packet_in10(0x23, arp_frame(true))).await;
    let before = sw.echo().await.unwrap();
    assert!(before.is_empty(), "the malformed ARP was answered: {before:?}");
    sw.send(&packet_in10(0x24, arp_frame(false))).await;
    let before = sw.echo().await.unwrap();
    assert!(
        matches!(&before[..], [m] if m.type_name() == "PACKET_OUT"),
        "{before:?}"
    );

    // 5. A port name without NUL.
    let mut ps = Message::v10(
        0x25,
        v10::Body::PortStatus(v10::PortStatus {
            reason: ofwire::PortReason::Add,
            desc: v10::PhyPort::new(3, ofwire::MacAddr([2; 6]), "p3"),
        }),
    )
    .to_bytes()
    .unwrap();
    ps[8 + 8 + 8..8 + 8 + 24].copy_from_slice(b"NAMEWITHOUTNUL!!");
    sw.send_raw(&ps).await;
    sw.expect_error(0x25, ErrorCode::BadRequest(BadRequestCode::BadLen))
        .await;

    // 6. An unknown message type.
    sw.send_raw(&[1, 99, 0, 8, 0, 0, 0, 0x26]).await;
    sw.expect_error(0x26, ErrorCode::BadRequest(BadRequestCode::BadType))
        .await;
    sw.echo().await.unwrap();

    // 7. A message before HELLO: HELLO_FAILED, then closed.
    let mut early = Fake::raw(addr).await;
    early.send(&Message::v10(0x27, v10::Body::BarrierReply)).await;
    let got = early.expect_close().await;
    assert!(
        got.iter().any(|m| matches!(&m.body, Body::V10(v10::Body::Error(e)) if e.code == ErrorCode::HelloFailed(HelloFailedCode::Eperm) && m.xid == 0x27)),
        "{got:?}"
    );

    // 8. No HELLO at all: closed after the handshake timeout.
    let mut mute = Fake::raw(addr).await;
    let t = std::time::Instant::now();
    mute.expect_close().await;
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "a silent peer was kept {:?}",
        t.elapsed()
    );

    // 9. No common version.
    let mut v5 = Fake::raw(addr).await;
    v5.send(&Message::new(6, 1, Body::Hello(Hello::with_versions(&[5, 6]))))
        .await;
    let got = v5.expect_close().await;
    assert!(got.iter().any(|m| matches!(&m.body, Body::V13(v13::Body::Error(e)) if e.code == ErrorCode::HelloFailed(HelloFailedCode::Incompatible))), "{got:?}");

    healthy.echo().await.unwrap();
    assert_eq!(ctl.switches(), vec![2, 0x100]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_datapath_id_replaces_the_older_session() {
    let ctl = start(Duration::from_secs(5));
    let addr = ctl.local_addrs[0];
    let mut old = Fake::connect(addr, OFP13_VERSION, 0x42).await;
    let mut new = Fake::connect(addr, OFP10_VERSION, 0x42).await;
    old.expect_close().await;
    new.echo().await.unwrap();
    assert_eq!(ctl.switches(), vec![0x42]);
    assert_eq!(
        ctl.stats.replaced_duplicates.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_sessions_complete_their_handshakes() {
    let ctl = start(Duration::from_secs(30));
    let addr = ctl.local_addrs[0];
    const N: u64 = 3000;
    let mut tasks = Vec::new();
    for i in 0..N {
        tasks.push(tokio::spawn(async move {
            let version = if i % 2 == 0 { OFP10_VERSION } else { OFP13_VERSION };
            Fake::connect(addr, version, 0x1_0000 + i).await
        }));
    }
    let mut switches = Vec::new();
    for t in tasks {
        switches.push(t.await.unwrap());
    }
    assert_eq!(
        ctl.switches().len() as u64,
        N,
        "not every session completed its handshake"
    );
    // And they are all still served.
    for sw in switches.iter_mut().step_by(97) {
        sw.echo().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_from_other_threads_get_their_replies() {
    let ctl = std::sync::Arc::new(start(Duration::from_secs(5)));
    let mut sw = Fake::connect(ctl.local_addrs[0], OFP13_VERSION, 0x77).await;
    assert_eq!(ctl.switch_infos()[0].datapath_id, 0x77);
    let c = ctl.clone();
    let req = tokio::spawn(async move {
        let body = v13::MultipartRequestBody::Desc;
        c.request(
            0x77,
            Body::V13(v13::Body::MultipartRequest(v13::MultipartRequest { flags: 0, body })),
            runtime::Wait::Reply,
        )
        .await
    });
    // The fake switch answers in two parts.
    let m = loop {
        let m = sw.recv().await.unwrap();
        if m.type_name() == "MULTIPART_REQUEST" {
            break m;
        }
    };
    for more in [v13::MULTIPART_MORE, 0] {
        let body = v13::MultipartReplyBody::Desc(ofwire::DescStats::default());
        sw.send(&Message::v13(
            m.xid,
            v13::Body::MultipartReply(v13::MultipartReply { flags: more, body }),
        ))
        .await;
    }
    let got = req.await.unwrap().unwrap();
    assert_eq!(got.len(), 2);
    // A barrier-confirmed FLOW_MOD, and an error reply failing the request.
    let c = ctl.clone();
    let req = tokio::spawn(async move {
        c.request(
            0x77,
            Body::V13(v13::Body::FlowMod(v13::FlowMod::add(5))),
            runtime::Wait::Barrier,
        )
        .await
    });
    let (mut fm_xid, mut barrier_xid) = (0, 0);
    while barrier_xid == 0 {
        let m = sw.recv().await.unwrap();
        match m.type_name() {
            "FLOW_MOD" => fm_xid = m.xid,
            "BARRIER_REQUEST" => barrier_xid = m.xid,
            _ => {}
        }
    }
    assert_ne!(fm_xid, 0);
    sw.send(&Message::v13(barrier_xid, v13::Body::BarrierReply)).await;
    assert!(req.await.unwrap().unwrap().is_empty());
    let c = ctl.clone();
    let req = tokio::spawn(async move {
        c.request(
            0x77,
            Body::V13(v13::Body::FlowMod(v13::FlowMod::add(6))),
            runtime::Wait::Barrier,
        )
        .await
    });
    let fm = loop {
        let m = sw.recv().await.unwrap();
        if m.type_name() == "FLOW_MOD" {
            break m;
        }
    };
    let err = ofwire::ErrorMsg {
        code: ErrorCode::FlowModFailed(ofwire::error::FlowModFailedCode::TableFull),
        data: ofwire::Bytes(vec![]),
    };
    sw.send(&Message::v13(fm.xid, v13::Body::Error(err))).await;
    let e = req.await.unwrap().unwrap_err();
    assert!(matches!(e, runtime::RequestError::Refused(_)), "{e:?}");
    assert!(e.to_string().contains("error"), "{e}");
    let e = ctl
        .request(0x99, Body::V13(v13::Body::BarrierRequest), runtime::Wait::Reply)
        .await
        .unwrap_err();
    assert_eq!(e, runtime::RequestError::NoSwitch(0x99));
    assert!(e.to_string().contains("no switch"), "{e}");
}

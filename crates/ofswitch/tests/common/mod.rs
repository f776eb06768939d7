//! An OpenFlow 1.3 client for the switch's tests: HELLO, send, wait for a
//! message, barrier.

use ofwire::v13::Body as B;
use ofwire::{Body, Message};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

pub struct Client {
    s: std::net::TcpStream,
    framer: ofwire::header::Framer,
}

impl Client {
    pub fn connect(addr: std::net::SocketAddr) -> Client {
        let s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut c = Client {
            s,
            framer: ofwire::header::Framer::default(),
        };
        let hello = Message {
            version: ofwire::OFP13_VERSION,
            xid: 1,
            body: Body::Hello(ofwire::header::Hello::with_versions(&[ofwire::OFP13_VERSION])),
        };
        c.s.write_all(&hello.to_bytes().unwrap()).unwrap();
        c
    }

    pub fn send(&mut self, xid: u32, b: B) {
        self.s.write_all(&Message::v13(xid, b).to_bytes().unwrap()).unwrap();
    }

    /// The next message for which `pick` returns something, within 3 s.
    pub fn wait<T>(&mut self, mut pick: impl FnMut(&Message) -> Option<T>) -> T {
        let t = Instant::now();
        let mut buf = [0u8; 65536];
        loop {
            while let Ok(Some(raw)) = self.framer.next_message() {
                if let Ok(m) = ofwire::decode(raw) {
                    if let Some(v) = pick(&m) {
                        return v;
                    }
                }
            }
            assert!(t.elapsed() < Duration::from_secs(3), "timed out waiting for a message");
            match self.s.read(&mut buf) {
                Ok(0) => panic!("switch closed the connection"),
                Ok(n) => self.framer.push(&buf[..n]),
                Err(_) => {}
            }
        }
    }

    pub fn barrier(&mut self, xid: u32) {
        self.send(xid, B::BarrierRequest);
        self.wait(|m| (m.xid == xid && matches!(m.body, Body::V13(B::BarrierReply))).then_some(()));
    }
}

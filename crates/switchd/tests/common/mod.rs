//! The switch's tests talk to it through the project's one controller-side
//! client (`ofconn::blocking`); this adapter only turns its errors into
//! test failures.

use ofwire::v13::Body as B;
use ofwire::Message;
use std::time::Duration;

pub struct Client(ofconn::blocking::Client);

impl Client {
    pub fn connect(addr: std::net::SocketAddr) -> Client {
        Client(ofconn::blocking::Client::connect(addr).expect("OpenFlow handshake with the switch"))
    }

    pub fn send(&mut self, xid: u32, b: B) {
        self.0.send_xid(xid, b).expect("send to the switch");
    }

    /// The next message for which `pick` returns something, within 3 s.
    pub fn wait<T>(&mut self, pick: impl FnMut(&Message) -> Option<T>) -> T {
        self.0
            .wait(Duration::from_secs(3), pick)
            .expect("waiting for a message")
    }

    pub fn barrier(&mut self, xid: u32) {
        self.send(xid, B::BarrierRequest);
        self.wait(|m| (m.xid == xid && matches!(m.body, ofwire::Body::V13(B::BarrierReply))).then_some(()));
    }
}

//! Writing an application: this one counts PACKET_INs per switch and logs
//! port changes, and runs in front of the built-in `l2-learning` (apps see
//! events in the order given; returning `Verdict::Continue` passes a
//! PACKET_IN on). Run it, then point switches at 127.0.0.1:6653:
//!
//!     cargo run -p controller --example custom_app
//!     sudo sdnlab net up linear,3 --switch ovs --controller 127.0.0.1:6653

use controller::app::{SwitchApp, Verdict};
use controller::runtime::{self, Config};
use ofconn::{Session, SwitchInfo};
use ofwire::hot::PacketInView;
use ofwire::{v10, v13, Body, Message};
use std::sync::Arc;

/// One instance per switch: its fields are that switch's state.
#[derive(Default)]
struct Counter {
    dpid: u64,
    packet_ins: u64,
}

impl SwitchApp for Counter {
    fn name(&self) -> &'static str {
        "counter"
    }

    fn switch_up(&mut self, _sw: &mut Session, info: &SwitchInfo) {
        self.dpid = info.datapath_id;
        println!("switch {:#x} up with {} ports", info.datapath_id, info.ports.len());
    }

    fn packet_in(&mut self, _sw: &mut Session, pi: &PacketInView) -> Verdict {
        self.packet_ins += 1;
        if self.packet_ins.is_power_of_two() {
            println!(
                "switch {:#x}: {} PACKET_INs (last from port {})",
                self.dpid, self.packet_ins, pi.in_port
            );
        }
        Verdict::Continue // let l2-learning answer it
    }

    fn message(&mut self, sw: &mut Session, msg: &Message) {
        match &msg.body {
            Body::V10(v10::Body::PortStatus(p)) => {
                println!("switch {:#x}: port {} {:?}", self.dpid, p.desc.name, p.reason)
            }
            Body::V13(v13::Body::PortStatus(p)) => {
                println!("switch {:#x}: port {} {:?}", self.dpid, p.desc.name, p.reason)
            }
            _ => {}
        }
        // Sending is writing into the session: e.g. a barrier after each change.
        if sw.version() == ofwire::OFP13_VERSION && msg.type_name() == "PORT_STATUS" {
            sw.send13(v13::Body::BarrierRequest);
        }
    }

    fn switch_down(&mut self, dpid: u64) {
        println!("switch {dpid:#x} down after {} PACKET_INs", self.packet_ins);
    }
}

fn main() {
    let handle = runtime::start(Config {
        listen: vec!["127.0.0.1:6653".parse().unwrap()],
        workers: 2,
        apps: vec![
            Arc::new(|_: &controller::app::Context| Box::new(Counter::default()) as Box<dyn SwitchApp>),
            controller::catalog::by_name("l2-learning").unwrap(),
        ],
        session: ofconn::Config::default(),
        verbose: true,
        ..Default::default()
    })
    .unwrap_or_else(|e| {
        eprintln!("custom_app: {e}");
        std::process::exit(2)
    });
    println!("listening on {:?}; Ctrl-C stops", handle.local_addrs);
    loop {
        std::thread::park();
    }
}

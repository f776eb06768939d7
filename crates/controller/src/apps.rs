//! The built-in applications: `l2-learning` (per-switch MAC learning, the
//! app every paper benchmarks), `hub`, and `null` (answers every PACKET_IN
//! with one fixed FLOW_MOD: the ceiling of what a benchmark can measure).

use crate::app::{SwitchApp, Verdict};
use crate::mactable::MacTable;
use ofconn::{Session, SwitchInfo};
use ofwire::hot::{
    write_flow_mod10, write_flow_mod13, write_packet_out10, write_packet_out13, Learnt, LearntFlow, PacketInView,
};
use ofwire::{v10, v13, MacAddr, OFP10_VERSION};

/// Idle timeout of learnt flows, seconds.
pub const IDLE_TIMEOUT: u16 = 60;

fn flood_port(version: u8) -> u32 {
    if version == OFP10_VERSION {
        v10::port::FLOOD as u32
    } else {
        v13::port::FLOOD
    }
}

/// In 1.3 a table miss is dropped unless a flow says otherwise: send misses to us.
pub fn install_table_miss(sw: &mut Session, info: &SwitchInfo) {
    if info.version == ofwire::OFP13_VERSION {
        let mut fm = v13::FlowMod::add(0);
        fm.instructions = vec![v13::Instruction::ApplyActions(vec![v13::Action::Output {
            port: v13::port::CONTROLLER,
            max_len: v13::CONTROLLER_MAX_LEN_NO_BUFFER,
        }])];
        sw.send13(v13::Body::FlowMod(fm));
    }
}

/// Whether a frame is sane enough to learn from: a full Ethernet header, and
/// an ARP body that really is Ethernet/IPv4 ARP when the ethertype says ARP
/// (RFC 8456's "ARP ethertype carrying IPv4" exception case).
pub fn frame_is_sane(data: &[u8]) -> bool {
    if data.len() < 14 {
        return false;
    }
    if data[12..14] == [0x08, 0x06] {
        let arp = &data[14..];
        return arp.len() >= 28 && arp[0..6] == [0x00, 0x01, 0x08, 0x00, 6, 4];
    }
    true
}

/// Writes "send this packet out of `port`": a PACKET_OUT naming the buffer,
/// or carrying the data when the switch did not buffer it.
fn packet_out(sw: &mut Session, pi: &PacketInView, port: u32) {
    let xid = sw.xid();
    let version = sw.version();
    let data = if pi.buffer_id == v13::NO_BUFFER { pi.data } else { &[] };
    let out = sw.transmit();
    let r = if version == OFP10_VERSION {
        let port = port as u16;
        let in_port = pi.in_port as u16;
        write_packet_out10(
            out,
            xid,
            pi.buffer_id,
            in_port,
            &[v10::Action::Output { port, max_len: 0 }],
            data,
        )
    } else {
        write_packet_out13(
            out,
            xid,
            pi.buffer_id,
            pi.in_port,
            &[v13::Action::Output { port, max_len: 0 }],
            data,
        )
    };
    // A PACKET_IN close to 64 KiB cannot be sent back with its data: drop it.
    let _ = r;
}

/// Per-switch MAC learning.
pub struct L2Learning {
    /// Where each source was last seen (`MacTable`: one word per address,
    /// hashed with a per-table random seed, bounded).
    macs: MacTable,
    /// The answer, encoded once per version; only the match fields, buffer
    /// id and output port change per packet.
    flow10: LearntFlow,
    flow13: LearntFlow,
    pub malformed: u64,
}

/// A MAC address as the low 48 bits of a word.
fn mac_key(m: MacAddr) -> u64 {
    let b = m.0;
    u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]])
}

impl Default for L2Learning {
    fn default() -> Self {
        let mut fm10 = v10::FlowMod {
            match_: v10::Match::all(),
            cookie: 0x5d1a,
            command: v10::FlowModCommand::Add,
            idle_timeout: IDLE_TIMEOUT,
            hard_timeout: 0,
            priority: 100,
            buffer_id: v10::NO_BUFFER,
            out_port: v10::port::NONE,
            flags: 0,
            actions: Vec::new(),
        };
        fm10.match_.wildcards &= !(v10::wildcards::IN_PORT | v10::wildcards::DL_SRC | v10::wildcards::DL_DST);
        let mut fm13 = v13::FlowMod::add(100);
        fm13.idle_timeout = IDLE_TIMEOUT;
        fm13.cookie = 0x5d1a;
        L2Learning {
            macs: MacTable::default(),
            flow10: LearntFlow::v10(&fm10),
            flow13: LearntFlow::v13(&fm13),
            malformed: 0,
        }
    }
}

impl SwitchApp for L2Learning {
    fn name(&self) -> &'static str {
        "l2-learning"
    }

    fn switch_up(&mut self, sw: &mut Session, info: &SwitchInfo) {
        install_table_miss(sw, info);
    }

    fn packet_in(&mut self, sw: &mut Session, pi: &PacketInView) -> Verdict {
        if !frame_is_sane(pi.data) {
            self.malformed += 1;
            return Verdict::Done;
        }
        let mut dst = MacAddr::ZERO;
        let mut src = MacAddr::ZERO;
        dst.0.copy_from_slice(&pi.data[0..6]);
        src.0.copy_from_slice(&pi.data[6..12]);
        if !src.is_multicast() {
            self.macs.insert(mac_key(src), pi.in_port);
        }
        let out_port = if dst.is_multicast() {
            None
        } else {
            self.macs.get(mac_key(dst))
        };
        let Some(port) = out_port else {
            packet_out(sw, pi, flood_port(sw.version()));
            return Verdict::Done;
        };
        let xid = sw.xid();
        let flow = match sw.version() {
            OFP10_VERSION => &self.flow10,
            _ => &self.flow13,
        };
        let f = Learnt {
            in_port: pi.in_port,
            eth_src: src,
            eth_dst: dst,
            buffer_id: pi.buffer_id,
            out_port: port,
        };
        flow.write(sw.transmit(), xid, &f);
        if pi.buffer_id == v13::NO_BUFFER {
            packet_out(sw, pi, port);
        }
        Verdict::Done
    }
}

/// Floods every packet.
pub struct Hub;

impl SwitchApp for Hub {
    fn name(&self) -> &'static str {
        "hub"
    }
    fn switch_up(&mut self, sw: &mut Session, info: &SwitchInfo) {
        install_table_miss(sw, info);
    }
    fn packet_in(&mut self, sw: &mut Session, pi: &PacketInView) -> Verdict {
        packet_out(sw, pi, flood_port(sw.version()));
        Verdict::Done
    }
}

/// Answers every PACKET_IN with the same FLOW_MOD and nothing else: the
/// least an app can do, so what the controller's framework costs alone.
/// The FLOW_MOD is encoded once per version; each answer is a copy with
/// its xid and buffer id patched in.
pub struct NullResponder {
    v10: Vec<u8>,
    v13: Vec<u8>,
}

/// Where a FLOW_MOD's buffer id is: after the 1.0 header, match, cookie,
/// command and three 16-bit fields; after the 1.3 header, cookie, mask,
/// table, command and three 16-bit fields.
const FLOW_MOD_BUFFER_AT_10: usize = 64;
const FLOW_MOD_BUFFER_AT_13: usize = 32;

/// The null app's 1.0 FLOW_MOD: match everything, priority 1, no actions.
fn null_flow_mod10(buffer_id: u32) -> v10::FlowMod {
    v10::FlowMod {
        match_: v10::Match::all(),
        cookie: 0,
        command: v10::FlowModCommand::Add,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: 1,
        buffer_id,
        out_port: v10::port::NONE,
        flags: 0,
        actions: Vec::new(),
    }
}

impl Default for NullResponder {
    fn default() -> Self {
        let (mut v10, mut v13) = (Vec::new(), Vec::new());
        let _ = write_flow_mod10(&mut v10, 0, &null_flow_mod10(0), &[]);
        let _ = write_flow_mod13::<&[v13::Action]>(&mut v13, 0, &v13::FlowMod::add(1), &[], &[]);
        NullResponder { v10, v13 }
    }
}

/// Appends `template` with `xid` and the buffer id (at `buffer_at`) patched.
fn patched(out: &mut Vec<u8>, template: &[u8], buffer_at: usize, xid: u32, buffer_id: u32) {
    let start = out.len();
    out.extend_from_slice(template);
    out[start + 4..start + 8].copy_from_slice(&xid.to_be_bytes());
    out[start + buffer_at..start + buffer_at + 4].copy_from_slice(&buffer_id.to_be_bytes());
}

impl SwitchApp for NullResponder {
    fn name(&self) -> &'static str {
        "null"
    }
    fn packet_in(&mut self, sw: &mut Session, pi: &PacketInView) -> Verdict {
        let xid = sw.xid();
        let (template, at) = match sw.version() {
            OFP10_VERSION => (&self.v10, FLOW_MOD_BUFFER_AT_10),
            _ => (&self.v13, FLOW_MOD_BUFFER_AT_13),
        };
        patched(sw.transmit(), template, at, xid, pi.buffer_id);
        Verdict::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The null app's answer is what the encoder writes for the same xid
    /// and buffer id, in both versions.
    #[test]
    fn the_null_answer_is_the_encoders() {
        let n = NullResponder::default();
        for (xid, buffer) in [(7u32, 0x0102_0304u32), (0xfeed_beef, 0xa0b0_c0d0)] {
            let (mut want, mut got) = (Vec::new(), vec![9u8]);
            write_flow_mod10(&mut want, xid, &null_flow_mod10(buffer), &[]).unwrap();
            patched(&mut got, &n.v10, FLOW_MOD_BUFFER_AT_10, xid, buffer);
            assert_eq!(got[1..], want[..]);
            let mut fm13 = v13::FlowMod::add(1);
            fm13.buffer_id = buffer;
            let (mut want, mut got) = (Vec::new(), Vec::new());
            write_flow_mod13::<&[v13::Action]>(&mut want, xid, &fm13, &[], &[]).unwrap();
            patched(&mut got, &n.v13, FLOW_MOD_BUFFER_AT_13, xid, buffer);
            assert_eq!(got, want);
        }
    }
}

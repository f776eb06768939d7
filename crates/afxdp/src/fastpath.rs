//! An in-kernel fast path for a switch's AF_XDP ports: flows whose plan is
//! "out of port P, unchanged" are forwarded by the XDP program itself
//! (`bpf_redirect_map` into a DEVMAP), so their frames never cross into
//! user space: no copy into the UMEM, no skb built to send them again.
//!
//! The switch decides what goes here; this module only keeps the kernel's
//! side of it:
//! - `flows4` and `flows6`, hash maps from a `FlowKey` (its first 32
//!   bytes for IPv4, all 64 for IPv6, so an IPv4 lookup hashes no more
//!   than it needs) to the output port's DEVMAP slot
//!   with packet and byte counters the program adds to atomically, so
//!   the switch can fold them into its rule, table and port counters;
//! - `ports`, the DEVMAP: slot (the switch's port number) to ifindex;
//! - `generation`, one number: an entry installed under another generation
//!   is ignored (its frames take the slow path again), so one write
//!   invalidates every entry at once; the switch bumps it whenever its
//!   tables change, before it answers a BARRIER.
//!
//! A `FlowKey` holds every header field an OpenFlow 1.3 match can see in
//! an IPv4 frame without options or fragmentation, or an IPv6 frame whose
//! next header is TCP, UDP, SCTP or ICMPv6 (no extension headers), either
//! untagged or with one 802.1Q tag (TPID 0x8100): in_port, the VLAN id
//! and priority, Ethernet addresses and type, ToS or traffic class (DSCP
//! and ECN), the IPv6 flow label, IP protocol and addresses, and
//! TCP/UDP/SCTP ports or ICMP type and code. TCP, UDP and SCTP frames need
//! their whole transport header (as the switch's own parser does before it
//! reads ports). Any other frame (two tags, TPID 0x88a8, ARP, IPv4 with
//! options, fragments, IPv6 extension headers, neighbour discovery,
//! truncated transport headers) always takes the slow path. `FlowKey::of`
//! builds the same bytes in user space as the program does in the kernel.
//!
//! A redirect into a veth needs its peer to take XDP frames (an XDP
//! program or GRO on there); otherwise the kernel drops them (kernel 6.18
//! counts them as receive drops of the veth they came in by). Real NICs
//! with native XDP take them. `netdev::NetdevQuery` tells which do now;
//! the switch keeps a port that does not out of the DEVMAP
//! (`clear_port`), and the program sends a held flow's frames for an
//! empty slot to the slow path instead.

use crate::bpf::{
    bpf, bpf_fd, insn, map_lookup, map_update, Attr, Insn, BPF_FUNC_REDIRECT_MAP, BPF_MAP_CREATE, BPF_MAP_TYPE_DEVMAP,
    BPF_PSEUDO_MAP_FD,
};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_MAP_LOOKUP_BATCH: libc::c_long = 24;
const BPF_MAP_DELETE_BATCH: libc::c_long = 27;
const BPF_MAP_TYPE_HASH: u32 = 1;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_PSEUDO_MAP_VALUE: u8 = 2;
const BPF_FUNC_MAP_LOOKUP_ELEM: i32 = 1;
const BPF_FUNC_XDP_GET_BUFF_LEN: i32 = 188;
const XDP_PASS: i32 = 2;
const XDP_REDIRECT: i32 = 4;

/// Bytes of a flow key (an IPv4 key uses the first 32, the rest zero) and
/// of a flow entry.
pub const KEY_LEN: usize = 64;
const KEY_LEN4: usize = 32;
const VALUE_LEN: usize = 32;
/// The shortest frame the program looks at (after any tag): an IPv4
/// header and 4 bytes of transport header; the same for IPv6.
const MIN_FRAME: usize = 38;
const MIN_FRAME6: usize = 58;
/// Where the transport header starts (after any tag).
const L4_AT: usize = 34;
const L4_AT6: usize = 54;
/// Where the transport word (ports, or ICMP type and code) goes in the key.
const KEY_L4: usize = 28;
const KEY_L4_6: usize = 60;
const PROTO_ICMP: u8 = 1;
const PROTO_ICMPV6: u8 = 58;

/// Where a tagged frame's tag control information goes in the key: the
/// half of in_port that is zero (port numbers of tagged flows are below
/// 65,536), with the DEI bit set to say "tagged" (OpenFlow cannot match
/// DEI, and the frame leaves with its own), as Open vSwitch marks it.
const TAG_AT: usize = if cfg!(target_endian = "little") { 2 } else { 0 };
/// The DEI bit of the tag control information as the program's 16-bit
/// load of the tag's bytes holds it.
const DEI_IN_REGISTER: i32 = u16::from_ne_bytes([0x10, 0]) as i32;

/// The fields of one flow, laid out as the XDP program builds them on its
/// stack (every field at its natural alignment, as the verifier asks),
/// zero where a field does not apply: in_port (4, native order; for a
/// tagged frame half of it holds the tag control information with DEI
/// set, see `TAG_AT`), Ethernet destination and source (12), Ethernet type
/// (2; the inner one of a tagged frame), then
/// - IPv4: ToS, protocol, source and destination (10), transport word (4);
/// - IPv6: 2 zero bytes, the header's first word (version, traffic class,
///   flow label; 4), source and destination (32), next header (1), 3 zero
///   bytes, transport word (4).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(C, align(8))]
pub struct FlowKey(pub [u8; KEY_LEN]);

impl FlowKey {
    /// The key of `frame` arriving on port `in_port`, or None if the
    /// program never looks such a frame up (it always takes the slow path).
    pub fn of(in_port: u32, frame: &[u8]) -> Option<FlowKey> {
        let tagged = frame.get(12..14) == Some(&[0x81, 0x00][..]);
        if tagged && in_port > 0xffff {
            return None;
        }
        // The frame after the tag, if any.
        let s = if tagged { 4 } else { 0 };
        let mut k = [0u8; KEY_LEN];
        k[0..4].copy_from_slice(&in_port.to_ne_bytes());
        if tagged {
            k[TAG_AT] = frame[14] | 0x10;
            k[TAG_AT + 1] = frame[15];
        }
        match frame.get(s + 12..s + 14)? {
            [0x08, 0x00] => {
                if frame.len() < MIN_FRAME + s
                    || frame[s + 14] != 0x45
                    || (frame[s + 20] & 0x3f) != 0
                    || frame[s + 21] != 0
                {
                    return None;
                }
                k[18] = frame[s + 15];
                k[19] = frame[s + 23];
                k[20..28].copy_from_slice(&frame[s + 26..s + 34]);
                let l4 = transport_word(frame, s + L4_AT, frame[s + 23], PROTO_ICMP)?;
                k[KEY_L4..KEY_L4 + 4].copy_from_slice(&l4);
            }
            [0x86, 0xdd] => {
                if frame.len() < MIN_FRAME6 + s || frame[s + 14] >> 4 != 6 {
                    return None;
                }
                k[20..24].copy_from_slice(&frame[s + 14..s + 18]);
                k[24..56].copy_from_slice(&frame[s + 22..s + 54]);
                // Anything else may be an extension header, which the
                // switch's parser looks behind and the program does not.
                if !matches!(frame[s + 20], 6 | 17 | 132 | PROTO_ICMPV6) {
                    return None;
                }
                k[56] = frame[s + 20];
                let l4 = transport_word(frame, s + L4_AT6, frame[s + 20], PROTO_ICMPV6)?;
                k[KEY_L4_6..KEY_L4_6 + 4].copy_from_slice(&l4);
            }
            _ => return None,
        }
        k[4..16].copy_from_slice(&frame[0..12]);
        k[16..18].copy_from_slice(&frame[s + 12..s + 14]);
        Some(FlowKey(k))
    }

    fn is_ipv6(&self) -> bool {
        self.0[16..18] == [0x86, 0xdd]
    }
}

/// The transport word of a key for protocol `proto` whose header starts
/// at `at`: TCP/UDP/SCTP ports (None unless the whole header is there),
/// ICMP type and code (`icmp`: 1 or 58; None for neighbour discovery and
/// router messages, whose match fields the key has no room for), or zero.
fn transport_word(frame: &[u8], at: usize, proto: u8, icmp: u8) -> Option<[u8; 4]> {
    let whole = match proto {
        6 => 20,
        17 => 8,
        132 => 12,
        p if p == icmp => {
            if icmp == PROTO_ICMPV6 && (133..=137).contains(&frame[at]) {
                return None;
            }
            return Some([frame[at], frame[at + 1], 0, 0]);
        }
        _ => return Some([0; 4]),
    };
    (frame.len() >= at + whole).then(|| frame[at..at + 4].try_into().expect("4 bytes"))
}

/// One entry: where the flow goes, under which generation, and what the
/// program has counted for it.
#[derive(Clone, Copy, Default, Debug)]
#[repr(C)]
struct Entry {
    out_slot: u32,
    generation: u32,
    packets: u64,
    bytes: u64,
    reserved: u64,
}

/// The maps one switch's ports share.
pub struct FastPath {
    flows4: OwnedFd,
    flows6: OwnedFd,
    ports: OwnedFd,
    generation: OwnedFd,
    current: std::sync::atomic::AtomicU32,
}

impl FastPath {
    /// Maps for up to `capacity` flows and ports numbered below `slots`.
    pub fn new(capacity: u32, slots: u32) -> io::Result<FastPath> {
        let create = |kind: u32, key: u32, value: u32, entries: u32, what: &str| {
            bpf_fd(
                BPF_MAP_CREATE,
                Attr::new().u32(0, kind).u32(4, key).u32(8, value).u32(12, entries),
                what,
            )
        };
        let flows4 = create(
            BPF_MAP_TYPE_HASH,
            KEY_LEN4 as u32,
            VALUE_LEN as u32,
            capacity.max(1),
            "creating the fast path's IPv4 flow map (needs root or CAP_BPF)",
        )?;
        let flows6 = create(
            BPF_MAP_TYPE_HASH,
            KEY_LEN as u32,
            VALUE_LEN as u32,
            capacity.max(1),
            "creating the fast path's IPv6 flow map",
        )?;
        let ports = create(
            BPF_MAP_TYPE_DEVMAP,
            4,
            4,
            slots.max(1),
            "creating the fast path's DEVMAP",
        )?;
        let generation = create(BPF_MAP_TYPE_ARRAY, 4, 8, 1, "creating the fast path's generation")?;
        let fp = FastPath {
            flows4,
            flows6,
            ports,
            generation,
            current: std::sync::atomic::AtomicU32::new(1),
        };
        fp.write_generation(1)?;
        Ok(fp)
    }

    fn write_generation(&self, g: u32) -> io::Result<()> {
        map_update(
            self.generation.as_raw_fd(),
            &0u32,
            &(g as u64),
            "setting the fast path's generation",
        )
    }

    /// Lets the program send frames out of interface `ifindex` as port `slot`.
    pub fn set_port(&self, slot: u32, ifindex: u32) -> io::Result<()> {
        map_update(self.ports.as_raw_fd(), &slot, &ifindex, "adding a port to the DEVMAP")
    }

    /// The interface port `slot` sends out of now (None: not in the
    /// DEVMAP).
    pub fn port(&self, slot: u32) -> io::Result<Option<u32>> {
        let mut ifindex = 0u32;
        match map_lookup(self.ports.as_raw_fd(), &slot, &mut ifindex, "reading the DEVMAP") {
            Ok(()) => Ok(Some(ifindex)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Stops the program sending frames out of port `slot`: the frames of
    /// flows held for it take the slow path (uncounted here) until
    /// `set_port` puts it back. No error if it was not there.
    pub fn clear_port(&self, slot: u32) -> io::Result<()> {
        delete_elem(
            self.ports.as_raw_fd(),
            &slot as *const u32 as u64,
            "taking a port out of the DEVMAP",
        )
    }

    /// Forwards `key`'s frames out of port `out_slot` from now on, until
    /// the next `invalidate` (replaces an entry for the same key, counters
    /// reset).
    pub fn insert(&self, key: &FlowKey, out_slot: u32) -> io::Result<()> {
        let e = Entry {
            out_slot,
            generation: self.current.load(std::sync::atomic::Ordering::Acquire),
            ..Entry::default()
        };
        // A map reads as many bytes of the key as its keys have.
        map_update(self.map_of(key), &key.0, &e, "adding a flow to the fast path")
    }

    /// The packets and bytes the program has forwarded for `key` since it
    /// was inserted (None: no such entry).
    pub fn counts(&self, key: &FlowKey) -> io::Result<Option<(u64, u64)>> {
        let mut e = Entry::default();
        match map_lookup(self.map_of(key), &key.0, &mut e, "reading a fast-path flow") {
            Ok(()) => Ok(Some((e.packets, e.bytes))),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// The map `key`'s flow lives in.
    fn map_of(&self, key: &FlowKey) -> RawFd {
        if key.is_ipv6() {
            self.flows6.as_raw_fd()
        } else {
            self.flows4.as_raw_fd()
        }
    }

    /// Every entry's packets and bytes, read with a few BPF_MAP_LOOKUP_BATCH
    /// calls rather than one lookup per flow (for many flows: a lookup
    /// costs a system call, a batch walks the whole table at once).
    pub fn counts_all(&self, out: &mut Vec<(FlowKey, (u64, u64))>) -> io::Result<()> {
        out.clear();
        counts_of_map(self.flows4.as_raw_fd(), KEY_LEN4, out)?;
        counts_of_map(self.flows6.as_raw_fd(), KEY_LEN, out)
    }

    /// Removes the entries of `keys`, which must all be there, with a
    /// BPF_MAP_DELETE_BATCH per map (one at a time if a batch fails).
    pub fn remove_many(&self, keys: &[FlowKey]) -> io::Result<()> {
        let (v6, v4): (Vec<&FlowKey>, Vec<&FlowKey>) = keys.iter().partition(|k| k.is_ipv6());
        for (map, len, group) in [(&self.flows4, KEY_LEN4, v4), (&self.flows6, KEY_LEN, v6)] {
            if group.is_empty() {
                continue;
            }
            // The batch takes the keys packed at the map's key size.
            let packed: Vec<u8> = group.iter().flat_map(|k| k.0[..len].iter().copied()).collect();
            let mut attr = Attr::new();
            attr.u64(16, packed.as_ptr() as u64)
                .u32(32, group.len() as u32)
                .u32(36, map.as_raw_fd() as u32);
            if bpf(BPF_MAP_DELETE_BATCH, &mut attr, "removing fast-path flows").is_ok() {
                continue;
            }
            // The batch stops at the first key it cannot delete: the rest
            // one by one.
            let done = u32::from_ne_bytes(attr.0[32..36].try_into().expect("4 bytes")) as usize;
            group[done.min(group.len())..].iter().try_for_each(|k| self.remove(k))?;
        }
        Ok(())
    }

    /// Removes `key`'s entry (no error if there is none).
    pub fn remove(&self, key: &FlowKey) -> io::Result<()> {
        delete_elem(self.map_of(key), key.0.as_ptr() as u64, "removing a fast-path flow")
    }

    /// The generation entries are inserted under now.
    pub fn generation(&self) -> u32 {
        self.current.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Makes every entry installed so far inert at once: their frames take
    /// the slow path from the moment this returns. Entries stay (with
    /// their counters) until removed.
    pub fn invalidate(&self) -> io::Result<()> {
        let next = self
            .current
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel)
            .wrapping_add(1);
        self.write_generation(next)
    }

    /// The program for the port numbered `in_port`: fast path first, else
    /// the AF_XDP socket of the frame's receive queue in `xskmap`; frames
    /// longer than `max_len` go to the stack.
    pub(crate) fn program(&self, xskmap: RawFd, in_port: u32, max_len: u32) -> Vec<Insn> {
        program(
            xskmap,
            [self.flows4.as_raw_fd(), self.flows6.as_raw_fd()],
            self.ports.as_raw_fd(),
            self.generation.as_raw_fd(),
            in_port,
            max_len,
        )
    }
}

/// Deletes the element at `key` (a pointer to the key's bytes) from map
/// `map`; no error if there is none.
fn delete_elem(map: RawFd, key: u64, what: &str) -> io::Result<()> {
    match bpf(BPF_MAP_DELETE_ELEM, Attr::new().u32(0, map as u32).u64(8, key), what) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r.map(drop),
    }
}

/// An instruction, a jump to a label, or a label.
enum Item {
    I(Insn),
    Jump(Insn, &'static str),
    Label(&'static str),
}

/// Resolves jump labels into offsets.
fn assemble(items: Vec<Item>) -> Vec<Insn> {
    let mut at = std::collections::HashMap::new();
    let mut n = 0i32;
    for it in &items {
        match it {
            Item::Label(l) => {
                at.insert(*l, n);
            }
            _ => n += 1,
        }
    }
    let mut out = Vec::with_capacity(n as usize);
    for it in items {
        match it {
            Item::I(i) => out.push(i),
            Item::Jump(mut i, l) => {
                i.off = (at[l] - out.len() as i32 - 1) as i16;
                out.push(i);
            }
            Item::Label(_) => {}
        }
    }
    out
}

/// Every entry of hash map `map` (keys of `key_len` bytes) with its
/// packets and bytes, added to `out`.
fn counts_of_map(map: RawFd, key_len: usize, out: &mut Vec<(FlowKey, (u64, u64))>) -> io::Result<()> {
    const CHUNK: usize = 4096;
    let mut keys = vec![0u8; CHUNK * key_len];
    let mut values = vec![Entry::default(); CHUNK];
    let mut token = 0u32;
    let mut first = true;
    loop {
        let mut attr = Attr::new();
        attr.u64(0, if first { 0 } else { &token as *const u32 as u64 })
            .u64(8, &mut token as *mut u32 as u64)
            .u64(16, keys.as_mut_ptr() as u64)
            .u64(24, values.as_mut_ptr() as u64)
            .u32(32, CHUNK as u32)
            .u32(36, map as u32);
        let r = bpf(BPF_MAP_LOOKUP_BATCH, &mut attr, "reading the fast path's flows");
        // The kernel says how many it filled, also on its last call,
        // which ends with ENOENT.
        let last = match r {
            Ok(_) => false,
            Err(e) if e.kind() == io::ErrorKind::NotFound => true,
            Err(e) => return Err(e),
        };
        let n = (u32::from_ne_bytes(attr.0[32..36].try_into().expect("4 bytes")) as usize).min(CHUNK);
        out.extend(keys.chunks_exact(key_len).take(n).zip(&values).map(|(k, e)| {
            let mut key = FlowKey([0; KEY_LEN]);
            key.0[..key_len].copy_from_slice(k);
            (key, (e.packets, e.bytes))
        }));
        if last {
            return Ok(());
        }
        first = false;
    }
}

fn program(xskmap: RawFd, flows: [RawFd; 2], ports: RawFd, generation: RawFd, in_port: u32, max_len: u32) -> Vec<Insn> {
    use Item::{Jump as J, Label as L, I};
    const LDX_B: u8 = 0x71;
    const LDX_H: u8 = 0x69;
    const LDX_W: u8 = 0x61;
    const LDX_DW: u8 = 0x79;
    const STX_B: u8 = 0x73;
    const STX_H: u8 = 0x6b;
    const STX_W: u8 = 0x63;
    const STX_DW: u8 = 0x7b;
    const ST_W: u8 = 0x62;
    const ATOMIC_ADD_DW: u8 = 0xdb;
    const ADD_K: u8 = 0x07;
    const OR_K: u8 = 0x47;
    const AND_K: u8 = 0x57;
    const ST_DW: u8 = 0x7a;
    const JLT_K: u8 = 0xa5;
    const JLE_K: u8 = 0xb5;
    const MOV_K: u8 = 0xb7;
    const MOV_X: u8 = 0xbf;
    const JA: u8 = 0x05;
    const JEQ_K: u8 = 0x15;
    const JNE_K: u8 = 0x55;
    const JNE_X: u8 = 0x5d;
    const JGT_X: u8 = 0x2d;
    const JLE_X: u8 = 0xbd;
    const JSET_K: u8 = 0x45;
    const LD_IMM64: u8 = 0x18;
    const CALL: u8 = 0x85;
    const EXIT: u8 = 0x95;
    let map = |reg: u8, kind: u8, fd: RawFd| [I(insn(LD_IMM64, reg, kind, 0, fd)), I(insn(0, 0, 0, 0, 0))];
    // Key on the stack at fp-64 (offsets below are from fp).
    let k = -(KEY_LEN as i16);
    let mut p = vec![
        I(insn(MOV_X, 6, 1, 0, 0)), // r6 = ctx
        I(insn(LDX_W, 2, 6, 0, 0)), // r2 = data
        I(insn(LDX_W, 3, 6, 4, 0)), // r3 = data_end
        I(insn(MOV_X, 4, 2, 0, 0)), // r4 = data
        I(insn(ADD_K, 4, 0, 0, max_len as i32 + 1)),
        J(insn(JLE_X, 4, 3, 0, 0), "stack"), // longer than max_len: the stack
        I(insn(MOV_X, 4, 2, 0, 0)),
        I(insn(ADD_K, 4, 0, 0, MIN_FRAME as i32)),
        J(insn(JGT_X, 4, 3, 0, 0), "slow"), // too short for a key
    ];
    // Fields that do not apply stay zero (an IPv6 key zeroes its second
    // half itself).
    p.extend((0..KEY_LEN4 as i16 / 8).map(|i| I(insn(ST_DW, 10, 0, k + 8 * i, 0))));
    p.extend([
        I(insn(ST_W, 10, 0, k, in_port as i32)),
        I(insn(LDX_W, 5, 2, 0, 0)), // the Ethernet addresses
        I(insn(STX_W, 10, 5, k + 4, 0)),
        I(insn(LDX_DW, 5, 2, 4, 0)),
        I(insn(STX_DW, 10, 5, k + 8, 0)),
    ]);
    if in_port <= 0xffff {
        // One 802.1Q tag: its control information (DEI set: "tagged") in
        // the key, then the rest read as an untagged frame 4 bytes on.
        p.extend([
            I(insn(LDX_H, 5, 2, 12, 0)),
            J(
                insn(JNE_K, 5, 0, 0, i32::from(u16::from_ne_bytes([0x81, 0x00]))),
                "untagged",
            ),
            I(insn(LDX_H, 5, 2, 14, 0)),
            I(insn(OR_K, 5, 0, 0, DEI_IN_REGISTER)),
            I(insn(STX_H, 10, 5, k + TAG_AT as i16, 0)),
            I(insn(ADD_K, 2, 0, 0, 4)),
            I(insn(MOV_X, 4, 2, 0, 0)),
            I(insn(ADD_K, 4, 0, 0, MIN_FRAME as i32)),
            J(insn(JGT_X, 4, 3, 0, 0), "slow"), // too short for a key
            L("untagged"),
        ]);
    }
    // The transport word of a frame whose protocol is in r7 and whose
    // transport header starts at `at`, into the key at `key_at`; then to
    // `lookup` (`other`: where any other protocol goes). TCP, UDP and SCTP
    // need their whole header; ICMPv6 neighbour discovery and router
    // messages go to the slow path.
    let transport =
        |at: i16, key_at: i16, icmp: u8, lookup: &'static str, other: &'static str, names: [&'static str; 5]| {
            let [tcp, udp, sctp, whole, icmp_label] = names;
            let mut t = vec![
                J(insn(JEQ_K, 7, 0, 0, 6), tcp),
                J(insn(JEQ_K, 7, 0, 0, 17), udp),
                J(insn(JEQ_K, 7, 0, 0, 132), sctp),
                J(insn(JEQ_K, 7, 0, 0, i32::from(icmp)), icmp_label),
                J(insn(JA, 0, 0, 0, 0), other),
            ];
            for (label, len, next) in [(tcp, 20, Some(whole)), (udp, 8, Some(whole)), (sctp, 12, None)] {
                t.extend([
                    L(label),
                    I(insn(MOV_X, 4, 2, 0, 0)),
                    I(insn(ADD_K, 4, 0, 0, i32::from(at) + len)),
                ]);
                if let Some(next) = next {
                    t.push(J(insn(JA, 0, 0, 0, 0), next));
                }
            }
            t.extend([
                L(whole),
                J(insn(JGT_X, 4, 3, 0, 0), "slow"), // the header is cut short
                I(insn(LDX_W, 5, 2, at, 0)),
                I(insn(STX_W, 10, 5, k + key_at, 0)),
                J(insn(JA, 0, 0, 0, 0), lookup),
                L(icmp_label),
                I(insn(LDX_B, 5, 2, at, 0)),
            ]);
            if icmp == PROTO_ICMPV6 {
                t.extend([
                    J(insn(JLT_K, 5, 0, 0, 133), "icmp6_ok"),
                    J(insn(JLE_K, 5, 0, 0, 137), "slow"),
                    L("icmp6_ok"),
                ]);
            }
            t.extend([
                I(insn(LDX_H, 5, 2, at, 0)), // type and code
                I(insn(STX_H, 10, 5, k + key_at, 0)),
                J(insn(JA, 0, 0, 0, 0), lookup),
            ]);
            t
        };
    p.extend([
        I(insn(LDX_H, 5, 2, 12, 0)),
        I(insn(STX_H, 10, 5, k + 16, 0)), // the Ethernet type
        J(
            insn(JEQ_K, 5, 0, 0, i32::from(u16::from_ne_bytes([0x86, 0xdd]))),
            "ipv6",
        ),
        J(
            insn(JNE_K, 5, 0, 0, i32::from(u16::from_ne_bytes([0x08, 0x00]))),
            "slow",
        ),
        I(insn(LDX_B, 5, 2, 14, 0)),
        J(insn(JNE_K, 5, 0, 0, 0x45), "slow"), // options, or not version 4
        I(insn(LDX_H, 5, 2, 20, 0)),
        J(insn(JSET_K, 5, 0, 0, 0xff3f), "slow"), // a fragment (MF or an offset)
        I(insn(LDX_B, 5, 2, 15, 0)),
        I(insn(STX_B, 10, 5, k + 18, 0)),
        I(insn(LDX_B, 7, 2, 23, 0)), // r7 = protocol
        I(insn(STX_B, 10, 7, k + 19, 0)),
        I(insn(LDX_W, 5, 2, 26, 0)),
        I(insn(STX_W, 10, 5, k + 20, 0)),
        I(insn(LDX_W, 5, 2, 30, 0)),
        I(insn(STX_W, 10, 5, k + 24, 0)),
    ]);
    p.extend(transport(
        L4_AT as i16,
        KEY_L4 as i16,
        PROTO_ICMP,
        "lookup4",
        "lookup4",
        ["tcp4", "udp4", "sctp4", "whole4", "icmp4"],
    ));
    p.extend([
        L("ipv6"),
        I(insn(MOV_X, 4, 2, 0, 0)),
        I(insn(ADD_K, 4, 0, 0, MIN_FRAME6 as i32)),
        J(insn(JGT_X, 4, 3, 0, 0), "slow"), // too short for a key
        I(insn(LDX_B, 5, 2, 14, 0)),
        I(insn(AND_K, 5, 0, 0, 0xf0)),
        J(insn(JNE_K, 5, 0, 0, 0x60), "slow"), // not version 6
        I(insn(LDX_W, 5, 2, 14, 0)),           // version, traffic class, flow label
        I(insn(STX_W, 10, 5, k + 20, 0)),
    ]);
    for at in [0i16, 8, 16, 24] {
        p.extend([
            I(insn(LDX_DW, 5, 2, 22 + at, 0)), // source and destination
            I(insn(STX_DW, 10, 5, k + 24 + at, 0)),
        ]);
    }
    p.extend([
        I(insn(ST_DW, 10, 0, k + 56, 0)),
        I(insn(LDX_B, 7, 2, 20, 0)), // r7 = next header
        I(insn(STX_B, 10, 7, k + 56, 0)),
    ]);
    // Any other next header may be an extension header, which the
    // switch's parser looks behind: the slow path.
    p.extend(transport(
        L4_AT6 as i16,
        KEY_L4_6 as i16,
        PROTO_ICMPV6,
        "lookup6",
        "slow",
        ["tcp6", "udp6", "sctp6", "whole6", "icmp6"],
    ));
    // r9 = the family's flow map.
    p.push(L("lookup4"));
    p.extend(map(9, BPF_PSEUDO_MAP_FD, flows[0]));
    p.push(J(insn(JA, 0, 0, 0, 0), "lookup"));
    p.push(L("lookup6"));
    p.extend(map(9, BPF_PSEUDO_MAP_FD, flows[1]));
    p.extend([
        L("lookup"),
        I(insn(MOV_X, 1, 6, 0, 0)),
        I(insn(CALL, 0, 0, 0, BPF_FUNC_XDP_GET_BUFF_LEN)),
        I(insn(MOV_X, 8, 0, 0, 0)), // r8 = frame length
        I(insn(MOV_X, 1, 9, 0, 0)),
        I(insn(MOV_X, 2, 10, 0, 0)),
        I(insn(ADD_K, 2, 0, 0, k as i32)),
        I(insn(CALL, 0, 0, 0, BPF_FUNC_MAP_LOOKUP_ELEM)),
        J(insn(JEQ_K, 0, 0, 0, 0), "slow"), // no entry
        I(insn(LDX_W, 5, 0, 4, 0)),         // the entry's generation
    ]);
    p.extend(map(1, BPF_PSEUDO_MAP_VALUE, generation));
    p.extend([
        I(insn(LDX_W, 4, 1, 0, 0)),
        J(insn(JNE_X, 5, 4, 0, 0), "slow"), // installed under older tables
        I(insn(MOV_X, 7, 0, 0, 0)),         // r7 = the entry
        I(insn(LDX_W, 2, 0, 0, 0)),         // r2 = output slot
    ]);
    p.extend(map(1, BPF_PSEUDO_MAP_FD, ports));
    p.extend([
        // A slot with no port (the switch took it out because the port
        // cannot take redirected frames now): the slow path, uncounted.
        I(insn(MOV_K, 3, 0, 0, 0)),
        I(insn(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP)),
        J(insn(JNE_K, 0, 0, 0, XDP_REDIRECT), "slow"),
        I(insn(MOV_K, 4, 0, 0, 1)),
        I(insn(ATOMIC_ADD_DW, 7, 4, 8, 0)),  // packets += 1
        I(insn(ATOMIC_ADD_DW, 7, 8, 16, 0)), // bytes += length
        I(insn(EXIT, 0, 0, 0, 0)),
        L("slow"),
        I(insn(LDX_W, 2, 6, 16, 0)), // r2 = rx_queue_index
    ]);
    p.extend(map(1, BPF_PSEUDO_MAP_FD, xskmap));
    p.extend([
        I(insn(MOV_K, 3, 0, 0, XDP_PASS)),
        I(insn(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP)),
        I(insn(EXIT, 0, 0, 0, 0)),
        L("stack"),
        I(insn(MOV_K, 0, 0, 0, XDP_PASS)),
        I(insn(EXIT, 0, 0, 0, 0)),
    ]);
    assemble(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp_frame() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend([
            0x45, 0xb8, 0, 46, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend([0x27, 0x10, 0x13, 0x89, 0, 26, 0, 0]);
        f.resize(60, 0xab);
        f
    }

    #[test]
    fn the_key_holds_the_match_fields_and_nothing_that_changes_per_packet() {
        let f = udp_frame();
        let k = FlowKey::of(3, &f).unwrap();
        assert_eq!(k.0[0..4], 3u32.to_ne_bytes());
        assert_eq!(k.0[4..18], f[0..14]);
        assert_eq!((k.0[18], k.0[19]), (0xb8, 17));
        assert_eq!(k.0[20..28], [10, 0, 0, 1, 10, 0, 0, 2]);
        assert_eq!(k.0[28..32], [0x27, 0x10, 0x13, 0x89]);
        // IP id, TTL, checksums, lengths and the payload are not in it.
        let mut g = f.clone();
        g[18] = 0x99;
        g[22] = 3;
        g[40] = 0x55;
        g[50] = 0;
        assert_eq!(FlowKey::of(3, &g), Some(k));
        // Every field that is in it tells flows apart.
        for at in [0, 6, 15, 23, 26, 30, 34, 36] {
            let mut h = f.clone();
            h[at] ^= 1;
            assert_ne!(FlowKey::of(3, &h), Some(k), "byte {at}");
        }
        assert_ne!(FlowKey::of(4, &f), Some(k));
    }

    #[test]
    fn frames_the_program_never_looks_up_have_no_key() {
        let f = udp_frame();
        let mut options = f.clone();
        options[14] = 0x46;
        let mut fragment = f.clone();
        fragment[20] = 0x20; // more fragments
        let mut offset = f.clone();
        offset[21] = 1;
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        for g in [options, fragment, offset, arp, f[..37].to_vec()] {
            assert_eq!(FlowKey::of(1, &g), None);
        }
        // Don't-fragment alone is no fragment.
        let mut df = f.clone();
        df[20] = 0x40;
        assert!(FlowKey::of(1, &df).is_some());
    }

    /// `f` with an 802.1Q tag (TPID `tpid`, control information `tci`).
    fn tagged(f: &[u8], tpid: u16, tci: u16) -> Vec<u8> {
        let mut g = f[..12].to_vec();
        g.extend(tpid.to_be_bytes());
        g.extend(tci.to_be_bytes());
        g.extend(&f[12..]);
        g
    }

    #[test]
    fn a_tagged_frame_keys_on_its_vlan_id_and_priority_and_the_fields_after_the_tag() {
        let f = udp_frame();
        let untagged = FlowKey::of(3, &f).unwrap();
        // VLAN 100, priority 5.
        let t = tagged(&f, 0x8100, (5 << 13) | 100);
        let k = FlowKey::of(3, &t).unwrap();
        assert_ne!(k, untagged, "a tagged frame is not its untagged twin");
        // Everything but in_port's high half (the tag, DEI set) as untagged.
        assert_eq!(k.0[4..], untagged.0[4..]);
        let mut tag = 3u32.to_ne_bytes();
        tag[TAG_AT..TAG_AT + 2].copy_from_slice(&(((5 << 13) | 0x1000 | 100) as u16).to_be_bytes());
        assert_eq!(k.0[0..4], tag);
        // VLAN id and priority tell flows apart; DEI does not (no match
        // field sees it).
        assert_ne!(FlowKey::of(3, &tagged(&f, 0x8100, (5 << 13) | 101)), Some(k));
        assert_ne!(FlowKey::of(3, &tagged(&f, 0x8100, (4 << 13) | 100)), Some(k));
        assert_eq!(FlowKey::of(3, &tagged(&f, 0x8100, (5 << 13) | 0x1000 | 100)), Some(k));
        // VLAN 0 with priority 0 is still tagged.
        assert_ne!(FlowKey::of(3, &tagged(&f, 0x8100, 0)), Some(untagged));
        // The fields after the tag are read 4 bytes on.
        for at in [15, 23, 26, 30, 34, 36] {
            let mut h = t.clone();
            h[at + 4] ^= 1;
            assert_ne!(FlowKey::of(3, &h), Some(k), "byte {at} after the tag");
        }
    }

    #[test]
    fn frames_with_other_tags_have_no_key() {
        let f = udp_frame();
        let t = tagged(&f, 0x8100, 100);
        for g in [
            tagged(&f, 0x88a8, 100), // a service tag
            tagged(&t, 0x8100, 200), // two tags
            t[..41].to_vec(),        // too short after the tag
        ] {
            assert_eq!(FlowKey::of(1, &g), None);
        }
        // A port number that needs in_port's high half cannot hold a tag.
        assert_eq!(FlowKey::of(0x1_0000, &t), None);
        assert!(FlowKey::of(0x1_0000, &f).is_some());
    }

    /// UDP over IPv6, flow label 0x12345, traffic class 0xb8, 80 bytes.
    fn udp6_frame() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        f.extend([0x6b, 0x81, 0x23, 0x45, 0, 26, 17, 64]);
        f.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[1]));
        f.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[2]));
        f.extend([0x27, 0x10, 0x13, 0x89, 0, 26, 0, 0]);
        f.resize(80, 0xab);
        f
    }

    #[test]
    fn an_ipv6_key_holds_the_match_fields_and_nothing_that_changes_per_packet() {
        let f = udp6_frame();
        let k = FlowKey::of(3, &f).unwrap();
        assert_eq!(k.0[0..4], 3u32.to_ne_bytes());
        assert_eq!(k.0[4..18], f[0..14]);
        assert_eq!(k.0[20..24], [0x6b, 0x81, 0x23, 0x45]);
        assert_eq!(k.0[24..56], f[22..54]);
        assert_eq!(k.0[56], 17);
        assert_eq!(k.0[60..64], [0x27, 0x10, 0x13, 0x89]);
        // Payload length, hop limit, checksum and payload are not in it.
        let mut g = f.clone();
        g[19] = 99;
        g[21] = 1;
        g[60] = 0x55;
        g[70] = 0;
        assert_eq!(FlowKey::of(3, &g), Some(k));
        // Traffic class, flow label, addresses, next header, ports are.
        for at in [14, 15, 17, 22, 37, 38, 53, 54, 57] {
            let mut h = f.clone();
            h[at] ^= 1;
            assert_ne!(FlowKey::of(3, &h), Some(k), "byte {at}");
        }
        // Tagged, the same fields 4 bytes on.
        let t = tagged(&f, 0x8100, 7);
        assert_eq!(FlowKey::of(3, &t).unwrap().0[4..], k.0[4..]);
    }

    #[test]
    fn ipv6_frames_the_switch_parses_further_than_the_program_have_no_key() {
        let f = udp6_frame();
        // Hop-by-hop options, a fragment header, no next header.
        for nh in [0, 44, 59] {
            let mut g = f.clone();
            g[20] = nh;
            assert_eq!(FlowKey::of(1, &g), None, "next header {nh}");
        }
        // Neighbour discovery and router messages; an echo request is fine.
        let mut icmp = f.clone();
        icmp[20] = 58;
        icmp[55] = 0; // code
        for t in 133..=137 {
            icmp[54] = t;
            assert_eq!(FlowKey::of(1, &icmp), None, "ICMPv6 type {t}");
        }
        icmp[54] = 128;
        assert_eq!(FlowKey::of(1, &icmp).unwrap().0[60..64], [128, 0, 0, 0]);
        let mut v4 = f.clone();
        v4[14] = 0x4b;
        assert_eq!(FlowKey::of(1, &v4), None, "version 4 in an IPv6 frame");
        assert_eq!(FlowKey::of(1, &f[..57]), None);
    }

    #[test]
    fn a_transport_header_cut_short_has_no_key() {
        // The switch's parser reads no ports from a TCP header under 20
        // bytes (UDP 8, SCTP 12); the key must not hold them either.
        let f = udp_frame();
        for (proto, whole) in [(6u8, 20usize), (17, 8), (132, 12)] {
            let mut g = f.clone();
            g[23] = proto;
            g.resize(34 + whole, 0);
            assert!(FlowKey::of(1, &g).is_some(), "protocol {proto}, whole header");
            g.truncate(34 + whole - 1);
            assert_eq!(FlowKey::of(1, &g), None, "protocol {proto}, one byte short");
        }
        let mut g = udp6_frame();
        g[20] = 6;
        g.truncate(54 + 19);
        assert_eq!(FlowKey::of(1, &g), None);
    }

    #[test]
    fn icmp_keys_take_type_and_code_but_not_the_checksum() {
        let mut f = udp_frame();
        f[23] = 1;
        f[34..38].copy_from_slice(&[8, 0, 0xaa, 0xbb]);
        let k = FlowKey::of(1, &f).unwrap();
        assert_eq!(k.0[28..32], [8, 0, 0, 0]);
        assert_eq!(k.0[32..], [0; 32]);
        f[36] = 0x11;
        assert_eq!(FlowKey::of(1, &f), Some(k));
    }

    #[test]
    fn jumps_land_on_their_labels() {
        let p = assemble(vec![
            Item::Jump(insn(0x05, 0, 0, 0, 0), "end"),
            Item::I(insn(0xb7, 0, 0, 0, 1)),
            Item::I(insn(0xb7, 0, 0, 0, 2)),
            Item::Label("end"),
            Item::I(insn(0x95, 0, 0, 0, 0)),
        ]);
        assert_eq!(p.len(), 4);
        assert_eq!(p[0].off, 2);
    }
}

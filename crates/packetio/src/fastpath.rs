//! An in-kernel fast path for a switch's AF_XDP ports: flows whose plan is
//! "out of port P, unchanged" are forwarded by the XDP program itself
//! (`bpf_redirect_map` into a DEVMAP), so their frames never cross into
//! user space: no copy into the UMEM, no skb built to send them again.
//!
//! The switch decides what goes here; this module only keeps the kernel's
//! side of it:
//! - `flows4` and `flows6`, the flow tables: a `FlowKey` (its first 32
//!   bytes for IPv4, all 64 for IPv6) to the output port's DEVMAP slot,
//!   with packet and byte counters the program adds to atomically, so
//!   the switch can fold them into its rule, table and port counters.
//!   Each is an array map searched by open addressing (a key's hash names
//!   its first slot; it sits in that one or one of the next `PROBES - 1`),
//!   so the program's lookup is a few array accesses the verifier inlines
//!   rather than a call into the kernel's hash table. We write the slots
//!   through a mapping of the map's memory, under a seqlock the program
//!   checks (`seq` odd while a slot is rewritten; the program acts only on
//!   a slot it read between two equal even values), so it never acts on a
//!   torn entry. A lookup stops at a slot never written (`seq` 0): an
//!   insertion takes the first free slot of its probes, so a miss among
//!   few flows costs one probe; and we read the counters from there, without a system
//!   call. A frame forwarded on another core at the very moment its slot
//!   is rewritten for another flow may be counted to the new one;
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

use crate::objects;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// Bytes of a flow key (an IPv4 key uses the first 32, the rest zero).
pub const KEY_LEN: usize = 64;
const KEY_LEN4: usize = 32;
/// The shortest frame the program looks at (after any tag): an IPv4
/// header and 4 bytes of transport header; the same for IPv6.
const MIN_FRAME: usize = 38;
const MIN_FRAME6: usize = 58;
/// Where the transport header starts (after any tag).
const L4_AT: usize = 34;
const L4_AT6: usize = 54;
/// Where each field sits in a key: `struct flow_key` of
/// `bpf/flow_key.h`, held equal to it by a test through the BTF the
/// compiler wrote into the program's object.
mod at {
    pub const IN_PORT: usize = 0;
    pub const ETH_DST: usize = 4;
    pub const ETH_SRC: usize = 10;
    pub const ETH_TYPE: usize = 16;
    pub const IP_TOS: usize = 18;
    pub const IP_PROTO: usize = 19;
    pub const V4_SRC: usize = 20;
    pub const V4_DST: usize = 24;
    /// The transport word: ports, or ICMP type and code.
    pub const V4_L4: usize = 28;
    pub const V6_FIRST_WORD: usize = 20;
    pub const V6_SRC: usize = 24;
    pub const V6_DST: usize = 40;
    pub const V6_NEXT_HEADER: usize = 56;
    pub const V6_L4: usize = 60;
}
const PROTO_ICMP: u8 = 1;
const PROTO_ICMPV6: u8 = 58;

/// Where a tagged frame's tag control information goes in the key: the
/// half of in_port that is zero (port numbers of tagged flows are below
/// 65,536), with the DEI bit set to say "tagged" (OpenFlow cannot match
/// DEI, and the frame leaves with its own), as Open vSwitch marks it.
const TAG_AT: usize = if cfg!(target_endian = "little") { 2 } else { 0 };

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
        if tagged && (in_port > 0xffff || frame.len() < 18) {
            return None;
        }
        // The frame after the tag, if any.
        let s = if tagged { 4 } else { 0 };
        let mut k = [0u8; KEY_LEN];
        k[at::IN_PORT..at::IN_PORT + 4].copy_from_slice(&in_port.to_ne_bytes());
        if tagged {
            k[at::IN_PORT + TAG_AT] = frame[14] | 0x10;
            k[at::IN_PORT + TAG_AT + 1] = frame[15];
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
                k[at::IP_TOS] = frame[s + 15];
                k[at::IP_PROTO] = frame[s + 23];
                k[at::V4_SRC..at::V4_SRC + 4].copy_from_slice(&frame[s + 26..s + 30]);
                k[at::V4_DST..at::V4_DST + 4].copy_from_slice(&frame[s + 30..s + 34]);
                let l4 = transport_word(frame, s + L4_AT, frame[s + 23], PROTO_ICMP)?;
                k[at::V4_L4..at::V4_L4 + 4].copy_from_slice(&l4);
            }
            [0x86, 0xdd] => {
                if frame.len() < MIN_FRAME6 + s || frame[s + 14] >> 4 != 6 {
                    return None;
                }
                k[at::V6_FIRST_WORD..at::V6_FIRST_WORD + 4].copy_from_slice(&frame[s + 14..s + 18]);
                k[at::V6_SRC..at::V6_SRC + 16].copy_from_slice(&frame[s + 22..s + 38]);
                k[at::V6_DST..at::V6_DST + 16].copy_from_slice(&frame[s + 38..s + 54]);
                // Anything else may be an extension header, which the
                // switch's parser looks behind and the program does not.
                if !matches!(frame[s + 20], 6 | 17 | 132 | PROTO_ICMPV6) {
                    return None;
                }
                k[at::V6_NEXT_HEADER] = frame[s + 20];
                let l4 = transport_word(frame, s + L4_AT6, frame[s + 20], PROTO_ICMPV6)?;
                k[at::V6_L4..at::V6_L4 + 4].copy_from_slice(&l4);
            }
            _ => return None,
        }
        k[at::ETH_DST..at::ETH_DST + 6].copy_from_slice(&frame[0..6]);
        k[at::ETH_SRC..at::ETH_SRC + 6].copy_from_slice(&frame[6..12]);
        k[at::ETH_TYPE..at::ETH_TYPE + 2].copy_from_slice(&frame[s + 12..s + 14]);
        Some(FlowKey(k))
    }

    fn is_ipv6(&self) -> bool {
        self.0[at::ETH_TYPE..at::ETH_TYPE + 2] == [0x86, 0xdd]
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

/// Where each field of a slot sits (`struct flow_slot4` and
/// `struct flow_slot6` of `bpf/flow_key.h`, held equal to them by a test
/// through the object's BTF): a seqlock word (odd while user space
/// rewrites the slot), user space's own "in use" mark, the output port's
/// DEVMAP slot, the generation it was written under (0: empty), the key
/// (32 bytes for IPv4, 64 for IPv6), then the packets and bytes the
/// program counted.
mod slot {
    pub const SEQ: usize = 0;
    pub const USED: usize = 4;
    pub const OUT_SLOT: usize = 8;
    pub const GENERATION: usize = 12;
    pub const KEY: usize = 16;
    pub const fn packets(key_len: usize) -> usize {
        KEY + key_len
    }
    pub const fn bytes(key_len: usize) -> usize {
        KEY + key_len + 8
    }
    pub const fn size(key_len: usize) -> usize {
        KEY + key_len + 16
    }
}

/// Slots a flow may sit in: its hash's and the next ones (`PROBES` in
/// `bpf/flow_key.h`).
pub const PROBES: u32 = 16;

/// The hash that names a key's first slot: the program's `slot_hash`
/// (`bpf/xsk.bpf.c`), over the key's first `len` bytes as 32-bit words in
/// memory order.
pub fn slot_hash(seed: u32, key: &FlowKey, len: usize) -> u32 {
    key.0[..len].chunks_exact(4).fold(seed, |h, w| {
        let h = (h ^ u32::from_ne_bytes(w.try_into().expect("4 bytes"))).wrapping_mul(0x9e37_79b1);
        h ^ (h >> 16)
    })
}

/// One flow table: an array map of slots, mapped into our memory, which
/// the program reads and we write.
struct SlotTable {
    map: MapHandle,
    mem: *mut u8,
    mem_len: usize,
    /// A power of two.
    slots: u32,
    key_len: usize,
}

// SAFETY: the mapping is shared memory; every access to it goes through
// atomics, and rewrites of a slot are serialised by `FastPath::index`.
unsafe impl Send for SlotTable {}
unsafe impl Sync for SlotTable {}

impl SlotTable {
    fn new(name: &str, key_len: usize, slots: u32, what: &str) -> io::Result<SlotTable> {
        let size = slot::size(key_len);
        let opts = libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
            map_flags: libbpf_sys::BPF_F_MMAPABLE,
            ..Default::default()
        };
        let map = MapHandle::create(MapType::Array, Some(name), 4, size as u32, slots, &opts)
            .map_err(objects::error(what))?;
        // mmap and munmap round the length up to whole pages, as the map's
        // memory is.
        let mem_len = size * slots as usize;
        // SAFETY: a shared mapping of the map's memory, unmapped on drop.
        let mem = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mem_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                map.as_fd().as_raw_fd(),
                0,
            )
        };
        if mem == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("{what}: mapping it into memory: {e}")));
        }
        Ok(SlotTable {
            map,
            mem: mem.cast(),
            mem_len,
            slots,
            key_len,
        })
    }

    fn u32_at(&self, i: u32, at: usize) -> &AtomicU32 {
        debug_assert!(i < self.slots);
        // SAFETY: inside the mapping (i < slots), 4-byte aligned (slots are
        // multiples of 8 bytes, fields at aligned offsets).
        unsafe { &*(self.mem.add(i as usize * slot::size(self.key_len) + at) as *const AtomicU32) }
    }

    fn u64_at(&self, i: u32, at: usize) -> &AtomicU64 {
        debug_assert!(i < self.slots);
        // SAFETY: as above, 8-byte aligned.
        unsafe { &*(self.mem.add(i as usize * slot::size(self.key_len) + at) as *const AtomicU64) }
    }

    /// Rewrites slot `i` as the program expects: `seq` odd, the fields,
    /// `seq` even again (the seqlock's writer; `index`'s lock makes us
    /// the only one).
    fn write(&self, i: u32, key: &FlowKey, used: bool, out_slot: u32, generation: u32) {
        let seq = self.u32_at(i, slot::SEQ);
        let s = seq.load(Ordering::Relaxed);
        seq.store(s.wrapping_add(1), Ordering::Relaxed);
        // The odd number before any field (on x86 stores stay in order).
        std::sync::atomic::fence(Ordering::Release);
        self.u32_at(i, slot::USED).store(used as u32, Ordering::Relaxed);
        self.u32_at(i, slot::OUT_SLOT).store(out_slot, Ordering::Relaxed);
        self.u32_at(i, slot::GENERATION).store(generation, Ordering::Relaxed);
        for (w, chunk) in key.0[..self.key_len].chunks_exact(8).enumerate() {
            let v = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
            self.u64_at(i, slot::KEY + 8 * w).store(v, Ordering::Relaxed);
        }
        self.u64_at(i, slot::packets(self.key_len)).store(0, Ordering::Relaxed);
        self.u64_at(i, slot::bytes(self.key_len)).store(0, Ordering::Relaxed);
        // 0 means "never written" (a lookup stops there): skipped when
        // the count wraps.
        let next = match s.wrapping_add(2) {
            0 => 2,
            n => n,
        };
        seq.store(next, Ordering::Release);
    }

    fn used(&self, i: u32) -> bool {
        self.u32_at(i, slot::USED).load(Ordering::Relaxed) != 0
    }

    fn counts(&self, i: u32) -> (u64, u64) {
        (
            self.u64_at(i, slot::packets(self.key_len)).load(Ordering::Relaxed),
            self.u64_at(i, slot::bytes(self.key_len)).load(Ordering::Relaxed),
        )
    }
}

impl Drop for SlotTable {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this length; nothing refers to it now.
        unsafe { libc::munmap(self.mem.cast(), self.mem_len) };
    }
}

/// The maps one switch's ports share; each port's program (`bpf/xsk.bpf.c`)
/// is given their descriptors when it is loaded.
pub struct FastPath {
    flows4: SlotTable,
    flows6: SlotTable,
    ports: MapHandle,
    /// The generation entries must carry: the one-entry array the programs
    /// read as their `.data.generation` section (current, then 4 zero bytes).
    generation: MapHandle,
    current: AtomicU32,
    seed: u32,
    /// Which slot holds each flow (IPv4 and IPv6 keys apart, as the
    /// tables are); its lock serialises every rewrite of a slot.
    index: Mutex<HashMap<FlowKey, u32>>,
}

fn create(kind: MapType, name: &str, key: u32, value: u32, entries: u32, what: &str) -> io::Result<MapHandle> {
    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    MapHandle::create(kind, Some(name), key, value, entries, &opts).map_err(objects::error(what))
}

/// A seed for the slots' hash, so that which flows share slots differs
/// from one switch to the next (and cannot be chosen from outside).
fn random_seed() -> u32 {
    let mut b = [0u8; 4];
    // SAFETY: writes at most 4 bytes into `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), 4, 0) };
    if n == 4 {
        u32::from_ne_bytes(b)
    } else {
        // No entropy to be had: the clock's low bits.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x5eed, |d| d.subsec_nanos())
    }
}

impl FastPath {
    /// Tables for up to `capacity` flows of each IP version (twice as many
    /// slots, a power of two, so probes stay short) and ports numbered
    /// below `slots`.
    pub fn new(capacity: u32, slots: u32) -> io::Result<FastPath> {
        let table_slots = (capacity.max(1) as u64 * 2).next_power_of_two().min(1 << 30) as u32;
        let fp = FastPath {
            flows4: SlotTable::new(
                "flows4",
                KEY_LEN4,
                table_slots,
                "creating the fast path's IPv4 flow table (needs root or CAP_BPF)",
            )?,
            flows6: SlotTable::new(
                "flows6",
                KEY_LEN,
                table_slots,
                "creating the fast path's IPv6 flow table",
            )?,
            ports: create(
                MapType::Devmap,
                "ports",
                4,
                4,
                slots.max(1),
                "creating the fast path's DEVMAP",
            )?,
            generation: create(
                MapType::Array,
                "generation",
                4,
                8,
                1,
                "creating the fast path's generation",
            )?,
            current: AtomicU32::new(1),
            seed: random_seed(),
            index: Mutex::new(HashMap::new()),
        };
        fp.write_generation(1)?;
        Ok(fp)
    }

    fn write_generation(&self, g: u32) -> io::Result<()> {
        let mut value = [0u8; 8];
        value[..4].copy_from_slice(&g.to_ne_bytes());
        self.generation
            .update(&0u32.to_ne_bytes(), &value, MapFlags::ANY)
            .map_err(objects::error("setting the fast path's generation"))
    }

    /// The shared maps by the names the program gives them, for its loader.
    pub(crate) fn maps(&self) -> [(&'static str, BorrowedFd<'_>); 4] {
        [
            ("flows4", self.flows4.map.as_fd()),
            ("flows6", self.flows6.map.as_fd()),
            ("ports", self.ports.as_fd()),
            (".data.generation", self.generation.as_fd()),
        ]
    }

    /// The constants the program is loaded with: the tables' slot mask
    /// and the hash's seed.
    pub(crate) fn slot_mask_and_seed(&self) -> (u32, u32) {
        (self.flows4.slots - 1, self.seed)
    }

    /// Lets the program send frames out of interface `ifindex` as port `slot`.
    pub fn set_port(&self, slot: u32, ifindex: u32) -> io::Result<()> {
        self.ports
            .update(&slot.to_ne_bytes(), &ifindex.to_ne_bytes(), MapFlags::ANY)
            .map_err(objects::error("adding a port to the DEVMAP"))
    }

    /// The interface port `slot` sends out of now (None: not in the
    /// DEVMAP).
    pub fn port(&self, slot: u32) -> io::Result<Option<u32>> {
        let v = self
            .ports
            .lookup(&slot.to_ne_bytes(), MapFlags::ANY)
            .map_err(objects::error("reading the DEVMAP"))?;
        Ok(v.map(|v| u32::from_ne_bytes(v[..4].try_into().expect("4 bytes"))))
    }

    /// Stops the program sending frames out of port `slot`: the frames of
    /// flows held for it take the slow path (uncounted here) until
    /// `set_port` puts it back. No error if it was not there.
    pub fn clear_port(&self, slot: u32) -> io::Result<()> {
        match self.ports.delete(&slot.to_ne_bytes()) {
            Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => Ok(()),
            r => r.map_err(objects::error("taking a port out of the DEVMAP")),
        }
    }

    fn table_of(&self, key: &FlowKey) -> &SlotTable {
        if key.is_ipv6() {
            &self.flows6
        } else {
            &self.flows4
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<FlowKey, u32>> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forwards `key`'s frames out of port `out_slot` from now on, until
    /// the next `invalidate` (replaces an entry for the same key, counters
    /// reset). An error when every slot the key may sit in is taken (the
    /// flow stays on the slow path).
    pub fn insert(&self, key: &FlowKey, out_slot: u32) -> io::Result<()> {
        let table = self.table_of(key);
        let generation = self.current.load(Ordering::Acquire);
        let mut index = self.lock();
        let at = match index.get(key) {
            Some(&i) => i,
            None => {
                let h = slot_hash(self.seed, key, table.key_len);
                let free = (0..PROBES)
                    .map(|p| h.wrapping_add(p) & (table.slots - 1))
                    .find(|&i| !table.used(i));
                match free {
                    Some(i) => i,
                    None => {
                        return Err(io::Error::new(
                            io::ErrorKind::StorageFull,
                            format!("the fast path has no free slot for this flow ({PROBES} tried)"),
                        ))
                    }
                }
            }
        };
        table.write(at, key, true, out_slot, generation);
        index.insert(*key, at);
        Ok(())
    }

    /// The packets and bytes the program has forwarded for `key` since it
    /// was inserted (None: no such entry).
    pub fn counts(&self, key: &FlowKey) -> io::Result<Option<(u64, u64)>> {
        let index = self.lock();
        Ok(index.get(key).map(|&i| self.table_of(key).counts(i)))
    }

    /// Every entry's packets and bytes, read from the tables' memory (no
    /// system call).
    pub fn counts_all(&self, out: &mut Vec<(FlowKey, (u64, u64))>) -> io::Result<()> {
        out.clear();
        let index = self.lock();
        out.extend(index.iter().map(|(k, &i)| (*k, self.table_of(k).counts(i))));
        Ok(())
    }

    /// Removes the entries of `keys` (no error for one not there).
    pub fn remove_many(&self, keys: &[FlowKey]) -> io::Result<()> {
        let mut index = self.lock();
        for k in keys {
            if let Some(i) = index.remove(k) {
                self.table_of(k).write(i, &FlowKey([0; KEY_LEN]), false, 0, 0);
            }
        }
        Ok(())
    }

    /// Removes `key`'s entry (no error if there is none).
    pub fn remove(&self, key: &FlowKey) -> io::Result<()> {
        self.remove_many(std::slice::from_ref(key))
    }

    /// The generation entries are inserted under now.
    pub fn generation(&self) -> u32 {
        self.current.load(Ordering::Acquire)
    }

    /// Makes every entry installed so far inert at once: their frames take
    /// the slow path from the moment this returns. Entries stay (with
    /// their counters) until removed.
    pub fn invalidate(&self) -> io::Result<()> {
        // 0 marks an empty slot: never current.
        let mut next = self.current.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        if next == 0 {
            next = self.current.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        }
        self.write_generation(next)
    }
}

#[cfg(test)]
mod tests;

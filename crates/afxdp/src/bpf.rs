//! The XDP side of an AF_XDP port: an XSKMAP, a twelve-instruction XDP
//! program that redirects each frame to the socket of its receive queue,
//! and a BPF link that attaches it to the interface.
//!
//! The program is assembled here rather than compiled from C so that
//! nothing (clang, libbpf, a BPF object file) is needed at build or run
//! time. It redirects only frames of at most `max_len` bytes; longer ones
//! (GSO super-frames, jumbo frames that would not fit a UMEM chunk) go on to
//! the kernel's stack, where the port's AF_PACKET socket takes them. The
//! program is attached through a BPF link, so it is detached by the kernel
//! when the link's descriptor closes, also when the process dies.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub(crate) const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
pub(crate) const BPF_PROG_LOAD: libc::c_long = 5;
pub(crate) const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
pub(crate) const BPF_MAP_TYPE_DEVMAP: u32 = 14;
const BPF_PROG_TYPE_XDP: u32 = 6;
pub(crate) const BPF_XDP: u32 = 37;
pub(crate) const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const BPF_FUNC_KTIME_GET_NS: i32 = 5;
const BPF_FUNC_XDP_ADJUST_META: i32 = 54;
pub(crate) const BPF_PSEUDO_MAP_FD: u8 = 1;
const BPF_PSEUDO_KFUNC_CALL: u8 = 2;
const BPF_F_XDP_DEV_BOUND_ONLY: u32 = 1 << 6;
const XDP_PASS: i32 = 2;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

// The instruction codes the programs here use (class | operation | source).
const LDX_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
const ST_DW: u8 = 0x7a; // BPF_ST | BPF_MEM | BPF_DW
const STX_DW: u8 = 0x7b; // BPF_STX | BPF_MEM | BPF_DW
pub(crate) const LD_IMM64: u8 = 0x18; // BPF_LD | BPF_DW | BPF_IMM
const ADD_K: u8 = 0x07; // BPF_ALU64 | BPF_ADD | BPF_K
pub(crate) const MOV_K: u8 = 0xb7; // BPF_ALU64 | BPF_MOV | BPF_K
const MOV_X: u8 = 0xbf; // BPF_ALU64 | BPF_MOV | BPF_X
const JNE_K: u8 = 0x55; // BPF_JMP | BPF_JNE | BPF_K
const JGT_X: u8 = 0x2d; // BPF_JMP | BPF_JGT | BPF_X
const JLE_X: u8 = 0xbd; // BPF_JMP | BPF_JLE | BPF_X
pub(crate) const CALL: u8 = 0x85;
pub(crate) const EXIT: u8 = 0x95;

/// Where the kernel runs the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver (veth has it; frames skip skb allocation on receive).
    Native,
    /// In the generic receive path, after the skb exists (every interface).
    Generic,
}

impl XdpMode {
    pub(crate) fn flags(self) -> u32 {
        match self {
            XdpMode::Native => XDP_FLAGS_DRV_MODE,
            XdpMode::Generic => XDP_FLAGS_SKB_MODE,
        }
    }
}

impl std::fmt::Display for XdpMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        })
    }
}

/// The 64-bit attribute block of bpf(2), as bytes; each command writes its
/// own fields at their offsets in `union bpf_attr`.
#[repr(C, align(8))]
pub(crate) struct Attr(pub(crate) [u8; 128]);

impl Attr {
    pub(crate) fn new() -> Attr {
        Attr([0; 128])
    }
    pub(crate) fn u32(&mut self, off: usize, v: u32) -> &mut Attr {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    pub(crate) fn u64(&mut self, off: usize, v: u64) -> &mut Attr {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
}

pub(crate) fn bpf(cmd: libc::c_long, attr: &mut Attr, what: &str) -> io::Result<libc::c_long> {
    // SAFETY: bpf(2) reads (and for some commands writes) at most the size
    // given of the attribute block, which lives for the call.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.0.as_mut_ptr(), attr.0.len() as u32) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(r)
}

/// Writes `value` under `key` in map `map`.
pub(crate) fn map_update<K, V>(map: RawFd, key: &K, value: &V, what: &str) -> io::Result<()> {
    bpf(
        BPF_MAP_UPDATE_ELEM,
        Attr::new()
            .u32(0, map as u32)
            .u64(8, key as *const K as u64)
            .u64(16, value as *const V as u64),
        what,
    )
    .map(drop)
}

/// Reads the value under `key` in map `map` into `value`.
pub(crate) fn map_lookup<K, V>(map: RawFd, key: &K, value: &mut V, what: &str) -> io::Result<()> {
    bpf(
        BPF_MAP_LOOKUP_ELEM,
        Attr::new()
            .u32(0, map as u32)
            .u64(8, key as *const K as u64)
            .u64(16, value as *mut V as u64),
        what,
    )
    .map(drop)
}

/// A bpf(2) command whose result is a new descriptor.
pub(crate) fn bpf_fd(cmd: libc::c_long, attr: &mut Attr, what: &str) -> io::Result<OwnedFd> {
    let fd = bpf(cmd, attr, what)?;
    // SAFETY: for these commands the result is a new descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// One eBPF instruction, as the kernel lays it out.
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct Insn {
    code: u8,
    regs: u8,
    pub(crate) off: i16,
    imm: i32,
}

pub(crate) fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | dst,
        off,
        imm,
    }
}

/// The redirect program: frames of at most `max_len` bytes go to the
/// XSKMAP entry of their receive queue (falling back to the stack when that
/// queue has no socket), longer frames go to the stack.
fn redirect_program(map_fd: RawFd, max_len: u32) -> Vec<Insn> {
    vec![
        insn(LDX_W, 2, 1, 0, 0),                         // r2 = ctx->data
        insn(LDX_W, 3, 1, 4, 0),                         // r3 = ctx->data_end
        insn(ADD_K, 2, 0, 0, max_len as i32 + 1),        // r2 += max_len + 1
        insn(JLE_X, 2, 3, 6, 0),                         // longer than max_len: pass
        insn(LDX_W, 2, 1, 16, 0),                        // r2 = ctx->rx_queue_index
        insn(LD_IMM64, 1, BPF_PSEUDO_MAP_FD, 0, map_fd), // r1 = &xskmap
        insn(0, 0, 0, 0, 0),
        insn(MOV_K, 3, 0, 0, XDP_PASS),             // r3 = fallback action
        insn(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP), // r0 = bpf_redirect_map(r1, r2, r3)
        insn(EXIT, 0, 0, 0, 0),
        insn(MOV_K, 0, 0, 0, XDP_PASS), // pass: r0 = XDP_PASS
        insn(EXIT, 0, 0, 0, 0),
    ]
}

/// The BTF id of the kfunc that tells an XDP program the VLAN tag held
/// beside its frame (Linux 6.8), looked up once.
fn vlan_tag_kfunc() -> Option<u32> {
    static ID: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *ID.get_or_init(|| {
        crate::btf::vmlinux_func_id("bpf_xdp_metadata_rx_vlan_tag")
            .ok()
            .flatten()
    })
}

/// Instructions to put before a program: a frame whose driver holds a VLAN
/// tag for it outside its bytes goes to the stack (XDP_PASS); every other
/// frame goes on to the program with r1 = ctx as on entry. The tag and its
/// TPID land at fp-40 and fp-38, below any key the program keeps on its
/// stack.
fn vlan_outside_frame_to_stack(kfunc: u32) -> Vec<Insn> {
    vec![
        insn(MOV_X, 6, 1, 0, 0),    // r6 = ctx
        insn(ST_DW, 10, 0, -40, 0), // the kfunc's outputs start zeroed
        insn(MOV_X, 2, 10, 0, 0),
        insn(ADD_K, 2, 0, 0, -40), // r2 = &tpid
        insn(MOV_X, 3, 10, 0, 0),
        insn(ADD_K, 3, 0, 0, -38), // r3 = &tci
        insn(CALL, 0, BPF_PSEUDO_KFUNC_CALL, 0, kfunc as i32),
        insn(JNE_K, 0, 0, 2, 0), // no tag beside the frame: on
        insn(MOV_K, 0, 0, 0, XDP_PASS),
        insn(EXIT, 0, 0, 0, 0),
        insn(MOV_X, 1, 6, 0, 0), // r1 = ctx again
    ]
}

/// Instructions to put before a program: the frame's receive time
/// (CLOCK_MONOTONIC ns) goes in 8 bytes of metadata just before it, which
/// an AF_XDP socket receives with the frame (`RECEIVE_TIME_META`); then
/// on to the program with r1 = ctx as on entry. A frame with no room for
/// metadata goes on unstamped.
fn receive_time_in_meta() -> Vec<Insn> {
    vec![
        insn(MOV_X, 6, 1, 0, 0), // r6 = ctx
        insn(MOV_K, 2, 0, 0, -(RECEIVE_TIME_META as i32)),
        insn(CALL, 0, 0, 0, BPF_FUNC_XDP_ADJUST_META), // room before the frame
        insn(JNE_K, 0, 0, 7, 0),                       // none: on, unstamped
        insn(CALL, 0, 0, 0, BPF_FUNC_KTIME_GET_NS),    // r0 = now
        insn(LDX_W, 2, 6, 8, 0),                       // r2 = ctx->data_meta
        insn(LDX_W, 3, 6, 0, 0),                       // r3 = ctx->data
        insn(MOV_X, 4, 2, 0, 0),
        insn(ADD_K, 4, 0, 0, RECEIVE_TIME_META as i32),
        insn(JGT_X, 4, 3, 1, 0),  // (the verifier's bounds check)
        insn(STX_DW, 2, 0, 0, 0), // *data_meta = now
        insn(MOV_X, 1, 6, 0, 0),  // r1 = ctx again
    ]
}

/// Bytes of metadata `receive_time_in_meta` puts before a frame.
pub const RECEIVE_TIME_META: usize = 8;

/// Loads an XDP program (bound to interface `bound_to` when it calls a
/// kfunc of that device's driver); a verifier refusal comes with the
/// verifier's log.
pub(crate) fn load_xdp(prog: &[Insn], name: &[u8], bound_to: Option<u32>) -> io::Result<OwnedFd> {
    let license = b"Dual MIT/GPL\0";
    let mut log = vec![0u8; 65536];
    let load = |log: Option<&mut Vec<u8>>| {
        let mut attr = Attr::new();
        attr.u32(0, BPF_PROG_TYPE_XDP)
            .u32(4, prog.len() as u32)
            .u64(8, prog.as_ptr() as u64)
            .u64(16, license.as_ptr() as u64)
            .u32(68, BPF_XDP);
        if let Some(ifindex) = bound_to {
            attr.u32(44, BPF_F_XDP_DEV_BOUND_ONLY).u32(64, ifindex);
        }
        if let Some(log) = log {
            attr.u32(24, 1)
                .u32(28, log.len() as u32)
                .u64(32, log.as_mut_ptr() as u64);
        }
        let n = name.len().min(15);
        attr.0[48..48 + n].copy_from_slice(&name[..n]);
        bpf_fd(BPF_PROG_LOAD, &mut attr, "loading the XDP program")
    };
    // Without a log first (a log that overflows its buffer fails the load);
    // again with one to say why, if the verifier refused.
    load(None).map_err(|e| {
        let _ = load(Some(&mut log));
        let text = String::from_utf8_lossy(&log);
        let text = text.trim_end_matches('\0').trim().replace('\n', "; ");
        io::Error::new(e.kind(), format!("{e}; verifier: {text}"))
    })
}

/// Attaches XDP program `prog` to interface `ifindex` in `mode` through a
/// BPF link: the program stays attached while the link's descriptor is
/// open (it holds the program from then on).
pub(crate) fn attach_xdp(prog: &OwnedFd, ifindex: u32, mode: XdpMode) -> io::Result<OwnedFd> {
    bpf_fd(
        BPF_LINK_CREATE,
        Attr::new()
            .u32(0, prog.as_raw_fd() as u32)
            .u32(4, ifindex)
            .u32(8, BPF_XDP)
            .u32(12, mode.flags()),
        &format!("attaching the XDP program in {mode} mode"),
    )
}

/// The program attached to one interface with its map; dropping it
/// detaches the program.
pub struct XdpRedirect {
    map: OwnedFd,
    _prog: OwnedFd,
    _link: OwnedFd,
    mode: XdpMode,
    vlan_outside_frame: Result<(), String>,
}

impl XdpRedirect {
    /// Loads the program for `queues` receive queues and attaches it to
    /// interface `ifindex` in `mode`; with `fast` = (the switch's fast
    /// path, this port's number), frames of a flow in the fast path leave
    /// in the kernel.
    pub fn attach(
        ifindex: u32,
        queues: u32,
        max_len: u32,
        mode: XdpMode,
        fast: Option<(&crate::fastpath::FastPath, u32)>,
        stamp: bool,
    ) -> io::Result<XdpRedirect> {
        let map = bpf_fd(
            BPF_MAP_CREATE,
            Attr::new()
                .u32(0, BPF_MAP_TYPE_XSKMAP)
                .u32(4, 4)
                .u32(8, 4)
                .u32(12, queues.max(1)),
            "creating the XSKMAP (needs root or CAP_BPF)",
        )?;
        let mut prog = if stamp { receive_time_in_meta() } else { Vec::new() };
        prog.extend(match fast {
            Some((fp, in_port)) => fp.program(map.as_raw_fd(), in_port, max_len),
            None => redirect_program(map.as_raw_fd(), max_len),
        });
        // In the driver, a frame whose VLAN tag is held beside it (a veth
        // whose host sent it through a VLAN device; a NIC that strips
        // tags) would reach the socket or the fast path untagged: the
        // program first sends such frames to the stack, where the port's
        // AF_PACKET socket gets the tag with them. Generic XDP cannot ask.
        let checked = match (mode, vlan_tag_kfunc()) {
            (XdpMode::Native, Some(kfunc)) => {
                let mut with_check = vlan_outside_frame_to_stack(kfunc);
                with_check.extend_from_slice(&prog);
                load_xdp(&with_check, b"sdnlab_xsk", Some(ifindex)).map_err(|e| e.to_string())
            }
            (XdpMode::Native, None) => Err("this kernel has no bpf_xdp_metadata_rx_vlan_tag (Linux 6.8)".into()),
            (XdpMode::Generic, _) => Err("generic XDP cannot see them".into()),
        };
        let (prog_fd, vlan_outside_frame) = match checked {
            Ok(fd) => (fd, Ok(())),
            Err(why) => (load_xdp(&prog, b"sdnlab_xsk", None)?, Err(why)),
        };
        let link = attach_xdp(&prog_fd, ifindex, mode)?;
        Ok(XdpRedirect {
            map,
            _prog: prog_fd,
            _link: link,
            mode,
            vlan_outside_frame,
        })
    }

    /// Steers receive queue `queue` to the AF_XDP socket `xsk`.
    pub fn add_socket(&self, queue: u32, xsk: RawFd) -> io::Result<()> {
        map_update(
            self.map.as_raw_fd(),
            &queue,
            &(xsk as u32),
            "adding the socket to the XSKMAP",
        )
    }

    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// Ok if frames whose VLAN tag is held outside them are sent to the
    /// stack with it (native XDP on Linux 6.8 or later); if not, why: such
    /// frames then reach the socket without their tag.
    pub fn vlan_outside_frame(&self) -> Result<(), &str> {
        self.vlan_outside_frame.as_ref().map(|_| ()).map_err(String::as_str)
    }
}

//! The BPF programs as objects: compiled from `bpf/*.bpf.c` by clang at
//! build time (build.rs), carried in the binary, opened, loaded and read
//! through libbpf (libbpf-rs, and libbpf-sys for what libbpf-rs does not
//! wrap: an XDP link in a chosen mode, a tcx link, batch map calls into
//! reused buffers, and live-frame test runs). Errors
//! say what was being done, with libbpf's own reason (the verifier's log
//! included when it refused a program).
//!
//! Why libbpf and not aya: a native XDP program that asks the driver for a
//! frame's VLAN tag (`bpf_xdp_metadata_rx_vlan_tag`) must call a kfunc and
//! be loaded bound to its device; libbpf does both, and aya (0.16) does
//! neither the binding nor, on the Rust these machines have, the kfunc.

use libbpf_rs::{MapCore, Object, ObjectBuilder, OpenObject};
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Once;

/// The XDP patch cable (`patch.bpf.c`).
pub(crate) const PATCH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/patch.bpf.o"));
/// The steering program of AF_XDP ports, with the fast path (`xsk.bpf.c`).
pub(crate) const XSK: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xsk.bpf.o"));
/// Test only: the fast path's parser alone (`key_probe.bpf.c`).
#[cfg(test)]
pub(crate) const KEY_PROBE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/key_probe.bpf.o"));
/// The in-kernel traffic generator (`gen.bpf.c`).
pub(crate) const GEN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gen.bpf.o"));
/// The tc egress VLAN tagger (`vlan_tag.bpf.c`).
pub(crate) const VLAN_TAG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/vlan_tag.bpf.o"));

/// An error of libbpf while doing `what`, as an I/O error of the same kind.
pub(crate) fn error(what: &str) -> impl FnOnce(libbpf_rs::Error) -> io::Error + '_ {
    move |e| {
        let kind = match e.kind() {
            libbpf_rs::ErrorKind::NotFound => io::ErrorKind::NotFound,
            libbpf_rs::ErrorKind::PermissionDenied => io::ErrorKind::PermissionDenied,
            libbpf_rs::ErrorKind::InvalidInput => io::ErrorKind::InvalidInput,
            libbpf_rs::ErrorKind::Unsupported => io::ErrorKind::Unsupported,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, format!("{what}: {}", flat(&format!("{e:#}"))))
    }
}

fn flat(s: &str) -> String {
    s.trim().replace('\n', "; ")
}

thread_local! {
    /// What libbpf said on this thread while the last object was loaded
    /// (the verifier's log, above all), to put in the error.
    static SAID: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn keep(_: libbpf_rs::PrintLevel, msg: String) {
    SAID.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < 16 * 1024 {
            s.push_str(&msg);
        }
    });
}

/// Opens `bytes` (one of the objects above) under `name`.
pub(crate) fn open(bytes: &[u8], name: &str) -> io::Result<OpenObject> {
    static QUIET: Once = Once::new();
    // libbpf prints to stderr by default; its words go into our errors instead.
    QUIET.call_once(|| {
        libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Warn, keep)));
    });
    ObjectBuilder::default()
        .name(name)
        .and_then(|b| b.open_memory(bytes))
        .map_err(error(&format!("opening the BPF object {name}")))
}

/// Loads an opened object into the kernel; a refusal comes with what
/// libbpf said (the verifier's log).
pub(crate) fn load(open: OpenObject, what: &str) -> io::Result<Object> {
    SAID.with(|s| s.borrow_mut().clear());
    open.load().map_err(|e| {
        let said = SAID.with(|s| flat(&s.borrow()));
        let e = error(what)(e);
        if said.is_empty() {
            e
        } else {
            io::Error::new(e.kind(), format!("{e}; libbpf: {said}"))
        }
    })
}

/// Sets `const volatile` variables of object `bytes` (opened as `open`)
/// before it is loaded, each (name, value): their places in `.rodata` come
/// from the object's BTF (read once for all), and a value of another size
/// is refused. The verifier then sees them as constants (branches on them
/// are pruned).
pub(crate) fn set_rodata(open: &mut OpenObject, bytes: &[u8], vars: &[(&str, &[u8])]) -> io::Result<()> {
    let missing = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let btf = libbpf_rs::btf::Btf::from_raw("object", bytes)
        .map_err(error("reading the object's BTF"))?
        .ok_or_else(|| missing("the BPF object has no BTF".into()))?;
    let sec: libbpf_rs::btf::types::DataSec<'_> = btf
        .type_by_name(".rodata")
        .ok_or_else(|| missing("the BPF object has no .rodata".into()))?;
    let mut map = open
        .maps_mut()
        .find(|m| m.name().to_string_lossy().ends_with(".rodata"))
        .ok_or_else(|| missing("the BPF object has no .rodata map".into()))?;
    let data = map
        .initial_value_mut()
        .ok_or_else(|| missing("the .rodata map has no initial value".into()))?;
    for (var, value) in vars {
        let (offset, size) = sec
            .iter()
            .find(|v| {
                btf.type_by_id::<libbpf_rs::btf::BtfType<'_>>(v.ty)
                    .and_then(|t| t.name())
                    .is_some_and(|n| n == OsStr::new(var))
            })
            .map(|v| (v.offset as usize, v.size))
            .ok_or_else(|| missing(format!("no constant {var} in the BPF object")))?;
        if size != value.len() {
            return Err(missing(format!(
                "{var} is {size} bytes in the BPF object, {} given",
                value.len()
            )));
        }
        data[offset..offset + size].copy_from_slice(value);
    }
    Ok(())
}

/// Program `name` of `obj` (its descriptor: `.as_fd()`).
pub(crate) fn prog<'a>(obj: &'a Object, name: &str) -> io::Result<libbpf_rs::Program<'a>> {
    obj.progs()
        .find(|p| p.name() == OsStr::new(name))
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no program {name} in the object")))
}

/// Writes `value` under `key` in map `map` of `obj`.
pub(crate) fn update(obj: &Object, map: &str, key: &[u8], value: &[u8], what: &str) -> io::Result<()> {
    let m = obj
        .maps()
        .find(|m| m.name() == OsStr::new(map))
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{what}: no map {map} in the object")))?;
    m.update(key, value, libbpf_rs::MapFlags::ANY).map_err(error(what))
}

/// A BPF link of program `prog` to interface `ifindex` at `attach_type`
/// with `flags`; the program stays attached while the link is open.
pub(crate) fn link(
    prog: BorrowedFd<'_>,
    ifindex: u32,
    attach_type: u32,
    flags: u32,
    what: &str,
) -> io::Result<OwnedFd> {
    let opts = libbpf_sys::bpf_link_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _,
        flags,
        ..Default::default()
    };
    // SAFETY: plain call into libbpf with a live descriptor and options
    // that outlive it; a non-negative result is a new descriptor we own.
    let fd = unsafe { libbpf_sys::bpf_link_create(prog.as_raw_fd(), ifindex as i32, attach_type, &opts) };
    if fd < 0 {
        let e = io::Error::from_raw_os_error(-fd);
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    // SAFETY: see above.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Attaches XDP program `prog` to `ifindex` in `mode` through a BPF link.
pub(crate) fn attach_xdp(prog: BorrowedFd<'_>, ifindex: u32, mode: crate::XdpMode) -> io::Result<OwnedFd> {
    link(
        prog,
        ifindex,
        libbpf_sys::BPF_XDP,
        mode.flags(),
        &format!("attaching the XDP program in {mode} mode"),
    )
}

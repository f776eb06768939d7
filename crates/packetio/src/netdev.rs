//! What an interface's driver says it can do with XDP, asked of the
//! kernel's `netdev` generic netlink family (Linux 6.3 and later): above
//! all whether it takes frames other interfaces redirect into it
//! (`NETDEV_XDP_ACT_NDO_XMIT`). A veth reports that only while its peer
//! has an XDP program or GRO on; without it, the kernel drops frames
//! redirected into the veth, so the switch's fast path must not send any
//! there. `NetdevWatch` hears the family's change notifications (its
//! `mgmt` group), which the kernel sends the moment those features change.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NETLINK_GENERIC: i32 = 16;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const CTRL_ATTR_MCAST_GROUPS: u16 = 7;
const CTRL_ATTR_MCAST_GRP_NAME: u16 = 1;
const CTRL_ATTR_MCAST_GRP_ID: u16 = 2;
const SOL_NETLINK: i32 = 270;
const NETLINK_ADD_MEMBERSHIP: i32 = 1;
const NETDEV_CMD_DEV_GET: u8 = 1;
const NETDEV_A_DEV_IFINDEX: u16 = 1;
const NETDEV_A_DEV_XDP_FEATURES: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;

/// The driver takes frames redirected into it (`ndo_xdp_xmit`).
pub const XDP_ACT_NDO_XMIT: u64 = 4;

/// A generic netlink socket bound to the `netdev` family.
pub struct NetdevQuery {
    sock: OwnedFd,
    family: u16,
    /// The multicast group of device change notifications.
    mgmt_group: Option<u32>,
    seq: u32,
    buf: Vec<u8>,
}

/// A generic netlink socket in the `netdev` family's `mgmt` group: it
/// becomes readable when any interface of this namespace is added,
/// removed, or changes what it can do with XDP.
pub struct NetdevWatch {
    sock: OwnedFd,
    buf: Vec<u8>,
}

fn netlink_socket(flags: i32) -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation; the fd is owned at once.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | flags,
            NETLINK_GENERIC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh socket nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl NetdevQuery {
    /// Opens the socket in this thread's namespace and looks the family up
    /// (an error on kernels before 6.3, which do not have it).
    pub fn open() -> io::Result<NetdevQuery> {
        let mut q = NetdevQuery {
            sock: netlink_socket(0)?,
            family: 0,
            mgmt_group: None,
            seq: 0,
            buf: vec![0; 8192],
        };
        let reply = q
            .request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME, b"netdev\0")
            .map_err(|e| io::Error::new(e.kind(), format!("the kernel's netdev netlink family: {e}")))?;
        q.family = attribute(&reply, CTRL_ATTR_FAMILY_ID)
            .and_then(|v| v.get(..2))
            .map(|v| u16::from_ne_bytes([v[0], v[1]]))
            .ok_or_else(|| io::Error::other("the kernel's netdev netlink family: no id in the reply"))?;
        q.mgmt_group = attribute(&reply, CTRL_ATTR_MCAST_GROUPS).and_then(|groups| group_id(groups, b"mgmt"));
        Ok(q)
    }

    /// A socket that hears the family's device change notifications
    /// (non-blocking; poll it for readability).
    pub fn watch(&self) -> io::Result<NetdevWatch> {
        let group = self
            .mgmt_group
            .ok_or_else(|| io::Error::other("the kernel's netdev family has no mgmt notification group"))?;
        let sock = netlink_socket(libc::SOCK_NONBLOCK)?;
        // Bound, so the kernel gives it a port id: it skips sockets with
        // none when it broadcasts.
        // SAFETY: binds to a zeroed sockaddr_nl of its size.
        let r = unsafe {
            let mut me: libc::sockaddr_nl = std::mem::zeroed();
            me.nl_family = libc::AF_NETLINK as u16;
            libc::bind(
                sock.as_raw_fd(),
                (&me as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: sets an option from a live u32 of its size.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                SOL_NETLINK,
                NETLINK_ADD_MEMBERSHIP,
                (&group as *const u32).cast(),
                4,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("joining the netdev notifications: {e}"),
            ));
        }
        Ok(NetdevWatch {
            sock,
            buf: vec![0; 8192],
        })
    }

    /// The `NETDEV_XDP_ACT_*` bits interface `ifindex` reports.
    pub fn xdp_features(&mut self, ifindex: u32) -> io::Result<u64> {
        let reply = self.request(
            self.family,
            NETDEV_CMD_DEV_GET,
            NETDEV_A_DEV_IFINDEX,
            &ifindex.to_ne_bytes(),
        )?;
        attribute(&reply, NETDEV_A_DEV_XDP_FEATURES)
            .and_then(|v| v.get(..8))
            .map(|v| u64::from_ne_bytes(v.try_into().expect("8 bytes")))
            .ok_or_else(|| io::Error::other(format!("interface {ifindex}: no XDP features in the kernel's reply")))
    }

    /// Sends one request with one attribute; returns the reply's
    /// attributes (the bytes after its generic netlink header).
    fn request(&mut self, kind: u16, cmd: u8, attr: u16, value: &[u8]) -> io::Result<Vec<u8>> {
        self.seq = self.seq.wrapping_add(1);
        let attr_len = 4 + value.len();
        let total = 16 + 4 + attr_len.next_multiple_of(4);
        let mut msg = Vec::with_capacity(total);
        msg.extend((total as u32).to_ne_bytes());
        msg.extend(kind.to_ne_bytes());
        msg.extend(NLM_F_REQUEST.to_ne_bytes());
        msg.extend(self.seq.to_ne_bytes());
        msg.extend(0u32.to_ne_bytes());
        msg.extend([cmd, 1, 0, 0]);
        msg.extend((attr_len as u16).to_ne_bytes());
        msg.extend(attr.to_ne_bytes());
        msg.extend(value);
        msg.resize(total, 0);
        // SAFETY: sends from a live buffer; the kernel is the destination
        // (a zeroed sockaddr_nl).
        let sent = unsafe {
            let mut to: libc::sockaddr_nl = std::mem::zeroed();
            to.nl_family = libc::AF_NETLINK as u16;
            libc::sendto(
                self.sock.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&to as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            // SAFETY: receives into a buffer we own, within its length.
            let n = unsafe { libc::recv(self.sock.as_raw_fd(), self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let got = &self.buf[..n as usize];
            if got.len() < 16 {
                return Err(io::Error::other("short netlink reply"));
            }
            let len = (u32::from_ne_bytes(got[0..4].try_into().expect("4 bytes")) as usize).min(got.len());
            let kind = u16::from_ne_bytes([got[4], got[5]]);
            let seq = u32::from_ne_bytes(got[8..12].try_into().expect("4 bytes"));
            if seq != self.seq {
                continue; // a late answer to an earlier request
            }
            if kind == NLMSG_ERROR {
                let errno = got
                    .get(16..20)
                    .map(|v| i32::from_ne_bytes(v.try_into().expect("4 bytes")))
                    .unwrap_or(-libc::EIO);
                return Err(io::Error::from_raw_os_error(-errno));
            }
            return Ok(got.get(20..len).unwrap_or_default().to_vec());
        }
    }
}

/// What a watch heard since it was last drained.
#[derive(Debug, Default)]
pub struct Heard {
    /// The interfaces notifications named, in order (with repeats).
    pub ifindexes: Vec<u32>,
    /// Notifications were lost (the socket had no room): anything may
    /// have changed.
    pub lost: bool,
}

impl Heard {
    pub fn any(&self) -> bool {
        self.lost || !self.ifindexes.is_empty()
    }
}

impl NetdevWatch {
    /// Reads every notification waiting.
    pub fn drain(&mut self) -> io::Result<Heard> {
        let mut heard = Heard::default();
        loop {
            // SAFETY: receives into a buffer we own, within its length.
            let n = unsafe { libc::recv(self.sock.as_raw_fd(), self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
            if n >= 0 {
                notified_ifindexes(&self.buf[..n as usize], &mut heard.ifindexes);
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => return Ok(heard),
                Some(libc::ENOBUFS) => heard.lost = true,
                _ => return Err(e),
            }
        }
    }
}

/// The interface each netlink message in `datagram` names (messages
/// without one are skipped).
fn notified_ifindexes(datagram: &[u8], out: &mut Vec<u32>) {
    let mut at = 0;
    while at + 20 <= datagram.len() {
        let len = u32::from_ne_bytes(datagram[at..at + 4].try_into().expect("4 bytes")) as usize;
        if len < 20 || at + len > datagram.len() {
            return;
        }
        if let Some(v) = attribute(&datagram[at + 20..at + len], NETDEV_A_DEV_IFINDEX).and_then(|v| v.get(..4)) {
            out.push(u32::from_ne_bytes(v.try_into().expect("4 bytes")));
        }
        at += len.next_multiple_of(4);
    }
}

impl AsRawFd for NetdevWatch {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.sock.as_raw_fd()
    }
}

/// The id of multicast group `name` in a family's CTRL_ATTR_MCAST_GROUPS
/// (a nest of nests, each with a name and an id).
fn group_id(groups: &[u8], name: &[u8]) -> Option<u32> {
    let mut at = 0;
    while at + 4 <= groups.len() {
        let len = u16::from_ne_bytes([groups[at], groups[at + 1]]) as usize;
        if len < 4 || at + len > groups.len() {
            return None;
        }
        let group = &groups[at + 4..at + len];
        let named =
            attribute(group, CTRL_ATTR_MCAST_GRP_NAME).is_some_and(|n| n.strip_suffix(b"\0").unwrap_or(n) == name);
        if named {
            return attribute(group, CTRL_ATTR_MCAST_GRP_ID)
                .and_then(|v| v.get(..4))
                .map(|v| u32::from_ne_bytes(v.try_into().expect("4 bytes")));
        }
        at += len.next_multiple_of(4);
    }
    None
}

/// The payload of the first attribute of type `kind` in `attrs`.
fn attribute(attrs: &[u8], kind: u16) -> Option<&[u8]> {
    let mut at = 0;
    while at + 4 <= attrs.len() {
        let len = u16::from_ne_bytes([attrs[at], attrs[at + 1]]) as usize;
        // The top two bits are flags (nested, network order).
        let t = u16::from_ne_bytes([attrs[at + 2], attrs[at + 3]]) & 0x3fff;
        if len < 4 || at + len > attrs.len() {
            return None;
        }
        if t == kind {
            return Some(&attrs[at + 4..at + len]);
        }
        at += len.next_multiple_of(4);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_found_past_padding_and_flags() {
        // A 5-byte attribute (padded to 8), then one with the nested flag.
        let attrs = [5, 0, 7, 0, 0xaa, 0, 0, 0, 8, 0, 3, 0x80, 1, 2, 3, 4];
        assert_eq!(attribute(&attrs, 7), Some(&[0xaa][..]));
        assert_eq!(attribute(&attrs, 3), Some(&[1, 2, 3, 4][..]));
        assert_eq!(attribute(&attrs, 9), None);
        // A length running past the end is no attribute.
        assert_eq!(attribute(&[40, 0, 3, 0, 1, 2, 3, 4], 3), None);
    }

    #[test]
    fn a_multicast_group_is_found_by_name_among_several() {
        // Two nested groups: {name "page-pool", id 5}, {name "mgmt", id 4}.
        let mut groups = Vec::new();
        for (name, id) in [(&b"page-pool\0"[..], 5u32), (&b"mgmt\0"[..], 4)] {
            let mut inner = Vec::new();
            inner.extend(((4 + name.len()) as u16).to_ne_bytes());
            inner.extend(CTRL_ATTR_MCAST_GRP_NAME.to_ne_bytes());
            inner.extend(name);
            inner.resize(inner.len().next_multiple_of(4), 0);
            inner.extend(8u16.to_ne_bytes());
            inner.extend(CTRL_ATTR_MCAST_GRP_ID.to_ne_bytes());
            inner.extend(id.to_ne_bytes());
            groups.extend(((4 + inner.len()) as u16).to_ne_bytes());
            groups.extend(1u16.to_ne_bytes());
            groups.extend(inner);
        }
        assert_eq!(group_id(&groups, b"mgmt"), Some(4));
        assert_eq!(group_id(&groups, b"page-pool"), Some(5));
        assert_eq!(group_id(&groups, b"page"), None, "a prefix is not the name");
    }
}

//! Finds a kernel function's BTF type id in the running kernel's own BTF
//! (`/sys/kernel/btf/vmlinux`), which an eBPF program needs to call a
//! kfunc. Only the walk over the type section is done: each type's kind
//! says how many bytes follow its 12-byte header, and a FUNC's name is read
//! from the string section.

use std::io;

const BTF_MAGIC: u16 = 0xeb9f;
const BTF_KIND_FUNC: u32 = 12;

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("kernel BTF: {why}"))
}

fn u32_at(b: &[u8], at: usize) -> io::Result<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| invalid("truncated"))
}

/// The type id of the FUNC named `name` in the BTF blob `btf`.
pub fn func_id_in(btf: &[u8], name: &str) -> io::Result<Option<u32>> {
    if btf.len() < 24 || u16::from_ne_bytes([btf[0], btf[1]]) != BTF_MAGIC {
        return Err(invalid("not a BTF blob (wrong magic or byte order)"));
    }
    let hdr_len = u32_at(btf, 4)? as usize;
    let (type_off, type_len) = (u32_at(btf, 8)? as usize, u32_at(btf, 12)? as usize);
    let (str_off, str_len) = (u32_at(btf, 16)? as usize, u32_at(btf, 20)? as usize);
    let types = btf
        .get(hdr_len + type_off..hdr_len + type_off + type_len)
        .ok_or_else(|| invalid("type section out of bounds"))?;
    let strings = btf
        .get(hdr_len + str_off..hdr_len + str_off + str_len)
        .ok_or_else(|| invalid("string section out of bounds"))?;
    let name_at = |off: usize| -> &[u8] {
        let s = strings.get(off..).unwrap_or_default();
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    };
    let mut at = 0usize;
    let mut id = 1u32;
    while at < types.len() {
        let name_off = u32_at(types, at)? as usize;
        let info = u32_at(types, at + 4)?;
        let kind = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        if kind == BTF_KIND_FUNC && name_at(name_off) == name.as_bytes() {
            return Ok(Some(id));
        }
        let extra = match kind {
            1 | 14 | 17 => 4,             // INT, VAR, DECL_TAG
            3 => 12,                      // ARRAY
            4 | 5 | 15 | 19 => vlen * 12, // STRUCT, UNION, DATASEC, ENUM64
            6 | 13 => vlen * 8,           // ENUM, FUNC_PROTO
            2 | 7..=12 | 16 | 18 => 0,    // PTR, FWD, TYPEDEF, qualifiers, FUNC, FLOAT, TYPE_TAG
            other => return Err(invalid(&format!("unknown type kind {other}"))),
        };
        at += 12 + extra;
        id += 1;
    }
    Ok(None)
}

/// The type id of kernel function `name`, if this kernel has it.
pub fn vmlinux_func_id(name: &str) -> io::Result<Option<u32>> {
    let btf = std::fs::read("/sys/kernel/btf/vmlinux")
        .map_err(|e| io::Error::new(e.kind(), format!("/sys/kernel/btf/vmlinux: {e}")))?;
    func_id_in(&btf, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blob with an INT, a STRUCT of two members, and a FUNC.
    fn blob() -> Vec<u8> {
        let strings = b"\0int\0pair\0a\0b\0the_func\0".to_vec();
        let mut types = Vec::new();
        let mut t = |words: &[u32]| words.iter().for_each(|w| types.extend(w.to_ne_bytes()));
        t(&[1, 1 << 24, 4, 32]); // [1] INT "int"
        t(&[5, (4 << 24) | 2, 8, 10, 1, 0, 12, 1, 32]); // [2] STRUCT "pair" {a, b}
        t(&[14, 12 << 24, 0]); // [3] FUNC "the_func"
        let mut b = Vec::new();
        b.extend(BTF_MAGIC.to_ne_bytes());
        b.extend([1, 0]);
        for w in [24u32, 0, types.len() as u32, types.len() as u32, strings.len() as u32] {
            b.extend(w.to_ne_bytes());
        }
        b.extend(types);
        b.extend(strings);
        b
    }

    #[test]
    fn a_function_is_found_past_types_of_other_sizes() {
        assert_eq!(func_id_in(&blob(), "the_func").unwrap(), Some(3));
        assert_eq!(func_id_in(&blob(), "pair").unwrap(), None, "a STRUCT is not a FUNC");
        assert_eq!(func_id_in(&blob(), "missing").unwrap(), None);
    }

    #[test]
    fn a_blob_that_is_not_btf_is_refused() {
        let mut b = blob();
        b[0] ^= 0xff;
        assert!(func_id_in(&b, "the_func").is_err());
        assert!(func_id_in(&blob()[..30], "the_func").is_err());
    }

    #[test]
    fn the_running_kernel_has_the_vlan_tag_kfunc() {
        // Linux 6.8 added it; the machines this runs on have 6.18.
        let id = vmlinux_func_id("bpf_xdp_metadata_rx_vlan_tag").unwrap();
        assert!(id.is_some_and(|i| i > 1000), "{id:?}");
    }
}

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

/// Every named field of a BTF struct (members of anonymous unions and
/// structs flattened, nested names joined by dots) at its byte offset.
fn fields(
    btf: &libbpf_rs::btf::Btf<'_>,
    ty: libbpf_rs::btf::BtfType<'_>,
    prefix: &str,
    base: usize,
    out: &mut Vec<(String, usize)>,
) {
    use libbpf_rs::btf::types::{MemberAttr, Struct, Union};
    let members: Vec<(Option<String>, libbpf_rs::btf::TypeId, u32)> = if let Ok(st) = Struct::try_from(ty) {
        st.iter()
            .map(|m| {
                (
                    m.name.map(|n| n.to_string_lossy().into_owned()),
                    m.ty,
                    match m.attr {
                        MemberAttr::Normal { offset } | MemberAttr::BitField { offset, .. } => offset,
                    },
                )
            })
            .collect()
    } else if let Ok(un) = Union::try_from(ty) {
        un.iter()
            .map(|m| {
                (
                    m.name.map(|n| n.to_string_lossy().into_owned()),
                    m.ty,
                    match m.attr {
                        MemberAttr::Normal { offset } | MemberAttr::BitField { offset, .. } => offset,
                    },
                )
            })
            .collect()
    } else {
        return;
    };
    for (name, id, bits) in members {
        let at = base + bits as usize / 8;
        let inner = btf
            .type_by_id::<libbpf_rs::btf::BtfType<'_>>(id)
            .unwrap()
            .skip_mods_and_typedefs();
        let name = match name.filter(|n| !n.is_empty()) {
            Some(n) if prefix.is_empty() => n,
            Some(n) => format!("{prefix}.{n}"),
            None => prefix.to_string(),
        };
        let composite = matches!(
            inner.kind(),
            libbpf_rs::btf::BtfKind::Struct | libbpf_rs::btf::BtfKind::Union
        );
        if composite {
            fields(btf, inner, &name, at, out);
        } else {
            out.push((name, at));
        }
    }
}

/// The key's and the slots' Rust layouts are the C structs' in the
/// program's object (`bpf/flow_key.h`), field by field.
#[test]
fn the_key_and_the_entry_are_laid_out_as_the_programs_structs() {
    use libbpf_rs::btf::{types::Struct, Btf, HasSize};
    // The key as the parser builds it (the probe's object carries it;
    // the steering program's tables hold keys as words).
    let btf = Btf::from_raw("key_probe", objects::KEY_PROBE)
        .unwrap()
        .expect("the object has BTF");
    let key: Struct<'_> = btf.type_by_name("flow_key").expect("struct flow_key");
    assert_eq!(key.size(), KEY_LEN, "sizeof(struct flow_key)");
    assert_eq!(std::mem::size_of::<FlowKey>(), KEY_LEN);
    let mut got = Vec::new();
    fields(&btf, *key, "", 0, &mut got);
    let want = [
        ("in_port", at::IN_PORT),
        ("eth_dst", at::ETH_DST),
        ("eth_src", at::ETH_SRC),
        ("eth_type", at::ETH_TYPE),
        ("ip_tos", at::IP_TOS),
        ("ip_proto", at::IP_PROTO),
        ("v4.src", at::V4_SRC),
        ("v4.dst", at::V4_DST),
        ("v4.l4", at::V4_L4),
        ("v6.first_word", at::V6_FIRST_WORD),
        ("v6.src", at::V6_SRC),
        ("v6.dst", at::V6_DST),
        ("v6.next_header", at::V6_NEXT_HEADER),
        ("v6.pad", at::V6_NEXT_HEADER + 1),
        ("v6.l4", at::V6_L4),
    ];
    let want: Vec<(String, usize)> = want.iter().map(|(n, a)| (n.to_string(), *a)).collect();
    assert_eq!(got, want, "struct flow_key against FlowKey's offsets (fastpath::at)");
    // The IPv4 map's keys end with the IPv4 transport word.
    assert_eq!(KEY_LEN4, at::V4_L4 + 4);

    let btf = Btf::from_raw("xsk", objects::XSK).unwrap().expect("the object has BTF");
    for (name, key_len) in [("flow_slot4", KEY_LEN4), ("flow_slot6", KEY_LEN)] {
        let st: Struct<'_> = btf.type_by_name(name).expect("struct flow_slot4 and flow_slot6");
        assert_eq!(st.size(), slot::size(key_len), "sizeof(struct {name})");
        let mut got = Vec::new();
        fields(&btf, *st, "", 0, &mut got);
        let want: Vec<(String, usize)> = [
            ("seq", slot::SEQ),
            ("used", slot::USED),
            ("out_slot", slot::OUT_SLOT),
            ("generation", slot::GENERATION),
            ("key", slot::KEY),
            ("packets", slot::packets(key_len)),
            ("bytes", slot::bytes(key_len)),
        ]
        .iter()
        .map(|(n, a)| (n.to_string(), *a))
        .collect();
        assert_eq!(got, want, "struct {name} against fastpath::slot");
    }
}

/// Frames of every kind the key covers or refuses, untagged and
/// tagged, whole and cut at every length, and with bytes changed at
/// random (seeded): the cases the two parsers must agree on.
fn frames_to_agree_on() -> Vec<Vec<u8>> {
    let eth = |ty: [u8; 2]| {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        f.extend(ty);
        f
    };
    let mut bases = Vec::new();
    for (proto, l4) in [(17u8, 8usize), (6, 20), (132, 12), (1, 8), (47, 8)] {
        for (ver, frag) in [
            (0x45u8, [0u8, 0u8]),
            (0x46, [0, 0]),
            (0x45, [0x20, 0]),
            (0x45, [0, 8]),
            (0x45, [0x40, 0]),
        ] {
            let mut f = eth([0x08, 0x00]);
            f.extend([
                ver, 0xb8, 0, 46, 0x12, 0x34, frag[0], frag[1], 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
            ]);
            f.extend((0..l4 + 6).map(|i| 0x30 + i as u8));
            bases.push(f);
        }
    }
    for (next, l4) in [(17u8, 8usize), (6, 20), (132, 12), (58, 8), (0, 8), (44, 8)] {
        for icmp_type in [1u8, 128, 133, 135, 137, 138] {
            let mut f = eth([0x86, 0xdd]);
            f.extend([0x6a, 0xbc, 0xde, 0xf1, 0, l4 as u8, next, 64]);
            f.extend((0..32).map(|i| i as u8 * 7));
            f.push(icmp_type);
            f.extend((1..l4 + 6).map(|i| 0x40 + i as u8));
            bases.push(f);
            if next != 58 {
                break;
            }
        }
    }
    bases.push(eth([0x08, 0x06]).into_iter().chain([0u8; 46]).collect());
    let mut out = Vec::new();
    for b in &bases {
        for tag in [None, Some([0x81u8, 0x00, 0xa0, 0x07]), Some([0x88, 0xa8, 0x00, 0x05])] {
            let mut f = b.clone();
            if let Some(t) = tag {
                f.splice(12..12, t);
            }
            for len in 14..=f.len() {
                out.push(f[..len].to_vec());
            }
        }
    }
    // Bytes changed at random in whole frames (a seeded xorshift).
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let whole: Vec<Vec<u8>> = out.iter().filter(|f| f.len() >= 60).cloned().collect();
    for _ in 0..3000 {
        let mut f = whole[next() as usize % whole.len()].clone();
        for _ in 0..1 + next() % 3 {
            let at = 12 + next() as usize % (f.len() - 12);
            f[at] = next() as u8;
        }
        out.push(f);
    }
    out
}

/// The parser in the kernel (`flow_key_of` in `bpf/flow_key.h`, run by
/// BPF_PROG_TEST_RUN) and `FlowKey::of` give the same key, or both
/// none, for every frame, on a port that may carry tags and on one
/// that may not. Needs root (CAP_BPF).
#[test]
#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "loads a BPF program: needs root (--features system-tests)"
)]
fn the_kernels_parser_and_flowkey_of_agree_on_every_frame() {
    use libbpf_rs::{MapCore, MapFlags};
    let frames = frames_to_agree_on();
    let mut keys = 0;
    for in_port in [3u32, 0x1_0002] {
        let mut open = objects::open(objects::KEY_PROBE, "sdnlab_key_probe").unwrap();
        objects::set_rodata(&mut open, objects::KEY_PROBE, &[("in_port", &in_port.to_ne_bytes())]).unwrap();
        let obj = objects::load(open, "loading the key probe (needs root or CAP_BPF)").unwrap();
        let prog = obj.progs_mut().find(|p| p.name() == "sdnlab_key_probe").unwrap();
        let out = obj.maps().find(|m| m.name() == "probe_out").unwrap();
        for f in &frames {
            let input = libbpf_rs::ProgramInput {
                data_in: Some(f),
                ..Default::default()
            };
            let r = prog.test_run(input).unwrap();
            assert_eq!(r.return_value, 2, "XDP_PASS");
            let v = out.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).unwrap().unwrap();
            let kind = u32::from_ne_bytes(v[0..4].try_into().unwrap());
            let kernel = (kind != 0).then(|| FlowKey(v[8..8 + KEY_LEN].try_into().unwrap()));
            let ours = FlowKey::of(in_port, f);
            assert_eq!(kernel, ours, "port {in_port:#x}, frame {f:02x?}");
            if let Some(k) = ours {
                assert_eq!(kind, if k.is_ipv6() { 6 } else { 4 });
                keys += 1;
            }
        }
    }
    // Not only refusals: many frames have keys.
    assert!(keys > 1000, "{keys} keys");
}

/// The program (`bpf/xsk.bpf.c`, run on frames through
/// BPF_PROG_TEST_RUN) finds a flow wherever its probes put it, with
/// the hash, the slot layout and the seqlock as we write them, and
/// counts it where we read; a flow removed, one of an older generation
/// and one that found no free slot take the slow path.
#[test]
#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "loads a BPF program: needs root (--features system-tests)"
)]
fn the_program_finds_every_flow_we_insert_and_no_other() {
    const REDIRECT: u32 = 4;
    const PASS: u32 = 2;
    // 128 slots: a flow is found only where its hash says.
    let fp = FastPath::new(64, 4).unwrap();
    assert_eq!(fp.flows4.slots, 128);
    fp.set_port(1, 1).unwrap(); // lo: a test run reports the redirect
    let obj = crate::bpf::load_xsk(1, 1, 4096, Some((&fp, 2)), false, false).unwrap();
    let prog = obj.progs_mut().find(|p| p.name() == "sdnlab_xsk").unwrap();
    let run = |f: &[u8]| {
        let input = libbpf_rs::ProgramInput {
            data_in: Some(f),
            ..Default::default()
        };
        prog.test_run(input).unwrap().return_value
    };
    let v4 = |i: u16| {
        let mut f = udp_frame();
        f[28..30].copy_from_slice(&i.to_be_bytes());
        f
    };
    let v6 = |i: u16| {
        let mut f = udp6_frame();
        f[36..38].copy_from_slice(&i.to_be_bytes());
        f
    };
    let home = |f: &[u8]| {
        let k = FlowKey::of(2, f).unwrap();
        let t = fp.table_of(&k);
        slot_hash(fp.seed, &k, t.key_len) & (t.slots - 1)
    };
    // PROBES + 1 flows of each version whose hash names slot 5: the
    // last finds every slot it may take taken.
    let crowd = |make: &dyn Fn(u16) -> Vec<u8>| -> Vec<Vec<u8>> {
        (0..u16::MAX)
            .map(make)
            .filter(|f| home(f) == 5)
            .take(PROBES as usize + 1)
            .collect()
    };
    let (mut crowd4, mut crowd6) = (crowd(&v4), crowd(&v6));
    let last = [crowd4.pop().unwrap(), crowd6.pop().unwrap()];
    // And 20 flows of each version at home in slots of their own,
    // away from the crowd.
    let spread = |make: &dyn Fn(u16) -> Vec<u8>| -> Vec<Vec<u8>> {
        let mut homes = std::collections::HashSet::new();
        (30_000..u16::MAX)
            .map(make)
            .filter(|f| {
                let h = home(f);
                (40..120).contains(&h) && h % 2 == 0 && homes.insert(h)
            })
            .take(20)
            .collect()
    };
    let frames: Vec<Vec<u8>> = crowd4
        .into_iter()
        .chain(crowd6)
        .chain(spread(&v4))
        .chain(spread(&v6))
        .collect();
    assert_eq!(frames.len(), 2 * PROBES as usize + 40);
    let keys: Vec<FlowKey> = frames.iter().map(|f| FlowKey::of(2, f).unwrap()).collect();
    for k in &keys {
        fp.insert(k, 1).unwrap();
    }
    for f in &last {
        let k = FlowKey::of(2, f).unwrap();
        let e = fp.insert(&k, 1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(run(f), PASS);
    }
    for (f, k) in frames.iter().zip(&keys) {
        assert_eq!(run(f), REDIRECT, "{k:?}");
        assert_eq!(fp.counts(k).unwrap(), Some((1, f.len() as u64)));
    }
    // Removed: the slow path, the others still found.
    fp.remove_many(&keys[..4]).unwrap();
    fp.remove(&keys[40]).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let want = if i < 4 || i == 40 { PASS } else { REDIRECT };
        assert_eq!(run(f), want, "flow {i}");
    }
    assert_eq!(fp.counts(&keys[0]).unwrap(), None);
    // A new generation: all inert until inserted again.
    fp.invalidate().unwrap();
    assert!(frames.iter().all(|f| run(f) == PASS));
    fp.insert(&keys[5], 1).unwrap();
    assert_eq!(run(&frames[5]), REDIRECT);
    assert_eq!(fp.counts(&keys[5]).unwrap(), Some((1, frames[5].len() as u64)));
    // A slot being rewritten (seq odd) is passed over.
    let t = fp.table_of(&keys[5]);
    let at = fp.lock()[&keys[5]];
    let seq = t.u32_at(at, slot::SEQ);
    seq.fetch_add(1, Ordering::SeqCst);
    assert_eq!(run(&frames[5]), PASS);
    seq.fetch_add(1, Ordering::SeqCst);
    assert_eq!(run(&frames[5]), REDIRECT);
}

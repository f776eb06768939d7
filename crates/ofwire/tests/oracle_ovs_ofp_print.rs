//! Independent oracle: every corpus message we encode must decode in Open
//! vSwitch's `ovs-ofctl ofp-print` without error, and OVS must see the field
//! values we put in. `ovs-ofctl` comes from Debian's openvswitch-common,
//! installed by scripts/install-deps.sh.

use std::collections::HashMap;
use std::process::Command;

/// Messages OVS cannot decode for reasons of its own, with the reason.
/// tshark's dissector covers these in the other oracle test.
const OVS_DOES_NOT_IMPLEMENT: &[(&str, &str)] = &[
    (
        "v10_stats_request_vendor",
        "opaque vendor stats body; OVS knows only Nicira subtypes",
    ),
    (
        "v13_experimenter",
        "opaque experimenter body; OVS knows only its own subtypes",
    ),
    ("v13_mp_request_experimenter", "opaque experimenter multipart body"),
    ("v13_mp_reply_experimenter", "opaque experimenter multipart body"),
    (
        "v13_meter_mod_experimenter",
        "OVS supports only drop and dscp_remark bands",
    ),
    (
        "v13_flow_mod_ttl_pbb_actions",
        "OVS does not implement COPY_TTL_OUT/IN or PUSH/POP_PBB",
    ),
    ("v13_flow_mod_match_pbb", "OVS does not implement PBB_ISID matching"),
    (
        "v13_flow_mod_match_in_phy_port",
        "OVS does not implement IN_PHY_PORT matching",
    ),
    (
        "v13_flow_mod_match_ipv6_exthdr",
        "OVS does not implement IPV6_EXTHDR matching",
    ),
];

/// What OVS must print for a message, as substrings of its output.
fn expectations() -> HashMap<&'static str, Vec<&'static str>> {
    let e: &[(&str, &[&str])] = &[
        ("hello_v13_bitmap", &["OFPT_HELLO (OF1.3)", "version bitmap: 0x01, 0x04"]),
        ("hello_v15_bitmap", &["version bitmap: 0x01, 0x04, 0x05, 0x06"]),
        ("v10_error", &["OFPT_ERROR (xid=0x64): OFPBRC_BAD_TYPE", "OFPT_BARRIER_REQUEST (xid=0x1)"]),
        ("v10_error_flow_mod_failed", &["OFPFMFC_TABLE_FULL"]),
        ("v10_echo_request", &["OFPT_ECHO_REQUEST", "4 bytes of payload"]),
        ("v10_vendor", &["NXT_ROLE_REPLY"]),
        (
            "v10_features_reply",
            &["dpid:00000000000000a1", "n_tables:1, n_buffers:256", "ARP_MATCH_IP", "1(eth1): addr:00:1b:21:0a:00:01", "LOCAL(eth65534)"],
        ),
        ("v10_get_config_reply", &["frags=normal miss_send_len=128"]),
        ("v10_set_config", &["frags=drop miss_send_len=65535"]),
        ("v10_packet_in", &["total_len=46 in_port=3 (via no_match) data_len=46 buffer=0x00000100", "nw_src=10.0.0.1,nw_dst=10.0.0.2", "tp_src=12345,tp_dst=80"]),
        ("v10_flow_removed", &["priority=100,tcp,in_port=1,nw_dst=10.0.0.0/24,tp_dst=80", "reason=idle", "cookie:0x7", "duration12.000005s", "idle10 pkts42 bytes4200"]),
        ("v10_port_status", &["MOD: 2(eth2)"]),
        ("v10_packet_out", &["in_port=1 actions=FLOOD data_len=46"]),
        ("v10_packet_out_buffered", &["actions=output:2 buffer=0x00000100"]),
        ("v10_flow_mod_add", &["ADD priority=100,tcp,in_port=1,nw_dst=10.0.0.0/24,tp_dst=80 cookie:0xc0ffee idle:10 hard:30 send_flow_rem actions=output:2"]),
        (
            "v10_flow_mod_all_actions",
            &["actions=output:2,CONTROLLER:128,mod_vlan_vid:10,mod_vlan_pcp:3,strip_vlan,mod_dl_src:00:1b:21:0a:00:01,mod_dl_dst:02:00:00:00:00:02,mod_nw_src:10.0.0.1,mod_nw_dst:10.0.0.2,mod_nw_tos:40,mod_tp_src:1234,mod_tp_dst:80,enqueue:1:7"],
        ),
        ("v10_flow_mod_modify", &["MOD priority=100"]),
        ("v10_flow_mod_modify_strict", &["MOD_STRICT", "actions=mod_tp_dst:81"]),
        ("v10_flow_mod_delete", &["DEL priority=100"]),
        ("v10_flow_mod_delete_strict", &["DEL_STRICT"]),
        ("v10_port_mod", &["port: 1: addr:00:1b:21:0a:00:01", "config: PORT_DOWN", "mask:   PORT_DOWN"]),
        ("v10_stats_request_desc", &["OFPST_DESC request"]),
        ("v10_stats_request_flow", &["OFPST_FLOW request"]),
        ("v10_stats_request_aggregate", &["OFPST_AGGREGATE request"]),
        ("v10_stats_request_table", &["OFPST_TABLE request"]),
        ("v10_stats_request_port", &["OFPST_PORT request", "port_no=ANY"]),
        ("v10_stats_request_queue", &["OFPST_QUEUE request", "port=1 queue=ALL"]),
        ("v10_stats_reply_desc", &["Manufacturer: sdnlab", "Hardware: emulated", "Software: 0.1", "Serial Num: 42", "DP Description: corpus switch"]),
        ("v10_stats_reply_flow", &["flags=[more]", "cookie=0x5, duration=3.0000001s, table=0, n_packets=10, n_bytes=1000, idle_timeout=10, priority=100,tcp"]),
        ("v10_stats_reply_aggregate", &["packet_count=10 byte_count=1000 flow_count=2"]),
        ("v10_stats_reply_table", &["table 0 (\"classifier\")", "active=3, lookup=100, matched=90", "max_entries=1000000"]),
        ("v10_stats_reply_port", &["port  1: rx pkts=5, bytes=500", "tx pkts=6, bytes=600"]),
        ("v10_stats_reply_queue", &["port 1 queue 1: bytes=10, pkts=1, errors=0"]),
        ("v10_barrier_request", &["OFPT_BARRIER_REQUEST"]),
        ("v10_barrier_reply", &["OFPT_BARRIER_REPLY"]),
        ("v10_queue_get_config_request", &["OFPT_QUEUE_GET_CONFIG_REQUEST", "port=1"]),
        ("v10_queue_get_config_reply", &["queue 1: min_rate:50.0%"]),
        ("v13_error", &["OFPBMC_BAD_PREREQ"]),
        ("v13_error_experimenter", &["OFPBFC_UNKNOWN"]),
        ("v13_echo_reply", &["OFPT_ECHO_REPLY (OF1.3)", "2 bytes of payload"]),
        ("v13_features_request", &["OFPT_FEATURES_REQUEST (OF1.3)"]),
        ("v13_features_reply", &["dpid:00000000000000a1", "n_tables:254, n_buffers:0", "GROUP_STATS"]),
        ("v13_get_config_request", &["OFPT_GET_CONFIG_REQUEST (OF1.3)"]),
        ("v13_get_config_reply", &["miss_send_len=65535"]),
        ("v13_set_config", &["miss_send_len=128"]),
        ("v13_packet_in", &["total_len=46 in_port=3 (via no_match) data_len=46 (unbuffered)"]),
        ("v13_packet_in_action_metadata", &["table_id=2 cookie=0xabc total_len=1500 tun_id=0x7,metadata=0x99,in_port=1 (via action)", "buffer=0x00000200"]),
        ("v13_flow_removed", &["priority=100,udp,tp_src=53,tp_dst=5353 reason=hard table_id=0 cookie:0x7 duration30.000000001s idle0 hard30 pkts9 bytes900"]),
        ("v13_port_status", &["ADD: 5(p5)", "state:      LIVE", "speed: 10000 Mbps now"]),
        ("v13_packet_out", &["in_port=CONTROLLER actions=FLOOD data_len=46"]),
        ("v13_flow_mod_add", &["ADD priority=100,udp,tp_src=53,tp_dst=5353 cookie:0xc0ffee idle:10 hard:30 send_flow_rem actions=output:2"]),
        (
            "v13_flow_mod_all_actions",
            &["actions=output:2,CONTROLLER:65535,push_vlan:0x8100,set_field:4101->vlan_vid,pop_vlan,set_queue:3,group:1,mod_nw_ttl:12,dec_ttl,set_field:02:00:00:00:00:02->eth_dst,set_field:192.168.1.1->ip_src,set_field:8080->tcp_dst,push_mpls:0x8847,set_mpls_ttl(9),dec_mpls_ttl,pop_mpls:0x0800"],
        ),
        ("v13_flow_mod_all_instructions", &["actions=meter:1,output:4,clear_actions,write_actions(output:3),write_metadata:0x10/0xff,goto_table:1"]),
        ("v13_flow_mod_modify", &["MOD priority=100"]),
        ("v13_flow_mod_modify_strict", &["MOD_STRICT priority=100,sctp,tp_src=9,tp_dst=10"]),
        ("v13_flow_mod_delete", &["DEL table:255 priority=100 cookie:0xc0ffee/0xffff"]),
        ("v13_flow_mod_delete_strict", &["DEL_STRICT priority=100,icmp,icmp_type=8,icmp_code=0"]),
        ("v13_group_mod_all", &["ADD group_id=1,type=all,bucket=actions=output:2,bucket=actions=output:3"]),
        ("v13_group_mod_select", &["ADD group_id=2,type=select,bucket=weight:3,actions=output:2,bucket=actions=output:3"]),
        ("v13_group_mod_indirect", &["MOD group_id=3,type=indirect,bucket=actions=output:2"]),
        ("v13_group_mod_ff", &["ADD group_id=4,type=ff,bucket=watch_port:2,actions=output:2,bucket=watch_port:3,actions=output:3"]),
        ("v13_group_mod_delete", &["DEL group_id=4294967292"]),
        ("v13_port_mod", &["port: 1: addr:00:1b:21:0a:00:01", "config: PORT_DOWN"]),
        ("v13_table_mod", &["OFPT_TABLE_MOD (OF1.3)", "table_id=0"]),
        ("v13_meter_mod_drop", &["ADD meter=1 kbps stats bands=", "type=drop rate=1000"]),
        ("v13_meter_mod_dscp", &["MOD meter=2 pktps burst bands=", "type=dscp_remark rate=100 burst_size=10 prec_level=1"]),
        ("v13_meter_mod_delete", &["DEL meter=1"]),
        ("v13_mp_request_desc", &["OFPST_DESC request (OF1.3)"]),
        ("v13_mp_request_flow", &["OFPST_FLOW request (OF1.3)"]),
        ("v13_mp_request_flow_match", &["OFPST_FLOW request (OF1.3)", "udp,tp_src=53,tp_dst=5353"]),
        ("v13_mp_request_aggregate", &["OFPST_AGGREGATE request (OF1.3)"]),
        ("v13_mp_request_table", &["OFPST_TABLE request (OF1.3)"]),
        ("v13_mp_request_port_stats", &["OFPST_PORT request (OF1.3)", "port_no=ANY"]),
        ("v13_mp_request_queue", &["port=ANY queue=ALL"]),
        ("v13_mp_request_group", &["OFPST_GROUP request (OF1.3)", "group_id=ALL"]),
        ("v13_mp_request_group_desc", &["OFPST_GROUP_DESC request (OF1.3)"]),
        ("v13_mp_request_group_features", &["OFPST_GROUP_FEATURES request (OF1.3)"]),
        ("v13_mp_request_meter", &["OFPST_METER request (OF1.3)", "meter=all"]),
        ("v13_mp_request_meter_config", &["OFPST_METER_CONFIG request (OF1.3)", "meter=all"]),
        ("v13_mp_request_meter_features", &["OFPST_METER_FEATURES request (OF1.3)"]),
        ("v13_mp_request_table_features", &["OFPST_TABLE_FEATURES request (OF1.3)"]),
        ("v13_mp_request_port_desc", &["OFPST_PORT_DESC request (OF1.3)"]),
        ("v13_mp_reply_desc", &["Manufacturer: sdnlab", "DP Description: corpus switch"]),
        ("v13_mp_reply_flow", &["flags=[more]", "cookie=0x5, duration=1.000000002s, table=0, n_packets=10, n_bytes=1000, idle_timeout=10, send_flow_rem priority=100,udp,tp_src=53,tp_dst=5353 actions=output:2"]),
        ("v13_mp_reply_aggregate", &["packet_count=1 byte_count=2 flow_count=3"]),
        ("v13_mp_reply_table", &["table 0:", "active=4, lookup=10, matched=8"]),
        ("v13_mp_reply_port_stats", &["port  1: rx pkts=1, bytes=3", "tx pkts=2, bytes=4", "duration=5.000000006s"]),
        ("v13_mp_reply_queue", &["port 1 queue 2: bytes=3, pkts=4, errors=0, duration=5.000000006s"]),
        ("v13_mp_reply_group", &["group_id=1,duration=5.000000006s,ref_count=2,packet_count=3,byte_count=4,bucket0:packet_count=1,byte_count=2,bucket1:packet_count=2,byte_count=2"]),
        ("v13_mp_reply_group_desc", &["group_id=2,type=select,bucket=actions=output:2"]),
        ("v13_mp_reply_group_features", &["Types:  0xf", "Capabilities:  0x7", "max_groups=0x10"]),
        ("v13_mp_reply_meter", &["meter:1 flow_count:2 packet_in_count:3 byte_in_count:4 duration:5.000000006s", "0: packet_count:7 byte_count:8"]),
        ("v13_mp_reply_meter_config", &["meter=1 kbps bands=", "type=drop rate=1000"]),
        ("v13_mp_reply_meter_features", &["max_meter:100 max_bands:4 max_color:0", "band_types: drop"]),
        ("v13_mp_reply_table_features", &["table 0 (\"table0\")", "max_entries=1000000", "next tables: 1-3", "instructions: meter apply_actions clear_actions write_actions write_metadata goto_table"]),
        ("v13_mp_reply_port_desc", &[" 1(p1): addr:00:1b:21:0a:00:01", " 2(p2)", "LOCAL("]),
        ("v13_barrier_request", &["OFPT_BARRIER_REQUEST (OF1.3)"]),
        ("v13_barrier_reply", &["OFPT_BARRIER_REPLY (OF1.3)"]),
        ("v13_queue_get_config_request", &["OFPT_QUEUE_GET_CONFIG_REQUEST (OF1.3)", "port=1"]),
        ("v13_queue_get_config_reply", &["queue 1: min_rate:10.0% max_rate:90.0%"]),
        ("v13_role_request", &["role=primary generation_id=7"]),
        ("v13_role_reply", &["role=secondary generation_id=8"]),
        ("v13_get_async_request", &["OFPT_GET_ASYNC_REQUEST (OF1.3)"]),
        ("v13_get_async_reply", &["PACKET_IN: no_match action", "FLOW_REMOVED: idle hard delete group_delete"]),
        ("v13_set_async", &["OFPT_SET_ASYNC (OF1.3)", "PACKET_IN: no_match", "FLOW_REMOVED: idle"]),
        (
            "v13_flow_mod_match_l4tcp",
            &["ADD priority=100,tcp,tun_id=0x55/0xff,metadata=0x1200/0xff00,in_port=1,dl_vlan=10,dl_vlan_pcp=5,dl_src=00:1b:21:0a:00:01,dl_dst=02:00:00:00:00:00/ff:ff:ff:00:00:00,nw_src=10.0.0.0/24,nw_dst=10.0.1.2,nw_tos=184,nw_ecn=1,tp_src=1234,tp_dst=80"],
        ),
        ("v13_flow_mod_match_udp", &["udp,tp_src=53,tp_dst=5353"]),
        ("v13_flow_mod_match_sctp", &["sctp,tp_src=9,tp_dst=10"]),
        ("v13_flow_mod_match_icmp", &["icmp,icmp_type=8,icmp_code=0"]),
        ("v13_flow_mod_match_arp", &["arp,arp_spa=10.0.0.1,arp_tpa=10.0.0.0/16,arp_op=1,arp_sha=00:1b:21:0a:00:01,arp_tha=00:00:00:00:00:00"]),
        (
            "v13_flow_mod_match_ipv6_nd_sll",
            &["icmp6,ipv6_src=2001:db8::/32,ipv6_dst=2001:db8::2,ipv6_label=0x12345,icmp_type=135,icmp_code=0,nd_target=2001:db8::7,nd_sll=00:1b:21:0a:00:01"],
        ),
        ("v13_flow_mod_match_ipv6_nd_tll", &["icmp6,icmp_type=136,nd_target=2001:db8::8,nd_tll=02:00:00:00:00:02"]),
        ("v13_flow_mod_match_mpls", &["mpls,mpls_label=74565,mpls_tc=3,mpls_bos=1"]),
        ("v13_flow_mod_match_empty", &["ADD priority=100 cookie:0xc0ffee"]),
    ];
    e.iter().map(|(k, v)| (*k, v.to_vec())).collect()
}

fn ofp_print(hex: &str) -> String {
    let out = Command::new("ovs-ofctl")
        .args(["ofp-print", hex])
        .output()
        .expect("ovs-ofctl not found: run scripts/install-deps.sh (Debian package openvswitch-common)");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn ovs_decodes_every_message_we_encode_with_the_same_field_values() {
    let expect = expectations();
    let exempt: HashMap<_, _> = OVS_DOES_NOT_IMPLEMENT.iter().copied().collect();
    let corpus = ofwire::corpus::all();
    let mut checked = 0;
    for (name, msg) in &corpus {
        let hex = ofwire::types::to_hex(&msg.to_bytes().unwrap());
        let printed = ofp_print(&hex);
        if let Some(reason) = exempt.get(name.as_str()) {
            assert!(
                printed.contains("decode error"),
                "{name} is exempt ({reason}) but OVS now decodes it:\n{printed}"
            );
            continue;
        }
        for bad in [
            "decode error",
            "|WARN|",
            "|ERR|",
            "truncated",
            "OpenFlow message is empty",
        ] {
            assert!(
                !printed.contains(bad),
                "ovs-ofctl ofp-print flags {name} ({bad}):\n{hex}\n{printed}"
            );
        }
        let type_name = msg.type_name();
        if msg.version == ofwire::OFP13_VERSION && !matches!(msg.body, ofwire::Body::Hello(_)) {
            // OVS names multipart messages by their stats type; the rest by OFPT_ name.
            if !type_name.starts_with("MULTIPART") {
                assert!(
                    printed.contains(&format!("OFPT_{type_name} (OF1.3)")),
                    "{name}: {printed}"
                );
            }
        }
        let xid = format!("xid=0x{:x}", msg.xid);
        assert!(printed.contains(&xid), "{name}: OVS sees a different xid:\n{printed}");
        if let Some(wants) = expect.get(name.as_str()) {
            for want in wants {
                assert!(printed.contains(want), "{name}: OVS output lacks `{want}`:\n{printed}");
            }
            checked += 1;
        }
    }
    // Field values are compared for all but a handful of trivially empty messages.
    assert!(
        checked + exempt.len() + 6 >= corpus.len(),
        "only {checked} of {} messages have expectations",
        corpus.len()
    );
}

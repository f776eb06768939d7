"""Times os-ken's OpenFlow codec (the maintained Ryu fork, a real peer) on the
same messages as `cargo bench -p ofwire --bench hotpath`: PACKET_IN decode,
FLOW_MOD and PACKET_OUT build+serialize, OpenFlow 1.0 and 1.3.

Usage: python bench_codec_osken.py PI10_HEX PI13_HEX FRAME_HEX
Prints `name ns_per_message` lines.
"""
import sys
import timeit

from os_ken.ofproto import ofproto_parser
from os_ken.ofproto import ofproto_v1_0, ofproto_v1_0_parser
from os_ken.ofproto import ofproto_v1_3, ofproto_v1_3_parser


class Datapath:
    def __init__(self, ofp, parser):
        self.ofproto = ofp
        self.ofproto_parser = parser
        self.id = 1


def per_msg_ns(fn, number=20000):
    best = min(timeit.repeat(fn, number=number, repeat=5))
    return best / number * 1e9


def main():
    pi10, pi13, frame = (bytes.fromhex(h) for h in sys.argv[1:4])
    dp10 = Datapath(ofproto_v1_0, ofproto_v1_0_parser)
    dp13 = Datapath(ofproto_v1_3, ofproto_v1_3_parser)
    p10, p13 = ofproto_v1_0_parser, ofproto_v1_3_parser

    def decode(dp, buf):
        version, msg_type, msg_len, xid = ofproto_parser.header(buf)
        return ofproto_parser.msg(dp, version, msg_type, msg_len, xid, buf)

    assert decode(dp13, pi13).match["in_port"] == 3
    results = {
        "packet_in_decode_v10": per_msg_ns(lambda: decode(dp10, pi10).in_port),
        "packet_in_decode_v13": per_msg_ns(lambda: decode(dp13, pi13).match["in_port"]),
    }

    def flow_mod10():
        m = p10.OFPMatch(in_port=1, dl_type=0x0800, nw_proto=6, tp_dst=80)
        fm = p10.OFPFlowMod(dp10, match=m, cookie=0xC0FFEE, command=ofproto_v1_0.OFPFC_ADD, idle_timeout=10,
                            hard_timeout=30, priority=100, flags=1, actions=[p10.OFPActionOutput(2, 0)])
        fm.serialize()
        return fm.buf

    def flow_mod13():
        m = p13.OFPMatch(in_port=1, eth_dst="02:00:00:00:00:02", eth_src="02:00:00:00:00:01")
        inst = [p13.OFPInstructionActions(ofproto_v1_3.OFPIT_APPLY_ACTIONS, [p13.OFPActionOutput(2, 0)])]
        fm = p13.OFPFlowMod(dp13, priority=100, match=m, instructions=inst)
        fm.serialize()
        return fm.buf

    def packet_out10():
        po = p10.OFPPacketOut(dp10, 0xFFFFFFFF, 1, [p10.OFPActionOutput(2, 0)], frame)
        po.serialize()
        return po.buf

    def packet_out13():
        po = p13.OFPPacketOut(dp13, 0xFFFFFFFF, 1, [p13.OFPActionOutput(2, 0)], frame)
        po.serialize()
        return po.buf

    results["flow_mod_encode_v10"] = per_msg_ns(flow_mod10, 5000)
    results["flow_mod_encode_v13"] = per_msg_ns(flow_mod13, 5000)
    results["packet_out_encode_v10"] = per_msg_ns(packet_out10, 5000)
    results["packet_out_encode_v13"] = per_msg_ns(packet_out13, 5000)
    for k, v in results.items():
        print(f"{k} {v:.0f}")


if __name__ == "__main__":
    main()

"""A per-switch MAC-learning app for os-ken, OpenFlow 1.0 and 1.3: the peer
of sdnlab's l2-learning in benchmarks. Like ours, it answers a buffered
PACKET_IN to a known destination with one FLOW_MOD naming the buffer (no
extra PACKET_OUT), and floods unknown destinations with a PACKET_OUT.
"""
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_0, ofproto_v1_3


def mac_text(b):
    return ":".join("%02x" % x for x in b)


class L2Learning(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION, ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.macs = {}

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        ofp, p = dp.ofproto, dp.ofproto_parser
        if ofp.OFP_VERSION == ofproto_v1_3.OFP_VERSION:
            actions = [p.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]
            inst = [p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
            dp.send_msg(p.OFPFlowMod(datapath=dp, priority=0, match=p.OFPMatch(), instructions=inst))

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp, p = dp.ofproto, dp.ofproto_parser
        v13 = ofp.OFP_VERSION == ofproto_v1_3.OFP_VERSION
        in_port = msg.match["in_port"] if v13 else msg.in_port
        data = msg.data
        if len(data) < 14:
            return
        dst, src = data[0:6], data[6:12]
        table = self.macs.setdefault(dp.id, {})
        if not src[0] & 1:
            table[src] = in_port
        out = None if dst[0] & 1 else table.get(dst)
        if out is None:
            actions = [p.OFPActionOutput(ofp.OFPP_FLOOD)]
            payload = data if msg.buffer_id == ofp.OFP_NO_BUFFER else None
            dp.send_msg(p.OFPPacketOut(datapath=dp, buffer_id=msg.buffer_id, in_port=in_port, actions=actions, data=payload))
            return
        actions = [p.OFPActionOutput(out)]
        if v13:
            # 1.3 matches take MACs as text; 1.0 matches as 6 bytes.
            match = p.OFPMatch(in_port=in_port, eth_dst=mac_text(dst), eth_src=mac_text(src))
            inst = [p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
            fm = p.OFPFlowMod(datapath=dp, priority=100, idle_timeout=60, match=match, instructions=inst, buffer_id=msg.buffer_id)
        else:
            match = p.OFPMatch(in_port=in_port, dl_dst=dst, dl_src=src)
            fm = p.OFPFlowMod(datapath=dp, match=match, cookie=0, command=ofp.OFPFC_ADD, idle_timeout=60, priority=100, buffer_id=msg.buffer_id, actions=actions)
        dp.send_msg(fm)
        if msg.buffer_id == ofp.OFP_NO_BUFFER:
            dp.send_msg(p.OFPPacketOut(datapath=dp, buffer_id=msg.buffer_id, in_port=in_port, actions=actions, data=data))

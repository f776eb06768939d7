"""Shortest-path forwarding for os-ken over the links its own topology
service (os_ken.topology, run with --observe-links) discovers: the peer of
sdnlab's `paths` app in the RFC 8456 topology benchmarks, OpenFlow 1.0 and
1.3. It is written the way an os-ken user would write it:

- hosts are learnt on ports that are not link ends;
- a unicast frame to a known host installs a flow matching the destination
  MAC on every switch of the shortest path (breadth-first over the links),
  farthest first, then the frame leaves by its first hop;
- broadcasts and unknown destinations are copied by the controller out of
  every edge port of every switch (never out of link ports, so loops in the
  fabric cannot storm); frames arriving on link ports are never flooded or
  learnt from, but routed when their destination is known (they beat the
  path's flow to that switch);
- when a link or switch goes away, every switch forgets its path flows.

Set SDNLAB_PATHS_PROACTIVE=1 for proactive-only mode: hosts are learnt and
broadcasts delivered, but unicast gets no path (paths come from the REST
API, ofctl_rest's /stats/flowentry/add).
"""
import collections
import os

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_0, ofproto_v1_3
from os_ken.topology import event as topo_event

COOKIE = 0x05D1A0A7
PRIORITY = 10


def mac_bytes(mac):
    """OpenFlow 1.0 matches in os-ken take MACs as 6 bytes."""
    return bytes.fromhex(mac.replace(":", ""))


class Paths(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION, ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reactive = os.environ.get("SDNLAB_PATHS_PROACTIVE") != "1"
        self.datapaths = {}  # dpid -> datapath
        self.ports = {}  # dpid -> set of port numbers
        self.links = {}  # (dpid, port) -> (dpid, port)
        self.hosts = {}  # mac -> (dpid, port)

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        ofp, p = dp.ofproto, dp.ofproto_parser
        if ofp.OFP_VERSION == ofproto_v1_3.OFP_VERSION:
            actions = [p.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]
            inst = [p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
            dp.send_msg(p.OFPFlowMod(datapath=dp, priority=0, match=p.OFPMatch(), instructions=inst))

    @set_ev_cls(topo_event.EventSwitchEnter)
    def switch_enter(self, ev):
        sw = ev.switch
        self.datapaths[sw.dp.id] = sw.dp
        self.ports[sw.dp.id] = {p.port_no for p in sw.ports}

    @set_ev_cls(topo_event.EventSwitchLeave)
    def switch_leave(self, ev):
        dpid = ev.switch.dp.id
        self.datapaths.pop(dpid, None)
        self.ports.pop(dpid, None)
        for a, b in list(self.links.items()):
            if a[0] == dpid or b[0] == dpid:
                del self.links[a]
        self.forget_paths()

    @set_ev_cls(topo_event.EventLinkAdd)
    def link_add(self, ev):
        s, d = ev.link.src, ev.link.dst
        self.links[(s.dpid, s.port_no)] = (d.dpid, d.port_no)
        for mac, at in list(self.hosts.items()):
            if at in self.links:
                del self.hosts[mac]

    @set_ev_cls(topo_event.EventLinkDelete)
    def link_delete(self, ev):
        s = ev.link.src
        if self.links.pop((s.dpid, s.port_no), None) is not None:
            self.forget_paths()

    def forget_paths(self):
        for dp in self.datapaths.values():
            ofp, p = dp.ofproto, dp.ofproto_parser
            if ofp.OFP_VERSION == ofproto_v1_3.OFP_VERSION:
                dp.send_msg(p.OFPFlowMod(datapath=dp, cookie=COOKIE, cookie_mask=0xFFFFFFFFFFFFFFFF,
                                         command=ofp.OFPFC_DELETE, out_port=ofp.OFPP_ANY,
                                         out_group=ofp.OFPG_ANY, match=p.OFPMatch()))
            else:
                for mac in self.hosts:
                    dp.send_msg(p.OFPFlowMod(datapath=dp, match=p.OFPMatch(dl_dst=mac_bytes(mac)), cookie=0,
                                             command=ofp.OFPFC_DELETE_STRICT, priority=PRIORITY))

    def path(self, src_dpid, dst):
        """[(dpid, out_port), ...] from src_dpid to the host port dst."""
        prev = {src_dpid: None}
        queue = collections.deque([src_dpid])
        while queue:
            here = queue.popleft()
            if here == dst[0]:
                break
            for (a, port), (b, _) in self.links.items():
                if a == here and b not in prev:
                    prev[b] = (a, port)
                    queue.append(b)
        if dst[0] not in prev:
            return None
        hops = [dst]
        at = dst[0]
        while prev[at] is not None:
            hops.append(prev[at])
            at = prev[at][0]
        return list(reversed(hops))

    def add_flow(self, dp, dst, port):
        ofp, p = dp.ofproto, dp.ofproto_parser
        actions = [p.OFPActionOutput(port)]
        if ofp.OFP_VERSION == ofproto_v1_3.OFP_VERSION:
            inst = [p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
            dp.send_msg(p.OFPFlowMod(datapath=dp, cookie=COOKIE, priority=PRIORITY, idle_timeout=60,
                                     match=p.OFPMatch(eth_dst=dst), instructions=inst))
        else:
            dp.send_msg(p.OFPFlowMod(datapath=dp, match=p.OFPMatch(dl_dst=mac_bytes(dst)), cookie=COOKIE,
                                     command=ofp.OFPFC_ADD, idle_timeout=60, priority=PRIORITY, actions=actions))

    def packet_out(self, dp, ports, data, in_port=None, buffer_id=None):
        ofp, p = dp.ofproto, dp.ofproto_parser
        if buffer_id is None:
            buffer_id = ofp.OFP_NO_BUFFER
        if in_port is None:
            in_port = ofp.OFPP_CONTROLLER
        actions = [p.OFPActionOutput(port) for port in ports]
        payload = data if buffer_id == ofp.OFP_NO_BUFFER else None
        dp.send_msg(p.OFPPacketOut(datapath=dp, buffer_id=buffer_id, in_port=in_port, actions=actions, data=payload))

    def flood(self, here, data):
        linked = set(self.links)
        for dpid, dp in self.datapaths.items():
            ports = [port for port in self.ports.get(dpid, ())
                     if port < 0xFF00 and (dpid, port) not in linked and (dpid, port) != here]
            if ports:
                self.packet_out(dp, ports, data)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp = dp.ofproto
        v13 = ofp.OFP_VERSION == ofproto_v1_3.OFP_VERSION
        in_port = msg.match["in_port"] if v13 else msg.in_port
        data = msg.data
        if len(data) < 14 or data[12:14] in (b"\x88\xcc", b"\x89\x02"):
            return  # LLDP and CFM belong to the topology service
        dst = ":".join("%02x" % b for b in data[0:6])
        src = ":".join("%02x" % b for b in data[6:12])
        here = (dp.id, in_port)
        on_link = here in self.links
        if not on_link and not data[6] & 1:
            self.hosts[src] = here
        if data[0] & 1:
            if not on_link:  # frames on links are never flooded
                self.flood(here, data)
            return
        if not self.reactive:
            return
        to = self.hosts.get(dst)
        if to is None:
            if not on_link:
                self.flood(here, data)
            return
        hops = self.path(dp.id, to)
        if hops is None:
            return
        for dpid, port in reversed(hops):
            if dpid in self.datapaths:
                self.add_flow(self.datapaths[dpid], dst, port)
        self.packet_out(dp, [hops[0][1]], data, in_port=in_port, buffer_id=msg.buffer_id)

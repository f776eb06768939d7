#!/usr/bin/python3
"""Mininet's side of `sdnlab bench fidelity`, driven line by line on stdin,
one JSON answer per line on stdout. Mininet's Python API only: never the
`mn` command and never mininet.clean (both kill processes by name across
the machine). Linux bridges, no controller, as sdnlab's `bridge` kind.

Commands: `up N` (linear topology of N switches, one host each), `tcp S`,
`udp RATE S` (iperf3 from the first host to the last for S seconds),
`ping COUNT` (first host to the last), `down`.
"""
import json
import signal
import sys
import time

from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.topo import LinearTopo


def reply(**kw):
    print(json.dumps(kw), flush=True)


def iperf(net, seconds, rate=None):
    a, b = net.hosts[0], net.hosts[-1]
    server = b.popen(["iperf3", "-s", "-1", "-p", "5201"])
    time.sleep(0.3)
    args = "iperf3 -c %s -p 5201 -t %s -J" % (b.IP(), seconds)
    if rate:
        args += " -u -b %s" % rate
    out = a.cmd(args)
    server.wait()
    return json.loads(out)


def main():
    # The Rust side decides when this ends (the end of its input), so a
    # Ctrl-C or SIGTERM meant for the run never leaves Mininet's network up.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    setLogLevel("error")
    net = None
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "up":
                net = Mininet(topo=LinearTopo(k=int(cmd[1]), n=1), switch=LinuxBridge,
                              controller=None, autoSetMacs=True)
                net.start()
                reply(ok=True, hosts=[h.name for h in net.hosts], pids=[h.pid for h in net.hosts])
            elif cmd[0] == "tcp":
                reply(ok=True, iperf=iperf(net, cmd[1]))
            elif cmd[0] == "udp":
                reply(ok=True, iperf=iperf(net, cmd[2], rate=cmd[1]))
            elif cmd[0] == "ping":
                a, b = net.hosts[0], net.hosts[-1]
                reply(ok=True, text=a.cmd("ping -n -q -c %s -i 0.2 -W 1 %s" % (cmd[1], b.IP())))
            elif cmd[0] == "down":
                if net is not None:
                    net.stop()
                    net = None
                reply(ok=True)
            else:
                reply(ok=False, error="unknown command %r" % cmd[0])
        except Exception as e:  # one line back, the session stays
            reply(ok=False, error="%s: %s" % (type(e).__name__, e))
    if net is not None:
        net.stop()


main()

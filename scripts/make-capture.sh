#!/usr/bin/env bash
# Records captures/ovs-learning-switch.pcapng: a real Open vSwitch (userspace
# datapath) talking to ovs-testcontroller (a C learning switch) over TCP on
# the loopback of a private network namespace, with two bridges, one speaking
# OpenFlow 1.0 and one OpenFlow 1.3, and frames injected so the controller
# sees PACKET_INs and answers with FLOW_MODs and PACKET_OUTs.
# Everything it creates is named sdnlab-cap-$$ and removed on exit.
set -euo pipefail
out=${1:-captures/ovs-learning-switch.pcapng}
ns=sdnlab-cap-$$
dir=$(mktemp -d /tmp/sdnlab-cap.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
export OVS_RUNDIR=$dir OVS_LOGDIR=$dir OVS_DBDIR=$dir
ovsdb-tool create "$dir/conf.db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server "$dir/conf.db" --remote="punix:$dir/db.sock" --unixctl="$dir/ovsdb.ctl" --log-file="$dir/ovsdb.log" & pids+=($!)
while [ ! -S "$dir/db.sock" ]; do sleep 0.05; done
vsctl() { ovs-vsctl --db="unix:$dir/db.sock" --timeout=20 "$@"; }
vsctl --no-wait init
ip netns exec "$ns" tshark -q -i lo -f "tcp port 6653" -w "$dir/cap.pcapng" 2>/dev/null & pids+=($!)
sleep 1.5
ip netns exec "$ns" ovs-testcontroller --unixctl="$dir/tc.ctl" -O OpenFlow10,OpenFlow13 ptcp:6653:127.0.0.1 & pids+=($!)
ip netns exec "$ns" ovs-vswitchd "unix:$dir/db.sock" --unixctl="$dir/vswitchd.ctl" --log-file="$dir/vswitchd.log" & pids+=($!)
while [ ! -S "$dir/vswitchd.ctl" ]; do sleep 0.05; done
vsctl add-br sdncap10 -- set bridge sdncap10 datapath_type=netdev protocols=OpenFlow10 other-config:datapath-id=0000000000000010 fail-mode=secure
vsctl add-br sdncap13 -- set bridge sdncap13 datapath_type=netdev protocols=OpenFlow13 other-config:datapath-id=0000000000000013 fail-mode=secure
vsctl set-controller sdncap10 tcp:127.0.0.1:6653 -- set-controller sdncap13 tcp:127.0.0.1:6653
sleep 2
# Frames from two hosts, so the learning switch floods first, then installs flows.
a2b=020000000002020000000001080045000020000100004011000a0a0000010a00000230390050000c000068692121
b2a=020000000001020000000002080045000020000100004011000a0a0000020a00000130390050000c000068692121
for br in sdncap10 sdncap13; do
  proto=OpenFlow13; [ "$br" = sdncap10 ] && proto=OpenFlow10
  for f in $a2b $b2a $a2b; do
    ovs-ofctl -O $proto packet-out "unix:$dir/$br.mgmt" LOCAL table "$f"
    sleep 0.3
  done
done
sleep 6   # let echo keepalives appear
kill "${pids[1]}"; sleep 0.5
cp "$dir/cap.pcapng" "$out"
echo "wrote $out"

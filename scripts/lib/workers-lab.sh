# Sourced by the workers' benchmarks: three network namespaces on a bridge
# are three "machines", each running `sdnlab worker` on its own address.
#   workers_lab_up BIN OUT TAG NET   (NET: the first three octets, e.g. 10.199.0)
# makes the bridge ($TAG br, NET.254 on it), the namespaces ($TAG-m1..3,
# NET.1..3), the credentials (OUT/creds) and starts the workers (their
# logs OUT/worker1..3.log); workers_lab_down removes it all (the callers
# trap it on EXIT). WORKER_PIDS holds the workers' pids.
#   workers_lab_controller BIN NET [ARGS...] starts sdnlab's controller on
# NET.254:6653 (its pid in CTL_PID; refused if something listens there
# already), workers_lab_controller_stop stops it (and workers_lab_down).
WORKER_PIDS=()
CTL_PID=
workers_lab_controller() {
  local bin=$1 net=$2
  shift 2
  if (exec 3<>"/dev/tcp/$net.254/6653") 2>/dev/null; then
    echo "$0: something already listens on $net.254:6653" >&2; exit 1
  fi
  "$bin" controller --listen "$net.254:6653" --max-connections 30000 "$@" > /dev/null 2>&1 &
  CTL_PID=$!
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/$net.254/6653") 2>/dev/null && break; sleep 0.1; done
  kill -0 "$CTL_PID" || { echo "$0: the controller did not start" >&2; exit 1; }
}
workers_lab_controller_stop() {
  [ -n "$CTL_PID" ] || return 0
  kill "$CTL_PID" 2>/dev/null || true
  wait "$CTL_PID" 2>/dev/null || true
  CTL_PID=
}
workers_lab_up() {
  local bin=$1 out=$2 tag=$3 net=$4 i
  WORKERS_LAB_TAG=$tag
  ip link add "${tag}br" type bridge
  ip addr add "$net.254/24" dev "${tag}br"
  ip link set "${tag}br" up
  "$bin" credentials "$out/creds" > /dev/null
  for i in 1 2 3; do
    ip netns add "$tag-m$i"
    ip link add "${tag}v$i" type veth peer name eth0 netns "$tag-m$i"
    ip link set "${tag}v$i" master "${tag}br" up
    ip -n "$tag-m$i" addr add "$net.$i/24" dev eth0
    ip -n "$tag-m$i" link set eth0 up
    ip -n "$tag-m$i" link set lo up
    "$bin" worker --netns "$tag-m$i" --listen "$net.$i:7700" --credentials "$out/creds" 2>> "$out/worker$i.log" &
    WORKER_PIDS+=($!)
  done
}
workers_lab_down() {
  local p i tag=${WORKERS_LAB_TAG:-}
  workers_lab_controller_stop
  for p in "${WORKER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${WORKER_PIDS[@]}" 2>/dev/null || true
  [ -n "$tag" ] || return 0
  for i in 1 2 3; do ip netns del "$tag-m$i" 2>/dev/null || true; done
  ip link del "${tag}br" 2>/dev/null || true
}

// SPDX-License-Identifier: MIT OR GPL-2.0
/* Test only: runs the fast path's parser (flow_key.h) on a frame given by
 * BPF_PROG_TEST_RUN and leaves what it built in `probe_out`, so the tests
 * hold it equal to packetio::fastpath::FlowKey::of on the same frames. */
#include "flow_key.h"

const volatile __u32 in_port = 0;

struct probe_result {
	__u32 kind;
	__u32 pad;
	struct flow_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct probe_result);
} probe_out SEC(".maps");

SEC("xdp")
int sdnlab_key_probe(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct probe_result *r = bpf_map_lookup_elem(&probe_out, &zero);
	struct flow_key k = {};

	if (!r)
		return XDP_ABORTED;
	r->kind = flow_key_of(ctx, in_port, &k);
	r->key = k;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

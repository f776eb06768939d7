// SPDX-License-Identifier: MIT OR GPL-2.0
/* The XDP side of an AF_XDP port: each frame goes to the AF_XDP socket of
 * its receive queue (XSKMAP `xsks`), unless
 * - it is longer than `max_len` (a GSO super-frame, a jumbo frame that
 *   would not fit a UMEM chunk): the kernel's stack, where the port's
 *   AF_PACKET socket takes it;
 * - with `fast` set, its flow is held in the switch's fast path: it leaves
 *   by the flow's port in the kernel (DEVMAP `ports`), counted.
 * With `stamp` set, every frame first gets its receive time in 8 bytes of
 * metadata before it (the receiver's socket reads them). The program
 * `sdnlab_xsk_vlan`, loaded bound to the device in native mode, first
 * sends to the stack any frame whose driver holds its VLAN tag outside its
 * bytes (where the port's AF_PACKET socket gets the tag with it).
 *
 * The fast path's maps are shared by every port of a switch: the loader
 * gives this object the descriptors of the switch's maps. An entry
 * written under another generation than `fast_generation` is ignored (its
 * frames take the slow path): one write to it invalidates every entry. */
#include "flow_key.h"

/* Set before load. */
const volatile __u32 in_port = 0;
const volatile __u32 max_len = 0;
const volatile __u8 stamp = 0;
const volatile __u8 fast = 0;

/* Bytes of metadata the stamp takes (packetio::bpf::RECEIVE_TIME_META). */
#define RECEIVE_TIME_META 8

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 1); /* the loader sets the receive queues */
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(key_size, FLOW_KEY_LEN4);
	__type(value, struct flow_entry);
} flows4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct flow_key);
	__type(value, struct flow_entry);
} flows6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ports SEC(".maps");

/* The generation entries must carry: a one-entry array map of its own
 * (read by the program without a helper call), shared by the ports. */
struct generation {
	__u32 current;
	__u32 pad;
};
struct generation fast_generation SEC(".data.generation");

extern int bpf_xdp_metadata_rx_vlan_tag(const struct xdp_md *ctx, __be16 *vlan_proto, __u16 *vlan_tci) __ksym __weak;

static __always_inline void stamp_receive_time(struct xdp_md *ctx)
{
	void *meta, *data;
	__u64 now;

	if (bpf_xdp_adjust_meta(ctx, -RECEIVE_TIME_META))
		return; /* no room: on, unstamped */
	now = bpf_ktime_get_ns();
	meta = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if (meta + RECEIVE_TIME_META <= data)
		*(__u64 *)meta = now;
}

static __always_inline int to_socket(struct xdp_md *ctx)
{
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

static __always_inline int steer(struct xdp_md *ctx)
{
	struct flow_key k = {};
	struct flow_entry *e;
	enum key_kind kind;
	__u64 len;
	int r;

	if (stamp)
		stamp_receive_time(ctx);
	if ((void *)(long)ctx->data + max_len < (void *)(long)ctx->data_end)
		return XDP_PASS;
	if (!fast)
		return to_socket(ctx);
	kind = flow_key_of(ctx, in_port, &k);
	if (kind == KEY_NONE)
		return to_socket(ctx);
	len = bpf_xdp_get_buff_len(ctx);
	if (kind == KEY_IPV4)
		e = bpf_map_lookup_elem(&flows4, &k);
	else
		e = bpf_map_lookup_elem(&flows6, &k);
	/* No entry, or one installed under older tables. */
	if (!e || e->generation != fast_generation.current)
		return to_socket(ctx);
	/* A slot with no port (the switch took it out because the port cannot
	 * take redirected frames now): the slow path, uncounted. */
	r = bpf_redirect_map(&ports, e->out_slot, 0);
	if (r != XDP_REDIRECT)
		return to_socket(ctx);
	__sync_fetch_and_add(&e->packets, 1);
	__sync_fetch_and_add(&e->bytes, len);
	return r;
}

SEC("xdp")
int sdnlab_xsk(struct xdp_md *ctx)
{
	return steer(ctx);
}

SEC("xdp")
int sdnlab_xsk_vlan(struct xdp_md *ctx)
{
	__be16 proto = 0;
	__u16 tci = 0;

	if (bpf_xdp_metadata_rx_vlan_tag(ctx, &proto, &tci) == 0)
		return XDP_PASS;
	return steer(ctx);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

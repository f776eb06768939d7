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
 * gives this object the descriptors of the switch's maps. Its flows sit in
 * two array maps (IPv4 keys, IPv6 keys) by open addressing: a key's hash
 * names its first slot, and it may sit in any of the next PROBES slots, so
 * a lookup is a few inlined array accesses, not a call into the kernel's
 * hash table. An entry written under another generation than
 * `fast_generation` is ignored (its frames take the slow path): one write
 * to it invalidates every entry. */
#include "flow_key.h"

/* Set before load. */
const volatile __u32 in_port = 0;
const volatile __u32 max_len = 0;
const volatile __u8 stamp = 0;
const volatile __u8 fast = 0;
/* The flow tables' slots less one (a power of two less one), and the seed
 * of their hash (packetio::fastpath::slot_hash). */
const volatile __u32 slot_mask = 0;
const volatile __u32 hash_seed = 0;

/* Bytes of metadata the stamp takes (packetio::bpf::RECEIVE_TIME_META). */
#define RECEIVE_TIME_META 8

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 1); /* the loader sets the receive queues */
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct flow_slot4);
} flows4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct flow_slot6);
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

/* A slot's seqlock word. x86 keeps loads in order, so a plain load does;
 * elsewhere an atomic read (a full barrier in every JIT) keeps the slot's
 * other loads between the two reads of it. */
#if defined(__TARGET_ARCH_x86)
#define read_seq(p) (*(volatile __u32 *)(p))
#else
#define read_seq(p) __sync_fetch_and_add((p), 0)
#endif
#define compiler_barrier() asm volatile("" ::: "memory")

/* The hash of a key's first `words` 32-bit words; its twin in user space
 * is packetio::fastpath::slot_hash. */
static __always_inline __u32 slot_hash(const struct flow_key *k, int words)
{
	const __u32 *w = (const __u32 *)k;
	__u32 h = hash_seed;
	int i;

#pragma unroll
	for (i = 0; i < words; i++) {
		h = (h ^ w[i]) * 0x9e3779b1;
		h ^= h >> 16;
	}
	return h;
}

/* Looks `k` up in `map` (slots of struct `slot_type` with a key of `words`
 * 64-bit words): on a hit, `e` is the slot and `out`, `gen` what it said,
 * read between two equal even readings of its `seq`. */
#define FIND(map, slot_type, words, k, e, out, gen)                                  \
	do {                                                                         \
		const __u64 *kw = (const __u64 *)(k);                                  \
		__u32 h = slot_hash((k), (words) * 2), i, seq, idx;                     \
		__u64 diff;                                                            \
		int w;                                                                 \
		(e) = NULL;                                                            \
		for (i = 0; i < PROBES; i++) {                                         \
			struct slot_type *s;                                           \
			idx = (h + i) & slot_mask;                                     \
			s = bpf_map_lookup_elem(&(map), &idx);                         \
			if (!s)                                                        \
				break;                                                 \
			seq = read_seq(&s->seq);                                       \
			/* Never written: the key is not further on either. */        \
			if (!seq)                                                      \
				break;                                                 \
			compiler_barrier();                                            \
			/* Without a branch per word: one path per probe for the     \
			 * verifier to follow. */                                      \
			diff = seq & 1;                                                \
			for (w = 0; w < (words); w++)                                  \
				diff |= s->key[w] ^ kw[w];                             \
			if (diff)                                                      \
				continue;                                              \
			(out) = s->out_slot;                                           \
			(gen) = s->generation;                                         \
			compiler_barrier();                                            \
			if (read_seq(&s->seq) == seq)                                  \
				(e) = s;                                               \
			break;                                                         \
		}                                                                      \
	} while (0)

static __always_inline int steer(struct xdp_md *ctx)
{
	struct flow_key k = {};
	enum key_kind kind;
	__u32 out = 0, gen = 0;
	__u64 *packets, *bytes;
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
	if (kind == KEY_IPV4) {
		struct flow_slot4 *e;

		FIND(flows4, flow_slot4, FLOW_KEY_LEN4 / 8, &k, e, out, gen);
		if (!e)
			return to_socket(ctx);
		packets = &e->packets;
		bytes = &e->bytes;
	} else {
		struct flow_slot6 *e;

		FIND(flows6, flow_slot6, FLOW_KEY_LEN6 / 8, &k, e, out, gen);
		if (!e)
			return to_socket(ctx);
		packets = &e->packets;
		bytes = &e->bytes;
	}
	/* An entry installed under older tables (or an empty slot). */
	if (gen != fast_generation.current)
		return to_socket(ctx);
	/* A slot with no port (the switch took it out because the port cannot
	 * take redirected frames now): the slow path, uncounted. */
	r = bpf_redirect_map(&ports, out, 0);
	if (r != XDP_REDIRECT)
		return to_socket(ctx);
	__sync_fetch_and_add(packets, 1);
	__sync_fetch_and_add(bytes, len);
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

/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/* The fast path's flow key and flow entry, and the parser that builds a
 * key from a frame. Shared by the steering program (xsk.bpf.c) and the
 * parser probe the tests run (key_probe.bpf.c). Their Rust twins are
 * packetio::fastpath::FlowKey (with FlowKey::of, the same parser in user
 * space) and Entry: tests hold the layouts equal through this object's BTF
 * and the two parsers equal on the same frames (BPF_PROG_TEST_RUN). */
#ifndef SDNLAB_FLOW_KEY_H
#define SDNLAB_FLOW_KEY_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* One flow's header fields, zero where a field does not apply. IPv4 keys
 * use the first 32 bytes (the IPv4 map's keys are that long), IPv6 keys
 * all 64. Every field sits at its natural alignment (the verifier asks it
 * of stack accesses). */
struct flow_key {
	/* The port; for a tagged frame, its upper half (bytes 2-3 on
	 * little-endian, 0-1 on big-endian) holds the tag control
	 * information as on the wire with DEI set, which says "tagged"
	 * (ports of tagged flows are below 65,536). */
	__u32 in_port;
	__u8 eth_dst[6];
	__u8 eth_src[6];
	__be16 eth_type; /* the inner one of a tagged frame */
	__u8 ip_tos;     /* IPv4 only */
	__u8 ip_proto;   /* IPv4 only */
	union {
		struct {
			__be32 src;
			__be32 dst;
			__be32 l4; /* ports, or ICMP type and code */
		} v4;
		struct {
			__be32 first_word; /* version, traffic class, flow label */
			__u8 src[16];
			__u8 dst[16];
			__u8 next_header;
			__u8 pad[3];
			__be32 l4;
		} v6;
	};
};

#define FLOW_KEY_LEN4 32
#define FLOW_KEY_LEN6 64

/* One slot of the fast path's flow tables: open addressing in an array
 * map that user space writes through its own mapping of the map's memory
 * (packetio::fastpath). `seq` is odd while user space rewrites the slot;
 * the program reads it before and after the rest, and acts on a slot only
 * if it read the same even number both times, so it never sees a torn
 * entry. A slot never written has `seq` 0: a lookup stops there, for an
 * insertion takes the first free slot of its probes (a slot emptied
 * later keeps its `seq` and does not stop a lookup). `used` is user
 * space's own mark. An empty slot has generation 0, which is never
 * current. */
struct flow_slot4 {
	__u32 seq;
	__u32 used;
	__u32 out_slot;
	__u32 generation;
	__u64 key[FLOW_KEY_LEN4 / 8];
	__u64 packets;
	__u64 bytes;
};

struct flow_slot6 {
	__u32 seq;
	__u32 used;
	__u32 out_slot;
	__u32 generation;
	__u64 key[FLOW_KEY_LEN6 / 8];
	__u64 packets;
	__u64 bytes;
};

/* Slots a flow may sit in: its hash's, and the next PROBES - 1. */
#define PROBES 16

/* The shortest frames looked at (after any tag): an IP header and the
 * first 4 bytes of the transport header. */
#define MIN_FRAME4 38
#define MIN_FRAME6 58
#define L4_AT4 34
#define L4_AT6 54

#define PROTO_TCP 6
#define PROTO_UDP 17
#define PROTO_SCTP 132
#define PROTO_ICMP 1
#define PROTO_ICMPV6 58

/* What flow_key_of found. */
enum key_kind {
	KEY_NONE = 0, /* the frame always takes the slow path */
	KEY_IPV4 = 4,
	KEY_IPV6 = 6,
};

/* The transport word at `l4` for protocol `proto` into `*word`: TCP, UDP
 * and SCTP ports (only if the whole header is there), ICMP type and code
 * (`icmp`: 1 or 58; not neighbour discovery and router messages, whose
 * match fields the key has no room for), or zero for another protocol
 * (`other_ok`; else no key). */
static __always_inline int transport_word(__u8 *l4, void *end, __u8 proto, __u8 icmp, int other_ok, __be32 *word)
{
	int whole;

	if ((void *)(l4 + 4) > end)
		return 0;
	switch (proto) {
	case PROTO_TCP:
		whole = 20;
		break;
	case PROTO_UDP:
		whole = 8;
		break;
	case PROTO_SCTP:
		whole = 12;
		break;
	default:
		if (proto == icmp) {
			if (icmp == PROTO_ICMPV6 && l4[0] >= 133 && l4[0] <= 137)
				return 0;
			*(__u16 *)word = *(__u16 *)l4;
			return 1;
		}
		return other_ok;
	}
	if ((void *)(l4 + whole) > end)
		return 0;
	*word = *(__be32 *)l4;
	return 1;
}

/* Builds the key of the frame in `ctx` arriving on port `in_port` into
 * `k` (which must be zero), as packetio::fastpath::FlowKey::of does. */
static __always_inline enum key_kind flow_key_of(struct xdp_md *ctx, __u32 in_port, struct flow_key *k)
{
	__u8 *p = (__u8 *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if ((void *)(p + MIN_FRAME4) > end)
		return KEY_NONE;
	k->in_port = in_port;
	__builtin_memcpy(k->eth_dst, p, 6);
	__builtin_memcpy(k->eth_src, p + 6, 6);
	if (in_port <= 0xffff && *(__be16 *)(p + 12) == bpf_htons(0x8100)) {
		/* One 802.1Q tag: its control information in the key, DEI set;
		 * then the rest read as an untagged frame 4 bytes on. */
		__u8 *tci = (__u8 *)&k->in_port + (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 2 : 0);

		tci[0] = p[14] | 0x10;
		tci[1] = p[15];
		p += 4;
		if ((void *)(p + MIN_FRAME4) > end)
			return KEY_NONE;
	}
	k->eth_type = *(__be16 *)(p + 12);
	if (k->eth_type == bpf_htons(0x0800)) {
		/* Version 4, no options; not a fragment (MF or an offset). */
		if (p[14] != 0x45 || (p[20] & 0x3f) || p[21])
			return KEY_NONE;
		k->ip_tos = p[15];
		k->ip_proto = p[23];
		k->v4.src = *(__be32 *)(p + 26);
		k->v4.dst = *(__be32 *)(p + 30);
		if (!transport_word(p + L4_AT4, end, p[23], PROTO_ICMP, 1, &k->v4.l4))
			return KEY_NONE;
		return KEY_IPV4;
	}
	if (k->eth_type == bpf_htons(0x86dd)) {
		if ((void *)(p + MIN_FRAME6) > end || (p[14] & 0xf0) != 0x60)
			return KEY_NONE;
		k->v6.first_word = *(__be32 *)(p + 14);
		__builtin_memcpy(k->v6.src, p + 22, 16);
		__builtin_memcpy(k->v6.dst, p + 38, 16);
		k->v6.next_header = p[20];
		/* Any other next header may be an extension header, which the
		 * switch's parser looks behind: no key. */
		if (!transport_word(p + L4_AT6, end, p[20], PROTO_ICMPV6, 0, &k->v6.l4))
			return KEY_NONE;
		return KEY_IPV6;
	}
	return KEY_NONE;
}

#endif

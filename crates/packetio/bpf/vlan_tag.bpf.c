// SPDX-License-Identifier: MIT OR GPL-2.0
/* A test instrument on the tc egress hook (tcx): every frame leaving the
 * interface gets a VLAN tag held beside it (the skb's accelerated tag),
 * as a host's VLAN device on a veth gives it. `vid` is set before load. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

const volatile __u16 vid = 0;

SEC("tcx/egress")
int sdnlab_vlan_tag(struct __sk_buff *skb)
{
	bpf_skb_vlan_push(skb, bpf_htons(0x8100), vid & 0x0fff);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

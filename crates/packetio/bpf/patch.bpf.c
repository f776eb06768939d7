// SPDX-License-Identifier: MIT OR GPL-2.0
/* A patch cable in XDP: every frame that arrives on one interface leaves
 * by the other, redirected in the driver through a two-slot DEVMAP. No
 * lookup, no counter, no header read: the least any switch forwarding
 * between two interfaces in the kernel can cost (one XDP run and one
 * DEVMAP redirect per frame). Slot 0 leads out of the second interface,
 * slot 1 out of the first; the loader fills them. A frame the kernel
 * cannot hand over is dropped, as a wire would lose it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} patch_ports SEC(".maps");

/* Attached to the first interface. */
SEC("xdp")
int sdnlab_patch_a(struct xdp_md *ctx)
{
	return bpf_redirect_map(&patch_ports, 0, XDP_DROP);
}

/* Attached to the second interface. */
SEC("xdp")
int sdnlab_patch_b(struct xdp_md *ctx)
{
	return bpf_redirect_map(&patch_ports, 1, XDP_DROP);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

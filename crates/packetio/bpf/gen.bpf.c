// SPDX-License-Identifier: MIT OR GPL-2.0
/* A traffic generator inside the kernel, run in "live frames" mode
 * (BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18+): each
 * run stamps the template frame and answers XDP_TX, which the kernel turns
 * into a transmit on the interface. Stamps (the `traffic` crate's layout):
 * a 48-bit sequence number at byte 46, the send time (CLOCK_MONOTONIC plus
 * the offset to CLOCK_REALTIME, the clock receivers stamp with) at 52, and
 * a UDP source port rotating over `streams` at 34.
 *
 * The schedule is kept here: a run starts its clock at its first frame
 * (end = now + duration); past the end, frames are dropped unsent. Paced
 * (interval set), a frame whose time has not come is dropped unsent and
 * the next run asks again; when the thread fell far behind (preempted),
 * the missed slots are skipped, not sent in a burst. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define SEQ_AT 46
#define TIME_AT 52
#define SPORT_AT 34
#define MIN_FRAME 60
#define SPORT_BASE 10000

/* Set before load: UDP source ports rotate over this many streams. */
const volatile __u32 streams = 1;

/* The generator's state; user space sets it between runs and reads it
 * during one (packetio::live::State). */
struct gen_state {
	__u64 seq;      /* the next frame's number */
	__u64 offset;   /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	__u64 next;     /* when the next paced frame is due */
	__u64 interval; /* 0: unpaced */
	__u64 end;      /* 0: the run has not started */
	__u64 slack;    /* later than this, missed slots are skipped */
	__u64 duration;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_state);
} gen_state SEC(".maps");

SEC("xdp")
int sdnlab_gen(struct xdp_md *ctx)
{
	__u8 *data = (__u8 *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct gen_state *s;
	__u32 zero = 0;
	__u64 now, seq;

	if ((void *)(data + MIN_FRAME) > end)
		return XDP_DROP;
	s = bpf_map_lookup_elem(&gen_state, &zero);
	if (!s)
		return XDP_DROP;
	now = bpf_ktime_get_ns();
	if (s->end == 0) {
		s->end = now + s->duration;
		s->next = now;
	}
	if (now >= s->end)
		return XDP_DROP;
	if (s->interval) {
		__u64 due = s->next;

		if (now < due)
			return XDP_DROP;
		if (now > due + s->slack)
			due = now;
		s->next = due + s->interval;
	}
	seq = s->seq;
	s->seq = seq + 1;
	/* Six bytes of sequence, big-endian (the two after them are the
	 * time's). */
	*(__u64 *)(data + SEQ_AT) = bpf_cpu_to_be64(seq << 16);
	*(__be16 *)(data + SPORT_AT) = bpf_htons(SPORT_BASE + seq % streams);
	*(__u64 *)(data + TIME_AT) = bpf_cpu_to_be64(now + s->offset);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

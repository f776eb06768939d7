/* The reference pair: the least any tool can do to load an OpenFlow
 * controller over loopback TCP (a generator of emulated switches) and the
 * least a controller can do to answer it (a null responder). It is the
 * yardstick sdnlab's load driver is held to (issue 25): plain C, one epoll
 * loop per thread, no allocation after start, no clock read per message.
 * OpenFlow 1.0 and 1.3, cbench's throughput and latency modes. */
#ifndef OFREF_H
#define OFREF_H

#include <stdint.h>

struct ofref_gen_cfg {
    uint32_t addr;      /* IPv4, host order */
    uint16_t port;      /* host order */
    uint8_t version;    /* 0x01 or 0x04 */
    uint8_t latency;    /* 1: one PACKET_IN outstanding per switch */
    uint32_t switches;
    uint32_t macs;      /* distinct source MACs per switch */
    uint32_t window;    /* outstanding PACKET_INs per switch in throughput mode */
    uint32_t ports;     /* ports each switch reports */
    uint64_t first_dpid;
    uint32_t warmup;    /* loops not reported */
    uint32_t loops;
    uint32_t loop_ms;
    uint32_t threads;
};

/* Runs the generator. `counts` holds (warmup + loops) x switches
 * responses (FLOW_MODs and PACKET_OUTs, cbench's count) per switch and
 * loop; `secs` each loop's length. `established` is how many switches
 * finished their handshake. Returns 0, or a negative errno. */
int ofref_generate(const struct ofref_gen_cfg *cfg, uint64_t *counts, double *secs, uint32_t *established);

/* Answers every PACKET_IN on connections accepted from `listen_fd` with
 * a FLOW_MOD carrying its buffer id, on `threads` threads, until `*stop`
 * becomes non-zero. Returns 0, or a negative errno. */
int ofref_respond(int listen_fd, uint32_t threads, volatile int *stop);

#endif

/* The reference pair (see ofref.h): a generator of emulated OpenFlow
 * switches and a null responder, written for the least cost per message.
 * Each thread owns its connections and one epoll set; a message is parsed
 * from its 8-byte header in place and answered by patching a few bytes;
 * buffers are allocated once per connection. */
#define _GNU_SOURCE
#include "ofref.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IN_CAP (256 * 1024)
/* Output is only read for while less than IN_CAP is pending, and one
 * read's answers never exceed what it read plus a few replies. */
#define OUT_CAP (2 * IN_CAP + 65536)
#define OFPT_HELLO 0
#define OFPT_ECHO_REQUEST 2
#define OFPT_ECHO_REPLY 3
#define OFPT_FEATURES_REQUEST 5
#define OFPT_FEATURES_REPLY 6
#define OFPT_GET_CONFIG_REQUEST 7
#define OFPT_GET_CONFIG_REPLY 8
#define OFPT_PACKET_IN 10
#define OFPT_PACKET_OUT 13
#define OFPT_FLOW_MOD 14
#define OFP10_STATS_REQUEST 16
#define OFP10_BARRIER_REQUEST 18
#define OFP13_MULTIPART_REQUEST 18
#define OFP13_BARRIER_REQUEST 20

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, (uint16_t)v); }
static void put64(uint8_t *p, uint64_t v) { put32(p, v >> 32); put32(p + 4, (uint32_t)v); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }

struct conn {
    int fd;
    uint8_t version;
    uint8_t established;
    uint8_t want_out; /* EPOLLOUT is armed */
    uint32_t in_len, out_off, out_len;
    uint8_t *in, *out;
    /* The generator's switch. */
    uint32_t idx;
    uint32_t seq;
    uint32_t next_mac;
    uint32_t outstanding;
    uint32_t *slots; /* which sequence each slot waits for (0: none) */
    uint32_t mask;
    uint64_t count; /* responses; read by the main thread */
    const struct ofref_gen_cfg *cfg;
    /* 1.3: when the controller asked for our features (0: not yet). */
    double features_at;
    uint8_t tpl[128];
    uint32_t tpl_len, frame_at;
};

static uint8_t *room(struct conn *c, uint32_t n) {
    if (c->out_len + n > OUT_CAP) return NULL;
    uint8_t *p = c->out + c->out_len;
    c->out_len += n;
    return p;
}

static void header(uint8_t *p, uint8_t version, uint8_t type, uint16_t len, uint32_t xid) {
    p[0] = version;
    p[1] = type;
    put16(p + 2, len);
    put32(p + 4, xid);
}

/* Writes what is pending; 0 when all is written or the socket is full,
 * -1 when the connection is gone. */
static int flush(struct conn *c, int ep) {
    while (c->out_off < c->out_len) {
        ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) return -1;
            break;
        }
        c->out_off += (uint32_t)n;
    }
    if (c->out_off == c->out_len) {
        c->out_off = c->out_len = 0;
    } else if (c->out_off > 0) {
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
    }
    uint8_t want = c->out_len > 0;
    if (want != c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want;
    }
    return 0;
}

/* Reads what the socket holds into `c->in`; 0, or -1 when it is closed. */
static int fill_in(struct conn *c) {
    while (c->in_len < IN_CAP) {
        ssize_t n = read(c->fd, c->in + c->in_len, IN_CAP - c->in_len);
        if (n == 0) return -1;
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno == EAGAIN ? 0 : -1;
        }
        c->in_len += (uint32_t)n;
        if ((uint32_t)n < 16384) break; /* drained, most likely */
    }
    return 0;
}

static struct conn *conn_new(int fd) {
    struct conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    c->in = malloc(IN_CAP);
    c->out = malloc(OUT_CAP);
    if (!c->in || !c->out) {
        free(c->in);
        free(c->out);
        free(c);
        return NULL;
    }
    return c;
}

static void conn_free(struct conn *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    free(c->in);
    free(c->out);
    free(c->slots);
    free(c);
}

static void tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ---------------------------------------------------------------- responder */

/* Answers one message; -1 closes the connection. */
static int respond_one(struct conn *c, const uint8_t *m, uint16_t len) {
    uint8_t *p;
    switch (m[1]) {
    case OFPT_HELLO:
        if (m[0] != 0x01 && m[0] != 0x04) return -1;
        c->version = m[0];
        if (!(p = room(c, 8 + 8 + (c->version == 0x04 ? 16 : 0)))) return -1;
        header(p, c->version, OFPT_HELLO, 8, get32(m + 4));
        header(p + 8, c->version, OFPT_FEATURES_REQUEST, 8, 2);
        if (c->version == 0x04) {
            /* The port list (a 1.3 switch's handshake ends with it). */
            header(p + 16, 0x04, OFP13_MULTIPART_REQUEST, 16, 3);
            memset(p + 24, 0, 8);
            put16(p + 24, 13);
        }
        return 0;
    case OFPT_ECHO_REQUEST:
        if (!(p = room(c, len))) return -1;
        memcpy(p, m, len);
        p[1] = OFPT_ECHO_REPLY;
        return 0;
    case OFPT_PACKET_IN: {
        if (len < 12) return 0;
        uint32_t buffer = get32(m + 8);
        if (m[0] == 0x01) {
            if (!(p = room(c, 72))) return -1;
            memset(p, 0, 72);
            header(p, 0x01, OFPT_FLOW_MOD, 72, get32(m + 4));
            put32(p + 8, 0x003fffff); /* every field wildcarded */
            put16(p + 62, 0x8000);    /* priority */
            put32(p + 64, buffer);
            put16(p + 68, 0xffff);    /* out_port: none */
        } else {
            if (!(p = room(c, 56))) return -1;
            memset(p, 0, 56);
            header(p, 0x04, OFPT_FLOW_MOD, 56, get32(m + 4));
            put16(p + 30, 0x8000);     /* priority */
            put32(p + 32, buffer);
            put32(p + 36, 0xffffffff); /* out_port: any */
            put32(p + 40, 0xffffffff); /* out_group: any */
            put16(p + 48, 1);          /* an empty OXM match */
            put16(p + 50, 4);
        }
        return 0;
    }
    default:
        return 0;
    }
}

/* Takes every whole message in `c->in`; -1 closes the connection. */
static int drain(struct conn *c, int (*one)(struct conn *, const uint8_t *, uint16_t)) {
    uint32_t off = 0;
    while (c->in_len - off >= 8) {
        uint16_t len = get16(c->in + off + 2);
        if (len < 8) return -1;
        if (c->in_len - off < len) break;
        if (one(c, c->in + off, len) < 0) return -1;
        off += len;
    }
    if (off > 0) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
    return 0;
}

/* One readiness of `c`: reads (unless its answers are still unwritten),
 * takes every whole message with `one`, lets `more` add to the output
 * (the generator's window), writes; a connection gone is closed and
 * left out of `ep`. */
static void serve(struct conn *c, int ep, int (*one)(struct conn *, const uint8_t *, uint16_t),
                  void (*more)(struct conn *)) {
    if (c->fd < 0) return;
    int gone = 0;
    if (c->out_len < IN_CAP) {
        gone = fill_in(c) < 0;
        if (!gone) gone = drain(c, one) < 0;
    }
    if (!gone && more) more(c);
    if (!gone) gone = flush(c, ep) < 0;
    if (gone) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
}

struct responder {
    int listen_fd;
    volatile int *stop;
    int err;
};

static void *responder_thread(void *arg) {
    struct responder *r = arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
        r->err = -errno;
        return NULL;
    }
    struct epoll_event lev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = NULL};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, r->listen_fd, &lev) < 0) {
        r->err = -errno;
        close(ep);
        return NULL;
    }
    struct conn **all = NULL;
    size_t n_all = 0, cap = 0;
    struct epoll_event evs[64];
    while (!__atomic_load_n(r->stop, __ATOMIC_RELAXED)) {
        int n = epoll_wait(ep, evs, 64, 100);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(r->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    tune(fd);
                    struct conn *nc = conn_new(fd);
                    if (!nc) {
                        close(fd);
                        continue;
                    }
                    if (n_all == cap) {
                        size_t more = cap ? 2 * cap : 64;
                        struct conn **grown = realloc(all, more * sizeof *all);
                        if (!grown) {
                            conn_free(nc);
                            continue;
                        }
                        all = grown;
                        cap = more;
                    }
                    all[n_all++] = nc;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                }
                continue;
            }
            serve(c, ep, respond_one, NULL);
        }
    }
    for (size_t i = 0; i < n_all; i++) {
        conn_free(all[i]);
    }
    free(all);
    close(ep);
    return NULL;
}

int ofref_respond(int listen_fd, uint32_t threads, volatile int *stop) {
    if (threads < 1) threads = 1;
    int fl = fcntl(listen_fd, F_GETFL);
    if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0) return -errno;
    /* The listener came with a backlog of 128; thousands of switches
       connecting at once overflow it and wait out SYN retransmits (1 s,
       then 3 s), so listen again with the system's largest (Linux
       changes the backlog of a listening socket in place). */
    if (listen(listen_fd, SOMAXCONN) < 0) return -errno;
    struct responder *rs = calloc(threads, sizeof *rs);
    pthread_t *ts = calloc(threads, sizeof *ts);
    if (!rs || !ts) {
        free(rs);
        free(ts);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < threads; i++) {
        rs[i].listen_fd = listen_fd;
        rs[i].stop = stop;
    }
    for (uint32_t i = 1; i < threads; i++) pthread_create(&ts[i], NULL, responder_thread, &rs[i]);
    responder_thread(&rs[0]);
    int err = rs[0].err;
    for (uint32_t i = 1; i < threads; i++) {
        pthread_join(ts[i], NULL);
        if (!err) err = rs[i].err;
    }
    free(rs);
    free(ts);
    return err;
}

/* ---------------------------------------------------------------- generator */

/* The frame's bytes after its addresses: IPv4/UDP, as sdnlab's driver sends. */
static const uint8_t FRAME_TAIL[] = {0x08, 0x00, 0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1,
                                     10,   0,    0,    2, 0x30, 0x39, 0, 80, 0, 26, 0, 0};
#define FRAME_LEN 60

static void mac(uint8_t *p, uint32_t sw, uint32_t i) {
    p[0] = 0x02;
    p[1] = (uint8_t)(sw >> 16);
    p[2] = (uint8_t)(sw >> 8);
    p[3] = (uint8_t)sw;
    p[4] = (uint8_t)(i >> 8);
    p[5] = (uint8_t)i;
}

/* The switch's PACKET_IN, to be patched per request (xid, buffer id,
 * in_port in 1.0, addresses). */
static void template(struct conn *c, uint8_t version) {
    uint8_t *t = c->tpl;
    memset(t, 0, sizeof c->tpl);
    if (version == 0x01) {
        c->tpl_len = 18 + FRAME_LEN;
        header(t, 0x01, OFPT_PACKET_IN, (uint16_t)c->tpl_len, 0);
        put16(t + 12, FRAME_LEN);
        c->frame_at = 18;
    } else {
        c->tpl_len = 42 + FRAME_LEN;
        header(t, 0x04, OFPT_PACKET_IN, (uint16_t)c->tpl_len, 0);
        put16(t + 12, FRAME_LEN);
        put16(t + 24, 1);  /* OXM match */
        put16(t + 26, 12); /* with in_port */
        put16(t + 28, 0x8000);
        t[30] = 0;
        t[31] = 4;
        put32(t + 32, 1);
        c->frame_at = 42;
    }
    memcpy(t + c->frame_at + 12, FRAME_TAIL, sizeof FRAME_TAIL);
}

struct generator {
    struct conn **conns; /* this thread's */
    uint32_t n;
    volatile int *stop;
};

/* Appends one PACKET_IN from MAC `i` (to `dst`, or broadcast), buffer `seq`. */
static int put_packet_in(struct conn *c, const struct ofref_gen_cfg *cfg, uint32_t i, int broadcast, uint32_t seq) {
    uint8_t *p = room(c, c->tpl_len);
    if (!p) return -1;
    memcpy(p, c->tpl, c->tpl_len);
    put32(p + 4, seq);
    put32(p + 8, seq);
    uint32_t port = 1 + i % (cfg->ports < 4 ? (cfg->ports ? cfg->ports : 1) : 4);
    if (cfg->version == 0x01)
        put16(p + 14, (uint16_t)port);
    else
        put32(p + 32, port);
    uint8_t *f = p + c->frame_at;
    if (broadcast)
        memset(f, 0xff, 6);
    else
        mac(f, c->idx, (i + 1) % cfg->macs);
    mac(f + 6, c->idx, i);
    return 0;
}

static double now_s(void);

/* 1.3 switches of this thread that have their features asked and are
 * waiting for the port-list request (or 200 ms) to end their handshake. */
static __thread uint32_t awaiting_ports;

/* The handshake is over: every MAC once, as a broadcast, is what a learning
 * controller learns from; the requests follow (`top_up`). */
static int establish(struct conn *c) {
    if (c->established) return 0;
    if (c->features_at > 0) awaiting_ports--;
    __atomic_store_n(&c->established, 1, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < c->cfg->macs; i++)
        if (put_packet_in(c, c->cfg, i, 1, 0) < 0) return -1;
    return 0;
}

/* Sends what the window allows, once the handshake is done. */
static void top_up(struct conn *c) {
    const struct ofref_gen_cfg *cfg = c->cfg;
    if (!c->established) return;
    uint32_t window = cfg->latency ? 1 : cfg->window;
    while (c->outstanding < window && c->out_len + c->tpl_len <= OUT_CAP) {
        uint32_t seq = c->seq;
        c->seq = (c->seq + 1) & 0x7fffffff;
        if (c->seq == 0) c->seq = 1;
        c->slots[seq & c->mask] = seq;
        put_packet_in(c, cfg, c->next_mac, 0, seq);
        c->next_mac = (c->next_mac + 1) % cfg->macs;
        c->outstanding++;
    }
}

static int gen_one(struct conn *c, const uint8_t *m, uint16_t len) {
    const struct ofref_gen_cfg *cfg = c->cfg;
    uint8_t v = cfg->version;
    uint8_t *p;
    uint32_t xid = get32(m + 4);
    switch (m[1]) {
    case OFPT_ECHO_REQUEST:
        if (!(p = room(c, len))) return -1;
        memcpy(p, m, len);
        p[1] = OFPT_ECHO_REPLY;
        return 0;
    case OFPT_FEATURES_REQUEST: {
        uint32_t n = v == 0x01 ? 32 + 48 * cfg->ports : 32;
        if (!(p = room(c, n))) return -1;
        memset(p, 0, n);
        header(p, v, OFPT_FEATURES_REPLY, (uint16_t)n, xid);
        put64(p + 8, cfg->first_dpid + c->idx);
        put32(p + 16, 256); /* buffers */
        p[20] = v == 0x01 ? 1 : 254;
        put32(p + 24, 0xc7); /* flow, table, port stats, ... */
        if (v == 0x01) {
            put32(p + 28, 0xfff); /* every 1.0 action */
            for (uint32_t i = 0; i < cfg->ports; i++) {
                uint8_t *q = p + 32 + 48 * i;
                put16(q, (uint16_t)(i + 1));
                mac(q + 2, c->idx | 0x800000, i + 1);
                q[8] = 'p';
                q[9] = (uint8_t)('0' + (i + 1) % 10);
            }
        }
        /* A 1.0 handshake ends here. In 1.3 controllers (sdnlab's, os-ken)
           drop PACKET_INs until they have the port list: it ends when the
           controller asks for it, or 200 ms after this for one that never
           does (ovs-testcontroller), as sdnlab's driver does. */
        if (v == 0x01) return establish(c);
        if (!c->established && c->features_at == 0) {
            c->features_at = now_s();
            awaiting_ports++;
        }
        return 0;
    }
    case OFPT_GET_CONFIG_REQUEST:
        if (!(p = room(c, 12))) return -1;
        header(p, v, OFPT_GET_CONFIG_REPLY, 12, xid);
        put16(p + 8, 0);
        put16(p + 10, 128);
        return 0;
    case OFPT_PACKET_OUT:
    case OFPT_FLOW_MOD: {
        __atomic_store_n(&c->count, c->count + 1, __ATOMIC_RELAXED);
        uint32_t at = m[1] == OFPT_PACKET_OUT ? 8 : (v == 0x01 ? 64 : 32);
        if (len < at + 4) return 0;
        uint32_t b = get32(m + at);
        if (b != 0 && b != 0xffffffff && c->slots[b & c->mask] == b) {
            c->slots[b & c->mask] = 0;
            c->outstanding--;
        }
        return 0;
    }
    default:
        break;
    }
    /* Barriers and stats: answered empty, well-formed. */
    if ((v == 0x01 && m[1] == OFP10_BARRIER_REQUEST) || (v == 0x04 && m[1] == OFP13_BARRIER_REQUEST)) {
        if (!(p = room(c, 8))) return -1;
        header(p, v, m[1] + 1, 8, xid);
    } else if ((v == 0x01 && m[1] == OFP10_STATS_REQUEST) || (v == 0x04 && m[1] == OFP13_MULTIPART_REQUEST)) {
        uint16_t type = len >= 10 ? get16(m + 8) : 0;
        uint32_t hdr = v == 0x01 ? 12 : 16;
        uint32_t body = type == 0 ? 1056 : (v == 0x04 && type == 13 ? 64 * cfg->ports : 0);
        if (!(p = room(c, hdr + body))) return -1;
        memset(p, 0, hdr + body);
        header(p, v, m[1] + 1, (uint16_t)(hdr + body), xid);
        put16(p + 8, type);
        if (type == 0) memcpy(p + hdr, "ofref", 5);
        for (uint32_t i = 0; type == 13 && i < body / 64; i++) {
            uint8_t *q = p + hdr + 64 * i;
            put32(q, i + 1);
            mac(q + 8, c->idx | 0x800000, i + 1);
            q[16] = 'p';
            q[17] = (uint8_t)('0' + (i + 1) % 10);
        }
        if (v == 0x04 && type == 13) return establish(c);
    }
    return 0;
}

static void *generator_thread(void *arg) {
    struct generator *g = arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) return NULL;
    for (uint32_t i = 0; i < g->n; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = g->conns[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, g->conns[i]->fd, &ev);
        flush(g->conns[i], ep); /* the HELLO */
    }
    struct epoll_event evs[64];
    while (!__atomic_load_n(g->stop, __ATOMIC_RELAXED)) {
        int n = epoll_wait(ep, evs, 64, awaiting_ports ? 20 : 100);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            serve(c, ep, gen_one, top_up);
        }
        /* 1.3 handshakes the controller never asked the port list of. */
        for (uint32_t i = 0; awaiting_ports && i < g->n; i++) {
            struct conn *c = g->conns[i];
            if (c->fd < 0 && !c->established && c->features_at > 0) {
                c->features_at = 0; /* closed while waiting */
                awaiting_ports--;
                continue;
            }
            if (c->fd >= 0 && !c->established && c->features_at > 0 && now_s() - c->features_at >= 0.2) {
                establish(c);
                top_up(c);
                flush(c, ep);
            }
        }
    }
    close(ep);
    return NULL;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_s(double s) {
    struct timespec t = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) < 0 && errno == EINTR) {
    }
}

int ofref_generate(const struct ofref_gen_cfg *cfg, uint64_t *counts, double *secs, uint32_t *established) {
    if (cfg->switches == 0 || cfg->macs == 0 || cfg->macs > 65536 || (cfg->version != 0x01 && cfg->version != 0x04))
        return -EINVAL;
    uint32_t threads = cfg->threads ? cfg->threads : 1;
    if (threads > cfg->switches) threads = cfg->switches;
    struct conn **conns = calloc(cfg->switches, sizeof *conns);
    if (!conns) return -ENOMEM;
    int err = 0;
    uint32_t window = cfg->latency ? 1 : (cfg->window ? cfg->window : 1);
    uint32_t slots = 16;
    while (slots < 2 * window) slots *= 2;
    for (uint32_t i = 0; i < cfg->switches && !err; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(cfg->port), .sin_addr.s_addr = htonl(cfg->addr)};
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
            err = -errno;
            if (fd >= 0) close(fd);
            break;
        }
        tune(fd);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        struct conn *c = conn_new(fd);
        if (!c || !(c->slots = calloc(slots, sizeof *c->slots))) {
            conn_free(c);
            err = -ENOMEM;
            break;
        }
        c->idx = i;
        c->cfg = cfg;
        c->seq = 1;
        c->mask = slots - 1;
        c->version = cfg->version;
        template(c, cfg->version);
        header(room(c, 8), cfg->version, OFPT_HELLO, 8, 1);
        conns[i] = c;
        /* Some controllers give a new switch a moment to finish its handshake. */
        if (cfg->switches <= 64) sleep_s(0.001);
    }
    volatile int stop = 0;
    struct generator *gs = calloc(threads, sizeof *gs);
    pthread_t *ts = calloc(threads, sizeof *ts);
    struct conn **sorted = calloc(cfg->switches, sizeof *sorted);
    if (!err && (!gs || !ts || !sorted)) err = -ENOMEM;
    if (!err) {
        /* Switch i to thread i % threads. */
        uint32_t at = 0;
        for (uint32_t t = 0; t < threads; t++) {
            gs[t].stop = &stop;
            gs[t].conns = sorted + at;
            for (uint32_t i = t; i < cfg->switches; i += threads) sorted[at++] = conns[i];
            gs[t].n = (uint32_t)(sorted + at - gs[t].conns);
            pthread_create(&ts[t], NULL, generator_thread, &gs[t]);
        }
        /* Every handshake done, or 5 s. */
        double t0 = now_s();
        uint32_t up = 0;
        while (now_s() - t0 < 5.0) {
            up = 0;
            for (uint32_t i = 0; i < cfg->switches; i++) up += __atomic_load_n(&conns[i]->established, __ATOMIC_RELAXED);
            if (up == cfg->switches) break;
            sleep_s(0.01);
        }
        *established = up;
        uint32_t total = cfg->warmup + cfg->loops;
        uint64_t *before = calloc(cfg->switches, sizeof *before);
        for (uint32_t l = 0; l < total && before; l++) {
            for (uint32_t i = 0; i < cfg->switches; i++) before[i] = __atomic_load_n(&conns[i]->count, __ATOMIC_RELAXED);
            double s0 = now_s();
            sleep_s(cfg->loop_ms / 1000.0);
            secs[l] = now_s() - s0;
            for (uint32_t i = 0; i < cfg->switches; i++)
                counts[(size_t)l * cfg->switches + i] = __atomic_load_n(&conns[i]->count, __ATOMIC_RELAXED) - before[i];
        }
        if (!before) err = -ENOMEM;
        free(before);
        __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
        for (uint32_t t = 0; t < threads; t++) pthread_join(ts[t], NULL);
    }
    for (uint32_t i = 0; i < cfg->switches; i++) conn_free(conns[i]);
    free(conns);
    free(gs);
    free(ts);
    free(sorted);
    return err;
}

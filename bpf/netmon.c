// agentsh network layer: cgroup sock_addr hooks that watch and block connects to
// MCP server addresses, plus an optional connect() audit tracepoint.
//
// Reads only stable ABI: struct bpf_sock_addr (UAPI) and syscall tracepoint
// arguments (layout from the tracepoint's format file). No kernel-internal
// structs, so headers of another kernel version are safe to compile against.
//
// Compiled by BCC with -DAGENTSH_PIN_DIR="\"/sys/fs/bpf/agentsh\"" and
// -DAGENTSH_TRACE_CGROUP=<0|1>. All maps are pinned there so that the kernel
// keeps enforcing while the daemon restarts.
//
// Unwatched connects cost one or two LPM-trie lookups and nothing else.

#include <uapi/linux/bpf.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/socket.h>

#ifndef AGENTSH_PIN_DIR
#define AGENTSH_PIN_DIR "/sys/fs/bpf/agentsh"
#endif

#define ACT_ALLOW 0
#define ACT_BLOCK 1

#define F_EMIT 1 /* send an event for matches */

#define KIND_CONNECT 0
#define KIND_SENDMSG 1
#define KIND_TRACE 2

#define STAT_LOST 0
#define STAT_MATCHED 1
#define STAT_BLOCKED 2
#define STAT_TRACE_LOST 3
#define STAT_MAX 4

/* LPM key: destination port (network order; 0 = any port) then the IPv6
 * address (IPv4 stored as ::ffff:a.b.c.d). Port first so one key layout can
 * say "this CIDR on this port" (prefixlen = 16 + addr bits). */
struct watch_key {
    u32 prefixlen;
    u16 port;
    u8 addr[16];
} __attribute__((packed));

struct watch_val {
    u32 server_idx;
    u16 tag;
    u8 action;
    u8 flags;
};

struct event {
    u64 cgroup_id;
    u32 tgid;
    u32 tid;
    u32 uid;
    u32 server_idx;
    u8 addr[16];
    u16 port;   /* host order */
    u8 family;  /* 4 or 6: the socket's family */
    u8 protocol;
    u8 action;
    u8 kind;
    u16 tag;
    s32 ret;
    char comm[16];
};

struct meta_val {
    u64 cgroup_id;
    char cgroup_path[248];
};

BPF_TABLE_PINNED("lpm_trie", struct watch_key, struct watch_val, watch_v1, 65536,
                 AGENTSH_PIN_DIR "/watch_v1", BPF_F_NO_PREALLOC);
BPF_TABLE_PINNED("percpu_array", u32, u64, stats_v1, STAT_MAX, AGENTSH_PIN_DIR "/stats_v1");
BPF_TABLE_PINNED("array", u32, struct meta_val, meta_v1, 1, AGENTSH_PIN_DIR "/meta_v1");

/* A pinned ring buffer: records written while no daemon runs wait for the next one. */
struct events_v1_table_t {
    int key;
    u32 leaf;
    int (*ringbuf_output)(void *, u64, u64);
    void *(*ringbuf_reserve)(u64);
    void (*ringbuf_discard)(void *, u64);
    void (*ringbuf_submit)(void *, u64);
    u32 max_entries;
};
__attribute__((section("maps/ringbuf:" AGENTSH_PIN_DIR "/events_v1")))
struct events_v1_table_t events_v1 = {.max_entries = 512 * 4096};

static __always_inline void bump(u32 idx)
{
    u64 *v = stats_v1.lookup(&idx);
    if (v)
        *v += 1;
}

static __always_inline int check(struct bpf_sock_addr *ctx, struct watch_key *k, u8 family,
                                 u8 kind)
{
    struct watch_val *v = watch_v1.lookup(k);
    if (!v) {
        if (k->port == 0)
            return 1;
        k->port = 0;
        v = watch_v1.lookup(k);
        if (!v)
            return 1;
    }
    /* watched */
    u8 action = v->action;
    bump(STAT_MATCHED);
    if (action == ACT_BLOCK)
        bump(STAT_BLOCKED);
    if (v->flags & F_EMIT) {
        struct event *e = events_v1.ringbuf_reserve(sizeof(struct event));
        if (!e) {
            bump(STAT_LOST);
        } else {
            u64 pt = bpf_get_current_pid_tgid();
            e->cgroup_id = bpf_get_current_cgroup_id();
            e->tgid = pt >> 32;
            e->tid = (u32)pt;
            e->uid = (u32)bpf_get_current_uid_gid();
            e->server_idx = v->server_idx;
            __builtin_memcpy(e->addr, k->addr, 16);
            e->port = bpf_ntohs((u16)ctx->user_port);
            e->family = family;
            e->protocol = (u8)ctx->protocol;
            e->action = action;
            e->kind = kind;
            e->tag = v->tag;
            e->ret = action == ACT_BLOCK ? -1 : 0;
            bpf_get_current_comm(&e->comm, sizeof(e->comm));
            events_v1.ringbuf_submit(e, 0);
        }
    }
    return action == ACT_BLOCK ? 0 : 1;
}

static __always_inline int check4(struct bpf_sock_addr *ctx, u8 kind)
{
    struct watch_key k = {};
    u32 ip = ctx->user_ip4;
    k.prefixlen = 16 + 128;
    k.port = (u16)ctx->user_port;
    k.addr[10] = 0xff;
    k.addr[11] = 0xff;
    __builtin_memcpy(&k.addr[12], &ip, 4);
    return check(ctx, &k, 4, kind);
}

static __always_inline int check6(struct bpf_sock_addr *ctx, u8 kind)
{
    struct watch_key k = {};
    u32 a0 = ctx->user_ip6[0], a1 = ctx->user_ip6[1], a2 = ctx->user_ip6[2],
        a3 = ctx->user_ip6[3];
    k.prefixlen = 16 + 128;
    k.port = (u16)ctx->user_port;
    __builtin_memcpy(&k.addr[0], &a0, 4);
    __builtin_memcpy(&k.addr[4], &a1, 4);
    __builtin_memcpy(&k.addr[8], &a2, 4);
    __builtin_memcpy(&k.addr[12], &a3, 4);
    /* v4-mapped destinations (::ffff:a.b.c.d) match the IPv4 entries as-is. */
    return check(ctx, &k, 6, kind);
}

int agentsh_c4(struct bpf_sock_addr *ctx) { return check4(ctx, KIND_CONNECT); }
int agentsh_c6(struct bpf_sock_addr *ctx) { return check6(ctx, KIND_CONNECT); }
int agentsh_s4(struct bpf_sock_addr *ctx) { return check4(ctx, KIND_SENDMSG); }
int agentsh_s6(struct bpf_sock_addr *ctx) { return check6(ctx, KIND_SENDMSG); }

/* ------------------------------------------------------------------ trace_all
 * Every connect() (with its result) from tasks under the configured cgroup.
 * Argument layouts follow /sys/kernel/tracing/events/syscalls/sys_*_connect/format. */

struct enter_connect_args {
    u64 __common;
    s32 __syscall_nr;
    u32 __pad;
    u64 fd;
    u64 uservaddr;
    u64 addrlen;
};

struct exit_connect_args {
    u64 __common;
    s32 __syscall_nr;
    u32 __pad;
    s64 ret;
};

struct pending {
    u8 addr[16];
    u16 port;
    u8 family;
    u8 pad;
};

BPF_HASH(trace_pending, u32, struct pending, 10240);
BPF_CGROUP_ARRAY(trace_cgroup, 1);

int agentsh_tenter(struct enter_connect_args *args)
{
#if AGENTSH_TRACE_CGROUP
    if (trace_cgroup.check_current_task(0) != 1)
        return 0;
#endif
    struct pending p = {};
    u16 fam = 0;
    void *ua = (void *)args->uservaddr;
    if (bpf_probe_read_user(&fam, sizeof(fam), ua) != 0)
        return 0;
    if (fam == AF_INET) {
        struct sockaddr_in sa = {};
        if (bpf_probe_read_user(&sa, sizeof(sa), ua) != 0)
            return 0;
        p.family = 4;
        p.port = bpf_ntohs(sa.sin_port);
        p.addr[10] = 0xff;
        p.addr[11] = 0xff;
        __builtin_memcpy(&p.addr[12], &sa.sin_addr.s_addr, 4);
    } else if (fam == AF_INET6) {
        struct sockaddr_in6 sa6 = {};
        if (bpf_probe_read_user(&sa6, sizeof(sa6), ua) != 0)
            return 0;
        p.family = 6;
        p.port = bpf_ntohs(sa6.sin6_port);
        __builtin_memcpy(p.addr, &sa6.sin6_addr, 16);
    } else if (fam == AF_UNIX) {
        p.family = 1;
    } else {
        p.family = 0;
    }
    u32 tid = (u32)bpf_get_current_pid_tgid();
    trace_pending.update(&tid, &p);
    return 0;
}

int agentsh_texit(struct exit_connect_args *args)
{
    u32 tid = (u32)bpf_get_current_pid_tgid();
    struct pending *p = trace_pending.lookup(&tid);
    if (!p)
        return 0;
    struct event *e = events_v1.ringbuf_reserve(sizeof(struct event));
    if (!e) {
        bump(STAT_TRACE_LOST);
        trace_pending.delete(&tid);
        return 0;
    }
    u64 pt = bpf_get_current_pid_tgid();
    e->cgroup_id = bpf_get_current_cgroup_id();
    e->tgid = pt >> 32;
    e->tid = (u32)pt;
    e->uid = (u32)bpf_get_current_uid_gid();
    e->server_idx = 0;
    __builtin_memcpy(e->addr, p->addr, 16);
    e->port = p->port;
    e->family = p->family;
    e->protocol = 0;
    e->action = 0;
    e->kind = KIND_TRACE;
    e->tag = 0;
    e->ret = (s32)args->ret;
    bpf_get_current_comm(&e->comm, sizeof(e->comm));
    events_v1.ringbuf_submit(e, 0);
    trace_pending.delete(&tid);
    return 0;
}

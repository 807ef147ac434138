// agentsh network layer: cgroup sock_addr hooks that watch and block connects to
// MCP server addresses, plus an optional connect() audit tracepoint.
//
// Reads only stable ABI: struct bpf_sock_addr (UAPI) and syscall tracepoint
// arguments (layout from the tracepoint's format file). No kernel-internal
// structs, so headers of another kernel version are safe to compile against.
//
// Every number shared with the daemon (actions, flags, record kinds, counter
// indexes, families, map sizes, the pin directory) is defined once, in
// Python, and passed by the loader as -D cflags; this file defines none of
// them and refuses to compile without them. The structs the daemon reads or
// writes are checked against their Python layouts at compile time (size,
// each field's offset, size and signedness): see docs/network.md#layout.
// All maps are pinned in AGENTSH_PIN_DIR so that the kernel keeps enforcing
// while the daemon restarts.
//
// Unwatched connects cost one or two LPM-trie lookups and nothing else.

#include <uapi/linux/bpf.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/socket.h>

#if !defined(AGENTSH_PIN_DIR) || !defined(AGENTSH_TRACE_CGROUP)
#error "AGENTSH_PIN_DIR/AGENTSH_TRACE_CGROUP missing: compile through the agentsh loader"
#endif
#if !defined(ACT_ALLOW) || !defined(ACT_BLOCK) || !defined(F_EMIT)
#error "ACT_ALLOW/ACT_BLOCK/F_EMIT missing: the loader passes them from Python"
#endif
#if !defined(KIND_CONNECT) || !defined(KIND_SENDMSG) || !defined(KIND_TRACE)
#error "KIND_CONNECT/KIND_SENDMSG/KIND_TRACE missing: the loader passes them from Python"
#endif
#if !defined(STAT_LOST) || !defined(STAT_MATCHED) || !defined(STAT_BLOCKED) || \
    !defined(STAT_TRACE_LOST) || !defined(STAT_MAX)
#error "STAT_* missing: the loader passes them from Python"
#endif
#if !defined(FAM_OTHER) || !defined(FAM_UNIX) || !defined(FAM_V4) || !defined(FAM_V6)
#error "FAM_* missing: the loader passes them from Python"
#endif
#if !defined(WATCH_MAX_ENTRIES) || !defined(EVENTS_RING_BYTES) || !defined(TRACE_PENDING_MAX)
#error "map sizes missing: the loader passes them from Python"
#endif
#if !defined(AGENTSH_LAYOUT_watch_key) || !defined(AGENTSH_LAYOUT_watch_val) || \
    !defined(AGENTSH_LAYOUT_meta_val) || !defined(AGENTSH_LAYOUT_event) || \
    !defined(AGENTSH_LAYOUT_enter_connect_args) || !defined(AGENTSH_LAYOUT_exit_connect_args)
#error "struct layouts missing: the loader passes them from Python"
#endif

/* AGENTSH_LAYOUT_<s> (from Python) expands to one of these per field. */
#define AGENTSH_FIELD(s, f, off, size)                                                  \
    _Static_assert(__builtin_offsetof(struct s, f) == (off),                            \
                   "struct " #s "." #f ": offset differs from its Python layout");       \
    _Static_assert(sizeof(((struct s *)0)->f) == (size),                                \
                   "struct " #s "." #f ": size differs from its Python layout");
#define AGENTSH_SCALAR(s, f, off, size, is_signed)                                      \
    AGENTSH_FIELD(s, f, off, size)                                                      \
    _Static_assert((((__typeof__(((struct s *)0)->f)) - 1) < 0) == (is_signed),        \
                   "struct " #s "." #f ": signedness differs from its Python layout");
#define AGENTSH_CHECK(s)                                                                \
    _Static_assert(sizeof(struct s) == AGENTSH_SIZEOF_##s,                              \
                   "sizeof(struct " #s ") differs from its Python layout");              \
    AGENTSH_LAYOUT_##s

#define AGENTSH_PIN(name) AGENTSH_PIN_DIR "/" #name

/* LPM key: destination port (network order; 0 = any port) then the IPv6
 * address (IPv4 stored as ::ffff:a.b.c.d). Port first so one key layout can
 * say "this CIDR on this port" (prefixlen = port bits + addr bits). */
struct watch_key {
    u32 prefixlen;
    u16 port;
    u8 addr[16];
} __attribute__((packed));
#define WATCH_FULL_PREFIX \
    (8 * (sizeof(((struct watch_key *)0)->port) + sizeof(((struct watch_key *)0)->addr)))

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
    u8 family;  /* FAM_*: the socket's family */
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

AGENTSH_CHECK(watch_key)
AGENTSH_CHECK(watch_val)
AGENTSH_CHECK(event)
AGENTSH_CHECK(meta_val)

BPF_TABLE_PINNED("lpm_trie", struct watch_key, struct watch_val, watch_v1, WATCH_MAX_ENTRIES,
                 AGENTSH_PIN(watch_v1), BPF_F_NO_PREALLOC);
BPF_TABLE_PINNED("percpu_array", u32, u64, stats_v1, STAT_MAX, AGENTSH_PIN(stats_v1));
BPF_TABLE_PINNED("array", u32, struct meta_val, meta_v1, 1, AGENTSH_PIN(meta_v1));

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
__attribute__((section("maps/ringbuf:" AGENTSH_PIN(events_v1))))
struct events_v1_table_t events_v1 = {.max_entries = EVENTS_RING_BYTES};

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
    k.prefixlen = WATCH_FULL_PREFIX;
    k.port = (u16)ctx->user_port;
    k.addr[10] = 0xff;
    k.addr[11] = 0xff;
    __builtin_memcpy(&k.addr[12], &ip, 4);
    return check(ctx, &k, FAM_V4, kind);
}

static __always_inline int check6(struct bpf_sock_addr *ctx, u8 kind)
{
    struct watch_key k = {};
    u32 a0 = ctx->user_ip6[0], a1 = ctx->user_ip6[1], a2 = ctx->user_ip6[2],
        a3 = ctx->user_ip6[3];
    k.prefixlen = WATCH_FULL_PREFIX;
    k.port = (u16)ctx->user_port;
    __builtin_memcpy(&k.addr[0], &a0, 4);
    __builtin_memcpy(&k.addr[4], &a1, 4);
    __builtin_memcpy(&k.addr[8], &a2, 4);
    __builtin_memcpy(&k.addr[12], &a3, 4);
    /* v4-mapped destinations (::ffff:a.b.c.d) match the IPv4 entries as-is. */
    return check(ctx, &k, FAM_V6, kind);
}

int agentsh_c4(struct bpf_sock_addr *ctx) { return check4(ctx, KIND_CONNECT); }
int agentsh_c6(struct bpf_sock_addr *ctx) { return check6(ctx, KIND_CONNECT); }
int agentsh_s4(struct bpf_sock_addr *ctx) { return check4(ctx, KIND_SENDMSG); }
int agentsh_s6(struct bpf_sock_addr *ctx) { return check6(ctx, KIND_SENDMSG); }

/* ------------------------------------------------------------------ trace_all
 * Every connect() (with its result) from tasks under the configured cgroup.
 * Argument layouts follow /sys/kernel/tracing/events/syscalls/sys_*_connect/format. */

struct enter_connect_args {
    u64 common;
    s32 __syscall_nr;
    u32 pad;
    u64 fd;
    u64 uservaddr;
    u64 addrlen;
};

struct exit_connect_args {
    u64 common;
    s32 __syscall_nr;
    u32 pad;
    s64 ret;
};

AGENTSH_CHECK(enter_connect_args)
AGENTSH_CHECK(exit_connect_args)

/* The user's sockaddr, read as the kernel's UAPI lays it out (the same on every
 * architecture and for compat tasks): the family first, then the port. */
_Static_assert(sizeof(((struct sockaddr_in *)0)->sin_family) == 2, "sa_family is a u16");
_Static_assert(__builtin_offsetof(struct sockaddr_in, sin_port) == 2, "sockaddr_in layout");
_Static_assert(__builtin_offsetof(struct sockaddr_in6, sin6_port) == 2, "sockaddr_in6 layout");

struct pending {
    u8 addr[16];
    u16 port;
    u8 family;
    u8 pad;
};

BPF_HASH(trace_pending, u32, struct pending, TRACE_PENDING_MAX);
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
        p.family = FAM_V4;
        p.port = bpf_ntohs(sa.sin_port);
        p.addr[10] = 0xff;
        p.addr[11] = 0xff;
        __builtin_memcpy(&p.addr[12], &sa.sin_addr.s_addr, 4);
    } else if (fam == AF_INET6) {
        struct sockaddr_in6 sa6 = {};
        if (bpf_probe_read_user(&sa6, sizeof(sa6), ua) != 0)
            return 0;
        p.family = FAM_V6;
        p.port = bpf_ntohs(sa6.sin6_port);
        __builtin_memcpy(p.addr, &sa6.sin6_addr, 16);
    } else if (fam == AF_UNIX) {
        p.family = FAM_UNIX;
    } else {
        p.family = FAM_OTHER;
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
    e->action = ACT_ALLOW;
    e->kind = KIND_TRACE;
    e->tag = 0;
    e->ret = (s32)args->ret;
    bpf_get_current_comm(&e->comm, sizeof(e->comm));
    events_v1.ringbuf_submit(e, 0);
    trace_pending.delete(&tid);
    return 0;
}

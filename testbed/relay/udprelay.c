/*
 * udprelay - a small userspace UDP delay/loss/blackhole/NAT-rebind relay.
 *
 * Sits in front of one UDP server (e.g. an OpenVPN server) and forwards
 * datagrams between any number of clients and that server, adding a fixed
 * one-way delay per direction, random loss, a "dead host" mode and NAT
 * rebinding (the source port the server sees for a client changes).
 *
 * See README.md in this directory for usage, log format and semantics.
 *
 * Design:
 *  - one listening socket (clients talk to it);
 *  - one connected upstream socket per client address, created on the first
 *    datagram from that client, so each client has a stable 5-tuple towards
 *    the server until it is rebound;
 *  - one FIFO queue per direction holding datagrams with their due time
 *    (receive time + delay, CLOCK_MONOTONIC, ns resolution); the delay is
 *    constant per direction, so FIFO order == due order;
 *  - the event loop sleeps in ppoll() with a nanosecond timeout computed from
 *    the earliest due time; timer slack is set to 1 ns so wakeups are accurate
 *    to well below 1 ms while the process uses no CPU when idle;
 *  - signals are blocked except while sleeping in ppoll(), so they are handled
 *    synchronously in the main loop.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define PROG "udprelay"
#define VERSION "1.0"
#define RXBUF_SIZE 65536          /* > largest possible UDP payload */
#define MAX_DELAY_MS 3600000.0    /* 1 hour */
#define RX_BURST 64               /* datagrams read per socket per wakeup */
#define ADDRSTR_LEN 80

#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

/* ------------------------------------------------------------------------ */
/* configuration                                                            */

struct config {
    struct sockaddr_storage listen_addr;
    socklen_t listen_len;
    char listen_arg[ADDRSTR_LEN];
    struct sockaddr_storage up_addr;
    socklen_t up_len;
    char up_arg[ADDRSTR_LEN];
    int64_t delay_ns[2];          /* [DIR_UP], [DIR_DOWN] */
    double loss[2];               /* probability 0..1 */
    uint64_t seed;
    int blackhole;
    const char *log_path;
    const char *pidfile;
    uint64_t rebind_after;        /* 0 = off */
    int drop_unasked_resets;      /* drop a server reset the client did not ask for */
    int drop_first_up;            /* opcode whose first client datagram is dropped, -1 off */
    int hold_first;               /* held, not dropped: 1 sent before the reset, 2 after */
    int quiet;
    int max_clients;
    double idle_timeout_s;
    size_t queue_limit;           /* bytes per direction */
};

enum { DIR_UP = 0, DIR_DOWN = 1 };
static const char *const dir_name[2] = { "up", "down" };

/* ------------------------------------------------------------------------ */
/* state                                                                    */

struct client {
    int used;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char name[ADDRSTR_LEN];       /* "ip:port" / "[ip6]:port" */
    int fd;                       /* connected upstream socket */
    unsigned uport;               /* local port of fd as the server sees it */
    int64_t last_active;
    uint64_t up_fwd;              /* client->server datagrams forwarded */
    int count_rebind_done;        /* --rebind-after-packets already applied */
    int sent_reset;               /* sent an OpenVPN client reset (opcode 7, 10) */
    unsigned char *held;          /* --hold-first-up: the held datagram */
    size_t held_len;
    unsigned long pending;        /* datagrams of this client in the queues */
    int hnext;                    /* hash chain */
};

struct pkt {
    struct pkt *next;
    int64_t due;
    int client;
    size_t len;
    unsigned char data[];
};

struct queue {
    struct pkt *head, *tail;
    size_t bytes;
};

struct stats {
    uint64_t rx, fwd, lost, drop, blackholed;
    int64_t late_sum_ns, late_max_ns;   /* send time - due time */
};

static struct config cfg;
static struct client *clients;
static int nclients;
static int *freelist;
static int nfree;
static int *hbuckets;
static unsigned hmask;
static struct queue queues[2];
static struct stats st[2];
static int listen_fd = -1;
static FILE *g_log;
static int64_t t_start;
static uint64_t rng_state[2];
static int pidfile_written;
static int64_t last_full_log;
static int full_logged;
static unsigned char rxbuf[RXBUF_SIZE];

static volatile sig_atomic_t sig_term, sig_usr1, sig_usr2, sig_hup;

/* ------------------------------------------------------------------------ */
/* helpers                                                                  */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, PROG ": ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '" PROG " --help' for more information.\n");
    exit(EXIT_USAGE);
}

static void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, PROG ": ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(EXIT_RUNTIME);
}

static void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void info(const char *fmt, ...)
{
    va_list ap;
    if (cfg.quiet)
        return;
    fprintf(stderr, PROG ": ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* errno -> short token without spaces, for the log */
static const char *errname(int e)
{
    static char buf[32];
    switch (e) {
    case ECONNREFUSED: return "ECONNREFUSED";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case ENETUNREACH:  return "ENETUNREACH";
    case EMSGSIZE:     return "EMSGSIZE";
    case EAGAIN:       return "EAGAIN";
    case ENOBUFS:      return "ENOBUFS";
    case ENOMEM:       return "ENOMEM";
    case EMFILE:       return "EMFILE";
    case ENFILE:       return "ENFILE";
    case EPERM:        return "EPERM";
    case EACCES:       return "EACCES";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EINVAL:       return "EINVAL";
    case EPROTO:       return "EPROTO";
    case EHOSTDOWN:    return "EHOSTDOWN";
    case ENETDOWN:     return "ENETDOWN";
    default:
        snprintf(buf, sizeof buf, "errno=%d", e);
        return buf;
    }
}

/* errors that a connected UDP socket reports because of an ICMP message */
static int is_icmp_error(int e)
{
    return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH ||
           e == EHOSTDOWN || e == ENETDOWN || e == EPROTO || e == EMSGSIZE ||
           e == ENOPROTOOPT || e == EACCES;
}

static void format_addr(const struct sockaddr *sa, socklen_t len,
                        char *out, size_t outlen)
{
    char host[INET6_ADDRSTRLEN + 20], serv[8];
    if (getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(out, outlen, "?:?");
        return;
    }
    if (sa->sa_family == AF_INET6)
        snprintf(out, outlen, "[%s]:%s", host, serv);
    else
        snprintf(out, outlen, "%s:%s", host, serv);
}

static unsigned sockaddr_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return 0;
}

/*
 * Parse "a.b.c.d:port", "[v6]:port" or "localhost:port" (numeric addresses
 * only; no DNS). Returns 0 or -1 with *why set.
 */
static int parse_hostport(const char *s, int allow_port0,
                          struct sockaddr_storage *out, socklen_t *outlen,
                          const char **why)
{
    char host[NI_MAXHOST];
    const char *port;
    size_t hl;

    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb) { *why = "missing ']'"; return -1; }
        if (rb[1] != ':') { *why = "expected ':port' after ']'"; return -1; }
        hl = (size_t)(rb - s - 1);
        if (hl == 0 || hl >= sizeof host) { *why = "bad IPv6 address"; return -1; }
        memcpy(host, s + 1, hl);
        host[hl] = '\0';
        if (!strchr(host, ':')) { *why = "brackets are for IPv6 addresses"; return -1; }
        port = rb + 2;
    } else {
        const char *c = strrchr(s, ':');
        if (!c) { *why = "missing ':port'"; return -1; }
        if (memchr(s, ':', (size_t)(c - s))) {
            *why = "IPv6 addresses must be written as [addr]:port";
            return -1;
        }
        hl = (size_t)(c - s);
        if (hl == 0 || hl >= sizeof host) { *why = "missing host"; return -1; }
        memcpy(host, s, hl);
        host[hl] = '\0';
        port = c + 1;
    }

    if (!*port) { *why = "missing port"; return -1; }
    for (const char *p = port; *p; p++)
        if (*p < '0' || *p > '9') { *why = "port is not a number"; return -1; }
    if (strlen(port) > 5) { *why = "port out of range"; return -1; }
    long pn = strtol(port, NULL, 10);
    if (pn > 65535 || (pn == 0 && !allow_port0)) {
        *why = allow_port0 ? "port out of range (0-65535)"
                           : "port out of range (1-65535)";
        return -1;
    }

    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res) {
        *why = "not a numeric IPv4/IPv6 address";
        return -1;
    }
    if (s[0] == '[' && res->ai_family != AF_INET6) {
        freeaddrinfo(res);
        *why = "brackets are for IPv6 addresses";
        return -1;
    }
    if (res->ai_addrlen > sizeof *out) {
        freeaddrinfo(res);
        *why = "address too long";
        return -1;
    }
    memset(out, 0, sizeof *out);
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *outlen = (socklen_t)res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static double parse_double_opt(const char *opt, const char *s,
                               double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v))
        usage_error("%s: '%s' is not a number", opt, s);
    if (v < lo || v > hi)
        usage_error("%s: %s out of range (%.10g..%.10g)", opt, s, lo, hi);
    return v;
}

static uint64_t parse_u64_opt(const char *opt, const char *s,
                              uint64_t lo, uint64_t hi)
{
    char *end;
    const char *p = s;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p < '0' || *p > '9')
        usage_error("%s: '%s' is not a non-negative integer", opt, s);
    errno = 0;
    unsigned long long v = strtoull(p, &end, 0);
    if (*end != '\0' || errno != 0)
        usage_error("%s: '%s' is not a non-negative integer", opt, s);
    if (v < lo || v > hi)
        usage_error("%s: %s out of range (%" PRIu64 "..%" PRIu64 ")",
                    opt, s, lo, hi);
    return (uint64_t)v;
}

/* splitmix64: small, fast, good enough for loss decisions */
static uint64_t rng_next(int dir)
{
    uint64_t z = (rng_state[dir] += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int rng_lose(int dir)
{
    if (cfg.loss[dir] <= 0.0)
        return 0;
    double u = (double)(rng_next(dir) >> 11) * (1.0 / 9007199254740992.0);
    return u < cfg.loss[dir];
}

/* ------------------------------------------------------------------------ */
/* log                                                                      */

static void log_line(int64_t t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void log_line(int64_t t, const char *fmt, ...)
{
    char line[512];
    int n;
    va_list ap;

    if (!g_log)
        return;
    int64_t rel = t - t_start;
    if (rel < 0)
        rel = 0;
    n = snprintf(line, sizeof line, "%" PRId64 ".%06" PRId64 " ",
                 (int64_t)(rel / 1000000000LL), (int64_t)((rel / 1000LL) % 1000000LL));
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t l = strlen(line);
    line[l++] = '\n';
    line[l] = '\0';
    fputs(line, g_log);
    fflush(g_log);
}

static void log_dgram(int64_t t, int dir, const struct client *c,
                      const char *cname, const unsigned char *data, size_t len,
                      const char *mark)
{
    char op[8];
    if (!g_log)
        return;
    if (len == 0)
        strcpy(op, "-");
    else
        snprintf(op, sizeof op, "%u", (unsigned)(data[0] >> 3));
    log_line(t, "%s %s %s %zu%s%s", dir_name[dir], c ? c->name : cname, op,
             len, mark ? " " : "", mark ? mark : "");
}

static void open_log(const char *mode)
{
    if (!cfg.log_path)
        return;
    FILE *f = fopen(cfg.log_path, mode);
    if (!f) {
        if (!g_log)
            die("cannot open log file '%s': %s", cfg.log_path, strerror(errno));
        fprintf(stderr, PROG ": cannot reopen log file '%s': %s (keeping old)\n",
                cfg.log_path, strerror(errno));
        return;
    }
    setvbuf(f, NULL, _IOLBF, 0);
    (void)fcntl(fileno(f), F_SETFD, FD_CLOEXEC);
    if (g_log)
        fclose(g_log);
    g_log = f;
}

/* ------------------------------------------------------------------------ */
/* sockets                                                                  */

static void set_bufs(int fd, int rcv, int snd)
{
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &snd, sizeof snd) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof snd);
}

/* new connected upstream socket; returns fd or -1 (errno set) */
static int open_upstream(unsigned *port_out)
{
    int fd = socket(cfg.up_addr.ss_family,
                    SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    set_bufs(fd, 1 << 20, 1 << 20);
    if (connect(fd, (const struct sockaddr *)&cfg.up_addr, cfg.up_len) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    *port_out = sockaddr_port(&ss);
    return fd;
}

/* ------------------------------------------------------------------------ */
/* client table                                                             */

static unsigned addr_hash(const struct sockaddr_storage *ss)
{
    const unsigned char *p;
    size_t n;
    uint32_t h = 2166136261u;
    unsigned port = sockaddr_port(ss);

    if (ss->ss_family == AF_INET) {
        p = (const unsigned char *)&((const struct sockaddr_in *)ss)->sin_addr;
        n = 4;
    } else {
        p = (const unsigned char *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
        n = 16;
    }
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    h = (h ^ (port & 0xff)) * 16777619u;
    h = (h ^ (port >> 8)) * 16777619u;
    return h & hmask;
}

static int addr_equal(const struct sockaddr_storage *a,
                      const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return 0;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port &&
               x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port &&
               x->sin6_scope_id == y->sin6_scope_id &&
               memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0;
    }
    return 0;
}

static int client_find(const struct sockaddr_storage *ss)
{
    for (int i = hbuckets[addr_hash(ss)]; i >= 0; i = clients[i].hnext)
        if (addr_equal(&clients[i].addr, ss))
            return i;
    return -1;
}

/* returns index, -1 if the table is full, -2 if the socket failed */
static int client_create(const struct sockaddr_storage *ss, socklen_t sl,
                         int64_t now, int *err)
{
    if (nfree == 0)
        return -1;
    unsigned port;
    int fd = open_upstream(&port);
    if (fd < 0) {
        *err = errno;
        return -2;
    }
    int i = freelist[--nfree];
    struct client *c = &clients[i];
    memset(c, 0, sizeof *c);
    c->used = 1;
    memcpy(&c->addr, ss, sl);
    c->addrlen = sl;
    format_addr((const struct sockaddr *)ss, sl, c->name, sizeof c->name);
    c->fd = fd;
    c->uport = port;
    c->last_active = now;
    unsigned h = addr_hash(ss);
    c->hnext = hbuckets[h];
    hbuckets[h] = i;
    nclients++;
    log_line(now, "new %s %u", c->name, c->uport);
    return i;
}

static void client_remove(int i)
{
    struct client *c = &clients[i];
    unsigned h = addr_hash(&c->addr);
    int *pp = &hbuckets[h];
    while (*pp >= 0 && *pp != i)
        pp = &clients[*pp].hnext;
    if (*pp == i)
        *pp = c->hnext;
    close(c->fd);
    c->fd = -1;
    free(c->held);
    c->held = NULL;
    c->used = 0;
    freelist[nfree++] = i;
    nclients--;
}

/* ------------------------------------------------------------------------ */
/* queues                                                                   */

static int enqueue(int dir, int ci, const unsigned char *data, size_t len,
                   int64_t due)
{
    struct queue *q = &queues[dir];
    if (q->bytes + len > cfg.queue_limit)
        return -1;
    struct pkt *p = malloc(sizeof *p + len);
    if (!p)
        return -1;
    p->next = NULL;
    p->due = due;
    p->client = ci;
    p->len = len;
    if (len)
        memcpy(p->data, data, len);
    if (q->tail)
        q->tail->next = p;
    else
        q->head = p;
    q->tail = p;
    q->bytes += len;
    clients[ci].pending++;
    return 0;
}

static struct pkt *dequeue(int dir)
{
    struct queue *q = &queues[dir];
    struct pkt *p = q->head;
    if (!p)
        return NULL;
    q->head = p->next;
    if (!q->head)
        q->tail = NULL;
    q->bytes -= p->len;
    clients[p->client].pending--;
    return p;
}

static void free_queues(void)
{
    for (int d = 0; d < 2; d++) {
        struct pkt *p;
        while ((p = dequeue(d)) != NULL)
            free(p);
    }
}

/* ------------------------------------------------------------------------ */
/* datagram handling                                                        */

static void upstream_readable(int ci);

static void rebind_client(int ci, int64_t now, const char *why)
{
    struct client *c = &clients[ci];
    unsigned np;
    int nfd = open_upstream(&np);
    if (nfd < 0) {
        log_line(now, "error %s rebind %s", c->name, errname(errno));
        fprintf(stderr, PROG ": rebind of %s failed: %s\n", c->name,
                strerror(errno));
        return;
    }
    /* datagrams that reached the old port before the rebind are still
     * delivered; anything arriving there later is lost (port closed). */
    upstream_readable(ci);
    unsigned op = c->uport;
    close(c->fd);
    c->fd = nfd;
    c->uport = np;
    log_line(now, "rebind %s %u %u %s", c->name, op, np, why);
}

static void rebind_all(int64_t now)
{
    int n = 0;
    for (int i = 0; i < cfg.max_clients; i++)
        if (clients[i].used) {
            rebind_client(i, now, "signal");
            n++;
        }
    if (n == 0)
        log_line(now, "rebind-none");
}

static ssize_t send_retry(int fd, const void *buf, size_t len,
                          const struct sockaddr *to, socklen_t tolen)
{
    ssize_t r = -1;
    /* a pending ICMP error is reported (and cleared) by the next send on a
     * connected socket and the datagram is not sent: retry a few times. */
    for (int tries = 0; tries < 4; tries++) {
        r = to ? sendto(fd, buf, len, 0, to, tolen) : send(fd, buf, len, 0);
        if (r >= 0)
            return r;
        if (errno == EINTR)
            continue;
        if (!is_icmp_error(errno) || errno == EMSGSIZE)
            break;
    }
    return r;
}

static void flush_due(int64_t now)
{
    for (int d = 0; d < 2; d++) {
        struct pkt *p;
        while (queues[d].head && queues[d].head->due <= now) {
            p = dequeue(d);
            struct client *c = &clients[p->client];
            ssize_t r;
            if (d == DIR_UP) {
                if (cfg.rebind_after && !c->count_rebind_done &&
                    c->up_fwd >= cfg.rebind_after) {
                    c->count_rebind_done = 1;
                    rebind_client(p->client, now, "count");
                }
                r = send_retry(c->fd, p->data, p->len, NULL, 0);
                if (r >= 0)
                    c->up_fwd++;
            } else {
                r = send_retry(listen_fd, p->data, p->len,
                               (const struct sockaddr *)&c->addr, c->addrlen);
            }
            if (r < 0) {
                st[d].drop++;
                log_line(now, "error %s %s %s", c->name, dir_name[d],
                         errname(errno));
            } else {
                int64_t late = now_ns() - p->due;
                st[d].fwd++;
                st[d].late_sum_ns += late;
                if (late > st[d].late_max_ns)
                    st[d].late_max_ns = late;
            }
            free(p);
        }
    }
}

static int dropped_first;         /* --drop-first-up already applied */

/* --hold-first-up(-after): send the held datagram up now */
static void release_held(struct client *c, int ci, int64_t now)
{
    if (enqueue(DIR_UP, ci, c->held, c->held_len, now + cfg.delay_ns[DIR_UP]) == 0)
        log_dgram(now, DIR_UP, c, NULL, c->held, c->held_len, NULL);
    free(c->held);
    c->held = NULL;
}

static void listen_readable(void)
{
    for (int n = 0; n < RX_BURST; n++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        ssize_t r = recvfrom(listen_fd, rxbuf, sizeof rxbuf, MSG_TRUNC,
                             (struct sockaddr *)&ss, &sl);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            if (errno == EINTR)
                continue;
            /* e.g. ECONNREFUSED on some stacks: ignore and go on */
            continue;
        }
        int64_t now = now_ns();
        size_t len = (size_t)r > sizeof rxbuf ? sizeof rxbuf : (size_t)r;
        st[DIR_UP].rx++;

        int ci = client_find(&ss);
        char cname[ADDRSTR_LEN];
        if (ci < 0)
            format_addr((struct sockaddr *)&ss, sl, cname, sizeof cname);
        const struct client *cp = ci >= 0 ? &clients[ci] : NULL;

        if (cfg.blackhole) {
            st[DIR_UP].blackholed++;
            log_dgram(now, DIR_UP, cp, cname, rxbuf, len, "blackhole");
            continue;
        }
        if (rng_lose(DIR_UP)) {
            st[DIR_UP].lost++;
            if (ci >= 0)
                clients[ci].last_active = now;
            log_dgram(now, DIR_UP, cp, cname, rxbuf, len, "lost");
            continue;
        }
        if (ci < 0) {
            int err = 0;
            ci = client_create(&ss, sl, now, &err);
            if (ci == -1) {
                st[DIR_UP].drop++;
                log_dgram(now, DIR_UP, NULL, cname, rxbuf, len, "drop");
                if (!full_logged || now - last_full_log > 1000000000LL) {
                    full_logged = 1;
                    last_full_log = now;
                    log_line(now, "error %s table-full %d", cname,
                             cfg.max_clients);
                    fprintf(stderr, PROG ": client table full (%d), "
                            "dropping datagrams from new clients\n",
                            cfg.max_clients);
                }
                continue;
            }
            if (ci == -2) {
                st[DIR_UP].drop++;
                log_dgram(now, DIR_UP, NULL, cname, rxbuf, len, "drop");
                log_line(now, "error %s socket %s", cname, errname(err));
                continue;
            }
        }
        struct client *c = &clients[ci];
        c->last_active = now;
        int is_reset = len > 0 && ((rxbuf[0] >> 3) == 7 || (rxbuf[0] >> 3) == 10);
        if (is_reset)
            c->sent_reset = 1;
        if (cfg.drop_first_up >= 0 && !dropped_first && len > 0 &&
            (rxbuf[0] >> 3) == cfg.drop_first_up) {
            dropped_first = 1;
            if (cfg.hold_first && (c->held = malloc(len)) != NULL) {
                memcpy(c->held, rxbuf, len);
                c->held_len = len;
                log_dgram(now, DIR_UP, c, NULL, rxbuf, len, "held");
                continue;
            }
            st[DIR_UP].drop++;
            log_dgram(now, DIR_UP, c, NULL, rxbuf, len, "first");
            continue;
        }
        if (c->held && !is_reset && len > 0 && (rxbuf[0] >> 3) == cfg.drop_first_up) {
            /* its retransmissions are lost while it is held */
            st[DIR_UP].drop++;
            log_dgram(now, DIR_UP, c, NULL, rxbuf, len, "lost");
            continue;
        }
        if (is_reset && c->held && cfg.hold_first == 1)
            release_held(c, ci, now);
        if (enqueue(DIR_UP, ci, rxbuf, len, now + cfg.delay_ns[DIR_UP]) < 0) {
            st[DIR_UP].drop++;
            log_dgram(now, DIR_UP, c, NULL, rxbuf, len, "drop");
            continue;
        }
        log_dgram(now, DIR_UP, c, NULL, rxbuf, len, NULL);
        if (is_reset && c->held)
            release_held(c, ci, now);
    }
}

static void upstream_readable(int ci)
{
    for (int n = 0; n < RX_BURST; n++) {
        struct client *c = &clients[ci];
        ssize_t r = recv(c->fd, rxbuf, sizeof rxbuf, MSG_TRUNC);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            if (errno == EINTR)
                continue;
            /* ICMP error (server down, ...): note it and go on */
            log_line(now_ns(), "icmp %s %s", c->name, errname(errno));
            continue;
        }
        int64_t now = now_ns();
        size_t len = (size_t)r > sizeof rxbuf ? sizeof rxbuf : (size_t)r;
        st[DIR_DOWN].rx++;
        if (cfg.blackhole) {
            st[DIR_DOWN].blackholed++;
            log_dgram(now, DIR_DOWN, c, NULL, rxbuf, len, "blackhole");
            continue;
        }
        c->last_active = now;
        if (cfg.drop_unasked_resets && len > 0 && (rxbuf[0] >> 3) == 8 &&
            !c->sent_reset) {
            st[DIR_DOWN].drop++;
            log_dgram(now, DIR_DOWN, c, NULL, rxbuf, len, "unasked");
            continue;
        }
        if (rng_lose(DIR_DOWN)) {
            st[DIR_DOWN].lost++;
            log_dgram(now, DIR_DOWN, c, NULL, rxbuf, len, "lost");
            continue;
        }
        if (enqueue(DIR_DOWN, ci, rxbuf, len, now + cfg.delay_ns[DIR_DOWN]) < 0) {
            st[DIR_DOWN].drop++;
            log_dgram(now, DIR_DOWN, c, NULL, rxbuf, len, "drop");
            continue;
        }
        log_dgram(now, DIR_DOWN, c, NULL, rxbuf, len, NULL);
    }
}

static void expire_idle(int64_t now)
{
    int64_t limit = (int64_t)(cfg.idle_timeout_s * 1e9);
    for (int i = 0; i < cfg.max_clients; i++) {
        struct client *c = &clients[i];
        if (c->used && c->pending == 0 && now - c->last_active >= limit) {
            log_line(now, "expire %s %u", c->name, c->uport);
            client_remove(i);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* setup                                                                    */

static void on_signal(int sig)
{
    switch (sig) {
    case SIGTERM:
    case SIGINT:  sig_term = 1; break;
    case SIGUSR1: sig_usr1 = 1; break;
    case SIGUSR2: sig_usr2 = 1; break;
    case SIGHUP:  sig_hup = 1; break;
    default: break;
    }
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: " PROG " --listen ADDR:PORT --upstream ADDR:PORT [options]\n"
"\n"
"UDP relay adding delay / loss / blackhole / NAT rebinding between clients\n"
"and one UDP server. Addresses are numeric: 127.0.0.1:1194, [::1]:1194.\n"
"\n"
"  -l, --listen ADDR:PORT      address clients send to (port 0 = ephemeral)\n"
"  -u, --upstream ADDR:PORT    the server\n"
"  -d, --delay MS              one-way delay in each direction (default 0)\n"
"      --delay-up MS           client->server delay (overrides --delay)\n"
"      --delay-down MS         server->client delay (overrides --delay)\n"
"  -L, --loss PCT              drop probability per datagram, each direction\n"
"      --loss-up PCT           client->server loss (overrides --loss)\n"
"      --loss-down PCT         server->client loss (overrides --loss)\n"
"  -s, --seed N                PRNG seed for loss (default: time based)\n"
"  -b, --blackhole             forward nothing, answer nothing (dead host);\n"
"                              SIGUSR2 toggles this at run time\n"
"      --rebind-after-packets N  rebind each client once, after its Nth\n"
"                              forwarded client->server datagram\n"
"      --drop-unasked-resets   drop a server's reset (OpenVPN opcode 8) to a\n"
"                              client that sent no reset (opcode 7 or 10):\n"
"                              a server that does not answer a third packet\n"
"                              with a new challenge\n"
"      --drop-first-up OPCODE  drop the first client datagram with this\n"
"                              OpenVPN opcode (0-31), once per run, e.g. 4:\n"
"                              the first P_CONTROL_V1, to force a retransmit\n"
"      --hold-first-up OPCODE  hold that datagram instead (and lose its\n"
"                              retransmissions), send it up just before\n"
"                              the client's next reset (7 or 10)\n"
"      --hold-first-up-after OPCODE  the same, sent just after that reset\n"
"      --max-clients N         client table size (default 1024)\n"
"      --idle-timeout SEC      expire idle clients (default 300)\n"
"      --queue-limit BYTES     max queued bytes per direction (default 64MiB)\n"
"      --log FILE              per-datagram log (truncated at start)\n"
"      --pidfile FILE          written once the sockets are bound\n"
"  -q, --quiet                 no informational messages\n"
"  -h, --help                  this help\n"
"  -V, --version               print version\n"
"\n"
"Signals: SIGUSR1 rebind all clients, SIGUSR2 toggle blackhole,\n"
"SIGHUP reopen log, SIGTERM/SIGINT exit.\n"
"Exit status: 0 ok, 1 runtime error, 2 bad arguments.\n");
}

enum {
    OPT_DELAY_UP = 256, OPT_DELAY_DOWN, OPT_LOSS_UP, OPT_LOSS_DOWN, OPT_LOG,
    OPT_PIDFILE, OPT_REBIND_AFTER, OPT_DROP_UNASKED, OPT_DROP_FIRST, OPT_HOLD_FIRST, OPT_HOLD_AFTER, OPT_MAX_CLIENTS, OPT_IDLE, OPT_QLIMIT
};

static void parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        { "listen", required_argument, NULL, 'l' },
        { "upstream", required_argument, NULL, 'u' },
        { "delay", required_argument, NULL, 'd' },
        { "delay-up", required_argument, NULL, OPT_DELAY_UP },
        { "delay-down", required_argument, NULL, OPT_DELAY_DOWN },
        { "loss", required_argument, NULL, 'L' },
        { "loss-up", required_argument, NULL, OPT_LOSS_UP },
        { "loss-down", required_argument, NULL, OPT_LOSS_DOWN },
        { "seed", required_argument, NULL, 's' },
        { "blackhole", no_argument, NULL, 'b' },
        { "log", required_argument, NULL, OPT_LOG },
        { "pidfile", required_argument, NULL, OPT_PIDFILE },
        { "rebind-after-packets", required_argument, NULL, OPT_REBIND_AFTER },
        { "drop-unasked-resets", no_argument, NULL, OPT_DROP_UNASKED },
        { "drop-first-up", required_argument, NULL, OPT_DROP_FIRST },
        { "hold-first-up", required_argument, NULL, OPT_HOLD_FIRST },
        { "hold-first-up-after", required_argument, NULL, OPT_HOLD_AFTER },
        { "max-clients", required_argument, NULL, OPT_MAX_CLIENTS },
        { "idle-timeout", required_argument, NULL, OPT_IDLE },
        { "queue-limit", required_argument, NULL, OPT_QLIMIT },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    double delay = 0, delay_dir[2] = { -1, -1 };
    double loss = 0, loss_dir[2] = { -1, -1 };
    int have_listen = 0, have_up = 0, have_seed = 0;
    const char *why;
    int c;

    cfg.max_clients = 1024;
    cfg.drop_first_up = -1;
    cfg.idle_timeout_s = 300;
    cfg.queue_limit = 64u << 20;

    while ((c = getopt_long(argc, argv, "l:u:d:L:s:bqhV", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (parse_hostport(optarg, 1, &cfg.listen_addr, &cfg.listen_len, &why))
                usage_error("--listen: bad address '%s': %s", optarg, why);
            have_listen = 1;
            break;
        case 'u':
            if (parse_hostport(optarg, 0, &cfg.up_addr, &cfg.up_len, &why))
                usage_error("--upstream: bad address '%s': %s", optarg, why);
            have_up = 1;
            break;
        case 'd':
            delay = parse_double_opt("--delay", optarg, 0, MAX_DELAY_MS);
            break;
        case OPT_DELAY_UP:
            delay_dir[DIR_UP] = parse_double_opt("--delay-up", optarg, 0, MAX_DELAY_MS);
            break;
        case OPT_DELAY_DOWN:
            delay_dir[DIR_DOWN] = parse_double_opt("--delay-down", optarg, 0, MAX_DELAY_MS);
            break;
        case 'L':
            loss = parse_double_opt("--loss", optarg, 0, 100);
            break;
        case OPT_LOSS_UP:
            loss_dir[DIR_UP] = parse_double_opt("--loss-up", optarg, 0, 100);
            break;
        case OPT_LOSS_DOWN:
            loss_dir[DIR_DOWN] = parse_double_opt("--loss-down", optarg, 0, 100);
            break;
        case 's':
            cfg.seed = parse_u64_opt("--seed", optarg, 0, UINT64_MAX);
            have_seed = 1;
            break;
        case 'b':
            cfg.blackhole = 1;
            break;
        case OPT_LOG:
            if (!*optarg)
                usage_error("--log: empty file name");
            cfg.log_path = optarg;
            break;
        case OPT_PIDFILE:
            if (!*optarg)
                usage_error("--pidfile: empty file name");
            cfg.pidfile = optarg;
            break;
        case OPT_DROP_UNASKED:
            cfg.drop_unasked_resets = 1;
            break;
        case OPT_DROP_FIRST:
            cfg.drop_first_up = (int)parse_u64_opt("--drop-first-up", optarg, 0, 31);
            break;
        case OPT_HOLD_FIRST:
            cfg.drop_first_up = (int)parse_u64_opt("--hold-first-up", optarg, 0, 31);
            cfg.hold_first = 1;
            break;
        case OPT_HOLD_AFTER:
            cfg.drop_first_up = (int)parse_u64_opt("--hold-first-up-after", optarg, 0, 31);
            cfg.hold_first = 2;
            break;
        case OPT_REBIND_AFTER:
            cfg.rebind_after = parse_u64_opt("--rebind-after-packets", optarg,
                                             1, UINT64_MAX);
            break;
        case OPT_MAX_CLIENTS:
            cfg.max_clients = (int)parse_u64_opt("--max-clients", optarg, 1, 65536);
            break;
        case OPT_IDLE:
            cfg.idle_timeout_s = parse_double_opt("--idle-timeout", optarg,
                                                  0.001, 86400.0 * 365);
            break;
        case OPT_QLIMIT:
            cfg.queue_limit = (size_t)parse_u64_opt("--queue-limit", optarg,
                                                    65536, (uint64_t)SIZE_MAX / 2);
            break;
        case 'q':
            cfg.quiet = 1;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        case 'V':
            printf(PROG " " VERSION "\n");
            exit(0);
        default:
            /* getopt already printed what was wrong */
            fprintf(stderr, "Try '" PROG " --help' for more information.\n");
            exit(EXIT_USAGE);
        }
    }
    if (optind < argc)
        usage_error("unexpected argument '%s'", argv[optind]);
    if (!have_listen)
        usage_error("--listen ADDR:PORT is required");
    if (!have_up)
        usage_error("--upstream ADDR:PORT is required");

    for (int d = 0; d < 2; d++) {
        double ms = delay_dir[d] >= 0 ? delay_dir[d] : delay;
        cfg.delay_ns[d] = llround(ms * 1e6);
        double pct = loss_dir[d] >= 0 ? loss_dir[d] : loss;
        cfg.loss[d] = pct / 100.0;
    }
    if (!have_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        cfg.seed = ((uint64_t)ts.tv_sec * 1000000007ULL) ^ (uint64_t)ts.tv_nsec ^
                   ((uint64_t)getpid() << 32);
    }
    snprintf(cfg.listen_arg, sizeof cfg.listen_arg, "%s", "");
    format_addr((struct sockaddr *)&cfg.up_addr, cfg.up_len, cfg.up_arg,
                sizeof cfg.up_arg);
}

static void write_pidfile(void)
{
    char tmp[4096];
    if (!cfg.pidfile)
        return;
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", cfg.pidfile, (int)getpid()) >=
        (int)sizeof tmp)
        die("pidfile name too long");
    FILE *f = fopen(tmp, "w");
    if (!f)
        die("cannot write pidfile '%s': %s", tmp, strerror(errno));
    fprintf(f, "%d\n", (int)getpid());
    if (fclose(f) != 0 || rename(tmp, cfg.pidfile) != 0) {
        int e = errno;
        unlink(tmp);
        die("cannot write pidfile '%s': %s", cfg.pidfile, strerror(e));
    }
    pidfile_written = 1;
}

static void setup(void)
{
    /* enough descriptors for every client socket */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rlim_t want = (rlim_t)cfg.max_clients + 32;
        if (rl.rlim_cur < want) {
            rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
            (void)setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    /* accurate ppoll() wakeups */
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

    clients = calloc((size_t)cfg.max_clients, sizeof *clients);
    freelist = calloc((size_t)cfg.max_clients, sizeof *freelist);
    unsigned nb = 16;
    while (nb < (unsigned)cfg.max_clients * 2)
        nb <<= 1;
    hbuckets = malloc(nb * sizeof *hbuckets);
    if (!clients || !freelist || !hbuckets)
        die("out of memory");
    hmask = nb - 1;
    for (unsigned i = 0; i < nb; i++)
        hbuckets[i] = -1;
    for (int i = cfg.max_clients - 1; i >= 0; i--) {
        clients[i].fd = -1;
        freelist[nfree++] = i;
    }
    rng_state[DIR_UP] = cfg.seed ^ 0x5555555555555555ULL;
    rng_state[DIR_DOWN] = cfg.seed ^ 0xAAAAAAAAAAAAAAAAULL;

    listen_fd = socket(cfg.listen_addr.ss_family,
                       SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd < 0)
        die("socket: %s", strerror(errno));
    set_bufs(listen_fd, 4 << 20, 4 << 20);
    if (bind(listen_fd, (struct sockaddr *)&cfg.listen_addr, cfg.listen_len) < 0) {
        char a[ADDRSTR_LEN];
        format_addr((struct sockaddr *)&cfg.listen_addr, cfg.listen_len, a, sizeof a);
        die("cannot bind %s: %s", a, strerror(errno));
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(listen_fd, (struct sockaddr *)&ss, &sl) == 0)
        format_addr((struct sockaddr *)&ss, sl, cfg.listen_arg, sizeof cfg.listen_arg);

    /* a socket towards the server must be possible at all (catches e.g. an
     * IPv6 upstream on a host without IPv6) */
    unsigned p;
    int tfd = open_upstream(&p);
    if (tfd < 0) {
        die("cannot open a socket towards upstream %s: %s", cfg.up_arg,
            strerror(errno));
    }
    close(tfd);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigset_t block;
    sigemptyset(&block);
    int sigs[] = { SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        sigaction(sigs[i], &sa, NULL);
        sigaddset(&block, sigs[i]);
    }
    signal(SIGPIPE, SIG_IGN);
    sigprocmask(SIG_BLOCK, &block, NULL);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    t_start = now_ns();
    open_log("w");
    setup();

    log_line(now_ns(), "start %s %s delay_up_ms=%.3f delay_down_ms=%.3f "
             "loss_up=%g loss_down=%g seed=%" PRIu64 " blackhole=%d "
             "rebind_after=%" PRIu64,
             cfg.listen_arg, cfg.up_arg, cfg.delay_ns[DIR_UP] / 1e6,
             cfg.delay_ns[DIR_DOWN] / 1e6, cfg.loss[DIR_UP] * 100,
             cfg.loss[DIR_DOWN] * 100, cfg.seed, cfg.blackhole,
             cfg.rebind_after);
    write_pidfile();
    if (!cfg.quiet) {
        printf("ready pid=%d listen=%s upstream=%s\n", (int)getpid(),
               cfg.listen_arg, cfg.up_arg);
        fflush(stdout);
    }

    sigset_t waitmask;
    sigprocmask(SIG_BLOCK, NULL, &waitmask);
    sigdelset(&waitmask, SIGTERM);
    sigdelset(&waitmask, SIGINT);
    sigdelset(&waitmask, SIGUSR1);
    sigdelset(&waitmask, SIGUSR2);
    sigdelset(&waitmask, SIGHUP);

    struct pollfd *pfd = calloc((size_t)cfg.max_clients + 1, sizeof *pfd);
    int *pmap = calloc((size_t)cfg.max_clients + 1, sizeof *pmap);
    if (!pfd || !pmap)
        die("out of memory");
    int64_t check_interval = 1000000000LL;
    if (cfg.idle_timeout_s < 1.0)
        check_interval = (int64_t)(cfg.idle_timeout_s * 1e9 / 2) + 1;
    int64_t next_expire = now_ns() + check_interval;

    while (!sig_term) {
        int64_t now = now_ns();
        if (sig_usr1) {
            sig_usr1 = 0;
            rebind_all(now);
        }
        if (sig_usr2) {
            sig_usr2 = 0;
            cfg.blackhole = !cfg.blackhole;
            log_line(now, "blackhole %s", cfg.blackhole ? "on" : "off");
        }
        if (sig_hup) {
            sig_hup = 0;
            open_log("a");
            log_line(now, "reopen");
        }

        flush_due(now);
        if (now >= next_expire) {
            expire_idle(now);
            next_expire = now + check_interval;
        }

        int64_t wake = INT64_MAX;
        for (int d = 0; d < 2; d++)
            if (queues[d].head && queues[d].head->due < wake)
                wake = queues[d].head->due;
        if (nclients > 0 && next_expire < wake)
            wake = next_expire;

        int n = 0;
        pfd[n].fd = listen_fd;
        pfd[n].events = POLLIN;
        pmap[n++] = -1;
        for (int i = 0; i < cfg.max_clients; i++) {
            if (clients[i].used) {
                pfd[n].fd = clients[i].fd;
                pfd[n].events = POLLIN;
                pmap[n++] = i;
            }
        }

        struct timespec ts, *tsp = NULL;
        if (wake != INT64_MAX) {
            int64_t dt = wake - now_ns();
            if (dt < 0)
                dt = 0;
            /* Long timer sleeps can overshoot in proportion to their length
             * (seen: ~0.13% on a Firecracker VM, i.e. 0.4 ms late for 300 ms).
             * Sleep in stages so that the final stage is short (< 2 ms) and
             * therefore accurate; costs 2-3 extra wakeups per due time. */
            if (dt > 2000000)
                dt = dt - dt / 32 - 500000;
            ts.tv_sec = (time_t)(dt / 1000000000LL);
            ts.tv_nsec = (long)(dt % 1000000000LL);
            tsp = &ts;
        }
        int r = ppoll(pfd, (nfds_t)n, tsp, &waitmask);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("ppoll: %s", strerror(errno));
        }
        if (r == 0)
            continue;
        now = now_ns();
        if (pfd[0].revents)
            listen_readable();
        for (int k = 1; k < n; k++)
            if (pfd[k].revents && clients[pmap[k]].used &&
                clients[pmap[k]].fd == pfd[k].fd)
                upstream_readable(pmap[k]);
    }

    int64_t now = now_ns();
    log_line(now, "exit up_rx=%" PRIu64 " up_fwd=%" PRIu64 " up_lost=%" PRIu64
             " up_drop=%" PRIu64 " down_rx=%" PRIu64 " down_fwd=%" PRIu64
             " down_lost=%" PRIu64 " down_drop=%" PRIu64
             " late_avg_us=%.1f late_max_us=%.1f",
             st[0].rx, st[0].fwd, st[0].lost, st[0].drop,
             st[1].rx, st[1].fwd, st[1].lost, st[1].drop,
             (st[0].fwd + st[1].fwd) ?
                 (st[0].late_sum_ns + st[1].late_sum_ns) / 1e3 /
                 (double)(st[0].fwd + st[1].fwd) : 0.0,
             (st[0].late_max_ns > st[1].late_max_ns ? st[0].late_max_ns
                                                    : st[1].late_max_ns) / 1e3);
    info("exit: up rx=%" PRIu64 " fwd=%" PRIu64 " lost=%" PRIu64 " drop=%"
         PRIu64 " blackholed=%" PRIu64 "; down rx=%" PRIu64 " fwd=%" PRIu64
         " lost=%" PRIu64 " drop=%" PRIu64 " blackholed=%" PRIu64,
         st[0].rx, st[0].fwd, st[0].lost, st[0].drop, st[0].blackholed,
         st[1].rx, st[1].fwd, st[1].lost, st[1].drop, st[1].blackholed);
    free_queues();
    for (int i = 0; i < cfg.max_clients; i++)
        if (clients[i].used)
            client_remove(i);
    close(listen_fd);
    if (pidfile_written)
        unlink(cfg.pidfile);
    if (g_log)
        fclose(g_log);
    free(pfd);
    free(pmap);
    free(clients);
    free(freelist);
    free(hbuckets);
    return 0;
}

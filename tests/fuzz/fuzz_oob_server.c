/*
 * libFuzzer target: a UDP server's handling of one datagram from an
 * address without an instance, i.e. the stateless path of mudp.c itself:
 * the file is compiled in (like fuzz_oob_client.c does with oob_client.c,
 * see fuzz_server_stubs.c), and the harness calls its static
 * handle_oob_packet() for an out-of-band opcode and do_pre_decrypt_check()
 * for any other, the way multi_get_create_instance_udp() does.
 * That runs the server's real code end to end: probe_reply_possible()
 * (--server-probe-reply off, --max-clients), tls_pre_decrypt_lite() with
 * the server's tls_auth_standalone, and for an out-of-band verdict
 * send_probe_reply(): oob_server_check_probe_drop(), the
 * --server-probe-budget (oob_budget_take()),
 * tls_oob_probe_reply(), the bound of three times the probe's size,
 * send_standalone_reply() and the probe counters; for a client's hard
 * reset the HMAC-cookie reset reply (send_hmac_reset_packet()).  Every
 * wrap mode: none, tls-auth, tls-crypt, tls-crypt-v2.  Only the socket
 * is left out: the harness reads the reply where send_standalone_reply()
 * queues it (m->hmac_reply).
 *
 * Input:
 *   byte 0     bits 0-1  wrap mode (enum fuzz_wrap)
 *              bit 2     0: the rest is the datagram as received
 *                        1: the rest is a session id and a payload, which
 *                           the harness wraps with the client's key of the
 *                           mode (tls_oob_standalone()) before the server
 *                           gets it, so that the parser behind the MAC/AEAD
 *                           sees arbitrary payloads in every mode
 *              bit 3     the datagram comes from an IPv6 address
 *              bit 4     (wrapped) use the other OOB opcode than the
 *                        mode's own (OOB_V1 <-> OOB_WKC_V1)
 *              bit 5     --server-probe-reply off
 *              bit 6     the server is full (--max-clients reached)
 *              bit 7     the --server-probe-budget and the
 *                        --connect-freq-initial limit are used up
 *   bytes 1-4  the server's clock, `now` (UNIX time, big endian)
 *   byte 5     --hand-window - 1
 *   bytes 6-7  source port
 *   bytes 8-   raw: the datagram; wrapped: session id (8) then payload
 *
 * Besides the sanitizers and the leak check:
 *   - a queued PROBE_REPLY is a P_CONTROL_OOB_V1 packet whose session id
 *     is the HMAC cookie for the probe, that unwraps with the client's key
 *     of the mode and decodes to a PROBE_REPLY that echoes the probe's
 *     session id and carries the configured values; it is at most three
 *     times the datagram's size; it answers an out-of-band datagram only,
 *     never while off, full or rate limited;
 *   - a queued hard reset answers a client's hard reset only and carries
 *     the HMAC cookie;
 *   - an out-of-band datagram moves exactly one counter of
 *     m->probe_stats by one (answered, or the first drop reason that
 *     applies: off, full, wrap, ...), any other datagram none; "answered"
 *     moves exactly when a reply is queued (master: sent).
 *
 * On master (-DFUZZ_BASE_MASTER) the same path, with master's API: the
 * cookie is SipHash with c2.session_id_key, handle_oob_packet() and
 * do_pre_decrypt_check() take the socket the datagram came in on, and send_standalone_reply() sends
 * at once through process_outgoing_link() instead of queueing in
 * m->hmac_reply: the harness defines process_outgoing_link() to keep
 * what would be sent (and checks that it goes to c2.from, on the socket
 * of the probe, once per datagram).  The checks are the same.
 */
#include "fuzz_peers.h"

/* the code under test, with its static functions */
#include "mudp.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_mock_init(void);

#define HDR_LEN 8

static struct fuzz_peer peers[FW_N];
#ifdef FUZZ_BASE_MASTER
#define COOKIE_KEY fuzz_cookie_key
#else
static hmac_ctx_t *cookie_hmac;
#define COOKIE_KEY cookie_hmac
#endif
static struct multi_context m;
static struct context_buffers buffers;
static struct hash no_instances;

/* what the server advertises (--server-probe-reply 25 70 10) */
static const struct oob_server_conf conf = {
    .off = false, .max_latency_diff = 25, .weight = 70, .priority = 10
};

/* -DFUZZ_DEBUG: say what happened to each input */
#ifdef FUZZ_DEBUG
#define TRACE(...) fprintf(stderr, "fuzz_oob_server: " __VA_ARGS__)
#else
#define TRACE(...) do { } while (0)
#endif

#define CHECK(cond) do { if (!(cond)) { \
                             fprintf(stderr, "fuzz_oob_server: check failed: %s (line %d)\n", \
                                     #cond, __LINE__); abort(); } } while (0)

#ifdef FUZZ_BASE_MASTER
/* what master's send_standalone_reply() hands to process_outgoing_link()
 * for the datagram: a copy of c2.to_link, where to and on which socket */
static struct buffer sent;
static const struct link_socket_actual *sent_to;
static const struct link_socket *sent_sock;
/* the server's socket the datagrams come in on */
static struct link_socket server_sock;

/* forward.c: instead of the socket, keep what would be sent */
void
process_outgoing_link(struct context *c, struct link_socket *sock)
{
    /* one datagram gets one reply at most */
    CHECK(sent_to == NULL);
    sent = alloc_buf(BLEN(&c->c2.to_link));
    ASSERT(buf_copy(&sent, &c->c2.to_link));
    sent_to = c->c2.to_link_addr;
    sent_sock = sock;
}

#define REPLY      (&sent)
#define REPLY_DEST sent_to
#else  /* ifdef FUZZ_BASE_MASTER */
/* 2.6's send_standalone_reply() queues the reply */
#define REPLY      (&m.hmac_reply)
#define REPLY_DEST m.hmac_reply_dest
#endif /* ifdef FUZZ_BASE_MASTER */

static void
init_once(void)
{
    static bool done;
    if (done)
    {
        return;
    }
    done = true;
    fuzz_mock_init();
    for (int w = 0; w < FW_N; w++)
    {
        fuzz_peer_init(&peers[w], w);
    }

    /* the parts of the server's multi_context the stateless path uses */
    CLEAR(m);
#ifdef FUZZ_BASE_MASTER
    memcpy(m.top.c2.session_id_key, fuzz_cookie_key, sizeof(m.top.c2.session_id_key));
    server_sock.info.proto = PROTO_UDP;
#else
    cookie_hmac = fuzz_cookie_hmac();
    m.top.c2.session_id_hmac = cookie_hmac;
#endif
    m.top.c2.buffers = &buffers;
    /* init_context_buffers(): the server's frame */
    buffers.aux_buf = alloc_buf(BUF_SIZE(&peers[0].server.frame));
    m.hash = &no_instances;
}

/* the unwrapped reply as the client of this mode would read it
 * (oob_client.c), or false */
static bool
unwrap_reply(struct fuzz_peer *p, const struct buffer *reply,
             const struct link_socket_actual *from, struct buffer *out)
{
    *out = alloc_buf(BLEN(reply) + 256);
    ASSERT(buf_init(out, 128));
    ASSERT(buf_copy(out, reply));
    struct tls_wrap_ctx ctx = p->client.tls_wrap;
    return read_control_auth(out, &ctx, from, NULL);
}

static void
check_probe_reply(struct fuzz_peer *p, const struct buffer *reply,
                  const struct tls_pre_decrypt_state *state,
                  const struct link_socket_actual *from, int handwindow)
{
    CHECK(BLEN(reply) >= 1 + SID_SIZE);
    struct session_id cookie = calculate_session_id_hmac(state->peer_session_id,
                                                         &from->dest, COOKIE_KEY,
                                                         handwindow, 0);
    CHECK(memcmp(BPTR(reply) + 1, cookie.id, SID_SIZE) == 0);

    struct buffer buf;
    CHECK(unwrap_reply(p, reply, from, &buf));
    struct oob_probe_reply got;
    CHECK(oob_read_probe_reply(&buf, &got) == OOB_OK);
    CHECK(memcmp(got.peer_session_id.id, state->peer_session_id.id, SID_SIZE) == 0);
    CHECK(got.priority == conf.priority && got.weight == conf.weight
          && got.max_latency_diff == conf.max_latency_diff);
    free_buf(&buf);
}

static uint64_t
stats_sum(const struct oob_server_stats *s)
{
    uint64_t sum = s->answered;
    for (int i = 0; i < OOB_DROP_N; i++)
    {
        sum += s->dropped[i];
    }
    return sum;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    if (size < HDR_LEN)
    {
        return 0;
    }

    struct fuzz_peer *p = &peers[data[0] & 3];
    bool wrapped = data[0] & 4;
    bool ipv6 = data[0] & 8;
    bool other_op = data[0] & 16;
    bool off = data[0] & 32;
    bool full = data[0] & 64;
    bool limited = data[0] & 128;
    now = (time_t)(((uint32_t)data[1] << 24) | ((uint32_t)data[2] << 16)
                   | ((uint32_t)data[3] << 8) | data[4]);
    int handwindow = data[5] + 1;
    uint16_t port = (uint16_t)((data[6] << 8) | data[7]);
    data += HDR_LEN;
    size -= HDR_LEN;

    struct link_socket_actual from;
    CLEAR(from);
    if (ipv6)
    {
        from.dest.addr.in6.sin6_family = AF_INET6;
        from.dest.addr.in6.sin6_port = htons(port);
        inet_pton(AF_INET6, "2001:db8::42", &from.dest.addr.in6.sin6_addr);
    }
    else
    {
        from.dest.addr.in4.sin_family = AF_INET;
        from.dest.addr.in4.sin_port = htons(port);
        from.dest.addr.in4.sin_addr.s_addr = htonl(0xc0000242);
    }

    struct buffer pkt;
    if (wrapped)
    {
        if (size < SID_SIZE)
        {
            return 0;
        }
        struct session_id sid;
        memcpy(sid.id, data, SID_SIZE);
        uint8_t op = p->probe_op;
        if (other_op)
        {
            op = op == P_CONTROL_OOB_V1 ? P_CONTROL_OOB_WKC_V1 : P_CONTROL_OOB_V1;
        }
        struct buffer payload;
        buf_set_read(&payload, data + SID_SIZE, size - SID_SIZE);

        /* every probe of the client's standalone wrap starts afresh, so
         * that an input always gives the same packet */
        reset_packet_id_send(&p->client.tls_wrap.opt.packet_id.send);
        struct buffer w = tls_oob_standalone(&p->client.tls_wrap, &p->client,
                                             &sid, (uint8_t)(op << P_OPCODE_SHIFT),
                                             &payload);
        if (BLEN(&w) == 0)
        {
            return 0;
        }
        pkt = fuzz_datagram(BPTR(&w), BLEN(&w), p->server.frame.buf.headroom);
    }
    else
    {
        pkt = fuzz_datagram(data, size, p->server.frame.buf.headroom);
    }
    /* multi_get_create_instance_udp() calls do_pre_decrypt_check() only
     * for a datagram of at least one byte */
    if (BLEN(&pkt) == 0)
    {
        free_buf(&pkt);
        return 0;
    }
    int op = *BPTR(&pkt) >> P_OPCODE_SHIFT;
    int pkt_len = BLEN(&pkt);

    /* the server as this input configures it; every input starts from
     * the same state (a fresh rate limiter, no queued reply) */
    m.top.c2.tls_auth_standalone = &p->server;
    m.top.c2.buf = pkt;
    m.top.c2.from = from;
    m.top.options.handshake_window = handwindow;
    m.probe_reply = conf;
    m.probe_reply.off = off;
    m.max_clients = 16;
    no_instances.n_elements = full ? m.max_clients : 0;
    /* --connect-freq-initial 100 10 (the default), or used up */
    m.initial_rate_limiter = initial_rate_limit_init(100, 10);
    /* initial_rate_limit_init() leaves this uninitialised (malloc); in a
     * server the first check resets it, since there `now` (UNIX time) is
     * always past the first period, here `now` can be 0 */
    m.initial_rate_limiter->warning_displayed = false;
    if (limited)
    {
        /* 100 initial packets in this period already */
        for (int i = 0; i < 100; i++)
        {
            ASSERT(reflect_filter_rate_limit_check(m.initial_rate_limiter));
        }
    }
    /* --server-probe-budget 10000 1 (the default), or spent in this
     * period */
    oob_budget_init(&m.probe_budget, OOB_DEFAULT_BUDGET, OOB_DEFAULT_BUDGET_PERIOD);
    if (limited)
    {
        m.probe_budget.start = now;
        m.probe_budget.used = m.probe_budget.max;
    }
#ifdef FUZZ_BASE_MASTER
    free_buf(&sent);
    sent_to = NULL;
    sent_sock = NULL;
#else
    CLEAR(m.hmac_reply);
    m.hmac_reply_dest = NULL;
#endif
    struct oob_server_stats before = m.probe_stats;

    /* multi_get_create_instance_udp(): no instance for this address */
    struct tls_pre_decrypt_state state = { 0 };
    struct mroute_addr real;
    CLEAR(real);
    bool create = false;
    if (packet_opcode_is_oob(op))
    {
        /* handle_oob_packet() keeps its unwrapping state to itself: the
         * probe's session id, which the reply must echo, is in the clear
         * after the opcode in every wrap mode */
        if (pkt_len >= 1 + SID_SIZE)
        {
            memcpy(state.peer_session_id.id, BPTR(&pkt) + 1, SID_SIZE);
        }
#ifdef FUZZ_BASE_MASTER
        handle_oob_packet(&m, &server_sock);
#else
        handle_oob_packet(&m);
#endif
    }
    else
    {
        /* handle_connection_attempt() */
#ifdef FUZZ_BASE_MASTER
        create = do_pre_decrypt_check(&m, &state, real, &server_sock);
#else
        create = do_pre_decrypt_check(&m, &state, real);
#endif
    }

    const struct buffer *reply = REPLY;
    uint64_t moved = stats_sum(&m.probe_stats) - stats_sum(&before);
    bool answered = m.probe_stats.answered != before.answered;
    TRACE("mode %s, %s, op %d, create %d, reply %d bytes, counters moved %d\n",
          fuzz_wrap_name[data[-HDR_LEN] & 3], wrapped ? "wrapped" : "raw", op,
          create, BLEN(reply), (int)moved);

    if (packet_opcode_is_oob(op))
    {
        /* counted once, under one reason (oob.h enum oob_drop) */
        CHECK(moved == 1);
        CHECK(!create);
        CHECK(answered == (BLEN(reply) > 0));
        if (off)
        {
            CHECK(m.probe_stats.dropped[OOB_DROP_OFF] == before.dropped[OOB_DROP_OFF] + 1);
        }
        else if (full)
        {
            CHECK(m.probe_stats.dropped[OOB_DROP_FULL] == before.dropped[OOB_DROP_FULL] + 1);
        }
        if (answered)
        {
            CHECK(!off && !full && !limited);
            CHECK(BLEN(reply) <= 3 * pkt_len);
            CHECK(REPLY_DEST == &m.top.c2.from);
#ifdef FUZZ_BASE_MASTER
            CHECK(sent_sock == &server_sock);
#endif
            CHECK(*BPTR(reply) == (P_CONTROL_OOB_V1 << P_OPCODE_SHIFT));
            check_probe_reply(p, reply, &state, &from, handwindow);
        }
    }
    else
    {
        CHECK(moved == 0);
        if (BLEN(reply) > 0)
        {
            /* the HMAC cookie reset, for a client's hard reset, or for a
             * third packet whose cookie was made for another address (the
             * NAT rebind answer): only when probes are answered, never
             * larger than that packet */
            CHECK(op == P_CONTROL_HARD_RESET_CLIENT_V2
                  || op == P_CONTROL_HARD_RESET_CLIENT_V3
                  || op == P_CONTROL_V1 || op == P_CONTROL_WKC_V1);
            if (op == P_CONTROL_V1 || op == P_CONTROL_WKC_V1)
            {
                CHECK(!off);
                CHECK(BLEN(reply) <= pkt_len);
            }
            CHECK(!create);
            CHECK(*BPTR(reply) == (P_CONTROL_HARD_RESET_SERVER_V2 << P_OPCODE_SHIFT));
            CHECK(BLEN(reply) >= 1 + SID_SIZE);
            struct session_id cookie = calculate_session_id_hmac(state.peer_session_id,
                                                                 &from.dest, COOKIE_KEY,
                                                                 handwindow, 0);
            CHECK(memcmp(BPTR(reply) + 1, cookie.id, SID_SIZE) == 0);
        }
    }

    /* multi_get_create_instance_udp() */
    free_tls_pre_decrypt_state(&state);
    initial_rate_limit_free(m.initial_rate_limiter);
    m.initial_rate_limiter = NULL;
#ifdef FUZZ_BASE_MASTER
    free_buf(&sent);
    sent_to = NULL;
    sent_sock = NULL;
#else
    CLEAR(m.hmac_reply);
#endif
    free_buf(&pkt);
    CLEAR(m.top.c2.buf);
    return 0;
}

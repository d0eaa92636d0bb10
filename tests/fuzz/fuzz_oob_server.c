/*
 * libFuzzer target: a UDP server's handling of one datagram on the
 * stateless path, for the out-of-band server probe.
 *
 * What mudp.c does for a packet from an address without an instance:
 * tls_pre_decrypt_lite() with the server's tls_auth_standalone, and for a
 * VERDICT_VALID_OOB_* verdict what send_probe_reply() does:
 * oob_server_check_probe() on state.newbuf, tls_oob_probe_reply(), the
 * bound of three times the probe's size; then free_tls_pre_decrypt_state().
 * (The rate limiter and the socket are left out.)  Every wrap mode: none,
 * tls-auth, tls-crypt, tls-crypt-v2.
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
 *   bytes 1-4  the server's clock, `now` (UNIX time, big endian)
 *   byte 5     --hand-window - 1
 *   bytes 6-7  source port
 *   bytes 8-   raw: the datagram; wrapped: session id (8) then payload
 *
 * Besides the sanitizers and the leak check, every reply the server
 * builds is checked: it is a P_CONTROL_OOB_V1 packet whose session id is
 * the HMAC cookie for the probe, it unwraps with the client's key of the
 * mode and decodes to a PROBE_REPLY that echoes the probe's session id.
 */
#include "fuzz_peers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_mock_init(void);

#define HDR_LEN 8

static struct fuzz_peer peers[FW_N];
static hmac_ctx_t *cookie_hmac;

/* -DFUZZ_DEBUG: say what happened to each input */
#ifdef FUZZ_DEBUG
#define TRACE(...) fprintf(stderr, "fuzz_oob_server: " __VA_ARGS__)
#else
#define TRACE(...) do { } while (0)
#endif

#define CHECK(cond) do { if (!(cond)) { \
                             fprintf(stderr, "fuzz_oob_server: check failed: %s (line %d)\n", \
                                     #cond, __LINE__); abort(); } } while (0)

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
    cookie_hmac = fuzz_cookie_hmac();
}

/* the reply, as the client of this mode would read it (oob_client.c) */
static void
check_reply(struct fuzz_peer *p, const struct buffer *reply,
            const struct tls_pre_decrypt_state *state,
            const struct link_socket_actual *from, int handwindow)
{
    CHECK(BLEN(reply) >= 1 + SID_SIZE);
    CHECK(*BPTR(reply) == (P_CONTROL_OOB_V1 << P_OPCODE_SHIFT));

    struct session_id cookie = calculate_session_id_hmac(state->peer_session_id,
                                                         &from->dest, cookie_hmac,
                                                         handwindow, 0);
    CHECK(memcmp(BPTR(reply) + 1, cookie.id, SID_SIZE) == 0);

    struct buffer buf = alloc_buf(BLEN(reply) + 256);
    ASSERT(buf_init(&buf, 128));
    ASSERT(buf_copy(&buf, reply));
    struct tls_wrap_ctx ctx = p->client.tls_wrap;
    CHECK(read_control_auth(&buf, &ctx, from, NULL));
    struct oob_probe_reply got;
    CHECK(oob_read_probe_reply(&buf, &got) == OOB_OK);
    CHECK(memcmp(got.peer_session_id.id, state->peer_session_id.id, SID_SIZE) == 0);
    free_buf(&buf);
}

/* mudp.c send_probe_reply(), without the rate limiter and the socket */
static void
probe_reply(struct fuzz_peer *p, struct tls_pre_decrypt_state *state,
            const struct link_socket_actual *from, int probe_len,
            int handwindow, bool with_wkc)
{
    const char *why = oob_server_check_probe(&state->newbuf, now, handwindow);
    if (why)
    {
        TRACE("not answered: %s\n", why);
        return;
    }

    struct oob_probe_reply values = {
        .priority = 10,
        .weight = 70,
        .max_latency_diff = 25,
        .connect_lifetime =
            oob_connect_lifetime(session_id_hmac_slot_length(handwindow)),
        .flags = with_wkc ? OOB_REPLY_FLAG_RESEND_WKC : 0,
    };
    struct buffer buf = tls_oob_probe_reply(state, &p->server, &from->dest,
                                            cookie_hmac, handwindow, &values);
    if (BLEN(&buf) == 0 || BLEN(&buf) > 3 * probe_len)
    {
        TRACE("not answered: reply of %d bytes for %d\n", BLEN(&buf), probe_len);
        return;
    }
    TRACE("answered: %d bytes for %d\n", BLEN(&buf), probe_len);
    /* what send_standalone_reply() would send */
    check_reply(p, &buf, state, from, handwindow);
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

    /* mudp.c do_pre_decrypt_check() */
    struct tls_pre_decrypt_state state = { 0 };
    enum first_packet_verdict verdict =
        tls_pre_decrypt_lite(&p->server, &state, &from, &pkt);
    TRACE("mode %s, %s, verdict %d\n", fuzz_wrap_name[data[-HDR_LEN] & 3],
          wrapped ? "wrapped" : "raw", verdict);
    if (verdict == VERDICT_VALID_OOB_V1 || verdict == VERDICT_VALID_OOB_WKC_V1)
    {
        probe_reply(p, &state, &from, BLEN(&pkt), handwindow,
                    verdict == VERDICT_VALID_OOB_WKC_V1);
    }
    /* multi_get_create_instance_udp() */
    free_tls_pre_decrypt_state(&state);
    free_buf(&pkt);
    return 0;
}

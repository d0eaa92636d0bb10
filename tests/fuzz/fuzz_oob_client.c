/*
 * libFuzzer target: a probing client's handling of one datagram on its
 * probe socket, i.e. oob_client.c's oob_client_receive() itself (the file
 * is compiled in, see fuzz_client_stubs.c): the source address selects
 * the targets, read_control_auth() with the target entry's wrapping,
 * oob_read_probe_reply(), oob_target_accept() against the probes the
 * target was sent (oob_target_sent()).  Every wrap mode: none, tls-auth,
 * tls-crypt, tls-crypt-v2.
 *
 * On master (-DFUZZ_BASE_MASTER) the probe I/O is oob_probe.c, and the
 * same function is oob_probe_receive(), with struct oob_probe_run,
 * oob_probe_target and oob_probe_entry: the harness uses the names
 * fuzz_run, fuzz_target, fuzz_entry and fuzz_receive() for either.
 *
 * Input:
 *   byte 0     bits 0-1  wrap mode of the target (enum fuzz_wrap)
 *              bit 2     0: the rest is the datagram as received
 *                        1: the rest is a header session id and a payload,
 *                           which the harness wraps like a server's reply
 *                           in the target's mode (tls_oob_standalone() with
 *                           the server's key; for tls-crypt-v2 the client
 *                           key the server took from a probe), so that
 *                           the parser behind the MAC/AEAD sees arbitrary
 *                           payloads in every mode
 *              bit 3     the target is an IPv6 address
 *              bit 4     a second target with the same address, of a
 *                        second entry, wrap mode in bits 5-6 (two remotes
 *                        that resolve to the same address)
 *   byte 1     bits 0-1  number of probes sent to each target - 1
 *   bytes 2-5  when the reply arrives, in us after the first probe
 *   bytes 6-   raw: the datagram; wrapped: session id (8) then payload
 *
 * The datagram is handled twice (a duplicate).  Besides the sanitizers
 * and the leak check: an accepted reply must echo the session id of the
 * probe it is recorded for and carry none of ours as its own, the RTT
 * must be the time since that probe, a duplicate must change nothing,
 * and (wrapped) a reply that decodes and echoes one of our session ids
 * must be accepted.
 */
#include "fuzz_peers.h"

/* the code under test, with its static functions */
#ifdef FUZZ_BASE_MASTER
#include "oob_probe.c"
#define fuzz_run     oob_probe_run
#define fuzz_target  oob_probe_target
#define fuzz_entry   oob_probe_entry
#define fuzz_receive oob_probe_receive
#else  /* ifdef FUZZ_BASE_MASTER */
#include "oob_client.c"
#define fuzz_run     oob_client_run
#define fuzz_target  oob_client_target
#define fuzz_entry   oob_client_entry
#define fuzz_receive oob_client_receive
#endif /* ifdef FUZZ_BASE_MASTER */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_mock_init(void);

#define HDR_LEN 6
#define T0_US ((int64_t)1000000000000)  /* the probe phase's start */
#define MAX_DATAGRAM 2048                /* oob_client_read()'s buffer (master:
                                          * oob_probe_read()'s) */

static struct fuzz_peer peers[FW_N];
/* the server's side of tls-crypt-v2: its wrapping after it took the
 * client key out of a probe */
static struct tls_pre_decrypt_state v2_server_state;

/* -DFUZZ_DEBUG: say what happened to each input */
#ifdef FUZZ_DEBUG
#define TRACE(...) fprintf(stderr, "fuzz_oob_client: " __VA_ARGS__)
#else
#define TRACE(...) do { } while (0)
#endif

#define CHECK(cond) do { if (!(cond)) { \
                             fprintf(stderr, "fuzz_oob_client: check failed: %s (line %d)\n", \
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

    /* a tls-crypt-v2 probe, so that the server side has the client key */
    struct fuzz_peer *p = &peers[FW_CRYPT_V2];
    uint8_t d[64];
    struct buffer payload;
    buf_set_write(&payload, d, sizeof(d));
    struct oob_probe probe = { .timestamp = 1700000000 };
    ASSERT(oob_write_probe(&payload, &probe, 0));
    struct session_id sid = {{ 1, 2, 3, 4, 5, 6, 7, 8 }};
    struct buffer pkt = tls_oob_standalone(&p->client.tls_wrap, &p->client, &sid,
                                           P_CONTROL_OOB_WKC_V1 << P_OPCODE_SHIFT,
                                           &payload);
    struct link_socket_actual from;
    CLEAR(from);
    ASSERT(tls_pre_decrypt_lite(&p->server, &v2_server_state, &from, &pkt)
           == VERDICT_VALID_OOB_WKC_V1);
}

static bool
is_own_sid(const struct oob_target_state *st, const struct session_id *sid)
{
    for (int k = 0; k < st->n_sent; k++)
    {
        if (memcmp(st->sid[k].id, sid->id, SID_SIZE) == 0)
        {
            return true;
        }
    }
    return false;
}

static void
check_target(const struct fuzz_target *t)
{
    const struct oob_target_state *st = &t->st;
    if (!st->answered)
    {
        return;
    }
    CHECK(st->answered_send >= 0 && st->answered_send < st->n_sent);
    CHECK(memcmp(st->reply.peer_session_id.id, st->sid[st->answered_send].id,
                 SID_SIZE) == 0);
    CHECK(!is_own_sid(st, &st->cookie));
    CHECK(st->rtt_us == st->reply_us - st->sent_us[st->answered_send]);
    /* the probes sent before the answered one count against it */
    CHECK(st->lost_us == st->sent_us[st->answered_send] - st->sent_us[0]);
    CHECK(oob_target_rank_rtt(st) == st->rtt_us + st->lost_us);
}

/* the reply a server in mode w would send: header sid + payload */
static struct buffer
wrap_reply(enum fuzz_wrap w, const struct session_id *cookie,
           const uint8_t *payload, size_t len)
{
    struct fuzz_peer *p = &peers[w];
    struct tls_wrap_ctx ctx = w == FW_CRYPT_V2 ? v2_server_state.tls_wrap_tmp
                              : p->server.tls_wrap;
    /* as tls_oob_probe_reply(): a stateless reply always has packet id 1 */
    reset_packet_id_send(&ctx.opt.packet_id.send);
    struct buffer pl;
    buf_set_read(&pl, payload, len);
    struct session_id sid = *cookie;
    return tls_oob_standalone(&ctx, &p->server, &sid,
                              P_CONTROL_OOB_V1 << P_OPCODE_SHIFT, &pl);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    if (size < HDR_LEN)
    {
        return 0;
    }

    enum fuzz_wrap w0 = data[0] & 3;
    bool wrapped = data[0] & 4;
    bool ipv6 = data[0] & 8;
    int n_targets = (data[0] & 16) ? 2 : 1;
    enum fuzz_wrap w1 = (data[0] >> 5) & 3;
    int n_sent = (data[1] & 3) + 1;
    int64_t at = T0_US + (int64_t)(((uint32_t)data[2] << 24) | ((uint32_t)data[3] << 16)
                                   | ((uint32_t)data[4] << 8) | data[5]);
    data += HDR_LEN;
    size -= HDR_LEN;

    /* the targets, as oob_client_resolve() and oob_client_send() (master:
     * oob_probe_resolve(), oob_probe_send()) leave them; the entries'
     * wrapping as standalone_wrap_init() sets it up */
    struct fuzz_entry entries[2];
    struct fuzz_target targets[2];
    struct standalone_wrap wraps[2];
    CLEAR(entries);
    CLEAR(targets);
    CLEAR(wraps);
    struct openvpn_sockaddr addr;
    CLEAR(addr);
    if (ipv6)
    {
        addr.addr.in6.sin6_family = AF_INET6;
        addr.addr.in6.sin6_port = htons(1194);
        inet_pton(AF_INET6, "2001:db8::1", &addr.addr.in6.sin6_addr);
    }
    else
    {
        addr.addr.in4.sin_family = AF_INET;
        addr.addr.in4.sin_port = htons(1194);
        addr.addr.in4.sin_addr.s_addr = htonl(0xc0000201);
    }
    for (int i = 0; i < n_targets; i++)
    {
        entries[i].index = i;
        wraps[i].tas = peers[i ? w1 : w0].client;
        entries[i].wrap = &wraps[i];
        targets[i].entry = &entries[i];
        targets[i].addr = addr;
        for (int k = 0; k < n_sent; k++)
        {
            struct session_id sid;
            fuzz_probe_sid(&sid, i, k);
            CHECK(oob_target_sent(&targets[i].st, &sid, T0_US + 300000 * k));
        }
    }
    struct fuzz_run run;
    CLEAR(run);
    run.targets = targets;
    run.n_targets = n_targets;
    run.sd4 = run.sd6 = SOCKET_UNDEFINED;
    run.start_us = T0_US;

    bool expect_accept = false;
    struct buffer pkt;
    if (wrapped)
    {
        if (size < SID_SIZE)
        {
            return 0;
        }
        struct session_id cookie;
        memcpy(cookie.id, data, SID_SIZE);
        struct buffer w = wrap_reply(w0, &cookie, data + SID_SIZE, size - SID_SIZE);
        if (BLEN(&w) == 0 || BLEN(&w) > MAX_DATAGRAM)
        {
            return 0;
        }
        pkt = fuzz_datagram(BPTR(&w), BLEN(&w), 0);

        /* would the first target take it? */
        struct buffer pl;
        buf_set_read(&pl, data + SID_SIZE, size - SID_SIZE);
        struct oob_probe_reply r;
        expect_accept = oob_read_probe_reply(&pl, &r) == OOB_OK
                        && is_own_sid(&targets[0].st, &r.peer_session_id)
                        && !is_own_sid(&targets[0].st, &cookie);
    }
    else
    {
        if (size > MAX_DATAGRAM)
        {
            return 0;
        }
        pkt = fuzz_datagram(data, size, 0);
    }

    fuzz_receive(&run, &pkt, &addr, at);
    TRACE("mode %s, %s, %d target(s): answered %d/%d, expected %d\n",
          fuzz_wrap_name[w0], wrapped ? "wrapped" : "raw", n_targets,
          targets[0].st.answered, targets[1].st.answered, expect_accept);
    for (int i = 0; i < n_targets; i++)
    {
        check_target(&targets[i]);
    }
    if (expect_accept)
    {
        CHECK(targets[0].st.answered);
    }

    /* the same datagram again changes nothing */
    struct oob_target_state before[2];
    memcpy(before, (struct oob_target_state[2]) { targets[0].st, targets[1].st },
           sizeof(before));
    fuzz_receive(&run, &pkt, &addr, at + 1000);
    for (int i = 0; i < n_targets; i++)
    {
        CHECK(memcmp(&before[i], &targets[i].st, sizeof(before[i])) == 0);
    }

    free_buf(&pkt);
    return 0;
}

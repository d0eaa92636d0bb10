/*
 * Writes the seed corpora of fuzz_oob_server and fuzz_oob_client: real,
 * validly wrapped packets in each wrap mode, built with the series' own
 * functions and the keys of fuzz_peers.h, in the input format of each
 * target (see the comments at the top of fuzz_oob_server.c and
 * fuzz_oob_client.c).  Deterministic: run it again and nothing changes.
 *
 *   gen_seeds <server corpus dir> <client corpus dir>
 *
 * tests/fuzz/run.sh --seeds builds and runs it; the output is committed
 * in tests/fuzz/corpus/.  Built for master (-DFUZZ_BASE_MASTER), it makes
 * the same seeds with master's functions (run.sh --seeds then writes them
 * to $FUZZ_OUT/seeds/): they differ from 2.6's only in the server's
 * cookies in the client seeds, which the client does not check.
 */
#include "fuzz_peers.h"

#include <stdio.h>

void fuzz_mock_init(void);

#define NOW 1700000000u
#define HANDWINDOW 60

static const char *server_dir, *client_dir;

static void
put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void
write_seed(const char *dir, const char *name, const uint8_t *hdr, size_t hdr_len,
           const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(hdr, 1, hdr_len, f) != hdr_len
        || (a_len && fwrite(a, 1, a_len, f) != a_len)
        || (b_len && fwrite(b, 1, b_len, f) != b_len)
        || fclose(f))
    {
        perror(path);
        exit(1);
    }
}

/* fuzz_oob_server's 8 header bytes */
static void
server_hdr(uint8_t *h, int mode, bool wrapped, bool ipv6, uint32_t now_)
{
    h[0] = (uint8_t)(mode | (wrapped ? 4 : 0) | (ipv6 ? 8 : 0));
    put_u32(h + 1, now_);
    h[5] = HANDWINDOW - 1;
    h[6] = 0x9c;                /* port 40000 */
    h[7] = 0x40;
}

/* a SERVER_PROBE payload; variant 0: plain, 1: padded like our client
 * does it, 2: with an optional unknown TLV */
static struct buffer
probe_payload(uint8_t *d, size_t cap, uint64_t ts, int variant)
{
    struct buffer b;
    buf_set_write(&b, d, cap);
    struct oob_probe probe = { .timestamp = ts };
    ASSERT(oob_write_probe(&b, &probe,
                           variant == 1 ? OOB_PROBE_REPLY_LEN - OOB_PROBE_LEN : 0));
    if (variant == 2)
    {
        static const uint8_t x[3] = { 1, 2, 3 };
#ifdef FUZZ_BASE_MASTER
        /* master has no oob_write_tlv(): the same bytes */
        ASSERT(buf_write_u16(&b, OOB_TLV_OPTIONAL | 0x7abc)
               && buf_write_u16(&b, sizeof(x))
               && buf_write(&b, x, sizeof(x)));
#else
        ASSERT(oob_write_tlv(&b, OOB_TLV_OPTIONAL | 0x7abc, x, sizeof(x)));
#endif
    }
    return b;
}

static void
server_seeds(struct fuzz_peer *peers)
{
    for (int m = 0; m < FW_N; m++)
    {
        struct fuzz_peer *p = &peers[m];
        char name[128];
        uint8_t h[8];
        for (int v = 0; v < 3; v++)
        {
            uint8_t d[64];
            struct buffer pl = probe_payload(d, sizeof(d), NOW - 5, v);
            struct session_id sid;
            fuzz_probe_sid(&sid, m, v);

            /* the probe as the client sends it */
            reset_packet_id_send(&p->client.tls_wrap.opt.packet_id.send);
            now = NOW - 5;
            struct buffer pkt = tls_oob_standalone(&p->client.tls_wrap, &p->client,
                                                   &sid, p->probe_op << P_OPCODE_SHIFT,
                                                   &pl);
            ASSERT(BLEN(&pkt) > 0);
            server_hdr(h, m, false, v == 2, NOW);
            snprintf(name, sizeof(name), "probe-%s-%d", fuzz_wrap_name[m], v);
            write_seed(server_dir, name, h, sizeof(h), BPTR(&pkt), BLEN(&pkt), NULL, 0);

            /* the payload, for the harness to wrap */
            server_hdr(h, m, true, false, NOW);
            snprintf(name, sizeof(name), "payload-%s-%d", fuzz_wrap_name[m], v);
            write_seed(server_dir, name, h, sizeof(h), sid.id, SID_SIZE,
                       BPTR(&pl), BLEN(&pl));
        }

        /* a client's hard reset, for the other verdicts */
        struct session_id own, remote;
        fuzz_probe_sid(&own, m, 9);
        CLEAR(remote);
        int op = m == FW_CRYPT_V2 ? P_CONTROL_HARD_RESET_CLIENT_V3
                 : P_CONTROL_HARD_RESET_CLIENT_V2;
        reset_packet_id_send(&p->client.tls_wrap.opt.packet_id.send);
        struct buffer pkt = tls_reset_standalone(&p->client.tls_wrap, &p->client,
                                                 &own, &remote,
                                                 (uint8_t)(op << P_OPCODE_SHIFT),
                                                 false);
        ASSERT(BLEN(&pkt) > 0);
        server_hdr(h, m, false, false, NOW);
        snprintf(name, sizeof(name), "reset-%s", fuzz_wrap_name[m]);
        write_seed(server_dir, name, h, sizeof(h), BPTR(&pkt), BLEN(&pkt), NULL, 0);
    }
}

/* fuzz_oob_client's 6 header bytes */
static void
client_hdr(uint8_t *h, int mode, bool wrapped, bool ipv6, int second_mode,
           int n_sent, uint32_t at_us)
{
    h[0] = (uint8_t)(mode | (wrapped ? 4 : 0) | (ipv6 ? 8 : 0)
                     | (second_mode >= 0 ? 16 | (second_mode << 5) : 0));
    h[1] = (uint8_t)(n_sent - 1);
    put_u32(h + 2, at_us);
}

#ifdef FUZZ_BASE_MASTER
static void
client_seeds(struct fuzz_peer *peers, const uint8_t *cookie_key)
#else
static void
client_seeds(struct fuzz_peer *peers, hmac_ctx_t *cookie_key)
#endif
{
    struct link_socket_actual from;
    CLEAR(from);
    from.dest.addr.in4.sin_family = AF_INET;
    from.dest.addr.in4.sin_port = htons(40000);
    from.dest.addr.in4.sin_addr.s_addr = htonl(0xc0000242);

    for (int m = 0; m < FW_N; m++)
    {
        struct fuzz_peer *p = &peers[m];
        char name[128];
        uint8_t h[6];
        for (int k = 0; k < 3; k++)
        {
            /* the client's k-th probe to target 0, answered by the server
             * with the series' stateless reply */
            uint8_t d[64];
            struct buffer pl = probe_payload(d, sizeof(d), NOW, 1);
            struct session_id sid;
            fuzz_probe_sid(&sid, 0, k);
            now = NOW;
            reset_packet_id_send(&p->client.tls_wrap.opt.packet_id.send);
            struct buffer probe = tls_oob_standalone(&p->client.tls_wrap, &p->client,
                                                     &sid, p->probe_op << P_OPCODE_SHIFT,
                                                     &pl);
            struct buffer in = fuzz_datagram(BPTR(&probe), BLEN(&probe),
                                             p->server.frame.buf.headroom);
            struct tls_pre_decrypt_state state = { 0 };
            enum first_packet_verdict v = tls_pre_decrypt_lite(&p->server, &state,
                                                               &from, &in);
            ASSERT(v == VERDICT_VALID_OOB_V1 || v == VERDICT_VALID_OOB_WKC_V1);
#ifdef FUZZ_BASE_MASTER
            ASSERT(oob_server_check_probe(&state.newbuf, now, HANDWINDOW, NULL) == OOB_DROP_NONE);
#else
            ASSERT(oob_server_check_probe(&state.newbuf, now, HANDWINDOW) == NULL);
#endif
            struct oob_probe_reply values = {
                .priority = 10, .weight = 70, .max_latency_diff = 25,
                .connect_lifetime = oob_connect_lifetime(session_id_hmac_slot_length(HANDWINDOW)),
                .flags = v == VERDICT_VALID_OOB_WKC_V1 ? OOB_REPLY_FLAG_RESEND_WKC : 0,
            };
            struct buffer reply = tls_oob_probe_reply(&state, &p->server, &from.dest,
                                                      cookie_key, HANDWINDOW, &values);
            ASSERT(BLEN(&reply) > 0);

            int second = k == 2 ? (m + 1) % FW_N : -1;
            client_hdr(h, m, false, false, second, k + 1, 20000 + 300000 * k);
            snprintf(name, sizeof(name), "reply-%s-%d", fuzz_wrap_name[m], k);
            write_seed(client_dir, name, h, sizeof(h), BPTR(&reply), BLEN(&reply),
                       NULL, 0);

            /* the reply's header sid and payload, for the harness to wrap */
            uint8_t rd[64];
            struct buffer rpl;
            buf_set_write(&rpl, rd, sizeof(rd));
            values.peer_session_id = sid;
            ASSERT(oob_write_probe_reply(&rpl, &values));
            client_hdr(h, m, true, k == 1, second, k + 1, 20000 + 300000 * k);
            snprintf(name, sizeof(name), "payload-%s-%d", fuzz_wrap_name[m], k);
            write_seed(client_dir, name, h, sizeof(h), BPTR(&reply) + 1, SID_SIZE,
                       BPTR(&rpl), BLEN(&rpl));

            free_tls_pre_decrypt_state(&state);
            free_buf(&in);
        }
    }
}

int
main(int argc, char **argv)
{
    if (argc != 3)
    {
        fprintf(stderr, "usage: %s <server corpus dir> <client corpus dir>\n", argv[0]);
        return 2;
    }
    server_dir = argv[1];
    client_dir = argv[2];
    fuzz_mock_init();

    struct fuzz_peer peers[FW_N];
    for (int m = 0; m < FW_N; m++)
    {
        fuzz_peer_init(&peers[m], m);
    }
    server_seeds(peers);
#ifdef FUZZ_BASE_MASTER
    client_seeds(peers, fuzz_cookie_key);
#else
    hmac_ctx_t *hmac = fuzz_cookie_hmac();
    client_seeds(peers, hmac);
#endif

    for (int m = 0; m < FW_N; m++)
    {
        fuzz_peer_free(&peers[m]);
    }
#ifndef FUZZ_BASE_MASTER
    hmac_ctx_cleanup(hmac);
    hmac_ctx_free(hmac);
#endif
    return 0;
}

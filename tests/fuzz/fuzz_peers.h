/*
 * A client and a server control channel wrapping in each of the four wrap
 * modes, set up like the daemon does it and like the unit tests in
 * tests/unit_tests/openvpn/test_pkt.c (init_tas_auth(), init_tas_crypt(),
 * init_oob_peers()), with the keys of test_pkt.c and tls_crypt_v2_keys.h.
 * Shared by the fuzz targets and the seed generator.  -DFUZZ_BASE_MASTER
 * (run.sh, for the master series): the cookie key is master's SipHash key.
 */
#ifndef FUZZ_PEERS_H
#define FUZZ_PEERS_H

#include "config.h"
#include "syshead.h"
#include "crypto.h"
#include "ssl_pkt.h"
#include "tls_crypt.h"
#include "reliable.h"
#include "oob.h"
#ifdef FUZZ_BASE_MASTER
#include "oob_server.h"
#include "siphash.h"
#endif

#include "tls_crypt_v2_keys.h"

enum fuzz_wrap {
    FW_NONE,            /* no --tls-auth/--tls-crypt */
    FW_AUTH,            /* --tls-auth, SHA1 (2.6's default --auth) */
    FW_CRYPT,           /* --tls-crypt */
    FW_CRYPT_V2,        /* --tls-crypt-v2: server key / client key + WKc */
    FW_N
};

static const char *const fuzz_wrap_name[FW_N] = {
    "none", "tls-auth", "tls-crypt", "tls-crypt-v2"
};

struct fuzz_peer {
    /* the server's c2.tls_auth_standalone, as tls_auth_standalone_init()
     * and do_init_frame_tls() make it */
    struct tls_auth_standalone server;
    /* the client's wrapping of a probed entry, as standalone_wrap_init()
     * in init.c makes it */
    struct tls_auth_standalone client;
    struct buffer wkc;          /* tls-crypt-v2 client: the wrapped key */
    uint8_t probe_op;           /* the client's probe opcode */
};

/* the test_pkt.c tls-auth / tls-crypt key */
static const char fuzz_static_key[] = "<tls-auth>\n"
                                      "-----BEGIN OpenVPN Static key V1-----\n"
                                      "37268ea8f95d7f71f9fb8fc03770c460\n"
                                      "daf714a483d815c013ce0a537efc18f2\n"
                                      "8f4f172669d9e6a413bac6741d8ea054\n"
                                      "00f49b7fd6326470f23798c606bf53d4\n"
                                      "de63ebc64ec59d57ce5d04d5b62e68b5\n"
                                      "3ca6e5354351097fa370446c4d269f18\n"
                                      "7bb6ae54af2dc70ff7317fe2f8754b82\n"
                                      "82aad4202f9fa42c8640245d883e2c54\n"
                                      "a0c1c489a036cf3a8964d8d289c1583b\n"
                                      "9447c262b1da5fd167a5d27bd5ac5143\n"
                                      "17bc2343a31a2efc38dd920d910375f5\n"
                                      "1c2e27f3afd36c49269da079f7ce466e\n"
                                      "bb0f9ad13e9bbb4665974e6bc24b513c\n"
                                      "5700393bf4a3e7f967e2f384069ac8a8\n"
                                      "e78b18b15604993fd16515cce9c0f3e4\n"
                                      "2b4126b999005ade802797b0eeb8b9e6\n"
                                      "-----END OpenVPN Static key V1-----\n"
                                      "</tls-auth>\n";

/* the --tls-mtu default */
#define FUZZ_TLS_MTU 1250

/* the server's frame as ssl.c's tls_init_control_channel_frame_parameters()
 * computes it */
static inline void
fuzz_server_frame(struct frame *frame)
{
    int overhead = 10 + max_int(tls_crypt_buf_overhead(),
                                packet_id_size(true) + OPENVPN_MAX_HMAC_SIZE)
                   + 3 + ACK_SIZE(RELIABLE_ACK_SIZE);
    CLEAR(*frame);
    frame->buf.payload_size = max_int(1500, FUZZ_TLS_MTU) + 100;
    frame->buf.headroom = overhead;
    frame->buf.tailroom = overhead;
    frame->tun_mtu = FUZZ_TLS_MTU;
}

static inline void
fuzz_peer_init(struct fuzz_peer *p, enum fuzz_wrap w)
{
    CLEAR(*p);
    p->probe_op = P_CONTROL_OOB_V1;

    /* server */
    struct tls_wrap_ctx *s = &p->server.tls_wrap;
    struct tls_wrap_ctx *c = &p->client.tls_wrap;
    struct key_type kt;
    switch (w)
    {
        case FW_NONE:
            break;

        case FW_AUTH:
            init_key_type(&kt, "none", "SHA1", true, false);
            s->mode = TLS_WRAP_AUTH;
            crypto_read_openvpn_key(&kt, &s->opt.key_ctx_bi, fuzz_static_key,
                                    true, KEY_DIRECTION_NORMAL,
                                    "Control Channel Authentication",
                                    "tls-auth", NULL);
            c->mode = TLS_WRAP_AUTH;
            crypto_read_openvpn_key(&kt, &c->opt.key_ctx_bi, fuzz_static_key,
                                    true, KEY_DIRECTION_INVERSE,
                                    "Control Channel Authentication",
                                    "tls-auth", NULL);
            break;

        case FW_CRYPT:
            s->mode = TLS_WRAP_CRYPT;
            tls_crypt_init_key(&s->opt.key_ctx_bi, &s->original_wrap_keydata,
                               fuzz_static_key, true, true);
            c->mode = TLS_WRAP_CRYPT;
            tls_crypt_init_key(&c->opt.key_ctx_bi, &c->original_wrap_keydata,
                               fuzz_static_key, true, false);
            break;

        case FW_CRYPT_V2:
            /* the server has only its server key (mode stays NONE, the
             * client key comes with each packet); the client wraps with
             * its client key and appends the WKc */
            tls_crypt_v2_init_server_key(&s->tls_crypt_v2_server_key, false,
                                         test_server_key, true);
            c->mode = TLS_WRAP_CRYPT;
            tls_crypt_v2_init_client_key(&c->opt.key_ctx_bi,
                                         &c->original_wrap_keydata, &p->wkc,
                                         test_client_key, true);
            c->tls_crypt_v2_wkc = &p->wkc;
            p->probe_op = P_CONTROL_OOB_WKC_V1;
            break;

        default:
            abort();
    }

    if (w != FW_NONE)
    {
        s->opt.flags |= CO_PACKET_ID_LONG_FORM;
        c->opt.flags |= CO_PACKET_ID_LONG_FORM;
    }
    /* tls_auth_standalone_init() / standalone_wrap_init(): no replay
     * state, but the packet ids are read and written */
    s->opt.flags |= CO_IGNORE_PACKET_ID;
    c->opt.flags |= CO_IGNORE_PACKET_ID;
    packet_id_init(&s->opt.packet_id, 64, 15, "TAS", 0);
    packet_id_init(&c->opt.packet_id, 64, 15, "STANDALONE", 0);

    fuzz_server_frame(&p->server.frame);
    p->server.workbuf = alloc_buf(BUF_SIZE(&p->server.frame));
    s->work = alloc_buf(BUF_SIZE(&p->server.frame));

    int size = FUZZ_TLS_MTU + TLS_CRYPT_V2_MAX_WKC_LEN + 256;
    p->client.frame.buf.headroom = 128;
    p->client.frame.buf.payload_size = FUZZ_TLS_MTU;
    p->client.workbuf = alloc_buf(size);
    c->work = alloc_buf(size);
}

static inline void
fuzz_peer_free(struct fuzz_peer *p)
{
    for (int i = 0; i < 2; i++)
    {
        struct tls_auth_standalone *t = i ? &p->client : &p->server;
        packet_id_free(&t->tls_wrap.opt.packet_id);
        free_key_ctx_bi(&t->tls_wrap.opt.key_ctx_bi);
        free_key_ctx(&t->tls_wrap.tls_crypt_v2_server_key);
        free_buf(&t->workbuf);
        free_buf(&t->tls_wrap.work);
    }
    free_buf(&p->wkc);
    CLEAR(*p);
}

#ifdef FUZZ_BASE_MASTER
/* a fixed SipHash key for the server's cookies, so that runs are
 * repeatable (siphash_key_init() takes a random one); master computes
 * the cookie with SipHash and keeps the key in c2.session_id_key */
static const uint8_t fuzz_cookie_key[SIPHASH_KEY_SIZE] = {
    'o', 'o', 'b', '-', 'p', 'r', 'o', 'b', 'e', ' ', 'c', 'o', 'o', 'k', 'i', 'e'
};
#else
/* a fixed HMAC key for the server's cookies, so that runs are repeatable
 * (session_id_hmac_init() takes a random one) */
static inline hmac_ctx_t *
fuzz_cookie_hmac(void)
{
    static const uint8_t key[32] = "oob-server-probe fuzz cookie key";
    hmac_ctx_t *h = hmac_ctx_new();
    hmac_ctx_init(h, key, "SHA256");
    return h;
}
#endif

/* a received datagram as the event loop has it: data at an offset (the
 * frame's headroom) and, unlike the real receive buffer, no room after
 * it, so that ASan sees every read past the end of the datagram */
static inline struct buffer
fuzz_datagram(const uint8_t *data, size_t len, int headroom)
{
    struct buffer b = alloc_buf(headroom + len);
    ASSERT(buf_init(&b, headroom));
    ASSERT(buf_write(&b, data, len));
    return b;
}

/* the session id of the k-th probe (0..) the client sent to target t */
static inline void
fuzz_probe_sid(struct session_id *sid, int t, int k)
{
    static const uint8_t base[SID_SIZE] = { 'p', 'r', 'o', 'b', 'e', 0, 0, 0 };
    memcpy(sid->id, base, SID_SIZE);
    sid->id[6] = (uint8_t)t;
    sid->id[7] = (uint8_t)(k + 1);
}

#endif /* FUZZ_PEERS_H */

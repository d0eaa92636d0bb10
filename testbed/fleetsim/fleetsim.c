/*
 * fleetsim: a fleet simulator for what one machine cannot run (issue 25).
 *
 * 100 000 clients x 50 servers, event by event, with the series' own
 * ranking (oob_rank(), oob_entry order as the client uses it), the
 * server's own probe budget (oob_budget_take()) and load weight
 * (oob_load_weight()), compiled from the work tree of the master series
 * (testbed/fleetsim/build.sh).  Everything else is a model, with the costs
 * measured on this machine (testbed/bench.sh, testbed/bench-fleet.sh):
 *
 *  - a server is one core: every packet it answers waits in its queue;
 *    a probe reply or a cookie reset costs 13 us, a TLS handshake
 *    (ECDSA P-256, the third packet to "Initialization Sequence
 *    Completed") 1.5 ms of server CPU;
 *  - network: a client and a server in the same region 20 ms round trip,
 *    other regions 60-160 ms, +-10 % jitter per packet, no loss;
 *  - the unpatched client (2.6.14, --remote-random or config order):
 *    sends its reset, retransmits it after 2, 4, 8, 16 s while it gets no
 *    answer, gives up on a server after --hand-window 60 s, waits
 *    --connect-retry 1 s, and takes the next remote;
 *  - the server's handshake budget (--connect-freq-initial 100 10): a
 *    reset is answered while the period's count is below the limit; a
 *    completed handshake gives its unit back (as upstream does);
 *  - a full server (--max-clients) answers resets but drops the third
 *    packet, and does not answer probes;
 *  - the probing client: probes every server at once, resends at 300
 *    and 650 ms, ends the phase when every server answered or at 1 s,
 *    ranks the replies with oob_rank() (margin: the client's own, else
 *    the server's max-latency-diff, else 10 ms), starts the handshake at
 *    the third packet with the first server, falls back to a normal
 *    handshake after max(2 s, 4 RTT + 0.5 s) (at most 5 s), and after
 *    --hand-window 60 s moves to the next remote of the ranking; when the
 *    reset of a normal handshake (the fallback's or any other) is
 *    answered and its third packet is not (a full server), the client
 *    gives up on the server
 *    after --tls-timeout 2 s + 2 RTT + 2 s (whole seconds, at most 5 s:
 *    the master series' rule), waits the restart's 1 s and takes the
 *    next remote of the ranking ("probe-pre" has neither the budget nor
 *    this rule);
 *  - "pre" is the series before issue 25: probes spend the handshake
 *    budget (a probe to a spent budget gets no reply);
 *  - every probing client has --remote-random (what a provider's list of
 *    many remotes uses): the servers that did not answer keep a random
 *    order, as for the unpatched client with --remote-random.
 *
 * Where the model ends: no packet loss, no kernel socket buffers (a
 * server's queue is unbounded, so a flood shows up as delay, not as
 * drops), no DNS, no TLS failures, no client CPU, one probe phase per
 * client (no memory across runs), no keepalive or data traffic, servers
 * do not crash mid-run except as the scenario says.
 *
 * Scenarios:
 *   outage    the clients of region 0's servers (a fifth of the fleet) lose
 *             them: those servers go down, the clients come back within
 *             --spread seconds and need one of the others;
 *   herd      every client starts within --spread seconds (a cold start);
 *   drain     like herd, one server advertises priority 200 (drained);
 *   restart   like outage, but region 0's servers come back empty at once,
 *             the others are at 80 % of --max-clients;
 *   silent    like herd, one server stops answering anything.
 *
 * --margin MS: the max-latency-diff the servers advertise (default 0:
 * the clients' 10 ms); --spread S: the herd arrives within S seconds;
 * --regions N (default 5; 1: every client and server in one place, as in
 * testbed/bench-fleet.sh).
 *
 * Output: one JSON object per variant (time to connect, clients per
 * server against the advertised share, peak replies per server per
 * second).
 */

#include "config.h"
#include "syshead.h"
#include "oob_rank.h"
#include "oob_server.h"

#include <math.h>

#define MAXS 64

enum variant { V_STOCK_RANDOM, V_STOCK_ORDER, V_PRE, V_PROBE, V_PROBE_LOAD };
static const char *variant_names[] = { "stock-random", "stock-order", "probe-pre", "probe", "probe-load" };

enum ev_type { EV_START, EV_PROBE_AT_SERVER, EV_REPLY_AT_CLIENT, EV_PHASE_END,
               EV_RESET_AT_SERVER, EV_COOKIE_AT_CLIENT, EV_THIRD_AT_SERVER,
               EV_CONNECTED, EV_RETX, EV_GIVEUP, EV_FALLBACK, EV_REFUSED };

struct ev { double t; int type, c, s, gen; uint16_t w, p; int aux; };


static struct ev *heap;
static size_t heap_n, heap_cap;

static int push_aux;

static void
push(double t, int type, int c, int s, int gen, uint16_t w, uint16_t p)
{
    if (heap_n == heap_cap)
    {
        heap_cap = heap_cap ? heap_cap * 2 : 1 << 16;
        heap = realloc(heap, heap_cap * sizeof(*heap));
        if (!heap)
        {
            abort();
        }
    }
    size_t i = heap_n++;
    struct ev e = { t, type, c, s, gen, w, p, push_aux };
    push_aux = 0;
    while (i > 0 && heap[(i - 1) / 2].t > t)
    {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = e;
}

static struct ev
pop(void)
{
    struct ev top = heap[0], last = heap[--heap_n];
    size_t i = 0;
    for (;;)
    {
        size_t l = 2 * i + 1, m = i;
        if (l < heap_n && heap[l].t < last.t)
        {
            m = l;
        }
        if (l + 1 < heap_n && heap[l + 1].t < (m == i ? last.t : heap[m].t))
        {
            m = l + 1;
        }
        if (m == i)
        {
            break;
        }
        heap[i] = heap[m];
        i = m;
    }
    if (heap_n)
    {
        heap[i] = last;
    }
    return top;
}

/* xorshift64*: the simulator's randomness, and the ranking's */
static uint64_t rng_state = 88172645463325252ULL;
static uint32_t
rnd32(void *ctx)
{
    (void)ctx;
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ULL) >> 32);
}
static double
rnd01(void)
{
    return rnd32(NULL) / 4294967296.0;
}

struct server
{
    int region, up, clients, max_clients, load;
    uint16_t prio, weight, margin;
    double cpu_free;
    int64_t hs_count, hs_max;
    double hs_start;
    int hs_period;
    struct oob_budget budget;
    int64_t replies_in_sec, peak_replies, sec;
    int64_t dropped_probe, dropped_reset, taken;
};

struct client
{
    int region, pos, n_order, connected, gen, answered, server;
    int order[MAXS];
    double start, t_connected, attempt_start, phase_start;
    struct oob_rank_entry e[MAXS];
    int retx;
    int shortcut;
    double fell_back; /* watched handshake: when its reset went out (0: none) */
    int refused;      /* times it gave up on a server that filled up */
    uint64_t full;    /* the servers it gave up on since its last pass */
};

static struct server srv[MAXS];
static struct client *cli;
static int n_srv, n_cli, n_regions = 5;
static double rtt_ms[8][8];
static enum variant var;

/* costs, seconds */
static double c_reply = 13e-6, c_tls = 1.5e-3;

static double
rtt(int c, int s)
{
    double base = rtt_ms[cli[c].region][srv[s].region] / 1000.0;
    return base * (0.9 + 0.2 * rnd01());
}

/* queue work on a server's core; returns when it is done */
static double
cpu(int s, double arrive, double cost)
{
    double start = arrive > srv[s].cpu_free ? arrive : srv[s].cpu_free;
    srv[s].cpu_free = start + cost;
    return srv[s].cpu_free;
}

static void
count_reply(int s, double t)
{
    int64_t sec = (int64_t)t;
    if (sec != srv[s].sec)
    {
        srv[s].sec = sec;
        srv[s].replies_in_sec = 0;
    }
    if (++srv[s].replies_in_sec > srv[s].peak_replies)
    {
        srv[s].peak_replies = srv[s].replies_in_sec;
    }
}

static bool
hs_budget_take(int s, double t)
{
    struct server *v = &srv[s];
    if (t > v->hs_start + v->hs_period)
    {
        v->hs_start = t;
        v->hs_count = 0;
    }
    v->hs_count++;
    return v->hs_count <= v->hs_max;
}

static int
full(int s)
{
    return srv[s].clients >= srv[s].max_clients;
}

static void
try_connect(int c, double t)
{
    struct client *k = &cli[c];
    if (k->pos >= k->n_order)
    {
        /* every remote failed: start over (the unpatched client waits
         * --connect-retry, the series probes again) */
        k->pos = 0;
        k->gen++;
        k->full = 0;
        if (var >= V_PRE)
        {
            push(t + 1.0, EV_START, c, 0, k->gen, 0, 0);
            return;
        }
        t += 1.0;
    }
    int s = k->order[k->pos];
    k->gen++;
    k->attempt_start = t;
    k->retx = 0;
    double r = rtt(c, s);
    if (k->shortcut && var >= V_PRE)
    {
        /* the third packet; the fallback after a few round trips */
        push(t + r / 2, EV_THIRD_AT_SERVER, c, s, k->gen, 0, 0);
        double fb = 4 * r + 0.5;
        fb = fb < 2 ? 2 : fb > 5 ? 5 : fb;
        push(t + fb, EV_FALLBACK, c, s, k->gen, 0, 0);
    }
    else
    {
        push(t + r / 2, EV_RESET_AT_SERVER, c, s, k->gen, 0, 0);
        push(t + 2, EV_RETX, c, s, k->gen, 0, 0);
        /* the series watches a normal handshake for a refused third
         * packet (tls_multi_watch_refusal()) */
        k->fell_back = var >= V_PROBE ? t : 0;
    }
    push(t + 60, EV_GIVEUP, c, s, k->gen, 0, 0);
}

/* when the probes are sent, as in oob_probe.c */
static const double sched[] = { 0, 0.3, 0.65 };

static void
start_client(int c, double t)
{
    struct client *k = &cli[c];
    k->gen++;
    if (var <= V_STOCK_ORDER)
    {
        for (int i = 0; i < n_srv; i++)
        {
            k->order[i] = i;
        }
        if (var == V_STOCK_RANDOM)
        {
            for (int i = n_srv - 1; i > 0; i--)
            {
                int j = (int)(rnd32(NULL) % (uint32_t)(i + 1));
                int x = k->order[i];
                k->order[i] = k->order[j];
                k->order[j] = x;
            }
        }
        k->n_order = n_srv;
        k->pos = 0;
        k->shortcut = 0;
        try_connect(c, t);
        return;
    }
    /* the probe phase */
    k->phase_start = t;
    k->answered = 0;
    memset(k->e, 0, sizeof(k->e[0]) * (size_t)n_srv);
    for (int s = 0; s < n_srv; s++)
    {
        for (int i = 0; i < 3; i++)
        {
            push(t + sched[i] + rtt(c, s) / 2, EV_PROBE_AT_SERVER, c, s, k->gen, (uint16_t)i, 0);
        }
    }
    push(t + 1.0, EV_PHASE_END, c, 0, k->gen, 0, 0);
}

static void
phase_end(int c, double t)
{
    struct client *k = &cli[c];
    struct oob_rng rng = { rnd32, NULL };
    int order[MAXS], perm[MAXS];
    struct oob_rank_entry e[MAXS];

    /* --remote-random shuffles the list before the phase: the servers
     * that did not answer keep that random order */
    for (int i = 0; i < n_srv; i++)
    {
        perm[i] = i;
    }
    for (int i = n_srv - 1; i > 0; i--)
    {
        int j = (int)(rnd32(NULL) % (uint32_t)(i + 1));
        int x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    for (int i = 0; i < n_srv; i++)
    {
        e[i] = k->e[perm[i]];
        if (var >= V_PROBE && (k->full >> perm[i]) & 1)
        {
            /* it took no new client in this pass (oob_client_rank()) */
            e[i].priority = UINT16_MAX;
            e[i].refused = e[i].refused || !e[i].answered;
        }
    }
    oob_rank(e, n_srv, -1, &rng, order);
    k->n_order = n_srv;
    for (int i = 0; i < n_srv; i++)
    {
        k->order[i] = perm[order[i]];
    }
    k->pos = 0;
    k->shortcut = k->e[order[0]].answered;
    k->gen++;
    try_connect(c, t);
}

struct stats
{
    double *times;
    int n;
};

static int
cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double load_others = 0.3;
static int srv_margin = 0;

static void
run(const char *scenario, double spread, int max_clients, double until)
{
    heap_n = 0;
    load_others = !strcmp(scenario, "restart") ? 0.5 : 0.3;
    rng_state = 88172645463325252ULL ^ (uint64_t)var * 0x9E3779B97F4A7C15ULL;
    int outage = !strcmp(scenario, "outage") || !strcmp(scenario, "restart");
    for (int s = 0; s < n_srv; s++)
    {
        struct server *v = &srv[s];
        memset(v, 0, sizeof(*v));
        v->region = s % n_regions;
        v->up = 1;
        v->max_clients = max_clients;
        v->prio = 100;
        v->weight = 50;
        v->load = var == V_PROBE_LOAD;
        v->margin = (uint16_t)srv_margin;
        v->hs_max = 100;
        v->hs_period = 10;
        v->hs_start = -100;
        v->sec = -1;
        oob_budget_init(&v->budget, OOB_DEFAULT_BUDGET, OOB_DEFAULT_BUDGET_PERIOD);
        /* the clients the others already have */
        if (outage)
        {
            v->clients = v->region == 0 ? 0 : (int)(load_others * max_clients);
            if (!strcmp(scenario, "outage") && v->region == 0)
            {
                v->up = 0;
            }
        }
    }
    if (!strcmp(scenario, "drain"))
    {
        srv[0].prio = 200;
    }
    if (!strcmp(scenario, "silent"))
    {
        srv[0].up = 0;
    }
    for (int c = 0; c < n_cli; c++)
    {
        memset(&cli[c], 0, sizeof(cli[c]));
        cli[c].region = c % n_regions;
        cli[c].start = spread * rnd01();
        cli[c].server = -1;
        push(cli[c].start, EV_START, c, 0, 0, 0, 0);
    }

    while (heap_n)
    {
        struct ev e = pop();
        if (e.t > until)
        {
            break;
        }
        struct client *k = &cli[e.c];
        struct server *v = &srv[e.s];
        switch (e.type)
        {
            case EV_START:
                if (!k->connected && e.gen == k->gen)
                {
                    start_client(e.c, e.t);
                }
                break;

            case EV_PROBE_AT_SERVER:
            {
                if (e.gen != k->gen || !v->up || full(e.s) || var <= V_STOCK_ORDER)
                {
                    break;
                }
                bool ok = var == V_PRE ? hs_budget_take(e.s, e.t)
                                       : oob_budget_take(&v->budget, (time_t)e.t);
                if (!ok)
                {
                    v->dropped_probe++;
                    break;
                }
                double done = cpu(e.s, e.t, c_reply);
                count_reply(e.s, done);
                uint16_t w = v->weight;
                if (v->load)
                {
                    /* oob_server_weight(): the free slots, and what is
                     * left of the handshake budget in its period */
                    w = oob_load_weight(v->max_clients, v->clients);
                    if (e.t <= v->hs_start + v->hs_period)
                    {
                        w = oob_budget_weight(w, v->hs_max, v->hs_count);
                    }
                }
                push_aux = e.w; /* which send it answers */
                push(done + rtt(e.c, e.s) / 2, EV_REPLY_AT_CLIENT, e.c, e.s, e.gen, w, v->prio);
                break;
            }

            case EV_REPLY_AT_CLIENT:
                if (e.gen != k->gen || k->e[e.s].answered)
                {
                    break;
                }
                k->e[e.s].answered = true;
                k->e[e.s].rtt_us = (uint32_t)((e.t - k->phase_start - sched[e.aux]) * 1e6);
                k->e[e.s].weight = e.w;
                k->e[e.s].priority = e.p;
                k->e[e.s].max_latency_diff = srv[e.s].margin;
                if (++k->answered == n_srv)
                {
                    k->gen++;
                    phase_end(e.c, e.t);
                }
                break;

            case EV_PHASE_END:
                if (e.gen == k->gen)
                {
                    phase_end(e.c, e.t);
                }
                break;

            case EV_RESET_AT_SERVER:
                if (e.gen != k->gen || !v->up)
                {
                    break;
                }
                if (!hs_budget_take(e.s, e.t))
                {
                    v->dropped_reset++;
                    break;
                }
                {
                    double done = cpu(e.s, e.t, c_reply);
                    count_reply(e.s, done);
                    push(done + rtt(e.c, e.s) / 2, EV_COOKIE_AT_CLIENT, e.c, e.s, e.gen, 0, 0);
                }
                break;

            case EV_COOKIE_AT_CLIENT:
                if (e.gen != k->gen)
                {
                    break;
                }
                k->retx = -1; /* answered: no more resets */
                if (k->fell_back > 0)
                {
                    /* the master series' check_shortcut_refused(), on
                     * whole-second clocks */
                    double rtt_s = floor(e.t) - floor(k->fell_back);
                    double wait = 2 * rtt_s + 2;
                    push(e.t + 2 + (wait > 5 ? 5 : wait), EV_REFUSED, e.c, e.s, e.gen, 0, 0);
                    k->fell_back = 0;
                }
                push(e.t + rtt(e.c, e.s) / 2, EV_THIRD_AT_SERVER, e.c, e.s, e.gen, 0, 0);
                break;

            case EV_THIRD_AT_SERVER:
                if (e.gen != k->gen || !v->up || full(e.s))
                {
                    break;
                }
                /* an instance: the handshake's CPU, then the rest of the
                 * handshake (about one more round trip) */
                v->clients++;
                if (v->hs_count > 0)
                {
                    v->hs_count--;
                }
                k->gen++;
                {
                    double done = cpu(e.s, e.t, c_tls);
                    push(done + rtt(e.c, e.s), EV_CONNECTED, e.c, e.s, k->gen, 0, 0);
                }
                break;

            case EV_CONNECTED:
                if (e.gen != k->gen)
                {
                    break;
                }
                k->connected = 1;
                k->t_connected = e.t;
                k->server = e.s;
                v->taken++;
                break;

            case EV_RETX:
                if (e.gen != k->gen || k->retx < 0)
                {
                    break;
                }
                k->retx++;
                push(e.t + rtt(e.c, e.s) / 2, EV_RESET_AT_SERVER, e.c, e.s, e.gen, 0, 0);
                push(e.t + 2.0 * (1 << (k->retx < 4 ? k->retx : 4)), EV_RETX, e.c, e.s, e.gen, 0, 0);
                break;

            case EV_FALLBACK:
                if (e.gen != k->gen)
                {
                    break;
                }
                /* a normal handshake with the same server */
                k->shortcut = 0;
                k->fell_back = var >= V_PROBE ? e.t : 0;
                k->gen++;
                k->retx = 0;
                push(e.t + rtt(e.c, e.s) / 2, EV_RESET_AT_SERVER, e.c, e.s, k->gen, 0, 0);
                push(e.t + 2, EV_RETX, e.c, e.s, k->gen, 0, 0);
                push(k->attempt_start + 60, EV_GIVEUP, e.c, e.s, k->gen, 0, 0);
                break;

            case EV_REFUSED:
                if (e.gen != k->gen)
                {
                    break;
                }
                /* a TLS error, as at the end of --hand-window; the
                 * ranking is stale: a new phase, the full server last
                 * (master series: "oob_client: probe again after a server
                 * took no new client") */
                k->refused++;
                k->shortcut = 0;
                k->full |= (uint64_t)1 << e.s;
                k->gen++;
                push(e.t + 1.0, EV_START, e.c, 0, k->gen, 0, 0);
                break;

            case EV_GIVEUP:
                if (e.gen != k->gen)
                {
                    break;
                }
                k->pos++;
                k->shortcut = 0;
                try_connect(e.c, e.t + 1.0);
                break;
        }
    }

    /* report */
    double *t = malloc(sizeof(double) * (size_t)n_cli);
    int n = 0;
    for (int c = 0; c < n_cli; c++)
    {
        if (cli[c].connected)
        {
            t[n++] = cli[c].t_connected - cli[c].start;
        }
    }
    qsort(t, (size_t)n, sizeof(double), cmpd);
    int64_t peak = 0, taken_min = INT64_MAX, taken_max = 0;
    double share_min = 1e9, share_max = 0;
    int64_t wsum = 0;
    int live = 0;
    for (int s = 0; s < n_srv; s++)
    {
        if (srv[s].up && srv[s].prio == 100)
        {
            wsum += srv[s].weight;
            live++;
        }
    }
    for (int s = 0; s < n_srv; s++)
    {
        if (srv[s].peak_replies > peak)
        {
            peak = srv[s].peak_replies;
        }
        if (!srv[s].up || srv[s].prio != 100)
        {
            continue;
        }
        taken_min = srv[s].taken < taken_min ? srv[s].taken : taken_min;
        taken_max = srv[s].taken > taken_max ? srv[s].taken : taken_max;
        if (!outage || srv[s].region != 0)
        {
            double share = n ? (double)srv[s].taken / n / ((double)srv[s].weight / (double)wsum) : 0;
            share_min = share < share_min ? share : share_min;
            share_max = share > share_max ? share : share_max;
        }
    }
    int64_t refused = 0;
    for (int c = 0; c < n_cli; c++)
    {
        refused += cli[c].refused;
    }
    int64_t to_region0 = 0;
    for (int s = 0; s < n_srv; s++)
    {
        if (srv[s].region == 0)
        {
            to_region0 += srv[s].taken;
        }
    }
    printf("{\"scenario\": \"%s\", \"margin_ms\": %d, \"spread_s\": %.0f, \"variant\": \"%s\", \"clients\": %d, \"servers\": %d, "
           "\"connected\": %d, \"median_s\": %.2f, \"p90_s\": %.2f, \"p99_s\": %.2f, \"max_s\": %.2f, "
           "\"clients_per_live_server_min\": %" PRId64 ", \"max\": %" PRId64 ", "
           "\"share_vs_weight_min\": %.2f, \"share_vs_weight_max\": %.2f, "
           "\"to_region0\": %" PRId64 ", \"peak_replies_per_server_s\": %" PRId64 ", "
           "\"gave_up_on_full\": %" PRId64 "}\n",
           scenario, srv_margin, spread, variant_names[var], n_cli, n_srv, n,
           n ? t[n / 2] : -1, n ? t[(int)(n * 0.9)] : -1, n ? t[(int)(n * 0.99)] : -1,
           n ? t[n - 1] : -1, taken_min, taken_max,
           (outage && strcmp(scenario, "outage")) ? -1.0 : share_min,
           (outage && strcmp(scenario, "outage")) ? -1.0 : share_max, to_region0, peak, refused);
    fflush(stdout);
    free(t);
}

int
main(int argc, char **argv)
{
    const char *scenario = "outage";
    double spread = 1.0, until = 600;
    int max_clients = 4096;
    const char *variants = "stock-random,stock-order,probe-pre,probe,probe-load";
    n_cli = 100000;
    n_srv = 50;
    for (int i = 1; i + 1 < argc; i += 2)
    {
        if (!strcmp(argv[i], "--clients"))
        {
            n_cli = atoi(argv[i + 1]);
        }
        else if (!strcmp(argv[i], "--servers"))
        {
            n_srv = atoi(argv[i + 1]);
        }
        else if (!strcmp(argv[i], "--scenario"))
        {
            scenario = argv[i + 1];
        }
        else if (!strcmp(argv[i], "--spread"))
        {
            spread = atof(argv[i + 1]);
        }
        else if (!strcmp(argv[i], "--max-clients"))
        {
            max_clients = atoi(argv[i + 1]);
        }
        else if (!strcmp(argv[i], "--variants"))
        {
            variants = argv[i + 1];
        }
        else if (!strcmp(argv[i], "--regions"))
        {
            n_regions = atoi(argv[i + 1]);
        }
        else if (!strcmp(argv[i], "--margin"))
        {
            srv_margin = atoi(argv[i + 1]);
        }
        else if (!strcmp(argv[i], "--until"))
        {
            until = atof(argv[i + 1]);
        }
        else
        {
            fprintf(stderr, "fleetsim: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (n_regions < 1 || n_regions > 8)
    {
        fprintf(stderr, "fleetsim: 1..8 regions\n");
        return 2;
    }
    if (n_srv < 1 || n_srv > MAXS || n_cli < 1)
    {
        fprintf(stderr, "fleetsim: 1..%d servers, at least one client\n", MAXS);
        return 2;
    }
    for (int a = 0; a < n_regions; a++)
    {
        for (int b = 0; b < n_regions; b++)
        {
            rtt_ms[a][b] = a == b ? 20 : 60 + 25 * abs(a - b);
        }
    }
    cli = calloc((size_t)n_cli, sizeof(*cli));
    if (!cli)
    {
        return 1;
    }
    for (int v = 0; v <= V_PROBE_LOAD; v++)
    {
        if (strstr(variants, variant_names[v]))
        {
            /* "probe" is a prefix of the others: match whole names */
            const char *p = variants;
            size_t len = strlen(variant_names[v]);
            bool found = false;
            while ((p = strstr(p, variant_names[v])))
            {
                if ((p == variants || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
                {
                    found = true;
                    break;
                }
                p += len;
            }
            if (found)
            {
                var = (enum variant)v;
                run(scenario, spread, max_clients, until);
            }
        }
    }
    free(cli);
    free(heap);
    return 0;
}

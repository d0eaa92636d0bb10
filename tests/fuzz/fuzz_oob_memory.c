/*
 * libFuzzer target for the probe memory file (src/openvpn/oob_memory.c of
 * the series, --server-probe-persist): every input is written as a memory
 * file and loaded, as a client loads a file that another process, an
 * older version or an attacker with write access to it left behind.
 * Whatever loads must obey the memory's bounds (at most 1024 entries,
 * OFFLINE never longer than its retry time from now, a retry time within
 * [0, 3840] s, keys without whitespace) and must survive a save and a
 * load with the same values.  Crashes, sanitizer reports, leaks and failed
 * checks abort.
 */
#include "config.h"
#include "syshead.h"
#include "oob_memory.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW_US   (1000LL * 1000000)
#define NOW_WALL ((time_t)1800000000)

static void
check(int ok, const char *what)
{
    if (!ok)
    {
        fprintf(stderr, "fuzz_oob_memory: check failed: %s\n", what);
        abort();
    }
}

static void
check_bounds(const struct oob_memory *m)
{
    check(m->n >= 0 && m->n <= OOB_MEMORY_MAX_ENTRIES, "entries bounded");
    for (int i = 0; i < m->n; i++)
    {
        const struct oob_mem_entry *e = &m->e[i];
        check(e->retry_s >= 0 && e->retry_s <= OOB_MEMORY_RETRY_MAX_S, "retry time bounded");
        check(e->offline_until_us <= NOW_US + (int64_t)e->retry_s * 1000000,
              "OFFLINE no longer than the retry time from now");
        check(e->outcome < OOB_MEM_N_OUTCOMES, "a known outcome");
        check(e->rtt_us <= 60 * 1000000, "rtt bounded");
        check(NOW_US - e->at_us <= (int64_t)OOB_MEMORY_MAX_AGE_S * 1000000, "no entry older than a day");
        check(e->at_us <= NOW_US, "nothing happened after now");
        check(!e->ever_answered || e->answered_us <= e->at_us, "no answer after the last outcome");
        check(!e->ever_answered || NOW_US - e->answered_us <= (int64_t)OOB_MEMORY_MAX_AGE_S * 1000000,
              "no answer older than a day");
        for (const char *k = e->host; *k; k++)
        {
            check(*k > ' ' && *k < 0x7f, "host is one token");
        }
        check(oob_memory_get((struct oob_memory *)m, e->host, e->port, e->proto, e->addr, false) == e,
              "keys unique");
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char in[64], out[64];
    if (!*in)
    {
        snprintf(in, sizeof(in), "/dev/shm/fuzz_oob_memory.%d.in", (int)getpid());
        snprintf(out, sizeof(out), "/dev/shm/fuzz_oob_memory.%d.out", (int)getpid());
    }
    FILE *fp = fopen(in, "wb");
    check(fp != NULL, "temporary file");
    fwrite(data, 1, size, fp);
    fclose(fp);

    struct oob_memory *m = oob_memory_new(in, NOW_US, NOW_WALL);
    check_bounds(m);

    /* what loaded must survive a save and a load */
    free(m->file);
    m->file = strdup(out);
    m->no_save = false;
    check(oob_memory_save(m, NOW_US, NOW_WALL), "saved");
    struct oob_memory *m2 = oob_memory_new(out, NOW_US, NOW_WALL);
    check_bounds(m2);
    check(m2->n == m->n, "as many entries after a round trip");
    for (int i = 0; i < m->n; i++)
    {
        const struct oob_mem_entry *a = &m->e[i];
        const struct oob_mem_entry *b = oob_memory_get(m2, a->host, a->port, a->proto, a->addr, false);
        check(b != NULL, "every entry after a round trip");
        check(a->outcome == b->outcome && a->rtt_us == b->rtt_us && a->priority == b->priority
              && a->weight == b->weight && a->max_latency_diff == b->max_latency_diff
              && a->retry_s == b->retry_s && a->no_probe == b->no_probe,
              "the same values after a round trip");
        check(oob_memory_skip_at_start(a, NOW_US + 1500000) == oob_memory_skip_at_start(b, NOW_US + 1500000),
              "the same wait decision after a round trip");
    }
    /* the same bytes as the file another client just saved: merged in
     * before the next save, within the same bounds */
    fp = fopen(out, "wb");
    check(fp != NULL, "temporary file");
    fwrite(data, 1, size, fp);
    fclose(fp);
    check(oob_memory_save(m2, NOW_US, NOW_WALL), "saved after a merge");
    check_bounds(m2);
    check(m2->n <= OOB_MEMORY_MAX_ENTRIES, "no more entries than the bound");
    oob_memory_free(m2);
    oob_memory_free(m);
    unlink(in);
    unlink(out);
    return 0;
}

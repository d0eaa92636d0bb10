/*
 * libFuzzer target for the OOB payload codec (src/openvpn/oob.c of the
 * series): every input is parsed as SERVER_PROBE and as PROBE_REPLY and
 * given to the server's checks; whatever parses must encode again to
 * something that parses to the same values.  Crashes, sanitizer reports
 * and failed round trips abort.  On master (-DFUZZ_BASE_MASTER) the
 * server's checks are in oob_server.c.
 */
#include "config.h"
#include "syshead.h"
#include "oob.h"
#ifdef FUZZ_BASE_MASTER
#include "oob_server.h"
#endif

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct buffer in;
    struct oob_probe probe, probe2;
    struct oob_probe_reply reply, reply2;
    uint8_t out[OOB_PROBE_LEN + 64];
    struct buffer enc;

    /* parse from a copy, so that reads past the end are caught by ASan */
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);

    buf_set_read(&in, copy, size);
    if (oob_read_probe(&in, &probe) == OOB_OK)
    {
        buf_set_write(&enc, out, sizeof(out));
        if (!oob_write_probe(&enc, &probe, size % 64)
            || oob_read_probe(&enc, &probe2) != OOB_OK
            || probe2.timestamp != probe.timestamp
            || probe2.flags != probe.flags)
        {
            abort();
        }
    }

    buf_set_read(&in, copy, size);
    if (oob_read_probe_reply(&in, &reply) == OOB_OK)
    {
        buf_set_write(&enc, out, sizeof(out));
        if (!oob_write_probe_reply(&enc, &reply)
            || oob_read_probe_reply(&enc, &reply2) != OOB_OK
            || memcmp(&reply, &reply2, sizeof(reply)) != 0)
        {
            abort();
        }
    }

    buf_set_read(&in, copy, size);
#ifdef FUZZ_BASE_MASTER
    const char *why;
    (void)oob_server_check_probe(&in, 1700000000, 60, &why);
#else
    (void)oob_server_check_probe(&in, 1700000000, 60);
#endif

    free(copy);
    return 0;
}

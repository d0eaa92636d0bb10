/*
 * What the fuzz targets link instead of error.c, and the stubs that
 * test_pkt.c has for the functions of ssl.c/socket.c/options.c that
 * ssl_pkt.c and tls_crypt.c reference but the fuzzed paths never call.
 *
 * Unlike the unit tests' mock_msg.c, a failed ASSERT() and a fatal
 * message abort(), so that libFuzzer records them as findings with the
 * input and a stack trace (mock_msg.c's _exit()/cmocka paths would not).
 * FUZZ_VERBOSE=<level> in the environment prints messages up to that
 * debug level (default: none).  -DFUZZ_BASE_MASTER (run.sh, for the
 * master series): master's signatures where they differ.
 */
#include "config.h"
#include "syshead.h"
#include "error.h"
#include "buffer.h"
#include "socket.h"
#include "ssl_common.h"

#include <stdio.h>
#include <stdlib.h>

unsigned int x_debug_level = 0;

void
x_msg_va(const unsigned int flags, const char *format, va_list arglist)
{
    if ((flags & M_FATAL) || x_debug_level > 0)
    {
        fprintf(stderr, "%s", (flags & M_FATAL) ? "FATAL: " : "");
        vfprintf(stderr, format, arglist);
        fprintf(stderr, "\n");
    }
    if (flags & M_FATAL)
    {
        /* the real msg() exits the process: for a packet from the
         * network that is a remote shutdown */
        abort();
    }
}

void
x_msg(const unsigned int flags, const char *format, ...)
{
    va_list arglist;
    va_start(arglist, format);
    x_msg_va(flags, format, arglist);
    va_end(arglist);
}

void
assert_failed(const char *filename, int line, const char *condition)
{
    fprintf(stderr, "ASSERT failed at %s:%d (%s)\n", filename, line,
            condition ? condition : "");
    abort();
}

void
out_of_memory(void)
{
    fprintf(stderr, "Out of Memory\n");
    abort();
}

bool
dont_mute(unsigned int flags)
{
    return true;
}

/* as in test_pkt.c: referenced, never called on these paths */
#ifdef FUZZ_BASE_MASTER
int
parse_line(const char *line, char **p, const int n, const char *file,
           const int line_num, msglvl_t msglevel, struct gc_arena *gc)
#else
int
parse_line(const char *line, char **p, const int n, const char *file,
           const int line_num, int msglevel, struct gc_arena *gc)
#endif
{
    abort();
}

bool
key_state_export_keying_material(struct tls_session *session,
                                 const char *label, size_t label_size,
                                 void *ekm, size_t ekm_size)
{
    abort();
}

const char *
print_link_socket_actual(const struct link_socket_actual *act, struct gc_arena *gc)
{
    return "[fuzz peer]";
}

const char *
print_sockaddr_ex(const struct sockaddr *addr, const char *separator,
                  const unsigned int flags, struct gc_arena *gc)
{
    return "[fuzz peer]";
}

/* called once by the targets */
void fuzz_mock_init(void);

void
fuzz_mock_init(void)
{
    const char *v = getenv("FUZZ_VERBOSE");
    if (v)
    {
        x_debug_level = (unsigned int)atoi(v);
    }
}

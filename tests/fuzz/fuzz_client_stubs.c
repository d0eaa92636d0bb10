/*
 * fuzz_oob_client.c compiles oob_client.c itself, to fuzz its static
 * oob_client_receive() (master: oob_probe.c and oob_probe_receive()).
 * The rest of that file (sockets, name resolution, the handshake
 * shortcut) is never called by the target but references these, from
 * init.c, socket.c, fdmisc.c, sig.c and ssl.c (master: also
 * socket_util.c, mtu.c and oob_memory.c): stubs that abort.  They are
 * defined without their headers on purpose, so that a changed signature
 * does not break this build.  When the file gains another such
 * dependency, run.sh stubs it the same way (and says so): add it here.
 */
#include "config.h"
#include "syshead.h"
#include "sig.h"

#include <stdlib.h>

struct signal_info siginfo_static;

#define FUZZ_STUB(name) void name(void); void name(void) { abort(); }

FUZZ_STUB(get_cached_dns_entry)
FUZZ_STUB(openvpn_getaddrinfo)
FUZZ_STUB(set_cloexec)
FUZZ_STUB(set_nonblock)
FUZZ_STUB(socket_set_buffers)
FUZZ_STUB(socket_set_mark)
FUZZ_STUB(standalone_wrap_init)
FUZZ_STUB(standalone_wrap_free)
FUZZ_STUB(tls_multi_skip_to_third_packet)

#ifdef FUZZ_BASE_MASTER
FUZZ_STUB(create_socket_udp_unbound)
FUZZ_STUB(ip_addr_dotted_quad_safe)
FUZZ_STUB(ipv6_addr_safe)
FUZZ_STUB(oob_memory_now_us)
FUZZ_STUB(oob_memory_phase_over)
FUZZ_STUB(set_sock_extended_error_passing)
#endif

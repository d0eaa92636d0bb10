/*
 * fuzz_oob_server.c compiles mudp.c itself, to fuzz its static
 * do_pre_decrypt_check() (the server's stateless path).  The rest of
 * mudp.c (instances, the event loop, inotify) is never called by the
 * target; what it references and the target does not link gets a stub
 * here that aborts.  Defined without their headers on purpose, so that a
 * changed signature does not break this build.  When mudp.c gains another
 * such dependency, run.sh stubs it the same way (and says so): add it
 * here.  On master (-DFUZZ_BASE_MASTER) the harness defines
 * process_outgoing_link() itself, to keep the reply that master's
 * send_standalone_reply() sends at once.
 */
#include <stdlib.h>

#define FUZZ_STUB(name) void name(void); void name(void) { abort(); }

/* variables of error.c and manage.c that mudp.c's other functions use */
struct management;
struct management *management;
const char *x_msg_prefix;

/* multi.c, init.c, forward.c, mroute.c, list.c, schedule.c, ssl.c, vlan.c */
FUZZ_STUB(close_instance)
FUZZ_STUB(context_clear_2)
FUZZ_STUB(hash_lookup_fast)
FUZZ_STUB(init_instance_handle_signals)
FUZZ_STUB(init_management_callback_multi)
FUZZ_STUB(initialization_sequence_completed)
FUZZ_STUB(io_wait_dowork)
FUZZ_STUB(management_io)
FUZZ_STUB(mroute_addr_print)
FUZZ_STUB(mroute_extract_openvpn_sockaddr)
FUZZ_STUB(multi_assign_peer_id)
FUZZ_STUB(multi_create_instance)
FUZZ_STUB(multi_get_queue)
FUZZ_STUB(multi_ifconfig_pool_persist)
FUZZ_STUB(multi_init)
FUZZ_STUB(multi_process_incoming_dco)
FUZZ_STUB(multi_process_incoming_link)
FUZZ_STUB(multi_process_incoming_tun)
FUZZ_STUB(multi_process_per_second_timers_dowork)
FUZZ_STUB(multi_process_post)
FUZZ_STUB(multi_process_signal)
FUZZ_STUB(multi_process_timeout)
FUZZ_STUB(multi_top_free)
FUZZ_STUB(multi_top_init)
FUZZ_STUB(multi_uninit)
#ifndef FUZZ_BASE_MASTER
/* master: fuzz_oob_server.c has its own, which keeps the reply */
FUZZ_STUB(process_outgoing_link)
#endif
FUZZ_STUB(process_outgoing_tun)
FUZZ_STUB(read_incoming_link)
FUZZ_STUB(read_incoming_tun)
FUZZ_STUB(schedule_find_least)
FUZZ_STUB(session_skip_to_pre_start)
FUZZ_STUB(ungenerate_prefix)
FUZZ_STUB(uninit_management_callback)
FUZZ_STUB(vlan_process_outgoing_tun)

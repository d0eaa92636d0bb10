#!/usr/bin/env python3
"""Tree filter (git filter-branch --tree-filter, run in a tree's root):
move tests/unit_tests/openvpn/test_ssl_shortcut.c into test_ssl.c.

Review item 4 of REVIEW-master.md: the shortened handshake's cases belong
in upstream's test_ssl.c, with their stubs in mock_ssl_dependencies.c, not
in a second driver.  The transformation is a function of the tree, so
that every commit of the series that touches the shortcut's tests gets
the same shape:
  - the stubs go into mock_ssl_dependencies.c, which loses the three
    stubs of functions the driver now links (ssl.c, ssl_verify.c);
  - test_ssl.c includes ssl.c (for its static functions), gets the
    shortcut's fixtures and cases before main() and their entries in
    main()'s list;
  - ssl_testdriver links the union of both drivers' sources;
    ssl_shortcut_testdriver disappears from Makefile.am and CMakeLists.txt.
Without test_ssl_shortcut.c in the tree it does nothing."""
import os
import re
import sys

D = "tests/unit_tests/openvpn/"
SC = D + "test_ssl_shortcut.c"


def rd(p):
    with open(p) as f:
        return f.read()


def wr(p, s):
    with open(p, "w") as f:
        f.write(s)


def merge_sorted(lines, new):
    """insert the lines of new not yet in lines, each before the first
    source line of its directory that sorts after it"""
    for n in new:
        if n.strip() in [ln.strip() for ln in lines]:
            continue
        d = os.path.dirname(n.strip())
        pos = None
        last = None
        for k, ln in enumerate(lines):
            if os.path.dirname(ln.strip()) == d:
                last = k
                if pos is None and ln.strip() > n.strip():
                    pos = k
        if pos is None:
            pos = last + 1
        lines.insert(pos, n)
    return lines


def main():
    if not os.path.exists(SC):
        return 0
    sc = rd(SC)

    # the shortcut file: header, include of ssl.c, stubs, fixtures+cases, main
    i_inc = sc.index('#include "ssl.c"\n') + len('#include "ssl.c"\n')
    i_fix = min(sc.find(x) for x in ("/* a time on the clock of now",
                                     "/* A minimal client's tls_multi") if x in sc)
    i_main = sc.index("int\nmain(void)")
    stubs = sc[i_inc:i_fix].strip("\n") + "\n"
    cases = sc[i_fix:i_main].rstrip("\n") + "\n"
    m = re.search(r"const struct CMUnitTest tests\[\] = \{\n(.*?)\n    \};", sc[i_main:], re.S)
    entries = m.group(1).rstrip(",\n") + ",\n"

    # stubs that test_ssl.c already has
    for fn in ("get_user_pass_cr", "purge_user_pass"):
        stubs = re.sub(r"\nbool\n%s\(.*?\n}\n|\nvoid\n%s\(.*?\n}\n" % (fn, fn), "\n", stubs,
                       flags=re.S)
    stubs = re.sub(r"\n{3,}", "\n\n", stubs)
    # the note written for the shortcut driver, said once in the mock
    note = ("/*\n * ssl.c, ssl_verify.c and the TLS backends reference code that needs a\n"
            " * whole running instance (options, sockets, management, plugins, push).\n"
            " * The handshake state machine tested here never gets there: these stubs\n"
            " * only satisfy the linker and, but for print_link_socket_actual(), fail\n"
            " * the test if they are ever called.\n */\n")
    stubs = stubs.replace(note, "")
    stubs = re.sub(r"\n{3,}", "\n\n", stubs).strip("\n") + "\n"

    # upstream's parse_line() stays; the stubs of what the driver now
    # links go (pem_password_callback() is in ssl.c, cert_hash_remember()
    # and verify_cert() in ssl_verify.c)
    stubs = re.sub(r"int\nparse_line\(.*?\n}\n\n", "", stubs, count=1, flags=re.S)
    mock = rd(D + "mock_ssl_dependencies.c")
    for fn in ("pem_password_callback", "cert_hash_remember", "verify_cert"):
        mock = re.sub(r"\n\n+[a-z_]+\n%s\(.*?\n}\n" % fn, "\n", mock, count=1, flags=re.S)
    mock = mock.replace('#include "ssl_verify.h"\n',
                        '#include "ssl_verify.h"\n#include "options.h"\n'
                        '#include "socket.h"\n#include "route.h"\n#include "status.h"\n'
                        '#include "plugin.h"\n#include "manage.h"\n#include "misc.h"\n'
                        '#include "dco.h"\n#include "win32.h"\n', 1)
    mock = (mock.rstrip("\n") + "\n\n"
            + "/*\n * test_ssl.c includes ssl.c, which with ssl_verify.c and the TLS backends\n"
            + " * references code that needs a whole running instance (options, sockets,\n"
            + " * management, plugins, push).  The cases there never get that far: these\n"
            + " * stubs only satisfy the linker and, but for print_link_socket_actual(),\n"
            + " * fail the test if they are ever called.\n */\n"
            + stubs)
    wr(D + "mock_ssl_dependencies.c", mock)

    t = rd(D + "test_ssl.c")
    # after the last #include of the file's head
    inc = [mm.end() for mm in re.finditer(r'#include "[^"]+"\n', t[:t.index("\nstatic")])]
    t = (t[:inc[-1]] + "\n/* include the .c file to reach its static functions\n"
         " * (control_packet_needs_wkc(), session_move_pre_start()) */\n"
         '#include "ssl.c"\n' + t[inc[-1]:])
    i = t.index("int\nmain(void)")
    t = t[:i] + cases + "\n" + t[i:]
    mm = re.search(r"(const struct CMUnitTest tests\[\] = \{\n.*?)\n*(    \};)", t[i:], re.S)
    lst = mm.group(1).rstrip(",\n") + ",\n" + entries.rstrip(",\n") + "\n"
    t = t[:i + mm.start()] + lst + mm.group(2) + t[i + mm.end():]
    wr(D + "test_ssl.c", t)
    os.unlink(SC)

    # Makefile.am: the union of the two source lists, one driver
    mk = rd(D + "Makefile.am")
    mk = mk.replace("\tssl_shortcut_testdriver \\\n", "", 1)
    blk = re.search(r"\nssl_shortcut_testdriver_CFLAGS.*?(?=\n\n|\Z)", mk, re.S)
    srcs_sc = re.findall(r"\t(\S+\.[ch])", re.search(
        r"ssl_shortcut_testdriver_SOURCES = (.*?)(?=\n\n|\Z)", mk, re.S).group(1))
    mk = mk[:blk.start()] + mk[blk.end() + 1:]
    m = re.search(r"ssl_testdriver_SOURCES = (.*?)(?=\n\n|\nif WIN32)", mk, re.S)
    blines = [ln.rstrip(" \\") for ln in m.group(1).split("\n")]
    blines = merge_sorted(blines, ["\t" + x for x in srcs_sc
                                   if x.startswith("$(top_srcdir)/src/openvpn/")
                                   and x != "$(top_srcdir)/src/openvpn/ssl.c"])
    mk = mk[:m.start(1)] + " \\\n".join(blines) + mk[m.end(1):]
    wr(D + "Makefile.am", mk)

    # CMakeLists.txt
    cm = rd("CMakeLists.txt")
    cm = cm.replace('        "test_ssl_shortcut"\n', "", 1)
    m = re.search(r"\n    target_sources\(test_ssl_shortcut PRIVATE\n(.*?)\n        \)\n", cm, re.S)
    sc_src = [ln.strip() for ln in m.group(1).split("\n")]
    cm = cm[:m.start()] + cm[m.end():]
    m = re.search(r"(    target_sources\(test_ssl PRIVATE\n)(.*?)(\n    \)\n)", cm, re.S)
    cur = m.group(2).split("\n")
    cur = merge_sorted(cur, ["            " + x for x in sc_src
                             if x.startswith("src/") and x != "src/openvpn/ssl.c"])
    cm = cm[:m.start(2)] + "\n".join(cur) + cm[m.end(2):]
    wr("CMakeLists.txt", cm)
    return 0


if __name__ == "__main__":
    sys.exit(main())

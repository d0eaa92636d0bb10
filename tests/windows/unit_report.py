#!/usr/bin/env python3
"""Summarise the unit test runs under Wine (scripts/windows.sh check).

unit_report.py CHECKDIR VARIANT...

Reads CHECKDIR/VARIANT/unit.txt (one line per test program: rc, cmocka
counts) and CHECKDIR/VARIANT/test_*.log.  A program passes when it exits 0
and cmocka reports no failed test.  A failure of a patched variant counts
as a Wine limitation only when the unpatched master build fails the same
cmocka test cases (same names) under the same Wine: otherwise it is a
failure of the series.  Failures of unpatched master are listed with the
reason known for them (KNOWN below) or "no known reason": those fail the
run too, so a new Wine-only failure gets looked at and written down here.
Exit 0 when every failure is explained, 1 otherwise.
"""
import os
import re
import sys

# test program -> why it fails under Wine (observed with unpatched master:
# the same failure there).  Filled from the runs, see tests/windows/README.md.
KNOWN = {
    "test_cryptoapi":
        "PFXImportCertStore(..., PKCS12_ALWAYS_CNG_KSP) returns NULL under Wine 8 "
        "(test_cryptoapi.c:206; Wine cannot import the PKCS#12 into a CNG key "
        "storage provider), so the 6 tests that use the imported certificates fail; "
        "test_parse_hexstring passes",
}


def load(chk, v):
    res = {}
    path = os.path.join(chk, v, "unit.txt")
    if not os.path.exists(path):
        return res
    for line in open(path):
        f = line.split()
        if not f:
            continue
        d = dict(x.split("=", 1) for x in f[1:])
        log = open(os.path.join(chk, v, f[0] + ".log"), errors="replace").read()
        failed = sorted(set(re.findall(r"^\[  FAILED  \] (\S+)$", log, re.M)))
        d = {k: int(val) for k, val in d.items()}
        d["failed_names"] = failed
        d["ok"] = d["rc"] == 0 and d["failed"] == 0 and not failed
        res[f[0]] = d
    return res


def main():
    chk, variants = sys.argv[1], sys.argv[2:]
    runs = {v: load(chk, v) for v in variants}
    base = runs.get("master", {})
    bad = 0
    tot_pass = tot_known = 0
    for v in variants:
        r = runs[v]
        npass = sum(1 for d in r.values() if d["ok"])
        tot_pass += npass
        cases = sum(d["run"] for d in r.values())
        cfail = sum(d["failed"] for d in r.values())
        print("unit tests under Wine, %s: %d programs, %d passed, %d failed "
              "(%d cmocka tests, %d failed)" % (v, len(r), npass, len(r) - npass, cases, cfail))
        for t in sorted(r):
            d = r[t]
            if d["ok"]:
                print("  PASS %-24s %3d tests" % (t, d["run"]))
                continue
            what = "exit %d, %d of %d failed%s" % (
                d["rc"], d["failed"], d["run"],
                (": " + " ".join(d["failed_names"][:6])) if d["failed_names"] else "")
            if v == "master":
                why = KNOWN.get(t)
                if why:
                    print("  FAIL %-24s %s [Wine: %s]" % (t, what, why))
                    tot_known += 1
                else:
                    print("  FAIL %-24s %s [no known reason: look at %s/%s/%s.log]"
                          % (t, what, chk, v, t))
                    bad += 1
            else:
                b = base.get(t)
                if b and not b["ok"] and set(d["failed_names"]) <= set(b["failed_names"]) \
                        and (d["failed_names"] or d["rc"] == b["rc"]):
                    print("  FAIL %-24s %s [Wine: unpatched master fails the same%s]"
                          % (t, what, ("; " + KNOWN[t]) if t in KNOWN else ""))
                    tot_known += 1
                else:
                    print("  FAIL %-24s %s [not on unpatched master: a failure of the series]"
                          % (t, what))
                    bad += 1
    # for scripts/windows.sh's closing line: passed, failed, known (Wine)
    with open(os.path.join(chk, "unit-counts"), "w") as f:
        f.write("%d %d %d\n" % (tot_pass, bad, tot_known))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

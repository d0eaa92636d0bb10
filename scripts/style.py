#!/usr/bin/env python3
"""Check the series' C code: the 2.6 series with uncrustify and upstream's
2.6 config, a series on master (a tree with .clang-format) with master's
.clang-format and clang-format 21.1.8 (scripts/clang-format.sh).  BASE=NAME
picks the series (scripts/base.sh).

New files must be uncrustify-clean as a whole; in upstream files only the
lines the series adds are checked (a reformat hunk that touches an added
line fails).  The config is upstream's dev-tools/uncrustify.conf of v2.6.14,
kept in the repository as scripts/uncrustify-2.6.conf (UNCRUSTIFY_CONF
overrides it).  A missing config or uncrustify binary is a failure, not a
skip (scripts/deps.sh installs uncrustify).  Exit 0 clean, 1 differences or
missing tools.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# BASE=NAME (scripts/base.sh): the work tree of that base's series
base = os.environ.get("BASE", "2.6")
wt = os.path.join(top, "build", "openvpn" if base == "2.6" else "openvpn-" + base)
conf = os.environ.get("UNCRUSTIFY_CONF") or os.path.join(
    top, "scripts", "uncrustify-2.6.conf")


def git(*args):
    return subprocess.run(["git", "-C", wt] + list(args), check=True,
                          capture_output=True, text=True).stdout


def ranges(diff, side):
    """Line ranges ('+' new side or '-' old side) from a -U0 diff."""
    out = []
    for m in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@",
                         diff, re.M):
        if side == "-":
            start, cnt = int(m.group(1)), int(m.group(2) or 1)
        else:
            start, cnt = int(m.group(3)), int(m.group(4) or 1)
        # a pure deletion/insertion point counts as touching line `start`
        out.append((start, start + max(cnt, 1) - 1))
    return out


def main():
    if os.path.isfile(os.path.join(wt, ".clang-format")):
        # master: its own .clang-format and clang-format 21.1.8
        res = subprocess.run([os.path.join(top, "scripts", "clang-format.sh"),
                              "--version"], capture_output=True, text=True)
        if res.returncode != 0:
            print("FAIL style: " + res.stderr.strip())
            return 1
    elif not os.path.isfile(conf):
        print(f"FAIL style: uncrustify config not found at {conf} "
              "(scripts/uncrustify-2.6.conf is part of the repository; "
              "UNCRUSTIFY_CONF overrides it)")
        return 1
    if not os.path.isfile(os.path.join(wt, ".clang-format")) and not shutil.which("uncrustify"):
        print("FAIL style: uncrustify is not installed (scripts/deps.sh "
              "installs it: run 'make deps')")
        return 1
    clang = os.path.isfile(os.path.join(wt, ".clang-format"))
    files = git("diff", "--name-only", "--diff-filter=AM", "upstream", "HEAD",
                "--", "*.c", "*.h").split()
    added_files = set(git("diff", "--name-only", "--diff-filter=A",
                          "upstream", "HEAD", "--").split())
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            src = os.path.join(wt, f)
            head = git("show", f"HEAD:{f}")
            orig = os.path.join(tmp, "orig")
            with open(orig, "w") as fh:
                fh.write(head)
            if clang:
                cmd = [os.path.join(top, "scripts", "clang-format.sh"),
                       "--style=file:" + os.path.join(wt, ".clang-format"),
                       "--assume-filename=" + f, orig]
            else:
                cmd = ["uncrustify", "-q", "-c", conf, "-f", orig]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                print(f"style: {cmd[0]} failed on {f}: {res.stderr.strip()}")
                bad += 1
                continue
            fmt = os.path.join(tmp, "fmt")
            with open(fmt, "w") as fh:
                fh.write(res.stdout)
            d = subprocess.run(["diff", "-U0", orig, fmt], capture_output=True,
                               text=True).stdout
            if not d:
                continue
            if f in added_files:
                hits = ranges(d, "-")
            else:
                added = ranges(git("diff", "-U0", "upstream", "HEAD", "--", f), "+")
                hits = [r for r in ranges(d, "-")
                        if any(r[0] <= a[1] and a[0] <= r[1] for a in added)]
            if hits:
                bad += 1
                print(f"style: {f}: {'clang-format' if clang else 'uncrustify'} wants changes at lines "
                      + ", ".join(f"{a}-{b}" for a, b in hits))
                full = subprocess.run(["diff", "-u", orig, fmt],
                                      capture_output=True, text=True).stdout
                print("\n".join(full.splitlines()[2:60]))
    print(f"style: {len(files)} file(s) checked with "
          f"{'clang-format 21.1.8' if clang else 'uncrustify'}, {bad} with differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

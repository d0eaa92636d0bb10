#!/usr/bin/env python3
"""Simulate pick_seed()'s steering without running scenarios: N picks, the
class counts of each picked scenario's static and expected run-time classes
added as if it had run, and the rarest classes at the end, for a few
(candidates, CLASS_EXP) pairs.  What a run reaches differs (a run-time
class is counted when the run meets it, not when it aims at it); this
compares settings, it does not predict a table.

    tests/soak/steer_sim.py [N]        N picks per setting (default 280,
                                       one worker of a 60-minute run)
"""
import importlib.util
import os
import random
import sys
import time

spec = importlib.util.spec_from_file_location(
    "soak", os.path.join(os.path.dirname(os.path.abspath(__file__)), "soak.py"))
soak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soak)


def sim(n, cand, exp, seed=1):
    soak.CLASS_EXP = exp
    rng = random.Random(seed)
    counts = {}
    t0 = time.time()
    for _ in range(n):
        s = soak.pick_seed(rng, counts, False, False, candidates=cand)
        sc = soak.generate(s, False)
        for cl in soak.classes(sc) + soak.expected_rt_classes(sc):
            counts[cl] = counts.get(cl, 0) + 1
    low = sorted((v, k) for k, v in counts.items())[:6]
    return time.time() - t0, len(counts), low


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 280
    for cand, exp in ((48, 3), (96, 3), (96, 4)):
        dt, ncl, low = sim(n, cand, exp)
        print("candidates %d, CLASS_EXP %d: %.1f s, %d classes, rarest: %s"
              % (cand, exp, dt, ncl, ", ".join("%s %d" % (k, v) for v, k in low)))


if __name__ == "__main__":
    main()

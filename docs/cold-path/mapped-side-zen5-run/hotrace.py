#!/usr/bin/env python3
"""hotrace.py ROUNDS 'label=cmd args' ... : interleaved shuffled rounds, nothing dropped; paired ratios to the first."""
import os, random, statistics, subprocess, sys, time
rounds = int(sys.argv[1])
cases = [(s.split('=', 1)[0], s.split('=', 1)[1].split()) for s in sys.argv[2:]]
times = {c[0]: [] for c in cases}
outs = {}
for r in range(rounds + 1):
    order = cases[:]; random.shuffle(order)
    for label, argv in order:
        t = time.perf_counter(); out = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout; dt = time.perf_counter() - t
        if r: times[label].append(dt)   # round 0 warms
        outs.setdefault(label, out)
base = cases[0][0]
for label, _ in cases:
    ratios = sorted(a / b for a, b in zip(times[label], times[base]))
    print(f"{label:24s} median {statistics.median(times[label])*1e3:7.1f} ms  /{base} {statistics.median(ratios):.3f} [{ratios[len(ratios)//5]:.3f},{ratios[-1-len(ratios)//5]:.3f}]")
print("same output:", len(set(outs.values())) == 1)

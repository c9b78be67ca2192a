#!/usr/bin/env python3
"""race.py ROUNDS 'label=cmd args' ... : interleaved shuffled rounds, output to /dev/null (as hyperfine's), round 0 warms; paired ratios to the first."""
import random, statistics, subprocess, sys, time
rounds = int(sys.argv[1])
cases = [(s.split('=', 1)[0], s.split('=', 1)[1].split()) for s in sys.argv[2:]]
times = {c[0]: [] for c in cases}
for r in range(rounds + 1):
    order = cases[:]; random.shuffle(order)
    for label, argv in order:
        t = time.perf_counter(); subprocess.run(argv, stdout=subprocess.DEVNULL, check=True); dt = time.perf_counter() - t
        if r: times[label].append(dt)
base = cases[0][0]
for label, _ in cases:
    ratios = sorted(a / b for a, b in zip(times[label], times[base]))
    print(f"{label:24s} median {statistics.median(times[label])*1e3:7.2f} ms  /{base} {statistics.median(ratios):.3f} [{ratios[len(ratios)//5]:.3f},{ratios[-1-len(ratios)//5]:.3f}]")

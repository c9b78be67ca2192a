#!/usr/bin/env python3
"""race.py ROUNDS FILE 'label=ENV;cmd args' ... : interleaved, shuffled; median seconds and median paired ratio to the first."""
import os, random, statistics, subprocess, sys, time
rounds, path = int(sys.argv[1]), sys.argv[2]
cases = []
for spec in sys.argv[3:]:
    label, rest = spec.split('=', 1)
    envs, cmd = rest.split(';', 1)
    env = dict(os.environ)
    for kv in envs.split(','):
        if kv:
            k, v = kv.split(':'); env[k] = v
    cases.append((label, env, cmd.split() + [path]))
times = {c[0]: [] for c in cases}
outs = set()
for r in range(rounds):
    order = cases[:]; random.shuffle(order)
    for label, env, argv in order:
        t = time.perf_counter(); out = subprocess.run(argv, env=env, capture_output=True, check=True).stdout; times[label].append(time.perf_counter() - t)
        outs.add(out.split()[0])
base = cases[0][0]
for label, _, _ in cases:
    ratios = sorted(a / b for a, b in zip(times[label], times[base]))
    print(f"{label:24s} median {statistics.median(times[label])*1e3:7.1f} ms  /{base} {statistics.median(ratios):.3f} [{ratios[len(ratios)//5]:.3f},{ratios[-1-len(ratios)//5]:.3f}]")
print("hashes:", outs)

#!/usr/bin/env python3
"""coldrace.py ROUNDS FILE 'label=ENV;cmd args' ... : like race.py, but the page cache dropped before each command."""
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
cpu = {c[0]: [] for c in cases}
mach = {c[0]: [] for c in cases}
def busy():
    v = list(map(int, open('/proc/stat').readline().split()[1:9])); return sum(v) - v[3] - v[4]
outs = set()
def drop():
    os.sync()
    with open('/proc/sys/vm/drop_caches', 'w') as f: f.write('3')
for r in range(rounds):
    order = cases[:]; random.shuffle(order)
    for label, env, argv in order:
        drop(); time.sleep(0.05)
        r0 = os.times(); b0 = busy(); t = time.perf_counter(); out = subprocess.run(argv, env=env, stdout=(subprocess.DEVNULL if label.startswith('cat') or label.startswith('dd') else subprocess.PIPE), check=True).stdout; times[label].append(time.perf_counter() - t); r1 = os.times(); cpu[label].append(r1.children_user + r1.children_system - r0.children_user - r0.children_system); mach[label].append((busy() - b0) / os.sysconf('SC_CLK_TCK'))
        if out: outs.add(out.split()[0])
for l in times: print(l, " ".join(f"{x*1e3:.0f}" for x in times[l]))
base = cases[0][0]
for label, _, _ in cases:
    ratios = sorted(a / b for a, b in zip(times[label], times[base]))
    print(f"{label:24s} median {statistics.median(times[label])*1e3:7.1f} ms  /{base} {statistics.median(ratios):.3f} [{ratios[len(ratios)//5]:.3f},{ratios[-1-len(ratios)//5]:.3f}]  own cpu {statistics.median(cpu[label])*1e3:.0f} ms  machine busy {statistics.median(mach[label])*1e3:.0f} ms")
print("hashes:", outs)

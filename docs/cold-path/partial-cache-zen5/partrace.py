#!/usr/bin/env python3
"""partrace.py ROUNDS FILE FRACTIONS SHAPE 'label=cmd args' ... : before each command the page cache is
dropped and FRACTION of FILE read back in 2 MiB pieces (SHAPE random: pieces chosen at random, seeded by
round; prefix: the first FRACTION), checked with cachestat; shuffled rounds, paired ratios to the first."""
import ctypes, os, random, statistics, subprocess, sys, time
PIECE = 2 << 20
SRC = os.environ.get('SRC', '/work/main/build/data/sweep-1G.bin')
libc = ctypes.CDLL(None, use_errno=True)
class Range(ctypes.Structure): _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]
class CS(ctypes.Structure): _fields_ = [(n, ctypes.c_uint64) for n in ("cache", "dirty", "wb", "ev", "rev")]
def resident(fd, size):
    r, cs = Range(0, size), CS()
    assert libc.syscall(451, fd, ctypes.byref(r), ctypes.byref(cs), 0) == 0
    return cs.cache * 4096 / size
def prepare(path, frac, shape, seed):
    os.sync()
    if shape in ('dd', 'written'):
        if shape == 'written':
            subprocess.run(['dd', f'if={SRC}', f'of={path}', 'bs=64M', 'conv=fsync', 'status=none'], check=True)
        else:
            with open('/proc/sys/vm/drop_caches', 'w') as f: f.write('3')
            subprocess.run(['dd', f'if={path}', 'of=/dev/null', 'bs=16M', 'status=none'], check=True)
        fd = os.open(path, os.O_RDONLY); size = os.fstat(fd).st_size; n = size // PIECE
        for p in random.Random(seed).sample(range(n), n - round(frac * n)):
            os.posix_fadvise(fd, p * PIECE, PIECE, os.POSIX_FADV_DONTNEED)
        got = resident(fd, size); os.close(fd); return got
    with open('/proc/sys/vm/drop_caches', 'w') as f: f.write('3')
    fd = os.open(path, os.O_RDONLY); size = os.fstat(fd).st_size
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    n = size // PIECE; k = round(frac * n)
    pieces = range(k) if shape == 'prefix' else random.Random(seed).sample(range(n), k)
    for p in pieces: os.pread(fd, PIECE, p * PIECE)
    got = resident(fd, size); os.close(fd); return got
rounds, path, fracs, shape = int(sys.argv[1]), sys.argv[2], [float(x) for x in sys.argv[3].split(',')], sys.argv[4]
cases = [(s.split('=', 1)[0], s.split('=', 1)[1].split() + [path]) for s in sys.argv[5:]]
for frac in fracs:
    times = {c[0]: [] for c in cases}; res = []; outs = set()
    for r in range(rounds):
        order = cases[:]; random.shuffle(order)
        for label, argv in order:
            res.append(prepare(path, frac, shape, r)); time.sleep(0.05)
            t = time.perf_counter(); out = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout
            times[label].append(time.perf_counter() - t); outs.add(out.split()[0])
    base = cases[0][0]
    print(f"# {shape} {frac:.2f} cached (cachestat before each: {min(res):.3f}-{max(res):.3f}), {rounds} rounds; hashes agree: {len(outs) == 1}")
    for label, _ in cases:
        ratios = sorted(a / b for a, b in zip(times[label], times[base]))
        print(f"{label:10s} median {statistics.median(times[label])*1e3:7.1f} ms  /{base} {statistics.median(ratios):.3f} [{ratios[len(ratios)//5]:.3f},{ratios[-1-len(ratios)//5]:.3f}]", flush=True)

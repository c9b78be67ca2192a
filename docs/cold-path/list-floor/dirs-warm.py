"""dirs-warm.py ROUNDS: the cold 16,384 x 64 KiB tree, -r against --files0-from, with the page cache
dropped before each command, and then either nothing more (cold) or the tree's directories read back
by `find` (their entries cached, no file's inode nor data): does the walk pay for reading directories?
Interleaved shuffled rounds; medians and the per-round ratio list / -r [20th, 80th percentile].
Run from the repository as root, nothing else running."""
import random, statistics, subprocess, sys, tempfile, time
from pathlib import Path

tree = Path("build/data/ringsum-tree-64K-57049d1613").resolve()
b = str(Path("build/bin/uring_b3sum").resolve())
rounds = int(sys.argv[1])
names = sorted(str(p) for p in tree.rglob("*") if p.is_file())
with tempfile.NamedTemporaryFile("wb", delete=False) as f:
    f.write(b"".join(n.encode() + b"\0" for n in names))
cmds = {"r": [b, "-r", str(tree)], "list": [b, "--files0-from", f.name]}
times = {(c, w): [] for c in cmds for w in ("cold", "dirs")}
for _ in range(rounds):
    order = list(times)
    random.shuffle(order)
    for c, w in order:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        if w == "dirs":
            subprocess.run(["find", str(tree)], stdout=subprocess.DEVNULL, check=True)
        t = time.perf_counter()
        subprocess.run(cmds[c], stdout=subprocess.DEVNULL, check=True)
        times[(c, w)].append(time.perf_counter() - t)
for w in ("cold", "dirs"):
    r, l = times[("r", w)], times[("list", w)]
    ratios = sorted(x / y for x, y in zip(l, r))
    q = lambda p: ratios[min(len(ratios) - 1, int(p * len(ratios)))]
    print(f"{w:5s} -r {statistics.median(r) * 1000:7.1f} ms  list {statistics.median(l) * 1000:7.1f} ms"
          f"  list / -r {statistics.median(ratios):.3f} [{q(0.2):.3f}, {q(0.8):.3f}]")
Path(f.name).unlink()

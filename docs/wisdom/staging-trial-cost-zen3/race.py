"""Paired, shuffled rounds of uring_b3sum on a cached file, each command once a round, with the
instrumented build's own account (TRIAL_COST=1): wall time, time in hash_mapped, the trial's tasks
and the winner's. Usage: race.py FILE ROUNDS 'argv|...' ... (the first is the reference)."""
import os
import random
import statistics as st
import subprocess
import sys
import time

file, rounds, commands = sys.argv[1], int(sys.argv[2]), [a.split("|") for a in sys.argv[3:]]
env = dict(os.environ, TRIAL_COST="1", URING_B3SUM_WISDOM=os.devnull)
runs: dict[int, list[dict[str, float]]] = {i: [] for i in range(len(commands))}
for r in range(rounds):
    # DAMON pages out memory idle for a minute: every round reads the file into the cache first
    subprocess.run(["cat", file], stdout=subprocess.DEVNULL, check=True)
    order = list(range(len(commands)))
    random.shuffle(order)
    for i in order:
        start = time.perf_counter()
        done = subprocess.run(commands[i] + [file], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=env, text=True, check=True)
        wall = (time.perf_counter() - start) * 1e3
        words = done.stderr.strip().splitlines()[-1].split()
        assert words[0] == "trial-cost" and float(words[2]) > 0, done.stderr  # hashed from the mapping
        got = dict(zip(words[1::2], map(float, words[2::2])))
        got["wall_ms"] = wall
        runs[i].append(got)
        print(r, " ".join(commands[i]), " ".join(f"{k} {v:.3f}" for k, v in got.items()), flush=True)


def per_task(run: dict[str, float], kind: str) -> float:
    return run[f"{kind}_ms"] / run[f"{kind}_tasks"] if run[f"{kind}_tasks"] else float("nan")


print("\nmedians over", rounds, "rounds; ratios paired per round to the first command")
for i, command in enumerate(commands):
    mine, ref = runs[i], runs[0]
    wall = st.median(x["wall_ms"] for x in mine)
    hashing = st.median(x["hash_ms"] for x in mine)
    print(" ".join(command), f"wall {wall:.1f} ms, hash_mapped {hashing:.1f} ms,",
          f"wall / first {st.median(a['wall_ms'] / b['wall_ms'] for a, b in zip(mine, ref)):.4f},",
          f"hash_mapped / first {st.median(a['hash_ms'] / b['hash_ms'] for a, b in zip(mine, ref)):.4f}")
    if all(x["trial_tasks"] for x in mine):
        ratio = st.median(per_task(x, "trial") / per_task(x, "won") for x in mine)
        extra = st.median((per_task(x, "trial") - per_task(x, "won")) * x["trial_tasks"] for x in mine)
        share = st.median((per_task(x, "trial") - per_task(x, "won")) * x["trial_tasks"] / x["hash_ms"] for x in mine)
        print(f"   a trial task over a winner's task in the same run: {ratio:.4f};",
              f"the trial's tasks beyond the winner's rate: {extra:.2f} ms, {share:.4f} of hash_mapped")

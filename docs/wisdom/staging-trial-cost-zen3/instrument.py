"""Apply the trial-cost instrumentation to a checkout's hashers/parallel_hash.cpp (a measurement
build only): with TRIAL_COST=1 in the environment, uring_b3sum prints at exit the time spent in
hash_mapped, in the staging trial's tasks and in the winner's tasks, with their counts."""
import sys
from pathlib import Path

path = Path(sys.argv[1]) / "hashers/parallel_hash.cpp"
s = path.read_text()


def rep(old: str, new: str) -> None:
    global s
    assert s.count(old) == 1, old
    s = s.replace(old, new)


rep("#include <sys/mman.h>\n", "#include <sys/mman.h>\n#include <stdio.h>\n#include <stdlib.h>\n")
rep("// --- prefetching (STAGE_PREFETCH) ---", """std::atomic<uint64_t> cost_all_ns{0}, cost_trial_ns{0}, cost_trial{0}, cost_won_ns{0}, cost_won{0};
struct cost_print {
  ~cost_print() {
    if (getenv("TRIAL_COST"))
      fprintf(stderr, "trial-cost hash_ms %.3f trial_tasks %llu trial_ms %.3f won_tasks %llu won_ms %.3f\\n",
              cost_all_ns / 1e6, (unsigned long long)cost_trial.load(), cost_trial_ns / 1e6,
              (unsigned long long)cost_won.load(), cost_won_ns / 1e6);
  }
} cost_printer;
// --- prefetching (STAGE_PREFETCH) ---""")
rep("""      if (winner < 0) {  // a trial task: a half each
""", """      if (winner < 0) {  // a trial task: a half each
        struct timed { uint64_t start; ~timed() { cost_trial_ns += trial_clock_ns() - start; cost_trial++; } } t{trial_clock_ns()};
""")
rep("""      } else if (winner == STAGE_IN_PLACE || winner == STAGE_PREFETCH) {
""", """      } else if (winner == STAGE_IN_PLACE || winner == STAGE_PREFETCH) {
        struct timed { uint64_t start; ~timed() { cost_won_ns += trial_clock_ns() - start; cost_won++; } } t{trial_clock_ns()};
""")
rep("""  blake3_hasher_update_tbb(hasher, data, len);
  set_mapping(nullptr, 0, 0);""", """  uint64_t start = trial_clock_ns();
  blake3_hasher_update_tbb(hasher, data, len);
  cost_all_ns += trial_clock_ns() - start;
  set_mapping(nullptr, 0, 0);""")
path.write_text(s)

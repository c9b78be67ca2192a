"""Results across commits: `ringsum bisect` finds the first slower commit, each revision built in a
directory of its own under the run directory."""

from pathlib import Path

CHECK_CONFIG = Path("configs") / "check.toml"  # bisect's and history's config, in the repository they build
HISTORY_STORE = Path("results") / "history"

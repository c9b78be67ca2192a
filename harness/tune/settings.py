"""What the tune and wisdom command lines show before anything is measured: the default space, the
final stage's rounds and the kinds of work a wisdom record is for. Kept apart from the search so
that the parsers load nothing heavy."""

from __future__ import annotations

from harness.catalog.variants import REPO_ROOT

DEFAULT_SPACE = REPO_ROOT / "configs" / "tune.toml"
FINAL_ROUNDS = 5  # the final stage's, unless --final-rounds
MIN_FINAL_ROUNDS = 3  # a race of fewer says nothing
MAX_FINAL_ROUNDS = 101
WORKS = ("cold-file", "cached-file", "cold-tree", "cached-tree")
# A record of one of these is from an earlier ringsum: shown and forgotten, never applied (a "tree"
# record was measured on a cold tree or a cached one and applied to both).
RETIRED_WORKS = ("tree",)

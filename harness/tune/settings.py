"""What the tune and wisdom command lines show before anything is measured: the default space and
the kinds of work a wisdom record is for. Kept apart from the search so that the parsers load
nothing heavy."""

from __future__ import annotations

from harness.catalog.variants import REPO_ROOT

DEFAULT_SPACE = REPO_ROOT / "configs" / "tune.toml"
WORKS = ("cold-file", "cached-file", "tree")

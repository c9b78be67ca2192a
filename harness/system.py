"""System settings that make timings trustworthy: set for a run, recorded with it, put back after it.

Like pyperf's `system tune`: each setting says whether it applies here, what it is, and why it is
changed; a setting that cannot be changed (not root, not a VM) becomes advice, never a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tunable:
    name: str
    path: Path
    for_timing: str  # the value a run wants
    why: str

    def available(self) -> bool:
        return self.path.exists()

    def read(self) -> str:
        return self.path.read_text().strip()

    def write(self, value: str) -> None:
        self.path.write_text(value + "\n")


@dataclass
class Setting:
    name: str
    path: str
    before: str | None
    during: str | None
    note: str = ""


# A VM guest with virtio-balloon free page reporting hands free memory back to the host about 2 s
# after it is freed (a cache drop frees a lot); the next read faults those pages back in from the
# host, which here turned ~40% of cold 1 GiB reads from 0.43 s into 1.3 s of mostly system time.
# An order above the largest (10 on x86-64) leaves no block to report.
FREE_PAGE_REPORTING = Tunable(
    name="free page reporting",
    path=Path("/sys/module/page_reporting/parameters/page_reporting_order"),
    for_timing="11",
    why="freed pages handed to the host make later page-cache reads fault them back in",
)
TUNABLES = (FREE_PAGE_REPORTING,)


@contextmanager
def timing_settings(log: Callable[[str], None], tunables: tuple[Tunable, ...] = TUNABLES) -> Iterator[list[dict]]:
    """Apply each available setting for the duration of the block; yields what was done, for meta.json."""
    applied: list[tuple[Tunable, str]] = []
    settings: list[Setting] = []
    try:
        for t in tunables:
            if not t.available():
                continue
            try:
                before = t.read()
            except OSError as e:
                log(f"note: cannot read {t.name} ({t.path}: {e.strerror}); left as is")
                settings.append(Setting(t.name, str(t.path), None, None, f"unreadable: {e.strerror}"))
                continue
            if before == t.for_timing:
                settings.append(Setting(t.name, str(t.path), before, before, "already set"))
                continue
            try:
                t.write(t.for_timing)
            except OSError as e:
                log(f"note: cannot change {t.name} ({t.path}: {e.strerror}); timings may be noisier: {t.why}")
                settings.append(Setting(t.name, str(t.path), before, before, f"left as is: {e.strerror}"))
                continue
            applied.append((t, before))
            settings.append(Setting(t.name, str(t.path), before, t.for_timing))
        yield [asdict(s) for s in settings]
    finally:
        for t, before in reversed(applied):
            try:
                t.write(before)
            except OSError as e:
                log(f"ringsum: could not restore {t.name}: write {before} to {t.path} ({e.strerror})")

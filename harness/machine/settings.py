"""System settings that make timings trustworthy: set for a run, recorded with it, put back after it.

Like pyperf's `system tune`: each setting says whether it applies here, what it is, and why it is
changed; a setting that cannot be changed (not root, not a VM) becomes advice, never a failure.
"""

from __future__ import annotations

import json
import os
import re
import signal
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.machine import state as statemod


@dataclass(frozen=True)
class Tunable:
    name: str
    path: Path
    for_timing: str  # the value a run wants
    why: str
    # What a value of this setting looks like: a value read, or one to restore, must match it
    # (a corrupt state file must never get arbitrary text written into sysfs).
    valid: str = r"\d{1,4}"

    def is_valid(self, value: object) -> bool:
        return isinstance(value, str) and re.fullmatch(self.valid, value) is not None

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
# host, which on the build VM made cold reads slower, in system time (a run that was not kept;
# docs/cold-path.md names the mechanism).
# An order above the largest (10 on x86-64) leaves no block to report.
FREE_PAGE_REPORTING = Tunable(
    name="free page reporting",
    path=Path("/sys/module/page_reporting/parameters/page_reporting_order"),
    for_timing="11",
    why="freed pages handed to the host make later page-cache reads fault them back in",
)
TUNABLES = (FREE_PAGE_REPORTING,)

# $RINGSUM_SYSTEM_SETTINGS=leave: a run changes no setting, and says so in meta.json (a machine whose
# owner does not allow it, or runs beside others that check these settings, as the tests do).
LEAVE_ENV = "RINGSUM_SYSTEM_SETTINGS"
LEAVE = "leave"


class SettingsError(Exception):
    """$RINGSUM_SYSTEM_SETTINGS says neither `leave` nor `set` (exit 2)."""


def left_alone(environ: Mapping[str, str]) -> bool:
    """Whether $RINGSUM_SYSTEM_SETTINGS asks runs to leave the system settings as they are."""
    value = environ.get(LEAVE_ENV, "set")
    if value not in (LEAVE, "set"):
        raise SettingsError(f"{LEAVE_ENV}={value[:40]!r}: it is `leave` (a run changes no system setting) "
                            "or `set` (the default)")
    return value == LEAVE


# Runs with their own run locks (tests) may overlap: the first to change a setting must not be put
# back by a later one, so a state file (under its own lock, in the private state directory of
# harness/machine/state.py) lists who uses the settings and what to restore; the last user to leave restores
# them. Users that died (SIGKILL) are pruned.
ENDING_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextmanager
def timing_settings(log: Callable[[str], None], tunables: tuple[Tunable, ...] = TUNABLES,
                    state_path: Path | None = None, leave: bool = False) -> Iterator[list[dict]]:
    """Apply each available setting for the duration of the block; yields what was done, for meta.json.
    With `leave`, nothing is changed and the state file is not touched: each setting is recorded as read.

    An ending signal (signals.py raises it as an exception) may land anywhere, even between a write
    to sysfs and its record in the state file: each value to put back is noted in `applied` before
    the write, and leaving merges it into the state, so whatever was changed is put back. The state
    file is updated with the ending signals blocked, so that it is not left cut short (a signal sent
    to the process can still reach another thread, hence `applied`)."""
    if leave:
        yield [asdict(s) for s in _left(log, tunables)]
        return
    path = state_path or statemod.settings_state_path()
    me = [os.getpid(), uuid.uuid4().hex]
    applied: dict[str, str] = {}
    opened = False
    try:
        with _signals_held(), _locked_state(path, log) as state:
            opened = True
            state["users"] = [u for u in state["users"] if statemod.alive(u[0])] + [me]
            _drop_invalid(log, tunables, state["restore"])
            settings = _apply(log, tunables, state["restore"], applied)
        yield [asdict(s) for s in settings]
    finally:
        # A signal the kernel gave another thread can surface in this thread late, even here, before
        # the settings are put back: leaving is idempotent, so it is done again, then the signal raised.
        late: KeyboardInterrupt | None = None
        for _attempt in range(3 if opened else 0):
            try:
                _leave(log, tunables, path, me, applied)
                break
            except KeyboardInterrupt as e:
                late = e
        if late is not None:
            raise late


def _leave(log: Callable[[str], None], tunables: tuple[Tunable, ...], path: Path, me: list[Any],
           applied: dict[str, str]) -> None:
    """This run leaves the state: what it applied is merged in, and the last user restores it all."""
    with _signals_held(), _locked_state(path, log) as state:
        state["users"] = [u for u in state["users"] if u != me and statemod.alive(u[0])]
        for name, value in applied.items():
            state["restore"].setdefault(name, value)
        if not state["users"]:
            _drop_invalid(log, tunables, state["restore"])
            _restore(log, tunables, state["restore"])
            state["restore"] = {}


@contextmanager
def _signals_held() -> Iterator[None]:
    old = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a held signal is delivered here


def _parse_state(text: str, path: Path, log: Callable[[str], None]) -> dict[str, Any]:
    try:
        state = json.loads(text) if text.strip() else {}
    except ValueError:
        state = None
    if not (isinstance(state, dict) and isinstance(state.get("users", []), list)
            and isinstance(state.get("restore", {}), dict)
            and all(isinstance(u, list) and len(u) == 2 and isinstance(u[0], int) for u in state.get("users", []))):
        log(f"note: {path} is corrupt; starting it afresh (settings left changed by a lost run stay as they are)")
        state = {}
    state.setdefault("users", [])
    state.setdefault("restore", {})
    return state


@contextmanager
def _locked_state(path: Path, log: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    with statemod.locked(path, log, "another run's settings change") as f:
        f.seek(0)
        state = _parse_state(f.read(), path, log)
        try:
            yield state
        finally:  # also when a signal ends the update half-way: `applied` completes it on leaving
            f.seek(0)
            f.truncate()
            json.dump(state, f)


def _drop_invalid(log: Callable[[str], None], tunables: tuple[Tunable, ...], restore: dict[str, Any]) -> None:
    """A value to restore that is not one of the setting's (a corrupt or planted state file) is
    forgotten: it is never written, and it does not pass for an overlapping run's change."""
    for t in tunables:
        if t.name in restore and not t.is_valid(restore[t.name]):
            log(f"ringsum: ignoring the recorded value {str(restore.pop(t.name))[:40]!r} for {t.name}: "
                f"not a valid value of {t.path}")


def _restore(log: Callable[[str], None], tunables: tuple[Tunable, ...], restore: dict[str, str]) -> None:
    for t in tunables:
        if t.name in restore:
            try:
                t.write(restore[t.name])
            except OSError as e:
                log(f"ringsum: could not restore {t.name}: write {restore[t.name]} to {t.path} ({e.strerror})")


def _read(log: Callable[[str], None], tunables: tuple[Tunable, ...]) -> Iterator[tuple[Tunable, str | Setting]]:
    """Each available setting with its value, or, where it cannot be read, its record as unreadable."""
    for t in tunables:
        if not t.available():
            continue
        try:
            yield t, t.read()
        except OSError as e:
            log(f"note: cannot read {t.name} ({t.path}: {e.strerror}); left as is")
            yield t, Setting(t.name, str(t.path), None, None, f"unreadable: {e.strerror}")


def _left(log: Callable[[str], None], tunables: tuple[Tunable, ...]) -> list[Setting]:
    note = f"left as is: {LEAVE_ENV}={LEAVE}"
    return [now if isinstance(now, Setting) else Setting(t.name, str(t.path), now, now, note)
            for t, now in _read(log, tunables)]


def _apply(log: Callable[[str], None], tunables: tuple[Tunable, ...], restore: dict[str, str],
           applied: dict[str, str]) -> list[Setting]:
    """Apply what no overlapping run has applied; `restore` and `applied` gain the values to put back
    (`applied` before each write)."""
    settings: list[Setting] = []
    for t, now in _read(log, tunables):
        if isinstance(now, Setting):
            settings.append(now)
            continue
        if t.name in restore:
            settings.append(Setting(t.name, str(t.path), restore[t.name], now, "set by an overlapping run"))
            continue
        if not t.is_valid(now):  # it could not be put back as read
            log(f"note: {t.name} ({t.path}) reads {now[:40]!r}, not a value ringsum knows; left as is")
            settings.append(Setting(t.name, str(t.path), now, now, "left as is: unexpected value"))
            continue
        if now == t.for_timing:
            settings.append(Setting(t.name, str(t.path), now, now, "already set"))
            continue
        applied[t.name] = now
        try:
            t.write(t.for_timing)
        except OSError as e:
            del applied[t.name]
            log(f"note: cannot change {t.name} ({t.path}: {e.strerror}); timings may be noisier: {t.why}")
            settings.append(Setting(t.name, str(t.path), now, now, f"left as is: {e.strerror}"))
            continue
        restore[t.name] = now
        settings.append(Setting(t.name, str(t.path), now, t.for_timing))
    return settings

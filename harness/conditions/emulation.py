"""Machine conditions made real (harness/conditions/spec.py says what they are):

- a read cap: a cgroup v1 blkio group per capped condition, its `blkio.throttle.read_bps_device`
  set on the block device of each test file (the whole disk of a partition);
- the RAM device: a tmpfs holding one image file, a loop device over it (direct I/O: no second
  copy in the page cache), ext4 on it, mounted in the state directory, the datasets copied there;
  it is dropped from the page cache like any disk, so that its limit is memory speed. Its
  read-ahead is the disk's (a loop device keeps whatever the last user set: 128 KiB or 2560 by
  the loop number, against the disk's 8192 on the Zen 5), and what it was is put back;
- cores: the first N CPUs the driver may use, set by harness/conditions/confine.py on hyperfine and inherited.

Everything made is recorded in the state directory (conditions.json) before it is made, and removed
when the run leaves: at its end, on every ending signal (they are exceptions there), and, after a
`kill -9`, by the next run or `--resume` before it starts. A recorded thing is removed only if it is
one of ours by its path (a planted state file cannot point the cleanup elsewhere).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.conditions.confine import Confinement
from harness.conditions.spec import SIMD_CPU_FLAGS, Condition, cpu_flags, usable_cpus
from harness.datasets.dataset import Dataset, tree_files
from harness.machine import state as statemod
from harness.units import format_size

STATE_FILE = "conditions.json"
RAM_DIR = "ram"  # where the RAM device is mounted
BACKING_DIR = "ram-backing"
BLKIO = Path("/sys/fs/cgroup/blkio")
CGROUP_NAME = re.compile(r"ringsum-[0-9a-f]{8}-\d+")
READ_AHEAD = re.compile(r"/sys/block/loop\d+/queue/read_ahead_kb")
DEFAULT_READ_AHEAD_KB = 128  # the kernel's, for a file on no block device (VM_READAHEAD_PAGES)
LOOP_CONTROL = Path("/dev/loop-control")
RAM_TOOLS = ("losetup", "mkfs.ext4", "mount", "umount")


class EmulationError(Exception):
    """A condition this machine cannot provide, or one that could not be set up (exit 2)."""


# --- what the machine can do, checked before anything runs ---

def whole_disk(path: str) -> tuple[int, int] | None:
    """(major, minor) of the block device holding `path`, a partition's disk; None: no block device
    (tmpfs, overlay, NFS). A file still to be generated: its directory's, or the nearest that exists."""
    where = Path(path)
    while not where.exists() and where != where.parent:
        where = where.parent
    st = os.stat(where)
    sys_dev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not sys_dev.exists():
        return None
    node = sys_dev.resolve()
    if (node / "partition").exists():
        node = node.parent
    major, minor = (node / "dev").read_text().strip().split(":")
    return int(major), int(minor)


def check_machine(conds: list[Condition], datasets: list[Dataset], programs: Iterable[tuple[Condition, str]]) -> None:
    """A condition the machine cannot provide is an error naming it, before anything runs: a plan's
    conditions, datasets and each command's program under its condition (Plan.programs)."""
    sources = [d for d in datasets if not d.copy_of]
    needs_root = [c for c in conds if c.read_cap or c.device == "ram"]
    if needs_root and os.geteuid() != 0:
        raise EmulationError(f"condition {needs_root[0].name}: read caps and the RAM device need root")
    if any(c.read_cap for c in conds):
        if not (BLKIO / "blkio.throttle.read_bps_device").exists():
            raise EmulationError(f"condition read_cap: no cgroup v1 blkio throttle here ({BLKIO}); "
                                 "cgroup v2's io.max is not supported yet")
        for d in sources:
            if any(c.read_cap and c.device == "disk" for c in conds) and whole_disk(d.path) is None:
                raise EmulationError(f"condition read_cap: {d.path} is on a filesystem without a block "
                                     "device (tmpfs?) to cap")
    if any(c.device == "ram" for c in conds):
        if not LOOP_CONTROL.exists():
            raise EmulationError(f"condition ram: no loop device support here ({LOOP_CONTROL} is missing)")
        for tool in RAM_TOOLS:
            if shutil.which(tool) is None:
                raise EmulationError(f"condition ram: {tool} not found (util-linux, mount, e2fsprogs)")
        need, free = ram_image_size(sources), _mem_available()
        if need > free // 2:
            raise EmulationError(f"condition ram: the RAM device needs {format_size(need)}, more than half "
                                 f"of the {format_size(free)} of memory available")
    cpus = usable_cpus()
    for c in conds:
        if c.cores and c.cores > len(cpus):
            raise EmulationError(f"condition {c.name}: {c.cores} cores, but this machine lets the run use "
                                 f"{len(cpus)} ({','.join(map(str, cpus))})")
    flags = cpu_flags()
    for c in conds:
        if not set(SIMD_CPU_FLAGS[c.simd]) <= flags:
            raise EmulationError(f"condition {c.name}: this CPU has no {c.simd.upper()}: "
                                 f"simd {c.simd!r} would run a lower level's code")
    for cond, program in programs:
        if cond.simd != "full" and not os.access(program, os.X_OK):
            raise EmulationError(f"condition {cond.name}: {program} is missing; build the "
                                 "SIMD levels with `make simd`")


def _mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def ram_root() -> Path:
    return statemod.state_dir().absolute() / RAM_DIR


def ram_copies(files: list[Dataset]) -> dict[str, Dataset]:
    """Each dataset's copy on the RAM device, by the original's path: <state>/ram/<index>/<name>."""
    root = ram_root()
    return {f.path: dataclasses.replace(f, path=str(root / str(i) / Path(f.path).name), generate=False,
                                        owned=False, copy_of=f.path, label=f.name)
            for i, f in enumerate(files)}


def ram_image_size(sources: list[Dataset]) -> int:
    """ext4 without a journal: the data in 4 KiB blocks, a block per directory, 10% and 64 MiB for
    the rest."""
    data = sum((d.size + d.files * 4095) // 4096 * 4096 for d in sources)
    return int(data * 1.1) + (sum(d.files for d in sources) // 64 + 1) * 4096 + (64 << 20)


# --- the record of what was made ---

class Record:
    """conditions.json: who made what; written (and fsync'd) before each thing is made."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.owner = [os.getpid(), uuid.uuid4().hex]
        self.made: list[dict[str, str]] = []

    def add(self, kind: str, path: str, value: str = "") -> None:
        """value: what to put back (a setting's), or nothing (a thing to remove)."""
        self.made.append({"kind": kind, "path": path, **({"value": value} if value else {})})
        self._write({"owner": self.owner, "made": self.made})

    def clear(self) -> None:
        self.made = []
        self.path.unlink(missing_ok=True)

    def _write(self, data: dict[str, Any]) -> None:
        with statemod.open_private(self.path) as f:
            f.seek(0)
            f.truncate()
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())


def _ours(kind: str, path: str, state: Path) -> bool:
    """A recorded thing is removed only where ringsum makes such things."""
    if kind == "cgroup":
        return Path(path).parent == BLKIO and CGROUP_NAME.fullmatch(Path(path).name) is not None
    if kind == "readahead":
        return READ_AHEAD.fullmatch(path) is not None
    return Path(path).parent == state and Path(path).name in (RAM_DIR, BACKING_DIR) or (
        kind == "loop" and Path(path).parent == state / BACKING_DIR)


def clean_leftovers(log: Callable[[str], None]) -> None:
    """What a run killed with -9 left behind (its owner is gone), removed before this run starts."""
    state = statemod.state_dir().absolute()
    path = state / STATE_FILE
    if not path.exists():
        return
    with statemod.open_private(path) as f:
        text = f.read()
    try:
        data = json.loads(text)
        owner = int(data["owner"][0])
        made = [(m["kind"], str(m["path"]), str(m.get("value", ""))) for m in data["made"]]
    except (ValueError, KeyError, TypeError, IndexError):
        log(f"note: {path} is corrupt; removed (nothing it names is touched)")
        path.unlink()
        return
    if statemod.alive(owner) and owner != os.getpid():
        return  # another run's, still going (runs with their own locks in the tests)
    log(f"ringsum: removing what an earlier run left under its conditions ({len(made)} things, from {path})")
    for kind, p, value in reversed(made):
        if _ours(kind, p, state):
            _remove(kind, p, log, value)
        else:
            log(f"ringsum: not removing {kind} {p}: not a place ringsum makes one")
    path.unlink()


def _run(argv: list[str]) -> str:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise EmulationError(f"{argv[0]} failed: {(r.stderr.strip().splitlines() or [f'exit {r.returncode}'])[-1]}")
    return r.stdout.strip()


def _remove(kind: str, path: str, log: Callable[[str], None], value: str = "") -> None:
    try:
        if kind == "readahead":
            if value.isdigit() and os.path.exists(path):  # a device detached since has no setting to put back
                Path(path).write_text(value + "\n")
        elif kind == "cgroup":
            _remove_cgroup(Path(path))
        elif kind == "mount":
            _unmount(path)
        elif kind == "loop":
            for line in _run(["losetup", "--noheadings", "--output", "NAME", "--associated", path]).splitlines():
                subprocess.run(["losetup", "--detach", line.strip()], capture_output=True, timeout=60)
        elif kind == "dir":
            if os.path.isdir(path) and not os.path.ismount(path):
                os.rmdir(path)
    except (OSError, EmulationError, subprocess.TimeoutExpired) as e:
        log(f"ringsum: could not remove {kind} {path}: {e}")


def _unmount(path: str) -> None:
    if not os.path.ismount(path):
        return
    for _ in range(25):  # a command killed with the driver may still be closing its files
        if subprocess.run(["umount", path], capture_output=True).returncode == 0:
            return
        time.sleep(0.2)
    _run(["umount", "--lazy", path])


def _remove_cgroup(cg: Path) -> None:
    if not cg.is_dir():
        return
    for _ in range(50):
        try:
            os.rmdir(cg)
            return
        except OSError:
            for pid in (cg / "cgroup.procs").read_text().split():
                try:  # left in our own group after the driver died: the commands of a dead run
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
    os.rmdir(cg)


# --- the conditions of one run ---

class Environment:
    """Makes the plan's conditions (start), says how to run a command under one (confinement),
    removes all it made (close)."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self.state = statemod.state_dir().absolute()
        self.record = Record(self.state / STATE_FILE)
        self.confinements: dict[str, Confinement] = {}
        self.settings: list[dict[str, str]] = []  # what the conditions changed, as meta.json's system_settings

    def start(self, conds: list[Condition], datasets: list[Dataset], programs: Iterable[tuple[Condition, str]]) -> None:
        """A plan's conditions made, as check_machine takes them."""
        check_machine(conds, datasets, programs)
        makes = any(c.read_cap or c.device == "ram" for c in conds)
        if makes and self.record.path.exists():  # clean_leftovers left it: its owner is alive
            raise EmulationError(f"another run uses the conditions' state in {self.state} (see "
                                 f"{self.record.path}); wait for it, or give this one its own RINGSUM_STATE_DIR")
        sources = [d for d in datasets if not d.copy_of]
        copies = [d for d in datasets if d.copy_of]
        loop = self._ram_device(sources, copies) if copies else None
        cpus = usable_cpus()
        for i, cond in enumerate(conds):
            cgroups = (str(self._capped(cond, i, sources, loop) / "cgroup.procs"),) if cond.read_cap else ()
            self.confinements[cond.name] = Confinement(cgroups, tuple(cpus[:cond.cores]) if cond.cores else ())

    def confinement(self, cond: Condition) -> Confinement:
        return self.confinements.get(cond.name, Confinement())

    def close(self) -> None:
        for m in reversed(self.record.made):
            _remove(m["kind"], m["path"], self.log, m.get("value", ""))
        self.record.clear()

    def _capped(self, cond: Condition, index: int, sources: list[Dataset], loop: tuple[int, int] | None) -> Path:
        cg = BLKIO / f"ringsum-{self.record.owner[1][:8]}-{index}"
        self.record.add("cgroup", str(cg))
        cg.mkdir()
        devices = {loop} if cond.device == "ram" else {whole_disk(d.path) for d in sources}
        for dev in sorted(d for d in devices if d):
            (cg / "blkio.throttle.read_bps_device").write_text(f"{dev[0]}:{dev[1]} {cond.read_cap}\n")
        return cg

    def _ram_device(self, datasets: list[Dataset], copies: list[Dataset]) -> tuple[int, int]:
        """tmpfs -> image -> loop (direct I/O) -> ext4 -> mounted at <state>/ram, the datasets copied in."""
        sources = {d.path: d for d in datasets}
        size = ram_image_size(list(sources.values()))
        backing, mnt = self.state / BACKING_DIR, ram_root()
        for d in (backing, mnt):
            self.record.add("dir", str(d))
            d.mkdir(mode=0o700, exist_ok=True)
            if d.is_symlink() or not d.is_dir() or d.stat().st_uid != os.geteuid() or os.path.ismount(d):
                raise EmulationError(f"condition ram: {d} is not an empty directory of ours (a symlink, "
                                     "another's, or mounted); remove it")
        self.record.add("mount", str(backing))
        _run(["mount", "-t", "tmpfs", "-o", f"size={size + (1 << 20)},mode=0700", "ringsum-ram", str(backing)])
        image = backing / "disk.img"
        self.record.add("loop", str(image))
        with open(image, "wb") as f:
            f.truncate(size)
        inodes = sum(d.files for d in sources.values()) * 2 + 1024
        _run(["mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-m", "0", "-N", str(inodes), str(image)])
        dev = _run(["losetup", "--find", "--show", "--direct-io=on", str(image)])
        self._read_ahead_as_disk(dev, datasets)
        self.record.add("mount", str(mnt))
        _run(["mount", "-t", "ext4", "-o", "noatime", dev, str(mnt)])
        for copy in copies:
            _copy(sources[copy.copy_of], Path(copy.path))
        st = os.stat(dev)
        return os.major(st.st_rdev), os.minor(st.st_rdev)


    def _read_ahead_as_disk(self, dev: str, datasets: list[Dataset]) -> None:
        """The loop device reads ahead as the disk of the first dataset does: the two devices differ
        in speed alone. Recorded first, so that every way out puts the old setting back."""
        name = Path(dev).name
        setting = Path(f"/sys/block/{name}/queue/read_ahead_kb")
        if not READ_AHEAD.fullmatch(str(setting)) or not setting.exists():
            raise EmulationError(f"condition ram: {dev} has no read-ahead setting in /sys/block")
        disk = whole_disk(datasets[0].path) if datasets else None
        wanted = DEFAULT_READ_AHEAD_KB
        if disk:
            wanted = int(Path(f"/sys/dev/block/{disk[0]}:{disk[1]}/queue/read_ahead_kb").read_text())
        before = setting.read_text().strip()
        self.record.add("readahead", str(setting), before)
        setting.write_text(f"{wanted}\n")
        self.settings.append({"name": "RAM device read-ahead (KiB)", "path": str(setting), "before": before,
                              "during": str(wanted), "note": "the disk's" if disk else "the kernel's default"})


def _copy(source: Dataset, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not source.is_tree:
        shutil.copyfile(source.path, dest)
        return
    for path, _size in tree_files(source.path):
        target = dest / os.path.relpath(path, source.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


@contextmanager
def environment(log: Callable[[str], None]) -> Iterator[Environment]:
    """The run's conditions; whatever it made is removed on leaving, however it leaves. An ending
    signal during the removal waits until it is done."""
    clean_leftovers(log)
    env = Environment(log)
    try:
        yield env
    finally:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        try:
            env.close()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

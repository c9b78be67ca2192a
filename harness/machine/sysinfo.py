"""Machine fingerprint and tool versions, probed in one place.

Every probe that fails records null for its value and the reason under "errors";
nothing here raises.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any, Callable

from harness.catalog.tools import TOOL_LIST, find_tool
from harness.catalog.variants import REPO_ROOT, VARIANTS, default_bin_dir

CPU_FLAGS_OF_INTEREST = ("sse2", "sse4_1", "ssse3", "avx", "avx2", "avx512f", "avx512vl", "avx512bw",
                         "sha_ni", "aes", "neon", "asimd", "hypervisor")
# BLAKE3's dispatch (c/blake3_dispatch.c): the best of these the CPU has, best first, and the flags each needs.
BLAKE3_SIMD = (("avx512", ("avx512f", "avx512vl")), ("avx2", ("avx2",)), ("sse41", ("sse4_1",)),
               ("sse2", ("sse2",)), ("neon", ("asimd",)), ("neon", ("neon",)))
DMI = Path("/sys/class/dmi/id")
DMI_FIELDS = ("sys_vendor", "product_name", "product_version", "board_vendor", "board_name")
# The fields that make two machines' timings comparable, in the order fingerprint_id hashes them:
# the machine's, then the storage's under the test file. Not the hostname, the mount point, the
# device serial or the free space: two identical machines share an id.
# The CPU's signature (family, model, stepping) is in it since a VM often names every Xeon
# "Intel Xeon Processor"; the virtualisation is the VM's, not the container's it may also run in.
MACHINE_ID_FIELDS = ("cpu_model", "cpu_signature", "cores", "blake3_simd", "mem_gib", "kernel_series",
                     "virtualization", "dmi_sys_vendor", "dmi_product_name")
STORAGE_ID_FIELDS = ("fs_type", "mount_options", "device_driver", "device_model", "device_vendor",
                     "device_size_bytes", "rotational", "scheduler", "read_ahead_kb")


def _run(argv: list[str], timeout: float = 10) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True)
    return (out.stdout or out.stderr).strip()


class _Probe:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.errors: dict[str, str] = {}

    def __call__(self, key: str, fn: Callable[[], Any]) -> Any:
        try:
            v = fn()
        except Exception as e:  # noqa: BLE001 - every failure becomes null + reason
            v = None
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if isinstance(e, subprocess.CalledProcessError):
                reason = f"{' '.join(map(str, e.cmd))}: exit {e.returncode}"
            if isinstance(e, FileNotFoundError) and e.filename:
                reason = f"not found: {e.filename}"
            self.errors[key] = reason
        self.values[key] = v
        return v


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            info.setdefault(k.strip(), v.strip())
    return info


def _os_release() -> str:
    kv = {}
    for line in Path("/etc/os-release").read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            kv[k] = v.strip().strip('"')
    return kv.get("PRETTY_NAME") or kv["NAME"]


def _mount_of(path: Path) -> dict[str, str]:
    """The mountinfo entry of the filesystem holding `path` (matched by device number)."""
    st = os.stat(path)
    want = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    best: dict[str, str] | None = None
    real = str(path.resolve())
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, right = line.split(" - ", 1)
        f = left.split()
        r = right.split()
        if f[2] != want:
            continue
        mnt = f[4].replace("\\040", " ")
        if real == mnt or real.startswith(mnt.rstrip("/") + "/"):
            if best is None or len(mnt) > len(best["mount_point"]):
                best = {"mount_point": mnt, "fs_type": r[0], "source": r[1],
                        "mount_options": f[5] + ("," + r[2] if len(r) > 2 else ""), "dev": want}
    if best is None:
        raise LookupError(f"no mountinfo entry for device {want}")
    return best


def _block_device(dev: str) -> Path:
    """/sys/block/<disk> for a major:minor (partitions map to their disk)."""
    p = Path("/sys/dev/block") / dev
    if not p.exists():
        raise LookupError(f"no block device {dev} (not a block-device filesystem)")
    real = p.resolve()
    if (real / "partition").exists():
        real = real.parent
    return Path("/sys/block") / real.name


def _read(p: Path) -> str:
    return p.read_text().strip()


def _device_driver(disk: Path) -> str:
    """The driver behind a disk (virtio_blk, nvme, sd, ...); for devices without one (loop, zram,
    nbd, md), the device name without its number."""
    driver = disk / "device" / "driver"
    if driver.exists():
        return driver.resolve().name
    return re.sub(r"\d+$", "", disk.name)


def _scheduler(disk: Path) -> str:
    text = _read(disk / "queue" / "scheduler")
    chosen = re.search(r"\[(\S+)\]", text)
    return chosen.group(1) if chosen else text


def _blake3_simd(flags: set[str]) -> str:
    return next((name for name, need in BLAKE3_SIMD if flags.issuperset(need)), "portable")


def _detect_virt(kind: str) -> str | None:
    """systemd-detect-virt's answer for one kind ("--vm" or "--container"); None where it has none."""
    try:
        out = subprocess.run(["systemd-detect-virt", kind], capture_output=True, text=True, timeout=5)
    except OSError:
        return None
    return out.stdout.strip() or None


def _virtualization(flags: set[str]) -> str:
    """The virtual machine this runs in ("none" on bare metal), as systemd-detect-virt --vm says,
    else Xen's /sys/hypervisor/type, else the CPU's hypervisor flag. A container is another
    field: inside one, plain systemd-detect-virt names the container and hides the VM under it."""
    vm = _detect_virt("--vm")
    if vm:
        return vm
    xen = Path("/sys/hypervisor/type")
    if xen.exists():
        return _read(xen)
    if "hypervisor" in flags:
        return "unknown hypervisor"
    raise LookupError("no systemd-detect-virt, /sys/hypervisor or cpuinfo flags to tell")


def _cpu_signature(cpu: dict[str, str]) -> str:
    """family/model/stepping, in decimal as /proc/cpuinfo gives them ("25/1/1": a Zen 3 Milan)."""
    parts = [cpu.get(k) for k in ("cpu family", "model", "stepping")]
    if not all(p and p.isdigit() for p in parts):
        parts = [cpu.get(k) for k in ("CPU implementer", "CPU part", "CPU revision")]  # arm64
    if not all(parts):
        raise LookupError("/proc/cpuinfo gives no family, model and stepping")
    return "/".join(str(p) for p in parts)


def _cache_size(level: int) -> int | None:
    """The first CPU's data or unified cache of this level, from sysfs ("1280K")."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        if _read(index / "level") == str(level) and _read(index / "type") in ("Data", "Unified"):
            size = _read(index / "size") or ""
            return int(size[:-1]) * {"K": 1 << 10, "M": 1 << 20}[size[-1]] if size[-1:] in "KM" and size[:-1].isdigit() else None
    return None


def page_cache_reclaim(sys_root: Path = Path("/sys")) -> str:
    """What pages out memory left idle, as the kernel is set (DAMON's schemes, or its reclaim module):
    a cached file nobody reads then leaves the page cache, and a race by hand must read it again just
    before (docs/cold-path/path-trial-zen5). Not in the id: a setting, not the machine."""
    found = []
    for kdamond in sorted((sys_root / "kernel/mm/damon/admin/kdamonds").glob("[0-9]*")):
        if _read(kdamond / "state") != "on":
            continue
        for context in sorted((kdamond / "contexts").glob("[0-9]*")):
            aggregation_us = int(_read(context / "monitoring_attrs/intervals/aggr_us"))
            for scheme in sorted((context / "schemes").glob("[0-9]*")):
                if _read(scheme / "action") == "pageout":
                    idle_s = int(_read(scheme / "access_pattern/age/min")) * aggregation_us / 1e6
                    found.append(f"DAMON pageout of memory idle {idle_s:g} s (kdamond {kdamond.name})")
    module = sys_root / "module/damon_reclaim/parameters"
    if (module / "enabled").exists() and _read(module / "enabled") == "Y":
        found.append(f"DAMON_RECLAIM of memory idle {int(_read(module / 'min_age')) / 1e6:g} s")
    return "; ".join(found) or "none"


def fingerprint(file: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    probe = _Probe()
    cpu = probe("cpuinfo", _cpuinfo) or {}
    probe.values.pop("cpuinfo", None)
    probe("cpu_model", lambda: cpu.get("model name") or cpu.get("Model") or platform.processor() or None)
    probe("cpu_signature", lambda: _cpu_signature(cpu))
    probe("cores", os.cpu_count)
    probe("cores_usable", lambda: len(os.sched_getaffinity(0)))
    flags = set((cpu.get("flags") or cpu.get("Features") or "").split())
    probe("cpu_flags", lambda: [f for f in CPU_FLAGS_OF_INTEREST if f in flags])
    probe("blake3_simd", lambda: _blake3_simd(flags) if flags else None)
    for level in (2, 3):  # per core (L2) and shared (L3): what a stage size is chosen from; not in the id
        probe(f"l{level}_cache_bytes", lambda level=level: _cache_size(level))
    mem = probe("mem_total_bytes", lambda: int(re.search(r"MemTotal:\s+(\d+) kB",
                                                         Path("/proc/meminfo").read_text()).group(1)) * 1024)
    probe("mem_gib", lambda: round(mem / (1 << 30)) if mem else None)
    kernel = probe("kernel", platform.release)
    probe("kernel_series", lambda: re.match(r"\d+\.\d+", kernel).group(0))
    probe("virtualization", lambda: _virtualization(flags))
    probe("container", lambda: _detect_virt("--container") or "none")
    for field in DMI_FIELDS:
        probe(f"dmi_{field}", lambda field=field: _read(DMI / field) or None)
    probe("arch", platform.machine)
    probe("distribution", _os_release)
    probe("hostname", platform.node)
    probe("io_uring_disabled", lambda: int(_read(Path("/proc/sys/kernel/io_uring_disabled"))))
    probe("page_cache_reclaim", page_cache_reclaim)
    target = Path(file) if file else REPO_ROOT
    probe("file", lambda: str(target))
    mount = probe("mount", lambda: _mount_of(target)) or {}
    probe.values.pop("mount", None)
    for k in ("fs_type", "mount_options", "mount_point", "source"):
        probe(k, lambda k=k: mount[k] if mount else None)
    if mount:
        disk = probe("block_device", lambda: str(_block_device(mount["dev"])))
        if disk:
            d = Path(disk)
            probe("device_driver", lambda: _device_driver(d))
            probe("device_model", lambda: _read(d / "device" / "model") or None)
            probe("device_vendor", lambda: _read(d / "device" / "vendor") or None)
            probe("device_size_bytes", lambda: int(_read(d / "size")) * 512)
            probe("rotational", lambda: _read(d / "queue" / "rotational") == "1")
            probe("scheduler", lambda: _scheduler(d))
            probe("nr_requests", lambda: int(_read(d / "queue" / "nr_requests")))
            probe("device_queue_depth", lambda: int(_read(d / "device" / "queue_depth")))
            probe("max_sectors_kb", lambda: int(_read(d / "queue" / "max_sectors_kb")))
            probe("read_ahead_kb", lambda: int(_read(d / "queue" / "read_ahead_kb")))
    out = dict(probe.values)
    out["fingerprint_id"] = fingerprint_id(out)
    out["errors"] = probe.errors
    return out


def fingerprint_id(fp: dict[str, Any]) -> str:
    """Short stable id of the fields that make timings comparable (MACHINE_ID_FIELDS, then
    STORAGE_ID_FIELDS): two machines that differ only in their disk get two ids."""
    key = [fp.get(k) for k in MACHINE_ID_FIELDS + STORAGE_ID_FIELDS]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:12]


def _blake3_version(bin_dir: Path) -> str:
    for name in VARIANTS:
        prog = bin_dir / name
        if prog.exists():
            try:
                out = _run([str(prog), "--version"], timeout=5)
                m = re.search(r"blake3\D*(\d+\.\d+\.\d+)", out, re.IGNORECASE)
                if m:
                    return m.group(1)
            except (subprocess.SubprocessError, OSError):
                pass
    vendored = sorted((REPO_ROOT / "build" / "vendor").glob("blake3-*"))
    if vendored:
        return vendored[-1].name.removeprefix("blake3-")
    raise LookupError("no hasher --version and no build/vendor/blake3-*")


def versions(bin_dir: Path | None = None, tools: dict[str, str] | None = None) -> dict[str, Any]:
    """Versions of the toolchain and the measured tools. `tools` maps name -> executable."""

    tools = dict(tools or {})
    versioned = [tool for tool in TOOL_LIST if tool.version]
    for name in ("hyperfine", "gcc", *(tool.name for tool in versioned)):
        if name not in tools:
            found = find_tool(name)
            tools[name] = str(found) if found else name
    probe = _Probe()
    probe("gcc", lambda: _run([tools["gcc"], "-dumpfullversion"]))
    probe("liburing", lambda: _run(["dpkg-query", "-W", "-f=${Version}", "liburing-dev"]))
    probe("blake3", lambda: _blake3_version(bin_dir or default_bin_dir()))
    probe("hyperfine", lambda: _run([tools["hyperfine"], "--version"]).split()[-1])
    for tool in versioned:
        probe(tool.name, lambda tool=tool: tool.version(_run([tools[tool.name], "--version"])))
    probe("python", platform.python_version)
    probe("pandas", lambda: __import__("pandas").__version__)
    probe("tqdm", lambda: __import__("tqdm").__version__)
    probe("ringsum", lambda: __import__("harness").__version__)
    out = dict(probe.values)
    out["errors"] = probe.errors
    return out


def git_state() -> dict[str, Any]:
    probe = _Probe()
    probe("git_commit", lambda: _run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"]))
    probe("git_dirty", lambda: bool(subprocess.run(
        ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, timeout=10, check=True).stdout.strip()))
    out = dict(probe.values)
    out["git_errors"] = probe.errors
    return out


def sysinfo(file: str | os.PathLike[str] | None = None, bin_dir: Path | None = None) -> dict[str, Any]:
    return {"fingerprint": fingerprint(file), "versions": versions(bin_dir), **git_state()}


def human(info: dict[str, Any]) -> str:
    """`ringsum sysinfo` for a person: what a figure measured here depends on (`--json`: all of it)."""
    fp, v = info["fingerprint"], info["versions"]

    def size(n: int | None) -> str:
        return "?" if not n else f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n / (1 << 20):.2f} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"

    mem = fp.get("mem_total_bytes")
    lines = [
        f"machine:     {fp.get('cpu_model') or '?'} ({fp.get('cpu_signature') or '?'}), {fp.get('cores') or '?'} cores ({fp.get('cores_usable') or '?'} usable), "
        f"BLAKE3 SIMD {fp.get('blake3_simd') or '?'}, L2 {size(fp.get('l2_cache_bytes'))} per core, "
        f"L3 {size(fp.get('l3_cache_bytes'))}" + (f", {mem / 2**30:.0f} GiB" if mem else ""),
        f"system:      {fp.get('distribution') or '?'}, kernel {fp.get('kernel') or '?'}, {fp.get('arch') or '?'}"
        + (f", {fp['virtualization']}" if fp.get("virtualization") else "")
        + (f" ({fp['container']} container)" if fp.get("container") not in (None, "none") else "") + f", io_uring_disabled={fp.get('io_uring_disabled', '?')}"
        + (f", idle page cache paged out: {fp['page_cache_reclaim']}" if fp.get("page_cache_reclaim") not in (None, "none") else ""),
        f"storage:     {fp.get('fs_type') or '?'} on {fp.get('source') or '?'} (for {fp.get('file') or '?'}): "
        f"{fp.get('device_driver') or '?'}, {'rotational' if fp.get('rotational') else 'non-rotational'}, "
        f"scheduler {fp.get('scheduler') or '?'}, read-ahead {fp.get('read_ahead_kb', '?')} KiB",
        "tools:       " + ", ".join(f"{k} {val}" for k, val in v.items() if k != "errors" and val),
        f"git:         {str(info.get('git_commit') or '?')[:12]}" + (" (dirty)" if info.get("git_dirty") else ""),
        f"fingerprint: {fp.get('fingerprint_id')} (what makes timings comparable; saved in every run's meta.json)",
    ]
    missing = sorted(set(fp.get("errors") or {}) | set(v.get("errors") or {}))
    if missing:
        lines.append(f"not known:   {', '.join(missing)} (--json says why)")
    return "\n".join(lines) + "\n"

"""The machine fingerprint tells storage apart: a file on this machine's own disk and one on a loop
device (a real second block device, ext4 like the root) give the same machine fields and two ids."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from harness.machine.sysinfo import MACHINE_ID_FIELDS, STORAGE_ID_FIELDS, fingerprint, fingerprint_id

pytestmark = pytest.mark.independent

REPO = Path(__file__).resolve().parent.parent


def _sh(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout.strip()


@pytest.fixture
def loop_mount(tmp_path: Path) -> Iterator[Path]:
    """An ext4 filesystem on a loop device over a 64 MiB file, mounted under tmp_path."""
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("losetup", "mkfs.ext4", "mount")):
        pytest.skip("needs root, losetup, mkfs.ext4 and mount")
    image, mnt = tmp_path / "disk.img", tmp_path / "mnt"
    with open(image, "wb") as f:
        f.truncate(64 << 20)
    mnt.mkdir()
    try:
        dev = _sh("losetup", "--find", "--show", str(image))
    except subprocess.CalledProcessError as e:
        pytest.skip(f"no loop device: {e.stderr.strip()}")
    try:
        _sh("mkfs.ext4", "-q", "-F", dev)
        _sh("mount", dev, str(mnt))
        try:
            yield mnt
        finally:
            _sh("umount", str(mnt))
    finally:
        _sh("losetup", "--detach", dev)


def test_two_disks_two_ids(loop_mount: Path) -> None:
    on_loop = loop_mount / "data.bin"
    on_loop.write_bytes(os.urandom(1 << 20))
    root, loop = fingerprint(REPO / "pyproject.toml"), fingerprint(on_loop)
    assert loop["block_device"].startswith("/sys/block/loop"), loop["block_device"]
    assert root["block_device"] != loop["block_device"]
    assert root["fs_type"] == loop["fs_type"] == "ext4"
    assert {k: root[k] for k in MACHINE_ID_FIELDS} == {k: loop[k] for k in MACHINE_ID_FIELDS}
    assert loop["device_driver"] == "loop" and loop["device_size_bytes"] == 64 << 20
    assert [k for k in STORAGE_ID_FIELDS if root[k] != loop[k]], "no storage field tells the disks apart"
    assert root["fingerprint_id"] != loop["fingerprint_id"]
    assert fingerprint(on_loop)["fingerprint_id"] == loop["fingerprint_id"]  # stable


def test_fields_of_this_machine() -> None:
    fp = fingerprint(REPO / "pyproject.toml")
    assert fp["cpu_model"] and fp["cores"] >= 1 and fp["mem_gib"] >= 1
    assert fp["blake3_simd"] in ("avx512", "avx2", "sse41", "sse2", "neon", "portable")
    assert fp["kernel_series"] and fp["kernel"].startswith(fp["kernel_series"])
    assert fp["virtualization"], fp["errors"].get("virtualization")
    assert fp["device_size_bytes"] > 0 and isinstance(fp["rotational"], bool)
    assert fp["read_ahead_kb"] >= 0 and fp["scheduler"] and fp["mount_options"]
    for key, reason in fp["errors"].items():
        assert fp[key] is None and reason, key


def test_the_cpu_is_told_by_its_signature_and_the_vm_apart_from_a_container() -> None:
    """A VM often names every Xeon "Intel Xeon Processor": the family, model and stepping tell them
    apart, and they are in the id. The virtualisation is the VM's even inside a container (this KVM
    guest's Docker container was once recorded as "docker"); the container is its own field."""
    fp = fingerprint(REPO / "pyproject.toml")
    cpu = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in open("/proc/cpuinfo")) if v}
    if "cpu family" in cpu:
        assert fp["cpu_signature"] == f"{cpu['cpu family']}/{cpu['model']}/{cpu['stepping']}"
    assert "cpu_signature" in MACHINE_ID_FIELDS and "container" not in MACHINE_ID_FIELDS
    vm = subprocess.run(["systemd-detect-virt", "--vm"], capture_output=True, text=True).stdout.strip()
    container = subprocess.run(["systemd-detect-virt", "--container"], capture_output=True, text=True).stdout.strip()
    assert fp["virtualization"] == vm and fp["container"] == container
    other = dict(fp, cpu_signature="6/207/2")
    assert fingerprint_id(other) != fp["fingerprint_id"]


def test_sysinfo_for_a_person_and_as_json() -> None:
    """`ringsum sysinfo` names what a figure depends on (CPU, SIMD level, L2, disk); --json has it all."""
    import json
    import sys

    repo = Path(__file__).resolve().parent.parent
    text = subprocess.run([sys.executable, "-m", "harness", "sysinfo"], capture_output=True, text=True, check=True,
                          cwd=repo).stdout
    machine = text.splitlines()[0]
    assert machine.startswith("machine: ") and "BLAKE3 SIMD " in machine and " per core" in machine
    assert [line.split(":")[0] for line in text.splitlines()][:6] == [
        "machine", "system", "storage", "tools", "git", "fingerprint"]
    data = json.loads(subprocess.run([sys.executable, "-m", "harness", "sysinfo", "--json"], capture_output=True,
                                     text=True, check=True, cwd=repo).stdout)
    assert data["fingerprint"]["fingerprint_id"] in text.splitlines()[5]
    assert "l2_cache_bytes" in data["fingerprint"]


def _damon_tree(root: Path, state: str, action: str) -> None:
    """The sysfs layout of the Zen 5 guest's kdamond (docs/cold-path/path-trial-zen5), as read there."""
    kdamond = root / "kernel/mm/damon/admin/kdamonds/0"
    context = kdamond / "contexts/0"
    scheme = context / "schemes/0"
    for path, text in ((kdamond / "state", state), (context / "operations", "paddr"),
                       (context / "monitoring_attrs/intervals/aggr_us", "5000000"),
                       (scheme / "action", action), (scheme / "access_pattern/age/min", "12"),
                       (root / "kernel/mm/damon/admin/kdamonds/nr_kdamonds", "1")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def test_the_fingerprint_says_when_idle_page_cache_is_paged_out(tmp_path: Path) -> None:
    """A guest whose DAMON pages out memory idle for a minute empties a cached tree left alone: sysinfo
    says so (not in the id), and says nothing of a kdamond that is off or only watches."""
    from harness.machine.sysinfo import page_cache_reclaim

    _damon_tree(tmp_path / "on", "on", "pageout")
    assert page_cache_reclaim(tmp_path / "on") == "DAMON pageout of memory idle 60 s (kdamond 0)"
    _damon_tree(tmp_path / "off", "off", "pageout")
    _damon_tree(tmp_path / "stat", "on", "stat")
    assert page_cache_reclaim(tmp_path / "off") == page_cache_reclaim(tmp_path / "stat") == "none"
    module = tmp_path / "module" / "module/damon_reclaim/parameters"
    module.mkdir(parents=True)
    (module / "enabled").write_text("Y\n")
    (module / "min_age").write_text("120000000\n")
    assert page_cache_reclaim(tmp_path / "module") == "DAMON_RECLAIM of memory idle 120 s"
    here = fingerprint()
    assert here["page_cache_reclaim"] == page_cache_reclaim() and "page_cache_reclaim" not in MACHINE_ID_FIELDS

"""The fleet over real SSH: harness/fleet/playbook.yml against two hosts as an inventory names real
machines, and one of them dies mid-run.

Each host is a network namespace of this machine with its own address (a veth pair), its own SSH
server (dropbear, from Debian's dropbear-bin: a binary, no service) with a host key the controller
checks, a user that is not root (sudo without a password, as on a cloud image) and a key made for
the test. The playbook ships the checkout there over SSH and runs `ringsum run` with sudo. Once
host-b's ringsum has started, host-b dies: every process in its namespace is killed (its SSH server,
the session, ringsum and what ringsum runs). The fleet report still has host-a's results, and names
host-b and why it is missing. Everything made here (namespaces, veths, users and homes, the sudoers
entry, keys, processes, a system setting the killed run left changed, the files of the module killed
with host-b: its TMPDIR is in its home) is removed at the end, also when the test fails; leftovers
of a test run that was itself killed are removed at the start.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.machine import settings as system

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
PREFIX = "rsfl"  # namespaces, veths, users and the sudoers entry: PREFIX<pid><host letter>
SUDOERS = Path("/etc/sudoers.d")
PORT = 2222
CONFIG = """
[run]
rounds = 2
cache = "cold"
file_size = "8M"
timeout_s = 30

[[hashers]]
variant = "uring_b3sum"
block_size = ["512K"]
queue_depth = [4]

[baselines]
cat = true
b3sum = { num_threads = [1] }
limit = false
"""


def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=check)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill_namespace(ns: str) -> None:
    """Every process in the namespace, SIGKILL: the host is gone, as if its power were cut."""
    pids = _sh("ip", "netns", "pids", ns, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def _remove(name: str) -> None:
    """One host of a test run: its processes, namespace (its veth goes with it), user and home."""
    if name in _sh("ip", "netns", "list", check=False).stdout.split():
        _kill_namespace(name)
        _sh("ip", "netns", "delete", name, check=False)
    _sh("ip", "link", "delete", f"{name}0", check=False)
    if _sh("getent", "passwd", name, check=False).returncode == 0:
        _sh("pkill", "-KILL", "-u", name, check=False)
        _sh("userdel", "--remove", name, check=False)


def _remove_run(pid: int) -> None:
    for line in _sh("getent", "passwd", check=False).stdout.splitlines():
        if line.startswith(f"{PREFIX}{pid}"):
            _remove(line.split(":", 1)[0])
    for ns in _sh("ip", "netns", "list", check=False).stdout.split():
        if ns.startswith(f"{PREFIX}{pid}"):
            _remove(ns)
    (SUDOERS / f"{PREFIX}{pid}").unlink(missing_ok=True)


def _leftovers(pid: int) -> list[str]:
    """What of test run `pid` is still there: namespaces, links, users, the sudoers entry, processes."""
    mine = f"{PREFIX}{pid}"
    users = [ln.split(":", 1)[0] for ln in _sh("getent", "passwd", check=False).stdout.splitlines()]
    return ([f"namespace {n}" for n in _sh("ip", "netns", "list", check=False).stdout.split() if n.startswith(mine)]
            + [f"link {n}" for n in re.findall(r"^\d+: ([^:@]+)", _sh("ip", "-o", "link", check=False).stdout, re.M)
               if n.startswith(mine)]
            + [f"user {u}" for u in users if u.startswith(mine)]
            + [f"file {p}" for p in SUDOERS.glob(f"{mine}*")]
            + [f"process {ln}" for ln in _sh("pgrep", "-a", "-f", f"/home/{mine}", check=False).stdout.splitlines()])


def _remove_leftovers() -> None:
    """What a test run killed before its clean-up left behind (its pid is gone)."""
    names = _sh("ip", "netns", "list", check=False).stdout.split() + \
        [line.split(":", 1)[0] for line in _sh("getent", "passwd", check=False).stdout.splitlines()] + \
        [p.name for p in SUDOERS.glob(f"{PREFIX}*")]
    for name in names:
        m = re.fullmatch(rf"{PREFIX}(\d+)[a-z]?", name.split()[0])
        if m and not _alive(int(m.group(1))):
            _remove_run(int(m.group(1)))


@dataclass
class Host:
    name: str  # the inventory's
    system_name: str  # namespace, user and veth prefix
    address: str
    home: Path

    @property
    def install(self) -> Path:
        return self.home / "ringsum"

    @property
    def tmp(self) -> Path:
        return self.home / "tmp"


def _wait_for_port(address: str, deadline_s: float = 30) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            socket.create_connection((address, PORT), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _make_host(name: str, letter: str, subnet: str, key_pub: str,
               tmp: Path) -> tuple[Host, str, subprocess.Popen[bytes]]:
    """(the host, its known_hosts line, its SSH server)."""
    sysname = f"{PREFIX}{os.getpid()}{letter}"
    outside, inside = f"{subnet}.1", f"{subnet}.2"
    _sh("ip", "netns", "add", sysname)
    _sh("ip", "link", "add", f"{sysname}0", "type", "veth", "peer", "name", f"{sysname}1")
    _sh("ip", "link", "set", f"{sysname}1", "netns", sysname)
    _sh("ip", "addr", "add", f"{outside}/24", "dev", f"{sysname}0")
    _sh("ip", "link", "set", f"{sysname}0", "up")
    for argv in (["ip", "addr", "add", f"{inside}/24", "dev", f"{sysname}1"], ["ip", "link", "set", f"{sysname}1", "up"],
                 ["ip", "link", "set", "lo", "up"]):
        _sh("ip", "netns", "exec", sysname, *argv)
    _sh("useradd", "--create-home", "--shell", "/bin/bash", sysname)
    home = Path(_sh("getent", "passwd", sysname).stdout.split(":")[5])
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700)
    (ssh / "authorized_keys").write_text(key_pub)
    (ssh / "authorized_keys").chmod(0o600)
    (home / "tmp").mkdir(mode=0o700)  # its TMPDIR (ringsum_environment): a killed module's files go with it
    _sh("chown", "-R", f"{sysname}:{sysname}", str(ssh), str(home / "tmp"))
    host_key = tmp / f"{name}.hostkey"
    _sh("dropbearkey", "-t", "ed25519", "-f", str(host_key))
    public = next(ln for ln in _sh("dropbearkey", "-y", "-f", str(host_key)).stdout.splitlines()
                  if ln.startswith("ssh-ed25519 "))
    log = (tmp / f"{name}.sshd.log").open("w")
    server = subprocess.Popen(["ip", "netns", "exec", sysname, "dropbear", "-F", "-E", "-s", "-w", "-p", f"{inside}:{PORT}",
                      "-r", str(host_key), "-P", str(tmp / f"{name}.pid")],
                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    _wait_for_port(inside)
    return Host(name, sysname, inside, home), f"[{inside}]:{PORT} {' '.join(public.split()[:2])}\n", server


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[Host], Path]]:
    """Two hosts reachable over SSH, and the directory of the test's keys and logs."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces and users need root")
    if not (VENV_BIN / "ansible-playbook").is_file():
        pytest.skip("ansible-core not installed (make deps)")
    missing = [t for t in ("ip", "dropbear", "dropbearkey", "sudo", "useradd") if shutil.which(t) is None]
    assert not missing, f"{missing} not found: `make deps` installs them (FLEET_APT_PACKAGES)"
    _remove_leftovers()
    tmp = tmp_path_factory.mktemp("fleet-ssh")
    setting_before = system.FREE_PAGE_REPORTING.read() if system.FREE_PAGE_REPORTING.available() else None
    servers: list[subprocess.Popen[bytes]] = []
    try:
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ringsum fleet test", "-f", str(tmp / "key"))
        key_pub = (tmp / "key.pub").read_text()
        sudoers = SUDOERS / f"{PREFIX}{os.getpid()}"
        base = 100 + (os.getpid() % 60) * 2  # two /24s of 10.213.0.0/16, apart from another test run's
        made, known = [], ""
        for i, (name, letter) in enumerate((("host-a", "a"), ("host-b", "b"))):
            host, line, server = _make_host(name, letter, f"10.213.{base + i}", key_pub, tmp)
            made.append(host)
            servers.append(server)
            known += line
        sudoers.write_text("".join(f"{h.system_name} ALL=(ALL) NOPASSWD: ALL\n" for h in made))
        sudoers.chmod(0o440)
        _sh("visudo", "-c", "-f", str(sudoers))
        (tmp / "known_hosts").write_text(known)
        yield made, tmp
    finally:
        _remove_run(os.getpid())
        for server in servers:  # killed with their namespace: reaped here
            server.wait(timeout=30)
        left = _leftovers(os.getpid())
        assert not left, f"the clean-up left {left}"
        if setting_before is not None:  # a run killed with SIGKILL could not put it back: its users entry is dead
            with system.timing_settings(lambda _: None):
                pass
            assert system.FREE_PAGE_REPORTING.read() == setting_before


def _inventory(made: list[Host], tmp: Path) -> Path:
    ssh_args = f"-o UserKnownHostsFile={tmp / 'known_hosts'} -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"
    inventory = tmp / "hosts.ini"
    inventory.write_text("[fleet]\n" + "".join(
        f"{h.name} ansible_host={h.address} ansible_port={PORT} ansible_user={h.system_name} "
        f"ansible_ssh_private_key_file={tmp / 'key'} ansible_ssh_common_args='{ssh_args}' "
        f"ansible_python_interpreter=/usr/bin/python3 ringsum_dir={h.install} "
        f"ringsum_environment='{json.dumps({'TMPDIR': str(h.tmp)})}'\n" for h in made))
    return inventory


def _ringsum_of(host: Host) -> list[int]:
    """Processes of a `ringsum run` working in the host's install directory."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if cwd == str(host.install) and any(a.endswith(b"bin/ringsum") for a in cmdline) and b"run" in cmdline:
            found.append(int(proc.name))
    return found


@pytest.fixture(scope="module")
def played(hosts: tuple[list[Host], Path]) -> tuple[subprocess.CompletedProcess[str], Path, list[Host], float]:
    """The playbook over both hosts, host-b killed once its ringsum started: (the play, its results
    directory, the hosts, seconds from host-b's ringsum start to its death)."""
    made, tmp = hosts
    subprocess.run(["make", "--no-print-directory", "wheels"], cwd=REPO, check=True, capture_output=True, timeout=300)
    seed = tmp / "seed"
    (seed / "build").mkdir(parents=True)
    for part in (".tools", "build/vendor", "build/wheels"):
        (seed / part).symlink_to(REPO / part)
    config = tmp / "tiny.toml"
    config.write_text(CONFIG)
    out = tmp / "out"
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_HOST_KEY_CHECKING": "True",
           "ANSIBLE_SSH_ARGS": "-o ControlMaster=no",  # no master connection outliving the test
           # dropbear has no SFTP subsystem of its own: files go through the session, as cat would
           "ANSIBLE_SSH_TRANSFER_METHOD": "piped",
           "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    play = subprocess.Popen([str(VENV_BIN / "ansible-playbook"), "-i", str(_inventory(made, tmp)),
                             str(REPO / "harness" / "fleet" / "playbook.yml"), "-e", f"ringsum_config={config}",
                             "-e", f"ringsum_seed={seed}", "-e", f"fleet_results={out}"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    victim = made[1]
    try:
        deadline = time.monotonic() + 600
        while not _ringsum_of(victim):
            assert play.poll() is None, "the play ended before host-b's ringsum started:\n" + play.stdout.read()[-4000:]
            assert time.monotonic() < deadline, "host-b's ringsum never started"
            time.sleep(0.1)
        started = time.monotonic()
        time.sleep(1)  # inside the run: it has its lock, settings and files
        _kill_namespace(victim.system_name)
        lived = time.monotonic() - started
        output, _ = play.communicate(timeout=600)
    finally:
        if play.poll() is None:
            play.kill()
            play.wait()
    (tmp / "ansible.log").write_text(output)
    return subprocess.CompletedProcess(play.args, play.returncode, output, ""), out, made, lived


def test_a_host_that_dies_mid_run_is_named_and_the_others_reported(played, tmp_path: Path) -> None:
    play, out, made, lived = played
    print(play.stdout[-2500:])
    assert re.search(r"host-a\s*:\s*ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0", play.stdout), play.stdout[-3000:]
    assert re.search(r"host-b\s*:.*unreachable=1", play.stdout), play.stdout[-3000:]
    # host-a: shipped over SSH into its user's home, run with sudo (as root: a cold run), fetched back
    [run_dir] = [p.parent for p in (out / "host-a").rglob("runs.csv")]
    with open(run_dir / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 * 2 and all(r["exit_code"] == "0" and r["cache"] == "cold" for r in rows)
    plan = json.loads((run_dir / "plan.json").read_text())
    assert all(c["argv"][0].startswith(str(made[0].install)) for c in plan["commands"] if c["tool"] == "hasher")
    [ok] = (out / "host-a").glob("fleet-*/status.json")
    assert json.loads(ok.read_text())["status"] == "ok"
    [dead] = (out / "host-b").glob("fleet-*/status.json")
    assert json.loads(dead.read_text()) | {"stamp": None} == {
        "host": "host-b", "stamp": None, "status": "unreachable", "task": "ringsum",
        "why": "the connection to the host failed or was lost (ansible-playbook says more)"}
    assert not list((out / "host-b").rglob("runs.csv"))
    # The module host-b's death interrupted left the files Ansible unpacks it into: in the TMPDIR given
    # by ringsum_environment (through sudo), which goes with the host's home, not in this machine's /tmp.
    assert [p.name.startswith("ansible_ansible.legacy.command_payload_") for p in made[1].tmp.iterdir()] == [True]
    assert not list(made[0].tmp.iterdir())

    report = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "harness", "collect", str(out), "--out", str(report)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    print(done.stdout, done.stderr)
    assert done.returncode == 1, done.stderr  # reported, and a host is missing
    assert "ringsum: host-b: unreachable at 'ringsum': the connection to the host failed or was lost" in done.stderr
    md = (report / "fleet.md").read_text()
    assert "| host-b | unreachable at 'ringsum': " in md and "| 1 | host-a |" in md
    with open(report / "fleet-runs.csv") as f:
        assert {r["host"] for r in csv.DictReader(f)} == {"host-a"}
    print(f"host-b died {lived:.1f} s into its ringsum run")

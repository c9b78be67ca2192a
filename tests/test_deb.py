"""The .deb (make deb): lintian finds no error in it; it installs uring_b3sum in /usr/bin and offers
it as b3sum through update-alternatives, which its removal takes back; the comparison programs are in
/usr/lib/ringsum, not on the PATH; its man pages are compressed; b3sum's own CLI tests pass against
what it installs.

In the machine's line (not independent): it runs make in the checkout, and one test installs the
package on this machine (as root), then purges it, whatever the test's outcome."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.catalog import variants
from hashers_support import ALL_VARIANTS, B3SUM, REPO, make

PACKAGE = "uring-b3sum"
COMPARISONS = sorted(set(ALL_VARIANTS) - {"uring_b3sum"})


@pytest.fixture(scope="module")
def deb() -> Path:
    make("deb", timeout=900)
    return next((REPO / "build").glob(f"{PACKAGE}_*_*.deb"))


def contents(deb: Path) -> dict[str, str]:
    """Each file and link the package holds (without the leading ".") -> its mode, as `dpkg-deb -c` says."""
    listed = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True).stdout
    return {f[5].removeprefix("."): f[0] for f in map(str.split, listed.splitlines()) if not f[0].startswith("d")}


def installed(package: str, root: Path = Path("/")) -> bool:
    status = subprocess.run(["dpkg-query", f"--admindir={root}/var/lib/dpkg", "-W", "-f=${Status}", package],
                            capture_output=True, text=True)
    return status.stdout == "install ok installed"


def test_lintian_finds_no_error(deb: Path) -> None:
    done = subprocess.run(["lintian", "--no-cfg", deb], capture_output=True, text=True, timeout=300)
    errors = [line for line in done.stdout.splitlines() if line.startswith("E:")]
    assert not errors and done.returncode == 0, done.stdout + done.stderr  # exit 2: an error tag


def test_comparison_programs_are_off_the_path_and_every_man_page_is_compressed(deb: Path) -> None:
    paths = contents(deb)
    assert [p for p in paths if p.startswith("/usr/bin/")] == ["/usr/bin/uring_b3sum"]
    for p in COMPARISONS:
        assert paths[f"/usr/lib/ringsum/bin/{p}"].startswith("-rwxr-xr-x")
        assert f"/usr/lib/ringsum/share/man/man1/{p}.1.gz" in paths
    assert paths["/usr/lib/ringsum/bin/uring_b3sum"].startswith("l")  # the harness's bin dir has every program
    pages = [p for p in paths if "/man/" in p]
    assert pages and all(p.endswith(".1.gz") for p in pages), pages
    assert not {"/usr/bin/b3sum", "/usr/share/man/man1/b3sum.1.gz"} & paths.keys()  # the alternative's
    fields = subprocess.run(["dpkg-deb", "--field", deb, "Conflicts", "Replaces", "Installed-Size", "Maintainer"],
                            capture_output=True, text=True).stdout
    assert "Conflicts" not in fields and "Replaces" not in fields and "Installed-Size: " in fields, fields


def test_deb_installs_into_an_empty_root_and_passes_b3sums_own_tests(deb: Path, tmp_path: Path) -> None:
    info = subprocess.run(["dpkg-deb", "--field", deb, "Depends"], capture_output=True, text=True)
    depends = {d.strip().split()[0] for d in info.stdout.split(",")}
    assert {"liburing2", "libtbb12", "libc6"} <= depends, info.stdout
    for package in depends:  # each one a package this machine's archive has (it is installed here)
        assert installed(package), package
    root = tmp_path / "root"
    for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates"):
        (root / d).mkdir(parents=True)
    (root / "var/lib/dpkg/status").touch()
    # An empty root has none of the Depends: dpkg is told so; the programs run with this machine's
    # libraries. Its maintainer scripts run here, and update-alternatives works in the root (DPKG_ROOT).
    dpkg = ["dpkg", f"--root={root}", "--force-depends", "--force-script-chrootless", "--log=/dev/null"]
    done = subprocess.run([*dpkg, "-i", deb], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert os.readlink(root / "usr/bin/b3sum") == "/etc/alternatives/b3sum"
    assert os.readlink(root / "etc/alternatives/b3sum") == "/usr/bin/uring_b3sum"
    suite = make("b3sum-suite", f"B3SUM_UNDER_TEST={root}/usr/bin/uring_b3sum", timeout=900)
    assert "test result: ok. 17 passed; 0 failed" in suite.stdout, suite.stdout
    done = subprocess.run([*dpkg, "--purge", PACKAGE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not (root / "usr/bin/b3sum").is_symlink() and not (root / "etc/alternatives/b3sum").is_symlink()


@pytest.fixture
def installed_deb(deb: Path) -> Iterator[Path]:
    """The package installed on this machine, purged afterwards whatever happens; skipped where that
    would change what the machine's owner installed."""
    if os.geteuid() != 0:
        pytest.skip("installing a package needs root")
    for other in (PACKAGE, "b3sum"):
        if installed(other):
            pytest.skip(f"{other} is installed on this machine: the test would change it")
    if os.path.lexists("/usr/bin/b3sum"):
        pytest.skip("/usr/bin/b3sum exists on this machine: the test would change it")
    try:
        done = subprocess.run(["dpkg", "-i", deb], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        yield deb
    finally:
        subprocess.run(["dpkg", "--purge", PACKAGE], capture_output=True, timeout=300)


def test_installed_it_is_b3sum_through_alternatives_until_removed(installed_deb: Path, tmp_path: Path) -> None:
    query = subprocess.run(["update-alternatives", "--query", "b3sum"], capture_output=True, text=True)
    assert "Value: /usr/bin/uring_b3sum" in query.stdout, query.stdout + query.stderr
    assert os.readlink("/usr/bin/b3sum") == "/etc/alternatives/b3sum"
    assert os.path.realpath("/usr/share/man/man1/b3sum.1.gz") == "/usr/share/man/man1/uring_b3sum.1.gz"
    assert os.path.realpath("/usr/share/bash-completion/completions/b3sum") == "/usr/share/ringsum/completions/b3sum"
    data = tmp_path / "data"
    data.write_bytes(b"ring" * 1000)
    theirs = subprocess.run([B3SUM, data, tmp_path / "missing"], capture_output=True, timeout=60)
    mine = subprocess.run(["/usr/bin/b3sum", data, tmp_path / "missing"], capture_output=True, timeout=60)
    assert (mine.returncode, mine.stdout, mine.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    # the tree `ringsum --bin-dir /usr/lib/ringsum/bin` runs
    assert {v.name for v in variants.variant_list(Path("/usr/lib/ringsum/bin"))} == set(ALL_VARIANTS)
    assert not any(os.path.exists(f"/usr/bin/{p}") for p in COMPARISONS)

    done = subprocess.run(["dpkg", "--remove", PACKAGE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    gone = subprocess.run(["update-alternatives", "--query", "b3sum"], capture_output=True, text=True)
    assert gone.returncode != 0 and not os.path.lexists("/usr/bin/b3sum"), gone.stdout
    assert not os.path.lexists("/usr/share/man/man1/b3sum.1.gz")

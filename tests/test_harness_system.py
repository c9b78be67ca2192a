"""System settings for timing: applied during a run, recorded in meta.json, always put back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.machine.settings import FREE_PAGE_REPORTING, SettingsError, Tunable, left_alone, timing_settings


def tunable_at(path: Path) -> Tunable:
    return Tunable(name="test knob", path=path, for_timing="11", why="a test")


def test_applied_inside_and_restored_after_even_on_error(tmp_path):
    knob = tmp_path / "knob"
    knob.write_text("9\n")
    with pytest.raises(RuntimeError):
        with timing_settings(print, (tunable_at(knob),), tmp_path / "state.json") as settings:
            assert knob.read_text().strip() == "11"
            assert settings == [{"name": "test knob", "path": str(knob), "before": "9", "during": "11", "note": ""}]
            raise RuntimeError("the run failed")
    assert knob.read_text().strip() == "9"


def test_a_setting_that_cannot_be_read_or_changed_is_advice(tmp_path):
    notes = []
    unreadable = tmp_path / "knob"
    unreadable.mkdir()  # reading it fails, as a broken sysfs file would
    with timing_settings(notes.append, (tunable_at(unreadable),), tmp_path / "state.json") as settings:
        assert settings[0]["before"] is None and settings[0]["note"].startswith("unreadable")
    assert any("cannot read test knob" in n for n in notes)
    if os.geteuid() != 0:  # root writes read-only files, so only others meet a refusal
        unwritable = tmp_path / "ro"
        unwritable.write_text("9\n")
        os.chmod(unwritable, 0o444)
        with timing_settings(notes.append, (tunable_at(unwritable),), tmp_path / "state.json") as settings:
            assert settings[0]["during"] == "9" and "left as is" in settings[0]["note"]
        assert any("cannot change test knob" in n for n in notes)


def test_overlapping_runs_restore_once_and_to_the_first_value(tmp_path):
    knob, state = tmp_path / "knob", tmp_path / "state.json"
    knob.write_text("9\n")
    with timing_settings(print, (tunable_at(knob),), state) as first:
        with timing_settings(print, (tunable_at(knob),), state) as second:
            assert second[0]["before"] == "9" and second[0]["note"] == "set by an overlapping run"
        assert knob.read_text().strip() == "11"  # the first run still measures
    assert first[0]["before"] == "9"
    assert knob.read_text().strip() == "9"


def test_a_user_that_died_does_not_pin_the_setting(tmp_path):
    knob, state = tmp_path / "knob", tmp_path / "state.json"
    knob.write_text("9\n")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    state.write_text(json.dumps({"users": [[int(dead.stdout), "killed"]], "restore": {"test knob": "9"}}))
    knob.write_text("11\n")  # left applied by the run that was killed
    with timing_settings(print, (tunable_at(knob),), state):
        pass
    assert knob.read_text().strip() == "9"


def test_leave_changes_nothing_and_keeps_no_state(tmp_path):
    knob, state = tmp_path / "knob", tmp_path / "state.json"
    knob.write_text("9\n")
    with timing_settings(print, (tunable_at(knob),), state, leave=True) as settings:
        assert knob.read_text().strip() == "9"
        assert settings == [{"name": "test knob", "path": str(knob), "before": "9", "during": "9",
                             "note": "left as is: RINGSUM_SYSTEM_SETTINGS=leave"}]
    assert knob.read_text().strip() == "9" and not state.exists()


def test_the_environment_says_leave_or_set():
    assert left_alone({}) is False and left_alone({"RINGSUM_SYSTEM_SETTINGS": "set"}) is False
    assert left_alone({"RINGSUM_SYSTEM_SETTINGS": "leave"}) is True
    with pytest.raises(SettingsError, match=r"^RINGSUM_SYSTEM_SETTINGS='Leave': it is `leave` .* or `set`"):
        left_alone({"RINGSUM_SYSTEM_SETTINGS": "Leave"})


def test_missing_settings_are_skipped(tmp_path):
    with timing_settings(print, (tunable_at(tmp_path / "absent"),), tmp_path / "state.json") as settings:
        assert settings == []


@pytest.mark.skipif(not FREE_PAGE_REPORTING.available() or os.geteuid() != 0,
                    reason="needs root on a kernel with free page reporting (a VM guest)")
def test_a_real_run_records_and_restores_free_page_reporting(tmp_path):
    before = FREE_PAGE_REPORTING.read()
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nrounds = 1\n[baselines]\nlimit = false\ncat = true\n")
    p = subprocess.run([sys.executable, "-m", "harness", "run", str(cfg), "--size", "1M", "--dir", str(tmp_path),
                        "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "RINGSUM_LOCK": str(tmp_path / "lock")})
    assert p.returncode == 0, p.stderr
    (run_dir,) = list((tmp_path / "r").iterdir())
    meta = json.loads((run_dir / "meta.json").read_text())
    (entry,) = meta["system_settings"]
    setting = next(s for s in entry["settings"] if s["name"] == "free page reporting")
    assert setting["before"] == before and setting["during"] == "11"
    assert FREE_PAGE_REPORTING.read() == before


def test_a_run_told_to_leave_the_settings_records_them_as_they_were(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nrounds = 1\n[baselines]\nlimit = false\ncat = true\n")
    argv = [sys.executable, "-m", "harness", "run", str(cfg), "--size", "1M", "--dir", str(tmp_path), "--out",
            str(tmp_path / "r")]
    env = {**os.environ, "RINGSUM_LOCK": str(tmp_path / "lock"), "RINGSUM_SYSTEM_SETTINGS": "no"}
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "RINGSUM_SYSTEM_SETTINGS='no': it is `leave`" in p.stderr and not (tmp_path / "r").exists()
    before = FREE_PAGE_REPORTING.read() if FREE_PAGE_REPORTING.available() else None
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                       env={**env, "RINGSUM_SYSTEM_SETTINGS": "leave"})
    assert p.returncode == 0, p.stderr
    (run_dir,) = list((tmp_path / "r").iterdir())
    (entry,) = json.loads((run_dir / "meta.json").read_text())["system_settings"]
    if before is not None:
        (setting,) = [s for s in entry["settings"] if s["name"] == "free page reporting"]
        assert setting["before"] == setting["during"] == before, setting
        assert setting["note"] == "left as is: RINGSUM_SYSTEM_SETTINGS=leave"
        assert FREE_PAGE_REPORTING.read() == before
    else:
        assert entry["settings"] == []

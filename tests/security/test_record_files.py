"""Bad record files (issue 14, items 7 and 9): each attack that lost or crashed on records, now
neither. Unreadable lines (non-object ones included) move to ``records.jsonl.bad`` with their
line numbers; ``run``, ``report`` and ``regrade`` say so and go on; a regrade killed with SIGKILL
at any point loses nothing and leaves nothing stale; repeated episode keys are reported.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rsigym.errors import UserError
from rsigym.graders.trace import pair_records
from rsigym.graders.trace_report import trace_analysis
from rsigym.records.jsonl import RecordWriter, move_bad_lines, read_records, remove_stale_temporaries, rewrite_records
from rsigym.report import summary
from tests.conftest import cli_here, rsigym_cmd, write_scenario
from tests.core.test_records import make_record
from tests.graders.test_trace import behaviour_battery

BAD_LINES = [b"null", b"[1,2]", b"5", b'"text"', b"{oops", b'{"schema": "rsigym.trajectory/1", "env": 5}',
             b"[" * 5000 + b"]" * 5000, b"\xff\xfe not utf-8"]


def run_folder(tmp_path: Path) -> tuple[Path, list[bytes]]:
    """A run folder whose records.jsonl interleaves good records with every bad line."""
    folder = tmp_path / "run"
    folder.mkdir()
    lines = []
    for seed, bad in enumerate(BAD_LINES):
        lines += [make_record(seed).to_json().encode(), bad]
    (folder / "records.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return folder, lines


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command in this process: what these tests check is the folder and the messages (the
    regrade killed midway below is a process of its own)."""
    return cli_here(*args)


def moved_lines(path: Path) -> dict[int, bytes]:
    out = {}
    for line in (path.parent / (path.name + ".bad")).read_bytes().split(b"\n"):
        if line and not line.startswith(b"#"):
            number, _, raw = line.partition(b"\t")
            out[int(number)] = raw
    return out


def test_non_object_lines_are_unreadable_lines_not_crashes(tmp_path):
    folder, lines = run_folder(tmp_path)
    result = read_records(folder / "records.jsonl")
    assert len(result.records) == len(lines) - len(BAD_LINES)
    assert [lines[n - 1] for n in result.bad_lines] == BAD_LINES


def test_report_moves_bad_lines_aside_with_their_numbers_and_goes_on(tmp_path):
    folder, lines = run_folder(tmp_path)
    before = (folder / "records.jsonl").read_bytes()
    report = cli("report", str(folder))
    assert report.returncode == 0, report.stderr
    assert f"moved {len(BAD_LINES)} unreadable lines" in report.stderr and "Traceback" not in report.stderr
    moved = moved_lines(folder / "records.jsonl")
    assert moved == {n: lines[n - 1] for n in moved}
    assert sorted(moved.values()) == sorted(BAD_LINES)
    kept = (folder / "records.jsonl").read_bytes().split(b"\n")[:-1]
    assert kept == [line for line in lines if line not in BAD_LINES]  # the good lines byte for byte
    assert len(kept) + len(moved) == len(before.split(b"\n")) - 1  # nothing dropped
    assert (folder / "report.md").exists()


def test_regrade_keeps_unreadable_lines_in_the_bad_file(tmp_path):
    folder, lines = run_folder(tmp_path)
    regrade = cli("regrade", str(folder), "--grader", "probe_efficiency", "--in-place")
    assert regrade.returncode == 0, regrade.stderr
    assert f"moved {len(BAD_LINES)} unreadable lines" in regrade.stderr
    assert sorted(moved_lines(folder / "records.jsonl").values()) == sorted(BAD_LINES)
    records = read_records(folder / "records.jsonl")
    assert len(records) == len(lines) - len(BAD_LINES) and not records.bad_lines
    assert all(r.grades[-1].source == "regrade" for r in records)


def test_run_moves_bad_lines_and_resumes(tmp_path):
    scenario = write_scenario(tmp_path / "s.yaml", tasks=["probe-100"], seeds=[0], conditions=["none"],
                              agents=[{"id": "bisect", "kind": "probe-bisect"}])
    out = tmp_path / "out"
    first = cli("run", str(scenario), "--out", str(out), "--workers", "0")
    assert first.returncode == 0, first.stderr
    records_file = out / "records.jsonl"
    good = records_file.read_bytes()
    records_file.write_bytes(b"null\n" + good + b"[1,2]\n")
    again = cli("run", str(scenario), "--out", str(out), "--workers", "0")
    assert again.returncode == 0, again.stderr
    assert "moved 2 unreadable lines" in again.stderr
    assert "1 episodes: 1 already recorded, 0 run now" in again.stdout
    assert moved_lines(records_file) == {1: b"null", 3: b"[1,2]"}
    assert records_file.read_bytes() == good


def test_repeated_episode_keys_are_reported_not_a_crash(tmp_path):
    records = behaviour_battery(4)
    records.insert(3, records[2])  # the same episode twice, as after concatenating two run files
    pairs = pair_records(records, "identity", "hide_cancel")
    assert len(pairs) == 4 and pairs.duplicates == 1
    section = trace_analysis(records, tmp_path, grader="reward")
    assert "1 repeated records (same episode key) left out" in section.markdown
    assert "1 repeated episode keys" in summary(records, tmp_path).verdict
    folder = tmp_path / "run"
    folder.mkdir()
    rewrite_records(folder / "records.jsonl", records)
    report = cli("report", str(folder))
    assert report.returncode == 0, report.stderr
    assert "1 records repeat an earlier record's episode key" in report.stderr


def test_rewrite_keeps_a_backup_until_the_replacement_is_done(tmp_path, monkeypatch):
    path = tmp_path / "records.jsonl"
    rewrite_records(path, [make_record(0), make_record(1)])
    before = path.read_bytes()

    def broken_replace(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        rewrite_records(path, [make_record(5)])
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert (tmp_path / "records.jsonl.bak").read_bytes() == before
    assert (tmp_path / "records.jsonl.tmp").exists()
    assert sorted(remove_stale_temporaries(path)) == ["removed the stale records.jsonl.bak",
                                                      "removed the stale records.jsonl.tmp"]
    assert path.read_bytes() == before
    assert not (tmp_path / "records.jsonl.bak").exists() and not (tmp_path / "records.jsonl.tmp").exists()


def test_a_lost_records_file_is_restored_from_its_backup(tmp_path):
    path = tmp_path / "records.jsonl"
    rewrite_records(path, [make_record(0)])
    os.link(path, tmp_path / "records.jsonl.bak")
    path.unlink()  # killed between the rename and... nothing: the backup is all that is left
    assert remove_stale_temporaries(path) == ["restored records.jsonl from records.jsonl.bak"]
    assert [r.seed for r in read_records(path)] == [0]


def test_no_rewrite_while_a_run_is_appending(tmp_path):
    path = tmp_path / "records.jsonl"
    rewrite_records(path, [make_record(0)])
    path.write_bytes(path.read_bytes() + b"null\n")
    with RecordWriter(path):
        with pytest.raises(UserError, match="in use by another rsigym process"):
            rewrite_records(path, [])
        with pytest.raises(UserError, match="in use"):
            move_bad_lines(path)
        assert remove_stale_temporaries(path) == []
    assert move_bad_lines(path) == 1


def _big_run_folder(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "big"
    folder.mkdir()
    padding = "x" * 20_000  # ~20 kB a record: writing the file takes long enough to be hit
    with RecordWriter(folder / "records.jsonl") as writer:
        for seed in range(n):
            record = make_record(seed)
            record.steps[0].observation = {"text": padding}
            writer.write(record)
    return folder


@pytest.mark.parametrize("when", ["tmp_exists", "early", "late"])
def test_regrade_killed_midway_loses_nothing_and_leaves_nothing_stale(tmp_path, when):
    n = 1500
    folder = _big_run_folder(tmp_path, n)
    path = folder / "records.jsonl"
    before = path.read_bytes()
    proc = subprocess.Popen([*rsigym_cmd(), "regrade", str(folder), "--grader", "probe_efficiency", "--in-place"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tmp = folder / "records.jsonl.tmp"
    if when == "tmp_exists":
        for _ in range(300_000):  # polls, not a clock; pytest-timeout bounds a hang
            if proc.poll() is not None or tmp.exists():
                break
            time.sleep(0.001)
    else:  # a kill at a moment of the run, not a bound on its speed
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout={"early": 0.5, "late": 3.0}[when])
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    if when == "tmp_exists":
        assert killed, "the regrade ended before its temporary file was seen"

    result = read_records(path)  # old or new, never a mix, never short
    assert len(result) == n and not result.bad_lines and not result.torn_tail
    regraded = {len(r.grades) for r in result}
    assert regraded in ({1}, {2}), regraded
    if regraded == {1}:
        assert path.read_bytes() == before

    again = cli("regrade", str(folder), "--grader", "probe_efficiency", "--in-place")
    assert again.returncode == 0, again.stderr
    assert len(read_records(path)) == n
    assert not tmp.exists() and not (folder / "records.jsonl.bak").exists()


def test_bad_file_is_appended_never_overwritten(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_bytes(make_record(0).to_json().encode() + b"\nnull\n")
    assert move_bad_lines(path) == 1
    path.write_bytes(path.read_bytes() + b"[1]\n")
    assert move_bad_lines(path) == 1
    text = (tmp_path / "records.jsonl.bad").read_bytes()
    assert b"2\tnull\n" in text and b"2\t[1]\n" in text and text.count(b"# ") == 2
    assert json.loads(path.read_bytes())["seed"] == 0


def test_a_rewrite_never_drops_records_appended_after_the_read(tmp_path):
    path = tmp_path / "records.jsonl"
    rewrite_records(path, [make_record(0)])
    read = read_records(path)
    with RecordWriter(path) as writer:  # a run appends while a (slow) regrade grades
        writer.write(make_record(1))
    grown = path.read_bytes()
    with pytest.raises(UserError, match="changed since it was read"):
        rewrite_records(path, read.records, expected_size=read.size_bytes)
    assert path.read_bytes() == grown
    rewrite_records(path, read_records(path).records, expected_size=len(grown))  # a fresh read may
    assert [r.seed for r in read_records(path)] == [0, 1]

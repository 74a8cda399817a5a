import sys
import textwrap
from dataclasses import dataclass
from typing import ClassVar

import pytest

from rsigym.errors import UserError
from rsigym.graders import available_graders, get_grader, grade_record, regrade, register_grader
from rsigym.records import Grade
from rsigym.registry import GRADERS

from ..core.test_records import make_record


def test_registry_builds_graders_with_params():
    grader = get_grader("probe_answer", tolerance=3, sandbox="local")
    assert grader.name == "probe_answer" and grader.tolerance == 3
    with pytest.raises(UserError, match="unknown grader 'nope'; known: .*probe_answer"):
        get_grader("nope")
    with pytest.raises(UserError, match="rejects params"):
        get_grader("probe_answer", tolerence=1)


def test_register_rejects_incomplete_graders_and_name_clashes():
    with pytest.raises(TypeError, match="lacks version"):
        register_grader("broken")(type("Broken", (), {"needs": frozenset(), "grade": lambda s, r: None}))
    with pytest.raises(TypeError, match="needs"):
        register_grader("broken2")(type("B", (), {"version": "1", "needs": frozenset({"vibes"}),
                                                  "grade": lambda s, r: None}))
    with pytest.raises(ValueError, match="already registered"):
        register_grader("probe_answer")(type("C", (), {"version": "1", "needs": frozenset(),
                                                       "grade": lambda s, r: None}))


def test_failing_grader_is_recorded_not_raised():
    @dataclass(frozen=True)
    class Explodes:
        name: ClassVar[str] = "explodes"
        version: ClassVar[str] = "7"
        needs: ClassVar[frozenset[str]] = frozenset({"trajectory"})

        def grade(self, record):
            raise RuntimeError("boom")

    grade = grade_record(Explodes(), make_record())
    assert grade.score is None and grade.error == "RuntimeError: boom" and grade.version == "7"


def test_regrade_appends_and_keeps_originals():
    @dataclass(frozen=True)
    class Steps:
        name: ClassVar[str] = "steps"
        version: ClassVar[str] = "2"
        needs: ClassVar[frozenset[str]] = frozenset({"trajectory"})
        scale: float = 1.0

        def grade(self, record):
            return Grade("ignored", "ignored", self.scale * len(record.steps))

    records = [make_record(0), make_record(1)]
    out = regrade(records, Steps(scale=2.0))
    for old, new in zip(records, out):
        assert len(old.grades) == 1  # inputs untouched
        assert new.grades[0] == old.grades[0]
        added = new.grades[1]
        assert (added.grader, added.version, added.source, added.score) == ("steps", "2", "regrade", 2.0)
        assert added.params == {"scale": 2.0}
        assert new.steps == old.steps and new.final == old.final


def test_third_party_grader_through_entry_point(tmp_path, monkeypatch):
    (tmp_path / "thirdparty_grader.py").write_text(textwrap.dedent("""
        from dataclasses import dataclass
        from rsigym.records import Grade

        @dataclass(frozen=True)
        class LengthGrader:
            version = "3"
            needs = frozenset({"trajectory"})
            def grade(self, record):
                return Grade("length", self.version, float(len(record.steps)))
    """))
    dist = tmp_path / "thirdparty_grader-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-grader\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[rsigym.graders]\nlength = thirdparty_grader:LengthGrader\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(GRADERS, "_entry_points", None)  # read the group again, with the new package
    monkeypatch.setattr(GRADERS, "_objects", dict(GRADERS._objects))
    assert "length" in available_graders()
    grader = get_grader("length")
    grade = grade_record(grader, make_record())
    assert (grade.grader, grade.version, grade.score) == ("length", "3", 1.0)
    sys.modules.pop("thirdparty_grader", None)

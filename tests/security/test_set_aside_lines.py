"""Secrets in lines set aside as unreadable (issue 27, item 4): ``records.jsonl.bad`` and
``records.jsonl.torn`` keep a malformed or torn line for forensics, so it must be redacted by the
same structural rules as a record (``rsigym.records.redact``), not written as it was.

The planted values are ones no text rule can see: a header value under a harmless header name in
``extra_headers`` and a string under ``params.subscription_code`` (structure only), next to URL
userinfo and a query value; none is registered as a secret.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from rsigym.records.jsonl import RecordWriter, move_bad_lines, read_records
from rsigym.records.redact_lines import redact_line
from tests.core.test_records import make_record


def _planted() -> tuple[dict[str, str], list[str]]:
    header, code, password, query = (f"{name}{secrets.token_hex(8)}" for name in ("hdr", "code", "pw", "q"))
    params = {"model": "openai/gpt-x", "api_base": f"https://user:{password}@llm.example/v1?code={query}",
              "extra_headers": {"X-Trace-Route": header}, "subscription_code": code}
    return params, [header, code, password, query]


def _hostile_line(params: dict[str, str]) -> bytes:
    """A record line that is JSON but no valid record (a NaN seed): unreadable, so set aside."""
    data = make_record(7).to_dict()
    data["agent"]["params"] = params
    data["seed"] = float("nan")
    return json.dumps(data).encode()


def test_a_malformed_line_moves_to_bad_with_its_secrets_redacted_by_structure(tmp_path):
    params, planted = _planted()
    path = tmp_path / "records.jsonl"
    path.write_bytes(make_record(0).to_json().encode() + b"\n" + _hostile_line(params) + b"\n")
    assert move_bad_lines(path) == 1
    bad = (tmp_path / "records.jsonl.bad").read_bytes()
    assert [value for value in planted if value.encode() in bad] == []
    moved = [line for line in bad.split(b"\n") if line and not line.startswith(b"#")]
    assert len(moved) == 1 and moved[0].startswith(b"2\t")
    kept = json.loads(moved[0].partition(b"\t")[2])  # still the record's text, for whoever inspects it
    assert kept["agent"]["params"]["extra_headers"] == {"X-Trace-Route": "[redacted]"}
    assert kept["agent"]["params"]["model"] == "openai/gpt-x" and kept["episode_key"]
    assert [r.seed for r in read_records(path).records] == [0]


def test_a_torn_tail_moves_to_torn_with_its_secrets_redacted(tmp_path):
    params, planted = _planted()
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as writer:
        writer.write(make_record(0))
    line = _hostile_line(params).replace(b"NaN", b"1")
    for value in planted:  # cut inside each planted value in turn: a crash mid-write
        cut = line.index(value.encode()) + len(value) // 2
        path.write_bytes(path.read_bytes() + line[:cut])
        with RecordWriter(path) as writer:
            writer.write(make_record(1))
        torn = (tmp_path / "records.jsonl.torn").read_bytes()
        assert [v for v in planted if v[: len(v) // 2].encode() in torn] == [], (value, torn[-300:])
    torn_lines = torn.strip().split(b"\n")
    assert len(torn_lines) == len(planted) and all(b"[redacted" in t for t in torn_lines)
    assert [r.seed for r in read_records(path).records] == [0] + [1] * len(planted)


def test_a_line_with_nothing_secret_is_kept_byte_for_byte():
    """The control: redaction touches only secrets (forensics keep the exact line otherwise)."""
    for raw in (b'{"seed": NaN,  "x": [1, 2]}', b"{oops", b'{"episode_key": "k", "agent": {"id": "a"',
                b"\xff\xfe not utf-8", b"[" * 3000 + b"]" * 3000):
        assert redact_line(raw) == raw
    assert redact_line(b'{"agent": {"params": {"api_key": "plain-value-123"}}}') != \
        b'{"agent": {"params": {"api_key": "plain-value-123"}}}'


def test_the_bad_file_of_the_cli_holds_no_planted_secret(tmp_path: Path):
    """End to end through ``rsigym report`` (which moves unreadable lines aside and says so)."""
    from rsigym.cli import main

    params, planted = _planted()
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_bytes(make_record(0).to_json().encode() + b"\n" + _hostile_line(params) + b"\n")
    assert main(["report", str(run)]) == 0
    written = b"".join(p.read_bytes() for p in run.rglob("*") if p.is_file())
    assert (run / "records.jsonl.bad").exists()
    assert [value for value in planted if value.encode() in written] == []

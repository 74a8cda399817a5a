"""The speed table in docs/serve.md is the one ``benchmarks/serve.py`` renders from its committed results."""

from __future__ import annotations

import importlib.util
import json

from tests.conftest import REPO


def _render(result: dict) -> str:
    spec = importlib.util.spec_from_file_location("serve_benchmark", REPO / "benchmarks" / "serve.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.render_table(result)


def test_the_docs_table_is_rendered_from_the_committed_results():
    result = json.loads((REPO / "benchmarks" / "results" / "serve.json").read_text())
    assert [row["sessions"] for row in result["rows"]] == [1, 16, 64]
    text = (REPO / "docs" / "serve.md").read_text()
    block = text.split("<!-- serve-table:begin -->\n", 1)[1].split("<!-- serve-table:end -->", 1)[0]
    assert block.strip() == _render(result).strip()

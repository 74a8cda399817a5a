"""OpenEnv's server package, imported without its Gradio web interface, which rsigym does not serve.

``openenv.core.env_server`` imports its web interface when Gradio imports and carries on without it
on ``ModuleNotFoundError`` (``create_web_interface_app`` is then None). openenv-core requires Gradio,
so it is installed, and importing it costs about 2.8 CPU-seconds a process (``import openenv.core``:
3.9 s with it, 1.1 s without, on the 2-core VM; Gradio's components rewrite their ``.pyi`` stubs at
each import): paid by every ``rsigym serve`` and by every test process that collects the serve
tests. The serve modules import this one before OpenEnv. Gradio is hidden for this one import, and
only where nothing imported it before: a later ``import gradio`` works as usual.
"""

from __future__ import annotations

import sys

__all__: list[str] = []


def _import_without_gradio() -> None:
    if "openenv.core.env_server" in sys.modules or "gradio" in sys.modules:
        import openenv.core.env_server  # noqa: F401 - imported already, or with the Gradio someone imported
        return
    sys.modules["gradio"] = None  # type: ignore[assignment]  # an import of it raises ModuleNotFoundError
    try:
        import openenv.core.env_server  # noqa: F401
    finally:
        if "gradio" in sys.modules and sys.modules["gradio"] is None:
            del sys.modules["gradio"]


_import_without_gradio()

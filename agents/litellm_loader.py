"""Import LiteLLM lazily (it takes seconds) and configure it for offline-safe use once."""

from __future__ import annotations

import logging
import os
from typing import Any

__all__ = ["load_litellm"]

_litellm: Any = None


def load_litellm() -> Any:
    """The ``litellm`` module, configured: local cost map, quiet, offline provider installed."""
    global _litellm
    if _litellm is None:
        # Without this LiteLLM fetches its cost map over the network at import time.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True  # no "Provider List" banners on every error
        logging.getLogger("LiteLLM").setLevel(logging.ERROR)
        _litellm = litellm
    from .offline import install_offline_provider

    install_offline_provider(_litellm)  # cheap when nothing new was registered
    return _litellm

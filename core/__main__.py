"""``python -m rsigym`` is the ``rsigym`` command."""

import sys

from .cli import main

sys.exit(main())

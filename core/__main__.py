"""``python -m rsigym`` is the ``rsigym`` command."""

import sys

from .cli.commands import main

sys.exit(main())

"""``python -m translate``: the ``translate`` command, where its script is not on PATH."""

import sys

from .cli import main

sys.exit(main(prog="python -m translate"))

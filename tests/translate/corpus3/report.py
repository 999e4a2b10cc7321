"""The third corpus's table in docs/translate.md: ``corpus2.report`` over the third corpus's entries and sources.

    NUMBAKERN_CORPUS2_MIRRORS=DIR python -m tests.translate.corpus3.report --write-docs \\
        --verified tests/translate/corpus3/verified.json
"""

from __future__ import annotations

import sys

from ..corpus2.report import main

if __name__ == "__main__":
    sys.exit(main(folder="corpus3", title="Third corpus"))

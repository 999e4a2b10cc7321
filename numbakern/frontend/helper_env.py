"""The environment variables whose values the helper process must share with its caller.

The helper inherits the caller's environment when it starts. A backend that the helper runs for ``translate`` (the
llm backend) reads its endpoint and key from the environment, never from a request, so a caller that changes one
of these after the helper started would otherwise be served under the old values: ``helper`` replaces a helper
started under other values.
"""

from __future__ import annotations

import os

WATCHED = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "NO_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def snapshot() -> tuple[str | None, ...]:
    """The watched variables' values now (compared, never sent or stored anywhere else)."""
    return tuple(os.environ.get(k) for k in WATCHED)

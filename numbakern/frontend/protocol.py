"""How the caller and the helper process (``worker``) talk over the helper's stdin/stdout: length-prefixed frames,
a pickled request in (from the caller's own process) and JSON out."""

from __future__ import annotations

import struct

_HEADER = struct.Struct("<Q")


def write_frame(stream, data: bytes) -> None:
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def read_frame(stream) -> bytes | None:
    """The next frame, or None when the stream ended (the other side exited)."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (n,) = _HEADER.unpack(head)
    data = stream.read(n)
    if len(data) < n:
        return None
    return data

"""The errors the simulator's checkers raise, and the wording they share (threads, blocks, source lines)."""

from __future__ import annotations

import linecache
import os

from .intrinsics import HELPER_FILES


class UntypedLaunchWarning(UserWarning):
    """A launch runs with Python's arithmetic (numpy's for numpy scalars) rather than its front end's types, because
    no front end can type it here (said once per kernel). CI makes it an error: every launch is typed."""


class SimulationError(Exception):
    """A kernel defect found by numbakern's simulator (base class of all checker errors)."""


class RaceError(SimulationError):
    """Two threads touched one element without a barrier between them, and at least one wrote it."""


class UninitializedReadError(SimulationError):
    """A thread read a shared-memory element that no thread of its block had written, a local-memory element it
    had not written itself, or a device allocation's element that was never written."""


class OutOfBoundsError(SimulationError, IndexError):
    """An index past the end of an array, or a negative one (out of bounds in CUDA C)."""


class MisalignedAccessError(SimulationError):
    """A 16-byte access (``numbakern.vector_io``, ``ldmatrix``) at an address that is not a multiple of 16 bytes."""


class BarrierDivergenceError(SimulationError):
    """Threads of one block (or lanes of one warp) wait at different barriers, or some wait while others exited."""


class DeadlockError(SimulationError):
    """The launch can never finish: threads spin on memory no one will write, or wait at a barrier never reached."""


class LaunchError(SimulationError, ValueError):
    """A launch a GPU refuses: a zero or negative dimension, a block of more than 1024 threads, a grid or block
    dimension past its limit, more threads than the kernel's ``launch_bounds`` (CUDA_ERROR_INVALID_VALUE)."""


class TypingError(SimulationError):
    """numba-cuda rejects the kernel for these argument types: on a GPU it would not compile."""


#: ``NUMBAKERN_SIM_TRACEBACK=full`` keeps the simulator's own frames in the traceback of an error raised by a launch
#: (for debugging numbakern itself); by default it shows the caller's frames and the kernel's
TRACEBACK_ENV = "NUMBAKERN_SIM_TRACEBACK"
_SIM_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def engine_frames_hidden() -> bool:
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() != "full"


def is_engine_file(filename: str) -> bool:
    """A source file of the simulator itself, or of a stand-in for a GPU intrinsic (``intrinsics.stands_for``)."""
    return filename.startswith(_SIM_DIR) or filename in HELPER_FILES


def hide_engine_frames(error: BaseException) -> None:
    """Unlink the simulator's own frames from the traceback of ``error`` (and of the errors chained to it), in place:
    what stays is the caller's code and the kernel's. Unless the error comes from the simulator itself (its innermost
    frame is the engine's and it is no ``SimulationError``: a bug of numbakern's, whose frames are what matters)."""
    if not isinstance(error, SimulationError) and _innermost_is_engine(error.__traceback__):
        return
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        error.__traceback__ = _without_engine_frames(error.__traceback__)
        error = error.__cause__ or error.__context__


def _innermost_is_engine(tb) -> bool:
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and is_engine_file(last.tb_frame.f_code.co_filename)


def _without_engine_frames(tb):
    kept = []
    while tb is not None:
        if not is_engine_file(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:]):
        a.tb_next = b
    if kept:
        kept[-1].tb_next = None
    return kept[0] if kept else None


#: (id of a code object, instruction offset) -> (code, line): ``frame.f_lineno`` scans the code's line table from
#: its start at every access (about a microsecond in a long kernel), and a site is taken at every barrier and at
#: many tracked accesses. The site keeps its code alive, so an id in here is never reused by another code object.
_SITES: dict[tuple[int, int], tuple] = {}
_SITES_MAX = 1 << 16  # emptied when full: kernels come and go in a long test run


def frame_site(frame) -> tuple:
    """``(frame.f_code, frame.f_lineno)``: where the frame is now, a value that stays right after it moves on."""
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    site = _SITES.get(key)
    if site is None or site[0] is not code:
        if len(_SITES) >= _SITES_MAX:
            _SITES.clear()
        site = _SITES[key] = (code, frame.f_lineno)
    return site


def site_of(frame) -> tuple:
    """The site (``frame_site``) of the first frame from ``frame`` up that is not in a helper of numbakern's."""
    while frame.f_code.co_filename in HELPER_FILES:
        frame = frame.f_back
    code = frame.f_code  # frame_site, inlined: the checkers' commonest call
    key = (id(code), frame.f_lasti)
    site = _SITES.get(key)
    if site is None or site[0] is not code:
        if len(_SITES) >= _SITES_MAX:
            _SITES.clear()
        site = _SITES[key] = (code, frame.f_lineno)
    return site


def describe_site(site) -> str:
    code, line = site
    text = linecache.getline(code.co_filename, line).strip()
    where = f"{os.path.basename(code.co_filename)}:{line}"
    return f"{where} ({code.co_name}): {text}" if text else f"{where} ({code.co_name})"


def describe_thread(thread) -> str:
    return f"thread {tuple(thread.threadIdx)} of block {tuple(thread.blockIdx)}"


def describe_threads(threads, limit: int = 4, blocks: bool = False) -> str:
    """'threads (0, 0, 0), (1, 0, 0) and 30 more' — a whole warp or block would drown the message. With ``blocks``
    each thread is named with its block: '(0, 0, 0) of block (1, 0, 0)'."""
    if blocks:
        ids = [f"{tuple(t.threadIdx)} of block {tuple(t.blockIdx)}" for t in threads]
    else:
        ids = [str(tuple(t.threadIdx)) for t in threads]
    shown = ", ".join(ids[:limit])
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return f"thread{'s' if len(ids) > 1 else ''} {shown}{more}"

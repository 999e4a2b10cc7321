"""16-byte memory instructions, declared: ``vload4``/``vstore4`` (``numbakern.vector_io``: one ``ld.v4.f32`` /
``st.v4.f32``) and the asynchronous global-to-shared copies of ``numbakern.async_copy`` (``cp.async``).

Both sides of a 16-byte access must be 16-byte aligned: the array's data pointer (a shared array declared with
``alignment=16`` or more), its last extent a multiple of the access's elements and the last index too.
"""

from __future__ import annotations

from .op import Element, Immediate, Op, Regs, Scalar, declare

#: float32 lanes in one 16-byte access
WIDTH = 4
#: the bytes of one cp.async of copy_async16/copy_async4
BYTES = 16

# -- vload4 / vstore4 ----------------------------------------------------------------------------------------------

_VECTOR_DOC = """``{effect}``: one 16-byte {kind} (``{ptx}``, or ``.shared``) of four float32.

``{mem}`` is a C-contiguous float32 array in global or shared memory, any number of dimensions; ``index`` one integer
per dimension naming the first of the four elements; ``regs`` a 1-D float32 ``cuda.local.array`` and ``at`` the
first of its four registers. The element must be 16-byte aligned: the array's data pointer is (a shared array
declared with ``alignment=16``), its last extent and the last index are multiples of 4. A misaligned access is a
"misaligned address" error on a GPU and a ``MisalignedAccessError`` in numbakern's simulator.
"""


def _vector(name: str, mem: str, store: bool) -> Op:
    def touches(args, lane):
        return [(mem, args["index"], BYTES, "st" if store else "ld")]

    effect = f"{mem}[r, c:c + 4] = regs[at:at + 4]" if store else f"regs[at:at + 4] = {mem}[r, c:c + 4]"
    doc = _VECTOR_DOC.format(effect=effect, kind="store" if store else "load", mem=mem,
                             ptx="st.global.v4.f32" if store else "ld.global.v4.f32")
    return declare(Op(
        name, "numbakern.vector_io", doc, params=(mem, "index", "regs", "at"),
        operands=(Element(mem, "index", "any", label="the array", want="a C-contiguous float32 array",
                          dtypes=("float32",), contiguous=True),
                  Regs("regs", ("float32",), WIDTH, at="at", out=not store, asm="f32")),
        family="vector", instruction="vector", touches=touches))


VLOAD4 = _vector("vload4", "src", store=False)
VSTORE4 = _vector("vstore4", "dst", store=True)

# -- cp.async ------------------------------------------------------------------------------------------------------

_COPY_DOC = """``{effect}``, asynchronously (``{ptx}``): a copy from global to shared memory that lands in the
background, once a later ``async_wait`` releases its group.

``dst`` is a shared array and ``dst_index`` one integer per dimension; ``src`` a global (argument) array and
``src_index`` one integer per dimension, or one integer: the flat element offset into the C-contiguous source.
``valid`` False copies nothing and zero-fills the destination (a tile's edge needs no separate path).{align}
"""


def _copy_touches(nbytes: int | None):
    def touches(args, lane):
        size = nbytes if nbytes is not None else int(args["dst"].dtype.itemsize)
        valid = bool(args["valid"])
        return [("src", args["src_index"] if valid else None, size if valid else 0, "ld"),
                ("dst", args["dst_index"], size, "st")]

    return touches


def _same_size(types, fail, bound):
    sizes = {getattr(bound[p].dtype, "bitwidth", 0) for p in ("dst", "src")}
    if len(sizes) != 1:
        fail(f"the destination ({bound['dst'].dtype}) and the source ({bound['src'].dtype}) must have the same "
             "element size, one that divides 16 bytes")


def _copy(name: str, nbytes: int, cache: str, any_dtype: bool, effect: str, align: str) -> Op:
    want = "a C-contiguous array of an element size that divides 16 bytes" if any_dtype else \
        "a C-contiguous float32 array"
    common = {"dtypes": None if any_dtype else ("float32",), "bits": (8, 16, 32, 64) if any_dtype else None,
              "contiguous": True, "want": want}
    ptx = f"cp.async.{cache}.shared.global [$dst], [$src], {nbytes}, $valid;"
    return declare(Op(
        name, "numbakern.async_copy", _COPY_DOC.format(effect=effect, ptx=ptx.split(" [")[0], align=align),
        params=("dst", "dst_index", "src", "src_index", "valid"),
        # $valid is the source size: the copy's bytes, or 0 when valid is False
        operands=(Element("dst", "dst_index", "shared", label="the destination", **common),
                  Element("src", "src_index", "global", label="the source", flat=True, **common),
                  Scalar("valid", "bool", "uint32")),
        ptx=ptx, volatile=True, clobbers_memory=True, asynchronous=True, family="copy", instruction="cp.async",
        shape=nbytes, check=_same_size if any_dtype else None, touches=_copy_touches(None if nbytes == 4 else nbytes)))


_ALIGN = (" Both addresses must be 16-byte aligned (shared arrays declared with ``alignment=16``, last extents and "
          "last indices multiples of the elements in 16 bytes).")
COPY_ASYNC16 = _copy("copy_async16", BYTES, "cg", True,
                     "dst[.., c:c + 16 bytes] = src[.., c:c + 16 bytes] (8 bf16/f16, 4 float32, ...)", _ALIGN)
COPY_ASYNC4 = _copy("copy_async4", BYTES, "cg", False, "dst[.., c:c + 4] = src[.., c:c + 4] (four float32)", _ALIGN)
# 4 bytes: .ca (through L1) is the only cache mode for copies under 16 bytes
COPY_ASYNC = _copy("copy_async", 4, "ca", False, "dst[i] = src[j] (one float32, any alignment)", "")


def _group(name: str, doc: str, ptx: str, params=(), operands=()) -> Op:
    return declare(Op(name, "numbakern.async_copy", doc, params=params, operands=operands, ptx=ptx, volatile=True,
                      clobbers_memory=True, family="copy", instruction="cp.async"))


ASYNC_COMMIT = _group("async_commit", "Close the group of this thread's copies issued since the last commit "
                      "(``cp.async.commit_group``).", "cp.async.commit_group;")
ASYNC_WAIT = _group(
    "async_wait", "Wait until all but this thread's ``n`` newest committed groups of copies have landed "
    "(``cp.async.wait_group n``); ``n`` a compile-time integer (a literal or a factory's constant). Other threads "
    "see the copies after a ``cuda.syncthreads()``.", "cp.async.wait_group $n;", ("n",),
    (Immediate("n", minimum=0, why="; it is an immediate of cp.async.wait_group"),))
ASYNC_WAIT_ALL = _group("async_wait_all", "``async_wait(0)``: every committed group of this thread's copies has "
                        "landed (``cp.async.wait_group 0``).", "cp.async.wait_group 0;")

OPS = (VLOAD4, VSTORE4, COPY_ASYNC16, COPY_ASYNC4, COPY_ASYNC, ASYNC_COMMIT, ASYNC_WAIT, ASYNC_WAIT_ALL)

__all__ = ["OPS", "ASYNC_COMMIT", "ASYNC_WAIT", "ASYNC_WAIT_ALL", "BYTES", "COPY_ASYNC", "COPY_ASYNC16", "COPY_ASYNC4",
           "VLOAD4", "VSTORE4", "WIDTH"]

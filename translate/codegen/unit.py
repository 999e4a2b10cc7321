"""What one generated file shares: the helpers it uses, module constants, the device functions (one C function per
signature and compile-time arguments), and the file's namespace of C names."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..cnames import Namespace, c_name, is_complex
from ..typed import type_function
from .calls import call_signature, positional_args
from .diagnose import typing_error
from .inner import inner_of
from .source import parse_function
from .variables import leaves


@dataclass
class DeviceFn:
    cname: str
    params: list                     # the Python parameters that are C parameters (runtime ones), in order
    written: set                     # array parameters the function writes ((name, k): item k of a tuple of them)
    code: list = field(default_factory=list)
    return_type: object = None
    outs: list = field(default_factory=list)   # a tuple result: (scalar key, numba type) per element, by pointer
    optional: bool = False                     # an Optional result: the value, and a flag through a last pointer
    returns_array: bool = False                # an array result: the pointer, its extents (strides) by pointer


class Unit:
    def __init__(self, fastmath: bool = False):
        self.fastmath = fastmath  # the kernel's: numba's fast float32 math (device functions inline into it)
        self.tensor_maps: set[str] = set()  # parameters that are __grid_constant__ tensor maps (codegen/hopper.py)
        self.helpers: set = set()
        self.module_consts: dict = {}      # C name -> (scalar key, value)
        self.const_cnames: dict = {}       # (id of the defining globals, Python name) -> C name
        self.devices: dict = {}
        self.device_order: list = []
        self.file_names = Namespace()
        self.template_params: set = set()  # the kernel's: file-scope names avoid them, other functions' locals need not
        self.local_names: set = set()      # every name claimed inside any function of the file
        self.active: list = []             # device functions being translated (a call back into one is recursion)
        self.cooperative = False           # a grid-wide sync: the launcher launches cooperatively
        self.const_arrays: list = []       # (C name, scalar key, elements in memory order): __constant__ arrays
        self.records: dict = {}            # record key -> numba Record: a C struct each

    def file_name(self, want: str) -> str:
        """A file-scope C name (device function, constant) that no function's name can shadow."""
        while True:
            name = self.file_names.claim(want)
            if name not in self.local_names:
                return name
            want = name

    def constant(self, globals_, name, key, value) -> str:
        k = (id(globals_), name)
        if k not in self.const_cnames:
            self.const_cnames[k] = self.file_name(name)
            self.module_consts[self.const_cnames[k]] = (key, value)
        return self.const_cnames[k]

    def const_array(self, globals_, name, key, value) -> tuple[str, str]:
        """The file-scope ``__constant__`` array for module array ``name`` -> (C name, numba layout)."""
        import numpy as np

        k = (id(globals_), name, "array")
        if k not in self.const_cnames:
            layout = "C" if value.flags.c_contiguous else ("F" if value.flags.f_contiguous else "A")
            flat = np.asarray(value).ravel(order="K" if layout != "A" else "C")
            if layout == "A":  # a view: numba copies it into a C-contiguous constant array
                layout = "C"
            cname = self.file_name(name)
            self.const_cnames[k] = (cname, layout)
            self.const_arrays.append((cname, key, flat))
        return self.const_cnames[k]

    def device_function(self, pyfunc, sig, bound: dict, node, src, forceinline: bool = False) -> DeviceFn:
        """The C function for calling ``pyfunc`` with numba signature ``sig``, its parameters in ``bound`` fixed
        to compile-time values (translated on first use); ``__forceinline__`` where numba inlines it by force."""
        from .stmts import FunctionTranslator

        key = (id(pyfunc), tuple(str(a) for a in sig.args), tuple(sorted((k, _key(v)) for k, v in bound.items())))
        if key in self.devices:
            return self.devices[key]
        chain = [f.__name__ for f in self.active] + [pyfunc.__name__]
        if any(f is pyfunc for f in self.active):
            raise src.error(node, f"'{pyfunc.__name__}' calls itself ({' -> '.join(chain)}): recursive device "
                            "functions are not supported", hint="write the recursion as a loop")
        try:
            typed = type_function(pyfunc, tuple(sig.args), sig.return_type)
        except Exception as e:  # numba's TypingError for the callee: located where numba says

            fn, fsrc = parse_function(pyfunc)
            raise typing_error(e, fsrc, fn, f"numba cannot type '{pyfunc.__name__}' for {sig}") from None
        cname = self.file_name(pyfunc.__name__)
        self.active.append(pyfunc)
        try:
            tr = FunctionTranslator(self, pyfunc, typed, kind="device", cname=cname, bound=bound)
            body = tr.translate()
        finally:
            self.active.pop()
        cparams = []
        def array_params(info, c, extents, strides) -> list[str]:
            const = "" if info.name in tr.written else "const "
            return [f"{const}{c_name(info.key)}* {c}"] + [f"int64_t {e}" for e in (*extents, *strides)]

        for name in tr.ctx.runtime_params:
            if name in tr.array_tuples:  # each array of the tuple
                for info, named in zip(tr.array_tuples[name], tr.param_c[name]):
                    cparams += array_params(info, *named)
                continue
            c, extents, strides = tr.param_c[name]
            if name in tr.arrays:
                cparams += array_params(tr.arrays[name], c, extents, strides)
            elif name in tr.tuple_vars:
                cparams += [f"{c_name(v.key)} {v.cname}" for v in leaves(tr.tuple_vars[name])]
            else:
                cparams.append(f"{c_name(tr.scalars[name])} {c}")
        ret_outs = leaves(tr.ret_outs) if tr.ret_outs else []
        outs = [(v.key, v.nbt) for v in ret_outs]
        cparams += [f"{c_name(v.key)} *{v.cname}" for v in ret_outs]
        if tr.ret_present is not None:
            cparams.append(f"bool *{tr.ret_present}")
        if tr.ret_array is not None:
            cparams += [f"int64_t *{n}" for n in (*tr.ret_array[0], *tr.ret_array[1])]
        rt = typed.return_type.type if tr.ret_present is not None else typed.return_type
        rkey = None if outs else tr.scalar_key(rt.dtype if tr.ret_array is not None else rt)
        rtype = "void" if rkey is None else c_name(rkey) + ("*" if tr.ret_array is not None else "")
        inline = "__forceinline__ " if forceinline else ""
        code = [f"__device__ {inline}{rtype} {cname}({', '.join(cparams)})", "{"] + body + ["}"]
        written = {n for n in tr.ctx.runtime_params if n in tr.arrays and tr.arrays[n].name in tr.written}
        written |= {(n, k) for n, infos in tr.array_tuples.items() for k, info in enumerate(infos)
                    if info.name in tr.written}  # (item k of a tuple of arrays)
        dev = DeviceFn(cname, list(tr.ctx.runtime_params), written, code, typed.return_type, outs,
                       tr.ret_present is not None, tr.ret_array is not None)
        self.devices[key] = dev
        # (a function defined inside the kernel is part of its source, not a dependency of its own)
        name = None if inner_of(pyfunc) else f"{pyfunc.__module__}:{pyfunc.__qualname__}"
        self.device_order.append((name, dev))
        return dev

    def return_type_of(self, tr, fnobj, node):
        """numba's return type for the call ``node`` of device function ``fnobj`` (None if it cannot be typed)."""
        try:
            return call_signature(tr, fnobj.py_func, *positional_args(tr, node), node).return_type
        except Exception:  # noqa: BLE001 - the ordinary path reports it
            return None

    def prelude(self) -> list[str]:
        """The constant arrays, then the device functions in the order they were first called."""

        from ..cnames import record_struct

        lines = [record_struct(t) + "\n" for t in self.records.values()]
        for cname, key, flat in self.const_arrays:
            lines.append(f"__constant__ {c_name(key)} {cname}[{max(len(flat), 1)}] = {{{_elements(key, flat)}}};")
        if self.const_arrays:
            lines.append("")
        for _, dev in self.device_order:
            lines += dev.code + [""]
        return lines


def _key(v):
    """A hashable identity for a compile-time argument value."""
    if isinstance(v, (int, float, bool, str)) or v is None:
        return (type(v).__name__, v)
    if isinstance(v, tuple):
        return tuple(_key(x) for x in v)
    return ("obj", id(v))


def _field_key(dtype) -> str:
    from numba.cuda.np.numpy_support import from_dtype

    from ..cnames import scalar_key

    return str(scalar_key(from_dtype(dtype)))


def _elements(key, flat) -> str:
    """A C initializer list for constant array elements (an empty array gets one unused zero)."""
    import numpy as np

    from .cexpr import float_literal

    if len(flat) == 0:
        return "0" if not key.startswith("record:") else "{}"
    if key.startswith("record:"):
        from numba.cuda.np.numpy_support import from_dtype

        from ..cnames import record_members

        members = record_members(from_dtype(flat.dtype))
        return ", ".join("{" + ", ".join("{0}" if n is None else _elements(_field_key(flat.dtype.fields[n][0]),
                                                                            np.array([v[n]]))
                                          for n, _ in members) + "}" for v in flat)
    if is_complex(key):
        f32 = key == "complex64"
        return ", ".join(f"{{{float_literal(float(v.real), f32)}, {float_literal(float(v.imag), f32)}}}" for v in flat)
    if key in ("float32", "float64"):
        return ", ".join(float_literal(float(v), key == "float32") for v in flat)
    if key == "bool":
        return ", ".join("true" if v else "false" for v in flat)
    if key == "float16":
        return ", ".join(f"__half_raw{{{int(v.view('uint16'))}}}" for v in flat)
    suffix = {"int64": "LL", "uint64": "ULL", "uint32": "u"}.get(key, "")
    return ", ".join(f"{int(v)}{suffix}" for v in flat)

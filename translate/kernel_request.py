"""The ``KernelRequest`` for a kernel target: what ``translate.pipeline`` hands a backend.

Its argument types (``--signature``, else the kernel's own or the registry's), its compile-time constants and
instantiations (the specialization's, overridden by ``--const``), Numba's types for the first instantiation (from
the front end, ``numbakern.frontend``, merged for C by ``translate.typed``), the launcher parameters, the codegen
options of every instantiation and what the kernel depends on. Every refusal is a located ``TranslationError``.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from numba.cuda import types

from numbakern.frontend import closures, mlir_view
from numbakern.frontend.record import lowering_error
from numbakern.frontend.signatures import SignatureError, parse_signature, signature_text
from numbakern.tensormap import declared_tensor_maps
from numbakern.unroll import rolled_function

from . import cnames, options, targets
from .codegen.arrays import indirectly_written
from .codegen.diagnose import find_recursion, typing_error
from .codegen.source import NoSource, parse_function, rebuilt_function
from .depends import kernel_dependencies
from .errors import SourceInfo, TranslationError
from .request import KernelRequest, ParamSpec, TranslateOptions
from .typed import TypedFunction, type_function
from .writes import written_arrays

#: ``--const`` values: name -> one value per instantiation
Constants = Mapping[str, Sequence[int | float | bool]]


def build_request(tgt: targets.KernelTarget, signature: str | None, constants: Constants,
                  opts: TranslateOptions) -> KernelRequest:
    """The request for ``tgt`` (see the module doc); ``signature`` overrides the kernel's own, ``constants`` its
    specialization's."""
    sig = signature or (tgt.signatures[0] if tgt.signatures else None)
    try:
        fn, src = parse_function(tgt.pyfunc)
    except NoSource as e:  # made by exec(): its Python rebuilt from numba's IR, refusals located where it is bound
        tgt = _rebuilt_target(tgt, sig, e)
        fn, src = parse_function(tgt.pyfunc)
    names = tuple(a.arg for a in fn.args.args)
    argtypes = _argument_types(tgt, sig, names, src, fn)
    template_params, insts = _instantiations(tgt, constants, names, src, fn)
    pyfunc, *others = _instantiated_pyfuncs(tgt, template_params, insts, src, fn) if template_params else \
        [_pyfunc(tgt)]
    typed = _typed(pyfunc, argtypes, sig, src, fn, tuple(others))
    kernel_c = cnames.kernel_cname(tgt.name)
    params = _with_tensor_maps(_launcher_params(kernel_c, names, argtypes, template_params, src, fn, pyfunc, typed),
                               tgt.kernel, src, fn)
    insts = insts or ({},)
    return KernelRequest(
        name=tgt.name, qualname=tgt.qualname, source="\n".join(src.lines), signature=signature_text(sig),
        arg_names=names, argtypes=tuple(argtypes), typemap={k: str(v) for k, v in typed.var_types.items()},
        params=tuple(params), pyfunc=pyfunc, typed=typed, build=options.from_target(tgt, insts),
        dependencies=kernel_dependencies(pyfunc, template_params), options=opts, template_params=template_params,
        instantiations=insts, kernel_cname=kernel_c,
    )


def _pyfunc(tgt: targets.KernelTarget) -> Any:
    """The target's Python function (a FunctionType: as a dataclass field the type checker reads it as a method)."""
    return tgt.pyfunc


def _py_func(kernel) -> Any:
    """A kernel's Python function (None: a kernel object that has none)."""
    return getattr(kernel, "py_func", None)


def _with_tensor_maps(params: list[ParamSpec], kernel, src: SourceInfo, fn) -> list[ParamSpec]:
    """The parameters the kernel declares tensor maps (``numbakern.tensormap.tensor_map_params``), marked so: the
    launcher makes them from their arrays."""
    declared = declared_tensor_maps(kernel)
    by_name = {p.name: p for p in params}
    sources = {d.source for d in declared.values()}
    out = []
    for p in params:
        if p.name in sources:  # a TMA store may write it through its map: never const
            p = dataclasses.replace(p, const=False)
        found = declared.get(p.name)
        if found is not None:
            source = by_name.get(found.source)
            if p.kind != "array" or p.ndim != 1 or p.dtype != "uint64" or source is None or source.kind != "array" \
                    or source.ndim not in (2, 3):
                raise src.error(fn, f"the kernel declares '{p.name}' the tensor map of '{found.source}': it must be a "
                                f"uint64[::1] array of 16 words and '{found.source}' a 2-D or 3-D array argument")
            p = dataclasses.replace(p, tensor_map=(found.source, found.box_rows, found.box_cols, found.swizzle))
        out.append(p)
    return out


def _rebuilt_target(tgt: targets.KernelTarget, sig, no_source: NoSource) -> targets.KernelTarget:
    """``tgt`` with its kernel's Python rebuilt from numba's typed IR for ``sig`` (``rebuilt_function``); a refusal
    is located where the kernel's module binds it."""
    if sig is None:
        raise targets.binding_error(tgt, f"{no_source}; with argument types (--signature) its Python is rebuilt "
                                         "from numba's IR")
    code = tgt.pyfunc.__code__
    names = code.co_varnames[:code.co_argcount]
    try:
        _, argtypes = parse_signature(sig, _pyfunc(tgt).__globals__)
        if len(argtypes) != len(names):
            raise SignatureError(f"the signature has {len(argtypes)} argument(s), the kernel takes {len(names)}")
        return dataclasses.replace(tgt, pyfunc=rebuilt_function(tgt.pyfunc, tuple(argtypes)))
    except SignatureError as e:
        raise targets.binding_error(tgt, str(e)) from None
    except NoSource as e:
        raise targets.binding_error(tgt, str(e)) from None
    except Exception as e:  # numba's TypingError: the kernel has no text to locate it in
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise targets.binding_error(tgt, f"numba cannot type the kernel for {signature_text(sig)}: {first}") \
            from None


def _argument_types(tgt: targets.KernelTarget, sig, names: tuple[str, ...], src: SourceInfo, fn) -> tuple:
    if sig is None:
        raise src.error(fn, f"no argument types for {tgt.qualname}: pass --signature \"void(float32[::1], ...)\" "
                        "(or give the kernel a signature: @cuda.jit(\"void(float32[::1], ...)\"))")
    try:
        _, argtypes = parse_signature(sig, _pyfunc(tgt).__globals__)
    except SignatureError as e:
        raise src.error(fn, str(e)) from None
    if len(names) != len(argtypes):
        raise src.error(fn, f"the signature has {len(argtypes)} argument(s), the kernel takes {len(names)}")
    return argtypes


def _instantiations(tgt: targets.KernelTarget, constants: Constants, names: tuple[str, ...], src: SourceInfo,
                    fn) -> tuple[tuple[str, ...], tuple[dict, ...]]:
    """The compile-time constants that become template parameters (the integer closure constants given a value),
    and one ``{name: value}`` per instantiation (every combination of the values given)."""
    freevars = closures.free_names(_pyfunc(tgt))
    values = {k: [v] for k, v in tgt.constants.items()}
    for k, v in constants.items():
        if k in names:
            raise src.error(fn, f"'{k}' is a kernel argument, not a compile-time constant",
                            hint="--const for closure constants of a specialized kernel (e.g. tw)")
        if k not in freevars:
            raise src.error(fn, f"'{k}' is not a compile-time constant of this kernel "
                            f"(closure constants: {', '.join(freevars) or 'none'})")
        now = values.get(k, [closures.closure_values(_pyfunc(tgt)).get(k)])[0]
        wrong = [x for x in v if type(x) is not type(now)] if type(now) in (int, bool) else []
        if wrong:  # a value the kernel's constant cannot take would be dropped, and the default kernel written
            raise src.error(fn, f"--const {k}={wrong[0]!r}: the kernel's '{k}' is {type(now).__name__} ({now!r}), "
                            f"so it takes {type(now).__name__} values only")
        values[k] = list(v)
    template_params = tuple(k for k in freevars if k in values and isinstance(values[k][0], int))
    combos = itertools.product(*(values[k] for k in template_params))
    return template_params, tuple(dict(zip(template_params, combo)) for combo in combos)


def _typed(pyfunc, argtypes: tuple, sig, src: SourceInfo, fn, others: tuple = ()) -> TypedFunction:
    """The front end's types of the kernel (``others``: its other instantiations'), merged for C; its refusal
    located where numba says."""
    recursion = find_recursion(pyfunc)
    if recursion is not None:
        raise recursion
    try:
        return type_function(pyfunc, argtypes, others=others)
    except Exception as e:  # numba's TypingError: its first relevant line, where it says
        raise typing_error(e, src, fn, f"numba cannot type the kernel for {signature_text(sig)}") from None


def numba_rejection(request: KernelRequest, error: TranslationError) -> TranslationError:
    """``error``, or numba's own where its whole compile rejects the kernel (``record.lowering_error``: the record is
    typed only, lowering being a fourth of a compile); asked only of a kernel whose translation failed."""
    rejected = lowering_error(request.pyfunc, request.argtypes)
    if rejected is None:
        return error
    fn, src = parse_function(request.pyfunc)
    return typing_error(rejected, src, fn, f"numba cannot compile the kernel for {request.signature}")


def _device_sources(pyfunc):
    """For ``written_arrays``: the source of the device function a call of ``pyfunc`` reaches (by a plain name); for
    one made by ``exec()``, the Python rebuilt for the argument types numba compiled it for while typing the kernel
    (None, so its array arguments count as written, unless every such build writes the same parameters)."""
    def callee(node):
        if not isinstance(node.func, ast.Name):
            return None
        obj = closures.lookup(pyfunc, node.func.id)
        if isinstance(obj, type) and issubclass(obj, tuple):  # a namedtuple made of the arguments: no stores
            return _WRITES_NOTHING, None
        inner = getattr(obj, "py_func", None)
        if inner is None or not callable(inner):
            return None
        try:
            return parse_function(inner)[0], _device_sources(inner)
        except NoSource:
            return _rebuilt_source(obj, inner)
    return callee


#: what ``written_arrays`` reads as a callee that stores into none of its arguments
_WRITES_NOTHING = ast.parse("def made(): pass").body[0]


def _rebuilt_source(dispatcher, pyfunc):
    """The rebuilt Python of an ``exec()``-made device function, when all its compiled overloads write the same
    array parameters; else None."""
    calls = _device_sources(pyfunc)
    found, writes = None, set()
    for result in list(getattr(dispatcher, "overloads", {}).values()):
        sig = getattr(result, "signature", None)
        if sig is None:
            return None
        try:
            fn = parse_function(rebuilt_function(pyfunc, tuple(sig.args), sig.return_type))[0]
        except Exception:  # noqa: BLE001 - no rebuilt text (NoSource, numba's refusal): count the arrays written
            return None
        writes.add(frozenset(written_arrays(fn, {p.arg for p in fn.args.args}, calls)))
        found = found or (fn, calls)
    return found if len(writes) == 1 else None


def _launcher_params(kernel_c: str, names: tuple[str, ...], argtypes: tuple, template_params: tuple[str, ...],
                     src: SourceInfo, fn, pyfunc=None, typed: TypedFunction | None = None) -> list[ParamSpec]:
    """The launcher ABI of each argument: C names, extents and strides; arrays the kernel never writes are const."""
    array_names = {n for n, t in zip(names, argtypes) if isinstance(t, types.Array)}
    callee = _device_sources(pyfunc) if pyfunc is not None else None
    array_locals = {n for n, t in typed.var_types.items() if isinstance(t, types.Array)} if typed else set()
    written = written_arrays(fn, array_names, callee) | indirectly_written(fn, array_names, array_locals)
    _, named = cnames.typed_param_cnames(kernel_c, names, argtypes,
                                         reserved={*cnames.LAUNCHER_PARAMS, *template_params})
    params = []
    for n, t, group in zip(names, argtypes, named):
        if cnames.is_array_tuple(t):  # each array a parameter of its own; written, as far as this can tell
            items = [_array_param(f"{n}[{k}]", x, False, *g) for k, (x, g) in enumerate(zip(t, group))]
            params.append(ParamSpec(n, "tuple", "tuple", items=tuple(items)))
            continue
        c, extents, strides = group
        if isinstance(t, types.Array) and isinstance(t.dtype, types.Record):
            key = cnames.record_key(t.dtype)
            if key is None:
                raise src.error(fn, f"argument '{n}' is an array of records whose layout C cannot reproduce "
                                f"({t.dtype})", hint="records of number fields, each at its natural alignment")
            params.append(ParamSpec(n, "array", "record", t.ndim, const=n not in written, layout=t.layout, cname=c,
                                    extents=extents, strides=strides, ctype=cnames.c_name(key),
                                    record=_record_layout(t.dtype)))
        elif isinstance(t, types.Array):
            params.append(_array_param(n, t, n not in written, c, extents, strides))
        elif isinstance(t, types.BaseTuple) and len(t) and all(cnames.scalar_key(x) for x in t):
            params.append(ParamSpec(n, "tuple", "tuple", cname=c, items=tuple(str(cnames.scalar_key(x)) for x in t)))
        else:
            params.append(ParamSpec(n, "scalar", cnames.scalar_key(t) or str(t), cname=c))
    return params


def _array_param(name: str, t, const: bool, cname: str, extents, strides) -> ParamSpec:
    return ParamSpec(name, "array", cnames.scalar_key(t.dtype) or str(t.dtype), t.ndim, const=const, layout=t.layout,
                     cname=cname, extents=extents, strides=strides)


def _record_layout(t) -> tuple:
    """(itemsize, ((field, dtype, offset), ...)) of a numba Record: the launcher ABI's description of it."""
    return t.size, tuple((name, str(f.type), f.offset) for name, f in sorted(t.fields.items(),
                                                                           key=lambda kv: kv[1].offset))


def _instantiated_pyfuncs(tgt: targets.KernelTarget, template_params: tuple[str, ...], insts: tuple[dict, ...],
                          src: SourceInfo, fn) -> list:
    """The kernel function for each instantiation, with every closure constant right for it (numba types each: a
    branch on a template parameter is pruned in some of them).

    A ``@specialize`` factory derives constants from its parameters (``la = bm * bk // threads``); overriding only
    the parameters' cells would leave the derived ones at the registered config's values. So each instantiation's
    kernel comes from the factory, and the derived constants, which the C file declares once at file scope, must
    agree across the instantiations."""
    plain = [closures.with_closure(_pyfunc(tgt), {k: inst[k] for k in template_params}) for inst in insts]
    if tgt.factory is None:
        return plain
    factory: Any = tgt.factory
    funcs = [mlir_view.numba_cuda_view(rolled_function(_py_func(factory(**{**tgt.constants, **inst}))))
             for inst in insts]
    if any(f is None or f.__code__ is not _pyfunc(tgt).__code__ for f in funcs):
        return plain
    first = closures.closure_values(funcs[0])
    for inst, f in zip(insts[1:], funcs[1:]):
        for name, value in closures.closure_values(f).items():
            if name not in template_params and isinstance(value, (int, float)) and value != first.get(name):
                where = ", ".join(f"{k}={v}" for k, v in inst.items())
                raise src.error(fn,
                                f"the constant '{name}' derived by the factory is {first.get(name)!r} for the first "
                                f"instantiation but {value!r} for {where}; one file declares it once",
                                hint="translate these configurations separately (one value per --const)")
    return funcs

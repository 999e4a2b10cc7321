"""Which array arguments a kernel writes (syntactically): the others become ``const T*`` in the kernel and the
launcher. Written: assigned elements (``x[i] = ...``, ``x[i] += ...``), the first argument of ``cuda.atomic.*``, the
array ``numbakern.vector_io.vstore4`` stores to (``vload4`` only reads its array), the destination of
``numbakern.async_copy.copy_async4``/``copy_async16``, the registers of ``numbakern.mma``'s mma and ldmatrix, and
an array passed to a device function that writes its parameter (any array passed to a function whose source
``callee`` cannot give, conservatively)."""

from __future__ import annotations

import ast


def written_arrays(fn: ast.FunctionDef, array_params: set[str], callee=None, _seen=None, _local=None) -> set[str]:
    """``callee(call_node)``: the called device function's ``ast.FunctionDef`` and a ``callee`` for its own calls,
    or None where it cannot tell."""
    out = set()
    seen = set() if _seen is None else _seen
    local = {**(_local or {}), **local_functions(fn)}  # the functions defined in this one (and around it)
    # names of views of the arrays (``bits = arr.view(np.int32)``, ``seg = out[a:b]``): a store into one is a
    # store into the array. (Only names used as arrays -- indexed, or with an array's attribute -- can be views: a
    # number read from an array, ``a = x[i]``, is not one.)
    used_as_arrays = {n.value.id for n in ast.walk(fn) if isinstance(n, (ast.Subscript, ast.Attribute)) and
                      isinstance(n.value, ast.Name) and (isinstance(n, ast.Subscript) or n.attr in _ARRAY_ATTRIBUTES)}
    views = {}
    for _ in range(2):
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                root = root_name(node.value)
                root = views.get(root, root)
                if root in array_params:
                    views.update((t.id, root) for t in node.targets if isinstance(t, ast.Name) and
                                 t.id in used_as_arrays)
    for node in ast.walk(fn):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Subscript) and root_name(sub.value) is not None:  # (z.real[i] = v: into z)
                    out.add(root_name(sub.value))
        if isinstance(node, ast.Call):
            f = node.func
            is_atomic = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "atomic"
            builtin = isinstance(f, ast.Name) and f.id in ("len", "min", "max", "abs", "range", "int", "float", "sum",
                                                           "enumerate", "zip")
            fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            # numbakern.vector_io / async_copy: the one argument these write
            vector_written = {"vload4": 2, "vstore4": 0, "copy_async4": 0, "copy_async16": 0,
                              "copy_async": 0}.get(fname or "")
            if fname and fname.startswith(("mma_m16n8", "ldmatrix_x")):  # numbakern.mma: the registers they write
                vector_written = 0
            inner = None
            defined = local.get(f.id) if isinstance(f, ast.Name) else None
            if defined is not None and id(defined) not in seen:  # a function defined in this one: its body is read
                seen.add(id(defined))
                cparams = [p.arg for p in defined.args.args]
                inner = written_arrays(defined, set(cparams), callee, seen, local)
                inner = {i for i, p in enumerate(cparams) if p in inner}
                seen.discard(id(defined))
            elif callee is not None and not (is_atomic or builtin) and vector_written is None:
                found = callee(node)
                if found is not None and id(found[0]) not in seen:
                    seen.add(id(found[0]))
                    cfn, ccallee = found
                    cparams = [p.arg for p in cfn.args.args]
                    inner = written_arrays(cfn, set(cparams), ccallee, seen)
                    inner = {i for i, p in enumerate(cparams) if p in inner}
                    seen.discard(id(cfn))
            for i, a in enumerate(node.args):
                whole = isinstance(a, ast.Name)
                while isinstance(a, ast.Subscript) and not is_atomic and vector_written is None:
                    a = a.value  # a row passed on (f(out[i])): the callee writes into the array
                if isinstance(a, ast.Name) and views.get(a.id, a.id) in array_params and (whole or not builtin):
                    if inner is not None:
                        if i in inner:
                            out.add(a.id)
                    elif vector_written is not None:
                        if i == vector_written:
                            out.add(a.id)
                    elif (is_atomic and i == 0) or not (is_atomic or builtin):
                        out.add(a.id)
    return {views.get(n, n) for n in out} & array_params


def local_functions(fn: ast.FunctionDef) -> dict[str, ast.FunctionDef]:
    """The functions ``fn`` defines inside it, by name (``def f(v): ...``, and ``f = lambda v: ...`` as a def)."""
    out = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.FunctionDef) and node is not fn:
            out[node.name] = node
        elif isinstance(node, ast.Assign) and is_lambda_assignment(node):
            target = node.targets[0]
            assert isinstance(target, ast.Name)
            out[target.id] = lambda_as_def(node)
    return out


def is_lambda_assignment(node) -> bool:
    """``name = lambda ...: ...``."""
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
        and isinstance(node.value, ast.Lambda)


def lambda_as_def(node: ast.Assign) -> ast.FunctionDef:
    """``name = lambda args: value`` as ``def name(args): return value`` (at the assignment's place)."""
    lam = node.value
    assert isinstance(lam, ast.Lambda) and isinstance(node.targets[0], ast.Name)
    body = [ast.copy_location(ast.Return(lam.body), lam.body)]
    return ast.copy_location(function_def(node.targets[0].id, lam.args, body), node)


def function_def(name: str, args: ast.arguments, body: list) -> ast.FunctionDef:
    """``def name(args): body``, undecorated."""
    fdef = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:  # (Python 3.12: a field every FunctionDef has)
        setattr(fdef, "type_params", [])  # noqa: B010 - (no such attribute in 3.11's typeshed)
    return fdef


_ARRAY_ATTRIBUTES = ("shape", "size", "ndim", "T")  # (not .real, .imag, .view: numbers have them too)


def root_name(node) -> str | None:
    """The name an expression of subscripts, attributes and method calls starts from (``out`` of ``out[a:b].T``)."""
    while True:
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return node.id if isinstance(node, ast.Name) else None

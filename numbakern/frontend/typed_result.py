"""The result of a compile that stops before lowering (``compile.compile_function`` without ``lower``, and
``mlir_typing``): what numbakern reads of numba's compile result, the types and the typed IR."""

from __future__ import annotations

from types import SimpleNamespace

from . import typer


class TypedFunction:
    """What numbakern reads of a compile result (``record``, ``facts``, ``decompile``), for a function typed and not
    lowered."""

    objectmode = False  # a dispatcher's overloads are read as compile results

    def __init__(self, state, grid_group: type):
        self.fndesc = SimpleNamespace(typemap=state.typemap, calltypes=state.calltypes)
        self.type_annotation = state.type_annotation
        self.typing_context = state.typingctx
        self.signature = typer.module("typing").signature(state.return_type, *state.args)
        # lowering marks a launch that calls cuda.cg.this_grid() cooperative; typing sees the value's type
        cooperative = any(isinstance(t, grid_group) for t in state.typemap.values())
        self.library = SimpleNamespace(use_cooperative=cooperative)


def typing_only(base: type, stop: type, machinery, grid_group: type, name: str) -> type:
    """The compiler class ``base`` (a typer's) with its passes up to (not including) ``stop`` (the first that lowers),
    then one that makes the compile's result a ``TypedFunction``."""
    keep = typed_function_pass(machinery, grid_group)

    class TypingOnly(base):
        def define_pipelines(self):
            pm = machinery.PassManager(f"numbakern: {name} typing only")
            for impl, description in base.define_pipelines(self)[0].passes:
                if impl is stop:
                    break
                pm.passes.append((impl, description))
            pm.add_pass(keep, "the typed function is the result")
            pm.finalize()
            return [pm]

    return TypingOnly


def typed_function_pass(machinery, grid_group: type):
    """A pass of ``machinery`` (a typer's ``compiler_machinery``) that makes the compile's result a
    ``TypedFunction``; one per typer (a pass class is registered by name)."""
    made = _typed_function_passes.get(machinery)
    if made is not None:
        return made

    @machinery.register_pass(mutates_CFG=False, analysis_only=True)
    # not a FunctionPass: those may not see the IR's `del`s legalisation added
    class KeepTyping(machinery.AnalysisPass):
        _name = f"numbakern_keep_typing_{len(_typed_function_passes)}"

        def __init__(self):
            machinery.AnalysisPass.__init__(self)

        def run_pass(self, state):
            state.cr = TypedFunction(state, grid_group)
            return False

    _typed_function_passes[machinery] = KeepTyping
    return KeepTyping


_typed_function_passes: dict = {}

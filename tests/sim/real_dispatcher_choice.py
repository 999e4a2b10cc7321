"""Which signature numba-cuda's real dispatcher launches, for a kernel declared with a list of signatures: its own
selection code (the C dispatcher's), run without a GPU. Run as a script in a process with the real CUDA target
(``NUMBA_ENABLE_CUDASIM=0``), never importing numbakern: reads ``[[signatures], "arguments expression"], ...`` as
JSON on stdin and prints, per case, the index of the signature launched, ``"ambiguous"`` or ``"none"``.

Each signature's overload is a stand-in whose ``launch`` records that it was chosen: the dispatcher's own launch
path (``kernel[1, 1](*args)``) does the choosing, nothing else runs.
"""

import json
import sys
import warnings

import numpy as np
from numba import cuda
from numba.cuda import types
from numba.cuda.core import sigutils


class _Recorder:
    def __init__(self, index, chosen, argtypes):
        self.index, self.chosen = index, chosen
        self.signature = types.void(*argtypes)  # (the dispatcher explains an ambiguity with its overloads' ones)

    def launch(self, args, griddim, blockdim, stream=0, sharedmem=0):
        self.chosen.append(self.index)

    def __getattr__(self, name):  # what the launch path reads of a kernel besides launch: nothing to say
        return None


def choice(signatures, args) -> object:
    chosen = []
    dispatcher = cuda.jit(_KERNELS[len(args)])
    for i, sig in enumerate(signatures):
        argtypes = tuple(sigutils.normalize_signature(sig)[0])
        dispatcher.add_overload(_Recorder(i, chosen, argtypes), argtypes)
    dispatcher.disable_compile()
    try:
        dispatcher[1, 1](*args)
    except TypeError as e:
        return "ambiguous" if "mbiguous" in str(e) else "none"
    except RuntimeError as e:
        # a tie the type manager sees and numba's explanation does not: the launch is refused all the same
        if "_explain_ambiguous" in str(e):
            return "ambiguous"
        raise
    return chosen[0]


# the dispatcher counts a kernel's parameters (a *args kernel has one): one kernel per arity
_KERNELS = {1: lambda a: None, 2: lambda a, b: None, 3: lambda a, b, c: None, 4: lambda a, b, c, d: None}


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    cases = json.load(sys.stdin)
    print(json.dumps([choice(sigs, eval(args, {"np": np})) for sigs, args in cases]))  # noqa: S307 - the test's

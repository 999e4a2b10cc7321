"""The deterministic Python-AST -> CUDA C code generator behind the ``ast`` backend.

- ``cexpr``: the ``CExpr`` value (C text + Numba type + C type) and the cast rules;
- ``ranges``: which integer names are provably non-negative (decides negative-index wraparound);
- ``scope``: where each C variable is declared;
- ``exprs``: expressions (operators with Numba's typing, names, constants, subscripts);
- ``builtins``: CUDA intrinsics, atomics, warp functions, math, casts, min/max/abs;
- ``arrays``: arrays as pointer + extents, shared/local arrays, dynamic-shared views;
- ``stmts``: statements and whole functions; ``helpers``: the C helper functions, emitted only if used.
"""

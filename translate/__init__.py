"""translate: a numba CUDA kernel + argument types -> plain CUDA C.

Entry points: the ``translate`` command (``translate.cli``) and, from Python, ``translate.api.translate_kernel`` /
``translate.api.check``. The stages run in order in ``translate.pipeline``.
"""

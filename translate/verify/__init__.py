"""Verification of translated CUDA C on a GPU: the compiled ``.cu`` against the Numba kernel.

Python API::

    from translate.verify.cli import verify_kernels
    from translate.verify.harness import Candidate, verify
    results = verify_kernels(["matmul_tiled"], sanitize=True, record=True)   # from generated_cuda/manifest.json
    result = verify(spec, Candidate(cu_path, launcher_description))          # any .cu that follows the contract

Command line: ``python -m translate.verify --all [--sanitize] [--record]`` (``cli.py``; the ``translate`` command
takes the same options from ``cli_args.py`` and calls ``cli.run``). The deployable path (``abi``, ``build``,
``driver``, ``standalone``, ``torch_binding``) imports no numba.
"""

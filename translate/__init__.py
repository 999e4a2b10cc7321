"""translate: a numba CUDA kernel + argument types -> plain CUDA C."""

"""Kernels of a user's project. Importing the package declares them all (what [tool.numbakern] kernels names)."""

from . import histogram, reduce, softmax, stencil

__all__ = ["histogram", "reduce", "softmax", "stencil"]

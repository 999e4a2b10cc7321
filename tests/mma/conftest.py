"""Tests of numbakern.mma: the simulator's tests run in simulator mode (``sim``), the device comparisons carry
``gpu``; the PTX compile tests need neither (they compile in a helper process with numba's real target)."""

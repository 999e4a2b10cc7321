"""Fixtures shared by the whole suite.

Random inputs come from numbakern's pytest plugin (``numbakern/pytest_plugin.py``), as in any user's project: a
test takes the ``rng`` fixture (a ``numpy.random.Generator``) or the ``seed`` fixture (the int behind it, for torch
or CuPy generators), seeded per test from the run's base seed (``pytest --seed N|random``); a failing test's report
has a "random inputs" section with its seed and the command that reproduces it.
"""

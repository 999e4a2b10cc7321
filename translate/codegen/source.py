"""A function's Python source as the translator reads it: its AST and where it lives (to locate errors). The
front end reads it (``numbakern.frontend.source``); this adds the translator's ``SourceInfo``."""

from __future__ import annotations

import ast

from numbakern.frontend.source import NoSource, function_source, rebuilt_function

from ..errors import SourceInfo

__all__ = ["NoSource", "parse_function", "rebuilt_function"]


def parse_function(pyfunc) -> tuple[ast.FunctionDef, SourceInfo]:
    fs = function_source(pyfunc)
    return fs.tree, SourceInfo(fs.filename, fs.lines, fs.first_line, fs.indent)

"""One `ast.parse` at a time in a process that parses on several threads, on CPython before 3.12.

CPython 3.11 counts the depth of its AST-to-object conversion in state the whole interpreter shares. When
the garbage collector runs a finalizer in the middle of one thread's conversion, the GIL may pass to
another thread whose own `ast.parse` rewrites that count, and the first parse then fails with
`SystemError: AST constructor recursion depth mismatch`. `stepwise serve` parses on many threads at once:
3.11's tracebacks parse the failing line to place their carets (every logged exception), the calculator
tool parses its expression, and in the tests Hypothesis parses its strategies' lambdas while the server
works — the cause of the schema fuzz test failing on a busy machine, reproduced by
`tests/unit/local/test_ast_guard.py`. Serialising the parses is the whole fix; Lambda runs Python 3.13,
which counts per thread, so nothing is installed there.
"""

from __future__ import annotations

import ast
import functools
import sys
import threading
from typing import Any

_INSTALLED = "__stepwise_serialised__"


def serialise_ast_parsing() -> bool:
    """Make `ast.parse` (and what calls it: `ast.literal_eval`, traceback formatting) take a process-wide
    lock, on Python before 3.12; True when this call installed it."""
    if sys.version_info >= (3, 12) or getattr(ast.parse, _INSTALLED, False):
        return False
    parse = ast.parse
    # reentrant: a finalizer that runs during a parse may format a traceback on the same thread
    lock = threading.RLock()

    @functools.wraps(parse)
    def serialised_parse(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return parse(*args, **kwargs)

    setattr(serialised_parse, _INSTALLED, True)
    ast.parse = serialised_parse
    return True

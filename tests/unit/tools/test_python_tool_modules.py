"""Loading a deployer's tool modules while other threads import: `stepwise serve` builds a handler's tool registry
on an engine thread while its API's threads import their own modules."""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

from stepwise.tools.python_tools import load_python_tools

# modules another thread registers (and forgets) meanwhile, as its imports and a closed invoker's cleanup do
MODULES_MEANWHILE = 200_000
# a server's process holds thousands of modules: the longer the copy of sys.modules, the wider its window
MODULES_HELD = 3_000
LOADS = 400
TOOL_MODULE = '''
from stepwise.tools import tool


@tool
def {name}(text: str) -> str:
    """Echo.

    Args:
        text: The text.
    """
    return text
'''


class _Finalized:
    """Garbage in a cycle whose finalizer runs Python code, as a closed client's or a dropped runtime's does: a
    collection that a thread's allocation sets off may hand the interpreter to another thread in the middle."""

    def __init__(self) -> None:
        self.cycle = self

    def __del__(self) -> None:
        sum(range(100))


def _modules_meanwhile(prefix: str) -> None:
    for count in range(MODULES_MEANWHILE):
        name = f"{prefix}churned_{count % 50}"
        if sys.modules.pop(name, None) is None:
            sys.modules[name] = types.ModuleType(name)
        _Finalized()


def test_tools_load_from_one_directory_then_another_while_another_thread_imports(tmp_path: Path) -> None:
    # Given two config directories with a tool module each (so a load forgets the other directory's modules),
    # and a thread registering modules and dropping garbage meanwhile, switching threads as often as it can
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"tools_{name}.py").write_text(TOOL_MODULE.format(name=f"echo_{name}"))
    prefix = f"registered_meanwhile_{tmp_path.name}_"
    for count in range(MODULES_HELD):
        sys.modules[f"{prefix}held_{count}"] = types.ModuleType(f"{prefix}held_{count}")
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    registering = threading.Thread(target=_modules_meanwhile, args=(prefix,))
    loaded: list[str] = []
    try:
        registering.start()
        # When the tools are loaded from one directory, then the other, again and again meanwhile
        while registering.is_alive() and len(loaded) < LOADS:
            for name in ("a", "b"):
                [found] = load_python_tools([f"tools_{name}"], config_dir=tmp_path / name)
                loaded.append(found.spec.name)
    finally:
        registering.join()
        sys.setswitchinterval(interval)
        for name in [name for name in list(sys.modules) if name.startswith(prefix)] + ["tools_a", "tools_b"]:
            sys.modules.pop(name, None)
    # Then every load gave its directory's tool (none failed with "dictionary changed size during iteration")
    assert loaded[:2] == ["echo_a", "echo_b"]
    assert loaded == ["echo_a", "echo_b"] * (len(loaded) // 2)

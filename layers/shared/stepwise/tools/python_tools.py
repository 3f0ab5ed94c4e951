"""Loading a deployer's tool modules (``python:`` in the tools config) from the config directory.

A module is imported by its ordinary name with the config directory on ``sys.path`` (appended, so it
can never shadow the standard library or installed packages), which lets it import sibling helper
modules as usual. Its tools are the `FunctionTool` objects it defines with ``@tool``; tools it merely
imports from elsewhere are not counted twice.

One process may load the tools of several config directories (a local server started twice, an eval of
several configs, a test session), and two of them may hold a module of the same name. A Lambda has one,
so a name is otherwise imported once; loading from a second directory first forgets the modules the
other config directories gave `sys.modules` and puts this directory ahead of theirs on ``sys.path``, so
the module and its siblings are this directory's. Tools built earlier keep the functions they hold.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from pathlib import Path
from types import ModuleType

from stepwise.errors import ConfigError
from stepwise.tools.function_tool import FunctionTool

_SYS_PATH_LOCK = threading.Lock()
# every config directory this process has loaded tools from, in order
_CONFIG_DIRECTORIES: list[Path] = []


def load_python_tools(modules: list[str], *, config_dir: Path) -> list[FunctionTool]:
    """Import each module from ``config_dir`` and collect the tools it defines, in module order.

    Raises `ConfigError` naming the module when it is missing, resolves to a file outside
    ``config_dir`` (a name clash with an installed module), fails to import, or defines no tool.
    """
    if not modules:
        return []
    directory = config_dir.resolve()
    tools: list[FunctionTool] = []
    with _SYS_PATH_LOCK:
        _make_current(directory)
        imported = [(name, _import(name, directory)) for name in modules]
    for name, module in imported:
        defined = [
            value
            for value in vars(module).values()
            if isinstance(value, FunctionTool) and value.function.__module__ == module.__name__
        ]
        if not defined:
            raise ConfigError(f"python tool module {name!r} defines no @tool function")
        tools.extend(defined)
    return tools


def _make_current(directory: Path) -> None:
    """Put `directory` on `sys.path` ahead of the other config directories (appended when it is the first,
    so never ahead of the standard library or installed packages), and forget their modules."""
    others = [other for other in _CONFIG_DIRECTORIES if other != directory]
    if directory not in _CONFIG_DIRECTORIES:
        _CONFIG_DIRECTORIES.append(directory)
    if str(directory) in sys.path:
        sys.path.remove(str(directory))
    positions = [sys.path.index(str(other)) for other in others if str(other) in sys.path]
    if positions:
        sys.path.insert(min(positions), str(directory))
    else:
        sys.path.append(str(directory))
    if not others:
        return
    # modules found on a directory's sys.path entry have file names that start with it
    prefixes = tuple(f"{other}{os.sep}" for other in others)
    # Iterated from a copy made in one step, in C: `list(sys.modules.items())` builds a tuple per module, which may
    # set off a garbage collection whose finalizers hand the interpreter to a thread that imports (a server's API
    # threads, loading their handlers), and the listing then failed with "dictionary changed size during iteration"
    for name, module in sys.modules.copy().items():
        location = getattr(module, "__file__", None)
        if isinstance(location, str) and location.startswith(prefixes):
            del sys.modules[name]


def _import(name: str, directory: Path) -> ModuleType:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(f"{exc.name}.")):
            raise ConfigError(f"python tool module {name!r} was not found in {directory}") from None
        raise ConfigError(f"python tool module {name!r} failed to import: {exc}") from None
    except Exception as exc:
        raise ConfigError(f"python tool module {name!r} failed to import: {type(exc).__name__}: {exc}") from None
    location = getattr(module, "__file__", None)
    if location is None or not Path(location).resolve().is_relative_to(directory):
        raise ConfigError(
            f"python tool module {name!r} resolves to {location or 'a built-in module'}, not to a file in "
            f"{directory}; rename the module"
        )
    return module

"""Loading a deployer's tool modules (``python:`` in the tools config) from the config directory.

A module is imported by its ordinary name with the config directory on ``sys.path`` (appended, so it
can never shadow the standard library or installed packages), which lets it import sibling helper
modules as usual. Its tools are the `FunctionTool` objects it defines with ``@tool``; tools it merely
imports from elsewhere are not counted twice.
"""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path
from types import ModuleType

from stepwise.errors import ConfigError
from stepwise.tools.function_tool import FunctionTool

_SYS_PATH_LOCK = threading.Lock()


def load_python_tools(modules: list[str], *, config_dir: Path) -> list[FunctionTool]:
    """Import each module from ``config_dir`` and collect the tools it defines, in module order.

    Raises `ConfigError` naming the module when it is missing, resolves to a file outside
    ``config_dir`` (a name clash with an installed module), fails to import, or defines no tool.
    """
    if not modules:
        return []
    directory = config_dir.resolve()
    _ensure_on_sys_path(directory)
    tools: list[FunctionTool] = []
    for name in modules:
        module = _import(name, directory)
        defined = [
            value
            for value in vars(module).values()
            if isinstance(value, FunctionTool) and value.function.__module__ == module.__name__
        ]
        if not defined:
            raise ConfigError(f"python tool module {name!r} defines no @tool function")
        tools.extend(defined)
    return tools


def _ensure_on_sys_path(directory: Path) -> None:
    with _SYS_PATH_LOCK:
        if str(directory) not in sys.path:
            sys.path.append(str(directory))


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

"""Whether the environment `make setup` installed is consistent, but for the conflicts the overrides name.

The lock is installed with `--no-deps` (resolving it again would refuse the versions overrides.txt puts in place
of what a dependency declares), so nothing at install time notices a lock that lacks a dependency or pins two
packages that disagree. This runs `uv pip check` on the environment and fails on every problem it reports
except one: a package requiring another version of a package overrides.txt pins, installed at that pin.

    python requirements/check_installed.py UV PYTHON [OVERRIDES]

Standard library only: it runs before anything of the project is known to import.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

OVERRIDES = Path(__file__).with_name("overrides.txt")

# What `uv pip check` says around its findings (uv 0.13): not problems themselves.
_REPORT_LINES = re.compile(r"Using Python |Checked \d+ packages? |Found \d+ incompatibilit|All installed packages are ")
_OVERRIDE_LINE = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(?P<version>[^\s;#]+)")
# "The package `aws-sam-translator` requires `pydantic~=2.13.3`, but `2.14.4` is installed"
_VERSION_CONFLICT = re.compile(
    r"The package `[^`]+` requires `(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)[^`]*`, but `(?P<version>[^`]+)` is installed"
)


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def overridden_versions(overrides_text: str) -> dict[str, str]:
    """The version overrides.txt pins each package to, by normalized name; every line must be `name==version`
    (or a comment), so that what is tolerated is exact."""
    pins: dict[str, str] = {}
    for number, line in enumerate(overrides_text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        pin = _OVERRIDE_LINE.fullmatch(line)
        if pin is None:
            raise ValueError(f"overrides.txt line {number}: {line!r} is not `name==version`")
        pins[normalized(pin["name"])] = pin["version"]
    return pins


def unexpected_problems(check_output: str, overridden: dict[str, str]) -> list[str]:
    """The problems `uv pip check` reported (`check_output`, what it printed) that are not a package requiring
    another version of an overridden package installed at its override."""
    problems = []
    for line in check_output.splitlines():
        line = line.strip()
        if not line or _REPORT_LINES.match(line):
            continue
        conflict = _VERSION_CONFLICT.fullmatch(line)
        if conflict is not None and overridden.get(normalized(conflict["name"])) == conflict["version"]:
            continue
        problems.append(line)
    return problems


def main(argv: list[str]) -> int:
    """Run the check on the environment of `argv`'s PYTHON with `argv`'s UV; 0 when nothing unexpected."""
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    uv, python = argv[0], argv[1]
    overrides = Path(argv[2]) if len(argv) == 3 else OVERRIDES
    checked = subprocess.run([uv, "pip", "check", "--python", python], capture_output=True, text=True)
    output = checked.stdout + checked.stderr
    # uv exits 1 when it found problems, 2 (or more) when it could not check at all
    problems = unexpected_problems(output, overridden_versions(overrides.read_text(encoding="utf-8")))
    if checked.returncode not in (0, 1):
        print(f"`uv pip check` could not check {python} (exit {checked.returncode}):\n{output}", file=sys.stderr)
        return 1
    if problems:
        print(
            f"The environment at {python} is not consistent with itself: requirements/dev.txt lacks a dependency "
            f"or pins versions that disagree, beyond what {overrides} overrides. Run `make lock` (or add an "
            "override, with its reason). `uv pip check` found:\n  " + "\n  ".join(problems),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Import time and peak memory of large real OpenAPI documents (tests/fixtures/openapi/real).

Each document is imported in a fresh interpreter, as a Lambda container does at cold start: read the
file, parse it, build one tool per operation. Peak RSS is the interpreter's (imports included); the RSS
before the import is printed beside it, so the import's own share shows. The goal for a document of
GitHub's size (13 MB, 1,223 operations) is under 5 s and 300 MB.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from stepwise.local.defaults import PROJECT_ROOT

DOCUMENTS = PROJECT_ROOT / "tests" / "fixtures" / "openapi" / "real"
_MEASURE = """
import json, resource, sys, time
from pathlib import Path
import httpx  # loaded before the clock starts, as before the tools made their own clients
from stepwise.config.tool_sources import parse_tools_config
from stepwise.tools import build_tool_registry
path = Path(sys.argv[1])
config = parse_tools_config({"openapi": [{"source": path.name, "baseUrl": "https://api.example.com"}]})
before_mb = int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20
started = time.perf_counter()
registry = build_tool_registry(config, config_dir=path.parent)
seconds = time.perf_counter() - started
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child of a large bench process would
# report the parent's size; the high-water mark belongs to this program's own memory
status = Path("/proc/self/status").read_text()
peak_mb = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024
figures = {"tools": len(registry), "notes": len(registry.notes), "seconds": seconds, "peak_mb": peak_mb}
print(json.dumps({**figures, "before_mb": before_mb}))
"""


def measure(document: Path) -> dict[str, float]:
    """Import ``document`` in a fresh interpreter; its tool count, notes, seconds and peak RSS in MB."""
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(document)], check=True, capture_output=True, text=True)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    """Print one row per fixture document."""
    print("OpenAPI import (fresh interpreter per document)")
    columns = f"{'MB':>6} {'tools':>6} {'notes':>6} {'seconds':>8} {'RSS before MB':>14} {'peak RSS MB':>12}"
    print(f"{'document':<28} {columns}")
    with tempfile.TemporaryDirectory() as directory:
        for packed in sorted(DOCUMENTS.glob("*.json.gz")):
            document = Path(directory) / packed.name.removesuffix(".gz")
            document.write_bytes(gzip.decompress(packed.read_bytes()))
            figures = measure(document)
            size_mb = document.stat().st_size / 1e6
            print(
                f"{document.name:<28} {size_mb:>6.1f} {figures['tools']:>6.0f} {figures['notes']:>6.0f} "
                f"{figures['seconds']:>8.2f} {figures['before_mb']:>14.0f} {figures['peak_mb']:>12.0f}"
            )


if __name__ == "__main__":
    main()

"""A launcher that counts its starts: ``python spawn_counter.py COUNT_FILE ARG...`` appends its process id
to COUNT_FILE, then becomes ``python ARG...`` (same process, same id), so the lines of COUNT_FILE are
the processes a command was started as, and each line names one to look at or end."""

import os
import sys

if __name__ == "__main__":
    with open(sys.argv[1], "a", encoding="ascii") as count:
        count.write(f"{os.getpid()}\n")
    os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
